//! Snapshots of a [`WindowedFilter`]: its words with their tags, and its clock.
//!
//! The format is `FORMAT.md`'s, with the 14-bit layout and the window block: the window, the
//! epoch the tags are read at, and the time into that epoch. A loaded filter resumes the epoch
//! where the snapshot left it; the time the snapshot spent saved does not count.
//!
//! # One epoch for every tag
//!
//! The pass over the table reads words while epochs may start, so the snapshot pins itself to
//! the current epoch `e` first, as a writer does: the sweep of `e + 1` waits for it, so the
//! epoch is `e` or `e + 1` when the pass ends (`epochs`, "A writer is at most one epoch
//! behind"). Before the pass it waits until the sweep of `e` is done
//! ([`Epochs::swept_through`](super::epochs::Epochs)), helping it: from then on, a lane tagged
//! `e + 1` was written in epoch `e + 1`. The epoch recorded is the one read after the pass,
//! whose Acquire load follows every word the pass read: each tag the copy holds is live or
//! dead at the recorded epoch exactly as it is in the filter when the pass ends.

use core::hash::BuildHasher;
use core::time::Duration;
use std::io::{self, Read, Write};

use super::builder::WindowedBuilder;
use super::epochs::{Epochs, Pinned, MAX_BUCKETS};
use super::{WindowedFilter, TICK_CHUNK};
use crate::bucket::windowed::Windowed;
use crate::bucket::BucketEncoding;
use crate::encoding::Encoding;
use crate::error::{ChunkError, LoadError};
use crate::hasher::DefaultHashBuilder;
use crate::snapshot::format::{self, Block, Decoded, Window, WINDOW_BLOCK_LEN};
use crate::snapshot::{ChunkedSnapshot, SnapshotInfo};
use crate::sync;
use crate::table::Table;

