//! [`Builder`]: sizing and hasher choice for a [`CuckooFilter`].

use core::hash::BuildHasher;
use core::marker::PhantomData;
use core::time::Duration;

use crate::bucket::{plain::Plain, Layout};
use crate::error::BuildError;
use crate::filter::CuckooFilter;
use crate::hasher::DefaultHashBuilder;
use crate::levels::Levels;
use crate::sizing::Ceiling;
use crate::sizing::{buckets_for, capacity_of};
use crate::table::{Table, DEFAULT_LOOKUP_RETRIES};
use crate::windowed::WindowedBuilder;

/// Configures and builds a [`CuckooFilter`].
///
/// # Examples
///
/// ```
/// use lockfree_cuckoo::CuckooFilter;
///
/// let filter = CuckooFilter::builder()
///     .capacity(1_000)
///     .hasher(std::collections::hash_map::RandomState::new())
///     .build();
/// assert!(filter.capacity() >= 1_000);
/// ```
#[derive(Clone, Debug)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct Builder<S = DefaultHashBuilder, E: Layout = Plain> {
    pub(crate) capacity: usize,
    /// Exactly this many buckets, overriding the capacity (a test hook).
    pub(crate) buckets: Option<usize>,
    /// Validation attempts a lookup makes before answering `true` without proof.
    pub(crate) lookup_retries: u32,
    pub(crate) huge_pages: bool,
    pub(crate) growth: Option<Ceiling>,
    layout: PhantomData<E>,
    pub(crate) hasher: S,
}

impl Builder<DefaultHashBuilder> {
    /// A builder with the default hasher under a random key ([`DefaultHashBuilder::new`]),
    /// capacity 0, not growable: the same as [`CuckooFilter::builder`] and
    /// [`Builder::default`].
    ///
    /// # Examples
    ///
    /// ```
    /// use lockfree_cuckoo::Builder;
    ///
    /// let filter = Builder::new().capacity(1_000).build();
    /// assert!(filter.capacity() >= 1_000);
    /// ```
    pub fn new() -> Self {
        Self::with_hasher(DefaultHashBuilder::new())
    }
}

impl<E: Layout> Builder<DefaultHashBuilder, E> {
    /// Keys the default hasher with `seed` instead of a random key
    /// ([`DefaultHashBuilder::with_seed`]): filters built with one seed map every item alike, in
    /// every process, build and version, as shards to be [merged](CuckooFilter::merge) or
    /// replicas must. Anyone who knows the seed can aim items at chosen buckets (README,
    /// "Security"): keep it secret where clients choose the items.
    ///
    /// # Examples
    ///
    /// ```
    /// use lockfree_cuckoo::CuckooFilter;
    ///
    /// let a = CuckooFilter::builder().capacity(1_000).seed(42).build();
    /// let b = CuckooFilter::builder().capacity(1_000).seed(42).build();
    /// a.insert("left")?;
    /// b.insert("right")?;
    /// a.merge(&b)?;
    /// assert!(a.contains("right"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn seed(self, seed: u64) -> Self {
        self.hasher(DefaultHashBuilder::with_seed(seed))
    }
}

impl Default for Builder<DefaultHashBuilder> {
    /// [`Builder::new`]: the default hasher under a random key, capacity 0, not growable.
    ///
    /// # Examples
    ///
    /// ```
    /// use lockfree_cuckoo::Builder;
    ///
    /// let filter = Builder::default().capacity(100).build();
    /// assert!(filter.capacity() >= 100);
    /// ```
    fn default() -> Self {
        Self::new()
    }
}

impl<S> Builder<S> {
    /// A builder of plain filters with `hasher`, capacity 0, not growable.
    pub(crate) fn with_hasher(hasher: S) -> Self {
        Self {
            capacity: 0,
            buckets: None,
            lookup_retries: DEFAULT_LOOKUP_RETRIES,
            huge_pages: true,
            growth: None,
            layout: PhantomData,
            hasher,
        }
    }
}

