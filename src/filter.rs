//! [`CuckooFilter`]: the public face of the table.

use core::fmt;
use core::hash::{BuildHasher, Hash};

use crate::bucket::plain::Plain;
use crate::bucket::{Layout, LANES};
use crate::encoding::Encoding;
use crate::error::InsertError;
use crate::hash;
use crate::hasher::DefaultHashBuilder;
use crate::levels::Levels;
use crate::stats::Stats;

/// A concurrent cuckoo filter: an approximate set that any number of threads share through
/// `&self` (typically as `Arc<CuckooFilter>`), with no lock anywhere.
///
/// Lookups are wait-free and never give a false negative; inserts and removes are lock-free.
/// The filter is a multiset: an item inserted `k` times is present until removed `k` times. See
/// the [crate documentation](crate) for the guarantees in full.
///
/// `S` is the hasher ([`Builder::hasher`](crate::Builder::hasher)) and `E` the buckets' [`Layout`]
/// ([`Builder::layout`](crate::Builder::layout)): [`Plain`], the default, or
/// [`SemiSorted`](crate::SemiSorted). Every operation is compiled for the one layout.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use lockfree_cuckoo::CuckooFilter;
///
/// let filter = Arc::new(CuckooFilter::with_capacity(10_000));
/// let writer = {
///     let filter = Arc::clone(&filter);
///     std::thread::spawn(move || filter.insert(&42u64).unwrap())
/// };
/// writer.join().unwrap();
/// assert!(filter.contains(&42u64));
/// assert!(filter.remove(&42u64));
/// assert!(!filter.contains(&42u64));
/// ```
pub struct CuckooFilter<S = DefaultHashBuilder, E: Layout = Plain> {
    levels: Levels<E>,
    hasher: S,
}

impl<S: BuildHasher, E: Layout> CuckooFilter<S, E> {
    pub(crate) fn from_parts(levels: Levels<E>, hasher: S) -> Self {
        let levels = levels.with_outside(Self::OUTSIDE_LEVELS);
        Self { levels, hasher }
    }

    /// Bytes of a filter beyond its levels (its hasher).
    pub(crate) const OUTSIDE_LEVELS: usize =
        core::mem::size_of::<Self>() - core::mem::size_of::<Levels<E>>();

    pub(crate) fn levels(&self) -> &Levels<E> {
        &self.levels
    }

    /// The item's hash, mixed: what every level takes its slots from.
    #[inline]
    pub(crate) fn mixed_of<T: Hash + ?Sized>(&self, item: &T) -> u64 {
        hash::mix(self.hasher.hash_one(item))
    }

    /// Adds one copy of `item`.
    ///
    /// If neither of the item's buckets has a free lane, the insert searches for the shortest
    /// chain of relocations that frees one, up to the limit [`InsertError::Full`] gives, and
    /// commits it last hop first; every fingerprint stays in the table throughout.
    ///
    /// # Errors
    ///
    /// [`InsertError::Full`] when no such chain exists. The filter is then unchanged as a set:
    /// nothing was stored and nothing was lost. An item fits at most eight times (four lanes in
    /// each of its two buckets), and copies of items inserted several times each crowd their
    /// buckets below the capacity (the crate docs' "Multisets"). A growable filter grows when
    /// its newest level is full, and returns `Full` at its ceiling, when the next level cannot
    /// be allocated, and for a copy that the level holding the item's other copies refuses as a
    /// fixed filter would: the item's copies fill its buckets there, or that level is not full
    /// but has no lane in reach (crowded, counted in
    /// [`Stats::crowded_refusals`](crate::Stats::crowded_refusals)); likewise for a new item in
    /// a newest level that is crowded. Such refusals add no level and never put the copy in
    /// another one.
    ///
    /// The item is what its `Hash` impl writes, not its type: look it up with the type it was
    /// inserted as. Under the default hasher `insert(&1u32)` and `contains(&1u64)` are one
    /// item (integers write one zero-extended 64-bit word), but `"ab"` and `b"ab"` are not (a
    /// `str` ends with `0xFF`, a `[u8]` starts with its length), nor are `-1i32` and `-1i64`;
    /// under other hashers the widths may differ too. See the
    /// [crate documentation](crate#items-and-their-types).
    ///
    /// In a grown filter, the copy goes to the level that holds the item's other copies, so
    /// that its removes can take them (see [`remove`](Self::remove)), or is refused there; only
    /// when that level is full does it go where a new item's would (a match in a full level is
    /// as likely another item's false positive as a copy). If a remove of the item left a
    /// pending removal, the insert takes that copy back instead of storing another.
    ///
    /// # Examples
    ///
    /// ```
    /// use lockfree_cuckoo::CuckooFilter;
    ///
    /// let filter = CuckooFilter::with_capacity(100);
    /// filter.insert("apple")?;
    /// assert!(filter.contains("apple"));
    /// # Ok::<(), lockfree_cuckoo::InsertError>(())
    /// ```
    pub fn insert<T: Hash + ?Sized>(&self, item: &T) -> Result<(), InsertError> {
        let mixed = self.mixed_of(item);
        self.levels.insert(mixed)
    }

