//! Stress tests for items that share a fingerprint and a bucket pair ("colliding" items), the
//! case where copies of one fingerprint move between the two buckets without a relocation: an
//! insert lands in one bucket and a remove takes the copy in the other. Lookups, removes,
//! relocations and snapshots must all see such a move, in both bucket layouts (a semi-sorted
//! write also re-sorts the copies that stay in its bucket).
//!
//! Every scenario is built from crafted items (through `hash_for_slot`/`slots_for_hash`, never
//! the hash mapping itself) in small tables: one-bucket "fillers" that no path can move keep
//! chosen buckets full, and a "collision" is one fingerprint reached through either bucket of its
//! pair. The thread roles:
//!
//! - a *collider* loops `insert(item)` then `remove(item)` on one thread, so its insert
//!   happens-before its remove and the fingerprint's count never drops below the stable copies;
//! - a *relocator* is a collider over a bucket's filler: inserting one more copy into a full
//!   bucket needs a path that relocates the colliding fingerprint out of it;
//! - a *reader* loops `contains` over the stable items, in both read orders of each pair;
//! - a *snapshotter* loops `to_bytes`/`write_to` and `Builder::load`, checking the loaded copy.
//!
//! Items the main thread inserts before the workers start are stable: never removed while the
//! workers run, so they must always be found. At the end every count must be exact.
//!
//! Each test runs every scenario once per layout, in a short default variant and a long
//! `#[ignore]`d one for release builds:
//! `cargo test --release --test growth -- --ignored --nocapture collisions::`.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use lockfree_cuckoo::{CuckooFilter, DefaultHashBuilder, Layout, Plain, SemiSorted};

type Filter<L> = CuckooFilter<DefaultHashBuilder, L>;

/// `L`'s name, for the messages.
fn name<L: Layout>() -> &'static str {
    std::any::type_name::<L>().rsplit("::").next().unwrap_or("?")
}

/// Duration of the default variants' plain runs (under the test profile's opt-level 1).
const SHORT: Duration = Duration::from_secs(1);
/// Duration of the default variants' semi-sorted runs: shorter, so that the default run of the
/// suite stays short; the long variants give both layouts [`LONG`].
const SHORT_SEMI_SORTED: Duration = Duration::from_millis(500);
/// Duration of the `#[ignore]`d variants, per layout, run in release.
const LONG: Duration = Duration::from_secs(20);
/// Fillers that make a bucket full together with one copy of the colliding fingerprint.
const FULL: usize = 3;

/// One item as the table sees it: a pre-hashed key, its fingerprint and its two buckets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Item {
    hash: u64,
    fingerprint: u32,
    first: usize,
    second: usize,
}

impl Item {
    fn new<L: Layout>(filter: &Filter<L>, primary: usize, fingerprint: u32) -> Item {
        let hash = filter.hash_for_slot(primary, fingerprint);
        let (first, second, fingerprint) = filter.slots_for_hash(hash);
        Item { hash, fingerprint, first, second }
    }

    /// The same fingerprint and pair reached through the other bucket: lookups and removes scan
    /// `first` before `second`, so this is the other read order.
    fn flipped<L: Layout>(self, filter: &Filter<L>) -> Item {
        let flipped = Item::new(filter, self.second, self.fingerprint);
        assert_eq!(
            (flipped.first, flipped.second, flipped.fingerprint),
            (self.second, self.first, self.fingerprint),
            "setup: the alternate bucket is not an involution"
        );
        flipped
    }

    /// Copies of the fingerprint over both buckets of the pair.
    fn copies<L: Layout>(self, filter: &Filter<L>) -> usize {
        let second = if self.second == self.first {
            0
        } else {
            filter.fingerprint_count(self.second, self.fingerprint)
        };
        filter.fingerprint_count(self.first, self.fingerprint) + second
    }

    fn insert<L: Layout>(self, filter: &Filter<L>) -> bool {
        filter.insert_hash(self.hash).is_ok()
    }

    fn contains<L: Layout>(self, filter: &Filter<L>) -> bool {
        filter.contains_hash(self.hash)
    }

    fn remove<L: Layout>(self, filter: &Filter<L>) -> bool {
        filter.remove_hash(self.hash)
    }

    fn describe(self) -> String {
        format!(
            "fingerprint {:#06x} (buckets {} then {})",
            self.fingerprint, self.first, self.second
        )
    }
}

