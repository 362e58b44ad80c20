//! The stress run's summary: a table for people, one JSON object for scripts.

use std::fmt::Write as _;

use lockfree_cuckoo::Stats;

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
    pub(crate) live_keys: usize,
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

    pub(crate) fn passed(&self) -> bool {
        self.false_negatives() == 0
            && self.tally.removes_missed == 0
            && self.verify_remove_missed == 0
            && self.left_after_remove == 0
            && self.len == self.live_keys
            // A growable filter is never full.
            && (!self.opts.grow || self.tally.refused == 0)
    }

    /// The expected false-positive rate; for a grown filter, a bound: every level full.
    fn fpr_expected(&self) -> f64 {
        if self.stats.levels > 1 {
            8.0 * self.stats.levels as f64 / 65532.0
        } else {
            8.0 * self.load / 65532.0
        }
    }
}

fn pct(x: u64, of: u64) -> f64 {
    if of == 0 {
        0.0
    } else {
        100.0 * x as f64 / of as f64
    }
}

pub(crate) fn grouped(n: u64) -> String {
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

pub(crate) fn table(r: &Report) -> String {
    let t = &r.tally;
    let s = &r.stats;
    let rate = |n: u64| n as f64 / r.elapsed / 1e6;
    let total = t.contains + t.inserts + t.removes;
    let mut o = String::new();
    let [c, i, d] = r.opts.mix;
    let _ = writeln!(
        o,
        "lockfree-cuckoo stress: {} threads, {:.1} s, mix {c}/{i}/{d} (contains/insert/remove)\n\
         capacity {}, {}, seed {}",
        r.opts.threads,
        r.elapsed,
        grouped(r.opts.capacity as u64),
        if r.opts.grow {
            "grown from empty by the threads' inserts".to_string()
        } else {
            format!("kept {}% full", r.opts.fill)
        },
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
                "{:.4}% after it ({} of {}); expected {} {:.4}% ({})",
                pct(r.final_fp_hits, r.final_fp_queries),
                grouped(r.final_fp_hits),
                grouped(r.final_fp_queries),
                if r.stats.levels > 1 { "at most" } else { "about" },
                100.0 * r.fpr_expected(),
                if r.stats.levels > 1 { "8 x levels / 65532" } else { "8 x load / 65532" }
            ),
        ),
        ("conservative answers", grouped(s.conservative_lookups)),
        (
            "levels",
            format!(
                "{}{}; {} discarded; {} removes kept their copies",
                s.levels,
                if r.opts.grow { " (grown from a thousandth of the capacity)" } else { "" },
                s.discarded_levels,
                grouped(s.retained_removals)
            ),
        ),
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

pub(crate) fn json(r: &Report) -> String {
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
            "\"grow\":{},\"levels\":{},\"discarded_levels\":{},\"retained_removals\":{},",
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
        r.opts.grow,
        s.levels,
        s.discarded_levels,
        s.retained_removals,
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
