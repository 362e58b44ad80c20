//! The committed golden snapshot `tests/data/golden-v2.bin` must keep loading, with the same
//! contents: a change to the format, the checksum, the probe keys or the mapping from hashes to
//! buckets and fingerprints breaks every saved filter, and fails here first.
//!
//! The file is [`golden_filter`] saved, and `golden_filter_saves_as_the_committed_file` writes
//! it anew when `LFC_WRITE_GOLDEN` names a path (see `FORMAT.md`). The version 1
//! file `tests/data/golden-v1.bin`, from the same filter before the hash was mixed, must be
//! refused: it maps items differently, so loading it would answer false negatives.

pub mod snapshot_common;

use lockfree_cuckoo::{CuckooFilter, LoadError};
use snapshot_common::{
    golden_filter, golden_present, golden_removed, Fnv, GOLDEN_BUCKETS, GOLDEN_DUP,
};

const GOLDEN: &[u8] = include_bytes!("data/golden-v2.bin");
const GOLDEN_V1: &[u8] = include_bytes!("data/golden-v1.bin");

fn u64_at(at: usize) -> u64 {
    u64::from_le_bytes(GOLDEN[at..at + 8].try_into().unwrap())
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
    assert_eq!(u64_at(GOLDEN.len() - 8), snapshot_common::crc64(&GOLDEN[..GOLDEN.len() - 8]));
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
fn golden_v2_saves_back_byte_for_byte() {
    let filter = CuckooFilter::from_bytes_with_hasher(GOLDEN, Fnv).unwrap();
    assert_eq!(filter.to_bytes(), GOLDEN);
}

/// The filter the golden file was written from still saves as the committed bytes. With
/// `LFC_WRITE_GOLDEN=<path>` set, writes its snapshot to that path instead: how a new format
/// version gets its golden file (`LFC_WRITE_GOLDEN=tests/data/golden-v3.bin cargo test --test
/// snapshot_golden golden_filter`); keep the old files.
#[test]
fn golden_filter_saves_as_the_committed_file() {
    let bytes = golden_filter().to_bytes();
    match std::env::var_os("LFC_WRITE_GOLDEN") {
        Some(path) => std::fs::write(&path, &bytes).expect("writing the golden file"),
        None => assert_eq!(bytes, GOLDEN, "the golden filter no longer saves as golden-v2.bin"),
    }
}

#[test]
fn golden_v2_refuses_another_hasher() {
    let err = CuckooFilter::from_bytes(GOLDEN).unwrap_err();
    assert!(matches!(err, LoadError::HasherMismatch { probe: 0, .. }), "{err}");
}

#[test]
fn golden_v1_is_refused_as_an_unsupported_version() {
    assert_eq!(&GOLDEN_V1[8..10], [1, 0], "format version 1, little-endian");
    let loaded = CuckooFilter::from_bytes_with_hasher(GOLDEN_V1, Fnv);
    let streamed = CuckooFilter::read_from_with_hasher(GOLDEN_V1, Fnv);
    for result in [loaded, streamed] {
        let err = result.unwrap_err();
        assert!(matches!(err, LoadError::UnsupportedVersion { found: 1, supported: 2 }), "{err:?}");
        assert_eq!(
            err.to_string(),
            "unsupported cuckoo filter snapshot format version: expected 2 (the only version \
             this build reads), found 1"
        );
    }
}