impl<S: BuildHasher> Builder<S, Plain> {
    /// Builds a [`WindowedFilter`](crate::WindowedFilter) instead, whose items expire: each is present for at least
    /// `window` after its last insert, and gone at most 1.5 windows after it while the filter
    /// is maintained (crate docs, "Expiry"). The capacity counts the items inserted within any
    /// window; the table is sized for 1.6 times as many (a stream holds 1.5 windows of items at
    /// once), at about 3.4 bytes an item.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use lockfree_cuckoo::CuckooFilter;
    ///
    /// let recent = CuckooFilter::builder().capacity(1_000).expire_after(Duration::from_secs(60)).build();
    /// recent.insert("event-9")?;
    /// assert!(recent.contains("event-9"));
    /// # Ok::<(), lockfree_cuckoo::InsertError>(())
    /// ```
    pub fn expire_after(self, window: Duration) -> WindowedBuilder<S> {
        WindowedBuilder::new(self, window)
    }
}

impl<S: BuildHasher, E: Layout> Builder<S, E> {
    /// Sets how many distinct items the filter must accept (default 0: a one-bucket filter that
    /// holds four items).
    pub fn capacity(mut self, capacity: usize) -> Self {
        self.capacity = capacity;
        self
    }

    /// Sets the hasher that maps items to fingerprints and buckets.
    ///
    /// It must be deterministic for the filter's lifetime (every `BuildHasher` is), and the same
    /// in every process that shares a saved filter.
    pub fn hasher<T: BuildHasher>(self, hasher: T) -> Builder<T, E> {
        self.with_parameters(|_| hasher)
    }

    /// Sets how the buckets hold their fingerprints (default [`Plain`]). Given to
    /// a builder that [loads](Self::load) a snapshot, the snapshot must have it.
    ///
    /// [`SemiSorted`](crate::SemiSorted) halves the false-positive rate in the same memory, for
    /// costlier writes; `BENCHMARKS.md` ("Semi-sorted buckets") measures both.
    ///
    /// # Examples
    ///
    /// ```
    /// use lockfree_cuckoo::{CuckooFilter, Encoding, SemiSorted};
    ///
    /// let plain = CuckooFilter::with_capacity(1_000_000);
    /// let semi = CuckooFilter::builder().capacity(1_000_000).layout::<SemiSorted>().build();
    /// assert_eq!(semi.memory_usage(), plain.memory_usage());
    /// assert_eq!(semi.encoding(), Encoding::SemiSorted);
    /// ```
    pub fn layout<L: Layout>(self) -> Builder<S, L> {
        self.with_parameters(|hasher| hasher)
    }

    /// This builder's settings for a filter of layout `L`, with the hasher `hasher` makes of
    /// this one's.
    fn with_parameters<T, L: Layout>(self, hasher: impl FnOnce(S) -> T) -> Builder<T, L> {
        let Builder { capacity, buckets, lookup_retries, huge_pages, growth, .. } = self;
        let hasher = hasher(self.hasher);
        Builder {
            capacity,
            buckets,
            lookup_retries,
            huge_pages,
            growth,
            layout: PhantomData,
            hasher,
        }
    }

