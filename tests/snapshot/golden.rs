//! The committed golden snapshots must keep loading, with the same contents: a change to the
//! format, the checksum, the probe keys, the default hasher or the mapping from hashes to buckets
//! and fingerprints breaks every saved filter, and fails here first.
//!
//! `tests/data/golden-v2.bin` (a fixed filter) and `golden-v3.bin` (a growable filter of three
//! levels) were saved under the [`Fnv`] hasher by builds of those format versions; they load and
//! save back as version 5 with only the version, the flags and an empty seed field changed. The
//! version 1 file `tests/data/golden-v1.bin`, from the same filter before the hash was mixed,
//! must be refused: it maps items differently, so loading it would answer false negatives.
//! `golden-v4.bin` and `golden-v4-growable.bin` are the same two filters under the unkeyed
//! default hasher of format 4, and `golden-v5.bin` and `golden-v5-growable.bin` under the keyed
//! default hasher with [`GOLDEN_SEED`], written by [`write_golden_file`] and
//! [`write_growable_golden_file`] (see `FORMAT.md`): they pin each default hasher's output along
//! with the format.

use std::hash::BuildHasher;
use std::path::PathBuf;

use lockfree_cuckoo::{AHashBuilder, CuckooFilter, DefaultHashBuilder, Encoding, LoadError};

use crate::common::{self, Fnv};

const GOLDEN: &[u8] = include_bytes!("../data/golden-v2.bin");
const GOLDEN_V1: &[u8] = include_bytes!("../data/golden-v1.bin");
const GOLDEN_V3: &[u8] = include_bytes!("../data/golden-v3.bin");
const GOLDEN_V4: &[u8] = include_bytes!("../data/golden-v4.bin");
const GOLDEN_V4_GROWABLE: &[u8] = include_bytes!("../data/golden-v4-growable.bin");
const GOLDEN_V5: &[u8] = include_bytes!("../data/golden-v5.bin");
const GOLDEN_V5_GROWABLE: &[u8] = include_bytes!("../data/golden-v5-growable.bin");
const GOLDEN_V6: &[u8] = include_bytes!("../data/golden-v6.bin");

/// The probes of a snapshot under the format-4 default hasher (`FORMAT.md`, "The default
/// hasher").
const FORMAT_4_PROBES: [u64; 4] =
    [0x243F_6A88_85A3_08D3, 0x251C_2FEF_0C08_C53C, 0xE724_126C_7C43_CAEC, 0x243F_6A88_7A5C_F72C];

/// The seed of the version 5 golden files, and their probes under it (`FORMAT.md`).
const GOLDEN_SEED: u64 = 0x0123_4567_89AB_CDEF;
const GOLDEN_SEED_PROBES: [u64; 4] =
    [0x79EE_B710_073F_0A74, 0x465C_AE34_2B06_D289, 0x3931_D7E7_EA35_E847, 0x43F8_BF8F_645F_2313];

/// `bytes`, an older version's snapshot (a 64-byte header), as this build saves the same
/// filter: version 5, with the level flag for a growable filter, an empty seed field after the
/// header, and the checksum recomputed. Nothing else changes.
fn as_version_5(bytes: &[u8], growable: bool) -> Vec<u8> {
    let mut bytes = bytes.to_vec();
    bytes[8..10].copy_from_slice(&5u16.to_le_bytes());
    bytes[12] = u8::from(growable);
    bytes.splice(64..64, [0; 8]);
    common::reseal(&mut bytes);
    bytes
}

/// Buckets of the golden filter.
const GOLDEN_BUCKETS: usize = 32;

/// Keys the golden filters were given: `0..inserted`, every tenth (those ending in 3) removed
/// again. Those kept (`removed` false) or those removed (`removed` true).
fn golden_keys(inserted: u64, removed: bool) -> impl Iterator<Item = u64> {
    (0..inserted).filter(move |k| (k % 10 == 3) == removed)
}

/// Keys inserted into the version 2 golden filter and kept.
fn golden_present() -> impl Iterator<Item = u64> {
    golden_keys(110, false)
}

/// Keys inserted into the version 2 golden filter and removed again.
fn golden_removed() -> impl Iterator<Item = u64> {
    golden_keys(110, true)
}

/// A string inserted three times into the golden filter.
const GOLDEN_DUP: &str = "three times";

