//! Stripes: the words that make a lookup's miss trustworthy and tell removers that a scan runs.
//!
//! A table's bucket pairs share a few stripes, one `AtomicU64` each: a pair's stripe is chosen
//! by the smaller of its two buckets ([A pair has one stripe](super#a-pair-has-one-stripe)). The
//! high half counts the removals announced from its pairs
//! ([Every removal is announced](super#every-removal-is-announced)); the low half holds the id of
//! the snapshot scan that runs, 0 when none does. A reader stamps the stripe, reads, and
//! validates that the stripe still holds the stamped value: the optimistic read of a seqlock,
//! whose writers never wait.
//!
//! This file is the only one that reads or writes a stripe, so the orderings of the validated
//! read are stated (and weakened by `loom-tests/mutants.sh`) in one place.

use core::num::NonZeroU32;

use crate::sync::{self, AtomicU64, Ordering};

/// Buckets a stripe covers, and the most stripes a table has. Small tables keep few stripes (2.2
/// bytes an item at 100,000 items); a large table gets up to 64 KiB of them, so that the
/// announcements of two threads' removals rarely write a cache line the other thread's lookups
/// are reading. A removal makes an unrelated lookup retry only if it lands on the same stripe
/// within the lookup's few nanoseconds. Under the model checker every bucket has its own stripe,
/// so that a model can tell a pair's stripe from its first bucket's.
const BUCKETS_PER_STRIPE: usize = if sync::MODEL_CHECKING { 1 } else { 128 };
const MAX_STRIPES: usize = 1 << 13;

/// What an announcement adds to a stripe: one in the high half, which counts removals.
const ANNOUNCEMENT: u64 = 1 << 32;

/// The id of a snapshot scan, as it sits in the low half of every stripe while the scan runs.
pub(super) type ScanId = NonZeroU32;

/// A table's stripes, as many as a power of two.
#[derive(Debug)]
pub(super) struct Stripes(Box<[Stripe]>);

impl Stripes {
    /// The stripes of a table of `buckets` buckets.
    pub(super) fn new(buckets: usize) -> Self {
        Self((0..Self::count_for(buckets)).map(|_| Stripe(AtomicU64::new(0))).collect())
    }

    fn count_for(buckets: usize) -> usize {
        (buckets.checked_next_power_of_two().unwrap_or(1 << (usize::BITS - 1)) / BUCKETS_PER_STRIPE)
            .clamp(1, MAX_STRIPES)
    }

    /// The bytes [`Stripes::new`] allocates for `buckets` buckets.
    pub(super) fn memory_for(buckets: usize) -> usize {
        Self::count_for(buckets) * core::mem::size_of::<Stripe>()
    }

    /// The stripe of the pair `{i, j}`, whichever of the two an operation reads first.
    #[inline]
    pub(super) fn of_pair(&self, i: usize, j: usize) -> &Stripe {
        let index = i.min(j) & (self.0.len() - 1);
        // SAFETY: the count is a power of two (`count_for`), so the mask keeps the index below
        // it: no bounds check on a lookup's path.
        unsafe { self.0.get_unchecked(index) }
    }

    pub(super) fn iter(&self) -> core::slice::Iter<'_, Stripe> {
        self.0.iter()
    }
}

/// One stripe's word.
#[derive(Debug)]
#[repr(transparent)]
pub(super) struct Stripe(AtomicU64);

/// A stripe's value when a validated read began.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) struct Stamp(u64);

/// What one attempt of a validated read found.
pub(super) enum Attempt<T> {
    /// An answer that holds whatever was announced meanwhile (a copy was seen, or taken).
    Proven(T),
    /// An answer that holds only if no removal from the pair was announced during the attempt
    /// (a copy was not seen: it may have been moving).
    IfUnchanged(T),
}

