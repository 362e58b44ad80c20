//! Typed errors.

use core::fmt;

/// Why an insert was refused. The filter is unchanged: nothing was stored and nothing was lost.
///
/// # Examples
///
/// ```
/// use lockfree_cuckoo::{CuckooFilter, InsertError};
///
/// let filter = CuckooFilter::with_capacity(10);
/// // One item fits at most eight times: four lanes in each of its two buckets.
/// let refused = (0..20).map(|_| filter.insert("same")).find(Result::is_err);
/// assert_eq!(refused, Some(Err(InsertError::Full)));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum InsertError {
    /// Neither of the item's buckets has a free lane and no cuckoo path of at most five
    /// relocations leads to one.
    Full,
}

impl fmt::Display for InsertError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Full => f.write_str(
                "cuckoo filter is full: no free lane within five relocations of the item's buckets",
            ),
        }
    }
}

impl std::error::Error for InsertError {}

/// Why a filter could not be built.
///
/// # Examples
///
/// ```
/// use lockfree_cuckoo::{BuildError, CuckooFilter};
///
/// let err = CuckooFilter::builder().capacity(usize::MAX).try_build().unwrap_err();
/// assert!(matches!(err, BuildError::CapacityOverflow { .. }));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum BuildError {
    /// The table for the requested capacity would not fit in the address space.
    CapacityOverflow {
        /// The capacity that was asked for.
        requested: usize,
    },
    /// The allocator refused the table.
    AllocationFailed {
        /// The size of the refused allocation.
        bytes: usize,
    },
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::CapacityOverflow { requested } => {
                write!(f, "a cuckoo filter for {requested} items would not fit in memory")
            }
            Self::AllocationFailed { bytes } => {
                write!(f, "could not allocate {bytes} bytes for the cuckoo filter's table")
            }
        }
    }
}

impl std::error::Error for BuildError {}