/// The filter whose snapshot is `tests/data/golden-v2.bin` under [`Fnv`] (and, written by a
/// version 1 build, `golden-v1.bin`), `golden-v4.bin` under the format-4 default hasher and
/// `golden-v5.bin` under the keyed one: 32 buckets, single-threaded and therefore deterministic.
fn golden_filter<S: BuildHasher>(hasher: S) -> CuckooFilter<S> {
    golden_filter_in(hasher, Encoding::Plain)
}

/// [`golden_filter`] in `encoding`: `golden-v6.bin` is the semi-sorted one under the keyed
/// default hasher with [`GOLDEN_SEED`].
fn golden_filter_in<S: BuildHasher>(hasher: S, encoding: Encoding) -> CuckooFilter<S> {
    let filter = CuckooFilter::builder()
        .bucket_count(GOLDEN_BUCKETS)
        .encoding(encoding)
        .hasher(hasher)
        .build();
    for k in 0..110u64 {
        filter.insert(&k).expect("the golden filter fits");
    }
    for k in golden_removed() {
        assert!(filter.remove(&k));
    }
    for _ in 0..3 {
        filter.insert(GOLDEN_DUP).expect("the golden filter fits");
    }
    filter
}

fn u64_at(at: usize) -> u64 {
    u64_at_in(GOLDEN, at)
}

fn u64_at_in(bytes: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap())
}

#[test]
fn golden_v2_header_is_as_specified() {
    assert_eq!(GOLDEN.len(), 72 + 8 * GOLDEN_BUCKETS);
    assert_eq!(&GOLDEN[..8], b"\x89CUCKOO\n");
    assert_eq!(&GOLDEN[8..10], [2, 0], "format version 2, little-endian");
    assert_eq!(GOLDEN[10], 16, "fingerprint bits");
    assert_eq!(GOLDEN[11], 4, "lanes a bucket");
    assert_eq!(&GOLDEN[12..16], [0; 4], "flags");
    assert_eq!(u64_at(16), GOLDEN_BUCKETS as u64);
    assert_eq!(u64_at(24), 102, "item count");
    // The probe hashes under the test's FNV hasher, pinned.
    let probes = [u64_at(32), u64_at(40), u64_at(48), u64_at(56)];
    assert_eq!(
        probes,
        [
            0x813F_0174_A236_7C13,
            0xD78B_5E13_8686_1B93,
            0x8734_874F_4B56_FF50,
            0x53DE_EEDD_8A7B_A65A
        ]
    );
    assert_eq!(u64_at(GOLDEN.len() - 8), common::crc64(&GOLDEN[..GOLDEN.len() - 8]));
}

#[test]
fn golden_v2_loads_with_its_contents() {
    let filter = CuckooFilter::from_bytes_with_hasher(GOLDEN, Fnv).expect("golden file loads");
    assert_eq!(filter.bucket_count(), GOLDEN_BUCKETS);
    assert_eq!(filter.len(), 102);
    for k in golden_present() {
        assert!(filter.contains(&k), "key {k} lost");
    }
    for k in golden_removed() {
        assert!(!filter.contains(&k), "removed key {k} present");
    }
    // The multiset count survives: three copies, three removes.
    for _ in 0..3 {
        assert!(filter.remove(GOLDEN_DUP));
    }
    assert!(!filter.contains(GOLDEN_DUP));
    assert_eq!(filter.len(), 99);

    let streamed = CuckooFilter::read_from_with_hasher(GOLDEN, Fnv).expect("golden file loads");
    assert!(golden_present().all(|k| streamed.contains(&k)));
}

#[test]
fn golden_v2_saves_back_as_version_5_with_the_same_words() {
    let filter = CuckooFilter::from_bytes_with_hasher(GOLDEN, Fnv).unwrap();
    assert_eq!(filter.to_bytes(), as_version_5(GOLDEN, false));
    assert_eq!(golden_filter(Fnv).to_bytes(), as_version_5(GOLDEN, false));
}

