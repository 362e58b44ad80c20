//! Growth 1,000-fold against a filter presized for the final count, in one run: the growth
//! goal's targets. For each scale (cache: 1,000 to 1,000,000 items; DRAM: 100,000 to 100,000,000) and
//! each filter in turn:
//!
//! 1. **Build:** 4 threads insert the keys (disjoint quarters) while 2 others look up keys the
//!    inserters have published as inserted, counting false negatives. Timed as a whole.
//!    `scalable_cuckoo_filter` takes `&mut` to insert, so it builds on one thread with no
//!    readers: behind a `RwLock` with 4 writers and 2 readers it spent its time in the kernel
//!    (a 1,000,000-item build took 6.5 s, and a 100,000,000-item one had not finished after
//!    20 minutes).
//! 2. **Latency:** the same build again into a fresh filter, every operation timed on its own
//!    (p99.9 and max of inserts and of the readers' lookups).
//! 3. On the built filter: every key present (lost: 0), the false-positive rate over 10^6
//!    absent keys, bytes per item, and one thread's `contains` (and `contains_batch`) over
//!    2^22 queries at 0% and 100% positive.
//!
//! The filters: ours presized (`with_capacity(end)`), ours growable
//! (`capacity(start).growable()`), and `scalable_cuckoo_filter` (the one Rust peer that grows;
//! single-threaded, so behind a `RwLock`, with a seeded generator for its kicks), built for
//! `start` items and its default 0.1% false-positive target.
//!
//! ```text
//! cargo run --release -p lockfree-cuckoo-eval --bin grow                  # both scales
//! cargo run --release -p lockfree-cuckoo-eval --bin grow -- --scale cache
//! cargo run --release -p lockfree-cuckoo-eval --bin grow -- --start 16000   # to 16,000,000
//! ```

use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Barrier;
use std::time::Instant;

use clap::{Parser, ValueEnum};
use hdrhistogram::Histogram;
use lockfree_cuckoo::CuckooFilter;
use lockfree_cuckoo_eval::keys::{key, queries, SplitMix64, ABSENT, PRESENT};
use lockfree_cuckoo_eval::peers::{Locked, Ours, Peer, Scalable, Shared};

/// Growth 1,000-fold against a presized filter and scalable_cuckoo_filter (the growth goal's
/// targets).
#[derive(Debug, Parser)]
#[command(name = "grow")]
struct Args {
    /// Which growths to run
    #[arg(long, value_enum, default_value = "both")]
    scale: Scale,
    /// Filters to measure, comma-separated [default: all]
    #[arg(long, value_enum, value_delimiter = ',', value_name = "FILTER,...")]
    filters: Vec<Kind>,
    /// Instead of the scales: one growth from this many items to 1,000 times as many
    #[arg(long, value_name = "ITEMS")]
    start: Option<usize>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Scale {
    /// 1,000 to 1,000,000 items
    Cache,
    /// 100,000 to 100,000,000 items
    Dram,
    Both,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Kind {
    /// Ours, built for the final count
    Presized,
    /// Ours, growable from the start count
    Growable,
    /// scalable_cuckoo_filter behind a RwLock, from the start count
    Scalable,
}

const INSERTERS: usize = 4;
const READERS: usize = 2;
/// The growth factor the targets name.
const GROWTH: usize = 1_000;
/// Lookups of one thread after the build, in each query array.
const QUERIES: usize = 1 << 22;
/// scalable_cuckoo_filter's false-positive target: its default.
const SCALABLE_FPR: f64 = 0.001;

/// What one build measured.
struct Build {
    seconds: f64,
    lookups: u64,
    false_negatives: u64,
    inserts: Histogram<u64>,
    reads: Histogram<u64>,
}

fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 60_000_000_000, 3).expect("valid bounds")
}

/// ns of `op`, recorded in `into` when timing each operation.
#[inline]
fn timed(into: &mut Option<Histogram<u64>>, op: impl FnOnce() -> bool) -> bool {
    match into {
        Some(h) => {
            let start = Instant::now();
            let done = op();
            h.saturating_record(start.elapsed().as_nanos() as u64);
            done
        }
        None => op(),
    }
}

