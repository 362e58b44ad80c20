//! Batched lookups: hash ahead, prefetch both buckets of each item, then check them.
//!
//! A lookup in a table larger than the cache waits about 100 ns for its two bucket words. A batch
//! keeps a window of [`AHEAD`] items in flight: it hashes item `i + AHEAD` and asks the CPU to
//! start loading its buckets, then checks item `i`, whose buckets were requested `AHEAD` items
//! earlier and have usually arrived. Each check is the same validated lookup as
//! [`CuckooFilter::contains`], so the answers are the same, item by item.

use core::hash::{BuildHasher, Hash};

use crate::bucket::{BucketEncoding, Layout};
use crate::filter::CuckooFilter;
use crate::hash;
use crate::levels::Levels;

/// Items hashed and prefetched ahead of the one being checked (a power of two).
const AHEAD: usize = 16;

impl<S: BuildHasher, E: Layout> CuckooFilter<S, E> {
    /// [`contains`](Self::contains) for every item of `items`, answers in `out`: `out[i]` is
    /// `contains(&items[i])`.
    ///
    /// Faster than a loop of `contains` on filters larger than the CPU cache: it prefetches the
    /// buckets of the next items while it checks the current one, so the memory latencies of
    /// several lookups overlap. It allocates nothing. Every answer is its own wait-free,
    /// validated lookup with the guarantees of `contains` (no false negatives); a batch is not a
    /// snapshot, so items inserted or removed by other threads during the call may be seen by
    /// some lookups and not others.
    ///
    /// An item hashes as `T`: a batch of `&str` agrees with `contains::<str>`, since `&T` hashes
    /// as `T`.
    ///
    /// # Panics
    ///
    /// If `items` and `out` differ in length.
    ///
    /// # Examples
    ///
    /// ```
    /// use lockfree_cuckoo::CuckooFilter;
    ///
    /// let filter = CuckooFilter::with_capacity(1_000);
    /// filter.insert(&2u64).unwrap();
    /// filter.insert(&3u64).unwrap();
    ///
    /// let keys = [1u64, 2, 3, 4];
    /// let mut found = [false; 4];
    /// filter.contains_batch(&keys, &mut found);
    /// assert_eq!(found, [false, true, true, false]);
    ///
    /// // Reuse one buffer for a stream of lookups.
    /// let words = ["apple", "pear"];
    /// filter.insert("pear").unwrap();
    /// filter.contains_batch(&words, &mut found[..2]);
    /// assert_eq!(found[..2], [false, true]);
    /// ```
    pub fn contains_batch<T: Hash>(&self, items: &[T], out: &mut [bool]) {
        assert_eq!(items.len(), out.len(), "contains_batch: items and out differ in length");
        lookups(self.levels(), |i| self.mixed_of(&items[i]), out);
    }

    /// [`contains_batch`](Self::contains_batch) for precomputed hashes; see
    /// [`insert_hash`](Self::insert_hash).
    ///
    /// # Panics
    ///
    /// If `hashes` and `out` differ in length.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::hash::BuildHasher;
    /// use lockfree_cuckoo::CuckooFilter;
    ///
    /// let filter = CuckooFilter::with_capacity(1_000);
    /// let hashes: Vec<u64> = (0..8u32).map(|i| filter.hasher().hash_one(i)).collect();
    /// for &h in &hashes[..4] {
    ///     filter.insert_hash(h).unwrap();
    /// }
    /// let mut found = vec![false; hashes.len()];
    /// filter.contains_hash_batch(&hashes, &mut found);
    /// assert!(found[..4].iter().all(|&f| f));
    /// ```
    pub fn contains_hash_batch(&self, hashes: &[u64], out: &mut [bool]) {
        assert_eq!(hashes.len(), out.len(), "contains_hash_batch: hashes and out differ in length");
        lookups(self.levels(), |i| hash::mix(hashes[i]), out);
    }
}