/// Hands out items with distinct fingerprints in distinct buckets, so every count is exact.
#[derive(Default)]
struct Picker {
    fingerprints: HashSet<u32>,
    buckets: HashSet<usize>,
}

impl Picker {
    fn claim(&mut self, item: Item) -> Item {
        assert!(self.fingerprints.insert(item.fingerprint), "setup: fingerprint reused");
        item
    }

    /// An unused fingerprint whose two buckets are both `bucket` (no path can move it), other
    /// than `except`.
    fn one_bucket<L: Layout>(
        &self,
        filter: &Filter<L>,
        bucket: usize,
        except: u32,
    ) -> Option<Item> {
        (1..=0xFFFF)
            .filter(|f| *f != except && !self.fingerprints.contains(f))
            .map(|f| Item::new(filter, bucket, f))
            .find(|item| item.first == bucket && item.second == bucket)
    }

    /// A fresh fingerprint with its pair: `home` (the first bucket of the returned item) taken
    /// from `homes`, the other bucket accepted by `away_ok(home, away)`; both buckets unused, in
    /// different cache lines, and each with a one-bucket filler fingerprint.
    fn collision<L: Layout>(
        &mut self,
        filter: &Filter<L>,
        homes: impl IntoIterator<Item = usize>,
        away_ok: impl Fn(usize, usize) -> bool,
    ) -> Collision {
        for home in homes {
            if self.buckets.contains(&home) {
                continue;
            }
            let Some(home_filler) = self.one_bucket(filter, home, 0) else { continue };
            for f in 1..=0xFFFF {
                if f == home_filler.fingerprint || self.fingerprints.contains(&f) {
                    continue;
                }
                let item = Item::new(filter, home, f);
                let away = item.second;
                if item.first != home
                    || away == home
                    || away / 8 == home / 8
                    || self.buckets.contains(&away)
                    || !away_ok(home, away)
                {
                    continue;
                }
                let mut taken = HashSet::from([f, home_filler.fingerprint]);
                taken.extend(&self.fingerprints);
                let Some(away_filler) = (1..=0xFFFF)
                    .filter(|g| !taken.contains(g))
                    .map(|g| Item::new(filter, away, g))
                    .find(|i| i.first == away && i.second == away)
                else {
                    continue;
                };
                self.buckets.extend([home, away]);
                return Collision {
                    home: self.claim(item),
                    away: item.flipped(filter),
                    home_filler: self.claim(home_filler),
                    away_filler: self.claim(away_filler),
                };
            }
        }
        panic!("setup: no collision fits these buckets");
    }
}

/// One fingerprint reached through either bucket of its pair: `home` has the home bucket first,
/// `away` the other bucket first. The stable copy lives in the home bucket.
#[derive(Clone, Copy, Debug)]
struct Collision {
    home: Item,
    away: Item,
    home_filler: Item,
    away_filler: Item,
}

impl Collision {
    /// Fills the home bucket with `home_fillers` fillers, inserts the stable copy there (its
    /// first bucket, so it lands there while the bucket has room), then `away_fillers` fillers in
    /// the away bucket.
    fn place<L: Layout>(&self, filter: &Filter<L>, home_fillers: usize, away_fillers: usize) {
        for _ in 0..home_fillers {
            assert!(self.home_filler.insert(filter), "setup: home bucket has no room");
        }
        assert!(self.home.insert(filter), "setup: stable copy refused");
        for _ in 0..away_fillers {
            assert!(self.away_filler.insert(filter), "setup: away bucket has no room");
        }
        let (home, away, f) = (self.home.first, self.home.second, self.home.fingerprint);
        assert_eq!(filter.fingerprint_count(home, f), 1, "setup: stable copy not in bucket {home}");
        assert_eq!(filter.fingerprint_count(away, f), 0, "setup: stable copy in bucket {away}");
        assert_eq!(filter.fingerprint_count(home, self.home_filler.fingerprint), home_fillers);
        assert_eq!(filter.fingerprint_count(away, self.away_filler.fingerprint), away_fillers);
    }
}

/// Counters shared by the workers, and the first few failures in words.
struct Tally {
    start: Instant,
    deadline: Instant,
    stop: AtomicBool,
    writes: AtomicU64,
    refused: AtomicU64,
    lookups: AtomicU64,
    snapshots: AtomicU64,
    /// Lookups of a stable item that answered false.
    false_negatives: AtomicU64,
    /// Removes of a copy their own thread had inserted that found nothing.
    missed_removes: AtomicU64,
    /// Stable items missing from a loaded snapshot.
    snapshot_losses: AtomicU64,
    first_failure_nanos: AtomicU64,
    messages: Mutex<Vec<String>>,
}

