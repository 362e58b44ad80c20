//! [`Epochs`]: the current epoch of a windowed filter, the writers pinned to it, and the sweep that
//! empties the dead tag before the next epoch may start.
//!
//! # Orderings
//!
//! ## Invariants
//!
//! ### An epoch lasts at least a period
//!
//! Epoch `e + 1` starts (the CAS of [`Epochs::try_advance`]) only when the clock has read at
//! least `start(e) + P`, where `P` is half the window and `start(e)` the clock's reading when `e`
//! started, rounded up to a sixteenth of `P`. A slow or absent maintainer makes epochs longer,
//! never shorter.
//!
//! ### A writer is at most one epoch behind
//!
//! Every write of a tagged lane (an insert, a refresh, a relocation, a remove) is made under a
//! [`Pinned`] guard: the writer counts itself on its slot under the epoch's parity (an AcqRel
//! RMW), then reads the epoch again (Acquire), and writes only if it has not moved. The sweep of
//! epoch `e` starts only once no writer is counted under the parity of `e - 1`
//! ([`Epochs::drained`]), which it reads with an RMW of each slot after reading epoch `e`. Two
//! RMWs of one slot are ordered: if the sweep's comes first, the writer's pin reads it, so the
//! writer's second read of the epoch happens after the sweep's read of `e` and sees `e` (or
//! later), and the writer does not write; if the pin comes first, the sweep sees it. So a writer
//! pinned to `e - 1` when the sweep of `e` starts has finished. Epoch `e + 2`, which needs the
//! sweep of `e + 1`, never starts while a writer pinned to `e` is writing: a writer pinned to `e`
//! writes while the epoch is `e` or `e + 1`, when tag `e` is live. (No SeqCst: the argument rests
//! on RMWs of one location, which the model checker explores exactly.)
//!
//! ### The dead tag is empty before it comes back
//!
//! At epoch `e` tag `e + 1` is dead, and the sweep empties it from every bucket; epoch `e + 1`,
//! whose writers write that tag again, starts only after the sweep of `e` has finished
//! ([`Epochs::try_advance`] reads the count of swept buckets). Writers pinned to `e` write tag
//! `e`, and move only entries live at `e` (`BucketEncoding::movable`); writers pinned to `e - 1`
//! could move a tag `e + 1` entry (live at `e - 1`) into a swept bucket, and the sweep does not
//! start until they are done. A claim of buckets to sweep names its epoch, and the epoch cannot
//! advance while a claim is unfinished, so no sweep empties a tag that has become current.
//!
//! ### No dead lane after the sweep
//!
//! Once the sweep of epoch `e` is counted whole, the claim that completed it sets [`SWEPT`] in
//! the epoch word, by a CAS from a word of `e` (so never on a later epoch's word). From then until
//! the epoch moves on, no bucket holds a lane of the dead tag: the sweep emptied them all, writers
//! pinned to `e` write live tags and move live entries only, and writers pinned to `e - 1`, which
//! could move an entry of tag `e + 1`, were done before the sweep started. So a lookup that reads
//! the flag before its buckets may match lanes whatever their tag (`WindowedFilter::contains`):
//! each lane it reads was live at `e` or written since (later epochs write live tags, move
//! entries live at `e`, and sweep only entries that were), and a lane missing from a validated
//! read was missing, whatever the epoch. It answers as a lookup that tests the tags at `e`.
//!
//! ## Pairings
//!
//! - The sweep's cleared words, then `swept` (Release), are read by [`Epochs::try_advance`]
//!   (Acquire) before its advance (SeqCst, so Release too), which a lookup's [`Epochs::read`]
//!   (Acquire) reads: a lookup that sees epoch `e + 1` sees every tag `e + 1` lane of epoch `e`
//!   emptied, and never takes one for a new entry.
//! - The sweep's cleared words, then `swept` (an AcqRel count, so the claim that completes it
//!   has seen every other claim's), then the flag's CAS (Release), are read by a lookup's
//!   [`Epochs::read`] (Acquire): a lookup that sees the flag sees every dead lane emptied.
//! - A writer's unpin (Release) is read by [`Epochs::drained`] (AcqRel), before the sweep's
//!   claims are reset (AcqRel), which a claim reads (Acquire): a sweep sees the words the
//!   writers pinned to the epoch before wrote.
//! - A writer's [`Epochs::unpin_confirmed`] unpins with a SeqCst RMW that follows its write,
//!   then reads the epoch (SeqCst): both are in the single order of SeqCst operations with the
//!   SeqCst advance, so if the read finds the epoch the writer was pinned to, the advance comes
//!   after the unpin, and the write came before the next epoch started. The unpin is the RMW
//!   the writer makes anyway, so the check costs no fence. (The model checker treats SeqCst
//!   accesses as acquire and release only: this pairing rests on the argument, and on the
//!   stream tests of `tests/filter/expiry.rs`.)
//! - A snapshot's [`Epochs::swept_through`] reads `swept` (Acquire, pairing with the sweep's
//!   Release count) or the epoch moved on (Acquire, pairing with the advance): either way the
//!   pass that follows sees every lane the sweep emptied (`windowed::snapshot`).

