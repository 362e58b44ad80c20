//! The rules of growth that decide memory and counts rather than answers, one test each, run in
//! both bucket layouts, pinned by what they change: which level an insert's copy joins (per-level fingerprint counts), when
//! a level closes and the filter grows (`stats().levels`), when a pending removal completes
//! (`pending_removals`, `retained_removals`, `len`), what a level's block of pending removals
//! holds before an overflow block is added (`memory_usage`), and which refusals are crowded.
//!
//! Levels and items are crafted with the `test-hooks` helpers under a fixed seed, so that every
//! test is one deterministic, single-threaded run: a changed rule fails it every time.

use std::hash::BuildHasher;

use lockfree_cuckoo::{
    CuckooFilter, DefaultHashBuilder, DefaultHasher, InsertError, Layout, Plain, SemiSorted,
};
use rand::{rngs::StdRng, Rng, SeedableRng};

/// The default hasher's seed of every filter here.
const SEED: u64 = 0x5EED;

/// Items of a filter [`growable`] builds: 279 buckets in level 0, so 1,116 in level 1 and 4,464
/// in level 2.
const CAPACITY: usize = 1_024;

/// Buckets of level 0 and of level 1 of a filter [`growable`] builds.
const LEVEL_0_BUCKETS: usize = 279;
const LEVEL_1_BUCKETS: usize = 4 * LEVEL_0_BUCKETS;

/// Pending removals a level of [`LEVEL_1_BUCKETS`] buckets records in its own block: one entry per
/// 128 buckets, to a power of two.
const LEVEL_1_ENTRIES: usize = 8;

type Filter<L> = CuckooFilter<DefaultHashBuilder, L>;

/// `L`'s name, for the messages.
fn name<L: Layout>() -> &'static str {
    std::any::type_name::<L>().rsplit("::").next().unwrap_or("?")
}

/// A growable filter for [`CAPACITY`] items under [`SEED`], with `max_memory` if given.
fn growable<L: Layout>(max_memory: Option<usize>) -> Filter<L> {
    let builder = CuckooFilter::builder().capacity(CAPACITY).seed(SEED).layout::<L>();
    let filter = match max_memory {
        Some(bytes) => builder.max_memory(bytes),
        None => builder.growable(),
    }
    .build();
    assert_eq!(filter.bucket_count(), LEVEL_0_BUCKETS, "{}", name::<L>());
    filter
}

/// [`growable`], grown to `levels` levels with no item in them.
fn grown<L: Layout>(levels: usize) -> Filter<L> {
    let filter = growable::<L>(None);
    while filter.stats().levels < levels {
        assert!(filter.grow_now());
    }
    filter
}

/// A [`growable`] filter whose level 0 holds an item in every lane: four crafted items with
/// each bucket as their first, all of distinct fingerprints (`1..=1116`), each in its first
/// bucket. Returns it and the items' hashes. Every insert of a copy of one of them finds level 0
/// without room.
fn full_level_0<L: Layout>(max_memory: Option<usize>) -> (Filter<L>, Vec<u64>) {
    let filter = growable::<L>(max_memory);
    let hashes: Vec<u64> =
        (0..4 * LEVEL_0_BUCKETS).map(|i| filter.hash_for_slot(i / 4, fingerprint(i))).collect();
    for &hash in &hashes {
        filter.insert_hash(hash).unwrap();
    }
    let stats = filter.stats();
    let counts = (filter.len(), stats.levels, stats.relocations);
    assert_eq!(counts, (hashes.len(), 1, 0), "{}", name::<L>());
    (filter, hashes)
}

/// The `i`th crafted fingerprint, from 1.
fn fingerprint(i: usize) -> u32 {
    u32::try_from(i + 1).unwrap()
}

/// Copies of the item of `hash` in its two buckets of level `level` (0 the oldest).
fn copies_in_level<L: Layout>(filter: &Filter<L>, level: usize, hash: u64) -> usize {
    let (first, second, fingerprint) = filter.slots_for_hash_in_level(level, hash);
    let in_second = if second == first {
        0
    } else {
        filter.fingerprint_count_in_level(level, second, fingerprint)
    };
    filter.fingerprint_count_in_level(level, first, fingerprint) + in_second
}