impl<S: BuildHasher + 'static> WindowedFilter<S> {
    /// Writes a snapshot of the filter to `w`: its entries with their ages, its window, and how
    /// far into the current epoch it is (`FORMAT.md`, "The window block").
    ///
    /// Safe on a live filter, with the guarantee of [`CuckooFilter::write_to`](crate::CuckooFilter::write_to)
    /// for the items still inside their window when the pass ends: each is present in a filter
    /// loaded from the snapshot, and stays present at least as long as it would have in this
    /// one, counting only the time either filter runs. While the pass runs, the next epoch's
    /// sweep waits (so expired entries stay a little longer); nothing else does.
    ///
    /// # Errors
    ///
    /// Any error from `w`; an [`io::ErrorKind::OutOfMemory`] error if the copy of the table
    /// cannot be allocated.
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
    ///     .expire_after(Duration::from_secs(60))
    ///     .clock(clock.clone())
    ///     .build();
    /// filter.insert("token")?;
    /// let mut saved = Vec::new();
    /// filter.write_to(&mut saved)?;
    ///
    /// let loaded = CuckooFilter::builder()
    ///     .expire_after(Duration::from_secs(60))
    ///     .clock(clock.clone())
    ///     .read_from(saved.as_slice())?;
    /// assert!(loaded.contains("token"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn write_to(&self, mut w: impl Write) -> io::Result<SnapshotInfo> {
        let pinned = self.epochs.pin();
        self.settle(&pinned);
        let scanned = [self.table.scan()?];
        let block = Block::Window(self.clock_now());
        drop(pinned);
        let items = format::encode::<Windowed, S>(&mut w, &scanned, block, &self.hasher)?;
        let buckets = scanned[0].len() as u64;
        Ok(SnapshotInfo {
            bytes: format::snapshot_len(buckets, WINDOW_BLOCK_LEN),
            buckets,
            items,
            captured_by_writers: scanned[0].captured_by_writers,
        })
    }

    /// A snapshot of the filter as bytes: [`write_to`](Self::write_to) into a `Vec`.
    ///
    /// # Panics
    ///
    /// If the snapshot does not fit in memory (as any `Vec` allocation).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use lockfree_cuckoo::{CuckooFilter, WindowedFilter};
    ///
    /// let filter = CuckooFilter::builder().capacity(100).expire_after(Duration::from_secs(60)).build();
    /// filter.insert(&7u64)?;
    /// let loaded = WindowedFilter::from_bytes(&filter.to_bytes())?;
    /// assert!(loaded.contains(&7u64));
    /// assert_eq!(loaded.window(), Duration::from_secs(60));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn to_bytes(&self) -> Vec<u8> {
        let len = format::snapshot_len(self.bucket_count() as u64, WINDOW_BLOCK_LEN) as usize;
        let mut bytes = Vec::with_capacity(len);
        match self.write_to(&mut bytes) {
            Ok(_) => bytes,
            // Writing into a `Vec` cannot fail; only the copy of the table can.
            Err(err) => panic!("cannot snapshot the windowed filter: {err}"),
        }
    }
    /// Starts a snapshot to write a chunk at a time with
    /// [`ChunkedSnapshot::write_next_windowed`], in the bytes of [`write_to`](Self::write_to):
    /// for a front-end that sends a large filter in pieces. As for a
    /// [`CuckooFilter`](crate::CuckooFilter)'s, no chunk copies the table, and a filter written
    /// meanwhile may miss items that moved ([`ChunkedSnapshot`], "Consistency"); an epoch that
    /// starts before the last chunk ends the snapshot with [`ChunkError::Changed`].
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use lockfree_cuckoo::{ChunkError, CuckooFilter, ManualClock};
    ///
    /// let clock = ManualClock::new();
    /// let filter = CuckooFilter::builder()
    ///     .capacity(1_000)
    ///     .expire_after(Duration::from_secs(2))
    ///     .clock(clock.clone())
    ///     .build();
    /// let mut snapshot = filter.chunked_snapshot();
    /// let mut bytes = Vec::new();
    /// snapshot.write_next_windowed(&filter, 100, &mut bytes)?;
    /// clock.advance(Duration::from_secs(1));
    /// assert!(filter.tick());
    /// assert_eq!(snapshot.write_next_windowed(&filter, 100, &mut bytes), Err(ChunkError::Changed));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn chunked_snapshot(&self) -> ChunkedSnapshot {
        loop {
            let pinned = self.epochs.pin();
            self.settle(&pinned);
            let clock = self.clock_now();
            // The epoch may have moved on, its sweep waiting for this pin: settle that one.
            if clock.epoch == pinned.epoch() {
                let items = self.len() as u64;
                let prefix = self.prefix(clock, items);
                return ChunkedSnapshot::new(
                    prefix,
                    vec![self.bucket_count()],
                    (items, 0),
                    Some(clock),
                );
            }
        }
    }

    /// The next `want` bytes of `snapshot` ([`ChunkedSnapshot::write_next_windowed`]), which
    /// checks that this filter is the one it started from, at the same epoch.
    pub(crate) fn write_chunk(
        &self,
        snapshot: &mut ChunkedSnapshot,
        want: usize,
        out: &mut Vec<u8>,
    ) -> Result<usize, ChunkError> {
        let (prefix, Some(clock)) = snapshot.prefix() else {
            return Err(ChunkError::Changed);
        };
        // Pinned at the snapshot's epoch, this thread holds back the next epoch's sweep, so no
        // lane the chunk copies is cleared while it is read; the snapshot's own sweep was done
        // when it started (`chunked_snapshot`). A lane written under the next epoch's tag can
        // still be read: the epoch read again after the copy refuses the chunk then.
        let pinned = self.epochs.pin();
        if pinned.epoch() != clock.epoch || prefix != self.prefix(clock, snapshot.items()) {
            return Err(ChunkError::Changed);
        }
        let counts = (self.len() as u64, 0);
        let table = [&self.table];
        // Acquire, in `current`: an epoch started before a word was read is seen here.
        snapshot.copy(&table, counts, want, out, || self.epochs.current() == clock.epoch)
    }

    /// Waits until the sweep of the epoch `pinned` holds is done, helping it: from then on, a
    /// lane tagged with the next epoch was written in that epoch.
    fn settle(&self, pinned: &Pinned<'_>) {
        while !self.epochs.swept_through(pinned.epoch()) {
            if !self.sweep_some(TICK_CHUNK) {
                // Another thread holds the last claims, or writers of the epoch before are
                // still writing: both finish without this thread.
                sync::yield_now();
            }
        }
    }

    /// The clock as a snapshot records it now: the window, the epoch and the time into it.
    fn clock_now(&self) -> Window {
        let (epoch, into) = self.epochs.position();
        Window {
            window_ns: u64::try_from(self.window.as_nanos()).unwrap_or(u64::MAX),
            epoch,
            into_epoch_ns: u64::try_from(into.as_nanos()).unwrap_or(u64::MAX),
        }
    }

    /// A snapshot's header and window block, for `items` entries read at `clock`.
    fn prefix(&self, clock: Window, items: u64) -> Vec<u8> {
        let buckets = [self.bucket_count()];
        format::encode_prefix(
            Encoding::Windowed,
            &buckets,
            items,
            Block::Window(clock),
            &self.hasher,
        )
    }
}

