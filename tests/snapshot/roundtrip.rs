//! Saving and loading filters: contents, counts, hashers, streams and errors of the writer.

use std::collections::hash_map::RandomState;
use std::error::Error as _;
use std::io::{self, Read, Write};

use lockfree_cuckoo::{CuckooFilter, LoadError};

use crate::common::Fnv;

/// A filter of `capacity` holding the integers below `items`, under a fixed seed, so that
/// what fits in it (eight copies of one item need its two buckets to differ) is the same in
/// every run; the round trips carry the seed like any other.
fn filled(capacity: usize, items: u64) -> CuckooFilter {
    let filter = CuckooFilter::builder().capacity(capacity).seed(0xF111ED).build();
    for k in 0..items {
        filter.insert(&k).unwrap();
    }
    filter
}

#[test]
fn round_trip_with_the_default_hasher_keeps_every_item() {
    let cases: &[(usize, u64)] = if cfg!(miri) {
        &[(300, 300), (1, 1), (4, 4)]
    } else {
        &[(12_345, 12_345), (100_000, 60_000), (1, 1), (4, 4)]
    };
    let absent = if cfg!(miri) { 300 } else { 20_000 };
    for &(capacity, items) in cases {
        let filter = filled(capacity, items);
        let bytes = filter.to_bytes();
        assert_eq!(bytes.len(), 80 + 8 * filter.bucket_count());
        let loaded = CuckooFilter::from_bytes(&bytes).unwrap();
        // The snapshot records the key that the filter drew; the loaded filter takes it.
        assert_eq!(loaded.hasher().seed(), filter.hasher().seed());
        assert_eq!(loaded.bucket_count(), filter.bucket_count());
        assert_eq!(loaded.capacity(), filter.capacity());
        assert_eq!(loaded.len(), filter.len());
        assert!((0..items).all(|k| loaded.contains(&k)), "capacity {capacity}");
        // Absent keys: the same false positives, no more.
        let fp = |f: &CuckooFilter| (items..items + absent).filter(|k| f.contains(k)).count();
        assert_eq!(fp(&loaded), fp(&filter));
        assert_eq!(loaded.to_bytes(), bytes, "a loaded filter saves back byte for byte");
        assert_eq!(loaded.stats().relocations, 0, "a loaded filter starts with fresh counters");
    }
}

#[test]
#[cfg_attr(miri, ignore = "too slow under Miri")]
fn round_trip_with_custom_hashers() {
    let filter = CuckooFilter::builder().capacity(5_000).hasher(Fnv).build();
    for k in 0..5_000u32 {
        filter.insert(&k).unwrap();
    }
    let loaded = CuckooFilter::from_bytes_with_hasher(&filter.to_bytes(), Fnv).unwrap();
    assert!((0..5_000u32).all(|k| loaded.contains(&k)));
    assert_eq!(loaded.len(), 5_000);

    let keys = RandomState::new();
    let filter = CuckooFilter::builder().capacity(1_000).hasher(keys.clone()).build();
    for k in ["a", "b", "c"] {
        filter.insert(k).unwrap();
    }
    let loaded = CuckooFilter::read_from_with_hasher(filter.to_bytes().as_slice(), keys).unwrap();
    assert!(["a", "b", "c"].iter().all(|k| loaded.contains(k)));
}

#[test]
fn a_different_hasher_is_refused() {
    let default_saved = filled(1_000, 500).to_bytes();
    let err = CuckooFilter::from_bytes_with_hasher(&default_saved, Fnv).unwrap_err();
    assert!(matches!(err, LoadError::HasherMismatch { probe: 0, .. }), "{err}");
    let message = err.to_string();
    assert!(message.contains("expected") && message.contains("found"), "{message}");

    let fnv = CuckooFilter::builder().capacity(100).hasher(Fnv).build();
    fnv.insert("x").unwrap();
    let err = CuckooFilter::from_bytes(&fnv.to_bytes()).unwrap_err();
    assert!(matches!(err, LoadError::HasherMismatch { .. }), "{err}");

    let keyed = CuckooFilter::builder().capacity(100).hasher(RandomState::new()).build();
    let err =
        CuckooFilter::from_bytes_with_hasher(&keyed.to_bytes(), RandomState::new()).unwrap_err();
    assert!(matches!(err, LoadError::HasherMismatch { .. }), "{err}");
}