impl<S: BuildHasher, E: Layout> CuckooFilter<S, E> {
    /// [`insert`](Self::insert) for every item of `items`, in order, prefetching the buckets of
    /// the items ahead as [`contains_batch`](Self::contains_batch) does. Returns how many items,
    /// from the front, were inserted: all of them, or fewer when the filter refused
    /// `items[returned]` as full (that item and the ones after it were not inserted).
    ///
    /// Much faster than a loop of `insert` on filters larger than the CPU cache, where a scalar
    /// insert waits for its bucket to arrive before its compare-and-swap, and that
    /// compare-and-swap keeps the next insert from starting early. Each item is inserted with
    /// the guarantees of `insert`; the batch as a whole is not atomic.
    ///
    /// # Examples
    ///
    /// ```
    /// use lockfree_cuckoo::CuckooFilter;
    ///
    /// let filter = CuckooFilter::with_capacity(1_000);
    /// let keys: Vec<u64> = (0..500).collect();
    /// assert_eq!(filter.insert_batch(&keys), keys.len());
    /// assert!(keys.iter().all(|k| filter.contains(k)));
    ///
    /// // A full filter stops the batch at the first item it refuses.
    /// let tiny = CuckooFilter::with_capacity(8);
    /// let many: Vec<u32> = (0..1_000).collect();
    /// let stored = tiny.insert_batch(&many);
    /// assert!(stored < many.len());
    /// assert_eq!(tiny.len(), stored);
    /// ```
    #[must_use = "fewer items than given were inserted when the filter is full"]
    pub fn insert_batch<T: Hash>(&self, items: &[T]) -> usize {
        let mixed_at = |i: usize| self.mixed_of(&items[i]);
        inserts(self.levels(), items.len(), mixed_at)
    }
}

/// Inserts item `i` for every `i` in `0..len`, prefetching [`AHEAD`] items ahead, until one is
/// refused; `mixed_at(i)` is item `i`'s mixed hash. Returns how many were stored.
#[inline]
fn inserts<E: BucketEncoding>(
    levels: &Levels<E>,
    len: usize,
    mixed_at: impl Fn(usize) -> u64,
) -> usize {
    if levels.growth().is_none() {
        let table = levels.level_0();
        let slots_at = |i| table.slots(mixed_at(i));
        return pipelined(
            len,
            slots_at,
            |s| table.prefetch(s),
            |_, slots| table.insert(slots).is_ok(),
        );
    }
    pipelined(
        len,
        mixed_at,
        |m| levels.prefetch_for_insert(m),
        |_, mixed| levels.insert(mixed).is_ok(),
    )
}

/// Answers `out[i] = contains(item i)` for every `i`, prefetching [`AHEAD`] items ahead; `mixed_at(i)`
/// is item `i`'s mixed hash. A filter that has one level keeps each item's slots in the window;
/// one with more reads its levels once ([`Levels::chain`]), keeps the mixed hash, prefetches the
/// item's buckets in the levels [`Chain::prefetch`](crate::levels::Chain::prefetch) names, and
/// looks it up in every level as `contains` does.
#[inline]
fn lookups<E: BucketEncoding>(
    levels: &Levels<E>,
    mixed_at: impl Fn(usize) -> u64,
    out: &mut [bool],
) {
    if let Some(table) = levels.single() {
        let slots_at = |i| table.slots(mixed_at(i));
        pipelined(
            out.len(),
            slots_at,
            |s| table.prefetch(s),
            |i, slots| {
                // SAFETY: `slots_at` takes the slots from this table's `slots`.
                out[i] = unsafe { table.contains_at(slots) };
                true
            },
        );
        return;
    }
    grown_lookups(levels, mixed_at, out);
}

/// [`lookups`] in a grown filter, out of line: inlined, the chain's lookup loop would take the
/// registers of the one-level loop above, and a fixed filter's batches would pay for a chain they
/// never read.
#[inline(never)]
fn grown_lookups<E: BucketEncoding>(
    levels: &Levels<E>,
    mixed_at: impl Fn(usize) -> u64,
    out: &mut [bool],
) {
    let chain = levels.chain();
    pipelined(
        out.len(),
        mixed_at,
        |m| chain.prefetch(m),
        |i, mixed| {
            out[i] = chain.lookup(mixed);
            true
        },
    );
}

/// Calls `visit(i, key_at(i))` for `i` in `0..len`, in order, with `prefetch` called on the keys
/// of the next [`AHEAD`] items meanwhile. Stops at the first `i` for which `visit` returns false
/// and returns it; returns `len` if none did.
#[inline]
fn pipelined<K: Copy + Default>(
    len: usize,
    mut key_at: impl FnMut(usize) -> K,
    prefetch: impl Fn(K),
    mut visit: impl FnMut(usize, K) -> bool,
) -> usize {
    let mut ring = [K::default(); AHEAD];
    for (i, slot) in ring.iter_mut().enumerate().take(len) {
        *slot = key_at(i);
        prefetch(*slot);
    }
    for i in 0..len {
        let current = ring[i % AHEAD];
        if i + AHEAD < len {
            let next = key_at(i + AHEAD);
            prefetch(next);
            ring[i % AHEAD] = next;
        }
        if !visit(i, current) {
            return i;
        }
    }
    len
}