    /// Makes the filter growable: when an insert finds it full, it adds room instead of
    /// returning [`InsertError::Full`](crate::InsertError::Full)(crate::InsertError::Full), with no limit but memory
    /// ([`max_capacity`](Self::max_capacity) and [`max_memory`](Self::max_memory) set one).
    ///
    /// [`capacity`](Self::capacity) is then the starting size. The filter grows by adding a
    /// level, a table with four times the buckets of the newest one, while every thread goes on
    /// inserting, looking up and removing: no operation waits for a growth, no item moves and
    /// none is lost, lookups stay wait-free. The price of each level: a lookup of an absent item
    /// reads every level (a present one stops at the level that holds it, most often the
    /// newest), so does an insert (for the item's copies, which it joins), and the false-positive
    /// rate is the sum of the levels' (about 0.07% after
    /// growing 1,000 times, against 0.0115% for a filter built at its final size). Build at the
    /// expected size when it is known. Measurements: `BENCHMARKS.md`, "Growth".
    ///
    /// A growable filter still refuses inserts (`Full`) that add no level: a copy of an item
    /// that the level holding its other copies cannot take (its copies fill its buckets, at
    /// most eight, or that level is crowded around them), and an item refused by a newest level
    /// that is crowded rather than full (items aimed at a few buckets). So inserting one item
    /// many times, or a few buckets' worth of aimed items, grows nothing; see
    /// [`CuckooFilter::insert`](crate::CuckooFilter::insert) and the crate docs' "Multisets".
    ///
    /// # Examples
    ///
    /// ```
    /// use lockfree_cuckoo::CuckooFilter;
    ///
    /// let filter = CuckooFilter::builder().capacity(1_000).growable().build();
    /// for key in 0..100_000u64 {
    ///     filter.insert(&key)?; // never `Full`: the filter grows
    /// }
    /// assert!((0..100_000u64).all(|key| filter.contains(&key)));
    /// assert!(filter.capacity() >= 100_000);
    /// assert!(filter.stats().levels > 1);
    /// # Ok::<(), lockfree_cuckoo::InsertError>(())
    /// ```
    pub fn growable(mut self) -> Self {
        self.growth.get_or_insert_with(Ceiling::default);
        self
    }

    /// Makes the filter growable ([`growable`](Self::growable)) up to a capacity of `items`:
    /// it adds no level past the one that brings its capacity to `items`, and then returns
    /// [`InsertError::Full`](crate::InsertError::Full)(crate::InsertError::Full) when full, losing nothing.
    ///
    /// # Examples
    ///
    /// ```
    /// use lockfree_cuckoo::{CuckooFilter, InsertError};
    ///
    /// let filter = CuckooFilter::builder().capacity(100).max_capacity(2_000).build();
    /// let refused = (0..10_000u32).find(|key| filter.insert(key).is_err());
    /// assert!(refused.is_some());
    /// assert!(filter.len() >= 2_000);
    /// assert!(filter.capacity() < 2_100);
    /// assert_eq!(filter.insert(&refused.unwrap()), Err(InsertError::Full));
    /// ```
    pub fn max_capacity(mut self, items: usize) -> Self {
        self.growth.get_or_insert_with(Ceiling::default).items = Some(items);
        self
    }

    /// Makes the filter growable ([`growable`](Self::growable)) up to `bytes` of
    /// [`memory_usage`](CuckooFilter::memory_usage): a new level is made smaller to fit, and
    /// none is added when what fits is under a quarter of the newest level (it would cost every
    /// lookup of an absent item a level's reads for little room). Then inserts return
    /// [`InsertError::Full`](crate::InsertError::Full)(crate::InsertError::Full) when full, losing nothing.
    ///
    /// # Examples
    ///
    /// ```
    /// use lockfree_cuckoo::CuckooFilter;
    ///
    /// let filter = CuckooFilter::builder().capacity(1_000).max_memory(100_000).build();
    /// for key in 0..1_000_000u32 {
    ///     if filter.insert(&key).is_err() {
    ///         break;
    ///     }
    /// }
    /// assert!(filter.memory_usage() <= 100_000);
    /// assert!(filter.len() > 30_000);
    /// ```
    pub fn max_memory(mut self, bytes: usize) -> Self {
        self.growth.get_or_insert_with(Ceiling::default).bytes = Some(bytes);
        self
    }

    /// Whether a table of 2 MiB or more asks for huge pages (default `true`).
    ///
    /// On Linux such a table is mapped on a 2 MiB boundary and the kernel is advised
    /// (`madvise(MADV_HUGEPAGE)`) to back it with transparent huge pages. A lookup in a table
    /// larger than the CPU cache then misses the TLB far less often. What that gains depends on
    /// what a page walk costs on the machine: on the VMs of `BENCHMARKS.md`, with a 243 MiB
    /// table, from a few percent to a third off `contains` and up to half off
    /// `contains_batch`. The kernel decides: with transparent huge pages set to
    /// `never`, or when it has no free huge pages, the table gets ordinary pages, and nothing
    /// else changes. Elsewhere than Linux, and for smaller tables, the table is an ordinary heap
    /// allocation whatever this says.
    ///
    /// `false` keeps every table on the heap, for processes that account memory by page or
    /// that must not hold memory in 2 MiB units, or whose allocator must see every table (an
    /// engine module). Clones of the filter follow its setting; filters loaded from snapshots
    /// use huge pages unless loaded with [`load`](Self::load) from a builder that says `false`.
    ///
    /// # Examples
    ///
    /// ```
    /// use lockfree_cuckoo::CuckooFilter;
    ///
    /// let filter = CuckooFilter::builder().capacity(5_000_000).huge_pages(false).build();
    /// assert!(filter.capacity() >= 5_000_000);
    /// ```
    pub fn huge_pages(mut self, enabled: bool) -> Self {
        self.huge_pages = enabled;
        self
    }

