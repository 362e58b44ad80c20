//! loom models of growth (`src/levels/`, `src/published.rs`): lookups, inserts, removes, a relocation and a
//! snapshot racing the allocation and publication of new levels, inserts racing to grow, and two
//! growths back to back.
//!
//! Most models start from a growable filter whose level 0 is one bucket holding A and three
//! one-bucket fillers, so it is full: the next insert must add level 1 (four buckets), and a
//! growth after that adds level 2 (sixteen). `grow_now` (a test hook) adds a level on demand, as
//! an insert that finds the newest level full does. A growth moves nothing, so what the models
//! check is the publication: that a level is seen built, that every level stays in the chain,
//! and that concurrent growths add exactly one level. A level's list of the older ones is a loom
//! cell, so a publication or a lookup whose ordering is too weak fails with a causality
//! violation when a reader reads a new level's list.

use std::sync::Arc;

use crate::spawn;
use crate::support::{self, colliding_in_level_1_only, explore, Filter, Item, Items, Stage};

/// A growable filter whose one-bucket level 0 is full: A and three fillers.
fn full_first_level(retries: u32) -> (Arc<Filter>, Items, Item) {
    let filter = Arc::new(support::builder(1, retries).growable().build());
    let mut items = Items::default();
    let a = items.pick(&filter, 0, 0);
    assert!(a.insert(&filter));
    items.fill(&filter, 0, 3);
    (filter, items, a)
}

/// Model g1: a lookup of A (in level 0) while another thread adds two levels back to back and
/// then inserts N (into level 2). A is never missed, N is found once its insert returned, and
/// the filter ends with exactly three levels.
#[test]
fn g1_lookup_vs_two_growths() {
    explore("g1_lookup_vs_two_growths", &["before", "within", "across", "after"], |seen| {
        let (filter, mut items, a) = full_first_level(1);
        let n = items.pick(&filter, 0, 0);
        let stage = Arc::new(Stage::default());
        let grower = {
            let stage = Arc::clone(&stage);
            spawn(&filter, move |f| stage.run(|| f.grow_now() && f.grow_now() && n.insert(f)))
        };
        let reader = spawn(&filter, move |f| stage.watch(|| a.contains(f)));
        let (found, span) = reader.join().unwrap();
        assert!(found, "false miss of A, lookup {} the growths", span.of(1));
        assert!(grower.join().unwrap());
        assert!(n.contains(&filter));
        let stats = filter.stats();
        assert_eq!(stats.levels, 3);
        assert_eq!(stats.discarded_levels, 0);
        assert_eq!(filter.len(), 5);
        seen.record(span.of(1));
    });
}

/// Model g2: two inserts find level 0 full at once and both grow it. Both succeed, exactly one
/// level is added, and the race where both built a level (one freed unused) is explored.
#[test]
fn g2_inserts_race_to_grow() {
    explore("g2_inserts_race_to_grow", &["discarded 0", "discarded 1"], |seen| {
        let (filter, mut items, a) = full_first_level(1);
        let (n1, n2) = (items.pick(&filter, 0, 0), items.pick(&filter, 0, 0));
        let first = spawn(&filter, move |f| n1.insert(f));
        let second = spawn(&filter, move |f| n2.insert(f));
        assert!(first.join().unwrap() && second.join().unwrap(), "an insert was refused");
        assert!(a.contains(&filter) && n1.contains(&filter) && n2.contains(&filter), "lost");
        assert_eq!(n1.counted(&filter) + n2.counted(&filter), 2);
        let stats = filter.stats();
        assert_eq!(stats.levels, 2);
        assert_eq!(filter.len(), 6);
        seen.record(format!("discarded {}", stats.discarded_levels));
    });
}

/// Model g3: a remove of A (in the full level 0) against an insert that grows the filter,
/// unless the remove freed a lane first. The remove always finds A; A ends absent, N present.
#[test]
fn g3_remove_vs_growth() {
    explore("g3_remove_vs_growth", &["grew", "no growth"], |seen| {
        let (filter, mut items, a) = full_first_level(1);
        let n = items.pick(&filter, 0, 0);
        let inserter = spawn(&filter, move |f| n.insert(f));
        let remover = spawn(&filter, move |f| a.remove(f));
        assert!(remover.join().unwrap(), "the remove missed A");
        assert!(inserter.join().unwrap());
        assert_eq!(a.counted(&filter), 0);
        assert_eq!(n.counted(&filter), 1);
        assert_eq!(filter.len(), 4);
        let levels = filter.stats().levels;
        seen.record(if levels == 2 { "grew" } else { "no growth" });
    });
}

