//! Windowed filters: items present for the window after their last insert and gone within 1.5
//! windows, refreshes, removes, streams at the capacity's rate for many windows, on one thread
//! and several, and random histories against a model set on a manual clock.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use lockfree_cuckoo::{BuildError, CuckooFilter, ManualClock, WindowedFilter};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const WINDOW: Duration = Duration::from_secs(60);
const PERIOD: Duration = Duration::from_secs(30);

fn windowed(capacity: usize) -> (WindowedFilter, ManualClock) {
    let clock = ManualClock::new();
    let filter = CuckooFilter::builder()
        .capacity(capacity)
        .seed(11)
        .expire_after(WINDOW)
        .clock(clock.clone())
        .build();
    (filter, clock)
}

/// Moves the clock by `by` in steps of `step`, ticking after each.
fn run_for(filter: &WindowedFilter, clock: &ManualClock, by: Duration, step: Duration) {
    let mut left = by;
    while !left.is_zero() {
        let now = step.min(left);
        clock.advance(now);
        filter.tick();
        left -= now;
    }
}

/// Items inserted at every phase of an epoch stay present up to the window's last instant and
/// are gone 1.5 windows after (plus the ticks' granularity), with the filter ticked often.
#[test]
fn an_item_lives_between_one_window_and_one_and_a_half() {
    let step = PERIOD / 16;
    for phase in 0..16 {
        let (filter, clock) = windowed(1_000);
        run_for(&filter, &clock, PERIOD * 3 + step * phase, step);
        filter.insert("item").unwrap();
        let mut alive = Duration::ZERO;
        while filter.contains("item") {
            run_for(&filter, &clock, step, step);
            alive += step;
            assert!(
                alive <= WINDOW * 3 / 2 + step * 2,
                "phase {phase}: still present at {alive:?}"
            );
        }
        assert!(alive >= WINDOW, "phase {phase}: gone after {alive:?}, inside the window");
    }
}

/// Lookups match lanes whatever their age only once the sweep of the epoch is done: before,
/// and at every step of the sweep, the entries it has yet to empty are absent, and live ones
/// present.
#[test]
fn expired_items_are_absent_at_every_step_of_their_sweep() {
    let (filter, clock) = windowed(1_000);
    let old: Vec<u32> = (0..400).collect();
    let young: Vec<u32> = (1_000..1_300).collect();
    old.iter().for_each(|k| filter.insert(k).unwrap());
    run_for(&filter, &clock, PERIOD * 2, PERIOD);
    young.iter().for_each(|k| filter.insert(k).unwrap());
    clock.advance(PERIOD);
    assert!(filter.start_epoch_unswept(), "epoch 3 did not start");
    // Found among the old ones: false positives alone, at most a few at this load.
    let found = |keys: &[u32]| keys.iter().filter(|k| filter.contains(k)).count();
    let mut swept = 0;
    loop {
        assert!(found(&old) <= 3, "{} expired items present, {swept} buckets swept", found(&old));
        assert_eq!(found(&young), young.len(), "{swept} buckets swept");
        if !filter.sweep_claim(16) {
            break;
        }
        swept += 16;
    }
    assert_eq!(filter.stats().expired_entries, old.len() as u64);
}

#[test]
fn a_refresh_restarts_the_window_and_adds_no_entry() {
    let (filter, clock) = windowed(1_000);
    filter.insert(&1u32).unwrap();
    run_for(&filter, &clock, WINDOW * 9 / 10, Duration::from_secs(1));
    filter.insert(&1u32).unwrap();
    assert_eq!(filter.len(), 1);
    run_for(&filter, &clock, WINDOW * 9 / 10, Duration::from_secs(1));
    assert!(filter.contains(&1u32), "the refresh did not restart the window");
    run_for(&filter, &clock, WINDOW, Duration::from_secs(1));
    assert!(!filter.contains(&1u32));
    assert_eq!(filter.len(), 0);
    assert_eq!(filter.stats().expired_entries, 1);
}

#[test]
fn removes_take_the_item_and_answer_false_after() {
    let (filter, _) = windowed(1_000);
    for k in 0..100u32 {
        filter.insert(&k).unwrap();
    }
    for k in 0..100u32 {
        assert!(filter.remove(&k), "{k}");
        assert!(!filter.remove(&k), "{k} removed twice");
    }
    assert_eq!(filter.len(), 0);
}

