//! The concurrent protocol: lookups, inserts, relocations and removes on a table of bucket words.
//!
//! # Orderings
//!
//! ## Invariants
//!
//! Each has a name, and the rest of the crate cites it by that name.
//!
//! ### Every write is a CAS
//!
//! Each write to a bucket word continues the release sequence of the writes before it; no plain
//! store touches a table that other threads can see.
//!
//! ### A fingerprint is never outside the table
//!
//! A relocation of `f` from `from` to `to = alt(from, f)` checks that `from` holds `f`, CASes `f`
//! into an empty lane of `to` (copy-in), and only then takes one `f` out of `from`. In between `f`
//! has one copy too many, never one too few.
//!
//! ### Every removal is announced
//!
//! Every CAS that takes a fingerprint out of a bucket (a relocation's removal from its source, a
//! `remove`, a surplus removal) is preceded in its thread by an announcement on the stripe of the
//! fingerprint's pair ([`Stripe::announce_removal`](stripe::Stripe::announce_removal), an AcqRel
//! RMW), made after the thread saw the fingerprint in that bucket and after everything the thread
//! did before (a relocation's copy-in, an insert it made earlier). Adding a fingerprint is never
//! announced.
//!
//! ### Copies are interchangeable
//!
//! Copies of one fingerprint in one bucket pair are the same to every operation, so a lane going
//! from `f` to empty and back to `f` (ABA) is harmless, and which item a removed copy "was" does
//! not matter.
//!
//! ### A bucket is a multiset
//!
//! The protocol is written against [`BucketEncoding`], once for both encodings (`bucket`). A
//! bucket word stands for the multiset of fingerprints it holds, and in both encodings it is a
//! function of that multiset, so a CAS that expects a word expects exactly that multiset. A
//! *copy* is one member of the multiset; a *lane* is where the encoding keeps it, which only the
//! encoding knows. Every change adds or takes one copy in one CAS of the whole word
//! ([`BucketEncoding::with_copy`], [`BucketEncoding::without_copy`]): in a semi-sorted bucket
//! that CAS re-sorts the word, so the copies that stay may change lanes, but a concurrent
//! reader's single load sees the multiset before or after, never a copy missing, and no
//! operation keeps a lane position from one load to the next. A re-sort takes no copy out of
//! the bucket, so it is no removal and is not announced. A path search records the
//! fingerprint each hop moves, never its lane, and the hop's commit takes a copy of that value
//! wherever it is then; by [Copies are interchangeable], any copy will do.
//!
//! ### A pair has one stripe
//!
//! A pair's stripe is chosen by the smaller of its two buckets, whichever bucket an operation reads
//! first ([`Stripes::of_pair`](stripe::Stripes::of_pair)).
//!
//! ## Inserts
//!
//! An insert CASes its fingerprint into an empty lane of either bucket (Release: a lookup that sees
//! the lane also sees what the inserting thread did before; no validation rests on it). If neither
//! has room, it plans the shortest cuckoo path (`path`) and commits it last hop first, each hop a
//! relocation as in [A fingerprint is never outside the table], then puts its fingerprint in the
//! lane the path freed. A hop that meets a change abandons the path with every fingerprint still in
//! the table, and the insert plans again: a failed hop means another thread changed a bucket on the
//! path, so the retries are lock-free, and [`InsertError::Full`] means that a search found no path.
//!
//! ## The validated read
//!
//! A lookup stamps the pair's stripe (`V1`, Acquire), loads both buckets (Acquire), and validates
//! the stamp (`V2`): [`Stripe::read_validated`](stripe::Stripe::read_validated). A match answers
//! `true` at once. A miss counts only if `V2` reads the same write as `V1`; otherwise the lookup
//! retries, and after [`DEFAULT_LOOKUP_RETRIES`] failed validations it answers `true` without
//! proof (a rare extra false positive, counted in the stats). A semi-sorted lookup tests the two
//! words it loaded in two steps ([`BucketEncoding::TWO_STEP_LOOKUP`]) and validates before the
//! second: both steps read those two words alone, so its answer is the validated read's as a
//! plain lookup's is, and a failed validation sends it to the same retries.
//!
//! **Lemma.** Let a validated miss observe a removal `R` of `f` from one of its buckets (the bucket
//! load reads `R`'s CAS or a later write of that word). `R` is a release CAS and every later write
//! of the word is an RMW, so `R` synchronises with the Acquire bucket load. `R`'s announcement `B`
//! is sequenced before `R`, so `B` happens-before the load and hence before `V2`, which reads `B`
//! or a later announcement on the stripe. `V2` reads the same write as `V1`, so `B` is that write
//! or an earlier one, and as every write of a stripe is an RMW, `B` synchronises with `V1`. So
//! **everything that happened-before the announcement of an observed removal is visible to both
//! bucket loads.**
//!
//! **No false miss.** Follow an item's copy: first the copy its insert put in; whenever a removal
//! takes that copy, the item lives on in another copy of the same fingerprint in the same pair
//! whose add happened-before the removal's announcement, if there is one:
//!
//! - a relocation: its copy-in is sequenced before its announcement ([A fingerprint is never
//!   outside the table], [Every removal is announced]);
//! - a colliding item Y (same fingerprint, same pair, perhaps the opposite first bucket) inserted
//!   and then removed, or the same key inserted twice and removed once: Y's put happens-before
//!   the remove's announcement, whichever bucket each copy is in. As [Copies are interchangeable],
//!   a remove that takes the
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
//! validated read as `remove` ([`Table::take_validated`]): a single unvalidated pass could miss a
//! copy that is moving between the two buckets, and every removal the loop makes is announced.
//!
//! ## Snapshots
//!
//! A snapshot scan ([`scan`]) publishes itself in the low half of every stripe. A removal's
//! announcement returns the stripe's previous value, so the remover knows whether a scan began
//! before its announcement; if one did, and the scan has started on every stripe, it copies the
//! bucket into the scan before it takes the fingerprint out. The argument is in the `scan`
//! module. A scan's start and end change every stripe's value, so a lookup that straddles one
//! validates once more; lookups never take part otherwise.
//!
//! [A fingerprint is never outside the table]: #a-fingerprint-is-never-outside-the-table
//! [Every removal is announced]: #every-removal-is-announced
//! [Copies are interchangeable]: #copies-are-interchangeable
//! [`BucketEncoding`]: crate::bucket::BucketEncoding
//! [`BucketEncoding::with_copy`]: crate::bucket::BucketEncoding::with_copy
//! [`BucketEncoding::without_copy`]: crate::bucket::BucketEncoding::without_copy