#[test]
#[cfg_attr(miri, ignore = "too slow under Miri")]
fn empty_filters_round_trip() {
    for capacity in [0, 1, 1_000, 100_000] {
        let filter = CuckooFilter::with_capacity(capacity);
        let info = filter.write_to(io::sink()).unwrap();
        assert_eq!(info.items, 0);
        let loaded = CuckooFilter::from_bytes(&filter.to_bytes()).unwrap();
        assert!(loaded.is_empty());
        assert_eq!(loaded.bucket_count(), filter.bucket_count());
        assert!(!loaded.contains("anything"));
        loaded.insert("now something").unwrap();
        assert!(loaded.contains("now something"));
    }
}

#[test]
#[cfg_attr(miri, ignore = "too slow under Miri")]
fn removed_items_stay_removed() {
    let filter = filled(10_000, 10_000);
    for k in (0..10_000u64).step_by(2) {
        assert!(filter.remove(&k));
    }
    let loaded = CuckooFilter::from_bytes(&filter.to_bytes()).unwrap();
    assert_eq!(loaded.len(), 5_000);
    assert!((1..10_000u64).step_by(2).all(|k| loaded.contains(&k)));
    let ghosts = (0..10_000u64).step_by(2).filter(|k| loaded.contains(k)).count();
    let live_ghosts = (0..10_000u64).step_by(2).filter(|k| filter.contains(k)).count();
    assert_eq!(ghosts, live_ghosts, "removed items answer as in the saved filter");
}

#[test]
fn multiset_counts_are_preserved() {
    let filter = filled(1_000, 700);
    for (item, copies) in [("twice", 2), ("five", 5), ("eight", 8)] {
        for _ in 0..copies {
            filter.insert(item).unwrap();
        }
    }
    let loaded = CuckooFilter::from_bytes(&filter.to_bytes()).unwrap();
    assert_eq!(loaded.len(), 700 + 15);
    for (item, copies) in [("twice", 2), ("five", 5), ("eight", 8)] {
        for k in 0..copies {
            assert!(loaded.remove(item), "{item}: copy {k} of {copies} missing");
        }
        assert!(!loaded.contains(item), "{item}: more than {copies} copies");
    }
    assert_eq!(loaded.len(), 700);
}

#[test]
#[cfg_attr(miri, ignore = "too slow under Miri")]
fn a_loaded_filter_works_like_any_other() {
    let filter = filled(20_000, 18_000);
    let loaded = std::sync::Arc::new(CuckooFilter::from_bytes(&filter.to_bytes()).unwrap());
    std::thread::scope(|s| {
        for t in 0..4u64 {
            let loaded = &loaded;
            s.spawn(move || {
                for k in 0..500 {
                    loaded.insert(&(t, k)).unwrap();
                }
            });
        }
    });
    assert_eq!(loaded.len(), 20_000);
    assert!(loaded.stats().relocations > 0, "inserts at high load relocated");
    assert!((0..18_000u64).all(|k| loaded.contains(&k)));
    assert!((0..4u64).all(|t| (0..500).all(|k| loaded.contains(&(t, k)))));
}

/// Hands out at most a few bytes a call, with an `Interrupted` error now and then.
struct Dribble<'a> {
    bytes: &'a [u8],
    calls: usize,
}

impl Read for Dribble<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.calls += 1;
        if self.calls % 5 == 0 {
            return Err(io::Error::new(io::ErrorKind::Interrupted, "try again"));
        }
        let n = buf.len().min(self.calls % 7 + 1).min(self.bytes.len());
        buf[..n].copy_from_slice(&self.bytes[..n]);
        self.bytes = &self.bytes[n..];
        Ok(n)
    }
}

