//! Scaling with threads: one shared filter, 1 to N threads, each on keys of its own; total
//! throughput and the speedup over one thread of the same peer, workload and size.
//!
//! For each size, each peer in turn: the filter is built and prefilled once (every peer holds
//! the same items, 90% of our lanes at that size, `PRESENT` keys of the key scheme), then for
//! each of `--rounds` rounds, each thread count, each timed workload: the threads start together
//! at a barrier, run for `--seconds`, and stop together when a flag is raised (checked every
//! 256 operations, or every batch of 256 lookups). The workloads:
//!
//! - `contains0`, `contains50`, `contains100`: lookups, 0, 50 or 100% present. Thread `t` of `T`
//!   looks up its own slice of the prefilled keys (the `t`th of `T`), drawn uniformly, and
//!   absent keys of its own; keys are made in the loop (one SplitMix64 step and one key-scheme
//!   step, a few ns), the same for every peer and thread count.
//! - `mix90` (of every 20 operations: 18 lookups, one insert, one remove) and `mix50` (of every
//!   4: 2 lookups, one insert, one remove). Each thread inserts new keys of its own key space
//!   (`THREAD_BASE + t`) and removes its oldest key (its slice of the prefill first, then its
//!   own inserts), so it removes only what it inserted and the occupancy stays where the prefill
//!   put it; its lookups are half its own held keys, half absent. After each point, untimed,
//!   each thread puts back the prefill keys it removed and removes the keys it inserted, so the
//!   next point starts from the same set.
//! - `fill`: a fresh, empty filter, the `--items` keys (`T` slices) inserted by `T` threads,
//!   timed from the barrier to the last thread's end. This one is not run for `--seconds`.
//!
//! Peers come from the one registry (`eval/src/peers.rs`), every one that threads can share:
//! concurrent filters as they are, single-threaded ones behind a `RwLock`. The one-CAS floor
//! (`cas-floor`) runs every workload on words that its threads both read and write: what any
//! shared table costs in cache-line transfers alone, the ceiling on a filter's scaling. `ours-batch` uses
//! `contains_batch` (256 keys a call) for the lookups and `insert_batch` for the fill, and has
//! no mixes; `ours-grown` is ours built growable for a thousandth of the size and grown to it by
//! the prefill (or the fill). A peer without remove has no mixes. `DashSet` is skipped above
//! 10,000,000 items (several GB) unless `--all-sizes`; any peer whose estimated memory exceeds
//! 70% of the machine's available memory (from `/proc/meminfo`, where there is one) is skipped
//! at that size, with a note.
//!
//! Output: a header line (cores, settings), then one Markdown table per (size, workload): rows
//! are peers, columns thread counts, cells "median Mops/s [min–max over rounds] (speedup over
//! the median of 1 thread)". `--json` prints one JSON line per point instead.
//!
//! ```text
//! cargo run --release -p lockfree-cuckoo-eval --bin scaling     # 1 M and 100 M, all of it
//! cargo run --release -p lockfree-cuckoo-eval --bin scaling -- --threads 1,2 --items 100000 \
//!     --seconds 0.2 --rounds 1
//! eval/scaling.sh        # the prebuilt binary's default plan for a 16-core machine
//! ```

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Barrier;
use std::time::{Duration, Instant};

use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use clap::{Parser, ValueEnum};
use lockfree_cuckoo::CuckooFilter;
use lockfree_cuckoo_eval::keys::{key, SplitMix64, ABSENT, PRESENT, THREAD_BASE};
use lockfree_cuckoo_eval::peers::{Filter, Locked, Ours, Peer, Shared, Sizing, Visit};
use lockfree_cuckoo_eval::{grouped, number};
use serde::Serialize;

