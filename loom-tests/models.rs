//! loom models of the concurrent protocol in `src/table/`.
//!
//! Each model builds a tiny table through the hidden builder options, crafts items whose
//! fingerprints and buckets force the exact relocations it needs, and races the crate's real
//! `insert_hash` / `contains_hash` / `remove_hash` on it. See `loom-tests/README.md` for how to
//! run the suite and what each model proves.
//!
//! The one-hop layout most models share has three buckets, a = 0, x = 1, b = 2:
//!
//! ```text
//! a = [A, fa, fa, fa]   A's other bucket is b
//! x = [fx, fx, fx, fx]
//! b = [fb, .., free lanes]
//! ```
//!
//! The fillers live in one bucket only, so no path search can move them. An item N with buckets
//! {a, x} finds both full; the only path moves A from a to b, then N takes A's old lane.

#![cfg(loom)]

mod expiry;
mod growth;
mod support;

use std::sync::Arc;

use loom::thread;
use support::{explore, table, Filter, Item, Items, Stage};

const A: usize = 0;
const X: usize = 1;
const B: usize = 2;

struct OneHop {
    filter: Arc<Filter>,
    items: Items,
    /// The fingerprint the insert of `n` must move from a to b.
    a: Item,
    /// A filler of bucket a.
    fa: Item,
    /// Buckets {a, x}: inserting it needs the one-hop path.
    n: Item,
    /// Items stored besides `a`.
    fillers: usize,
}

fn one_hop(retries: u32, free_in_b: usize) -> OneHop {
    let filter = table(3, retries);
    let mut items = Items::default();
    let a = items.pick(&filter, A, B);
    assert!(a.insert(&filter));
    let fa = items.fill(&filter, A, 3);
    items.fill(&filter, X, 4);
    items.fill(&filter, B, 4 - free_in_b);
    let n = items.pick(&filter, A, X);
    OneHop { filter, items, a, fa, n, fillers: 11 - free_in_b }
}

/// Runs `op` on a new loom thread with its own handle on the filter.
fn spawn<T: Send + 'static>(
    filter: &Arc<Filter>,
    op: impl FnOnce(&Filter) -> T + Send + 'static,
) -> thread::JoinHandle<T> {
    let filter = Arc::clone(filter);
    thread::spawn(move || op(&filter))
}

/// Saves `filter` while `writers` run, joins them (each must succeed), loads the copy, and
/// returns how many copies of `item` it holds (at least one: the copy must not lose it) and how
/// many buckets writers captured for the scan.
fn snapshot_copies(
    filter: &Filter,
    item: Item,
    writers: Vec<thread::JoinHandle<bool>>,
) -> (usize, u64) {
    let mut bytes = Vec::new();
    let info = filter.write_to(&mut bytes).unwrap();
    for writer in writers {
        assert!(writer.join().unwrap());
    }
    let loaded = support::load(&bytes).unwrap();
    let copies = item.count(&loaded);
    assert!(copies >= 1, "the snapshot lost {item:?}: {info:?}");
    (copies, info.captured_by_writers)
}

/// The relocation counters after the threads joined, as an outcome label.
fn moves(filter: &Filter) -> String {
    let stats = filter.stats();
    format!(
        "moved {}, surplus {}, path retries {}",
        stats.relocations, stats.surplus_removals, stats.path_retries
    )
}

/// One reader of A (`read`, on its own thread) while the insert of N moves A from a to b, one
/// retry allowed. `dst_first` reads b before a, the order in which a move can hide the
/// fingerprint from both reads; the other order meets a fingerprint held outside the table.
/// Returns the filter, A, what the reader saw, and how it overlapped the move.
fn read_during_one_relocation<T: Send + 'static>(
    dst_first: bool,
    read: fn(Item, &Filter) -> T,
) -> (Arc<Filter>, Item, T, &'static str) {
    let OneHop { filter, a, n, .. } = one_hop(1, 1);
    let target = if dst_first { a.flipped(&filter) } else { a };
    let stage = Arc::new(Stage::default());
    let mover = {
        let stage = Arc::clone(&stage);
        spawn(&filter, move |f| stage.run(|| n.insert(f)))
    };
    let reader = spawn(&filter, move |f| stage.watch(|| read(target, f)));
    let (answer, span) = reader.join().unwrap();
    assert!(mover.join().unwrap());
    (filter, a, answer, span.of(1))
}