    /// The hasher and the huge-page setting, for loading a snapshot with them.
    pub(crate) fn into_load_settings(self) -> (S, bool) {
        (self.hasher, self.huge_pages)
    }

    /// Builds the filter.
    ///
    /// # Panics
    ///
    /// If the table cannot be allocated; [`try_build`](Self::try_build) returns an error
    /// instead.
    pub fn build(self) -> CuckooFilter<S, E> {
        match self.try_build() {
            Ok(filter) => filter,
            Err(err) => panic!("{err}"),
        }
    }

    /// Builds the filter, or says why the table cannot be allocated.
    ///
    /// # Errors
    ///
    /// [`BuildError::CapacityOverflow`] when the table for the capacity exceeds the address
    /// space, [`BuildError::AllocationFailed`] when the allocator refuses it,
    /// [`BuildError::CeilingBelowCapacity`] when a growable filter's first table is already past
    /// its [`max_capacity`](Self::max_capacity) or [`max_memory`](Self::max_memory).
    ///
    /// # Examples
    ///
    /// ```
    /// use lockfree_cuckoo::{BuildError, CuckooFilter};
    ///
    /// let err = CuckooFilter::builder().capacity(5_000).max_capacity(1_000).try_build();
    /// assert!(matches!(err, Err(BuildError::CeilingBelowCapacity { .. })));
    /// ```
    pub fn try_build(self) -> Result<CuckooFilter<S, E>, BuildError> {
        let requested = self.capacity;
        let buckets = match self.buckets {
            Some(buckets) => buckets,
            None => buckets_for(requested).ok_or(BuildError::CapacityOverflow { requested })?,
        };
        if let Some(ceiling) = self.growth {
            let bytes = Levels::<E>::memory_for(buckets, CuckooFilter::<S, E>::OUTSIDE_LEVELS);
            let items = capacity_of(buckets);
            let over =
                [(ceiling.items, items, "max_capacity"), (ceiling.bytes, bytes, "max_memory")]
                    .into_iter()
                    .find(|&(limit, initial, _)| limit.is_some_and(|limit| initial > limit));
            if let Some((Some(limit), initial, setting)) = over {
                return Err(BuildError::CeilingBelowCapacity { setting, limit, initial });
            }
        }
        let table = Table::<E>::try_new(buckets, self.lookup_retries, self.huge_pages)?;
        Ok(CuckooFilter::from_parts(Levels::new(table, self.growth), self.hasher))
    }
}

impl CuckooFilter<DefaultHashBuilder> {
    /// A filter that accepts at least `capacity` distinct items, with the default hasher under a
    /// random key ([`DefaultHashBuilder::new`]).
    ///
    /// Inserts from several threads at once reach the capacity too. Past it, inserts succeed
    /// until the table is about 95% full and then return [`InsertError::Full`](crate::InsertError::Full).
    ///
    /// # Panics
    ///
    /// If the table cannot be allocated; use [`builder`](Self::builder) and
    /// [`Builder::try_build`] to get an error instead.
    ///
    /// # Examples
    ///
    /// ```
    /// use lockfree_cuckoo::CuckooFilter;
    ///
    /// let filter = CuckooFilter::with_capacity(1_000_000);
    /// assert!(filter.capacity() >= 1_000_000);
    /// assert!(filter.memory_usage() < 2_200_000);
    /// ```
    pub fn with_capacity(capacity: usize) -> Self {
        Self::builder().capacity(capacity).build()
    }

