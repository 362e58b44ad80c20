//! The concurrency stress run: threads share one `Arc<CuckooFilter>` near full load and insert,
//! look up and remove at once; every thread tracks the keys it owns, so any false negative is
//! caught, during the run and in a verification pass at the end.
//!
//! With `--grow` the run has two phases. In the growth phase each thread inserts until it owns
//! its share of the capacity (or until half the run has passed), growing the filter from a
//! thousandth of it; then it churns: its inserts and removes keep what it holds constant, and
//! `--churn` percent of its inserts re-insert one of its live keys, an extra copy that a later
//! remove takes again. The churn must not grow the filter: at the end it may have at most one
//! level more than when the last thread finished growing, and use at most twice the memory of a
//! filter presized for the capacity, plus 1 MiB.
//!
//! ```text
//! cargo stress                          # 4 threads, 20 s, 90/5/5
//! cargo stress --grow                   # from 4,000 items, growing to 4,000,000, then churn
//! cargo stress --duration 3 --json
//! cargo stress --help
//! ```
//!
//! (`cargo stress` is the workspace's alias of
//! `cargo run --release -p lockfree-cuckoo-eval --bin stress --`.)
//!
//! While it runs it shows its progress on stderr (`progress.rs`): one row redrawn in place on a
//! terminal, else a row every 5 seconds, then the row of the threads' totals; then the summary
//! on stdout (`report.rs`). Every line fits in 80 columns.
//!
//! Exit status: 0 when no false negative was seen and every check passed, 1 otherwise, 2 for a
//! bad command line.

mod cli;
mod progress;
mod report;

use std::collections::VecDeque;
use std::io::IsTerminal as _;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Barrier};
use std::time::Instant;

use clap::Parser;
use crossbeam_utils::CachePadded;
use lockfree_cuckoo::CuckooFilter;
use lockfree_cuckoo_eval::grouped;
use lockfree_cuckoo_eval::keys::{seeded_key, ABSENT, THREAD_BASE};
use rand::rngs::SmallRng;
use rand::{RngCore, SeedableRng};

use crate::cli::Options;
use crate::progress::{Progress, Sample};
use crate::report::{table, wrap, GrowthEnd, Json, Report, Snapshots, Tally, WIDTH};

// Keys are named, not drawn (`keys::seeded_key`, in the key set of `--seed`): thread `t` owns
// the keys of space `THREAD_BASE + t` and asks the never-inserted ones of `ABSENT`, so the keys of
// different threads and the never-inserted ones cannot collide, and a lookup of a key that was
// never inserted is a true negative by construction.

/// Key `seq` of thread `thread`.
fn owned_key(seed: u64, thread: usize, seq: u64) -> u64 {
    seeded_key(seed, THREAD_BASE + thread as u64, seq)
}

/// Never-inserted key `seq`: the threads count up from 0, each taking every `threads`th; the
/// check after the run counts down from the top of the space, so it asks other keys.
fn absent_key(seed: u64, seq: u64) -> u64 {
    seeded_key(seed, ABSENT, seq)
}

/// The last sequence number of a key space.
const LAST_SEQ: u64 = (1 << 48) - 1;

/// Per-thread counters the progress rows read; each on its own cache line.
#[derive(Default)]
struct Live {
    contains: AtomicU64,
    inserts: AtomicU64,
    removes: AtomicU64,
    false_negatives: AtomicU64,
    /// The tally's `reinserts` and `extra_removes`: whether the thread churned.
    reinserts: AtomicU64,
    extra_removes: AtomicU64,
}

impl Live {
    fn ops(&self) -> u64 {
        self.contains.load(Relaxed) + self.inserts.load(Relaxed) + self.removes.load(Relaxed)
    }

    /// Whether the thread both re-inserted a live key and removed such a copy, as the summary
    /// counts the threads that churned.
    fn churned(&self) -> bool {
        self.reinserts.load(Relaxed) > 0 && self.extra_removes.load(Relaxed) > 0
    }
}

impl Tally {
    /// Whether the thread both re-inserted a live key and removed such a copy.
    fn churned(&self) -> bool {
        self.reinserts > 0 && self.extra_removes > 0
    }
}

/// Keys a thread owns: inserted and not yet removed, oldest first, and the extra copies of them
/// that its churn re-inserted and has not yet removed, oldest first. A key with extra copies is
/// owned once in `keys` and once more in `extra` for each copy; removes take the extra copies
/// first, so an owned key never leaves `keys` while an extra copy of it is queued.
struct Owned {
    keys: VecDeque<u64>,
    extra: VecDeque<u64>,
    next_seq: u64,
}

impl Owned {
    /// Copies the thread holds in the filter: its owned keys and their extra copies.
    fn held(&self) -> usize {
        self.keys.len() + self.extra.len()
    }
}

