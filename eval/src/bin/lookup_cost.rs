//! A fixed number of lookups through one peer, for profilers: under
//! `valgrind --tool=callgrind`, the instruction count of a run with `--lookups N` minus that of a
//! run with `--lookups 0` is the cost of N lookups. Without a profiler it prints ns per lookup.
//!
//! ```text
//! cargo build --release -p lockfree-cuckoo-eval --bin lookup_cost
//! valgrind --tool=callgrind target/release/lookup_cost --peer ours --lookups 1000000
//! valgrind --tool=callgrind target/release/lookup_cost --peer ours --lookups 0
//! ```
//!
//! Peers: `ours`, `ours-batch`, `floor`, `floor-batch`, `cf-ahash`, `acf`. The filter holds
//! `--items` keys (default 58,000, cache-resident; 30,000,000 and up for DRAM); the queries are
//! half present, half absent.

use std::hint::black_box;
use std::process::ExitCode;
use std::time::Instant;

use lockfree_cuckoo_eval::floor::Floor;
use lockfree_cuckoo_eval::keys::{key, queries, PRESENT};
use lockfree_cuckoo_eval::peers::{self, Local};

fn main() -> ExitCode {
    let (mut peer, mut items, mut lookups) = ("ours".to_string(), 58_000usize, 1_000_000usize);
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let Some(value) = args.next() else {
            eprintln!("error: `{flag}` needs a value");
            return ExitCode::from(2);
        };
        let number = || value.replace('_', "").parse::<usize>();
        match (flag.as_str(), number()) {
            ("--peer", _) => peer = value.clone(),
            ("--items", Ok(n)) if n > 0 => items = n,
            ("--lookups", Ok(n)) => lookups = n,
            _ => {
                eprintln!("error: bad argument `{flag} {value}`");
                return ExitCode::from(2);
            }
        }
    }
    // Built and filled whatever the lookup count, so that a `--lookups 0` run measures setup.
    let stream = queries(1 << 16, items, 50, 3);
    let run = |lookup: &dyn Fn(&[u64], &mut [bool])| {
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
        println!("{peer}: {lookups} lookups, {hits} hits, {ns:.1} ns a lookup");
    };
    let fill = |insert: &mut dyn FnMut(u64) -> bool| {
        (0..items as u64).filter(|&i| !insert(key(PRESENT, i))).count()
    };
    match peer.as_str() {
        "ours" | "ours-batch" => {
            let mut f = peers::Ours::new(items);
            fill(&mut |k| f.insert(k));
            if peer == "ours" {
                run(&|q, o| q.iter().zip(o).for_each(|(k, o)| *o = black_box(f.0.contains(k))));
            } else {
                run(&|q, o| f.0.contains_batch(q, o));
            }
        }
        "floor" | "floor-batch" => {
            let f = Floor::new(
                lockfree_cuckoo::CuckooFilter::with_capacity(items).bucket_count(),
            );
            if peer == "floor" {
                run(&|q, o| q.iter().zip(o).for_each(|(k, o)| *o = black_box(f.contains(*k))));
            } else {
                run(&|q, o| f.contains_batch(q, o));
            }
        }
        "cf-ahash" => {
            let mut f = peers::CfAhash::new(items);
            fill(&mut |k| f.insert(k));
            run(&|q, o| q.iter().zip(o).for_each(|(k, o)| *o = black_box(f.contains(*k))));
        }
        "acf" => {
            let mut f = peers::Acf::new(items);
            fill(&mut |k| Local::insert(&mut f, k));
            run(&|q, o| q.iter().zip(o).for_each(|(k, o)| *o = black_box(f.0.contains(k))));
        }
        other => {
            eprintln!("error: unknown peer `{other}`");
            return ExitCode::from(2);
        }
    }
    ExitCode::SUCCESS
}