/// Hashes of two items that collide in level `level` of `filter` only: the same fingerprint and
/// bucket pair there, and in every other level of `filter` two pairs that share no bucket. Any
/// filter grown alike (the same seed and levels) places them alike.
fn colliding_in_level<L: Layout>(filter: &Filter<L>, level: usize) -> (u64, u64) {
    let levels = filter.stats().levels;
    (0u64..)
        .map(|key| filter.hasher().hash_one(key))
        .find_map(|x| {
            let (first, second, fingerprint) = filter.slots_for_hash_in_level(level, x);
            let z = filter.hash_for_slot_in_level(level, second, fingerprint);
            if first == second
                || filter.slots_for_hash_in_level(level, z) != (second, first, fingerprint)
            {
                return None;
            }
            let apart = (0..levels).filter(|&other| other != level).all(|other| {
                let (a, b, _) = filter.slots_for_hash_in_level(other, x);
                let (c, d, _) = filter.slots_for_hash_in_level(other, z);
                ![c, d].iter().any(|&bucket| bucket == a || bucket == b)
            });
            apart.then_some((x, z))
        })
        .unwrap()
}

/// A filter of two levels where X's copy in level 0 and Z's in level 1 (which collides with X
/// there only) made X's remove ambiguous: X is removed, and its copy stays behind as a pending
/// removal in level 1's block. Returns the filter, X and Z.
fn pending_removal_of_a_collision<L: Layout>() -> (Filter<L>, u64, u64) {
    let layout = name::<L>();
    let (x, z) = colliding_in_level(&grown::<L>(2), 1);
    let filter = growable::<L>(None);
    filter.insert_hash(x).unwrap();
    assert!(filter.grow_now(), "{layout}");
    filter.insert_hash(z).unwrap();
    let copies = (copies_in_level(&filter, 0, x), copies_in_level(&filter, 1, z));
    assert_eq!(copies, (1, 1), "{layout}");
    assert_eq!(filter.count_hash(x), 2, "{layout}: Z's copy matches X in level 1");
    assert!(filter.remove_hash(x), "{layout}");
    let stats = filter.stats();
    let removals = (stats.pending_removals, stats.retained_removals);
    assert_eq!(removals, (1, 1), "{layout}: {stats:?}");
    assert_eq!(filter.len(), 1, "{layout}");
    (filter, x, z)
}

/// Inserts the item of `hash` (in a full level 0) again, which puts the copy in level 1, and
/// removes it, which finds copies in two levels.
fn split_and_remove<L: Layout>(filter: &Filter<L>, hash: u64) {
    filter.insert_hash(hash).unwrap();
    let copies = (copies_in_level(filter, 0, hash), copies_in_level(filter, 1, hash));
    assert_eq!(copies, (1, 1), "{}", name::<L>());
    assert!(filter.remove_hash(hash), "{}", name::<L>());
}

/// An insert joins the newest level that holds a copy of its item's fingerprint, neither an
/// older one holding copies nor the newest level: an item with copies in levels 0 and 1 (its
/// level 0 was full) gets its third copy in level 1, and level 2 stays empty of it.
#[test]
fn an_insert_joins_the_newest_level_holding_its_copies() {
    an_insert_joins_the_newest_level_holding_its_copies_in::<Plain>();
    an_insert_joins_the_newest_level_holding_its_copies_in::<SemiSorted>();
}

fn an_insert_joins_the_newest_level_holding_its_copies_in<L: Layout>() {
    let layout = name::<L>();
    let (filter, hashes) = full_level_0::<L>(None);
    let hash = hashes[0];
    assert!(filter.grow_now(), "{layout}");
    filter.insert_hash(hash).unwrap();
    assert!(filter.grow_now(), "{layout}");
    filter.insert_hash(hash).unwrap();
    let per_level: Vec<usize> = (0..3).map(|level| copies_in_level(&filter, level, hash)).collect();
    assert_eq!(per_level, [1, 2, 0], "{layout}");
    assert_eq!(filter.stats().levels, 3, "{layout}");
}

