//! `merge`: every fingerprint of one filter added to another, with settings checked first, room
//! running out reported without loss, and both filters in use by other threads meanwhile.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};

use lockfree_cuckoo::{CuckooFilter, MergeError};

/// The default hasher's seed: filters to be merged must hash alike.
const SEED: u64 = 0x5EED;

/// A filter for `capacity` items whose default hasher is keyed by [`SEED`].
fn seeded(capacity: usize) -> CuckooFilter {
    CuckooFilter::builder().capacity(capacity).seed(SEED).build()
}

#[test]
fn merge_adds_every_item_and_copy() {
    let (n, capacity): (u64, usize) = if cfg!(miri) { (300, 1_000) } else { (3_000, 10_000) };
    let (a, b) = (seeded(capacity), seeded(capacity));
    for k in 0..n {
        a.insert(&k).unwrap();
        b.insert(&(k + 1_000_000)).unwrap();
    }
    a.insert("both").unwrap();
    b.insert("both").unwrap();
    b.insert("both").unwrap();
    a.merge(&b).unwrap();
    assert_eq!(a.len(), 2 * n as usize + 3);
    assert_eq!(b.len(), n as usize + 2, "the other filter is unchanged");
    assert!((0..n).all(|k| a.contains(&k) && a.contains(&(k + 1_000_000))));
    assert_eq!(a.count("both"), 3);
    // Every copy can be removed again, as often as it was inserted into either filter.
    for _ in 0..3 {
        assert!(a.remove("both"));
    }
    assert!(!a.contains("both"));
}

#[test]
fn merging_a_filter_into_itself_doubles_its_copies() {
    let filter = CuckooFilter::with_capacity(1_000);
    for k in 0..300u32 {
        filter.insert(&k).unwrap();
    }
    filter.merge(&filter).unwrap();
    assert_eq!(filter.len(), 600);
    assert!((0..300u32).all(|k| filter.count(&k) >= 2));
}

#[test]
fn different_settings_are_refused_and_change_nothing() {
    let a = seeded(1_000);
    a.insert("kept").unwrap();
    let bigger = seeded(if cfg!(miri) { 10_000 } else { 100_000 });
    bigger.insert("other").unwrap();
    let err = a.merge(&bigger).unwrap_err();
    assert_eq!(
        err,
        MergeError::BucketCountMismatch { ours: a.bucket_count(), theirs: bigger.bucket_count() }
    );
    assert!(err.to_string().contains("different sizes"), "{err}");

    let seeded = |seed| ahash::RandomState::with_seeds(seed, 2, 3, 4);
    let x = CuckooFilter::builder().capacity(1_000).hasher(seeded(1)).build();
    let y = CuckooFilter::builder().capacity(1_000).hasher(seeded(9)).build();
    assert_ne!(x.hasher().hash_one(0u64), y.hasher().hash_one(0u64));
    y.insert("other").unwrap();
    let err = x.merge(&y).unwrap_err();
    assert_eq!(err, MergeError::HasherMismatch { probe: 0 });
    assert!(err.to_string().contains("different hashers"), "{err}");
    assert_eq!((a.len(), x.len()), (1, 0));

    // Default hashers under different keys (each filter draws its own) map items differently.
    let (p, q) = (CuckooFilter::with_capacity(1_000), CuckooFilter::with_capacity(1_000));
    q.insert("other").unwrap();
    let err = p.merge(&q).unwrap_err();
    assert!(matches!(err, MergeError::HasherMismatch { .. }), "{err}");
    assert_eq!(p.len(), 0);
}

#[test]
fn running_out_of_room_says_how_far_it_got_and_loses_nothing() {
    let n = if cfg!(miri) { 200 } else { 2_000 };
    let (a, b) = (seeded(n), seeded(n));
    for k in 0..n as u64 {
        a.insert(&k).unwrap();
        b.insert(&(k + 1_000_000)).unwrap();
    }
    let err = a.merge(&b).unwrap_err();
    let MergeError::Full { merged, remaining } = err else { panic!("not full: {err}") };
    assert_eq!(merged + remaining, b.len());
    assert!(remaining > 0);
    assert_eq!(a.len(), n + merged);
    assert!((0..n as u64).all(|k| a.contains(&k)), "an item of the filter merged into was lost");
    assert!((0..n as u64).all(|k| b.contains(&(k + 1_000_000))), "the other filter lost an item");
    assert!(err.to_string().contains("fingerprints added"), "{err}");
}

/// A merge while other threads insert and remove on both filters: stable items of either stay
/// visible in it throughout, and every item stable in the other is in this one afterwards. The
/// other filter is kept at 70% load, so its inserts relocate fingerprints during the merge's scan.
#[test]
fn merge_racing_inserts_and_removes_on_both_filters() {
    // Miri: one round, at a hundredth of the size.
    const CAPACITY: usize = if cfg!(miri) { 500 } else { 50_000 };
    const STABLE_A: u64 = CAPACITY as u64 / 10;
    const STABLE_B: u64 = CAPACITY as u64 / 2;
    const WINDOW_A: u64 = CAPACITY as u64 / 50;
    const WINDOW_B: u64 = CAPACITY as u64 / 10;
    for round in 0..if cfg!(miri) { 1 } else { 40u64 } {
        let a = seeded(CAPACITY);
        let b = seeded(CAPACITY);
        (0..STABLE_A).for_each(|k| a.insert(&(0, k)).unwrap());
        (0..STABLE_B).for_each(|k| b.insert(&(1, k)).unwrap());
        let stop = AtomicBool::new(false);
        let ops = AtomicU64::new(0);
        std::thread::scope(|s| {
            for (t, filter, window) in
                [(0, &a, WINDOW_A), (1, &a, WINDOW_A), (2, &b, WINDOW_B), (3, &b, WINDOW_B)]
            {
                let (stop, ops) = (&stop, &ops);
                s.spawn(move || {
                    // Insert the thread's own keys, retiring the oldest beyond its window.
                    let (mut next, mut oldest) = (0u64, 0u64);
                    while !stop.load(Relaxed) {
                        let key = (10 + t, round * 1_000_000 + next);
                        if next - oldest < window && filter.insert(&key).is_ok() {
                            next += 1;
                        } else {
                            let old = (10 + t, round * 1_000_000 + oldest);
                            assert!(filter.remove(&old), "churn lost its own key");
                            oldest += 1;
                        }
                        ops.fetch_add(1, Relaxed);
                    }
                });
            }
            s.spawn(|| {
                let mut k = 0;
                while !stop.load(Relaxed) {
                    assert!(a.contains(&(0, k % STABLE_A)), "false negative in a");
                    assert!(b.contains(&(1, k)), "false negative in b");
                    k = (k + 7) % STABLE_B;
                }
            });
            // Let the churn fill its windows first, so the merge meets removes and relocations.
            while ops.load(Relaxed) < CAPACITY as u64 * 3 / 5 {
                std::thread::yield_now();
            }
            a.merge(&b).unwrap();
            stop.store(true, Relaxed);
        });
        assert!((0..STABLE_B).all(|k| a.contains(&(1, k))), "round {round}: b's item missing");
        assert!((0..STABLE_A).all(|k| a.contains(&(0, k))));
        assert!(b.stats().relocations > 0);
    }
}