mod path;
mod scan;
mod stripe;
mod windowed;
mod words;

pub(crate) use scan::ScannedWords;

use core::marker::PhantomData;

use crate::bucket::{self, BucketEncoding, LANES};
use crate::error::{BuildError, InsertError};
use crate::fingerprint::Fingerprint;
use crate::hash::{self, Slots};
use crate::pipeline::pipelined;
use crate::stats::{Counters, Event, Stats};
use crate::sync::{self, load_for_update, reload_for_update, AtomicU64, Ordering};

use path::{Hop, PathSearch};
use stripe::{Attempt, Stripe, Stripes};
use words::Words;

/// Validation attempts a lookup makes before answering `true` without proof.
pub(crate) const DEFAULT_LOOKUP_RETRIES: u32 = 8;

/// The words of an item's two buckets as one attempt of a validated read loaded them, and
/// whether the read was validated ([`Table::first_read`] tests them).
#[derive(Clone, Copy)]
struct PairRead {
    first: u64,
    second: u64,
    /// Non-zero when the stripe changed ([`Stripe::changes_since`]).
    changes: u64,
}

/// What the first attempt of a lookup's validated read found ([`Table::first_read`]): whether a
/// lane matched, and whether a miss would be validated, each as flags that are zero when not.
/// Reads of several tables combine with [`and`](Self::and), so a grown filter tests every
/// level's read at once.
#[derive(Clone, Copy, Debug)]
pub(crate) struct FirstRead {
    /// Flags of the copies that matched ([`BucketEncoding::match_flags`]).
    matches: u64,
    /// Non-zero when the stripe changed ([`Stripe::changes_since`]).
    changes: u64,
}

impl FirstRead {
    /// Both reads together: a match in either; a miss validated only if both were.
    #[inline(always)]
    pub(crate) fn and(self, other: Self) -> Self {
        Self { matches: self.matches | other.matches, changes: self.changes | other.changes }
    }

