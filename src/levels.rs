//! Levels: how a growable filter adds room while every thread keeps using it, moving nothing,
//! and keeps its memory to what its live items need however they churn.
//!
//! A filter is a chain of tables, each running the protocol of [`table`](crate::table) on its
//! own: level 0, the table the filter was built with, and, in a growable filter, one more level
//! each time the newest refused an insert or was closed to new items, with [`GROWTH_FACTOR`]
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
//!   a fixed filter ([`Levels::join`]: the item's copies fill its buckets, or the level is
//!   crowded, not full), so at most eight copies of an item are stored and a refusal never
//!   lands elsewhere. Only a full level (whose match may as well be another item's false
//!   positive, so a new item must not be refused for it), an insert racing a growth, or a
//!   colliding item in another level leave an item's matches in two levels.
//! - **A level stops taking new items at its promise** ([`capacity_of`]) and keeps its last few
//!   percent of lanes for the copies of the items it holds ([`Levels::close_if_full`]), so
//!   that joins rarely find it full.
//! - **A remove that finds matches in two levels records a pending removal** ([`pending`]);
//!   once every matching copy is some pending removal's, they are completed (below), so a
//!   further remove finds no copy and answers `false`. The item's next insert claims a pending
//!   removal
//!   instead of storing another copy, and a settle ([`Levels::settle`]) completes them once
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
//! - **Levels are only added.** `newest` moves from the level a thread saw to a new level that
//!   lists it and every level below it (`older`, newest first), by one CAS; a level's table,
//!   block of pending removals and list are built before it is published and the list never
//!   changes. So every value `newest` takes lists every earlier value, and one load of `newest`
//!   gives every level of its chain without following a link. Levels are freed only through
//!   `&mut` (`clear`, drop).
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
//! A growth builds its level and CASes `newest` from the level it saw to the new one, AcqRel:
//! the Release half publishes the table and the `older` list, and every thread loads `newest`
//! with Acquire before it reads a level, so it never sees a level half built.
//!
//! ## No false negative across growths
//!
//! Let an item's insert happen-before a lookup. The insert put the item in a level `L` of the
//! chain from a value of `newest` it loaded with Acquire (the level holding the item's copies,
//! which may be any level of that chain; the newest; or, as its last resort, any level with
//! room), or it claimed a pending removal, whose Acquire take makes the remover's view (a level
//! `L` holding the surplus copy) happen-before it (`pending`). The lookup's Acquire load of
//! `newest` happens after that, so by read-read coherence it reads the same value or a later
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
//! A scan loads `newest` once and scans each level of its chain with that table's scan. An item
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
//! one, or, when no level can be added, tries every level once and stops; its CAS fails only
//! when another thread published a level, which happens at most [`MAX_LEVELS`] times:
//! lock-free. No thread waits for a growth: each thread that finds
//! the newest level full builds a level and races to publish it, and the losers free theirs
//! (counted as `discarded_levels` in the stats). Registering, claiming and settling
//! pending removals are CASes on entries that fail only when another thread took or filled the
//! entry, and an overflow block's publication fails only when another thread published one:
//! lock-free too; a settle claims at most the entries it counted.

use core::ptr;
use std::io;

use crate::bucket::{BucketEncoding, LANES};
use crate::error::InsertError;
use crate::pending::{self, Block, Overflow};
use crate::sizing::{buckets_for, capacity_of};
use crate::stats::Stats;
use crate::sync::{self, AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering, UnsafeCell};
use crate::table::{FirstRead, Table};

/// The most levels a filter has: level 0 and 31 growths. At [`GROWTH_FACTOR`] 4 the 31st growth
/// of a one-bucket filter would need 2^62 buckets, more than any address space holds.
pub(crate) const MAX_LEVELS: usize = 32;

/// Buckets of a new level, in buckets of the level before it. Four keeps the levels of a 1,000×
/// growth to six, so lookups read few levels, and the false-positive rate (the sum of the
/// levels') under 0.1%; the cost is memory: the newest level is often mostly empty.
pub(crate) const GROWTH_FACTOR: usize = 4;

/// The most copies of an item: four lanes in each of its two buckets, in a growable filter's
/// levels together as in a fixed filter's table.
const MAX_COPIES: usize = 2 * LANES;

/// Relocations of an insert after which a growable filter checks whether the level is full
/// ([`Levels::close_if_full`]): paths this long are rare below the promised load (0.2% of
/// inserts at 94%, measured), so counting the level's items there costs next to nothing.
const CLOSING_PATH: usize = 3;

/// Buckets from which a level is worth prefetching in a batch: 1 MiB of words, a core's L2 on
/// the machines of `BENCHMARKS.md`. Smaller levels stay in the cache, where a prefetch only adds
/// work: prefetching every level would make a cache-sized filter's batches cost more than single
/// lookups.
const PREFETCH_MIN_BUCKETS: usize = 1 << 17;

/// Where a growable filter stops growing: no level is added that would take the filter past
/// either limit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Ceiling {
    /// The most items the filter's levels promise together ([`capacity_of`]).
    pub(crate) items: Option<usize>,
    /// The most bytes the filter's levels take together ([`Table::memory_for`]).
    pub(crate) bytes: Option<usize>,
}

