//! Levels: how a growable filter adds room while every thread keeps using it, moving nothing,
//! and keeps its memory to what its live items need however they churn.
//!
//! A filter is a chain of tables, each running the protocol of [`table`](crate::table) on its
//! own: level 0, the table the filter was built with, and, in a growable filter, one more level
//! each time the newest refused an insert or was closed to new items, with [`GROWTH_FACTOR`](crate::sizing::GROWTH_FACTOR)
//! times the buckets of the level before it. An item stays in the level its insert put it in.
//! Lookups, counts and removes read the levels newest first (the newest holds most items).
//!
//! Why a chain rather than moving items into one larger table: an item's bucket in a table of
//! `4m` buckets depends on two hash bits that a table of `m` buckets does not store, so moving
//! items means taking bits from their fingerprints (InfiniFilter, Aleph) and a migration that
//! every operation must know about. `BENCHMARKS.md` ("Growth") has the measurements behind the
//! choice.
//!
//! # Churn
//!
//! Within a table, every copy of an item's fingerprint in its two buckets is interchangeable
//! with the item's own. Across levels that is not so: a match in another level may be another
//! item's only copy (a fingerprint collision there, as likely as a false positive), so a remove
//! cannot take a copy when two levels hold matches. Were an item inserted again into the newest
//! level while its first copy sat in an older one, its removes could never take either, and a
//! filter whose live items are inserted and removed over and over would fill with such copies
//! and grow without bound. So:
//!
//! - **An insert joins its item's level**: the newest level holding a copy of the item's
//!   fingerprint in its buckets ([`Chain::holding`], a plain read of every level, their misses
//!   overlapped), else the newest level. A copy that level cannot take is refused there as in
//!   a fixed filter (`Levels::join`: the item's copies fill its buckets, or the level is
//!   crowded, not full), so at most eight copies of an item are stored and a refusal never
//!   lands elsewhere. Only a full level (whose match may as well be another item's false
//!   positive, so a new item must not be refused for it), an insert racing a growth, or a
//!   colliding item in another level leave an item's matches in two levels.
//! - **A level stops taking new items at its promise** ([`capacity_of`](crate::sizing::capacity_of)) and keeps its last few
//!   percent of lanes for the copies of the items it holds (`Levels::close_if_full`), so
//!   that joins rarely find it full.
//! - **A remove that finds matches in two levels records a pending removal** ([`pending`]);
//!   once every matching copy is some pending removal's, they are completed (below), so a
//!   further remove finds no copy and answers `false`. The item's next insert claims a pending
//!   removal
//!   instead of storing another copy, and a settle (`Levels::settle`) completes them once
//!   the levels tell which copies they are: when they are as many as the matching copies (the
//!   remove that makes them so settles), or when one level alone matches (the item's next
//!   remove, or a sweep before a growth and before an insert's last resort). So the copies left
//!   behind are bounded by the copies that match, which are bounded by the items whose matches
//!   span levels, not by the operations.
//!
//! # Orderings
//!
//! ## Invariants
//!
//! Cited by name.
//!
//! - **Levels are only added.** The levels above level 0 are a [`Published`] list: a growth
//!   pushes a level, built with its table and block of pending removals, on top of the newest
//!   it saw; every level lists those below it, so one load of the list's head (a [`Chain`])
//!   gives every level without following a link; levels are freed only through `&mut`
//!   (`published`, "Nodes are only added").
//! - **A fingerprint stays in its level.** Every change to a level's words is that level's
//!   table protocol; a growth writes no table word, so nothing a level relies on changes.
//! - **A remove takes a copy only from the one level holding matches.** It finds the levels
//!   holding the item's copies with the table's validated read of each (which never misses a
//!   copy present throughout: every level's first attempt in one pass, as a lookup's, and every
//!   level read again with its retries when an attempt met a change) and takes one only when
//!   exactly one level has any; otherwise it takes none and leaves a pending removal. A settle
//!   takes copies from several levels only for pending removals as many as the matching
//!   copies, each claimed first. So it never takes another level's only copy of a colliding
//!   item that was inserted and not removed, whatever level inserts chose: which level an
//!   insert joins is a hint (`holding` reads without validation) on which no answer rests.
//! - **Every copy left behind is accounted.** It is a pending removal, whose owner (the
//!   claiming insert or the settle that takes it) is unique (`pending`), or a removal retained
//!   for good (no entry could be had under a memory ceiling, or a snapshot or merge brought it).
//!
//! ## Settling
//!
//! Whether pending removals are as many as the matching copies is read from the entries
//! (Relaxed: a count owns nothing). Two removes of an item that register at once could each
//! read the other's entry stale and neither settle, leaving every copy pending and the item a
//! false positive. So a remove that registered announces it with an AcqRel read-modify-write of
//! `pending_count` before it counts: announcements are totally ordered, each acquires the
//! registrations released before the ones it follows, and the last to announce counts every
//! entry. Two registrations of one key that probe the same entries in the same order see each
//! other without it (the later one's failed CAS on the earlier one's entry reads it), so the
//! stale counts need a third thread that frees another key's entry between them; no loom
//! model covers that (three threads of removes and claims are past the suite's budget), and
//! weakening the announcement goes unseen by the models.
//!
//! A remove settles the item's pending removals before it reads the levels, so once they are
//! as many as the copies a later remove finds none; removes racing past an item's last copy
//! can each record one before they see each other's, and a settle bounded by the entries it
//! counted drops an entry whose copy is gone.
//!
//! ## Publication
//!
//! A growth builds its level and pushes it on the list ([`Published::push`], AcqRel); every
//! thread reads the levels through [`Published::head`] (Acquire), so it never sees a level half
//! built (`published`, "Publication"). Overflow blocks of pending removals are a second list of
//! the same type.
//!
//! ## No false negative across growths
//!
//! Let an item's insert happen-before a lookup. The insert put the item in a level `L` of the
//! chain from a head of the list it loaded with Acquire (the level holding the item's copies,
//! which may be any level of that chain; the newest; or, as its last resort, any level with
//! room), or it claimed a pending removal, whose Acquire take makes the remover's view (a level
//! `L` holding the surplus copy) happen-before it (`pending`). The lookup's Acquire load of
//! the head happens after that, so by read-read coherence it reads the same value or a later
//! one, and by "Levels are only added" the chain from it reaches `L`. The lookup reads every
//! level of the chain with the table's validated read, which finds an item present in `L`
//! throughout (the table's argument, unchanged by "A fingerprint stays in its level"). It makes
//! the first attempt of every level's read in one pass ([`Chain::lookup`]): each level's attempt
//! is still its stripe's stamp, its Acquire bucket loads, then its stripe's validation, in that
//! order, so each is the table's attempt, and a miss answers `false` only when every level's
//! attempt validated; otherwise it reads each level again with its retries. A remove
//! validates absence in every level the same way before it answers `false`; a count adds up the
//! levels.
//!
//! ## Snapshots and clones
//!
//! A scan loads the head once and scans each level of its chain with that table's scan. An item
//! present throughout the snapshot is in a level of the chain (as above), and that level's scan
//! keeps it. A level published after the load holds only items whose inserts did not
//! happen-before the snapshot began. Pending removals travel as retained ones: the copy's count
//! of fingerprints left behind is the filter's, so its `len` is exact for a quiescent filter.
//!
//! ## Progress
//!
//! A lookup reads at most [`MAX_LEVELS`] levels, each wait-free: wait-free. An insert that the
//! level holding its item's copies refuses stops there, unless that level is full; one that a
//! full newest level refuses finds a newer level (another thread grew the filter), publishes
//! one, or, when no level can be added, tries every level once and stops; its push fails only
//! when another thread published a level, which happens at most [`MAX_LEVELS`] times:
//! lock-free. No thread waits for a growth: each thread that finds
//! the newest level full builds a level and races to publish it, and the losers free theirs
//! (counted as `discarded_levels` in the stats). Registering, claiming and settling
//! pending removals are CASes on entries that fail only when another thread took or filled the
//! entry, and an overflow block's publication fails only when another thread published one:
//! lock-free too; a settle claims at most the entries it counted.

