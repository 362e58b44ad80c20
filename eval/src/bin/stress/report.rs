//! The stress run's summary: a table for people, one JSON object for scripts ([`Json`]).

use std::fmt::Write as _;

use lockfree_cuckoo::Stats;
use lockfree_cuckoo_eval::grouped;
use lockfree_cuckoo_eval::peers::fpr_at_load;
use serde::Serialize;

use crate::cli::Options;

/// What one thread did.
#[derive(Default)]
pub(crate) struct Tally {
    pub(crate) contains: u64,
    pub(crate) owned_checks: u64,
    pub(crate) absent_checks: u64,
    pub(crate) absent_positives: u64,
    pub(crate) inserts: u64,
    pub(crate) refused: u64,
    pub(crate) removes: u64,
    pub(crate) removes_missed: u64,
    pub(crate) false_negatives: u64,
    /// Of `inserts`, those that added one more copy of a live key (`--churn`).
    pub(crate) reinserts: u64,
    /// Of `removes`, those that took such an extra copy.
    pub(crate) extra_removes: u64,
}

/// The end of the growth phase: when the last thread entered its churn regime (without
/// `--grow`, the start of the run).
pub(crate) struct GrowthEnd {
    /// Threads that entered their churn regime; the growth phase ended if all did, and the
    /// other fields are then what the last of them recorded.
    pub(crate) threads: usize,
    /// Seconds into the run.
    pub(crate) at_s: f64,
    /// Copies the threads held when they entered, summed.
    pub(crate) held: usize,
    /// Threads that entered because half the run had passed, short of their share.
    pub(crate) cut_short: usize,
    pub(crate) levels: usize,
    pub(crate) memory: usize,
}

/// What the summary shows: the options, every thread's tally merged, the filter's counters and
/// the checks of the quiescent filter after the run.
pub(crate) struct Report {
    pub(crate) opts: Options,
    pub(crate) elapsed: f64,
    pub(crate) tally: Tally,
    pub(crate) stats: Stats,
    pub(crate) load: f64,
    pub(crate) len: usize,
    /// Distinct keys the threads owned at the end.
    pub(crate) live_keys: usize,
    /// Extra copies of them (`--churn`) the threads held at the end.
    pub(crate) extra_copies: usize,
    /// Threads that both re-inserted a live key and removed such a copy.
    pub(crate) churn_threads: usize,
    pub(crate) growth_end: GrowthEnd,
    /// `memory_usage()` of a filter presized for the capacity.
    pub(crate) presized_memory: usize,
    pub(crate) buckets: usize,
    pub(crate) memory: usize,
    pub(crate) final_fp_queries: u64,
    pub(crate) final_fp_hits: u64,
    pub(crate) verify_missed_scalar: u64,
    pub(crate) verify_missed_batch: u64,
    pub(crate) verify_remove_missed: u64,
    pub(crate) left_after_remove: usize,
    pub(crate) prefill_refused: u64,
    pub(crate) snapshots: Snapshots,
}

/// What the snapshot thread measured (`--snapshots`).
#[derive(Default)]
pub(crate) struct Snapshots {
    /// Milliseconds each `write_to` took, sorted.
    pub(crate) millis: Vec<f64>,
    /// Buckets that writers captured for the snapshots, over all of them.
    pub(crate) captured: u64,
}

impl Snapshots {
    fn quantile(&self, q: f64) -> f64 {
        let last = self.millis.len().saturating_sub(1);
        self.millis.get((last as f64 * q).round() as usize).copied().unwrap_or(0.0)
    }
}

impl Report {
    pub(crate) fn false_negatives(&self) -> u64 {
        self.tally.false_negatives + self.verify_missed_scalar + self.verify_missed_batch
    }

    /// Whether every thread entered its churn regime (the growth phase ended).
    fn growth_ended(&self) -> bool {
        self.growth_end.threads == self.opts.threads
    }