impl Tally {
    fn new(duration: Duration) -> Tally {
        let start = Instant::now();
        Tally {
            start,
            deadline: start + duration,
            stop: AtomicBool::new(false),
            writes: AtomicU64::new(0),
            refused: AtomicU64::new(0),
            lookups: AtomicU64::new(0),
            snapshots: AtomicU64::new(0),
            false_negatives: AtomicU64::new(0),
            missed_removes: AtomicU64::new(0),
            snapshot_losses: AtomicU64::new(0),
            first_failure_nanos: AtomicU64::new(u64::MAX),
            messages: Mutex::new(Vec::new()),
        }
    }

    /// Whether the run is over; checks the clock every 256 calls (`i` counts them).
    fn over(&self, i: u64) -> bool {
        self.stop.load(Relaxed) || (i % 256 == 0 && Instant::now() >= self.deadline)
    }

    fn fail(&self, counter: &AtomicU64, what: impl FnOnce() -> String) {
        counter.fetch_add(1, Relaxed);
        let at = self.start.elapsed();
        self.first_failure_nanos.fetch_min(at.as_nanos() as u64, Relaxed);
        let mut messages = self.messages.lock().unwrap();
        if messages.len() < 8 {
            messages.push(format!("after {at:.2?}: {}", what()));
        }
    }

    /// Prints the tally and the final-state problems, then fails if there is any failure.
    fn finish<L: Layout>(&self, scenario: &str, filter: &Filter<L>, problems: Vec<String>) {
        let scenario = format!("{scenario} ({})", name::<L>());
        let stats = filter.stats();
        let first = self.first_failure_nanos.load(Relaxed);
        let first = if first == u64::MAX {
            "none".to_string()
        } else {
            format!("{:.3?}", Duration::from_nanos(first))
        };
        let (fns, missed, lost) = (
            self.false_negatives.load(Relaxed),
            self.missed_removes.load(Relaxed),
            self.snapshot_losses.load(Relaxed),
        );
        eprintln!(
            "{scenario}: {:.2?}: {} insert/remove pairs ({} inserts refused; {} relocations, \
             {} surplus removals), \
             {} lookups, {} snapshots; {fns} false negatives, {missed} missed removes, {lost} \
             items lost by snapshots, {} wrong final counts; first failure {first}",
            self.start.elapsed(),
            self.writes.load(Relaxed),
            self.refused.load(Relaxed),
            stats.relocations,
            stats.surplus_removals,
            self.lookups.load(Relaxed),
            self.snapshots.load(Relaxed),
            problems.len(),
        );
        let messages = self.messages.lock().unwrap();
        for m in messages.iter().chain(&problems) {
            eprintln!("  {m}");
        }
        assert!(
            fns == 0 && missed == 0 && lost == 0 && problems.is_empty(),
            "{scenario}: {fns} false negatives of stable items, {missed} removes that missed a copy \
             their own thread inserted, {lost} stable items missing from loaded snapshots, final \
             counts wrong: {problems:?}; first failures: {messages:?}"
        );
    }
}

/// Raises the stop flag if its thread panics, so the other threads end too.
struct StopOnPanic<'a>(&'a AtomicBool);

impl Drop for StopOnPanic<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.store(true, Relaxed);
        }
    }
}

/// Loops over `items`: `insert(item)` then, if it was accepted, `remove(item)`, which must find a
/// copy: its own insert happened-before it and nothing else removes more than it inserted.
/// `pause` spins between the two, so the copy also sits in the table for a while. Several items
/// on one thread move a colliding fingerprint back and forth at every step, where threads of
/// their own would take turns only as often as the scheduler switches them.
fn collider<L: Layout>(filter: &Filter<L>, tally: &Tally, items: &[Item], pause: u32) {
    let _stop = StopOnPanic(&tally.stop);
    let mut i = 0u64;
    let (mut writes, mut refused) = (0, 0);
    while !tally.over(i) {
        let item = items[i as usize % items.len()];
        i += 1;
        if !item.insert(filter) {
            refused += 1;
            continue;
        }
        for _ in 0..(i as u32 % (pause + 1)) {
            std::hint::spin_loop();
        }
        writes += 1;
        if !item.remove(filter) {
            tally.fail(&tally.missed_removes, || {
                format!(
                    "remove of {} found no copy after its own thread inserted one",
                    item.describe()
                )
            });
        }
    }
    tally.writes.fetch_add(writes, Relaxed);
    tally.refused.fetch_add(refused, Relaxed);
}

