//! Many threads on one filter, oversubscribing the cores so the scheduler preempts threads in
//! the middle of relocations, in both bucket encodings (a semi-sorted write re-sorts its bucket,
//! so fingerprints change lanes under readers). The `#[ignore]`d variants are the long stress
//! runs that `.ci/run` runs in release.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::thread;

use lockfree_cuckoo::{CuckooFilter, DefaultHashBuilder, Layout, Plain, SemiSorted};

/// A filter of layout `L`, to share.
fn filter<L: Layout>(capacity: usize) -> Arc<CuckooFilter<DefaultHashBuilder, L>> {
    Arc::new(CuckooFilter::builder().capacity(capacity).layout::<L>().build())
}

/// Keys owned by thread `t`: disjoint ranges, so threads never touch each other's items.
fn key(owner: u64, i: u64) -> u64 {
    owner << 40 | i
}

struct ChurnReport {
    encoding: lockfree_cuckoo::Encoding,
    lookups: u64,
    false_negatives: u64,
    inserts: u64,
    removes: u64,
    final_len: usize,
    expected_len: usize,
    missing_after: usize,
    stats: lockfree_cuckoo::Stats,
}

/// Writers fill the filter to about 93% of its lanes while churners remove and re-insert their
/// own keys and readers check a stable set continuously.
fn churn<L: Layout>(capacity: usize, rounds: u64) -> ChurnReport {
    const WRITERS: u64 = 2;
    const CHURNERS: u64 = 2;
    const READERS: u64 = 3;
    let filter = filter::<L>(capacity);
    let lanes = filter.bucket_count() as u64 * 4;
    let target = lanes * 93 / 100;
    let stable = target * 3 / 10;
    let churned_each = target / 10;
    let written_each = (target - stable - CHURNERS * churned_each) / WRITERS;

    for i in 0..stable {
        filter.insert(&key(0, i)).unwrap();
    }
    for c in 0..CHURNERS {
        for i in 0..churned_each {
            filter.insert(&key(100 + c, i)).unwrap();
        }
    }

    let done = Arc::new(AtomicBool::new(false));
    let lookups = Arc::new(AtomicU64::new(0));
    let false_negatives = Arc::new(AtomicU64::new(0));
    let start = Arc::new(Barrier::new((WRITERS + CHURNERS + READERS) as usize));

    let readers: Vec<_> = (0..READERS)
        .map(|r| {
            let (filter, done, start) =
                (Arc::clone(&filter), Arc::clone(&done), Arc::clone(&start));
            let (lookups, false_negatives) = (Arc::clone(&lookups), Arc::clone(&false_negatives));
            thread::spawn(move || {
                start.wait();
                let (mut n, mut missed) = (0u64, 0u64);
                // Readers start at different offsets so they overlap different writers' work.
                let mut i = r * stable / READERS;
                while !done.load(Ordering::Relaxed) {
                    missed += u64::from(!filter.contains(&key(0, i % stable)));
                    n += 1;
                    i += 1;
                }
                lookups.fetch_add(n, Ordering::Relaxed);
                false_negatives.fetch_add(missed, Ordering::Relaxed);
            })
        })
        .collect();

    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            let (filter, start) = (Arc::clone(&filter), Arc::clone(&start));
            thread::spawn(move || {
                start.wait();
                (0..written_each).filter(|&i| filter.insert(&key(1 + w, i)).is_ok()).count()
            })
        })
        .collect();

    let churners: Vec<_> = (0..CHURNERS)
        .map(|c| {
            let (filter, start) = (Arc::clone(&filter), Arc::clone(&start));
            thread::spawn(move || {
                start.wait();
                let owner = 100 + c;
                let mut present = vec![true; churned_each as usize];
                let (mut inserts, mut removes) = (0u64, 0u64);
                for round in 0..rounds {
                    for i in (round % 2..churned_each).step_by(2) {
                        let slot = &mut present[i as usize];
                        if *slot {
                            assert!(filter.remove(&key(owner, i)), "own key {i} vanished");
                            removes += 1;
                            *slot = false;
                        }
                        // A refused re-insert (the table is nearly full) is retried next round.
                        if filter.insert(&key(owner, i)).is_ok() {
                            inserts += 1;
                            *slot = true;
                        }
                    }
                }
                (present, inserts, removes)
            })
        })
        .collect();

    let written: Vec<usize> = writers.into_iter().map(|w| w.join().unwrap()).collect();
    let churned: Vec<_> = churners.into_iter().map(|c| c.join().unwrap()).collect();
    done.store(true, Ordering::Relaxed);
    readers.into_iter().for_each(|r| r.join().unwrap());

    let mut expected_len = stable as usize + written.iter().sum::<usize>();
    let mut missing_after = (0..stable).filter(|&i| !filter.contains(&key(0, i))).count();
    let (mut inserts, mut removes) = (0, 0);
    for (c, (present, ins, rem)) in churned.iter().enumerate() {
        inserts += ins;
        removes += rem;
        for (i, &here) in present.iter().enumerate() {
            expected_len += usize::from(here);
            if here && !filter.contains(&key(100 + c as u64, i as u64)) {
                missing_after += 1;
            }
        }
    }
    ChurnReport {
        lookups: lookups.load(Ordering::Relaxed),
        false_negatives: false_negatives.load(Ordering::Relaxed),
        inserts,
        removes,
        final_len: filter.len(),
        expected_len,
        missing_after,
        stats: filter.stats(),
        encoding: filter.encoding(),
    }
}

