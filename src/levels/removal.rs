//! Removes in a grown filter, and the pending removals they leave behind when two levels hold
//! matches (the module documentation's "Churn" and "Settling").

use super::chain::Chain;
use super::Levels;
use crate::bucket::BucketEncoding;
use crate::pending::{self, Block};
use crate::published::{Published, Pushed};
use crate::sizing::Ceiling;
use crate::sync::{AtomicU64, Ordering};

/// The removes that left a copy in the levels.
pub(super) struct Removals {
    /// Blocks of pending removals ([`pending`]) beyond the levels' own.
    overflow: Published<Block>,
    /// How many removals are pending: at least as many as the blocks have entries (incremented
    /// before an entry is written, decremented after one is taken).
    pending: AtomicU64,
    /// Removed items whose fingerprint stays in the levels for good: ambiguous removes that found
    /// every entry of their windows taken, and those a loaded snapshot or a merge brought.
    retained: AtomicU64,
}

impl Removals {
    pub(super) fn new(retained: u64) -> Self {
        Self {
            overflow: Published::new(),
            pending: AtomicU64::new(0),
            retained: AtomicU64::new(retained),
        }
    }

    /// Bytes of the overflow blocks.
    pub(super) fn memory_usage(&self) -> usize {
        let node = Published::<Block>::NODE_BYTES + core::mem::size_of::<Block>();
        self.overflow.head().iter().map(|block| node + block.memory_usage()).sum()
    }

    /// Forgets every removal.
    pub(super) fn clear(&mut self) {
        self.overflow.clear();
        // Relaxed: `&mut self` means no other thread reads them.
        self.pending.store(0, Ordering::Relaxed);
        self.retained.store(0, Ordering::Relaxed);
    }

    /// Counts `removes` more removed items whose fingerprints stay in the levels.
    pub(super) fn add_retained(&self, removes: u64) {
        // Relaxed: a count, as every counter.
        self.retained.fetch_add(removes, Ordering::Relaxed);
    }

    /// Pending removals.
    pub(super) fn pending(&self) -> u64 {
        // Relaxed: a count, as every counter.
        self.pending.load(Ordering::Relaxed)
    }

    /// Pending removals and those retained for good.
    pub(super) fn retained(&self) -> u64 {
        // Relaxed: a count, as every counter.
        self.pending() + self.retained.load(Ordering::Relaxed)
    }

    /// Adds an overflow block twice as large as the newest one (or as `first`, if there is
    /// none), unless another thread added one first; `false` when the blocks are as many as a
    /// list holds.
    fn grow(&self, first: usize) -> bool {
        let seen = self.overflow.head();
        let entries = seen.newest().map_or(first, Block::len) * 2;
        self.overflow.push(seen, Block::overflow(entries)) != Pushed::Full
    }
}

impl<E: BucketEncoding> Levels<E> {
    /// [`remove`](Self::remove) in a grown filter, out of line (see `contains_grown`).
    #[inline(never)]
    pub(super) fn remove_grown(&self, chain: Chain<'_, E>, mixed: u64) -> bool {
        let key = pending::key(mixed);
        // Pending removals of the item first: completed if the levels now allow it, so that
        // what follows weighs only the copies that are still the item's.
        if self.pending_of(chain, key) > 0 {
            self.settle(chain, key);
        }
        loop {
            // Each level's validated read: it never misses copies present throughout.
            let holders = chain.holders(mixed).unwrap_or_else(|| chain.holders_counted(mixed));
            let holder = match holders.count_ones() {
                0 => return false,
                1 => chain.get(holders.trailing_zeros() as usize).expect("a level of the chain"),
                _ => break,
            };
            if holder.remove(holder.slots(mixed)) {
                return true;
            }
            // Another thread took the copies since they were counted: count again.
        }
        // Ambiguous: record a removal. (Were every matching copy some pending removal's already,
        // the settle above would have completed them and found none.)
        self.leave_behind(chain, key);
        // The announcement. AcqRel: a read-modify-write, so the announcements of removes that
        // register at once are ordered, and each acquires the registrations released by those
        // before it: the last to announce counts every entry in `settle`, and completes them
        // if they are now as many as the copies.
        self.removals.pending.fetch_add(0, Ordering::AcqRel);
        self.settle(chain, key);
        true
    }