/// Loops lookups of `stable`, which must all be found.
fn reader<L: Layout>(filter: &Filter<L>, tally: &Tally, stable: &[Item], offset: usize) {
    let _stop = StopOnPanic(&tally.stop);
    let mut i = 0u64;
    let mut k = offset;
    while !tally.over(i) {
        i += 1;
        let item = stable[k % stable.len()];
        k += 1;
        if !item.contains(filter) {
            let (first, second) = (
                filter.fingerprint_count(item.first, item.fingerprint),
                filter.fingerprint_count(item.second, item.fingerprint),
            );
            tally.fail(&tally.false_negatives, || {
                format!(
                    "false negative: stable {} looked up as absent (copies now: {first} in \
                     bucket {}, {second} in bucket {})",
                    item.describe(),
                    item.first,
                    item.second
                )
            });
        }
    }
    tally.lookups.fetch_add(i, Relaxed);
}

/// Loops snapshots (alternately `to_bytes` and `write_to`), loading each and checking that it
/// holds every stable item.
fn snapshotter<L: Layout>(filter: &Filter<L>, tally: &Tally, stable: &[Item], parity: u64) {
    let _stop = StopOnPanic(&tally.stop);
    let mut n = 0u64;
    while !tally.stop.load(Relaxed) && Instant::now() < tally.deadline {
        n += 1;
        let bytes = if (n + parity) % 2 == 0 {
            filter.to_bytes()
        } else {
            let mut bytes = Vec::new();
            filter.write_to(&mut bytes).expect("write_to a Vec");
            bytes
        };
        let loaded = load::<L>(&bytes);
        for &item in stable {
            if !item.contains(&loaded) {
                let (first, second) = (
                    loaded.fingerprint_count(item.first, item.fingerprint),
                    loaded.fingerprint_count(item.second, item.fingerprint),
                );
                tally.fail(&tally.snapshot_losses, || {
                    format!(
                        "snapshot {n} lost stable {}: the loaded copy holds {first} in bucket {} \
                         and {second} in bucket {}",
                        item.describe(),
                        item.first,
                        item.second
                    )
                });
            }
        }
    }
    tally.snapshots.fetch_add(n, Relaxed);
}

/// The final-state checks once every worker has stopped: each `(item, copies)` has exactly that
/// many copies of its fingerprint over its pair, the filter's length is `len`, and the table
/// holds exactly `len` fingerprints (counted through a quiescent snapshot), so no copy is extra.
fn final_counts<L: Layout>(
    filter: &Filter<L>,
    expected: &[(Item, usize)],
    len: usize,
) -> Vec<String> {
    let mut problems = Vec::new();
    for &(item, copies) in expected {
        let found = item.copies(filter);
        if found != copies {
            problems.push(format!(
                "{} has {found} copies ({} in bucket {}, {} in bucket {}), expected {copies}",
                item.describe(),
                filter.fingerprint_count(item.first, item.fingerprint),
                item.first,
                filter.fingerprint_count(item.second, item.fingerprint),
                item.second,
            ));
        }
    }
    if filter.len() != len {
        problems.push(format!("len() is {}, expected {len}", filter.len()));
    }
    let stored = load::<L>(&filter.to_bytes()).len();
    if stored != len {
        problems.push(format!("the table holds {stored} fingerprints, expected {len}"));
    }
    problems
}

fn table<L: Layout>(buckets: usize) -> Filter<L> {
    CuckooFilter::builder().bucket_count(buckets).layout::<L>().build()
}

fn load<L: Layout>(bytes: &[u8]) -> Filter<L> {
    CuckooFilter::builder().layout::<L>().load(bytes).expect("a snapshot loads")
}

// (a) ----------------------------------------------------------------------------------------

/// Colliding items with opposite first buckets. The stable copy starts in its full home bucket;
/// the away bucket has a free lane. The home-first collider's insert lands in the away bucket
/// and its remove takes the home copy (a move home → away with no relocation); the away-first
/// collider moves it back the same way once the away bucket is full. Readers look the stable
/// fingerprint up through both buckets (both read orders).
fn colliding_lookups<L: Layout>(duration: Duration) {
    lookups_against_colliders::<L>("colliding_lookups", duration, |c| {
        [[c.home, c.away], [c.away, c.home]]
    });
}

