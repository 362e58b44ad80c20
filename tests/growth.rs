//! Growable filters: growth from tiny to large losing nothing, ceilings, levels seen by every
//! operation, snapshots, clones, merges and batches of grown filters, and threads that insert,
//! look up and remove while the filter grows. The `#[ignore]`d variants are long runs that
//! `.ci/run` runs in release.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::thread;

use lockfree_cuckoo::{BuildError, CuckooFilter, InsertError, MergeError};

fn growable(capacity: usize) -> CuckooFilter {
    CuckooFilter::builder().capacity(capacity).growable().build()
}

/// Keys no test inserts: the top bit set.
fn absent(i: u64) -> u64 {
    1 << 63 | i
}

#[test]
fn grows_a_thousandfold_losing_nothing_within_the_accuracy_and_memory_targets() {
    let filter = growable(1_000);
    let presized = CuckooFilter::with_capacity(1_000_000);
    for key in 0..1_000_000u64 {
        filter.insert(&key).unwrap();
    }
    assert!((0..1_000_000u64).all(|key| filter.contains(&key)), "a false negative");
    assert_eq!(filter.len(), 1_000_000);
    let stats = filter.stats();
    assert_eq!(stats.refused_inserts, 0);
    // 1,000 × 4^k buckets' worth: levels for 1K, 4K, 16K, 64K, 256K and 1M items.
    assert_eq!(stats.levels, 6, "{stats:?}");
    assert!(filter.capacity() >= filter.len());

    let probes = 1_000_000u64;
    let false_positives = (0..probes).filter(|&i| filter.contains(&absent(i))).count();
    let rate = false_positives as f64 / probes as f64;
    assert!(rate <= 0.001, "false-positive rate {rate}");
    let ratio = filter.memory_usage() as f64 / presized.memory_usage() as f64;
    assert!(ratio <= 1.5, "{ratio} times the memory of a presized filter");
}

#[test]
fn a_ceiling_too_large_to_reach_still_grows() {
    let filter = CuckooFilter::builder().capacity(1_000).max_capacity(usize::MAX).build();
    for key in 0..20_000u32 {
        filter.insert(&key).unwrap();
    }
    assert!(filter.stats().levels > 1);
}

#[test]
fn a_fixed_filter_never_grows() {
    let filter = CuckooFilter::with_capacity(100);
    let refused = (0..10_000u32).find(|key| filter.insert(key).is_err());
    assert!(refused.is_some());
    assert_eq!(filter.stats().levels, 1);
    assert_eq!(filter.stats().refused_inserts, 1);
}

#[test]
fn every_operation_sees_every_level() {
    let filter = growable(8);
    filter.insert("old").unwrap();
    filter.insert("twice").unwrap();
    for key in 0..1_000u32 {
        filter.insert(&key).unwrap();
    }
    assert!(filter.stats().levels >= 3);
    filter.insert("twice").unwrap();
    filter.insert("new").unwrap();
    assert!(filter.contains("old") && filter.contains("new"));
    assert_eq!(filter.count("twice"), 2);
    let mut found = [false; 3];
    filter.contains_batch(&["old", "new", "never"], &mut found);
    assert_eq!(found, [true, true, false]);
    assert!(filter.remove("old"));
    assert!(!filter.contains("old"));
    assert!(!filter.remove("old"));
    assert!(filter.remove("new"));
    assert!(!filter.contains("new"));
    assert_eq!(filter.len(), 1_002);
}

#[test]
fn batches_grow_and_agree_with_single_lookups() {
    let filter = growable(16);
    let keys: Vec<u64> = (0..50_000).collect();
    assert_eq!(filter.insert_batch(&keys), keys.len());
    assert!(filter.stats().levels > 3);
    let probes: Vec<u64> =
        (0..100_000).map(|i| if i % 2 == 0 { i / 2 } else { absent(i) }).collect();
    let mut found = vec![false; probes.len()];
    filter.contains_batch(&probes, &mut found);
    for (key, found) in probes.iter().zip(found) {
        assert_eq!(found, filter.contains(key), "{key}");
    }
}

#[test]
fn the_item_ceiling_stops_growth_and_loses_nothing() {
    let filter = CuckooFilter::builder().capacity(100).max_capacity(5_000).build();
    let mut accepted = Vec::new();
    let mut refusals = 0;
    for key in 0..20_000u32 {
        match filter.insert(&key) {
            Ok(()) => accepted.push(key),
            Err(InsertError::Full) => refusals += 1,
            Err(err) => panic!("{err}"),
        }
    }
    assert!(accepted.len() >= 5_000, "{}", accepted.len());
    assert!(refusals > 0);
    assert!(filter.capacity() >= 5_000 && filter.capacity() < 5_100, "{}", filter.capacity());
    assert!(accepted.iter().all(|key| filter.contains(key)));
    assert_eq!(filter.len(), accepted.len());
    assert_eq!(filter.stats().refused_inserts, refusals);
    // At the ceiling, inserts fill every level, and removes free room in old levels that
    // inserts then find.
    assert!(filter.load_factor() > 0.99, "{}", filter.load_factor());
    for key in &accepted[..100] {
        assert!(filter.remove(key));
    }
    assert!((0..100u32).filter(|key| filter.insert(&(key + 1_000_000)).is_ok()).count() >= 90);
}

