//! Snapshots of windowed filters: the ages and the clock survive a save and a load (downtime
//! does not count), expired entries are not copied, items inside their window are copied while
//! other threads insert and epochs start, and forged window blocks are refused.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use lockfree_cuckoo::{
    encoding_of_snapshot, ChunkError, Clock, CuckooFilter, Encoding, LoadError, ManualClock,
    WindowedFilter,
};

use crate::common::reseal;

const WINDOW: Duration = Duration::from_secs(60);
const PERIOD: Duration = Duration::from_secs(30);
const STEP: Duration = Duration::from_millis(1875); // a sixteenth of the period

/// Header offsets (`FORMAT.md`): the flags, and the window block's fields after the header.
const AT_FLAGS: usize = 12;
const AT_WINDOW: usize = 72;
const AT_EPOCH: usize = 80;
const AT_INTO_EPOCH: usize = 88;

fn windowed(clock: &ManualClock) -> WindowedFilter {
    CuckooFilter::builder()
        .capacity(1_000)
        .seed(3)
        .expire_after(WINDOW)
        .clock(clock.clone())
        .build()
}

fn load(bytes: &[u8], clock: &ManualClock) -> Result<WindowedFilter, LoadError> {
    CuckooFilter::builder().expire_after(Duration::from_secs(1)).clock(clock.clone()).load(bytes)
}

fn run_for(filter: &WindowedFilter, clock: &ManualClock, by: Duration) {
    let mut left = by;
    while !left.is_zero() {
        let step = STEP.min(left);
        clock.advance(step);
        filter.tick();
        left -= step;
    }
}

/// An item's window runs on across a save and a load in a process whose clock starts afresh,
/// whenever in the epoch the item was inserted and the snapshot taken: it is present for a
/// window of running time and gone within 1.5 windows (plus the ticks' granularity).
#[test]
#[cfg_attr(miri, ignore = "too slow under Miri")]
fn the_window_runs_on_across_a_save_and_a_load() {
    for phase in 0..16u32 {
        for saved_after in [STEP, PERIOD, WINDOW - STEP, WINDOW + PERIOD / 2] {
            let clock = ManualClock::new();
            let filter = windowed(&clock);
            run_for(&filter, &clock, PERIOD * 3 + STEP * phase);
            filter.insert("item").unwrap();
            run_for(&filter, &clock, saved_after);
            let bytes = filter.to_bytes();
            drop(filter);
            let later = ManualClock::new();
            later.advance(Duration::from_secs(86_400)); // another origin: only running time counts
            let filter = load(&bytes, &later).unwrap();
            let mut alive = saved_after;
            while filter.contains("item") {
                run_for(&filter, &later, STEP);
                alive += STEP;
                assert!(
                    alive <= WINDOW * 3 / 2 + STEP * 2,
                    "phase {phase}, saved after {saved_after:?}: still present at {alive:?}"
                );
            }
            assert!(
                alive >= WINDOW,
                "phase {phase}, saved after {saved_after:?}: gone after {alive:?}"
            );
        }
    }
}

/// A load gives back the same entries, window, size and clock: saved again at once, the bytes
/// are the same.
#[test]
fn a_snapshot_loads_back_to_the_same_filter() {
    let clock = ManualClock::new();
    let filter = windowed(&clock);
    for k in 0..400u32 {
        filter.insert(&k).unwrap();
        if k % 50 == 0 {
            run_for(&filter, &clock, STEP * 3);
        }
    }
    let bytes = filter.to_bytes();
    assert_eq!(encoding_of_snapshot(&bytes).unwrap(), Encoding::Windowed);
    let loaded = load(&bytes, &ManualClock::new()).unwrap();
    assert_eq!(loaded.to_bytes(), bytes);
    assert_eq!(
        (loaded.window(), loaded.capacity(), loaded.bucket_count(), loaded.len()),
        (filter.window(), filter.capacity(), filter.bucket_count(), filter.len())
    );
    for k in 0..if cfg!(miri) { 500 } else { 2_000u32 } {
        assert_eq!(loaded.contains(&k), filter.contains(&k), "key {k}");
    }
}

/// Entries that expired but are not swept yet (an insert started the epoch; nobody swept
/// since) are emptied before the copy, so that no later epoch can read their tag as its own.
#[test]
fn expired_entries_are_swept_before_the_copy() {
    let clock = ManualClock::new();
    let filter = windowed(&clock);
    filter.insert("old").unwrap();
    run_for(&filter, &clock, PERIOD * 2);
    clock.advance(PERIOD); // epoch 3 is due, in which "old" is dead; no tick starts it
    let mut inserted = 0u32;
    while filter.contains("old") {
        // Every 64th insert of a thread starts a due epoch without sweeping.
        filter.insert(&inserted).unwrap();
        inserted += 1;
        assert!(inserted <= 64, "an insert starts the due epoch");
    }
    assert_eq!(filter.len(), inserted as usize + 1, "the dead entry is not swept yet");
    let mut bytes = Vec::new();
    let info = filter.write_to(&mut bytes).unwrap();
    assert_eq!(info.items, u64::from(inserted), "the dead entry was copied");
    assert_eq!(load(&bytes, &ManualClock::new()).unwrap().len(), inserted as usize);
}

