//! The semi-sorted encoding ([`Encoding::SemiSorted`]): four 17-bit fingerprints in one `u64`.
//!
//! Fan et al. (CoNEXT 2014, section 5.2) sort a bucket's fingerprints by their low four bits,
//! the *nibbles*. The four sorted nibbles are one of C(19, 4) = 3,876 multisets, so a 12-bit
//! *code* names them all, and the bucket stores the code and each fingerprint's 13 high bits:
//! 12 + 4 × 13 = 64 bits for four 17-bit fingerprints, where plain lanes hold four of 16.
//!
//! # Layout
//!
//! Lane `k` (bits `16k..16k+16`) holds the `k`-th fingerprint's high 13 bits in its bits `3..16`
//! and bits `3k..3k+3` of the code in its bits `0..3` (the split of Google's setfilters): the
//! high parts then sit in 16-bit lanes, where one SWAR compare finds the lanes whose high part
//! matches, and only those few need the code decoded. An absent item's lookup almost never
//! decodes anything.
//!
//! The fingerprints are sorted by nibble, then by high part, and an empty place is 0, which
//! sorts first: so a word is a function of the multiset it holds (the module documentation of
//! `bucket`), empty places fill lanes from lane 0 up, and lane 0 is free exactly when the bucket
//! has room.
//!
//! The code of nibbles `n0 <= n1 <= n2 <= n3` is their rank in the combinatorial number system:
//! with `c_k = n_k + k`, strictly increasing in `0..19`, it is `C(c0, 1) + C(c1, 2) + C(c2, 3) +
//! C(c3, 4)`, computed with a 95-entry table of binomials. The code of an empty bucket is 0, so
//! the empty word is 0. Decoding reads a 32 KiB table, indexed by all 4,096 12-bit values: the
//! 220 values no bucket holds decode to nibbles of 15, which with the all-ones high parts of
//! [`UNUSED_WORD`](super::UNUSED_WORD) make the entry 0x1FFFF, no fingerprint.

use super::pair::{Lanes, WordPair};
use super::{
    any_match, flagged_lanes, nonzero_lanes, BucketEncoding, HIGH_BITS, LANES, LANE_BITS, LOW_BITS,
};
use crate::encoding::Encoding;
use crate::error::LoadError;
use crate::fingerprint::Fingerprint;

/// Semi-sorted buckets, a [`Layout`](crate::Layout): four 17-bit fingerprints in each 64-bit
/// bucket, their low four bits sorted and coded together (Fan et al., CoNEXT 2014, section 5.2;
/// [`Encoding::SemiSorted`]). Half the plain false-positive rate in the same memory; lookups of
/// absent items cost about as much as plain ones, and every write decodes and re-encodes its
/// bucket (`BENCHMARKS.md`, "Semi-sorted buckets").
///
/// # Examples
///
/// ```
/// use lockfree_cuckoo::{CuckooFilter, Encoding, SemiSorted};
///
/// let filter = CuckooFilter::builder().capacity(1_000).layout::<SemiSorted>().build();
/// filter.insert("key")?;
/// assert!(filter.contains("key"));
/// assert_eq!(filter.encoding(), Encoding::SemiSorted);
/// # Ok::<(), lockfree_cuckoo::InsertError>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct SemiSorted;

/// Multisets of four nibbles: C(16 + 4 - 1, 4).
const CODES: usize = 3_876;

/// Bits of a fingerprint stored in the code, sorted.
const NIBBLE_BITS: u32 = 4;
const NIBBLE: u32 = (1 << NIBBLE_BITS) - 1;

/// Bits of each lane that hold a piece of the code.
const CODE_PIECE_BITS: u32 = 3;

/// The high-part bits of every lane.
const HIGH_PARTS: u64 = 0xFFF8_FFF8_FFF8_FFF8;