#[test]
fn the_memory_ceiling_is_never_passed() {
    for bytes in [40_000, 100_000, 1_000_000, 3_000_000] {
        let filter = CuckooFilter::builder().capacity(1_000).max_memory(bytes).build();
        let mut accepted = 0u32;
        for key in 0..2_000_000u32 {
            if filter.insert(&key).is_err() {
                break;
            }
            accepted += 1;
            assert!(filter.memory_usage() <= bytes);
        }
        assert!((0..accepted).all(|key| filter.contains(&key)));
        // Most of the budget holds items: at least half of what a presized filter would hold.
        let per_item = CuckooFilter::with_capacity(accepted as usize).memory_usage() as f64
            / f64::from(accepted);
        assert!(f64::from(accepted) * per_item > bytes as f64 / 2.0, "{bytes}: {accepted}");
    }
}

/// Many small budgets, each filled until refused: the filter's `memory_usage`, hasher
/// included, never passes the ceiling by a byte.
#[test]
fn the_memory_ceiling_holds_for_every_budget() {
    for bytes in (0..40).map(|k| 30_000 + 1_237 * k) {
        let filter = CuckooFilter::builder()
            .capacity(500)
            .max_memory(bytes)
            .hasher(std::collections::hash_map::RandomState::new())
            .build();
        let mut key = 0u32;
        while filter.insert(&key).is_ok() {
            key += 1;
        }
        assert!(filter.memory_usage() <= bytes, "{} > {bytes}", filter.memory_usage());
    }
}

#[test]
fn ceilings_below_the_first_table_are_build_errors() {
    let err = CuckooFilter::builder().capacity(5_000).max_capacity(1_000).try_build();
    assert!(matches!(
        err,
        Err(BuildError::CeilingBelowCapacity { setting: "max_capacity", limit: 1_000, .. })
    ));
    let err = CuckooFilter::builder().capacity(5_000).max_memory(1_000).try_build().unwrap_err();
    assert!(matches!(err, BuildError::CeilingBelowCapacity { setting: "max_memory", .. }));
    assert!(err.to_string().contains("max_memory (1000)"), "{err}");
}

#[test]
fn snapshots_and_clones_keep_the_levels_and_keep_growing() {
    let filter = growable(10);
    for key in 0..5_000u32 {
        filter.insert(&key).unwrap();
    }
    let levels = filter.stats().levels;
    assert!(levels > 2);
    let bytes = filter.to_bytes();
    assert_eq!(&bytes[8..10], [3, 0], "a growable filter writes format version 3");
    let info = filter.write_to(Vec::new()).unwrap();
    assert_eq!(info.bytes, bytes.len() as u64);
    assert_eq!(info.items, 5_000);
    assert_eq!(info.buckets, filter.bucket_count() as u64);
    let loaded = CuckooFilter::from_bytes(&bytes).unwrap();
    let copy = filter.clone();
    for other in [&loaded, &copy] {
        assert_eq!(other.stats().levels, levels);
        assert_eq!(other.len(), 5_000);
        assert_eq!(other.bucket_count(), filter.bucket_count());
        assert_eq!(other.capacity(), filter.capacity());
        assert!((0..5_000u32).all(|key| other.contains(&key)));
        assert_eq!(other.to_bytes(), bytes);
        // Still growable, with the same ceiling (none).
        for key in 5_000..50_000u32 {
            other.insert(&key).unwrap();
        }
        assert!(other.stats().levels > levels);
    }
    // A fixed filter still writes version 2.
    assert_eq!(&CuckooFilter::with_capacity(10).to_bytes()[8..10], [2, 0]);
}

#[test]
fn a_loaded_filter_keeps_its_ceiling() {
    let filter = CuckooFilter::builder().capacity(10).max_capacity(300).build();
    let refused = (0..1_000u32).find(|key| filter.insert(key).is_err()).unwrap();
    let loaded = CuckooFilter::from_bytes(&filter.to_bytes()).unwrap();
    assert_eq!(loaded.capacity(), filter.capacity());
    assert_eq!(loaded.insert(&refused), Err(InsertError::Full));
    assert_eq!(loaded.stats().levels, filter.stats().levels);
}

