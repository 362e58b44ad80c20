//! The committed golden snapshots must keep loading, with the same contents: a change to the
//! format, the checksum, the probe keys, the default hasher or the mapping from hashes to buckets
//! and fingerprints breaks every saved filter, and fails here first.
//!
//! One file per combination, all of format version 1 under the default hasher with
//! [`GOLDEN_SEED`]: `tests/data/golden-plain.bin` and `golden-semi-sorted.bin` (a fixed filter,
//! [`golden_filter`]), `golden-plain-growable.bin` and `golden-semi-sorted-growable.bin` (a
//! growable filter of three levels, [`golden_growable_filter`]), and `golden-windowed.bin` (a
//! windowed filter between two epochs, [`golden_windowed_filter`]). [`write_golden_files`] wrote
//! them (see `FORMAT.md`, "The golden files").

use std::hash::BuildHasher;
use std::path::PathBuf;
use std::time::Duration;

use lockfree_cuckoo::{
    encoding_of_snapshot, CuckooFilter, DefaultHashBuilder, Encoding, Layout, LoadError,
    ManualClock, Plain, SemiSorted, WindowedFilter,
};

use crate::common::{self, Fnv};

const PLAIN: &[u8] = include_bytes!("../data/golden-plain.bin");
const PLAIN_GROWABLE: &[u8] = include_bytes!("../data/golden-plain-growable.bin");
const SEMI_SORTED: &[u8] = include_bytes!("../data/golden-semi-sorted.bin");
const SEMI_SORTED_GROWABLE: &[u8] = include_bytes!("../data/golden-semi-sorted-growable.bin");
const WINDOWED: &[u8] = include_bytes!("../data/golden-windowed.bin");

/// A golden file: its name, its bytes, and whether its filter is growable.
type Golden = (&'static str, &'static [u8], bool);

/// The golden files of plain filters, and of semi-sorted ones.
const GOLDEN_PLAIN: [Golden; 2] =
    [("golden-plain.bin", PLAIN, false), ("golden-plain-growable.bin", PLAIN_GROWABLE, true)];
const GOLDEN_SEMI_SORTED: [Golden; 2] = [
    ("golden-semi-sorted.bin", SEMI_SORTED, false),
    ("golden-semi-sorted-growable.bin", SEMI_SORTED_GROWABLE, true),
];

/// Runs `plain` on the golden files of plain filters, `semi_sorted` on the others.
fn each_golden(plain: impl Fn(Golden), semi_sorted: impl Fn(Golden)) {
    GOLDEN_PLAIN.into_iter().for_each(plain);
    GOLDEN_SEMI_SORTED.into_iter().for_each(semi_sorted);
}

/// The seed of the golden files, and their probes under it (`FORMAT.md`).
const GOLDEN_SEED: u64 = 0x0123_4567_89AB_CDEF;
const GOLDEN_SEED_PROBES: [u64; 4] =
    [0x79EE_B710_073F_0A74, 0x465C_AE34_2B06_D289, 0x3931_D7E7_EA35_E847, 0x43F8_BF8F_645F_2313];

/// Buckets of the fixed golden filter.
const GOLDEN_BUCKETS: usize = 32;

/// Level bucket counts and item ceiling of the growable golden filter.
const GOLDEN_LEVELS: [usize; 3] = [8, 32, 128];
const GOLDEN_CEILING: usize = 1_000;

/// Keys the golden filters were given: `0..inserted`, every tenth (those ending in 3) removed
/// again. Those kept (`removed` false) or those removed (`removed` true).
fn golden_keys(inserted: u64, removed: bool) -> impl Iterator<Item = u64> {
    (0..inserted).filter(move |k| (k % 10 == 3) == removed)
}

/// Keys inserted into a golden filter: 110 into the fixed one, 300 into the growable one.
const fn inserted(growable: bool) -> u64 {
    if growable {
        300
    } else {
        110
    }
}

/// A string inserted three times into each golden filter.
const GOLDEN_DUP: &str = "three times";

/// A key of the growable golden filter inserted before it grew and again after, then removed
/// once: the remove finds it in two levels and keeps both copies.
const GOLDEN_REPEAT: &str = "before and after";

