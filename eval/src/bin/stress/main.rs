//! The concurrency stress run: threads share one `Arc<CuckooFilter>` near full load and insert,
//! look up and remove at once; every thread tracks the keys it owns, so any false negative is
//! caught, during the run and in a verification pass at the end.
//!
//! ```text
//! cargo run --release --example stress                      # 4 threads, 20 s, 90/5/5
//! cargo run --release --example stress -- --duration 3 --json
//! cargo run --release --example stress -- --help
//! ```
//!
//! Exit status: 0 when no false negative was seen and every check passed, 1 otherwise, 2 for a
//! bad command line.

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::io::Write as _;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use crossbeam_utils::CachePadded;
use lockfree_cuckoo::{CuckooFilter, Stats};
use lockfree_cuckoo_eval::keys::mix;

const USAGE: &str = "\
lockfree-cuckoo stress run: N threads share one Arc<CuckooFilter> at high load, mixing lookups,
inserts and removes; each thread tracks the keys it owns, so a false negative cannot go unseen.

USAGE:
    cargo run --release --example stress -- [OPTIONS]

OPTIONS:
    --threads <N>       worker threads (default 4; more than the cores is fine)
    --duration <SECS>   how long to run, in seconds (default 20)
    --mix <C/I/R>       percent of contains/insert/remove, summing to 100 (default 90/5/5)
    --capacity <N>      capacity of the filter (default 4000000)
    --fill <PERCENT>    share of the capacity filled before the run and kept (default 95)
    --seed <N>          seed of the key streams and operation choices (default 1)
    --snapshots         one more thread takes live snapshots (write_to) back to back, timed
    --json              print the summary as one JSON object instead of a table
    -h, --help          print this help

Exit status: 0 if every check passed, 1 if any false negative (or other failed check) was
seen, 2 for a bad command line.";

#[derive(Clone, Debug)]
struct Options {
    threads: usize,
    duration: Duration,
    mix: [u32; 3],
    capacity: usize,
    fill: u32,
    seed: u64,
    snapshots: bool,
    json: bool,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            threads: 4,
            duration: Duration::from_secs(20),
            mix: [90, 5, 5],
            capacity: 4_000_000,
            fill: 95,
            seed: 1,
            snapshots: false,
            json: false,
        }
    }
}

/// What the command line asked for.
enum Command {
    Run(Options),
    Help,
}

fn number<T: std::str::FromStr>(flag: &str, value: &str) -> Result<T, String> {
    value
        .replace('_', "")
        .parse()
        .map_err(|_| format!("invalid value `{value}` for `{flag}`: expected a number"))
}

fn parse_args(args: impl IntoIterator<Item = String>) -> Result<Command, String> {
    let mut opts = Options::default();
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_string(), Some(v.to_string())),
            _ => (arg.clone(), None),
        };
        let takes_value = matches!(
            flag.as_str(),
            "--threads" | "--duration" | "--mix" | "--capacity" | "--fill" | "--seed"
        );
        let value = if takes_value {
            match inline {
                Some(v) => v,
                None => args.next().ok_or_else(|| format!("`{flag}` needs a value"))?,
            }
        } else if inline.is_some() {
            return Err(format!("`{flag}` takes no value"));
        } else {
            String::new()
        };
        match flag.as_str() {
            "-h" | "--help" => return Ok(Command::Help),
            "--json" => opts.json = true,
            "--snapshots" => opts.snapshots = true,
            "--threads" => {
                opts.threads = number(&flag, &value)?;
                if opts.threads == 0 || opts.threads > 1024 {
                    return Err(format!("`--threads {value}`: expected 1 to 1024"));
                }
            }
            "--duration" => {
                let secs: f64 = number(&flag, &value)?;
                if !(secs > 0.0 && secs <= 86_400.0) {
                    return Err(format!("`--duration {value}`: expected seconds in (0, 86400]"));
                }
                opts.duration = Duration::from_secs_f64(secs);
            }
            "--mix" => {
                let parts: Vec<&str> = value.split('/').collect();
                let parsed: Result<Vec<u32>, _> = parts.iter().map(|p| p.trim().parse()).collect();
                match parsed {
                    Ok(v) if v.len() == 3 && v.iter().sum::<u32>() == 100 => {
                        opts.mix = [v[0], v[1], v[2]];
                    }
                    _ => {
                        return Err(format!(
                            "`--mix {value}`: expected three percentages contains/insert/remove \
                             summing to 100, e.g. 90/5/5"
                        ))
                    }
                }
            }
            "--capacity" => {
                opts.capacity = number(&flag, &value)?;
                if opts.capacity < 1_000 || opts.capacity > 1 << 36 {
                    return Err(format!("`--capacity {value}`: expected 1000 to 2^36"));
                }
            }
            "--fill" => {
                opts.fill = number(&flag, &value)?;
                if opts.fill > 100 {
                    return Err(format!("`--fill {value}`: expected a percentage, 0 to 100"));
                }
            }
            "--seed" => opts.seed = number(&flag, &value)?,
            other if other.starts_with('-') => return Err(format!("unknown flag `{other}`")),
            other => return Err(format!("unexpected argument `{other}`")),
        }
    }
    Ok(Command::Run(opts))
}

