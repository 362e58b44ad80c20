//! Models of windowed filters (`src/windowed/`): the sweep of the dead tag, epoch advances,
//! refreshes and relocations racing lookups, on a manual clock.
//!
//! Three buckets, a = 0, x = 1, b = 2, as in the table's models: fillers sit in one bucket
//! each, an item with buckets {a, b} is the one a path may move, and an item with buckets
//! {a, x} finds both full and needs that move. Epochs are started by hand in the setup
//! (`advance`), so each model begins at the epoch it is about.

use std::sync::Arc;

use lockfree_cuckoo::{CuckooFilter, DefaultHashBuilder, ManualClock, WindowedFilter};
use loom::thread;

use crate::support::{explore, Stage};

type Windowed = WindowedFilter<DefaultHashBuilder>;

const A: usize = 0;
const X: usize = 1;
const B: usize = 2;
const PERIOD: std::time::Duration = std::time::Duration::from_secs(1);

/// An item by its hash.
#[derive(Clone, Copy, Debug)]
struct Item(u64);

impl Item {
    fn insert(self, filter: &Windowed) -> bool {
        filter.insert_hash(self.0).is_ok()
    }

    fn contains(self, filter: &Windowed) -> bool {
        filter.contains_hash(self.0)
    }
}

/// A windowed filter of three buckets on a manual clock, and items with distinct fingerprints.
struct Setup {
    filter: Arc<Windowed>,
    clock: ManualClock,
    next: u32,
}

impl Setup {
    fn new(retries: u32) -> Self {
        let clock = ManualClock::new();
        let filter = CuckooFilter::builder()
            .bucket_count(3)
            .lookup_retries(retries)
            .expire_after(PERIOD * 2)
            .clock(clock.clone())
            .build();
        Self { filter: Arc::new(filter), clock, next: 0 }
    }

    /// An item whose buckets are `first` and `second`.
    fn pick(&mut self, first: usize, second: usize) -> Item {
        loop {
            self.next += 1;
            assert!(self.next < 0x3FFF, "no fingerprint fits these buckets");
            let hash = self.filter.hash_for_slot(first, self.next);
            let (f, s, _) = self.filter.slots_for_hash(hash);
            if (f, s) == (first, second) {
                return Item(hash);
            }
        }
    }

    /// `count` one-bucket items in `bucket`, which no path can move.
    fn fill(&mut self, bucket: usize, count: usize) {
        for _ in 0..count {
            let filler = self.pick(bucket, bucket);
            assert!(filler.insert(&self.filter), "setup: bucket {bucket} has no room");
        }
    }

    /// Starts the next epoch (in the setup, on one thread).
    fn advance(&self) {
        let epoch = self.filter.epoch();
        self.clock.advance(PERIOD);
        self.filter.tick();
        assert_eq!(self.filter.epoch(), epoch + 1, "setup: the epoch did not move");
    }

    /// Makes the next epoch due, for a racing `tick` to start.
    fn make_due(&self) {
        self.clock.advance(PERIOD);
    }
}

fn spawn<T: Send + 'static>(
    filter: &Arc<Windowed>,
    op: impl FnOnce(&Windowed) -> T + Send + 'static,
) -> thread::JoinHandle<T> {
    let filter = Arc::clone(filter);
    thread::spawn(move || op(&filter))
}

