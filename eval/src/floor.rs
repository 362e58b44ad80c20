//! The floors: what any two-bucket lookup costs at least (the two-read floor, measured beside
//! ours by the benchmarks, `lookup_cost` and `tight`) and what any writer that changes a table
//! with compare-and-swap costs at least (the one-CAS floor, in `tight`). The one-CAS floor also
//! looks up by two loads of its shared words, so that under `scaling` its mixes show what any
//! table that threads both read and write costs in cache-line transfers between cores.

use std::hash::BuildHasher;
use std::sync::atomic::{AtomicU64, Ordering};

use lockfree_cuckoo::DefaultHashBuilder;

use crate::keys::{mix, GAMMA};

/// The floor under any two-bucket lookup: hash the key as we do (our default hasher, then a
/// finaliser of the same cost as our mix: two multiplies), read two pseudo-random words of an
/// array as large as our table, combine them. No validation, no fingerprint logic.
pub struct Floor {
    words: Box<[u64]>,
    hasher: DefaultHashBuilder,
}

/// Keys [`Floor::contains_batch`] hashes and prefetches ahead of the one it reads.
pub const FLOOR_BATCH: usize = 16;

impl Floor {
    /// An array of `words` words, each written (so no page is a shared zero page).
    pub fn new(words: usize) -> Self {
        let words: Box<[u64]> = (0..words as u64).map(|i| mix(i) | 1).collect();
        // `Default`, which every revision's hasher has: `paired.sh` builds this against them.
        Self { words, hasher: Default::default() }
    }

    /// Words in its array.
    pub fn words(&self) -> usize {
        self.words.len()
    }

    #[inline]
    fn indexes(&self, key: u64) -> (usize, usize, u64) {
        let h = mix(self.hasher.hash_one(key));
        let n = self.words.len() as u128;
        let a = ((u128::from(h >> 16) * n) >> 48) as usize;
        let b = ((u128::from(h.wrapping_mul(GAMMA)) * n) >> 64) as usize;
        (a, b, h & 0xFFFF)
    }

    /// Hash, two reads, and a lane-free comparison so the reads cannot be optimised away.
    #[inline]
    pub fn contains(&self, key: u64) -> bool {
        let (a, b, f) = self.indexes(key);
        (self.words[a] ^ self.words[b]) & 0xFFFF == f
    }

    /// [`contains`](Self::contains) over a slice, prefetching [`FLOOR_BATCH`] keys ahead: the
    /// same rolling window as our `contains_batch`.
    #[inline]
    pub fn contains_batch(&self, keys: &[u64], out: &mut [bool]) {
        let mut ring = [(0usize, 0usize, 0u64); FLOOR_BATCH];
        for (slot, &k) in ring.iter_mut().zip(keys) {
            *slot = self.indexes(k);
            prefetch(&self.words[slot.0]);
            prefetch(&self.words[slot.1]);
        }
        for (i, o) in out.iter_mut().enumerate().take(keys.len()) {
            let (a, b, f) = ring[i % FLOOR_BATCH];
            if let Some(&next) = keys.get(i + FLOOR_BATCH) {
                let n = self.indexes(next);
                prefetch(&self.words[n.0]);
                prefetch(&self.words[n.1]);
                ring[i % FLOOR_BATCH] = n;
            }
            *o = (self.words[a] ^ self.words[b]) & 0xFFFF == f;
        }
    }
}

/// The floor under any writer that changes a table with compare-and-swap, as every lock-free
/// filter must: hash the key with our hasher, load one pseudo-random word of an array as large as
/// our table, and compare-and-swap it. What one insert or remove of ours costs at least, beside
/// the reads of the two-read floor, which its lookups make on the same shared words.
pub struct CasFloor {
    words: Box<[AtomicU64]>,
    hasher: DefaultHashBuilder,
}

impl CasFloor {
    /// An array of `words` words, each written (so no page is a shared zero page).
    pub fn new(words: usize) -> Self {
        let words = (0..words as u64).map(|i| AtomicU64::new(mix(i) | 1)).collect();
        // `Default`, which every revision's hasher has: `paired.sh` builds this against them.
        Self { words, hasher: Default::default() }
    }

    /// Words in its array.
    pub fn words(&self) -> usize {
        self.words.len()
    }

    /// [`Floor::contains`] on the shared words: two Relaxed loads, so that a word another
    /// thread's [`write`](Self::write) changed costs the transfer of its cache line and nothing
    /// more.
    #[inline]
    pub fn contains(&self, key: u64) -> bool {
        let h = mix(self.hasher.hash_one(key));
        let n = self.words.len() as u128;
        let a = ((u128::from(h >> 16) * n) >> 48) as usize;
        let b = ((u128::from(h.wrapping_mul(GAMMA)) * n) >> 64) as usize;
        (self.words[a].load(Ordering::Relaxed) ^ self.words[b].load(Ordering::Relaxed)) & 0xFFFF
            == h & 0xFFFF
    }

    /// One load and one compare-and-swap of the key's word (the first word
    /// [`contains`](Self::contains) reads); whether the swap took.
    #[inline]
    pub fn write(&self, key: u64) -> bool {
        let h = mix(self.hasher.hash_one(key));
        let n = self.words.len() as u128;
        let word = &self.words[((u128::from(h >> 16) * n) >> 48) as usize];
        let seen = word.load(Ordering::Relaxed);
        word.compare_exchange(seen, seen ^ (h & 0xFFFF), Ordering::Release, Ordering::Relaxed)
            .is_ok()
    }
}

/// A read prefetch of the cache line holding `value` (a no-op off x86_64).
#[inline(always)]
pub fn prefetch<T>(value: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint: it never faults and reads nothing the program can observe;
    // the pointer comes from a live reference anyway.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>(value as *const T as *const i8);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = value;
}