/// The fixed golden filter: 32 buckets, single-threaded and therefore deterministic.
fn golden_filter<S: BuildHasher, L: Layout>(hasher: S) -> CuckooFilter<S, L> {
    let filter =
        CuckooFilter::builder().bucket_count(GOLDEN_BUCKETS).layout::<L>().hasher(hasher).build();
    for k in 0..inserted(false) {
        filter.insert(&k).expect("the golden filter fits");
    }
    for k in golden_keys(inserted(false), true) {
        assert!(filter.remove(&k));
    }
    for _ in 0..3 {
        filter.insert(GOLDEN_DUP).expect("the golden filter fits");
    }
    filter
}

/// The growable golden filter: 8 buckets growing up to a capacity of 1,000 items, three levels
/// after its inserts, one retained removal; single-threaded and therefore deterministic.
fn golden_growable_filter<S: BuildHasher, L: Layout>(hasher: S) -> CuckooFilter<S, L> {
    let filter = CuckooFilter::builder()
        .bucket_count(GOLDEN_LEVELS[0])
        .max_capacity(GOLDEN_CEILING)
        .layout::<L>()
        .hasher(hasher)
        .build();
    filter.insert(GOLDEN_REPEAT).expect("the golden filter has room");
    for k in 0..inserted(true) {
        filter.insert(&k).expect("the golden filter grows");
    }
    filter.insert(GOLDEN_REPEAT).expect("the golden filter grows");
    assert!(filter.remove(GOLDEN_REPEAT));
    assert_eq!(filter.stats().retained_removals, 1);
    for k in golden_keys(inserted(true), true) {
        assert!(filter.remove(&k));
    }
    for _ in 0..3 {
        filter.insert(GOLDEN_DUP).expect("the golden filter grows");
    }
    filter
}

/// The window of the windowed golden filter, and the keys it holds: `0..OLD` inserted in epoch
/// 0, `OLD..NEW` in epoch 1, those ending in 3 removed again.
const GOLDEN_WINDOW: Duration = Duration::from_secs(60);
const OLD: u64 = 40;
const NEW: u64 = 80;

/// The windowed golden filter: 32 buckets, saved 10 s into epoch 1; single-threaded on a manual
/// clock and therefore deterministic.
fn golden_windowed_filter() -> WindowedFilter {
    let clock = ManualClock::new();
    let filter = CuckooFilter::builder()
        .bucket_count(GOLDEN_BUCKETS)
        .hasher(DefaultHashBuilder::with_seed(GOLDEN_SEED))
        .expire_after(GOLDEN_WINDOW)
        .clock(clock.clone())
        .build();
    for k in 0..OLD {
        filter.insert(&k).expect("the golden filter fits");
    }
    clock.advance(GOLDEN_WINDOW / 2);
    filter.tick();
    for k in OLD..NEW {
        filter.insert(&k).expect("the golden filter fits");
    }
    for k in golden_keys(NEW, true) {
        assert!(filter.remove(&k));
    }
    clock.advance(Duration::from_secs(10));
    filter
}

/// The golden filter of a kind under `hasher`.
fn golden_of<S: BuildHasher, L: Layout>(hasher: S, growable: bool) -> CuckooFilter<S, L> {
    if growable {
        golden_growable_filter(hasher)
    } else {
        golden_filter(hasher)
    }
}

fn u64_at(bytes: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap())
}

#[test]
fn golden_headers_are_as_specified() {
    each_golden(
        |file| headers_are_as_specified(file, Encoding::Plain),
        |file| headers_are_as_specified(file, Encoding::SemiSorted),
    );
}