/// Throughput of one shared filter on 1 to N threads, and the speedup over one thread.
#[derive(Debug, Parser)]
// A flag given twice takes its last value, so that scripts can pass overrides after a plan.
#[command(name = "scaling", args_override_self = true)]
struct Args {
    /// Thread counts, comma-separated (1 is added if missing: speedups are over it) [default:
    /// powers of two up to the available parallelism, and that count itself]
    #[arg(long, value_name = "N,...", value_delimiter = ',', value_parser = positive)]
    threads: Vec<usize>,
    /// Items each filter is built for, one run per value, comma-separated
    #[arg(long, value_name = "N,...", value_delimiter = ',', default_value = "1000000,100000000",
          value_parser = positive)]
    items: Vec<usize>,
    /// Workloads, comma-separated, in the order given [default: all]
    #[arg(long, value_name = "W,...", value_delimiter = ',', value_enum)]
    workloads: Vec<Workload>,
    /// Peers, comma-separated, in the order given [default: all]
    #[arg(long, value_name = "PEER,...", value_delimiter = ',', value_parser = subject_parser())]
    peers: Vec<Subject>,
    /// Seconds each timed point runs (not the fill, which runs to the end)
    #[arg(long, value_name = "SECS", default_value = "0.5", value_parser = seconds)]
    seconds: f64,
    /// Rounds through every thread count and workload; the tables give the median and range
    #[arg(long, value_name = "N", default_value = "3", value_parser = positive)]
    rounds: usize,
    /// Run every peer at every size (DashSet is otherwise skipped above 10,000,000 items)
    #[arg(long)]
    all_sizes: bool,
    /// Print one JSON line per point instead of tables
    #[arg(long)]
    json: bool,
}

/// What the threads do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, ValueEnum)]
enum Workload {
    /// Lookups, none present
    Contains0,
    /// Lookups, half present
    Contains50,
    /// Lookups, all present
    Contains100,
    /// 90% lookups, 5% inserts, 5% removes, occupancy held
    Mix90,
    /// 50% lookups, 25% inserts, 25% removes, occupancy held
    Mix50,
    /// Inserts from empty to the size, timed to the end
    Fill,
}

impl Workload {
    fn name(self) -> String {
        self.to_possible_value().expect("no workload is skipped").get_name().to_owned()
    }

    /// Operations of one mix period, and the steps of its insert and its remove.
    fn mix(self) -> Option<(u32, u32, u32)> {
        match self {
            Self::Mix90 => Some((20, 0, 10)),
            Self::Mix50 => Some((4, 0, 2)),
            _ => None,
        }
    }

    fn percent_present(self) -> Option<u64> {
        match self {
            Self::Contains0 => Some(0),
            Self::Contains50 => Some(50),
            Self::Contains100 => Some(100),
            _ => None,
        }
    }

    /// Whether `peer` has what this workload needs (`None`), or why not.
    fn unfit(self, peer: Peer) -> Option<&'static str> {
        let ops = peer.ops();
        match self {
            Self::Fill if !ops.insert => Some("no insert"),
            Self::Fill => None,
            _ if !ops.contains => Some("no lookup"),
            Self::Mix90 | Self::Mix50 if peer.batched() => Some("lookups only"),
            Self::Mix90 | Self::Mix50 if !(ops.insert && ops.remove) => Some("no remove"),
            _ => None,
        }
    }
}

/// A filter this tool measures: a registry peer, or ours grown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Subject {
    peer: Peer,
    /// Ours built growable for a thousandth of the size.
    grown: bool,
}

const GROWN: &str = "ours-grown";
/// Filters grown by the prefill start at this fraction of the size.
const GROWTH: usize = 1_000;

impl Subject {
    fn name(self) -> &'static str {
        if self.grown {
            "lockfree-cuckoo grown"
        } else {
            self.peer.name()
        }
    }

    fn key(self) -> String {
        if self.grown {
            GROWN.into()
        } else {
            self.peer.key()
        }
    }

    /// The default list: ours, its batch calls, ours grown, then every other peer threads can
    /// share, in the registry's order.
    fn all() -> Vec<Self> {
        let mut all: Vec<Self> =
            Peer::matching(shareable).into_iter().map(|peer| Self { peer, grown: false }).collect();
        let at = all.iter().position(|s| s.peer == Peer::OursBatch).map_or(0, |i| i + 1);
        all.insert(at, Self { peer: Peer::Ours, grown: true });
        all
    }
}

/// Whether threads can share `peer` (a concurrent filter, or one behind a lock).
fn shareable(peer: Peer) -> bool {
    struct CanShare;
    impl Visit for CanShare {
        type Output = bool;
        fn local<F: lockfree_cuckoo_eval::peers::Local, M: Fn() -> F>(self, _: Peer, _: M) -> bool {
            false
        }
        fn lockable<F, M>(self, _: Peer, _: M) -> bool
        where
            F: lockfree_cuckoo_eval::peers::Local + Send + Sync,
            M: Fn() -> F,
        {
            true
        }
        fn shared<F: Shared, M: Fn() -> F>(self, _: Peer, _: M) -> bool {
            true
        }
    }
    // Nothing is built: the visitor never calls the constructor.
    peer.visit(Sizing::like_ours(1), CanShare)
}

