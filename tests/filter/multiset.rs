//! Multisets: copies of one item in fixed and grown filters, in both bucket encodings. An
//! item's copies stay in one level, a copy that does not fit there is refused as a fixed filter
//! refuses it, removes never run past the copies, and `len` is always accepted inserts minus
//! removes that answered `true`; checked by examples past the limit of eight copies and by
//! random sequences against a model multiset.

use std::collections::HashMap;
use std::hash::BuildHasher;

use lockfree_cuckoo::{CuckooFilter, DefaultHashBuilder, InsertError, Layout, Plain, SemiSorted};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

type Filter<L> = CuckooFilter<DefaultHashBuilder, L>;

/// `L`'s name, for the messages.
fn name<L: Layout>() -> &'static str {
    std::any::type_name::<L>().rsplit("::").next().unwrap_or("?")
}

/// A growable filter of 1,000 items under a fixed seed, filled with distinct integers until it
/// has `levels` levels (at least 500 of them), and how many it accepted.
fn grown<L: Layout>(levels: usize) -> (Filter<L>, usize) {
    let filter = CuckooFilter::builder().capacity(1_000).seed(7).layout::<L>().growable().build();
    let mut accepted = 0;
    for filler in 0u64.. {
        if filter.stats().levels >= levels && filler >= 500 {
            break;
        }
        accepted += usize::from(filter.insert(&filler).is_ok());
    }
    assert_eq!(filter.stats().levels, levels, "{}: the fill overshot", name::<L>());
    (filter, accepted)
}

/// The item of the `k` copies test: a string no filler matches in any level (no false
/// positive), so that every count and answer is the item's own.
fn fresh_item<L: Layout>(filter: &Filter<L>, k: usize) -> String {
    (0..).map(|n| format!("dup {k} {n}")).find(|item| !filter.contains(item)).unwrap()
}

/// The example, for k = 1 to 24 copies in filters of 1, 2 and 3 levels: the first
/// eight copies are accepted and the rest refused (`Full`, counted), as in a fixed filter; the
/// first removes take them all and every later one answers `false`; the item is then absent and
/// `len`, the stats' pending and retained removals and `is_empty` are back where they were.
#[test]
#[cfg_attr(miri, ignore = "thousands of items")]
fn copies_past_eight_are_refused_and_removes_never_run_past_the_copies() {
    copies_past_eight_are_refused_and_removes_never_run_past_the_copies_in::<Plain>();
    copies_past_eight_are_refused_and_removes_never_run_past_the_copies_in::<SemiSorted>();
}

fn copies_past_eight_are_refused_and_removes_never_run_past_the_copies_in<L: Layout>() {
    let encoding = name::<L>();
    for levels in 1..=3 {
        let (filter, fillers) = grown::<L>(levels);
        for k in 1..=24 {
            let item = fresh_item(&filter, k);
            let refused_before = filter.stats().refused_inserts;
            let accepted = (0..k).filter(|_| filter.insert(&item).is_ok()).count();
            let case = format!("{encoding}, {levels} levels, {k} copies");
            assert_eq!(accepted, k.min(8), "{case}: accepted");
            let refused = filter.stats().refused_inserts - refused_before;
            assert_eq!(refused, (k - accepted) as u64, "{case}: refusals counted");
            assert_eq!(filter.count(&item), accepted, "{case}: count");
            assert_eq!(filter.len(), fillers + accepted, "{case}: len");
            let answers: Vec<bool> = (0..k + 3).map(|_| filter.remove(&item)).collect();
            let taken = answers.iter().take_while(|&&answer| answer).count();
            assert_eq!(taken, accepted, "{case}: removes answering true: {answers:?}");
            assert!(answers[taken..].iter().all(|&answer| !answer), "{case}: {answers:?}");
            assert_eq!(filter.count(&item), 0, "{case}: count after the removes");
            assert!(!filter.contains(&item), "{case}: present after the removes");
            assert_eq!(filter.len(), fillers, "{case}: len after the removes");
            let stats = filter.stats();
            assert_eq!((stats.pending_removals, stats.retained_removals), (0, 0), "{case}");
            assert!(!filter.is_empty(), "{case}");
        }
    }
}

