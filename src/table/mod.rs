//! The concurrent protocol: lookups, inserts, relocations and removes on a table of bucket words.
//!
//! # Orderings
//!
//! ## Invariants
//!
//! 1. **Every write to a bucket word is a CAS**, so each one continues the release sequence of
//!    the writes before it; no plain store touches a table that other threads can see.
//! 2. **A fingerprint is never outside the table.** A relocation of `f` from `src` to
//!    `dst = alt(src, f)` checks that `src` holds `f`, CASes `f` into an empty lane of `dst`
//!    (copy-in), and only then takes one `f` out of `src`. In between `f` has one copy too many,
//!    never one too few.
//! 3. **Every removal is announced.** Every CAS that takes a fingerprint out of a bucket (a
//!    relocation's removal from its source, a `remove`, a surplus removal) is preceded in its
//!    thread by a bump, an AcqRel `fetch_add` of [`VERSION_BUMP`], of the version stripe of the
//!    fingerprint's bucket pair, made after the thread saw the fingerprint in that bucket and after
//!    everything the thread did before (a relocation's copy-in, an insert it made earlier).
//!    Adding a fingerprint is never announced.
//! 4. **Copies are interchangeable.** Copies of one fingerprint in one bucket pair are the same to
//!    every operation, so a lane going from `f` to empty and back to `f` (ABA) is harmless, and
//!    which item a removed copy "was" does not matter.
//! 5. **A pair has one stripe**, indexed by the smaller of its two buckets, whichever bucket an
//!    operation reads first.
//!
//! ## Inserts
//!
//! An insert CASes its fingerprint into an empty lane of either bucket (Release: a lookup that
//! sees the lane also sees what the inserting thread did before; no validation rests on it). If
//! neither has room, it plans the shortest cuckoo path (`path`) and commits it last hop first,
//! each hop a relocation as in invariant 2, then puts its fingerprint in the lane the path freed.
//! A hop that meets a change abandons the path with every fingerprint still in the table, and the
//! insert plans again: a failed hop means another thread changed a bucket on the path, so the
//! retries are lock-free, and [`InsertError::Full`] means that a search found no path.
//!
//! ## The validated read
//!
//! A lookup loads the pair's stripe (`V1`, Acquire), both buckets (Acquire), and the stripe again
//! (`V2`). A match answers `true` at once. A miss counts only if `V2` reads the same write as
//! `V1`; otherwise the lookup retries, and after [`DEFAULT_LOOKUP_RETRIES`] failed validations it
//! answers `true` without proof (a rare extra false positive, counted in the stats).
//!
//! **Lemma.** Let a validated miss observe a removal `R` of `f` from one of its buckets (the
//! bucket load reads `R`'s CAS or a later write of that word). `R` is a release CAS and every
//! later write of the word is an RMW, so `R` synchronises with the Acquire bucket load. `R`'s
//! announcing bump `B` is sequenced before `R`, so `B` happens-before the load and hence before
//! `V2`, which reads `B` or a later bump of the stripe. `V2` reads the same write as `V1`, so `B`
//! is that write or an earlier one, and as every write of a stripe is an RMW, `B` synchronises
//! with `V1`. So **everything that happened-before the announcement of an observed removal is
//! visible to both bucket loads.**
//!
//! **No false miss.** Follow an item's copy: first the copy its insert put in; whenever a removal
//! takes that copy, the item lives on in another copy of the same fingerprint in the same pair
//! whose add happened-before the removal's announcement, if there is one:
//!
//! - a relocation: its copy-in is sequenced before its bump (invariants 2, 3);
//! - a colliding item Y (same fingerprint, same pair, perhaps the opposite first bucket) inserted
//!   and then removed, or the same key inserted twice and removed once: Y's put happens-before
//!   the remove's bump, whichever bucket each copy is in. By invariant 4 a remove that takes the
//!   older copy has moved the older item into Y's copy, and it announced that move like a
//!   relocation does.
//!
//! The item is gone only when a removal takes its copy with no such successor: a remove of the
//! item itself. For an item whose insert happened-before the lookup and whose copy no remove takes
//! during it, the put of the first copy happens-before both bucket loads; each time a load observes
//! the removal of the item's current copy, the lemma makes it observe the add of the next one; the
//! chain of removals is finite, so some load observes a copy present, and the miss cannot
//! validate. Removes validate absence the same way before they answer `false`. `count` makes
//! the same validated read and counts matching lanes; the chain argument, applied to each copy
//! present throughout (distinct copies have distinct successors: each relocation adds its own),
//! makes a validated count at least the number of such copies.
//!
//! Two colliding operations with no order between them (an insert of Y and a remove of Y on
//! different threads, running at once) may take effect in either order. If the remove is
//! announced first it may take X's copy before Y's arrives, and a lookup of X in that window may
//! answer `false`: exactly the outcome of the remove running first, which, like every removal of
//! an item that is not in the filter, removes a colliding one (see `CuckooFilter::remove`).
//!
//! ## Relocations that lose their source
//!
//! When a relocation finds its source copy already gone (another relocation or a remove took it),
//! its copy-in is one copy too many. It removes one copy of `f` from either bucket with the same
//! validated loop as `remove` ([`Table::take_validated`]): a single unvalidated pass could miss a
//! copy that is moving between the two buckets, and every removal the loop makes is announced.
//!
//! ## Snapshots
//!
//! A snapshot scan ([`scan`]) publishes itself in the low half of every version stripe. A
//! removal's bump returns the stripe's previous value, so the remover knows whether a scan began
//! before its announcement; if one did, and the scan has started on every stripe, it copies the
//! bucket into the scan before it takes the fingerprint out. The argument is in the `scan`
//! module. A scan's start and end change every stripe's value, so a lookup that straddles one
//! validates once more; lookups never take part otherwise.