/// Takes the command-line names of [`Subject::all`], with the registry's help for each.
fn subject_parser() -> impl TypedValueParser<Value = Subject> {
    let names = Subject::all().into_iter().map(|subject| {
        if subject.grown {
            PossibleValue::new(GROWN).help("Ours, growable, built for a thousandth of the size")
        } else {
            subject.peer.to_possible_value().expect("no peer is skipped")
        }
    });
    PossibleValuesParser::new(names).map(|name| {
        if name == GROWN {
            Subject { peer: Peer::Ours, grown: true }
        } else {
            Subject { peer: Peer::from_str(&name, false).expect("a possible value"), grown: false }
        }
    })
}

fn positive(text: &str) -> Result<usize, String> {
    match number(text)? {
        0 => Err("must be positive".into()),
        n => Ok(n),
    }
}

fn seconds(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(s) if s > 0.0 && s.is_finite() => Ok(s),
        _ => Err(format!("`{text}` is not a positive number of seconds")),
    }
}

/// Lookups and mix threads check the stop flag this often.
const CHECK: u64 = 256;
/// Keys a `contains_batch` or `insert_batch` call.
const BATCH: usize = 256;

/// What one thread did in one point.
#[derive(Clone, Copy, Debug, Default)]
struct Tally {
    ops: u64,
    /// Lookups that found their key.
    hits: u64,
    /// Present keys looked up and not found (checked where every lookup is of a present key).
    missed: u64,
    /// Inserts refused and removes that found nothing.
    failed: u64,
}

impl std::ops::AddAssign for Tally {
    fn add_assign(&mut self, other: Self) {
        self.ops += other.ops;
        self.hits += other.hits;
        self.missed += other.missed;
        self.failed += other.failed;
    }
}

/// Uniform in `0..len` from 32 random bits (`len` below 2^32).
#[inline]
fn below(random: u64, len: u64) -> u64 {
    ((random & 0xFFFF_FFFF) * len) >> 32
}

/// One thread's lookup keys: its slice `lo..lo + len` of the prefilled `PRESENT` keys, and
/// `ABSENT` keys of its own.
struct Lookups {
    rng: SplitMix64,
    lo: u64,
    len: u64,
    /// A lookup is of a present key when the top 31 bits of a random word are below this.
    threshold: u64,
    absent_base: u64,
    absent: u64,
}

impl Lookups {
    fn new(thread: usize, threads: usize, held: usize, percent: u64) -> Self {
        let (lo, hi) = slice(thread, threads, held);
        Self {
            rng: SplitMix64::new(thread as u64 + 1),
            lo,
            len: (hi - lo).max(1),
            threshold: (percent << 31) / 100,
            absent_base: (thread as u64) << 32,
            absent: 0,
        }
    }

    #[inline]
    fn next(&mut self) -> u64 {
        let r = self.rng.next_u64();
        let present = (r >> 33) < self.threshold;
        self.absent = self.absent.wrapping_add(1) & 0xFFFF_FFFF;
        // Selects, not branches, where the compiler makes them so: at 50% present a branch
        // would mispredict every other key.
        let seq =
            if present { self.lo + below(r, self.len) } else { self.absent_base + self.absent };
        key(if present { PRESENT } else { ABSENT }, seq)
    }
}

/// Thread `thread`'s slice of `0..items`.
fn slice(thread: usize, threads: usize, items: usize) -> (u64, u64) {
    ((thread * items / threads) as u64, ((thread + 1) * items / threads) as u64)
}

fn lookups<S: Shared>(filter: &S, batched: bool, keys: &mut Lookups, stop: &AtomicBool) -> Tally {
    let mut tally = Tally::default();
    if batched {
        let (mut batch, mut out) = ([0u64; BATCH], [false; BATCH]);
        while !stop.load(Relaxed) {
            batch.iter_mut().for_each(|k| *k = keys.next());
            filter.contains_batch(&batch, &mut out);
            tally.hits += out.iter().filter(|&&hit| hit).count() as u64;
            tally.ops += BATCH as u64;
        }
    } else {
        while !stop.load(Relaxed) {
            for _ in 0..CHECK {
                tally.hits += u64::from(filter.contains(keys.next()));
            }
            tally.ops += CHECK;
        }
    }
    tally
}

