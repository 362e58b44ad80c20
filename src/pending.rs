//! Pending removals: the items whose remove, in a grown filter, could not tell which of their
//! matching fingerprints was theirs, so took none.
//!
//! A remove that finds an item's fingerprint in two levels leaves one of those copies behind
//! (`levels`, "Churn"): a surplus copy that no live item owns. The remove records the item's
//! key here, so that the surplus is not lost for good:
//!
//! - an insert of the same item **claims** the entry and stores nothing, since the surplus copy
//!   serves as the item's copy again (so inserting and removing such an item, any number of
//!   times, leaves at most the surplus copies of its removes outstanding, never more);
//! - the item's next remove, and before a growth or when an insert meets the ceiling a
//!   **sweep** of every entry, **settle** the entries of a key: they are taken out and the
//!   surplus copies removed once only one level matches (the colliding item in the other level
//!   was removed meanwhile) or once every copy that matches is a pending removal's, and
//!   recorded again otherwise (`levels`, "Churn").
//!
//! An entry is one word: the item's mixed hash with its low 16 bits replaced by its fingerprint
//! ([`key`]), which has the item's slots in every level and is never 0 (a fingerprint never is),
//! so 0 marks a free entry. Entries live in blocks: each added level has one sized with it, and
//! when every window of an item's key is taken, a register adds an overflow block twice as large
//! as the last (in a filter without a memory ceiling, whose accounting a block added beside a
//! growth could pass), so that no remove has to keep its copy for good. An item's entry sits
//! within [`PROBES`] entries of its home position in some block.
//!
//! # Orderings
//!
//! - **Entries.** Whoever CASes an entry from a key to 0 owns one surplus copy of that key's
//!   fingerprint in the levels, which the remove that registered it saw: a claiming insert makes
//!   it its item's copy, a settle removes it or registers it again. Exactly one thread wins each
//!   entry. The registration is a Release CAS and both takes are AcqRel, so everything the
//!   remover saw (the surplus copy's put, and the level holding it) happens-before what the new
//!   owner does next, and so before any lookup that starts after a claiming insert returned.
//!   Counting a key's entries ([`Block::count`]) reads them Relaxed and owns nothing: it
//!   decides whether a remove records a removal and whether a settle completes them, and the
//!   remove's announcement (`levels`, "Settling") orders it.
//! - **Blocks** are published with their level, and overflow blocks on a list of their own of
//!   the same type (`published`, "Publication").

use crate::fingerprint::Fingerprint;
use crate::sync::{self, AtomicU64, Ordering};

/// Entries an item's key may occupy, from its home position on: a register or claim reads at
/// most this many words of a block.
const PROBES: usize = 8;

/// Buckets of a level for each entry of its block (one word per 128 buckets: 0.8% of the
/// level's memory).
const BUCKETS_PER_ENTRY: usize = 128;

/// The fewest entries in a block: under the model checker, two, so a model can fill one.
const MIN_ENTRIES: usize = if sync::MODEL_CHECKING { 2 } else { PROBES };

/// The entry word of the item whose mixed hash is `mixed`: never 0, and with the same slots as
/// `mixed` in a table of any size and either encoding (a 17-bit fingerprint's 17th bit is kept
/// as it is).
pub(crate) const fn key(mixed: u64) -> u64 {
    mixed & !0xFFFF | Fingerprint::of_mixed(mixed, 16).get() as u64
}

/// A block of entries.
#[derive(Debug)]
pub(crate) struct Block {
    entries: Box<[AtomicU64]>,
}

impl Block {
    fn new(entries: usize) -> Self {
        Self { entries: (0..entries).map(|_| AtomicU64::new(0)).collect() }
    }

    /// An overflow block of at least `entries` entries.
    pub(crate) fn overflow(entries: usize) -> Self {
        Self::new(entries.max(MIN_ENTRIES))
    }

    /// The block of a level of `buckets` buckets.
    pub(crate) fn for_level(buckets: usize) -> Self {
        Self::new(Self::entries_for_level(buckets))
    }

    fn entries_for_level(buckets: usize) -> usize {
        (buckets / BUCKETS_PER_ENTRY).next_power_of_two().max(MIN_ENTRIES)
    }