/// A copy that the level holding its item's copies refuses goes to the newest level as a new
/// item would, growing the filter when that one is full too, rather than being refused: level 0
/// and level 1 full to the last lane, an item of level 0 inserted again makes level 2.
#[test]
fn a_copy_its_level_refuses_goes_to_the_newest_level_and_grows_a_full_one() {
    a_copy_its_level_refuses_goes_to_the_newest_level_and_grows_a_full_one_in::<Plain>();
    a_copy_its_level_refuses_goes_to_the_newest_level_and_grows_a_full_one_in::<SemiSorted>();
}

fn a_copy_its_level_refuses_goes_to_the_newest_level_and_grows_a_full_one_in<L: Layout>() {
    let layout = name::<L>();
    let (filter, hashes) = full_level_0::<L>(None);
    assert!(filter.grow_now(), "{layout}");
    for i in 0..4 * LEVEL_1_BUCKETS {
        let hash = filter.hash_for_slot_in_level(1, i / 4, fingerprint(hashes.len() + i));
        filter.insert_hash(hash).unwrap();
    }
    assert_eq!((filter.len(), filter.stats().levels), (5 * hashes.len(), 2), "{layout}");
    let memory = filter.memory_usage();
    assert_eq!(filter.insert_hash(hashes[0]), Ok(()), "{layout}");
    assert_eq!(filter.stats().levels, 3, "{layout}");
    assert!(filter.memory_usage() > memory, "{layout}");
    assert_eq!(copies_in_level(&filter, 2, hashes[0]), 1, "{layout}");
}

/// Seeds (of the hasher and of the items) under which a filter for 1,000 items, in either layout,
/// meets the edges of the closing rule (checked by the test below): under the first, inserts with
/// paths of one and two relocations past the promise, then one of exactly three; under the
/// second, a long path one item short of the promise, then one that reaches it.
const CLOSING_SEEDS: [u64; 2] = [17, 406];

/// Fills a growable filter for 1,000 items under `seed` with random items until it grows; returns
/// it, the items, and each insert's level 0 item count after it and relocations (up to the
/// stats' last bin, 5 or more).
fn fill_until_growth<L: Layout>(seed: u64) -> (Filter<L>, Vec<u64>, Vec<(usize, usize)>) {
    let filter =
        CuckooFilter::builder().capacity(1_000).seed(seed).layout::<L>().growable().build();
    let mut rng = StdRng::seed_from_u64(seed);
    let (mut items, mut inserts) = (Vec::new(), Vec::new());
    loop {
        let before = filter.stats().insert_paths;
        let item: u64 = rng.random();
        filter.insert(&item).unwrap();
        items.push(item);
        if filter.stats().levels > 1 {
            return (filter, items, inserts);
        }
        let after = filter.stats().insert_paths;
        let relocations = (0..after.len()).find(|&k| after[k] > before[k]).unwrap();
        inserts.push((filter.len(), relocations));
    }
}

/// A level closes at the first insert that, at or past the level's promise, needed a path of
/// three relocations or more; the next new item grows the filter. The level keeps its last lanes
/// for copies of its items, which still join it.
#[test]
fn a_level_closes_at_the_first_long_path_past_its_promise() {
    a_level_closes_at_the_first_long_path_past_its_promise_in::<Plain>();
    a_level_closes_at_the_first_long_path_past_its_promise_in::<SemiSorted>();
}

