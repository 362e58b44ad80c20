//! Inserts in a growable filter: which level takes an item (its copies' level, the newest, or
//! any with room), when a level closes to new items, when a refusal stands, and growth (the
//! module documentation's "Churn" and "Progress").

use super::chain::{Chain, Level};
use super::Levels;
use crate::bucket::{BucketEncoding, LANES};
use crate::error::InsertError;
use crate::published::Pushed;
use crate::sizing::{self, capacity_of};
use crate::sync::Ordering;
use crate::table::{Refused, Table};

/// The most copies of an item: four lanes in each of its two buckets, in a growable filter's
/// levels together as in a fixed filter's table.
const MAX_COPIES: usize = 2 * LANES;

/// Relocations of an insert after which a growable filter checks whether the level is full
/// ([`Levels::close_if_full`]): paths this long are rare below the promised load (0.2% of
/// inserts at 94%, measured), so counting the level's items there costs next to nothing.
const CLOSING_PATH: usize = 3;

impl<E: BucketEncoding> Levels<E> {
    /// [`insert`](Self::insert) in a growable filter, out of line (see `contains_grown`).
    #[inline(never)]
    pub(super) fn insert_growable(&self, mixed: u64) -> Result<(), InsertError> {
        self.insert_from(self.chain(), mixed)
    }

    /// [`insert_growable`](Self::insert_growable) by a thread whose load of the levels gave
    /// `chain`: levels may have been added since.
    #[inline]
    pub(super) fn insert_from(&self, seen: Chain<'_, E>, mixed: u64) -> Result<(), InsertError> {
        let mut chain = seen;
        if chain.is_grown() && self.claim(chain, mixed) {
            return Ok(());
        }
        loop {
            let table = chain.newest_table();
            let slots = table.slots(mixed);
            // The levels holding the item's copies (a plain read: a hint, on which no answer
            // rests), so that they stay together and its removes take them exactly (`remove`).
            let holding = chain.holding(mixed);
            let mut tried = false;
            if holding != 0 {
                let home = chain.get(holding.trailing_zeros() as usize).expect("a level");
                if let Some(joined) = Self::join(chain, home, holding, mixed) {
                    return joined;
                }
                tried = core::ptr::eq(home, table);
            }
            // Relaxed: a hint, see `close_if_full`.
            let closed = chain.newest_closed().load(Ordering::Relaxed);
            let refused = if closed || tried {
                Refused::TableFull
            } else {
                match table.try_place(slots) {
                    Ok(relocations) => {
                        if relocations >= CLOSING_PATH {
                            Self::close_if_full(chain);
                        }
                        return Ok(());
                    }
                    Err(refused) => refused,
                }
            };
            if refused != Refused::Crowded {
                if self.grow(chain) {
                    chain = self.chain();
                    continue;
                }
                return self.insert_in_any_level(chain, mixed);
            }
            // A level that is not full refused an item whose every path was taken: items aimed
            // at a few buckets do that at will, so they are refused as a fixed filter refuses
            // them, rather than add a level each (`sizing::is_full`), unless another thread
            // added one meanwhile (Acquire in `head`: this thread goes on to read it). It loses
            // nothing.
            let now = self.chain();
            if now.head().same_as(chain.head()) {
                table.record_refused(slots.first, refused);
                return Err(InsertError::Full);
            }
            chain = now;
        }
    }

