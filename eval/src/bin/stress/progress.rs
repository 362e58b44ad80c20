//! The stress run's live progress on stderr: a header, then rows of the counters the summary
//! ends with, under the same names. On a terminal one row is redrawn in place (`\r`) five times
//! a second; otherwise (a log, a pipe) a row is printed every [`EVERY`]. After the run one last
//! row shows the threads' exact totals, the numbers of the summary. Every line fits in
//! [`WIDTH`] − 1 columns, so that a terminal of [`WIDTH`] never wraps it.

use std::io::Write as _;
use std::time::Duration;

use lockfree_cuckoo_eval::grouped;

use crate::cli::Options;
use crate::report::WIDTH;

/// How often a row is printed when stderr is not a terminal.
pub(crate) const EVERY: Duration = Duration::from_secs(5);

/// How often the row is redrawn on a terminal.
const REDRAW: Duration = Duration::from_millis(200);

/// What a row shows, each the counter of the same meaning in the summary.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Sample {
    /// Seconds since the threads started.
    pub(crate) elapsed: f64,
    /// Contains, inserts and removes so far: the summary's `total`.
    pub(crate) ops: u64,
    /// `load_factor()`: the summary's `load factor`.
    pub(crate) load: f64,
    /// `stats().levels`: the summary's `levels`.
    pub(crate) levels: usize,
    /// `memory_usage()`, in bytes: the memory of the summary's `load factor` row.
    pub(crate) memory: usize,
    /// Threads past their growth phase (in their churn regime): the summary's `growth end`.
    pub(crate) grown: usize,
    /// Threads that both re-inserted a live key and removed such a copy: the summary's `churn`.
    pub(crate) churn: usize,
    /// `stats().relocations` (prefill included): the summary's `relocations`.
    pub(crate) relocations: u64,
    /// `stats().conservative_lookups`: the summary's `conservative answers`.
    pub(crate) conservative: u64,
    /// False negatives seen by the threads' lookups: the summary's `false negatives`.
    pub(crate) false_negatives: u64,
}

/// A column of the rows.
#[derive(Clone, Copy, Debug)]
enum Column {
    Elapsed,
    Ops,
    Rate,
    Load,
    Levels,
    Memory,
    Grown,
    Churn,
    Relocations,
    Conservative,
    FalseNegatives,
}

impl Column {
    fn header(self) -> &'static str {
        match self {
            Column::Elapsed => "s",
            Column::Ops => "M ops",
            Column::Rate => "M ops/s",
            Column::Load => "load",
            Column::Levels => "levels",
            Column::Memory => "MiB",
            Column::Grown => "grown",
            Column::Churn => "churn",
            Column::Relocations => "M relocations",
            Column::Conservative => "conservative",
            Column::FalseNegatives => "false neg",
        }
    }
}

/// The progress of one run: its columns and how it shows them.
pub(crate) struct Progress {
    /// Each column and its width.
    columns: Vec<(Column, usize)>,
    /// Spaces between columns: 2, or 1 where 2 would pass the width.
    gap: usize,
    threads: usize,
    /// Whether stderr is a terminal: rows redrawn in place.
    terminal: bool,
    /// The elapsed seconds and operations of the previous row, for its rate.
    last: (f64, u64),
    /// Characters of the row on the terminal, to blank what a shorter one leaves.
    drawn: usize,
}

/// Characters of `x` with one decimal.
fn len1(x: f64) -> usize {
    format!("{x:.1}").len()
}

impl Progress {
    /// The columns that mean something for `opts`: the growth's only with `--grow`, the churn's
    /// only with churn, the relocations and conservative answers only without `--grow` (the
    /// width has no room for all).
    pub(crate) fn new(opts: &Options, terminal: bool) -> Self {
        let secs = opts.duration.as_secs_f64();
        let n = opts.threads.to_string().len();
        // Generous bounds of the values: 1,000 M operations a second, 16 bytes an item.
        let mut columns = vec![
            (Column::Elapsed, len1(secs)),
            (Column::Ops, len1(secs * 1e3)),
            (Column::Rate, "9999.99".len()),
            (Column::Load, "0.000".len()),
        ];
        if opts.grow {
            columns.extend([
                (Column::Levels, 3),
                (Column::Memory, len1(opts.capacity as f64 * 16.0 / (1 << 20) as f64)),
                (Column::Grown, 2 * n + 1),
            ]);
        } else {
            columns.extend([(Column::Relocations, 0), (Column::Conservative, 11)]);
        }
        if opts.churn_percent() > 0 {
            columns.push((Column::Churn, 2 * n + 1));
        }
        columns.push((Column::FalseNegatives, 5));
        for (column, width) in &mut columns {
            *width = (*width).max(column.header().len());
        }
        let widths: usize = columns.iter().map(|&(_, w)| w).sum();
        let gap = if widths + 2 * (columns.len() - 1) < WIDTH { 2 } else { 1 };
        Progress { columns, gap, threads: opts.threads, terminal, last: (0.0, 0), drawn: 0 }
    }