/// Model g4: in a three-bucket level 0, an insert of N whose only room is behind a one-hop path
/// (moving A from a to b) races a growth; a third thread looks A up. Whether N relocates A in
/// level 0 or lands in the new level, A is never missed and nothing is lost.
#[test]
fn g4_relocation_vs_growth_vs_lookup() {
    const A: usize = 0;
    const X: usize = 1;
    const B: usize = 2;
    explore("g4_relocation_vs_growth_vs_lookup", &["moved 1", "moved 0"], |seen| {
        let filter = Arc::new(support::builder(3, 1).growable().build());
        let mut items = Items::default();
        let a = items.pick(&filter, A, B);
        assert!(a.insert(&filter));
        items.fill(&filter, A, 3);
        items.fill(&filter, X, 4);
        items.fill(&filter, B, 3);
        let n = items.pick(&filter, A, X);
        let inserter = spawn(&filter, move |f| n.insert(f));
        let grower = spawn(&filter, |f| f.grow_now());
        let reader = spawn(&filter, move |f| a.flipped(f).contains(f));
        assert!(reader.join().unwrap(), "false miss of A");
        assert!(inserter.join().unwrap() && grower.join().unwrap());
        assert_eq!(a.counted(&filter), 1);
        assert_eq!(n.counted(&filter), 1);
        assert_eq!(filter.len(), 12);
        assert_eq!(filter.stats().levels, 2);
        seen.record(format!("moved {}", filter.stats().relocations));
    });
}

/// Model g5: a snapshot while another thread adds a level and inserts M into it. A (level 0)
/// and N (level 1, inserted before) are in the loaded copy whichever levels the snapshot saw.
/// (Two growths here make the scan of a 64-bucket level 3: past loom's path limit.)
#[test]
fn g5_snapshot_vs_growth() {
    explore("g5_snapshot_vs_growth", &["levels 2", "levels 3"], |seen| {
        let (filter, mut items, a) = full_first_level(1);
        let (n, m) = (items.pick(&filter, 0, 0), items.pick(&filter, 0, 0));
        assert!(filter.grow_now() && n.insert(&filter));
        let writer = spawn(&filter, move |f| f.grow_now() && m.insert(f));
        // On a thread of its own: loom explored a snapshot on the main thread only after the
        // writer had finished (one execution).
        let saver = spawn(&filter, |f| f.to_bytes());
        let bytes = saver.join().unwrap();
        assert!(writer.join().unwrap());
        let loaded = support::load(&bytes).unwrap();
        assert!(a.contains(&loaded) && n.contains(&loaded), "the snapshot lost an item");
        let levels = loaded.stats().levels;
        assert!(m.insert(&loaded), "the loaded copy does not take inserts");
        seen.record(format!("levels {levels}"));
    });
}

/// Model g6: A has one copy in level 0 and one in level 1 (its level was full when it was
/// inserted again after a growth); two removes of A race. Neither can tell whose each copy is,
/// so each records a pending removal, and the one that makes them as many as the copies takes
/// both (whichever announces last counts both entries): both answer `true`, A ends with no copy
/// and nothing pending, and a third remove answers `false` (removes never run past the copies).
#[test]
fn g6_removes_of_copies_in_two_levels_take_them_all() {
    explore("g6_removes_of_copies_in_two_levels_take_them_all", &["seen"], |seen| {
        let (filter, _, a) = full_first_level(1);
        assert!(filter.grow_now());
        assert!(a.insert(&filter));
        assert_eq!(a.count_in_level(&filter, 1), 1, "setup: A's copy is not in level 1");
        let first = spawn(&filter, move |f| a.remove(f));
        let second = spawn(&filter, move |f| a.remove(f));
        assert!(first.join().unwrap() && second.join().unwrap(), "a remove found nothing");
        assert_removed_to(&filter, a, 3);
        seen.record("seen");
    });
}