mod path;
mod scan;
mod words;

pub(crate) use scan::ScannedWords;

use crate::bucket::{self, LANES};
use crate::error::{BuildError, InsertError};
use crate::hash::{self, Slots};
use crate::stats::{Counters, Event, Stats};
use crate::sync::{self, load_for_update, reload_for_update, AtomicU64, Ordering};

use path::{Hop, PathSearch};
use words::Words;

/// Validation attempts a lookup makes before answering `true` without proof.
pub(crate) const DEFAULT_LOOKUP_RETRIES: u32 = 8;

/// What a removal's announcement adds to its stripe: the high half counts announcements, the low
/// half holds the id of a running snapshot scan (0 when none runs).
const VERSION_BUMP: u64 = 1 << 32;

/// Buckets a version stripe covers, and the most stripes a table has. Small tables keep few
/// stripes (2.2 bytes an item at 100,000 items); a large table gets up to 64 KiB of them, so that
/// the announcements of two threads' removals rarely write a cache line the other thread's
/// lookups are reading. A removal makes an unrelated lookup retry only if it lands on the same
/// stripe within the lookup's few nanoseconds. Under the model checker every bucket has its own
/// stripe, so that a model can tell a pair's stripe from its first bucket's.
const BUCKETS_PER_VERSION: usize = if sync::MODEL_CHECKING { 1 } else { 128 };
const MAX_VERSION_STRIPES: usize = 1 << 13;

#[derive(Debug)]
pub(crate) struct Table {
    buckets: Words,
    /// Whether large tables (this one's copies too) are mapped on huge pages (`words`).
    huge_pages: bool,
    /// Version stripes, indexed by the smaller bucket of a pair: removals announced (high half)
    /// and the running scan's id (low half).
    versions: Box<[AtomicU64]>,
    lookup_retries: u32,
    counters: Counters,
    scan: scan::ScanSlot,
}

impl Table {
    pub(crate) fn try_new(
        buckets: usize,
        lookup_retries: u32,
        huge_pages: bool,
    ) -> Result<Self, BuildError> {
        let bytes = buckets.saturating_mul(core::mem::size_of::<AtomicU64>());
        Ok(Self {
            buckets: Words::filled(buckets, 0, huge_pages)
                .ok_or(BuildError::AllocationFailed { bytes })?,
            huge_pages,
            versions: versions_for(buckets),
            lookup_retries,
            counters: Counters::new(buckets),
            scan: scan::ScanSlot::new(),
        })
    }

    /// A table holding `words`, bucket words loaded from a snapshot, which hold `items`
    /// fingerprints.
    pub(crate) fn from_words(
        words: Vec<u64>,
        lookup_retries: u32,
        huge_pages: bool,
        items: usize,
    ) -> Self {
        Self {
            versions: versions_for(words.len()),
            counters: Counters::with_items(words.len(), items),
            buckets: Words::from_values(words, huge_pages),
            huge_pages,
            lookup_retries,
            scan: scan::ScanSlot::new(),
        }
    }

