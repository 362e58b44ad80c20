//! Regenerates the evaluation of Fan, Andersen, Kaminsky and Mitzenmacher, "Cuckoo Filter:
//! Practically Better Than Bloom" (CoNEXT 2014, section 7) for this crate and its peers:
//! Table 3 (space, false-positive rate, construction rate of a 192 MiB filter), Figure 4 (bits
//! per item against false-positive rate), Figure 5 (lookups against the fraction of positive
//! queries) and Figures 6 to 8 (lookup, insert and delete throughput against occupancy, one
//! thread and several).
//!
//! ```text
//! cargo run --release --example paper             # about 7.5 minutes on 2 cores
//! cargo run --release --example paper -- --quick  # CI: small table, under a minute
//! cargo run --release --example paper -- --help
//! ```
//!
//! Writes `target/paper/*.csv` and `target/paper/*.svg` and prints a summary; `PAPER.md` at
//! the crate root discusses a default run against the paper's numbers.

mod experiments;
mod filters;
mod keys;
mod output;
mod svg;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use lockfree_cuckoo::CuckooFilter;

use crate::experiments::{run, Plan, Results};
use crate::filters::{Parallel, Serial};
use lockfree_cuckoo_eval::peers::{Acf, Bloom, CfSip, Ours, Scalable};

const USAGE: &str = "\
Regenerates the cuckoo filter paper's evaluation (CoNEXT 2014, section 7) for lockfree-cuckoo
and its peers: CSV files and SVG plots in the output directory, and a summary on stdout.

Usage: cargo run --release --example paper -- [OPTIONS]

Options:
  --quick          CI mode: a 4 MiB table, 100,000-operation windows, 10% steps,
                   fewer positive fractions and false-positive queries; under a minute
  --out DIR        output directory [default: <workspace>/target/paper]
  --mib N          this crate's table size in MiB [default: 192; quick: 4]
  --ops N          operations per timed window [default: 1000000; quick: 100000]
  --threads N      threads for the concurrent lines [default: 2]
  --no-peers       measure this crate only
  -h, --help       print this help
";

/// Settings for one run, after defaults.
#[derive(Debug, Clone)]
pub(crate) struct Config {
    pub(crate) quick: bool,
    pub(crate) out: PathBuf,
    pub(crate) mib: u64,
    pub(crate) ops: u64,
    pub(crate) threads: usize,
    pub(crate) peers: bool,
    /// Occupancy between points on Figures 6 to 8.
    pub(crate) step: f64,
    pub(crate) fpr_queries: u64,
    pub(crate) positive_fractions: Vec<f64>,
}

/// Parses the arguments (without the program name). `Ok(None)` means help was asked for.
fn parse(args: impl IntoIterator<Item = String>) -> Result<Option<Config>, String> {
    let mut quick = false;
    let mut peers = true;
    let mut out = None;
    let mut mib = None;
    let mut ops = None;
    let mut threads = None;
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        // Accept both `--flag value` and `--flag=value`.
        let (flag, inline) = match arg.split_once('=') {
            Some((flag, value)) if flag.starts_with("--") => {
                (flag.to_owned(), Some(value.to_owned()))
            }
            _ => (arg.clone(), None),
        };
        let mut value = |name: &str| {
            inline.clone().or_else(|| args.next()).ok_or_else(|| format!("{name} needs a value"))
        };
        match flag.as_str() {
            "-h" | "--help" => return Ok(None),
            "--quick" => quick = true,
            "--no-peers" => peers = false,
            "--out" => out = Some(PathBuf::from(value("--out")?)),
            "--mib" => mib = Some(positive(&flag, &value("--mib")?)?),
            "--ops" => ops = Some(positive(&flag, &value("--ops")?)?),
            "--threads" => threads = Some(positive(&flag, &value("--threads")?)? as usize),
            _ => return Err(format!("unknown argument `{arg}`")),
        }
        if inline.is_some() && matches!(flag.as_str(), "--quick" | "--no-peers" | "-h" | "--help") {
            return Err(format!("{flag} takes no value"));
        }
    }
    let threads = threads.unwrap_or(2);
    if threads < 2 {
        return Err("--threads must be at least 2: it sets the concurrent lines".to_owned());
    }
    let fractions: &[f64] = if quick {
        &[0.0, 0.25, 0.5, 0.75, 1.0]
    } else {
        &[0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]
    };
    Ok(Some(Config {
        quick,
        out: out.unwrap_or_else(default_out),
        mib: mib.unwrap_or(if quick { 4 } else { 192 }),
        ops: ops.unwrap_or(if quick { 100_000 } else { 1_000_000 }),
        threads,
        peers,
        step: if quick { 0.10 } else { 0.05 },
        // 4 Mi queries see about 500 false positives at this crate's rate: ±5%.
        fpr_queries: if quick { 1 << 20 } else { 1 << 22 },
        positive_fractions: fractions.to_vec(),
    }))
}

/// `target/paper` of the workspace (the eval crate's parent directory).
fn default_out() -> PathBuf {
    let eval = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    eval.parent().unwrap_or(eval).join("target/paper")
}

/// A positive integer argument.
fn positive(flag: &str, text: &str) -> Result<u64, String> {
    match text.replace('_', "").parse::<u64>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!("{flag} needs a positive integer, got `{text}`")),
    }
}