    /// How long the run waits between rows.
    pub(crate) fn interval(&self) -> Duration {
        if self.terminal {
            REDRAW
        } else {
            EVERY
        }
    }

    /// The names of the columns, over their values.
    pub(crate) fn header(&self) -> String {
        self.line(|column| column.header().to_string())
    }

    /// The row of `s`, its rate `rate` million operations a second.
    fn row(&self, s: &Sample, rate: f64) -> String {
        let of = |n: usize| format!("{n}/{}", self.threads);
        self.line(|column| match column {
            Column::Elapsed => format!("{:.1}", s.elapsed),
            Column::Ops => format!("{:.1}", s.ops as f64 / 1e6),
            Column::Rate => format!("{rate:.2}"),
            Column::Load => format!("{:.3}", s.load),
            Column::Levels => s.levels.to_string(),
            Column::Memory => format!("{:.1}", s.memory as f64 / (1 << 20) as f64),
            Column::Grown => of(s.grown),
            Column::Churn => of(s.churn),
            Column::Relocations => format!("{:.1}", s.relocations as f64 / 1e6),
            Column::Conservative => grouped(s.conservative),
            Column::FalseNegatives => grouped(s.false_negatives),
        })
    }

    fn line(&self, cell: impl Fn(Column) -> String) -> String {
        let gap = " ".repeat(self.gap);
        let cells: Vec<String> =
            self.columns.iter().map(|&(column, w)| format!("{:>w$}", cell(column))).collect();
        cells.join(&gap)
    }

    /// The row of `s`, with the rate since the previous one: redrawn over it on a terminal,
    /// else on a line of its own.
    pub(crate) fn show(&mut self, s: &Sample) {
        let (secs, ops) = self.last;
        let rate =
            if s.elapsed > secs { (s.ops - ops) as f64 / (s.elapsed - secs) / 1e6 } else { 0.0 };
        self.last = (s.elapsed, s.ops);
        let row = self.row(s, rate);
        let mut err = std::io::stderr().lock();
        if self.terminal {
            let len = row.chars().count();
            let _ = write!(err, "\r{row}{:blank$}", "", blank = self.drawn.saturating_sub(len));
            self.drawn = len;
        } else {
            let _ = writeln!(err, "{row}");
        }
        let _ = err.flush();
    }

    /// The last row, `s`: shown, and on a terminal ended with a newline.
    pub(crate) fn finish(&mut self, s: &Sample) {
        self.show(s);
        if self.terminal {
            eprintln!();
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser as _;

    use super::*;

    fn options(args: &[&str]) -> Options {
        Options::try_parse_from(std::iter::once("stress").chain(args.iter().copied()))
            .expect("valid options")
    }

    fn progress(args: &[&str]) -> Progress {
        Progress::new(&options(args), true)
    }

    /// The largest values of a run of `opts`: 1,000 M operations a second, all relocating.
    fn large(opts: &Options) -> Sample {
        let secs = opts.duration.as_secs_f64();
        Sample {
            elapsed: secs,
            ops: (secs * 1e9) as u64,
            load: 1.0,
            levels: 999,
            memory: opts.capacity * 16,
            grown: opts.threads,
            churn: opts.threads,
            relocations: (secs * 1e9) as u64,
            conservative: 999_999_999,
            false_negatives: 99_999,
        }
    }

    #[test]
    fn every_row_fits_and_aligns_with_the_header() {
        let widest = ["--threads=1024", "--duration=86400", "--capacity=68719476736"];
        for extra in [&[][..], &["--grow"], &["--churn=1"], &["--grow", "--churn=0"]] {
            for args in [&[][..], &widest] {
                let args: Vec<&str> = args.iter().chain(extra).copied().collect();
                let opts = options(&args);
                let p = Progress::new(&opts, true);
                let header = p.header();
                for (s, rate) in [(Sample::default(), 0.0), (large(&opts), 9999.99)] {
                    let row = p.row(&s, rate);
                    assert!(row.len() < WIDTH, "{args:?}: {row:?} is {} long", row.len());
                    assert_eq!(row.len(), header.len(), "{args:?}:\n{header}\n{row}");
                }
            }
        }
    }

    #[test]
    fn columns_are_those_of_the_mode() {
        assert_eq!(
            progress(&[]).header(),
            "   s    M ops  M ops/s   load  M relocations  conservative  false neg"
        );
        assert_eq!(
            progress(&["--grow"]).header(),
            "   s    M ops  M ops/s   load  levels   MiB  grown  churn  false neg"
        );
        let row = progress(&["--churn=10"])
            .row(&Sample { elapsed: 5.0, ops: 124_300_000, churn: 3, ..Sample::default() }, 24.86);
        assert_eq!(
            row,
            " 5.0    124.3    24.86  0.000            0.0             0    3/4          0"
        );
    }
}