/// `RANK[k][n]` = C(n + k, k + 1): what nibble `n` in sorted place `k` adds to the code (the
/// combinatorial number system with `c_k = n + k`).
const RANK: [[u16; 1 << NIBBLE_BITS]; LANES] = {
    // Pascal's triangle, C(n, k) for n < 19 and k <= 4.
    let mut binomial = [[0u16; LANES + 1]; 19];
    let mut n = 0;
    while n < 19 {
        binomial[n][0] = 1;
        let mut k = 1;
        while k <= LANES && k <= n {
            binomial[n][k] = binomial[n - 1][k - 1] + binomial[n - 1][k];
            k += 1;
        }
        n += 1;
    }
    let mut rank = [[0; 1 << NIBBLE_BITS]; LANES];
    let mut k = 0;
    while k < LANES {
        let mut n = 0;
        while n <= NIBBLE as usize {
            rank[k][n] = binomial[n + k][k + 1];
            n += 1;
        }
        k += 1;
    }
    rank
};

/// The code of sorted nibbles (each below 16).
#[inline(always)]
const fn code_of(nibbles: [u32; LANES]) -> u16 {
    RANK[0][nibbles[0] as usize & NIBBLE as usize]
        + RANK[1][nibbles[1] as usize & NIBBLE as usize]
        + RANK[2][nibbles[2] as usize & NIBBLE as usize]
        + RANK[3][nibbles[3] as usize & NIBBLE as usize]
}

/// The sorted nibbles of each code, the `k`-th in the low bits of lane `k`, as lookups compare
/// them and writes move them; 15 in every lane for the values that are no code. 32 KiB: packed
/// nibbles would take 8, but every lookup of a present item would then spread them into lanes
/// first, which costs it more than the larger table does.
static DECODE: [u64; 1 << (LANES as u32 * CODE_PIECE_BITS)] = {
    let mut table = [0x000F_000F_000F_000F; 1 << (LANES as u32 * CODE_PIECE_BITS)];
    let mut a = 0;
    while a <= NIBBLE {
        let mut b = a;
        while b <= NIBBLE {
            let mut c = b;
            while c <= NIBBLE {
                let mut d = c;
                while d <= NIBBLE {
                    let spread = a as u64 | (b as u64) << 16 | (c as u64) << 32 | (d as u64) << 48;
                    table[code_of([a, b, c, d]) as usize] = spread;
                    d += 1;
                }
                c += 1;
            }
            b += 1;
        }
        a += 1;
    }
    table
};

/// The code a word's lanes hold, gathered from its four pieces by one multiply: piece `k`, at
/// bit `16k`, is shifted by `52 - 13k` to bit `52 + 3k`; every other product of a piece and a
/// shift lands below bit 48 (on bits no other product takes, so nothing carries) or above 63.
/// The code is then the top 12 bits, below 4,096 with no mask.
#[inline(always)]
const fn code(word: u64) -> usize {
    const PIECES: u64 = 0x0007_0007_0007_0007;
    const GATHER: u64 = 1 << 52 | 1 << 39 | 1 << 26 | 1 << 13;
    ((word & PIECES).wrapping_mul(GATHER) >> 52) as usize
}

/// The word's nibbles, each in the low bits of its lane.
#[inline(always)]
fn nibble_lanes(word: u64) -> u64 {
    DECODE[code(word)]
}

/// Flags of the lanes whose high part is `fingerprint`'s. In `word ^ high_probe`, those lanes
/// hold their code piece alone, below 8, and every other lane 8 or more: the has-less-than test,
/// whose borrows can flag lanes above a matching one, so only whether any is set is exact.
#[inline(always)]
const fn candidates(word: u64, fingerprint: Fingerprint) -> u64 {
    let probed = word ^ high_probe(fingerprint);
    probed.wrapping_sub(HIGH_PART_ONES) & !probed & HIGH_BITS
}

/// 1 in the high part of every lane: 8.
const HIGH_PART_ONES: u64 = LOW_BITS << CODE_PIECE_BITS;

/// The fingerprint's high part, in every lane where a word keeps high parts.
#[inline(always)]
const fn high_probe(fingerprint: Fingerprint) -> u64 {
    (fingerprint.get() >> NIBBLE_BITS) as u64 * HIGH_PART_ONES
}

/// The fingerprint's nibble, in every lane of words that hold nibbles ([`nibble_lanes`]).
#[inline(always)]
fn nibble_probe<W: Lanes>(fingerprint: Fingerprint) -> W {
    W::splat((fingerprint.get() & NIBBLE) as u16)
}