#[test]
fn truncated_and_forged_growable_snapshots_are_errors() {
    let filter = growable(10);
    for key in 0..300u32 {
        filter.insert(&key).unwrap();
    }
    let bytes = filter.to_bytes();
    for cut in 0..bytes.len() {
        assert!(CuckooFilter::from_bytes(&bytes[..cut]).is_err(), "cut at {cut}");
        assert!(CuckooFilter::read_from(&bytes[..cut]).is_err(), "cut at {cut}");
    }
    for at in 64..bytes.len() {
        let mut forged = bytes.clone();
        forged[at] ^= 0x10;
        assert!(CuckooFilter::from_bytes(&forged).is_err(), "flip at {at}");
    }
}

#[test]
fn clear_goes_back_to_the_first_level() {
    let mut filter = growable(10);
    let first = filter.memory_usage();
    for key in 0..1_000u32 {
        filter.insert(&key).unwrap();
    }
    filter.clear();
    assert!(filter.is_empty());
    assert_eq!(filter.stats(), Default::default());
    assert_eq!(filter.memory_usage(), first);
    assert!((0..1_000u32).all(|key| !filter.contains(&key)));
    for key in 0..1_000u32 {
        filter.insert(&key).unwrap();
    }
    assert_eq!(filter.len(), 1_000);
}

#[test]
fn grown_filters_merge_level_by_level_and_lose_nothing() {
    // Not yet grown: one level each, merged as fixed filters are.
    let (a, b) = (growable(1_000), growable(1_000));
    for key in 0..200u32 {
        a.insert(&key).unwrap();
        b.insert(&(key + 1_000)).unwrap();
    }
    a.merge(&b).unwrap();
    assert!((0..200u32).all(|key| a.contains(&key) && a.contains(&(key + 1_000))));
    assert_eq!(a.len(), 400);

    // Grown alike: each level into its counterpart, which may be full (a level cannot take
    // another level's fingerprints); either way nothing of `a` is lost.
    let (a, b) = (growable(100), growable(100));
    for key in 0..3_000u32 {
        a.insert(&key).unwrap();
        b.insert(&(key + 10_000)).unwrap();
    }
    assert_eq!(a.stats().levels, b.stats().levels);
    match a.merge(&b) {
        Ok(()) => assert!((0..3_000u32).all(|key| a.contains(&(key + 10_000)))),
        Err(MergeError::Full { merged, remaining }) => assert!(merged + remaining >= 3_000),
        Err(err) => panic!("{err}"),
    }
    assert!((0..3_000u32).all(|key| a.contains(&key)));

    let c = growable(100);
    let levels = a.stats().levels;
    assert_eq!(a.merge(&c), Err(MergeError::LevelCountMismatch { ours: levels, theirs: 1 }));
}

/// A remove that matches in two levels cannot tell which copy was the item's, so it keeps
/// both: the item stays as a false positive, and the other level's item is never lost.
#[test]
fn removes_never_take_another_levels_only_copy() {
    let filter = growable(8);
    filter.insert("twice").unwrap();
    for key in 0..500u32 {
        filter.insert(&key).unwrap();
    }
    filter.insert("twice").unwrap();
    assert!(filter.stats().levels > 1);
    let len = filter.len();
    assert!(filter.remove("twice"));
    assert_eq!(filter.len(), len - 1);
    assert_eq!(filter.stats().retained_removals, 1);
    assert!(filter.contains("twice"), "kept as a false positive");
    // Every other item is still present.
    assert!((0..500u32).all(|key| filter.contains(&key)));
    // An item in one level only is taken as usual.
    assert!(filter.remove(&7u32));
    assert_eq!(filter.stats().retained_removals, 1);
    assert!((0..500u32).filter(|&key| key != 7).all(|key| filter.contains(&key)));
}

/// A key with copies in two levels has its removes kept; inserting and removing it over and
/// over leaves fingerprints behind, but at most eight a level: it never makes the filter grow.
#[test]
fn churning_a_key_split_across_levels_stays_bounded() {
    let filter = growable(8);
    filter.insert("split").unwrap();
    for key in 0..500u32 {
        filter.insert(&key).unwrap();
    }
    // Level 0 is full, so this copy goes to the newest level.
    filter.insert("split").unwrap();
    let (levels, memory) = (filter.stats().levels, filter.memory_usage());
    let mut refused = 0;
    for _ in 0..10_000 {
        match filter.insert("split") {
            Ok(()) => assert!(filter.remove("split")),
            Err(InsertError::Full) => refused += 1,
            Err(err) => panic!("{err}"),
        }
    }
    assert_eq!(filter.stats().levels, levels, "churn of one key grew the filter");
    assert_eq!(filter.memory_usage(), memory);
    assert!(filter.count("split") <= 8 * levels, "{}", filter.count("split"));
    assert!(refused > 0);
    assert!((0..500u32).all(|key| filter.contains(&key)));
    assert_eq!(filter.len(), 502);
}

