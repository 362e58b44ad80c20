//! The operations of a table of windowed buckets (`bucket::windowed`) at an epoch: lookups, inserts
//! that refresh a present item, removes of the oldest copy, and the sweep of a dead tag.
//!
//! Everything else is the generic protocol, unchanged: an operation's fingerprint carries its
//! epoch, so the table's validated reads, puts and takes see live copies alone, and a relocation
//! moves an entry with its tag. The epoch's rules (who may write which tag, and when a tag may
//! be swept) are `windowed::epochs`'s; this module only applies them to words.

use core::ops::Range;

use super::{Attempt, FirstRead, PairRead, Refused, Table};
use crate::bucket::windowed::{
    at_epoch, matches_of_any_age, refreshed, tagged, without_tagged, Refresh, Windowed,
};
use crate::bucket::BucketEncoding;
use crate::hash::Slots;
use crate::stats::Event;
use crate::sync::{load_for_update, Ordering};

impl Table<Windowed> {
    /// The slots of the item whose mixed hash is `mixed`, for an operation at `epoch`.
    #[inline(always)]
    fn slots_at(&self, mixed: u64, epoch: u64) -> Slots {
        let mut slots = self.slots(mixed);
        slots.fingerprint = at_epoch(slots.fingerprint, epoch);
        slots
    }

    /// The first attempt of a lookup's validated read that matches lanes whatever their tag:
    /// the live copies, while no lane holds the dead tag (`windowed::epochs`, "No dead lane after
    /// the sweep"), at the cost of a plain lookup.
    #[inline(always)]
    pub(crate) fn first_read_of_any_age(&self, mixed: u64) -> FirstRead {
        let slots = self.slots(mixed);
        // SAFETY: the slots come from this table's `slots`.
        let PairRead { first, second, changes } = unsafe { self.first_words_at(slots) };
        let fingerprint = slots.fingerprint;
        FirstRead {
            matches: matches_of_any_age(first, fingerprint)
                | matches_of_any_age(second, fingerprint),
            changes,
        }
    }

    /// Whether the item has a copy live at `epoch`: the whole validated read of
    /// [`contains`](Self::contains). The caller checks that the epoch did not move meanwhile.
    #[inline]
    pub(crate) fn contains_at_epoch(&self, mixed: u64, epoch: u64) -> bool {
        // SAFETY: the slots come from this table's `slots`.
        unsafe { self.contains_at(self.slots_at(mixed, epoch)) }
    }

    /// Gives a live copy of the item the tag of `epoch`, or else stores one with it. Called by
    /// a writer pinned to `epoch`.
    ///
    /// # Errors
    ///
    /// Why the item, which has no live copy, could not be stored: not counted, as the caller may
    /// make room and try again ([`record_refused_item`](Self::record_refused_item)).
    pub(crate) fn insert_at_epoch(&self, mixed: u64, epoch: u64) -> Result<(), Refused> {
        let slots = self.slots_at(mixed, epoch);
        if self.refresh(slots) {
            return Ok(());
        }
        self.try_place(slots).map(drop)
    }

    /// Counts a lookup that answered `true` without proof: the epoch moved on every attempt.
    pub(crate) fn record_conservative_lookup(&self, mixed: u64) {
        self.counters.record(self.slots(mixed).first, Event::ConservativeLookup);
    }

    /// Counts a refusal of the item whose mixed hash is `mixed`.
    pub(crate) fn record_refused_item(&self, mixed: u64, why: Refused) {
        self.record_refused(self.slots(mixed).first, why);
    }

    /// Gives a live copy of the item the tag of its fingerprint's epoch, if it has one: with the
    /// validated read of a lookup, so that a copy moving between the two buckets is not missed.
    /// A refresh changes a copy's tag in place, from one live tag to another: no copy leaves, so
    /// it is no removal and is not announced.
    fn refresh(&self, slots: Slots) -> bool {
        let Slots { fingerprint, first, second } = slots;
        let buckets = if first == second { 1 } else { 2 };
        self.stripes.of_pair(first, second).read_validated(|| {
            for index in [first, second].into_iter().take(buckets) {
                let word = &self.buckets[index];
                // Acquire: pairs with the Release CASes of writers, as a lookup's load.
                let mut current = word.load(Ordering::Acquire);
                loop {
                    match refreshed(current, fingerprint) {
                        Refresh::Current => return Attempt::Proven(true),
                        Refresh::To(next) => {
                            // Release: as an insert's put. Acquire on failure: as above.
                            match word.compare_exchange_weak(
                                current,
                                next,
                                Ordering::Release,
                                Ordering::Acquire,
                            ) {
                                Ok(_) => return Attempt::Proven(true),
                                Err(actual) => current = actual,
                            }
                        }
                        Refresh::Absent => break,
                    }
                }
            }
            Attempt::IfUnchanged(false)
        })
    }

    /// Removes the oldest copy of the item live at `epoch`, returning the entry it took (its
    /// tag says how old it was). Called by a writer pinned to `epoch`.
    // Inline, though not generic, so that a remove inlines whole into its caller, as a plain
    // filter's does: with a call left in its path, removes from a DRAM-sized table wait longer
    // on their buckets (`tight` in a release build).
    #[inline]
    pub(crate) fn remove_at_epoch(&self, mixed: u64, epoch: u64) -> Option<u32> {
        let slots = self.slots_at(mixed, epoch);
        let before = self.remove_from(slots)?;
        let taken = before ^ Windowed::without_copy(before, slots.fingerprint)?;
        // The one lane that changed, shifted down.
        Some((taken >> (taken.trailing_zeros() / 16 * 16)) as u32 & 0xFFFF)
    }

    /// Empties every lane tagged `dead` in `buckets`, a claim of the sweep of the epoch whose
    /// dead tag it is. Returns how many lanes it emptied.
    ///
    /// Not announced: no lookup needs a dead entry, a lookup that read an older epoch reads the
    /// epoch again before it answers `false`, and no relocation moves an entry dead at its
    /// epoch (`windowed::epochs`, "The dead tag is empty before it comes back").
    pub(crate) fn sweep(&self, buckets: Range<usize>, dead: u32) -> usize {
        let mut emptied = 0;
        for index in buckets {
            let word = &self.buckets[index];
            // Relaxed: the claim's Acquire ordered everything the sweep must see; the CAS
            // checks the value.
            let mut current = load_for_update(word, Ordering::Relaxed);
            loop {
                let next = without_tagged(current, dead);
                if next == current {
                    break;
                }
                // Release: pairs with `Epochs::try_advance` through the swept count, and with
                // the Acquire loads of lookups, as every write.
                match word.compare_exchange_weak(
                    current,
                    next,
                    Ordering::Release,
                    Ordering::Relaxed,
                ) {
                    Ok(_) => {
                        let lanes = tagged(current, dead);
                        emptied += lanes;
                        self.counters.record(index, Event::Expired { lanes });
                        break;
                    }
                    Err(actual) => current = actual,
                }
            }
        }
        emptied
    }
}
