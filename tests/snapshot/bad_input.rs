//! Bad snapshots: every byte string yields a filter or a `LoadError`, never a panic, and never
//! an allocation larger than the input justifies. All deterministic (seeded).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::io::{self, Read};

use lockfree_cuckoo::{CuckooFilter, LoadError};
use rand::{rngs::StdRng, Rng, SeedableRng};

use crate::common::{reseal, Fnv};

/// The system allocator, recording the largest single allocation made by a thread while that
/// thread asks it to (per thread, so that tests running in parallel do not disturb each other).
struct Tracking;

thread_local! {
    static TRACKING: Cell<bool> = const { Cell::new(false) };
    static LARGEST: Cell<usize> = const { Cell::new(0) };
}

fn note(size: usize) {
    if TRACKING.with(Cell::get) {
        LARGEST.with(|largest| largest.set(largest.get().max(size)));
    }
}

// SAFETY: defers to `System`; the bookkeeping allocates nothing.
unsafe impl GlobalAlloc for Tracking {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        // SAFETY: as the caller promised for `layout`.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as the caller promised.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        // SAFETY: as the caller promised for `layout`.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note(new_size);
        // SAFETY: as the caller promised.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Tracking = Tracking;

/// Runs `f`, returning its result and the largest single allocation it made on this thread.
fn largest_allocation<T>(f: impl FnOnce() -> T) -> (T, usize) {
    LARGEST.with(|largest| largest.set(0));
    TRACKING.with(|t| t.set(true));
    let out = f();
    TRACKING.with(|t| t.set(false));
    (out, LARGEST.with(Cell::get))
}

/// A snapshot of a small filter (16 buckets) with some items, and a larger one whose words span
/// several 64 KiB read chunks.
fn small() -> Vec<u8> {
    let filter = CuckooFilter::builder().bucket_count(16).hasher(Fnv).build();
    for k in 0..40u64 {
        filter.insert(&k).unwrap();
    }
    filter.to_bytes()
}

fn large() -> Vec<u8> {
    let filter = CuckooFilter::builder().capacity(100_000).hasher(Fnv).build();
    for k in 0..90_000u64 {
        filter.insert(&k).unwrap();
    }
    let bytes = filter.to_bytes();
    assert!(bytes.len() > 3 * 65_536);
    bytes
}

fn load(bytes: &[u8]) -> Result<CuckooFilter<Fnv>, LoadError> {
    CuckooFilter::from_bytes_with_hasher(bytes, Fnv)
}

fn stream(bytes: &[u8]) -> Result<CuckooFilter<Fnv>, LoadError> {
    CuckooFilter::read_from_with_hasher(bytes, Fnv)
}

/// Bytes of the header; the words of a fixed filter's snapshot follow it.
const HEADER: usize = 72;

/// Offset of the header's seed field.
const AT_SEED: usize = 64;

fn set_u64(bytes: &mut [u8], at: usize, value: u64) {
    bytes[at..at + 8].copy_from_slice(&value.to_le_bytes());
}

#[test]
#[cfg_attr(miri, ignore = "too slow under Miri")]
fn every_truncation_is_an_error() {
    let small = small();
    assert!(load(&small).is_ok());
    for len in 0..small.len() {
        for result in [load(&small[..len]), stream(&small[..len])] {
            match result {
                Err(LoadError::Truncated { expected, found }) => {
                    assert_eq!(found, len as u64);
                    assert!(expected > found);
                }
                other => panic!("truncated to {len}: {other:?}"),
            }
        }
    }
    let large = large();
    let chunk_edges = (1..4)
        .flat_map(|k| [HEADER + k * 65_536 - 1, HEADER + k * 65_536, HEADER + k * 65_536 + 1]);
    for len in (0..large.len()).step_by(997).chain(chunk_edges).chain([large.len() - 1]) {
        for result in [load(&large[..len]), stream(&large[..len])] {
            assert!(
                matches!(result, Err(LoadError::Truncated { found, .. }) if found == len as u64),
                "truncated to {len}: {result:?}"
            );
        }
    }
}

#[test]
#[cfg_attr(miri, ignore = "too slow under Miri")]
fn every_single_bit_flip_is_detected() {
    let small = small();
    let checksum_at = small.len() - 8;
    for bit in 0..small.len() * 8 {
        let mut bytes = small.clone();
        bytes[bit / 8] ^= 1 << (bit % 8);
        for result in [load(&bytes), stream(&bytes)] {
            let Err(err) = result else { panic!("flip of bit {bit} loaded") };
            if bit / 8 >= 24 {
                // Past magic, version, layout, flags and bucket count only the checksum stands
                // between a flip and a silently different filter.
                assert!(matches!(err, LoadError::ChecksumMismatch { .. }), "bit {bit}: {err}");
            }
            if bit / 8 >= checksum_at {
                assert!(matches!(err, LoadError::ChecksumMismatch { .. }), "bit {bit}: {err}");
            }
        }
    }
    let large = large();
    let mut rng = StdRng::seed_from_u64(11);
    for _ in 0..300 {
        let bit = rng.random_range(0..large.len() * 8);
        let mut bytes = large.clone();
        bytes[bit / 8] ^= 1 << (bit % 8);
        assert!(load(&bytes).is_err(), "flip of bit {bit} loaded");
        assert!(stream(&bytes).is_err(), "flip of bit {bit} loaded");
    }
}

#[test]
#[cfg_attr(miri, ignore = "too slow under Miri")]
fn random_bytes_are_refused_without_panicking() {
    let mut rng = StdRng::seed_from_u64(12);
    let valid = small();
    for round in 0..20_000 {
        let len = rng.random_range(0..400);
        let mut bytes: Vec<u8> = (0..len).map(|_| rng.random()).collect();
        // Also random bytes behind a valid magic, or a valid header.
        let keep = [0, 8, 10, HEADER][round % 4].min(len);
        bytes[..keep].copy_from_slice(&valid[..keep]);
        assert!(load(&bytes).is_err(), "random input {round} loaded");
        assert!(stream(&bytes).is_err(), "random input {round} loaded");
        assert!(CuckooFilter::from_bytes(&bytes).is_err());
    }
}

/// Random bucket words behind a valid header whose item count matches and whose checksum is
/// right: not something this crate writes, but a well-formed snapshot, which loads. (Lanes are
/// 0 or a fingerprint, `1..=0xFFFE`; 0xFFFF is refused, see below.)
#[test]
#[cfg_attr(miri, ignore = "too slow under Miri")]
fn any_well_formed_words_load() {
    let mut rng = StdRng::seed_from_u64(13);
    let template = small();
    for _ in 0..500 {
        let mut bytes = template.clone();
        let mut lanes = 0u64;
        for b in 0..16 {
            let mut word = 0u64;
            for lane in 0..4 {
                if rng.random_bool(0.7) {
                    word |= rng.random_range(1..=0xFFFEu64) << (16 * lane);
                }
            }
            lanes += (0..4).filter(|l| (word >> (16 * l)) & 0xFFFF != 0).count() as u64;
            set_u64(&mut bytes, HEADER + 8 * b, word);
        }
        set_u64(&mut bytes, 24, lanes);
        reseal(&mut bytes);
        let filter = load(&bytes).expect("well-formed words load");
        assert_eq!(filter.len() as u64, lanes);
        assert_eq!(filter.to_bytes(), bytes);
        filter.insert(&1u64).ok(); // and the filter works
    }
}

/// A lane holding 0xFFFF, which no fingerprint is, in an otherwise well-formed snapshot (item
/// count and checksum right): refused, naming the bucket and the lowest such lane.
#[test]
fn a_lane_holding_0xffff_is_refused() {
    let valid = small();
    let word_at = |bytes: &[u8], bucket: usize| {
        u64::from_le_bytes(bytes[HEADER + 8 * bucket..HEADER + 8 + 8 * bucket].try_into().unwrap())
    };
    let occupied = |word: u64| (0..4).filter(|l| (word >> (16 * l)) & 0xFFFF != 0).count() as u64;
    let mut cases = Vec::new();
    for bucket in [0, 7, 15] {
        for lane in 0..4 {
            cases.push((bucket, word_at(&valid, bucket) | 0xFFFF << (16 * lane), lane));
        }
    }
    cases.push((3, 0xFFFF_0000_FFFF_0000, 1));
    cases.push((5, u64::MAX, 0));
    for (bucket, word, lane) in cases {
        let mut bytes = valid.clone();
        set_u64(&mut bytes, HEADER + 8 * bucket, word);
        let items = (0..16).map(|b| occupied(word_at(&bytes, b))).sum();
        set_u64(&mut bytes, 24, items);
        reseal(&mut bytes);
        for result in [load(&bytes), stream(&bytes)] {
            let Err(err) = result else { panic!("{word:#x} in bucket {bucket} loaded") };
            assert!(
                matches!(err, LoadError::ReservedFingerprint { bucket: b, lane: l }
                    if b == bucket as u64 && l == lane),
                "{word:#x} in bucket {bucket}: {err:?}"
            );
            assert_eq!(
                err.to_string(),
                format!(
                    "invalid cuckoo filter snapshot: expected fingerprints in 0x0001..=0xfffe or \
                     0 for an empty lane, found 0xffff in lane {lane} of bucket {bucket}"
                )
            );
        }
    }
}

/// Each header field set to extremes, with the checksum recomputed, so that the header checks
/// themselves (not the checksum) must refuse it.
#[test]
fn header_fields_at_extremes_are_refused() {
    let valid = small();
    let forge = |edit: &dyn Fn(&mut Vec<u8>)| {
        let mut bytes = valid.clone();
        edit(&mut bytes);
        reseal(&mut bytes);
        (load(&bytes), stream(&bytes))
    };
    let check = |what: &str, edit: &dyn Fn(&mut Vec<u8>), ok: &dyn Fn(&LoadError) -> bool| {
        let (a, b) = forge(edit);
        for result in [a, b] {
            match result {
                Err(err) => {
                    assert!(ok(&err), "{what}: unexpected {err:?}");
                    let message = err.to_string();
                    assert!(message.contains("expected"), "{what}: {message}");
                    assert!(message.contains("found"), "{what}: {message}");
                }
                Ok(_) => panic!("{what}: loaded"),
            }
        }
    };

    for magic in [[0u8; 8], *b"\x89CUCKOO\r", *b"LFCUCKOO", [0xFF; 8]] {
        check(
            "magic",
            &|b| b[..8].copy_from_slice(&magic),
            &|e| matches!(e, LoadError::BadMagic { found } if found[..] == magic),
        );
    }
    for version in [0u16, 2, 7, 0x0100, u16::MAX] {
        check(
            "version",
            &|b| b[8..10].copy_from_slice(&version.to_le_bytes()),
            &|e| matches!(e, LoadError::UnsupportedVersion { found, supported: 1 } if *found == version),
        );
    }
    // A fixed filter's words with the flag of a level block: the first words read as the level
    // block, which cannot add up.
    check("the level flag without a level block", &|b| b[12] = 1, &|e| {
        matches!(e, LoadError::InconsistentHeader { .. } | LoadError::Truncated { .. })
    });
    // A fixed filter's words with the flag of a window block: 24 bytes of words read as the
    // block, so the length cannot match; were it forged to, plain words with a window block are
    // refused (`tests/snapshot/windowed.rs`).
    check("the window flag on plain words", &|b| b[12] = 4, &|e| {
        matches!(e, LoadError::InconsistentHeader { .. } | LoadError::Truncated { .. })
    });
    // Flags the format does not define.
    for flag in [8u8, 0x10, 0x80] {
        check(
            "an undefined flag",
            &|b| b[12] = flag,
            &|e| matches!(e, LoadError::InconsistentHeader { field: "flags", found, .. } if *found == u64::from(flag)),
        );
    }
    // A seed without the seed flag.
    for seed in [1u64, 0x5EED, u64::MAX] {
        check(
            "a seed without the seed flag",
            &|b| set_u64(b, AT_SEED, seed),
            &|e| matches!(e, LoadError::InconsistentHeader { field: "seed", found, .. } if *found == seed),
        );
    }
    for (bits, lanes) in
        [(0u8, 4u8), (8, 4), (32, 4), (255, 4), (16, 0), (16, 2), (16, 8), (16, 255)]
    {
        check("layout", &|b| (b[10], b[11]) = (bits, lanes), &|e| {
            matches!(e, LoadError::UnsupportedLayout { fingerprint_bits, lanes: l }
                if (*fingerprint_bits, *l) == (bits, lanes))
        });
    }
    // The format defines bits 0 (a level block), 1 (a seed) and 2 (a window block) only; with
    // neither block bit set, the others are refused by the flags check.
    for flags in [8u32, 10, 0x8000_0000, !5] {
        check(
            "flags",
            &|b| b[12..16].copy_from_slice(&flags.to_le_bytes()),
            &|e| matches!(e, LoadError::InconsistentHeader { field: "flags", found, .. } if *found == u64::from(flags)),
        );
    }

    // Bucket counts that disagree with the input length, or cannot exist at all.
    for buckets in [1u64, 15, 17, 1 << 20, 1 << 40, (1 << 60) - 1] {
        check("bucket count vs length", &|b| set_u64(b, 16, buckets), &|e| {
            matches!(
                e,
                LoadError::Truncated { .. }
                    | LoadError::TrailingBytes { .. }
                    | LoadError::ChecksumMismatch { .. }
            )
        });
    }
    for buckets in [1u64 << 61, u64::MAX / 8, u64::MAX - 1, u64::MAX] {
        check(
            "bucket count too large",
            &|b| set_u64(b, 16, buckets),
            &|e| matches!(e, LoadError::InconsistentHeader { field: "bucket count", found, .. } if *found == buckets),
        );
    }
    // Zero buckets: a consistent length (no words), refused by the header check.
    let mut empty = valid[..HEADER + 8].to_vec();
    set_u64(&mut empty, 16, 0);
    set_u64(&mut empty, 24, 0);
    reseal(&mut empty);
    for result in [load(&empty), stream(&empty)] {
        assert!(
            matches!(
                result,
                Err(LoadError::InconsistentHeader { field: "bucket count", found: 0, .. })
            ),
            "{result:?}"
        );
    }

    let items = u64::from_le_bytes(valid[24..32].try_into().unwrap());
    assert_eq!(items, 40);
    for bad in [0, items - 1, items + 1, 63, 64, 65, 1 << 32, u64::MAX - 1, u64::MAX] {
        check(
            "item count",
            &|b| set_u64(b, 24, bad),
            &|e| matches!(e, LoadError::InconsistentHeader { field: "item count", found, .. } if *found == bad),
        );
    }
    for probe in 0..4 {
        for value in [0u64, u64::MAX] {
            check(
                "probe",
                &|b| set_u64(b, 32 + 8 * probe, value),
                &|e| matches!(e, LoadError::HasherMismatch { probe: p, expected, .. } if *p == probe && *expected == value),
            );
        }
    }
}

#[test]
fn a_forged_bucket_count_allocates_nothing_large() {
    let (_, largest) = largest_allocation(|| vec![7u8; 1 << 20]);
    assert!(largest >= 1 << 20, "the tracking allocator sees allocations");
    let valid = small();
    for buckets in [1u64 << 30, 1 << 40, 1 << 55, u64::MAX / 8 - 100, u64::MAX] {
        let mut bytes = valid.clone();
        set_u64(&mut bytes, 16, buckets);
        reseal(&mut bytes);
        let (result, largest) = largest_allocation(|| load(&bytes));
        assert!(result.is_err());
        assert!(
            largest < 4096,
            "{buckets} buckets: a {largest}-byte allocation from {} bytes",
            bytes.len()
        );
        let (result, largest) = largest_allocation(|| stream(&bytes));
        assert!(result.is_err());
        assert!(largest <= 65_536, "{buckets} buckets: a {largest}-byte allocation");
    }

    // A stream that claims 2^40 buckets but delivers 1 MiB of words (16 KiB under Miri, which
    // takes a second a few KiB): memory follows the data.
    let mut header = valid[..HEADER].to_vec();
    set_u64(&mut header, 16, 1 << 40);
    let delivered = if cfg!(miri) { 1 << 14 } else { 1 << 20 };
    let reader = header.as_slice().chain(io::repeat(0x5A).take(delivered as u64));
    let (result, largest) = largest_allocation(|| CuckooFilter::read_from_with_hasher(reader, Fnv));
    assert!(
        matches!(result, Err(LoadError::Truncated { expected, found })
            if expected == HEADER as u64 + 8 + 8 * (1 << 40) && found == HEADER as u64 + delivered as u64),
        "{result:?}"
    );
    assert!(largest <= 2 * delivered + 65_536, "a {largest}-byte allocation for {delivered} bytes");
}

#[test]
fn every_error_says_what_was_expected_and_found() {
    let valid = small();
    let mut wrong_checksum = valid.clone();
    *wrong_checksum.last_mut().unwrap() ^= 1;
    let mut with_tail = valid.clone();
    with_tail.push(0);
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (
            b"GIF89a..".to_vec(),
            "magic bytes 89 43 55 43 4b 4f 4f 0a, found 47 49 46 38 39 61 2e 2e",
        ),
        (Vec::new(), "expected at least 72 bytes, found 0"),
        (valid[..100].to_vec(), "expected at least 208 bytes, found 100"),
        (with_tail, "expected 208 bytes, found 209"),
        (wrong_checksum, "expected checksum 0x"),
    ];
    assert_eq!(valid.len(), 208);
    for (bytes, needle) in cases {
        let err = load(&bytes).unwrap_err();
        assert!(err.to_string().contains(needle), "{err} lacks {needle:?}");
    }
    let err = CuckooFilter::from_bytes(&valid).unwrap_err();
    assert!(err.to_string().contains("different hasher: expected probe 0 to hash to 0x"), "{err}");
}