    /// Records that a copy matching `key` stays in the levels for an item that was removed: a
    /// pending removal in a free entry of a block of `chain`, adding an overflow block if none
    /// is free (without a memory ceiling), or else a removal retained for good.
    fn leave_behind(&self, chain: Chain<'_, E>, key: u64) {
        let removals = &self.removals;
        // Relaxed: a count, exact once the operations are joined; incremented before the entry
        // is written and decremented after it is taken, so it never falls below the entries.
        removals.pending.fetch_add(1, Ordering::Relaxed);
        loop {
            if self.blocks(chain).any(|block| block.register(key)) {
                return;
            }
            let Some(Ceiling { bytes: None, .. }) = self.growth else {
                break;
            };
            let newest_block = chain.added().next().map_or(0, |level| level.pending.len());
            if !removals.grow(newest_block) {
                break;
            }
        }
        // Relaxed: counts, as above.
        removals.pending.fetch_sub(1, Ordering::Relaxed);
        removals.add_retained(1);
    }

    /// Takes a pending removal of the item, if one is recorded: its surplus copy is the item's
    /// copy again.
    #[inline]
    pub(super) fn claim(&self, chain: Chain<'_, E>, mixed: u64) -> bool {
        // Relaxed: only a hint. An insert that misses an entry recorded meanwhile stores a copy
        // of its own, which is always sound.
        if self.removals.pending.load(Ordering::Relaxed) == 0 {
            return false;
        }
        let key = pending::key(mixed);
        let claimed = self.blocks(chain).any(|block| block.claim(key));
        if claimed {
            // Relaxed: a count, as in `leave_behind`.
            self.removals.pending.fetch_sub(1, Ordering::Relaxed);
        }
        claimed
    }

    /// Settles every pending removal ([`settle`](Self::settle)).
    pub(super) fn sweep(&self, chain: Chain<'_, E>) {
        // Relaxed: only a hint, as in `claim`.
        if self.removals.pending.load(Ordering::Relaxed) == 0 {
            return;
        }
        for block in self.blocks(chain) {
            for key in block.keys() {
                self.settle(chain, key);
            }
        }
    }

    /// Completes the pending removals of `key` (removes their surplus copies) when the levels
    /// tell which copies they are: when one level alone holds matches (the colliding item in
    /// another level was removed meanwhile), or when the removals are as many as the matching
    /// copies, so that every copy is surplus (the item's copies were split across levels by an
    /// insert racing a growth, and it was removed as often as inserted). Otherwise it leaves
    /// them. Each completion claims an entry first, so it owns the copy it removes; an entry
    /// whose copy is gone (taken by a remove of an item never inserted) is dropped.
    fn settle(&self, chain: Chain<'_, E>, key: u64) {
        let pending = self.pending_of(chain, key);
        if pending == 0 {
            return;
        }
        let (copies, holders) = chain.copies(key);
        if pending < copies && holders.count_ones() > 1 {
            return;
        }
        for _ in 0..pending {
            if !self.blocks(chain).any(|block| block.claim(key)) {
                return;
            }
            // Relaxed: a count, as in `leave_behind`.
            self.removals.pending.fetch_sub(1, Ordering::Relaxed);
            chain.iter().any(|table| table.remove(table.slots(key)));
        }
    }

    /// How many removals of the item whose key is `key` are pending.
    pub(super) fn pending_of(&self, chain: Chain<'_, E>, key: u64) -> usize {
        // Relaxed: only a hint, as in `claim`.
        if self.removals.pending.load(Ordering::Relaxed) == 0 {
            return 0;
        }
        self.blocks(chain).map(|block| block.count(key)).sum()
    }

    /// The blocks of pending removals: those of the levels added to level 0 in `chain`, newest
    /// first, then the overflow blocks.
    fn blocks<'a>(&'a self, chain: Chain<'a, E>) -> impl Iterator<Item = &'a Block> + 'a {
        chain.added().map(|level| &level.pending).chain(self.removals.overflow.head().iter())
    }
}