    /// A table of `buckets`, words no other thread can reach yet, counting the fingerprints they
    /// hold.
    fn from_buckets(buckets: Words, lookup_retries: u32, huge_pages: bool) -> Self {
        // Relaxed: no other thread has the words.
        let items = buckets.iter().map(|w| bucket::occupied(w.load(Ordering::Relaxed))).sum();
        Self {
            versions: versions_for(buckets.len()),
            counters: Counters::with_items(buckets.len(), items),
            buckets,
            huge_pages,
            lookup_retries,
            scan: scan::ScanSlot::new(),
        }
    }

    /// Moves one copy of `fingerprint` from bucket `from` to bucket `to` (its other bucket), as
    /// a step of an insert's path would.
    #[cfg(test)]
    pub(crate) fn relocate_for_test(&self, fingerprint: u16, from: usize, to: usize) -> bool {
        self.relocate(Hop { fingerprint, from, to })
    }

    pub(crate) fn bucket_count(&self) -> usize {
        self.buckets.len()
    }

    pub(crate) fn len(&self) -> usize {
        self.counters.len()
    }

    pub(crate) fn stats(&self) -> Stats {
        self.counters.snapshot()
    }

    pub(crate) fn memory_usage(&self) -> usize {
        core::mem::size_of::<Self>()
            + core::mem::size_of_val(&*self.buckets)
            + core::mem::size_of_val(&*self.versions)
            + self.counters.memory_usage()
    }

    /// What [`memory_usage`](Self::memory_usage) will report for a table of `buckets` buckets,
    /// before it is allocated (a growable filter sizes its next level to fit its ceiling).
    pub(crate) fn memory_for(buckets: usize) -> usize {
        core::mem::size_of::<Self>()
            .saturating_add(buckets.saturating_mul(core::mem::size_of::<AtomicU64>()))
            .saturating_add(version_stripes(buckets) * core::mem::size_of::<AtomicU64>())
            .saturating_add(Counters::memory_for(buckets))
    }

    pub(crate) fn lookup_retries(&self) -> u32 {
        self.lookup_retries
    }

    pub(crate) fn huge_pages(&self) -> bool {
        self.huge_pages
    }

    /// Copies of `fingerprint` in bucket `index` (a plain read, for tests).
    #[cfg(feature = "test-hooks")]
    pub(crate) fn fingerprint_count(&self, index: usize, fingerprint: u16) -> usize {
        bucket::count(self.buckets[index].load(Ordering::Acquire), fingerprint)
    }

    /// The version stripe of the pair `{i, j}` (invariant 5).
    #[inline]
    fn version(&self, i: usize, j: usize) -> &AtomicU64 {
        let stripe = i.min(j) & (self.versions.len() - 1);
        // SAFETY: the stripe count is a power of two (`version_stripes`), so the mask keeps the
        // index below it: no bounds check on a lookup's path.
        unsafe { self.versions.get_unchecked(stripe) }
    }

    /// The slots of the item whose mixed hash is `mixed` in this table: both buckets below
    /// [`bucket_count`](Self::bucket_count), as `hash::index` and `hash::alt_index` stay below the
    /// count they are given. [`contains_at`](Self::contains_at) relies on it.
    #[inline]
    pub(crate) fn slots(&self, mixed: u64) -> Slots {
        hash::mixed_slots(mixed, self.buckets.len())
    }

    /// Whether the item whose mixed hash is `mixed` is present: wait-free, at most
    /// `lookup_retries + 1` validated reads.
    #[inline]
    pub(crate) fn contains(&self, mixed: u64) -> bool {
        let slots = self.slots(mixed);
        // SAFETY: `slots` comes from this table's `slots`.
        unsafe { self.contains_at(slots) }
    }

