//! Collects the criterion benchmarks' results (`benches/filter.rs`) into Markdown tables: every
//! group a table of million operations a second, one column per run, and "ours / row": our
//! scalar rate over the row's, per run (above 1: we are faster than that row).
//!
//! ```text
//! cargo run --release -p lockfree-cuckoo-eval --bin bench_report -- target/bench/criterion
//! cargo run --release -p lockfree-cuckoo-eval --bin bench_report -- --prefix dram/ RUN_A RUN_B
//! ```
//!
//! Each directory is one run's `target/<dir>/criterion`: copy it aside between runs, as
//! criterion keeps only the latest result of each benchmark.

use std::collections::{BTreeSet, HashMap};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use clap::Parser;
use lockfree_cuckoo_eval::peers::Peer;
use serde::Deserialize;

/// Markdown tables of criterion results, one column per run.
#[derive(Debug, Parser)]
#[command(name = "bench_report")]
struct Args {
    /// Only the groups whose names start with this
    #[arg(long, value_name = "GROUP_PREFIX", default_value = "")]
    prefix: String,
    /// One run's criterion directory each, run A first (at most 8)
    #[arg(value_name = "CRITERION_DIR", default_value = "target/bench/criterion", num_args = 1..=8)]
    runs: Vec<PathBuf>,
}

/// The parts of criterion's `benchmark.json` read here.
#[derive(Deserialize)]
struct Benchmark {
    group_id: String,
    function_id: Option<String>,
    throughput: Option<Throughput>,
}

#[derive(Deserialize)]
struct Throughput {
    #[serde(rename = "Elements")]
    elements: Option<u64>,
}

/// The parts of criterion's `estimates.json` read here.
#[derive(Deserialize)]
struct Estimates {
    mean: Estimate,
}

#[derive(Deserialize)]
struct Estimate {
    /// Nanoseconds an iteration.
    point_estimate: f64,
}

/// One run's rates: million operations a second by (group, benchmark).
type Run = HashMap<(String, String), f64>;

fn read_json<T: for<'de> Deserialize<'de>>(path: &Path) -> io::Result<T> {
    let text = fs::read_to_string(path)?;
    serde_json::from_str(&text)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, format!("{}: {e}", path.display())))
}

/// Every benchmark's latest result under `dir`: the `new/` directories criterion writes.
fn load(dir: &Path, run: &mut Run) -> io::Result<()> {
    let bench = dir.join("benchmark.json");
    if dir.file_name().is_some_and(|name| name == "new") && bench.is_file() {
        let bench: Benchmark = read_json(&bench)?;
        let estimates: Estimates = read_json(&dir.join("estimates.json"))?;
        let elements = bench.throughput.and_then(|t| t.elements).unwrap_or(1);
        let mops = elements as f64 * 1e3 / estimates.mean.point_estimate;
        run.insert((bench.group_id, bench.function_id.unwrap_or_default()), mops);
    }
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        if entry.file_type()?.is_dir() {
            load(&entry.path(), run)?;
        }
    }
    Ok(())
}

/// The tables, groups in name order, rows by run A's rate, fastest first.
fn tables(prefix: &str, runs: &[Run]) -> String {
    let ours = Peer::Ours.name();
    let cell = |x: Option<f64>| x.map_or("-".to_owned(), |x| format!("{x:.2}"));
    let groups: BTreeSet<&String> =
        runs[0].keys().map(|(g, _)| g).filter(|g| g.starts_with(prefix)).collect();
    let mut out = String::new();
    for group in groups {
        let rate = |run: &Run, peer: &str| run.get(&(group.clone(), peer.to_owned())).copied();
        let mut peers: Vec<&String> =
            runs[0].keys().filter(|(g, _)| g == group).map(|(_, p)| p).collect();
        peers.sort_by(|a, b| rate(&runs[0], b).unwrap().total_cmp(&rate(&runs[0], a).unwrap()));
        let head: Vec<String> = (0..runs.len())
            .map(|i| format!("run {} M ops/s", char::from(b'A' + i as u8)))
            .collect();
        out += &format!("\n#### `{group}`\n\n| peer | {} | ours / row |\n", head.join(" | "));
        out += &format!("|---|{}---:|\n", "---:|".repeat(runs.len()));
        for peer in peers {
            let rates: Vec<Option<f64>> = runs.iter().map(|run| rate(run, peer)).collect();
            let cells: Vec<String> = rates.iter().map(|&x| cell(x)).collect();
            let ratios: Vec<String> = runs
                .iter()
                .zip(&rates)
                .map(|(run, &x)| match (rate(run, ours), x) {
                    (Some(o), Some(x)) if peer != ours && x != 0.0 => format!("{:.2}", o / x),
                    _ => "-".to_owned(),
                })
                .collect();
            out += &format!("| {peer} | {} | {} |\n", cells.join(" | "), ratios.join(" / "));
        }
    }
    out
}

fn main() -> io::Result<()> {
    let args = Args::parse();
    let mut runs = Vec::new();
    for dir in &args.runs {
        let mut run = Run::new();
        load(dir, &mut run)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", dir.display())))?;
        runs.push(run);
    }
    print!("{}", tables(&args.prefix, &runs));
    Ok(())
}