fn a_level_closes_at_the_first_long_path_past_its_promise_in<L: Layout>() {
    let layout = name::<L>();
    let promise = CuckooFilter::builder().capacity(1_000).layout::<L>().build().capacity();
    // Whether the seeds met each edge of the rule: a short path past the promise that did not
    // close the level, a closing path of exactly three relocations, a long path one item short of
    // the promise that did not close it, and a closing path that reached the promise exactly.
    let mut edges = [false; 4];
    for seed in CLOSING_SEEDS {
        let (filter, items, inserts) = fill_until_growth::<L>(seed);
        let closing =
            inserts.iter().position(|&(len, relocations)| len >= promise && relocations >= 3);
        let last = &inserts[inserts.len().saturating_sub(30)..];
        assert_eq!(closing, Some(inserts.len() - 1), "{layout}, seed {seed}: {last:?}");
        let (closed_at, relocations) = inserts[inserts.len() - 1];
        let before = &inserts[..inserts.len() - 1];
        edges[0] |= before.iter().any(|&(len, r)| len >= promise && (1..3).contains(&r));
        edges[1] |= relocations == 3;
        edges[2] |= before.iter().any(|&(len, r)| len == promise - 1 && r >= 3);
        edges[3] |= closed_at == promise;
        let case = format!("{layout}, seed {seed}");
        assert!(closed_at < 4 * filter.bucket_count() - 10, "{case}: closed full");
        // Copies of its items join it in the lanes it kept.
        for item in &items[..10] {
            filter.insert(item).unwrap();
            let hash = filter.hasher().hash_one(item);
            assert_eq!(copies_in_level(&filter, 0, hash), 2, "{case}");
            assert_eq!(copies_in_level(&filter, 1, hash), 0, "{case}");
        }
    }
    assert_eq!(edges, [true; 4], "{layout}: the seeds no longer meet the rule's edges");
}

/// An item whose own copies fill both its buckets is refused without a new level, which would
/// only take more of them: in a tiny level (which counts as full whenever it refuses), the ninth
/// copy is refused, not crowded, and the filter keeps its one level.
#[test]
fn an_item_filling_its_buckets_with_its_copies_grows_nothing() {
    an_item_filling_its_buckets_with_its_copies_grows_nothing_in::<Plain>();
    an_item_filling_its_buckets_with_its_copies_grows_nothing_in::<SemiSorted>();
}

fn an_item_filling_its_buckets_with_its_copies_grows_nothing_in<L: Layout>() {
    let layout = name::<L>();
    let filter = CuckooFilter::builder().capacity(8).seed(SEED).layout::<L>().growable().build();
    let hash = (0u64..)
        .map(|key| filter.hasher().hash_one(key))
        .find(|&hash| {
            let (first, second, _) = filter.slots_for_hash(hash);
            first != second
        })
        .unwrap();
    let memory = filter.memory_usage();
    let accepted = (0..20).take_while(|_| filter.insert_hash(hash).is_ok()).count();
    assert_eq!(accepted, 8, "{layout}");
    let stats = filter.stats();
    assert_eq!((stats.levels, filter.memory_usage()), (1, memory), "{layout}");
    assert_eq!((stats.refused_inserts, stats.crowded_refusals), (1, 0), "{layout}");
}

/// A refusal is crowded when the newest level, the one the insert was refused by, is not full,
/// whatever the older levels hold: level 0 full to the last lane, a triangle crowded in a fresh
/// level 1 refuses its 13th item as crowded, adding no level.
#[test]
fn a_refusal_by_a_newest_level_that_is_not_full_is_crowded() {
    a_refusal_by_a_newest_level_that_is_not_full_is_crowded_in::<Plain>();
    a_refusal_by_a_newest_level_that_is_not_full_is_crowded_in::<SemiSorted>();
}

fn a_refusal_by_a_newest_level_that_is_not_full_is_crowded_in<L: Layout>() {
    let layout = name::<L>();
    let (filter, _) = full_level_0::<L>(None);
    assert!(filter.grow_now(), "{layout}");
    let memory = filter.memory_usage();
    let items = filter.crowding_items(1, 0);
    for item in &items[..12] {
        filter.insert(item).unwrap();
    }
    assert_eq!(filter.insert(&items[12]), Err(InsertError::Full), "{layout}");
    let stats = filter.stats();
    let refusals = (stats.refused_inserts, stats.crowded_refusals);
    assert_eq!(refusals, (1, 1), "{layout}: {stats:?}");
    assert_eq!((stats.levels, filter.memory_usage()), (2, memory), "{layout}");
}