/// Key `seq` of thread `thread` (spaces below 2^20 threads), or of the never-inserted space.
fn owned_key(seed: u64, thread: usize, seq: u64) -> u64 {
    mix(mix(seed) ^ ((thread as u64 + 1) << 40 | seq))
}

fn absent_key(seed: u64, seq: u64) -> u64 {
    mix(mix(seed) ^ (1 << 63 | seq))
}

/// A small fast generator for operation choices and lookup targets.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        mix(self.0)
    }
}

/// Per-thread counters the progress line reads; each on its own cache line.
#[derive(Default)]
struct Live {
    contains: AtomicU64,
    inserts: AtomicU64,
    removes: AtomicU64,
    false_negatives: AtomicU64,
}

/// What one thread did.
#[derive(Default)]
struct Tally {
    contains: u64,
    owned_checks: u64,
    absent_checks: u64,
    absent_positives: u64,
    inserts: u64,
    refused: u64,
    removes: u64,
    removes_missed: u64,
    false_negatives: u64,
}

/// Keys a thread owns: inserted and not yet removed, oldest first.
struct Owned {
    keys: VecDeque<u64>,
    next_seq: u64,
}

fn prefill(filter: &CuckooFilter, opts: &Options, thread: usize, quota: usize) -> (Owned, u64) {
    let target = quota * opts.fill as usize / 100;
    let mut owned = Owned { keys: VecDeque::with_capacity(quota), next_seq: 0 };
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

fn worker(
    filter: &CuckooFilter,
    opts: &Options,
    thread: usize,
    quota: usize,
    owned: &mut Owned,
    live: &Live,
    stop: &AtomicBool,
) -> Tally {
    let mut rng = Rng(mix(opts.seed ^ (thread as u64) << 32));
    let mut tally = Tally::default();
    let [c, i, _] = opts.mix;
    let mut absent_seq = (thread as u64) << 40;
    let mut since_publish = 0u64;
    loop {
        let r = rng.next();
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
                absent_seq += 1;
                tally.absent_checks += 1;
                tally.absent_positives +=
                    u64::from(filter.contains(&absent_key(opts.seed, absent_seq)));
            }
            tally.contains += 1;
        } else if (roll < c + i && owned.keys.len() < quota) || owned.keys.is_empty() {
            let key = owned_key(opts.seed, thread, owned.next_seq);
            owned.next_seq += 1;
            tally.inserts += 1;
            match filter.insert(&key) {
                Ok(()) => owned.keys.push_back(key),
                Err(_) => tally.refused += 1,
            }
        } else {
            // A remove (or an insert that would pass the thread's share of the capacity).
            let key = owned.keys.pop_front().expect("not empty");
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
            if stop.load(Relaxed) {
                return tally;
            }
        }
    }
}

struct Report {
    opts: Options,
    elapsed: f64,
    tally: Tally,
    stats: Stats,
    load: f64,
    len: usize,
    live_keys: usize,
    buckets: usize,
    memory: usize,
    final_fp_queries: u64,
    final_fp_hits: u64,
    verify_missed_scalar: u64,
    verify_missed_batch: u64,
    verify_remove_missed: u64,
    left_after_remove: usize,
    prefill_refused: u64,
    snapshots: Snapshots,
}