use core::ops::Range;
use core::time::Duration;

use crossbeam_utils::CachePadded;

use super::clock::Clock;
use crate::stats::thread_number;
use crate::sync::{self, AtomicU64, Ordering};

/// Bits of the epoch in every word that holds one; epochs wrap at `2^20`, which only equality
/// and tags (the epoch modulo 4) see.
const EPOCH_BITS: u32 = 20;
pub(crate) const EPOCH_MASK: u64 = (1 << EPOCH_BITS) - 1;
/// An epoch's start is kept in ticks of this fraction of the period.
const TICKS_PER_PERIOD: u64 = 16;
/// The largest count a stamped word holds: buckets of a windowed table, at most.
pub(crate) const MAX_BUCKETS: u64 = (1 << (64 - EPOCH_BITS)) - 1;
/// Slots writers pin on, by thread number.
const PIN_SLOTS: usize = if sync::MODEL_CHECKING { 1 } else { 64 };

/// An epoch and a count in one word: the epoch in the high bits, the count in the low.
#[inline]
const fn stamped(epoch: u64, count: u64) -> u64 {
    (epoch & EPOCH_MASK) << (64 - EPOCH_BITS) | count
}

#[inline]
const fn stamp(word: u64) -> u64 {
    word >> (64 - EPOCH_BITS)
}

#[inline]
const fn count(word: u64) -> u64 {
    word & MAX_BUCKETS
}

/// Set in the epoch word once the sweep of its epoch is done: no lane holds the dead tag
/// ([`Reading::sweep_done`]). The bit below the epoch: the start has one bit less.
const SWEPT: u64 = 1 << (63 - EPOCH_BITS);
/// The latest start an epoch word holds.
const MAX_START: u64 = SWEPT - 1;

/// The epoch of the epoch word, which keeps the epoch's start in the count.
#[inline(always)]
const fn epoch_of(word: u64) -> u64 {
    stamp(word)
}

/// The start of the epoch word's epoch, in ticks.
#[inline(always)]
const fn start_of(word: u64) -> u64 {
    word & MAX_START
}

/// The epoch word as a lookup reads it ([`Epochs::read`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Reading(u64);

impl Reading {
    /// The epoch.
    #[inline(always)]
    pub(crate) fn epoch(self) -> u64 {
        epoch_of(self.0)
    }

    /// Whether the sweep of the epoch was done: then no lane held the dead tag ([No dead lane
    /// after the sweep](self#no-dead-lane-after-the-sweep)).
    #[inline(always)]
    pub(crate) fn sweep_done(self) -> bool {
        self.0 & SWEPT != 0
    }
}

/// A writer counted on its slot under an epoch: until it drops, that epoch is the current one
/// or the one before it.
#[derive(Debug)]
#[must_use = "the epoch may move on once the guard drops"]
pub(crate) struct Pinned<'a> {
    slot: &'a AtomicU64,
    unit: u64,
    epoch: u64,
}

impl Pinned<'_> {
    /// The epoch the writer is pinned to.
    #[inline(always)]
    pub(crate) fn epoch(&self) -> u64 {
        self.epoch
    }
}