/// A collision placed with full fillers in both buckets, two colliders running the loops that
/// `loops` gives, and four readers of the stable fingerprint in both read orders; then exact
/// counts.
fn lookups_against_colliders<L: Layout>(
    scenario: &str,
    duration: Duration,
    loops: impl FnOnce(&Collision) -> [[Item; 2]; 2],
) {
    let filter = table::<L>(64);
    let mut picker = Picker::default();
    let c = picker.collision(&filter, 32..64, |_, away| away < 32);
    c.place(&filter, FULL, FULL);
    let stable = [c.home, c.away];
    let tally = Tally::new(duration);
    let [first, second] = loops(&c);
    std::thread::scope(|s| {
        s.spawn(|| collider(&filter, &tally, &first, 0));
        s.spawn(|| collider(&filter, &tally, &second, 0));
        for r in 0..4 {
            let (filter, tally, stable) = (&filter, &tally, &stable);
            s.spawn(move || reader(filter, tally, stable, r));
        }
    });
    let expected = [(c.home, 1), (c.home_filler, FULL), (c.away_filler, FULL)];
    let problems = final_counts(&filter, &expected, 1 + 2 * FULL);
    tally.finish(scenario, &filter, problems);
}

#[test]
fn colliding_lookups_short() {
    colliding_lookups::<Plain>(SHORT);
    colliding_lookups::<SemiSorted>(SHORT_SEMI_SORTED);
}

#[test]
#[ignore = "long stress run: cargo test --release --test growth -- --ignored collisions::"]
fn colliding_lookups_long() {
    colliding_lookups::<Plain>(LONG);
    colliding_lookups::<SemiSorted>(LONG);
}

// (b) ----------------------------------------------------------------------------------------

/// The same key inserted twice and removed once: the stable copy sits in its full first bucket,
/// and writers loop `insert(key)` (lands in the second bucket) then `remove(key)` (takes the
/// copy in the first bucket), a move with no relocation. A relocator puts the copy back: it
/// fills the second bucket, and the insert's path relocates the key to its first bucket.
fn same_key_lookups<L: Layout>(duration: Duration) {
    lookups_against_colliders::<L>("same_key_lookups", duration, |c| {
        [[c.home, c.away_filler], [c.away_filler, c.home]]
    });
}

#[test]
fn same_key_lookups_short() {
    same_key_lookups::<Plain>(SHORT);
    same_key_lookups::<SemiSorted>(SHORT_SEMI_SORTED);
}

#[test]
#[ignore = "long stress run: cargo test --release --test growth -- --ignored collisions::"]
fn same_key_lookups_long() {
    same_key_lookups::<Plain>(LONG);
    same_key_lookups::<SemiSorted>(LONG);
}

// (c) ----------------------------------------------------------------------------------------

/// Snapshots racing moves from a higher bucket to a lower one. Each collision's home bucket is
/// the higher one, full with its stable copy and fillers; the lower bucket has a free lane. A
/// writer that moves the copy high → low (insert lands low after the scan passed it, remove
/// takes the high copy before the scan reaches it) makes a snapshot that lacks it:
///
/// - a same-key pair: a writer loops insert/remove of the home item, a relocator moves the copy
///   back (through a relocation, which the scan validates);
/// - a colliding pair: the home-first collider moves the copy down, the away-first one up.
///
/// Readers run too, and the stable fillers are checked in every snapshot as well.
fn snapshots<L: Layout>(buckets: usize, pairs: usize, duration: Duration, scenario: &str) {
    let filter = table::<L>(buckets);
    let mut picker = Picker::default();
    let low = (buckets / 4).max(8);
    let mut collision =
        || picker.collision(&filter, (buckets - low..buckets).rev(), |_, away| away < low);
    let same = collision();
    let pairs: Vec<Collision> = (0..pairs).map(|_| collision()).collect();
    let mut stable = vec![same.home, same.away, same.home_filler, same.away_filler];
    let mut expected = vec![(same.home, 1), (same.home_filler, FULL), (same.away_filler, FULL)];
    let mut movers = Vec::new();
    for c in [same].iter().chain(&pairs) {
        c.place(&filter, FULL, FULL);
    }
    for c in &pairs {
        stable.extend([c.home, c.away, c.home_filler, c.away_filler]);
        expected.extend([(c.home, 1), (c.home_filler, FULL), (c.away_filler, FULL)]);
        movers.extend([c.home, c.away]);
    }
    let len = filter.len();
    let tally = Tally::new(duration);
    std::thread::scope(|s| {
        s.spawn(|| collider(&filter, &tally, &[same.home, same.away_filler], 0));
        s.spawn(|| collider(&filter, &tally, &movers, 0));
        for p in 0..2 {
            let (filter, tally, stable) = (&filter, &tally, &stable);
            s.spawn(move || snapshotter(filter, tally, stable, p));
        }
        s.spawn(|| reader(&filter, &tally, &stable, 0));
    });
    let problems = final_counts(&filter, &expected, len);
    tally.finish(scenario, &filter, problems);
}

