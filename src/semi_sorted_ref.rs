//! [`SemiSortedRef`]: a semi-sorted filter's item operations, compiled for its encoding alone.

use core::fmt;
use core::hash::{BuildHasher, Hash};

use crate::bucket::semi_sorted::SemiSorted;
use crate::error::InsertError;
use crate::filter::CuckooFilter;
use crate::hasher::DefaultHashBuilder;
use crate::levels::Levels;

/// A [`CuckooFilter`] with semi-sorted buckets ([`Encoding::SemiSorted`](crate::Encoding)), as a
/// handle whose type says so: from [`CuckooFilter::as_semi_sorted`].
///
/// The filter's own [`insert`](CuckooFilter::insert), [`contains`](CuckooFilter::contains),
/// [`count`](CuckooFilter::count) and [`remove`](CuckooFilter::remove) test the encoding on
/// every call, inline the plain filter's path and call the semi-sorted one. In a loop of single
/// lookups from a table larger than the cache, that call costs about a fifth of the rate
/// (`BENCHMARKS.md`, "Semi-sorted buckets"). This handle's methods are the same operations with
/// nothing to test, inlined into the caller's loop like the plain filter's: take it once, before
/// the loop. [`contains_batch`](CuckooFilter::contains_batch) tests the encoding once a batch and
/// needs no handle.
///
/// The handle is a pair of references: every guarantee of the filter holds, and operations
/// through it and through the filter, from any threads, are operations on the one filter.
///
/// # Examples
///
/// ```
/// use lockfree_cuckoo::{CuckooFilter, Encoding};
///
/// let filter = CuckooFilter::builder().capacity(1_000).encoding(Encoding::SemiSorted).build();
/// let semi = filter.as_semi_sorted().expect("built semi-sorted");
/// for key in 0..100u64 {
///     semi.insert(&key)?;
/// }
/// assert!((0..100u64).all(|key| semi.contains(&key)));
/// assert!(filter.contains(&7u64));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct SemiSortedRef<'a, S = DefaultHashBuilder> {
    filter: &'a CuckooFilter<S>,
    levels: &'a Levels<SemiSorted>,
}

impl<'a, S> SemiSortedRef<'a, S> {
    /// The handle on `filter`, whose levels are `levels`.
    pub(crate) fn new(filter: &'a CuckooFilter<S>, levels: &'a Levels<SemiSorted>) -> Self {
        Self { filter, levels }
    }

    /// The filter, for everything else it does.
    ///
    /// # Examples
    ///
    /// ```
    /// use lockfree_cuckoo::{CuckooFilter, Encoding};
    ///
    /// let filter = CuckooFilter::builder().capacity(1_000).encoding(Encoding::SemiSorted).build();
    /// let semi = filter.as_semi_sorted().unwrap();
    /// semi.insert("a")?;
    /// assert_eq!(semi.filter().len(), 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn filter(&self) -> &'a CuckooFilter<S> {
        self.filter
    }
}

impl<S: BuildHasher> SemiSortedRef<'_, S> {
    /// [`CuckooFilter::insert`].
    ///
    /// # Errors
    ///
    /// As [`CuckooFilter::insert`]: [`InsertError::Full`] when no relocation path frees a lane
    /// (a growable filter grows instead, up to its ceiling).
    ///
    /// # Examples
    ///
    /// ```
    /// use lockfree_cuckoo::{CuckooFilter, Encoding};
    ///
    /// let filter = CuckooFilter::builder().capacity(100).encoding(Encoding::SemiSorted).build();
    /// filter.as_semi_sorted().unwrap().insert(&1u32)?;
    /// assert!(filter.contains(&1u32));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn insert<T: Hash + ?Sized>(&self, item: &T) -> Result<(), InsertError> {
        self.levels.insert(self.filter.mixed_of(item))
    }

    /// [`CuckooFilter::contains`]: wait-free, never a false negative.
    ///
    /// # Examples
    ///
    /// ```
    /// use lockfree_cuckoo::{CuckooFilter, Encoding};
    ///
    /// let filter = CuckooFilter::builder().capacity(100).encoding(Encoding::SemiSorted).build();
    /// filter.insert(&1u32)?;
    /// let semi = filter.as_semi_sorted().unwrap();
    /// assert!(semi.contains(&1u32));
    /// assert!(!semi.contains(&2u32));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn contains<T: Hash + ?Sized>(&self, item: &T) -> bool {
        self.levels.contains(self.filter.mixed_of(item))
    }

    /// [`CuckooFilter::count`].
    ///
    /// # Examples
    ///
    /// ```
    /// use lockfree_cuckoo::{CuckooFilter, Encoding};
    ///
    /// let filter = CuckooFilter::builder().capacity(100).encoding(Encoding::SemiSorted).build();
    /// let semi = filter.as_semi_sorted().unwrap();
    /// semi.insert("pear")?;
    /// semi.insert("pear")?;
    /// assert_eq!(semi.count("pear"), 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn count<T: Hash + ?Sized>(&self, item: &T) -> usize {
        self.levels.count(self.filter.mixed_of(item))
    }

    /// [`CuckooFilter::remove`]: remove only what you inserted.
    ///
    /// # Examples
    ///
    /// ```
    /// use lockfree_cuckoo::{CuckooFilter, Encoding};
    ///
    /// let filter = CuckooFilter::builder().capacity(100).encoding(Encoding::SemiSorted).build();
    /// let semi = filter.as_semi_sorted().unwrap();
    /// semi.insert("a")?;
    /// assert!(semi.remove("a"));
    /// assert!(!semi.remove("a"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn remove<T: Hash + ?Sized>(&self, item: &T) -> bool {
        self.levels.remove(self.filter.mixed_of(item))
    }
}

impl<S> Clone for SemiSortedRef<'_, S> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<S> Copy for SemiSortedRef<'_, S> {}

impl<S> fmt::Debug for SemiSortedRef<'_, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SemiSortedRef").field("filter", self.filter).finish()
    }
}