mod chain;
mod insert;
mod removal;

use std::io;

pub(crate) use self::chain::Chain;
use self::chain::Level;
use self::removal::Removals;
use crate::bucket::BucketEncoding;
use crate::error::InsertError;
use crate::pending;
use crate::pipeline::pipelined;
use crate::published::{Head, Published, Pushed, MAX_NODES};
use crate::sizing::{Ceiling, MAX_LEVELS};
use crate::stats::Stats;
use crate::sync::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use crate::table::Table;

const _: () = assert!(MAX_LEVELS - 1 <= MAX_NODES, "a list holds every added level");

/// A filter's levels. See the module documentation.
pub(crate) struct Levels<E: BucketEncoding> {
    /// Level 0, inline: a filter that never grew reaches its table through no pointer.
    level_0: Table<E>,
    /// Whether `level_0` takes no more new items (`close_if_full`).
    level_0_closed: AtomicBool,
    /// The levels added to level 0, newest first.
    added: Published<Level<E>>,
    /// `None` for a fixed filter.
    growth: Option<Ceiling>,
    /// The most levels a growth may bring the filter to ([`set_level_limit`](Self::set_level_limit)),
    /// [`MAX_LEVELS`] unless a host set fewer.
    level_limit: AtomicUsize,
    /// Levels built by a growth that lost the race to publish, and freed.
    discarded: AtomicU64,
    /// Removes that left a copy in the levels.
    removals: Removals,
    /// Bytes of the filter around its levels (its hasher), counted with them against the byte
    /// ceiling so that the filter's `memory_usage` stays within it.
    outside: usize,
}

