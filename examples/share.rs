//! Shares one filter across worker threads, as a server would, and reports what happened.
//!
//! `cargo run --release --example share`

use std::sync::Arc;
use std::thread;
use std::time::Instant;

use lockfree_cuckoo::CuckooFilter;

const WORKERS: u64 = 4;
const ITEMS_PER_WORKER: u64 = 250_000;

fn main() {
    let filter = Arc::new(CuckooFilter::with_capacity((WORKERS * ITEMS_PER_WORKER) as usize));
    let started = Instant::now();
    let workers: Vec<_> = (0..WORKERS)
        .map(|w| {
            let filter = Arc::clone(&filter);
            thread::spawn(move || {
                let mut refused = 0;
                for i in 0..ITEMS_PER_WORKER {
                    refused += u64::from(filter.insert(&(w, i)).is_err());
                    // Look up a neighbour's item: it may or may not be there yet.
                    filter.contains(&((w + 1) % WORKERS, i));
                }
                refused
            })
        })
        .collect();
    let refused: u64 = workers.into_iter().map(|w| w.join().unwrap()).sum();
    let elapsed = started.elapsed();

    let missing = (0..WORKERS)
        .flat_map(|w| (0..ITEMS_PER_WORKER).map(move |i| (w, i)))
        .filter(|item| !filter.contains(item))
        .count();
    let probes = 1_000_000u64;
    let false_positives = (0..probes).filter(|i| filter.contains(&("absent", i))).count();
    let stats = filter.stats();

    println!(
        "{WORKERS} threads inserted {} items in {elapsed:.2?} ({refused} refused)",
        WORKERS * ITEMS_PER_WORKER
    );
    println!(
        "len {} of capacity {}, load factor {:.3}",
        filter.len(),
        filter.capacity(),
        filter.load_factor()
    );
    println!(
        "memory {} bytes, {:.2} bytes per item",
        filter.memory_usage(),
        filter.memory_usage() as f64 / filter.len() as f64
    );
    println!(
        "false negatives {missing}, false positives {false_positives} of {probes} absent probes"
    );
    println!(
        "relocations {}, path retries {}, conservative lookups {}",
        stats.relocations, stats.path_retries, stats.conservative_lookups
    );
    if missing > 0 || refused > 0 {
        std::process::exit(1);
    }
}
