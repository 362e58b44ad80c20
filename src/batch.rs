//! Batched lookups: hash ahead, prefetch both buckets of each item, then check them.
//!
//! A lookup in a table larger than the cache waits about 100 ns for its two bucket words. A batch
//! keeps a window of items in flight (`pipeline`), dispatched as single operations are
//! (`levels`). Each check is the same validated lookup as [`CuckooFilter::contains`], so the
//! answers are the same, item by item.

use core::hash::{BuildHasher, Hash};

use crate::bucket::Layout;
use crate::filter::CuckooFilter;
use crate::hash;

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
        self.levels().contains_batch(|i| self.mixed_of(&items[i]), out);
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
        self.levels().contains_batch(|i| hash::mix(hashes[i]), out);
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
        self.levels().insert_batch(items.len(), mixed_at)
    }
}