impl<E: BucketEncoding> Levels<E> {
    /// A filter's levels: `level_0` alone, growable up to `growth` if that is `Some`.
    pub(crate) fn new(level_0: Table<E>, growth: Option<Ceiling>) -> Self {
        Self::with_newer(level_0, Vec::new(), growth, 0)
    }

    /// Levels `level_0` and then `newer`, oldest first (a loaded snapshot or a copy), whose words
    /// hold `retained` fingerprints of removed items (`remove`).
    ///
    /// # Panics
    ///
    /// If there are more than [`MAX_LEVELS`] levels.
    pub(crate) fn with_newer(
        level_0: Table<E>,
        newer: Vec<Table<E>>,
        growth: Option<Ceiling>,
        retained: u64,
    ) -> Self {
        let levels = Self {
            level_0,
            level_0_closed: AtomicBool::new(false),
            added: Published::new(),
            growth,
            level_limit: AtomicUsize::new(MAX_LEVELS),
            discarded: AtomicU64::new(0),
            removals: Removals::new(retained),
            outside: 0,
        };
        for table in newer {
            let below = levels.chain();
            let pushed = levels.added.push(below.head(), Level::new(table, below));
            assert_eq!(pushed, Pushed::Published, "more than {MAX_LEVELS} levels");
        }
        levels
    }

    /// These levels in a filter that takes `bytes` more around them (its hasher).
    pub(crate) fn with_outside(mut self, bytes: usize) -> Self {
        self.outside = bytes;
        self
    }

    /// Level 0.
    pub(crate) fn level_0(&self) -> &Table<E> {
        &self.level_0
    }

    /// The ceiling of a growable filter; `None` for a fixed one.
    pub(crate) fn growth(&self) -> Option<Ceiling> {
        self.growth
    }

