//! The hashers: the default one, keyed by a secret that each filter draws from the operating
//! system, and aHash as an opt-in for filters that live in one process.
//!
//! The default hasher follows foldhash's construction with secrets (its folded multiply of two
//! input words, each xored with a key word): `FORMAT.md` ("The default hasher") specifies it, with
//! the key as a parameter, so that the same key gives the same filter in every build, target, CPU
//! feature set and crate version, and snapshots carry the key. Without the key, an item's hash is
//! a folded product of two unknown words, so items cannot be aimed at chosen buckets (README,
//! "Security"); every input word, the last one included, passes through such a product.
//!
//! It only *compresses* what `Hash` writes into 64 bits: the filter finalises every hash with its
//! mix (`hash::mix`) before it takes slots from it. Chosen by measurement against aHash, foldhash,
//! XXH3 and SipHash (`BENCHMARKS.md`, "The default hasher").

use core::any::Any;
use core::fmt;
use core::hash::{BuildHasher, Hasher};

/// The increment of SplitMix64, which expands a seed into the key words.
const GOLDEN_GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

/// The 128-bit product of `a` and `b`, its two halves xored together.
#[inline]
const fn fold(a: u64, b: u64) -> u64 {
    let product = a as u128 * b as u128;
    product as u64 ^ (product >> 64) as u64
}

/// The `k`-th output of SplitMix64 from `seed` (Steele, Lea and Flood, 2014): its state after
/// `k + 1` increments, finalised.
const fn splitmix64(seed: u64, k: u64) -> u64 {
    let mut z = seed.wrapping_add(GOLDEN_GAMMA.wrapping_mul(k + 1));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The three key words: the starting state, and the words each absorbed pair is xored with
/// before it is multiplied.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Keys {
    start: u64,
    low: u64,
    high: u64,
}

impl Keys {
    /// The key words of `seed` (`FORMAT.md`, "The default hasher"): SplitMix64's first three
    /// outputs from it.
    const fn of_seed(seed: u64) -> Self {
        Self { start: splitmix64(seed, 0), low: splitmix64(seed, 1), high: splitmix64(seed, 2) }
    }
}

/// The default hasher's builder: [`DefaultHasher`] under a key, drawn at random for each
/// filter ([`new`](Self::new)) or derived from a seed ([`with_seed`](Self::with_seed)).
///
/// The algorithm is specified in `FORMAT.md` ("The default hasher"), so one seed gives the same
/// hashes in every process, build, target and crate version; a snapshot records the seed, and a
/// filter loaded from it hashes as the saved one did. Its hashes are inputs for the filter, which
/// finalises them: for a hash table, use a general-purpose hasher.
///
/// `Debug` never shows the seed.
///
/// # Examples
///
/// ```
/// use std::hash::BuildHasher;
/// use lockfree_cuckoo::DefaultHashBuilder;
///
/// // A seed gives the same hashes everywhere (a test vector of FORMAT.md).
/// let seeded = DefaultHashBuilder::with_seed(0);
/// assert_eq!(seeded.hash_one(0u64), 0x47D2_8E97_4CE5_7B85);
/// assert_eq!(seeded.seed(), 0);
///
/// // A random key: another hash for the same item, almost surely.
/// let random = DefaultHashBuilder::new();
/// assert_ne!(random.hash_one(0u64), seeded.hash_one(0u64));
/// ```
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct DefaultHashBuilder {
    keys: Keys,
    /// The seed the keys came from.
    seed: u64,
}

impl DefaultHashBuilder {
    /// A builder with a random key: a seed drawn from the keys that the standard library draws
    /// from the operating system for `HashMap` (`std::hash::RandomState`), through SipHash-1-3,
    /// so that every call gives another, unpredictable seed without a system call.
    #[must_use]
    pub fn new() -> Self {
        use std::hash::RandomState;
        Self::with_seed(RandomState::new().build_hasher().finish())
    }

    /// A builder whose key is derived from `seed`: for reproducible filters (tests, shards built
    /// apart to be [merged](crate::CuckooFilter::merge), replicas). Anyone who knows the seed can
    /// compute where items land, so a filter that takes items from untrusted clients should keep
    /// it secret (README, "Security").
    #[must_use]
    pub const fn with_seed(seed: u64) -> Self {
        Self { keys: Keys::of_seed(seed), seed }
    }

