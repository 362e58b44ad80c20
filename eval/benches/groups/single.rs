//! Single-thread groups: `contains` at 0/50/100% positive, batched `contains`, `insert` from
//! empty to capacity, `remove` of everything.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, SamplingMode, Throughput};
use lockfree_cuckoo_eval::keys::{key, PRESENT};
use lockfree_cuckoo_eval::peers::Local;

use super::{group, Config, Size, PERCENTS};

/// Items a batched-lookup iteration checks.
pub(crate) const BATCH: usize = 256;

/// `contains` at each positive fraction, one lookup an iteration, through `lookup`.
pub(crate) fn contains(
    c: &mut Criterion,
    cfg: &Config,
    size: &Size,
    id: &str,
    lookup: impl Fn(u64) -> bool,
) {
    for (p, queries) in PERCENTS.iter().zip(&size.queries) {
        let mut g = group(c, cfg, format!("{}/contains_{p}pct", size.label));
        g.throughput(Throughput::Elements(1));
        let mask = queries.len() - 1;
        g.bench_function(id, |b| {
            let mut i = 0;
            b.iter(|| {
                i = (i + 1) & mask;
                lookup(queries[i])
            })
        });
        g.finish();
    }
}

/// Batched `contains` at each positive fraction, [`BATCH`] lookups an iteration.
pub(crate) fn contains_batch(
    c: &mut Criterion,
    cfg: &Config,
    size: &Size,
    id: &str,
    lookup: impl Fn(&[u64], &mut [bool]),
) {
    for (p, queries) in PERCENTS.iter().zip(&size.queries) {
        let mut g = group(c, cfg, format!("{}/contains_{p}pct", size.label));
        g.throughput(Throughput::Elements(BATCH as u64));
        let blocks = queries.len() / BATCH;
        let mut out = vec![false; BATCH];
        g.bench_function(id, |b| {
            let mut i = 0;
            b.iter(|| {
                i = (i + 1) % blocks;
                lookup(&queries[i * BATCH..(i + 1) * BATCH], &mut out);
                black_box(&out);
            })
        });
        g.finish();
    }
}

/// `insert` of `size.n` items into a fresh filter from `make`, one fill an iteration (building
/// the empty filter is not timed).
pub(crate) fn insert<P: Local>(
    c: &mut Criterion,
    cfg: &Config,
    size: &Size,
    id: &str,
    make: impl Fn() -> P,
) {
    whole_table(c, cfg, size, "insert_to_capacity", id, &make, |filter| {
        (0..size.n as u64).filter(|&i| !filter.insert(key(PRESENT, i))).count()
    });
}

/// `remove` of all `size.n` items of a full filter, one emptying an iteration (building and
/// filling are not timed).
pub(crate) fn remove<P: Local>(
    c: &mut Criterion,
    cfg: &Config,
    size: &Size,
    id: &str,
    make: impl Fn() -> P,
) {
    let full = || {
        let mut filter = make();
        for i in 0..size.n as u64 {
            filter.insert(key(PRESENT, i));
        }
        filter
    };
    whole_table(c, cfg, size, "remove_all", id, full, |filter| {
        (0..size.n as u64).filter(|&i| !filter.remove(key(PRESENT, i))).count()
    });
}

/// `insert_batch`, 1024 keys a call, in the `insert_to_capacity` group.
pub(crate) fn insert_batch<P: Local>(
    c: &mut Criterion,
    cfg: &Config,
    size: &Size,
    id: &str,
    make: impl Fn() -> P,
) {
    let mut chunk = Vec::with_capacity(1024);
    whole_table(c, cfg, size, "insert_to_capacity", id, make, |filter| {
        let mut stored = 0;
        for lo in (0..size.n as u64).step_by(1024) {
            chunk.clear();
            chunk.extend((lo..(lo + 1024).min(size.n as u64)).map(|i| key(PRESENT, i)));
            stored += filter.insert_batch(&chunk);
        }
        stored
    });
}

/// The benchmark `name` in the group `label` of `size`: each iteration builds a filter with
/// `setup` (not timed), then times `pass` over it, `size.n` operations; the pass's count goes
/// to `black_box` so that it is not optimised away.
fn whole_table<F>(
    c: &mut Criterion,
    cfg: &Config,
    size: &Size,
    label: &str,
    name: &str,
    setup: impl Fn() -> F,
    mut pass: impl FnMut(&mut F) -> usize,
) {
    let mut g = group(c, cfg, format!("{}/{label}", size.label));
    g.throughput(Throughput::Elements(size.n as u64)).sampling_mode(SamplingMode::Flat);
    g.bench_function(name, |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let mut filter = setup();
                let start = Instant::now();
                black_box(pass(&mut filter));
                total += start.elapsed();
            }
            total
        })
    });
    g.finish();
}