    /// Whether a lane matched: the answer `true`, validated or not.
    #[inline(always)]
    pub(crate) fn found(self) -> bool {
        bucket::any_match(self.matches)
    }

    /// Whether this read answers the lookup: on a match (`true`), or on a validated miss
    /// (`false`); otherwise a removal announced meanwhile leaves the miss unproven.
    #[inline(always)]
    pub(crate) fn answers(self) -> bool {
        self.found() | self.validated()
    }

    /// Whether the read met no change: what it found (a match or none) is the validated read's.
    #[inline(always)]
    pub(crate) fn validated(self) -> bool {
        self.changes == 0
    }
}

/// Why a table refused an item ([`Table::try_place`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Refused {
    /// The table is not full (`sizing::is_full`): every path from the item's buckets was taken
    /// (items aimed at a few buckets do that at will), or its copies fill them. Counted as
    /// crowded in the stats.
    Crowded,
    /// The table is full and the item's copies fill its buckets.
    OwnCopies,
    /// The table is full, and the item's buckets hold other fingerprints.
    TableFull,
}

/// A table of bucket words in encoding `E`.
#[derive(Debug)]
pub(crate) struct Table<E> {
    buckets: Words,
    /// Whether large tables (this one's copies too) are mapped on huge pages (`words`).
    huge_pages: bool,
    stripes: Stripes,
    lookup_retries: u32,
    counters: Counters,
    rendezvous: scan::Rendezvous,
    encoding: PhantomData<E>,
}

impl<E: BucketEncoding> Table<E> {
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
            stripes: Stripes::new(buckets),
            lookup_retries,
            counters: Counters::new(buckets),
            rendezvous: scan::Rendezvous::new(),
            encoding: PhantomData,
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
            stripes: Stripes::new(words.len()),
            counters: Counters::with_items(words.len(), items),
            buckets: Words::from_values(words, huge_pages),
            huge_pages,
            lookup_retries,
            rendezvous: scan::Rendezvous::new(),
            encoding: PhantomData,
        }
    }

    /// A table of `buckets`, words no other thread can reach yet, counting the fingerprints they
    /// hold.
    fn from_buckets(buckets: Words, lookup_retries: u32, huge_pages: bool) -> Self {
        // Relaxed: no other thread has the words.
        let items = buckets.iter().map(|w| E::occupied(w.load(Ordering::Relaxed))).sum();
        Self {
            stripes: Stripes::new(buckets.len()),
            counters: Counters::with_items(buckets.len(), items),
            buckets,
            huge_pages,
            lookup_retries,
            rendezvous: scan::Rendezvous::new(),
            encoding: PhantomData,
        }
    }

    /// Moves one copy of `fingerprint` from bucket `from` to bucket `to` (its other bucket), as
    /// a step of an insert's path would.
    #[cfg(test)]
    pub(crate) fn relocate_for_test(
        &self,
        fingerprint: Fingerprint,
        from: usize,
        to: usize,
    ) -> bool {
        self.relocate(Hop { fingerprint, from, to })
    }

    pub(crate) fn bucket_count(&self) -> usize {
        self.buckets.len()
    }

    pub(crate) fn len(&self) -> usize {
        self.counters.len()
    }

    /// The words of the buckets in `range` as they are now, one load each: no copy of the table
    /// and no help from writers, so no promise across buckets (`ChunkedSnapshot`).
    pub(crate) fn words_now(
        &self,
        range: core::ops::Range<usize>,
    ) -> impl Iterator<Item = u64> + '_ {
        // Relaxed: each word read is one the bucket held; nothing else is read through it.
        self.buckets[range].iter().map(|word| word.load(Ordering::Relaxed))
    }

    pub(crate) fn stats(&self) -> Stats {
        self.counters.snapshot()
    }

    pub(crate) fn memory_usage(&self) -> usize {
        core::mem::size_of::<Self>()
            + core::mem::size_of_val(&*self.buckets)
            + Stripes::memory_for(self.buckets.len())
            + self.counters.memory_usage()
    }

    /// What [`memory_usage`](Self::memory_usage) will report for a table of `buckets` buckets,
    /// before it is allocated (a growable filter sizes its next level to fit its ceiling).
    pub(crate) fn memory_for(buckets: usize) -> usize {
        core::mem::size_of::<Self>()
            .saturating_add(buckets.saturating_mul(core::mem::size_of::<AtomicU64>()))
            .saturating_add(Stripes::memory_for(buckets))
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
    pub(crate) fn fingerprint_count(&self, index: usize, fingerprint: Fingerprint) -> usize {
        E::count(self.buckets[index].load(Ordering::Acquire), fingerprint)
    }

    /// A hash whose first bucket in this table is `bucket` and whose fingerprint is
    /// `fingerprint` (for tests).
    #[cfg(feature = "test-hooks")]
    pub(crate) fn hash_for_slot(&self, bucket: usize, fingerprint: Fingerprint) -> u64 {
        hash::compose::<E>(bucket, fingerprint, self.bucket_count())
    }

    /// Fingerprints in bucket `index` (a plain read, for tests).
    #[cfg(feature = "test-hooks")]
    pub(crate) fn occupied(&self, index: usize) -> usize {
        E::occupied(self.buckets[index].load(Ordering::Acquire))
    }
}