/// Words (one, or a [`WordPair`]) whose lanes are zero exactly where they hold `fingerprint`,
/// given `probed`, the words xor'ed with [`high_probe`] (which leaves their code pieces as they
/// are), and `nibbles`, their [`nibble_lanes`].
#[inline(always)]
fn differences<W: Lanes>(probed: W, nibbles: W, fingerprint: Fingerprint) -> W {
    probed & W::from(HIGH_PARTS) | nibbles ^ nibble_probe(fingerprint)
}

/// Flags of exactly the lanes of `word` that hold `fingerprint`: high part and nibble both equal.
#[inline(always)]
fn exact_matches(word: u64, fingerprint: Fingerprint) -> u64 {
    let probed = word ^ high_probe(fingerprint);
    nonzero_lanes(differences(probed, nibble_lanes(probed), fingerprint)) ^ HIGH_BITS
}

/// Whether either word holds `fingerprint`, the words given xor'ed with [`high_probe`], as
/// [`candidates`] computed them (a lookup passes them on rather than computing them again).
/// Both words at once, as a [`WordPair`]: on x86_64 the vector unit's work, beside the integer
/// work of the lookups around it.
/// Inline: in a loop of lookups (a batch, or single calls in the caller's loop) its constants
/// and the table's address stay in registers across keys instead of being set up by each call.
/// (Decoding only the word with candidates, chosen without a branch, does not pay: its choice
/// waits for both words' high parts before the decoding starts.)
#[inline(always)]
fn probed_pair_holds(first: u64, second: u64, fingerprint: Fingerprint) -> bool {
    let nibbles = WordPair::new(nibble_lanes(first), nibble_lanes(second));
    differences(WordPair::new(first, second), nibbles, fingerprint).any_zero_lane()
}

/// [`SemiSorted::with_copy`] once lane 0's high part is seen to be 0. The new entry goes after
/// those that sort below it, which move down a lane into the free one: lane moves in SWAR, with
/// no branch on which entries move (data the CPU cannot predict).
#[inline(never)]
fn with_new_entry(word: u64, fingerprint: Fingerprint) -> Option<u64> {
    let nibbles = nibble_lanes(word);
    if nibbles & 0xF != 0 {
        return None;
    }
    let highs = word & HIGH_PARTS;
    // Lane 0 (empty) sorts below every fingerprint and is not counted: it is taken.
    let at = flagged_lanes(sorts_below(highs, nibbles, fingerprint) >> LANE_BITS);
    let (below, through) = (lanes_below(at), lanes_below(at) << LANE_BITS | 0xFFFF);
    let place = |lanes: u64, new: u64| {
        lanes >> LANE_BITS & below | new << (at * LANE_BITS) | lanes & !through
    };
    let f = fingerprint.get();
    let new_high = u64::from(f >> NIBBLE_BITS) << CODE_PIECE_BITS;
    Some(assemble(place(highs, new_high), place(nibbles, u64::from(f & NIBBLE))))
}

/// The order of a bucket's entries: by nibble, then by high part; 0 (empty) first.
#[inline(always)]
const fn sort_key(entry: u32) -> u32 {
    (entry & NIBBLE) << 13 | entry >> NIBBLE_BITS
}

/// The word of entries in [`sort_key`] order.
#[cfg(test)]
fn encode(entries: [u32; LANES]) -> u64 {
    let lanes = |part: fn(u32) -> u32| {
        (0..LANES).fold(0, |word, k| word | u64::from(part(entries[k])) << (k as u32 * LANE_BITS))
    };
    assemble(lanes(|e| (e >> NIBBLE_BITS) << CODE_PIECE_BITS), lanes(|e| e & NIBBLE))
}

/// The word of sorted entries given as their high parts, in place (`word & HIGH_PARTS`), and
/// their nibbles, each in the low bits of its lane: the high parts and the pieces of the
/// nibbles' code.
#[inline(always)]
fn assemble(highs: u64, nibbles: u64) -> u64 {
    let nibble = |k: u32| (nibbles >> (k * LANE_BITS)) as u32;
    let code = code_of([nibble(0), nibble(1), nibble(2), nibble(3)]);
    // Piece `k`, at bit `3k`, moves to bit `16k` by the multiply's `13k` term; the other products
    // land on bits no lane's piece takes, and none overlaps another, so nothing carries.
    const SPREAD: u64 = 1 | 1 << 13 | 1 << 26 | 1 << 39;
    highs | u64::from(code).wrapping_mul(SPREAD) & 0x0007_0007_0007_0007
}