    /// [`contains`](Self::contains) for the item's slots, computed beforehand (a batch computes
    /// them to prefetch its buckets).
    ///
    /// # Safety
    ///
    /// `slots` must come from this table's [`slots`](Self::slots): the lookup indexes the table
    /// and its stripes without bounds checks.
    #[inline]
    pub(crate) unsafe fn contains_at(&self, slots: Slots) -> bool {
        debug_assert!(slots.first.max(slots.second) < self.buckets.len());
        // The first attempt is straight-line code: both buckets are loaded unconditionally (a
        // one-bucket item loads its bucket twice) and a match is a value, not a branch, so a
        // lookup in a table larger than the cache issues both loads at once and the CPU
        // overlaps them with the next lookups' loads. The retries are out of line. The slice
        // is taken first so that its address and length stay in registers across the Acquire
        // loads. No index is bounds-checked: three compares and branches of a lookup's 60-odd
        // instructions.
        let buckets = &*self.buckets;
        let version = self.version(slots.first, slots.second);
        // Acquire: pairs with the AcqRel announcement bumps (see the lemma).
        let before = version.load(Ordering::Acquire);
        // SAFETY (both): the buckets are below the bucket count, by the caller's contract.
        // Acquire: pairs with the release removal CAS in `take` (and every later CAS in its
        // release sequence), so seeing a removal also shows the bump announcing it.
        let first = unsafe { buckets.get_unchecked(slots.first) }.load(Ordering::Acquire);
        let second = unsafe { buckets.get_unchecked(slots.second) }.load(Ordering::Acquire);
        let found = bucket::contains(first, slots.fingerprint)
            | bucket::contains(second, slots.fingerprint);
        // Relaxed: the Acquire bucket loads above keep this load after them. (Also read on a
        // match, where it is not needed, to keep the common path free of data-dependent
        // branches.)
        if found | (version.load(Ordering::Relaxed) == before) {
            return found;
        }
        self.contains_retry(slots.fingerprint, slots.first, slots.second)
    }

    /// The validation attempts of [`contains`](Self::contains) after its first one failed.
    /// (Fields rather than [`Slots`], so the caller need not spill a struct on every lookup.)
    #[cold]
    #[inline(never)]
    fn contains_retry(&self, fingerprint: u16, first: usize, second: usize) -> bool {
        let version = self.version(first, second);
        for _ in 0..self.lookup_retries {
            // Acquire: pairs with the AcqRel announcement bumps, as in `contains`.
            let before = version.load(Ordering::Acquire);
            if self.holds(first, fingerprint)
                || (second != first && self.holds(second, fingerprint))
            {
                return true;
            }
            // Relaxed: the Acquire bucket loads above keep this load after them.
            if version.load(Ordering::Relaxed) == before {
                return false;
            }
        }
        self.counters.record(first, Event::ConservativeLookup);
        true
    }

    /// Copies of the item's fingerprint in its two buckets, read as a lookup validates a miss:
    /// never fewer than the copies present throughout the call (the lemma, applied to each copy).
    /// Lock-free: it reads again only when a removal from the pair was announced meanwhile.
    pub(crate) fn count(&self, slots: Slots) -> usize {
        let Slots { fingerprint, first, second } = slots;
        let version = self.version(first, second);
        loop {
            // Acquire: pairs with the AcqRel announcement bumps, as in `contains`.
            let before = version.load(Ordering::Acquire);
            // Acquire: pairs with the release removal CAS in `take`, as in `holds`.
            let mut copies =
                bucket::count(self.buckets[first].load(Ordering::Acquire), fingerprint);
            if second != first {
                // Acquire: as the load above.
                copies += bucket::count(self.buckets[second].load(Ordering::Acquire), fingerprint);
            }
            // Relaxed: the Acquire bucket loads above keep this load after them.
            if version.load(Ordering::Relaxed) == before {
                return copies;
            }
        }
    }

    /// Whether either of the item's buckets holds its fingerprint, by one plain read of each: a
    /// hint, which a relocation in flight can change.
    #[inline]
    pub(crate) fn may_hold(&self, slots: Slots) -> bool {
        // Relaxed: only a hint; it decides which level an insert joins (`levels`), never what a
        // lookup answers.
        let first = self.buckets[slots.first].load(Ordering::Relaxed);
        let second = self.buckets[slots.second].load(Ordering::Relaxed);
        bucket::contains(first, slots.fingerprint) | bucket::contains(second, slots.fingerprint)
    }

    /// Whether every lane of the item's buckets holds its fingerprint, by one plain read of
    /// each: a hint, which a relocation in flight can change.
    pub(crate) fn filled_with(&self, slots: Slots) -> bool {
        // Relaxed: only a hint; it decides whether an insert grows the filter, never what a
        // lookup answers.
        let first = self.buckets[slots.first].load(Ordering::Relaxed);
        let second = self.buckets[slots.second].load(Ordering::Relaxed);
        let lanes = if slots.first == slots.second { LANES } else { 2 * LANES };
        bucket::count(first, slots.fingerprint)
            + usize::from(slots.first != slots.second) * bucket::count(second, slots.fingerprint)
            == lanes
    }

