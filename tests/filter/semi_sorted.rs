//! Semi-sorted buckets (`Encoding::SemiSorted`) against the plain encoding: the same operations
//! with the same answers, the same memory and capacity, half the false positives, and snapshots
//! and merges that never mix the two. The concurrent guarantees are `concurrency.rs`'s, run in
//! both encodings, and the loom suite's, run once for each.

use lockfree_cuckoo::{CuckooFilter, Encoding, LoadError, MergeError};

fn semi_sorted(capacity: usize) -> CuckooFilter {
    CuckooFilter::builder().capacity(capacity).encoding(Encoding::SemiSorted).build()
}

/// Keys `0..n` of stream `stream`, distinct from every other stream's.
fn keys(stream: u64, n: u64) -> impl Iterator<Item = u64> {
    (0..n).map(move |i| stream << 48 | i)
}

/// False positives among `probes` never-inserted keys, in a filter filled to its promise.
fn false_positives(encoding: Encoding, capacity: usize, probes: u64) -> (u64, usize) {
    let filter = CuckooFilter::builder().capacity(capacity).encoding(encoding).seed(5).build();
    for k in keys(1, capacity as u64) {
        filter.insert(&k).expect("the promise holds");
    }
    let mut found = vec![false; 4096];
    let mut positives = 0;
    let absent: Vec<u64> = keys(2, probes).collect();
    for chunk in absent.chunks(found.len()) {
        filter.contains_batch(chunk, &mut found[..chunk.len()]);
        positives += found[..chunk.len()].iter().filter(|&&f| f).count() as u64;
    }
    (positives, filter.memory_usage())
}

#[test]
fn every_operation_answers_as_in_a_plain_filter() {
    let (semi, plain) = (semi_sorted(10_000), CuckooFilter::with_capacity(10_000));
    assert_eq!(semi.encoding(), Encoding::SemiSorted);
    assert_eq!(plain.encoding(), Encoding::Plain);
    assert_eq!(
        (semi.capacity(), semi.bucket_count(), semi.memory_usage()),
        (plain.capacity(), plain.bucket_count(), plain.memory_usage())
    );
    let items: Vec<u64> = keys(1, 10_000).collect();
    assert_eq!(semi.insert_batch(&items), items.len());
    for k in &items[..100] {
        semi.insert(k).unwrap();
    }
    assert_eq!(semi.len(), 10_100);
    let mut found = vec![false; items.len()];
    semi.contains_batch(&items, &mut found);
    assert!(found.iter().all(|&f| f), "a batch missed an item");
    assert!(items.iter().all(|k| semi.contains(k)));
    assert_eq!(semi.count(&items[0]), 2);
    assert_eq!(semi.count(&items[200]), 1);
    for k in &items[..5_000] {
        assert!(semi.remove(k), "{k} was inserted");
    }
    assert!(items[..100].iter().all(|k| semi.contains(k)), "a second copy was lost");
    assert!(items[5_000..].iter().all(|k| semi.contains(k)));
    assert_eq!(semi.len(), 5_100);
    let copy = semi.clone();
    assert_eq!((copy.encoding(), copy.len()), (Encoding::SemiSorted, 5_100));
    assert!(items[5_000..].iter().all(|k| copy.contains(k)));
    assert_eq!(semi.stats().refused_inserts, 0);
}

#[test]
fn a_semi_sorted_filter_holds_its_promise_and_refuses_without_losing() {
    let filter = CuckooFilter::builder().capacity(50_000).encoding(Encoding::SemiSorted).build();
    let promised = filter.capacity() as u64;
    for k in keys(3, promised) {
        filter.insert(&k).expect("the promise holds");
    }
    let mut extra = 0;
    while filter.insert(&(4u64 << 48 | extra)).is_ok() {
        extra += 1;
    }
    assert!(keys(3, promised).all(|k| filter.contains(&k)), "a refused insert lost an item");
    assert!((0..extra).all(|k| filter.contains(&(4u64 << 48 | k))));
    assert_eq!(filter.len() as u64, promised + extra);
    assert!(filter.load_factor() > 0.94, "{}", filter.load_factor());
}

/// The paper's point: one more fingerprint bit in the same 64-bit bucket halves the
/// false-positive rate at the same memory (`BENCHMARKS.md` measures it over 10 M keys; this
/// test's 3 M keep it quick and well inside its bounds: about 330 against 160).
#[test]
#[cfg_attr(miri, ignore = "millions of lookups")]
fn the_false_positive_rate_is_about_half_the_plain_filter_s_in_the_same_memory() {
    let (plain, plain_bytes) = false_positives(Encoding::Plain, 200_000, 3_000_000);
    let (semi, semi_bytes) = false_positives(Encoding::SemiSorted, 200_000, 3_000_000);
    assert_eq!(semi_bytes, plain_bytes);
    let ratio = semi as f64 / plain as f64;
    eprintln!("false positives of 3 M: plain {plain}, semi-sorted {semi}, ratio {ratio:.3}");
    assert!((0.35..0.65).contains(&ratio), "{semi} against {plain} false positives: {ratio:.3}");
}