#[test]
#[cfg_attr(miri, ignore = "too slow under Miri")]
fn read_from_copes_with_short_reads_and_interruptions() {
    let filter = filled(2_000, 1_900);
    let bytes = filter.to_bytes();
    let loaded = CuckooFilter::read_from(Dribble { bytes: &bytes, calls: 0 }).unwrap();
    assert!((0..1_900u64).all(|k| loaded.contains(&k)));
    assert_eq!(loaded.to_bytes(), bytes);
}

#[test]
#[cfg_attr(miri, ignore = "too slow under Miri")]
fn read_from_reads_one_snapshot_and_leaves_the_rest() {
    let a = filled(100, 50);
    let b = CuckooFilter::with_capacity(100_000);
    b.insert("b").unwrap();
    let mut stream = Vec::new();
    a.write_to(&mut stream).unwrap();
    b.write_to(&mut stream).unwrap();
    stream.extend_from_slice(b"tail");
    let mut reader = stream.as_slice();
    let first = CuckooFilter::read_from(&mut reader).unwrap();
    let second = CuckooFilter::read_from(&mut reader).unwrap();
    assert_eq!(reader, b"tail");
    assert!((0..50u64).all(|k| first.contains(&k)));
    assert!(second.contains("b") && second.len() == 1);

    let err = CuckooFilter::from_bytes(&stream).unwrap_err();
    let expected = 80 + 8 * a.bucket_count() as u64;
    assert!(
        matches!(err, LoadError::TrailingBytes { expected: e, found } if e == expected && found == stream.len() as u64),
        "{err}"
    );
}

#[test]
#[cfg_attr(miri, ignore = "too slow under Miri")]
fn write_to_reports_what_it_wrote() {
    let filter = filled(10_000, 9_000);
    let mut out = Vec::new();
    let info = filter.write_to(&mut out).unwrap();
    assert_eq!(info.bytes, out.len() as u64);
    assert_eq!(info.buckets, filter.bucket_count() as u64);
    assert_eq!(info.items, 9_000);
    assert_eq!(info.captured_by_writers, 0, "nobody removed anything during the pass");
    assert_eq!(out, filter.to_bytes());
}

/// Accepts `budget` bytes, then fails.
struct FailAfter {
    budget: usize,
}

impl Write for FailAfter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.budget == 0 {
            return Err(io::Error::other("disk full"));
        }
        let n = buf.len().min(self.budget);
        self.budget -= n;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[test]
#[cfg_attr(miri, ignore = "too slow under Miri")]
fn write_to_passes_on_writer_errors() {
    let filter = filled(40_000, 100);
    let len = filter.to_bytes().len();
    assert!(len > 72 + 65_536, "the words span more than one 64 KiB chunk");
    for budget in [0, 1, 71, 72, 73, 72 + 65_536, 73 + 65_536, len - 8, len - 1] {
        let err = filter.write_to(FailAfter { budget }).unwrap_err();
        assert_eq!(err.to_string(), "disk full", "budget {budget}");
    }
    assert!(filter.write_to(FailAfter { budget: len }).is_ok());
}

/// Fails with a non-retryable error after `ok` bytes.
struct BrokenPipe<'a> {
    bytes: &'a [u8],
    ok: usize,
}

impl Read for BrokenPipe<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.ok == 0 {
            return Err(io::Error::new(io::ErrorKind::BrokenPipe, "connection lost"));
        }
        let n = buf.len().min(self.ok).min(self.bytes.len());
        buf[..n].copy_from_slice(&self.bytes[..n]);
        self.bytes = &self.bytes[n..];
        self.ok -= n;
        Ok(n)
    }
}

#[test]
fn read_errors_are_load_errors_with_a_source() {
    let bytes = filled(100, 10).to_bytes();
    for ok in [0, 10, 64, 72, 100, bytes.len() - 1] {
        let err = CuckooFilter::read_from(BrokenPipe { bytes: &bytes, ok }).unwrap_err();
        let LoadError::Io(ref io) = err else { panic!("{err}") };
        assert_eq!(io.kind(), io::ErrorKind::BrokenPipe);
        let source = err.source().expect("an I/O error has a source");
        assert_eq!(source.to_string(), "connection lost");
        assert!(err.to_string().contains("connection lost"), "{err}");
    }
}
