//! `Serialize` and `Deserialize` (the `serde` feature): a filter travels as its versioned
//! snapshot bytes, so every guarantee of [`CuckooFilter::from_bytes`] holds on the way in, and a
//! bad blob is a deserialization error carrying the [`LoadError`](crate::LoadError) message.

use core::fmt;
use core::hash::BuildHasher;
use core::marker::PhantomData;

use serde::de::{self, Deserialize, Deserializer, SeqAccess, Visitor};
use serde::ser::{Serialize, Serializer};

use crate::bucket::Layout;
use crate::builder::Builder;
use crate::filter::CuckooFilter;

/// Bytes a sequence may reserve up front: formats without a byte type (JSON) send a sequence
/// whose claimed length a hostile input controls.
const MAX_RESERVED: usize = 1 << 20;

/// Serialises the filter as the bytes of [`to_bytes`](CuckooFilter::to_bytes): a live snapshot,
/// taken with the guarantees of [`write_to`](CuckooFilter::write_to).
///
/// # Examples
///
/// ```
/// use lockfree_cuckoo::CuckooFilter;
///
/// let filter = CuckooFilter::with_capacity(1_000);
/// filter.insert("shipped").unwrap();
/// let json = serde_json::to_string(&filter).unwrap();
/// let back: CuckooFilter = serde_json::from_str(&json).unwrap();
/// assert!(back.contains("shipped"));
/// ```
#[cfg_attr(docsrs, doc(cfg(feature = "serde")))]
impl<S: BuildHasher + 'static, E: Layout> Serialize for CuckooFilter<S, E> {
    fn serialize<Z: Serializer>(&self, serializer: Z) -> Result<Z::Ok, Z::Error> {
        serializer.serialize_bytes(&self.to_bytes())
    }
}

/// Deserialises snapshot bytes as [`from_bytes_with_hasher`](CuckooFilter::from_bytes_with_hasher)
/// does, with `S::default()` as the hasher, into a filter of layout `E`.
///
/// # Errors
///
/// Every [`LoadError`](crate::LoadError) of `from_bytes`, as the format's custom error with the
/// same message; never a panic, and no allocation larger than the input justifies.
///
/// # Examples
///
/// ```
/// use lockfree_cuckoo::CuckooFilter;
///
/// let err = serde_json::from_str::<CuckooFilter>("[1, 2, 3]").unwrap_err();
/// assert!(err.to_string().contains("snapshot"), "{err}");
/// ```
#[cfg_attr(docsrs, doc(cfg(feature = "serde")))]
impl<'de, S: BuildHasher + Default + 'static, E: Layout> Deserialize<'de> for CuckooFilter<S, E> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_bytes(SnapshotBytes(PhantomData))
    }
}

struct SnapshotBytes<S, E>(PhantomData<(S, E)>);

impl<'de, S: BuildHasher + Default + 'static, E: Layout> Visitor<'de> for SnapshotBytes<S, E> {
    type Value = CuckooFilter<S, E>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the bytes of a lockfree-cuckoo snapshot")
    }

    fn visit_bytes<Z: de::Error>(self, bytes: &[u8]) -> Result<Self::Value, Z> {
        Builder::with_hasher(S::default()).layout::<E>().load(bytes).map_err(Z::custom)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut bytes = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(MAX_RESERVED));
        while let Some(byte) = seq.next_element::<u8>()? {
            bytes.push(byte);
        }
        self.visit_bytes(&bytes)
    }
}