/// Model w1: an item of epoch 0 is dead at epoch 3. Two threads tick at once, the one starting
/// epoch 3 and sweeping it, the other trying to start epoch 4, where tag 0 comes back as the
/// current one, and then inserting a fresh item beside the old one. Epoch 4 must not start
/// before the sweep has finished: else the old entry could come back for three more epochs, or
/// the sweep, still emptying tag 0 lanes, could take the fresh item's.
#[test]
fn w1_dead_entry_never_comes_back() {
    explore("w1_dead_entry_never_comes_back", &["epoch 3", "epoch 4"], |seen| {
        let mut setup = Setup::new(2);
        let old = setup.pick(A, B);
        let fresh = setup.pick(A, B);
        assert!(old.insert(&setup.filter));
        setup.advance();
        setup.advance();
        setup.make_due();
        let first = spawn(&setup.filter, |f| f.tick());
        let clock = setup.clock.clone();
        let second = spawn(&setup.filter, move |f| {
            clock.advance(PERIOD);
            f.tick();
            fresh.insert(f)
        });
        first.join().unwrap();
        assert!(second.join().unwrap());
        seen.record(format!("epoch {}", setup.filter.epoch()));
        // Whatever the race left to do, done, and one epoch more: tag 0 is current at 4 and
        // live up to 6, the fresh item's tag (3 or 4) up to 5 or 6.
        setup.filter.tick();
        setup.make_due();
        setup.filter.tick();
        assert!((4..=5).contains(&setup.filter.epoch()));
        assert!(!old.contains(&setup.filter), "an entry of epoch 0 came back");
        assert!(fresh.contains(&setup.filter), "the sweep took a fresh entry");
    });
}

/// Model w2: at epoch 2 an insert needs the path that moves an item of epoch 0 (live, the
/// oldest) from b to a, while another thread starts epoch 3, where that item is dead, and
/// sweeps it, a first. The sweep must not start until the insert, pinned to epoch 2, is done,
/// and an insert that pins after the sweep began must see epoch 3: else the move could land in
/// a after the sweep passed it, and the moved entry come back as current at epoch 4.
#[test]
fn w2_sweep_waits_for_a_move_of_the_epoch_before() {
    let outcomes = &["swept by the racing tick", "left to the next tick"];
    explore("w2_sweep_waits_for_a_move_of_the_epoch_before", outcomes, |seen| {
        let mut setup = Setup::new(2);
        let old = setup.pick(B, A);
        assert!(old.insert(&setup.filter));
        setup.advance();
        setup.advance();
        setup.fill(B, 3);
        setup.fill(X, 4);
        setup.fill(A, 3);
        let new = setup.pick(B, X);
        setup.make_due();
        let inserter = spawn(&setup.filter, move |f| new.insert(f));
        let ticker = spawn(&setup.filter, |f| f.tick());
        // Refused only when the tick started epoch 3 first (the old item is dead then, and no
        // insert moves a dead entry) and held the claim of the buckets the insert needed.
        let inserted = inserter.join().unwrap();
        ticker.join().unwrap();
        let swept = setup.filter.stats().expired_entries > 0;
        seen.record(if swept { "swept by the racing tick" } else { "left to the next tick" });
        setup.filter.tick();
        setup.make_due();
        setup.filter.tick();
        assert_eq!(setup.filter.epoch(), 4);
        assert!(!old.contains(&setup.filter), "the moved entry of epoch 0 came back");
        assert!(!inserted || new.contains(&setup.filter), "N was lost");
    });
}

/// Model w3: a lookup of an item of epoch 2, at epoch 3 (not swept yet, so lookups test the
/// tags), while another thread sweeps epoch 3, starts epoch 4 and refreshes the item (its tag
/// becomes 4, which is dead to a reader still at epoch 3). The item is live throughout: the
/// lookup must find it, reading the epoch again before it answers `false`.
#[test]
fn w3_lookup_vs_advance_and_refresh() {
    explore("w3_lookup_vs_advance_and_refresh", &["before", "within", "after"], |seen| {
        let mut setup = Setup::new(2);
        setup.advance();
        setup.advance();
        let item = setup.pick(A, B);
        assert!(item.insert(&setup.filter));
        setup.make_due();
        assert!(setup.filter.start_epoch_unswept(), "setup: epoch 3 did not start");
        setup.make_due();
        let stage = Arc::new(Stage::default());
        let writer = {
            let stage = Arc::clone(&stage);
            spawn(&setup.filter, move |f| {
                stage.run(|| {
                    f.tick();
                    item.insert(f)
                })
            })
        };
        let reader = spawn(&setup.filter, move |f| stage.watch(|| item.contains(f)));
        let (found, span) = reader.join().unwrap();
        assert!(writer.join().unwrap());
        assert!(found, "false miss of a live item ({})", span.of(1));
        seen.record(span.of(1));
    });
}