    /// The seed of the key.
    ///
    /// # Examples
    ///
    /// ```
    /// use lockfree_cuckoo::CuckooFilter;
    ///
    /// let filter = CuckooFilter::builder().seed(7).build();
    /// assert_eq!(filter.hasher().seed(), 7);
    /// ```
    #[must_use]
    pub const fn seed(&self) -> u64 {
        self.seed
    }

    /// A 16-byte item whose hash is `hash`, as anyone who knows the key can compute it from
    /// `FORMAT.md` (a test hook, for attacks): the item's second word cancels the key word it is
    /// xored with, so the multiply is by 1, and its first word sets the product.
    #[cfg(feature = "test-hooks")]
    pub(crate) fn item_for_hash(&self, hash: u64) -> [u8; 16] {
        // `Hash` for `[u8; 16]` writes the length, 16, then the bytes (`FORMAT.md`).
        let state = (self.keys.start ^ 16).rotate_right(16);
        let mut item = [0u8; 16];
        item[..8].copy_from_slice(&(hash ^ state ^ self.keys.low).to_le_bytes());
        item[8..].copy_from_slice(&(self.keys.high ^ 1).to_le_bytes());
        item
    }
}

impl Default for DefaultHashBuilder {
    /// [`DefaultHashBuilder::new`]: a random key.
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for DefaultHashBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DefaultHashBuilder").finish_non_exhaustive()
    }
}

/// The seed of `hasher` if it is a [`DefaultHashBuilder`], for the snapshot to record.
pub(crate) fn seed_of<S: 'static>(hasher: &S) -> Option<u64> {
    (hasher as &dyn Any).downcast_ref::<DefaultHashBuilder>().map(DefaultHashBuilder::seed)
}

/// Gives `hasher`, if it is a [`DefaultHashBuilder`], the key of a snapshot that records `seed`:
/// a default hasher loads every snapshot written under one, whatever key it was drawn with. A
/// snapshot that records no seed was written under another hasher, and the probes refuse it.
pub(crate) fn adopt_snapshot_key<S: 'static>(hasher: &mut S, seed: Option<u64>) {
    let default = (hasher as &mut dyn Any).downcast_mut::<DefaultHashBuilder>();
    if let (Some(default), Some(seed)) = (default, seed) {
        *default = DefaultHashBuilder::with_seed(seed);
    }
}

impl BuildHasher for DefaultHashBuilder {
    type Hasher = DefaultHasher;

    #[inline]
    fn build_hasher(&self) -> DefaultHasher {
        DefaultHasher {
            state: self.keys.start,
            pending: None,
            low: self.keys.low,
            high: self.keys.high,
        }
    }
}

/// The hasher made by [`DefaultHashBuilder`]: integers written are absorbed two words at a time,
/// byte strings 16 bytes at a time; `FORMAT.md` specifies each step.
#[derive(Clone)]
pub struct DefaultHasher {
    state: u64,
    /// A word waiting for the next one, to be absorbed with it.
    pending: Option<u64>,
    low: u64,
    high: u64,
}

impl fmt::Debug for DefaultHasher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DefaultHasher").finish_non_exhaustive()
    }
}

