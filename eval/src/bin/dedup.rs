//! Deduplication with a window: the workload windowed filters are for, on ours and on the two
//! Rust filters whose items expire, side by side in one run and in real time (the peers read the
//! system clock themselves).
//!
//! `--threads` threads share one filter and feed it a paced stream of `--capacity` distinct keys
//! a window (`--window`, 2 s by default), for `--windows` windows. Each key is asked "seen?"
//! (`contains`) and then marked seen (an insert, which refreshes a present key where the filter
//! can). 70% of the keys are fresh; 20% repeat a key first seen less than half a window ago
//! (it must be seen: a miss is a false negative inside the window); 10% repeat a key last seen
//! more than two windows ago (it should not be: a hit is a stale positive). A fresh key reported
//! seen is a false positive. A maintenance thread does each filter's expiry work as its docs ask.
//!
//! Prints, for each filter: nanoseconds a key (a lookup and an insert, the mean over the threads'
//! time in the filter), false negatives inside the window, false and stale positives, inserts
//! refused or evicting, and bytes a key of capacity.
//!
//! ```text
//! cargo run --release -p lockfree-cuckoo-eval --bin dedup
//! cargo run --release -p lockfree-cuckoo-eval --bin dedup -- --threads 4 --capacity 2000000
//! ```
//!
//! The peers, configured as near ours as they go (16 bits an entry where they let us choose):
//! - ours: `expire_after(window)`, capacity the keys of a window; [`WindowedFilter::tick`] every
//!   tenth of a window (inserts do most of the work).
//! - `expiring-atomic-filter` 0.1: a ring of `atomic-cuckoo-filter`s, TTL the window and an
//!   expiration period of half of it (so a key lives 1 to 1.5 windows, as ours), 16-bit
//!   fingerprints, capacity the keys of 1.5 windows; `expire` every quarter of a window. Its
//!   clock counts whole seconds: windows of 2 s or more.
//! - `cuckoo-clock` 0.2: 13-bit fingerprints and 3-bit TTL counters (16 bits an entry), counters
//!   of 5 decremented every quarter of a window (a key lives 1 to 1.25 windows), capacity the
//!   keys of 1.25 windows; a key seen again gets its counter back.

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use clap::{Parser, ValueEnum};
use cuckoo_clock::config::{CuckooConfiguration, TtlConfig};
use cuckoo_clock::{InsertValues, LookupValues};
use expiring_atomic_filter::ExpiringAtomicFilter;
use lockfree_cuckoo::{CuckooFilter, WindowedFilter};
use lockfree_cuckoo_eval::number;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

#[derive(Debug, Parser)]
#[command(name = "dedup")]
struct Args {
    /// Threads sharing the filter
    #[arg(long, value_name = "N", default_value = "2", value_parser = number::<usize>)]
    threads: usize,
    /// Distinct keys a window (all threads)
    #[arg(long, value_name = "N", default_value = "1000000", value_parser = number::<usize>)]
    capacity: usize,
    /// The window, in whole seconds (one of the peers counts time in seconds)
    #[arg(long, value_name = "SECONDS", default_value = "2")]
    window: u64,
    /// Windows the stream runs for
    #[arg(long, value_name = "N", default_value = "4")]
    windows: u64,
    /// The filters, in this order
    #[arg(long, value_enum, value_delimiter = ',', default_value = "ours,expiring,clock")]
    peers: Vec<Peer>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Peer {
    /// lockfree-cuckoo's WindowedFilter
    Ours,
    /// expiring-atomic-filter
    Expiring,
    /// cuckoo-clock
    Clock,
}

impl Peer {
    fn name(self) -> &'static str {
        match self {
            Self::Ours => "lockfree-cuckoo windowed",
            Self::Expiring => "expiring-atomic-filter",
            Self::Clock => "cuckoo-clock",
        }
    }
}

/// What the stream asks of a filter.
trait Dedup: Send + Sync {
    /// Whether `key` was seen; then marks it seen. `Err` when the filter refused it, or stored
    /// it by evicting another key.
    fn seen(&self, key: u64) -> (bool, bool);
    /// The expiry work its docs ask for, done every `every`.
    fn maintain(&self);
    fn every(&self, window: Duration) -> Duration;
    fn bytes(&self) -> usize;
}

impl Dedup for WindowedFilter {
    fn seen(&self, key: u64) -> (bool, bool) {
        let seen = self.contains(&key);
        (seen, self.insert(&key).is_ok())
    }
    fn maintain(&self) {
        self.tick();
    }
    fn every(&self, window: Duration) -> Duration {
        window / 10
    }
    fn bytes(&self) -> usize {
        self.memory_usage()
    }
}

