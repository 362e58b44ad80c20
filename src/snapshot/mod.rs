//! Snapshots: saving a filter to bytes and loading it back, also while other threads update it.
//!
//! The byte format is specified in `FORMAT.md` at the repository root, and [`format`](mod@format)
//! is its only reader and writer. In short: a 72-byte header (magic, format version, fingerprint
//! layout, bucket count, item count, hasher probes, the default hasher's seed), the bucket words
//! in little-endian, and a CRC-64 of everything before it. This module is the public API on top of it.
//!
//! # Saving a live table
//!
//! The words come from one pass of [`Table::scan`](crate::table), which writers that remove a
//! fingerprint during the pass help by copying the bucket into the scan first; see that module
//! for the argument that every item present when the scan starts is in the copy. The copy is
//! taken into a private buffer, then encoded and written, so a slow writer never slows the
//! filter's users.

mod chunked;
pub(crate) mod format;

pub use chunked::ChunkedSnapshot;

#[cfg(feature = "serde")]
mod serde_bytes;

use core::hash::BuildHasher;
use std::io::{self, Read, Write};

use crate::bucket::{BucketEncoding, Layout};
use crate::builder::Builder;
use crate::encoding::Encoding;
use crate::error::LoadError;
use crate::filter::CuckooFilter;
use crate::hasher::DefaultHashBuilder;
use crate::levels::Levels;
use crate::table::{Table, DEFAULT_LOOKUP_RETRIES};

/// Bytes of a snapshot's start that [`encoding_of_snapshot`] reads: 12.
pub const ENCODING_PREFIX_LEN: usize = format::ENCODING_PREFIX_LEN;

/// The encoding of the snapshot (`FORMAT.md`) that starts with `prefix`, its first
/// [`ENCODING_PREFIX_LEN`] bytes or more: for a front-end that stores filters of either
/// [`Layout`], to choose the one to load it with ([`Builder::layout`]).
///
/// # Errors
///
/// The [`LoadError`] a load gives for those bytes: [`BadMagic`](LoadError::BadMagic),
/// [`Truncated`](LoadError::Truncated) (a shorter prefix),
/// [`UnsupportedVersion`](LoadError::UnsupportedVersion) or
/// [`UnsupportedLayout`](LoadError::UnsupportedLayout). A load may still refuse the rest.
///
/// # Examples
///
/// ```
/// use lockfree_cuckoo::{encoding_of_snapshot, CuckooFilter, Encoding, SemiSorted};
///
/// let semi = CuckooFilter::builder().layout::<SemiSorted>().build();
/// assert_eq!(encoding_of_snapshot(&semi.to_bytes())?, Encoding::SemiSorted);
/// assert!(encoding_of_snapshot(b"not a snapshot").is_err());
/// # Ok::<(), lockfree_cuckoo::LoadError>(())
/// ```
pub fn encoding_of_snapshot(prefix: &[u8]) -> Result<Encoding, LoadError> {
    format::encoding_of_prefix(prefix)
}

/// What [`CuckooFilter::write_to`] wrote.
///
/// # Examples
///
/// ```
/// use lockfree_cuckoo::CuckooFilter;
///
/// let filter = CuckooFilter::with_capacity(100);
/// filter.insert("a")?;
/// let mut out = Vec::new();
/// let info = filter.write_to(&mut out)?;
/// assert_eq!(info.bytes, out.len() as u64);
/// assert_eq!(info.items, 1);
/// assert_eq!(info.buckets, filter.bucket_count() as u64);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct SnapshotInfo {
    /// Bytes written: the whole snapshot.
    pub bytes: u64,
    /// Buckets written.
    pub buckets: u64,
    /// Items written: the occupied fingerprint lanes of the copy, less the fingerprints that
    /// removes in a grown filter kept ([`Stats::retained_removals`](crate::Stats)), which is
    /// what a filter loaded from it reports as its [`len`](CuckooFilter::len).
    pub items: u64,
    /// Buckets that other threads copied into the snapshot on its behalf, because they removed a
    /// fingerprint from the bucket while the snapshot's pass ran (0 on a filter nobody updates).
    pub captured_by_writers: u64,
}

