//! A table on huge pages (the default for tables of 2 MiB and more on Linux) behaves exactly as
//! one on the heap: the same answers, the same snapshot bytes, clones and loads that keep every
//! item.

use lockfree_cuckoo::CuckooFilter;

const CAPACITY: usize = 1_500_000;

/// The default hasher's seed: filters compared byte for byte must hash alike.
const SEED: u64 = 0x5EED;

fn filled(huge_pages: bool) -> CuckooFilter {
    let filter =
        CuckooFilter::builder().capacity(CAPACITY).seed(SEED).huge_pages(huge_pages).build();
    assert!(filter.memory_usage() > 2 << 20, "the table must span a huge page");
    for i in 0..CAPACITY as u64 {
        filter.insert(&i).unwrap();
    }
    filter
}

#[test]
fn huge_pages_change_nothing_but_placement() {
    let mapped = filled(true);
    let heap = filled(false);
    assert_eq!(mapped.len(), heap.len());
    assert_eq!(mapped.to_bytes(), heap.to_bytes());
    assert!((0..CAPACITY as u64).all(|i| mapped.contains(&i)));
    for i in (0..CAPACITY as u64).step_by(3) {
        assert!(mapped.remove(&i));
        assert!(heap.remove(&i));
    }
    assert_eq!(mapped.to_bytes(), heap.to_bytes());

    let copy = mapped.clone();
    let loaded = CuckooFilter::from_bytes(&heap.to_bytes()).unwrap();
    drop(mapped);
    for filter in [&copy, &loaded] {
        assert_eq!(filter.len(), heap.len());
        assert!((0..CAPACITY as u64).filter(|i| i % 3 != 0).all(|i| filter.contains(&i)));
    }
    assert_eq!(copy.to_bytes(), heap.to_bytes());
}

#[test]
fn a_cleared_table_on_huge_pages_is_empty_and_reusable() {
    let mut filter = filled(true);
    filter.clear();
    assert!(filter.is_empty());
    assert!((0..1000u64).all(|i| !filter.contains(&i)));
    filter.insert(&7u64).unwrap();
    assert!(filter.contains(&7u64));
}