// Lookups: the validated reads, and the plain reads that are only hints.
impl<E: BucketEncoding> Table<E> {
    /// The slots of the item whose mixed hash is `mixed` in this table: both buckets below
    /// [`bucket_count`](Self::bucket_count), as `hash::index` and `hash::alt_index` stay below the
    /// count they are given. [`contains_at`](Self::contains_at) relies on it.
    #[inline]
    pub(crate) fn slots(&self, mixed: u64) -> Slots {
        hash::mixed_slots::<E>(mixed, self.buckets.len())
    }

    /// Whether the item whose mixed hash is `mixed` is present: wait-free, at most
    /// `lookup_retries + 1` validated reads.
    #[inline]
    pub(crate) fn contains(&self, mixed: u64) -> bool {
        let slots = self.slots(mixed);
        if E::TWO_STEP_LOOKUP {
            // SAFETY: `slots` comes from this table's `slots`.
            return unsafe { self.contains_in_two_steps_at(slots) };
        }
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
    unsafe fn contains_at(&self, slots: Slots) -> bool {
        // SAFETY: the caller's contract.
        let read = unsafe { self.first_read_at(slots) };
        if read.answers() {
            return read.found();
        }
        self.contains_retry(slots.first, slots.second, slots.fingerprint)
    }

    /// `out[i] = contains(item i)` for every `i`, where `mixed_at(i)` is item `i`'s mixed hash,
    /// each item's buckets prefetched a window ahead (`pipeline`).
    #[inline]
    pub(crate) fn contains_batch(&self, mixed_at: impl Fn(usize) -> u64, out: &mut [bool]) {
        let slots_at = |i| self.slots(mixed_at(i));
        pipelined(
            out.len(),
            slots_at,
            |slots| self.prefetch(slots),
            |i, slots| {
                // SAFETY: `slots_at` takes the slots from this table's `slots`.
                out[i] = unsafe { self.contains_at(slots) };
                true
            },
        );
    }

    /// [`contains`](Self::contains) for an encoding whose lookups test in two steps
    /// ([`BucketEncoding::TWO_STEP_LOOKUP`]). The read is validated before the second step, so
    /// the lookup of an absent item, which nearly always ends at the first step, branches once
    /// on values it needs anyway and computes nothing of the second (the one test of
    /// [`contains_at`](Self::contains_at) computes both for every lookup).
    /// Batches keep [`contains_at`](Self::contains_at): two steps do not make them faster.
    ///
    /// # Safety
    ///
    /// As for [`contains_at`](Self::contains_at).
    #[inline(always)]
    unsafe fn contains_in_two_steps_at(&self, slots: Slots) -> bool {
        // SAFETY: the caller's contract.
        let read = unsafe { self.first_words_at(slots) };
        if read.changes != 0 {
            return self.contains_retry(slots.first, slots.second, slots.fingerprint);
        }
        let PairRead { first, second, .. } = read;
        bucket::any_match(E::pair_candidates(first, second, slots.fingerprint))
            && E::pair_holds(first, second, slots.fingerprint)
    }

    /// The first attempt of a validated read of the item whose mixed hash is `mixed`.
    #[inline(always)]
    pub(crate) fn first_read(&self, mixed: u64) -> FirstRead {
        // SAFETY: the slots come from this table's `slots`.
        unsafe { self.first_read_at(self.slots(mixed)) }
    }

    /// The first attempt of a lookup's validated read, written out as straight-line code: both
    /// buckets are loaded unconditionally (a one-bucket item loads its bucket twice), and the
    /// match and the validation are values, not branches, so a lookup in a table larger than the
    /// cache issues both loads at once and the CPU overlaps them with the next lookup's loads,
    /// or with the other levels' (`levels`). The slice is taken first so that its address and
    /// length stay in registers across the Acquire loads. No index is bounds-checked, which keeps
    /// three compares and branches out of every lookup.
    ///
    /// # Safety
    ///
    /// As for [`contains_at`](Self::contains_at).
    #[inline(always)]
    pub(crate) unsafe fn first_read_at(&self, slots: Slots) -> FirstRead {
        // SAFETY: the caller's contract.
        let read = unsafe { self.first_words_at(slots) };
        FirstRead {
            matches: E::pair_match_flags(read.first, read.second, slots.fingerprint),
            // Validated on a match too, where it is not needed, to keep the path free of
            // data-dependent branches.
            changes: read.changes,
        }
    }

    /// The words of the first attempt of a lookup's validated read, and whether it is validated.
    ///
    /// # Safety
    ///
    /// As for [`contains_at`](Self::contains_at).
    #[inline(always)]
    unsafe fn first_words_at(&self, slots: Slots) -> PairRead {
        debug_assert!(slots.first.max(slots.second) < self.buckets.len());
        let buckets = &*self.buckets;
        let stripe = self.stripes.of_pair(slots.first, slots.second);
        let stamp = stripe.stamp();
        // SAFETY (both): the buckets are below the bucket count, by the caller's contract.
        // Acquire: pairs with the Release removal CAS in `take` (and every later CAS in its
        // release sequence), so seeing a removal also shows the announcement before it.
        let first = unsafe { buckets.get_unchecked(slots.first) }.load(Ordering::Acquire);
        let second = unsafe { buckets.get_unchecked(slots.second) }.load(Ordering::Acquire);
        PairRead { first, second, changes: stripe.changes_since(stamp) }
    }

    /// The validation attempts of [`contains`](Self::contains) after its first one failed.
    /// (Fields rather than [`Slots`], so the caller need not spill a struct on every lookup.)
    #[cold]
    #[inline(never)]
    fn contains_retry(&self, first: usize, second: usize, fingerprint: Fingerprint) -> bool {
        let stripe = self.stripes.of_pair(first, second);
        let answer = stripe.read_validated_within(self.lookup_retries, || {
            if self.holds(first, fingerprint)
                || (second != first && self.holds(second, fingerprint))
            {
                Attempt::Proven(true)
            } else {
                Attempt::IfUnchanged(false)
            }
        });
        answer.unwrap_or_else(|| {
            self.counters.record(first, Event::ConservativeLookup);
            true
        })
    }

    /// Copies of the item's fingerprint in its two buckets, read as a lookup validates a miss:
    /// never fewer than the copies present throughout the call (the lemma, applied to each copy).
    /// Lock-free: it reads again only when a removal from the pair was announced meanwhile.
    pub(crate) fn count(&self, slots: Slots) -> usize {
        let Slots { fingerprint, first, second } = slots;
        self.stripes.of_pair(first, second).read_validated(|| {
            // Acquire (both): pairs with the Release removal CAS in `take`, as in `holds`.
            let mut copies = E::count(self.buckets[first].load(Ordering::Acquire), fingerprint);
            if second != first {
                copies += E::count(self.buckets[second].load(Ordering::Acquire), fingerprint);
            }
            Attempt::IfUnchanged(copies)
        })
    }

    /// Whether either of the item's buckets holds its fingerprint, by one plain read of each: a
    /// hint, which a relocation in flight can change.
    #[inline]
    pub(crate) fn may_hold(&self, slots: Slots) -> bool {
        // Relaxed: only a hint; it decides which level an insert joins (`levels`), never what a
        // lookup answers.
        let first = self.buckets[slots.first].load(Ordering::Relaxed);
        let second = self.buckets[slots.second].load(Ordering::Relaxed);
        E::contains(first, slots.fingerprint) | E::contains(second, slots.fingerprint)
    }

    /// Copies of the item's fingerprint in its buckets, by one plain read of each: a hint,
    /// which a relocation in flight can change.
    pub(crate) fn matches(&self, slots: Slots) -> usize {
        // Relaxed: only a hint; it decides whether an insert refuses a copy, never what a
        // lookup answers.
        let first = self.buckets[slots.first].load(Ordering::Relaxed);
        let second = self.buckets[slots.second].load(Ordering::Relaxed);
        E::count(first, slots.fingerprint)
            + usize::from(slots.first != slots.second) * E::count(second, slots.fingerprint)
    }

    /// Whether every lane of the item's buckets holds its fingerprint ([`matches`](Self::matches)).
    fn filled_with(&self, slots: Slots) -> bool {
        let lanes = if slots.first == slots.second { LANES } else { 2 * LANES };
        self.matches(slots) == lanes
    }

    #[inline]
    fn holds(&self, index: usize, fingerprint: Fingerprint) -> bool {
        // Acquire: pairs with the Release removal CAS in `take`, as in `contains`.
        E::contains(self.buckets[index].load(Ordering::Acquire), fingerprint)
    }

    /// Asks the CPU to start loading both of an item's buckets, for a lookup soon after
    /// (`batch`). Only a hint: it reads nothing and orders nothing.
    #[inline]
    pub(crate) fn prefetch(&self, slots: Slots) {
        sync::prefetch(&self.buckets[slots.first]);
        sync::prefetch(&self.buckets[slots.second]);
    }
}

// Updates: inserts with their cuckoo paths, and removes.
impl<E: BucketEncoding> Table<E> {
    /// Stores the item: an empty lane in either bucket, else a committed cuckoo path. A refusal
    /// is counted in the stats.
    pub(crate) fn insert(&self, slots: Slots) -> Result<(), InsertError> {
        match self.try_place(slots) {
            Ok(_) => Ok(()),
            Err(why) => {
                self.record_refused(slots.first, why);
                Err(InsertError::Full)
            }
        }
    }

