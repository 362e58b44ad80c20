//! Reading the levels: a [`Level`] added by a growth, and the [`Chain`] of every level as one
//! load found them, with the reads that lookups, removes and inserts make across levels.

use crate::bucket::BucketEncoding;
use crate::pending::Block;
use crate::published::{Head, Published};
use crate::sizing::capacity_of;
use crate::sync::AtomicBool;
use crate::table::{FirstRead, Table};

/// Buckets from which a level is worth prefetching in a batch: 1 MiB of words, a core's L2 on
/// the machines of `BENCHMARKS.md`. Smaller levels stay in the cache, where a prefetch only adds
/// work: prefetching every level would make a cache-sized filter's batches cost more than single
/// lookups.
const PREFETCH_MIN_BUCKETS: usize = 1 << 17;

/// A level added by a growth.
pub(crate) struct Level<E: BucketEncoding> {
    pub(super) table: Table<E>,
    /// Pending removals (`pending`) of items of any level.
    pub(super) pending: Block,
    /// Whether the level takes no more new items (`Levels::close_if_full`).
    pub(super) closed: AtomicBool,
    /// How many of the tables below the level (newest first, ending with level 0) a batch's
    /// lookup prefetches ([`Chain::prefetch`]): those down to the first smaller than
    /// [`PREFETCH_MIN_BUCKETS`].
    prefetched: usize,
}

impl<E: BucketEncoding> Level<E> {
    /// A level of `table` to publish on top of `below`.
    pub(super) fn new(table: Table<E>, below: Chain<'_, E>) -> Self {
        let prefetched =
            below.iter().take_while(|t| t.bucket_count() >= PREFETCH_MIN_BUCKETS).count();
        let pending = Block::for_level(table.bucket_count());
        Self { table, pending, closed: AtomicBool::new(false), prefetched }
    }

    /// Bytes of an added level whose table takes `table` bytes and whose block's entries take
    /// `block`: those and the rest of the level around the table, its list node included.
    /// Measured parts for a built level, foreseen ones for the level a growth sizes, so that
    /// the two agree.
    pub(super) fn memory(table: usize, block: usize) -> usize {
        let around = core::mem::size_of::<Self>() - core::mem::size_of::<Table<E>>();
        table + block + around + Published::<Self>::NODE_BYTES
    }

    /// [`memory`](Self::memory) of this level.
    pub(super) fn memory_usage(&self) -> usize {
        Self::memory(self.table.memory_usage(), self.pending.memory_usage())
    }
}

/// The list of a filter's levels as one load found them: the added levels, newest first
/// ([`Head`]), ending with level 0 (`iter().rev()` for oldest first). Using it follows no link; a
/// level added afterwards holds only items whose inserts did not happen-before the load.
pub(crate) struct Chain<'a, E: BucketEncoding> {
    head: Head<'a, Level<E>>,
    level_0: &'a Table<E>,
    level_0_closed: &'a AtomicBool,
}

impl<E: BucketEncoding> Clone for Chain<'_, E> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<E: BucketEncoding> Copy for Chain<'_, E> {}

impl<'a, E: BucketEncoding> Chain<'a, E> {
    /// Level 0 with `level_0_closed` as its closing flag, under the added levels of `head`.
    #[inline]
    pub(super) fn new(
        head: Head<'a, Level<E>>,
        level_0: &'a Table<E>,
        level_0_closed: &'a AtomicBool,
    ) -> Self {
        Self { head, level_0, level_0_closed }
    }