/// A crowded refusal of an item with no copies stands only when no level was added meanwhile:
/// Q, whose buckets are two of a crowded triangle's and whose fingerprint is none of its own,
/// goes on in the level another thread added after this insert first looked at the levels,
/// instead of being refused. The triangle's 13th item matches the triangle's copies, so it is
/// refused there, as a copy is, also after the growth. The control: Q, inserted before the
/// growth, is refused as crowded.
#[test]
fn a_crowded_insert_goes_on_in_a_level_added_since_it_looked() {
    a_crowded_insert_goes_on_in_a_level_added_since_it_looked_in::<Plain>();
    a_crowded_insert_goes_on_in_a_level_added_since_it_looked_in::<SemiSorted>();
}

fn a_crowded_insert_goes_on_in_a_level_added_since_it_looked_in<L: Layout>() {
    let layout = name::<L>();
    let filter = growable::<L>(None);
    let items = filter.crowding_items(0, 0);
    for item in &items[..12] {
        filter.insert(item).unwrap();
    }
    let slots: Vec<(usize, usize, u32)> =
        items.iter().map(|item| filter.slots_for_hash(filter.hasher().hash_one(item))).collect();
    let triangle: Vec<usize> =
        slots.iter().flat_map(|&(first, second, _)| [first, second]).collect();
    let q = (1..=0xFFFE)
        .filter(|fingerprint| slots.iter().all(|&(_, _, own)| own != *fingerprint))
        .map(|fingerprint| filter.hash_for_slot(triangle[0], fingerprint))
        .find(|&hash| {
            let (first, second, _) = filter.slots_for_hash(hash);
            first != second && triangle.contains(&second)
        })
        .unwrap();
    let last = filter.hasher().hash_one(items[12]);
    assert_eq!(filter.insert_hash(last), Err(InsertError::Full), "{layout}");
    assert_eq!(filter.insert_hash(q), Err(InsertError::Full), "{layout}");
    assert!(filter.grow_now(), "{layout}");
    assert_eq!(filter.insert_hash_as_of(1, last), Err(InsertError::Full), "{layout}");
    assert_eq!(filter.insert_hash_as_of(1, q), Ok(()), "{layout}");
    let copies = (copies_in_level(&filter, 0, q), copies_in_level(&filter, 1, q));
    assert_eq!(copies, (0, 1), "{layout}");
    let stats = filter.stats();
    let counts = (stats.refused_inserts, stats.crowded_refusals, stats.levels);
    assert_eq!(counts, (3, 3, 2), "{layout}");
    assert_eq!(filter.len(), 13, "{layout}");
}

/// A pending removal completes at the sweep before a growth once one level alone matches its
/// item: X's surplus copy in level 0 is removed, and nothing stays pending or retained.
#[test]
fn a_growth_first_completes_pending_removals_that_one_level_alone_matches() {
    a_growth_first_completes_pending_removals_that_one_level_alone_matches_in::<Plain>();
    a_growth_first_completes_pending_removals_that_one_level_alone_matches_in::<SemiSorted>();
}

fn a_growth_first_completes_pending_removals_that_one_level_alone_matches_in<L: Layout>() {
    let layout = name::<L>();
    let (filter, x, z) = pending_removal_of_a_collision::<L>();
    assert!(filter.remove_hash(z), "{layout}");
    assert_eq!(filter.count_hash(x), 0, "{layout}: X's surplus copy counted");
    assert_eq!(copies_in_level(&filter, 0, x), 1, "{layout}: X's surplus copy in level 0");
    assert_eq!(filter.stats().pending_removals, 1, "{layout}");
    assert!(filter.grow_now(), "{layout}");
    let stats = filter.stats();
    let removals = (stats.pending_removals, stats.retained_removals);
    assert_eq!(removals, (0, 0), "{layout}: {stats:?}");
    assert_eq!(copies_in_level(&filter, 0, x), 0, "{layout}");
    assert_eq!(filter.len(), 0, "{layout}");
}

