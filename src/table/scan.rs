//! Snapshot scans of a live table: one pass over the bucket words, with writers' help.
//!
//! A word-by-word copy of a live table can lose an item: its copy can leave a bucket the pass has
//! not read yet while its successor copy (a relocation's copy-in, or a colliding insert before a
//! remove; see the parent module's Orderings) lands in a bucket the pass has already read. Instead
//! of validating the pass and repeating it (which never ends under steady churn), a scan makes
//! every removal that could cause such a loss copy its bucket into the scan first.
//!
//! # Protocol
//!
//! The scan's copy starts as [`UNUSED_WORD`] in every bucket, a word no bucket holds. A bucket is
//! *captured* when a CAS replaces that with a word read from the bucket; the first capture wins
//! and the copy never changes after.
//!
//! 1. **Start.** The scan publishes its copy in the table's [`Rendezvous`] and opens it with its
//!    id, then adds the id to the low half of every stripe (`S_s` on stripe `s`, an AcqRel RMW),
//!    then marks the rendezvous [`READY`] (an AcqRel RMW on its state).
//! 2. **Pass.** It captures every bucket in index order.
//! 3. **Writers.** Every removal is announced by an AcqRel RMW on its pair's stripe ([Every removal
//!    is announced](super#every-removal-is-announced)), which returns the stripe's previous value.
//!    If that shows the scan's id, the writer enters the rendezvous (an AcqRel RMW on its state)
//!    and, if the rendezvous is ready, captures the bucket before its removal CAS; either way it
//!    leaves (a Release RMW).
//! 4. **End.** It takes its id off every stripe, closes the rendezvous, and waits until no writer
//!    is inside; then the copy is final. A guard ([`ScanGuard`]) makes the end happen also when the
//!    pass unwinds, before the copy is freed.
//!
//! # Why nothing present at the start is lost
//!
//! Take an item whose insert happened-before the scan, and follow its copy as in the parent module:
//! each removal that takes it is announced after the add of the next copy. Call a removal *early*
//! if it did not capture: its announcement preceded `S_s` on its stripe, or it entered the
//! rendezvous before `READY`. Either way its announcement happens-before `READY`: `S_s` reads the
//! announcement or a later RMW of its release sequence (every write of a stripe is an RMW), and
//! `READY` likewise reads the writer's Release entry or a later RMW of the rendezvous's state. So
//! the add of the next copy happens-before `READY`, hence before the pass and before every capture,
//! which enters after `READY`. Whoever captures the next copy's bucket reads a word that contains
//! that add or something later in the bucket's history.
//!
//! Every other removal during the scan captures its bucket first: the capture reads the bucket
//! before the removal (program order), or loses the CAS to an earlier capture whose release CAS it
//! acquires, so that capture's read too happens-before the removal. A removal whose writer enters
//! after the rendezvous closed comes after the pass: closing is an RMW that the entry reads, so the
//! pass happens-before the removal; a removal announced after the id left its stripe likewise.
//!
//! So each capture of a bucket holding the item's current copy reads it before any removal that
//! takes it, and the capture of the first copy's bucket reads it after that copy's put: by
//! induction along the chain of copies, some captured word holds the item. The `READY` step
//! matters: without it, a writer that saw the id on an early stripe could capture a bucket before
//! the scan started on a later stripe, and miss a copy-in whose relocation announced on that later
//! stripe just before the start and then removed the source without capturing.
//!
//! A relocation in flight may be captured in both buckets, and a remove during the scan may be
//! captured before it took its copy: a snapshot may hold a surplus copy, never fewer.
//!
//! # Progress
//!
//! One pass, always: the scan never repeats and never waits for writers except to let those
//! inside a capture (a load and a CAS) leave before it hands the copy over. Writers never wait for
//! a scan: a capture is bounded work, done only by removals announced while a scan runs. Lookups
//! do not take part; a lookup that straddles a scan's start or end on its stripe validates once
//! more. One scan runs at a time per table; a second `write_to` waits for the first pass to end.

use std::io;