    /// The levels as they are now ([`Chain`]).
    #[inline]
    pub(crate) fn chain(&self) -> Chain<'_, E> {
        self.chain_of(self.added.head())
    }

    #[inline]
    fn chain_of<'a>(&'a self, head: Head<'a, Level<E>>) -> Chain<'a, E> {
        Chain::new(head, &self.level_0, &self.level_0_closed)
    }

    /// The levels if a level was added to level 0, `None` while level 0 is the only one.
    #[inline]
    fn grown(&self) -> Option<Chain<'_, E>> {
        // A fixed filter is told by a plain field, not the list's atomic head: the compiler can
        // then keep the test out of a caller's loop instead of loading the head every call.
        self.growth?;
        Some(self.chain()).filter(Chain::is_grown)
    }

    /// The tables, oldest first, for the callers that keep them (snapshots, merges).
    pub(crate) fn oldest_first(&self) -> Vec<&Table<E>> {
        self.chain().iter().rev().collect()
    }

    /// Whether the item whose mixed hash is `mixed` may be present.
    #[inline]
    pub(crate) fn contains(&self, mixed: u64) -> bool {
        match self.grown() {
            None => self.level_0.contains(mixed),
            Some(chain) => Self::contains_grown(chain, mixed),
        }
    }

    /// [`contains`](Self::contains) in a grown filter. Out of line, like the other operations'
    /// grown paths: inlined into the caller's loop, the chain's state would take the registers
    /// and stack frame of a fixed filter's operation, which never reads the chain.
    #[inline(never)]
    fn contains_grown(chain: Chain<'_, E>, mixed: u64) -> bool {
        chain.lookup(mixed)
    }

    /// Copies of the item in every level, less the removals of it that are pending: those
    /// copies are surplus, no longer the item's.
    pub(crate) fn count(&self, mixed: u64) -> usize {
        let chain = self.chain();
        let (copies, _) = chain.copies(mixed);
        copies.saturating_sub(self.pending_of(chain, pending::key(mixed)))
    }

    /// Removes one copy of the item, if one is present.
    ///
    /// In a table, every copy of the item's fingerprint in its two buckets is interchangeable
    /// with the item's own (the table's "Copies are interchangeable"). Across levels that is not
    /// so: a match in another level may be another item's only copy, one whose fingerprint
    /// collides with this one there (as likely as a false positive in that level). So a remove
    /// takes a copy only when exactly one level holds matches. When several do, it takes none:
    /// it answers `true`, counts the item as removed and records a pending removal
    /// ([`pending`]). A later insert of the item claims a pending removal, and a settle completes
    /// them (`removal`). Inserts keep an item's copies in one level (`insert`), so only
    /// collisions between distinct items, and inserts racing a growth, leave an item's matches
    /// in two levels.
    #[inline]
    pub(crate) fn remove(&self, mixed: u64) -> bool {
        match self.grown() {
            None => self.level_0.remove(self.level_0.slots(mixed)),
            Some(chain) => self.remove_grown(chain, mixed),
        }
    }

    /// Stores the item beside its copies if a level holds some (refusing it where a fixed
    /// filter would); else in the newest level, adding a level when that one is full (or
    /// closed) and the ceiling allows it, else in any level with room.
    #[inline]
    pub(crate) fn insert(&self, mixed: u64) -> Result<(), InsertError> {
        if self.growth.is_none() {
            return self.level_0.insert(self.level_0.slots(mixed));
        }
        self.insert_growable(mixed)
    }

    /// `out[i] = contains(item i)` for every `i`, where `mixed_at(i)` is item `i`'s mixed hash,
    /// each item's buckets prefetched a window ahead (`pipeline`): in a filter of one level,
    /// that table's batch, which keeps each item's slots in the window; in a grown one, the
    /// chain read once, as [`contains`](Self::contains) reads it.
    #[inline]
    pub(crate) fn contains_batch(&self, mixed_at: impl Fn(usize) -> u64, out: &mut [bool]) {
        match self.grown() {
            None => self.level_0.contains_batch(mixed_at, out),
            Some(chain) => Self::contains_batch_grown(chain, mixed_at, out),
        }
    }

    /// [`contains_batch`](Self::contains_batch) in a grown filter, out of line (see
    /// `contains_grown`): it keeps the mixed hash in the window and prefetches the levels
    /// [`Chain::prefetch`] names.
    #[inline(never)]
    fn contains_batch_grown(
        chain: Chain<'_, E>,
        mixed_at: impl Fn(usize) -> u64,
        out: &mut [bool],
    ) {
        pipelined(
            out.len(),
            mixed_at,
            |mixed| chain.prefetch(mixed),
            |i, mixed| {
                out[i] = chain.lookup(mixed);
                true
            },
        );
    }

    /// [`insert`](Self::insert) of item `i` for every `i` in `0..len`, in order, until one is
    /// refused, where `mixed_at(i)` is item `i`'s mixed hash, each item's buckets prefetched a
    /// window ahead (`pipeline`). Returns how many were stored.
    #[inline]
    pub(crate) fn insert_batch(&self, len: usize, mixed_at: impl Fn(usize) -> u64) -> usize {
        if self.growth.is_none() {
            return self.level_0.insert_batch(len, mixed_at);
        }
        pipelined(
            len,
            mixed_at,
            |mixed| self.chain().prefetch_all(mixed),
            |_, mixed| self.insert_growable(mixed).is_ok(),
        )
    }
}