/// One thread's keys in a mix: `PRESENT` keys `present_lo..present_hi` (its slice of the
/// prefill, `present_start..` at first) followed by keys `own_lo..own_hi` of its own space.
struct Mix {
    rng: SplitMix64,
    space: u64,
    present_start: u64,
    present_lo: u64,
    present_hi: u64,
    own_lo: u64,
    own_hi: u64,
    absent_base: u64,
    absent: u64,
    step: u32,
}

impl Mix {
    fn new(thread: usize, threads: usize, held: usize) -> Self {
        let (lo, hi) = slice(thread, threads, held);
        Self {
            rng: SplitMix64::new(thread as u64 + 1),
            space: THREAD_BASE + thread as u64,
            present_start: lo,
            present_lo: lo,
            present_hi: hi,
            own_lo: 0,
            own_hi: 0,
            absent_base: (thread as u64) << 32,
            absent: 0,
            step: 0,
        }
    }

    /// Half its held keys, half absent keys.
    #[inline]
    fn lookup_key(&mut self) -> u64 {
        let r = self.rng.next_u64();
        let present = self.present_hi - self.present_lo;
        let held = present + self.own_hi - self.own_lo;
        if r >> 63 == 0 && held > 0 {
            let i = below(r, held);
            if i < present {
                key(PRESENT, self.present_lo + i)
            } else {
                key(self.space, self.own_lo + i - present)
            }
        } else {
            self.absent = self.absent.wrapping_add(1) & 0xFFFF_FFFF;
            key(ABSENT, self.absent_base + self.absent)
        }
    }

    /// The oldest held key, taken out of the held range.
    fn take_oldest(&mut self) -> Option<u64> {
        if self.present_lo < self.present_hi {
            self.present_lo += 1;
            Some(key(PRESENT, self.present_lo - 1))
        } else if self.own_lo < self.own_hi {
            self.own_lo += 1;
            Some(key(self.space, self.own_lo - 1))
        } else {
            None
        }
    }

    fn run<S: Shared>(
        &mut self,
        filter: &S,
        (period, insert, remove): (u32, u32, u32),
        stop: &AtomicBool,
    ) -> Tally {
        let mut tally = Tally::default();
        while !stop.load(Relaxed) {
            for _ in 0..CHECK {
                if self.step == insert {
                    if Shared::insert(filter, key(self.space, self.own_hi)) {
                        self.own_hi += 1;
                    } else {
                        tally.failed += 1;
                    }
                } else if self.step == remove {
                    if let Some(k) = self.take_oldest() {
                        tally.failed += u64::from(!Shared::remove(filter, k));
                    }
                } else {
                    tally.hits += u64::from(filter.contains(self.lookup_key()));
                }
                self.step += 1;
                if self.step == period {
                    self.step = 0;
                }
            }
            tally.ops += CHECK;
        }
        tally
    }

    /// Untimed, after the point: removes the keys it inserted, then, once every thread has
    /// (`all`), puts back the prefill keys it removed, so the filter never holds more than the
    /// prefill; returns the failures.
    fn restore<S: Shared>(&self, filter: &S, all: &Barrier) -> u64 {
        let missing = (self.own_lo..self.own_hi)
            .filter(|&i| !Shared::remove(filter, key(self.space, i)))
            .count();
        all.wait();
        let refused = (self.present_start..self.present_lo)
            .filter(|&i| !Shared::insert(filter, key(PRESENT, i)))
            .count();
        (refused + missing) as u64
    }
}

/// Inserts thread `thread`'s slice of `PRESENT` keys `0..items`.
fn fill<S: Shared>(
    filter: &S,
    batched: bool,
    thread: usize,
    threads: usize,
    items: usize,
) -> Tally {
    let (lo, hi) = slice(thread, threads, items);
    let mut failed = 0;
    if batched {
        let mut batch = Vec::with_capacity(BATCH);
        for start in (lo..hi).step_by(BATCH) {
            batch.clear();
            batch.extend((start..(start + BATCH as u64).min(hi)).map(|i| key(PRESENT, i)));
            failed += batch.len() - Shared::insert_batch(filter, &batch);
        }
    } else {
        failed = (lo..hi).filter(|&i| !Shared::insert(filter, key(PRESENT, i))).count();
    }
    Tally { ops: hi - lo, failed: failed as u64, ..Tally::default() }
}