/// After as many removes of A as inserts: a further remove answers `false`, A has no copy left,
/// nothing is pending, and `len` is `len`, the items beside A.
fn assert_removed_to(filter: &Filter, a: Item, len: usize) {
    assert!(!a.remove(filter), "a remove ran past the copies");
    assert_eq!(a.counted(filter), 0);
    assert!(!a.contains(filter), "A's copies were left behind");
    let stats = filter.stats();
    assert_eq!((stats.pending_removals, stats.retained_removals), (0, 0));
    assert_eq!(filter.len(), len);
}

/// Model g13: two threads each insert A, look it up and remove it, and one of them adds a level
/// first, so that its insert may land in level 1 while the other's lands in level 0 (an insert
/// racing a growth). Each lookup after its own thread's insert finds A, both removes answer
/// `true`, and A ends with no copy and nothing pending; a further remove answers `false`.
#[test]
fn g13_copies_inserted_and_removed_across_a_growth() {
    explore("g13_copies_inserted_and_removed_across_a_growth", &["level 0", "level 1"], |seen| {
        let filter = Arc::new(support::builder(1, 1).growable().build());
        let mut items = Items::default();
        let a = items.pick(&filter, 0, 0);
        items.fill(&filter, 0, 2);
        let early = spawn(&filter, move |f| a.insert(f) && a.contains(f) && a.remove(f));
        let late = spawn(&filter, move |f| {
            assert!(f.grow_now() && a.insert(f));
            let in_level_1 = a.count_in_level(f, 1) > 0;
            (a.contains(f) && a.remove(f), in_level_1)
        });
        assert!(early.join().unwrap(), "false miss of A after its insert, or a remove missed");
        let (late_ok, in_level_1) = late.join().unwrap();
        assert!(late_ok, "false miss of A after its insert, or a remove missed");
        assert_removed_to(&filter, a, 2);
        seen.record(if in_level_1 { "level 1" } else { "level 0" });
    });
}

/// A growable filter of `buckets` buckets, grown once, holding X in level 0, and an item that
/// collides with X in level 1 only (the same fingerprint and pair there, another pair in level
/// 0), not yet inserted.
fn collision_across_levels(buckets: usize) -> (Arc<Filter>, Item, Item) {
    let build = || Arc::new(support::builder(buckets, 1).growable().build());
    // Crafted on a grown twin (hashes map to the same slots in tables of the same sizes), so
    // that the model's filter can take X into level 0 before it grows.
    let twin = build();
    assert!(twin.grow_now());
    let (x, y) = colliding_in_level_1_only(&twin, twin.bucket_count() - buckets);
    let filter = build();
    assert!(x.insert(&filter) && filter.grow_now());
    (filter, x, y)
}

/// Model g7: X has two copies in level 0 of a grown filter. An insert of X (which joins level 0,
/// where its copies are) races a remove of X and a count. The remove takes a copy exactly (one
/// level holds X's copies), X never counts fewer than one copy, and X ends with two copies, all
/// in level 0, none retained.
#[test]
fn g7_insert_joins_its_level_vs_remove() {
    explore("g7_insert_joins_its_level_vs_remove", &["count 1", "count 3"], |seen| {
        let filter = Arc::new(support::builder(1, 1).growable().build());
        let x = Items::default().pick(&filter, 0, 0);
        assert!(x.insert(&filter) && x.insert(&filter));
        assert!(filter.grow_now());
        let inserter = spawn(&filter, move |f| x.insert(f));
        let remover = spawn(&filter, move |f| x.remove(f));
        let counter = spawn(&filter, move |f| x.counted(f));
        let counted = counter.join().unwrap();
        assert!(counted >= 1, "X counted {counted} while one copy was present throughout");
        assert!(inserter.join().unwrap() && remover.join().unwrap());
        assert_eq!(x.counted(&filter), 2);
        assert_eq!(filter.fingerprint_count_in_level(0, 0, x.fingerprint), 2, "X left level 0");
        assert_eq!(filter.stats().retained_removals, 0, "a remove of X was not exact");
        assert_eq!(filter.len(), 2);
        seen.record(format!("count {counted}"));
    });
}