/// Model 1: a lookup of A while an insert moves A. Either read order must answer true, and one
/// move can cost it at most one retry.
fn lookup_vs_one_relocation(name: &str, dst_first: bool) {
    explore(name, &["before", "within", "across", "after"], move |seen| {
        let (filter, _, found, overlap) = read_during_one_relocation(dst_first, Item::contains);
        assert!(found, "false miss, lookup {overlap} the relocation");
        let stats = filter.stats();
        assert_eq!(stats.relocations, 1);
        assert_eq!(stats.conservative_lookups, 0, "one move exhausted a retry budget of one");
        seen.record(overlap);
    });
}

/// The suite was built for the layout this run asks for (`support::Filter`): a suite built
/// for one layout never passes for the other.
#[test]
fn the_models_run_on_the_layout_asked_for() {
    let asked = std::env::var("LFC_LOOM_ENCODING").unwrap_or_else(|_| "plain".into());
    loom::model(move || assert_eq!(table(1, 1).encoding().name(), asked));
}

#[test]
fn m1_lookup_vs_relocation_src_first() {
    lookup_vs_one_relocation("m1_lookup_vs_relocation_src_first", false);
}

#[test]
fn m1_lookup_vs_relocation_dst_first() {
    lookup_vs_one_relocation("m1_lookup_vs_relocation_dst_first", true);
}

/// Model 2: A shuttles a -> b -> a (insert N, remove N, insert M with buckets {b, x}) while
/// a reader looks A up in both read orders; each move is the dangerous one for one order.
#[test]
fn m2_lookup_vs_move_and_move_back() {
    let expected = [
        "a-first within move 1",
        "a-first within move 2",
        "b-first within move 1",
        "b-first within move 2",
    ];
    explore("m2_lookup_vs_move_and_move_back", &expected, |seen| {
        let OneHop { filter, mut items, a, n, .. } = one_hop(1, 1);
        let m = items.pick(&filter, B, X);
        let stage = Arc::new(Stage::default());
        let mover = {
            let stage = Arc::clone(&stage);
            spawn(&filter, move |f| {
                stage.run(|| n.insert(f)) && n.remove(f) && stage.run(|| m.insert(f))
            })
        };
        let targets = [("a-first", a), ("b-first", a.flipped(&filter))];
        let reader = spawn(&filter, move |f| targets.map(|(_, t)| stage.watch(|| t.contains(f))));
        for ((order, _), (found, span)) in targets.into_iter().zip(reader.join().unwrap()) {
            assert!(found, "false miss, {order} lookup {span:?} the moves");
            for k in [1, 2] {
                seen.record(format!("{order} {} move {k}", span.of(k)));
            }
        }
        assert!(mover.join().unwrap());
        assert_eq!(filter.stats().relocations, 2);
        assert_eq!(a.count(&filter), 1);
    });
}

/// Model 3: two inserts whose paths both move A from a to b (b has room for both copies),
/// plus a reader. A must end with exactly one copy; the lane A frees goes to one insert and
/// the other is refused.
#[test]
fn m3_two_movers_of_one_fingerprint() {
    let expected = ["n1 stored", "n2 stored", "surplus removed"];
    explore("m3_two_movers_of_one_fingerprint", &expected, |seen| {
        let OneHop { filter, mut items, a, n: n1, fillers, .. } = one_hop(1, 2);
        let n2 = items.pick(&filter, A, X);
        let first = spawn(&filter, move |f| n1.insert(f));
        let second = spawn(&filter, move |f| n2.insert(f));
        assert!(a.flipped(&filter).contains(&filter), "false miss");
        let stored = [first.join().unwrap(), second.join().unwrap()];
        assert_eq!(a.count(&filter), 1, "copies of A: {}", moves(&filter));
        assert_eq!(n1.count(&filter) + n2.count(&filter), 1);
        assert_eq!(stored, [n1.count(&filter) == 1, n2.count(&filter) == 1]);
        assert_eq!(filter.len(), fillers + 2);
        seen.record(if stored[0] { "n1 stored" } else { "n2 stored" });
        if filter.stats().surplus_removals > 0 {
            seen.record("surplus removed");
        }
    });
}