// Limits, counts, memory and copies of the whole.
impl<E: BucketEncoding> Levels<E> {
    /// Lets growths bring the filter to `levels` levels at most (1 to [`MAX_LEVELS`]: 1 stops
    /// growth), from the next growth on. Levels already added stay.
    pub(crate) fn set_level_limit(&self, levels: usize) {
        // Relaxed: a setting that publishes nothing; a growth reads whichever value is there.
        self.level_limit.store(levels.clamp(1, MAX_LEVELS), Ordering::Relaxed);
    }

    /// The limit [`set_level_limit`](Self::set_level_limit) set, [`MAX_LEVELS`] by default.
    pub(crate) fn level_limit(&self) -> usize {
        // Relaxed: as in `set_level_limit`.
        self.level_limit.load(Ordering::Relaxed)
    }

    /// Counts `removes` more removed items whose fingerprints stay in the levels (a merge adds
    /// another filter's).
    pub(crate) fn add_retained(&self, removes: u64) {
        self.removals.add_retained(removes);
    }

    /// Fingerprints of removed items that removes left in the levels (`remove`), pending or
    /// for good: a copy or a snapshot keeps the count as removals retained for good, so that
    /// its `len` stays that of the filter.
    pub(crate) fn retained(&self) -> u64 {
        self.removals.retained()
    }

    /// Accepted inserts minus successful removes, over every level.
    pub(crate) fn len(&self) -> usize {
        let retained = usize::try_from(self.retained()).unwrap_or(usize::MAX);
        self.chain().iter().map(Table::<E>::len).sum::<usize>().saturating_sub(retained)
    }

    /// Whether no level holds a fingerprint: what the words hold, pending removals' surplus
    /// copies included, rather than [`len`](Self::len), which counts those out.
    pub(crate) fn is_empty(&self) -> bool {
        self.chain().iter().all(|table| table.len() == 0)
    }

    /// Items the levels promise to accept together.
    pub(crate) fn capacity(&self) -> usize {
        self.chain().capacity()
    }

    pub(crate) fn bucket_count(&self) -> usize {
        self.chain().iter().map(Table::<E>::bucket_count).sum()
    }

    /// Bytes of the filter: its levels and what is around them.
    pub(crate) fn memory_usage(&self) -> usize {
        self.memory_from(self.chain())
    }