/// Nothing expires while nobody inserts or ticks; the first tick then starts one epoch, not
/// the many the clock has passed, so an item never vanishes at once.
#[test]
fn a_late_maintainer_keeps_items_longer_never_shorter() {
    let (filter, clock) = windowed(1_000);
    filter.insert("old").unwrap();
    clock.advance(WINDOW * 10);
    assert!(filter.contains("old"), "stale, not lost: no expiry work was done");
    filter.tick();
    filter.insert("new").unwrap();
    for _ in 0..3 {
        filter.tick();
    }
    assert!(filter.contains("new"));
    clock.advance(WINDOW - Duration::from_nanos(1));
    filter.tick();
    filter.tick();
    assert!(filter.contains("new"), "the late ticks started several epochs at once");
}

/// A stream of distinct items at `capacity / window` a second, for 20 windows, with no tick
/// at all: the inserts' own sweeps keep room, so nothing is refused, and `len` stays within the
/// 1.5 windows of items the table is sized for.
#[test]
#[cfg_attr(miri, ignore = "hundreds of thousands of items")]
fn a_stream_at_the_capacity_rate_runs_without_refusals() {
    let capacity = 10_000;
    let (filter, clock) = windowed(capacity);
    let per_second = capacity as u64 / WINDOW.as_secs();
    let mut next = 0u64;
    let mut most = 0;
    for _ in 0..20 * WINDOW.as_secs() {
        for _ in 0..per_second {
            filter.insert(&next).unwrap_or_else(|e| panic!("item {next}: {e}"));
            next += 1;
        }
        clock.advance(Duration::from_secs(1));
        most = most.max(filter.len());
    }
    assert_eq!(filter.stats().refused_inserts, 0);
    assert!(most <= capacity * 2, "{most} entries held");
    // The last window's items are all present.
    let recent = next - capacity as u64;
    assert!((recent..next).all(|k| filter.contains(&k)));
    // Items of ten windows ago are gone, but for false positives.
    let stale = (0..capacity as u64).filter(|k| filter.contains(k)).count();
    assert!(stale <= capacity / 500, "{stale} of {capacity} old items present");
}

/// The stream above on four threads sharing the filter, the clock moved by a fifth: each
/// thread's items of the last window are present when it looks, and nothing is refused.
#[test]
#[cfg_attr(miri, ignore = "hundreds of thousands of items")]
fn threads_streaming_at_the_capacity_rate_lose_nothing_in_the_window() {
    let capacity = 20_000;
    let (filter, clock) = windowed(capacity);
    let filter = Arc::new(filter);
    let done = Arc::new(AtomicBool::new(false));
    let ticker = {
        let (filter, done) = (Arc::clone(&filter), Arc::clone(&done));
        std::thread::spawn(move || {
            while !done.load(Ordering::Relaxed) {
                filter.tick();
                std::thread::yield_now();
            }
        })
    };
    // Each thread inserts its share of a second's items, then waits for the others before the
    // clock moves (the last thread to arrive moves it).
    let threads = 4u64;
    let per_second = capacity as u64 / WINDOW.as_secs() / threads;
    let barrier = Arc::new(std::sync::Barrier::new(threads as usize));
    // Each returns how many of its items it found missing inside the window, and how many
    // inserts were refused: a failed assertion inside would leave the others at the barrier.
    let workers: Vec<_> = (0..threads)
        .map(|t| {
            let (filter, clock, barrier) =
                (Arc::clone(&filter), clock.clone(), Arc::clone(&barrier));
            std::thread::spawn(move || {
                let (mut next, mut lost, mut refused) = (0u64, 0, 0);
                for second in 0..10 * WINDOW.as_secs() {
                    for _ in 0..per_second {
                        refused += usize::from(filter.insert(&(t, next)).is_err());
                        next += 1;
                    }
                    // Items inserted within the last window (59 whole seconds) are present.
                    let from = next.saturating_sub(per_second * (WINDOW.as_secs() - 1));
                    if second % 7 == 0 {
                        lost += (from..next).filter(|&k| !filter.contains(&(t, k))).count();
                    }
                    if barrier.wait().is_leader() {
                        clock.advance(Duration::from_secs(1));
                    }
                    barrier.wait();
                }
                (lost, refused)
            })
        })
        .collect();
    for (t, worker) in workers.into_iter().enumerate() {
        assert_eq!(worker.join().unwrap(), (0, 0), "thread {t}: (lost, refused)");
    }
    done.store(true, Ordering::Relaxed);
    ticker.join().unwrap();
    assert_eq!(filter.stats().refused_inserts, 0);
}

