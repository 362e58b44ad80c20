//! [`WindowedFilter`]: a filter whose items expire a window after their last insert.
//!
//! Buckets are windowed (`bucket::windowed`): each lane holds a 14-bit fingerprint and the tag of
//! the epoch it was last written in. An epoch lasts a period `P`, half the window; at epoch `e`
//! the tags of `e`, `e - 1` and `e - 2` are live and the fourth is dead, and the sweep empties it
//! before it comes back as `e + 1` (`epochs`). So an item is present for at least `2P` (the
//! window) after its last insert and, while the sweep keeps up, gone after at most `3P` (1.5
//! windows).

mod builder;
mod clock;
mod epochs;
mod snapshot;

pub use builder::WindowedBuilder;
pub use clock::{Clock, ManualClock, SystemClock};

use core::fmt;
use core::hash::{BuildHasher, Hash};
use core::time::Duration;

use crate::bucket::windowed::{dead_tag_at, Windowed};
use crate::error::InsertError;
use crate::hash;
use crate::hasher::DefaultHashBuilder;
use crate::sizing::capacity_of;
use crate::stats::Stats;
use crate::sync;
use crate::table::Table;
use epochs::Epochs;
pub(crate) use epochs::EPOCH_MASK;

/// The most epochs [`WindowedFilter::follow`] starts in one call: after three, every entry
/// older than the call is dead and swept.
const MAX_FOLLOWED: u64 = 3;

/// The shortest window [`Builder::expire_after`](crate::Builder::expire_after) takes.
pub const MIN_WINDOW: Duration = Duration::from_millis(1);

/// Buckets a [`WindowedFilter::tick`] claims at once: chunks, so that inserts short of room
/// sweep beside it rather than find every bucket claimed.
pub(crate) const TICK_CHUNK: usize = 4096;

/// The items a table promises, for each item of a windowed filter's capacity, as a fraction.
const SIZED_FOR: (usize, usize) = (8, 5);

/// Inserts a thread makes between two sweeps of [`SWEEP_CHUNK`] buckets.
const SWEEP_EVERY: u32 = 64;
/// Buckets a sweep claims at once: two for each insert. A stream at the capacity's rate inserts
/// about 1.2 items a bucket in a period, so inserts alone finish a sweep within the first half
/// of each epoch.
const SWEEP_CHUNK: usize = 2 * SWEEP_EVERY as usize;

/// A concurrent cuckoo filter whose items expire: an item is present for at least the window
/// after its last insert, and gone (up to the false-positive rate) at most 1.5 windows after it
/// while the filter is maintained. Built by
/// [`Builder::expire_after`](crate::Builder::expire_after).
///
/// A set, not a multiset: inserting a present item refreshes it. Lookups are wait-free;
/// inserts, removes and [`tick`](Self::tick) are lock-free, and no thread of the library's
/// does the expiry work: inserts sweep a little each, and `tick` does the rest. See the crate
/// documentation, "Expiry", for the guarantees in full.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use lockfree_cuckoo::{CuckooFilter, ManualClock};
///
/// let clock = ManualClock::new();
/// let seen = CuckooFilter::builder()
///     .capacity(10_000)
///     .expire_after(Duration::from_secs(3600))
///     .clock(clock.clone())
///     .build();
/// seen.insert("webhook-17")?;
/// clock.advance(Duration::from_secs(3599));
/// seen.tick();
/// assert!(seen.contains("webhook-17"));
/// for _ in 0..4 {
///     clock.advance(Duration::from_secs(1800));
///     seen.tick();
/// }
/// assert!(!seen.contains("webhook-17"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct WindowedFilter<S = DefaultHashBuilder> {
    table: Table<Windowed>,
    epochs: Epochs,
    window: Duration,
    capacity: usize,
    /// Whether inserts sweep now and then and start epochs
    /// ([`WindowedBuilder::sweep_on_insert`]).
    sweeps_on_insert: bool,
    hasher: S,
}

impl<S> WindowedFilter<S> {
    /// A filter of `table`, whose entries live by `epochs`, each period half of `window`.
    fn from_parts(
        table: Table<Windowed>,
        epochs: Epochs,
        window: Duration,
        sweeps_on_insert: bool,
        hasher: S,
    ) -> Self {
        let capacity = capacity_of(table.bucket_count()) / SIZED_FOR.0 * SIZED_FOR.1;
        Self { table, epochs, window, capacity, sweeps_on_insert, hasher }
    }
}