/// What the snapshot thread measured (`--snapshots`).
#[derive(Default)]
struct Snapshots {
    /// Milliseconds each `write_to` took, sorted.
    millis: Vec<f64>,
    /// Buckets that writers captured for the snapshots, over all of them.
    captured: u64,
}

impl Snapshots {
    fn quantile(&self, q: f64) -> f64 {
        let last = self.millis.len().saturating_sub(1);
        self.millis.get((last as f64 * q).round() as usize).copied().unwrap_or(0.0)
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

impl Report {
    fn false_negatives(&self) -> u64 {
        self.tally.false_negatives + self.verify_missed_scalar + self.verify_missed_batch
    }

    fn passed(&self) -> bool {
        self.false_negatives() == 0
            && self.tally.removes_missed == 0
            && self.verify_remove_missed == 0
            && self.left_after_remove == 0
            && self.len == self.live_keys
    }

    fn fpr_expected(&self) -> f64 {
        8.0 * self.load / 65532.0
    }
}

fn pct(x: u64, of: u64) -> f64 {
    if of == 0 {
        0.0
    } else {
        100.0 * x as f64 / of as f64
    }
}

fn grouped(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, ch) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

fn table(r: &Report) -> String {
    let t = &r.tally;
    let s = &r.stats;
    let rate = |n: u64| n as f64 / r.elapsed / 1e6;
    let total = t.contains + t.inserts + t.removes;
    let mut o = String::new();
    let [c, i, d] = r.opts.mix;
    let _ = writeln!(
        o,
        "lockfree-cuckoo stress: {} threads, {:.1} s, mix {c}/{i}/{d} (contains/insert/remove)\n\
         capacity {}, kept {}% full, seed {}",
        r.opts.threads,
        r.elapsed,
        grouped(r.opts.capacity as u64),
        r.opts.fill,
        r.opts.seed
    );
    let _ = writeln!(o);
    let _ = writeln!(o, "  operation        count       M ops/s");
    for (name, n) in
        [("contains", t.contains), ("insert", t.inserts), ("remove", t.removes), ("total", total)]
    {
        let _ = writeln!(o, "  {name:<9} {:>15} {:>10.2}", grouped(n), rate(n));
    }
    let _ = writeln!(o);
    let paths: Vec<String> = s.insert_paths.iter().map(|&n| grouped(n)).collect();
    let mut rows: Vec<(&str, String)> = vec![
        (
            "load factor",
            format!(
                "{:.3} ({} items, {} buckets of 4 lanes, {:.1} MiB)",
                r.load,
                grouped(r.len as u64),
                grouped(r.buckets as u64),
                r.memory as f64 / (1 << 20) as f64
            ),
        ),
        (
            "false-positive rate",
            format!(
                "{:.4}% during the run ({} of {} absent lookups)",
                pct(t.absent_positives, t.absent_checks),
                grouped(t.absent_positives),
                grouped(t.absent_checks)
            ),
        ),
        (
            "",
            format!(
                "{:.4}% after it ({} of {}); expected {:.4}% (8 x load / 65532)",
                pct(r.final_fp_hits, r.final_fp_queries),
                grouped(r.final_fp_hits),
                grouped(r.final_fp_queries),
                100.0 * r.fpr_expected()
            ),
        ),
        ("conservative answers", grouped(s.conservative_lookups)),
        ("relocations", format!("{} (prefill included)", grouped(s.relocations))),
        ("insert paths", format!("by hops 0..5: {}", paths.join(" / "))),
        ("path retries", grouped(s.path_retries)),
        ("surplus removals", grouped(s.surplus_removals)),
        ("refused inserts", format!("{} (prefill {})", grouped(t.refused), r.prefill_refused)),
        ("removes that missed", grouped(t.removes_missed)),
        (
            "false negatives",
            format!(
                "{} in {} lookups of owned keys during the run",
                grouped(t.false_negatives),
                grouped(t.owned_checks)
            ),
        ),
        (
            "verification",
            format!(
                "{} live keys: {} missed by contains, {} by contains_batch",
                grouped(r.live_keys as u64),
                r.verify_missed_scalar,
                r.verify_missed_batch
            ),
        ),
        (
            "",
            format!(
                "len {} = {} owned; removing all: {} missed, {} left",
                grouped(r.len as u64),
                grouped(r.live_keys as u64),
                r.verify_remove_missed,
                r.left_after_remove
            ),
        ),
        ("result", if r.passed() { "PASS".into() } else { "FAIL".into() }),
    ];
    if r.opts.snapshots {
        let snaps = &r.snapshots;
        rows.insert(
            rows.len() - 1,
            (
                "snapshots",
                format!(
                    "{} live write_to, one pass each: median {:.2} ms, p99 {:.2} ms, max {:.2} ms; \
                     {} buckets captured by writers",
                    snaps.millis.len(),
                    snaps.quantile(0.5),
                    snaps.quantile(0.99),
                    snaps.quantile(1.0),
                    grouped(snaps.captured)
                ),
            ),
        );
    }
    for (name, value) in rows {
        let _ = writeln!(o, "  {name:<21} {value}");
    }
    o
}

fn json(r: &Report) -> String {
    let t = &r.tally;
    let s = &r.stats;
    let rate = |n: u64| n as f64 / r.elapsed / 1e6;
    let paths: Vec<String> = s.insert_paths.iter().map(u64::to_string).collect();
    format!(
        concat!(
            "{{\"threads\":{},\"duration_s\":{:.3},\"mix\":[{},{},{}],\"capacity\":{},",
            "\"fill_percent\":{},\"seed\":{},",
            "\"ops\":{{\"contains\":{},\"insert\":{},\"remove\":{}}},",
            "\"mops_per_s\":{{\"contains\":{:.4},\"insert\":{:.4},\"remove\":{:.4},\"total\":{:.4}}},",
            "\"load_factor\":{:.5},\"len\":{},\"buckets\":{},\"memory_bytes\":{},",
            "\"fpr_run\":{:.7},\"fpr_after\":{:.7},\"fpr_expected\":{:.7},",
            "\"absent_checks\":{},\"owned_checks\":{},",
            "\"conservative_lookups\":{},\"relocations\":{},\"insert_paths\":[{}],",
            "\"path_retries\":{},\"surplus_removals\":{},\"refused_inserts\":{},",
            "\"removes_missed\":{},\"false_negatives_run\":{},",
            "\"verify\":{{\"live_keys\":{},\"missed_contains\":{},\"missed_batch\":{},",
            "\"remove_missed\":{},\"left_after_remove\":{}}},",
            "\"snapshots\":{{\"count\":{},\"median_ms\":{:.3},\"p99_ms\":{:.3},\"max_ms\":{:.3},",
            "\"captured_by_writers\":{}}},",
            "\"false_negatives\":{},\"pass\":{}}}"
        ),
        r.opts.threads,
        r.elapsed,
        r.opts.mix[0],
        r.opts.mix[1],
        r.opts.mix[2],
        r.opts.capacity,
        r.opts.fill,
        r.opts.seed,
        t.contains,
        t.inserts,
        t.removes,
        rate(t.contains),
        rate(t.inserts),
        rate(t.removes),
        rate(t.contains + t.inserts + t.removes),
        r.load,
        r.len,
        r.buckets,
        r.memory,
        t.absent_positives as f64 / t.absent_checks.max(1) as f64,
        r.final_fp_hits as f64 / r.final_fp_queries.max(1) as f64,
        r.fpr_expected(),
        t.absent_checks,
        t.owned_checks,
        s.conservative_lookups,
        s.relocations,
        paths.join(","),
        s.path_retries,
        s.surplus_removals,
        t.refused,
        t.removes_missed,
        t.false_negatives,
        r.live_keys,
        r.verify_missed_scalar,
        r.verify_missed_batch,
        r.verify_remove_missed,
        r.left_after_remove,
        r.snapshots.millis.len(),
        r.snapshots.quantile(0.5),
        r.snapshots.quantile(0.99),
        r.snapshots.quantile(1.0),
        r.snapshots.captured,
        r.false_negatives(),
        r.passed()
    )
}

fn run(opts: Options) -> Report {
    let filter = Arc::new(CuckooFilter::with_capacity(opts.capacity));
    let quota = opts.capacity / opts.threads;
    let live: Arc<Vec<CachePadded<Live>>> =
        Arc::new((0..opts.threads).map(|_| CachePadded::new(Live::default())).collect());
    let stop = Arc::new(AtomicBool::new(false));
    let start_line = Arc::new(Barrier::new(opts.threads + 1));

    eprint!("prefilling {} threads x {} keys ...", opts.threads, quota * opts.fill as usize / 100);
    let handles: Vec<_> = (0..opts.threads)
        .map(|t| {
            let (filter, live, stop, start_line, opts) = (
                Arc::clone(&filter),
                Arc::clone(&live),
                Arc::clone(&stop),
                Arc::clone(&start_line),
                opts.clone(),
            );
            std::thread::spawn(move || {
                let (mut owned, refused) = prefill(&filter, &opts, t, quota);
                start_line.wait();
                let tally = worker(&filter, &opts, t, quota, &mut owned, &live[t], &stop);
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
    let mut last = (Instant::now(), 0u64);
    while start.elapsed() < opts.duration {
        std::thread::sleep(
            Duration::from_millis(200).min(opts.duration.saturating_sub(start.elapsed())),
        );
        let ops: u64 = live
            .iter()
            .map(|l| l.contains.load(Relaxed) + l.inserts.load(Relaxed) + l.removes.load(Relaxed))
            .sum();
        let fneg: u64 = live.iter().map(|l| l.false_negatives.load(Relaxed)).sum();
        let now = Instant::now();
        let rate = (ops - last.1) as f64 / now.duration_since(last.0).as_secs_f64() / 1e6;
        last = (now, ops);
        let stats = filter.stats();
        eprint!(
            "\r  {:5.1}/{:.0} s {:>12} ops {:6.2} M/s  load {:.3}  relocations {:>10}  \
             conservative {}  false negatives {}  ",
            start.elapsed().as_secs_f64(),
            opts.duration.as_secs_f64(),
            grouped(ops),
            rate,
            filter.load_factor(),
            grouped(stats.relocations),
            stats.conservative_lookups,
            fneg
        );
        let _ = std::io::stderr().flush();
    }
    stop.store(true, Relaxed);
    let mut tally = Tally::default();
    let mut owned_all = Vec::new();
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
        owned_all.extend(owned.keys);
    }
    let snapshots = snapshots.map(|s| s.join().expect("snapshotter panicked")).unwrap_or_default();
    let elapsed = start.elapsed().as_secs_f64();
    eprintln!("\nverifying {} live keys ...", owned_all.len());

    // Quiescent now: every lookup of an owned key must be true, through both lookup paths.
    let stats = filter.stats();
    let (len, load) = (filter.len(), filter.load_factor());
    let verify_missed_scalar = owned_all.iter().filter(|k| !filter.contains(*k)).count() as u64;
    let mut answers = vec![false; owned_all.len()];
    filter.contains_batch(&owned_all, &mut answers);
    let verify_missed_batch = answers.iter().filter(|&&b| !b).count() as u64;
    let final_fp_queries = 1_000_000u64;
    let final_fp_hits = (0..final_fp_queries)
        .filter(|&i| filter.contains(&absent_key(opts.seed ^ 1, i)))
        .count() as u64;
    let memory = filter.memory_usage();
    let buckets = filter.bucket_count();
    // Removing every owned key must find each one and leave the filter empty: nothing lost,
    // nothing duplicated.
    let verify_remove_missed = owned_all.iter().filter(|k| !filter.remove(*k)).count() as u64;
    let left_after_remove = filter.len();
    Report {
        opts,
        elapsed,
        tally,
        stats,
        load,
        len,
        live_keys: owned_all.len(),
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
    let opts = match parse_args(std::env::args().skip(1)) {
        Ok(Command::Help) => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Ok(Command::Run(opts)) => opts,
        Err(msg) => {
            eprintln!("error: {msg}\n\nrun with --help for the options");
            return ExitCode::from(2);
        }
    };
    let report = run(opts);
    if report.opts.json {
        println!("{}", json(&report));
    } else {
        print!("{}", table(&report));
    }
    if report.passed() {
        ExitCode::SUCCESS
    } else {
        if report.false_negatives() > 0 {
            eprintln!("FAIL: {} false negatives", report.false_negatives());
        } else {
            eprintln!("FAIL: a verification check failed (see the summary)");
        }
        ExitCode::from(1)
    }
}
