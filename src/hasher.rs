//! The hashers: the default one, whose output `FORMAT.md` specifies ("The default hasher") so that
//! snapshots move between builds, targets, CPU features and crate versions, and aHash as an
//! opt-in for filters that live in one process.
//!
//! The default hasher only *compresses* what `Hash` writes into 64 bits: the filter finalises
//! every hash with its mix (`hash::mix`) before it takes slots from it, so a finalisation here
//! would be a second one on every operation's critical path. An integer key costs one xor: the
//! hash of a `u64` is the key xor a constant, which the mix then spreads like any hash. Two
//! integers, or up to 16 bytes of a string, are absorbed by one 64x64 to 128-bit multiply whose
//! halves are folded together (the compression of wyhash and foldhash), which is what keeps
//! distinct keys distinct; the finalisation that makes every bit count is the filter's. Chosen
//! by measurement against aHash, foldhash, XXH3 and SipHash (`BENCHMARKS.md`, "The hot path").

use core::hash::{BuildHasher, Hasher};

/// The starting state: the first 64 fractional bits of pi.
const SEED: u64 = 0x243F_6A88_85A3_08D3;
/// What each absorbed pair of words is xored with before it is multiplied: the next 128 bits of
/// pi. They keep a zero word from zeroing the product.
const PAIR_LOW: u64 = 0x1319_8A2E_0370_7344;
const PAIR_HIGH: u64 = 0xA409_3822_299F_31D0;

/// The 128-bit product of `a` and `b`, its two halves xored together.
#[inline]
const fn fold(a: u64, b: u64) -> u64 {
    let product = a as u128 * b as u128;
    product as u64 ^ (product >> 64) as u64
}

/// The default hasher's builder: [`DefaultHasher`] from a fixed state, so an item hashes the same
/// in every process, build, target and crate version (`FORMAT.md`, "The default hasher").
///
/// Its hashes are inputs for the filter, which finalises them: on its own, the hash of an integer
/// key is the key xor a constant. For a hash table, use a general-purpose hasher.
///
/// # Examples
///
/// ```
/// use std::hash::BuildHasher;
/// use lockfree_cuckoo::DefaultHashBuilder;
///
/// // Specified: the same value in every build (a test vector of FORMAT.md).
/// assert_eq!(DefaultHashBuilder.hash_one(0u64), 0x243F_6A88_85A3_08D3);
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct DefaultHashBuilder;

impl BuildHasher for DefaultHashBuilder {
    type Hasher = DefaultHasher;

    #[inline]
    fn build_hasher(&self) -> DefaultHasher {
        DefaultHasher { state: SEED, pending: None }
    }
}

/// The hasher made by [`DefaultHashBuilder`]: integers written are absorbed two words at a time,
/// byte strings 16 bytes at a time; `FORMAT.md` specifies each step.
#[derive(Clone, Debug)]
pub struct DefaultHasher {
    state: u64,
    /// A word waiting for the next one, to be absorbed with it.
    pending: Option<u64>,
}

impl DefaultHasher {
    /// Absorbs two words into the state.
    #[inline]
    fn pair(&mut self, a: u64, b: u64) {
        self.state = fold(self.state ^ a ^ PAIR_LOW, b ^ PAIR_HIGH);
    }

    /// An integer's word: pending until the next one, then absorbed with it.
    #[inline]
    fn word(&mut self, word: u64) {
        match self.pending.take() {
            None => self.pending = Some(word),
            Some(first) => self.pair(first, word),
        }
    }
}

/// The little-endian word at `bytes[at..at + 8]`.
#[inline]
fn le64(bytes: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(bytes[at..at + 8].try_into().expect("eight bytes"))
}