    /// The most levels the filter may have at the end: one more than at the end of the growth.
    fn levels_max(&self) -> usize {
        self.growth_end.levels + 1
    }

    /// The most memory the filter may use at the end: twice a presized filter's, plus 1 MiB.
    fn memory_max(&self) -> usize {
        2 * self.presized_memory + MIB
    }

    /// Whether the churn left the filter's levels and memory within their bounds.
    fn bounded(&self) -> bool {
        self.growth_ended()
            && self.stats.levels <= self.levels_max()
            && self.memory <= self.memory_max()
    }

    /// Every failed check, one sentence each; empty if the run passed.
    pub(crate) fn failures(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.false_negatives() > 0 {
            out.push(format!(
                "{} false negatives ({} during the run, {} by contains and {} by contains_batch \
                 after it)",
                self.false_negatives(),
                self.tally.false_negatives,
                self.verify_missed_scalar,
                self.verify_missed_batch
            ));
        }
        if self.tally.removes_missed > 0 {
            out.push(format!("{} removes of owned copies found none", self.tally.removes_missed));
        }
        if self.verify_remove_missed > 0 || self.left_after_remove > 0 {
            out.push(format!(
                "removing every owned key and extra copy: {} missed, {} left",
                self.verify_remove_missed, self.left_after_remove
            ));
        }
        if self.len != self.live_keys + self.extra_copies {
            out.push(format!(
                "len {} is not the {} owned keys + {} extra copies",
                self.len, self.live_keys, self.extra_copies
            ));
        }
        // A growable filter is never full.
        if self.opts.grow && self.tally.refused > 0 {
            out.push(format!("a growable filter refused {} inserts", self.tally.refused));
        }
        if !self.growth_ended() {
            out.push(format!(
                "the growth phase never ended: {} of {} threads reached their churn regime",
                self.growth_end.threads, self.opts.threads
            ));
        } else if self.stats.levels > self.levels_max() {
            out.push(format!(
                "the churn grew the filter from {} to {} levels (at most {} allowed)",
                self.growth_end.levels,
                self.stats.levels,
                self.levels_max()
            ));
        }
        if self.memory > self.memory_max() {
            out.push(format!(
                "memory not bounded: {} at the end > {} (2 x {} presized + 1 MiB)",
                mib(self.memory),
                mib(self.memory_max()),
                mib(self.presized_memory)
            ));
        }
        if self.opts.churn_percent() > 0 && self.churn_threads < self.opts.threads {
            out.push(format!(
                "only {} of {} threads both re-inserted a live key and removed its copy",
                self.churn_threads, self.opts.threads
            ));
        }
        out
    }

    /// The expected false-positive rate; for a grown filter, a bound: every level full.
    fn fpr_expected(&self) -> f64 {
        if self.stats.levels > 1 {
            fpr_at_load(self.stats.levels as f64)
        } else {
            fpr_at_load(self.load)
        }
    }
}

const MIB: usize = 1 << 20;

fn mib(bytes: usize) -> String {
    format!("{:.1} MiB", bytes as f64 / MIB as f64)
}

fn pct(x: u64, of: u64) -> f64 {
    if of == 0 {
        0.0
    } else {
        100.0 * x as f64 / of as f64
    }
}

/// Columns every line of the stress run's output fits in: its progress rows, its summary, its
/// failures.
pub(crate) const WIDTH: usize = 80;

/// Where a summary row's value starts: `"  "`, the label, a space.
const VALUE_COLUMN: usize = 24;

/// `text` broken at spaces into lines of at most `width` characters (a longer word, which the
/// summary never has, stands alone on its line). Every line but the first starts with `indent`,
/// counted in `width`; none ends with a newline.
pub(crate) fn wrap(text: &str, width: usize, indent: &str) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split(' ').filter(|w| !w.is_empty()) {
        let len = line.chars().count();
        if len > 0 && len + 1 + word.chars().count() > width {
            lines.push(std::mem::take(&mut line));
        }
        if line.is_empty() {
            if !lines.is_empty() {
                line.push_str(indent);
            }
        } else {
            line.push(' ');
        }
        line.push_str(word);
    }
    lines.push(line);
    lines
}