/// Model w4: an insert that moves a live item (epoch 2) from a to b races a lookup of it and a
/// tick that starts epoch 3 and sweeps a dead entry out of b. The lookup must find the item.
#[test]
fn w4_relocation_vs_sweep_vs_lookup() {
    explore("w4_relocation_vs_sweep_vs_lookup", &["found"], |seen| {
        let mut setup = Setup::new(2);
        let dead = setup.pick(B, B);
        assert!(dead.insert(&setup.filter));
        setup.advance();
        setup.advance();
        let item = setup.pick(A, B);
        assert!(item.insert(&setup.filter));
        setup.fill(A, 3);
        setup.fill(X, 4);
        setup.fill(B, 1);
        let new = setup.pick(A, X);
        setup.make_due();
        let inserter = spawn(&setup.filter, move |f| new.insert(f));
        let reader = spawn(&setup.filter, move |f| item.contains(f));
        setup.filter.tick();
        assert!(inserter.join().unwrap(), "the insert of N was refused");
        assert!(reader.join().unwrap(), "false miss of the moved item");
        assert!(item.contains(&setup.filter) && new.contains(&setup.filter));
        seen.record("found");
    });
}

/// Model w5: at epoch 3, started by an insert and not swept yet, an item of epoch 0 is dead but
/// still in its bucket. A snapshot races a tick that sweeps it and starts epoch 4, where tag 0
/// is current again. The snapshot must not copy the dead entry and record epoch 4: a filter
/// loaded from it would hold the item as new.
#[test]
fn w5_snapshot_vs_sweep_and_advance() {
    explore("w5_snapshot_vs_sweep_and_advance", &["epoch 3", "epoch 4"], |seen| {
        let mut setup = Setup::new(2);
        let old = setup.pick(A, B);
        assert!(old.insert(&setup.filter));
        setup.advance();
        setup.advance();
        setup.make_due();
        assert!(setup.filter.start_epoch_unswept(), "setup: epoch 3 did not start");
        setup.make_due();
        let ticker = spawn(&setup.filter, |f| f.tick());
        let saver = spawn(&setup.filter, |f| f.to_bytes());
        ticker.join().unwrap();
        let bytes = saver.join().unwrap();
        let loaded: Windowed = CuckooFilter::builder()
            .expire_after(PERIOD * 2)
            .clock(ManualClock::new())
            .load(&bytes)
            .unwrap();
        seen.record(format!("epoch {}", loaded.epoch()));
        assert!(!old.contains(&loaded), "a dead entry came back in the snapshot");
    });
}

/// Model w6: at epoch 3, not swept yet, an item of epoch 0 is dead but still in its bucket.
/// Two threads sweep the table in two claims while a third looks the item up. The claim that
/// completes the sweep flags the epoch word, and a lookup that reads the flag matches lanes
/// whatever their tag: the flag must not be set before every claim is swept, and must carry
/// the sweep of the other claim, or the lookup finds the dead entry.
#[test]
fn w6_lookup_vs_the_sweep_that_flags_the_epoch() {
    explore("w6_lookup_vs_the_sweep_that_flags_the_epoch", &["absent"], |seen| {
        let mut setup = Setup::new(2);
        let old = setup.pick(A, A);
        assert!(old.insert(&setup.filter));
        setup.advance();
        setup.advance();
        setup.make_due();
        assert!(setup.filter.start_epoch_unswept(), "setup: epoch 3 did not start");
        // The first claim takes bucket a, where the dead entry is; the other the rest.
        let one = spawn(&setup.filter, |f| f.sweep_claim(1));
        let two = spawn(&setup.filter, |f| f.sweep_claim(2));
        let reader = spawn(&setup.filter, move |f| old.contains(f));
        assert!(one.join().unwrap() && two.join().unwrap(), "a claim found nothing to sweep");
        assert!(!reader.join().unwrap(), "the lookup found an entry dead at epoch 3");
        assert!(!old.contains(&setup.filter));
        seen.record("absent");
    });
}