/// The two words of a string of at most 16 bytes: its first and last 8 bytes (overlapping) from
/// 8 bytes up, its first and last 4 from 4 up, and below that its first, middle and last byte.
#[inline]
fn short_reads(bytes: &[u8]) -> (u64, u64) {
    let n = bytes.len();
    let le32 = |at: usize| u64::from(u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4")));
    match n {
        8.. => (le64(bytes, 0), le64(bytes, n - 8)),
        4.. => (le32(0), le32(n - 4)),
        1.. => {
            let (first, middle, last) = (bytes[0], bytes[n / 2], bytes[n - 1]);
            (u64::from(first) | u64::from(middle) << 8 | u64::from(last) << 16, 0)
        }
        0 => (0, 0),
    }
}

impl Hasher for DefaultHasher {
    /// The state, xored with a word still waiting for its pair.
    #[inline]
    fn finish(&self) -> u64 {
        self.state ^ self.pending.unwrap_or(0)
    }

    /// The bytes in one piece, whatever earlier writes left pending (`FORMAT.md`): a short
    /// string is two overlapping reads and one multiply, a longer one a multiply for every 16
    /// bytes. The state is first rotated by the length, so that strings whose reads coincide
    /// (such as 8 and 9 equal bytes) differ.
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        if let Some(pending) = self.pending.take() {
            self.state ^= pending;
        }
        let n = bytes.len();
        self.state = self.state.rotate_right(n as u32);
        let (a, b) = if n <= 16 {
            short_reads(bytes)
        } else {
            let mut at = 0;
            while n - at > 16 {
                self.pair(le64(bytes, at), le64(bytes, at + 8));
                at += 16;
            }
            (le64(bytes, n - 16), le64(bytes, n - 8))
        };
        self.pair(a, b);
    }

    #[inline]
    fn write_u8(&mut self, value: u8) {
        self.word(value.into());
    }

    #[inline]
    fn write_u16(&mut self, value: u16) {
        self.word(value.into());
    }

    #[inline]
    fn write_u32(&mut self, value: u32) {
        self.word(value.into());
    }

    #[inline]
    fn write_u64(&mut self, value: u64) {
        self.word(value);
    }

    /// Low word first, whatever the platform's byte order.
    #[inline]
    fn write_u128(&mut self, value: u128) {
        self.word(value as u64);
        self.word((value >> 64) as u64);
    }

    /// As a `u64`, so that 32-bit and 64-bit targets agree.
    #[inline]
    fn write_usize(&mut self, value: usize) {
        self.word(value as u64);
    }

    /// Sign-extended to 64 bits, so that 32-bit and 64-bit targets agree.
    #[inline]
    fn write_isize(&mut self, value: isize) {
        self.word(value as i64 as u64);
    }
}

/// aHash with fixed seeds, an opt-in hasher for filters whose snapshots stay in one build: the
/// default hasher of the builds that wrote snapshot format versions 2 and 3, so it also loads
/// snapshots those builds saved, in a build that hashes as theirs did.
///
/// aHash does not promise the same output across its own versions, or between builds with
/// different CPU features (for example `target-cpu=native` with AES), so a snapshot of a filter
/// using it may be refused elsewhere with [`LoadError::HasherMismatch`](crate::LoadError).
///
/// # Examples
///
/// ```
/// use lockfree_cuckoo::{AHashBuilder, CuckooFilter};
///
/// let filter = CuckooFilter::builder().capacity(100).hasher(AHashBuilder::default()).build();
/// filter.insert("key").unwrap();
/// assert!(filter.contains("key"));
/// ```
#[derive(Clone, Debug)]
pub struct AHashBuilder(ahash::RandomState);

impl Default for AHashBuilder {
    fn default() -> Self {
        Self(ahash::RandomState::with_seeds(
            0x243F_6A88_85A3_08D3,
            0x1319_8A2E_0370_7344,
            0xA409_3822_299F_31D0,
            0x082E_FA98_EC4E_6C89,
        ))
    }
}

impl BuildHasher for AHashBuilder {
    type Hasher = ahash::AHasher;