/// The lanes below lane `k`, all of them, in a word.
#[inline(always)]
const fn lanes_below(k: u32) -> u64 {
    (1 << (k * LANE_BITS)) - 1
}

/// Flags of the lanes of `(highs, nibbles)` whose entry sorts below `fingerprint`: a smaller
/// nibble, or the same and a smaller high part. Each is a SWAR unsigned compare of lanes whose
/// top bit is clear (the high parts shifted down one bit to clear it).
#[inline(always)]
fn sorts_below(highs: u64, nibbles: u64, fingerprint: Fingerprint) -> u64 {
    let at_least = |x: u64, y: u64| (x | HIGH_BITS).wrapping_sub(y) & HIGH_BITS;
    let nibble_probe = nibble_probe(fingerprint);
    let nibble_at_least = at_least(nibbles, nibble_probe);
    let nibble_equal = nonzero_lanes(nibbles ^ nibble_probe) ^ HIGH_BITS;
    let high_at_least = at_least(highs >> 1, high_probe(fingerprint) >> 1);
    (!nibble_at_least | nibble_equal & !high_at_least) & HIGH_BITS
}

impl BucketEncoding for SemiSorted {
    const ENCODING: Encoding = Encoding::SemiSorted;
    const FINGERPRINT_BITS: u32 = Encoding::SemiSorted.fingerprint_bits();

    #[inline(always)]
    fn fingerprint(mixed: u64) -> Fingerprint {
        Fingerprint::of_mixed(mixed, Self::FINGERPRINT_BITS)
    }

    #[inline(always)]
    fn match_flags(word: u64, fingerprint: Fingerprint) -> u64 {
        if candidates(word, fingerprint) == 0 {
            return 0;
        }
        exact_matches(word, fingerprint)
    }

    /// The two steps of a lookup ([`pair_candidates`](Self::pair_candidates), then
    /// [`pair_holds`](Self::pair_holds)) as one test, for batches and for a grown filter's
    /// levels, whose reads combine: only whether any flag is set is exact.
    #[inline(always)]
    fn pair_match_flags(first: u64, second: u64, fingerprint: Fingerprint) -> u64 {
        let holds = any_match(Self::pair_candidates(first, second, fingerprint))
            && Self::pair_holds(first, second, fingerprint);
        if holds {
            HIGH_BITS
        } else {
            0
        }
    }

    const TWO_STEP_LOOKUP: bool = true;

    /// One branch for both words, taken for nearly every absent item and for every present one,
    /// so that it is predicted in lookups that mostly miss and in those that mostly hit.
    #[inline(always)]
    fn pair_candidates(first: u64, second: u64, fingerprint: Fingerprint) -> u64 {
        candidates(first, fingerprint) | candidates(second, fingerprint)
    }

    #[inline(always)]
    fn pair_holds(first: u64, second: u64, fingerprint: Fingerprint) -> bool {
        let probe = high_probe(fingerprint);
        probed_pair_holds(first ^ probe, second ^ probe, fingerprint)
    }

    #[inline]
    fn count(word: u64, fingerprint: Fingerprint) -> usize {
        flagged_lanes(exact_matches(word, fingerprint)) as usize
    }

    #[inline]
    fn occupied(word: u64) -> usize {
        flagged_lanes(nonzero_lanes(word & HIGH_PARTS | nibble_lanes(word))) as usize
    }

    #[inline]
    fn has_room(word: u64) -> bool {
        word & 0xFFF8 == 0 && nibble_lanes(word) & 0xF == 0
    }

    /// Lane 0 is free exactly when the bucket has room (its empty places sort first), and a
    /// free lane's high part is 0: most full buckets are told by that alone, inline, without
    /// decoding or calling [`with_new_entry`].
    #[inline(always)]
    fn with_copy(word: u64, fingerprint: Fingerprint) -> Option<u64> {
        if word & 0xFFF8 != 0 {
            return None;
        }
        with_new_entry(word, fingerprint)
    }