impl Drop for Pinned<'_> {
    #[inline]
    fn drop(&mut self) {
        // Release: pairs with `drained`; a sweep that sees the count gone sees the writes.
        self.slot.fetch_sub(self.unit, Ordering::Release);
    }
}

/// Buckets to sweep of the dead tag of `epoch`.
#[derive(Debug)]
pub(crate) struct Claim {
    pub(crate) epoch: u64,
    pub(crate) buckets: Range<usize>,
}

/// The epochs of a windowed filter.
#[derive(Debug)]
pub(crate) struct Epochs {
    /// The epoch, and the tick its start was read at (since `origin`).
    word: CachePadded<AtomicU64>,
    /// Two 32-bit counts each: writers pinned to an even epoch, in the low half, and to an odd one.
    pins: Box<[CachePadded<AtomicU64>]>,
    /// The epoch whose sweep is claimed, and the first bucket not yet claimed.
    claims: CachePadded<AtomicU64>,
    /// The epoch whose sweep is under way, and how many buckets are swept.
    swept: CachePadded<AtomicU64>,
    buckets: u64,
    /// A sixteenth of the period, in nanoseconds (at least 1).
    tick: u64,
    /// The clock's reading when the filter was made.
    origin: Duration,
    /// Time the current epoch had run before `origin`: a loaded filter's time into the epoch of
    /// its snapshot.
    head_start: Duration,
    clock: Box<dyn Clock>,
}

impl Epochs {
    /// Epoch 0, starting now, for a table of `buckets` buckets (at most [`MAX_BUCKETS`]) whose
    /// entries live for `period` (half the window) times two to three.
    pub(crate) fn new(buckets: usize, period: Duration, clock: Box<dyn Clock>) -> Self {
        Self::resumed(buckets, period, clock, 0, Duration::ZERO)
    }

    /// Epoch `epoch` (wrapped at `2^20`), which started `into` ago (counted up to a period), as a
    /// snapshot recorded it ([`position`](Self::position)). Its sweep starts afresh: a lane of
    /// its dead tag that the snapshot holds is emptied again.
    pub(crate) fn resumed(
        buckets: usize,
        period: Duration,
        clock: Box<dyn Clock>,
        epoch: u64,
        into: Duration,
    ) -> Self {
        let buckets = buckets as u64;
        debug_assert!(buckets <= MAX_BUCKETS);
        let tick = u64::try_from(period.as_nanos() / u128::from(TICKS_PER_PERIOD))
            .unwrap_or(u64::MAX)
            .max(1);
        // The sweep of the epoch before is done, so that this one's may start.
        let done = stamped(epoch.wrapping_sub(1), buckets);
        Self {
            word: CachePadded::new(AtomicU64::new(stamped(epoch, 0))),
            pins: (0..PIN_SLOTS).map(|_| CachePadded::new(AtomicU64::new(0))).collect(),
            claims: CachePadded::new(AtomicU64::new(done)),
            swept: CachePadded::new(AtomicU64::new(done)),
            buckets,
            tick,
            origin: clock.now(),
            head_start: into.min(period),
            clock,
        }
    }

    /// The clock's reading since `origin`, plus the head start, in nanoseconds.
    fn elapsed(&self) -> u128 {
        (self.clock.now().saturating_sub(self.origin) + self.head_start).as_nanos()
    }

    /// The current epoch (Acquire, as [`current`](Self::current)) and the time since it started,
    /// as a snapshot records them.
    pub(crate) fn position(&self) -> (u64, Duration) {
        // Acquire: as `current`.
        let word = self.word.load(Ordering::Acquire);
        let start = u128::from(start_of(word)) * u128::from(self.tick);
        let into = u64::try_from(self.elapsed().saturating_sub(start)).unwrap_or(u64::MAX);
        (epoch_of(word), Duration::from_nanos(into))
    }

    /// Whether the sweep of `epoch`'s dead tag is done: every bucket is swept, or the epoch has
    /// moved on (which it does only after the sweep). A caller that sees `true` sees every lane
    /// the sweep emptied as empty.
    pub(crate) fn swept_through(&self, epoch: u64) -> bool {
        // Acquire: pairs with `swept`, as in `try_advance`; `current` pairs with the advance.
        self.swept.load(Ordering::Acquire) == stamped(epoch, self.buckets)
            || self.current() != epoch
    }