/// The first refusal of a fixed filter and a grown one is the same for an item's copies: a
/// crowded refusal never falls through to another level, so no copy of a refused item lands
/// elsewhere.
#[test]
#[cfg_attr(miri, ignore = "thousands of items")]
fn a_refused_copy_goes_to_no_other_level() {
    a_refused_copy_goes_to_no_other_level_in::<Plain>();
    a_refused_copy_goes_to_no_other_level_in::<SemiSorted>();
}

fn a_refused_copy_goes_to_no_other_level_in<L: Layout>() {
    let encoding = name::<L>();
    let (filter, _) = grown::<L>(3);
    for item in 0..200u64 {
        let item = ("crowd", item);
        let copies = (0..12).filter(|_| filter.insert(&item).is_ok()).count();
        assert!(copies <= 8, "{encoding}: {copies} copies accepted");
        let hash = filter.hasher().hash_one(item);
        let levels_holding = (0..3)
            .filter(|&level| {
                let (first, second, fingerprint) = filter.slots_for_hash_in_level(level, hash);
                filter.fingerprint_count_in_level(level, first, fingerprint)
                    + filter.fingerprint_count_in_level(level, second, fingerprint)
                    > 0
            })
            .count();
        // An item whose buckets other items' eight copies fill is refused all its copies.
        // A filler colliding in another level would count too: as rare as a false
        // positive, and the seed is fixed.
        let expected = usize::from(copies > 0);
        assert_eq!(levels_holding, expected, "{encoding}: item {item:?}: {copies} copies");
    }
}

/// One step of a random multiset session.
#[derive(Clone, Copy, Debug)]
enum Op {
    Insert(usize),
    /// An insert as a thread makes it that loaded the levels before the last growths: its copy
    /// may land in level 0 while the item's other copies are in a newer level.
    InsertStale(usize),
    Remove(usize),
    /// Filler items until the filter has one more level.
    Grow,
    /// Save and load; a clone. Skipped while removals are pending (a copy keeps them as
    /// retained for good, no longer per item).
    Reload,
    Clone,
}

fn op(rng: &mut StdRng, keys: usize) -> Op {
    let key = rng.random_range(0..keys);
    match rng.random_range(0..100) {
        0..40 => Op::Insert(key),
        40..48 => Op::InsertStale(key),
        48..94 => Op::Remove(key),
        94..96 => Op::Grow,
        96..98 => Op::Reload,
        _ => Op::Clone,
    }
}

/// `n` keys whose fingerprints differ from each other's (a fingerprint is the same in every
/// level), so that no key ever matches another's copies and the model is exact.
fn distinct_keys<L: Layout>(filter: &Filter<L>, n: usize, offset: u64) -> Vec<u64> {
    let mut fingerprints = std::collections::HashSet::new();
    (offset..)
        .map(|key| (key, filter.slots_for_hash(filter.hasher().hash_one(key)).2))
        .filter(|&(_, fingerprint)| fingerprints.insert(fingerprint))
        .map(|(key, _)| key)
        .take(n)
        .collect()
}

/// Random sessions of inserts (up to and past eight copies), stale inserts that split copies
/// across levels, removes (also of removed items), growth forced by fillers, reloads and
/// clones, against a model multiset: every answer, `count`, `contains` and `len` exact after
/// every step, refused inserts counted as not made, and never more than eight copies.
#[test]
#[cfg_attr(miri, ignore = "too slow under Miri")]
fn random_sessions_match_a_model_multiset_in_grown_filters() {
    random_sessions_match_a_model_multiset_in_grown_filters_in::<Plain>();
    random_sessions_match_a_model_multiset_in_grown_filters_in::<SemiSorted>();
}

fn random_sessions_match_a_model_multiset_in_grown_filters_in<L: Layout>() {
    let encoding = name::<L>();
    let mut reached = Reached::default();
    for seed in 0..40 {
        session::<L>(seed, &mut reached);
    }
    // The sessions went where the properties are at stake.
    assert!(reached.levels >= 3, "{encoding}: {reached:?}");
    assert!(reached.pending > 0 && reached.refused > 0, "{encoding}: {reached:?}");
    assert!(reached.removes_false_after_copies > 0, "{encoding}: {reached:?}");
}