use crate::bucket::{BucketEncoding, UNUSED_WORD};
use crate::sync::{self, AtomicBool, AtomicPtr, AtomicU64, Ordering};

use super::stripe::ScanId;
use super::words::Words;
use super::Table;

/// In a [`Rendezvous`]'s state: the scan has started on every stripe, and writers may capture.
const READY: u64 = 1 << 31;

/// Where a running scan publishes its copy for writers to capture into.
#[derive(Debug)]
pub(super) struct Rendezvous {
    /// Claimed by the scan that runs; one at a time.
    busy: AtomicBool,
    /// The running scan's id in the high half (0: closed), [`READY`], and below it the writers
    /// inside [`capture`](Self::capture).
    state: AtomicU64,
    /// The running scan's copy, as long as the table has buckets.
    words: AtomicPtr<AtomicU64>,
    /// Scans started, for the next id.
    started: AtomicU64,
    /// Buckets captured by writers for the running scan.
    captured: AtomicU64,
}

impl Rendezvous {
    pub(super) fn new() -> Self {
        Self {
            busy: AtomicBool::new(false),
            state: AtomicU64::new(0),
            words: AtomicPtr::new(core::ptr::null_mut()),
            started: AtomicU64::new(0),
            captured: AtomicU64::new(0),
        }
    }

    /// Copies `bucket`, bucket number `index`, into scan `id`'s copy if that scan is still
    /// running and nobody captured the bucket yet. The caller is about to remove a fingerprint
    /// from the bucket, and its announcement read `id` on the pair's stripe. Inline: the
    /// removal paths that call it are generic, compiled in the user's crate, where a call would
    /// make every removal save the registers this rare path needs.
    #[inline]
    pub(super) fn capture(&self, id: ScanId, index: usize, bucket: &AtomicU64) {
        // AcqRel. Acquire: pairs with the AcqRel `READY` in `ScanGuard::open`, so a capture sees
        // everything before the scan's start on every stripe. Release: if the scan is not ready
        // yet, this writer removes without capturing, and `READY` (an RMW later in this word's
        // order) acquires this entry, so what preceded the writer's announcement precedes the
        // pass.
        let state = self.state.fetch_add(1, Ordering::AcqRel);
        if (state >> 32) as u32 == id.get() && state & READY != 0 {
            // Relaxed: the entry above already shows the pointer stored before the state opened.
            let words = self.words.load(Ordering::Relaxed);
            // SAFETY: the state is open for scan `id`, whose copy `words` points to: a live
            // allocation of one `AtomicU64` per bucket, and `index` is a bucket number. The scan
            // frees it only after closing the state and seeing no writer inside (our exit below
            // happens after this use), also when it unwinds (`ScanGuard`'s drop).
            let slot = unsafe { &*words.add(index) };
            // Relaxed: the entry above orders this read after everything before the scan became
            // ready, and program order keeps it before our removal.
            let word = bucket.load(Ordering::Relaxed);
            // AcqRel. Release on success: a writer whose CAS fails on this capture, and the
            // scan's own pass, acquire it, so our read happens-before their removals. Acquire
            // on failure: the same for the capture that won.
            if slot.compare_exchange(UNUSED_WORD, word, Ordering::AcqRel, Ordering::Acquire).is_ok()
            {
                self.captured.fetch_add(1, Ordering::Relaxed);
            }
        }
        // Release: the scan's Acquire wait for no writers inside sees our capture.
        self.state.fetch_sub(1, Ordering::Release);
    }
}

/// A consistent copy of a table's bucket words, from [`Table::scan`].
#[derive(Debug)]
pub(crate) struct ScannedWords {
    words: Words,
    /// Buckets that writers captured for the scan before removing from them.
    pub(crate) captured_by_writers: u64,
}

impl ScannedWords {
    /// The copied words, in bucket order.
    pub(crate) fn words(&self) -> impl ExactSizeIterator<Item = u64> + '_ {
        // Relaxed: the scan is over and its thread saw every capture (`ScanGuard::end`).
        self.words.iter().map(|word| word.load(Ordering::Relaxed))
    }

    pub(crate) fn len(&self) -> usize {
        self.words.len()
    }
}