    /// The current epoch.
    #[inline(always)]
    pub(crate) fn current(&self) -> u64 {
        self.read().epoch()
    }

    /// The epoch word, as a lookup reads it.
    #[inline(always)]
    pub(crate) fn read(&self) -> Reading {
        // Acquire: pairs with the advance in `try_advance` ([The dead tag is empty before it
        // comes back](self#the-dead-tag-is-empty-before-it-comes-back)), and with the flag of
        // `swept` ([No dead lane after the sweep](self#no-dead-lane-after-the-sweep)).
        Reading(self.word.load(Ordering::Acquire))
    }

    /// Unpins a writer that has written, and reads the epoch after: if it is still the one the
    /// writer was pinned to, the write was made before the next epoch started (the pairings).
    #[inline]
    pub(crate) fn unpin_confirmed(&self, pinned: Pinned<'_>) -> u64 {
        let pinned = core::mem::ManuallyDrop::new(pinned);
        // SeqCst: ordered in S before the load below, against the advance; Release too, as in
        // `Pinned::drop`.
        pinned.slot.fetch_sub(pinned.unit, Ordering::SeqCst);
        epoch_of(self.word.load(Ordering::SeqCst))
    }

    /// Pins the calling writer to the current epoch ([A writer is at most one epoch
    /// behind](self#a-writer-is-at-most-one-epoch-behind)). Lock-free: it tries again only
    /// when the epoch moved on.
    #[inline]
    // `PIN_SLOTS` is 1 when model checking: the modulo is constant there on purpose.
    #[allow(clippy::modulo_one)]
    pub(crate) fn pin(&self) -> Pinned<'_> {
        let slot = &self.pins[thread_number().unwrap_or(0) % PIN_SLOTS];
        // Relaxed: only a guess; the read after the pin decides.
        let mut epoch = epoch_of(self.word.load(Ordering::Relaxed));
        loop {
            let unit = 1 << (32 * (epoch & 1));
            // AcqRel: an RMW ordered with `drained`'s on the slot; Acquire, so that the read
            // below happens after a `drained` this reads, and Release for the unpin's sake.
            slot.fetch_add(unit, Ordering::AcqRel);
            // Acquire: pairs with the advance, as `current`.
            let now = epoch_of(self.word.load(Ordering::Acquire));
            if now == epoch {
                return Pinned { slot, unit, epoch };
            }
            // Release: as in `Pinned::drop`.
            slot.fetch_sub(unit, Ordering::Release);
            epoch = now;
        }
    }

    /// Whether no writer is pinned to an epoch of `epoch`'s parity. Called after reading the
    /// epoch after `epoch`.
    fn drained(&self, epoch: u64) -> bool {
        let shift = 32 * (epoch & 1);
        // An RMW, AcqRel: ordered with the pins on the slot ([A writer is at most one epoch
        // behind](self#a-writer-is-at-most-one-epoch-behind)); Acquire pairs with the unpin.
        self.pins.iter().all(|slot| (slot.fetch_add(0, Ordering::AcqRel) >> shift) as u32 == 0)
    }

    /// Claims up to `chunk` buckets to sweep of the current epoch's dead tag: `None` when every
    /// bucket is claimed, or when the sweep cannot start yet (writers pinned to the epoch before
    /// are still writing).
    pub(crate) fn claim(&self, chunk: usize) -> Option<Claim> {
        let epoch = self.current();
        // Acquire: pairs with the reset in `start_sweep`, after `drained`.
        let mut claims = self.claims.load(Ordering::Acquire);
        if stamp(claims) != epoch {
            if !self.start_sweep(epoch) {
                return None;
            }
            claims = self.claims.load(Ordering::Acquire);
        }
        loop {
            let next = count(claims);
            if stamp(claims) != epoch || next >= self.buckets {
                return None;
            }
            let end = next.saturating_add(chunk as u64).min(self.buckets);
            // Acquire on both: as the load above.
            match self.claims.compare_exchange_weak(
                claims,
                stamped(epoch, end),
                Ordering::Acquire,
                Ordering::Acquire,
            ) {
                Ok(_) => return Some(Claim { epoch, buckets: next as usize..end as usize }),
                Err(actual) => claims = actual,
            }
        }
    }

    /// Starts the sweep of `epoch` once the writers pinned to the epoch before are done: resets
    /// the swept count, then the claims. Whether the claims are now `epoch`'s.
    fn start_sweep(&self, epoch: u64) -> bool {
        if !self.drained(epoch.wrapping_sub(1)) {
            return false;
        }
        let before = stamped(epoch.wrapping_sub(1), self.buckets);
        let fresh = stamped(epoch, 0);
        // The count first: a claim of `epoch` is made only once its count starts from 0. Either
        // CAS fails when another thread made it (or the epoch has moved on). AcqRel: the claims'
        // reset is read by claimers (Acquire), after `drained` in this thread.
        let _ = self.swept.compare_exchange(before, fresh, Ordering::AcqRel, Ordering::Relaxed);
        match self.claims.compare_exchange(before, fresh, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => true,
            Err(actual) => stamp(actual) == epoch,
        }
    }

    /// Counts a claim as swept; the claim that completes the sweep flags the epoch word.
    pub(crate) fn swept(&self, claim: &Claim) {
        let buckets = (claim.buckets.end - claim.buckets.start) as u64;
        // Release: pairs with the Acquire read of `try_advance`. Acquire: the claim that
        // completes the count sees every claim's sweep, and the flag passes them all on. The
        // count keeps its stamp: the epoch cannot move on before this claim is counted.
        let before = self.swept.fetch_add(buckets, Ordering::AcqRel);
        if count(before) + buckets != self.buckets {
            return;
        }
        // Relaxed: the CAS checks the value. It fails if the epoch has moved on meanwhile (the
        // sweep was done, so it may), and the flag is never set on a later epoch's word.
        let word = self.word.load(Ordering::Relaxed);
        if epoch_of(word) == claim.epoch {
            // Release: pairs with a lookup's `read` (Acquire).
            let _ = self.word.compare_exchange(
                word,
                word | SWEPT,
                Ordering::Release,
                Ordering::Relaxed,
            );
        }
    }

    /// Starts the next epoch if the sweep of the current one is done and the clock has read a
    /// period since it started ([An epoch lasts at least a
    /// period](self#an-epoch-lasts-at-least-a-period)). Whether this call started it.
    pub(crate) fn try_advance(&self) -> bool {
        self.advance(true)
    }

    /// Starts the next epoch if the sweep of the current one is done, whatever the clock reads:
    /// for a filter whose epochs follow another's, whose clock kept them a period long. Whether
    /// this call started it.
    pub(crate) fn advance_now(&self) -> bool {
        self.advance(false)
    }

    /// [`try_advance`](Self::try_advance), or [`advance_now`](Self::advance_now) without
    /// `on_time`.
    fn advance(&self, on_time: bool) -> bool {
        // Relaxed: the CAS below checks the value.
        let word = self.word.load(Ordering::Relaxed);
        let epoch = epoch_of(word);
        // Acquire: pairs with `swept`.
        if self.swept.load(Ordering::Acquire) != stamped(epoch, self.buckets) {
            return false;
        }
        let elapsed = self.elapsed();
        // The comparison rounds the reading down and the new start rounds it up, so an epoch
        // never lasts less than a period.
        let floor = u64::try_from(elapsed / u128::from(self.tick)).unwrap_or(MAX_START);
        if on_time && floor < start_of(word).saturating_add(TICKS_PER_PERIOD) {
            return false;
        }
        let start = u64::try_from(elapsed.div_ceil(u128::from(self.tick)))
            .unwrap_or(MAX_START)
            .min(MAX_START);
        let next = stamped(epoch + 1, start);
        let mut word = word;
        loop {
            // SeqCst: in S with `unpin_confirmed`'s unpin and load; Release with `read`.
            match self.word.compare_exchange(word, next, Ordering::SeqCst, Ordering::Relaxed) {
                Ok(_) => return true,
                // The sweep's flag, set meanwhile: the epoch is still this call's to advance.
                Err(actual) if actual == word | SWEPT => word = actual,
                Err(_) => return false,
            }
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::windowed::clock::ManualClock;

    const PERIOD: Duration = Duration::from_secs(1);

    fn epochs(buckets: usize) -> (Epochs, ManualClock) {
        let clock = ManualClock::new();
        (Epochs::new(buckets, PERIOD, Box::new(clock.clone())), clock)
    }

    fn sweep_all(epochs: &Epochs) -> usize {
        let mut swept = 0;
        while let Some(claim) = epochs.claim(3) {
            swept += claim.buckets.len();
            epochs.swept(&claim);
        }
        swept
    }

    #[test]
    fn an_epoch_advances_after_a_period_and_a_full_sweep_only() {
        let (epochs, clock) = epochs(10);
        assert_eq!(epochs.current(), 0);
        clock.advance(PERIOD);
        assert!(!epochs.try_advance(), "the sweep of epoch 0 has not run");
        assert_eq!(sweep_all(&epochs), 10);
        assert!(epochs.try_advance());
        assert_eq!(epochs.current(), 1);
        assert_eq!(sweep_all(&epochs), 10);
        clock.advance(PERIOD - Duration::from_nanos(1));
        assert!(!epochs.try_advance(), "a period has not passed since epoch 1 started");
        clock.advance(Duration::from_nanos(1));
        assert!(epochs.try_advance());
        assert_eq!(epochs.current(), 2);
    }

    #[test]
    fn a_late_maintainer_starts_one_epoch_a_period() {
        let (epochs, clock) = epochs(4);
        clock.advance(PERIOD * 10);
        sweep_all(&epochs);
        assert!(epochs.try_advance());
        sweep_all(&epochs);
        assert!(!epochs.try_advance(), "epoch 1 started now; it lasts a period");
        clock.advance(PERIOD);
        assert!(epochs.try_advance());
    }

    #[test]
    fn the_sweep_waits_for_writers_of_the_epoch_before() {
        let (epochs, clock) = epochs(4);
        sweep_all(&epochs);
        let writer = epochs.pin();
        assert_eq!(writer.epoch(), 0);
        clock.advance(PERIOD);
        assert!(epochs.try_advance(), "a writer pinned to 0 may still write in 1");
        assert!(epochs.claim(4).is_none(), "the sweep of 1 waits for the writer pinned to 0");
        drop(writer);
        assert_eq!(sweep_all(&epochs), 4);
        assert_eq!(epochs.pin().epoch(), 1);
    }

    #[test]
    fn the_claim_that_completes_the_sweep_flags_its_epoch_alone() {
        let (epochs, clock) = epochs(10);
        assert!(!epochs.read().sweep_done(), "a new filter's first sweep has not run");
        let first = epochs.claim(4).unwrap();
        let rest: Vec<_> = core::iter::from_fn(|| epochs.claim(4)).collect();
        rest.iter().for_each(|c| epochs.swept(c));
        assert!(!epochs.read().sweep_done(), "a claim is unswept");
        epochs.swept(&first);
        assert!(epochs.read().sweep_done());
        assert_eq!(epochs.position().1, Duration::ZERO, "the flag is no part of the start");
        clock.advance(PERIOD);
        assert!(epochs.try_advance(), "the flag does not stop the advance");
        assert_eq!(epochs.current(), 1);
        assert!(!epochs.read().sweep_done(), "the next epoch has its own sweep");
        assert_eq!(sweep_all(&epochs), 10);
        assert!(epochs.read().sweep_done());
    }

    #[test]
    fn claims_cover_every_bucket_once() {
        let (epochs, _) = epochs(10);
        let claims: Vec<_> = core::iter::from_fn(|| epochs.claim(4)).collect();
        let ranges: Vec<_> = claims.iter().map(|c| c.buckets.clone()).collect();
        assert_eq!(ranges, [0..4, 4..8, 8..10]);
        assert!(claims.iter().all(|c| c.epoch == 0));
        claims.iter().take(2).for_each(|c| epochs.swept(c));
        assert!(!epochs.try_advance(), "a claim is unfinished");
    }
}
