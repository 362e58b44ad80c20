//! The `from_bytes` and `differential` fuzz targets' properties on random inputs from fixed
//! seeds, so that every `cargo test` samples what `cargo fuzz` explores with coverage guidance.
//! The fuzz crate is a workspace of its own (`fuzz/README.md`), so its property library is
//! out of reach here: `load` and `differential` below are the same checks as its own, and a
//! change to one belongs in both.

use std::collections::HashMap;

use lockfree_cuckoo::{CuckooFilter, InsertError};
use rand::{rngs::StdRng, Rng, SeedableRng};

/// Loading arbitrary bytes yields a filter or a `LoadError`, never a panic, through both entry
/// points; a filter that loads saves back to the same bytes.
fn load(data: &[u8]) {
    let loaded = CuckooFilter::from_bytes(data);
    let streamed = CuckooFilter::read_from(data);
    assert_eq!(loaded.is_ok(), streamed.is_ok(), "from_bytes and read_from disagree");
    if let Ok(filter) = loaded {
        assert_eq!(filter.to_bytes(), data, "a loaded filter saves back differently");
        assert_eq!(filter.len(), streamed.unwrap().len());
    }
}

/// One step of a single-threaded session. Keys are small so that sequences revisit them.
#[derive(Clone, Copy, Debug)]
enum Op {
    Insert(u8),
    Remove(u8),
    Contains(u8),
    Count(u8),
    /// Save with `to_bytes` and continue with the loaded copy.
    Reload,
    /// Continue with a `clone`.
    Clone,
}

/// A session of operations on a filter of `capacity` (1 to 256), checked against a multiset:
/// no false negative, `count` never below the multiset's, `len` exact after every step, and a
/// refused insert changes nothing. Removes are only of keys the multiset holds, as the filter's
/// contract asks (removing an absent key may remove a colliding one). An odd `capacity` makes
/// the filter growable (from `capacity / 8` items), which refuses a key only when eight copies
/// of its fingerprint fill its buckets.
fn differential(capacity: u8, ops: &[Op]) {
    let growable = capacity % 2 == 1;
    let mut filter = if growable {
        CuckooFilter::builder().capacity(usize::from(capacity / 8)).growable().build()
    } else {
        CuckooFilter::with_capacity(usize::from(capacity) + 1)
    };
    let mut model: HashMap<u8, usize> = HashMap::new();
    for &op in ops {
        match op {
            Op::Insert(key) => match filter.insert(&key) {
                Ok(()) => *model.entry(key).or_default() += 1,
                Err(InsertError::Full) => {
                    // A growable filter refuses a key only when copies of its fingerprint
                    // (kept ones of removed copies included) fill its buckets: eight, or four
                    // for a key whose two buckets are one.
                    let copies = filter.count(&key);
                    assert!(!growable || copies >= 4, "refused {key} with {copies} copies");
                }
                Err(err) => panic!("unexpected insert error {err}"),
            },
            Op::Remove(key) => {
                if let Some(copies) = model.get_mut(&key).filter(|c| **c > 0) {
                    assert!(filter.remove(&key), "remove of held key {key} found nothing");
                    *copies -= 1;
                }
            }
            Op::Contains(key) => {
                if model.get(&key).is_some_and(|&c| c > 0) {
                    assert!(filter.contains(&key), "false negative for key {key}");
                }
            }
            Op::Count(key) => {
                let held = model.get(&key).copied().unwrap_or(0);
                assert!(filter.count(&key) >= held, "count of key {key} below {held}");
            }
            Op::Reload => {
                let bytes = filter.to_bytes();
                filter = CuckooFilter::from_bytes(&bytes).expect("a saved filter loads");
            }
            Op::Clone => filter = filter.clone(),
        }
        assert_eq!(filter.len(), model.values().sum::<usize>(), "len after {op:?}");
    }
    for (key, &copies) in &model {
        assert!(filter.count(key) >= copies, "final count of key {key} below {copies}");
    }
}

fn op(rng: &mut StdRng) -> Op {
    let key = rng.random_range(0..24u8);
    match rng.random_range(0..100) {
        0..35 => Op::Insert(key),
        35..60 => Op::Remove(key),
        60..80 => Op::Contains(key),
        80..96 => Op::Count(key),
        96..98 => Op::Reload,
        _ => Op::Clone,
    }
}

#[test]
fn random_sessions_match_the_multiset_model() {
    for seed in 0..300 {
        let mut rng = StdRng::seed_from_u64(seed);
        let capacity = rng.random_range(0..64u8);
        let ops: Vec<Op> = (0..rng.random_range(0..400)).map(|_| op(&mut rng)).collect();
        differential(capacity, &ops);
    }
}

#[test]
fn random_and_damaged_snapshots_load_or_fail_cleanly() {
    let filter = CuckooFilter::with_capacity(200);
    for k in 0..150u32 {
        filter.insert(&k).unwrap();
    }
    let good = filter.to_bytes();
    load(&good);
    let mut rng = StdRng::seed_from_u64(1);
    for _ in 0..2_000 {
        let mut bytes = good.clone();
        for _ in 0..rng.random_range(1..4) {
            let at = rng.random_range(0..bytes.len());
            bytes[at] = rng.random();
        }
        bytes.truncate(rng.random_range(0..=bytes.len()));
        load(&bytes);
        let noise: Vec<u8> = (0..rng.random_range(0..300)).map(|_| rng.random()).collect();
        load(&noise);
    }
}
