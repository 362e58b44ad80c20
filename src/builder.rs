//! [`Builder`]: sizing and hasher choice for a [`CuckooFilter`].

use core::hash::BuildHasher;

use crate::error::BuildError;
use crate::filter::CuckooFilter;
use crate::hash::DefaultHashBuilder;
use crate::sizing::{buckets_for, capacity_of};
use crate::table::{Table, DEFAULT_LOOKUP_RETRIES};

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
pub struct Builder<S = DefaultHashBuilder> {
    capacity: usize,
    buckets: Option<usize>,
    lookup_retries: u32,
    huge_pages: bool,
    hasher: S,
}

impl Builder<DefaultHashBuilder> {
    pub(crate) fn new() -> Self {
        Self {
            capacity: 0,
            buckets: None,
            lookup_retries: DEFAULT_LOOKUP_RETRIES,
            huge_pages: true,
            hasher: DefaultHashBuilder::default(),
        }
    }
}

impl<S: BuildHasher> Builder<S> {
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
    pub fn hasher<T: BuildHasher>(self, hasher: T) -> Builder<T> {
        Builder {
            capacity: self.capacity,
            buckets: self.buckets,
            lookup_retries: self.lookup_retries,
            huge_pages: self.huge_pages,
            hasher,
        }
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
    /// that must not hold memory in 2 MiB units. Clones of the filter follow its setting;
    /// filters loaded from snapshots use huge pages.
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

    /// **Unstable, for tests** (feature `test-hooks`): use exactly `buckets` buckets (at least
    /// 1), overriding the capacity.
    #[cfg(feature = "test-hooks")]
    #[cfg_attr(docsrs, doc(cfg(feature = "test-hooks")))]
    pub fn bucket_count(mut self, buckets: usize) -> Self {
        self.buckets = Some(buckets.max(1));
        self
    }

    /// **Unstable, for tests** (feature `test-hooks`): validation attempts a lookup makes
    /// before answering `true` without proof (default 8).
    #[cfg(feature = "test-hooks")]
    #[cfg_attr(docsrs, doc(cfg(feature = "test-hooks")))]
    pub fn lookup_retries(mut self, retries: u32) -> Self {
        self.lookup_retries = retries;
        self
    }

    /// Builds the filter.
    ///
    /// # Panics
    ///
    /// If the table cannot be allocated; [`try_build`](Self::try_build) returns an error
    /// instead.
    pub fn build(self) -> CuckooFilter<S> {
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
    /// space, [`BuildError::AllocationFailed`] when the allocator refuses it.
    pub fn try_build(self) -> Result<CuckooFilter<S>, BuildError> {
        let requested = self.capacity;
        let buckets = match self.buckets {
            Some(buckets) => buckets,
            None => buckets_for(requested).ok_or(BuildError::CapacityOverflow { requested })?,
        };
        let table = Table::try_new(buckets, self.lookup_retries, self.huge_pages)?;
        let capacity = capacity_of(buckets);
        Ok(CuckooFilter::from_parts(table, self.hasher, capacity))
    }
}