/// The most levels, pending removals and refusals the sessions saw, and how many removes found
/// an item whose copies had all been removed.
#[derive(Debug, Default)]
struct Reached {
    levels: usize,
    pending: u64,
    refused: u64,
    removes_false_after_copies: usize,
}

fn session<L: Layout>(seed: u64, reached: &mut Reached) {
    let encoding = name::<L>();
    let mut rng = StdRng::seed_from_u64(seed);
    let build = || CuckooFilter::builder().capacity(40).seed(seed).layout::<L>();
    let mut filter = build().growable().build();
    // Keys and fillers with distinct fingerprints, drawn from disjoint ranges.
    let all = distinct_keys(&filter, 16 + 20_000, 0);
    let (keys, fillers) = all.split_at(16);
    let mut fillers = fillers.iter();
    let mut model: HashMap<u64, usize> = HashMap::new();
    let mut filled = 0;
    for step in 0..1_500 {
        let op = op(&mut rng, keys.len());
        let case = format!("{encoding}, seed {seed}, step {step}, {op:?}");
        match op {
            Op::Insert(i) | Op::InsertStale(i) => {
                let hash = filter.hasher().hash_one(keys[i]);
                let pending_before = filter.stats().pending_removals;
                let inserted = match op {
                    Op::InsertStale(_) => filter.insert_hash_as_of(1, hash),
                    _ => filter.insert_hash(hash),
                };
                let copies = model.entry(keys[i]).or_default();
                match inserted {
                    // A fresh insert never stores a copy past eight, wherever they are (one that
                    // claims a pending removal stores none: it takes back a stale copy).
                    Ok(()) if matches!(op, Op::Insert(_)) => {
                        let claimed = filter.stats().pending_removals < pending_before;
                        assert!(*copies < 8 || claimed, "{case}: a copy stored beside {copies}");
                        *copies += 1;
                    }
                    Ok(()) => *copies += 1,
                    Err(InsertError::Full) => {}
                    Err(e) => panic!("{case}: {e}"),
                }
                // A stale insert's copy in level 0 stays beside the item's in a newer level
                // (up to eight in each).
                assert!(*copies <= 16, "{case}: {copies} copies");
            }
            Op::Remove(i) => {
                let copies = model.entry(keys[i]).or_default();
                reached.removes_false_after_copies += usize::from(*copies == 0);
                assert_eq!(filter.remove(&keys[i]), *copies > 0, "{case}: remove");
                *copies = copies.saturating_sub(1);
            }
            Op::Grow => {
                let levels = filter.stats().levels;
                while filter.stats().levels == levels && filter.stats().levels < 5 {
                    filled += usize::from(filter.insert(fillers.next().unwrap()).is_ok());
                }
            }
            Op::Reload | Op::Clone if filter.stats().pending_removals == 0 => {
                filter = match op {
                    Op::Reload => build().load(&filter.to_bytes()).unwrap(),
                    _ => filter.clone(),
                };
            }
            Op::Reload | Op::Clone => {}
        }
        let stats = filter.stats();
        reached.levels = reached.levels.max(stats.levels);
        reached.pending = reached.pending.max(stats.pending_removals);
        reached.refused = reached.refused.max(stats.refused_inserts);
        let held: usize = model.values().sum();
        assert_eq!(filter.len(), held + filled, "{case}: len");
        for (key, &copies) in &model {
            assert_eq!(filter.count(key), copies, "{case}: count of {key}");
            assert_eq!(filter.contains(key), copies > 0, "{case}: contains {key}");
        }
    }
}

/// Copies split across two levels (an insert that raced a growth): each remove takes one, the
/// last settles them all, and a further remove answers `false`.
#[test]
fn copies_split_across_levels_are_all_taken_by_as_many_removes() {
    copies_split_across_levels_are_all_taken_by_as_many_removes_in::<Plain>();
    copies_split_across_levels_are_all_taken_by_as_many_removes_in::<SemiSorted>();
}

