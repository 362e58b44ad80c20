//! The library's own single-thread benchmarks, at a cache-sized and a larger table (see
//! [`common::SIZES`]): `contains` and `contains_batch` on hits and on misses, `insert` and
//! `remove` at a steady load, and growth (a growable filter filled through four levels, and
//! lookups across them). The comparisons against peer crates are in `eval/benches/`.

mod common;

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, SamplingMode, Throughput};
use lockfree_cuckoo::CuckooFilter;

use common::{fill, filled, key, queries, PRESENT};

/// Keys a `contains_batch` call looks up.
const BATCH: usize = 256;

/// The key space of the spare keys that steady-state inserts and removes cycle through.
const SPARE: u64 = 2;

fn main() {
    let mut c = common::criterion();
    for (label, n) in common::SIZES {
        let filter = filled(n);
        eprintln!(
            "[setup] {label}: {} items held, table {:.1} MiB",
            filter.len(),
            filter.memory_usage() as f64 / f64::from(1 << 20)
        );
        let streams = [("hits", queries(n, 100)), ("misses", queries(n, 0))];
        contains(&mut c, format!("contains/{label}"), &filter, &streams);
        contains_batch(&mut c, label, &filter, &streams);
        drop(streams);
        insert_and_remove(&mut c, label, &filter, n);
        drop(filter);
        growth(&mut c, label, n);
    }
    c.final_summary();
}

/// One `contains` an iteration, walking each stream, in the group `group`.
fn contains(c: &mut Criterion, group: String, filter: &CuckooFilter, streams: &[(&str, Vec<u64>)]) {
    let mut g = c.benchmark_group(group);
    g.throughput(Throughput::Elements(1));
    for (name, queries) in streams {
        let mask = queries.len() - 1;
        g.bench_function(*name, |b| {
            let mut i = 0;
            b.iter(|| {
                i = (i + 1) & mask;
                filter.contains(&queries[i])
            })
        });
    }
    g.finish();
}

/// One `contains_batch` of [`BATCH`] keys an iteration, walking each stream.
fn contains_batch(
    c: &mut Criterion,
    label: &str,
    filter: &CuckooFilter,
    streams: &[(&str, Vec<u64>)],
) {
    let mut g = c.benchmark_group(format!("contains_batch/{label}"));
    g.throughput(Throughput::Elements(BATCH as u64));
    let mut out = [false; BATCH];
    for (name, queries) in streams {
        let mask = queries.len() / BATCH - 1;
        g.bench_function(*name, |b| {
            let mut i = 0;
            b.iter(|| {
                i = (i + 1) & mask;
                filter.contains_batch(&queries[i * BATCH..(i + 1) * BATCH], &mut out);
                black_box(&out);
            })
        });
    }
    g.finish();
}

/// `insert` and `remove` of spare keys into `filter`, held at [`fill`]`(n)` items: each runs on
/// windows of `n / 20` keys, and the other operation puts every window back untimed, so the
/// filter's load stays between 90% and 95% of its capacity however long criterion runs.
fn insert_and_remove(c: &mut Criterion, label: &str, filter: &CuckooFilter, n: usize) {
    let window = n / 20;
    // Four windows, so that a window's buckets were not just touched by putting it back.
    let spare: Vec<u64> = (0..4 * window as u64).map(|i| key(SPARE, i)).collect();
    let mut windows = spare.chunks(window).cycle();
    for (name, inserting) in [("insert", true), ("remove", false)] {
        let mut g = c.benchmark_group(format!("{name}/{label}"));
        g.throughput(Throughput::Elements(1));
        g.bench_function("steady", |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                let mut left = iters as usize;
                while left > 0 {
                    let keys = &windows.next().unwrap()[..left.min(window)];
                    left -= keys.len();
                    if !inserting {
                        keys.iter().for_each(|k| filter.insert(k).expect("under capacity"));
                    }
                    let start = Instant::now();
                    if inserting {
                        for k in keys {
                            filter.insert(k).expect("under capacity");
                        }
                    } else {
                        for k in keys {
                            assert!(filter.remove(k), "a held key was not found");
                        }
                    }
                    total += start.elapsed();
                    if inserting {
                        keys.iter().for_each(|k| assert!(filter.remove(k)));
                    }
                }
                total
            })
        });
        g.finish();
    }
}

/// A growable filter built for `n / 64` items and filled with `n` (levels of `n / 64`, `n / 16`,
/// `n / 4` and `n` items, each four times the last): the whole fill an iteration, building the
/// empty filter untimed; then lookups across the four levels.
fn growth(c: &mut Criterion, label: &str, n: usize) {
    let keys: Vec<u64> = (0..fill(n) as u64).map(|i| key(PRESENT, i)).collect();
    let empty = || CuckooFilter::builder().capacity(n / 64).growable().build();
    let fill_all = |filter: &CuckooFilter| {
        for k in &keys {
            filter.insert(k).expect("a growable filter grows");
        }
    };

    let mut g = c.benchmark_group(format!("growth/{label}"));
    g.throughput(Throughput::Elements(keys.len() as u64)).sampling_mode(SamplingMode::Flat);
    g.bench_function("fill", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let filter = empty();
                let start = Instant::now();
                fill_all(&filter);
                total += start.elapsed();
            }
            total
        })
    });
    g.finish();

    let grown = empty();
    fill_all(&grown);
    eprintln!(
        "[setup] {label}: grown to {} levels, {:.1} MiB",
        grown.stats().levels,
        grown.memory_usage() as f64 / f64::from(1 << 20)
    );
    drop(keys);
    let streams = [("hits", queries(n, 100)), ("misses", queries(n, 0))];
    contains(c, format!("grown_contains/{label}"), &grown, &streams);
}
