//! Batched lookups give the same answers as scalar ones.

use std::hash::BuildHasher;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use lockfree_cuckoo::CuckooFilter;
use rand::{rngs::StdRng, Rng, SeedableRng};

/// The default hasher's seed for filters that must hash alike.
const SEED: u64 = 0x5EED;

/// Every batch length around the prefetch window (16) and a few long ones.
const LENGTHS: [usize; 14] = [0, 1, 2, 7, 15, 16, 17, 31, 32, 33, 100, 255, 1000, 4097];

fn scalar(filter: &CuckooFilter, keys: &[u64]) -> Vec<bool> {
    keys.iter().map(|k| filter.contains(k)).collect()
}

#[test]
fn batch_agrees_with_scalar_at_every_length() {
    let filter = CuckooFilter::with_capacity(20_000);
    let mut rng = StdRng::seed_from_u64(1);
    let present: Vec<u64> = (0..15_000).map(|_| rng.random()).collect();
    for k in &present {
        filter.insert(k).unwrap();
    }
    for len in LENGTHS {
        // Half present, half (almost surely) absent, interleaved at random.
        let keys: Vec<u64> = (0..len)
            .map(|_| {
                if rng.random() {
                    present[rng.random_range(0..present.len())]
                } else {
                    rng.random()
                }
            })
            .collect();
        let mut out = vec![false; len];
        filter.contains_batch(&keys, &mut out);
        assert_eq!(out, scalar(&filter, &keys), "len {len}");

        let hashes: Vec<u64> = keys.iter().map(|k| filter.hasher().hash_one(k)).collect();
        let mut out = vec![true; len];
        filter.contains_hash_batch(&hashes, &mut out);
        assert_eq!(out, scalar(&filter, &keys), "hash batch, len {len}");
    }
}

#[test]
fn batch_overwrites_every_answer() {
    let filter = CuckooFilter::with_capacity(100);
    filter.insert(&5u64).unwrap();
    let keys = [5u64; 40];
    let mut out = [false; 40];
    filter.contains_batch(&keys, &mut out);
    assert!(out.iter().all(|&b| b));
    let absent: Vec<u64> = (1000..1040).collect();
    filter.contains_batch(&absent, &mut out);
    assert_eq!(out.to_vec(), scalar(&filter, &absent));
}

#[test]
fn batch_of_references_agrees_with_unsized_contains() {
    let filter = CuckooFilter::with_capacity(1_000);
    let words: Vec<String> = (0..300).map(|i| format!("word-{i}")).collect();
    for w in words.iter().step_by(3) {
        filter.insert(w.as_str()).unwrap();
    }
    let refs: Vec<&str> = words.iter().map(String::as_str).collect();
    let mut out = vec![false; refs.len()];
    filter.contains_batch(&refs, &mut out);
    let expected: Vec<bool> = refs.iter().map(|w| filter.contains(*w)).collect();
    assert_eq!(out, expected);
    assert!(out.iter().step_by(3).all(|&b| b));
}

#[test]
fn batch_with_a_custom_hasher_agrees() {
    let filter = CuckooFilter::builder()
        .capacity(5_000)
        .hasher(std::collections::hash_map::RandomState::new())
        .build();
    let keys: Vec<u32> = (0..6_000).collect();
    for k in &keys[..4_000] {
        filter.insert(k).unwrap();
    }
    let mut out = vec![false; keys.len()];
    filter.contains_batch(&keys, &mut out);
    let expected: Vec<bool> = keys.iter().map(|k| filter.contains(k)).collect();
    assert_eq!(out, expected);
    assert!(out[..4_000].iter().all(|&b| b));
}

#[test]
fn batch_on_a_full_table_with_one_bucket_items_agrees() {
    // A tiny table: many items have both buckets equal, and the table is at its limit.
    for buckets in 1..6 {
        let filter = CuckooFilter::builder().bucket_count(buckets).build();
        let mut rng = StdRng::seed_from_u64(buckets as u64);
        let mut stored = Vec::new();
        for _ in 0..buckets * 8 {
            let k: u64 = rng.random();
            if filter.insert(&k).is_ok() {
                stored.push(k);
            }
        }
        let mut keys = stored.clone();
        keys.extend((0..50).map(|_| rng.random::<u64>()));
        let mut out = vec![false; keys.len()];
        filter.contains_batch(&keys, &mut out);
        assert_eq!(out, scalar(&filter, &keys), "{buckets} buckets");
        assert!(out[..stored.len()].iter().all(|&b| b));
    }
}