impl<S: BuildHasher> WindowedFilter<S> {
    #[inline]
    fn mixed_of<T: Hash + ?Sized>(&self, item: &T) -> u64 {
        hash::mix(self.hasher.hash_one(item))
    }

    /// Adds `item`, or refreshes it if present: it stays present for at least the window from
    /// now. Every 64th insert of a thread also sweeps 128 buckets of expired entries, and starts
    /// the next epoch when it is due.
    ///
    /// # Errors
    ///
    /// [`InsertError::Full`] when the item is absent and no room can be made for it: more items
    /// arrived within 1.5 windows than the filter was built for. Before it refuses, an insert
    /// sweeps expired entries until no bucket is left to sweep, so it is refused while expired
    /// entries take its room only when other threads hold the last buckets to sweep. The
    /// filter is then unchanged.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use lockfree_cuckoo::CuckooFilter;
    ///
    /// let filter = CuckooFilter::builder().capacity(100).expire_after(Duration::from_secs(60)).build();
    /// filter.insert("nonce-1")?;
    /// filter.insert("nonce-1")?; // a refresh: still one entry
    /// assert_eq!(filter.len(), 1);
    /// # Ok::<(), lockfree_cuckoo::InsertError>(())
    /// ```
    pub fn insert<T: Hash + ?Sized>(&self, item: &T) -> Result<(), InsertError> {
        self.insert_mixed(self.mixed_of(item))
    }

    /// Whether `item` may be present: `true` for every item inserted within the window and not
    /// since removed, and for a small fraction of other items (about `8a / 16,380` at load `a`:
    /// 0.049% when full).
    ///
    /// Wait-free: a bounded number of reads. Once the sweep of the current epoch is done
    /// ([`tick`](Self::tick) does it, and inserts do it a little each), a lookup costs a plain
    /// filter's and one read more, of the epoch: no lane then holds an expired entry. While the
    /// sweep is under way, it tests the entries' ages: it reads the epoch, then the item's
    /// buckets, then the epoch again, and answers `false` only if the epoch did not move
    /// meanwhile; after a few moves it answers `true` (a rare extra false positive, counted in
    /// [`Stats::conservative_lookups`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use lockfree_cuckoo::CuckooFilter;
    ///
    /// let filter = CuckooFilter::builder().capacity(100).expire_after(Duration::from_secs(60)).build();
    /// filter.insert(&7u32)?;
    /// assert!(filter.contains(&7u32));
    /// # Ok::<(), lockfree_cuckoo::InsertError>(())
    /// ```
    #[inline]
    pub fn contains<T: Hash + ?Sized>(&self, item: &T) -> bool {
        self.contains_mixed(self.mixed_of(item))
    }

    /// Removes `item`, if present, and says whether it was: its oldest live copy, so that if the
    /// copy was a colliding item's, the copies left are no older than before.
    ///
    /// The filter is a set of fingerprints: an item inserted while another with its fingerprint
    /// and buckets was present (a false positive, about 0.04% of inserts at capacity) only
    /// refreshed that item's entry. Removing either then takes the entry, and the other answers
    /// `false`, as a remove of an item never inserted can take another's in any cuckoo filter.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use lockfree_cuckoo::CuckooFilter;
    ///
    /// let filter = CuckooFilter::builder().capacity(100).expire_after(Duration::from_secs(60)).build();
    /// filter.insert("a")?;
    /// assert!(filter.remove("a"));
    /// assert!(!filter.contains("a"));
    /// assert!(!filter.remove("a"));
    /// # Ok::<(), lockfree_cuckoo::InsertError>(())
    /// ```
    #[inline]
    pub fn remove<T: Hash + ?Sized>(&self, item: &T) -> bool {
        self.remove_mixed(self.mixed_of(item))
    }

    /// The hasher.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use lockfree_cuckoo::CuckooFilter;
    ///
    /// let filter = CuckooFilter::builder().capacity(1_000).expire_after(Duration::from_secs(60)).build();
    /// let _ = filter.hasher();
    /// ```
    pub fn hasher(&self) -> &S {
        &self.hasher
    }
}

