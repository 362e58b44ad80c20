//! [`WordPair`]: an item's two bucket words side by side, for lane-wise logic on both at once.
//!
//! Where SSE2 is enabled (every x86_64 target) the pair is one 128-bit register: its logic runs
//! on the vector unit, beside the integer work of the lookups around it (hashing, slots, the
//! first step), and its zero-lane test is one exact compare. The semi-sorted lookup's second
//! step is written on it for that reason: the integer units are busy with the rest of the
//! lookup (`BENCHMARKS.md`, "Semi-sorted buckets", has the rates). Elsewhere the pair is two
//! `u64`s and the has-zero-lane test of each.

use core::ops::{BitAnd, BitOr, BitXor};

/// What lane-wise logic needs of a word or of a pair of words, so that one function serves
/// both: the bit operations, a `u64` as itself in each word (`From`), and a lane's value in
/// every lane ([`splat`](Self::splat)).
pub(crate) trait Lanes:
    Copy + From<u64> + BitAnd<Output = Self> + BitOr<Output = Self> + BitXor<Output = Self>
{
    /// `lane` in every 16-bit lane.
    fn splat(lane: u16) -> Self;
}

impl Lanes for u64 {
    #[inline(always)]
    fn splat(lane: u16) -> Self {
        u64::from(lane) * super::LOW_BITS
    }
}

#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
pub(crate) use sse2::WordPair;

#[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
pub(crate) use portable::WordPair;

/// The pair in one SSE2 register, the first word in the low half.
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
mod sse2 {
    use core::arch::x86_64::{
        __m128i, _mm_and_si128, _mm_cmpeq_epi16, _mm_movemask_epi8, _mm_or_si128, _mm_set1_epi16,
        _mm_set1_epi64x, _mm_set_epi64x, _mm_setzero_si128, _mm_xor_si128,
    };
    use core::ops::{BitAnd, BitOr, BitXor};

    use super::Lanes;

    /// An item's two bucket words, for lane-wise logic on both (the module documentation).
    #[derive(Clone, Copy)]
    pub(crate) struct WordPair(__m128i);

    impl WordPair {
        #[inline(always)]
        pub(crate) fn new(first: u64, second: u64) -> Self {
            // SAFETY (every intrinsic of this module): its one requirement is SSE2, which the
            // module's `cfg` compiles it for alone. The `as` casts keep the bits.
            Self(unsafe { _mm_set_epi64x(second as i64, first as i64) })
        }

        /// Whether a 16-bit lane of either word is zero.
        #[inline(always)]
        pub(crate) fn any_zero_lane(self) -> bool {
            // SAFETY: as in `new`.
            unsafe { _mm_movemask_epi8(_mm_cmpeq_epi16(self.0, _mm_setzero_si128())) != 0 }
        }
    }

    impl From<u64> for WordPair {
        /// `word` in both halves.
        #[inline(always)]
        fn from(word: u64) -> Self {
            // SAFETY: as in `new`.
            Self(unsafe { _mm_set1_epi64x(word as i64) })
        }
    }

    impl Lanes for WordPair {
        #[inline(always)]
        fn splat(lane: u16) -> Self {
            // SAFETY: as in `new`.
            Self(unsafe { _mm_set1_epi16(lane as i16) })
        }
    }

    impl BitAnd for WordPair {
        type Output = Self;

        #[inline(always)]
        fn bitand(self, other: Self) -> Self {
            // SAFETY: as in `new`.
            Self(unsafe { _mm_and_si128(self.0, other.0) })
        }
    }

    impl BitOr for WordPair {
        type Output = Self;

        #[inline(always)]
        fn bitor(self, other: Self) -> Self {
            // SAFETY: as in `new`.
            Self(unsafe { _mm_or_si128(self.0, other.0) })
        }
    }

    impl BitXor for WordPair {
        type Output = Self;

        #[inline(always)]
        fn bitxor(self, other: Self) -> Self {
            // SAFETY: as in `new`.
            Self(unsafe { _mm_xor_si128(self.0, other.0) })
        }
    }
}

