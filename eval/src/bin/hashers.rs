//! Candidates for the default hasher, measured on short keys: `u64`, 16-byte slices and strings
//! of 8 to 64 bytes. For each key kind and hasher in turn: ns a hash (`hash_one` over a key
//! array) and ns a `contains` (a 50,000-item filter under that hasher, a query array half
//! present), medians of `--rounds` rounds: the table of `BENCHMARKS.md`, "The default hasher".
//!
//! ```text
//! cargo run --release -p lockfree-cuckoo-eval --bin hashers
//! ```
//!
//! The candidates: ours (`DefaultHashBuilder`, specified in `FORMAT.md`), keyed with a random
//! seed; aHash with fixed seeds (`AHashBuilder`, output only promised within
//! one build); foldhash keyed at random (`foldhash::fast::RandomState`, output not promised
//! across its versions); XXH3-64 (a published specification, unkeyed) and SipHash-1-3 keyed at
//! random (`std`'s `RandomState`, unspecified).

use std::hash::{BuildHasher, Hash};
use std::hint::black_box;
use std::time::Instant;

use clap::Parser;
use lockfree_cuckoo::{AHashBuilder, CuckooFilter, DefaultHashBuilder};
use lockfree_cuckoo_eval::keys::{key, queries, PRESENT};
use lockfree_cuckoo_eval::number;

/// ns a hash and a lookup of short keys under each candidate hasher.
#[derive(Debug, Parser)]
#[command(name = "hashers")]
struct Args {
    /// Rounds through every candidate; the table gives medians
    #[arg(long, value_name = "N", default_value = "5", value_parser = number::<usize>)]
    rounds: usize,
    /// Queries in each lookup array
    #[arg(long, value_name = "N", default_value = "1048576", value_parser = number::<usize>)]
    queries: usize,
}

/// Items in each filter: a cache-resident table, where the hash is a large share of a lookup.
const ITEMS: usize = 50_000;

const KINDS: [&str; 3] = ["u64", "16-byte slice", "str, 8 to 64 bytes"];

fn slice_of(k: u64) -> [u8; 16] {
    let mut bytes = [0; 16];
    bytes[..8].copy_from_slice(&k.to_le_bytes());
    bytes[8..].copy_from_slice(&k.rotate_left(29).to_le_bytes());
    bytes
}

fn text_of(k: u64) -> String {
    let width = 3 + (k % 57) as usize;
    format!("key:{:0width$x}", k % (1 << 60))
}

/// ns a hash and ns a lookup of `keys`, item keys `items`, under `hasher`.
fn measure<S: BuildHasher + Clone, K: Hash>(hasher: &S, items: &[K], keys: &[K]) -> (f64, f64) {
    let start = Instant::now();
    let sum = keys.iter().fold(0u64, |sum, k| sum.wrapping_add(hasher.hash_one(k)));
    black_box(sum);
    let hash = start.elapsed().as_secs_f64() * 1e9 / keys.len() as f64;
    let filter = CuckooFilter::builder().capacity(ITEMS).hasher(hasher.clone()).build();
    for item in items {
        filter.insert(item).expect("the filter has room");
    }
    let start = Instant::now();
    let hits = keys.iter().filter(|k| black_box(filter.contains(*k))).count();
    black_box(hits);
    (hash, start.elapsed().as_secs_f64() * 1e9 / keys.len() as f64)
}

const HASHERS: [&str; 5] =
    ["ours, keyed", "aHash", "foldhash, keyed", "XXH3", "SipHash-1-3, keyed"];

/// One round of every hasher on one kind of key.
fn round<K: Hash>(items: &[K], keys: &[K]) -> Vec<(f64, f64)> {
    vec![
        measure(&DefaultHashBuilder::new(), items, keys),
        measure(&AHashBuilder::default(), items, keys),
        measure(&foldhash::fast::RandomState::default(), items, keys),
        measure(&xxhash_rust::xxh3::Xxh3Builder::new(), items, keys),
        measure(&std::hash::RandomState::new(), items, keys),
    ]
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn main() {
    let args = Args::parse();
    let stream = queries(args.queries.next_power_of_two(), ITEMS, 50, 5);
    let items: Vec<u64> = (0..ITEMS as u64).map(|i| key(PRESENT, i)).collect();
    let slices = |keys: &[u64]| keys.iter().map(|&k| slice_of(k)).collect::<Vec<_>>();
    let texts = |keys: &[u64]| keys.iter().map(|&k| text_of(k)).collect::<Vec<_>>();
    let (slice_items, slice_keys) = (slices(&items), slices(&stream));
    let (text_items, text_keys) = (texts(&items), texts(&stream));
    // rounds[kind][round][hasher]
    let mut rounds: Vec<Vec<Vec<(f64, f64)>>> = vec![Vec::new(); KINDS.len()];
    for r in 1..=args.rounds {
        eprintln!("round {r}");
        rounds[0].push(round(&items, &stream));
        rounds[1].push(round(&slice_items, &slice_keys));
        rounds[2].push(round(&text_items, &text_keys));
    }
    println!(
        "ns a hash / ns a contains ({ITEMS} items, {} queries half present), one thread, medians \
         of {} rounds",
        stream.len(),
        args.rounds
    );
    println!();
    println!("| key | {} |", HASHERS.join(" | "));
    println!("|---|{}", "---:|".repeat(HASHERS.len()));
    for (kind, runs) in KINDS.iter().zip(&rounds) {
        let cells: Vec<String> = (0..HASHERS.len())
            .map(|h| {
                let hash = median(runs.iter().map(|r| r[h].0).collect());
                let lookup = median(runs.iter().map(|r| r[h].1).collect());
                format!("{hash:.2} / {lookup:.2}")
            })
            .collect();
        println!("| {kind} | {} |", cells.join(" | "));
    }
}