struct Expiring(ExpiringAtomicFilter);

impl Dedup for Expiring {
    fn seen(&self, key: u64) -> (bool, bool) {
        // Its `insert_unique` looks in the slot being written alone: `contains` asks them all.
        // The insert then puts the key in the current slot unless it is there already, which
        // refreshes a key seen in an older slot, as ours does.
        let seen = self.0.contains(&key);
        (seen, self.0.insert_unique(&key).is_ok())
    }
    fn maintain(&self) {
        self.0.expire();
    }
    fn every(&self, window: Duration) -> Duration {
        window / 4
    }
    fn bytes(&self) -> usize {
        // Its API gives no size: each slot's table of 16-bit fingerprints, at the capacity it
        // was built for rounded up to a power of two of buckets of four, as atomic-cuckoo-filter
        // sizes it.
        self.0.capacity().next_power_of_two() * 2
    }
}

struct Clock {
    filter: cuckoo_clock::CuckooFilter<std::hash::RandomState>,
    ttl: u32,
}

impl Dedup for Clock {
    fn seen(&self, key: u64) -> (bool, bool) {
        let seen = self.filter.contains(&key);
        let evicted = self.filter.insert_if_not_present_with_update(
            &key,
            InsertValues::default(),
            LookupValues { ttl: Some(self.ttl), ..LookupValues::default() },
        );
        (seen, evicted.is_none())
    }
    fn maintain(&self) {
        self.filter.scan_and_update_ttl();
    }
    fn every(&self, window: Duration) -> Duration {
        window / 4
    }
    fn bytes(&self) -> usize {
        self.filter.get_memory_usage()
    }
}

fn build(peer: Peer, args: &Args) -> Box<dyn Dedup> {
    let window = Duration::from_secs(args.window);
    let capacity = args.capacity;
    match peer {
        Peer::Ours => {
            Box::new(CuckooFilter::builder().capacity(capacity).expire_after(window).build())
        }
        Peer::Expiring => Box::new(Expiring(
            ExpiringAtomicFilter::builder()
                .capacity(capacity * 3 / 2)
                .fingerprint_size(16)
                .ttl(args.window)
                .expiration_period((args.window / 2).max(1))
                .build()
                .expect("a valid expiring-atomic-filter configuration"),
        )),
        Peer::Clock => {
            let ttl = 5;
            let configuration = CuckooConfiguration::builder(capacity * 5 / 4)
                .fingerprint_bits(13.try_into().expect("13 bits"))
                .bucket_size(4.try_into().expect("4 entries"))
                .with_ttl(TtlConfig {
                    ttl: ttl.try_into().expect("a non-zero TTL"),
                    ttl_bits: 3.try_into().expect("3 bits"),
                })
                .build()
                .expect("a valid cuckoo-clock configuration");
            Box::new(Clock { filter: cuckoo_clock::CuckooFilter::new_random(configuration), ttl })
        }
    }
}

/// One thread's keys: `(key, first seen, last seen)` in the order first seen, as offsets from
/// the start.
#[derive(Default)]
struct History {
    keys: Vec<(u64, Duration, Duration)>,
}

#[derive(Clone, Copy, Debug, Default)]
struct Counts {
    ops: u64,
    nanos: u128,
    inside: u64,
    false_negatives: u64,
    outside: u64,
    stale: u64,
    fresh: u64,
    false_positives: u64,
    refused: u64,
}

impl Counts {
    fn add(&mut self, other: Counts) {
        self.ops += other.ops;
        self.nanos += other.nanos;
        self.inside += other.inside;
        self.false_negatives += other.false_negatives;
        self.outside += other.outside;
        self.stale += other.stale;
        self.fresh += other.fresh;
        self.false_positives += other.false_positives;
        self.refused += other.refused;
    }
}