/// Model 4: a remove of A (reading b first) against the insert whose path moves A. The remove
/// must succeed and leave no copy, whether it takes A before, during or after the move.
#[test]
fn m4_relocation_vs_remove() {
    let expected = [
        "moved 0, surplus 0, path retries 0",
        "moved 0, surplus 0, path retries 1",
        "moved 0, surplus 1, path retries 1",
        "moved 1, surplus 0, path retries 0",
    ];
    explore("m4_relocation_vs_remove", &expected, |seen| {
        let OneHop { filter, a, n, fillers, .. } = one_hop(1, 1);
        let inserter = spawn(&filter, move |f| n.insert(f));
        assert!(a.flipped(&filter).remove(&filter), "remove missed a moving fingerprint");
        assert!(inserter.join().unwrap());
        assert_eq!(a.count(&filter), 0, "{}", moves(&filter));
        assert_eq!(n.count(&filter), 1);
        assert_eq!(filter.len(), fillers + 1);
        seen.record(moves(&filter));
    });
}

/// Model 5: a second copy of A inserted while the insert of N moves A; b has two free lanes.
/// Both inserts succeed and A ends with two copies, however the lanes were shared out.
#[test]
fn m5_relocation_vs_insert_of_same_fingerprint() {
    let expected = ["moved 1, surplus 0, path retries 0", "moved 2, surplus 0, path retries 1"];
    explore("m5_relocation_vs_insert_of_same_fingerprint", &expected, |seen| {
        let OneHop { filter, a, n, fillers, .. } = one_hop(1, 2);
        let inserter = spawn(&filter, move |f| n.insert(f));
        assert!(a.insert(&filter));
        assert!(inserter.join().unwrap());
        assert_eq!(a.count(&filter), 2, "{}", moves(&filter));
        assert_eq!(n.count(&filter), 1);
        assert_eq!(filter.len(), fillers + 3);
        seen.record(moves(&filter));
    });
}

/// Model 6: a remove of a filler in bucket a, a CAS on a neighbouring lane of the word the
/// move's removal CAS targets, plus a reader of A. No lane update may be lost, and the
/// reader must still see the move's bump through the neighbour's write.
#[test]
fn m6_neighbour_lane_cas_during_removal() {
    let expected = ["moved 0 within", "moved 1 within", "moved 1 before", "moved 1 across"];
    explore("m6_neighbour_lane_cas_during_removal", &expected, |seen| {
        let OneHop { filter, a, fa, n, .. } = one_hop(1, 1);
        let stage = Arc::new(Stage::default());
        let mover = {
            let stage = Arc::clone(&stage);
            spawn(&filter, move |f| stage.run(|| n.insert(f)))
        };
        let neighbour = spawn(&filter, move |f| fa.remove(f));
        let target = a.flipped(&filter);
        let (found, span) =
            spawn(&filter, move |f| stage.watch(|| target.contains(f))).join().unwrap();
        let overlap = span.of(1);
        assert!(found, "false miss, lookup {overlap} the relocation");
        assert!(mover.join().unwrap());
        assert!(neighbour.join().unwrap());
        assert_eq!(fa.count(&filter), 2, "{}", moves(&filter));
        assert_eq!(a.count(&filter), 1);
        assert_eq!(n.count(&filter), 1);
        seen.record(format!("moved {} {overlap}", filter.stats().relocations));
    });
}

/// Model 7: an insert whose path has two hops, committed last hop first (B from b to c, then
/// A from a to b), against a lookup of each displaced fingerprint in its dangerous read order.
/// Four buckets: a = 0, x = 1, b = 2, c = 3.
#[test]
fn m7_two_hop_insert_vs_lookups() {
    let expected = ["A within, B within", "A before, B after", "A after, B before"];
    explore("m7_two_hop_insert_vs_lookups", &expected, |seen| {
        let (a, x, b, c) = (0, 1, 2, 3);
        let filter = table(4, 1);
        let mut items = Items::default();
        let item_a = items.pick(&filter, a, b);
        let item_b = items.pick(&filter, b, c);
        assert!(item_a.insert(&filter) && item_b.insert(&filter));
        items.fill(&filter, a, 3);
        items.fill(&filter, x, 4);
        items.fill(&filter, b, 3);
        items.fill(&filter, c, 3);
        let n = items.pick(&filter, a, x);
        let stage = Arc::new(Stage::default());
        let mover = {
            let stage = Arc::clone(&stage);
            spawn(&filter, move |f| stage.run(|| n.insert(f)))
        };
        let readers = [item_a, item_b].map(|item| {
            let (stage, target) = (Arc::clone(&stage), item.flipped(&filter));
            spawn(&filter, move |f| stage.watch(|| target.contains(f)))
        });
        let [(found_a, span_a), (found_b, span_b)] = readers.map(|r| r.join().unwrap());
        let (overlap_a, overlap_b) = (span_a.of(1), span_b.of(1));
        assert!(found_a, "false miss of A, lookup {overlap_a} the path");
        assert!(found_b, "false miss of B, lookup {overlap_b} the path");
        assert!(mover.join().unwrap());
        assert_eq!(filter.stats().insert_paths[2], 1, "not a two-hop path");
        assert_eq!((item_a.count(&filter), item_b.count(&filter)), (1, 1));
        assert_eq!((filter.fingerprint_count(b, item_a.fingerprint), n.count(&filter)), (1, 1));
        seen.record(format!("A {overlap_a}, B {overlap_b}"));
    });
}

