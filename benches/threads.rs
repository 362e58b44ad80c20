//! The library's own multi-thread benchmark: one filter shared by 1 and 4 threads, each doing
//! 90% lookups, 5% inserts and 5% removes at a steady load, at the sizes of
//! [`common::SIZES`]. The comparisons against peer crates are in `eval/benches/`.

mod common;

use std::hint::black_box;
use std::sync::{Barrier, Mutex};
use std::time::{Duration, Instant};

use criterion::Throughput;
use lockfree_cuckoo::CuckooFilter;

use common::{fill, filled, key, queries, PRESENT};

/// The thread counts measured.
const THREADS: [usize; 2] = [1, 4];

/// The first key space of the threads' own keys (thread `t` uses `THREAD_BASE + t`).
const THREAD_BASE: u64 = 16;

/// One thread's keys: a ring of its share of the prefill followed by keys of its own, of which
/// positions `lo..hi` (modulo its length) are in the filter. It removes the oldest and inserts
/// the next, so it removes only keys it knows are held and inserts only keys that are not.
struct Worker {
    ring: Vec<u64>,
    lo: usize,
    hi: usize,
    step: u64,
    query: usize,
}

impl Worker {
    /// The workers of `threads` threads sharing a filter that holds [`PRESENT`] keys
    /// `0..fill(n)`, each starting at its own place in the query stream of length `queries`.
    fn split(threads: usize, n: usize, queries: usize) -> Vec<Self> {
        let fill = fill(n);
        (0..threads)
            .map(|t| {
                let (lo, hi) = (t * fill / threads, (t + 1) * fill / threads);
                // An eighth more keys than are held, so the ring never wraps onto a held key.
                let own = (hi - lo) / 8 + 1;
                let ring = (lo..hi)
                    .map(|i| key(PRESENT, i as u64))
                    .chain((0..own as u64).map(|i| key(THREAD_BASE + t as u64, i)))
                    .collect();
                Self { ring, lo: 0, hi: hi - lo, step: 0, query: t * queries / threads }
            })
            .collect()
    }

    /// `ops` operations: of every 20, one insert, one remove and 18 lookups, the insert and the
    /// remove 10 steps apart. Returns the lookups that hit.
    fn run(&mut self, filter: &CuckooFilter, queries: &[u64], ops: u64) -> u64 {
        let mask = queries.len() - 1;
        let mut hits = 0;
        for _ in 0..ops {
            match self.step % 20 {
                0 => {
                    let k = self.ring[self.hi % self.ring.len()];
                    self.hi += 1;
                    filter.insert(&k).expect("the load stays under capacity");
                }
                10 => {
                    let k = self.ring[self.lo % self.ring.len()];
                    self.lo += 1;
                    assert!(filter.remove(&k), "a held key was not found");
                }
                _ => {
                    self.query = (self.query + 1) & mask;
                    hits += u64::from(filter.contains(&queries[self.query]));
                }
            }
            self.step += 1;
        }
        hits
    }
}

fn main() {
    let mut c = common::criterion();
    for (label, n) in common::SIZES {
        // Half the lookups are of prefilled keys (most of them still held), half of keys never
        // inserted.
        let queries = queries(n, 50);
        let mut g = c.benchmark_group(format!("mixed_90_5_5/{label}"));
        for threads in THREADS {
            // A fresh filter for each count, since the workers' rings split its keys.
            let filter = filled(n);
            let workers: Vec<Mutex<Worker>> =
                Worker::split(threads, n, queries.len()).into_iter().map(Mutex::new).collect();
            g.throughput(Throughput::Elements(threads as u64));
            g.bench_function(format!("threads_{threads}"), |b| {
                b.iter_custom(|iters| {
                    timed(threads, |t| {
                        let mut worker = workers[t].lock().unwrap();
                        black_box(worker.run(&filter, &queries, iters));
                    })
                })
            });
        }
        g.finish();
    }
    c.final_summary();
}

/// Runs `work(thread)` on `threads` threads started together; returns the wall time from the
/// common start to the last thread's end.
fn timed(threads: usize, work: impl Fn(usize) + Sync) -> Duration {
    let barrier = Barrier::new(threads + 1);
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let (barrier, work) = (&barrier, &work);
                s.spawn(move || {
                    barrier.wait();
                    work(t);
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