/// Random histories of inserts, removes and lookups of a few hundred keys, with the clock
/// moving by random steps and ticks between, against a model: each key's last insert time, or
/// none once removed. A key inserted less than a window ago and not removed since is present;
/// one last inserted (or removed) two windows ago is absent, but for false positives.
#[test]
#[cfg_attr(miri, ignore = "thousands of operations")]
fn random_histories_agree_with_a_model_set() {
    for seed in 0..20 {
        let mut rng = StdRng::seed_from_u64(seed);
        let (filter, clock) = windowed(1_000);
        let mut model: HashMap<u32, Option<Duration>> = HashMap::new();
        let mut now = Duration::ZERO;
        let mut false_positives = 0;
        let mut absent_checks = 0;
        for _ in 0..5_000 {
            let key = rng.random_range(0..300u32);
            match rng.random_range(0..10) {
                0..=3 => {
                    filter.insert(&key).unwrap();
                    model.insert(key, Some(now));
                }
                4 => {
                    let removed = filter.remove(&key);
                    let live = matches!(model.get(&key), Some(Some(t)) if now - *t < WINDOW);
                    if live {
                        assert!(removed, "seed {seed}: a live key's remove answered false");
                    }
                    model.insert(key, None);
                }
                5..=7 => {
                    let present = filter.contains(&key);
                    match model.get(&key) {
                        Some(Some(t)) if now - *t < WINDOW => {
                            assert!(present, "seed {seed}: key {key} lost {:?} in", now - *t)
                        }
                        Some(Some(t)) if now - *t >= WINDOW * 2 => {
                            absent_checks += 1;
                            false_positives += usize::from(present);
                        }
                        None => {
                            absent_checks += 1;
                            false_positives += usize::from(present);
                        }
                        _ => {}
                    }
                }
                _ => {
                    let step =
                        Duration::from_millis(rng.random_range(0..PERIOD.as_millis() as u64 / 4));
                    clock.advance(step);
                    now += step;
                    filter.tick();
                }
            }
        }
        // A key removed while another copy of its fingerprint lived, or inserted twice at
        // once, can stay: far below one in a hundred checks.
        assert!(
            false_positives * 100 <= absent_checks.max(100),
            "seed {seed}: {false_positives} of {absent_checks} absent keys present"
        );
    }
}

#[test]
fn windows_below_a_millisecond_and_growth_are_refused() {
    let short = CuckooFilter::builder().capacity(10).expire_after(Duration::from_micros(999));
    assert!(matches!(short.try_build(), Err(BuildError::WindowTooShort { .. })));
    let grown = CuckooFilter::builder().capacity(10).growable().expire_after(WINDOW);
    assert!(matches!(grown.try_build(), Err(BuildError::WindowWithGrowth)));
}

#[test]
fn a_full_filter_refuses_and_keeps_what_it_has() {
    let (filter, _) = windowed(100);
    let accepted: Vec<u32> = (0..10_000u32).filter(|k| filter.insert(k).is_ok()).collect();
    assert!(accepted.len() >= filter.capacity(), "{} accepted", accepted.len());
    assert!(accepted.iter().all(|k| filter.contains(k)));
}

/// The false-positive rate at capacity, the bar of 0.05%: a stream of distinct items at
/// the capacity's rate for five windows, looked up at its fullest (just before an epoch starts,
/// with 1.5 windows of items held) with a million items never inserted.
#[test]
#[cfg_attr(miri, ignore = "millions of lookups")]
fn the_false_positive_rate_at_capacity_is_below_five_in_ten_thousand() {
    let capacity = 100_000;
    let (filter, clock) = windowed(capacity);
    let per_second = capacity as u64 / WINDOW.as_secs();
    let mut next = 0u64;
    // Five windows, ending a second before the 11th epoch would start.
    for _ in 0..5 * WINDOW.as_secs() - 1 {
        for _ in 0..per_second {
            filter.insert(&next).unwrap();
            next += 1;
        }
        clock.advance(Duration::from_secs(1));
    }
    let held = filter.len();
    assert!(held > capacity * 14 / 10, "only {held} entries held: not the fullest point");
    let lookups = 1_000_000u64;
    let positives = (0..lookups).filter(|k| filter.contains(&(u64::MAX - k))).count();
    let rate = positives as f64 / lookups as f64;
    assert!(rate <= 0.0005, "false-positive rate {:.4}% with {held} entries", rate * 100.0);
    eprintln!("false-positive rate {:.4}% with {held} entries held", rate * 100.0);
}