/// A running scan of one table: from claiming the rendezvous to releasing it. Dropping it ends
/// the scan (takes its id off every stripe, closes the rendezvous, waits for the writers inside)
/// before its copy is freed, and releases the rendezvous, also when the pass unwinds: no writer
/// is left holding a pointer into a freed copy, and the next scan does not wait forever.
struct ScanGuard<'t, E: BucketEncoding> {
    table: &'t Table<E>,
    id: ScanId,
    /// The copy the scan fills; taken out by [`finish`](Self::finish).
    words: Option<Words>,
    /// Whether the id is on the stripes and in the rendezvous (from `open` to `end`).
    open: bool,
}

impl<'t, E: BucketEncoding> ScanGuard<'t, E> {
    /// Claims `table`'s rendezvous for a scan into `words`; a second scan waits here for the
    /// first to end. Writers never touch `busy`.
    fn claim(table: &'t Table<E>, words: Words) -> Self {
        let rendezvous = &table.rendezvous;
        // Acquire: pairs with the Release reset in `drop`, so this scan starts after the
        // previous one finished with the rendezvous.
        while rendezvous
            .busy
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            sync::yield_now();
        }
        // Ids are never 0 (no scan) and unique for 2^32 - 1 scans: a writer that read an old
        // scan's id on a stripe cannot capture into a newer scan's copy. Relaxed: only this
        // thread, holding `busy`, writes it.
        let started = rendezvous.started.fetch_add(1, Ordering::Relaxed);
        let id = ScanId::new((started % u64::from(u32::MAX)) as u32 + 1).expect("1 or more");
        Self { table, id, words: Some(words), open: false }
    }

    fn words(&self) -> &Words {
        self.words.as_ref().expect("the copy stays until `finish`")
    }

    /// Publishes the copy, puts the id on every stripe and marks the rendezvous [`READY`].
    fn open(&mut self) {
        let rendezvous = &self.table.rendezvous;
        rendezvous.captured.store(0, Ordering::Relaxed);
        rendezvous.words.store(self.words().as_ptr().cast_mut(), Ordering::Relaxed);
        // Release: publishes the pointer to writers whose Acquire entry in `capture` reads this.
        rendezvous.state.fetch_add(u64::from(self.id.get()) << 32, Ordering::Release);
        self.open = true;
        for stripe in self.table.stripes.iter() {
            stripe.open_scan(self.id);
        }
        // AcqRel. Acquire: pairs with the Release entries of writers that saw the scan on their
        // stripe before this, and removed without capturing: what preceded their announcements
        // is visible to the pass. Release: pairs with the Acquire entries of writers that see
        // this and capture: the starts on every stripe happen-before their captures.
        rendezvous.state.fetch_or(READY, Ordering::AcqRel);
    }

    /// Captures every bucket in index order, calling `after_capture(i)` after bucket `i`.
    fn pass(&self, mut after_capture: impl FnMut(usize)) {
        for (i, (bucket, copy)) in self.table.buckets.iter().zip(self.words().iter()).enumerate() {
            // Relaxed: the starts on the stripes order this read after everything announced
            // before them.
            let word = bucket.load(Ordering::Relaxed);
            // AcqRel: as in `capture`; the pass and writers race to capture, the first wins.
            let _ = copy.compare_exchange(UNUSED_WORD, word, Ordering::AcqRel, Ordering::Acquire);
            after_capture(i);
        }
    }

    /// Takes the id off every stripe, closes the rendezvous and waits for the writers inside.
    /// Idempotent; ends with the copy final and no writer able to reach it.
    fn end(&mut self) {
        if !self.open {
            return;
        }
        self.open = false;
        let rendezvous = &self.table.rendezvous;
        for stripe in self.table.stripes.iter() {
            stripe.close_scan(self.id);
        }
        // AcqRel: closes the rendezvous; a writer whose entry reads this leaves without
        // capturing, and the pass happens-before its removal. (`READY` may be unset if `open`
        // unwound before it; the guard then clears only what it set.)
        let ready = rendezvous.state.load(Ordering::Relaxed) & READY;
        rendezvous.state.fetch_sub(u64::from(self.id.get()) << 32 | ready, Ordering::AcqRel);
        // Acquire: pairs with the Release exits in `capture`: every capture made is visible now.
        while rendezvous.state.load(Ordering::Acquire) as u32 != 0 {
            sync::yield_now();
        }
        rendezvous.words.store(core::ptr::null_mut(), Ordering::Relaxed);
    }

    /// Ends the scan and hands its copy over.
    fn finish(mut self) -> ScannedWords {
        self.end();
        // Relaxed: the wait in `end` saw every writer's exit, which follows its count.
        let captured_by_writers = self.table.rendezvous.captured.load(Ordering::Relaxed);
        let words = self.words.take().expect("finished once");
        ScannedWords { words, captured_by_writers }
    }
}

