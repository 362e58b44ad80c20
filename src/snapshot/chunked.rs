//! A snapshot written a chunk at a time, for front-ends that send a large filter in pieces
//! (`CF.SCANDUMP`): each chunk costs its own bytes, not a copy of the table.

use core::fmt;
use core::hash::BuildHasher;
use core::ops::Range;

use super::format::{self, Checksum, Window, CHECKSUM_LEN, WORD_LEN};
use crate::bucket::{BucketEncoding, Layout};
use crate::error::ChunkError;
use crate::filter::CuckooFilter;
use crate::levels::Levels;
use crate::table::Table;
use crate::windowed::WindowedFilter;

/// A snapshot of a filter in the format of [`write_to`](CuckooFilter::write_to), written a chunk
/// at a time by [`write_next`](Self::write_next): for a front-end that sends a large filter in
/// pieces, one request each, with nothing held between them but this value (a few hundred bytes).
///
/// Unlike `write_to`, no chunk copies the table: each reads the buckets it writes, as they are
/// then, so a chunk costs time and memory in proportion to its bytes, and the filter's users
/// never help a chunked snapshot.
///
/// # Consistency
///
/// - **A filter nobody writes** between [`CuckooFilter::chunked_snapshot`] and the last chunk
///   gives exactly the bytes of [`to_bytes`](CuckooFilter::to_bytes).
/// - **A filter written meanwhile** gives [`ChunkError::Changed`] when the writes show: a level
///   was added, or at the last chunk the item count (or the removed items' fingerprints kept) is
///   not the one the header gave. The loader also refuses bytes whose words do not hold the
///   header's item count. Writes that keep the count (a relocation, an insert and a remove) can
///   go unseen, and then an item whose fingerprint moved from a bucket not yet written to one
///   already written is missing from the bytes: unlike `write_to`'s, this snapshot guarantees
///   nothing about items present while it runs. Chunk a filter nobody writes, or use `write_to`.
///
/// # Examples
///
/// ```
/// use lockfree_cuckoo::CuckooFilter;
///
/// let filter = CuckooFilter::with_capacity(10_000);
/// filter.insert("a")?;
/// let mut snapshot = filter.chunked_snapshot();
/// let mut bytes = Vec::new();
/// while snapshot.write_next(&filter, 4096, &mut bytes)? > 0 {}
/// assert_eq!(bytes, filter.to_bytes());
/// assert!(CuckooFilter::from_bytes(&bytes)?.contains("a"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct ChunkedSnapshot {
    /// The header and level block, with the item count and kept removals as they were at the
    /// start.
    prefix: Vec<u8>,
    /// Each level's bucket count, oldest first.
    buckets: Vec<usize>,
    /// The item count and kept removals the prefix gives.
    items: u64,
    retained: u64,
    /// A windowed filter's clock as the prefix gives it; `None` for a filter of levels.
    window: Option<Window>,
    /// Bytes written so far.
    offset: u64,
    /// The checksum of those bytes.
    crc: Checksum,
}

impl fmt::Debug for ChunkedSnapshot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChunkedSnapshot")
            .field("offset", &self.offset)
            .field("total_bytes", &self.total_bytes())
            .field("buckets", &self.buckets)
            .field("items", &self.items)
            .finish_non_exhaustive()
    }
}

impl<S: BuildHasher + 'static, E: Layout> CuckooFilter<S, E> {
    /// Starts a snapshot to write a chunk at a time; see [`ChunkedSnapshot`] for what it
    /// promises on a filter written meanwhile.
    ///
    /// # Examples
    ///
    /// ```
    /// use lockfree_cuckoo::CuckooFilter;
    ///
    /// let filter = CuckooFilter::with_capacity(100);
    /// let snapshot = filter.chunked_snapshot();
    /// assert_eq!(snapshot.total_bytes(), filter.to_bytes().len() as u64);
    /// assert_eq!(snapshot.offset(), 0);
    /// ```
    pub fn chunked_snapshot(&self) -> ChunkedSnapshot {
        let shape = Shape::of(self.levels());
        let prefix = shape.prefix(self.levels(), self.hasher());
        ChunkedSnapshot::new(prefix, shape.buckets, (shape.items, shape.retained), None)
    }
}

impl ChunkedSnapshot {
    /// A snapshot at its start: `prefix` (the header and its block), then the words of
    /// `buckets` (each level's count, oldest first), whose counts are `counts` (items, kept
    /// removals); `window`, a windowed filter's clock, is in the prefix.
    pub(crate) fn new(
        prefix: Vec<u8>,
        buckets: Vec<usize>,
        (items, retained): (u64, u64),
        window: Option<Window>,
    ) -> Self {
        Self { prefix, buckets, items, retained, window, offset: 0, crc: format::checksum() }
    }

