//! The concurrent protocol: lookups, inserts, relocations and removes on a table of bucket words.
//!
//! # Orderings
//!
//! Invariants:
//!
//! 1. A fingerprint is never outside the table. A relocation of `f` from `src` to
//!    `dst = alt(src, f)` is exactly: check `src` holds `f`; CAS `f` into an empty lane of `dst`
//!    (copy in); bump the version of the pair `{src, dst}` (bump); CAS one `f` out of `src`
//!    (remove). Between copy-in and remove, `f` has one copy too many, never one too few.
//! 2. Every write to a bucket word is a CAS, so each one continues the release sequence of the
//!    writes before it; no plain store touches a table other threads can see.
//! 3. Copies of the same fingerprint in the same bucket pair are interchangeable, so a lane
//!    changing from `f` to empty and back to `f` (ABA) is harmless.
//!
//! The false miss this prevents: a reader loads `dst` before the copy-in and `src` after the
//! removal. Its validation catches that case as follows:
//!
//! - The reader loads the pair's version (Acquire), both buckets (Acquire), then the version
//!   again. If its `src` load read the removal (Release) or a later CAS in its release sequence,
//!   the bump, sequenced before the removal, happens-before the second version load, which
//!   therefore differs from the first unless the first already read the bump or later. In that
//!   case the first load (Acquire) synchronised with the bump (AcqRel), so the copy-in
//!   happens-before the reader's `dst` load, and the reader sees `f` in `dst`.
//! - An unchanged version after a miss is therefore proof of absence at some instant during the
//!   lookup; a changed one means retry, and after [`DEFAULT_LOOKUP_RETRIES`] the lookup answers
//!   `true` (a rare extra false positive, counted in the stats).
//!
//! Removes use the same validated read, retried until they take a copy or prove absence. When a
//! relocation finds its source copy already gone (another relocation or a remove took it), its
//! copy-in left a surplus copy, which it removes with that same validated loop: a single scan
//! could miss a copy that is moving between the two buckets.
//!
//! Snapshots (`snapshot`) copy the whole table with the same validated read: every stripe, every
//! bucket, every stripe again. A snapshot may also hold relocations back
//! ([`Table::hold_relocations`]), which paces them but orders nothing.

use crate::bucket;
use crate::error::{BuildError, InsertError};
use crate::hash::Slots;
use crate::path::{Hop, PathSearch};
use crate::stats::{Counters, Event, Stats};
use crate::sync::{load_for_update, AtomicU32, AtomicU64, Ordering};

/// Validation attempts a lookup makes before answering `true` without proof.
pub(crate) const DEFAULT_LOOKUP_RETRIES: u32 = 8;

/// Path searches an insert makes before it gives up under contention.
const MAX_PATH_SEARCHES: usize = 64;

/// Buckets a version stripe covers, and the most stripes a table has: 4 KiB of counters stays
/// in L1 for lookups, and a relocation makes an unrelated lookup retry only if it lands on the
/// same stripe within the lookup's few nanoseconds.
const BUCKETS_PER_VERSION: usize = 64;
const MAX_VERSION_STRIPES: usize = 1 << 10;

#[derive(Debug)]
pub(crate) struct Table {
    buckets: Box<[AtomicU64]>,
    /// Version counters striped by the smaller bucket of a pair; bumped by every relocation.
    versions: Box<[AtomicU32]>,
    lookup_retries: u32,
    counters: Counters,
    /// Snapshots holding relocations back (low 32 bits) and holds ended so far (high 32 bits,
    /// wrapping); see [`Table::hold_relocations`].
    relocation_holds: AtomicU64,
}

impl Table {
    pub(crate) fn try_new(buckets: usize, lookup_retries: u32) -> Result<Self, BuildError> {
        Ok(Self {
            buckets: zeroed(buckets)?,
            versions: versions_for(buckets),
            lookup_retries,
            counters: Counters::new(),
            relocation_holds: AtomicU64::new(0),
        })
    }