/// A filter's levels. See the module documentation.
pub(crate) struct Levels<E: BucketEncoding> {
    /// Level 0, inline: a filter that never grew reaches its table through no pointer.
    level_0: Table<E>,
    /// The newest level, which lists the older ones (`level_0` below them); null while
    /// `level_0` is the newest.
    newest: AtomicPtr<Level<E>>,
    /// `None` for a fixed filter.
    growth: Option<Ceiling>,
    /// Whether `level_0` takes no more new items ([`close_if_full`](Self::close_if_full)).
    level_0_closed: AtomicBool,
    /// The most levels a growth may bring the filter to ([`set_level_limit`](Self::set_level_limit)),
    /// [`MAX_LEVELS`] unless a host set fewer.
    level_limit: AtomicUsize,
    /// Levels built by a growth that lost the race to publish, and freed.
    discarded: AtomicU64,
    /// Blocks of pending removals ([`pending`]) beyond the levels' own.
    overflow: Overflow,
    /// How many removals are pending: at least as many as the blocks have entries (incremented
    /// before an entry is written, decremented after one is taken).
    pending_count: AtomicU64,
    /// Removed items whose fingerprint stays in the levels for good: ambiguous removes that found
    /// every entry of their windows taken, and those a loaded snapshot or a merge brought.
    retained: AtomicU64,
    /// Bytes of the filter around its levels (its hasher), counted with them against the byte
    /// ceiling so that the filter's `memory_usage` stays within it.
    outside: usize,
}

/// A level added by a growth.
struct Level<E: BucketEncoding> {
    table: Table<E>,
    /// Pending removals ([`pending`]) of items of any level.
    pending: Block,
    /// Whether the level takes no more new items ([`Levels::close_if_full`]).
    closed: AtomicBool,
    /// The levels below this one. Written when the level is built, before it is published, and
    /// never again; a cell so that loom sees the publication.
    older: UnsafeCell<Older<E>>,
}

/// The levels added to level 0 below a level, newest first: the whole chain under it, listed
/// once when the level is built, so that a thread that loaded `newest` once reaches every level
/// without following a link (levels are only added, so the list never changes).
#[derive(Clone, Copy)]
struct Older<E: BucketEncoding> {
    levels: [*const Level<E>; MAX_LEVELS - 2],
    len: usize,
    /// How many of the tables below the level (these levels, then level 0) a lookup prefetches
    /// ([`Chain::prefetch`]): those down to the first smaller than [`PREFETCH_MIN_BUCKETS`].
    prefetched: usize,
}

impl<E: BucketEncoding> Older<E> {
    /// The list under a level built on top of `older` in a filter whose level 0 has
    /// `level_0_buckets` buckets.
    fn under(older: *const Level<E>, level_0_buckets: usize) -> Self {
        let mut list = Self { levels: [ptr::null(); MAX_LEVELS - 2], len: 0, prefetched: 0 };
        if !is_level_0(older) {
            // SAFETY: `older` is a published level (or one built by this thread): it lives until
            // `&mut` frees the levels, after this level.
            let below = unsafe { &*older }.older();
            list.levels[0] = older;
            list.levels[1..=below.len].copy_from_slice(below.levels());
            list.len = below.len + 1;
        }
        let buckets = list.levels().iter().map(|&level| {
            // SAFETY: as above, for every level of the list.
            unsafe { &*level }.table.bucket_count()
        });
        list.prefetched = buckets
            .chain([level_0_buckets])
            .take_while(|&buckets| buckets >= PREFETCH_MIN_BUCKETS)
            .count();
        list
    }

    fn levels(&self) -> &[*const Level<E>] {
        &self.levels[..self.len]
    }
}

impl<E: BucketEncoding> Level<E> {
    /// Builds a level on top of `older` and leaks it, for publication.
    fn publishable(
        table: Table<E>,
        older: *const Level<E>,
        level_0_buckets: usize,
    ) -> *mut Level<E> {
        let (pending, closed) = (Block::for_level(table.bucket_count()), AtomicBool::new(false));
        let older = UnsafeCell::new(Older::under(older, level_0_buckets));
        Box::into_raw(Box::new(Level { table, pending, closed, older }))
    }

    fn older(&self) -> &Older<E> {
        // SAFETY: `older` is written only when the level is built, and every thread that reaches
        // a level did so through an Acquire load of the Release CAS that published it (or owns
        // the filter through `&mut`, or built the level), so the write happens-before this read;
        // it is never written again, so the reference stays valid while the level lives.
        self.older.with(|older| unsafe { &*older })
    }

    /// Bytes of an added level whose table takes `table` bytes and whose block's entries take
    /// `block`: those and the rest of the `Level` around the table. Measured parts for a built
    /// level, foreseen ones for the level a growth sizes, so that the two agree.
    fn memory(table: usize, block: usize) -> usize {
        table + block + (core::mem::size_of::<Level<E>>() - core::mem::size_of::<Table<E>>())
    }
}