    /// What [`memory_usage`](Self::memory_usage) reports for a new filter of `buckets` buckets
    /// with `outside` bytes around its levels, before it is built (a ceiling is checked
    /// against it).
    pub(crate) fn memory_for(buckets: usize, outside: usize) -> usize {
        Table::<E>::memory_for(buckets).saturating_add(Self::AROUND_LEVEL_0 + outside)
    }

    /// What `Levels` holds beside its level 0 table.
    const AROUND_LEVEL_0: usize = core::mem::size_of::<Self>() - core::mem::size_of::<Table<E>>();

    /// [`memory_usage`](Self::memory_usage) with the levels of `chain`: level 0, each added
    /// level, and the rest of the filter.
    fn memory_from(&self, chain: Chain<'_, E>) -> usize {
        Self::AROUND_LEVEL_0
            + self.outside
            + self.removals.memory_usage()
            + self.level_0.memory_usage()
            + chain.added().map(Level::memory_usage).sum::<usize>()
    }

    pub(crate) fn stats(&self) -> Stats {
        let chain = self.chain();
        let mut stats = Stats { levels: chain.len(), ..Stats::default() };
        for table in chain.iter() {
            stats.absorb(&table.stats());
        }
        // Relaxed: statistics.
        stats.discarded_levels = self.discarded.load(Ordering::Relaxed);
        stats.retained_removals = self.retained();
        stats.pending_removals = self.removals.pending();
        stats
    }

    /// A copy made of one consistent scan of each level (see the module documentation).
    pub(crate) fn consistent_copy(&self) -> io::Result<Self> {
        let mut copies = self
            .chain()
            .iter()
            .rev()
            .map(Table::<E>::consistent_copy)
            .collect::<io::Result<Vec<_>>>()?;
        let level_0 = copies.remove(0);
        let copy = Self::with_newer(level_0, copies, self.growth, self.retained());
        Ok(copy.with_outside(self.outside))
    }

    /// Empties the filter back to level 0 alone, freeing the levels added since.
    pub(crate) fn clear(&mut self) {
        self.added.clear();
        self.level_0.clear();
        // Relaxed: `&mut self` means no other thread reads it.
        self.level_0_closed.store(false, Ordering::Relaxed);
        // Relaxed: statistics, and `&mut self` means no other thread reads them.
        self.discarded.store(0, Ordering::Relaxed);
        self.removals.clear();
    }

    /// Level `index`, 0 the oldest (a test hook).
    ///
    /// # Panics
    ///
    /// If there is no such level.
    #[cfg(feature = "test-hooks")]
    pub(crate) fn level(&self, index: usize) -> &Table<E> {
        self.chain().iter().rev().nth(index).expect("no such level")
    }

    /// [`insert`](Self::insert) in a growable filter by a thread that loaded the levels when
    /// the filter had `levels` levels, as a thread does whose insert races a growth (a test
    /// hook).
    ///
    /// # Panics
    ///
    /// If the filter is fixed or has fewer levels.
    #[cfg(feature = "test-hooks")]
    pub(crate) fn insert_as_of(&self, levels: usize, mixed: u64) -> Result<(), InsertError> {
        assert!(self.growth.is_some(), "a fixed filter has no growth to race");
        let head = self.added.head();
        let newer = (head.len() + 1).checked_sub(levels).expect("no such level");
        self.insert_from(self.chain_of(head.without_newest(newer)), mixed)
    }

    /// [`grow`](Self::grow) from the newest level (a test hook).
    #[cfg(any(test, feature = "test-hooks"))]
    pub(crate) fn grow_now(&self) -> bool {
        self.grow(self.chain())
    }
}