/// This crate's filter with `bytes` of table (rounded up to whole buckets), built through the
/// public builder, and the capacity asked for. The builder sizes by capacity and the bucket
/// count grows monotonically with it, so the least capacity giving that many buckets is found by
/// bisection from a guess at the crate's documented 94% promise: about a dozen builds.
fn sized_filter(bytes: u64) -> (CuckooFilter, usize) {
    let buckets = bytes.div_ceil(8) as usize;
    let large_enough =
        |capacity| CuckooFilter::builder().capacity(capacity).build().bucket_count() >= buckets;
    let mut hi = buckets * 4 * 94 / 100;
    while !large_enough(hi) {
        hi += hi / 64 + 1;
    }
    // Widen downwards until the bracket's low end is too small, then bisect.
    let mut width = 64;
    let mut lo = hi.saturating_sub(width);
    while lo > 0 && large_enough(lo) {
        hi = lo;
        width *= 2;
        lo = hi.saturating_sub(width);
    }
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if large_enough(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    (CuckooFilter::builder().capacity(hi).build(), hi)
}

/// The 1-, 5- and 15-minute load averages, where the system reports them: other work on the
/// machine is the largest source of noise in these timings, so the output records it.
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|text| text.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".to_owned())
}

fn main() -> ExitCode {
    let config = match parse(std::env::args().skip(1)) {
        Ok(Some(config)) => config,
        Ok(None) => {
            print!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(message) => {
            eprintln!("error: {message}\n\nRun with --help for the options.");
            return ExitCode::from(2);
        }
    };
    if cfg!(debug_assertions) {
        eprintln!("warning: built without --release; the timings will mean little");
    }
    let started = Instant::now();
    let load_before = load_average();
    let (filter, requested) = sized_filter(config.mib << 20);
    let capacity = filter.capacity() as u64;
    let plan = Plan {
        ops: config.ops,
        step: config.step,
        fpr_queries: config.fpr_queries,
        positive_fractions: config.positive_fractions.clone(),
        capacity_mark: capacity,
        stop_at: None,
    };
    eprintln!(
        "paper: {} mode; {:.1} MiB table ({} buckets, promised capacity {capacity}); windows of \
         {} operations, occupancy steps of {:.0}%",
        if config.quick { "quick" } else { "default" },
        (filter.bucket_count() * 8) as f64 / f64::from(1 << 20),
        filter.bucket_count(),
        config.ops,
        config.step * 100.0
    );

    let mut results: Vec<Results> = Vec::new();
    let name = "lockfree-cuckoo";
    results.push(run(name, &mut Serial(Ours(filter)), &plan));
    let ours_parallel = Ours(CuckooFilter::builder().capacity(requested).build());
    results.push(run(
        name,
        &mut Parallel { filter: ours_parallel, threads: config.threads },
        &plan,
    ));

    if config.peers {
        let ours = results[0].full;
        // Filters that cannot refuse are filled to the items ours held; the Bloom filter is
        // also sized for ours' measured false-positive rate (or its expected one if the
        // queries found none), to show what the same job costs it in space.
        let same_items = Plan { stop_at: Some(ours.items), ..plan.clone() };
        let fpr = if ours.fpr > 0.0 { ours.fpr } else { 8.0 * results[0].max_load / 65532.0 };
        let n = capacity as usize;

        results.push(run("cuckoofilter", &mut Serial(CfSip::new(n)), &plan));
        let atomic = || Acf::new(n);
        results.push(run("atomic-cuckoo-filter", &mut Serial(atomic()), &plan));
        let threads = config.threads;
        results.push(run(
            "atomic-cuckoo-filter",
            &mut Parallel { filter: atomic(), threads },
            &plan,
        ));
        // Only the concurrent cuckoo peer gets a threaded line: it is the comparison that
        // matters for this crate, and each extra pass at 192 MiB costs a minute or two.
        results.push(run(
            "fastbloom",
            &mut Serial(Bloom::new(ours.items as usize, fpr)),
            &same_items,
        ));
        let scalable = scalable_cuckoo_filter::ScalableCuckooFilterBuilder::new()
            .initial_capacity(n)
            .false_positive_probability(fpr)
            .finish();
        results.push(run("scalable_cuckoo_filter", &mut Serial(Scalable(scalable)), &same_items));
    }

    let run = output::Run { elapsed: started.elapsed(), load_before, load_after: load_average() };
    let files = match output::write_all(&config, &results, &run) {
        Ok(files) => files,
        Err(err) => {
            eprintln!("error: writing to {}: {err}", config.out.display());
            return ExitCode::FAILURE;
        }
    };
    output::print_summary(&config, &results, &run);
    println!("\nwrote {files} files to {}", config.out.display());
    // The run doubles as a smoke test in CI: this crate must never lose an item.
    let broken: Vec<String> = results
        .iter()
        .filter(|r| r.name == name && (r.false_negatives > 0 || r.lost != Some(0)))
        .map(|r| format!("{} thread(s)", r.threads))
        .collect();
    if broken.is_empty() {
        ExitCode::SUCCESS
    } else {
        eprintln!("error: lockfree-cuckoo lost items with {}", broken.join(" and "));
        ExitCode::FAILURE
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Result<Option<Config>, String> {
        parse(list.iter().map(|s| s.to_string()))
    }

    #[test]
    fn flags_override_the_quick_defaults_in_any_order() {
        let config = args(&["--mib=16", "--quick", "--ops", "5000"]).unwrap().unwrap();
        assert!(config.quick);
        assert_eq!((config.mib, config.ops), (16, 5000));
        assert_eq!(args(&[]).unwrap().unwrap().mib, 192);
        assert!(args(&["--help"]).unwrap().is_none());
    }

    #[test]
    fn bad_arguments_are_explained() {
        assert!(args(&["--bogus"]).unwrap_err().contains("--bogus"));
        assert!(args(&["--mib"]).unwrap_err().contains("needs a value"));
        assert!(args(&["--ops", "0"]).unwrap_err().contains("positive"));
        assert!(args(&["--threads", "1"]).unwrap_err().contains("at least 2"));
        assert!(args(&["--quick=yes"]).unwrap_err().contains("takes no value"));
    }
}
