//! Keys and query streams every measurement shares.
//!
//! Key `seq` of a key space is [`mix`] of the space and the sequence number: `mix` is a
//! bijection, so distinct `(space, seq)` pairs give distinct keys, and a key of the
//! [`ABSENT`] space is never one a benchmark inserted.

/// The splitmix64 finaliser: a bijection on `u64` with good avalanche, so distinct inputs give
/// distinct keys.
#[inline]
pub fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Key `seq` of key space `space` (0: the inserted set; 1: never inserted; 16..: per-thread).
#[inline]
pub fn key(space: u64, seq: u64) -> u64 {
    mix(space << 48 | seq)
}

/// Key space of the items a benchmark inserts up front.
pub const PRESENT: u64 = 0;
/// Key space of items no benchmark ever inserts.
pub const ABSENT: u64 = 1;
/// First key space of the per-thread keys in the mixed workload.
pub const THREAD_BASE: u64 = 16;

/// A query stream of `len` keys (a power of two), `percent_positive` of them from the first
/// `present` keys of [`PRESENT`], the rest from [`ABSENT`], shuffled.
pub fn queries(len: usize, present: usize, percent_positive: u32, seed: u64) -> Vec<u64> {
    assert!(len.is_power_of_two());
    let mut rng = seed;
    (0..len as u64)
        .map(|i| {
            rng = mix(rng ^ i);
            if (rng % 100) < u64::from(percent_positive) {
                key(PRESENT, mix(rng) % present as u64)
            } else {
                key(ABSENT, i + (seed << 32))
            }
        })
        .collect()
}