/// The pair as two `u64`s: the pair's logic on targets without SSE2, and on x86_64 the model
/// its tests hold the SSE2 pair to.
#[cfg(any(test, not(all(target_arch = "x86_64", target_feature = "sse2"))))]
mod portable {
    use core::ops::{BitAnd, BitOr, BitXor};

    use super::Lanes;
    use crate::bucket::{any_match, unmasked_zero_lane_flags};

    /// An item's two bucket words, for lane-wise logic on both (the module documentation).
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub(crate) struct WordPair(u64, u64);

    impl WordPair {
        #[inline(always)]
        pub(crate) fn new(first: u64, second: u64) -> Self {
            Self(first, second)
        }

        /// Whether a 16-bit lane of either word is zero: the has-zero-lane test of each.
        #[inline(always)]
        pub(crate) fn any_zero_lane(self) -> bool {
            any_match(unmasked_zero_lane_flags(self.0) | unmasked_zero_lane_flags(self.1))
        }
    }

    impl From<u64> for WordPair {
        /// `word` in both halves.
        #[inline(always)]
        fn from(word: u64) -> Self {
            Self(word, word)
        }
    }

    impl Lanes for WordPair {
        #[inline(always)]
        fn splat(lane: u16) -> Self {
            Self::from(u64::splat(lane))
        }
    }

    impl BitAnd for WordPair {
        type Output = Self;

        #[inline(always)]
        fn bitand(self, other: Self) -> Self {
            Self(self.0 & other.0, self.1 & other.1)
        }
    }

    impl BitOr for WordPair {
        type Output = Self;

        #[inline(always)]
        fn bitor(self, other: Self) -> Self {
            Self(self.0 | other.0, self.1 | other.1)
        }
    }

    impl BitXor for WordPair {
        type Output = Self;

        #[inline(always)]
        fn bitxor(self, other: Self) -> Self {
            Self(self.0 ^ other.0, self.1 ^ other.1)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{portable, Lanes, WordPair};
    use rand::{rngs::StdRng, Rng, SeedableRng};

    /// Whether a 16-bit lane of either word is zero, lane by lane.
    fn any_zero_lane(first: u64, second: u64) -> bool {
        (0..4).any(|k| (first >> (16 * k)) as u16 == 0 || (second >> (16 * k)) as u16 == 0)
    }

    /// Words whose lanes are often zero, or differ from zero in one bit (the top one too, where
    /// a has-zero-lane test's borrows go).
    fn word(rng: &mut StdRng) -> u64 {
        (0..4).fold(0, |word, k| {
            let lane = match rng.random_range(0..4) {
                0 => 0,
                1 => 1 << rng.random_range(0..16),
                _ => rng.random::<u16>(),
            };
            word | u64::from(lane) << (16 * k)
        })
    }

    /// `a & c | b ^ d` in each word, `c` a word in both and `d` a lane in every lane: the
    /// shape of the lookups' logic.
    fn combine<W: Lanes>(new: fn(u64, u64) -> W, [a1, a2, b1, b2, c]: [u64; 5], d: u16) -> W {
        new(a1, a2) & W::from(c) | new(b1, b2) ^ W::splat(d)
    }

    #[test]
    fn the_pair_agrees_with_its_lanes_and_with_the_portable_pair() {
        let mut rng = StdRng::seed_from_u64(3);
        for _ in 0..if cfg!(miri) { 500 } else { 200_000 } {
            let words: [u64; 5] = core::array::from_fn(|_| word(&mut rng));
            let lane = word(&mut rng) as u16;
            let [a1, a2, b1, b2, c] = words;
            let d = u64::splat(lane);
            let (first, second) = (a1 & c | b1 ^ d, a2 & c | b2 ^ d);
            let expected = any_zero_lane(first, second);
            let portable = combine(portable::WordPair::new, words, lane);
            assert_eq!(portable, portable::WordPair::new(first, second));
            assert_eq!(portable.any_zero_lane(), expected, "{words:x?} {lane:x}");
            let pair = combine(WordPair::new, words, lane);
            assert_eq!(pair.any_zero_lane(), expected, "{words:x?} {lane:x}");
        }
    }
}
