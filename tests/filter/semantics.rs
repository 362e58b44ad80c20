//! Single-threaded behaviour: multiset counting, removes, full tables, accounting.

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;

use lockfree_cuckoo::{CuckooFilter, InsertError};

/// A hash whose two buckets differ (or coincide, when `distinct` is false) in `filter`.
fn hash_with_buckets(filter: &CuckooFilter, distinct: bool) -> u64 {
    (1u64..)
        .map(|k| filter.hasher().hash_one(k))
        .find(|&h| {
            let (first, second, _) = filter.slots_for_hash(h);
            (first != second) == distinct
        })
        .expect("some hash has the wanted buckets")
}

#[test]
fn inserted_items_are_present_until_removed() {
    let filter = CuckooFilter::with_capacity(1000);
    for k in 0..1000u32 {
        filter.insert(&k).unwrap();
    }
    assert!((0..1000u32).all(|k| filter.contains(&k)));
    for k in (0..1000u32).step_by(2) {
        assert!(filter.remove(&k), "{k} was inserted");
    }
    assert!((1..1000u32).step_by(2).all(|k| filter.contains(&k)));
    let still_there = (0..1000u32).step_by(2).filter(|k| filter.contains(k)).count();
    assert!(still_there <= 2, "{still_there} removed items still answer true");
    assert_eq!(filter.len(), 500);
}

#[test]
fn an_item_inserted_k_times_needs_k_removes() {
    // Four copies: an item fits four times even when its two buckets are one (as "dup"'s are
    // among this filter's 33 buckets, a chance of 1 in 33), eight times otherwise.
    let filter = CuckooFilter::with_capacity(100);
    for _ in 0..4 {
        filter.insert("dup").unwrap();
    }
    for left in (0..4).rev() {
        assert!(filter.contains("dup"));
        assert!(filter.remove("dup"));
        assert_eq!(filter.len(), left);
    }
    assert!(!filter.contains("dup"));
    assert!(!filter.remove("dup"));
}

#[test]
fn one_item_fits_eight_times_then_is_refused() {
    let filter = CuckooFilter::with_capacity(1000);
    let hash = hash_with_buckets(&filter, true);
    for copy in 0..8 {
        assert_eq!(filter.insert_hash(hash), Ok(()), "copy {copy}");
    }
    assert_eq!(filter.insert_hash(hash), Err(InsertError::Full));
    assert_eq!(filter.len(), 8);
    assert_eq!(filter.stats().refused_inserts, 1);
    for _ in 0..8 {
        assert!(filter.remove_hash(hash));
    }
    assert!(!filter.contains_hash(hash));
}

#[test]
fn an_item_with_one_bucket_fits_four_times() {
    let filter = CuckooFilter::with_capacity(1000);
    let hash = hash_with_buckets(&filter, false);
    for _ in 0..4 {
        filter.insert_hash(hash).unwrap();
    }
    assert_eq!(filter.insert_hash(hash), Err(InsertError::Full));
    assert_eq!(filter.len(), 4);
}

#[test]
fn removing_an_absent_item_changes_nothing() {
    let filter = CuckooFilter::with_capacity(1000);
    for k in 0..800u64 {
        filter.insert(&k).unwrap();
    }
    let absent: Vec<u64> = (1_000_000..1_010_000).filter(|k| !filter.contains(k)).collect();
    for k in &absent {
        assert!(!filter.remove(k));
    }
    assert_eq!(filter.len(), 800);
    assert!((0..800u64).all(|k| filter.contains(&k)));
}

#[test]
fn a_full_filter_keeps_every_item_it_accepted() {
    for capacity in [10, 1_000, 50_000] {
        let filter = CuckooFilter::with_capacity(capacity);
        let mut accepted = Vec::new();
        let mut refused = 0;
        // More items than lanes: far past the point where inserts start failing.
        for k in 0..4 * filter.bucket_count() as u64 + 1 {
            match filter.insert(&k) {
                Ok(()) => accepted.push(k),
                Err(InsertError::Full) => refused += 1,
                Err(e) => panic!("unexpected {e}"),
            }
        }
        assert!(refused > 0, "capacity {capacity}: nothing refused");
        assert!(accepted.len() >= filter.capacity());
        assert_eq!(filter.len(), accepted.len());
        let missing = accepted.iter().filter(|k| !filter.contains(k)).count();
        assert_eq!(missing, 0, "capacity {capacity}: accepted items lost");
        assert_eq!(filter.stats().refused_inserts, refused);
        // Everything accepted can be removed again, and then the table is empty.
        assert!(accepted.iter().all(|k| filter.remove(k)));
        assert!(filter.is_empty());
    }
}