impl Stripe {
    /// Opens a validated read. Its buckets must then be read with Acquire loads, which keep
    /// [`validate`](Self::validate)'s Relaxed load after them.
    #[inline(always)]
    pub(super) fn stamp(&self) -> Stamp {
        // Acquire: pairs with the AcqRel `announce_removal`. If a bucket load of the read sees a
        // removal, it sees the announcement sequenced before it, and validation reads that
        // announcement or a later one; when validation succeeds it is this load's, so what the
        // remover did before announcing (its copy-in) is visible to the bucket loads.
        Stamp(self.0.load(Ordering::Acquire))
    }

    /// Whether no removal was announced (and no scan began or ended) since `stamp`.
    #[inline(always)]
    pub(super) fn validate(&self, stamp: Stamp) -> bool {
        self.changes_since(stamp) == 0
    }

    /// Zero exactly when [`validate`](Self::validate) holds: the changes of several stripes,
    /// or'ed, validate them all with one test at the end.
    #[inline(always)]
    pub(super) fn changes_since(&self, stamp: Stamp) -> u64 {
        // Relaxed: the caller's Acquire bucket loads keep this load after them.
        self.0.load(Ordering::Relaxed) ^ stamp.0
    }

    /// The validated read: `attempt` until an attempt's answer is proven or validated. Lock-free:
    /// it attempts again only when a removal from the stripe's pairs was announced meanwhile.
    #[inline]
    pub(super) fn read_validated<T>(&self, mut attempt: impl FnMut() -> Attempt<T>) -> T {
        loop {
            if let Some(answer) = self.attempt_validated(&mut attempt) {
                return answer;
            }
        }
    }

    /// [`read_validated`](Self::read_validated) within `attempts` attempts, `None` if none
    /// validated: a bounded, wait-free read.
    #[inline]
    pub(super) fn read_validated_within<T>(
        &self,
        attempts: u32,
        mut attempt: impl FnMut() -> Attempt<T>,
    ) -> Option<T> {
        (0..attempts).find_map(|_| self.attempt_validated(&mut attempt))
    }

    #[inline(always)]
    fn attempt_validated<T>(&self, attempt: &mut impl FnMut() -> Attempt<T>) -> Option<T> {
        let stamp = self.stamp();
        match attempt() {
            Attempt::Proven(answer) => Some(answer),
            Attempt::IfUnchanged(answer) => self.validate(stamp).then_some(answer),
        }
    }

    /// Announces a removal from one of the stripe's pairs, which the caller makes next, and
    /// returns the id of the scan that was running, if one was.
    #[inline]
    pub(super) fn announce_removal(&self) -> Option<ScanId> {
        // AcqRel. Release: whatever this thread did before (a relocation's copy-in, an earlier
        // insert) is visible to a reader whose stamp reads this announcement or a later one;
        // pairs with the Acquire `stamp`, and with the AcqRel `open_scan`. Acquire: if this
        // reads a scan's `close_scan`, the scan's whole pass happens-before the removal.
        let previous = self.0.fetch_add(ANNOUNCEMENT, Ordering::AcqRel);
        NonZeroU32::new(previous as u32)
    }

    /// Puts scan `id` on the stripe: removals announced after this capture for the scan.
    pub(super) fn open_scan(&self, id: ScanId) {
        // AcqRel. Acquire: pairs with the AcqRel announcements made before: what preceded them
        // (their successor copies) is visible to the pass and, through the scan's `READY`, to
        // every capture. Release: a remover whose announcement reads this enters the scan's
        // rendezvous after it opened.
        self.0.fetch_add(u64::from(id.get()), Ordering::AcqRel);
    }

    /// Takes scan `id` off the stripe: removals announced after this no longer capture.
    pub(super) fn close_scan(&self, id: ScanId) {
        // Release: pairs with the Acquire half of `announce_removal`: a remover that reads this
        // no longer captures, and the whole pass happens-before its removal.
        self.0.fetch_sub(u64::from(id.get()), Ordering::Release);
    }

    /// The id of the scan on the stripe, for tests.
    #[cfg(test)]
    pub(super) fn scan_id(&self) -> Option<ScanId> {
        NonZeroU32::new(self.0.load(Ordering::Relaxed) as u32)
    }
}