impl<E: BucketEncoding> Drop for ScanGuard<'_, E> {
    fn drop(&mut self) {
        self.end();
        // Release: pairs with the Acquire claim of the next scan.
        self.table.rendezvous.busy.store(false, Ordering::Release);
    }
}

impl<E: BucketEncoding> Table<E> {
    /// A new table holding one scan's copy of this one: every item present throughout the call
    /// is in it (see [`scan`](Self::scan)). Its counters start afresh, holding the copy's items.
    pub(crate) fn consistent_copy(&self) -> io::Result<Self> {
        let ScannedWords { words, .. } = self.scan()?;
        Ok(Self::from_buckets(words, self.lookup_retries, self.huge_pages))
    }

    /// Copies the bucket words so that every item present when the scan starts (inserted and
    /// not removed, in the parent module's sense) is in the copy; see the module documentation.
    pub(crate) fn scan(&self) -> io::Result<ScannedWords> {
        self.scan_with(|_| {})
    }

    /// [`scan`](Self::scan), calling `after_capture(i)` after the pass captures bucket `i` (a
    /// test hook; a no-op otherwise). If it panics, the scan ends and the panic goes on.
    pub(crate) fn scan_with(&self, after_capture: impl FnMut(usize)) -> io::Result<ScannedWords> {
        let words = unused_words(self.buckets.len(), self.huge_pages)?;
        let mut scan = ScanGuard::claim(self, words);
        scan.open();
        scan.pass(after_capture);
        Ok(scan.finish())
    }
}

/// `len` words of [`UNUSED_WORD`], or an out-of-memory error instead of an abort.
fn unused_words(len: usize, huge_pages: bool) -> io::Result<Words> {
    Words::filled(len, UNUSED_WORD, huge_pages).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::OutOfMemory,
            "cannot allocate a copy of the cuckoo filter's table",
        )
    })
}

// Unit tests of std builds; the loom suite (`loom-tests/`) models the scan under the checker.
#[cfg(test)]
mod tests {
    use super::*;
    use crate::bucket::plain::Plain;
    use crate::fingerprint::Fingerprint;
    use crate::hash::{alt_index, Slots};
    use crate::table::DEFAULT_LOOKUP_RETRIES;

    /// A table of `m` buckets holding `f` in bucket `high = m - 1`, whose other bucket is 0.
    fn table_with_one_print(m: usize) -> (Table<Plain>, Fingerprint, usize) {
        let high = m - 1;
        let f = (1..0xFFFF)
            .map(Fingerprint::of)
            .find(|&f| alt_index(high, f, m) == 0)
            .expect("a print links them");
        let mut words = vec![0u64; m];
        words[high] = u64::from(f.get());
        (Table::from_words(words, DEFAULT_LOOKUP_RETRIES, true, 1), f, high)
    }

    fn copies(scan: &ScannedWords, f: Fingerprint) -> usize {
        scan.words().map(|w| Plain::count(w, f)).sum()
    }