impl<S: BuildHasher + 'static, E: Layout> CuckooFilter<S, E> {
    /// Writes a snapshot of the filter to `w`, in the format of `FORMAT.md`.
    ///
    /// Safe on a live filter: other threads may insert, remove and relocate meanwhile.
    ///
    /// - **Guarantee.** Every item whose insert returned before `write_to` was called, and that
    ///   no remove takes before `write_to` returns, is present in a filter loaded from the
    ///   snapshot, whatever relocations, inserts and removes (of the same key or of colliding
    ///   ones) run meanwhile.
    /// - Inserts and removes that run concurrently with the snapshot may or may not show in it.
    /// - A relocation in flight may be captured with its fingerprint in both of its buckets, and
    ///   a remove during the snapshot may be captured before it took its copy: the loaded filter
    ///   then holds a surplus copy of that item, which takes one extra remove to disappear. The
    ///   item count written is the number of occupied lanes written, surplus copies included, so
    ///   it can differ from [`len`](Self::len) while updates run. A snapshot of a filter nobody
    ///   updates is exact.
    /// - **Cost.** One pass over the table into a private buffer (8 bytes a bucket, the size of
    ///   the table), about 0.4 ms per million items, then encoding and writing with the
    ///   checksum. No operation on the filter waits for it: lookups are untouched, and a remove
    ///   or relocation that takes a fingerprint out of a bucket during the pass first copies that
    ///   bucket into the snapshot (a load and a compare-and-swap). Snapshots of one filter take
    ///   turns: a second `write_to` that starts during a pass waits for that pass to end.
    ///
    /// The hasher is not written, only hashes of four fixed probe keys under it; see
    /// [`read_from_with_hasher`](Self::read_from_with_hasher). The default hasher's seed is
    /// written, so the snapshot loads into an equal filter anywhere: whoever reads a snapshot
    /// learns the key, and with it where any item lands (README, "Security").
    ///
    /// # Errors
    ///
    /// Any error from `w`, which then holds part of a snapshot; an
    /// [`io::ErrorKind::OutOfMemory`] error if the copy of the table cannot be allocated.
    ///
    /// # Examples
    ///
    /// ```
    /// use lockfree_cuckoo::CuckooFilter;
    ///
    /// let filter = CuckooFilter::with_capacity(1_000);
    /// filter.insert("apple")?;
    ///
    /// let mut saved = Vec::new(); // or a `File`, a `BufWriter`, a socket
    /// filter.write_to(&mut saved)?;
    ///
    /// let loaded = CuckooFilter::read_from(saved.as_slice())?;
    /// assert!(loaded.contains("apple"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn write_to(&self, w: impl Write) -> io::Result<SnapshotInfo> {
        write_levels(self.levels(), w, self.hasher())
    }

    /// A snapshot of the filter as bytes: [`write_to`](Self::write_to) into a `Vec`, with the
    /// same guarantee on a live filter.
    ///
    /// # Panics
    ///
    /// If the snapshot does not fit in memory (as any `Vec` allocation).
    ///
    /// # Examples
    ///
    /// ```
    /// use lockfree_cuckoo::CuckooFilter;
    ///
    /// let filter = CuckooFilter::with_capacity(100);
    /// filter.insert(&7u64)?;
    /// let bytes = filter.to_bytes();
    /// assert_eq!(bytes.len(), 80 + 8 * filter.bucket_count());
    /// assert!(CuckooFilter::from_bytes(&bytes)?.contains(&7u64));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn to_bytes(&self) -> Vec<u8> {
        // No overflow: the tables themselves, 8 bytes a bucket, fit in the address space.
        let block = format::Block::levels(self.levels().growth(), 0).len(self.stats().levels);
        let len = format::snapshot_len(self.bucket_count() as u64, block) as usize;
        let mut bytes = Vec::with_capacity(len);
        match self.write_to(&mut bytes) {
            Ok(_) => bytes,
            // Writing into a `Vec` cannot fail; only the copy of the table can.
            Err(err) => panic!("cannot snapshot the cuckoo filter: {err}"),
        }
    }
}

