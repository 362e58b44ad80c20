//! The `serde` feature: a filter round-trips through a format without a byte type (JSON) and one
//! with (postcard), keeps every item and count, and hostile input is an error carrying the
//! `LoadError` message, never a panic.

use lockfree_cuckoo::CuckooFilter;
use rand::{rngs::StdRng, Rng, SeedableRng};

/// Items of [`filled`].
const ITEMS: u64 = if cfg!(miri) { 400 } else { 4_000 };

fn filled() -> CuckooFilter {
    let filter = CuckooFilter::with_capacity(ITEMS as usize * 5 / 4);
    for k in 0..ITEMS {
        filter.insert(&k).unwrap();
    }
    filter.insert("twice").unwrap();
    filter.insert("twice").unwrap();
    filter
}

fn assert_same(back: &CuckooFilter, original: &CuckooFilter) {
    assert_eq!(back.len(), original.len());
    assert_eq!(back.bucket_count(), original.bucket_count());
    assert!((0..ITEMS).all(|k| back.contains(&k)));
    assert_eq!(back.count("twice"), 2);
    assert_eq!(back.to_bytes(), original.to_bytes());
}

#[test]
fn round_trips_through_json() {
    let filter = filled();
    let json = serde_json::to_string(&filter).unwrap();
    let back: CuckooFilter = serde_json::from_str(&json).unwrap();
    assert_same(&back, &filter);
}

#[test]
fn round_trips_through_postcard() {
    let filter = filled();
    let bytes = postcard::to_stdvec(&filter).unwrap();
    // A byte-typed format stores the snapshot as is, plus a length prefix.
    assert!(bytes.len() - filter.to_bytes().len() <= 10);
    let back: CuckooFilter = postcard::from_bytes(&bytes).unwrap();
    assert_same(&back, &filter);
}

/// The bytes of a postcard byte string holding `payload`.
fn postcard_of(payload: &[u8]) -> Vec<u8> {
    postcard::to_stdvec(&serde_bytes_like(payload)).unwrap()
}

/// `&[u8]` serialises as a sequence; a `Vec<u8>` wrapped this way serialises as bytes, the shape
/// a filter's `Serialize` writes.
fn serde_bytes_like(payload: &[u8]) -> impl serde::Serialize + '_ {
    struct Bytes<'a>(&'a [u8]);
    impl serde::Serialize for Bytes<'_> {
        fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            s.serialize_bytes(self.0)
        }
    }
    Bytes(payload)
}

#[test]
#[cfg_attr(miri, ignore = "too slow under Miri")]
fn hostile_bytes_are_errors_with_the_load_error_message() {
    let good = filled().to_bytes();
    let mut rng = StdRng::seed_from_u64(7);
    let mut cases: Vec<Vec<u8>> = vec![Vec::new(), b"not a filter".to_vec(), good[..71].to_vec()];
    for _ in 0..200 {
        let mut bad = good.clone();
        let at = rng.random_range(0..bad.len());
        bad[at] ^= 1 << rng.random_range(0..8);
        cases.push(bad);
        let len = rng.random_range(0..good.len());
        cases.push(good[..len].to_vec());
        cases.push((0..rng.random_range(0..200)).map(|_| rng.random()).collect());
    }
    for bad in cases {
        let expected = match CuckooFilter::from_bytes(&bad) {
            Ok(_) => continue, // a flip in the item count's unused bits can still load
            Err(err) => err.to_string(),
        };
        let json = serde_json::to_string(&bad).unwrap();
        let err = serde_json::from_str::<CuckooFilter>(&json).unwrap_err();
        assert!(err.to_string().contains(&expected), "json: {err} lacks {expected}");
        // postcard's errors carry no message: it is enough that it refuses without a panic.
        assert!(postcard::from_bytes::<CuckooFilter>(&postcard_of(&bad)).is_err());
    }
}

#[test]
#[cfg_attr(miri, ignore = "too slow under Miri")]
fn a_huge_claimed_length_is_refused_without_allocating_it() {
    // JSON cannot claim a length, but postcard can: a byte string said to be 2^60 bytes long.
    let mut claim = Vec::new();
    let mut n: u64 = 1 << 60;
    while n >= 0x80 {
        claim.push((n as u8) | 0x80);
        n >>= 7;
    }
    claim.push(n as u8);
    assert!(postcard::from_bytes::<CuckooFilter>(&claim).is_err());
    // A JSON array far longer than any snapshot still answers with the snapshot's error.
    let long = format!("[{}0]", "0,".repeat(100_000));
    let err = serde_json::from_str::<CuckooFilter>(&long).unwrap_err();
    assert!(err.to_string().contains("snapshot"), "{err}");
}