    /// A table holding `words`, bucket words loaded from a snapshot, which hold `items`
    /// fingerprints.
    pub(crate) fn from_words(words: Vec<u64>, lookup_retries: u32, items: usize) -> Self {
        Self {
            versions: versions_for(words.len()),
            buckets: words.into_iter().map(AtomicU64::new).collect(),
            lookup_retries,
            counters: Counters::with_items(items),
            relocation_holds: AtomicU64::new(0),
        }
    }

    /// The bucket words, for a snapshot's scan (`snapshot`).
    pub(crate) fn bucket_words(&self) -> &[AtomicU64] {
        &self.buckets
    }

    /// The version stripes, for a snapshot's scan (`snapshot`).
    pub(crate) fn version_stripes(&self) -> &[AtomicU32] {
        &self.versions
    }

    /// Makes relocations that start from now on wait until the returned guard is dropped (or
    /// until any other hold ends): a snapshot's scan under steady relocations converges.
    ///
    /// Progress only: no ordering argument rests on the hold, so its atomics are all Relaxed.
    /// A relocation that passed its check before the hold went up still runs, and snapshots
    /// validate every scan against the version stripes whatever the hold does.
    pub(crate) fn hold_relocations(&self) -> RelocationHold<'_> {
        self.relocation_holds.fetch_add(1, Ordering::Relaxed);
        RelocationHold { holds: &self.relocation_holds }
    }

    /// Waits while a snapshot holds relocations (see [`hold_relocations`](Self::hold_relocations)),
    /// until no hold is up or some hold has ended since the wait began, so a wait lasts at most
    /// one hold even while snapshots overlap. Not under loom: the hold only paces relocations,
    /// and the models keep their state space for the protocol itself.
    #[inline]
    fn await_relocation_holds(&self) {
        #[cfg(not(loom))]
        {
            // Relaxed: see `hold_relocations`.
            let seen = self.relocation_holds.load(Ordering::Relaxed);
            if seen as u32 != 0 {
                self.await_hold_end(seen);
            }
        }
    }

    #[cfg(not(loom))]
    #[cold]
    fn await_hold_end(&self, seen: u64) {
        let mut spins = 0u32;
        loop {
            if spins < 64 {
                spins += 1;
                core::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
            // Relaxed: see `hold_relocations`.
            let now = self.relocation_holds.load(Ordering::Relaxed);
            if now as u32 == 0 || now >> 32 != seen >> 32 {
                return;
            }
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
            + Counters::memory_usage()
    }

    /// Copies of `fingerprint` in bucket `index` (a plain read, for tests).
    pub(crate) fn fingerprint_count(&self, index: usize, fingerprint: u16) -> usize {
        bucket::count(self.buckets[index].load(Ordering::Acquire), fingerprint)
    }

    #[inline]
    fn version(&self, slots: Slots) -> &AtomicU32 {
        let pair = slots.first.min(slots.second);
        &self.versions[pair & (self.versions.len() - 1)]
    }

    /// Whether the item is present: wait-free, at most `lookup_retries + 1` validated reads.
    #[inline]
    pub(crate) fn contains(&self, slots: Slots) -> bool {
        let version = self.version(slots);
        // The first attempt is straight-line code: both buckets are loaded unconditionally (a
        // one-bucket item loads its bucket twice) and a match is a value, not a branch, so a
        // lookup in a table larger than the cache issues both loads at once and the CPU
        // overlaps them with the next lookups' loads. The retries are out of line. The slice
        // is taken first so that its address and length stay in registers across the Acquire
        // loads.
        let buckets = &*self.buckets;
        // Acquire: pairs with the AcqRel bump in `relocate`.
        let before = version.load(Ordering::Acquire);
        // Acquire: pairs with the Release removal CAS in `relocate` (and every later CAS in its
        // release sequence), so seeing a removal also shows the bump before it.
        let first = buckets[slots.first].load(Ordering::Acquire);
        let second = buckets[slots.second].load(Ordering::Acquire);
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
        let slots = Slots { fingerprint, first, second };
        let version = self.version(slots);
        for _ in 0..self.lookup_retries {
            // Acquire: pairs with the AcqRel bump in `relocate`.
            let before = version.load(Ordering::Acquire);
            if self.holds(slots.first, slots.fingerprint)
                || (slots.second != slots.first && self.holds(slots.second, slots.fingerprint))
            {
                return true;
            }
            // Relaxed: the Acquire bucket loads above keep this load after them.
            if version.load(Ordering::Relaxed) == before {
                return false;
            }
        }
        self.counters.record(slots.first, Event::ConservativeLookup);
        true
    }

    #[inline]
    fn holds(&self, index: usize, fingerprint: u16) -> bool {
        // Acquire: pairs with the Release removal CAS in `relocate` (and every later CAS in its
        // release sequence), so seeing a removal also shows the bump before it.
        bucket::contains(self.buckets[index].load(Ordering::Acquire), fingerprint)
    }

    /// Asks the CPU to start loading both of an item's buckets, for a lookup soon after
    /// (`batch`). Only a hint: it reads nothing and orders nothing.
    #[inline]
    pub(crate) fn prefetch(&self, slots: Slots) {
        crate::batch::prefetch(&self.buckets[slots.first]);
        crate::batch::prefetch(&self.buckets[slots.second]);
    }

    /// Stores the item: an empty lane in either bucket, else a committed cuckoo path.
    pub(crate) fn insert(&self, slots: Slots) -> Result<(), InsertError> {
        // The second bucket is needed whenever the first is full (most inserts at high load);
        // in a table larger than the cache, start loading it now rather than after the first.
        crate::batch::prefetch(&self.buckets[slots.second]);
        if self.put(slots.first, slots.fingerprint) || self.put(slots.second, slots.fingerprint) {
            self.counters.record(slots.first, Event::Inserted { relocations: 0 });
            return Ok(());
        }
        PathSearch::with_reused(|search| self.insert_by_path(search, slots))
    }

    /// The rest of [`insert`](Self::insert) when neither bucket has a free lane.
    fn insert_by_path(&self, search: &mut PathSearch, slots: Slots) -> Result<(), InsertError> {
        for _ in 0..MAX_PATH_SEARCHES {
            let Some(root) = search.plan(&self.buckets, slots) else {
                break;
            };
            if self.commit(search.hops(), root, slots) {
                let relocations = search.hops().len();
                self.counters.record(slots.first, Event::Inserted { relocations });
                return Ok(());
            }
            self.counters.record(slots.first, Event::PathRetried);
        }
        self.counters.record(slots.first, Event::Refused);
        Err(InsertError::Full)
    }

    /// Carries out a planned path last hop first, then stores the item in the freed lane.
    /// Returns false, with every fingerprint still in the table, when any step meets a change.
    fn commit(&self, hops: &[Hop], root: usize, slots: Slots) -> bool {
        hops.iter().all(|hop| self.relocate(*hop))
            && (self.put(root, slots.fingerprint)
                || self.put(slots.first ^ slots.second ^ root, slots.fingerprint))
    }

    /// Moves one copy of `hop.fingerprint` from `hop.from` to `hop.to`: copy in, bump, remove.
    fn relocate(&self, hop: Hop) -> bool {
        let Hop { fingerprint, from, to } = hop;
        self.await_relocation_holds();
        // Relaxed: only a hint; the removal below decides.
        if !bucket::contains(load_for_update(&self.buckets[from], Ordering::Relaxed), fingerprint) {
            return false;
        }
        if !self.put(to, fingerprint) {
            return false;
        }
        let slots = Slots { fingerprint, first: from, second: to };
        // AcqRel: the release half publishes the copy-in to a reader whose first version load
        // reads this bump; pairs with the Acquire version loads in `contains` and `remove`.
        self.version(slots).fetch_add(1, Ordering::AcqRel);
        if self.take(from, fingerprint) {
            self.counters.record(from, Event::Relocated);
            return true;
        }
        // Another relocation or a remove took the source copy: ours is now one too many.
        if self.take_validated(slots) {
            self.counters.record(from, Event::SurplusRemoved);
        }
        false
    }

    /// Removes one copy of the item, if present.
    pub(crate) fn remove(&self, slots: Slots) -> bool {
        // As in `insert`: about half the items are in their second bucket, so start loading it
        // with the first.
        crate::batch::prefetch(&self.buckets[slots.second]);
        let removed = self.take_validated(slots);
        if removed {
            self.counters.record(slots.first, Event::Removed);
        }
        removed
    }

    /// Takes one copy of the item, validating absence against concurrent relocations:
    /// lock-free, retried only when a relocation of the pair completed meanwhile.
    fn take_validated(&self, slots: Slots) -> bool {
        let version = self.version(slots);
        loop {
            // Acquire: pairs with the AcqRel bump in `relocate`, as in `contains`.
            let before = version.load(Ordering::Acquire);
            if self.take(slots.first, slots.fingerprint)
                || (slots.second != slots.first && self.take(slots.second, slots.fingerprint))
            {
                return true;
            }
            // Relaxed: the Acquire bucket loads in `take` keep this load after them.
            if version.load(Ordering::Relaxed) == before {
                return false;
            }
        }
    }

    /// Takes one copy of `fingerprint` out of bucket `index`, if it holds one.
    fn take(&self, index: usize, fingerprint: u16) -> bool {
        let word = &self.buckets[index];
        // Acquire: pairs with the Release removal CAS of a relocation, as in `holds`.
        let mut current = load_for_update(word, Ordering::Acquire);
        while let Some(lane) = bucket::find(current, fingerprint) {
            // Release: pairs with the Acquire bucket loads in `holds` and `take`; a reader that
            // sees this removal also sees the version bump sequenced before it in `relocate`.
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

    /// Stores `fingerprint` in an empty lane of bucket `index`, if it has one.
    fn put(&self, index: usize, fingerprint: u16) -> bool {
        let word = &self.buckets[index];
        let mut current = load_for_update(word, Ordering::Relaxed);
        while let Some(lane) = bucket::find_empty(current) {
            // Release: a reader whose Acquire load in `holds` sees this lane also sees what the
            // inserting thread did before. Validation does not rest on it: for a relocation's
            // copy-in, the AcqRel bump that follows is what publishes it.
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
        self.counters = Counters::new();
    }
}

/// A snapshot's hold on relocations (see [`Table::hold_relocations`]); dropping it ends the hold.
#[derive(Debug)]
pub(crate) struct RelocationHold<'a> {
    holds: &'a AtomicU64,
}

impl Drop for RelocationHold<'_> {
    fn drop(&mut self) {
        // One step: one fewer hold up (low half), one more ended (high half). Relaxed: see
        // `Table::hold_relocations`.
        self.holds.fetch_add((1 << 32) - 1, Ordering::Relaxed);
    }
}

/// The version stripes of a table of `buckets` buckets.
fn versions_for(buckets: usize) -> Box<[AtomicU32]> {
    let stripes = (buckets.next_power_of_two() / BUCKETS_PER_VERSION).clamp(1, MAX_VERSION_STRIPES);
    (0..stripes).map(|_| AtomicU32::new(0)).collect()
}

/// `len` empty bucket words, or the allocator's refusal as an error rather than an abort.
fn zeroed(len: usize) -> Result<Box<[AtomicU64]>, BuildError> {
    let bytes = len.saturating_mul(core::mem::size_of::<AtomicU64>());
    let mut words = Vec::new();
    words.try_reserve_exact(len).map_err(|_| BuildError::AllocationFailed { bytes })?;
    words.extend((0..len).map(|_| AtomicU64::new(0)));
    Ok(words.into_boxed_slice())
}
