//! Shared by the snapshot tests, which each declare it `pub mod snapshot_common;`: the public
//! items of a public module count as used, so a test may use only some of them.

use std::hash::{BuildHasher, Hasher};

use lockfree_cuckoo::CuckooFilter;

/// A hasher whose output is specified here and the same on every platform and build: FNV-1a
/// over the bytes (integers little-endian), then the SplitMix64 finaliser so that the high bits
/// (the bucket) are as well mixed as the low ones (the fingerprint).
#[derive(Clone, Copy, Debug, Default)]
pub struct Fnv;

/// The state of an [`Fnv`] hash: the FNV-1a accumulator.
#[derive(Clone, Copy, Debug)]
pub struct FnvHasher(u64);

impl BuildHasher for Fnv {
    type Hasher = FnvHasher;

    fn build_hasher(&self) -> FnvHasher {
        FnvHasher(0xCBF2_9CE4_8422_2325)
    }
}

impl Hasher for FnvHasher {
    fn finish(&self) -> u64 {
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01B3);
        }
    }

    fn write_u16(&mut self, n: u16) {
        self.write(&n.to_le_bytes());
    }

    fn write_u32(&mut self, n: u32) {
        self.write(&n.to_le_bytes());
    }

    fn write_u64(&mut self, n: u64) {
        self.write(&n.to_le_bytes());
    }

    fn write_usize(&mut self, n: usize) {
        self.write(&(n as u64).to_le_bytes());
    }
}

/// Buckets of the golden filter.
pub const GOLDEN_BUCKETS: usize = 32;

/// Keys inserted into the golden filter: 0..110, every tenth removed again.
pub fn golden_present() -> impl Iterator<Item = u64> {
    (0..110u64).filter(|k| k % 10 != 3)
}

/// Keys inserted into the golden filter and removed again.
pub fn golden_removed() -> impl Iterator<Item = u64> {
    (0..110u64).filter(|k| k % 10 == 3)
}

/// A string inserted three times into the golden filter.
pub const GOLDEN_DUP: &str = "three times";

/// The filter whose snapshot is `tests/data/golden-v2.bin` (and, written by a version 1 build,
/// `golden-v1.bin`): 32 buckets, the [`Fnv`] hasher,
/// single-threaded and therefore deterministic.
pub fn golden_filter() -> CuckooFilter<Fnv> {
    let filter = CuckooFilter::builder().bucket_count(GOLDEN_BUCKETS).hasher(Fnv).build();
    for k in 0..110u64 {
        filter.insert(&k).expect("the golden filter fits");
    }
    for k in golden_removed() {
        assert!(filter.remove(&k));
    }
    for _ in 0..3 {
        filter.insert(GOLDEN_DUP).expect("the golden filter fits");
    }
    filter
}

/// CRC-64/XZ, bit by bit (the format's checksum), for tests that forge snapshots.
pub fn crc64(bytes: &[u8]) -> u64 {
    let mut crc = !0u64;
    for &byte in bytes {
        crc ^= u64::from(byte);
        for _ in 0..8 {
            crc = if crc & 1 == 1 { (crc >> 1) ^ 0xC96C_5795_D787_0F42 } else { crc >> 1 };
        }
    }
    !crc
}

/// Rewrites the trailing checksum of a snapshot after its other bytes were changed.
pub fn reseal(bytes: &mut [u8]) {
    let body = bytes.len() - 8;
    let crc = crc64(&bytes[..body]);
    bytes[body..].copy_from_slice(&crc.to_le_bytes());
}