// The loads that name no layout load plain filters (see `filter.rs`); `Builder::layout` loads
// the others.
impl<S: BuildHasher + 'static> CuckooFilter<S> {
    /// Loads a snapshot written by [`write_to`](Self::write_to) or
    /// [`to_bytes`](Self::to_bytes), with `hasher` as the filter's hasher.
    ///
    /// Reads exactly one snapshot and nothing after it, so snapshots can be concatenated in one
    /// stream. Memory grows with the data that actually arrives: a header that claims a huge
    /// table over a short stream fails with [`LoadError::Truncated`] having allocated no more
    /// than about twice what was read.
    ///
    /// `hasher` must map items exactly as the saving filter's hasher did, or the loaded filter
    /// would answer false negatives. The snapshot records the hashes of four fixed probe keys;
    /// a hasher that disagrees on any of them is refused with [`LoadError::HasherMismatch`]. A
    /// hasher that agrees on the probes but not on other keys cannot be detected: use the same
    /// hasher type, with the same keys, as the saving process. A [`DefaultHashBuilder`] takes
    /// the key the snapshot records, whatever key it had.
    ///
    /// # Errors
    ///
    /// A [`LoadError`] saying what was expected and what was found: not a snapshot
    /// ([`BadMagic`](LoadError::BadMagic)), a format version or layout this build does not read,
    /// an input that ends early ([`Truncated`](LoadError::Truncated)), corrupted bytes
    /// ([`ChecksumMismatch`](LoadError::ChecksumMismatch)), header fields that contradict each
    /// other ([`InconsistentHeader`](LoadError::InconsistentHeader)), a bucket word with a lane no
    /// fingerprint takes ([`ReservedFingerprint`](LoadError::ReservedFingerprint)), a different hasher
    /// ([`HasherMismatch`](LoadError::HasherMismatch)), a snapshot of a semi-sorted filter
    /// ([`EncodingMismatch`](LoadError::EncodingMismatch): load it with
    /// [`Builder::layout`]), a table too large to allocate, or an error from `r`
    /// ([`Io`](LoadError::Io)).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::collections::hash_map::RandomState;
    /// use lockfree_cuckoo::{CuckooFilter, LoadError};
    ///
    /// let hasher = RandomState::new(); // keys fixed for this process
    /// let filter = CuckooFilter::builder().capacity(100).hasher(hasher.clone()).build();
    /// filter.insert("pear")?;
    /// let saved = filter.to_bytes();
    ///
    /// let loaded = CuckooFilter::read_from_with_hasher(saved.as_slice(), hasher)?;
    /// assert!(loaded.contains("pear"));
    ///
    /// // Another RandomState has other keys: refused rather than silently wrong.
    /// let other = CuckooFilter::read_from_with_hasher(saved.as_slice(), RandomState::new());
    /// assert!(matches!(other, Err(LoadError::HasherMismatch { .. })));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn read_from_with_hasher(r: impl Read, hasher: S) -> Result<Self, LoadError> {
        load(r, None, hasher, true)
    }

    /// Loads a snapshot from `bytes`, which must hold exactly one snapshot, with `hasher` as the
    /// filter's hasher; see [`read_from_with_hasher`](Self::read_from_with_hasher).
    ///
    /// Any byte string yields a filter or an error, never a panic, and the table is allocated
    /// only after the length of `bytes` has been checked against the bucket count.
    ///
    /// # Errors
    ///
    /// As [`read_from_with_hasher`](Self::read_from_with_hasher), and
    /// [`LoadError::TrailingBytes`] if `bytes` continues after the snapshot.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::hash::BuildHasherDefault;
    /// use std::collections::hash_map::DefaultHasher; // SipHash with fixed keys
    /// use lockfree_cuckoo::CuckooFilter;
    ///
    /// type Sip = BuildHasherDefault<DefaultHasher>;
    /// let filter = CuckooFilter::builder().capacity(100).hasher(Sip::default()).build();
    /// filter.insert(&42u32)?;
    ///
    /// let loaded = CuckooFilter::from_bytes_with_hasher(&filter.to_bytes(), Sip::default())?;
    /// assert!(loaded.contains(&42u32));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn from_bytes_with_hasher(bytes: &[u8], hasher: S) -> Result<Self, LoadError> {
        load(bytes, Some(bytes.len()), hasher, true)
    }
}

