//! The command line and the settings it selects.

use std::path::PathBuf;

use clap::Parser;
use lockfree_cuckoo_eval::number;

/// Regenerates the cuckoo filter paper's evaluation (CoNEXT 2014, section 7) for lockfree-cuckoo
/// and its peers: CSV files and SVG plots in the output directory, and a summary on stdout.
#[derive(Debug, Parser)]
#[command(name = "paper")]
pub(crate) struct Args {
    /// CI mode: a 4 MiB table, 100,000-operation windows, 10% steps, fewer positive fractions
    /// and false-positive queries; under a minute
    #[arg(long)]
    quick: bool,
    /// Output directory [default: <workspace>/target/paper]
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// This crate's table size in MiB [default: 192; quick: 4]
    #[arg(long, value_name = "N", value_parser = positive)]
    mib: Option<u64>,
    /// Operations per timed window [default: 1000000; quick: 100000]
    #[arg(long, value_name = "N", value_parser = positive)]
    ops: Option<u64>,
    /// Threads for the concurrent lines
    #[arg(long, value_name = "N", default_value = "2", value_parser = threads)]
    threads: usize,
    /// Measure this crate only
    #[arg(long)]
    no_peers: bool,
    /// Measure nothing: redraw the plots from the CSV files already in --out
    #[arg(long, conflicts_with_all = ["quick", "mib", "ops", "threads", "no_peers"])]
    plot_only: bool,
}

/// Settings for one run, after defaults.
#[derive(Debug, Clone)]
pub(crate) struct Config {
    pub(crate) quick: bool,
    pub(crate) out: PathBuf,
    pub(crate) mib: u64,
    pub(crate) ops: u64,
    pub(crate) threads: usize,
    pub(crate) peers: bool,
    pub(crate) plot_only: bool,
    /// Occupancy between points on Figures 6 to 8.
    pub(crate) step: f64,
    pub(crate) fpr_queries: u64,
    pub(crate) positive_fractions: Vec<f64>,
}

impl From<Args> for Config {
    fn from(args: Args) -> Self {
        let quick = args.quick;
        let fractions: &[f64] = if quick {
            &[0.0, 0.25, 0.5, 0.75, 1.0]
        } else {
            &[0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]
        };
        Config {
            quick,
            out: args.out.unwrap_or_else(default_out),
            mib: args.mib.unwrap_or(if quick { 4 } else { 192 }),
            ops: args.ops.unwrap_or(if quick { 100_000 } else { 1_000_000 }),
            threads: args.threads,
            peers: !args.no_peers,
            plot_only: args.plot_only,
            step: if quick { 0.10 } else { 0.05 },
            // 4 Mi queries see about 500 false positives at this crate's rate: ±5%.
            fpr_queries: if quick { 1 << 20 } else { 1 << 22 },
            positive_fractions: fractions.to_vec(),
        }
    }
}

/// `target/paper` of the workspace (the eval crate's parent directory).
fn default_out() -> PathBuf {
    let eval = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    eval.parent().unwrap_or(eval).join("target/paper")
}

/// A positive integer argument.
fn positive(text: &str) -> Result<u64, String> {
    match number(text) {
        Ok(n) if n > 0 => Ok(n),
        _ => Err("needs a positive integer".to_owned()),
    }
}

fn threads(text: &str) -> Result<usize, String> {
    match number(text)? {
        n if n >= 2 => Ok(n),
        _ => Err("must be at least 2: it sets the concurrent lines".to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Result<Config, clap::Error> {
        Args::try_parse_from(std::iter::once("paper").chain(list.iter().copied())).map(Config::from)
    }

    fn error(list: &[&str]) -> String {
        args(list).unwrap_err().to_string()
    }

    #[test]
    fn flags_override_the_quick_defaults_in_any_order() {
        let config = args(&["--mib=16", "--quick", "--ops", "5000"]).unwrap();
        assert!(config.quick);
        assert_eq!((config.mib, config.ops), (16, 5000));
        let default = args(&[]).unwrap();
        assert_eq!((default.mib, default.threads, default.peers), (192, 2, true));
        assert!(default.out.ends_with("target/paper"));
        let help = args(&["--help"]).unwrap_err();
        assert_eq!(help.kind(), clap::error::ErrorKind::DisplayHelp);
    }

    #[test]
    fn bad_arguments_are_explained() {
        assert!(error(&["--bogus"]).contains("--bogus"));
        assert!(error(&["--mib"]).contains("a value is required"));
        assert!(error(&["--ops", "0"]).contains("positive"));
        assert!(error(&["--threads", "1"]).contains("at least 2"));
        assert!(error(&["--quick=yes"]).contains("unexpected value"));
        assert!(error(&["--plot-only", "--mib", "4"]).contains("cannot be used with"));
    }

    #[test]
    fn plot_only_takes_an_output_directory() {
        let config = args(&["--out", "eval/figures/paper", "--plot-only"]).unwrap();
        assert!(config.plot_only);
        assert_eq!(config.out, PathBuf::from("eval/figures/paper"));
    }
}