    /// The added levels.
    #[inline]
    pub(super) fn head(&self) -> Head<'a, Level<E>> {
        self.head
    }

    /// Whether a level was added to level 0.
    #[inline]
    pub(super) fn is_grown(&self) -> bool {
        self.head.newest().is_some()
    }

    /// How many levels there are.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.head.len() + 1
    }

    /// The newest level's table (level 0 while it is the only one).
    #[inline]
    pub(crate) fn newest_table(&self) -> &'a Table<E> {
        self.head.newest().map_or(self.level_0, |level| &level.table)
    }

    /// Whether the newest level takes no more new items (`Levels::close_if_full`).
    pub(super) fn newest_closed(&self) -> &'a AtomicBool {
        self.head.newest().map_or(self.level_0_closed, |level| &level.closed)
    }

    /// The levels added to level 0, newest first.
    pub(super) fn added(&self) -> impl Iterator<Item = &'a Level<E>> + 'a {
        self.head.iter()
    }

    /// The tables below the newest, newest first, ending with level 0; none while level 0 is
    /// the only level.
    #[inline]
    pub(crate) fn below(&self) -> impl DoubleEndedIterator<Item = &'a Table<E>> + 'a {
        let older = self.head.older().map(|level| &level.table);
        older.chain(self.is_grown().then_some(self.level_0))
    }

    /// The tables, newest first, ending with level 0.
    #[inline]
    pub(crate) fn iter(&self) -> impl DoubleEndedIterator<Item = &'a Table<E>> + 'a {
        core::iter::once(self.newest_table()).chain(self.below())
    }

    /// Table `index`, 0 the newest.
    #[inline]
    pub(crate) fn get(&self, index: usize) -> Option<&'a Table<E>> {
        match self.head.get(index) {
            Some(level) => Some(&level.table),
            None => (index == self.head.len()).then_some(self.level_0),
        }
    }

    /// `Levels::contains` on these levels: the first attempt of every level's validated read,
    /// newest first, in one pass whose only branches stop at a match (predicted not taken while
    /// the item is absent, so the levels' loads overlap and an absent item costs one round of
    /// loads); the validations are or'ed and tested once, so a miss answers `false` only if
    /// every level's read validated ([No false negative across growths]).
    ///
    /// [No false negative across growths]: crate::levels#no-false-negative-across-growths
    #[inline]
    pub(crate) fn lookup(&self, mixed: u64) -> bool {
        let mut read = self.newest_table().first_read(mixed);
        if self.is_grown() {
            for level in self.head.older() {
                if read.found() {
                    return true;
                }
                read = read.and(level.table.first_read(mixed));
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
    pub(super) fn holders(&self, mixed: u64) -> Option<u64> {
        let newest = self.newest_table().first_read(mixed);
        let (mut holders, mut all) = (u64::from(newest.found()), newest);
        if self.is_grown() {
            let mut add = |index: usize, read: FirstRead| {
                holders |= u64::from(read.found()) << index;
                all = all.and(read);
            };
            for (i, level) in self.head.older().enumerate() {
                add(i + 1, level.table.first_read(mixed));
            }
            add(self.head.len(), self.level_0.first_read(mixed));
        }
        all.validated().then_some(holders)
    }

    /// [`holders`](Self::holders) by each level's validated count with its retries, in turn.
    #[cold]
    #[inline(never)]
    pub(super) fn holders_counted(&self, mixed: u64) -> u64 {
        self.copies(mixed).1
    }

    /// The levels holding a copy of the item's fingerprint in its buckets, bit `i` for table
    /// `i` (0 the newest), for `Levels::insert`: a plain read of every level
    /// ([`Table::may_hold`]), each level's buckets loaded before any is tested, with no branch
    /// in between, so that their misses overlap. One loop over the list, as in
    /// [`lookup`](Self::lookup), which the compiler inlines where chained iterators were not.
    #[inline]
    pub(super) fn holding(&self, mixed: u64) -> u64 {
        let newest = self.newest_table();
        let mut holders = u64::from(newest.may_hold(newest.slots(mixed)));
        if self.is_grown() {
            for (i, level) in self.head.older().enumerate() {
                let table = &level.table;
                holders |= u64::from(table.may_hold(table.slots(mixed))) << (i + 1);
            }
            let level_0 = u64::from(self.level_0.may_hold(self.level_0.slots(mixed)));
            holders |= level_0 << self.head.len();
        }
        holders
    }

    /// Matches of the item's fingerprint in its buckets of every level, by a plain read of each
    /// ([`Table::matches`]).
    pub(super) fn matches(&self, mixed: u64) -> usize {
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
        let prefetched = self.head.newest().map_or(0, |level| level.prefetched);
        prefetch([self.newest_table()], mixed);
        prefetch(self.below().take(prefetched), mixed);
    }

    /// Asks the CPU to start loading the item's buckets in every level.
    #[inline]
    pub(super) fn prefetch_all(&self, mixed: u64) {
        prefetch(self.iter(), mixed);
    }

    /// Copies of the item in every level, by each level's validated count, and the levels
    /// holding any, bit `i` for table `i` (0 the newest).
    pub(super) fn copies(&self, mixed: u64) -> (usize, u64) {
        let counts = self.iter().map(|table| table.count(table.slots(mixed)));
        counts.enumerate().fold((0, 0), |(copies, holders), (i, count)| {
            (copies + count, holders | u64::from(count > 0) << i)
        })
    }

    /// Items the levels promise to accept together.
    pub(super) fn capacity(&self) -> usize {
        self.iter().map(|table| capacity_of(table.bucket_count())).sum()
    }
}

/// Asks the CPU to start loading the item's buckets in each of `tables`.
#[inline]
fn prefetch<'t, E: BucketEncoding>(tables: impl IntoIterator<Item = &'t Table<E>>, mixed: u64) {
    for table in tables {
        table.prefetch(table.slots(mixed));
    }
}