fn check_churn(capacity: usize, rounds: u64) {
    check_churn_in::<Plain>(capacity, rounds);
    check_churn_in::<SemiSorted>(capacity, rounds);
}

fn check_churn_in<L: Layout>(capacity: usize, rounds: u64) {
    let report = churn::<L>(capacity, rounds);
    eprintln!(
        "{}, capacity {capacity}: {} lookups, {} churn inserts, {} churn removes, len {}, {:?}",
        report.encoding,
        report.lookups,
        report.inserts,
        report.removes,
        report.final_len,
        report.stats
    );
    assert_eq!(report.false_negatives, 0, "readers saw false negatives");
    assert_eq!(report.missing_after, 0, "items missing after the run");
    assert_eq!(report.final_len, report.expected_len);
    assert!(report.lookups > 0 && report.removes > 0);
}

#[test]
fn readers_never_miss_while_writers_fill_and_churn() {
    if cfg!(miri) {
        check_churn(200, 1);
    } else {
        check_churn(50_000, 4);
    }
}

#[test]
#[ignore = "long stress run; .ci/run runs it in release"]
fn stress_readers_never_miss_while_writers_fill_and_churn() {
    for (capacity, rounds) in [(200_000, 60), (2_000_000, 24)] {
        check_churn(capacity, rounds);
    }
}

/// `threads` threads insert disjoint shares of `capacity` keys at once.
fn fill_concurrently(capacity: usize, threads: u64) {
    fill_concurrently_in::<Plain>(capacity, threads);
    fill_concurrently_in::<SemiSorted>(capacity, threads);
}

fn fill_concurrently_in<L: Layout>(capacity: usize, threads: u64) {
    let filter = filter::<L>(capacity);
    let encoding = filter.encoding();
    let share = capacity as u64 / threads;
    let extra = capacity as u64 % threads;
    let start = Arc::new(Barrier::new(threads as usize));
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let (filter, start) = (Arc::clone(&filter), Arc::clone(&start));
            let count = share + u64::from(t < extra);
            thread::spawn(move || {
                start.wait();
                (0..count).filter(|&i| filter.insert(&key(t, i)).is_err()).count()
            })
        })
        .collect();
    let refused: usize = handles.into_iter().map(|h| h.join().unwrap()).sum();
    assert_eq!(refused, 0, "{encoding}, capacity {capacity}, {threads} threads: {refused} refused");
    assert_eq!(filter.len(), capacity);
    for t in 0..threads {
        let count = share + u64::from(t < extra);
        assert!((0..count).all(|i| filter.contains(&key(t, i))), "thread {t}'s keys lost");
    }
    let stats = filter.stats();
    eprintln!(
        "capacity {capacity}, {threads} threads: relocations {}, path retries {}, surplus removals {}",
        stats.relocations, stats.path_retries, stats.surplus_removals
    );
}

#[test]
fn concurrent_inserts_reach_the_promised_capacity() {
    let capacities: &[usize] =
        if cfg!(miri) { &[1, 7, 100] } else { &[1, 7, 100, 4_099, 65_536, 200_000] };
    for &capacity in capacities {
        for threads in [4, 8] {
            fill_concurrently(capacity, threads);
        }
    }
}

#[test]
#[ignore = "long stress run; .ci/run runs it in release"]
fn stress_concurrent_inserts_reach_the_promised_capacity() {
    for capacity in [1_000_003, 4_000_000] {
        for threads in [4, 8] {
            fill_concurrently(capacity, threads);
        }
    }
}

/// Threads insert and remove copies of the same few items: the multiset count must come out
/// exact, and every successful remove must match an insert.
#[test]
fn shared_items_keep_exact_counts_under_contention() {
    shared_items_keep_exact_counts_in::<Plain>();
    shared_items_keep_exact_counts_in::<SemiSorted>();
}

fn shared_items_keep_exact_counts_in<L: Layout>() {
    const THREADS: usize = 6;
    let filter = filter::<L>(if cfg!(miri) { 200 } else { 2_000 });
    // Background items push the table near full so shared items get relocated.
    let background = filter.capacity() as u64 * 9 / 10;
    for i in 0..background {
        filter.insert(&key(50, i)).unwrap();
    }
    let shared: Vec<u64> = (0..8).map(|i| key(60, i)).collect();
    let start = Arc::new(Barrier::new(THREADS));
    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            let (filter, start, shared) = (Arc::clone(&filter), Arc::clone(&start), shared.clone());
            thread::spawn(move || {
                start.wait();
                let mut held = vec![0usize; shared.len()];
                for round in 0..if cfg!(miri) { 100 } else { 2_000 } {
                    let k = (round * 7 + t) % shared.len();
                    if round % 3 == 2 && held[k] > 0 {
                        assert!(filter.remove(&shared[k]), "a held copy vanished");
                        held[k] -= 1;
                    } else if held[k] < 1 && filter.insert(&shared[k]).is_ok() {
                        held[k] += 1;
                    }
                }
                held
            })
        })
        .collect();
    let mut held = vec![0usize; shared.len()];
    for h in handles {
        for (total, mine) in held.iter_mut().zip(h.join().unwrap()) {
            *total += mine;
        }
    }
    assert_eq!(filter.len(), background as usize + held.iter().sum::<usize>());
    for (k, &copies) in shared.iter().zip(&held) {
        for _ in 0..copies {
            assert!(filter.remove(k), "fewer copies than inserted");
        }
    }
    assert_eq!(filter.len(), background as usize);
    assert!((0..background).all(|i| filter.contains(&key(50, i))));
}