/// The summary, every line within [`WIDTH`] columns: a header, the operations, then one row a
/// check or counter, its label in the first column and its value wrapped at spaces in the second
/// (a value's `\n` starts a new line there).
pub(crate) fn table(r: &Report) -> String {
    let t = &r.tally;
    let s = &r.stats;
    let rate = |n: u64| n as f64 / r.elapsed / 1e6;
    let total = t.contains + t.inserts + t.removes;
    let mut o = String::new();
    let [c, i, d] = r.opts.mix;
    let header = [
        format!(
            "lockfree-cuckoo stress: {} threads, {:.1} s, seed {}",
            r.opts.threads, r.elapsed, r.opts.seed
        ),
        format!(
            "mix {c}/{i}/{d} (contains/insert/remove), capacity {}, {}",
            grouped(r.opts.capacity as u64),
            if r.opts.grow {
                "grown from empty".to_string()
            } else {
                format!("kept {}% full", r.opts.fill)
            },
        ),
    ];
    for line in header.iter().flat_map(|h| wrap(h, WIDTH, "")) {
        let _ = writeln!(o, "{line}");
    }
    let _ = writeln!(o);
    let _ = writeln!(o, "  operation        count       M ops/s");
    for (name, n) in
        [("contains", t.contains), ("insert", t.inserts), ("remove", t.removes), ("total", total)]
    {
        let _ = writeln!(o, "  {name:<9} {:>15} {:>10.2}", grouped(n), rate(n));
    }
    let _ = writeln!(o);
    // Three path lengths a line.
    let paths: Vec<String> = s
        .insert_paths
        .chunks(3)
        .enumerate()
        .map(|(k, counts)| {
            let counts: Vec<String> = counts.iter().map(|&n| grouped(n)).collect();
            format!("by hops {}..{}: {}", 3 * k, 3 * k + counts.len() - 1, counts.join(" / "))
        })
        .collect();
    let grown = r.stats.levels > 1;
    let mut rows: Vec<(&str, String)> = vec![
        (
            "load factor",
            format!(
                "{:.3} ({} items, {})\n{} buckets of 4 lanes",
                r.load,
                grouped(r.len as u64),
                mib(r.memory),
                grouped(r.buckets as u64),
            ),
        ),
        (
            "false-positive rate",
            format!(
                "{:.4}% during the run: {} of {}\n{:.4}% after it: {} of {}\nexpected {} {:.4}% \
                 ({})",
                pct(t.absent_positives, t.absent_checks),
                grouped(t.absent_positives),
                grouped(t.absent_checks),
                pct(r.final_fp_hits, r.final_fp_queries),
                grouped(r.final_fp_hits),
                grouped(r.final_fp_queries),
                if grown { "at most" } else { "about" },
                100.0 * r.fpr_expected(),
                if grown { "8 x levels / 65532" } else { "8 x load / 65532" }
            ),
        ),
        ("conservative answers", grouped(s.conservative_lookups)),
        (
            "levels",
            format!(
                "{}{}; {} discarded\n{} removes retained, {} of them pending",
                s.levels,
                if r.opts.grow { " (grown from 1/1000 of the capacity)" } else { "" },
                s.discarded_levels,
                grouped(s.retained_removals),
                grouped(s.pending_removals)
            ),
        ),
        (
            "churn",
            format!(
                "{}% of inserts {}, on {} of {} threads\n{} re-inserts of live keys\n{} removes \
                 of their copies, {} copies left",
                r.opts.churn_percent(),
                if r.opts.grow { "after the growth phase" } else { "all run" },
                r.churn_threads,
                r.opts.threads,
                grouped(t.reinserts),
                grouped(t.extra_removes),
                grouped(r.extra_copies as u64),
            ),
        ),
        ("growth end", growth_end(r)),
        (
            "memory bound",
            format!(
                "at the end: levels {} (at most {}), {}\n(at most {} = 2 x {} presized + 1 MiB): {}",
                s.levels,
                r.levels_max(),
                mib(r.memory),
                mib(r.memory_max()),
                mib(r.presized_memory),
                if r.bounded() { "ok" } else { "FAIL" }
            ),
        ),
        ("relocations", format!("{} (prefill included)", grouped(s.relocations))),
        ("insert paths", paths.join("\n")),
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
                "{} live keys, {} extra copies\nmissed: {} by contains, {} by contains_batch\n\
                 len {} = {} owned + {} extra copies\nremoving all: {} missed, {} left",
                grouped(r.live_keys as u64),
                grouped(r.extra_copies as u64),
                r.verify_missed_scalar,
                r.verify_missed_batch,
                grouped(r.len as u64),
                grouped(r.live_keys as u64),
                grouped(r.extra_copies as u64),
                r.verify_remove_missed,
                r.left_after_remove
            ),
        ),
        (
            "result",
            match r.failures() {
                f if f.is_empty() => "PASS".into(),
                f => format!("FAIL: {}", f.join("; ")),
            },
        ),
    ];
    if r.opts.snapshots {
        let snaps = &r.snapshots;
        rows.insert(
            rows.len() - 1,
            (
                "snapshots",
                format!(
                    "{} live write_to, one pass each\nmedian {:.2} ms, p99 {:.2} ms, max {:.2} ms\n\
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
    let pad = " ".repeat(VALUE_COLUMN);
    for (name, value) in rows {
        let lines = value.split('\n').flat_map(|part| wrap(part, WIDTH - VALUE_COLUMN, ""));
        for (k, line) in lines.enumerate() {
            if k == 0 {
                let _ = writeln!(o, "  {name:<w$} {line}", w = VALUE_COLUMN - 3);
            } else {
                let _ = writeln!(o, "{pad}{line}");
            }
        }
    }
    o
}

/// The growth-end row: when and where the growth phase ended.
fn growth_end(r: &Report) -> String {
    let g = &r.growth_end;
    if !r.growth_ended() {
        return format!(
            "never: {} of {} threads reached their churn regime",
            g.threads, r.opts.threads
        );
    }
    let when = if !r.opts.grow {
        "at the start (prefilled)".to_string()
    } else if g.cut_short == 0 {
        format!("all {} threads owned their share after {:.2} s", r.opts.threads, g.at_s)
    } else {
        format!(
            "after {:.2} s, {} of {} threads short of their share at half the run",
            g.at_s, g.cut_short, r.opts.threads
        )
    };
    format!(
        "{when}\n{} copies held, levels {}, {}",
        grouped(g.held as u64),
        g.levels,
        mib(g.memory)
    )
}

/// `x` with `decimals` decimals: the summary's precision, without rounding noise.
fn rounded(x: f64, decimals: usize) -> f64 {
    format!("{x:.decimals$}").parse().expect("a formatted number parses")
}

/// The summary for scripts: every field of the table, and the checks' inputs.
#[derive(Serialize)]
pub(crate) struct Json {
    threads: usize,
    duration_s: f64,
    mix: [u32; 3],
    capacity: usize,
    fill_percent: u32,
    seed: u64,
    ops: Counts,
    mops_per_s: Rates,
    load_factor: f64,
    len: usize,
    buckets: usize,
    memory_bytes: usize,
    fpr_run: f64,
    fpr_after: f64,
    fpr_expected: f64,
    absent_checks: u64,
    owned_checks: u64,
    conservative_lookups: u64,
    relocations: u64,
    insert_paths: Vec<u64>,
    path_retries: u64,
    surplus_removals: u64,
    refused_inserts: u64,
    grow: bool,
    levels: usize,
    discarded_levels: u64,
    retained_removals: u64,
    pending_removals: u64,
    churn: ChurnJson,
    growth_end: GrowthEndJson,
    memory_check: MemoryCheck,
    removes_missed: u64,
    false_negatives_run: u64,
    verify: Verify,
    snapshots: SnapshotsJson,
    false_negatives: u64,
    failures: Vec<String>,
    pass: bool,
}

#[derive(Serialize)]
struct Counts {
    contains: u64,
    insert: u64,
    remove: u64,
}

/// Million operations a second.
#[derive(Serialize)]
struct Rates {
    contains: f64,
    insert: f64,
    remove: f64,
    total: f64,
}

#[derive(Serialize)]
struct ChurnJson {
    percent: u32,
    reinserts: u64,
    extra_removes: u64,
    extra_copies_left: usize,
    threads: usize,
}

#[derive(Serialize)]
struct GrowthEndJson {
    reached: bool,
    threads: usize,
    s: f64,
    held: usize,
    cut_short_threads: usize,
    levels: usize,
    memory_bytes: usize,
}

#[derive(Serialize)]
struct MemoryCheck {
    levels_end: usize,
    levels_max: usize,
    memory_bytes_end: usize,
    presized_memory_bytes: usize,
    memory_bytes_max: usize,
    pass: bool,
}

#[derive(Serialize)]
struct Verify {
    live_keys: usize,
    extra_copies: usize,
    missed_contains: u64,
    missed_batch: u64,
    remove_missed: u64,
    left_after_remove: usize,
}

#[derive(Serialize)]
struct SnapshotsJson {
    count: usize,
    median_ms: f64,
    p99_ms: f64,
    max_ms: f64,
    captured_by_writers: u64,
}

impl From<&Report> for Json {
    fn from(r: &Report) -> Self {
        let t = &r.tally;
        let s = &r.stats;
        let rate = |n: u64| rounded(n as f64 / r.elapsed / 1e6, 4);
        let failures = r.failures();
        Json {
            threads: r.opts.threads,
            duration_s: rounded(r.elapsed, 3),
            mix: r.opts.mix,
            capacity: r.opts.capacity,
            fill_percent: r.opts.fill,
            seed: r.opts.seed,
            ops: Counts { contains: t.contains, insert: t.inserts, remove: t.removes },
            mops_per_s: Rates {
                contains: rate(t.contains),
                insert: rate(t.inserts),
                remove: rate(t.removes),
                total: rate(t.contains + t.inserts + t.removes),
            },
            load_factor: rounded(r.load, 5),
            len: r.len,
            buckets: r.buckets,
            memory_bytes: r.memory,
            fpr_run: rounded(t.absent_positives as f64 / t.absent_checks.max(1) as f64, 7),
            fpr_after: rounded(r.final_fp_hits as f64 / r.final_fp_queries.max(1) as f64, 7),
            fpr_expected: rounded(r.fpr_expected(), 7),
            absent_checks: t.absent_checks,
            owned_checks: t.owned_checks,
            conservative_lookups: s.conservative_lookups,
            relocations: s.relocations,
            insert_paths: s.insert_paths.to_vec(),
            path_retries: s.path_retries,
            surplus_removals: s.surplus_removals,
            refused_inserts: t.refused,
            grow: r.opts.grow,
            levels: s.levels,
            discarded_levels: s.discarded_levels,
            retained_removals: s.retained_removals,
            pending_removals: s.pending_removals,
            churn: ChurnJson {
                percent: r.opts.churn_percent(),
                reinserts: t.reinserts,
                extra_removes: t.extra_removes,
                extra_copies_left: r.extra_copies,
                threads: r.churn_threads,
            },
            growth_end: GrowthEndJson {
                reached: r.growth_ended(),
                threads: r.growth_end.threads,
                s: rounded(r.growth_end.at_s, 3),
                held: r.growth_end.held,
                cut_short_threads: r.growth_end.cut_short,
                levels: r.growth_end.levels,
                memory_bytes: r.growth_end.memory,
            },
            memory_check: MemoryCheck {
                levels_end: s.levels,
                levels_max: r.levels_max(),
                memory_bytes_end: r.memory,
                presized_memory_bytes: r.presized_memory,
                memory_bytes_max: r.memory_max(),
                pass: r.bounded(),
            },
            removes_missed: t.removes_missed,
            false_negatives_run: t.false_negatives,
            verify: Verify {
                live_keys: r.live_keys,
                extra_copies: r.extra_copies,
                missed_contains: r.verify_missed_scalar,
                missed_batch: r.verify_missed_batch,
                remove_missed: r.verify_remove_missed,
                left_after_remove: r.left_after_remove,
            },
            snapshots: SnapshotsJson {
                count: r.snapshots.millis.len(),
                median_ms: rounded(r.snapshots.quantile(0.5), 3),
                p99_ms: rounded(r.snapshots.quantile(0.99), 3),
                max_ms: rounded(r.snapshots.quantile(1.0), 3),
                captured_by_writers: r.snapshots.captured,
            },
            false_negatives: r.false_negatives(),
            pass: failures.is_empty(),
            failures,
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser as _;

    use super::*;

    fn report(args: &[&str], large: bool) -> Report {
        let opts = Options::try_parse_from(std::iter::once("stress").chain(args.iter().copied()))
            .expect("valid options");
        let n = if large { 10u64.pow(15) } else { 0 };
        let z = n as usize;
        let mut stats = Stats::default();
        stats.insert_paths.fill(n);
        stats.relocations = n;
        stats.path_retries = n;
        stats.conservative_lookups = n;
        stats.surplus_removals = n;
        stats.levels = if large { 999 } else { 1 };
        stats.discarded_levels = n;
        stats.retained_removals = n;
        stats.pending_removals = n;
        let tally = Tally {
            contains: n,
            owned_checks: n,
            absent_checks: n,
            absent_positives: n,
            inserts: n,
            refused: n,
            removes: n,
            removes_missed: n,
            false_negatives: n,
            reinserts: n,
            extra_removes: n,
        };
        Report {
            elapsed: opts.duration.as_secs_f64(),
            tally,
            stats,
            load: 1.0,
            len: z,
            live_keys: z / 3,
            extra_copies: z / 3,
            churn_threads: if large { opts.threads / 2 } else { opts.threads },
            growth_end: GrowthEnd {
                threads: opts.threads - usize::from(large),
                at_s: opts.duration.as_secs_f64() / 2.0,
                held: z,
                cut_short: opts.threads / 2,
                levels: 998,
                memory: z,
            },
            presized_memory: z,
            buckets: z,
            memory: z,
            final_fp_queries: n,
            final_fp_hits: n,
            verify_missed_scalar: n,
            verify_missed_batch: n,
            verify_remove_missed: n,
            left_after_remove: z,
            prefill_refused: n,
            snapshots: Snapshots { millis: vec![1e9; 3], captured: n },
            opts,
        }
    }

    #[test]
    fn every_line_fits_the_width() {
        let widest = [
            "--threads=1024",
            "--duration=86400",
            "--capacity=68719476736",
            "--seed=18446744073709551615",
            "--mix=100/0/0",
            "--fill=100",
        ];
        for args in [&[][..], &["--grow", "--snapshots"], &["--churn=100", "--snapshots"], &widest]
        {
            for large in [false, true] {
                let r = report(args, large);
                assert_eq!(r.failures().is_empty(), !large, "{args:?}");
                let out = table(&r);
                for line in out.lines() {
                    assert!(line.chars().count() <= WIDTH, "{args:?}: {line:?}\n{out}");
                }
            }
        }
    }

    #[test]
    fn wrap_breaks_at_spaces_within_the_width() {
        assert_eq!(wrap("", 10, "  "), [""]);
        assert_eq!(wrap("a bb  ccc dddd", 6, "  "), ["a bb", "  ccc", "  dddd"]);
        assert_eq!(wrap("longerthanwidth x", 4, ""), ["longerthanwidth", "x"]);
    }
}