    #[inline]
    fn build_hasher(&self) -> ahash::AHasher {
        self.0.build_hasher()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The test vectors of `FORMAT.md`, "The default hasher": the hash of each key and, through
    /// the filter's mix, its fingerprint and buckets among 1,000. Both are part of the format.
    #[test]
    fn default_hasher_matches_the_format_specification() {
        let h = DefaultHashBuilder;
        let vectors = [
            (h.hash_one(0u64), 0x243F_6A88_85A3_08D3, 0x1829, 266, 274),
            (h.hash_one(0x0123_4567_89AB_CDEFu64), 0x251C_2FEF_0C08_C53C, 0x9BF3, 188, 582),
            (h.hash_one("lockfree-cuckoo"), 0xE724_126C_7C43_CAEC, 0x66BA, 692, 365),
            (h.hash_one(0xFFFF_FFFFu32), 0x243F_6A88_7A5C_F72C, 0x1BC2, 302, 447),
            (h.hash_one(&b"0123456789abcdef"[..]), 0x07EF_1591_DDEF_7D38, 0x7283, 993, 673),
            (h.hash_one("user:1000"), 0xBA54_F622_12D5_F7D0, 0xE103, 88, 523),
            (h.hash_one((1u64, 2u64)), 0x5E18_1A19_ADCD_151F, 0x8BCA, 480, 484),
            (h.hash_one("a"), 0x1172_8790_2CFB_3F8E, 0x4EDE, 219, 887),
            (
                h.hash_one("a forty-byte key takes three multiplies."),
                0x0CD3_E308_3AA4_B37A,
                0x9629,
                56,
                788,
            ),
        ];
        for (i, (hash, expected, fingerprint, first, second)) in vectors.into_iter().enumerate() {
            assert_eq!(hash, expected, "vector {i}: {hash:#x}");
            let slots = crate::hash::mixed_slots(crate::hash::mix(hash), 1000);
            assert_eq!(
                (slots.fingerprint.get(), slots.first, slots.second),
                (fingerprint, first, second),
                "vector {i}"
            );
        }
    }

    #[test]
    fn integers_are_their_value_on_every_target() {
        let h = DefaultHashBuilder;
        assert_eq!(h.hash_one(7u8), h.hash_one(7u64));
        assert_eq!(h.hash_one(7usize), h.hash_one(7u64));
        assert_eq!(h.hash_one(-1isize), h.hash_one(u64::MAX));
        assert_eq!(h.hash_one(5u128 << 64 | 9), h.hash_one((9u64, 5u64)));
    }

    #[test]
    fn lengths_trailing_zero_bytes_and_word_order_change_the_hash() {
        let h = DefaultHashBuilder;
        let one = |bytes: &[u8]| {
            let mut hasher = h.build_hasher();
            hasher.write(bytes);
            hasher.finish()
        };
        assert_ne!(one(b"ab"), one(b"ab\0"));
        assert_ne!(one(b"abcdefgh"), one(b"abcdefgh\0"));
        assert_ne!(one(b""), one(b"\0"));
        // Overlapping reads coincide here; the length tells them apart.
        assert_ne!(one(b"aaaaaaaa"), one(b"aaaaaaaaa"));
        assert_ne!(one(&[7; 16]), one(&[7; 17]));
        assert_ne!(h.hash_one((1u64, 2u64)), h.hash_one((2u64, 1u64)));
        assert_ne!(h.hash_one((1u64, 2u64, 3u64)), h.hash_one((1u64, 3u64, 2u64)));
    }

    /// Distinct short keys of the lengths users store (8 to 64 bytes) keep distinct hashes.
    #[test]
    #[cfg_attr(miri, ignore = "arithmetic only, too slow under Miri")]
    fn short_keys_do_not_collide() {
        let h = DefaultHashBuilder;
        let mut seen = std::collections::HashSet::new();
        for len in [8, 12, 16, 24, 32, 48, 64] {
            for i in 0..20_000u64 {
                let mut key = vec![b'k'; len];
                key[len - 8..].copy_from_slice(&i.to_le_bytes());
                assert!(seen.insert(h.hash_one(&key[..])), "{len} bytes, key {i}");
                let text = format!("user:{i:0width$}", width = len - 5);
                assert!(seen.insert(h.hash_one(text.as_str())), "{text}");
            }
        }
    }
}