/// Model 8: an item S whose two buckets coincide, sharing bucket a with A while the insert of
/// N moves A out; S is looked up, removed and looked up again. No path may "move" S onto its
/// own bucket, S's single-bucket reads must validate like any other, and its version stripe
/// is the one A's move bumps.
#[test]
fn m8_item_with_one_bucket() {
    let expected = ["moved 0", "moved 1"];
    explore("m8_item_with_one_bucket", &expected, |seen| {
        let filter = table(3, 1);
        let mut items = Items::default();
        let a = items.pick(&filter, A, B);
        let s = items.pick(&filter, A, A);
        assert!(s.insert(&filter) && a.insert(&filter));
        items.fill(&filter, A, 2);
        items.fill(&filter, X, 4);
        items.fill(&filter, B, 3);
        let n = items.pick(&filter, A, X);
        let inserter = spawn(&filter, move |f| n.insert(f));
        assert!(s.contains(&filter), "false miss of a one-bucket item");
        assert!(s.remove(&filter));
        assert!(!s.contains(&filter), "removed one-bucket item still found");
        assert!(inserter.join().unwrap());
        assert_eq!((s.count(&filter), a.count(&filter), n.count(&filter)), (0, 1, 1));
        seen.record(format!("moved {}", filter.stats().relocations));
    });
}

/// Model 9: a lookup with no retries (budget 0) reading b first while A moves from a to b.
/// When the move hides A from both reads, the budget is exhausted and the lookup must answer
/// true (counted as conservative), never false.
#[test]
fn m9_lookup_retry_budget_exhausted() {
    explore("m9_lookup_retry_budget_exhausted", &["proved", "conservative"], |seen| {
        let OneHop { filter, a, n, .. } = one_hop(0, 1);
        let mover = spawn(&filter, move |f| n.insert(f));
        assert!(a.flipped(&filter).contains(&filter), "false miss with the budget exhausted");
        assert!(mover.join().unwrap());
        let conservative = filter.stats().conservative_lookups;
        assert!(conservative <= 1);
        seen.record(if conservative == 1 { "conservative" } else { "proved" });
    });
}

/// Model 10: three inserts race for the last two free lanes (both in b): N needs the path that
/// moves A into b, Y (buckets {b, a}) and Z (buckets {b, x}) can take a lane of b directly.
/// Exactly two are accepted and present, the refused one left no trace, and `len` agrees.
#[test]
fn m10_inserts_race_for_last_free_lanes() {
    let expected = ["n refused", "y refused", "z refused"];
    explore("m10_inserts_race_for_last_free_lanes", &expected, |seen| {
        let OneHop { filter, mut items, a, n, fillers, .. } = one_hop(1, 2);
        let y = items.pick(&filter, B, A);
        let z = items.pick(&filter, B, X);
        let threads = [spawn(&filter, move |f| n.insert(f)), spawn(&filter, move |f| z.insert(f))];
        let y_stored = y.insert(&filter);
        let [n_stored, z_stored] = threads.map(|t| t.join().unwrap());
        for (name, item, stored) in [("n", n, n_stored), ("y", y, y_stored), ("z", z, z_stored)] {
            assert_eq!(item.count(&filter), usize::from(stored), "{name}: {}", moves(&filter));
            assert_eq!(item.contains(&filter), stored, "{name}");
            if !stored {
                seen.record(format!("{name} refused"));
            }
        }
        assert_eq!(usize::from(n_stored) + usize::from(y_stored) + usize::from(z_stored), 2);
        assert_eq!(a.count(&filter), 1);
        assert_eq!(filter.len(), fillers + 3);
    });
}