/// The end of the growth phase, shared by the threads: each enters its churn regime once, and
/// the last to enter records the filter's levels and memory.
#[derive(Default)]
struct Growth {
    /// Threads in their churn regime.
    threads: AtomicUsize,
    /// Of them, those that entered because half the run had passed, short of their share.
    cut_short: AtomicUsize,
    /// Copies the threads held when they entered, summed.
    held: AtomicUsize,
    /// `stats().levels` and `memory_usage()` when the last thread entered.
    levels: AtomicUsize,
    memory: AtomicUsize,
    /// When the last thread entered, in nanoseconds from the start of its run.
    at_nanos: AtomicU64,
}

impl Growth {
    /// Thread enters its churn regime, holding `held` copies.
    fn enter(
        &self,
        filter: &CuckooFilter,
        threads: usize,
        held: usize,
        cut_short: bool,
        started: Instant,
    ) {
        self.held.fetch_add(held, Relaxed);
        self.cut_short.fetch_add(usize::from(cut_short), Relaxed);
        // The threads are joined before these are read: Relaxed suffices.
        if self.threads.fetch_add(1, Relaxed) + 1 == threads {
            self.levels.store(filter.stats().levels, Relaxed);
            self.memory.store(filter.memory_usage(), Relaxed);
            self.at_nanos.store(started.elapsed().as_nanos() as u64, Relaxed);
        }
    }

    /// What the last thread recorded (zeros if some thread never entered its churn regime).
    fn end(&self) -> GrowthEnd {
        GrowthEnd {
            threads: self.threads.load(Relaxed),
            at_s: self.at_nanos.load(Relaxed) as f64 / 1e9,
            held: self.held.load(Relaxed),
            cut_short: self.cut_short.load(Relaxed),
            levels: self.levels.load(Relaxed),
            memory: self.memory.load(Relaxed),
        }
    }
}

fn prefill(filter: &CuckooFilter, opts: &Options, thread: usize, quota: usize) -> (Owned, u64) {
    let target = if opts.grow { 0 } else { quota * opts.fill as usize / 100 };
    let mut owned =
        Owned { keys: VecDeque::with_capacity(quota), extra: VecDeque::new(), next_seq: 0 };
    let mut refused = 0;
    while owned.keys.len() < target {
        let key = owned_key(opts.seed, thread, owned.next_seq);
        owned.next_seq += 1;
        match filter.insert(&key) {
            Ok(()) => owned.keys.push_back(key),
            Err(_) => {
                refused += 1;
                break;
            }
        }
    }
    (owned, refused)
}

/// The operations of one thread until `stop`. It churns (re-inserts live keys) only in its churn
/// regime: from the start without `--grow`, else once it has held its `quota` or half the run
/// has passed (then what it holds is its quota).
#[allow(clippy::too_many_arguments)]
fn worker(
    filter: &CuckooFilter,
    opts: &Options,
    thread: usize,
    mut quota: usize,
    owned: &mut Owned,
    live: &Live,
    stop: &AtomicBool,
    growth: &Growth,
) -> Tally {
    // Operation choices and lookup targets: a fast generator, as it runs once an operation.
    let mut rng = SmallRng::seed_from_u64(opts.seed ^ (thread as u64) << 32);
    let mut tally = Tally::default();
    let [c, i, _] = opts.mix;
    let churn = u64::from(opts.churn_percent());
    let mut absent_seq = thread as u64;
    let mut since_publish = 0u64;
    let started = Instant::now();
    let growth_deadline = opts.duration / 2;
    let mut churning = !opts.grow || owned.held() >= quota;
    if churning {
        growth.enter(filter, opts.threads, owned.held(), false, started);
    }
    loop {
        let r = rng.next_u64();
        let roll = (r % 100) as u32;
        if roll < c {
            // Half the lookups ask for a key this thread owns (must be true), half for a key
            // nobody inserted (a true answer is a false positive).
            if r >> 32 & 1 == 0 && !owned.keys.is_empty() {
                let key = owned.keys[(r >> 33) as usize % owned.keys.len()];
                tally.owned_checks += 1;
                if !filter.contains(&key) {
                    tally.false_negatives += 1;
                    live.false_negatives.fetch_add(1, Relaxed);
                }
            } else {
                absent_seq += opts.threads as u64;
                tally.absent_checks += 1;
                tally.absent_positives +=
                    u64::from(filter.contains(&absent_key(opts.seed, absent_seq)));
            }
            tally.contains += 1;
        } else if ((roll < c + i || opts.grow) && owned.held() < quota) || owned.keys.is_empty() {
            tally.inserts += 1;
            if churning && !owned.keys.is_empty() && (r >> 32) % 100 < churn {
                // Churn: one more copy of a live key, which stays owned throughout.
                let key = owned.keys[(rng.next_u64() % owned.keys.len() as u64) as usize];
                tally.reinserts += 1;
                match filter.insert(&key) {
                    Ok(()) => owned.extra.push_back(key),
                    Err(_) => tally.refused += 1,
                }
            } else {
                let key = owned_key(opts.seed, thread, owned.next_seq);
                owned.next_seq += 1;
                match filter.insert(&key) {
                    Ok(()) => owned.keys.push_back(key),
                    Err(_) => tally.refused += 1,
                }
            }
            if !churning && owned.held() >= quota {
                churning = true;
                growth.enter(filter, opts.threads, owned.held(), false, started);
            }
        } else {
            // A remove (or an insert that would pass the thread's share of the capacity): an
            // extra copy first, else the oldest owned key.
            let key = match owned.extra.pop_front() {
                Some(key) => {
                    tally.extra_removes += 1;
                    key
                }
                None => owned.keys.pop_front().expect("not empty"),
            };
            tally.removes += 1;
            if !filter.remove(&key) {
                tally.removes_missed += 1;
            }
        }
        since_publish += 1;
        if since_publish == 4096 {
            since_publish = 0;
            live.contains.store(tally.contains, Relaxed);
            live.inserts.store(tally.inserts, Relaxed);
            live.removes.store(tally.removes, Relaxed);
            live.reinserts.store(tally.reinserts, Relaxed);
            live.extra_removes.store(tally.extra_removes, Relaxed);
            if !churning && started.elapsed() >= growth_deadline {
                // Half the run has passed: churn at what the thread holds.
                churning = true;
                quota = owned.held().max(1);
                growth.enter(filter, opts.threads, owned.held(), true, started);
            }
            if stop.load(Relaxed) {
                return tally;
            }
        }
    }
}