/// What the threads of one point do: each builds its state (before the barrier), runs from the
/// barrier until the stop flag (or to its end), then, once every thread has ended, tidies up
/// untimed.
trait Job: Sync {
    type State: Send;
    fn state(&self, thread: usize) -> Self::State;
    fn run(&self, state: &mut Self::State, stop: &AtomicBool) -> Tally;
    /// The untimed part; `all` is a barrier of every thread of the job. Returns its failures.
    fn after(&self, _state: Self::State, _all: &Barrier) -> u64 {
        0
    }
}

struct LookupJob<'a, S> {
    filter: &'a S,
    batched: bool,
    threads: usize,
    held: usize,
    percent: u64,
    /// Whether to count present keys not found (not for a filter that was never filled).
    check: bool,
}

impl<S: Shared> Job for LookupJob<'_, S> {
    type State = Lookups;
    fn state(&self, thread: usize) -> Lookups {
        Lookups::new(thread, self.threads, self.held, self.percent)
    }
    fn run(&self, keys: &mut Lookups, stop: &AtomicBool) -> Tally {
        let mut tally = lookups(self.filter, self.batched, keys, stop);
        if self.percent == 100 && self.check {
            tally.missed = tally.ops - tally.hits;
        }
        tally
    }
}

struct MixJob<'a, S> {
    filter: &'a S,
    threads: usize,
    held: usize,
    period: (u32, u32, u32),
}

impl<S: Shared> Job for MixJob<'_, S> {
    type State = Mix;
    fn state(&self, thread: usize) -> Mix {
        Mix::new(thread, self.threads, self.held)
    }
    fn run(&self, mix: &mut Mix, stop: &AtomicBool) -> Tally {
        mix.run(self.filter, self.period, stop)
    }
    fn after(&self, mix: Mix, all: &Barrier) -> u64 {
        mix.restore(self.filter, all)
    }
}

struct FillJob<'a, S> {
    filter: &'a S,
    batched: bool,
    threads: usize,
    items: usize,
}

/// Thread `t` inserts its slice of the keys and ends.
impl<S: Shared> Job for FillJob<'_, S> {
    type State = usize;
    fn state(&self, thread: usize) -> usize {
        thread
    }
    fn run(&self, &mut thread: &mut usize, _: &AtomicBool) -> Tally {
        fill(self.filter, self.batched, thread, self.threads, self.items)
    }
}

/// Runs `job` on `threads` threads started together at a barrier; with `seconds`, raises the
/// stop flag after that long, else waits for the threads to end. Returns the threads' tallies
/// added up and the seconds from the first thread's start to the last thread's end.
fn timed<J: Job>(threads: usize, seconds: Option<f64>, job: &J) -> (Tally, f64) {
    let stop = AtomicBool::new(false);
    let (start_line, end_line) = (Barrier::new(threads + 1), Barrier::new(threads));
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let (stop, start_line, end_line) = (&stop, &start_line, &end_line);
                scope.spawn(move || {
                    let mut state = job.state(t);
                    start_line.wait();
                    let start = Instant::now();
                    let mut tally = job.run(&mut state, stop);
                    let end = Instant::now();
                    end_line.wait();
                    tally.failed += job.after(state, end_line);
                    (tally, start, end)
                })
            })
            .collect();
        start_line.wait();
        if let Some(s) = seconds {
            std::thread::sleep(Duration::from_secs_f64(s));
            stop.store(true, Relaxed);
        }
        // From the first thread's start to the last one's end: the main thread may wake after
        // the workers have started, or (a short fill) ended.
        let mut total = Tally::default();
        let (mut first, mut last) = (None::<Instant>, None::<Instant>);
        for handle in handles {
            let (tally, start, end) = handle.join().expect("a worker thread panicked");
            total += tally;
            first = Some(first.map_or(start, |f| f.min(start)));
            last = Some(last.map_or(end, |l| l.max(end)));
        }
        let (first, last) = (first.expect("a thread"), last.expect("a thread"));
        (total, (last - first).as_secs_f64())
    })
}

