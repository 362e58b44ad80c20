//! `InsertError::Full` must mean that no cuckoo path exists, never that commits met contention:
//! eight threads (oversubscribing the cores, so they are preempted mid-path) fill tiny tables of
//! every size from 1 to 64 buckets to their promised capacity, many times each, in both bucket
//! layouts, and no insert may be refused. The `#[ignore]`d variant is the long run `.ci/run`
//! makes in release.

use std::sync::Barrier;

use lockfree_cuckoo::{CuckooFilter, Layout, Plain, SemiSorted};

const THREADS: usize = 8;

/// SplitMix64: distinct seeds give distinct, well-spread keys.
fn key(seed: u64) -> u64 {
    let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[derive(Debug, Default)]
struct Tally {
    fills: u64,
    inserts: u64,
    refused: u64,
    path_retries: u64,
    most_retries_in_a_fill: u64,
}

/// `L`'s name, for the messages.
fn name<L: Layout>() -> &'static str {
    std::any::type_name::<L>().rsplit("::").next().unwrap_or("?")
}

/// Fills a table of layout `L` of every size in `sizes` to its capacity `fills` times with
/// `THREADS` threads.
fn fill_tiny_tables<L: Layout>(sizes: std::ops::RangeInclusive<usize>, fills: u64) -> Tally {
    let layout = name::<L>();
    let mut tally = Tally::default();
    for buckets in sizes {
        for fill in 0..fills {
            // The hasher's key and the keys from one seed: a table's fill is the same in every
            // run, so that a refusal is contention's (what this test catches), not the one
            // table in 100,000 that random items fill short of its promise (`sizing`).
            let seed = (buckets as u64) << 40 | fill << 16;
            let filter =
                CuckooFilter::builder().bucket_count(buckets).seed(seed).layout::<L>().build();
            let capacity = filter.capacity();
            let start = Barrier::new(THREADS);
            let refused: usize = std::thread::scope(|s| {
                let workers: Vec<_> = (0..THREADS)
                    .map(|t| {
                        let (filter, start) = (&filter, &start);
                        s.spawn(move || {
                            start.wait();
                            (t..capacity)
                                .step_by(THREADS)
                                .filter(|&i| filter.insert(&key(seed + i as u64)).is_err())
                                .count()
                        })
                    })
                    .collect();
                workers.into_iter().map(|w| w.join().unwrap()).sum()
            });
            let stats = filter.stats();
            assert_eq!(
                refused, 0,
                "{layout}, {buckets} buckets, fill {fill}: {refused} of {capacity} promised inserts \
                 refused ({stats:?})"
            );
            assert_eq!(filter.len(), capacity, "{layout}, {buckets} buckets, fill {fill}");
            tally.fills += 1;
            tally.inserts += capacity as u64;
            tally.refused += refused as u64;
            tally.path_retries += stats.path_retries;
            tally.most_retries_in_a_fill = tally.most_retries_in_a_fill.max(stats.path_retries);
        }
    }
    eprintln!("{layout}, {THREADS} threads: {tally:?}");
    tally
}

#[test]
fn eight_threads_fill_every_tiny_table_to_capacity() {
    fill_tiny_tables::<Plain>(1..=64, 10);
    fill_tiny_tables::<SemiSorted>(1..=64, 10);
}

#[test]
#[ignore = "long: run with --release -- --ignored"]
fn eight_threads_fill_every_tiny_table_to_capacity_thousands_of_times() {
    eight_threads_fill_every_tiny_table_to_capacity_thousands_of_times_in::<Plain>();
    eight_threads_fill_every_tiny_table_to_capacity_thousands_of_times_in::<SemiSorted>();
}

fn eight_threads_fill_every_tiny_table_to_capacity_thousands_of_times_in<L: Layout>() {
    let tally = fill_tiny_tables::<L>(1..=64, 2_000);
    assert_eq!(tally.fills, 64 * 2_000, "{}", name::<L>());
}
