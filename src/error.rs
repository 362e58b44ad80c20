//! Typed errors.

use core::fmt;

use crate::stats::MAX_PATH_LEN;

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
    // The one place the documentation gives `MAX_PATH_LEN`; the message below is built from it.
    /// Neither of the item's buckets has a free lane and no cuckoo path of at most five
    /// relocations leads to one.
    Full,
}

impl fmt::Display for InsertError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Full => write!(
                f,
                "cuckoo filter is full: no free lane within {MAX_PATH_LEN_WORD} relocations of the \
                 item's buckets",
            ),
        }
    }
}

impl std::error::Error for InsertError {}

/// [`MAX_PATH_LEN`] in words, for the message of [`InsertError::Full`] (a longer limit fails the
/// build here).
const MAX_PATH_LEN_WORD: &str =
    ["no", "one", "two", "three", "four", "five", "six", "seven", "eight"][MAX_PATH_LEN];

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
    /// A growable filter's ceiling is below its starting size: the first table would already
    /// promise more items than [`Builder::max_capacity`](crate::Builder::max_capacity) or take
    /// more bytes than [`Builder::max_memory`](crate::Builder::max_memory).
    CeilingBelowCapacity {
        /// The builder setting: `"max_capacity"` or `"max_memory"`.
        setting: &'static str,
        /// Its value.
        limit: usize,
        /// What the first table promises (items) or takes (bytes).
        initial: usize,
    },
    /// The window of [`Builder::expire_after`](crate::Builder::expire_after) is below
    /// [`MIN_WINDOW`](crate::MIN_WINDOW).
    WindowTooShort {
        /// The window asked for.
        window: core::time::Duration,
    },
    /// [`Builder::expire_after`](crate::Builder::expire_after) was asked of a
    /// [`growable`](crate::Builder::growable) builder: a windowed filter has one table, sized
    /// for the items of 1.5 windows, and its expiry keeps it from filling.
    WindowWithGrowth,
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
            Self::CeilingBelowCapacity { setting, limit, initial } => write!(
                f,
                "the growable cuckoo filter's {setting} ({limit}) is below its first table's \
                 {initial}"
            ),
            Self::WindowTooShort { window } => write!(
                f,
                "a windowed cuckoo filter's window ({window:?}) is below {:?}",
                crate::MIN_WINDOW
            ),
            Self::WindowWithGrowth => {
                f.write_str("a windowed cuckoo filter cannot be growable: expiry keeps it in size")
            }
        }
    }
}

impl std::error::Error for BuildError {}