    /// Stores a copy of the item in `home`, the newest of the levels `holding` its copies in
    /// `chain`, or refuses it there as a fixed filter would: when its copies fill its buckets
    /// (eight copies, or four where its buckets are one), and when `home` is not full but has
    /// no lane in reach (crowded). `None` when `home` is full around copies that leave room:
    /// the copy then goes where a new item's would, since a match in a full level is as likely
    /// another item's fingerprint (a false positive there) as the item's, and a new item must
    /// not be refused for it; removes still take exactly the copies inserted (`remove`). So
    /// that an item never has more than eight copies, matches in several levels count
    /// together.
    fn join(
        chain: Chain<'_, E>,
        home: &Table<E>,
        holding: u64,
        mixed: u64,
    ) -> Option<Result<(), InsertError>> {
        let slots = home.slots(mixed);
        let refused = if holding.count_ones() > 1 && chain.matches(mixed) >= MAX_COPIES {
            // Its copies in several levels fill what one level would hold.
            home.why_refused(slots)
        } else {
            match home.try_place(slots) {
                Ok(_) => return Some(Ok(())),
                Err(Refused::TableFull) => return None,
                Err(refused) => refused,
            }
        };
        home.record_refused(slots.first, refused);
        Some(Err(InsertError::Full))
    }

    /// Closes the newest level of `chain` to new items once it holds the items it promises
    /// ([`capacity_of`]): its last few percent of lanes stay for copies of the items it holds
    /// (an item inserted again joins their level), so that those inserts rarely find the level
    /// full and leave a copy in another level. Checked after inserts that needed long paths,
    /// which only a level near its promise sees, so that counting its items costs nothing on
    /// the common path.
    #[cold]
    fn close_if_full(chain: Chain<'_, E>) {
        let table = chain.newest_table();
        if table.len() >= capacity_of(table.bucket_count()) {
            // Relaxed: a hint; an insert that still sees the level open stores a new item in
            // it, which is always sound.
            chain.newest_closed().store(true, Ordering::Relaxed);
        }
    }

    /// The last resort of an item with no copies that the newest level of `chain` refused when
    /// full (or kept out because it is closed) and no level can be added (at the ceiling, or
    /// out of memory): any level may have room again after removes, and pending removals
    /// completed now may free some. The item has no copies, so wherever it goes its copies stay
    /// together.
    fn insert_in_any_level(&self, chain: Chain<'_, E>, mixed: u64) -> Result<(), InsertError> {
        self.sweep(chain);
        let mut refused = Refused::TableFull;
        for table in chain.iter() {
            match table.try_place(table.slots(mixed)) {
                Ok(_) => return Ok(()),
                Err(why) if core::ptr::eq(table, chain.newest_table()) => refused = why,
                Err(_) => {}
            }
        }
        let table = chain.newest_table();
        table.record_refused(table.slots(mixed).first, refused);
        Err(InsertError::Full)
    }

    /// Makes sure that a level newer than those of `seen` exists: `true` if one does (built by
    /// this thread or another), `false` at the ceiling, when the filter is fixed, or when the
    /// new level cannot be allocated.
    pub(super) fn grow(&self, seen: Chain<'_, E>) -> bool {
        let Some(ceiling) = self.growth else {
            return false;
        };
        if !self.added.is_head(seen.head()) {
            return true;
        }
        // Completing pending removals first gives their copies' room back before any is added.
        self.sweep(seen);
        let size = sizing::Size {
            levels: seen.len(),
            newest_buckets: seen.newest_table().bucket_count(),
            promised: seen.capacity(),
            bytes: self.memory_from(seen),
        };
        let level_bytes = |buckets| {
            Level::<E>::memory(
                Table::<E>::memory_for(buckets),
                crate::pending::Block::memory_for_level(buckets),
            )
        };
        let built = sizing::next_level(size, self.level_limit(), ceiling, level_bytes).and_then(
            |buckets| {
                let level_0 = self.level_0();
                Table::<E>::try_new(buckets, level_0.lookup_retries(), level_0.huge_pages()).ok()
            },
        );
        let Some(table) = built else {
            // At the ceiling, or out of memory: unless another thread added a level meanwhile.
            return !self.added.head().same_as(seen.head());
        };
        match self.added.push(seen.head(), Level::new(table, seen)) {
            Pushed::Published => true,
            Pushed::Lost => {
                // Relaxed: a statistic.
                self.discarded.fetch_add(1, Ordering::Relaxed);
                true
            }
            // The level limit is at most `MAX_LEVELS`, which a list holds.
            Pushed::Full => false,
        }
    }
}