/// Model g8: X is in level 0; Y collides with X in level 1 only. An insert of Y (into level 1)
/// races a remove of X. The remove either takes X's copy (it did not see Y's) or, seeing
/// matches in two levels, leaves a pending removal; it never takes Y's copy, so Y's lookup after
/// its insert and at the end finds it.
#[test]
fn g8_remove_vs_colliding_insert_in_another_level() {
    explore("g8_remove_vs_colliding_insert_in_another_level", &["taken", "pending"], |seen| {
        let (filter, x, y) = collision_across_levels(2);
        let inserter = spawn(&filter, move |f| y.insert(f) && y.contains(f));
        let remover = spawn(&filter, move |f| x.remove(f));
        assert!(inserter.join().unwrap(), "false miss of Y after its insert");
        assert!(remover.join().unwrap(), "the remove missed X");
        assert!(y.contains(&filter), "the remove of X took Y's only copy");
        assert_eq!(filter.len(), 1);
        let stats = filter.stats();
        assert_eq!(stats.pending_removals, stats.retained_removals);
        seen.record(if stats.pending_removals == 0 { "taken" } else { "pending" });
    });
}

/// Model g9: Y (one copy) and three fillers fill level 0; X has Y's fingerprint, so it matches
/// Y in level 0 but has another pair in level 1. One thread grows the filter, inserts X (into
/// level 1: its match in level 0 is in a full level) and removes X, which finds matches in two
/// levels and records a pending removal; another removes Y (one level holds its matches);
/// a third inserts X, claiming the pending removal if it sees it, and looks X up. The claim
/// must show it the copy in level 1 it now owns, whatever it saw of Y's remove.
#[test]
fn g9_insert_claims_a_pending_removal() {
    explore("g9_insert_claims_a_pending_removal", &["claimed", "stored"], |seen| {
        let filter = Arc::new(support::builder(1, 1).growable().build());
        let mut items = Items::default();
        let (x, y) = matching_in_level_0_only(&filter, items.pick(&filter, 0, 0).fingerprint);
        assert!(y.insert(&filter));
        items.fill(&filter, 0, 3);
        let inserted = |f: &Filter| f.stats().insert_paths.iter().sum::<u64>();
        let before = inserted(&filter);
        let churner = spawn(&filter, move |f| f.grow_now() && x.insert(f) && x.remove(f));
        let remover = spawn(&filter, move |f| y.remove(f));
        let claimer = spawn(&filter, move |f| x.insert(f) && x.contains(f));
        assert!(claimer.join().unwrap(), "false miss of X after its insert");
        assert!(churner.join().unwrap() && remover.join().unwrap());
        assert!(x.contains(&filter));
        assert_eq!(filter.len(), 4);
        seen.record(if inserted(&filter) == before + 1 { "claimed" } else { "stored" });
    });
}

/// Two items of fingerprint `fingerprint` in a one-bucket level 0 (where any two such items
/// match) whose pairs in level 1 differ, crafted on a grown twin of `filter`.
fn matching_in_level_0_only(filter: &Filter, fingerprint: u32) -> (Item, Item) {
    let twin = Arc::new(support::builder(filter.bucket_count(), 1).growable().build());
    assert!(twin.grow_now());
    let at = |bucket: usize| {
        let hash = twin.hash_for_slot_in_level(1, bucket, fingerprint);
        let (first, second, _) = twin.slots_for_hash_in_level(1, hash);
        (Item { hash, fingerprint, first: 0, second: 0 }, first.min(second), first.max(second))
    };
    let (x, x_pair) = {
        let (x, low, high) = at(0);
        (x, (low, high))
    };
    let level_1_buckets = twin.bucket_count() - filter.bucket_count();
    let y = (1..level_1_buckets)
        .map(at)
        .find(|&(_, low, high)| (low, high) != x_pair)
        .expect("no bucket of level 1 gives another pair")
        .0;
    (x, y)
}