/// Model 11: the move's source copy is taken by a remove, and while the mover removes its now
/// surplus copy, another insert moves A back from b to a. A single unvalidated scan of a then b
/// misses the copy in flight and leaves A in the table after its only copy was removed.
#[test]
fn m11_surplus_removal_vs_move_back() {
    let expected = ["moved 1, surplus 1", "moved 2, surplus 0", "moved 0, surplus 1"];
    explore("m11_surplus_removal_vs_move_back", &expected, |seen| {
        let OneHop { filter, mut items, a, n, fillers, .. } = one_hop(1, 1);
        let m = items.pick(&filter, B, X);
        let remover = spawn(&filter, move |f| a.remove(f));
        let back = spawn(&filter, move |f| m.insert(f));
        let n_stored = n.insert(&filter);
        assert!(remover.join().unwrap(), "remove missed a moving fingerprint");
        let m_stored = back.join().unwrap();
        let stats = filter.stats();
        let label = format!("moved {}, surplus {}", stats.relocations, stats.surplus_removals);
        assert_eq!(a.count(&filter), 0, "removed A is still in the table: {label}");
        assert_eq!((n.count(&filter), m.count(&filter)), (n_stored.into(), m_stored.into()));
        let stored = usize::from(n_stored) + usize::from(m_stored);
        assert_eq!(filter.len(), fillers + stored);
        seen.record(label);
    });
}

/// Colliding items: X and Y share a fingerprint and the pair {home, away}; Y's first bucket is
/// `home`, X's is `away`. X's only copy is in `home`, which is full; `away` has room. The writer
/// inserts Y (it lands in `away`) and then removes Y (it takes the copy in `home`, its first
/// bucket): as copies are interchangeable, a move of X from `home` to `away`, which must be
/// announced like a relocation. The reader looks X up through `first`, reading that bucket first.
fn colliding_insert_remove_vs_lookup(name: &str, home: usize, away: usize, read_away_first: bool) {
    let expected = ["before, before", "across, before", "across, across"];
    explore(name, &expected, move |seen| {
        let filter = table(3, 1);
        let mut items = Items::default();
        let y = items.pick(&filter, home, away);
        let x = y.flipped(&filter);
        assert!(x.insert(&filter), "setup: X lands in its first bucket");
        assert!(x.remove(&filter) && y.insert(&filter), "setup: X's copy moves to `home`");
        items.fill(&filter, home, 3);
        let other = 3 - home - away;
        items.fill(&filter, other, 4);
        items.fill(&filter, away, 2);
        let target = if read_away_first { x } else { y };
        let stage = Arc::new(Stage::default());
        let writer = {
            let stage = Arc::clone(&stage);
            spawn(&filter, move |f| stage.run(|| y.insert(f)) && stage.run(|| y.remove(f)))
        };
        let (found, span) = stage.watch(|| target.contains(&filter));
        assert!(
            found,
            "false miss of X, lookup {} the insert, {} the remove",
            span.of(1),
            span.of(2)
        );
        assert!(writer.join().unwrap());
        assert_eq!(y.count(&filter), 1, "X keeps exactly one copy");
        seen.record(format!("{}, {}", span.of(1), span.of(2)));
    });
}

/// Model 12: the lookup reads `away` first, the order in which the unannounced move hides X.
#[test]
fn m12_colliding_insert_remove_vs_lookup_away_first() {
    colliding_insert_remove_vs_lookup(
        "m12_colliding_insert_remove_vs_lookup_away_first",
        A,
        B,
        true,
    );
}

/// Model 12, mirrored: X's copy in the higher bucket, the lookup again reading `away` first, so
/// the pair's stripe (bucket a's) is not the reader's first bucket's: a stripe keyed by the
/// first bucket fails here.
#[test]
fn m12_colliding_insert_remove_vs_lookup_mirrored() {
    colliding_insert_remove_vs_lookup("m12_colliding_insert_remove_vs_lookup_mirrored", B, A, true);
}