    /// Whether `item` may be present: `true` for every item inserted and not since removed, and
    /// for a small fraction of other items (the false-positive rate of the crate docs'
    /// "Guarantees", 0.0115% at the promised capacity).
    ///
    /// Wait-free: a bounded number of reads, whatever other threads do.
    ///
    /// # Examples
    ///
    /// ```
    /// use lockfree_cuckoo::CuckooFilter;
    ///
    /// let filter = CuckooFilter::with_capacity(100);
    /// filter.insert(&7u32).unwrap();
    /// assert!(filter.contains(&7u32));
    /// ```
    #[inline]
    pub fn contains<T: Hash + ?Sized>(&self, item: &T) -> bool {
        let mixed = self.mixed_of(item);
        self.levels.contains(mixed)
    }

    /// How many copies of `item` the filter holds: 0 to 8 (four lanes in each of its two
    /// buckets), in each level of a grown filter.
    ///
    /// Never fewer than the copies present throughout the call: an item inserted `k` times and
    /// removed fewer than `k` times counts at least the difference, also while other threads
    /// relocate fingerprints. It may count more: copies of colliding items (the same
    /// fingerprint and buckets, as rare as a false positive) count too, and a count that runs
    /// while another thread inserts or removes the item may or may not include that copy. In a
    /// grown filter, copies that removes of the item left pending (see
    /// [`remove`](Self::remove)) are not counted: after `k` inserts and `k` removes the count is
    /// 0 unless another item collides.
    ///
    /// Lock-free rather than wait-free like [`contains`](Self::contains): it reads again
    /// whenever a removal from the item's buckets was announced meanwhile, which means that
    /// another thread made progress.
    ///
    /// # Examples
    ///
    /// ```
    /// use lockfree_cuckoo::CuckooFilter;
    ///
    /// let filter = CuckooFilter::with_capacity(100);
    /// assert_eq!(filter.count("pear"), 0);
    /// filter.insert("pear").unwrap();
    /// filter.insert("pear").unwrap();
    /// assert_eq!(filter.count("pear"), 2);
    /// filter.remove("pear");
    /// assert_eq!(filter.count("pear"), 1);
    /// ```
    pub fn count<T: Hash + ?Sized>(&self, item: &T) -> usize {
        let mixed = self.mixed_of(item);
        self.levels.count(mixed)
    }

