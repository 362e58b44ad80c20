//! What the evaluation binaries and benchmarks of `lockfree-cuckoo` share: the one key scheme
//! and the query streams every measurement uses ([`keys`]), the one list of peer filters, each
//! behind three small traits ([`peers`]), and the floors under any two-bucket lookup and any
//! lock-free write ([`floor`]).
//!
//! The binaries (`src/bin/`): `stress` (the concurrency stress run, `cargo stress`), `paper`
//! (the cuckoo filter paper's evaluation, `cargo paper`; see `PAPER.md`), `peers` (space,
//! false-positive rate and one-shot fill and remove rates of every peer), `tight` (one thread
//! against a cache-sized and a DRAM-sized table: fills, lookups and removes of every peer in
//! tight loops, beside the two-read and one-CAS floors; `paired.sh` runs it for two revisions of
//! the crate in turns), `portable` (a snapshot saved by one build and checked by another),
//! `churn` and `grow` (growable filters), `scaling` (one shared filter on 1 to N threads: rates
//! and speedups; `scaling.sh` runs its plan for a 16-core machine) and `lookup_cost` (a fixed
//! number of operations for profilers). The criterion benchmarks are `benches/filter.rs`
//! (`cargo bench -p lockfree-cuckoo-eval`), and `bench_report` turns their results into tables.
//! `BENCHMARKS.md` ("Commands") describes them all.

pub mod floor;
pub mod keys;
pub mod peers;

/// Parses a number for a command-line flag, `_` separators allowed (`4_000_000`); the
/// binaries' clap value parsers build on it.
pub fn number<T: std::str::FromStr>(text: &str) -> Result<T, String> {
    text.replace('_', "").parse().map_err(|_| format!("`{text}` is not a number"))
}

/// `n` with thousands separators, as the tools' tables print counts (`127,780,000`).
pub fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn grouped_separates_thousands() {
        assert_eq!(super::grouped(0), "0");
        assert_eq!(super::grouped(999), "999");
        assert_eq!(super::grouped(1_000), "1,000");
        assert_eq!(super::grouped(127_780_000), "127,780,000");
    }
}