/// Inserts keys `0..end` of [`PRESENT`] from `inserters` threads while `readers` threads look
/// up published keys; with `per_op`, every operation is timed.
fn build<F: Shared>(
    filter: &F,
    end: usize,
    (inserters, readers): (usize, usize),
    per_op: bool,
) -> Build {
    let progress: Vec<AtomicU64> = (0..inserters).map(|_| AtomicU64::new(0)).collect();
    let done = AtomicBool::new(false);
    let start_line = Barrier::new(inserters + readers + 1);
    let quarter = (end / inserters) as u64;
    std::thread::scope(|s| {
        let inserters: Vec<_> = (0..inserters as u64)
            .map(|w| {
                let (progress, start_line) = (&progress, &start_line);
                s.spawn(move || {
                    let mut hist = per_op.then(histogram);
                    start_line.wait();
                    for i in w * quarter..(w + 1) * quarter {
                        let k = key(PRESENT, i);
                        assert!(timed(&mut hist, || Shared::insert(filter, k)), "refused");
                        if i % 64 == 63 {
                            // Release: keys below are inserted, for the readers' Acquire load.
                            progress[w as usize].store(i + 1 - w * quarter, Ordering::Release);
                        }
                    }
                    hist
                })
            })
            .collect();
        let readers: Vec<_> = (0..readers as u64)
            .map(|r| {
                let (progress, done, start_line) = (&progress, &done, &start_line);
                s.spawn(move || {
                    let mut hist = per_op.then(histogram);
                    let (mut lookups, mut misses) = (0u64, 0u64);
                    let mut rng = SplitMix64::new(r);
                    start_line.wait();
                    while !done.load(Ordering::Relaxed) {
                        for (w, published) in progress.iter().enumerate() {
                            let published = published.load(Ordering::Acquire);
                            if published == 0 {
                                continue;
                            }
                            let pick = rng.next_u64() % published;
                            let k = key(PRESENT, w as u64 * quarter + pick);
                            lookups += 1;
                            misses += u64::from(!timed(&mut hist, || filter.contains(k)));
                        }
                    }
                    (lookups, misses, hist)
                })
            })
            .collect();
        start_line.wait();
        let started = Instant::now();
        let mut inserts = histogram();
        for h in inserters {
            if let Some(h) = h.join().unwrap() {
                inserts.add(h).unwrap();
            }
        }
        let seconds = started.elapsed().as_secs_f64();
        done.store(true, Ordering::Relaxed);
        let (mut lookups, mut false_negatives, mut reads) = (0, 0, histogram());
        for r in readers {
            let (l, m, h) = r.join().unwrap();
            lookups += l;
            false_negatives += m;
            if let Some(h) = h {
                reads.add(h).unwrap();
            }
        }
        Build { seconds, lookups, false_negatives, inserts, reads }
    })
}

/// ns a lookup of one thread over `stream`.
fn ns_per_lookup(stream: &[u64], mut lookup: impl FnMut(&[u64], &mut [bool])) -> f64 {
    let mut out = vec![false; stream.len()];
    let started = Instant::now();
    lookup(stream, &mut out);
    let ns = started.elapsed().as_secs_f64() * 1e9 / stream.len() as f64;
    black_box(out.iter().filter(|&&hit| hit).count());
    ns
}

/// ns an operation of one thread in a mix of 90% lookups (half of them of present keys), 5%
/// inserts of new keys and 5% removes of present ones, in turns, so that the count stays put.
fn ns_per_mixed_op<F: Shared>(filter: &F, end: usize, present: &[u64]) -> f64 {
    let ops = present.len() / 4;
    let (mut inserted, mut removed, mut hits) = (0u64, 0u64, 0usize);
    let started = Instant::now();
    for (j, &positive) in present.iter().take(ops).enumerate() {
        match j % 20 {
            0 => {
                hits += usize::from(filter.insert(key(ABSENT, (1 << 40) + inserted)));
                inserted += 1;
            }
            10 => {
                hits += usize::from(filter.remove(key(PRESENT, removed % end as u64)));
                removed += 1;
            }
            _ if j % 2 == 0 => hits += usize::from(filter.contains(positive)),
            _ => hits += usize::from(filter.contains(key(ABSENT, j as u64))),
        }
    }
    let ns = started.elapsed().as_secs_f64() * 1e9 / ops as f64;
    black_box(hits);
    ns
}

struct Row {
    kind: Kind,
    threads: (usize, usize),
    build_s: f64,
    lookups_during: u64,
    false_negatives: u64,
    lost: usize,
    fpr: f64,
    bytes_per_item: f64,
    levels: Option<usize>,
    contains: [f64; 2],
    batch: Option<[f64; 2]>,
    mix: f64,
    insert_latency: [u64; 3],
    read_latency: [u64; 3],
}

impl Kind {
    /// The peer it measures.
    fn peer(self) -> Peer {
        match self {
            Self::Presized | Self::Growable => Peer::Ours,
            Self::Scalable => Peer::Scalable,
        }
    }
}

fn measure(kind: Kind, start: usize, end: usize) -> Row {
    let levels = |f: &Ours| Some(f.0.stats().levels);
    match kind {
        Kind::Presized => measure_filter(kind, end, || Ours::new(end), levels),
        // Growable filters are built here, not by the peers' registry: paired.sh builds that
        // against revisions older than growth.
        Kind::Growable => measure_filter(
            kind,
            end,
            || Ours(CuckooFilter::builder().capacity(start).growable().build()),
            levels,
        ),
        Kind::Scalable => measure_filter(
            kind,
            end,
            || Locked::new(Scalable::seeded(start, SCALABLE_FPR, 1)),
            |_| None,
        ),
    }
}