    /// [`insert`](Self::insert) of item `i` for every `i` in `0..len`, in order, until one is
    /// refused, where `mixed_at(i)` is item `i`'s mixed hash, each item's buckets prefetched a
    /// window ahead (`pipeline`). Returns how many were stored.
    #[inline]
    pub(crate) fn insert_batch(&self, len: usize, mixed_at: impl Fn(usize) -> u64) -> usize {
        let slots_at = |i| self.slots(mixed_at(i));
        pipelined(
            len,
            slots_at,
            |slots| self.prefetch(slots),
            |_, slots| self.insert(slots).is_ok(),
        )
    }

    /// Counts an insert that this table, and every other place the filter tried, refused for
    /// `why`.
    pub(crate) fn record_refused(&self, bucket: usize, why: Refused) {
        self.counters.record(bucket, Event::Refused);
        if why == Refused::Crowded {
            self.counters.record(bucket, Event::Crowded);
        }
    }

    /// [`insert`](Self::insert) without counting a refusal (a growable filter refused by a
    /// level may store the item elsewhere): how many fingerprints the insert relocated, or why
    /// it was refused.
    #[inline]
    pub(crate) fn try_place(&self, slots: Slots) -> Result<usize, Refused> {
        self.try_insert(slots).map_err(|InsertError::Full| self.why_refused(slots))
    }