/// Rates of one (size, workload, peer, thread count), in Mops/s, one a round.
type Results = BTreeMap<(usize, Workload, usize, usize), Vec<f64>>;

/// Everything measured, and the notes for the tables.
#[derive(Default)]
struct Report {
    results: Results,
    /// Failures of one (size, workload, peer): inserts refused, removes that found nothing,
    /// present keys not found.
    failures: BTreeMap<(usize, Workload, usize), Tally>,
    /// Notes of one size.
    notes: BTreeMap<usize, Vec<String>>,
}

/// One peer at one size: every thread count, workload and round.
struct Bench<'a> {
    args: &'a Args,
    threads: &'a [usize],
    items: usize,
    /// Items the filter holds in the timed workloads.
    held: usize,
    /// The peer's index in `args.peers`.
    index: usize,
    subject: Subject,
    /// Threads of the prefill: one for a peer behind a lock, else every core.
    prefill_threads: usize,
    report: &'a mut Report,
}

impl Bench<'_> {
    fn record(
        &mut self,
        workload: Workload,
        threads: usize,
        round: usize,
        tally: Tally,
        secs: f64,
    ) {
        let mops = tally.ops as f64 / secs / 1e6;
        eprintln!(
            "{} items, {}, {}, {threads} thread(s), round {round}: {mops:.2} Mops/s",
            self.items,
            self.subject.name(),
            workload.name()
        );
        let key = (self.items, workload, self.index, threads);
        self.report.results.entry(key).or_default().push(mops);
        if self.subject.peer.is_floor() {
            return;
        }
        let failures = self.report.failures.entry((self.items, workload, self.index)).or_default();
        failures.failed += tally.failed;
        failures.missed += tally.missed;
    }

    fn measure<F: Shared, M: Fn() -> F>(mut self, peer: Peer, make: M) {
        let args = self.args;
        let batched = peer.batched();
        let timed_workloads: Vec<Workload> = args
            .workloads
            .iter()
            .copied()
            .filter(|&w| w != Workload::Fill && w.unfit(peer).is_none())
            .collect();
        if !timed_workloads.is_empty() {
            let filter = make();
            if peer.ops().insert {
                let prefill = FillJob {
                    filter: &filter,
                    batched: false,
                    threads: self.prefill_threads,
                    items: self.held,
                };
                let (tally, secs) = timed(prefill.threads, None, &prefill);
                eprintln!(
                    "{} items, {}: prefilled {} in {secs:.1} s",
                    self.items,
                    self.subject.name(),
                    self.held
                );
                if tally.failed > 0 && !peer.is_floor() {
                    self.note(format!(
                        "{}: {} of the {} prefill inserts refused",
                        self.subject.name(),
                        grouped(tally.failed),
                        grouped(self.held as u64)
                    ));
                }
            }
            for round in 1..=args.rounds {
                for &threads in self.threads {
                    for &workload in &timed_workloads {
                        let seconds = Some(args.seconds);
                        let (tally, secs) = if let Some(percent) = workload.percent_present() {
                            let (filter, held) = (&filter, self.held);
                            let check = peer.ops().insert;
                            let job = LookupJob { filter, batched, threads, held, percent, check };
                            timed(threads, seconds, &job)
                        } else {
                            let period = workload.mix().expect("a mix");
                            let job = MixJob { filter: &filter, threads, held: self.held, period };
                            timed(threads, seconds, &job)
                        };
                        self.record(workload, threads, round, tally, secs);
                    }
                }
            }
        }
        if args.workloads.contains(&Workload::Fill) && Workload::Fill.unfit(peer).is_none() {
            for round in 1..=args.rounds {
                for &threads in self.threads {
                    let filter = make();
                    let job = FillJob { filter: &filter, batched, threads, items: self.items };
                    let (tally, secs) = timed(threads, None, &job);
                    self.record(Workload::Fill, threads, round, tally, secs);
                }
            }
        }
    }

    fn note(&mut self, note: String) {
        self.report.notes.entry(self.items).or_default().push(note);
    }
}