    #[inline]
    fn holds(&self, index: usize, fingerprint: u16) -> bool {
        // Acquire: pairs with the release removal CAS in `take`, as in `contains`.
        bucket::contains(self.buckets[index].load(Ordering::Acquire), fingerprint)
    }

    /// Asks the CPU to start loading both of an item's buckets, for a lookup soon after
    /// (`batch`). Only a hint: it reads nothing and orders nothing.
    #[inline]
    pub(crate) fn prefetch(&self, slots: Slots) {
        sync::prefetch(&self.buckets[slots.first]);
        sync::prefetch(&self.buckets[slots.second]);
    }

    /// Stores the item: an empty lane in either bucket, else a committed cuckoo path. A refusal
    /// is counted in the stats.
    pub(crate) fn insert(&self, slots: Slots) -> Result<(), InsertError> {
        let inserted = self.try_insert(slots);
        if inserted.is_err() {
            self.record_refused(slots.first);
        }
        inserted.map(drop)
    }

    /// Counts an insert that this table, and every other place the filter tried, refused.
    pub(crate) fn record_refused(&self, bucket: usize) {
        self.counters.record(bucket, Event::Refused);
    }

    /// [`insert`](Self::insert) without counting a refusal (a growable filter that is refused by
    /// its newest level adds a level rather than refusing the item), returning how many
    /// fingerprints the insert relocated.
    pub(crate) fn try_insert(&self, slots: Slots) -> Result<usize, InsertError> {
        // The second bucket is needed whenever the first is full (most inserts at high load);
        // in a table larger than the cache, start loading it now rather than after the first.
        sync::prefetch(&self.buckets[slots.second]);
        if self.put(slots.first, slots.fingerprint) || self.put(slots.second, slots.fingerprint) {
            self.counters.record(slots.first, Event::Inserted { relocations: 0 });
            return Ok(0);
        }
        PathSearch::with_reused(|search| self.insert_by_path(search, slots))
    }

    /// The rest of [`insert`](Self::insert) when neither bucket has a free lane.
    ///
    /// Searches again for as long as a planned path meets a change: each failed commit means that
    /// another thread's operation changed a bucket on the path, so the loop is lock-free, and
    /// [`InsertError::Full`] means that the search found no path, never that commits met
    /// contention.
    fn insert_by_path(&self, search: &mut PathSearch, slots: Slots) -> Result<usize, InsertError> {
        while let Some(root) = search.plan(&self.buckets, slots) {
            if self.commit(search.hops(), root, slots) {
                let relocations = search.hops().len();
                self.counters.record(slots.first, Event::Inserted { relocations });
                return Ok(relocations);
            }
            self.counters.record(slots.first, Event::PathRetried);
        }
        Err(InsertError::Full)
    }

    /// Carries out a planned path last hop first, then stores the item in the freed lane.
    /// Returns false, with every fingerprint still in the table, when any step meets a change.
    fn commit(&self, hops: &[Hop], root: usize, slots: Slots) -> bool {
        hops.iter().all(|hop| self.relocate(*hop))
            && (self.put(root, slots.fingerprint)
                || self.put(slots.first ^ slots.second ^ root, slots.fingerprint))
    }

    /// Moves one copy of `hop.fingerprint` from `hop.from` to `hop.to`: copy in, then take out
    /// of the source with an announced removal (invariants 2 and 3).
    fn relocate(&self, hop: Hop) -> bool {
        let Hop { fingerprint, from, to } = hop;
        // Relaxed: only a hint; the removal below decides.
        if !bucket::contains(load_for_update(&self.buckets[from], Ordering::Relaxed), fingerprint) {
            return false;
        }
        if !self.put(to, fingerprint) {
            return false;
        }
        if self.take(from, fingerprint, self.version(from, to)) {
            self.counters.record(from, Event::Relocated);
            return true;
        }
        // Another relocation or a remove took the source copy: ours is now one too many.
        if self.take_validated(fingerprint, from, to) {
            self.counters.record(from, Event::SurplusRemoved);
        }
        false
    }

    /// Removes one copy of the item, if present.
    pub(crate) fn remove(&self, slots: Slots) -> bool {
        // As in `insert`: about half the items are in their second bucket, so start loading it
        // with the first.
        sync::prefetch(&self.buckets[slots.second]);
        let removed = self.take_validated(slots.fingerprint, slots.first, slots.second);
        if removed {
            self.counters.record(slots.first, Event::Removed);
        }
        removed
    }