/// Model 12, the other read order: `home` first.
#[test]
fn m12_colliding_insert_remove_vs_lookup_home_first() {
    colliding_insert_remove_vs_lookup(
        "m12_colliding_insert_remove_vs_lookup_home_first",
        A,
        B,
        false,
    );
}

/// Model 13: the same key inserted twice and removed once against a snapshot. K's first bucket
/// is b (full, holding K's copy), its second a (room). The second insert lands in a, the remove
/// takes the copy in b: a scan that read a before the insert and b after the remove would lose
/// K unless the remover captures b for it.
#[test]
fn m13_repeated_key_vs_snapshot() {
    let expected = ["1 copies, 0 captured", "2 copies, 0 captured", "2 copies, 1 captured"];
    explore("m13_repeated_key_vs_snapshot", &expected, |seen| {
        let filter = table(3, 1);
        let mut items = Items::default();
        let k = items.pick(&filter, B, A);
        assert!(k.insert(&filter));
        items.fill(&filter, B, 3);
        items.fill(&filter, X, 4);
        items.fill(&filter, A, 2);
        let writer = spawn(&filter, move |f| k.insert(f) && k.remove(f));
        let (copies, captured) = snapshot_copies(&filter, k, vec![writer]);
        assert_eq!(k.count(&filter), 1);
        seen.record(format!("{copies} copies, {captured} captured"));
    });
}

/// Model 14: a relocation's surplus removal against a colliding insert and remove. The insert
/// of N moves A from a to b while the main thread removes A, so the mover's source copy is gone
/// and it must remove its surplus copy; meanwhile Y (A's fingerprint and pair, first bucket b)
/// is inserted and removed. Every removal is announced, so the surplus removal cannot give up
/// on a copy moved under it: A's fingerprint ends with no copy at all.
#[test]
fn m14_colliding_insert_remove_vs_surplus_removal() {
    let expected = ["moved 1, surplus 0", "moved 0, surplus 1"];
    explore("m14_colliding_insert_remove_vs_surplus_removal", &expected, |seen| {
        let OneHop { filter, a, n, fillers, .. } = one_hop(1, 2);
        let y = a.flipped(&filter);
        let mover = spawn(&filter, move |f| n.insert(f));
        let collider = spawn(&filter, move |f| y.insert(f) && y.remove(f));
        assert!(a.remove(&filter), "remove missed A");
        assert!(mover.join().unwrap());
        assert!(collider.join().unwrap());
        let stats = filter.stats();
        let label = format!("moved {}, surplus {}", stats.relocations, stats.surplus_removals);
        assert_eq!(
            a.count(&filter),
            0,
            "copies left of a fingerprint removed as often as inserted: {label}"
        );
        assert_eq!(n.count(&filter), 1);
        assert_eq!(filter.len(), fillers + 1);
        seen.record(label);
    });
}

/// Model 15: a remove of X against a colliding insert and remove of Y (same fingerprint and
/// pair, opposite first bucket) on another thread. The remove of X must find a copy, whichever
/// one it takes and wherever Y's copy lands, and none may be left.
#[test]
fn m15_colliding_insert_remove_vs_remove() {
    let expected = ["before, before", "across, before", "across, across"];
    explore("m15_colliding_insert_remove_vs_remove", &expected, |seen| {
        let filter = table(3, 1);
        let mut items = Items::default();
        let y = items.pick(&filter, A, B);
        let x = y.flipped(&filter);
        assert!(y.insert(&filter), "setup: X's copy in a");
        items.fill(&filter, A, 3);
        items.fill(&filter, X, 4);
        items.fill(&filter, B, 2);
        let stage = Arc::new(Stage::default());
        let writer = {
            let stage = Arc::clone(&stage);
            spawn(&filter, move |f| stage.run(|| y.insert(f)) && stage.run(|| y.remove(f)))
        };
        let (removed, span) = stage.watch(|| x.remove(&filter));
        assert!(removed, "remove missed X, {} the insert, {} the remove", span.of(1), span.of(2));
        assert!(writer.join().unwrap());
        assert_eq!(x.count(&filter), 0, "a copy is left after two inserts and two removes");
        seen.record(format!("{}, {}", span.of(1), span.of(2)));
    });
}