impl WindowedFilter<DefaultHashBuilder> {
    /// Loads a snapshot of a windowed filter with the default hasher, reading the system's
    /// clock; [`WindowedBuilder::load`] takes another clock or hasher.
    ///
    /// # Errors
    ///
    /// As [`WindowedBuilder::load`].
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use lockfree_cuckoo::{CuckooFilter, LoadError, WindowedFilter};
    ///
    /// let plain = CuckooFilter::with_capacity(100);
    /// let err = WindowedFilter::from_bytes(&plain.to_bytes()).unwrap_err();
    /// assert!(matches!(err, LoadError::EncodingMismatch { .. }));
    /// ```
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, LoadError> {
        let any_window = Duration::from_secs(1);
        crate::CuckooFilter::builder().expire_after(any_window).load(bytes)
    }
}

impl<S: BuildHasher + 'static> WindowedBuilder<S> {
    /// Loads a snapshot written by [`WindowedFilter::write_to`] with this builder's hasher, clock
    /// and [`huge_pages`](crate::Builder::huge_pages) setting. The window, size, entries and
    /// epoch are the snapshot's (the builder's window and capacity are not used); the epoch
    /// resumes where the snapshot left it, by this builder's clock.
    ///
    /// # Errors
    ///
    /// As [`CuckooFilter::from_bytes_with_hasher`](crate::CuckooFilter::from_bytes_with_hasher);
    /// a snapshot of a filter that is not windowed is refused with
    /// [`LoadError::EncodingMismatch`].
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use lockfree_cuckoo::{CuckooFilter, ManualClock};
    ///
    /// let clock = ManualClock::new();
    /// let window = Duration::from_secs(10);
    /// let filter = CuckooFilter::builder().capacity(100).expire_after(window).clock(clock.clone()).build();
    /// filter.insert("a")?;
    /// clock.advance(Duration::from_secs(9));
    /// let saved = filter.to_bytes();
    ///
    /// // Loaded in another process, whose clock starts afresh: "a" has 1 s of its window left.
    /// let later = ManualClock::new();
    /// let loaded = CuckooFilter::builder().expire_after(window).clock(later.clone()).load(&saved)?;
    /// loaded.tick();
    /// assert!(loaded.contains("a"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn load(self, bytes: &[u8]) -> Result<WindowedFilter<S>, LoadError> {
        self.resume(bytes, Some(bytes.len()))
    }

    /// [`load`](Self::load) from a stream: reads exactly one snapshot.
    ///
    /// # Errors
    ///
    /// As [`load`](Self::load).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use lockfree_cuckoo::CuckooFilter;
    ///
    /// let window = Duration::from_secs(60);
    /// let filter = CuckooFilter::builder().capacity(100).expire_after(window).build();
    /// filter.insert("a")?;
    /// let saved = filter.to_bytes();
    /// let loaded = CuckooFilter::builder().expire_after(window).read_from(saved.as_slice())?;
    /// assert!(loaded.contains("a"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn read_from(self, r: impl Read) -> Result<WindowedFilter<S>, LoadError> {
        self.resume(r, None)
    }

    /// Reads and checks one snapshot; `len` is the exact input length when the caller knows it.
    fn resume(self, r: impl Read, len: Option<usize>) -> Result<WindowedFilter<S>, LoadError> {
        let (base, clock, sweeps_on_insert) = self.into_parts();
        let mut hasher = base.hasher;
        let Decoded { encoding, mut levels, block } = format::decode(r, len, &mut hasher)?;
        let (Block::Window(window), Some(words)) = (block, levels.pop()) else {
            return Err(LoadError::EncodingMismatch {
                expected: Encoding::Windowed,
                found: encoding,
            });
        };
        let buckets = words.len();
        if buckets as u64 > MAX_BUCKETS {
            return Err(LoadError::InconsistentHeader {
                field: "bucket count",
                expected: format!("at most {MAX_BUCKETS} for a windowed filter"),
                found: buckets as u64,
            });
        }
        let items = words.iter().map(|&word| Windowed::occupied(word)).sum();
        let table = Table::from_words(words, base.lookup_retries, base.huge_pages, items);
        let window_len = Duration::from_nanos(window.window_ns);
        let into = Duration::from_nanos(window.into_epoch_ns);
        let epochs = Epochs::resumed(buckets, window_len / 2, clock, window.epoch, into);
        Ok(WindowedFilter::from_parts(table, epochs, window_len, sweeps_on_insert, hasher))
    }
}