fn headers_are_as_specified((name, bytes, growable): Golden, encoding: Encoding) {
    {
        let buckets: usize = if growable { GOLDEN_LEVELS.iter().sum() } else { GOLDEN_BUCKETS };
        let block = if growable { 32 + 8 * GOLDEN_LEVELS.len() } else { 0 };
        assert_eq!(bytes.len(), 72 + block + 8 * buckets + 8, "{name}");
        assert_eq!(&bytes[..8], b"\x89CUCKOO\n", "{name}");
        assert_eq!(&bytes[8..10], [1, 0], "{name}: format version 1, little-endian");
        let bits = if encoding == Encoding::Plain { 16 } else { 17 };
        assert_eq!((bytes[10], bytes[11]), (bits, 4), "{name}: fingerprint bits and lanes");
        assert_eq!(&bytes[12..16], [2 | u8::from(growable), 0, 0, 0], "{name}: flags");
        assert_eq!(u64_at(bytes, 16), buckets as u64, "{name}");
        let probes: Vec<u64> = (0..4).map(|k| u64_at(bytes, 32 + 8 * k)).collect();
        assert_eq!(probes, GOLDEN_SEED_PROBES, "{name}: the keyed hasher's probes");
        assert_eq!(u64_at(bytes, 64), GOLDEN_SEED, "{name}: the seed field");
        if growable {
            assert_eq!(u64_at(bytes, 72), GOLDEN_LEVELS.len() as u64, "{name}: level count");
            assert_eq!(u64_at(bytes, 80), GOLDEN_CEILING as u64, "{name}: item ceiling");
            assert_eq!(u64_at(bytes, 88), 0, "{name}: no byte ceiling");
            assert_eq!(u64_at(bytes, 96), 1, "{name}: retained removals");
            let levels: Vec<u64> = (0..3).map(|k| u64_at(bytes, 104 + 8 * k)).collect();
            assert_eq!(levels, GOLDEN_LEVELS.map(|b| b as u64), "{name}");
        }
        let end = bytes.len() - 8;
        assert_eq!(u64_at(bytes, end), common::crc64(&bytes[..end]), "{name}: checksum");
    }
}

#[test]
#[cfg_attr(miri, ignore = "inserts until refused at the ceiling: too slow under Miri")]
fn golden_files_load_with_their_contents_key_and_ceiling() {
    each_golden(loads_with_its_contents::<Plain>, loads_with_its_contents::<SemiSorted>);
}

fn loads_with_its_contents<L: Layout>((name, bytes, growable): Golden) {
    {
        let load = || CuckooFilter::builder().layout::<L>();
        let filter = load().load(bytes).expect(name);
        assert_eq!(filter.hasher().seed(), GOLDEN_SEED, "{name}: the snapshot carries the key");
        let kept = || golden_keys(inserted(growable), false);
        assert!(kept().all(|k| filter.contains(&k)), "{name}: a key was lost");
        let removed = || golden_keys(inserted(growable), true);
        assert!(removed().all(|k| !filter.contains(&k)), "{name}: a removed key is present");
        assert_eq!(filter.count(GOLDEN_DUP), 3, "{name}");
        // Saved back byte for byte, and the same filter built again writes the same bytes.
        assert_eq!(filter.to_bytes(), bytes, "{name}");
        let rebuilt: CuckooFilter<_, L> =
            golden_of(DefaultHashBuilder::with_seed(GOLDEN_SEED), growable);
        assert_eq!(rebuilt.to_bytes(), bytes, "{name}: rebuilt");
        // A default hasher with any key takes the snapshot's, streamed or not.
        let adopted = load().hasher(DefaultHashBuilder::new()).load(bytes);
        assert_eq!(adopted.expect(name).hasher().seed(), GOLDEN_SEED, "{name}");
        let streamed = load().read_from(bytes).expect(name);
        assert!(kept().all(|k| streamed.contains(&k)), "{name}: a key was lost, streamed");
        // The multiset count survives: three copies, three removes.
        for _ in 0..3 {
            assert!(filter.remove(GOLDEN_DUP), "{name}");
        }
        assert!(!filter.contains(GOLDEN_DUP), "{name}");
        if growable {
            assert_eq!(filter.stats().levels, GOLDEN_LEVELS.len(), "{name}");
            assert_eq!(filter.stats().retained_removals, 1, "{name}");
            assert!(filter.contains(GOLDEN_REPEAT), "{name}");
            // The ceiling came back: the filter grows to 1,000 items and no further.
            let refused = (1_000..10_000u64).find(|k| filter.insert(k).is_err());
            assert!(refused.is_some(), "{name}");
            assert!(filter.capacity() < GOLDEN_CEILING + 50, "{name}: {}", filter.capacity());
            assert!(kept().all(|k| filter.contains(&k)), "{name}: a key was lost growing");
        }
        // Another hasher cannot read them.
        let err = load().hasher(Fnv).load(bytes).unwrap_err();
        assert!(matches!(err, LoadError::HasherMismatch { probe: 0, .. }), "{name}: {err}");
    }
}

/// Each file loads only as its encoding: a builder for the other refuses it.
#[test]
fn golden_files_load_only_as_their_encoding() {
    each_golden(loads_only_as::<Plain, SemiSorted>, loads_only_as::<SemiSorted, Plain>);
}