/// Whether `level` stands for level 0 (`level_0`, inline in `Levels`, has no `Level`): the chain
/// from a value of `newest` that is level 0 holds level 0 alone.
#[inline]
fn is_level_0<E: BucketEncoding>(level: *const Level<E>) -> bool {
    level.is_null()
}

impl<E: BucketEncoding> Levels<E> {
    /// A filter's levels: `level_0` alone, growable up to `growth` if that is `Some`.
    pub(crate) fn new(level_0: Table<E>, growth: Option<Ceiling>) -> Self {
        Self::with_newer(level_0, Vec::new(), growth, 0)
    }

    /// Levels `level_0` and then `newer`, oldest first (a loaded snapshot or a copy), whose words
    /// hold `retained` fingerprints of removed items (`remove`).
    pub(crate) fn with_newer(
        level_0: Table<E>,
        newer: Vec<Table<E>>,
        growth: Option<Ceiling>,
        retained: u64,
    ) -> Self {
        let level_0_buckets = level_0.bucket_count();
        let newest = newer.into_iter().fold(ptr::null(), |older, table| {
            Level::publishable(table, older, level_0_buckets).cast_const()
        });
        Self {
            level_0,
            newest: AtomicPtr::new(newest.cast_mut()),
            growth,
            level_0_closed: AtomicBool::new(false),
            level_limit: AtomicUsize::new(MAX_LEVELS),
            discarded: AtomicU64::new(0),
            overflow: Overflow::new(),
            pending_count: AtomicU64::new(0),
            retained: AtomicU64::new(retained),
            outside: 0,
        }
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

    #[inline]
    fn newest(&self) -> *const Level<E> {
        // Acquire: pairs with the AcqRel publication in `grow`, so the level and its chain are
        // seen as built.
        self.newest.load(Ordering::Acquire).cast_const()
    }

    /// The newest level if a level was added to level 0, `None` while level 0 is the only one.
    #[inline]
    fn grown(&self) -> Option<*const Level<E>> {
        // A fixed filter is told by a plain field, not the atomic `newest`: the compiler can
        // then keep the test out of a caller's loop instead of loading `newest` every call.
        let newest = if self.growth.is_none() { ptr::null() } else { self.newest() };
        Some(newest).filter(|&newest| !is_level_0(newest))
    }

    /// Level 0, if no level was added to it.
    #[inline]
    pub(crate) fn single(&self) -> Option<&Table<E>> {
        self.grown().is_none().then_some(&self.level_0)
    }

    /// The levels as they are now ([`Chain`]).
    pub(crate) fn chain(&self) -> Chain<'_, E> {
        self.chain_from(self.newest())
    }