/// A snapshot racing the insert of N, which moves A between a and b in the direction given.
fn snapshot_vs_relocation(name: &str, src: usize, dst: usize, back: bool, expected: &[&str]) {
    explore(name, expected, move |seen| {
        let filter = table(3, 1);
        let mut items = Items::default();
        let a = items.pick(&filter, src, dst);
        assert!(a.insert(&filter));
        items.fill(&filter, src, 3);
        items.fill(&filter, X, 4);
        items.fill(&filter, dst, 3);
        let n = items.pick(&filter, src, X);
        let m = items.pick(&filter, dst, X);
        let mover = spawn(&filter, move |f| n.insert(f) && (!back || (n.remove(f) && m.insert(f))));
        let (copies, captured) = snapshot_copies(&filter, a, vec![mover]);
        assert_eq!(a.count(&filter), 1);
        seen.record(format!("{copies} copies, {captured} captured"));
    });
}

/// Model 16: A moves from b to a, into the bucket the pass reads first: the hazard's direction.
#[test]
fn m16_snapshot_vs_relocation_behind_the_pass() {
    snapshot_vs_relocation(
        "m16_snapshot_vs_relocation_behind_the_pass",
        B,
        A,
        false,
        &["1 copies, 0 captured", "1 copies, 1 captured", "2 copies, 0 captured"],
    );
}

/// Model 16, the benign direction: A moves ahead of the pass.
#[test]
fn m16_snapshot_vs_relocation_ahead_of_the_pass() {
    snapshot_vs_relocation(
        "m16_snapshot_vs_relocation_ahead_of_the_pass",
        A,
        B,
        false,
        &["1 copies, 0 captured", "2 copies, 0 captured"],
    );
}

/// Model 17: A moves behind the pass and back again.
#[test]
fn m17_snapshot_vs_move_and_move_back() {
    snapshot_vs_relocation(
        "m17_snapshot_vs_move_and_move_back",
        B,
        A,
        true,
        &["1 copies, 0 captured", "1 copies, 1 captured"],
    );
}

/// Model 18: a snapshot, the insert of N moving A from bucket 1 into bucket 2 (A's pair {1, 2}:
/// stripe 1), and a remove of Z (pair {2, 0}: stripe 0) from bucket 2. The scan starts on
/// stripe 0 before stripe 1, so Z's remover can see the scan running before A's move has
/// announced on stripe 1; if it captured bucket 2 then, without A's copy-in, and the move then
/// removed A's source copy uncaptured, the snapshot would hold A nowhere.
#[test]
fn m18_snapshot_vs_relocation_and_other_stripe_remove() {
    let expected = ["1 copies, 0 captured", "1 copies, 1 captured", "2 copies, 1 captured"];
    explore("m18_snapshot_vs_relocation_and_other_stripe_remove", &expected, |seen| {
        let (x, a_home, b_dest) = (0, 1, 2);
        let filter = table(3, 1);
        let mut items = Items::default();
        let a = items.pick(&filter, a_home, b_dest);
        let z = items.pick(&filter, b_dest, x);
        assert!(a.insert(&filter) && z.insert(&filter));
        items.fill(&filter, a_home, 3);
        items.fill(&filter, x, 4);
        items.fill(&filter, b_dest, 2);
        let n = items.pick(&filter, a_home, x);
        let mover = spawn(&filter, move |f| n.insert(f));
        let remover = spawn(&filter, move |f| z.remove(f));
        let (copies, captured) = snapshot_copies(&filter, a, vec![mover, remover]);
        seen.record(format!("{copies} copies, {captured} captured"));
    });
}

/// Model 19: `count` of A (one copy) while an insert moves A, in both read orders as in the
/// first model. A count never falls below the copies present throughout (here 1); it may see the
/// copy the move has put in before it took the source copy out (2).
fn count_vs_one_relocation(name: &str, dst_first: bool) {
    explore(name, &["before", "within", "across", "after"], move |seen| {
        let (filter, a, copies, overlap) = read_during_one_relocation(dst_first, Item::counted);
        assert!(copies >= 1, "under-count {copies}, count {overlap} the relocation");
        assert!(copies <= 2, "over-count {copies}, count {overlap} the relocation");
        assert_eq!(a.counted(&filter), 1);
        seen.record(overlap);
    });
}

#[test]
fn m19_count_vs_relocation_src_first() {
    count_vs_one_relocation("m19_count_vs_relocation_src_first", false);
}

#[test]
fn m19_count_vs_relocation_dst_first() {
    count_vs_one_relocation("m19_count_vs_relocation_dst_first", true);
}
