//! The operation counters: exact once operations are joined, whichever stripes threads use.

use std::sync::Arc;

use lockfree_cuckoo::CuckooFilter;
use rand::{rngs::StdRng, Rng, SeedableRng};

#[test]
fn single_thread_counts_are_exact() {
    let filter = CuckooFilter::with_capacity(50_000);
    let mut rng = StdRng::seed_from_u64(11);
    let keys: Vec<u64> = (0..filter.capacity()).map(|_| rng.random()).collect();
    for k in &keys {
        filter.insert(k).unwrap();
    }
    let stats = filter.stats();
    assert_eq!(stats.insert_paths.iter().sum::<u64>(), keys.len() as u64);
    // Alone, no path fails, so every relocation belongs to an accepted path.
    let hops: u64 = stats.insert_paths.iter().enumerate().map(|(k, &n)| k as u64 * n).sum();
    assert_eq!(stats.relocations, hops);
    assert!(stats.relocations > 0, "a full table needs paths: {stats:?}");
    assert_eq!((stats.path_retries, stats.refused_inserts, stats.surplus_removals), (0, 0, 0));
    assert_eq!(stats.conservative_lookups, 0);
    assert_eq!(filter.len(), keys.len());
    for k in &keys[..1000] {
        assert!(filter.remove(k));
    }
    assert_eq!(filter.len(), keys.len() - 1000);
}

#[test]
fn refusals_are_counted() {
    let filter = CuckooFilter::builder().bucket_count(1).build();
    let refused = (0..20u32).filter(|i| filter.insert(i).is_err()).count();
    assert!(refused > 0);
    assert_eq!(filter.stats().refused_inserts, refused as u64);
    assert_eq!(filter.len(), 20 - refused);
}

/// More threads than the counters have per-thread stripes, so some share striped counters:
/// after joining, the sums are exact either way.
#[test]
fn counts_are_exact_after_joining_many_threads() {
    const THREADS: u64 = 40;
    let filter = Arc::new(CuckooFilter::with_capacity(THREADS as usize * 1_000));
    let workers: Vec<_> = (0..THREADS)
        .map(|t| {
            let filter = Arc::clone(&filter);
            std::thread::spawn(move || {
                for i in 0..1_000u64 {
                    filter.insert(&(t, i)).unwrap();
                }
                for i in 0..400u64 {
                    assert!(filter.remove(&(t, i)));
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    let stats = filter.stats();
    assert_eq!(stats.insert_paths.iter().sum::<u64>(), THREADS * 1_000);
    assert_eq!(stats.refused_inserts, 0);
    assert_eq!(filter.len(), THREADS as usize * 600);
    // Another thread still sees the same totals.
    let again = {
        let filter = Arc::clone(&filter);
        std::thread::spawn(move || (filter.len(), filter.stats())).join().unwrap()
    };
    assert_eq!(again, (filter.len(), stats));
}

/// Threads that come and go, as in a pool that grows and shrinks: each new thread reuses the
/// counter stripe of one that exited, continuing its count with plain loads and stores, and the
/// sums stay exact.
#[test]
fn counts_are_exact_when_threads_come_and_go() {
    const WAVES: u64 = 40;
    const WIDTH: u64 = 6;
    let filter = Arc::new(CuckooFilter::with_capacity(50_000));
    for wave in 0..WAVES {
        let workers: Vec<_> = (0..WIDTH)
            .map(|t| {
                let filter = Arc::clone(&filter);
                std::thread::spawn(move || {
                    for i in 0..200u64 {
                        filter.insert(&(wave, t, i)).unwrap();
                    }
                    for i in 0..50u64 {
                        assert!(filter.remove(&(wave, t, i)));
                    }
                })
            })
            .collect();
        for w in workers {
            w.join().unwrap();
        }
    }
    assert_eq!(filter.len(), (WAVES * WIDTH * 150) as usize);
    assert_eq!(filter.stats().insert_paths.iter().sum::<u64>(), WAVES * WIDTH * 200);
}

/// What a clone's stats hold: the original's `len`, `levels` and `retained_removals` (its
/// pending removals retained for good), and every operation count, `pending_removals` and
/// `discarded_levels` from zero.
#[test]
fn a_clone_carries_its_len_levels_and_retained_removals() {
    const KEYS: u64 = 500;
    let filter = CuckooFilter::builder().capacity(1_000).growable().build();
    for key in 0..KEYS {
        filter.insert(&key).unwrap();
    }
    let mut filler = 1u64 << 40;
    while filter.stats().levels < 3 {
        filter.insert(&filler).unwrap();
        filler += 1;
    }
    // Copies inserted while level 0 is full go to a newer level; removing one of each key then
    // finds copies in two levels, and keeps them.
    for key in 0..KEYS {
        filter.insert(&key).unwrap();
    }
    for key in 0..KEYS {
        assert!(filter.remove(&key));
    }
    let stats = filter.stats();
    assert!(stats.retained_removals > 0 && stats.pending_removals > 0, "{stats:?}");
    assert!(stats.relocations > 0 || stats.insert_paths[0] > 0, "{stats:?}");

    let copy = filter.clone();
    let copied = copy.stats();
    assert_eq!(copy.len(), filter.len());
    assert_eq!(copied.levels, stats.levels);
    assert_eq!(copied.retained_removals, stats.retained_removals);
    assert_eq!(copied.pending_removals, 0, "pending removals travel as retained for good");
    let mut zero = lockfree_cuckoo::Stats::default();
    zero.levels = stats.levels;
    zero.retained_removals = stats.retained_removals;
    assert_eq!(copied, zero, "every other count starts from zero");
}
