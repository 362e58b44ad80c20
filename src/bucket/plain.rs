//! The plain encoding: four 16-bit fingerprint lanes in one `u64`, with SWAR logic on them.
//!
//! Lane `k` occupies bits `16k..16k+16`; the value 0 marks an empty lane, and no lane ever holds
//! 0xFFFF, which no plain [`Fingerprint`] is (so no word is [`UNUSED_WORD`]).

use super::{any_match, nonzero_lanes, BucketEncoding, HIGH_BITS, LANES, LANE_BITS};
use super::{unmasked_zero_lane_flags, LOW_BITS, UNUSED_WORD};
use crate::encoding::Encoding;
use crate::error::LoadError;
use crate::fingerprint::Fingerprint;

/// Plain buckets, the default [`Layout`](crate::Layout): four 16-bit fingerprints in each
/// 64-bit bucket ([`Encoding::Plain`]).
///
/// # Examples
///
/// ```
/// use lockfree_cuckoo::{CuckooFilter, Encoding, Plain};
///
/// let filter: CuckooFilter = CuckooFilter::builder().layout::<Plain>().build();
/// assert_eq!(filter.encoding(), Encoding::Plain);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Plain;

impl BucketEncoding for Plain {
    const ENCODING: Encoding = Encoding::Plain;
    const FINGERPRINT_BITS: u32 = Encoding::Plain.fingerprint_bits();

    #[inline(always)]
    fn fingerprint(mixed: u64) -> Fingerprint {
        Fingerprint::of_mixed(mixed, Self::FINGERPRINT_BITS)
    }

    #[inline(always)]
    fn match_flags(word: u64, fingerprint: Fingerprint) -> u64 {
        match_flags(word, fingerprint)
    }

    #[inline(always)]
    fn contains(word: u64, fingerprint: Fingerprint) -> bool {
        contains(word, fingerprint)
    }

    #[inline(always)]
    fn count(word: u64, fingerprint: Fingerprint) -> usize {
        count(word, fingerprint)
    }

    #[inline(always)]
    fn occupied(word: u64) -> usize {
        occupied(word)
    }

    #[inline(always)]
    fn has_room(word: u64) -> bool {
        find_empty(word).is_some()
    }

    #[inline(always)]
    fn with_copy(word: u64, fingerprint: Fingerprint) -> Option<u64> {
        find_empty(word).map(|lane| with_lane(word, lane, fingerprint))
    }

    #[inline(always)]
    fn without_copy(word: u64, fingerprint: Fingerprint) -> Option<u64> {
        find(word, fingerprint).map(|lane| without_lane(word, lane))
    }

    #[inline]
    fn entries(word: u64) -> [u32; LANES] {
        core::array::from_fn(|k| u32::from(lane(word, k)))
    }

    fn check(word: u64, bucket: u64) -> Result<(), LoadError> {
        match reserved_lane(word) {
            Some(lane) => Err(LoadError::ReservedFingerprint { bucket, lane: lane as u8 }),
            None => Ok(()),
        }
    }
}

/// A fingerprint copied into all four lanes.
#[inline]
const fn broadcast(fingerprint: Fingerprint) -> u64 {
    fingerprint.get() as u64 * LOW_BITS
}

/// The has-zero-lane test, masked: only the lowest flag is exact ([`unmasked_zero_lane_flags`]).
#[inline]
const fn zero_lane_flags(word: u64) -> u64 {
    unmasked_zero_lane_flags(word) & HIGH_BITS
}

#[inline]
const fn lowest_flagged_lane(flags: u64) -> Option<usize> {
    if flags == 0 {
        None
    } else {
        Some((flags.trailing_zeros() / LANE_BITS) as usize)
    }
}

/// Whether any lane of `word` holds `fingerprint`.
#[inline]
const fn contains(word: u64, fingerprint: Fingerprint) -> bool {
    any_match(match_flags(word, fingerprint))
}

/// Flags of the lanes of `word` that hold `fingerprint`, to be tested by [`any_match`]. The
/// flags of several words, or'ed, tell whether any of them holds it, with one test at the end.
#[inline]
const fn match_flags(word: u64, fingerprint: Fingerprint) -> u64 {
    unmasked_zero_lane_flags(word ^ broadcast(fingerprint))
}

/// The lowest lane of `word` that holds `fingerprint`.
#[inline]
const fn find(word: u64, fingerprint: Fingerprint) -> Option<usize> {
    lowest_flagged_lane(zero_lane_flags(word ^ broadcast(fingerprint)))
}

/// The lowest empty lane of `word`.
#[inline]
const fn find_empty(word: u64) -> Option<usize> {
    lowest_flagged_lane(zero_lane_flags(word))
}

/// The value of `lane`: a fingerprint, or 0 when the lane is empty.
#[inline]
const fn lane(word: u64, lane: usize) -> u16 {
    (word >> (lane as u32 * LANE_BITS)) as u16
}

/// `word` with `lane`, which must be empty, set to `fingerprint`.
#[inline]
const fn with_lane(word: u64, lane: usize, fingerprint: Fingerprint) -> u64 {
    debug_assert!(self::lane(word, lane) == 0);
    word | (fingerprint.get() as u64) << (lane as u32 * LANE_BITS)
}