impl Visit for Bench<'_> {
    type Output = ();

    fn local<F: lockfree_cuckoo_eval::peers::Local, M: Fn() -> F>(self, peer: Peer, _: M) {
        unreachable!("{} cannot be shared: the parser lets no such peer in", peer.name())
    }

    fn lockable<F, M>(mut self, peer: Peer, make: M)
    where
        F: lockfree_cuckoo_eval::peers::Local + Send + Sync,
        M: Fn() -> F,
    {
        // Writers behind one lock only queue up: the prefill runs on one thread.
        self.prefill_threads = 1;
        self.measure(peer, || Locked::new(make()))
    }

    fn shared<F: Shared, M: Fn() -> F>(self, peer: Peer, make: M) {
        self.measure(peer, make)
    }
}

/// Bytes a filter of the peer occupies at `items`, estimated from one built for at most 2^20
/// (a grown filter: half as much again as a presized one).
fn estimated_bytes(subject: Subject, items: usize) -> f64 {
    struct Probe;
    impl Visit for Probe {
        type Output = usize;
        fn local<F: lockfree_cuckoo_eval::peers::Local, M: Fn() -> F>(
            self,
            _: Peer,
            make: M,
        ) -> usize {
            make().bytes()
        }
    }
    let probe = items.min(1 << 20);
    let bytes = subject.peer.base().visit(Sizing::like_ours(probe), Probe) as f64;
    bytes * items as f64 / probe as f64 * if subject.grown { 1.5 } else { 1.0 }
}

/// The machine's available memory in bytes, where `/proc/meminfo` says.
fn available_memory() -> Option<f64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024.0)
}

/// DashSet runs up to this size unless `--all-sizes`.
const DASHSET_MAX: usize = 10_000_000;

fn main() {
    let mut args = Args::parse();
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    if args.threads.is_empty() {
        args.threads = (0..).map(|p| 1 << p).take_while(|&t| t <= cores).collect();
        args.threads.push(cores);
    }
    args.threads.push(1);
    args.threads.sort_unstable();
    args.threads.dedup();
    if args.workloads.is_empty() {
        args.workloads = Workload::value_variants().to_vec();
    }
    if args.peers.is_empty() {
        args.peers = Subject::all();
    }
    // A name given twice runs once, where it first appears.
    let mut seen = Vec::new();
    args.workloads.retain(|w| {
        !seen.contains(w) && {
            seen.push(*w);
            true
        }
    });
    let mut seen = Vec::new();
    args.peers.retain(|p| {
        !seen.contains(p) && {
            seen.push(*p);
            true
        }
    });
    let available = available_memory();
    let mut report = Report::default();
    for &items in &args.items {
        // Every filter holds 90% of our lanes at this size, as the benchmarks' lookups do.
        let held = (Ours::new(items).slots() as f64 * 0.9) as usize;
        for (index, &subject) in args.peers.iter().enumerate() {
            let skip = if subject.peer == Peer::Dashset && items > DASHSET_MAX && !args.all_sizes {
                Some(format!("above {} items (--all-sizes runs it)", grouped(DASHSET_MAX as u64)))
            } else {
                let bytes = estimated_bytes(subject, items);
                available.filter(|&a| bytes > 0.7 * a).map(|a| {
                    format!(
                        "it would take about {:.1} GB of the {:.1} GB available",
                        bytes / 1e9,
                        a / 1e9
                    )
                })
            };
            if let Some(why) = skip {
                eprintln!("{items} items: skipping {}: {why}", subject.name());
                let note = format!("{} skipped: {why}", subject.name());
                report.notes.entry(items).or_default().push(note);
                continue;
            }
            let bench = Bench {
                args: &args,
                threads: &args.threads,
                items,
                held,
                index,
                subject,
                prefill_threads: cores,
                report: &mut report,
            };
            if subject.grown {
                let start = (items / GROWTH).max(1);
                let make = || Ours(CuckooFilter::builder().capacity(start).growable().build());
                bench.measure(Peer::Ours, make);
            } else {
                subject.peer.visit(Sizing::like_ours(items), bench);
            }
        }
    }
    if args.json {
        print_json(&args, &report);
    } else {
        print_tables(&args, cores, &report);
    }
}

/// The median of the values (the upper one of an even count), and their range.
fn summary(values: &[f64]) -> (f64, f64, f64) {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    (sorted[sorted.len() / 2], sorted[0], sorted[sorted.len() - 1])
}