/// An insert's last resort (a newest level full when no level can be added) first sweeps the
/// pending removals of every block, the older levels' included: X's removal, recorded in level
/// 1's block and still ambiguous at the growth to level 2, completes there once Z is removed.
#[test]
fn an_inserts_last_resort_first_completes_pending_removals_in_every_block() {
    an_inserts_last_resort_first_completes_pending_removals_in_every_block_in::<Plain>();
    an_inserts_last_resort_first_completes_pending_removals_in_every_block_in::<SemiSorted>();
}

fn an_inserts_last_resort_first_completes_pending_removals_in_every_block_in<L: Layout>() {
    let layout = name::<L>();
    let (filter, x, z) = pending_removal_of_a_collision::<L>();
    assert!(filter.grow_now(), "{layout}");
    assert_eq!(filter.stats().pending_removals, 1, "{layout}: Z still matches X in level 1");
    assert!(filter.remove_hash(z), "{layout}");
    filter.set_max_levels(3);
    let mut accepted = 0;
    for key in 0u64.. {
        assert!(filter.insert(&(1u64 << 63 | key)).is_ok(), "{layout}: refused after {accepted}");
        accepted += 1;
        if filter.stats().pending_removals == 0 {
            break;
        }
    }
    let stats = filter.stats();
    let counts = (stats.pending_removals, stats.retained_removals, stats.levels);
    assert_eq!(counts, (0, 0, 3), "{layout}");
    assert_eq!(copies_in_level(&filter, 0, x), 0, "{layout}");
    // The sweep ran when level 2 was full, not before: 90% of its promise of 16,760 items
    // (16 times level 0's buckets).
    assert!(accepted >= 15_084, "{layout}: {accepted}");
    assert_eq!(filter.len(), accepted, "{layout}");
}

/// Without a memory ceiling, pending removals fill the newest level's block (one entry per 128
/// buckets) and then an overflow block twice its size: the ninth ambiguous remove of a level of
/// 1,116 buckets adds 16 entries, and every remove stays pending.
#[test]
fn pending_removals_fill_the_levels_block_then_an_overflow_block_twice_its_size() {
    pending_removals_fill_the_levels_block_then_an_overflow_block_twice_its_size_in::<Plain>();
    pending_removals_fill_the_levels_block_then_an_overflow_block_twice_its_size_in::<SemiSorted>();
}

fn pending_removals_fill_the_levels_block_then_an_overflow_block_twice_its_size_in<L: Layout>() {
    let layout = name::<L>();
    let (filter, hashes) = full_level_0::<L>(None);
    assert!(filter.grow_now(), "{layout}");
    let memory = filter.memory_usage();
    for (n, &hash) in hashes[..LEVEL_1_ENTRIES].iter().enumerate() {
        split_and_remove(&filter, hash);
        assert_eq!(filter.stats().pending_removals, n as u64 + 1, "{layout}");
        let overflow = format!("{layout}: an overflow block after {} removes", n + 1);
        assert_eq!(filter.memory_usage(), memory, "{overflow}");
    }
    split_and_remove(&filter, hashes[LEVEL_1_ENTRIES]);
    let added = filter.memory_usage() - memory;
    let entries = 2 * LEVEL_1_ENTRIES * size_of::<u64>();
    // Beside its entries, a block's list node: the 30 pointers that list the blocks below it.
    let block = (entries..entries + 320).contains(&added);
    assert!(block, "{layout}: {added} bytes: a block and its node");
    let stats = filter.stats();
    let removes = LEVEL_1_ENTRIES as u64 + 1;
    let removals = (stats.pending_removals, stats.retained_removals);
    assert_eq!(removals, (removes, removes), "{layout}");
    assert_eq!(filter.len(), hashes.len(), "{layout}");
}