    /// What the block of a level of `buckets` buckets takes in memory.
    pub(crate) fn memory_for_level(buckets: usize) -> usize {
        Self::entries_for_level(buckets) * core::mem::size_of::<AtomicU64>()
    }

    pub(crate) fn memory_usage(&self) -> usize {
        core::mem::size_of_val(&*self.entries)
    }

    /// The entries `key` may occupy.
    fn window(&self, key: u64) -> impl Iterator<Item = &AtomicU64> {
        let mask = self.entries.len() - 1;
        // The bucket index uses the key's high bits; a multiply spreads all of them.
        let home = (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32) as usize;
        (0..PROBES.min(self.entries.len())).map(move |i| &self.entries[(home + i) & mask])
    }

    /// Records a pending removal of `key` in a free entry of its window; `false` if none is
    /// free.
    pub(crate) fn register(&self, key: u64) -> bool {
        self.window(key).any(|entry| {
            // Release: publishes what the remover saw (the surplus copy and its level) to the
            // AcqRel take of the entry in `claim` or `take`. Failure Relaxed: the entry is
            // someone else's; nothing is read from it.
            entry.compare_exchange(0, key, Ordering::Release, Ordering::Relaxed).is_ok()
        })
    }

    /// Takes a pending removal of `key`, if this block records one: the caller now owns its
    /// surplus copy.
    pub(crate) fn claim(&self, key: u64) -> bool {
        self.window(key).any(|entry| {
            // AcqRel. Acquire: pairs with the Release registration, so the surplus copy the
            // remover saw is visible to this thread and to whatever its insert's return
            // happens-before. Release: keeps the entry's release sequence for a later owner.
            // Failure Relaxed: nothing is read from an entry that holds another key.
            entry.compare_exchange(key, 0, Ordering::AcqRel, Ordering::Relaxed).is_ok()
        })
    }

    /// How many pending removals of `key` this block records.
    pub(crate) fn count(&self, key: u64) -> usize {
        // Relaxed: a count that owns nothing. A remove that registered and then counts orders
        // its registration before the count through `Levels::remove`'s announcement, so of
        // two removes that register at once, the later to announce counts both.
        self.window(key).filter(|entry| entry.load(Ordering::Relaxed) == key).count()
    }

    /// The keys the block records pending removals of, one per entry, as a read finds them:
    /// `settle` claims what it completes (a key may be claimed meanwhile, or listed twice).
    pub(crate) fn keys(&self) -> impl Iterator<Item = u64> + '_ {
        // Relaxed: only a guess; the claim that follows decides and orders.
        self.entries.iter().map(|entry| entry.load(Ordering::Relaxed)).filter(|&key| key != 0)
    }

    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use core::ptr;

    use super::*;

    /// `n` keys whose windows in `block` start at the same entry.
    fn keys_with_one_home(block: &Block, n: usize) -> Vec<u64> {
        let home = |key: u64| block.window(key).next().map(ptr::from_ref);
        let first = home(1 << 16 | 1);
        (1u64..).map(|k| k << 16 | 1).filter(|&key| home(key) == first).take(n).collect()
    }

    /// A level's block records a pending removal within eight entries of its key's home, so
    /// keys that share a home fill a large block's window of eight, and every entry of a block of
    /// eight, before a remove needs an overflow block.
    #[test]
    fn a_block_takes_removals_within_a_window_of_eight_entries() {
        const WINDOW: usize = 8;
        for (buckets, entries) in [(1_116, 8), (1 << 14, 128)] {
            let block = Block::for_level(buckets);
            assert_eq!(block.len(), entries);
            let keys = keys_with_one_home(&block, WINDOW + 1);
            let (within, beyond) = keys.split_at(WINDOW);
            assert!(within.iter().all(|&key| block.register(key)), "{buckets} buckets");
            assert!(!block.register(beyond[0]), "{buckets} buckets: a window past {WINDOW}");
            assert!(within.iter().all(|&key| block.claim(key)), "{buckets} buckets");
            assert!(block.register(beyond[0]));
        }
    }
}