    /// The hazard: the fingerprint moves from the last bucket into the first after the pass
    /// copied the first. A plain copy misses it; the mover captures the last bucket first.
    #[test]
    fn a_relocation_behind_the_pass_is_captured_by_the_mover() {
        let (table, f, high) = table_with_one_print(64);
        let mut plain = Vec::new();
        for (i, word) in table.buckets.iter().enumerate() {
            plain.push(word.load(Ordering::Acquire));
            if i == 0 {
                assert!(table.relocate_for_test(f, high, 0));
            }
        }
        assert!(plain.iter().all(|&w| w == 0), "the plain copy misses the item");

        let (table, f, high) = table_with_one_print(64);
        let scan = table
            .scan_with(|i| {
                if i == 0 {
                    assert!(table.relocate_for_test(f, high, 0));
                }
            })
            .unwrap();
        assert_eq!(copies(&scan, f), 1);
        assert_eq!(scan.words().nth(high), Some(u64::from(f.get())), "captured before the removal");
        assert_eq!(scan.captured_by_writers, 1);
    }

    /// The same key inserted a second time into the bucket the pass has passed, then removed
    /// once from the bucket ahead of it: no relocation at all, and the remover captures.
    #[test]
    fn a_repeated_key_removed_ahead_of_the_pass_is_captured_by_the_remover() {
        let (table, f, high) = table_with_one_print(64);
        let low_first = Slots { fingerprint: f, first: 0, second: high };
        let high_first = Slots { fingerprint: f, first: high, second: 0 };
        let scan = table
            .scan_with(|i| {
                if i == 0 {
                    table.insert(low_first).unwrap();
                    assert!(table.remove(high_first));
                }
            })
            .unwrap();
        assert_eq!(copies(&scan, f), 1, "the item present throughout is in the copy");
        assert_eq!(scan.captured_by_writers, 1);
        // The table itself holds the key once, in the low bucket.
        assert_eq!(table.fingerprint_count(0, f) + table.fingerprint_count(high, f), 1);
    }

    #[test]
    fn an_idle_table_is_copied_exactly_with_no_captures() {
        let (table, f, high) = table_with_one_print(8);
        let scan = table.scan().unwrap();
        assert_eq!(scan.len(), 8);
        assert_eq!(scan.words().nth(high), Some(u64::from(f.get())));
        assert_eq!(scan.captured_by_writers, 0);
        // The rendezvous is closed and free again: stripes carry no scan id.
        assert!(table.stripes.iter().all(|stripe| stripe.scan_id().is_none()));
        assert_eq!(table.rendezvous.state.load(Ordering::Relaxed), 0);
        assert_eq!(copies(&table.scan().unwrap(), f), 1);
    }

    /// A pass that unwinds (its callback panics) still ends the scan before its copy is freed:
    /// a later removal captures into nothing, and the next scan does not wait for it.
    #[test]
    fn a_pass_that_panics_ends_the_scan_and_the_table_goes_on() {
        let (table, f, high) = table_with_one_print(64);
        let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            table.scan_with(|i| assert!(i < 5, "the callback panics mid-pass"))
        }));
        assert!(unwound.is_err());
        assert!(table.stripes.iter().all(|stripe| stripe.scan_id().is_none()));
        assert_eq!(table.rendezvous.state.load(Ordering::Relaxed), 0);
        assert!(!table.rendezvous.busy.load(Ordering::Relaxed));
        assert!(table.remove(Slots { fingerprint: f, first: high, second: 0 }));
        assert_eq!(table.rendezvous.captured.load(Ordering::Relaxed), 0);
        table.insert(Slots { fingerprint: f, first: 0, second: high }).unwrap();
        assert_eq!(copies(&table.scan().unwrap(), f), 1);
    }

    #[test]
    fn removals_outside_a_scan_capture_nothing() {
        let (table, f, high) = table_with_one_print(8);
        assert!(table.remove(Slots { fingerprint: f, first: high, second: 0 }));
        assert_eq!(table.rendezvous.captured.load(Ordering::Relaxed), 0);
        assert_eq!(copies(&table.scan().unwrap(), f), 0);
    }
}