    /// Removes one copy of `item`, returning whether one was found.
    ///
    /// Like every cuckoo filter, this removes a matching *fingerprint*: removing an item that was
    /// never inserted may remove a different item that shares its fingerprint and buckets, which
    /// then reads as absent. Remove only what you inserted. If no matching fingerprint is
    /// present, returns `false` and changes nothing.
    ///
    /// In a grown filter ([`Builder::growable`](crate::Builder::growable)), a remove that finds
    /// matching fingerprints in more than one level cannot tell which is the item's, and one of
    /// them may be another item's only copy. It then takes none: it returns `true`, counts the
    /// item out of [`len`](Self::len) and [`count`](Self::count), and records a pending removal
    /// ([`Stats::pending_removals`](crate::Stats::pending_removals)); the item stays as a false
    /// positive until it is settled. Once every matching copy is some pending removal's, they
    /// are completed and a further remove returns `false`, so removes never run past the
    /// copies (removes of one item racing each other past its last copy may record one each
    /// before they see each other's). The item's next insert takes a pending copy back instead of
    /// storing another; the remove that makes the pending removals as many as the matching
    /// copies takes them all (they were the item's own, split across levels); and once one
    /// level alone matches (the colliding item was removed), the item's next remove, or the
    /// sweep before a growth or at the ceiling, frees them. Inserts keep an item's copies in one
    /// level, so this happens about as often as a false positive in another level, and to
    /// copies inserted while another thread grew the filter or while their item's level was
    /// full.
    ///
    /// # Examples
    ///
    /// ```
    /// use lockfree_cuckoo::CuckooFilter;
    ///
    /// let filter = CuckooFilter::with_capacity(100);
    /// filter.insert("a").unwrap();
    /// filter.insert("a").unwrap();
    /// assert!(filter.remove("a"));
    /// assert!(filter.contains("a")); // one copy left
    /// assert!(filter.remove("a"));
    /// assert!(!filter.remove("a"));
    /// ```
    pub fn remove<T: Hash + ?Sized>(&self, item: &T) -> bool {
        let mixed = self.mixed_of(item);
        self.levels.remove(mixed)
    }

    /// [`insert`](Self::insert) for an item whose 64-bit hash the caller already has.
    ///
    /// Low level: the hash need not be well mixed, not even in its low bits, since the filter
    /// mixes it (a bijection on `u64`) before taking a fingerprint and a bucket from it; raw
    /// integer keys work. What is still required is that distinct items have distinct hashes:
    /// items whose hashes are equal are the same item to the filter. Items hashed this way and
    /// items passed to [`insert`](Self::insert) only meet if the caller used the filter's own
    /// [`hasher`](Self::hasher).
    ///
    /// # Errors
    ///
    /// As [`insert`](Self::insert).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::hash::BuildHasher;
    /// use lockfree_cuckoo::CuckooFilter;
    ///
    /// let filter = CuckooFilter::with_capacity(100);
    /// let hash = filter.hasher().hash_one("key");
    /// filter.insert_hash(hash).unwrap();
    /// assert!(filter.contains("key"));
    /// ```
    pub fn insert_hash(&self, hash: u64) -> Result<(), InsertError> {
        let mixed = hash::mix(hash);
        self.levels.insert(mixed)
    }

    /// [`count`](Self::count) for a precomputed hash; see [`insert_hash`](Self::insert_hash).
    ///
    /// # Examples
    ///
    /// ```
    /// use lockfree_cuckoo::CuckooFilter;
    ///
    /// let filter = CuckooFilter::with_capacity(100);
    /// filter.insert_hash(42).unwrap();
    /// filter.insert_hash(42).unwrap();
    /// assert_eq!(filter.count_hash(42), 2);
    /// ```
    pub fn count_hash(&self, hash: u64) -> usize {
        let mixed = hash::mix(hash);
        self.levels.count(mixed)
    }

    /// [`contains`](Self::contains) for a precomputed hash; see [`insert_hash`](Self::insert_hash).
    ///
    /// # Examples
    ///
    /// ```
    /// use lockfree_cuckoo::CuckooFilter;
    ///
    /// let filter = CuckooFilter::with_capacity(100);
    /// filter.insert_hash(0x1234_5678_9abc_def0).unwrap();
    /// assert!(filter.contains_hash(0x1234_5678_9abc_def0));
    /// ```
    #[inline]
    pub fn contains_hash(&self, hash: u64) -> bool {
        let mixed = hash::mix(hash);
        self.levels.contains(mixed)
    }