fn loads_only_as<L: Layout, Other: Layout>((name, bytes, _): Golden) {
    let same = CuckooFilter::builder().layout::<L>().load(bytes).expect(name);
    assert_eq!(encoding_of_snapshot(bytes).unwrap(), same.encoding(), "{name}");
    let err = CuckooFilter::builder().layout::<Other>().load(bytes).unwrap_err();
    assert!(
        matches!(err, LoadError::EncodingMismatch { expected, found }
            if expected != found && found == same.encoding()),
        "{name}: {err:?}"
    );
}

/// Another format version is refused, whatever else it holds: a reader cannot know how it
/// maps items.
#[test]
fn another_version_is_refused() {
    for version in [0u16, 2, 6, u16::MAX] {
        let mut bytes = PLAIN.to_vec();
        bytes[8..10].copy_from_slice(&version.to_le_bytes());
        common::reseal(&mut bytes);
        let loaded = CuckooFilter::from_bytes(&bytes);
        let streamed = CuckooFilter::read_from(&bytes[..]);
        for result in [loaded, streamed] {
            let err = result.unwrap_err();
            assert!(
                matches!(err, LoadError::UnsupportedVersion { found, supported: 1 } if found == version),
                "{err:?}"
            );
            assert_eq!(
                err.to_string(),
                format!(
                    "unsupported cuckoo filter snapshot format version: expected 1 (the version \
                     this build reads), found {version}"
                )
            );
        }
    }
}

/// The semi-sorted words are refused as plain ones, and plain words with a lane whose code
/// names no nibbles as semi-sorted ones: the layout byte decides, and each encoding checks its
/// words.
#[test]
fn a_layout_byte_flipped_between_encodings_is_refused_by_the_word_check() {
    let mut as_plain = SEMI_SORTED.to_vec();
    as_plain[10] = 16;
    common::reseal(&mut as_plain);
    let err = CuckooFilter::from_bytes(&as_plain).unwrap_err();
    assert!(matches!(err, LoadError::InconsistentHeader { field: "item count", .. }), "{err:?}");

    let mut as_semi = PLAIN.to_vec();
    as_semi[10] = 17;
    common::reseal(&mut as_semi);
    let err = CuckooFilter::from_bytes(&as_semi).unwrap_err();
    assert!(
        matches!(err, LoadError::MalformedBucket { .. } | LoadError::InconsistentHeader { .. }),
        "{err:?}"
    );
}

/// A filter with a hasher of the caller's records no seed, and only a hasher that agrees on the
/// probes loads it.
#[test]
fn a_custom_hasher_records_no_seed_and_is_checked_by_the_probes() {
    let bytes = golden_filter::<_, Plain>(Fnv).to_bytes();
    assert_eq!(&bytes[12..16], [0; 4], "flags: no seed, no levels");
    assert_eq!(u64_at(&bytes, 64), 0, "the seed field");
    let probes: Vec<u64> = (0..4).map(|k| u64_at(&bytes, 32 + 8 * k)).collect();
    let pinned = [
        0x813F_0174_A236_7C13,
        0xD78B_5E13_8686_1B93,
        0x8734_874F_4B56_FF50,
        0x53DE_EEDD_8A7B_A65A,
    ];
    assert_eq!(probes, pinned, "the probes under the test's FNV hasher");
    let loaded = CuckooFilter::from_bytes_with_hasher(&bytes, Fnv).expect("loads");
    assert!(golden_keys(inserted(false), false).all(|k| loaded.contains(&k)));
    let err = CuckooFilter::from_bytes(&bytes).unwrap_err();
    assert!(matches!(err, LoadError::HasherMismatch { probe: 0, .. }), "{err}");
}

/// The path in `LFC_GOLDEN_OUT` (a directory), by default a scratch directory under `target/`.
fn golden_out() -> PathBuf {
    std::env::var_os("LFC_GOLDEN_OUT")
        .map_or_else(|| PathBuf::from(env!("CARGO_TARGET_TMPDIR")), PathBuf::from)
}

/// Writes the four golden files of the format to [`golden_out`], and checks that each loads
/// with its contents. Write committed files only together with a new format version:
///
/// ```sh
/// LFC_GOLDEN_OUT=tests/data cargo test --test snapshot -- --ignored write_golden_files
/// ```
#[test]
#[ignore = "writes files; run by hand to make the golden files of a new format version"]
fn write_golden_files() {
    each_golden(write_golden_file::<Plain>, write_golden_file::<SemiSorted>);
    let path = golden_out().join("golden-windowed.bin");
    std::fs::write(&path, golden_windowed_filter().to_bytes()).expect("golden file written");
    println!("wrote {}", path.display());
}