/// The words of a windowed filter's snapshot: what a replica must hold alike (the window
/// block before them holds the time into the epoch, which is each filter's own).
fn words(filter: &WindowedFilter) -> Vec<u8> {
    let bytes = filter.to_bytes();
    bytes[96..bytes.len() - 8].to_vec()
}

/// A primary and a replica built alike, inserts sweeping or not.
fn primary_and_replica(sweep_on_insert: bool) -> (WindowedFilter, ManualClock, WindowedFilter) {
    let build = |clock: &ManualClock| {
        CuckooFilter::builder()
            .capacity(2_000)
            .seed(5)
            .expire_after(WINDOW)
            .sweep_on_insert(sweep_on_insert)
            .clock(clock.clone())
            .build()
    };
    let clock = ManualClock::new();
    let primary = build(&clock);
    // The replica's clock never moves: only `follow` starts its epochs.
    let replica = build(&ManualClock::new());
    (primary, clock, replica)
}

/// `f` on a thread of its own: a replica's operations run on other threads than the
/// primary's, as in another process.
fn elsewhere<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    std::thread::scope(|s| s.spawn(f).join().unwrap())
}

/// Applies the same random history to a primary, whose clock moves and which ticks now and
/// then, and to a replica that follows each epoch the primary's tick starts: whether their
/// answers, words and epochs were equal at every step.
fn replay(sweep_on_insert: bool, seed: u64) -> bool {
    let mut rng = StdRng::seed_from_u64(seed);
    let (primary, clock, replica) = primary_and_replica(sweep_on_insert);
    let mut same = true;
    for _ in 0..3_000 {
        let key = rng.random_range(0..3_000u32);
        match rng.random_range(0..20) {
            0..=13 => {
                let inserted = primary.insert(&key).is_ok();
                same &= elsewhere(|| replica.insert(&key).is_ok()) == inserted;
            }
            14..=16 => {
                let removed = primary.remove(&key);
                same &= elsewhere(|| replica.remove(&key)) == removed;
            }
            17 => clock.advance(PERIOD / 4),
            _ => {
                if primary.tick() {
                    let epoch = primary.epoch();
                    assert!(elsewhere(|| replica.follow(epoch)) || !same);
                }
            }
        }
        // The counts first: a snapshot (`words`) finishes the epoch's sweep, so the words
        // alone would not show a sweep that one of them left undone.
        same &= primary.len() == replica.len();
        same &= primary.epoch() == replica.epoch() && words(&primary) == words(&replica);
    }
    same
}

/// Without expiry work in inserts, a replica that applies the primary's operations in order and
/// follows its epochs holds the same words at every step, over dozens of windows of churn; with
/// it (the default), inserts sweep at different moments in the two and their words part.
#[test]
#[cfg_attr(miri, ignore = "thousands of operations")]
fn a_replica_following_the_epochs_holds_the_same_words() {
    for seed in 0..3 {
        assert!(replay(false, seed), "seed {seed}: the replica's words differ");
    }
    assert!((0..3).any(|seed| !replay(true, seed)), "inserts that sweep kept replicas equal");
}

/// `tick` says whether it started an epoch; `follow` starts up to three at once and refuses
/// more, or an epoch behind, doing nothing.
#[test]
fn tick_and_follow_report_the_epochs() {
    let (primary, clock, replica) = primary_and_replica(false);
    assert!(!primary.tick(), "no period has passed");
    clock.advance(PERIOD);
    assert!(primary.tick());
    assert!(!primary.tick(), "one epoch a period");
    assert!(replica.follow(3));
    assert_eq!(replica.epoch(), 3);
    assert!(!replica.follow(7), "four ahead");
    assert!(!replica.follow(2), "behind");
    assert!(replica.follow(3), "the current one");
    assert_eq!(replica.epoch(), 3);
    // Epochs wrap at 2^20.
    let far = CuckooFilter::builder().capacity(10).expire_after(WINDOW).build();
    assert!(!far.follow((1 << 20) - 1), "2^20 - 1 is one behind 0");
}
