//! False-positive rate at capacity, measured against theory.

use std::hash::{BuildHasher, Hasher};

use lockfree_cuckoo::CuckooFilter;

/// Each lookup compares against up to 8 lanes, each a match with chance 1/65532: a fingerprint
/// is one of `1..=0xFFFE`, and 1 and 0xFFFE are twice as likely (0 and 0xFFFF map to them), so
/// two agree with chance `(65532 + 2 × 2²) / 2³²`.
fn theory(load: f64) -> f64 {
    8.0 * load / 65_532.0
}

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
    let theory = theory(load);
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

/// A hasher that returns the last integer written: the weakest hasher there is, as FxHash or
/// `nohash`-style hashers are on integer keys.
#[derive(Clone, Copy, Debug, Default)]
struct Identity;

#[derive(Clone, Copy, Debug, Default)]
struct IdentityHasher(u64);

impl BuildHasher for Identity {
    type Hasher = IdentityHasher;

    fn build_hasher(&self) -> IdentityHasher {
        IdentityHasher(0)
    }
}

impl Hasher for IdentityHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, _: &[u8]) {
        unimplemented!("integer keys only")
    }

    fn write_u64(&mut self, value: u64) {
        self.0 = value;
    }
}

/// The filter mixes the hash before splitting it, so even sequential integers hashed to
/// themselves spread over all fingerprints and buckets, and the rate matches theory.
#[test]
fn identity_hasher_on_sequential_keys_matches_theory() {
    let n = 200_000u64;
    let filter = CuckooFilter::builder().capacity(n as usize).hasher(Identity).build();
    for k in 0..n {
        filter.insert(&k).unwrap();
    }
    let queries = 5_000_000u64;
    let false_positives = (n..n + queries).filter(|k| filter.contains(k)).count() as f64;
    let rate = false_positives / queries as f64;
    let theory = theory(filter.load_factor());
    eprintln!(
        "identity hasher: {false_positives} false positives in {queries}: {:.5}% (theory {:.5}%)",
        rate * 100.0,
        theory * 100.0
    );
    let ratio = rate / theory;
    assert!((0.85..1.15).contains(&ratio), "measured/theory = {ratio:.3}");
}