/// Builds, checks and times the filters from `make`, `kind`'s, to `end` items; `levels` reads a
/// built one's level count, where it has levels.
fn measure_filter<F: Shared>(
    kind: Kind,
    end: usize,
    make: impl Fn() -> F,
    levels: impl Fn(&F) -> Option<usize>,
) -> Row {
    let threads = if kind == Kind::Scalable { (1, 0) } else { (INSERTERS, READERS) };
    eprint!("  {kind:?}: latency build");
    let latency = build(&make(), end, threads, true);
    let quantiles =
        |h: &Histogram<u64>| [h.value_at_quantile(0.99), h.value_at_quantile(0.999), h.max()];
    eprint!(", timed build");
    let filter = make();
    let timed = build(&filter, end, threads, false);
    eprint!(" {:.2} s, checks", timed.seconds);
    let lost = (0..end as u64).filter(|&i| !filter.contains(key(PRESENT, i))).count();
    let probes = 1_000_000u64;
    let fp = (0..probes).filter(|&i| filter.contains(key(ABSENT, i))).count();
    let streams = [0, 100].map(|share| queries(QUERIES, end, share, 21 + u64::from(share)));
    let contains = [0, 1].map(|s| {
        ns_per_lookup(&streams[s], |keys, out| {
            keys.iter().zip(out).for_each(|(k, o)| *o = black_box(filter.contains(*k)));
        })
    });
    let batch = kind.peer().batch().map(|_| {
        [0, 1].map(|s| ns_per_lookup(&streams[s], |keys, out| filter.contains_batch(keys, out)))
    });
    let mix = ns_per_mixed_op(&filter, end, &streams[1]);
    eprintln!(" done");
    Row {
        kind,
        threads,
        build_s: timed.seconds,
        lookups_during: timed.lookups + latency.lookups,
        false_negatives: timed.false_negatives + latency.false_negatives,
        lost,
        fpr: fp as f64 / probes as f64,
        bytes_per_item: filter.bytes() as f64 / end as f64,
        levels: levels(&filter),
        contains,
        batch,
        mix,
        insert_latency: quantiles(&latency.inserts),
        read_latency: quantiles(&latency.reads),
    }
}

fn scale(name: &str, start: usize, filters: &[Kind]) {
    let end = start * GROWTH;
    eprintln!("{name}: {start} to {end} items");
    let rows: Vec<Row> = filters.iter().map(|&kind| measure(kind, start, end)).collect();
    println!("\n### {name}: {start} to {end} items\n");
    println!(
        "| filter | threads | build s | lookups during builds | false negatives | lost | FPR % | bytes/item \
         | levels | contains ns 0% / 100% | batch ns 0% / 100% | insert p99 / p99.9 / max µs \
         | lookup p99 / p99.9 / max µs |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    let us = |q: [u64; 3]| {
        format!("{:.2} / {:.2} / {:.0}", q[0] as f64 / 1e3, q[1] as f64 / 1e3, q[2] as f64 / 1e3)
    };
    for r in &rows {
        println!(
            "| {:?} | {} + {} | {:.2} | {} | {} | {} | {:.4} | {:.2} | {} | {:.1} / {:.1} | {} | {} | {} |",
            r.kind,
            r.threads.0,
            r.threads.1,
            r.build_s,
            r.lookups_during,
            r.false_negatives,
            r.lost,
            100.0 * r.fpr,
            r.bytes_per_item,
            r.levels.map_or("-".into(), |l| l.to_string()),
            r.contains[0],
            r.contains[1],
            r.batch.map_or("-".into(), |b| format!("{:.1} / {:.1}", b[0], b[1])),
            us(r.insert_latency),
            us(r.read_latency),
        );
    }
    let find = |kind| rows.iter().find(|r| r.kind == kind);
    if let (Some(p), Some(g)) = (find(Kind::Presized), find(Kind::Growable)) {
        println!("\nGrowable against presized (targets in parentheses):\n");
        println!("- bytes per item: {:.2}x (at most 1.5x)", g.bytes_per_item / p.bytes_per_item);
        println!("- build time: {:.2}x (at most 1.5x)", g.build_s / p.build_s);
        println!(
            "- contains rate, 0% / 100% positive: {:.2} / {:.2} (at least 0.6 / 0.8)",
            p.contains[0] / g.contains[0],
            p.contains[1] / g.contains[1]
        );
        if let (Some(pb), Some(gb)) = (p.batch, g.batch) {
            println!(
                "- contains_batch rate, 0% / 100% positive: {:.2} / {:.2} (at least 0.6)",
                pb[0] / gb[0],
                pb[1] / gb[1]
            );
        }
        println!("- 90/5/5 mix rate: {:.2} (at least 0.6)", p.mix / g.mix);
        println!("- false-positive rate: {:.4}% (at most 0.1%)", 100.0 * g.fpr);
    }
}

fn main() {
    let args = Args::parse();
    let filters = if args.filters.is_empty() {
        vec![Kind::Presized, Kind::Growable, Kind::Scalable]
    } else {
        args.filters.clone()
    };
    if let Some(start) = args.start {
        scale("chosen", start, &filters);
        return;
    }
    if matches!(args.scale, Scale::Cache | Scale::Both) {
        scale("cache-sized end", 1_000, &filters);
    }
    if matches!(args.scale, Scale::Dram | Scale::Both) {
        scale("DRAM-sized end", 100_000, &filters);
    }
}