impl CuckooFilter<DefaultHashBuilder> {
    /// Loads a snapshot saved by a filter with the default hasher; see
    /// [`read_from_with_hasher`](Self::read_from_with_hasher).
    ///
    /// The default hasher's output is specified (`FORMAT.md`, "The default hasher") and the
    /// snapshot records its seed, so a snapshot saved with it loads into an equal filter, with
    /// the same key, in every build that reads its format version, on every target and with
    /// every set of CPU features.
    ///
    /// # Errors
    ///
    /// As [`read_from_with_hasher`](Self::read_from_with_hasher).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use std::fs::File;
    /// use std::io::{BufReader, BufWriter};
    /// use lockfree_cuckoo::CuckooFilter;
    ///
    /// let filter = CuckooFilter::with_capacity(1_000_000);
    /// filter.insert("key")?;
    /// filter.write_to(BufWriter::new(File::create("seen.cuckoo")?))?;
    ///
    /// let loaded = CuckooFilter::read_from(BufReader::new(File::open("seen.cuckoo")?))?;
    /// assert!(loaded.contains("key"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn read_from(r: impl Read) -> Result<Self, LoadError> {
        Self::read_from_with_hasher(r, DefaultHashBuilder::with_seed(0))
    }

    /// Loads a snapshot from `bytes` with the default hasher; see
    /// [`from_bytes_with_hasher`](Self::from_bytes_with_hasher) and [`read_from`](Self::read_from).
    ///
    /// # Errors
    ///
    /// As [`from_bytes_with_hasher`](Self::from_bytes_with_hasher).
    ///
    /// # Examples
    ///
    /// ```
    /// use lockfree_cuckoo::{CuckooFilter, LoadError};
    ///
    /// let filter = CuckooFilter::with_capacity(100);
    /// filter.insert("a")?;
    /// let bytes = filter.to_bytes();
    /// assert!(CuckooFilter::from_bytes(&bytes)?.contains("a"));
    ///
    /// let err = CuckooFilter::from_bytes(&bytes[..bytes.len() - 1]).unwrap_err();
    /// assert!(matches!(err, LoadError::Truncated { .. }));
    /// assert!(matches!(CuckooFilter::from_bytes(b"hello"), Err(LoadError::BadMagic { .. })));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, LoadError> {
        Self::from_bytes_with_hasher(bytes, DefaultHashBuilder::with_seed(0))
    }
}

