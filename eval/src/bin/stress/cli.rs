//! The stress run's command line.

use std::time::Duration;

use clap::Parser;
use lockfree_cuckoo_eval::number;

/// lockfree-cuckoo stress run: N threads share one Arc<CuckooFilter> at high
/// load, mixing lookups, inserts and removes; each thread tracks the keys it
/// owns, so a false negative cannot go unseen.
#[derive(Clone, Debug, Parser)]
#[command(
    name = "stress",
    // Every line of the help within 80 columns (clap wraps only with a feature that adds a
    // dependency): descriptions under their flags, the long ones broken by hand.
    next_line_help = true,
    verbatim_doc_comment,
    after_help = "Exit status: 0 if every check passed, 1 if any false negative (or other\n\
                  failed check) was seen, 2 for a bad command line."
)]
pub(crate) struct Options {
    /// Worker threads (more than the cores is fine)
    #[arg(long, value_name = "N", default_value = "4", value_parser = threads)]
    pub(crate) threads: usize,
    /// How long to run, in seconds
    #[arg(long, value_name = "SECS", default_value = "20", value_parser = duration)]
    pub(crate) duration: Duration,
    /// Percent of contains/insert/remove, summing to 100
    #[arg(long, value_name = "C/I/R", default_value = "90/5/5", value_parser = mix)]
    pub(crate) mix: [u32; 3],
    /// Capacity of the filter
    #[arg(long, value_name = "N", default_value = "4000000", value_parser = capacity)]
    pub(crate) capacity: usize,
    /// Share of the capacity filled before the run and kept
    #[arg(long, value_name = "PERCENT", default_value = "95", value_parser = percent)]
    pub(crate) fill: u32,
    /// Seed of the key streams and operation choices
    #[arg(long, value_name = "N", default_value = "1", value_parser = number::<u64>)]
    pub(crate) seed: u64,
    /// One more thread takes live snapshots (write_to) back to back, timed
    #[arg(long)]
    pub(crate) snapshots: bool,
    /// Start with a growable filter a thousandth of --capacity, nothing
    /// prefilled: the threads' inserts grow it while they run the mix, until
    /// each owns its share (capacity / threads) or half the run has passed;
    /// then they churn, removing as much as they insert. The churn must leave
    /// the filter at most one level more than it had then and within twice
    /// the memory of a filter presized for the capacity, plus 1 MiB
    #[arg(long, verbatim_doc_comment)]
    pub(crate) grow: bool,
    /// Percent of a thread's inserts in its churn regime (with --grow: once
    /// it owns its share; else the whole run) that insert one more copy of
    /// one of its live keys, drawn at random, instead of a new key. Its
    /// removes take these extra copies first, oldest first, then its oldest
    /// key; a key with an extra copy stays owned, and its lookups must stay
    /// true [default: 50 with --grow, else 0]
    #[arg(long, value_name = "PERCENT", value_parser = percent, verbatim_doc_comment)]
    pub(crate) churn: Option<u32>,
    /// Print the summary as one JSON object instead of a table
    #[arg(long)]
    pub(crate) json: bool,
}

fn threads(text: &str) -> Result<usize, String> {
    match number(text)? {
        n @ 1..=1024 => Ok(n),
        _ => Err("expected 1 to 1024".into()),
    }
}

fn duration(text: &str) -> Result<Duration, String> {
    let secs: f64 = number(text)?;
    if secs > 0.0 && secs <= 86_400.0 {
        Ok(Duration::from_secs_f64(secs))
    } else {
        Err("expected seconds in (0, 86400]".into())
    }
}

fn mix(text: &str) -> Result<[u32; 3], String> {
    let parsed: Result<Vec<u32>, _> = text.split('/').map(|p| p.trim().parse()).collect();
    match parsed {
        Ok(v) if v.len() == 3 && v.iter().sum::<u32>() == 100 => Ok([v[0], v[1], v[2]]),
        _ => {
            Err("expected three percentages contains/insert/remove summing to 100, e.g. 90/5/5"
                .into())
        }
    }
}

fn capacity(text: &str) -> Result<usize, String> {
    match number(text)? {
        n @ 1_000..=0x10_0000_0000 => Ok(n),
        _ => Err("expected 1000 to 2^36".into()),
    }
}

impl Options {
    /// `--churn`, or its default: 50 with `--grow`, else 0.
    pub(crate) fn churn_percent(&self) -> u32 {
        self.churn.unwrap_or(if self.grow { 50 } else { 0 })
    }
}

fn percent(text: &str) -> Result<u32, String> {
    match number(text)? {
        n @ 0..=100 => Ok(n),
        _ => Err("expected a percentage, 0 to 100".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Options, clap::Error> {
        Options::try_parse_from(std::iter::once("stress").chain(args.iter().copied()))
    }

    #[test]
    fn defaults_are_the_documented_run() {
        let opts = parse(&[]).unwrap();
        assert_eq!(
            (opts.threads, opts.duration, opts.mix),
            (4, Duration::from_secs(20), [90, 5, 5])
        );
        assert_eq!((opts.capacity, opts.fill, opts.seed), (4_000_000, 95, 1));
        assert!(!opts.snapshots && !opts.json && !opts.grow);
        assert_eq!(opts.churn_percent(), 0);
    }

    #[test]
    fn churn_defaults_to_half_with_grow() {
        assert_eq!(parse(&["--grow"]).unwrap().churn_percent(), 50);
        assert_eq!(parse(&["--grow", "--churn", "0"]).unwrap().churn_percent(), 0);
        assert_eq!(parse(&["--churn=20"]).unwrap().churn_percent(), 20);
    }

    #[test]
    fn flags_take_separators_and_inline_values() {
        let opts =
            parse(&["--capacity=1_000_000", "--mix", "80/10/10", "--duration", "0.5"]).unwrap();
        assert_eq!((opts.capacity, opts.mix), (1_000_000, [80, 10, 10]));
        assert_eq!(opts.duration, Duration::from_millis(500));
    }

    #[test]
    fn bad_values_are_refused() {
        for args in [
            &["--mix", "90/5/6"][..],
            &["--threads", "0"],
            &["--fill", "101"],
            &["--churn", "101"],
            &["--capacity", "999"],
            &["--duration", "0"],
            &["--json=yes"],
            &["--bogus"],
        ] {
            assert!(parse(args).is_err(), "{args:?}");
        }
    }
}