#[test]
fn golden_v2_refuses_another_hasher() {
    let err = CuckooFilter::from_bytes_with_hasher(GOLDEN, AHashBuilder::default()).unwrap_err();
    assert!(matches!(err, LoadError::HasherMismatch { probe: 0, .. }), "{err}");
    // Under the default hasher, the error names the likeliest cause: the older default.
    for err in [
        CuckooFilter::from_bytes(GOLDEN).unwrap_err(),
        CuckooFilter::from_bytes(GOLDEN_V3).unwrap_err(),
    ] {
        assert!(matches!(err, LoadError::OlderDefaultHasher { version: 2 | 3 }), "{err}");
        assert!(err.to_string().contains("AHashBuilder"), "{err}");
    }
}

#[test]
fn golden_v1_is_refused_as_an_unsupported_version() {
    assert_eq!(&GOLDEN_V1[8..10], [1, 0], "format version 1, little-endian");
    let loaded = CuckooFilter::from_bytes_with_hasher(GOLDEN_V1, Fnv);
    let streamed = CuckooFilter::read_from_with_hasher(GOLDEN_V1, Fnv);
    for result in [loaded, streamed] {
        let err = result.unwrap_err();
        assert!(matches!(err, LoadError::UnsupportedVersion { found: 1, supported: 6 }), "{err:?}");
        assert_eq!(
            err.to_string(),
            "unsupported cuckoo filter snapshot format version: expected 2 to 6 (the versions \
             this build reads), found 1"
        );
    }
}

/// The path in `LFC_GOLDEN_OUT`, by default a scratch file `name` under `target/`.
fn golden_out(name: &str) -> PathBuf {
    std::env::var_os("LFC_GOLDEN_OUT")
        .map_or_else(|| PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name), PathBuf::from)
}

/// Writes the golden file of the current format version, built by [`golden_filter`] under the
/// default hasher with [`GOLDEN_SEED`], to [`golden_out`], and checks that it loads with its
/// contents. Write a committed file only together with a new format version, and keep the old
/// ones:
///
/// ```sh
/// LFC_GOLDEN_OUT=tests/data/golden-v5.bin cargo test --test snapshot -- --ignored write_golden_file
/// ```
#[test]
#[ignore = "writes a file; run by hand to make the golden file of a new format version"]
fn write_golden_file() {
    let path = golden_out("golden-v5.bin");
    let filter = golden_filter(DefaultHashBuilder::with_seed(GOLDEN_SEED));
    let bytes = filter.to_bytes();
    std::fs::write(&path, &bytes).expect("golden file written");
    println!("wrote {} bytes, {} items, to {}", bytes.len(), filter.len(), path.display());

    let loaded = std::fs::read(&path).expect("golden file read back");
    let loaded = CuckooFilter::from_bytes(&loaded).expect("golden file loads");
    assert_eq!(loaded.len(), 102);
    assert!(golden_present().all(|k| loaded.contains(&k)));
    assert!(golden_removed().all(|k| !loaded.contains(&k)));
}

/// [`write_golden_file`] for the semi-sorted golden file, version 6:
///
/// ```sh
/// LFC_GOLDEN_OUT=tests/data/golden-v6.bin cargo test --test snapshot -- --ignored write_semi_sorted_golden_file
/// ```
#[test]
#[ignore = "writes a file; run by hand to make the golden file of a new format version"]
fn write_semi_sorted_golden_file() {
    let path = golden_out("golden-v6.bin");
    let filter = golden_filter_in(DefaultHashBuilder::with_seed(GOLDEN_SEED), Encoding::SemiSorted);
    std::fs::write(&path, filter.to_bytes()).expect("golden file written");
    let loaded = CuckooFilter::from_bytes(&std::fs::read(&path).expect("read back"));
    assert_eq!(loaded.expect("golden file loads").len(), 102);
}

