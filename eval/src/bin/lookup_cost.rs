//! A fixed number of lookups (or inserts, or removes) through one peer, for profilers: under
//! `valgrind --tool=callgrind`, the instruction count of a run with `--lookups N` minus that of a
//! run with `--lookups 0` is the cost of N operations. Without a profiler it prints ns per
//! operation.
//!
//! ```text
//! cargo build --release -p lockfree-cuckoo-eval --bin lookup_cost
//! valgrind --tool=callgrind target/release/lookup_cost --peer ours --lookups 1000000
//! valgrind --tool=callgrind target/release/lookup_cost --peer ours --lookups 0
//! valgrind --tool=callgrind target/release/lookup_cost --operation insert --lookups 50000
//! ```
//!
//! With `--operation insert`, the filter is filled with the first `--items - --lookups` keys
//! before the count starts, and the operations insert the rest, up to capacity; with
//! `--operation remove`, they remove the first `--lookups` keys of the full filter. Both are
//! measured for every peer that inserts and removes one key at a time (`ours`, `cf-ahash`,
//! `acf`); their baseline is the same run with `--baseline`.
//!
//! Peers (`--peer`): `ours`, `ours-batch`, `ours-semi-sorted`, `floor`, `floor-batch`,
//! `cf-ahash`, `acf`. The filter holds `--items` keys (default 58,000, cache-resident;
//! 30,000,000 and up for DRAM); `--present` percent of the queries are present (half by default).

use std::hint::black_box;
use std::time::Instant;

use clap::{Parser, ValueEnum};
use lockfree_cuckoo_eval::keys::{key, queries, PRESENT};
use lockfree_cuckoo_eval::number;
use lockfree_cuckoo_eval::peers::{Local, Peer, Sizing, Visit};

/// A fixed number of lookups through one peer, for profilers; prints ns per lookup.
#[derive(Debug, Parser)]
#[command(name = "lookup_cost")]
struct Args {
    /// The filter to look up in
    #[arg(long, default_value = "ours", value_parser = Peer::parser(PEERS))]
    peer: Peer,
    /// Keys the filter holds (58,000: cache-resident; 30,000,000 and up: DRAM)
    #[arg(long, value_name = "N", default_value = "58000", value_parser = positive)]
    items: usize,
    /// Operations to run (0: build and fill only, the baseline to subtract)
    #[arg(long, value_name = "N", default_value = "1000000", value_parser = number::<usize>)]
    lookups: usize,
    /// Percent of the lookups' keys that are present
    #[arg(long, value_name = "PERCENT", default_value = "50", value_parser = clap::value_parser!(u32).range(0..=100))]
    present: u32,
    /// The operation counted
    #[arg(long, value_enum, default_value = "contains")]
    operation: Operation,
    /// Prepare as for `--lookups`, but run none of the counted inserts or removes (their
    /// baseline to subtract)
    #[arg(long)]
    baseline: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Operation {
    Contains,
    Insert,
    Remove,
}

/// The peers this tool measures; the batched ones look up through `contains_batch`.
const PEERS: &[Peer] = &[
    Peer::Ours,
    Peer::OursBatch,
    Peer::OursSemiSorted,
    Peer::Floor,
    Peer::FloorBatch,
    Peer::CfAhash,
    Peer::Acf,
];

fn positive(text: &str) -> Result<usize, String> {
    match number(text)? {
        0 => Err("must be positive".into()),
        n => Ok(n),
    }
}

/// Times `op` on each of `keys` and prints it.
fn timed(name: &str, keys: std::ops::Range<u64>, mut op: impl FnMut(u64) -> bool) {
    let count = keys.end - keys.start;
    let start = Instant::now();
    let failed = keys.filter(|&i| !op(key(PRESENT, i))).count();
    let ns = start.elapsed().as_secs_f64() * 1e9 / count.max(1) as f64;
    println!("{name}: {count} operations, {failed} failed, {ns:.1} ns an operation");
}

/// The counted operations on one peer.
struct Cost {
    items: usize,
    lookups: usize,
    present: u32,
    operation: Operation,
    baseline: bool,
}

impl Visit for Cost {
    type Output = ();

    fn local<F: Local, M: Fn() -> F>(self, peer: Peer, make: M) {
        let Self { items, lookups, present, operation, baseline } = self;
        let ops = peer.ops();
        let mut f = make();
        if operation != Operation::Contains {
            assert!(
                ops.insert && ops.remove && !peer.batched(),
                "--operation insert and remove measure peers that insert and remove one key at a \
                 time"
            );
            let n = lookups.min(items) as u64;
            let items = items as u64;
            let (before, counted) = match operation {
                Operation::Insert => (0..items - n, items - n..items),
                _ => (0..items, 0..n),
            };
            let counted = if baseline { 0..0 } else { counted };
            black_box(before.filter(|&i| !f.insert(key(PRESENT, i))).count());
            if operation == Operation::Remove {
                timed("remove", counted, |k| f.remove(k));
            } else {
                timed("insert", counted, |k| f.insert(k));
            }
            return;
        }
        let name = peer.key();
        // Built and filled whatever the lookup count, so that a `--lookups 0` run measures setup.
        let stream = queries(1 << 16, items, present, 3);
        if ops.insert {
            f.fill(items);
        }
        let lookup = |q: &[u64], o: &mut [bool]| {
            if peer.batched() {
                f.contains_batch(q, o);
            } else {
                q.iter().zip(o).for_each(|(k, o)| *o = black_box(f.contains(*k)));
            }
        };
        let mut out = vec![false; 1024];
        let mut hits = 0usize;
        let start = Instant::now();
        let mut done = 0;
        while done < lookups {
            let at = done % stream.len();
            let n = (lookups - done).min(1024).min(stream.len() - at);
            lookup(&stream[at..at + n], &mut out[..n]);
            hits += out[..n].iter().filter(|&&b| b).count();
            done += n;
        }
        let ns = start.elapsed().as_secs_f64() * 1e9 / lookups.max(1) as f64;
        println!("{name}: {lookups} lookups, {hits} hits, {ns:.1} ns a lookup");
    }
}

fn main() {
    let Args { peer, items, lookups, present, operation, baseline } = Args::parse();
    peer.visit(Sizing::like_ours(items), Cost { items, lookups, present, operation, baseline });
}