/// Keys of thread `t`: disjoint ranges.
fn key(owner: u64, i: u64) -> u64 {
    owner << 40 | i
}

struct GrowthRun {
    false_negatives: u64,
    lookups: u64,
    missing: usize,
    final_len: usize,
    expected_len: usize,
    levels: usize,
    discarded: u64,
}

/// `WRITERS` threads insert their keys into a filter that starts at `capacity` and removes every
/// fourth again; `READERS` threads check, all the while, that every key a writer has published
/// as inserted (and not one it removes) is present.
fn grow_under_load(capacity: usize, per_writer: u64) -> GrowthRun {
    const WRITERS: u64 = 4;
    const READERS: u64 = 2;
    let filter = Arc::new(growable(capacity));
    let progress: Arc<Vec<AtomicU64>> = Arc::new((0..WRITERS).map(|_| AtomicU64::new(0)).collect());
    let done = Arc::new(AtomicBool::new(false));
    let start = Arc::new(Barrier::new((WRITERS + READERS) as usize));
    let kept = |i: u64| i % 4 != 3;

    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            let (filter, progress, start) = (filter.clone(), progress.clone(), start.clone());
            thread::spawn(move || {
                start.wait();
                for i in 0..per_writer {
                    filter.insert(&key(w, i)).expect("a growable filter is never full");
                    if !kept(i) {
                        assert!(filter.remove(&key(w, i)), "lost {w}/{i} before its remove");
                    }
                    // Release: pairs with the readers' Acquire load; key `i` happened-before.
                    progress[w as usize].store(i + 1, Ordering::Release);
                }
            })
        })
        .collect();
    let readers: Vec<_> = (0..READERS)
        .map(|r| {
            let (filter, progress, done, start) =
                (filter.clone(), progress.clone(), done.clone(), start.clone());
            thread::spawn(move || {
                start.wait();
                let (mut lookups, mut false_negatives) = (0u64, 0u64);
                let mut state = 0x9E37_79B9_7F4A_7C15u64 ^ r;
                while !done.load(Ordering::Relaxed) {
                    for (w, published) in progress.iter().enumerate() {
                        let published = published.load(Ordering::Acquire);
                        if published == 0 {
                            continue;
                        }
                        state ^= state << 13;
                        state ^= state >> 7;
                        state ^= state << 17;
                        let i = state % published;
                        if kept(i) {
                            lookups += 1;
                            false_negatives += u64::from(!filter.contains(&key(w as u64, i)));
                        }
                    }
                }
                (lookups, false_negatives)
            })
        })
        .collect();
    for writer in writers {
        writer.join().unwrap();
    }
    done.store(true, Ordering::Relaxed);
    let (mut lookups, mut false_negatives) = (0, 0);
    for reader in readers {
        let (l, f) = reader.join().unwrap();
        lookups += l;
        false_negatives += f;
    }
    let mut expected: HashMap<u64, ()> = HashMap::new();
    for w in 0..WRITERS {
        for i in (0..per_writer).filter(|&i| kept(i)) {
            expected.insert(key(w, i), ());
        }
    }
    let missing = expected.keys().filter(|k| !filter.contains(*k)).count();
    let stats = filter.stats();
    GrowthRun {
        false_negatives,
        lookups,
        missing,
        final_len: filter.len(),
        expected_len: expected.len(),
        levels: stats.levels,
        discarded: stats.discarded_levels,
    }
}

fn check(run: &GrowthRun, min_levels: usize) {
    println!(
        "lookups {} false negatives {} missing {} len {}/{} levels {} discarded {}",
        run.lookups,
        run.false_negatives,
        run.missing,
        run.final_len,
        run.expected_len,
        run.levels,
        run.discarded
    );
    assert_eq!(run.false_negatives, 0);
    assert_eq!(run.missing, 0);
    assert_eq!(run.final_len, run.expected_len);
    assert!(run.levels >= min_levels, "grew only to {} levels", run.levels);
    assert!(run.lookups > 0);
}

#[test]
fn threads_grow_the_filter_while_others_read_and_nothing_is_lost() {
    check(&grow_under_load(16, 20_000), 5);
}

#[test]
#[ignore = "long stress run: cargo test --release --test growth -- --ignored"]
fn threads_grow_the_filter_from_four_items_to_six_million_while_others_read() {
    for _ in 0..4 {
        check(&grow_under_load(4, 2_000_000), 11);
    }
}