impl<S: BuildHasher + 'static, E: Layout> Builder<S, E> {
    /// Loads a snapshot from `bytes` with this builder's hasher, [`layout`](Self::layout) and
    /// [`huge_pages`](Self::huge_pages) setting; the size, levels and ceilings are the
    /// snapshot's (the builder's capacity and ceilings are not used). For filters of either
    /// layout, and for processes whose allocator must see every table, as an engine module's
    /// must.
    ///
    /// # Errors
    ///
    /// As [`CuckooFilter::from_bytes_with_hasher`]; a snapshot of the other layout is refused
    /// with [`LoadError::EncodingMismatch`].
    ///
    /// # Examples
    ///
    /// ```
    /// use lockfree_cuckoo::CuckooFilter;
    ///
    /// let filter = CuckooFilter::with_capacity(1_000_000);
    /// filter.insert("a")?;
    /// let loaded = CuckooFilter::builder().huge_pages(false).load(&filter.to_bytes())?;
    /// assert!(loaded.contains("a"));
    /// assert_eq!(loaded.capacity(), filter.capacity());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn load(self, bytes: &[u8]) -> Result<CuckooFilter<S, E>, LoadError> {
        let (hasher, huge_pages) = self.into_load_settings();
        load(bytes, Some(bytes.len()), hasher, huge_pages)
    }

    /// [`load`](Self::load) from a stream: reads exactly one snapshot, as
    /// [`CuckooFilter::read_from_with_hasher`] does.
    ///
    /// # Errors
    ///
    /// As [`CuckooFilter::read_from_with_hasher`]; a snapshot of the other layout is refused
    /// with [`LoadError::EncodingMismatch`].
    ///
    /// # Examples
    ///
    /// ```
    /// use lockfree_cuckoo::{CuckooFilter, SemiSorted};
    ///
    /// let filter = CuckooFilter::builder().capacity(1_000).layout::<SemiSorted>().build();
    /// filter.insert("a")?;
    /// let saved = filter.to_bytes();
    /// let loaded = CuckooFilter::builder().layout::<SemiSorted>().read_from(saved.as_slice())?;
    /// assert!(loaded.contains("a"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn read_from(self, r: impl Read) -> Result<CuckooFilter<S, E>, LoadError> {
        let (hasher, huge_pages) = self.into_load_settings();
        load(r, None, hasher, huge_pages)
    }
}

/// Writes a snapshot of `levels`, scanned level by level, oldest first.
fn write_levels<E: BucketEncoding, S: BuildHasher + 'static>(
    levels: &Levels<E>,
    mut w: impl Write,
    hasher: &S,
) -> io::Result<SnapshotInfo> {
    let scanned =
        levels.oldest_first().into_iter().map(Table::scan).collect::<io::Result<Vec<_>>>()?;
    let (growth, retained) = (levels.growth(), levels.retained());
    let block = format::Block::levels(growth, retained);
    let occupied = format::encode::<E, S>(&mut w, &scanned, block, hasher)?;
    let buckets = scanned.iter().map(|level| level.len() as u64).sum();
    Ok(SnapshotInfo {
        bytes: format::snapshot_len(buckets, block.len(scanned.len())),
        buckets,
        items: occupied.saturating_sub(retained),
        captured_by_writers: scanned.iter().map(|level| level.captured_by_writers).sum(),
    })
}

/// Reads and checks one snapshot, then builds the filter; `len` is the exact input length when
/// the caller knows it. A snapshot of another layout than `E` is refused.
fn load<S: BuildHasher + 'static, E: Layout>(
    r: impl Read,
    len: Option<usize>,
    hasher: S,
    huge_pages: bool,
) -> Result<CuckooFilter<S, E>, LoadError> {
    let mut hasher = hasher;
    let format::Decoded { encoding, levels, block } = format::decode(r, len, &mut hasher)?;
    let (growth, retained) = match block {
        format::Block::Levels { ceiling, retained } => (Some(ceiling), retained),
        format::Block::Fixed | format::Block::Window(_) => (None, 0),
    };
    if encoding != E::ENCODING {
        return Err(LoadError::EncodingMismatch { expected: E::ENCODING, found: encoding });
    }
    let mut tables = levels.into_iter().map(|words| {
        let items = words.iter().map(|&word| E::occupied(word)).sum();
        Table::<E>::from_words(words, DEFAULT_LOOKUP_RETRIES, huge_pages, items)
    });
    let first = tables.next().expect("a snapshot has at least one level");
    let levels = Levels::with_newer(first, tables.collect(), growth, retained);
    Ok(CuckooFilter::from_parts(levels, hasher))
}