/// One point of the JSON output.
#[derive(Serialize)]
struct Record<'a> {
    items: usize,
    workload: String,
    /// The peer's command-line name, and its name in the tables.
    peer: String,
    name: &'a str,
    threads: usize,
    /// Mops/s, one a round.
    mops: &'a [f64],
    median: f64,
    min: f64,
    max: f64,
    /// The median over the median of one thread.
    speedup: f64,
}

fn print_json(args: &Args, report: &Report) {
    for (&(items, workload, index, threads), mops) in &report.results {
        let (median, min, max) = summary(mops);
        let one = report.results.get(&(items, workload, index, 1)).map(|v| summary(v).0);
        let record = Record {
            items,
            workload: workload.name(),
            peer: args.peers[index].key(),
            name: args.peers[index].name(),
            threads,
            mops,
            median,
            min,
            max,
            speedup: one.map_or(f64::NAN, |one| median / one),
        };
        println!("{}", serde_json::to_string(&record).expect("records serialise"));
    }
}

fn describe(workload: Workload) -> &'static str {
    match workload {
        Workload::Contains0 => "lookups, 0% present",
        Workload::Contains50 => "lookups, 50% present",
        Workload::Contains100 => "lookups, 100% present",
        Workload::Mix90 => "90% lookups (half present), 5% inserts, 5% removes",
        Workload::Mix50 => "50% lookups (half present), 25% inserts, 25% removes",
        Workload::Fill => "every item inserted into an empty filter, timed to the end",
    }
}

fn print_tables(args: &Args, cores: usize, report: &Report) {
    let list = |v: &[usize]| v.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ");
    println!(
        "Scaling on {cores} cores (available parallelism): one shared filter, threads {}, {} s a \
         point (the fill: to its end), {} round(s). Cells: total Mops/s, median [min–max over \
         rounds] (speedup: median over the median of 1 thread).",
        list(&args.threads),
        args.seconds,
        args.rounds
    );
    for &items in &args.items {
        let held = (Ours::new(items).slots() as f64 * 0.9) as usize;
        println!();
        println!(
            "## {} items: the lookups and mixes run on {} items held (90% of our lanes)",
            grouped(items as u64),
            grouped(held as u64)
        );
        for note in report.notes.get(&items).into_iter().flatten() {
            println!();
            println!("- {note}");
        }
        for &workload in &args.workloads {
            println!();
            println!(
                "### {} items, `{}`: {}",
                grouped(items as u64),
                workload.name(),
                describe(workload)
            );
            println!();
            println!(
                "| peer | {} |",
                args.threads.iter().map(|t| format!("{t} thr")).collect::<Vec<_>>().join(" | ")
            );
            println!("|---|{}", "---:|".repeat(args.threads.len()));
            let mut notes = Vec::new();
            for (index, subject) in args.peers.iter().enumerate() {
                let of = |threads: usize| report.results.get(&(items, workload, index, threads));
                let Some(one) = of(1) else {
                    if let Some(why) = workload.unfit(subject.peer) {
                        notes.push(format!("{} not run: {why}", subject.name()));
                    }
                    continue;
                };
                let base = summary(one).0;
                let cells: Vec<String> = args
                    .threads
                    .iter()
                    .map(|&threads| {
                        of(threads).map_or("-".into(), |mops| {
                            let (median, min, max) = summary(mops);
                            let range = if mops.len() > 1 {
                                format!(" [{min:.1}–{max:.1}]")
                            } else {
                                String::new()
                            };
                            format!("{median:.1}{range} ({:.2}×)", median / base)
                        })
                    })
                    .collect();
                println!("| {} | {} |", subject.name(), cells.join(" | "));
                if let Some(f) = report.failures.get(&(items, workload, index)) {
                    if f.failed > 0 {
                        notes.push(format!(
                            "{}: {} inserts refused or removes that found nothing",
                            subject.name(),
                            grouped(f.failed)
                        ));
                    }
                    if f.missed > 0 {
                        notes.push(format!(
                            "{}: {} present keys not found",
                            subject.name(),
                            grouped(f.missed)
                        ));
                    }
                }
            }
            if !notes.is_empty() {
                println!();
                notes.iter().for_each(|n| println!("- {n}"));
            }
        }
    }
}