/// Under a memory ceiling no overflow block is added: once the level's block is full, an
/// ambiguous remove retains its copy for good, counted out of `len` all the same.
#[test]
fn under_a_memory_ceiling_a_remove_with_no_entry_is_retained_for_good() {
    under_a_memory_ceiling_a_remove_with_no_entry_is_retained_for_good_in::<Plain>();
    under_a_memory_ceiling_a_remove_with_no_entry_is_retained_for_good_in::<SemiSorted>();
}

fn under_a_memory_ceiling_a_remove_with_no_entry_is_retained_for_good_in<L: Layout>() {
    let layout = name::<L>();
    let (filter, hashes) = full_level_0::<L>(Some(1 << 20));
    assert!(filter.grow_now(), "{layout}");
    let memory = filter.memory_usage();
    for &hash in &hashes[..=LEVEL_1_ENTRIES] {
        split_and_remove(&filter, hash);
    }
    assert_eq!(filter.memory_usage(), memory, "{layout}");
    let stats = filter.stats();
    let removes = LEVEL_1_ENTRIES as u64 + 1;
    let removals = (stats.pending_removals, stats.retained_removals);
    assert_eq!(removals, (removes - 1, removes), "{layout}");
    assert_eq!(filter.len(), hashes.len(), "{layout}");
}

/// A pending removal travels in a merge as a removal retained for good, so that the merged
/// filter does not count the removed item.
#[test]
fn a_merge_counts_the_other_filters_pending_removals_as_retained() {
    a_merge_counts_the_other_filters_pending_removals_as_retained_in::<Plain>();
    a_merge_counts_the_other_filters_pending_removals_as_retained_in::<SemiSorted>();
}

fn a_merge_counts_the_other_filters_pending_removals_as_retained_in<L: Layout>() {
    let layout = name::<L>();
    let (other, _, _) = pending_removal_of_a_collision::<L>();
    let into = grown::<L>(2);
    into.merge(&other).unwrap();
    assert_eq!(into.len(), other.len(), "{layout}");
    let stats = into.stats();
    let removals = (stats.pending_removals, stats.retained_removals);
    assert_eq!(removals, (0, 1), "{layout}: {stats:?}");
}

/// A hasher that takes 4 KiB inside its filter.
struct Padded {
    hasher: DefaultHashBuilder,
    _padding: [u8; 4096],
}

impl BuildHasher for Padded {
    type Hasher = DefaultHasher;

    fn build_hasher(&self) -> DefaultHasher {
        self.hasher.build_hasher()
    }
}

/// A filter's `memory_usage`, which its memory ceiling bounds, counts its hasher: a hasher 4 KiB
/// larger takes 4 KiB more, and leaves its levels that much less room.
#[test]
fn the_memory_ceiling_counts_the_hasher() {
    the_memory_ceiling_counts_the_hasher_in::<Plain>();
    the_memory_ceiling_counts_the_hasher_in::<SemiSorted>();
}

fn the_memory_ceiling_counts_the_hasher_in<L: Layout>() {
    const BYTES: usize = 256 << 10;
    let layout = name::<L>();
    let builder = || CuckooFilter::builder().capacity(CAPACITY).max_memory(BYTES).layout::<L>();
    let unpadded = builder().seed(SEED).build();
    let padded = Padded { hasher: DefaultHashBuilder::with_seed(SEED), _padding: [0; 4096] };
    let padded = builder().hasher(padded).build();
    let hasher = size_of::<CuckooFilter<Padded, L>>() - size_of::<Filter<L>>();
    assert!(hasher >= 4096, "{layout}");
    assert_eq!(padded.memory_usage() - unpadded.memory_usage(), hasher, "{layout}");
    while unpadded.grow_now() {}
    while padded.grow_now() {}
    let within = unpadded.memory_usage() <= BYTES && padded.memory_usage() <= BYTES;
    assert!(within, "{layout}");
    let (levels, buckets) = (unpadded.stats().levels, unpadded.bucket_count());
    assert_eq!(padded.stats().levels, levels, "{layout}");
    let padded_buckets = padded.bucket_count();
    assert!(padded_buckets < buckets, "{layout}: {padded_buckets} buckets of {buckets}");
}