/// The target of `BENCHMARKS.md` ("Semi-sorted buckets"): at most 0.55 of the plain filter's
/// false-positive rate, at the promised capacity of a million items, over 16 M absent keys
/// (about 1,900 false positives for the plain filter, so the ratio is known to about 3%).
#[test]
#[ignore = "32 M lookups; .ci/run runs it in release"]
fn stress_the_false_positive_rate_at_capacity_is_at_most_0_55_of_the_plain_filter_s() {
    let probes = 16_000_000;
    let (plain, plain_bytes) = false_positives(Encoding::Plain, 1_000_000, probes);
    let (semi, semi_bytes) = false_positives(Encoding::SemiSorted, 1_000_000, probes);
    let rate = |positives: u64| positives as f64 / probes as f64 * 100.0;
    let ratio = semi as f64 / plain as f64;
    eprintln!(
        "1 M items, {probes} absent keys: plain {plain} ({:.4}%), semi-sorted {semi} ({:.4}%), \
         ratio {ratio:.3}; {plain_bytes} bytes each",
        rate(plain),
        rate(semi)
    );
    assert_eq!(semi_bytes, plain_bytes);
    assert!(ratio <= 0.55, "{ratio:.3}");
}

#[test]
fn a_growable_semi_sorted_filter_grows_and_keeps_every_item() {
    let filter =
        CuckooFilter::builder().capacity(1_000).growable().encoding(Encoding::SemiSorted).build();
    let items: Vec<u64> = keys(5, 60_000).collect();
    for k in &items {
        filter.insert(k).expect("a growable filter grows");
    }
    assert!(filter.stats().levels >= 3, "{:?}", filter.stats());
    assert!(items.iter().all(|k| filter.contains(k)));
    for k in items.iter().step_by(2) {
        assert!(filter.remove(k));
    }
    assert!(items.iter().skip(1).step_by(2).all(|k| filter.contains(k)));
    assert_eq!(filter.len(), 30_000);
    let loaded = CuckooFilter::from_bytes(&filter.to_bytes()).expect("loads");
    assert_eq!((loaded.encoding(), loaded.len()), (Encoding::SemiSorted, 30_000));
    assert_eq!(loaded.stats().levels, filter.stats().levels);
    assert!(items.iter().skip(1).step_by(2).all(|k| loaded.contains(k)));
}

/// `SemiSortedRef` is the filter itself, typed: what either side does, the other sees, in a
/// fixed and in a grown filter, and from threads using one or the other at once.
#[test]
fn the_semi_sorted_handle_operates_on_the_filter_itself() {
    assert!(CuckooFilter::with_capacity(100).as_semi_sorted().is_none());
    for growable in [false, true] {
        let builder = CuckooFilter::builder().encoding(Encoding::SemiSorted);
        let filter =
            if growable { builder.capacity(1_000).growable() } else { builder.capacity(30_000) }
                .build();
        let semi = filter.as_semi_sorted().expect("built semi-sorted");
        let (by_handle, by_filter): (Vec<u64>, Vec<u64>) =
            (keys(6, 10_000).collect(), keys(7, 10_000).collect());
        for (a, b) in by_handle.iter().zip(&by_filter) {
            semi.insert(a).expect("fits");
            filter.insert(b).expect("fits");
        }
        assert_eq!(filter.stats().levels > 1, growable, "{:?}", filter.stats());
        assert_eq!(semi.filter().len(), 20_000);
        assert!(
            by_handle.iter().all(|k| filter.contains(k)),
            "the filter missed the handle's item"
        );
        assert!(by_filter.iter().all(|k| semi.contains(k)), "the handle missed the filter's item");
        semi.insert(&by_filter[0]).unwrap();
        assert_eq!((semi.count(&by_filter[0]), filter.count(&by_filter[0])), (2, 2));
        for (a, b) in by_handle.iter().zip(&by_filter).step_by(2) {
            assert!(filter.remove(a) && semi.remove(b));
        }
        assert_eq!(filter.len(), 10_001);
        assert!(by_handle.iter().chain(&by_filter).skip(1).step_by(2).all(|k| semi.contains(k)));
        let absent = keys(8, 100_000).filter(|k| semi.contains(k)).count();
        assert!(absent < 100, "{absent} false positives in 100,000");
    }

    let filter = semi_sorted(40_000);
    let resident: Vec<u64> = keys(9, 10_000).collect();
    assert_eq!(filter.insert_batch(&resident), resident.len());
    std::thread::scope(|scope| {
        for t in 0..2 {
            let filter = &filter;
            scope.spawn(move || {
                let semi = filter.as_semi_sorted().unwrap();
                for k in keys(10 + t, 10_000) {
                    if t == 0 { semi.insert(&k) } else { filter.insert(&k) }.expect("fits");
                    assert!(semi.contains(&k) && filter.contains(&k), "{k} just inserted");
                }
            });
        }
        for _ in 0..3 {
            let semi = filter.as_semi_sorted().unwrap();
            assert!(
                resident.iter().all(|k| semi.contains(k) && filter.contains(k)),
                "a false negative"
            );
        }
    });
    assert_eq!(filter.len(), 30_000);
}