impl DefaultHasher {
    /// Absorbs two words into the state.
    #[inline]
    fn pair(&mut self, a: u64, b: u64) {
        self.state = fold(self.state ^ a ^ self.low, b ^ self.high);
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
    /// The state, after a word still waiting for its pair is absorbed with a zero word.
    #[inline]
    fn finish(&self) -> u64 {
        match self.pending {
            None => self.state,
            Some(last) => fold(self.state ^ last ^ self.low, self.high),
        }
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

/// aHash with fixed seeds, an opt-in hasher for filters whose snapshots stay in one build.
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

    /// A hash, its fingerprint and its two buckets among 1,000: a row of `FORMAT.md`'s tables.
    type Vector = (u64, u16, usize, usize);

    /// Checks `h` against one of `FORMAT.md`'s test-vector tables: the hash of each of its
    /// items and, through the filter's mix, their fingerprints and buckets among 1,000. Both are
    /// part of the format.
    fn check_table(h: DefaultHashBuilder, table: [Vector; 9], name: &str) {
        let hashes = [
            h.hash_one(0u64),
            h.hash_one(0x0123_4567_89AB_CDEFu64),
            h.hash_one("lockfree-cuckoo"),
            h.hash_one(0xFFFF_FFFFu32),
            h.hash_one(&b"0123456789abcdef"[..]),
            h.hash_one("user:1000"),
            h.hash_one((1u64, 2u64)),
            h.hash_one("a"),
            h.hash_one("a forty-byte key takes three multiplies."),
        ];
        for (i, (hash, (want, fingerprint, first, second))) in
            hashes.into_iter().zip(table).enumerate()
        {
            assert_eq!(hash, want, "{name}, vector {i}: {hash:#x}");
            let mixed = crate::hash::mix(hash);
            let slots = crate::hash::mixed_slots::<crate::bucket::plain::Plain>(mixed, 1000);
            assert_eq!(
                (slots.fingerprint.get(), slots.first, slots.second),
                (u32::from(fingerprint), first, second),
                "{name}, vector {i}"
            );
        }
    }

    /// The keyed tables, one a seed, and the key words of seed 0.
    #[test]
    fn keyed_hasher_matches_the_format_specification() {
        assert_eq!(
            [Keys::of_seed(0).start, Keys::of_seed(0).low, Keys::of_seed(0).high],
            [0xE220_A839_7B1D_CDAF, 0x6E78_9E6A_A1B9_65F4, 0x06C4_5D18_8009_454F]
        );
        let seed_0 = [
            (0x47D2_8E97_4CE5_7B85, 0xE2B7, 982, 92),
            (0x9F05_5867_8A4C_7AF3, 0x1556, 217, 484),
            (0x6681_8CDE_5E35_47AC, 0x22A6, 211, 750),
            (0x31D8_43FB_3E28_0501, 0x593A, 994, 138),
            (0x86A0_8A3F_C143_ADD5, 0x6961, 218, 484),
            (0xC3FB_C1DB_885B_9F4C, 0xD81D, 786, 944),
            (0x2747_D857_1996_E59D, 0x7196, 727, 465),
            (0xD666_D8D1_828A_890A, 0x7553, 425, 225),
            (0xEBF9_1195_4AF2_DCFC, 0x6CC3, 371, 549),
        ];
        check_table(DefaultHashBuilder::with_seed(0), seed_0, "seed 0");
        let seed_0123 = [
            (0x79EE_B710_073F_0A74, 0xDE99, 442, 224),
            (0x465C_AE34_2B06_D289, 0xB2F8, 374, 471),
            (0x3931_D7E7_EA35_E847, 0x5170, 122, 650),
            (0x43F8_BF8F_645F_2313, 0xA438, 976, 172),
            (0x6CD8_92D1_9858_F4FD, 0x9C59, 724, 86),
            (0x8E45_C8ED_D987_A4D8, 0x77AA, 214, 639),
            (0x2A10_A905_BC40_230B, 0xB57A, 998, 625),
            (0x7EE1_733F_1B31_F9CE, 0x48CE, 418, 499),
            (0xF758_3034_D48D_FB42, 0x0D20, 908, 686),
        ];
        check_table(
            DefaultHashBuilder::with_seed(0x0123_4567_89AB_CDEF),
            seed_0123,
            "seed 0x0123…",
        );
    }

    #[test]
    fn random_keys_differ_and_debug_hides_them() {
        let (a, b) = (DefaultHashBuilder::new(), DefaultHashBuilder::default());
        assert_ne!(a.seed(), b.seed());
        let shown = format!("{a:?} {:?}", a.build_hasher());
        assert_eq!(shown, "DefaultHashBuilder { .. } DefaultHasher { .. }");
    }

    /// Two keys of `FORMAT.md`'s test vectors.
    const HASHERS: [DefaultHashBuilder; 2] =
        [DefaultHashBuilder::with_seed(0), DefaultHashBuilder::with_seed(0x0123_4567_89AB_CDEF)];

    #[test]
    fn integers_are_their_value_on_every_target() {
        for h in HASHERS {
            integers_agree(h);
        }
    }

    fn integers_agree(h: DefaultHashBuilder) {
        assert_eq!(h.hash_one(7u8), h.hash_one(7u64));
        assert_eq!(h.hash_one(7usize), h.hash_one(7u64));
        assert_eq!(h.hash_one(-1isize), h.hash_one(u64::MAX));
        assert_eq!(h.hash_one(5u128 << 64 | 9), h.hash_one((9u64, 5u64)));
    }

    #[test]
    fn lengths_trailing_zero_bytes_and_word_order_change_the_hash() {
        for h in HASHERS {
            lengths_and_order_count(h);
        }
    }

    fn lengths_and_order_count(h: DefaultHashBuilder) {
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
        let h = DefaultHashBuilder::with_seed(5);
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