#[test]
fn snapshots_small_short() {
    snapshots::<Plain>(16, 2, SHORT, "snapshots_small");
    snapshots::<SemiSorted>(16, 2, SHORT_SEMI_SORTED, "snapshots_small");
}

#[test]
fn snapshots_medium_short() {
    snapshots::<Plain>(64, 4, SHORT, "snapshots_medium");
    snapshots::<SemiSorted>(64, 4, SHORT_SEMI_SORTED, "snapshots_medium");
}

#[test]
fn snapshots_large_short() {
    snapshots::<Plain>(1 << 14, 8, SHORT, "snapshots_large");
    snapshots::<SemiSorted>(1 << 14, 8, SHORT_SEMI_SORTED, "snapshots_large");
}

#[test]
#[ignore = "long stress run: cargo test --release --test growth -- --ignored collisions::"]
fn snapshots_small_long() {
    snapshots::<Plain>(16, 2, LONG, "snapshots_small");
    snapshots::<SemiSorted>(16, 2, LONG, "snapshots_small");
}

#[test]
#[ignore = "long stress run: cargo test --release --test growth -- --ignored collisions::"]
fn snapshots_medium_long() {
    snapshots::<Plain>(64, 4, LONG, "snapshots_medium");
    snapshots::<SemiSorted>(64, 4, LONG, "snapshots_medium");
}

#[test]
#[ignore = "long stress run: cargo test --release --test growth -- --ignored collisions::"]
fn snapshots_large_long() {
    snapshots::<Plain>(1 << 14, 8, LONG, "snapshots_large");
    snapshots::<SemiSorted>(1 << 14, 8, LONG, "snapshots_large");
}

// (d) ----------------------------------------------------------------------------------------

/// Removes racing colliding inserts and removes and relocations. The main thread inserts X once;
/// an owner thread then loops: `remove(X)`, which must return true (the copy it removes is the
/// only one X has: the main thread's, or the one its own previous round inserted), then
/// `insert(X)` again, alternating the orientation it goes through. Meanwhile a collider moves
/// the fingerprint between the buckets (insert through one bucket, remove through the other),
/// and a relocator inserts fillers into full buckets so that paths relocate it, racing the
/// colliding inserts and removes. At the end X has exactly one copy (no surplus copy left by a
/// relocation, none lost); the main thread's one remove returns true and leaves no copy, so a
/// second remove returns false.
fn removes<L: Layout>(duration: Duration) {
    let filter = table::<L>(64);
    let mut picker = Picker::default();
    let c = picker.collision(&filter, 32..64, |_, away| away < 32);
    c.place(&filter, FULL, FULL);
    let tally = Tally::new(duration);
    let rounds = AtomicU64::new(0);
    std::thread::scope(|s| {
        s.spawn(|| collider(&filter, &tally, &[c.home, c.away], 0));
        s.spawn(|| collider(&filter, &tally, &[c.home, c.home_filler, c.away, c.away_filler], 8));
        s.spawn(|| {
            let _stop = StopOnPanic(&tally.stop);
            let mut i = 0u64;
            while !tally.over(i) {
                let x = if i % 2 == 0 { c.home } else { c.away };
                i += 1;
                if !x.remove(&filter) {
                    tally.fail(&tally.missed_removes, || {
                        format!("remove of X, {}, inserted once, returned false", x.describe())
                    });
                    // Its copy is still somewhere (or lost): put none back, the final counts
                    // tell which.
                    break;
                }
                while !x.insert(&filter) {
                    std::hint::spin_loop();
                }
            }
            rounds.fetch_add(i, Relaxed);
        });
        s.spawn(|| reader(&filter, &tally, &[c.home_filler, c.away_filler], 0));
    });
    let rounds = rounds.load(Relaxed);
    eprintln!("removes ({}): {rounds} rounds of remove(X), insert(X)", name::<L>());
    let expected = [(c.home, 1), (c.home_filler, FULL), (c.away_filler, FULL)];
    let mut problems = final_counts(&filter, &expected, 1 + 2 * FULL);
    if !c.away.remove(&filter) {
        problems
            .push(format!("the main thread's remove of X, {}, found nothing", c.away.describe()));
    }
    if c.home.remove(&filter) {
        problems.push(format!(
            "a second remove of X, {}, found a copy: an extra copy was left behind",
            c.home.describe()
        ));
    }
    tally.finish("removes", &filter, problems);
}