/// The semi-sorted golden file: version 6, 17-bit fingerprints, otherwise version 5's header.
/// It loads with its contents and key, saves back byte for byte, and the same filter built
/// again writes it; a builder for plain filters refuses it, and a version 5 header, which has
/// no 17-bit layout, makes it unreadable.
#[test]
fn golden_v6_semi_sorted_file_is_as_specified_and_loads_only_as_semi_sorted() {
    assert_eq!(GOLDEN_V6.len(), GOLDEN_V5.len());
    assert_eq!(&GOLDEN_V6[8..10], [6, 0], "format version 6, little-endian");
    assert_eq!(GOLDEN_V6[10], 17, "fingerprint bits");
    assert_eq!(GOLDEN_V6[11], 4, "lanes a bucket");
    assert_eq!(GOLDEN_V6[12..72], GOLDEN_V5[12..72], "flags, counts, probes and seed");
    assert_eq!(
        u64_at_in(GOLDEN_V6, GOLDEN_V6.len() - 8),
        common::crc64(&GOLDEN_V6[..GOLDEN_V6.len() - 8])
    );

    let filter = CuckooFilter::from_bytes(GOLDEN_V6).expect("golden file loads");
    assert_eq!(filter.encoding(), Encoding::SemiSorted);
    assert_eq!(filter.hasher().seed(), Some(GOLDEN_SEED));
    assert_eq!((filter.bucket_count(), filter.len()), (GOLDEN_BUCKETS, 102));
    assert!(golden_present().all(|k| filter.contains(&k)), "a key was lost");
    assert!(golden_removed().all(|k| !filter.contains(&k)), "a removed key is present");
    assert_eq!(filter.count(GOLDEN_DUP), 3);
    assert_eq!(filter.to_bytes(), GOLDEN_V6);
    let rebuilt =
        golden_filter_in(DefaultHashBuilder::with_seed(GOLDEN_SEED), Encoding::SemiSorted);
    assert_eq!(rebuilt.to_bytes(), GOLDEN_V6);
    let streamed = CuckooFilter::read_from(GOLDEN_V6).expect("golden file loads");
    assert_eq!(streamed.encoding(), Encoding::SemiSorted);

    let semi = CuckooFilter::builder().encoding(Encoding::SemiSorted).load(GOLDEN_V6);
    assert_eq!(semi.expect("loads as semi-sorted").len(), 102);
    let err = CuckooFilter::builder().encoding(Encoding::Plain).load(GOLDEN_V6).unwrap_err();
    assert!(
        matches!(
            err,
            LoadError::EncodingMismatch { expected: Encoding::Plain, found: Encoding::SemiSorted }
        ),
        "{err:?}"
    );
    let err = CuckooFilter::builder().encoding(Encoding::SemiSorted).load(GOLDEN_V5).unwrap_err();
    assert!(matches!(err, LoadError::EncodingMismatch { .. }), "{err:?}");

    let mut as_v5 = GOLDEN_V6.to_vec();
    as_v5[8..10].copy_from_slice(&5u16.to_le_bytes());
    common::reseal(&mut as_v5);
    let err = CuckooFilter::from_bytes(&as_v5).unwrap_err();
    assert!(
        matches!(err, LoadError::UnsupportedLayout { fingerprint_bits: 17, lanes: 4 }),
        "{err:?}"
    );
}

/// The semi-sorted words are refused as plain ones, and plain words with a lane whose code
/// names no nibbles as semi-sorted ones: the layout byte decides, and each encoding checks its
/// words.
#[test]
fn a_layout_byte_flipped_between_encodings_is_refused_by_the_word_check() {
    let mut as_plain = GOLDEN_V6.to_vec();
    as_plain[8..10].copy_from_slice(&5u16.to_le_bytes());
    as_plain[10] = 16;
    common::reseal(&mut as_plain);
    let err = CuckooFilter::from_bytes(&as_plain).unwrap_err();
    assert!(matches!(err, LoadError::InconsistentHeader { field: "item count", .. }), "{err:?}");

    let mut as_semi = GOLDEN_V5.to_vec();
    as_semi[8..10].copy_from_slice(&6u16.to_le_bytes());
    as_semi[10] = 17;
    common::reseal(&mut as_semi);
    let err = CuckooFilter::from_bytes(&as_semi).unwrap_err();
    assert!(
        matches!(err, LoadError::MalformedBucket { .. } | LoadError::InconsistentHeader { .. }),
        "{err:?}"
    );
}

/// Level bucket counts and item ceiling of the growable golden filter.
const GOLDEN_V3_LEVELS: [usize; 3] = [8, 32, 128];
const GOLDEN_V3_CEILING: usize = 1_000;

/// A key of the growable golden filter inserted before it grew and again after, then removed
/// once: the remove finds it in two levels and keeps both copies.
const GOLDEN_REPEAT: &str = "before and after";