#[test]
fn clear_empties_the_filter_and_its_counters() {
    let mut filter = CuckooFilter::with_capacity(1000);
    for k in 0..900u32 {
        filter.insert(&k).unwrap();
    }
    filter.clear();
    assert!(filter.is_empty());
    assert_eq!(filter.load_factor(), 0.0);
    assert_eq!(filter.stats(), Default::default());
    assert!((0..900u32).all(|k| !filter.contains(&k)));
    for k in 0..900u32 {
        filter.insert(&k).unwrap();
    }
    assert_eq!(filter.len(), 900);
}

#[test]
fn load_factor_and_stats_follow_inserts() {
    let filter = CuckooFilter::with_capacity(10_000);
    for k in 0..filter.capacity() as u64 {
        filter.insert(&k).unwrap();
    }
    let load = filter.load_factor();
    assert!((0.90..=0.95).contains(&load), "load at capacity {load}");
    let stats = filter.stats();
    assert_eq!(stats.insert_paths.iter().sum::<u64>(), filter.capacity() as u64);
    assert!(stats.relocations > 0, "a filter filled to 90% must have relocated something");
    assert!(stats.insert_paths[1..].iter().sum::<u64>() > 0);
}

#[test]
fn custom_hashers_are_used() {
    let filter = CuckooFilter::builder().capacity(100).hasher(RandomState::new()).build();
    filter.insert("x").unwrap();
    assert!(filter.contains("x"));
    let hash = filter.hasher().hash_one("x");
    assert!(filter.contains_hash(hash));
    assert!(filter.remove_hash(hash));
    assert!(!filter.contains("x"));
}

#[test]
fn default_hasher_maps_an_item_the_same_way_in_every_filter_of_one_seed() {
    const SEED: u64 = 0x5EED;
    let a = CuckooFilter::builder().capacity(1000).seed(SEED).build();
    let b = CuckooFilter::builder().capacity(1000).seed(SEED).build();
    assert_eq!((a.hasher().seed(), b.hasher().seed()), (SEED, SEED));
    for k in 0..100u32 {
        let ha = a.hasher().hash_one(k);
        assert_eq!(ha, b.hasher().hash_one(k));
        assert_eq!(a.slots_for_hash(ha), b.slots_for_hash(ha));
    }

    // Without a seed each filter draws its own key, so (almost surely) some item is mapped to
    // other slots.
    let c = CuckooFilter::with_capacity(1000);
    let d = CuckooFilter::with_capacity(1000);
    assert_ne!(c.hasher().seed(), d.hasher().seed());
    let slots = |f: &CuckooFilter, k: u32| f.slots_for_hash(f.hasher().hash_one(k));
    let agreeing = (0..64u32).filter(|&k| slots(&c, k) == slots(&d, k)).count();
    assert!(agreeing < 64, "two random keys mapped all of 64 items alike");
}

#[test]
fn the_filter_is_send_sync_and_debug() {
    fn shared<T: Send + Sync + std::fmt::Debug>(_: &T) {}
    let filter = CuckooFilter::with_capacity(10);
    shared(&filter);
    filter.insert(&1u8).unwrap();
    let debug = format!("{filter:?}");
    assert!(debug.contains("len: 1"), "{debug}");
    assert!(debug.contains("capacity"), "{debug}");
}

#[test]
fn errors_describe_themselves() {
    let full = InsertError::Full.to_string();
    assert!(full.contains("full"), "{full}");
    let err = CuckooFilter::builder().capacity(usize::MAX).try_build().unwrap_err();
    assert!(err.to_string().contains(&usize::MAX.to_string()), "{err}");
    let boxed: Box<dyn std::error::Error> = Box::new(InsertError::Full);
    assert!(boxed.source().is_none());
}