#[test]
#[should_panic(expected = "differ in length")]
fn batch_rejects_mismatched_lengths() {
    let filter = CuckooFilter::with_capacity(10);
    let mut out = [false; 2];
    filter.contains_batch(&[1u8, 2, 3], &mut out);
}

#[test]
#[should_panic(expected = "differ in length")]
fn hash_batch_rejects_mismatched_lengths() {
    let filter = CuckooFilter::with_capacity(10);
    let mut out = [false; 4];
    filter.contains_hash_batch(&[1, 2, 3], &mut out);
}

/// While other threads insert and remove their own items (and so relocate fingerprints), a
/// batch never misses an item its own thread inserted and has not removed.
#[test]
fn batch_has_no_false_negatives_under_concurrent_relocations() {
    let filter = Arc::new(CuckooFilter::with_capacity(40_000));
    let mine: Vec<u64> = (0..10_000u64).map(|i| i << 20 | 1).collect();
    for k in &mine {
        filter.insert(k).unwrap();
    }
    let stop = Arc::new(AtomicBool::new(false));
    let churners: Vec<_> = (0..2u64)
        .map(|t| {
            let (filter, stop) = (Arc::clone(&filter), Arc::clone(&stop));
            std::thread::spawn(move || {
                let mut rng = StdRng::seed_from_u64(100 + t);
                // Keep the table near 90% load so inserts relocate.
                let own: Vec<u64> = (0..26_000).map(|_| rng.random::<u64>() | 2).collect();
                let mut held = Vec::new();
                let mut rounds = 0;
                while !stop.load(Ordering::Relaxed) || rounds < 2 {
                    for &k in &own[..13_000] {
                        if filter.insert(&k).is_ok() {
                            held.push(k);
                        }
                    }
                    for k in held.drain(..) {
                        assert!(filter.remove(&k));
                    }
                    rounds += 1;
                }
            })
        })
        .collect();
    let mut out = vec![false; mine.len()];
    for _ in 0..50 {
        filter.contains_batch(&mine, &mut out);
        let missed = out.iter().filter(|&&b| !b).count();
        assert_eq!(missed, 0, "batch missed {missed} present items");
    }
    stop.store(true, Ordering::Relaxed);
    for c in churners {
        c.join().unwrap();
    }
    assert!(filter.stats().relocations > 0, "the churn relocated nothing: {:?}", filter.stats());
}

#[test]
fn insert_batch_builds_the_same_filter_as_scalar_inserts() {
    let keys: Vec<u64> = {
        let mut rng = StdRng::seed_from_u64(7);
        (0..30_000).map(|_| rng.random()).collect()
    };
    // One seed: the two filters must hash alike to end up equal.
    let batched = CuckooFilter::builder().capacity(30_000).seed(SEED).build();
    let scalar_built = CuckooFilter::builder().capacity(30_000).seed(SEED).build();
    for chunk in keys.chunks(1000) {
        assert_eq!(batched.insert_batch(chunk), chunk.len());
    }
    for k in &keys {
        scalar_built.insert(k).unwrap();
    }
    assert_eq!(batched.len(), scalar_built.len());
    assert_eq!(batched.stats(), scalar_built.stats());
    // One thread, the same order: the same table, so every answer agrees.
    let mut probe = keys.clone();
    probe.extend((0..30_000u64).map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15)));
    let (mut a, mut b) = (vec![false; probe.len()], vec![false; probe.len()]);
    batched.contains_batch(&probe, &mut a);
    scalar_built.contains_batch(&probe, &mut b);
    assert_eq!(a, b);
    assert!(a[..keys.len()].iter().all(|&x| x));
}

#[test]
fn insert_batch_stops_at_the_first_refusal() {
    let filter = CuckooFilter::builder().bucket_count(2).build();
    let keys: Vec<u32> = (0..100).collect();
    let stored = filter.insert_batch(&keys);
    assert!(stored >= 4 && stored < keys.len(), "{stored}");
    assert_eq!(filter.len(), stored);
    assert_eq!(filter.stats().refused_inserts, 1);
    assert!(keys[..stored].iter().all(|k| filter.contains(k)));
    assert_eq!(filter.insert_batch::<u32>(&[]), 0);
}