/// Feeds one thread's share of the stream for the run, paced in slices of 10 ms.
fn stream(filter: &dyn Dedup, thread: u64, args: &Args, start: Instant) -> Counts {
    let window = Duration::from_secs(args.window);
    let slice = Duration::from_millis(10);
    let per_slice = (args.capacity as u64 * slice.as_millis() as u64)
        / (args.window * 1000 * args.threads as u64);
    let mut rng = SmallRng::seed_from_u64(thread);
    let mut history = History::default();
    let mut counts = Counts::default();
    let mut next = 0u64;
    let end = window * args.windows as u32;
    let mut due = Duration::ZERO;
    while due < end {
        let now = start.elapsed();
        if now < due {
            std::thread::sleep(due - now);
        }
        let now = start.elapsed();
        let began = Instant::now();
        let mut slice_counts = Counts::default();
        // The recent keys (first seen under half a window ago, as of the slice's start) and the
        // old ones (first seen over two windows ago) are ranges of the history.
        let recent = history.keys.partition_point(|k| now - k.1 >= window / 2);
        let old = history.keys.partition_point(|k| now - k.1 > window * 2);
        for _ in 0..per_slice {
            let roll = rng.random_range(0..10);
            let (key, kind) = if roll < 2 && recent < history.keys.len() {
                let at = rng.random_range(recent..history.keys.len());
                history.keys[at].2 = now;
                (history.keys[at].0, Kind::Inside)
            } else if roll < 3 && old > 0 {
                let at = rng.random_range(0..old);
                if now - history.keys[at].2 > window * 2 {
                    history.keys[at].2 = now;
                    (history.keys[at].0, Kind::Outside)
                } else {
                    (fresh(thread, &mut next, &mut history, now), Kind::Fresh)
                }
            } else {
                (fresh(thread, &mut next, &mut history, now), Kind::Fresh)
            };
            let (seen, stored) = filter.seen(key);
            slice_counts.ops += 1;
            slice_counts.refused += u64::from(!stored);
            match kind {
                Kind::Inside => {
                    slice_counts.inside += 1;
                    slice_counts.false_negatives += u64::from(!seen);
                }
                Kind::Outside => {
                    slice_counts.outside += 1;
                    slice_counts.stale += u64::from(seen);
                }
                Kind::Fresh => {
                    slice_counts.fresh += 1;
                    slice_counts.false_positives += u64::from(seen);
                }
            }
        }
        slice_counts.nanos = began.elapsed().as_nanos();
        counts.add(slice_counts);
        // Keys older than three windows are never asked for again.
        let expired = history.keys.partition_point(|k| now - k.1 > window * 3);
        if expired > history.keys.len() / 2 {
            history.keys.drain(..expired);
        }
        due += slice;
    }
    counts
}

#[derive(Clone, Copy)]
enum Kind {
    Inside,
    Outside,
    Fresh,
}

fn fresh(thread: u64, next: &mut u64, history: &mut History, now: Duration) -> u64 {
    let key = thread << 48 | *next;
    *next += 1;
    history.keys.push((key, now, now));
    key
}

fn run(peer: Peer, args: &Args) -> Counts {
    let filter: Arc<dyn Dedup> = Arc::from(build(peer, args));
    let window = Duration::from_secs(args.window);
    let done = Arc::new(AtomicBool::new(false));
    let maintainer = {
        let (filter, done) = (Arc::clone(&filter), Arc::clone(&done));
        std::thread::spawn(move || {
            let every = filter.every(window);
            while !done.load(Relaxed) {
                std::thread::sleep(every);
                filter.maintain();
            }
        })
    };
    let barrier = Arc::new(Barrier::new(args.threads));
    let mut total = Counts::default();
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..args.threads as u64)
            .map(|t| {
                let (filter, barrier) = (Arc::clone(&filter), Arc::clone(&barrier));
                scope.spawn(move || {
                    barrier.wait();
                    stream(&*filter, t, args, Instant::now())
                })
            })
            .collect();
        for worker in workers {
            total.add(worker.join().expect("a stream thread panicked"));
        }
    });
    done.store(true, Relaxed);
    maintainer.join().expect("the maintenance thread panicked");
    println!(
        "| {} | {:.0} | {} of {} | {:.4}% | {:.2}% | {} | {:.2} |",
        peer.name(),
        total.nanos as f64 / total.ops as f64,
        total.false_negatives,
        total.inside,
        100.0 * total.false_positives as f64 / total.fresh.max(1) as f64,
        100.0 * total.stale as f64 / total.outside.max(1) as f64,
        total.refused,
        filter.bytes() as f64 / args.capacity as f64,
    );
    total
}

fn main() {
    let args = Args::parse();
    assert!(args.window >= 2, "a window of at least 2 s: expiring-atomic-filter counts seconds");
    println!(
        "{} threads, {} keys a window of {} s, {} windows",
        args.threads, args.capacity, args.window, args.windows
    );
    println!();
    println!("| filter | ns a key | false negatives inside the window | false positives | stale positives | refused or evicting | bytes a key |");
    println!("|---|---:|---:|---:|---:|---:|---:|");
    for &peer in &args.peers {
        run(peer, &args);
    }
}