/// The filter whose snapshot is `tests/data/golden-v3.bin` under [`Fnv`], and
/// `golden-v4-growable.bin` and `golden-v5-growable.bin` under the format-4 and the keyed
/// default hasher: 8 buckets growing up to a capacity of 1,000
/// items, three levels after its inserts, one retained removal; single-threaded and therefore
/// deterministic.
fn golden_growable_filter<S: BuildHasher>(hasher: S) -> CuckooFilter<S> {
    let filter = CuckooFilter::builder()
        .bucket_count(GOLDEN_V3_LEVELS[0])
        .max_capacity(GOLDEN_V3_CEILING)
        .hasher(hasher)
        .build();
    filter.insert(GOLDEN_REPEAT).expect("the golden filter has room");
    for k in 0..300u64 {
        filter.insert(&k).expect("the golden filter grows");
    }
    filter.insert(GOLDEN_REPEAT).expect("the golden filter grows");
    assert!(filter.remove(GOLDEN_REPEAT));
    assert_eq!(filter.stats().retained_removals, 1);
    for k in golden_keys(300, true) {
        assert!(filter.remove(&k));
    }
    for _ in 0..3 {
        filter.insert(GOLDEN_DUP).expect("the golden filter grows");
    }
    filter
}

fn v3_u64_at(at: usize) -> u64 {
    u64::from_le_bytes(GOLDEN_V3[at..at + 8].try_into().unwrap())
}

#[test]
fn golden_v3_header_and_level_block_are_as_specified() {
    let buckets: usize = GOLDEN_V3_LEVELS.iter().sum();
    assert_eq!(GOLDEN_V3.len(), 72 + 32 + 8 * GOLDEN_V3_LEVELS.len() + 8 * buckets);
    assert_eq!(&GOLDEN_V3[..8], b"\x89CUCKOO\n");
    assert_eq!(&GOLDEN_V3[8..10], [3, 0], "format version 3, little-endian");
    assert_eq!((GOLDEN_V3[10], GOLDEN_V3[11]), (16, 4), "layout");
    assert_eq!(&GOLDEN_V3[12..16], [0; 4], "flags");
    assert_eq!(v3_u64_at(16), buckets as u64);
    assert_eq!(v3_u64_at(24), 275, "item count: occupied lanes");
    // The same probes as version 2: the same hasher.
    assert_eq!(GOLDEN_V3[32..64], GOLDEN[32..64]);
    assert_eq!(v3_u64_at(64), 3, "level count");
    assert_eq!(v3_u64_at(72), GOLDEN_V3_CEILING as u64, "item ceiling");
    assert_eq!(v3_u64_at(80), 0, "no byte ceiling");
    assert_eq!(v3_u64_at(88), 1, "retained removals");
    let levels: Vec<u64> = (0..3).map(|k| v3_u64_at(96 + 8 * k)).collect();
    assert_eq!(levels, GOLDEN_V3_LEVELS.map(|b| b as u64));
    let end = GOLDEN_V3.len() - 8;
    assert_eq!(v3_u64_at(end), common::crc64(&GOLDEN_V3[..end]));
}

#[test]
#[cfg_attr(miri, ignore = "inserts until refused at the ceiling: too slow under Miri")]
fn golden_v3_loads_with_its_contents_and_ceiling() {
    let filter = CuckooFilter::from_bytes_with_hasher(GOLDEN_V3, Fnv).expect("golden file loads");
    assert_eq!(filter.stats().levels, 3);
    assert_eq!(filter.bucket_count(), GOLDEN_V3_LEVELS.iter().sum::<usize>());
    assert_eq!(filter.len(), 274);
    assert_eq!(filter.stats().retained_removals, 1);
    assert!(filter.contains(GOLDEN_REPEAT));
    assert!(golden_keys(300, false).all(|k| filter.contains(&k)), "a key was lost");
    assert!(golden_keys(300, true).all(|k| !filter.contains(&k)), "a removed key is present");
    // Three copies, all in the newest level: three removes take them.
    for _ in 0..3 {
        assert!(filter.remove(GOLDEN_DUP));
    }
    assert!(!filter.contains(GOLDEN_DUP));
    // The ceiling came back: the filter grows to 1,000 items and no further.
    let refused = (1_000..10_000u64).find(|k| filter.insert(k).is_err());
    assert!(refused.is_some());
    assert!(filter.capacity() >= GOLDEN_V3_CEILING && filter.capacity() < GOLDEN_V3_CEILING + 50);
    assert!(golden_keys(300, false).all(|k| filter.contains(&k)));

    let streamed = CuckooFilter::read_from_with_hasher(GOLDEN_V3, Fnv).expect("golden file loads");
    assert!(golden_keys(300, false).all(|k| streamed.contains(&k)));
}