/// Takes snapshots back to back until `stop`, each written into one reused buffer.
fn snapshotter(filter: &CuckooFilter, stop: &AtomicBool) -> Snapshots {
    let mut out = Snapshots::default();
    let mut bytes = Vec::new();
    while !stop.load(Relaxed) {
        bytes.clear();
        let started = Instant::now();
        let info = filter.write_to(&mut bytes).expect("writing into a Vec");
        out.millis.push(started.elapsed().as_secs_f64() * 1e3);
        out.captured += info.captured_by_writers;
    }
    out.millis.sort_by(f64::total_cmp);
    out
}

/// Where `--grow` starts: a thousandth of the capacity.
const GROWTH: usize = 1_000;

fn run(opts: Options) -> Report {
    let filter = Arc::new(if opts.grow {
        CuckooFilter::builder().capacity(opts.capacity / GROWTH).growable().build()
    } else {
        CuckooFilter::with_capacity(opts.capacity)
    });
    let quota = opts.capacity / opts.threads;
    let live: Arc<Vec<CachePadded<Live>>> =
        Arc::new((0..opts.threads).map(|_| CachePadded::new(Live::default())).collect());
    let stop = Arc::new(AtomicBool::new(false));
    let growth = Arc::new(Growth::default());
    let start_line = Arc::new(Barrier::new(opts.threads + 1));

    if opts.grow {
        eprint!(
            "{} s run, {} threads on a growable filter of {} items ...",
            opts.duration.as_secs_f64(),
            opts.threads,
            grouped(filter.capacity() as u64)
        );
    } else {
        eprint!(
            "{} s run, prefilling {} threads x {} keys ...",
            opts.duration.as_secs_f64(),
            opts.threads,
            grouped((quota * opts.fill as usize / 100) as u64)
        );
    }
    let handles: Vec<_> = (0..opts.threads)
        .map(|t| {
            let (filter, live, stop, growth, start_line, opts) = (
                Arc::clone(&filter),
                Arc::clone(&live),
                Arc::clone(&stop),
                Arc::clone(&growth),
                Arc::clone(&start_line),
                opts.clone(),
            );
            std::thread::spawn(move || {
                let (mut owned, refused) = prefill(&filter, &opts, t, quota);
                start_line.wait();
                let tally = worker(&filter, &opts, t, quota, &mut owned, &live[t], &stop, &growth);
                (owned, tally, refused)
            })
        })
        .collect();
    start_line.wait();
    let start = Instant::now();
    eprintln!(" done");
    let snapshots = opts.snapshots.then(|| {
        let (filter, stop) = (Arc::clone(&filter), Arc::clone(&stop));
        std::thread::spawn(move || snapshotter(&filter, &stop))
    });
    let mut progress = Progress::new(&opts, std::io::stderr().is_terminal());
    eprintln!("{}", progress.header());
    let mut next = progress.interval();
    loop {
        std::thread::sleep(next.min(opts.duration).saturating_sub(start.elapsed()));
        if next >= opts.duration {
            break;
        }
        next += progress.interval();
        let stats = filter.stats();
        progress.show(&Sample {
            elapsed: start.elapsed().as_secs_f64(),
            ops: live.iter().map(|l| l.ops()).sum(),
            load: filter.load_factor(),
            levels: stats.levels,
            memory: filter.memory_usage(),
            grown: growth.threads.load(Relaxed),
            churn: live.iter().filter(|l| l.churned()).count(),
            relocations: stats.relocations,
            conservative: stats.conservative_lookups,
            false_negatives: live.iter().map(|l| l.false_negatives.load(Relaxed)).sum(),
        });
    }
    stop.store(true, Relaxed);
    let mut tally = Tally::default();
    let mut owned_all = Vec::new();
    let mut extra_all = Vec::new();
    let mut churn_threads = 0;
    let mut prefill_refused = 0;
    for h in handles {
        let (owned, t, refused) = h.join().expect("worker panicked");
        prefill_refused += refused;
        tally.contains += t.contains;
        tally.owned_checks += t.owned_checks;
        tally.absent_checks += t.absent_checks;
        tally.absent_positives += t.absent_positives;
        tally.inserts += t.inserts;
        tally.refused += t.refused;
        tally.removes += t.removes;
        tally.removes_missed += t.removes_missed;
        tally.false_negatives += t.false_negatives;
        tally.reinserts += t.reinserts;
        tally.extra_removes += t.extra_removes;
        churn_threads += usize::from(t.churned());
        owned_all.extend(owned.keys);
        extra_all.extend(owned.extra);
    }
    let snapshots = snapshots.map(|s| s.join().expect("snapshotter panicked")).unwrap_or_default();
    let elapsed = start.elapsed().as_secs_f64();
    let growth_end = growth.end();

    // Quiescent now: the last progress row shows the summary's numbers.
    let stats = filter.stats();
    let (len, load, memory) = (filter.len(), filter.load_factor(), filter.memory_usage());
    progress.finish(&Sample {
        elapsed,
        ops: tally.contains + tally.inserts + tally.removes,
        load,
        levels: stats.levels,
        memory,
        grown: growth_end.threads,
        churn: churn_threads,
        relocations: stats.relocations,
        conservative: stats.conservative_lookups,
        false_negatives: tally.false_negatives,
    });
    eprintln!(
        "verifying {} live keys and {} extra copies ...",
        grouped(owned_all.len() as u64),
        grouped(extra_all.len() as u64)
    );

    // Every lookup of an owned key must be true, through both lookup paths.
    let verify_missed_scalar = owned_all.iter().filter(|k| !filter.contains(*k)).count() as u64;
    let mut answers = vec![false; owned_all.len()];
    filter.contains_batch(&owned_all, &mut answers);
    let verify_missed_batch = answers.iter().filter(|&&b| !b).count() as u64;
    let final_fp_queries = 1_000_000u64;
    let final_fp_hits = (0..final_fp_queries)
        .filter(|&i| filter.contains(&absent_key(opts.seed, LAST_SEQ - i)))
        .count() as u64;
    // What the memory check compares with: a filter presized for the capacity (freed at once).
    let presized_memory = CuckooFilter::with_capacity(opts.capacity).memory_usage();
    let buckets = filter.bucket_count();
    // Removing every extra copy and every owned key must find each one and leave the filter
    // empty: nothing lost, nothing duplicated.
    let verify_remove_missed =
        extra_all.iter().chain(&owned_all).filter(|k| !filter.remove(*k)).count() as u64;
    let left_after_remove = filter.len();
    Report {
        opts,
        elapsed,
        tally,
        stats,
        load,
        len,
        live_keys: owned_all.len(),
        extra_copies: extra_all.len(),
        churn_threads,
        growth_end,
        presized_memory,
        buckets,
        memory,
        final_fp_queries,
        final_fp_hits,
        verify_missed_scalar,
        verify_missed_batch,
        verify_remove_missed,
        left_after_remove,
        prefill_refused,
        snapshots,
    }
}

fn main() -> ExitCode {
    let opts = Options::parse();
    let report = run(opts);
    if report.opts.json {
        let json = serde_json::to_string(&Json::from(&report)).expect("the summary serialises");
        println!("{json}");
    } else {
        print!("{}", table(&report));
    }
    let failures = report.failures();
    if failures.is_empty() {
        ExitCode::SUCCESS
    } else {
        for failure in failures {
            for line in wrap(&format!("FAIL: {failure}"), WIDTH, "      ") {
                eprintln!("{line}");
            }
        }
        ExitCode::from(1)
    }
}
