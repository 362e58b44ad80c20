//! Multi-thread groups: `contains` on 1, 2 and 4 threads, and the 2-thread 90/5/5 mix.

use std::hint::black_box;
use std::sync::Barrier;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput};
use lockfree_cuckoo_eval::keys::{key, PRESENT, THREAD_BASE};
use lockfree_cuckoo_eval::peers::Shared;

use super::{group, Config, Size};

/// Thread counts of the `contains` group.
pub(crate) const THREADS: [usize; 3] = [1, 2, 4];

/// Runs `work(thread, iters)` on `threads` threads started together; returns the wall time
/// from the common start to the last thread's end.
fn timed<W: Fn(usize, u64) + Sync>(threads: usize, iters: u64, work: W) -> Duration {
    let barrier = Barrier::new(threads + 1);
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let (barrier, work) = (&barrier, &work);
                s.spawn(move || {
                    barrier.wait();
                    work(t, iters);
                })
            })
            .collect();
        barrier.wait();
        let start = Instant::now();
        for h in handles {
            h.join().unwrap();
        }
        start.elapsed()
    })
}

/// `contains` on 1, 2 and 4 threads over the 50%-positive stream, each thread at its own offset.
/// Throughput counts the lookups of all threads.
pub(crate) fn contains<S: Shared>(
    c: &mut Criterion,
    cfg: &Config,
    size: &Size,
    id: &str,
    filter: &S,
) {
    let queries = &size.queries[1];
    let mask = queries.len() - 1;
    for threads in THREADS {
        let mut g = group(c, cfg, format!("{}/contains_threads_{threads}", size.label));
        g.throughput(Throughput::Elements(threads as u64));
        g.bench_function(id, |b| {
            b.iter_custom(|iters| {
                timed(threads, iters, |t, iters| {
                    let mut i = t * queries.len() / threads;
                    let mut hits = 0u64;
                    for _ in 0..iters {
                        i = (i + 1) & mask;
                        hits += u64::from(filter.contains(queries[i]));
                    }
                    black_box(hits);
                })
            })
        });
        g.finish();
    }
}

/// One thread's share of the mixed workload: the keys it owns are `PRESENT` keys
/// `[present_lo, present_hi)` (its part of the prefill) followed by its own keys
/// `[own_lo, own_hi)`; it removes the oldest and inserts new ones, so it removes only what it
/// inserted.
#[derive(Debug)]
pub(crate) struct MixState {
    space: u64,
    present_lo: u64,
    present_hi: u64,
    own_lo: u64,
    own_hi: u64,
    step: u64,
    query: usize,
    /// Inserts refused (a full filter) and removes that found nothing: both should stay 0.
    pub(crate) failures: u64,
}

impl MixState {
    /// The states of `threads` threads sharing a filter prefilled with `PRESENT` keys
    /// `0..fill`.
    pub(crate) fn split(threads: usize, fill: usize, queries: usize) -> Vec<Self> {
        (0..threads)
            .map(|t| Self {
                space: THREAD_BASE + t as u64,
                present_lo: (t * fill / threads) as u64,
                present_hi: ((t + 1) * fill / threads) as u64,
                own_lo: 0,
                own_hi: 0,
                step: 0,
                query: t * queries / threads,
                failures: 0,
            })
            .collect()
    }

    /// `ops` operations: of every 20, one insert, one remove, 18 lookups (90/5/5), the insert
    /// and the remove 10 steps apart, so the load stays constant.
    #[inline]
    pub(crate) fn run<S: Shared>(&mut self, filter: &S, queries: &[u64], ops: u64) -> u64 {
        let mask = queries.len() - 1;
        let mut hits = 0;
        for _ in 0..ops {
            match self.step % 20 {
                0 => {
                    if filter.insert(key(self.space, self.own_hi)) {
                        self.own_hi += 1;
                    } else {
                        self.failures += 1;
                    }
                }
                10 => {
                    let k = if self.present_lo < self.present_hi {
                        self.present_lo += 1;
                        key(PRESENT, self.present_lo - 1)
                    } else if self.own_lo < self.own_hi {
                        self.own_lo += 1;
                        key(self.space, self.own_lo - 1)
                    } else {
                        self.step += 1;
                        continue;
                    };
                    if !filter.remove(k) {
                        self.failures += 1;
                    }
                }
                _ => {
                    self.query = (self.query + 1) & mask;
                    hits += u64::from(filter.contains(queries[self.query]));
                }
            }
            self.step += 1;
        }
        hits
    }
}

/// The 90/5/5 mix on 2 threads, each thread removing only what it inserted. Throughput counts
/// the operations of both threads. The filter must hold `PRESENT` keys `0..size.fill`.
pub(crate) fn mixed<S: Shared>(
    c: &mut Criterion,
    cfg: &Config,
    size: &Size,
    id: &str,
    filter: &S,
) -> u64 {
    const THREADS: usize = 2;
    let queries = &size.queries[1];
    let states: Vec<_> = MixState::split(THREADS, size.fill, queries.len())
        .into_iter()
        .map(std::sync::Mutex::new)
        .collect();
    let mut g = group(c, cfg, format!("{}/mixed_90_5_5_2t", size.label));
    g.throughput(Throughput::Elements(THREADS as u64));
    g.bench_function(id, |b| {
        b.iter_custom(|iters| {
            timed(THREADS, iters, |t, iters| {
                // Each thread locks only its own state, once a sample.
                let mut state = states[t].lock().unwrap();
                black_box(state.run(filter, queries, iters));
            })
        })
    });
    g.finish();
    states.iter().map(|s| s.lock().unwrap().failures).sum()
}