#[test]
fn golden_v3_saves_back_as_version_5_with_the_same_words() {
    let filter = CuckooFilter::from_bytes_with_hasher(GOLDEN_V3, Fnv).unwrap();
    assert_eq!(filter.to_bytes(), as_version_5(GOLDEN_V3, true));
    assert_eq!(golden_growable_filter(Fnv).to_bytes(), as_version_5(GOLDEN_V3, true));
}

/// [`write_golden_file`] for the growable filter, [`golden_growable_filter`] under the default
/// hasher:
///
/// ```sh
/// LFC_GOLDEN_OUT=tests/data/golden-v5-growable.bin cargo test --test snapshot -- --ignored write_growable_golden_file
/// ```
#[test]
#[ignore = "writes a file; run by hand to make the golden file of a new format version"]
fn write_growable_golden_file() {
    let path = golden_out("golden-v5-growable.bin");
    let filter = golden_growable_filter(DefaultHashBuilder::with_seed(GOLDEN_SEED));
    assert_eq!(filter.stats().levels, GOLDEN_V3_LEVELS.len());
    let bytes = filter.to_bytes();
    std::fs::write(&path, &bytes).expect("golden file written");
    println!("wrote {} bytes, {} items, to {}", bytes.len(), filter.len(), path.display());
    let loaded = std::fs::read(&path).expect("golden file read back");
    let loaded = CuckooFilter::from_bytes(&loaded).expect("golden file loads");
    assert!(golden_keys(300, false).all(|k| loaded.contains(&k)));
}

#[test]
fn golden_v4_files_are_as_specified_and_load_under_the_format_4_hasher() {
    for (bytes, growable) in [(GOLDEN_V4, false), (GOLDEN_V4_GROWABLE, true)] {
        assert_eq!(&bytes[8..10], [4, 0], "format version 4, little-endian");
        assert_eq!(&bytes[12..16], [u8::from(growable), 0, 0, 0], "flags: the level block");
        assert_eq!(probes_of(bytes), FORMAT_4_PROBES, "the format-4 hasher's probes");
        let end = bytes.len() - 8;
        assert_eq!(
            u64::from_le_bytes(bytes[end..].try_into().unwrap()),
            common::crc64(&bytes[..end])
        );
    }
    // The same filters as the Fnv files, under another hasher: the same layout and lengths.
    assert_eq!(GOLDEN_V4.len(), GOLDEN.len());
    assert_eq!(GOLDEN_V4_GROWABLE.len(), GOLDEN_V3.len());

    let fixed = CuckooFilter::from_bytes(GOLDEN_V4).expect("golden file loads");
    assert_eq!(fixed.hasher().seed(), None, "a format-4 snapshot keeps its unkeyed hasher");
    assert_eq!((fixed.bucket_count(), fixed.len()), (GOLDEN_BUCKETS, 102));
    assert!(golden_present().all(|k| fixed.contains(&k)), "a key was lost");
    assert!(golden_removed().all(|k| !fixed.contains(&k)), "a removed key is present");
    assert_eq!(fixed.count(GOLDEN_DUP), 3);
    assert_eq!(fixed.to_bytes(), as_version_5(GOLDEN_V4, false));
    let rebuilt = golden_filter(DefaultHashBuilder::format_4());
    assert_eq!(rebuilt.to_bytes(), as_version_5(GOLDEN_V4, false));
    // Saved again as version 5, it loads again with the same hasher.
    let again = CuckooFilter::from_bytes(&fixed.to_bytes()).expect("resaved file loads");
    assert!(golden_present().all(|k| again.contains(&k)), "a key was lost");

    let grown = CuckooFilter::from_bytes(GOLDEN_V4_GROWABLE).expect("golden file loads");
    assert_eq!(grown.stats().levels, GOLDEN_V3_LEVELS.len());
    assert!(grown.contains(GOLDEN_REPEAT));
    assert!(golden_keys(300, false).all(|k| grown.contains(&k)), "a key was lost");
    assert!(golden_keys(300, true).all(|k| !grown.contains(&k)), "a removed key is present");
    assert_eq!(grown.to_bytes(), as_version_5(GOLDEN_V4_GROWABLE, true));
    let rebuilt = golden_growable_filter(DefaultHashBuilder::format_4());
    assert_eq!(rebuilt.to_bytes(), as_version_5(GOLDEN_V4_GROWABLE, true));

    // Another hasher cannot read them.
    let err = CuckooFilter::from_bytes_with_hasher(GOLDEN_V4, Fnv).unwrap_err();
    assert!(matches!(err, LoadError::HasherMismatch { probe: 0, .. }), "{err}");
}