impl<S> WindowedFilter<S> {
    /// Does the expiry work that is due: sweeps every bucket of expired entries not yet swept,
    /// and starts the next epoch if a period (half the window) has passed since the current one
    /// started. Lock-free; lookups and inserts never wait for it.
    ///
    /// Inserts do this work too, a little each. A filter that gets few inserts forgets only
    /// as often as `tick` is called: call it at least every half window (the server and the
    /// module call it on a timer). A late or missing call never makes an item vanish early;
    /// it only keeps expired items present longer.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use lockfree_cuckoo::{CuckooFilter, ManualClock};
    ///
    /// let clock = ManualClock::new();
    /// let filter = CuckooFilter::builder()
    ///     .capacity(100)
    ///     .expire_after(Duration::from_secs(2))
    ///     .clock(clock.clone())
    ///     .build();
    /// filter.insert("x")?;
    /// for _ in 0..4 {
    ///     clock.advance(Duration::from_secs(1));
    ///     filter.tick();
    /// }
    /// assert!(!filter.contains("x"));
    /// assert_eq!(filter.len(), 0);
    /// # Ok::<(), lockfree_cuckoo::InsertError>(())
    /// ```
    pub fn tick(&self) -> bool {
        let mut started = false;
        loop {
            while self.sweep_some(TICK_CHUNK) {}
            if !self.epochs.try_advance() {
                return started;
            }
            started = true;
        }
    }

    /// The current epoch: how many periods (half windows) have started since the filter was
    /// built, modulo `2^20`. A front-end that replicates the filter sends it to replicas, which
    /// [`follow`](Self::follow) it.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use lockfree_cuckoo::{CuckooFilter, ManualClock};
    ///
    /// let clock = ManualClock::new();
    /// let filter = CuckooFilter::builder()
    ///     .capacity(100)
    ///     .expire_after(Duration::from_secs(2))
    ///     .clock(clock.clone())
    ///     .build();
    /// assert_eq!(filter.epoch(), 0);
    /// clock.advance(Duration::from_secs(1));
    /// assert!(filter.tick());
    /// assert_eq!(filter.epoch(), 1);
    /// ```
    pub fn epoch(&self) -> u64 {
        self.epochs.current()
    }

    /// Starts epochs, whatever this filter's clock reads, until `epoch` is the current one, as
    /// the filter this one replicates did: for a replica that applies its primary's operations
    /// in order, with each of the primary's epochs ([`epoch`](Self::epoch)) between them. The
    /// window is then the primary's, which its clock keeps; this filter's clock does not start
    /// epochs as long as a period has not passed since the last one it followed. Sweeps as
    /// [`tick`](Self::tick) does.
    ///
    /// Returns whether `epoch` is now the current one: `false`, and nothing done, when it is
    /// more than three epochs ahead (a primary starts one at a time, so a replica that missed
    /// some should load the primary's snapshot instead) or behind. Lock-free.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use lockfree_cuckoo::{CuckooFilter, ManualClock};
    ///
    /// let window = Duration::from_secs(2);
    /// let (clock, frozen) = (ManualClock::new(), ManualClock::new());
    /// let primary = CuckooFilter::builder().capacity(100).seed(7).expire_after(window).clock(clock.clone()).build();
    /// let replica = CuckooFilter::builder().capacity(100).seed(7).expire_after(window).clock(frozen).build();
    /// primary.insert("a")?;
    /// replica.insert("a")?;
    /// for _ in 0..3 {
    ///     clock.advance(Duration::from_secs(1));
    ///     primary.tick();
    ///     assert!(replica.follow(primary.epoch()));
    /// }
    /// assert!(!primary.contains("a") && !replica.contains("a"));
    /// // The same words; only the time into the epoch differs, in the snapshot's window block.
    /// let (p, r) = (primary.to_bytes(), replica.to_bytes());
    /// assert_eq!(p[96..p.len() - 8], r[96..r.len() - 8]);
    /// # Ok::<(), lockfree_cuckoo::InsertError>(())
    /// ```
    pub fn follow(&self, epoch: u64) -> bool {
        let ahead = |current: u64| epoch.wrapping_sub(current) & EPOCH_MASK;
        if ahead(self.epochs.current()) > MAX_FOLLOWED {
            return false;
        }
        loop {
            // Swept as `tick` sweeps, also the epoch reached: a replica's inserts then find
            // the lanes its primary's found.
            while self.sweep_some(TICK_CHUNK) {}
            let current = self.epochs.current();
            match ahead(current) {
                0 => return true,
                a if a > MAX_FOLLOWED => return false,
                _ => {}
            }
            if !self.epochs.advance_now() && self.epochs.current() == current {
                // Writers of the epoch before are still writing, or another thread holds the
                // last claims of the sweep: both finish without this thread.
                sync::yield_now();
            }
        }
    }