    /// The lowest copy's lane empties and the lanes below it move up one (they sort no higher,
    /// and an empty place sorts first), in SWAR as in `with_copy`.
    #[inline]
    fn without_copy(word: u64, fingerprint: Fingerprint) -> Option<u64> {
        let matches = exact_matches(word, fingerprint);
        if matches == 0 {
            return None;
        }
        let at = matches.trailing_zeros() / LANE_BITS;
        let through = lanes_below(at) << LANE_BITS | 0xFFFF;
        let lift = |lanes: u64| lanes << LANE_BITS & through | lanes & !through;
        Some(assemble(lift(word & HIGH_PARTS), lift(nibble_lanes(word))))
    }

    #[inline]
    fn entries(word: u64) -> [u32; LANES] {
        let nibbles = nibble_lanes(word);
        core::array::from_fn(|k| {
            let lane = k as u32 * LANE_BITS;
            let high = (word >> lane) as u32 & 0xFFFF;
            (high >> CODE_PIECE_BITS) << NIBBLE_BITS | (nibbles >> lane) as u32 & NIBBLE
        })
    }

    fn check(word: u64, bucket: u64) -> Result<(), LoadError> {
        let entries = Self::entries(word);
        let sorted = entries.windows(2).all(|pair| sort_key(pair[0]) <= sort_key(pair[1]));
        let fingerprints = entries.iter().all(|&e| e == 0 || Fingerprint::from_entry(e).is_some());
        if code(word) < CODES && sorted && fingerprints {
            Ok(())
        } else {
            Err(LoadError::MalformedBucket { bucket })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bucket::{any_match, UNUSED_WORD};
    use rand::{rngs::StdRng, Rng, SeedableRng};

    type S = SemiSorted;

    /// The word holding `fingerprints` (at most four), built one insert at a time.
    fn word_of(fingerprints: &[u32]) -> u64 {
        fingerprints
            .iter()
            .fold(0, |w, &f| S::with_copy(w, Fingerprint::of(f)).expect("room for four"))
    }

    fn multiset(word: u64) -> Vec<u32> {
        let mut entries: Vec<u32> = S::entries(word).into_iter().filter(|&e| e != 0).collect();
        entries.sort_unstable();
        entries
    }

    fn random_fingerprint(rng: &mut StdRng) -> u32 {
        // Few distinct nibbles and high parts, so that ties and repeats are common.
        let nibble = rng.random_range(0..4u32) * 5;
        let high = [0, 1, 0x0FFF, 0x1FFF][rng.random_range(0..4)];
        let f = high << 4 | nibble;
        if Fingerprint::from_entry(f).is_some() {
            f
        } else {
            0x1_0001
        }
    }

    #[test]
    fn the_code_is_a_bijection_onto_0_to_3875() {
        let mut seen = vec![false; CODES];
        for (code, &spread) in DECODE.iter().enumerate() {
            if code >= CODES {
                assert_eq!(spread, 0x000F_000F_000F_000F, "{code}");
                continue;
            }
            assert_eq!(spread & !0x000F_000F_000F_000F, 0);
            let nibbles: [u32; LANES] = core::array::from_fn(|k| (spread >> (16 * k)) as u32 & 0xF);
            assert!(nibbles.windows(2).all(|p| p[0] <= p[1]));
            assert_eq!(usize::from(code_of(nibbles)), code);
            assert!(!seen[code]);
            seen[code] = true;
        }
        assert!(seen.iter().all(|&s| s));
        assert_eq!(code_of([0; LANES]), 0);
        assert_eq!(usize::from(code_of([15; LANES])), CODES - 1);
    }

    #[test]
    fn the_empty_word_is_zero_and_the_unused_word_is_no_bucket() {
        assert_eq!(word_of(&[]), 0);
        assert_eq!(S::occupied(0), 0);
        assert!(S::has_room(0));
        assert!(!S::has_room(UNUSED_WORD));
        assert!(S::check(UNUSED_WORD, 0).is_err());
        for f in (1..0x2_0000).step_by(7).filter_map(Fingerprint::from_entry) {
            assert!(!S::contains(UNUSED_WORD, f));
            assert_eq!(S::without_copy(UNUSED_WORD, f), None);
        }
    }

    /// Every operation against a sorted vector, over random sequences of inserts and removes.
    #[test]
    #[cfg_attr(miri, ignore = "arithmetic only, too slow under Miri")]
    fn operations_agree_with_a_multiset_model() {
        let mut rng = StdRng::seed_from_u64(17);
        for _ in 0..2_000 {
            let (mut word, mut model) = (0u64, Vec::new());
            for _ in 0..12 {
                let f = random_fingerprint(&mut rng);
                let fingerprint = Fingerprint::of(f);
                if rng.random_bool(0.6) {
                    let next = S::with_copy(word, fingerprint);
                    assert_eq!(next.is_some(), model.len() < LANES);
                    assert_eq!(S::has_room(word), model.len() < LANES);
                    if let Some(next) = next {
                        model.push(f);
                        word = next;
                    }
                } else {
                    let next = S::without_copy(word, fingerprint);
                    let at = model.iter().position(|&m| m == f);
                    assert_eq!(next.is_some(), at.is_some());
                    if let (Some(next), Some(at)) = (next, at) {
                        model.swap_remove(at);
                        word = next;
                    }
                }
                model.sort_unstable();
                assert_eq!(multiset(word), model);
                assert_eq!(S::occupied(word), model.len());
                assert!(S::check(word, 0).is_ok());
                assert_eq!(word, word_of(&model), "a word is a function of its multiset");
                let mut by_key = model.clone();
                by_key.resize(LANES, 0);
                by_key.sort_unstable_by_key(|&e| sort_key(e));
                assert_eq!(word, encode(by_key.try_into().unwrap()), "{model:x?}");
                for probe in (0..8).map(|_| random_fingerprint(&mut rng)) {
                    let copies = model.iter().filter(|&&m| m == probe).count();
                    let probe = Fingerprint::of(probe);
                    assert_eq!(S::count(word, probe), copies);
                    assert_eq!(S::contains(word, probe), copies > 0);
                    assert_eq!(
                        any_match(S::pair_match_flags(word, 0, probe)),
                        copies > 0,
                        "{word:x} {probe:?}"
                    );
                    assert_eq!(any_match(S::pair_match_flags(0, word, probe)), copies > 0);
                }
            }
        }
    }

    /// The example of `FORMAT.md`, "Semi-sorted words".
    #[test]
    fn the_format_specification_s_example_word() {
        let word = word_of(&[0x1_0003, 0x0005, 0x00F1]);
        assert_eq!(word, 0x0000_8001_007A_0001);
        assert_eq!(code(word), 81);
        assert_eq!(S::entries(word), [0, 0x00F1, 0x1_0003, 0x0005]);
    }

    #[test]
    fn a_lookup_checks_the_nibble_of_a_matching_high_part() {
        // Same high part, other nibbles: the high-part compare alone would match.
        let word = word_of(&[0x1234 << 4 | 1, 0x1234 << 4 | 2, 0x1234 << 4 | 3]);
        assert!(S::contains(word, Fingerprint::of(0x1234 << 4 | 2)));
        assert!(!S::contains(word, Fingerprint::of(0x1234 << 4 | 4)));
        assert_eq!(S::count(word, Fingerprint::of(0x1234 << 4 | 4)), 0);
        // Same nibble, another high part.
        assert!(!S::contains(word, Fingerprint::of(0x1235 << 4 | 2)));
    }

    #[test]
    fn writes_keep_the_sort_and_the_loader_refuses_unsorted_words() {
        let word = word_of(&[0x0005, 0x1_0003, 0x0103, 0x00F1]);
        let keys = S::entries(word).map(sort_key);
        assert!(keys.windows(2).all(|p| p[0] <= p[1]), "{keys:?}");
        // Two lanes' high parts swapped: the same code, but out of order.
        let swapped = word & !0xFFF8_0000_FFF8 | (word & 0xFFF8) << 32 | (word >> 32 & 0xFFF8);
        assert_ne!(swapped, word);
        assert!(matches!(S::check(swapped, 3), Err(LoadError::MalformedBucket { bucket: 3 })));
        // A code no bucket holds.
        assert!(S::check(0x7 | 0x7 << 16 | 0x7 << 32 | 0x7 << 48, 0).is_err());
        // An entry whose low 16 bits are reserved: 0x1_FFFF.
        assert!(S::check(0xFFF8_0000_0000_0000 | encode([0, 0, 0, 0xF]), 0).is_err());
    }
}
