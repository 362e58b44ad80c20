//! Capacity promises and memory per item across many sizes.

use lockfree_cuckoo::CuckooFilter;
use rand::{rngs::StdRng, Rng, SeedableRng};

/// Small and awkward sizes, primes, powers of two and their neighbours, up to a few million.
fn sizes() -> Vec<usize> {
    let mut sizes = vec![0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 17, 23, 31, 97, 101, 1009, 7919];
    for p in [4, 7, 10, 12, 15, 16, 18, 20] {
        sizes.extend([(1 << p) - 1, 1 << p, (1 << p) + 1]);
    }
    sizes.extend([65_521, 100_003, 999_983, 3_000_017]);
    sizes
}

/// Fills a filter of `capacity` with `capacity` random keys; the seed fixes the keys and the
/// hasher's key alike, so that a run is the same every time.
fn fill_with_random_keys(capacity: usize, seed: u64) -> Result<CuckooFilter, (usize, usize)> {
    let filter = CuckooFilter::builder().capacity(capacity).seed(seed).build();
    let mut rng = StdRng::seed_from_u64(seed);
    for done in 0..capacity {
        if filter.insert(&rng.random::<u64>()).is_err() {
            return Err((done, filter.capacity()));
        }
    }
    Ok(filter)
}

#[test]
fn with_capacity_accepts_the_promised_items_for_many_sizes_and_seeds() {
    for n in sizes() {
        let seeds = if n > 500_000 {
            2
        } else if n > 10_000 {
            3
        } else {
            20
        };
        for seed in 0..seeds {
            let filter = fill_with_random_keys(n, seed).unwrap_or_else(|(done, cap)| {
                panic!("n={n} seed={seed}: refused after {done} (capacity {cap})")
            });
            assert!(filter.capacity() >= n);
            assert_eq!(filter.len(), n);
        }
    }
}

#[test]
fn small_tables_reach_their_promise_across_many_seeds() {
    // The spread of small tables is what the capacity reserve is for: try many key sets.
    for n in [4, 5, 8, 13, 20, 40, 64, 100, 200] {
        for seed in 0..2_000 {
            if let Err((done, cap)) = fill_with_random_keys(n, 1_000 + seed) {
                panic!("n={n} seed={seed}: refused after {done} (capacity {cap})");
            }
        }
    }
}

#[test]
fn large_filters_use_at_most_2_2_bytes_per_requested_item() {
    for n in [100_000, 250_000, 1_000_000, 4_000_000, 10_000_000] {
        let filter = CuckooFilter::with_capacity(n);
        let per_item = filter.memory_usage() as f64 / n as f64;
        assert!(per_item <= 2.2, "n={n}: {per_item:.3} bytes per item");
        assert!(
            per_item >= 2.0,
            "n={n}: {per_item:.3} bytes per item is below 16-bit fingerprints at 100% load"
        );
    }
}

#[test]
fn capacity_is_at_least_what_was_asked() {
    for n in sizes() {
        let filter = CuckooFilter::with_capacity(n);
        assert!(filter.capacity() >= n, "n={n}");
        assert!(filter.bucket_count() >= 1);
        // No power-of-two rounding: the table stays within a few percent of the request.
        if n >= 10_000 {
            let ratio = filter.capacity() as f64 / n as f64;
            assert!(ratio < 1.001, "n={n}: capacity {} is {ratio:.4}x", filter.capacity());
        }
    }
}

#[test]
fn impossible_capacities_are_errors_not_aborts() {
    for n in [usize::MAX, usize::MAX / 2, usize::MAX / 8] {
        assert!(CuckooFilter::builder().capacity(n).try_build().is_err(), "n={n}");
    }
}