/// Why a snapshot could not be loaded by [`CuckooFilter::read_from`] or
/// [`CuckooFilter::from_bytes`] (or their `_with_hasher` forms). Each message says what was
/// expected and what was found.
///
/// [`CuckooFilter::read_from`]: crate::CuckooFilter::read_from
/// [`CuckooFilter::from_bytes`]: crate::CuckooFilter::from_bytes
///
/// # Examples
///
/// ```
/// use lockfree_cuckoo::{CuckooFilter, LoadError};
///
/// let err = CuckooFilter::from_bytes(b"not a snapshot").unwrap_err();
/// assert!(matches!(err, LoadError::BadMagic { .. }));
/// assert!(err.to_string().starts_with("not a cuckoo filter snapshot"));
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum LoadError {
    /// The input does not start with the snapshot magic bytes `89 43 55 43 4B 4F 4F 0A`
    /// (`"\x89CUCKOO\n"`).
    BadMagic {
        /// The first bytes of the input (up to eight).
        found: Vec<u8>,
    },
    /// The snapshot is in a format version this build does not read. Another version may map
    /// items to fingerprints and buckets differently, so its snapshot cannot be converted: the
    /// filter must be rebuilt from its items.
    UnsupportedVersion {
        /// The version in the snapshot.
        found: u16,
        /// The version this build reads.
        supported: u16,
    },
    /// The snapshot stores fingerprints in a layout other than sixteen bits (or seventeen:
    /// [`Encoding::SemiSorted`](crate::Encoding::SemiSorted)) in four lanes a bucket.
    UnsupportedLayout {
        /// Bits of a fingerprint in the snapshot (this build: 16, or 17).
        fingerprint_bits: u8,
        /// Lanes of a bucket in the snapshot (this build: 4).
        lanes: u8,
    },
    /// The input ends before the snapshot does.
    Truncated {
        /// The length the snapshot needs, in bytes (at least this many, when the header itself
        /// is cut short).
        expected: u64,
        /// The bytes that were there.
        found: u64,
    },
    /// More bytes follow the snapshot than its header accounts for
    /// ([`from_bytes`](crate::CuckooFilter::from_bytes) only; `read_from` leaves them unread).
    TrailingBytes {
        /// The snapshot's length according to its header.
        expected: u64,
        /// The input's length.
        found: u64,
    },
    /// The bytes differ from the bytes that were written: the CRC-64 they carry does not match
    /// their contents.
    ChecksumMismatch {
        /// The checksum recorded in the snapshot.
        expected: u64,
        /// The checksum of the bytes as read.
        found: u64,
    },
    /// The filter's hasher maps items differently from the hasher that saved the snapshot, so
    /// the loaded filter would answer false negatives.
    HasherMismatch {
        /// Which probe key disagreed (0 to 3; see `FORMAT.md`).
        probe: usize,
        /// The probe's hash recorded in the snapshot.
        expected: u64,
        /// The probe's hash under the hasher given to the load.
        found: u64,
    },
    /// A header field is out of range or contradicts the rest of the snapshot (for example an
    /// item count larger than the lanes, or not equal to the occupied lanes).
    InconsistentHeader {
        /// The field, as `FORMAT.md` names it.
        field: &'static str,
        /// What the field should have been.
        expected: String,
        /// The value in the snapshot.
        found: u64,
    },
    /// A lane of a bucket word holds 0xFFFF, a value no fingerprint takes: the snapshot was not
    /// written by this crate.
    ReservedFingerprint {
        /// The bucket whose word holds it.
        bucket: u64,
        /// The lane (0 to 3) that holds it.
        lane: u8,
    },
    /// A semi-sorted or windowed bucket word is not one this crate writes: a semi-sorted code
    /// names no set of nibbles, fingerprints are out of order, or one is a value no fingerprint
    /// takes.
    MalformedBucket {
        /// The bucket whose word it is, counted over every level, oldest first.
        bucket: u64,
    },
    /// The snapshot's buckets are in another [`Encoding`](crate::Encoding) than the
    /// [`Layout`](crate::Layout) of the filter it is loaded into: load it with
    /// [`Builder::layout`](crate::Builder::layout) set to the snapshot's.
    EncodingMismatch {
        /// The filter's encoding.
        expected: crate::encoding::Encoding,
        /// The snapshot's.
        found: crate::encoding::Encoding,
    },
    /// The table the snapshot describes could not be allocated.
    AllocationFailed {
        /// The size of the refused allocation.
        bytes: usize,
    },
    /// Reading the input failed.
    Io(std::io::Error),
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::BadMagic { found } => write!(
                f,
                "not a cuckoo filter snapshot: expected the magic bytes 89 43 55 43 4b 4f 4f 0a, \
                 found {}",
                HexBytes(found)
            ),
            Self::UnsupportedVersion { found, supported } => write!(
                f,
                "unsupported cuckoo filter snapshot format version: expected {supported} (the \
                 version this build reads), found {found}"
            ),
            Self::UnsupportedLayout { fingerprint_bits, lanes } => write!(
                f,
                "unsupported cuckoo filter snapshot layout: expected 16-bit fingerprints (or \
                 17-bit for semi-sorted buckets) in 4 lanes a bucket, found \
                 {fingerprint_bits}-bit fingerprints in {lanes} lanes"
            ),
            Self::Truncated { expected, found } => write!(
                f,
                "cuckoo filter snapshot truncated: expected at least {expected} bytes, found \
                 {found}"
            ),
            Self::TrailingBytes { expected, found } => write!(
                f,
                "bytes after the cuckoo filter snapshot: expected {expected} bytes, found {found}"
            ),
            Self::ChecksumMismatch { expected, found } => write!(
                f,
                "cuckoo filter snapshot corrupted: expected checksum {expected:#018x}, found \
                 {found:#018x}"
            ),
            Self::HasherMismatch { probe, expected, found } => write!(
                f,
                "cuckoo filter snapshot was saved with a different hasher: expected probe \
                 {probe} to hash to {expected:#018x}, found {found:#018x}"
            ),
            Self::InconsistentHeader { field, expected, found } => write!(
                f,
                "inconsistent cuckoo filter snapshot header: expected {field} {expected}, found \
                 {found}"
            ),
            Self::ReservedFingerprint { bucket, lane } => write!(
                f,
                "invalid cuckoo filter snapshot: expected fingerprints in 0x0001..=0xfffe or 0 for \
                 an empty lane, found 0xffff in lane {lane} of bucket {bucket}"
            ),
            Self::MalformedBucket { bucket } => write!(
                f,
                "invalid cuckoo filter snapshot: expected semi-sorted bucket words, found bucket \
                 {bucket} out of order or with an invalid code"
            ),
            Self::EncodingMismatch { expected, found } => write!(
                f,
                "cuckoo filter snapshot in another encoding: expected {expected} buckets, found \
                 {found}"
            ),
            Self::AllocationFailed { bytes } => {
                write!(f, "could not allocate {bytes} bytes for the cuckoo filter snapshot's table")
            }
            Self::Io(err) => write!(f, "could not read the cuckoo filter snapshot: {err}"),
        }
    }
}

