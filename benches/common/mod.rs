//! What the benchmark binaries share: the two table sizes, distinct keys, quick criterion
//! settings and a prefilled filter.

use std::time::Duration;

use criterion::Criterion;
use lockfree_cuckoo::CuckooFilter;

/// The sizes every benchmark runs at, as (label, capacity): a table that stays in the L2 cache
/// (about 100 KiB) and one of 34 MiB, larger than the 32 MiB L3 cache of the machine
/// `BENCHMARKS.md` measures on, whose lookups go to DRAM.
pub(crate) const SIZES: [(&str, usize); 2] = [("50k", 50_000), ("16m", 16_000_000)];

/// The key space of the prefill.
pub(crate) const PRESENT: u64 = 0;
/// The key space of keys never inserted.
pub(crate) const ABSENT: u64 = 1;

/// The splitmix64 finaliser, a bijection, so distinct inputs give distinct outputs.
pub(crate) fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Key `seq` of key space `space`: distinct `(space, seq)` pairs give distinct keys.
pub(crate) fn key(space: u64, seq: u64) -> u64 {
    mix((space << 48) | seq)
}

/// The items a filter of capacity `n` holds while measured: 90% of its capacity, as a filter
/// in use runs, leaving room for steady-state inserts.
pub(crate) fn fill(n: usize) -> usize {
    n / 10 * 9
}

/// A filter of capacity `n` holding [`PRESENT`] keys `0..fill(n)`.
pub(crate) fn filled(n: usize) -> CuckooFilter {
    let filter = CuckooFilter::with_capacity(n);
    for i in 0..fill(n) as u64 {
        filter.insert(&key(PRESENT, i)).expect("the prefill fits");
    }
    filter
}

/// A query stream for a filter of capacity `n` holding [`filled`]'s keys: `percent` of its
/// keys drawn from the prefill (hits), the rest never inserted (misses), in random order. Its
/// length is a power of two (indices wrap with a mask) and at most 32 MiB of keys.
pub(crate) fn queries(n: usize, percent: u64) -> Vec<u64> {
    let len = n.next_power_of_two().min(1 << 22) as u64;
    (0..len)
        .map(|i| {
            let r = mix(i ^ (percent << 32));
            if r % 100 < percent {
                key(PRESENT, (r >> 8) % fill(n) as u64)
            } else {
                key(ABSENT, i)
            }
        })
        .collect()
}

/// Quick settings, so that `cargo bench -p lockfree-cuckoo` runs in a few minutes on two cores;
/// criterion's own arguments override them (`cargo bench -p lockfree-cuckoo --
/// --measurement-time 5`).
pub(crate) fn criterion() -> Criterion {
    Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .without_plots()
        .configure_from_args()
}