#[test]
fn removes_short() {
    removes::<Plain>(SHORT);
    removes::<SemiSorted>(SHORT_SEMI_SORTED);
}

#[test]
#[ignore = "long stress run: cargo test --release --test growth -- --ignored collisions::"]
fn removes_long() {
    removes::<Plain>(LONG);
    removes::<SemiSorted>(LONG);
}

// (e) ----------------------------------------------------------------------------------------

/// Relocations in the mix: a 16-bucket table 88% full of stable two-bucket items (distinct
/// fingerprints, so every count is exact) and one colliding fingerprint. Churners loop
/// insert/remove of their own items, whose inserts need cuckoo paths through every bucket,
/// moving the colliding fingerprint among others, while colliders move it without relocations
/// and readers look up every stable item (the colliding one in both read orders).
fn relocations<L: Layout>(duration: Duration) {
    let filter = table::<L>(16);
    let mut picker = Picker::default();
    let c = picker.collision(&filter, 8..16, |_, away| away < 8);
    c.place(&filter, 0, 0);
    let mut next = 1u32;
    let mut fresh = |picker: &mut Picker, k: usize| loop {
        next += 1;
        if !picker.fingerprints.contains(&next) {
            let item = Item::new(&filter, k % 16, next);
            if item.first != item.second {
                return picker.claim(item);
            }
        }
    };
    let mut stable = vec![c.home, c.away];
    let mut expected = vec![(c.home, 1)];
    // Fill to 56 of the 64 lanes; an item the table refuses is simply not used.
    for k in 0.. {
        if filter.len() == 56 {
            break;
        }
        assert!(k < 1000, "setup: cannot fill the table");
        let item = fresh(&mut picker, k * 7);
        if item.insert(&filter) {
            stable.push(item);
            expected.push((item, 1));
        }
    }
    let churned: Vec<Vec<Item>> =
        (0..2).map(|t| (0..4).map(|k| fresh(&mut picker, t * 5 + k * 3)).collect()).collect();
    expected.extend(churned.iter().flatten().map(|&item| (item, 0)));
    let len = filter.len();
    let tally = Tally::new(duration);
    std::thread::scope(|s| {
        for items in &churned {
            let (filter, tally) = (&filter, &tally);
            s.spawn(move || {
                let _stop = StopOnPanic(&tally.stop);
                let mut i = 0u64;
                while !tally.over(i) {
                    let item = items[i as usize % items.len()];
                    i += 1;
                    if !item.insert(filter) {
                        tally.refused.fetch_add(1, Relaxed);
                        continue;
                    }
                    tally.writes.fetch_add(1, Relaxed);
                    if !item.remove(filter) {
                        tally.fail(&tally.missed_removes, || {
                            format!("churned {} inserted but not found", item.describe())
                        });
                    }
                }
            });
        }
        s.spawn(|| collider(&filter, &tally, &[c.home, c.away], 0));
        for r in 0..3 {
            let (filter, tally, stable) = (&filter, &tally, &stable);
            s.spawn(move || reader(filter, tally, stable, r * 11));
        }
    });
    let problems = final_counts(&filter, &expected, len);
    tally.finish("relocations", &filter, problems);
}

#[test]
fn relocations_short() {
    relocations::<Plain>(SHORT);
    relocations::<SemiSorted>(SHORT_SEMI_SORTED);
}

#[test]
#[ignore = "long stress run: cargo test --release --test growth -- --ignored collisions::"]
fn relocations_long() {
    relocations::<Plain>(LONG);
    relocations::<SemiSorted>(LONG);
}
