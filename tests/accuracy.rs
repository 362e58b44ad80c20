//! False-positive rate at capacity, measured against theory.

use lockfree_cuckoo::CuckooFilter;

/// Keys inserted are `0..n` mapped through a bijection; absent keys come from a disjoint range.
#[test]
fn false_positive_rate_at_capacity_is_within_the_bound_and_matches_theory() {
    let n = 1_000_000u64;
    let filter = CuckooFilter::with_capacity(n as usize);
    for k in 0..n {
        filter.insert(&k).unwrap();
    }
    let queries = 10_000_000u64;
    let false_positives = (n..n + queries).filter(|k| filter.contains(k)).count() as f64;
    let rate = false_positives / queries as f64;
    let load = filter.load_factor();
    // Each lookup compares against up to 8 lanes, each a match with chance 1/65535.
    let theory = 8.0 * load / 65_535.0;
    eprintln!(
        "load {load:.4}: {false_positives} false positives in {queries}: {:.5}% (theory {:.5}%)",
        rate * 100.0,
        theory * 100.0
    );
    assert!(rate <= 0.000_135, "false-positive rate {:.5}% exceeds 0.0135%", rate * 100.0);
    // Overlapping index and fingerprint bits would show here as a rate well above theory.
    let ratio = rate / theory;
    assert!((0.85..1.15).contains(&ratio), "measured/theory = {ratio:.3}");
}