    /// Why the table refuses the item, or would: from the sharded counters (`sizing::is_full`,
    /// approximate while inserts run, which only moves the edge by the inserts in flight) and a
    /// plain read of its buckets.
    #[cold]
    pub(crate) fn why_refused(&self, slots: Slots) -> Refused {
        if !crate::sizing::is_full(self.len(), self.bucket_count()) {
            Refused::Crowded
        } else if self.filled_with(slots) {
            Refused::OwnCopies
        } else {
            Refused::TableFull
        }
    }

    /// Stores the item, returning how many fingerprints the insert relocated.
    fn try_insert(&self, slots: Slots) -> Result<usize, InsertError> {
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
        while let Some(root) = search.plan::<E>(&self.buckets, slots) {
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
    /// of the source with an announced removal ([A fingerprint is never outside the
    /// table](self#a-fingerprint-is-never-outside-the-table)).
    fn relocate(&self, hop: Hop) -> bool {
        let Hop { fingerprint, from, to } = hop;
        // Relaxed: only a hint; the removal below decides.
        if !E::contains(load_for_update(&self.buckets[from], Ordering::Relaxed), fingerprint) {
            return false;
        }
        if !self.put(to, fingerprint) {
            return false;
        }
        if self.take(from, fingerprint, self.stripes.of_pair(from, to)).is_some() {
            self.counters.record(from, Event::Relocated);
            return true;
        }
        // Another relocation or a remove took the source copy: ours is now one too many.
        if self.take_validated(Slots { fingerprint, first: from, second: to }).is_some() {
            self.counters.record(from, Event::SurplusRemoved);
        }
        false
    }

    /// Removes one copy of the item, if present.
    pub(crate) fn remove(&self, slots: Slots) -> bool {
        self.remove_from(slots).is_some()
    }

    /// [`remove`](Self::remove), returning the word the removal changed, from which an
    /// encoding can tell which copy it took.
    pub(crate) fn remove_from(&self, slots: Slots) -> Option<u64> {
        // As in `insert`: about half the items are in their second bucket, so start loading it
        // with the first.
        sync::prefetch(&self.buckets[slots.second]);
        let removed = self.take_validated(slots);
        if removed.is_some() {
            self.counters.record(slots.first, Event::Removed);
        }
        removed
    }

    /// Takes one copy of the item's fingerprint out of either of its buckets, validating
    /// absence as a lookup does: lock-free, retried only when a removal from the pair was
    /// announced meanwhile. Returns the word the removal changed.
    fn take_validated(&self, slots: Slots) -> Option<u64> {
        let Slots { fingerprint, first, second } = slots;
        let stripe = self.stripes.of_pair(first, second);
        stripe.read_validated(|| {
            match self.take(first, fingerprint, stripe).or_else(|| {
                (second != first).then(|| self.take(second, fingerprint, stripe)).flatten()
            }) {
                Some(word) => Attempt::Proven(Some(word)),
                None => Attempt::IfUnchanged(None),
            }
        })
    }

    /// Takes one copy of `fingerprint` out of bucket `index`, if it holds one, announcing the
    /// removal on `stripe`, the stripe of the fingerprint's pair ([Every removal is
    /// announced](self#every-removal-is-announced)). Returns the word the removal changed.
    fn take(&self, index: usize, fingerprint: Fingerprint, stripe: &Stripe) -> Option<u64> {
        let word = &self.buckets[index];
        // Acquire: pairs with the Release removal CAS of other takes, as in `holds`. The absence
        // decision is taken on this plain load, which loom may serve stale.
        let seen = word.load(Ordering::Acquire);
        if !E::contains(seen, fingerprint) {
            return None;
        }
        self.announce_removal(index, stripe);
        let mut current = reload_for_update(word, seen, Ordering::Acquire);
        while let Some(next) = E::without_copy(current, fingerprint) {
            // Release: pairs with the Acquire bucket loads of lookups, removes and scans; a load
            // that sees this removal also sees the announcement sequenced before it. Acquire on
            // failure: the loop decides absence on the word it returns, as on `seen`.
            match word.compare_exchange_weak(current, next, Ordering::Release, Ordering::Acquire) {
                Ok(_) => return Some(current),
                Err(actual) => current = actual,
            }
        }
        None
    }

    /// Announces a removal from bucket `index`, and if a snapshot scan began before the
    /// announcement, copies the bucket into it first.
    #[inline]
    fn announce_removal(&self, index: usize, stripe: &Stripe) {
        if let Some(scan) = stripe.announce_removal() {
            self.rendezvous.capture(scan, index, &self.buckets[index]);
        }
    }

    /// Adds a copy of `fingerprint` to bucket `index`, if it has room.
    fn put(&self, index: usize, fingerprint: Fingerprint) -> bool {
        let word = &self.buckets[index];
        let mut current = load_for_update(word, Ordering::Relaxed);
        while let Some(next) = E::with_copy(current, fingerprint) {
            // Release: a reader whose Acquire load sees this lane also sees what the inserting
            // thread did before. Validation does not rest on it: for a relocation's copy-in, the
            // announcement that follows is what publishes it.
            match word.compare_exchange_weak(current, next, Ordering::Release, Ordering::Relaxed) {
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
