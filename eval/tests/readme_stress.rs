//! The README's account of the stress run against the binary itself: the paragraph after the
//! `<!-- stress flags -->` marker lists exactly the long flags of `stress --help`, and the
//! ```` ```text ```` sample after it reads as the summary prints (the same rows, labels and words,
//! the numbers aside), every line within 80 columns.

use std::collections::BTreeSet;
use std::process::Command;

const README: &str = include_str!("../../README.md");

/// The comment that starts the README's paragraph on the stress flags.
const MARKER: &str = "<!-- stress flags -->";

/// The columns every line of the summary fits in.
const WIDTH: usize = 80;

/// The README from the marker on.
fn after_marker() -> &'static str {
    let at = README.find(MARKER).unwrap_or_else(|| panic!("README.md has no `{MARKER}`"));
    &README[at + MARKER.len()..]
}

/// The paragraph after the marker: up to the first blank line.
fn flags_paragraph() -> &'static str {
    let text = after_marker().trim_start();
    let end = text.find("\n\n").unwrap_or(text.len());
    &text[..end]
}

/// The body of the first ```` ```text ```` block after the marker.
fn sample() -> &'static str {
    let text = after_marker();
    let start = text.find("```text\n").expect("a ```text block after the marker") + 8;
    let len = text[start..].find("```").expect("the ```text block ends");
    &text[start..start + len]
}

/// The `--long-flags` in `text`, in order: `--` not inside a word, then a lowercase letter,
/// then lowercase letters, digits and dashes.
fn long_flags_in_order(text: &str) -> Vec<String> {
    let mut flags = Vec::new();
    let bytes = text.as_bytes();
    let is_name = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-';
    for (at, _) in text.match_indices("--") {
        if at > 0 && (bytes[at - 1].is_ascii_alphanumeric() || bytes[at - 1] == b'-') {
            continue;
        }
        let name_len = bytes[at + 2..].iter().take_while(|&&b| is_name(b)).count();
        if name_len > 0 && bytes[at + 2].is_ascii_lowercase() {
            flags.push(text[at..at + 2 + name_len].trim_end_matches('-').to_string());
        }
    }
    flags
}

/// The `--long-flags` in `text`.
fn long_flags(text: &str) -> BTreeSet<String> {
    long_flags_in_order(text).into_iter().collect()
}

fn stress(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_stress")).args(args).output().expect("stress runs");
    assert!(
        out.status.success(),
        "stress {args:?} failed: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8 output")
}

/// The long flags `--help` documents: the first `--flag` of each option's line (a line that
/// starts, after a short indentation, with `-`), not those its descriptions mention.
fn help_flags() -> BTreeSet<String> {
    let help = stress(&["--help"]);
    help.lines()
        .filter(|line| {
            let indent = line.len() - line.trim_start().len();
            indent < 8 && line.trim_start().starts_with('-')
        })
        .filter_map(|line| long_flags_in_order(line).into_iter().next())
        .collect()
}

#[test]
fn readme_lists_every_flag_of_help() {
    let help = help_flags();
    assert!(help.contains("--threads") && help.contains("--help"), "{help:?}");
    let readme = long_flags(flags_paragraph());
    assert_eq!(
        readme,
        help,
        "the README's stress flags (the paragraph after `{MARKER}`) are not those of \
         `cargo stress --help`: missing {:?}, not flags {:?}",
        help.difference(&readme).collect::<Vec<_>>(),
        readme.difference(&help).collect::<Vec<_>>()
    );
}

#[test]
fn help_fits_80_columns() {
    let help = stress(&["--help"]);
    let wide: Vec<&str> = help.lines().filter(|line| line.chars().count() > WIDTH).collect();
    assert!(wide.is_empty(), "`stress --help` lines over {WIDTH} columns: {wide:#?}");
}

/// `text` with every number (a digit, then digits, commas and points) as `#`, its words
/// separated by single spaces: what stays the same from run to run and across line breaks.
fn skeleton(text: &str) -> Vec<String> {
    let mut out = String::new();
    let mut in_number = false;
    for c in text.chars() {
        if c.is_ascii_digit() || (in_number && (c == ',' || c == '.')) {
            if !in_number {
                out.push('#');
            }
            in_number = true;
        } else {
            in_number = false;
            out.push(c);
        }
    }
    out.split_whitespace().map(str::to_string).collect()
}

/// The labels of the summary's rows, in order: each line indented by two spaces, up to the
/// first two spaces after its text.
fn labels(text: &str) -> Vec<&str> {
    text.lines()
        .filter_map(|line| line.strip_prefix("  "))
        .filter(|rest| !rest.starts_with(' ') && !rest.is_empty())
        .map(|rest| rest.split("  ").next().unwrap_or(rest).trim_end())
        .collect()
}

#[test]
fn readme_sample_reads_as_the_summary_prints() {
    let sample = sample();
    for line in sample.lines() {
        assert!(line.chars().count() <= WIDTH, "README sample line over {WIDTH}: {line:?}");
    }
    // A short run with the sample's options but the length and the capacity.
    let run = stress(&["--duration", "0.3", "--capacity", "100000"]);
    for line in run.lines() {
        assert!(line.chars().count() <= WIDTH, "summary line over {WIDTH}: {line:?}");
    }
    assert_eq!(
        labels(sample),
        labels(&run),
        "the README's stress sample has other rows than the summary:\n{run}"
    );
    let (want, have) = (skeleton(&run), skeleton(sample));
    if let Some(at) = (0..want.len().max(have.len())).find(|&k| want.get(k) != have.get(k)) {
        let around =
            |words: &[String]| words[at.saturating_sub(8)..(at + 8).min(words.len())].join(" ");
        panic!(
            "the README's stress sample is worded otherwise than the summary, from word {at}:\n  \
             README:  ... {}\n  summary: ... {}\nThe summary:\n{run}",
            around(&have),
            around(&want)
        );
    }
}

#[test]
fn the_helpers_find_what_they_should() {
    assert_eq!(
        long_flags_in_order("`--threads`, `--mix=1`, --x-y; not a--b, ---, -- or --9"),
        ["--threads", "--mix", "--x-y"]
    );
    assert_eq!(
        skeleton("total  1,234.5 M/s (90/5/5),\n x"),
        ["total", "#", "M/s", "(#/#/#),", "x"]
    );
    assert_eq!(
        labels("head\n\n  load factor  0.9 (1 item)\n                 more\n"),
        ["load factor"]
    );
}