    /// [`remove`](Self::remove) for a precomputed hash; see [`insert_hash`](Self::insert_hash).
    ///
    /// # Examples
    ///
    /// ```
    /// use lockfree_cuckoo::CuckooFilter;
    ///
    /// let filter = CuckooFilter::with_capacity(100);
    /// filter.insert_hash(99).unwrap();
    /// assert!(filter.remove_hash(99));
    /// assert!(!filter.contains_hash(99));
    /// ```
    pub fn remove_hash(&self, hash: u64) -> bool {
        let mixed = hash::mix(hash);
        self.levels.remove(mixed)
    }

    /// The hasher that maps items to fingerprints and buckets.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::hash::BuildHasher;
    /// use lockfree_cuckoo::CuckooFilter;
    ///
    /// let filter = CuckooFilter::with_capacity(10);
    /// assert_eq!(filter.hasher().hash_one(1u8), filter.hasher().hash_one(1u8));
    /// ```
    pub fn hasher(&self) -> &S {
        &self.hasher
    }
}

/// A consistent copy of a live filter, taken with the same one-pass scan as
/// [`write_to`](CuckooFilter::write_to): every item present throughout the clone (inserted before
/// it began and not removed before it ended) is in the copy, whatever other threads insert,
/// remove or relocate meanwhile; items inserted or removed during the clone may or may not be.
/// Other threads never wait for it. The copy has the filter's [`len`](CuckooFilter::len), and
/// its [`stats`](CuckooFilter::stats) carry the filter's
/// [`levels`](crate::Stats::levels) and [`retained_removals`](crate::Stats::retained_removals)
/// (pending removals come along as removals retained for good, so its
/// [`pending_removals`](crate::Stats::pending_removals) is 0); every other count starts from
/// zero.
///
/// # Panics
///
/// If the copy's table cannot be allocated, as `Vec::clone` does.
///
/// # Examples
///
/// ```
/// use lockfree_cuckoo::CuckooFilter;
///
/// let filter = CuckooFilter::with_capacity(1_000);
/// filter.insert("kept").unwrap();
/// let copy = filter.clone();
/// filter.remove("kept");
/// assert!(copy.contains("kept"));
/// assert_eq!(copy.len(), 1);
/// assert!(!filter.contains("kept"));
/// ```
impl<S: BuildHasher + Clone, E: Layout> Clone for CuckooFilter<S, E> {
    fn clone(&self) -> Self {
        let copy = self.levels.consistent_copy();
        let levels = copy.expect("cannot allocate the cloned table");
        Self { levels, hasher: self.hasher.clone() }
    }
}

impl<S, E: Layout> CuckooFilter<S, E> {
    /// Accepted inserts minus successful removes: exact when no insert or remove is in flight,
    /// approximate while they run.
    ///
    /// # Examples
    ///
    /// ```
    /// use lockfree_cuckoo::CuckooFilter;
    ///
    /// let filter = CuckooFilter::with_capacity(10);
    /// filter.insert("x").unwrap();
    /// filter.insert("x").unwrap();
    /// assert_eq!(filter.len(), 2);
    /// ```
    pub fn len(&self) -> usize {
        self.levels.len()
    }