/// The windowed golden file: its header and window block as specified, its keys, its epoch and
/// the time into it, which a load resumes: the keys of epoch 0 expire when epoch 3 starts, 50 s
/// of running time after the load, and those of epoch 1 a period later.
#[test]
fn the_windowed_golden_file_loads_with_its_ages_and_clock() {
    let bytes = WINDOWED;
    assert_eq!(&bytes[..8], b"\x89CUCKOO\n");
    assert_eq!((bytes[10], bytes[11]), (14, 4), "14-bit fingerprints, four lanes");
    assert_eq!(u64_at(bytes, 12) as u32, 4 | 2, "flags: the window block and the seed");
    assert_eq!(u64_at(bytes, 16), GOLDEN_BUCKETS as u64);
    assert_eq!(u64_at(bytes, 64), GOLDEN_SEED);
    let block = [u64_at(bytes, 72), u64_at(bytes, 80), u64_at(bytes, 88)];
    assert_eq!(block, [60_000_000_000, 1, 10_000_000_000], "window, epoch, time into it");
    assert_eq!(bytes.len(), 72 + 24 + 8 * GOLDEN_BUCKETS + 8);
    assert_eq!(encoding_of_snapshot(bytes).unwrap(), Encoding::Windowed);
    assert_eq!(golden_windowed_filter().to_bytes(), bytes, "rebuilt");

    let clock = ManualClock::new();
    let filter = CuckooFilter::builder()
        .expire_after(Duration::from_secs(1))
        .clock(clock.clone())
        .load(bytes)
        .unwrap();
    assert_eq!(filter.hasher().seed(), GOLDEN_SEED);
    assert_eq!(filter.window(), GOLDEN_WINDOW);
    assert_eq!(filter.len(), golden_keys(NEW, false).count());
    assert_eq!(filter.to_bytes(), bytes, "saved back byte for byte");
    let kept = |range: std::ops::Range<u64>| range.filter(|k| k % 10 != 3);
    assert!(kept(0..NEW).all(|k| filter.contains(&k)), "a key was lost");
    assert!(golden_keys(NEW, true).all(|k| !filter.contains(&k)), "a removed key is present");
    // Epoch 2 starts 20 s after the load, not before; 3 a period later.
    clock.advance(Duration::from_secs(20) - Duration::from_nanos(1));
    filter.tick();
    let before_epoch_2 = filter.to_bytes();
    assert_eq!(u64_at(&before_epoch_2, 80), 1, "epoch 2 started early");
    clock.advance(Duration::from_nanos(1));
    filter.tick();
    assert_eq!(u64_at(&filter.to_bytes(), 80), 2, "epoch 2 started late");
    clock.advance(GOLDEN_WINDOW / 2 - Duration::from_nanos(1));
    filter.tick();
    assert!(kept(0..OLD).all(|k| filter.contains(&k)), "epoch 3 started early");
    clock.advance(Duration::from_nanos(1));
    filter.tick();
    let old_left = kept(0..OLD).filter(|k| filter.contains(k)).count();
    assert!(old_left <= 1, "{old_left} keys of epoch 0 outlived epoch 2");
    assert!(kept(OLD..NEW).all(|k| filter.contains(&k)), "a key of epoch 1 expired early");
    assert!(matches!(
        CuckooFilter::from_bytes(bytes),
        Err(LoadError::EncodingMismatch { found: Encoding::Windowed, .. })
    ));
}

fn write_golden_file<L: Layout>((name, _, growable): Golden) {
    {
        let filter: CuckooFilter<_, L> =
            golden_of(DefaultHashBuilder::with_seed(GOLDEN_SEED), growable);
        if growable {
            assert_eq!(filter.stats().levels, GOLDEN_LEVELS.len(), "{name}");
        }
        let path = golden_out().join(name);
        let bytes = filter.to_bytes();
        std::fs::write(&path, &bytes).expect("golden file written");
        println!("wrote {} bytes, {} items, to {}", bytes.len(), filter.len(), path.display());
        let loaded =
            CuckooFilter::builder().layout::<L>().load(&std::fs::read(&path).expect("read back"));
        let loaded = loaded.expect("golden file loads");
        assert!(golden_keys(inserted(growable), false).all(|k| loaded.contains(&k)), "{name}");
    }
}