/// `word` with `lane` emptied.
#[inline]
const fn without_lane(word: u64, lane: usize) -> u64 {
    word & !(0xFFFF << (lane as u32 * LANE_BITS))
}

/// The lowest lane of `word` that holds 0xFFFF, the lane value no fingerprint takes: a word
/// that has one was not written by this crate.
#[inline]
const fn reserved_lane(word: u64) -> Option<usize> {
    lowest_flagged_lane(zero_lane_flags(word ^ UNUSED_WORD))
}

/// How many lanes of `word` are not empty (a snapshot's item count).
#[inline]
const fn occupied(word: u64) -> usize {
    nonzero_lanes(word).count_ones() as usize
}

/// How many lanes of `word` hold `fingerprint`.
#[inline]
const fn count(word: u64, fingerprint: Fingerprint) -> usize {
    LANES - occupied(word ^ broadcast(fingerprint))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A word whose lanes are given lowest first.
    fn word(lanes: [u16; LANES]) -> u64 {
        lanes.iter().enumerate().fold(0, |w, (k, &f)| w | (f as u64) << (16 * k))
    }

    fn naive_find(lanes: [u16; LANES], f: u16) -> Option<usize> {
        lanes.iter().position(|&x| x == f)
    }

    /// Values that stress borrows: 0, 1, lane-boundary patterns, the top bit and all ones.
    const TRICKY: [u16; 9] = [0, 1, 2, 0x00FF, 0x0100, 0x7FFF, 0x8000, 0x8001, 0xFFFF];

    #[test]
    #[cfg_attr(miri, ignore = "arithmetic only, too slow under Miri")]
    fn find_matches_naive_scan_for_every_lane_position_and_tricky_neighbours() {
        for target in TRICKY.iter().copied().filter_map(|v| Fingerprint::from_entry(u32::from(v))) {
            for a in TRICKY {
                for b in TRICKY {
                    for c in TRICKY {
                        for d in TRICKY {
                            let lanes = [a, b, c, d];
                            let w = word(lanes);
                            let value = target.get() as u16;
                            assert_eq!(find(w, target), naive_find(lanes, value), "{lanes:x?}");
                            assert_eq!(contains(w, target), lanes.contains(&value));
                            assert_eq!(find_empty(w), naive_find(lanes, 0), "{lanes:x?}");
                            assert_eq!(
                                count(w, target),
                                lanes.iter().filter(|&&x| x == value).count()
                            );
                            assert_eq!(occupied(w), lanes.iter().filter(|&&x| x != 0).count());
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn occupied_counts_non_zero_lanes() {
        assert_eq!(occupied(0), 0);
        assert_eq!(occupied(1), 1);
        assert_eq!(occupied(0x0001_0000_0000_0000), 1);
        assert_eq!(occupied(0xFFFF_0000_FFFF_0000), 2);
        assert_eq!(occupied(u64::MAX), 4);
    }

    #[test]
    #[cfg_attr(miri, ignore = "arithmetic only, too slow under Miri")]
    fn the_unused_word_is_full_and_matches_no_fingerprint() {
        assert_eq!(UNUSED_WORD, word([0xFFFF; LANES]));
        assert_eq!(find_empty(UNUSED_WORD), None);
        assert!((1..0xFFFF)
            .map(Fingerprint::of)
            .all(|f| !contains(UNUSED_WORD, f) && broadcast(f) != UNUSED_WORD));
        assert_eq!(reserved_lane(UNUSED_WORD), Some(0));
    }

    #[test]
    #[cfg_attr(miri, ignore = "arithmetic only, too slow under Miri")]
    fn reserved_lane_finds_the_lowest_0xffff_lane() {
        for a in TRICKY {
            for b in TRICKY {
                for c in TRICKY {
                    for d in TRICKY {
                        let lanes = [a, b, c, d];
                        assert_eq!(reserved_lane(word(lanes)), naive_find(lanes, 0xFFFF));
                    }
                }
            }
        }
    }

    #[test]
    fn set_and_clear_touch_only_their_lane() {
        for k in 0..LANES {
            let full = word([0x1111, 0x2222, 0x3333, 0x4444]);
            let cleared = without_lane(full, k);
            assert_eq!(lane(cleared, k), 0);
            assert_eq!(find_empty(cleared), Some(k));
            for other in (0..LANES).filter(|&o| o != k) {
                assert_eq!(lane(cleared, other), lane(full, other));
            }
            assert_eq!(with_lane(cleared, k, Fingerprint::of(u32::from(lane(full, k)))), full);
            assert_eq!(with_lane(0, k, Fingerprint::of(0xBEEF)), 0xBEEF << (16 * k));
            assert_eq!(
                find(with_lane(0, k, Fingerprint::of(0xBEEF)), Fingerprint::of(0xBEEF)),
                Some(k)
            );
        }
    }

    #[test]
    fn find_reports_the_lowest_match_even_with_borrow_ghosts() {
        // A zero lane below a lane holding 1 makes the naive flags ghost-flag the upper lane.
        let w = word([7, 0, 1, 7]);
        assert_eq!(find(w, Fingerprint::of(7)), Some(0));
        assert_eq!(find_empty(w), Some(1));
        assert_eq!(find(word([0, 1, 0x8001, 1]), Fingerprint::of(1)), Some(1));
        assert_eq!(find(word([2, 3, 4, 5]), Fingerprint::of(1)), None);
    }
}