    /// The window: how long an item stays present, at least, after its last insert.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use lockfree_cuckoo::CuckooFilter;
    ///
    /// let filter = CuckooFilter::builder().capacity(1_000).expire_after(Duration::from_secs(60)).build();
    /// assert_eq!(filter.window(), Duration::from_secs(60));
    /// ```
    pub fn window(&self) -> Duration {
        self.window
    }

    /// Items the filter holds within any window without refusing one: a stream of `r` distinct
    /// items a second runs forever when `r × window` is at most this.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use lockfree_cuckoo::CuckooFilter;
    ///
    /// let filter = CuckooFilter::builder().capacity(1_000).expire_after(Duration::from_secs(60)).build();
    /// assert!(filter.capacity() >= 1_000);
    /// ```
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Entries held: inserts (not refreshes) minus removes and the expired entries swept so
    /// far. Expired entries not yet swept count; approximate while operations run.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use lockfree_cuckoo::CuckooFilter;
    ///
    /// let filter = CuckooFilter::builder().capacity(1_000).expire_after(Duration::from_secs(60)).build();
    /// filter.insert("a")?;
    /// filter.insert("a")?;
    /// assert_eq!(filter.len(), 1);
    /// # Ok::<(), lockfree_cuckoo::InsertError>(())
    /// ```
    pub fn len(&self) -> usize {
        self.table.len()
    }

    /// Whether [`len`](Self::len) is 0.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use lockfree_cuckoo::CuckooFilter;
    ///
    /// let filter = CuckooFilter::builder().capacity(1_000).expire_after(Duration::from_secs(60)).build();
    /// assert!(filter.is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes the filter takes: its table, stripes and counters.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use lockfree_cuckoo::CuckooFilter;
    ///
    /// let filter = CuckooFilter::builder().capacity(1_000).expire_after(Duration::from_secs(60)).build();
    /// assert!(filter.memory_usage() >= filter.bucket_count() * 8);
    /// ```
    pub fn memory_usage(&self) -> usize {
        core::mem::size_of::<Self>() + self.table.memory_usage()
    }

    /// The filter's operation counts ([`Stats::expired_entries`] among them).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use lockfree_cuckoo::CuckooFilter;
    ///
    /// let filter = CuckooFilter::builder().capacity(1_000).expire_after(Duration::from_secs(60)).build();
    /// assert_eq!(filter.stats().expired_entries, 0);
    /// ```
    pub fn stats(&self) -> Stats {
        self.table.stats()
    }

    /// Buckets of the table: four entries each.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use lockfree_cuckoo::CuckooFilter;
    ///
    /// let filter = CuckooFilter::builder().capacity(1_000).expire_after(Duration::from_secs(60)).build();
    /// assert!(filter.bucket_count() * 4 >= filter.capacity());
    /// ```
    pub fn bucket_count(&self) -> usize {
        self.table.bucket_count()
    }
}

// The operations on an item's mixed hash, and the expiry work they share.
impl<S> WindowedFilter<S> {
    /// [`contains`](Self::contains) of the item whose mixed hash is `mixed`.
    #[inline]
    pub(crate) fn contains_mixed(&self, mixed: u64) -> bool {
        // Once the sweep of the epoch is done, no lane holds the dead tag (`epochs`, "No dead
        // lane after the sweep"), and the first attempt is a plain lookup's, with no branch on
        // what it found. Every lane it matches, whatever its tag, was live when the lookup
        // began or was written since; a validated miss means no lane holds the item. Neither
        // depends on the epoch moving meanwhile.
        if self.epochs.read().sweep_done() {
            let read = self.table.first_read_of_any_age(mixed);
            if read.answers() {
                return read.found();
            }
        }
        self.contains_tagged(mixed)
    }

    /// [`contains_mixed`](Self::contains_mixed) while the sweep of the epoch is under way, or
    /// after a first attempt that did not answer: reads that test the lanes' tags, at an epoch
    /// that did not move meanwhile.
    #[inline(never)]
    fn contains_tagged(&self, mixed: u64) -> bool {
        let mut epoch = self.epochs.current();
        for _ in 0..=self.table.lookup_retries() {
            if self.table.contains_at_epoch(mixed, epoch) {
                return true;
            }
            let now = self.epochs.current();
            if now == epoch {
                return false;
            }
            epoch = now;
        }
        self.table.record_conservative_lookup(mixed);
        true
    }