/// Model g10: a pending removal of X whose colliding item in level 1 has since been removed, so
/// that only level 0 matches X. A growth sweeps it (removing X's surplus copy) while an insert of
/// X claims it or stores a copy; either way exactly one thread owns the surplus, and X is
/// present after its insert and ends with one copy.
#[test]
fn g10_sweep_vs_claim() {
    explore("g10_sweep_vs_claim", &["claimed", "stored"], |seen| {
        let (filter, x, y) = collision_across_levels(2);
        assert!(y.insert(&filter) && x.remove(&filter) && y.remove(&filter));
        assert_eq!(filter.stats().pending_removals, 1, "setup: the remove of X was not pending");
        let inserted = |f: &Filter| f.stats().insert_paths.iter().sum::<u64>();
        let before = inserted(&filter);
        let sweeper = spawn(&filter, |f| f.grow_now());
        let inserter = spawn(&filter, move |f| x.insert(f) && x.contains(f));
        assert!(inserter.join().unwrap(), "false miss of X after its insert");
        assert!(sweeper.join().unwrap());
        assert_eq!(x.counted(&filter), 1);
        let stats = filter.stats();
        assert_eq!((stats.pending_removals, stats.retained_removals), (0, 0));
        assert_eq!(filter.len(), 1);
        seen.record(if inserted(&filter) == before { "claimed" } else { "stored" });
    });
}

/// Model g11: the two entries of level 1's block of pending removals are taken (X1 and X2, split
/// across levels and removed), so the remove of X3 adds an overflow block to record its own while
/// another thread inserts X3, claiming that entry if it sees it, and looks X3 up. A claim through
/// an overflow block shows the claimer the copy it now owns, and the block is seen built.
#[test]
fn g11_pending_removal_in_an_overflow_block() {
    explore("g11_pending_removal_in_an_overflow_block", &["claimed", "stored"], |seen| {
        let filter = Arc::new(support::builder(1, 1).growable().build());
        let mut items = Items::default();
        let split: Vec<Item> = (0..3).map(|_| items.pick(&filter, 0, 0)).collect();
        items.fill(&filter, 0, 1);
        assert!(split.iter().all(|x| x.insert(&filter)) && filter.grow_now());
        assert!(split.iter().all(|x| x.insert(&filter)), "setup: level 1 refused a copy");
        assert!(split[0].remove(&filter) && split[1].remove(&filter));
        assert_eq!(filter.stats().pending_removals, 2, "setup: the removes were not pending");
        let x = split[2];
        let inserted = |f: &Filter| f.stats().insert_paths.iter().sum::<u64>();
        let before = inserted(&filter);
        let remover = spawn(&filter, move |f| x.remove(f));
        let claimer = spawn(&filter, move |f| x.insert(f) && x.contains(f));
        assert!(claimer.join().unwrap(), "false miss of X3 after its insert");
        assert!(remover.join().unwrap());
        assert_eq!(filter.stats().retained_removals - filter.stats().pending_removals, 0);
        assert_eq!(filter.len(), 5);
        seen.record(if inserted(&filter) == before { "claimed" } else { "stored" });
    });
}

/// Model g12: in a grown filter, an insert of M joins level 0, which holds M's copy, and its only
/// room there is behind a one-hop path (moving A from a to b); a remove of A races it, reading b
/// first. The remove reads both levels in one pass and must validate level 0's read: whether it
/// runs before, during or after the move, it finds A and takes it from level 0.
#[test]
fn g12_remove_vs_relocation_in_an_older_level() {
    const A: usize = 0;
    const X: usize = 1;
    const B: usize = 2;
    explore("g12_remove_vs_relocation_in_an_older_level", &["moved 1", "moved 0"], |seen| {
        let filter = Arc::new(support::builder(3, 1).growable().build());
        let mut items = Items::default();
        let a = items.pick(&filter, A, B);
        let m = items.pick(&filter, A, X);
        assert!(a.insert(&filter) && m.insert(&filter));
        items.fill(&filter, A, 2);
        items.fill(&filter, X, 4);
        items.fill(&filter, B, 3);
        assert!(filter.grow_now());
        let inserter = spawn(&filter, move |f| m.insert(f));
        let remover = spawn(&filter, move |f| a.flipped(f).remove(f));
        assert!(remover.join().unwrap(), "the remove missed A");
        assert!(inserter.join().unwrap());
        assert_eq!(a.counted(&filter), 0);
        assert_eq!(m.count(&filter), 2, "a copy of M left level 0");
        assert_eq!(filter.len(), 11);
        seen.record(format!("moved {}", filter.stats().relocations));
    });
}