impl<E: BucketEncoding> core::fmt::Debug for Levels<E> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let buckets: Vec<usize> = self.chain().iter().rev().map(Table::<E>::bucket_count).collect();
        f.debug_struct("Levels")
            .field("buckets", &buckets)
            .field("growth", &self.growth)
            .finish_non_exhaustive()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::bucket::plain::Plain;
    use crate::pending::Block;
    use crate::sizing::{capacity_of, GROWTH_FACTOR};

    fn levels(buckets: usize, growth: Option<Ceiling>) -> Levels<Plain> {
        Levels::new(Table::<Plain>::try_new(buckets, 8, false).unwrap(), growth)
    }

    fn bucket_counts(levels: &Levels<Plain>) -> Vec<usize> {
        levels.oldest_first().iter().map(|t| t.bucket_count()).collect()
    }

    #[test]
    fn each_level_has_four_times_the_buckets_of_the_one_before() {
        let levels = levels(10, Some(Ceiling::default()));
        for _ in 0..3 {
            assert!(levels.grow_now());
        }
        assert_eq!(bucket_counts(&levels), [10, 40, 160, 640]);
        assert_eq!(levels.capacity(), [10, 40, 160, 640].map(capacity_of).iter().sum::<usize>());
        assert_eq!(levels.bucket_count(), 850);
    }

    #[test]
    fn the_item_ceiling_sizes_the_last_level_to_reach_it_exactly() {
        let ceiling = Ceiling { items: Some(1_000), bytes: None };
        let levels = levels(10, Some(ceiling));
        while levels.grow_now() {}
        let capacity = levels.capacity();
        assert!((1_000..1_010).contains(&capacity), "{capacity}: {:?}", bucket_counts(&levels));
        assert!(!levels.grow_now());
    }

    /// The memory an added level of `buckets` buckets takes.
    fn level_memory(buckets: usize) -> usize {
        Level::<Plain>::memory(
            Table::<Plain>::memory_for(buckets),
            Block::memory_for_level(buckets),
        )
    }

    #[test]
    fn the_memory_ceiling_is_never_passed_and_the_last_level_fills_it() {
        // Miri: the small budgets only, the large ones fill megabytes of words.
        let budgets: &[usize] =
            if cfg!(miri) { &[20_000, 123_456] } else { &[20_000, 123_456, 1 << 20, 10 << 20] };
        for &bytes in budgets {
            let levels = levels(100, Some(Ceiling { items: None, bytes: Some(bytes) }));
            while levels.grow_now() {}
            let used = levels.memory_usage();
            assert!(used <= bytes, "{used} > {bytes}");
            // What is left would not hold a useful level: one of a quarter of the newest's
            // buckets.
            let quarter = levels.chain().newest_table().bucket_count() / GROWTH_FACTOR;
            assert!(bytes - used < level_memory(quarter), "{used} of {bytes}");
        }
    }

    /// The smallest level a memory ceiling lets a growth add has a quarter of the newest's
    /// buckets: with room for a few buckets more, one of about that size is added; with room
    /// for a bucket less, none is.
    #[test]
    fn a_memory_ceiling_adds_no_level_under_a_quarter_of_the_newest() {
        let unbounded = levels(100, Some(Ceiling::default()));
        assert!(unbounded.grow_now() && unbounded.grow_now());
        let (used, newest) = (unbounded.memory_usage(), 1_600);
        assert_eq!(unbounded.chain().newest_table().bucket_count(), newest);
        let quarter = newest / GROWTH_FACTOR;
        for (room, added) in
            [(level_memory(quarter + quarter / 16), true), (level_memory(quarter) - 1, false)]
        {
            let bounded = levels(100, Some(Ceiling { items: None, bytes: Some(used + room) }));
            assert!(bounded.grow_now() && bounded.grow_now());
            assert_eq!(bounded.memory_usage(), used);
            assert_eq!(bounded.grow_now(), added, "room {room}");
            let buckets = bounded.chain().newest_table().bucket_count();
            let expected = if added { quarter..=quarter + quarter / 16 } else { newest..=newest };
            assert!(expected.contains(&buckets), "room {room}: {buckets} buckets");
        }
    }

    /// Growth under a memory ceiling: each level four times the one before until one would pass
    /// the ceiling, then at most one level sized to the room left, to within a few percent of
    /// the largest that fits, and none after it.
    #[test]
    fn levels_at_a_memory_ceiling_take_the_room_left_to_within_a_few_percent() {
        let budgets: &[usize] =
            if cfg!(miri) { &[20_000, 123_456] } else { &[20_000, 123_456, 1 << 20, 10 << 20] };
        let memory = level_memory;
        let mut sized_anywhere = 0;
        for &bytes in budgets {
            let levels = levels(100, Some(Ceiling { items: None, bytes: Some(bytes) }));
            let mut sized = 0;
            loop {
                let (room, below) = (bytes - levels.memory_usage(), bucket_counts(&levels));
                if !levels.grow_now() {
                    break;
                }
                let buckets = levels.chain().newest_table().bucket_count();
                let unbounded = GROWTH_FACTOR * below.last().unwrap();
                if buckets == unbounded {
                    assert_eq!(sized, 0, "{bytes}: {:?}", bucket_counts(&levels));
                    continue;
                }
                sized += 1;
                let larger = buckets + buckets / 32 + 1;
                assert!(
                    larger > unbounded || memory(larger) > room,
                    "{bytes}: a level of {larger} buckets fits in {room} bytes, not only {buckets}"
                );
            }
            assert!(sized <= 1, "{bytes}: {:?}", bucket_counts(&levels));
            sized_anywhere += sized;
        }
        assert!(sized_anywhere > 0, "no budget sized a level");
    }

    /// The level limit: a filter of [`MAX_LEVELS`] levels adds none, whatever its ceiling.
    #[test]
    fn a_filter_of_max_levels_levels_adds_none() {
        let table = || Table::<Plain>::try_new(1, 8, false).unwrap();
        let newer = (1..MAX_LEVELS).map(|_| table()).collect();
        let levels = Levels::with_newer(table(), newer, Some(Ceiling::default()), 0);
        assert_eq!(levels.stats().levels, MAX_LEVELS);
        let memory = levels.memory_usage();
        assert!(!levels.grow_now());
        assert_eq!((levels.stats().levels, levels.memory_usage()), (MAX_LEVELS, memory));
    }

    #[test]
    fn a_growth_takes_the_memory_it_was_sized_with() {
        let levels = levels(100, Some(Ceiling::default()));
        let before = levels.memory_usage();
        assert!(levels.grow_now());
        let buckets = levels.chain().newest_table().bucket_count();
        let foreseen = Level::<Plain>::memory(
            Table::<Plain>::memory_for(buckets),
            Block::memory_for_level(buckets),
        );
        assert_eq!(levels.memory_usage() - before, foreseen);
    }

    #[test]
    #[cfg_attr(miri, ignore = "allocates a 64 MiB level")]
    fn growth_stops_at_the_level_limit_and_for_fixed_filters() {
        let fixed = levels(1, None);
        assert!(!fixed.grow_now());
        let unbounded = levels(1, Some(Ceiling::default()));
        let mut grown = 0;
        // Levels of 4^k buckets: the 13th is 64 MiB; stop there rather than allocate more.
        while grown < 12 && unbounded.grow_now() {
            grown += 1;
        }
        assert_eq!(grown, 12);
        assert_eq!(unbounded.stats().levels, 13);
    }

    #[test]
    fn a_chain_reads_every_level_once() {
        let levels = levels(4, Some(Ceiling::default()));
        assert!(levels.grown().is_none());
        levels.grow_now();
        levels.grow_now();
        assert!(levels.grown().is_some());
        let chain = levels.chain();
        assert_eq!(chain.len(), 3);
        let mixed = crate::hash::mix(42);
        assert!(!chain.lookup(mixed));
        levels.insert(mixed).unwrap();
        assert!(chain.lookup(mixed) && levels.contains(mixed));
    }
}