    /// [`remove`](Self::remove) of the item whose mixed hash is `mixed`.
    #[inline]
    pub(crate) fn remove_mixed(&self, mixed: u64) -> bool {
        // Before the pin, whose locked RMW would hold the loads back until it completes.
        self.table.prefetch(self.table.slots(mixed));
        loop {
            let pinned = self.epochs.pin();
            let epoch = pinned.epoch();
            let Some(taken) = self.table.remove_at_epoch(mixed, epoch) else {
                return false;
            };
            // The copy was the oldest live at `epoch`, and taken at `epoch` or the one after;
            // if the epoch has moved on since, the copy may have been dead by the time it was
            // taken (its tag the dead one of `epoch + 1`), and the item's live copy is still
            // there: take again at the new epoch.
            let now = self.epochs.unpin_confirmed(pinned);
            if now == epoch || taken >> 14 != dead_tag_at(epoch + 1) {
                return true;
            }
        }
    }

    /// [`insert`](Self::insert) of the item whose mixed hash is `mixed`.
    pub(crate) fn insert_mixed(&self, mixed: u64) -> Result<(), InsertError> {
        // Before the pin, whose locked RMW would hold the loads back until it completes.
        self.table.prefetch(self.table.slots(mixed));
        loop {
            let pinned = self.epochs.pin();
            let epoch = pinned.epoch();
            if let Err(why) = self.table.insert_at_epoch(mixed, epoch) {
                // Dead entries take room until the sweep empties them, and no insert moves
                // them: sweep some (unpinned, or the sweep could be waiting for this writer)
                // before refusing.
                drop(pinned);
                if self.sweep_some(SWEEP_CHUNK) {
                    continue;
                }
                self.table.record_refused_item(mixed, why);
                return Err(InsertError::Full);
            }
            // The write was made at `epoch` or the one after (`epochs`, "A writer is at most
            // one epoch behind"); if the epoch has moved, it may have been after, and the
            // item's copy is an epoch older than its insert: refresh it at the new epoch.
            if self.epochs.unpin_confirmed(pinned) == epoch {
                break;
            }
        }
        if self.sweeps_on_insert {
            self.sweep_now_and_then();
        }
        Ok(())
    }

    /// Every [`SWEEP_EVERY`]-th insert of this thread sweeps a chunk, or tries to start the
    /// next epoch when every bucket is claimed. Counted per thread, not by the item's hash, so
    /// that no choice of items escapes the work.
    // loom's `thread_local!`, which `sync` hands out under the model checker, takes no `const`
    // initializer.
    #[allow(clippy::missing_const_for_thread_local)]
    fn sweep_now_and_then(&self) {
        sync::thread_local! {
            static INSERTS: core::cell::Cell<u32> = core::cell::Cell::new(0);
        }
        let due = INSERTS
            .try_with(|n| {
                let next = n.get().wrapping_add(1);
                n.set(next);
                next % SWEEP_EVERY == 0
            })
            .unwrap_or(true);
        if due && !self.sweep_some(SWEEP_CHUNK) {
            self.epochs.try_advance();
        }
    }

    /// Sweeps up to `buckets` buckets of the current epoch's dead tag, if any are left to claim.
    /// Whether it did.
    pub(crate) fn sweep_some(&self, buckets: usize) -> bool {
        let Some(claim) = self.epochs.claim(buckets) else {
            return false;
        };
        self.table.sweep(claim.buckets.clone(), dead_tag_at(claim.epoch));
        self.epochs.swept(&claim);
        true
    }

    /// The table (for tests).
    #[cfg(feature = "test-hooks")]
    pub(crate) fn table(&self) -> &Table<Windowed> {
        &self.table
    }

    /// The epochs (for tests).
    #[cfg(feature = "test-hooks")]
    pub(crate) fn epochs(&self) -> &Epochs {
        &self.epochs
    }
}

impl<S> fmt::Debug for WindowedFilter<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WindowedFilter")
            .field("capacity", &self.capacity)
            .field("window", &self.window)
            .field("len", &self.len())
            .field("epoch", &self.epochs.current())
            .finish_non_exhaustive()
    }
}