    /// Whether the filter holds no fingerprint: no item was inserted, or every insert was
    /// undone by a remove whose copy is gone.
    ///
    /// It reads what the tables hold rather than [`len`](Self::len), so a filter whose removes
    /// left pending removals (a grown filter's, see [`remove`](Self::remove)) is not empty
    /// while their copies stay, though `len` counts them out: what decides that a dump has
    /// nothing to carry (the server's and the module's `CF.SCANDUMP`) never drops a
    /// fingerprint that is there. Exact when no insert or remove is in flight, like `len`.
    ///
    /// # Examples
    ///
    /// ```
    /// use lockfree_cuckoo::CuckooFilter;
    ///
    /// let filter = CuckooFilter::with_capacity(10);
    /// assert!(filter.is_empty());
    /// filter.insert("x").unwrap();
    /// assert!(!filter.is_empty());
    /// filter.remove("x");
    /// assert!(filter.is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.levels.is_empty()
    }

    /// How many distinct items the filter promises to accept: at least the capacity asked for.
    ///
    /// # Examples
    ///
    /// ```
    /// use lockfree_cuckoo::CuckooFilter;
    ///
    /// assert!(CuckooFilter::with_capacity(12_345).capacity() >= 12_345);
    /// ```
    pub fn capacity(&self) -> usize {
        self.levels.capacity()
    }

    /// Whether the filter adds levels when full ([`Builder::growable`](crate::Builder::growable),
    /// [`max_capacity`](crate::Builder::max_capacity), [`max_memory`](crate::Builder::max_memory),
    /// or a snapshot of such a filter), rather than refusing inserts.
    ///
    /// # Examples
    ///
    /// ```
    /// use lockfree_cuckoo::CuckooFilter;
    ///
    /// assert!(!CuckooFilter::with_capacity(10).is_growable());
    /// assert!(CuckooFilter::builder().capacity(10).growable().build().is_growable());
    /// ```
    pub fn is_growable(&self) -> bool {
        self.levels.growth().is_some()
    }

    /// The item ceiling of a growable filter ([`Builder::max_capacity`](crate::Builder::max_capacity),
    /// or the snapshot's), `None` when it has none or is fixed.
    ///
    /// # Examples
    ///
    /// ```
    /// use lockfree_cuckoo::CuckooFilter;
    ///
    /// let filter = CuckooFilter::builder().capacity(10).max_capacity(1_000).build();
    /// assert_eq!(filter.max_capacity(), Some(1_000));
    /// assert_eq!(filter.max_memory(), None);
    /// ```
    pub fn max_capacity(&self) -> Option<usize> {
        self.levels.growth().and_then(|ceiling| ceiling.items)
    }

    /// The byte ceiling of a growable filter ([`Builder::max_memory`](crate::Builder::max_memory),
    /// or the snapshot's): its [`memory_usage`](Self::memory_usage) never passes it. `None`
    /// when it has none or is fixed.
    ///
    /// # Examples
    ///
    /// ```
    /// use lockfree_cuckoo::CuckooFilter;
    ///
    /// let filter = CuckooFilter::builder().capacity(10).max_memory(1 << 20).build();
    /// assert_eq!(filter.max_memory(), Some(1 << 20));
    /// assert_eq!(CuckooFilter::with_capacity(10).max_memory(), None);
    /// ```
    pub fn max_memory(&self) -> Option<usize> {
        self.levels.growth().and_then(|ceiling| ceiling.bytes)
    }

    /// Stops a growable filter from adding levels once it has `levels` (clamped to 1 to 32;
    /// 1 stops growth, 32 is the most any filter has and the default): an insert that would
    /// need another level returns [`InsertError::Full`], losing
    /// nothing, as at a ceiling. It applies from the next growth on; levels already added stay.
    ///
    /// A setting of this filter in this process, for a host that bounds a filter's sub-filters
    /// (RedisBloom's `cf-max-expansions`): clones, snapshots and merges do not carry it. It does
    /// nothing to a fixed filter.
    ///
    /// # Examples
    ///
    /// ```
    /// use lockfree_cuckoo::CuckooFilter;
    ///
    /// let filter = CuckooFilter::builder().capacity(100).growable().build();
    /// filter.set_max_levels(2);
    /// let refused = (0..100_000u32).find(|key| filter.insert(key).is_err());
    /// assert!(refused.is_some());
    /// assert_eq!((filter.stats().levels, filter.max_levels()), (2, 2));
    /// filter.set_max_levels(3);
    /// assert!(filter.insert(&refused.unwrap()).is_ok());
    /// ```
    pub fn set_max_levels(&self, levels: usize) {
        self.levels.set_level_limit(levels);
    }

    /// The most levels this filter grows to ([`set_max_levels`](Self::set_max_levels)), 32
    /// unless set.
    ///
    /// # Examples
    ///
    /// ```
    /// use lockfree_cuckoo::CuckooFilter;
    ///
    /// assert_eq!(CuckooFilter::with_capacity(10).max_levels(), 32);
    /// ```
    pub fn max_levels(&self) -> usize {
        self.levels.level_limit()
    }

    /// The fraction of fingerprint lanes in use, [`len`](Self::len) over four lanes a bucket.
    /// The false-positive rate grows with it: about `8 × load / 65,532` (the crate docs'
    /// "Guarantees").
    ///
    /// # Examples
    ///
    /// ```
    /// use lockfree_cuckoo::CuckooFilter;
    ///
    /// let filter = CuckooFilter::with_capacity(1000);
    /// assert_eq!(filter.load_factor(), 0.0);
    /// filter.insert("a").unwrap();
    /// assert!(filter.load_factor() > 0.0);
    /// ```
    pub fn load_factor(&self) -> f64 {
        self.len() as f64 / (self.bucket_count() * LANES) as f64
    }

    /// Bytes the filter occupies: the table (8 bytes a bucket), its stripes, counters
    /// and the filter itself.
    ///
    /// # Examples
    ///
    /// ```
    /// use lockfree_cuckoo::CuckooFilter;
    ///
    /// let filter = CuckooFilter::with_capacity(1_000_000);
    /// let per_item = filter.memory_usage() as f64 / 1_000_000.0;
    /// assert!(per_item < 2.2, "{per_item}");
    /// ```
    pub fn memory_usage(&self) -> usize {
        self.levels.memory_usage()
    }

    /// The number of buckets (four lanes each).
    ///
    /// # Examples
    ///
    /// ```
    /// use lockfree_cuckoo::CuckooFilter;
    ///
    /// let filter = CuckooFilter::with_capacity(1000);
    /// assert!(filter.bucket_count() * 4 >= filter.capacity());
    /// ```
    pub fn bucket_count(&self) -> usize {
        self.levels.bucket_count()
    }

    /// How the filter's buckets hold their fingerprints: its [`Layout`]'s value.
    ///
    /// # Examples
    ///
    /// ```
    /// use lockfree_cuckoo::{CuckooFilter, Encoding};
    ///
    /// assert_eq!(CuckooFilter::with_capacity(10).encoding(), Encoding::Plain);
    /// ```
    pub const fn encoding(&self) -> Encoding {
        E::ENCODING
    }

    /// A snapshot of the operation counters: relocations, path lengths, refusals, conservative
    /// lookups, surplus removals.
    ///
    /// # Examples
    ///
    /// ```
    /// use lockfree_cuckoo::CuckooFilter;
    ///
    /// let filter = CuckooFilter::with_capacity(100);
    /// filter.insert("a").unwrap();
    /// assert_eq!(filter.stats().refused_inserts, 0);
    /// ```
    pub fn stats(&self) -> Stats {
        self.levels.stats()
    }

    /// Removes every item and resets the counters.
    ///
    /// # Examples
    ///
    /// ```
    /// use lockfree_cuckoo::CuckooFilter;
    ///
    /// let mut filter = CuckooFilter::with_capacity(100);
    /// filter.insert("a").unwrap();
    /// filter.clear();
    /// assert!(filter.is_empty());
    /// assert!(!filter.contains("a"));
    /// ```
    pub fn clear(&mut self) {
        self.levels.clear();
    }
}

impl<S, E: Layout> fmt::Debug for CuckooFilter<S, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CuckooFilter")
            .field("len", &self.len())
            .field("capacity", &self.capacity())
            .field("buckets", &self.bucket_count())
            .field("levels", &self.levels)
            .field("memory_usage", &self.memory_usage())
            .finish_non_exhaustive()
    }
}