    /// Takes one copy of `fingerprint` out of bucket `first` or `second` (its pair), validating
    /// absence as a lookup does: lock-free, retried only when a removal from the pair was
    /// announced meanwhile.
    fn take_validated(&self, fingerprint: u16, first: usize, second: usize) -> bool {
        let version = self.version(first, second);
        loop {
            // Acquire: pairs with the AcqRel announcement bumps, as in `contains`.
            let before = version.load(Ordering::Acquire);
            if self.take(first, fingerprint, version)
                || (second != first && self.take(second, fingerprint, version))
            {
                return true;
            }
            // Relaxed: the Acquire bucket loads in `take` keep this load after them.
            if version.load(Ordering::Relaxed) == before {
                return false;
            }
        }
    }

    /// Takes one copy of `fingerprint` out of bucket `index`, if it holds one, announcing the
    /// removal on `version`, the stripe of the fingerprint's pair (invariant 3).
    fn take(&self, index: usize, fingerprint: u16, version: &AtomicU64) -> bool {
        let word = &self.buckets[index];
        // Acquire: pairs with the release removal CAS of other takes, as in `holds`. The absence
        // decision is taken on this plain load, which loom may serve stale.
        let seen = word.load(Ordering::Acquire);
        if !bucket::contains(seen, fingerprint) {
            return false;
        }
        self.announce_removal(index, version);
        let mut current = reload_for_update(word, seen, Ordering::Acquire);
        while let Some(lane) = bucket::find(current, fingerprint) {
            // Release: pairs with the Acquire bucket loads of lookups, removes and scans; a load
            // that sees this removal also sees the announcement sequenced before it.
            match word.compare_exchange_weak(
                current,
                bucket::without_lane(current, lane),
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return true,
                Err(actual) => current = actual,
            }
        }
        false
    }

    /// Announces a removal from bucket `index` (invariant 3), and if a snapshot scan began
    /// before the announcement, copies the bucket into it first.
    #[inline]
    fn announce_removal(&self, index: usize, version: &AtomicU64) {
        // AcqRel. Release: whatever this thread did before (a relocation's copy-in, an earlier
        // insert) is visible to a reader whose first stripe load reads this bump or a later
        // one; pairs with the Acquire stripe loads of `contains`, `contains_retry` and
        // `take_validated`, and with the AcqRel start of a scan (`scan`). Acquire: if this reads
        // a scan's end on the stripe, the scan's whole pass happens-before our removal; pairs
        // with the AcqRel end in `scan`.
        let previous = version.fetch_add(VERSION_BUMP, Ordering::AcqRel);
        let scan = scan::id_in(previous);
        if scan != 0 {
            self.scan.capture(scan, index, &self.buckets[index]);
        }
    }

    /// Stores `fingerprint` in an empty lane of bucket `index`, if it has one.
    fn put(&self, index: usize, fingerprint: u16) -> bool {
        let word = &self.buckets[index];
        let mut current = load_for_update(word, Ordering::Relaxed);
        while let Some(lane) = bucket::find_empty(current) {
            // Release: a reader whose Acquire load sees this lane also sees what the inserting
            // thread did before. Validation does not rest on it: for a relocation's copy-in, the
            // announcement that follows is what publishes it.
            match word.compare_exchange_weak(
                current,
                bucket::with_lane(current, lane, fingerprint),
                Ordering::Release,
                Ordering::Relaxed,
            ) {
                Ok(_) => return true,
                Err(actual) => current = actual,
            }
        }
        false
    }

    /// Empties every bucket and resets the counters.
    pub(crate) fn clear(&mut self) {
        for word in self.buckets.iter() {
            // A plain store is sound here only because `&mut self` means no other thread can
            // reach the table.
            word.store(0, Ordering::Relaxed);
        }
        self.counters = Counters::new(self.buckets.len());
    }
}

/// The version stripes of a table of `buckets` buckets.
fn versions_for(buckets: usize) -> Box<[AtomicU64]> {
    (0..version_stripes(buckets)).map(|_| AtomicU64::new(0)).collect()
}

/// How many version stripes a table of `buckets` buckets has (a power of two).
fn version_stripes(buckets: usize) -> usize {
    (buckets.checked_next_power_of_two().unwrap_or(1 << (usize::BITS - 1)) / BUCKETS_PER_VERSION)
        .clamp(1, MAX_VERSION_STRIPES)
}