/// Writers insert and a maintainer moves the clock and ticks while snapshots are taken: every
/// key whose insert started less than a window before the snapshot returned is in the loaded
/// filter.
#[test]
#[cfg_attr(miri, ignore = "threads for a second")]
fn items_inside_their_window_survive_a_live_snapshot() {
    const WRITERS: usize = 2;
    const KEYS: usize = 50_000;
    let clock = ManualClock::new();
    let filter = CuckooFilter::builder()
        .capacity(WRITERS * KEYS)
        .expire_after(WINDOW)
        .clock(clock.clone())
        .build();
    // Per writer: the clock (ns) read before each key's insert, and how many keys are done.
    let started: Vec<Vec<AtomicU64>> =
        (0..WRITERS).map(|_| (0..KEYS).map(|_| AtomicU64::new(0)).collect()).collect();
    let done: Vec<AtomicUsize> = (0..WRITERS).map(|_| AtomicUsize::new(0)).collect();
    let stop = AtomicBool::new(false);
    let (mut checked, mut snapshots) = (0, 0);
    std::thread::scope(|s| {
        for w in 0..WRITERS {
            let (filter, clock, started, done) = (&filter, &clock, &started[w], &done[w]);
            s.spawn(move || {
                for (i, started) in started.iter().enumerate() {
                    started.store(clock.now().as_nanos() as u64, Ordering::Relaxed);
                    filter.insert(&(w, i)).unwrap();
                    done.store(i + 1, Ordering::Release);
                }
            });
        }
        s.spawn(|| {
            while !stop.load(Ordering::Relaxed) {
                clock.advance(STEP / 8);
                filter.tick();
                std::thread::yield_now();
            }
        });
        loop {
            let before: Vec<usize> = done.iter().map(|d| d.load(Ordering::Acquire)).collect();
            snapshots += 1;
            let bytes = filter.to_bytes();
            let returned = clock.now().as_nanos() as u64;
            let loaded = load(&bytes, &ManualClock::new()).unwrap();
            for (w, &n) in before.iter().enumerate() {
                for (i, started) in started[w][..n].iter().enumerate() {
                    let age = returned.saturating_sub(started.load(Ordering::Relaxed));
                    if age < WINDOW.as_nanos() as u64 {
                        checked += 1;
                        assert!(loaded.contains(&(w, i)), "key ({w}, {i}) aged {age} ns lost");
                    }
                }
            }
            if snapshots >= 20 && before.iter().all(|&n| n == KEYS) {
                break;
            }
        }
        stop.store(true, Ordering::Relaxed);
    });
    eprintln!("{snapshots} snapshots, {checked} keys checked, clock at {:?}", clock.now());
    assert!(checked > 0, "no key was inside its window at a snapshot");
}

/// A snapshot loads as the kind of filter it was taken of, and nothing else.
#[test]
fn windowed_and_other_snapshots_do_not_mix() {
    let clock = ManualClock::new();
    let windowed_bytes = windowed(&clock).to_bytes();
    let plain_bytes = CuckooFilter::with_capacity(100).to_bytes();
    assert!(matches!(
        CuckooFilter::from_bytes(&windowed_bytes),
        Err(LoadError::EncodingMismatch { expected: Encoding::Plain, found: Encoding::Windowed })
    ));
    assert!(matches!(
        load(&plain_bytes, &clock),
        Err(LoadError::EncodingMismatch { expected: Encoding::Windowed, found: Encoding::Plain })
    ));
}