    /// A [`Builder`] with the default hasher under a random key, and capacity 0.
    ///
    /// # Examples
    ///
    /// ```
    /// use lockfree_cuckoo::CuckooFilter;
    ///
    /// let filter = CuckooFilter::builder().capacity(500).build();
    /// assert!(filter.capacity() >= 500);
    /// ```
    pub fn builder() -> Builder<DefaultHashBuilder> {
        Builder::new()
    }
}

impl Default for CuckooFilter<DefaultHashBuilder> {
    /// An empty filter of capacity 0 with the default hasher under a random key, as
    /// [`with_capacity(0)`](Self::with_capacity) builds it: one bucket, so it accepts four
    /// items ([`capacity`](Self::capacity) is 4), and it is not growable, so the next insert
    /// that finds no room returns [`InsertError::Full`](crate::InsertError::Full). Unlike an empty `HashSet`, it never
    /// grows on its own: build a [`growable`](Builder::growable) filter for that.
    ///
    /// # Panics
    ///
    /// If the table cannot be allocated.
    ///
    /// # Examples
    ///
    /// ```
    /// use lockfree_cuckoo::{CuckooFilter, InsertError};
    ///
    /// let filter = CuckooFilter::default();
    /// assert!(filter.is_empty());
    /// assert_eq!(filter.capacity(), 4);
    /// for key in 0..4u32 {
    ///     filter.insert(&key)?;
    /// }
    /// assert_eq!(filter.insert(&4u32), Err(InsertError::Full));
    /// # Ok::<(), InsertError>(())
    /// ```
    fn default() -> Self {
        Self::with_capacity(0)
    }
}

// These constructors take no value that names a layout, so they build plain filters (a
// default type parameter does not drive inference: were they generic over the layout,
// `CuckooFilter::with_capacity(n)` would not compile); `Builder::layout` builds the others.
impl<S: BuildHasher> CuckooFilter<S> {
    /// An empty filter of capacity 0 that hashes items with `hasher`: one bucket, four items,
    /// not growable, as [`Default`] builds with the default hasher. Use
    /// [`with_capacity_and_hasher`](Self::with_capacity_and_hasher) or
    /// [`Builder::hasher`] for a larger or growable one.
    ///
    /// # Panics
    ///
    /// If the table cannot be allocated.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::collections::hash_map::RandomState;
    /// use lockfree_cuckoo::CuckooFilter;
    ///
    /// let filter = CuckooFilter::with_hasher(RandomState::new());
    /// filter.insert("one")?;
    /// assert!(filter.contains("one"));
    /// assert_eq!(filter.capacity(), 4);
    /// # Ok::<(), lockfree_cuckoo::InsertError>(())
    /// ```
    pub fn with_hasher(hasher: S) -> Self {
        Self::with_capacity_and_hasher(0, hasher)
    }

    /// A filter that accepts at least `capacity` distinct items and hashes them with `hasher`,
    /// as [`with_capacity`](CuckooFilter::with_capacity) does with the default hasher.
    ///
    /// The hasher must be deterministic for the filter's lifetime, and the same in every
    /// process that shares its snapshots or merges with it ([`Builder::hasher`]).
    ///
    /// # Panics
    ///
    /// If the table cannot be allocated; use [`Builder::hasher`] and [`Builder::try_build`] to
    /// get an error instead.
    ///
    /// # Examples
    ///
    /// ```
    /// use lockfree_cuckoo::{CuckooFilter, DefaultHashBuilder};
    ///
    /// let a = CuckooFilter::with_capacity_and_hasher(1_000, DefaultHashBuilder::with_seed(9));
    /// let b = CuckooFilter::with_capacity_and_hasher(1_000, DefaultHashBuilder::with_seed(9));
    /// assert!(a.capacity() >= 1_000);
    /// b.insert(&7u64)?;
    /// a.merge(&b)?;
    /// assert!(a.contains(&7u64));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_capacity_and_hasher(capacity: usize, hasher: S) -> Self {
        Builder::with_hasher(hasher).capacity(capacity).build()
    }
}