impl std::error::Error for LoadError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Io(err) => Some(err),
            _ => None,
        }
    }
}

impl From<std::io::Error> for LoadError {
    fn from(err: std::io::Error) -> Self {
        Self::Io(err)
    }
}

/// Bytes as space-separated hex, or "nothing" when there are none.
struct HexBytes<'a>(&'a [u8]);

impl fmt::Display for HexBytes<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            return f.write_str("nothing");
        }
        for (k, byte) in self.0.iter().enumerate() {
            if k > 0 {
                f.write_str(" ")?;
            }
            write!(f, "{byte:02x}")?;
        }
        Ok(())
    }
}

/// Why [`CuckooFilter::merge`](crate::CuckooFilter::merge) stopped or did not start.
///
/// # Examples
///
/// ```
/// use lockfree_cuckoo::{CuckooFilter, MergeError};
///
/// let small = CuckooFilter::with_capacity(10);
/// let large = CuckooFilter::with_capacity(10_000);
/// let err = small.merge(&large).unwrap_err();
/// assert!(matches!(err, MergeError::BucketCountMismatch { .. }));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum MergeError {
    /// The filters have different bucket counts, so a fingerprint's buckets differ between them.
    /// Nothing was changed.
    BucketCountMismatch {
        /// Buckets of the filter merged into.
        ours: usize,
        /// Buckets of the filter merged from.
        theirs: usize,
    },
    /// The hashers map a probe key differently (the check a snapshot load makes; see
    /// `FORMAT.md`), so the same item would have different fingerprints. Nothing was changed.
    HasherMismatch {
        /// Which probe key disagreed (0 to 3).
        probe: usize,
    },
    /// The filters have different numbers of levels (one has grown more often than the other),
    /// so a fingerprint of one has no level of the same size in the other. Nothing was changed.
    LevelCountMismatch {
        /// Levels of the filter merged into.
        ours: usize,
        /// Levels of the filter merged from.
        theirs: usize,
    },
    /// The filter merged into ran out of room. The first `merged` fingerprints of the other
    /// filter were added; `remaining` were not. Nothing that was in either filter was lost.
    Full {
        /// Fingerprints added before the first refused one.
        merged: usize,
        /// Fingerprints of the other filter's copy not added.
        remaining: usize,
    },
}

impl fmt::Display for MergeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::LevelCountMismatch { ours, theirs } => write!(
                f,
                "cannot merge cuckoo filters that grew differently: {ours} levels here, {theirs} \
                 in the other filter"
            ),
            Self::BucketCountMismatch { ours, theirs } => write!(
                f,
                "cannot merge cuckoo filters of different sizes: {ours} buckets here, {theirs} in \
                 the other filter"
            ),
            Self::HasherMismatch { probe } => write!(
                f,
                "cannot merge cuckoo filters with different hashers: probe {probe} hashes \
                 differently"
            ),
            Self::Full { merged, remaining } => write!(
                f,
                "cuckoo filter full during a merge: {merged} fingerprints added, {remaining} not"
            ),
        }
    }
}

impl std::error::Error for MergeError {}

/// Why [`ChunkedSnapshot::write_next`](crate::ChunkedSnapshot::write_next) wrote nothing.
///
/// # Examples
///
/// ```
/// use lockfree_cuckoo::{ChunkError, CuckooFilter};
///
/// let filter = CuckooFilter::with_capacity(100);
/// let mut snapshot = filter.chunked_snapshot();
/// let other = CuckooFilter::with_capacity(100_000);
/// let refused = snapshot.write_next(&other, 1024, &mut Vec::new());
/// assert_eq!(refused, Err(ChunkError::Changed));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ChunkError {
    /// The filter is not the one the snapshot started from, or has been written since in a way
    /// the snapshot can see (a level added, a different item count at the end): the bytes
    /// would not load as that filter. Start a new snapshot.
    Changed,
    /// The output could not grow by the chunk.
    AllocationFailed {
        /// The bytes asked for.
        bytes: usize,
    },
}

impl fmt::Display for ChunkError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Changed => {
                f.write_str("the cuckoo filter changed during its chunked snapshot; start again")
            }
            Self::AllocationFailed { bytes } => {
                write!(f, "cannot allocate {bytes} bytes for a chunk of a snapshot")
            }
        }
    }
}

impl std::error::Error for ChunkError {}