    /// The prefix, and the clock it holds if the filter is windowed.
    pub(crate) fn prefix(&self) -> (&[u8], Option<Window>) {
        (&self.prefix, self.window)
    }

    /// The item count the header gives.
    pub(crate) fn items(&self) -> u64 {
        self.items
    }

    /// Appends the next chunk of the snapshot, at most `max_bytes` (and at least one byte while
    /// any is left), to `out`, and returns how many bytes it appended: 0 once the snapshot is
    /// all written.
    ///
    /// `filter` must be the filter the snapshot was started from.
    ///
    /// # Errors
    ///
    /// [`ChunkError::Changed`] if `filter` is not the filter as it was when the snapshot
    /// started (see "Consistency"), [`ChunkError::AllocationFailed`] if `out` cannot grow by
    /// the chunk; `out` and the snapshot are then as they were.
    ///
    /// # Examples
    ///
    /// ```
    /// use lockfree_cuckoo::{ChunkError, CuckooFilter};
    ///
    /// let filter = CuckooFilter::with_capacity(1_000);
    /// let mut snapshot = filter.chunked_snapshot();
    /// let mut first = Vec::new();
    /// assert_eq!(snapshot.write_next(&filter, 100, &mut first)?, 100);
    /// filter.insert("late")?;
    /// // The header already sent counts no item: the snapshot cannot end.
    /// let mut rest = Vec::new();
    /// let ended = loop {
    ///     match snapshot.write_next(&filter, 1 << 20, &mut rest) {
    ///         Ok(0) => break Ok(()),
    ///         Ok(_) => {}
    ///         Err(e) => break Err(e),
    ///     }
    /// };
    /// assert_eq!(ended, Err(ChunkError::Changed));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn write_next<S: BuildHasher + 'static, E: Layout>(
        &mut self,
        filter: &CuckooFilter<S, E>,
        max_bytes: usize,
        out: &mut Vec<u8>,
    ) -> Result<usize, ChunkError> {
        let want = self.room(max_bytes, out)?;
        if want == 0 {
            return Ok(0);
        }
        self.write_levels(filter.levels(), filter.hasher(), want, out)
    }

    /// [`write_next`](Self::write_next) for a snapshot started by
    /// [`WindowedFilter::chunked_snapshot`].
    ///
    /// `filter` must be the filter the snapshot was started from.
    ///
    /// # Errors
    ///
    /// As [`write_next`](Self::write_next); an epoch started since the snapshot did (by
    /// [`tick`](WindowedFilter::tick), [`follow`](WindowedFilter::follow) or an insert) is a
    /// change: the bytes would read the entries' ages at the wrong epoch.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use lockfree_cuckoo::{CuckooFilter, ManualClock};
    ///
    /// let clock = ManualClock::new();
    /// let filter = CuckooFilter::builder()
    ///     .capacity(1_000)
    ///     .expire_after(Duration::from_secs(2))
    ///     .clock(clock.clone())
    ///     .build();
    /// filter.insert("a")?;
    /// let mut snapshot = filter.chunked_snapshot();
    /// let mut bytes = Vec::new();
    /// while snapshot.write_next_windowed(&filter, 4096, &mut bytes)? > 0 {}
    /// assert_eq!(bytes, filter.to_bytes());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn write_next_windowed<S: BuildHasher + 'static>(
        &mut self,
        filter: &WindowedFilter<S>,
        max_bytes: usize,
        out: &mut Vec<u8>,
    ) -> Result<usize, ChunkError> {
        let want = self.room(max_bytes, out)?;
        if want == 0 {
            return Ok(0);
        }
        filter.write_chunk(self, want, out)
    }

    /// The bytes the next chunk takes, at most `max_bytes` (0 once all are written), with room
    /// for them reserved in `out`.
    fn room(&self, max_bytes: usize, out: &mut Vec<u8>) -> Result<usize, ChunkError> {
        let left = self.total_bytes() - self.offset;
        let want = usize::try_from(left).unwrap_or(usize::MAX).min(max_bytes.max(1));
        if want > 0 {
            // Room for the whole words around the chunk's first and last bytes too.
            let room = want + 2 * WORD_LEN;
            out.try_reserve(room).map_err(|_| ChunkError::AllocationFailed { bytes: room })?;
        }
        Ok(want)
    }

    /// [`write_next`](Self::write_next) in the filter's encoding; it checks before it writes.
    fn write_levels<E: BucketEncoding, S: BuildHasher + 'static>(
        &mut self,
        levels: &Levels<E>,
        hasher: &S,
        want: usize,
        out: &mut Vec<u8>,
    ) -> Result<usize, ChunkError> {
        // The same filter, as far as the prefix tells: its layout, levels, ceilings and hasher.
        let mut now = Shape::of(levels);
        let counts = (now.items, now.retained);
        (now.items, now.retained) = (self.items, self.retained);
        if self.window.is_some()
            || now.buckets != self.buckets
            || now.prefix(levels, hasher) != self.prefix
        {
            return Err(ChunkError::Changed);
        }
        self.copy(&levels.oldest_first(), counts, want, out, || true)
    }

    /// Appends the next `want` bytes, the words read from `tables` (the filter's, oldest first)
    /// as they are now, whose counts are now `counts` (items, kept removals); `unchanged` is
    /// asked after the words are read. When it says no, or the counts are not the header's at
    /// the last chunk, nothing is appended and the snapshot stays where it was.
    pub(crate) fn copy<E: BucketEncoding>(
        &mut self,
        tables: &[&Table<E>],
        counts: (u64, u64),
        want: usize,
        out: &mut Vec<u8>,
        unchanged: impl FnOnce() -> bool,
    ) -> Result<usize, ChunkError> {
        let words_end = self.total_bytes() - CHECKSUM_LEN as u64;
        let mut at = self.offset;
        let end = at + want as u64;
        // The checksum ends only a snapshot whose counts are still the header's.
        if end > words_end && counts != (self.items, self.retained) {
            return Err(ChunkError::Changed);
        }
        let start = out.len();
        if at < self.prefix.len() as u64 {
            let upto = end.min(self.prefix.len() as u64);
            out.extend_from_slice(&self.prefix[at as usize..upto as usize]);
            at = upto;
        }
        let mut level_start = self.prefix.len() as u64;
        for (table, &buckets) in tables.iter().zip(&self.buckets) {
            let level_end = level_start + (buckets * WORD_LEN) as u64;
            if at < end && at < level_end {
                // Whole words around the bytes wanted; the first and last may be cut.
                let from = (at - level_start) as usize;
                let to = (end.min(level_end) - level_start) as usize;
                let words = Range { start: from / WORD_LEN, end: to.div_ceil(WORD_LEN) };
                let skip = from % WORD_LEN;
                let copied = out.len();
                out.resize(copied + words.len() * WORD_LEN, 0);
                let room = out[copied..].chunks_exact_mut(WORD_LEN);
                for (bytes, word) in room.zip(table.words_now(words)) {
                    bytes.copy_from_slice(&word.to_le_bytes());
                }
                out.copy_within(copied + skip..copied + skip + (to - from), copied);
                out.truncate(copied + (to - from));
                at += (to - from) as u64;
            }
            level_start = level_end;
        }
        if !unchanged() {
            out.truncate(start);
            return Err(ChunkError::Changed);
        }
        self.crc.update(&out[start..]);
        if at < end {
            let crc = self.crc.clone().finalize().to_le_bytes();
            let from = (at - words_end) as usize;
            let to = (end - words_end) as usize;
            out.extend_from_slice(&crc[from..to]);
        }
        let written = out.len() - start;
        self.offset += written as u64;
        Ok(written)
    }

    /// Bytes written so far: the offset of the next chunk.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Bytes of the whole snapshot.
    pub fn total_bytes(&self) -> u64 {
        let words: u64 = self.buckets.iter().map(|&b| (b * WORD_LEN) as u64).sum();
        self.prefix.len() as u64 + words + CHECKSUM_LEN as u64
    }

    /// Whether every byte has been written.
    pub fn is_done(&self) -> bool {
        self.offset == self.total_bytes()
    }
}

/// What the prefix of a snapshot of a filter says, read from the filter as it is now.
struct Shape {
    buckets: Vec<usize>,
    items: u64,
    retained: u64,
}

impl Shape {
    fn of<E: BucketEncoding>(levels: &Levels<E>) -> Self {
        let tables = levels.oldest_first();
        Self {
            buckets: tables.iter().map(|t| t.bucket_count()).collect(),
            items: tables.iter().map(|t| t.len() as u64).sum(),
            retained: levels.retained(),
        }
    }

    fn prefix<E: BucketEncoding, S: BuildHasher + 'static>(
        &self,
        levels: &Levels<E>,
        hasher: &S,
    ) -> Vec<u8> {
        format::encode_prefix(
            E::ENCODING,
            &self.buckets,
            self.items,
            format::Block::levels(levels.growth(), self.retained),
            hasher,
        )
    }
}