#[test]
fn snapshots_keep_the_encoding_and_a_builder_refuses_the_other() {
    let filter = semi_sorted(5_000);
    for k in keys(6, 4_000) {
        filter.insert(&k).unwrap();
    }
    let bytes = filter.to_bytes();
    assert_eq!(bytes.len(), CuckooFilter::with_capacity(5_000).to_bytes().len());
    let loaded = CuckooFilter::from_bytes(&bytes).expect("loads");
    assert_eq!(loaded.encoding(), Encoding::SemiSorted);
    assert_eq!(loaded.to_bytes(), bytes);
    assert!(keys(6, 4_000).all(|k| loaded.contains(&k)));
    let streamed = CuckooFilter::read_from(bytes.as_slice()).expect("loads");
    assert_eq!(streamed.encoding(), Encoding::SemiSorted);

    let err = CuckooFilter::builder().encoding(Encoding::Plain).load(&bytes).unwrap_err();
    assert!(matches!(err, LoadError::EncodingMismatch { .. }), "{err:?}");
    assert!(err.to_string().contains("expected plain buckets, found semi-sorted"), "{err}");
    let plain_bytes = CuckooFilter::with_capacity(5_000).to_bytes();
    let err = CuckooFilter::builder().encoding(Encoding::SemiSorted).load(&plain_bytes);
    assert!(matches!(err, Err(LoadError::EncodingMismatch { .. })));
    // Without an encoding, a builder loads whichever the snapshot has.
    assert_eq!(CuckooFilter::builder().load(&bytes).unwrap().encoding(), Encoding::SemiSorted);
}

#[test]
fn serde_round_trips_keep_the_encoding() {
    let filter = semi_sorted(1_000);
    filter.insert("kept").unwrap();
    let json = serde_json::to_string(&filter).unwrap();
    let back: CuckooFilter = serde_json::from_str(&json).unwrap();
    assert_eq!(back.encoding(), Encoding::SemiSorted);
    assert!(back.contains("kept"));
}

#[test]
fn merges_need_the_same_encoding() {
    let shard =
        |encoding| CuckooFilter::builder().capacity(2_000).seed(9).encoding(encoding).build();
    let (a, b) = (shard(Encoding::SemiSorted), shard(Encoding::SemiSorted));
    for k in keys(7, 500) {
        a.insert(&k).unwrap();
    }
    for k in keys(8, 500) {
        b.insert(&k).unwrap();
    }
    a.merge(&b).expect("same settings");
    assert!(keys(7, 500).chain(keys(8, 500)).all(|k| a.contains(&k)));
    assert_eq!(a.len(), 1_000);

    let plain = shard(Encoding::Plain);
    let err = plain.merge(&a).unwrap_err();
    assert_eq!(
        err,
        MergeError::EncodingMismatch { ours: Encoding::Plain, theirs: Encoding::SemiSorted }
    );
    assert!(plain.is_empty(), "nothing was changed");
    assert!(matches!(a.merge(&plain), Err(MergeError::EncodingMismatch { .. })));
}

/// Items crafted from the filter's key to crowd a triangle of three buckets (`hostile.rs`) are
/// refused in a fixed semi-sorted filter as in a plain one: only the crowding item, nothing
/// lost; a growable one keeps its level count.
#[test]
fn crowding_items_crafted_with_the_key_do_no_more_harm_than_in_a_plain_filter() {
    let fixed =
        CuckooFilter::builder().capacity(10_000).seed(11).encoding(Encoding::SemiSorted).build();
    let items = fixed.crowding_items(0, 0);
    let (last, crowd) = items.split_last().unwrap();
    for item in crowd {
        fixed.insert(item).expect("the triangle holds twelve");
    }
    assert!(fixed.insert(last).is_err(), "the thirteenth finds no path");
    assert!(crowd.iter().all(|item| fixed.contains(item)), "a refusal lost an item");
    assert_eq!(fixed.len(), crowd.len());

    let growable = CuckooFilter::builder()
        .capacity(1_024)
        .seed(11)
        .growable()
        .encoding(Encoding::SemiSorted)
        .build();
    let memory = growable.memory_usage();
    for round in 0..12 {
        for (n, item) in growable.crowding_items(0, round).iter().enumerate() {
            assert_eq!(growable.insert(item).is_ok(), n != 12, "item {n} of round {round}");
        }
    }
    assert_eq!((growable.stats().levels, growable.memory_usage()), (1, memory), "a level added");
    assert_eq!(growable.stats().crowded_refusals, 12);
}