    /// The levels of the chain from `newest`: the newest level's list of those below it, read
    /// with no walk.
    #[inline]
    fn chain_from(&self, newest: *const Level<E>) -> Chain<'_, E> {
        if is_level_0(newest) {
            return Chain { newest: None, older: &[], prefetched: 0, level_0: &self.level_0 };
        }
        // SAFETY: `newest` came from `newest`; published levels live until `&mut self` frees them
        // (levels are only added), and `self` is borrowed here.
        let level = unsafe { &*newest };
        let older = level.older();
        Chain {
            newest: Some(level),
            older: older.levels(),
            prefetched: older.prefetched,
            level_0: &self.level_0,
        }
    }

    /// The levels added to level 0 in the chain from `newest`, newest first.
    fn added_from(&self, newest: *const Level<E>) -> impl Iterator<Item = &Level<E>> {
        self.chain_from(newest).added()
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
            Some(newest) => self.contains_grown(newest, mixed),
        }
    }

    /// [`contains`](Self::contains) in a grown filter. Out of line, like the other operations'
    /// grown paths: inlined into the caller's loop, the chain's state would take the registers
    /// and stack frame of a fixed filter's operation, which never reads the chain.
    #[inline(never)]
    fn contains_grown(&self, newest: *const Level<E>, mixed: u64) -> bool {
        self.chain_from(newest).lookup(mixed)
    }

    /// Copies of the item in every level, less the removals of it that are pending: those
    /// copies are surplus, no longer the item's.
    pub(crate) fn count(&self, mixed: u64) -> usize {
        let newest = self.newest();
        let (copies, _) = self.chain_from(newest).copies(mixed);
        copies.saturating_sub(self.pending_of(newest, pending::key(mixed)))
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
    /// them ([`settle`](Self::settle)). Inserts keep an item's copies in one level (`insert`),
    /// so only collisions between distinct items, and inserts racing a growth, leave an
    /// item's matches in two levels.
    #[inline]
    pub(crate) fn remove(&self, mixed: u64) -> bool {
        match self.grown() {
            None => self.level_0.remove(self.level_0.slots(mixed)),
            Some(newest) => self.remove_grown(newest, mixed),
        }
    }

    /// [`remove`](Self::remove) in a grown filter, out of line (see `contains_grown`).
    #[inline(never)]
    fn remove_grown(&self, newest: *const Level<E>, mixed: u64) -> bool {
        let key = pending::key(mixed);
        // Pending removals of the item first: completed if the levels now allow it, so that
        // what follows weighs only the copies that are still the item's.
        if self.pending_of(newest, key) > 0 {
            self.settle(newest, key);
        }
        let chain = self.chain_from(newest);
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
        self.leave_behind(newest, key);
        // The announcement. AcqRel: a read-modify-write, so the announcements of removes that
        // register at once are ordered, and each acquires the registrations released by those
        // before it: the last to announce counts every entry in `settle`, and completes them
        // if they are now as many as the copies.
        self.pending_count.fetch_add(0, Ordering::AcqRel);
        self.settle(newest, key);
        true
    }

    /// Records that a copy matching `key` stays in the levels for an item that was removed: a
    /// pending removal in a free entry of a block of the chain from `newest`, adding an overflow
    /// block if none is free (without a memory ceiling), or else a removal retained for good.
    fn leave_behind(&self, newest: *const Level<E>, key: u64) {
        // Relaxed: a count, exact once the operations are joined; incremented before the entry
        // is written and decremented after it is taken, so it never falls below the entries.
        self.pending_count.fetch_add(1, Ordering::Relaxed);
        loop {
            if self.blocks(newest).any(|block| block.register(key)) {
                return;
            }
            let Some(Ceiling { bytes: None, .. }) = self.growth else {
                break;
            };
            let newest_block =
                self.added_from(newest).next().map_or(0, |level| level.pending.len());
            self.overflow.grow(newest_block);
        }
        // Relaxed: counts, as above.
        self.pending_count.fetch_sub(1, Ordering::Relaxed);
        self.retained.fetch_add(1, Ordering::Relaxed);
    }

    /// Takes a pending removal of the item, if one is recorded: its surplus copy is the item's
    /// copy again.
    #[inline]
    fn claim(&self, newest: *const Level<E>, mixed: u64) -> bool {
        // Relaxed: only a hint. An insert that misses an entry recorded meanwhile stores a copy
        // of its own, which is always sound.
        if self.pending_count.load(Ordering::Relaxed) == 0 {
            return false;
        }
        let key = pending::key(mixed);
        let claimed = self.blocks(newest).any(|block| block.claim(key));
        if claimed {
            // Relaxed: a count, as in `leave_behind`.
            self.pending_count.fetch_sub(1, Ordering::Relaxed);
        }
        claimed
    }

    /// Settles every pending removal ([`settle`](Self::settle)).
    fn sweep(&self, newest: *const Level<E>) {
        // Relaxed: only a hint, as in `claim`.
        if self.pending_count.load(Ordering::Relaxed) == 0 {
            return;
        }
        for block in self.blocks(newest) {
            for key in block.keys() {
                self.settle(newest, key);
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
    fn settle(&self, newest: *const Level<E>, key: u64) {
        let pending = self.pending_of(newest, key);
        if pending == 0 {
            return;
        }
        let chain = self.chain_from(newest);
        let (copies, holders) = chain.copies(key);
        if pending < copies && holders.count_ones() > 1 {
            return;
        }
        for _ in 0..pending {
            if !self.blocks(newest).any(|block| block.claim(key)) {
                return;
            }
            // Relaxed: a count, as in `leave_behind`.
            self.pending_count.fetch_sub(1, Ordering::Relaxed);
            chain.iter().any(|table| table.remove(table.slots(key)));
        }
    }

    /// How many removals of the item whose key is `key` are pending.
    fn pending_of(&self, newest: *const Level<E>, key: u64) -> usize {
        // Relaxed: only a hint, as in `claim`.
        if self.pending_count.load(Ordering::Relaxed) == 0 {
            return 0;
        }
        self.blocks(newest).map(|block| block.count(key)).sum()
    }

    /// The blocks of pending removals: those of the levels added to level 0 in the chain from
    /// `newest`, newest first, then the overflow blocks.
    fn blocks(&self, newest: *const Level<E>) -> impl Iterator<Item = &Block> {
        self.added_from(newest).map(|level| &level.pending).chain(self.overflow.blocks())
    }

    /// Asks the CPU to start loading the item's buckets that an insert reads: in every level
    /// of a grown filter (`Chain::holding`), in the newest otherwise.
    #[inline]
    pub(crate) fn prefetch_for_insert(&self, mixed: u64) {
        self.chain_from(self.newest()).prefetch_all(mixed);
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

    /// [`insert`](Self::insert) in a growable filter, out of line (see `contains_grown`).
    #[inline(never)]
    fn insert_growable(&self, mixed: u64) -> Result<(), InsertError> {
        self.insert_from(self.newest(), mixed)
    }

    /// [`insert_growable`](Self::insert_growable) by a thread whose load of `newest` gave
    /// `newest`: levels may have been added since.
    #[inline]
    fn insert_from(&self, mut newest: *const Level<E>, mixed: u64) -> Result<(), InsertError> {
        if !is_level_0(newest) && self.claim(newest, mixed) {
            return Ok(());
        }
        loop {
            let table = self.table_of(newest);
            let slots = table.slots(mixed);
            // The levels holding the item's copies (a plain read: a hint, on which no answer
            // rests), so that they stay together and its removes take them exactly (`remove`).
            let chain = self.chain_from(newest);
            let holding = chain.holding(mixed);
            let mut tried = false;
            if holding != 0 {
                let home = chain.get(holding.trailing_zeros() as usize).expect("a level");
                if let Some(joined) = Self::join(&chain, home, holding, mixed) {
                    return joined;
                }
                tried = ptr::eq(home, table);
            }
            // Relaxed: a hint, see `close_if_full`.
            let closed = self.closed(newest).load(Ordering::Relaxed);
            if !closed && !tried {
                if let Ok(relocations) = table.try_insert(slots) {
                    if relocations >= CLOSING_PATH {
                        self.close_if_full(newest);
                    }
                    return Ok(());
                }
            }
            if closed || tried || table.is_full() {
                if self.grow(newest) {
                    newest = self.newest();
                    continue;
                }
                return self.insert_in_any_level(mixed, newest);
            }
            // A level that is not full refused an item whose every path was taken: items aimed
            // at a few buckets do that at will, so they are refused as a fixed filter refuses
            // them, rather than add a level each (`is_full`), unless another thread added one
            // meanwhile (Acquire in `newest`: this thread goes on to read it). It loses nothing.
            if self.newest() == newest {
                table.record_refused(slots.first);
                return Err(InsertError::Full);
            }
            newest = self.newest();
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
        chain: &Chain<'_, E>,
        home: &Table<E>,
        holding: u64,
        mixed: u64,
    ) -> Option<Result<(), InsertError>> {
        let slots = home.slots(mixed);
        let at_most = holding.count_ones() > 1 && chain.matches(mixed) >= MAX_COPIES;
        if !at_most {
            if home.try_insert(slots).is_ok() {
                return Some(Ok(()));
            }
            if home.is_full() && !home.filled_with(slots) {
                return None;
            }
        }
        home.record_refused(slots.first);
        Some(Err(InsertError::Full))
    }

    /// Whether `level` takes no more new items, only copies of the items it holds: see
    /// [`close_if_full`](Self::close_if_full).
    fn closed(&self, level: *const Level<E>) -> &AtomicBool {
        if is_level_0(level) {
            &self.level_0_closed
        } else {
            // SAFETY: as in `table_of`.
            unsafe { &(*level).closed }
        }
    }

    /// Closes `level` to new items once it holds the items it promises ([`capacity_of`]): its
    /// last few percent of lanes stay for copies of the items it holds (an item inserted again
    /// joins their level), so that those inserts rarely find the level full and leave a copy in
    /// another level. Checked after inserts that needed long paths, which only a level near its
    /// promise sees, so that counting its items costs nothing on the common path.
    #[cold]
    fn close_if_full(&self, level: *const Level<E>) {
        let table = self.table_of(level);
        if table.len() >= capacity_of(table.bucket_count()) {
            // Relaxed: a hint; an insert that still sees the level open stores a new item in
            // it, which is always sound.
            self.closed(level).store(true, Ordering::Relaxed);
        }
    }

    /// The last resort of an item with no copies that level `newest` refused when full (or
    /// kept out because it is closed) and no level can be added (at the ceiling, or out of
    /// memory): any level may have room again after removes, and pending removals completed
    /// now may free some. The item has no copies, so wherever it goes its copies stay together.
    fn insert_in_any_level(&self, mixed: u64, newest: *const Level<E>) -> Result<(), InsertError> {
        self.sweep(newest);
        let chain = self.chain_from(newest);
        if chain.iter().any(|table| table.try_insert(table.slots(mixed)).is_ok()) {
            return Ok(());
        }
        let table = self.table_of(newest);
        table.record_refused(table.slots(mixed).first);
        Err(InsertError::Full)
    }

    fn table_of(&self, level: *const Level<E>) -> &Table<E> {
        if is_level_0(level) {
            &self.level_0
        } else {
            // SAFETY: `level` came from `newest` or a level's list; published levels live until
            // `&mut self` frees them (levels are only added), and `self` is borrowed here.
            unsafe { &(*level).table }
        }
    }

    /// Makes sure that a level newer than `seen` exists: `true` if one does (built by this
    /// thread or another), `false` at the ceiling, when the filter is fixed, or when the new
    /// level cannot be allocated.
    fn grow(&self, seen: *const Level<E>) -> bool {
        let Some(ceiling) = self.growth else {
            return false;
        };
        // Acquire: as in `newest`; this thread goes on to read a newer level if there is one.
        if sync::load_ptr_for_update(&self.newest, Ordering::Acquire).cast_const() != seen {
            return true;
        }
        // Completing pending removals first gives their copies' room back before any is added.
        self.sweep(seen);
        let built = self.next_level(seen, ceiling).and_then(|buckets| {
            Table::<E>::try_new(buckets, self.level_0.lookup_retries(), self.level_0.huge_pages())
                .ok()
        });
        let Some(table) = built else {
            // At the ceiling, or out of memory: unless another thread added a level meanwhile.
            return self.newest() != seen;
        };
        let level = Level::publishable(table, seen, self.level_0.bucket_count());
        // AcqRel. Release: publishes the level's table and list to the Acquire loads in
        // `newest`. Acquire (and on failure): this thread goes on to read the winner's level.
        match self.newest.compare_exchange(
            seen.cast_mut(),
            level,
            Ordering::AcqRel,
            Ordering::Acquire,
        ) {
            Ok(_) => true,
            Err(_) => {
                // SAFETY: `level` was leaked above and the CAS that would have published it
                // failed, so no other thread has seen it.
                drop(unsafe { Box::from_raw(level) });
                // Relaxed: a statistic.
                self.discarded.fetch_add(1, Ordering::Relaxed);
                true
            }
        }
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

    /// [`insert`](Self::insert) in a growable filter by a thread that loaded `newest` when the
    /// filter had `levels` levels, as a thread does whose insert races a growth (a test hook).
    ///
    /// # Panics
    ///
    /// If the filter is fixed or has fewer levels.
    #[cfg(feature = "test-hooks")]
    pub(crate) fn insert_as_of(&self, levels: usize, mixed: u64) -> Result<(), InsertError> {
        assert!(self.growth.is_some(), "a fixed filter has no growth to race");
        let added: Vec<&Level<E>> = self.added_from(self.newest()).collect();
        let seen = match levels.checked_sub(2) {
            None => ptr::null(),
            Some(below_newest) => {
                let index = added.len().checked_sub(below_newest + 1).expect("no such level");
                ptr::from_ref(added[index])
            }
        };
        self.insert_from(seen, mixed)
    }

    /// [`grow`](Self::grow) from the newest level (a test hook).
    #[cfg(any(test, feature = "test-hooks"))]
    pub(crate) fn grow_now(&self) -> bool {
        self.grow(self.newest())
    }

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

    /// The bucket count of the level to add on top of `newest`, if the ceiling and the level
    /// limit allow one.
    fn next_level(&self, newest: *const Level<E>, ceiling: Ceiling) -> Option<usize> {
        let chain = self.chain_from(newest);
        if chain.len() >= self.level_limit() {
            return None;
        }
        let mut buckets = chain.newest_table().bucket_count().checked_mul(GROWTH_FACTOR)?;
        if let Some(items) = ceiling.items {
            let promised = chain.capacity();
            let room = items.checked_sub(promised).filter(|&room| room > 0)?;
            // A room too large to allocate leaves the growth factor's size.
            if let Some(fits) = buckets_for(room) {
                buckets = buckets.min(fits);
            }
        }
        if let Some(bytes) = ceiling.bytes {
            let room = bytes.checked_sub(self.memory_from(newest))?;
            buckets = buckets.min(room / core::mem::size_of::<u64>());
            let memory = |buckets| {
                Level::<E>::memory(
                    Table::<E>::memory_for(buckets),
                    Block::memory_for_level(buckets),
                )
            };
            while buckets > 0 && memory(buckets) > room {
                buckets -= (buckets / 64).max(1);
            }
            // Smaller, a level would cost every absent lookup its reads for little room: once a
            // level took the room left to within the sizing's steps, what remains stays unused.
            if buckets < chain.newest_table().bucket_count() / GROWTH_FACTOR {
                return None;
            }
        }
        (buckets > 0).then_some(buckets)
    }

    /// Counts `removes` more removed items whose fingerprints stay in the levels (a merge adds
    /// another filter's).
    pub(crate) fn add_retained(&self, removes: u64) {
        // Relaxed: a count, as every counter.
        self.retained.fetch_add(removes, Ordering::Relaxed);
    }

    /// Fingerprints of removed items that removes left in the levels (`remove`), pending or
    /// for good: a copy or a snapshot keeps the count as removals retained for good, so that
    /// its `len` stays that of the filter.
    pub(crate) fn retained(&self) -> u64 {
        self.pending_removals() + self.retained.load(Ordering::Relaxed)
    }

    /// Pending removals ([`pending`]).
    fn pending_removals(&self) -> u64 {
        // Relaxed: a count, as every counter.
        self.pending_count.load(Ordering::Relaxed)
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
        self.memory_from(self.newest())
    }

    /// What [`memory_usage`](Self::memory_usage) reports for a new filter of `buckets` buckets
    /// with `outside` bytes around its levels, before it is built (a ceiling is checked
    /// against it).
    pub(crate) fn memory_for(buckets: usize, outside: usize) -> usize {
        Table::<E>::memory_for(buckets).saturating_add(Self::AROUND_LEVEL_0 + outside)
    }

    /// What `Levels` holds beside its level 0 table.
    const AROUND_LEVEL_0: usize = core::mem::size_of::<Self>() - core::mem::size_of::<Table<E>>();

    /// [`memory_usage`](Self::memory_usage) with the levels from `newest` down: level 0, each
    /// added level, and the rest of the filter.
    fn memory_from(&self, newest: *const Level<E>) -> usize {
        Self::AROUND_LEVEL_0
            + self.outside
            + self.overflow.memory_usage()
            + self.level_0.memory_usage()
            + self
                .added_from(newest)
                .map(|level| {
                    Level::<E>::memory(level.table.memory_usage(), level.pending.memory_usage())
                })
                .sum::<usize>()
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
        stats.pending_removals = self.pending_removals();
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
        self.free_newer();
        self.level_0.clear();
        // Relaxed: `&mut self` means no other thread reads it.
        self.level_0_closed.store(false, Ordering::Relaxed);
        // Relaxed: statistics, and `&mut self` means no other thread reads them.
        self.discarded.store(0, Ordering::Relaxed);
        self.overflow.clear();
        self.pending_count.store(0, Ordering::Relaxed);
        self.retained.store(0, Ordering::Relaxed);
    }

    fn free_newer(&mut self) {
        // Relaxed: `&mut self` means no other thread can reach the levels.
        let newest = self.newest.swap(ptr::null_mut(), Ordering::Relaxed).cast_const();
        if is_level_0(newest) {
            return;
        }
        // SAFETY: every level in the chain was leaked by `Level::publishable` and is owned by
        // this chain alone; `&mut self` means no other thread can reach it. The newest level's
        // list names every other level once, and is copied out before the box is dropped.
        let newest = unsafe { Box::from_raw(newest.cast_mut()) };
        let older = *newest.older();
        drop(newest);
        for &level in older.levels() {
            // SAFETY: as above; each level of the list is dropped once.
            drop(unsafe { Box::from_raw(level.cast_mut()) });
        }
    }
}

impl<E: BucketEncoding> Drop for Levels<E> {
    fn drop(&mut self) {
        // A loom model that fails drops its filter while unwinding, before it joined the
        // threads that built levels: loom would report the unordered read of their lists as a
        // second panic and abort the whole suite. Leak them there instead.
        if sync::MODEL_CHECKING && std::thread::panicking() {
            return;
        }
        self.free_newer();
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

/// The list of a filter's levels as one load of `newest` found them: the newest level and the
/// list it carries of those below it, ending with level 0, newest first (`iter().rev()` for
/// oldest first). Using it follows no link; a level added afterwards holds only items whose
/// inserts did not happen-before the load.
#[derive(Clone, Copy)]
pub(crate) struct Chain<'a, E: BucketEncoding> {
    /// The newest level; `None` while level 0 is the only one.
    newest: Option<&'a Level<E>>,
    /// The levels added to level 0 below `newest`, newest first.
    older: &'a [*const Level<E>],
    /// How many tables below the newest (`older`, then level 0) [`prefetch`](Self::prefetch)
    /// loads ahead.
    prefetched: usize,
    level_0: &'a Table<E>,
}

impl<'a, E: BucketEncoding> Chain<'a, E> {
    /// How many levels there are.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.newest.map_or(1, |_| self.older.len() + 2)
    }

    /// The newest level's table (level 0 while it is the only one).
    #[inline]
    pub(crate) fn newest_table(&self) -> &'a Table<E> {
        self.newest.map_or(self.level_0, |level| &level.table)
    }

    /// The levels added to level 0, newest first.
    fn added(self) -> impl Iterator<Item = &'a Level<E>> {
        self.newest.into_iter().chain(self.older.iter().map(|&level| {
            // SAFETY: the levels of a newest level's list are published levels (or built by the
            // thread that lists them), which live until `&mut` frees them; `'a` borrows the
            // `Levels`.
            unsafe { &*level }
        }))
    }

    /// The tables below the newest, newest first, ending with level 0; none while level 0 is
    /// the only level.
    #[inline]
    pub(crate) fn below(&self) -> impl DoubleEndedIterator<Item = &'a Table<E>> + 'a {
        let older = self.older.iter().map(|&level| {
            // SAFETY: as in `added`.
            unsafe { &(*level).table }
        });
        older.chain(self.newest.map(|_| self.level_0))
    }

    /// The tables, newest first, ending with level 0.
    #[inline]
    pub(crate) fn iter(&self) -> impl DoubleEndedIterator<Item = &'a Table<E>> + 'a {
        core::iter::once(self.newest_table()).chain(self.below())
    }

    /// Table `index`, 0 the newest.
    #[inline]
    pub(crate) fn get(&self, index: usize) -> Option<&'a Table<E>> {
        let Some(below) = index.checked_sub(1) else {
            return Some(self.newest_table());
        };
        match self.older.get(below) {
            // SAFETY: as in `added`.
            Some(&level) => Some(unsafe { &(*level).table }),
            None => (self.newest.is_some() && below == self.older.len()).then_some(self.level_0),
        }
    }

    /// [`Levels::contains`] on these levels: the first attempt of every level's validated read,
    /// newest first, in one pass whose only branches stop at a match (predicted not taken while
    /// the item is absent, so the levels' loads overlap and an absent item costs one round of
    /// loads); the validations are or'ed and tested once, so a miss answers `false` only if
    /// every level's read validated ([No false negative across growths]).
    ///
    /// [No false negative across growths]: crate::levels#no-false-negative-across-growths
    #[inline]
    pub(crate) fn lookup(&self, mixed: u64) -> bool {
        let mut read = self.newest_table().first_read(mixed);
        if self.newest.is_some() {
            for &level in self.older {
                if read.found() {
                    return true;
                }
                // SAFETY: as in `added`.
                read = read.and(unsafe { &(*level).table }.first_read(mixed));
            }
            if read.found() {
                return true;
            }
            read = read.and(self.level_0.first_read(mixed));
        }
        if read.answers() {
            return read.found();
        }
        self.lookup_retry(mixed)
    }

    /// The levels holding matches of the item, bit `i` for table `i` (0 the newest), by the
    /// first attempt of every level's validated read in one pass, as in
    /// [`lookup`](Self::lookup); `None` when an attempt met a change, which leaves
    /// [`holders_counted`](Self::holders_counted) to read the levels with their retries.
    #[inline]
    fn holders(&self, mixed: u64) -> Option<u64> {
        let newest = self.newest_table().first_read(mixed);
        let (mut holders, mut all) = (u64::from(newest.found()), newest);
        if self.newest.is_some() {
            let mut add = |index: usize, read: FirstRead| {
                holders |= u64::from(read.found()) << index;
                all = all.and(read);
            };
            for (i, &level) in self.older.iter().enumerate() {
                // SAFETY: as in `added`.
                add(i + 1, unsafe { &(*level).table }.first_read(mixed));
            }
            add(self.older.len() + 1, self.level_0.first_read(mixed));
        }
        all.validated().then_some(holders)
    }

    /// [`holders`](Self::holders) by each level's validated count with its retries, in turn.
    #[cold]
    #[inline(never)]
    fn holders_counted(&self, mixed: u64) -> u64 {
        self.copies(mixed).1
    }

    /// The levels holding a copy of the item's fingerprint in its buckets, bit `i` for table
    /// `i` (0 the newest), for [`Levels::insert`]: a plain read of every level
    /// ([`Table::may_hold`]), each level's buckets loaded before any is tested, with no branch
    /// in between, so that their misses overlap. One loop over the list, as in
    /// [`lookup`](Self::lookup), which the compiler inlines where chained iterators were not.
    #[inline]
    fn holding(&self, mixed: u64) -> u64 {
        let newest = self.newest_table();
        let mut holders = u64::from(newest.may_hold(newest.slots(mixed)));
        if self.newest.is_some() {
            for (i, &level) in self.older.iter().enumerate() {
                // SAFETY: as in `added`.
                let table = unsafe { &(*level).table };
                holders |= u64::from(table.may_hold(table.slots(mixed))) << (i + 1);
            }
            let level_0 = u64::from(self.level_0.may_hold(self.level_0.slots(mixed)));
            holders |= level_0 << (self.older.len() + 1);
        }
        holders
    }

    /// Matches of the item's fingerprint in its buckets of every level, by a plain read of each
    /// ([`Table::matches`]).
    fn matches(&self, mixed: u64) -> usize {
        self.iter().map(|table| table.matches(table.slots(mixed))).sum()
    }

    /// [`lookup`](Self::lookup) after a removal announced in some level left its miss unproven:
    /// every level's validated read in turn, with its retries.
    #[cold]
    #[inline(never)]
    fn lookup_retry(&self, mixed: u64) -> bool {
        self.iter().any(|table| table.contains(mixed))
    }

    /// Asks the CPU to start loading the item's buckets for a batch's lookup: in the newest level,
    /// whatever its size, and in the levels below it down to the first smaller than
    /// [`PREFETCH_MIN_BUCKETS`] (levels are larger the newer they are; at a ceiling, the newest
    /// may be smaller).
    #[inline]
    pub(crate) fn prefetch(&self, mixed: u64) {
        prefetch([self.newest_table()], mixed);
        prefetch(self.below().take(self.prefetched), mixed);
    }

    /// Asks the CPU to start loading the item's buckets in every level.
    #[inline]
    fn prefetch_all(&self, mixed: u64) {
        prefetch(self.iter(), mixed);
    }

    /// Copies of the item in every level, by each level's validated count, and the levels
    /// holding any, bit `i` for table `i` (0 the newest).
    fn copies(&self, mixed: u64) -> (usize, u64) {
        let counts = self.iter().map(|table| table.count(table.slots(mixed)));
        counts.enumerate().fold((0, 0), |(copies, holders), (i, count)| {
            (copies + count, holders | u64::from(count > 0) << i)
        })
    }

    /// Items the levels promise to accept together.
    fn capacity(&self) -> usize {
        self.iter().map(|table| capacity_of(table.bucket_count())).sum()
    }
}

/// Asks the CPU to start loading the item's buckets in each of `tables`.
#[inline]
pub(crate) fn prefetch<'t, E: BucketEncoding>(
    tables: impl IntoIterator<Item = &'t Table<E>>,
    mixed: u64,
) {
    for table in tables {
        table.prefetch(table.slots(mixed));
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::bucket::plain::Plain;

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
        assert!(levels.single().is_some());
        levels.grow_now();
        levels.grow_now();
        assert!(levels.single().is_none());
        let chain = levels.chain();
        assert_eq!(chain.len(), 3);
        let mixed = crate::hash::mix(42);
        assert!(!chain.lookup(mixed));
        levels.insert(mixed).unwrap();
        assert!(chain.lookup(mixed) && levels.contains(mixed));
    }
}