/// `clear` forgets every rule's state: pending removals, removals retained for good, overflow
/// blocks and a closed level 0, which takes new items up to its promise again.
#[test]
fn clear_forgets_pending_and_retained_removals_and_reopens_level_0() {
    clear_forgets_pending_and_retained_removals_and_reopens_level_0_in::<Plain>();
    clear_forgets_pending_and_retained_removals_and_reopens_level_0_in::<SemiSorted>();
}

fn clear_forgets_pending_and_retained_removals_and_reopens_level_0_in<L: Layout>() {
    let layout = name::<L>();
    let fresh = growable::<L>(None).memory_usage();
    let (mut pending, hashes) = full_level_0::<L>(None);
    assert!(pending.grow_now(), "{layout}");
    for &hash in &hashes[..=LEVEL_1_ENTRIES] {
        split_and_remove(&pending, hash);
    }
    // A loaded copy keeps the pending removals as retained for good.
    let mut retained = CuckooFilter::builder().layout::<L>().load(&pending.to_bytes()).unwrap();
    let removals = LEVEL_1_ENTRIES as u64 + 1;
    assert_eq!(retained.stats().retained_removals, removals, "{layout}");
    for filter in [&mut pending, &mut retained] {
        assert!(filter.memory_usage() > fresh, "{layout}");
        filter.clear();
        assert_eq!(filter.stats(), Default::default(), "{layout}");
        assert_eq!((filter.len(), filter.memory_usage()), (0, fresh), "{layout}");
    }

    // Level 0 closed at its promise (as in the test above) takes new items to its promise again.
    let seed = CLOSING_SEEDS[0];
    let (mut filter, _, _) = fill_until_growth::<L>(seed);
    filter.clear();
    let mut rng = StdRng::seed_from_u64(!seed);
    while filter.len() < filter.capacity() {
        filter.insert(&rng.random::<u64>()).unwrap();
    }
    assert_eq!(filter.stats().levels, 1, "{layout}: level 0 stayed closed");
}

/// `set_max_levels`: growth stops at the limit (an insert that needs another level is refused,
/// losing nothing), a raised limit lets it go on, a lowered one keeps the levels already added,
/// and 1 keeps a growable filter at level 0.
#[test]
fn growth_stops_at_the_level_limit_and_goes_on_when_it_is_raised() {
    growth_stops_at_the_level_limit_and_goes_on_when_it_is_raised_in::<Plain>();
    growth_stops_at_the_level_limit_and_goes_on_when_it_is_raised_in::<SemiSorted>();
}

fn growth_stops_at_the_level_limit_and_goes_on_when_it_is_raised_in<L: Layout>() {
    let layout = name::<L>();
    let filter = growable::<L>(None);
    filter.set_max_levels(3);
    let mut rng = StdRng::seed_from_u64(SEED);
    let mut inserted = Vec::new();
    let refused = loop {
        let item: u64 = rng.random();
        match filter.insert(&item) {
            Ok(()) => inserted.push(item),
            Err(InsertError::Full) => break item,
            Err(e) => panic!("{layout}: {e}"),
        }
        assert!(inserted.len() < 100_000, "{layout}: no refusal at the limit");
    };
    assert_eq!(filter.stats().levels, 3, "{layout}");
    // Refused at the limit, not before: level 2 took more than its own promise's worth.
    let before = CAPACITY * (1 + 4 + 16) * 9 / 10;
    assert!(inserted.len() > before, "{layout}: {}", inserted.len());
    assert!(inserted.iter().all(|item| filter.contains(item)), "{layout}");
    filter.set_max_levels(4);
    filter.insert(&refused).unwrap();
    assert_eq!(filter.stats().levels, 4, "{layout}");
    filter.set_max_levels(2);
    assert_eq!((filter.max_levels(), filter.stats().levels), (2, 4), "{layout}");
    let stopped = growable::<L>(None);
    stopped.set_max_levels(1);
    assert!((0..100_000u64).any(|item| stopped.insert(&item).is_err()), "{layout}");
    assert_eq!(stopped.stats().levels, 1, "{layout}");
}