fn copies_split_across_levels_are_all_taken_by_as_many_removes_in<L: Layout>() {
    let encoding = name::<L>();
    let filter = CuckooFilter::builder().capacity(100).seed(3).layout::<L>().growable().build();
    assert!(filter.grow_now());
    let hash = filter.hasher().hash_one("split");
    for _ in 0..3 {
        filter.insert_hash(hash).unwrap();
    }
    for _ in 0..2 {
        filter.insert_hash_as_of(1, hash).unwrap();
    }
    let (first, second, fingerprint) = filter.slots_for_hash(hash);
    let in_level_0 = filter.fingerprint_count(first, fingerprint)
        + usize::from(first != second) * filter.fingerprint_count(second, fingerprint);
    assert_eq!(in_level_0, 2, "{encoding}: setup");
    for left in (0..5).rev() {
        assert!(filter.remove_hash(hash), "{encoding}: remove with {} copies", left + 1);
        assert_eq!(filter.count_hash(hash), left, "{encoding}");
        assert_eq!(filter.len(), left, "{encoding}");
    }
    assert!(!filter.remove_hash(hash), "{encoding}: a remove past the copies");
    assert!(!filter.contains_hash(hash), "{encoding}");
    let stats = filter.stats();
    assert_eq!((stats.pending_removals, stats.retained_removals), (0, 0), "{encoding}");
    assert!(filter.is_empty(), "{encoding}");
}

/// Emptiness is read from the tables: while a pending removal's copy stays, `len` is 0 but the
/// filter is not empty (a dump of it carries that copy); once the removal is completed (here by
/// the item's next remove, since one level alone matches then), it is.
#[test]
fn a_filter_holding_a_pending_copy_is_not_empty() {
    a_filter_holding_a_pending_copy_is_not_empty_in::<Plain>();
    a_filter_holding_a_pending_copy_is_not_empty_in::<SemiSorted>();
}

fn a_filter_holding_a_pending_copy_is_not_empty_in<L: Layout>() {
    let encoding = name::<L>();
    let (filter, x, y) = (0..).find_map(colliding_in_the_newest_level_only::<L>).unwrap();
    filter.insert_hash(y).unwrap();
    assert!(filter.remove_hash(x), "{encoding}");
    assert_eq!(filter.stats().pending_removals, 1, "{encoding}: x's remove was exact");
    assert!(filter.remove_hash(y), "{encoding}");
    assert_eq!(filter.len(), 0, "{encoding}");
    assert!(!filter.is_empty(), "{encoding}: empty while x's copy stays");
    assert!(!filter.remove_hash(x), "{encoding}: a remove past x's copies");
    assert_eq!(filter.stats().pending_removals, 0, "{encoding}: not settled");
    assert!(filter.is_empty(), "{encoding}");
}

/// A filter grown to three levels under `seed` holding x in level 0, and y, not inserted, whose
/// fingerprint and pair match x's in level 2 only; `None` if this seed's x has no such y.
fn colliding_in_the_newest_level_only<L: Layout>(seed: u64) -> Option<(Filter<L>, u64, u64)> {
    let filter = CuckooFilter::builder().capacity(100).seed(seed).layout::<L>().growable().build();
    let x = filter.hasher().hash_one("x");
    filter.insert_hash(x).unwrap();
    assert!(filter.grow_now() && filter.grow_now());
    // From the other end of x's pair there: a level's first bucket determines the older
    // levels'.
    let (_, second, fingerprint) = filter.slots_for_hash_in_level(2, x);
    let y = filter.hash_for_slot_in_level(2, second, fingerprint);
    let apart = |level| {
        let (x_first, x_second, _) = filter.slots_for_hash_in_level(level, x);
        let (y_first, y_second, _) = filter.slots_for_hash_in_level(level, y);
        ![x_first, x_second].iter().any(|bucket| [y_first, y_second].contains(bucket))
    };
    (apart(0) && apart(1)).then_some((filter, x, y))
}