/// The constructors std's `HashSet` has: `Default`, `with_hasher`, `with_capacity_and_hasher`,
/// and a public `Builder::new` with its `Default`.
#[test]
fn the_std_style_constructors_build_what_their_docs_say() {
    use lockfree_cuckoo::{Builder, DefaultHashBuilder};

    // `Default`: empty, capacity 0 (one bucket, four items), not growable.
    let filter = CuckooFilter::default();
    assert!(filter.is_empty());
    assert_eq!(filter.capacity(), CuckooFilter::with_capacity(0).capacity());
    assert_eq!(filter.capacity(), 4);
    for key in 0..4u32 {
        filter.insert(&key).unwrap();
    }
    assert_eq!(filter.insert(&4u32), Err(InsertError::Full));
    assert_eq!(filter.stats().levels, 1);
    // Each default filter draws its own random key.
    let (a, b) = (CuckooFilter::default(), CuckooFilter::default());
    assert_ne!(a.hasher().hash_one(1u64), b.hasher().hash_one(1u64));

    // `with_hasher`: capacity 0, the hasher given.
    let filter = CuckooFilter::with_hasher(RandomState::new());
    assert!(filter.is_empty());
    assert_eq!(filter.capacity(), 4);
    filter.insert("one").unwrap();
    assert!(filter.contains("one"));

    // `with_capacity_and_hasher`: the capacity of `with_capacity`, and the hasher given, so
    // that two filters of one seed merge.
    let a = CuckooFilter::with_capacity_and_hasher(1_000, DefaultHashBuilder::with_seed(3));
    let b = CuckooFilter::with_capacity_and_hasher(1_000, DefaultHashBuilder::with_seed(3));
    assert_eq!(a.capacity(), CuckooFilter::with_capacity(1_000).capacity());
    assert_eq!(a.hasher().hash_one("x"), DefaultHashBuilder::with_seed(3).hash_one("x"));
    b.insert(&7u64).unwrap();
    a.merge(&b).unwrap();
    assert!(a.contains(&7u64));
    let custom = CuckooFilter::with_capacity_and_hasher(100, RandomState::new());
    assert!(custom.capacity() >= 100);

    // `Builder::new` and `Builder::default`: the builder `CuckooFilter::builder` returns.
    let built = Builder::new().capacity(500).build();
    assert_eq!(built.capacity(), CuckooFilter::builder().capacity(500).build().capacity());
    let built = Builder::default().capacity(500).seed(3).build();
    assert_eq!(built.hasher().hash_one("x"), a.hasher().hash_one("x"));
    assert_eq!(Builder::default().build().capacity(), 4);
}

/// What the crate documentation ("Items and their types") and `insert`'s say: an item is what
/// its `Hash` impl writes, so which values of different types are one item depends on the
/// hasher.
#[test]
fn items_of_different_types_are_one_item_exactly_as_documented() {
    use lockfree_cuckoo::DefaultHashBuilder;

    let filter = CuckooFilter::builder().capacity(1_000).seed(11).build();
    let same = |a: u64, b: u64| a == b;
    let h = |item: &dyn Fn(&DefaultHashBuilder) -> u64| item(filter.hasher());

    // The default hasher: every unsigned width, non-negative signed values, `char` and `bool`
    // hash as their value.
    filter.insert(&1u32).unwrap();
    assert!(filter.contains(&1u64) && filter.contains(&1u8) && filter.contains(&1u16));
    assert!(filter.contains(&1usize) && filter.contains(&1i32) && filter.contains(&1i64));
    assert!(filter.contains(&true));
    assert!(same(h(&|s| s.hash_one('a')), h(&|s| s.hash_one(97u32))));
    assert!(filter.remove(&1u64), "1u32 and 1u64 are one item");
    assert!(filter.is_empty());
    // Negative values keep their own width below 64 bits; `isize` is sign-extended like `i64`.
    assert!(same(h(&|s| s.hash_one(-1i32)), h(&|s| s.hash_one(0xFFFF_FFFFu32))));
    assert!(!same(h(&|s| s.hash_one(-1i32)), h(&|s| s.hash_one(-1i64))));
    assert!(same(h(&|s| s.hash_one(-1isize)), h(&|s| s.hash_one(-1i64))));
    // 128-bit integers write two words, low first, and a last zero word is as if absent.
    assert!(same(h(&|s| s.hash_one(1u128)), h(&|s| s.hash_one(1u64))));
    assert!(same(h(&|s| s.hash_one((7u64, 0u64))), h(&|s| s.hash_one(7u64))));
    assert!(!same(h(&|s| s.hash_one(-1i128)), h(&|s| s.hash_one(-1i64))));
    assert!(!same(h(&|s| s.hash_one(1u128 << 64)), h(&|s| s.hash_one(1u64))));

    // Strings and bytes: `str` ends with 0xFF, `[u8]` starts with its length.
    filter.insert("ab").unwrap();
    assert!(filter.contains(&String::from("ab")));
    assert!(filter.contains(&Box::<str>::from("ab")));
    assert!(!filter.contains(&b"ab"[..]));
    assert!(!filter.contains(&vec![b'a', b'b']));
    assert!(!filter.contains(b"ab"), "[u8; 2] hashes as its slice");
    assert!(same(h(&|s| s.hash_one(&b"ab"[..])), h(&|s| s.hash_one([b'a', b'b']))));

    // Another hasher: SipHash writes each width as its own bytes, so widths differ.
    let sip = CuckooFilter::with_capacity_and_hasher(1_000, RandomState::new());
    sip.insert(&1u32).unwrap();
    assert!(sip.contains(&1u32));
    assert_ne!(sip.hasher().hash_one(1u32), sip.hasher().hash_one(1u64), "two items");
}