/// Forged window blocks and flags are refused with the field named, and every truncation is
/// an error, never a panic.
#[test]
fn forged_window_blocks_are_refused() {
    let clock = ManualClock::new();
    let filter = windowed(&clock);
    filter.insert("a").unwrap();
    let bytes = filter.to_bytes();
    let forged = |at: usize, value: u64| {
        let mut bytes = bytes.clone();
        bytes[at..at + 8].copy_from_slice(&value.to_le_bytes());
        reseal(&mut bytes);
        load(&bytes, &clock)
    };
    let field_of = |result: Result<WindowedFilter, LoadError>| match result {
        Err(LoadError::InconsistentHeader { field, .. }) => field,
        other => panic!("expected an inconsistent header, got {other:?}"),
    };
    assert_eq!(field_of(forged(AT_WINDOW, 999_999)), "window");
    assert_eq!(field_of(forged(AT_EPOCH, 1 << 20)), "epoch");
    let flags = u64::from_le_bytes(bytes[AT_FLAGS..AT_FLAGS + 8].try_into().unwrap());
    // Plain words behind a window block, the lengths made to agree: refused by the flags.
    let plain = CuckooFilter::builder().bucket_count(32).build().to_bytes();
    let mut dressed = plain[..AT_WINDOW].to_vec();
    dressed[AT_FLAGS] |= 4;
    dressed.extend(&bytes[AT_WINDOW..AT_WINDOW + 24]);
    dressed.extend(&plain[AT_WINDOW..]);
    reseal(&mut dressed);
    let refused = CuckooFilter::from_bytes(&dressed);
    assert!(
        matches!(refused, Err(LoadError::InconsistentHeader { field: "flags", .. })),
        "{refused:?}"
    );
    let both = forged(AT_FLAGS, flags | 1);
    assert!(matches!(both, Err(LoadError::InconsistentHeader { .. })), "both blocks: {both:?}");
    // Any time into the epoch loads: more than a period starts the next epoch at the first tick.
    let late = forged(AT_INTO_EPOCH, u64::MAX).unwrap();
    assert!(late.contains("a"));
    let step = if cfg!(miri) { 97 } else { 1 };
    for len in (0..bytes.len()).step_by(step) {
        assert!(
            matches!(load(&bytes[..len], &clock), Err(LoadError::Truncated { .. })),
            "a truncation to {len} bytes loaded or failed otherwise"
        );
    }
}

/// Every chunk of a chunked snapshot of `filter`, at most `max` bytes each, concatenated.
fn chunks(filter: &WindowedFilter, max: usize) -> Result<Vec<u8>, ChunkError> {
    let mut snapshot = filter.chunked_snapshot();
    let mut bytes = Vec::new();
    while snapshot.write_next_windowed(filter, max, &mut bytes)? > 0 {}
    assert!(snapshot.is_done());
    Ok(bytes)
}

/// A filter that no one writes gives the bytes of `to_bytes` in chunks of any size, with
/// entries of several ages and the expired ones gone.
#[test]
#[cfg_attr(miri, ignore = "too slow under Miri")]
fn a_chunked_snapshot_gives_the_bytes_of_to_bytes() {
    let clock = ManualClock::new();
    let filter = windowed(&clock);
    for i in 0..600u32 {
        filter.insert(&i).unwrap();
        if i % 100 == 99 {
            run_for(&filter, &clock, PERIOD);
        }
    }
    let whole_len = filter.to_bytes().len();
    let snapshot = filter.chunked_snapshot();
    assert_eq!(snapshot.total_bytes(), whole_len as u64);
    let whole = filter.to_bytes();
    assert!(filter.len() < 600 && !filter.is_empty(), "{}", filter.len());
    for max in [1, 7, 8, 9, 100, 4096, whole.len() - 1, whole.len(), usize::MAX] {
        assert!(chunks(&filter, max).unwrap() == whole, "chunks of {max}");
    }
    let loaded = load(&chunks(&filter, 1000).unwrap(), &clock).unwrap();
    assert_eq!(loaded.len(), filter.len());
    assert_eq!(loaded.epoch(), filter.epoch());
}

/// An epoch started or an item inserted before the last chunk ends the snapshot, and the
/// refused call writes nothing.
#[test]
fn an_epoch_or_an_insert_during_a_chunked_snapshot_ends_it() {
    let clock = ManualClock::new();
    let filter = windowed(&clock);
    filter.insert("a").unwrap();
    let len = filter.to_bytes().len();

    let mut snapshot = filter.chunked_snapshot();
    let mut bytes = Vec::new();
    snapshot.write_next_windowed(&filter, len / 2, &mut bytes).unwrap();
    clock.advance(PERIOD);
    assert!(filter.tick());
    assert_eq!(snapshot.write_next_windowed(&filter, len, &mut bytes), Err(ChunkError::Changed));
    assert_eq!(bytes.len(), len / 2);

    let mut snapshot = filter.chunked_snapshot();
    let mut bytes = Vec::new();
    snapshot.write_next_windowed(&filter, len / 2, &mut bytes).unwrap();
    filter.insert("b").unwrap();
    assert_eq!(snapshot.write_next_windowed(&filter, len, &mut bytes), Err(ChunkError::Changed));
    assert_eq!(bytes.len(), len / 2);

    // Another filter, windowed or not, is refused at once; so is a windowed snapshot given to
    // a plain filter's method, and a plain one to the windowed method.
    let mut snapshot = filter.chunked_snapshot();
    let other = CuckooFilter::builder().capacity(1_000).seed(4).expire_after(WINDOW).build();
    let refused = snapshot.write_next_windowed(&other, 8, &mut Vec::new());
    assert_eq!(refused, Err(ChunkError::Changed));
    let plain = CuckooFilter::with_capacity(1_000);
    assert_eq!(snapshot.write_next(&plain, 8, &mut Vec::new()), Err(ChunkError::Changed));
    let mut plain_snapshot = plain.chunked_snapshot();
    let refused = plain_snapshot.write_next_windowed(&filter, 8, &mut Vec::new());
    assert_eq!(refused, Err(ChunkError::Changed));
}