fn probes_of(bytes: &[u8]) -> Vec<u64> {
    (0..4).map(|k| u64::from_le_bytes(bytes[32 + 8 * k..40 + 8 * k].try_into().unwrap())).collect()
}

#[test]
fn golden_v5_files_are_as_specified_and_load_with_their_key() {
    for (bytes, growable) in [(GOLDEN_V5, false), (GOLDEN_V5_GROWABLE, true)] {
        assert_eq!(&bytes[8..10], [5, 0], "format version 5, little-endian");
        assert_eq!(&bytes[12..16], [2 | u8::from(growable), 0, 0, 0], "flags: seed, levels");
        assert_eq!(probes_of(bytes), GOLDEN_SEED_PROBES, "the keyed hasher's probes");
        assert_eq!(bytes[64..72], GOLDEN_SEED.to_le_bytes(), "the seed field");
        let end = bytes.len() - 8;
        assert_eq!(
            u64::from_le_bytes(bytes[end..].try_into().unwrap()),
            common::crc64(&bytes[..end])
        );
    }
    // The same filters as the version 4 files, eight header bytes longer.
    assert_eq!(GOLDEN_V5.len(), GOLDEN_V4.len() + 8);
    assert_eq!(GOLDEN_V5_GROWABLE.len(), GOLDEN_V4_GROWABLE.len() + 8);

    let fixed = CuckooFilter::from_bytes(GOLDEN_V5).expect("golden file loads");
    assert_eq!(fixed.hasher().seed(), Some(GOLDEN_SEED), "the snapshot carries the key");
    assert_eq!((fixed.bucket_count(), fixed.len()), (GOLDEN_BUCKETS, 102));
    assert!(golden_present().all(|k| fixed.contains(&k)), "a key was lost");
    assert!(golden_removed().all(|k| !fixed.contains(&k)), "a removed key is present");
    assert_eq!(fixed.count(GOLDEN_DUP), 3);
    assert_eq!(fixed.to_bytes(), GOLDEN_V5);
    assert_eq!(golden_filter(DefaultHashBuilder::with_seed(GOLDEN_SEED)).to_bytes(), GOLDEN_V5);
    // A default hasher with any key takes the snapshot's, streamed or not.
    let adopted = CuckooFilter::from_bytes_with_hasher(GOLDEN_V5, DefaultHashBuilder::new());
    assert_eq!(adopted.expect("loads").hasher().seed(), Some(GOLDEN_SEED));
    let streamed = CuckooFilter::read_from(GOLDEN_V5).expect("golden file loads");
    assert!(golden_present().all(|k| streamed.contains(&k)), "a key was lost");

    let grown = CuckooFilter::from_bytes(GOLDEN_V5_GROWABLE).expect("golden file loads");
    assert_eq!(grown.hasher().seed(), Some(GOLDEN_SEED));
    assert_eq!(grown.stats().levels, GOLDEN_V3_LEVELS.len());
    assert!(grown.contains(GOLDEN_REPEAT));
    assert!(golden_keys(300, false).all(|k| grown.contains(&k)), "a key was lost");
    assert!(golden_keys(300, true).all(|k| !grown.contains(&k)), "a removed key is present");
    assert_eq!(grown.to_bytes(), GOLDEN_V5_GROWABLE);
    let rebuilt = golden_growable_filter(DefaultHashBuilder::with_seed(GOLDEN_SEED));
    assert_eq!(rebuilt.to_bytes(), GOLDEN_V5_GROWABLE);

    // Another hasher cannot read them.
    let err = CuckooFilter::from_bytes_with_hasher(GOLDEN_V5, Fnv).unwrap_err();
    assert!(matches!(err, LoadError::HasherMismatch { probe: 0, .. }), "{err}");
}
