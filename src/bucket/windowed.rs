//! The windowed encoding: four 16-bit lanes, each a 14-bit fingerprint and a 2-bit epoch tag, so
//! that entries expire.
//!
//! Lane `k` occupies bits `16k..16k+16`: the fingerprint in its low 14 bits (never 0 and never
//! 0x3FFF), the tag in its top two; a lane of 0 is empty. No lane holds 0xFFFF (its fingerprint
//! would be 0x3FFF), so no word is [`UNUSED_WORD`](super::UNUSED_WORD).
//!
//! Time is cut into epochs, and a lane's tag is the epoch, modulo 4, in which its entry was last
//! written. At epoch `e`, tags `e`, `e - 1` and `e - 2` are *live* and tag `e + 1` (that is,
//! `e - 3`) is *dead*: lookups, counts and removes see live lanes alone, and the sweep empties
//! dead lanes. Which epoch is current is the filter's business (`windowed::epochs`), not the
//! word's, so these functions take it inside the [`Fingerprint`]:
//!
//! - an *operation's* fingerprint ([`at_epoch`]) carries the current epoch's tag and the
//!   [`AT_EPOCH`] flag: it matches live lanes with its 14 bits, is written with the current tag,
//!   and a remove takes its *oldest* live copy, so that taking a colliding item's copy never
//!   shortens the life of the copies left;
//! - an *entry* (a lane's value, as a relocation moves it) has no flag: it matches lanes equal
//!   to it, tag included, and is written as it is. A relocation so keeps an entry's age, and
//!   never takes a differently aged copy of its fingerprint instead.
//!
//! Both are written into empty lanes only: a dead lane stays until the sweep empties it
//! ([`without_tagged`]). An insert that took dead lanes could, had the epoch moved on since it
//! read it, overwrite an entry written in the new epoch, whose tag is the one it took for dead.
//!
//! Only the 14 bits choose an entry's other bucket ([`BucketEncoding::key`]): a rewritten tag
//! never moves an entry.

use super::{any_match, flagged_lanes, nonzero_lanes, BucketEncoding, HIGH_BITS, LANES};
use super::{unmasked_zero_lane_flags, LANE_BITS, LOW_BITS};
use crate::encoding::Encoding;
use crate::error::LoadError;
use crate::fingerprint::Fingerprint;

/// Windowed buckets: four 14-bit fingerprints with 2-bit epoch tags in each 64-bit bucket
/// ([`Encoding::Windowed`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub(crate) struct Windowed;

/// Bits of a windowed fingerprint.
const KEY_BITS: u32 = 14;
/// A lane's fingerprint bits.
const KEY: u32 = (1 << KEY_BITS) - 1;
/// The fingerprint bits of every lane.
const KEYS: u64 = KEY as u64 * LOW_BITS;
/// The lower tag bit of every lane.
const TAG_LOW_BITS: u64 = LOW_BITS << KEY_BITS;
/// Both tag bits of every lane.
const TAGS: u64 = 3 * TAG_LOW_BITS;
/// Set in an operation's fingerprint, whose tag is then the current epoch's ([`at_epoch`]).
pub(crate) const AT_EPOCH: u32 = 1 << LANE_BITS;

/// The fingerprint of an operation at `epoch`: `fingerprint`'s 14 bits, `epoch`'s tag, and
/// [`AT_EPOCH`].
#[inline(always)]
pub(crate) const fn at_epoch(fingerprint: Fingerprint, epoch: u64) -> Fingerprint {
    Fingerprint::in_occupied_entry(
        fingerprint.get() & KEY | ((epoch & 3) as u32) << KEY_BITS | AT_EPOCH,
    )
}

/// The dead tag at `epoch`, which its sweep empties.
#[inline(always)]
pub(crate) const fn dead_tag_at(epoch: u64) -> u32 {
    (epoch.wrapping_add(1) & 3) as u32
}

/// A 16-bit value copied into all four lanes.
#[inline(always)]
const fn broadcast(value: u32) -> u64 {
    (value & 0xFFFF) as u64 * LOW_BITS
}

/// The high bit of every lane whose tag is `tag`, exactly.
#[inline(always)]
const fn lanes_tagged(word: u64, tag: u32) -> u64 {
    let differs = (word ^ broadcast(tag << KEY_BITS)) & TAGS;
    !((differs | differs << 1) & HIGH_BITS) & HIGH_BITS
}

/// The high bit of every empty lane, exactly.
#[inline(always)]
const fn empty_lanes(word: u64) -> u64 {
    !nonzero_lanes(word) & HIGH_BITS
}

/// The dead tag at the epoch an operation's fingerprint carries.
#[inline(always)]
const fn dead_tag(fingerprint: Fingerprint) -> u32 {
    ((fingerprint.get() >> KEY_BITS) + 1) & 3
}

#[inline(always)]
const fn is_at_epoch(fingerprint: Fingerprint) -> bool {
    fingerprint.get() & AT_EPOCH != 0
}

/// Flags, in the lanes' high bits and exact in every lane, of the live lanes of `word` that
/// hold the 14 bits of an operation's `fingerprint`.
#[inline(always)]
const fn live_matches(word: u64, fingerprint: Fingerprint) -> u64 {
    // Against the fingerprint with the dead tag: a lane matches when its low 14 bits are equal
    // (adding 0x3FFF carries into bit 14 exactly when they are not, and never out of the lane)
    // and its tag differs from the dead one (either tag bit of the difference is set).
    let difference = word ^ broadcast(fingerprint.get() & KEY | dead_tag(fingerprint) << KEY_BITS);
    let key_differs = ((difference & KEYS) + KEYS) & TAG_LOW_BITS;
    let alive = (difference | difference >> 1) & TAG_LOW_BITS;
    (alive & !key_differs) << 1
}

/// Flags, to be tested by [`any_match`] and exact in every lane's high bit, of the lanes of
/// `word` that hold the 14 bits of an operation's `fingerprint`, whatever their tag: its live
/// copies when no lane holds the dead tag.
#[inline(always)]
pub(crate) const fn matches_of_any_age(word: u64, fingerprint: Fingerprint) -> u64 {
    // A lane's 14 bits, equal or not, subtracted from 0x8000: bit 15 stays set exactly when
    // they are equal, and nothing borrows out of the lane.
    HIGH_BITS - ((word ^ broadcast(fingerprint.get())) & KEYS)
}

/// Flags, exact in every lane, of the lanes of `word` equal to `entry`.
#[inline(always)]
const fn equal_lanes(word: u64, entry: Fingerprint) -> u64 {
    empty_lanes(word ^ broadcast(entry.get()))
}

/// Flags, exact in every lane, of the copies of `fingerprint` in `word`: live matches for an
/// operation, equal lanes for an entry.
#[inline(always)]
const fn copies(word: u64, fingerprint: Fingerprint) -> u64 {
    if is_at_epoch(fingerprint) {
        live_matches(word, fingerprint)
    } else {
        equal_lanes(word, fingerprint)
    }
}

/// Whether `entry`, a lane's value, is live at the epoch an operation's `fingerprint` carries
/// (an entry's fingerprint: whether it is that very entry).
#[inline(always)]
const fn is_live(entry: u32, fingerprint: Fingerprint) -> bool {
    !is_at_epoch(fingerprint) || entry >> KEY_BITS != dead_tag(fingerprint)
}

/// Of the lanes `flags` flags, those of the oldest tag among them at the epoch an operation's
/// `fingerprint` carries (tag `e - 2`, else `e - 1`, else `e`); all of them for an entry, whose
/// copies all have its tag.
#[inline(always)]
const fn oldest(word: u64, flags: u64, fingerprint: Fingerprint) -> u64 {
    if !is_at_epoch(fingerprint) {
        return flags;
    }
    let current = fingerprint.get() >> KEY_BITS;
    let mut age = 2;
    loop {
        let aged = flags & lanes_tagged(word, current.wrapping_sub(age) & 3);
        if aged != 0 || age == 0 {
            return aged;
        }
        age -= 1;
    }
}

/// The lowest flagged lane's mask (all 16 bits of it), or `None`.
#[inline(always)]
const fn lowest_lane_mask(flags: u64) -> Option<u64> {
    if flags == 0 {
        None
    } else {
        Some(0xFFFF << (flags.trailing_zeros() / LANE_BITS * LANE_BITS))
    }
}

/// `word` with the lowest flagged lane set to `value`'s low 16 bits, or `None` if none is.
#[inline(always)]
const fn with_lowest(word: u64, flags: u64, value: u32) -> Option<u64> {
    match lowest_lane_mask(flags) {
        Some(mask) => Some(word & !mask | broadcast(value) & mask),
        None => None,
    }
}

/// `word` with every lane tagged `tag` emptied: the sweep of a dead tag.
#[inline]
pub(crate) const fn without_tagged(word: u64, tag: u32) -> u64 {
    let flags = lanes_tagged(word, tag) & nonzero_lanes(word);
    // Each flag at bit 15 of its lane, spread down over the lane.
    word & !((flags >> (LANE_BITS - 1)) * 0xFFFF)
}

/// How many lanes of `word`, not empty, are tagged `tag`.
#[inline]
pub(crate) const fn tagged(word: u64, tag: u32) -> usize {
    (lanes_tagged(word, tag) & nonzero_lanes(word)).count_ones() as usize
}

/// How an insert of a present item refreshes `word`: unless a live copy of the operation's
/// `fingerprint` already has the operation's tag, the lowest live copy gets it.
#[inline]
pub(crate) const fn refreshed(word: u64, fingerprint: Fingerprint) -> Refresh {
    let live = live_matches(word, fingerprint);
    if live == 0 {
        return Refresh::Absent;
    }
    let current = live & lanes_tagged(word, fingerprint.get() >> KEY_BITS & 3);
    if current != 0 {
        return Refresh::Current;
    }
    match with_lowest(word, live, fingerprint.get()) {
        Some(word) => Refresh::To(word),
        None => Refresh::Absent,
    }
}

/// What [`refreshed`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Refresh {
    /// A live copy already has the current tag: nothing to write.
    Current,
    /// The word with the lowest live copy given the current tag.
    To(u64),
    /// No live copy.
    Absent,
}

impl BucketEncoding for Windowed {
    const ENCODING: Encoding = Encoding::Windowed;
    const FINGERPRINT_BITS: u32 = KEY_BITS;

    /// An operation's fingerprint at epoch 0; the filter sets the epoch ([`at_epoch`]).
    #[inline(always)]
    fn fingerprint(mixed: u64) -> Fingerprint {
        // 0 and 0x3FFF fold onto their neighbours, as the plain fingerprint's excluded values do.
        let low = mixed as u32 & KEY;
        let flip = (low.wrapping_add(1) & KEY < 2) as u32;
        Fingerprint::in_occupied_entry((low ^ flip) | AT_EPOCH)
    }

    #[inline(always)]
    fn key(fingerprint: Fingerprint) -> Fingerprint {
        Fingerprint::in_occupied_entry(fingerprint.get() & KEY)
    }

    #[inline(always)]
    fn match_flags(word: u64, fingerprint: Fingerprint) -> u64 {
        copies(word, fingerprint)
    }

    #[inline(always)]
    fn contains(word: u64, fingerprint: Fingerprint) -> bool {
        any_match(copies(word, fingerprint))
    }

    #[inline(always)]
    fn count(word: u64, fingerprint: Fingerprint) -> usize {
        flagged_lanes(copies(word, fingerprint)) as usize
    }

    #[inline(always)]
    fn occupied(word: u64) -> usize {
        nonzero_lanes(word).count_ones() as usize
    }

    #[inline(always)]
    fn has_room(word: u64) -> bool {
        any_match(unmasked_zero_lane_flags(word))
    }

    #[inline(always)]
    fn movable(entry: u32, fingerprint: Fingerprint) -> bool {
        is_live(entry, fingerprint)
    }

    #[inline(always)]
    fn with_copy(word: u64, fingerprint: Fingerprint) -> Option<u64> {
        with_lowest(word, empty_lanes(word), fingerprint.get())
    }

    #[inline(always)]
    fn without_copy(word: u64, fingerprint: Fingerprint) -> Option<u64> {
        with_lowest(word, oldest(word, copies(word, fingerprint), fingerprint), 0)
    }

    #[inline]
    fn entries(word: u64) -> [u32; LANES] {
        core::array::from_fn(|k| (word >> (k as u32 * LANE_BITS)) as u32 & 0xFFFF)
    }

    fn check(word: u64, bucket: u64) -> Result<(), LoadError> {
        // A lane that is not empty holds a fingerprint: its 14 bits neither 0 nor 0x3FFF.
        if Self::entries(word).iter().any(|&e| e != 0 && matches!(e & KEY, 0 | KEY)) {
            Err(LoadError::MalformedBucket { bucket })
        } else {
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bucket::UNUSED_WORD;

    /// A word whose lanes are given lowest first.
    fn word(lanes: [u16; LANES]) -> u64 {
        lanes.iter().enumerate().fold(0, |w, (k, &f)| w | (f as u64) << (16 * k))
    }

    fn lane(key: u32, tag: u32) -> u16 {
        (key | tag << KEY_BITS) as u16
    }

    /// The lane model: what a lane of value `lane` is to `fingerprint`.
    fn model_is_copy(lane: u16, fingerprint: Fingerprint) -> bool {
        let f = fingerprint.get();
        if lane == 0 {
            false
        } else if f & AT_EPOCH != 0 {
            u32::from(lane) & KEY == f & KEY
                && u32::from(lane) >> KEY_BITS != ((f >> KEY_BITS) + 1) & 3
        } else {
            u32::from(lane) == f
        }
    }

    /// The age of a lane to an operation: 0 for the current tag, up to 2 for the oldest live.
    fn model_age(lane: u16, fingerprint: Fingerprint) -> u32 {
        let f = fingerprint.get();
        if f & AT_EPOCH == 0 {
            return 0;
        }
        ((f >> KEY_BITS) + 4 - (u32::from(lane) >> KEY_BITS)) & 3
    }

    fn with_lane(lanes: [u16; LANES], k: usize, value: u16) -> u64 {
        let mut lanes = lanes;
        lanes[k] = value;
        word(lanes)
    }

    /// Calls `f` with every word of four lanes drawn from `values`, and its lanes.
    fn every_word(values: &[u16], mut f: impl FnMut([u16; LANES], u64)) {
        for &a in values {
            for &b in values {
                for &c in values {
                    for &d in values {
                        f([a, b, c, d], word([a, b, c, d]));
                    }
                }
            }
        }
    }

    /// Keys that stress carries and borrows, each with every tag, and the empty lane.
    fn tricky_lanes() -> Vec<u16> {
        let mut lanes = vec![0];
        for key in [1, 2, 0x1FFF, 0x2000, 0x3FFE] {
            lanes.extend((0..4).map(|tag| lane(key, tag)));
        }
        lanes
    }

    #[test]
    #[cfg_attr(miri, ignore = "arithmetic only, too slow under Miri")]
    fn every_function_agrees_with_the_lane_model() {
        let values = tricky_lanes();
        let mut prints = Vec::new();
        for key in [1, 2, 0x2000, 0x3FFE] {
            for epoch in 0..4 {
                prints.push(at_epoch(Fingerprint::of(key), epoch));
                prints.push(Fingerprint::of(u32::from(lane(key, epoch as u32))));
            }
        }
        every_word(&values, |lanes, w| {
            assert_eq!(Windowed::occupied(w), lanes.iter().filter(|&&l| l != 0).count());
            assert_eq!(Windowed::has_room(w), lanes.contains(&0));
            for &f in &prints {
                let is_copy = lanes.map(|l| model_is_copy(l, f));
                let n = is_copy.iter().filter(|&&c| c).count();
                assert_eq!(Windowed::count(w, f), n, "{lanes:x?} {f:x?}");
                assert_eq!(Windowed::contains(w, f), n > 0);
                assert_eq!(any_match(Windowed::match_flags(w, f)), n > 0);
                // The oldest copy, the lowest lane among equals.
                let oldest = (0..LANES)
                    .filter(|&k| is_copy[k])
                    .max_by_key(|&k| (model_age(lanes[k], f), LANES - k));
                assert_eq!(
                    Windowed::without_copy(w, f),
                    oldest.map(|k| with_lane(lanes, k, 0)),
                    "{lanes:x?} {f:x?}"
                );
                let first_free = lanes.iter().position(|&l| l == 0);
                assert_eq!(
                    Windowed::with_copy(w, f),
                    first_free.map(|k| with_lane(lanes, k, f.get() as u16)),
                    "{lanes:x?} {f:x?}"
                );
                for &l in lanes.iter().filter(|&&l| l != 0) {
                    let live = model_age(l, f) <= 2;
                    assert_eq!(Windowed::movable(u32::from(l), f), live);
                }
            }
        });
    }

    #[test]
    #[cfg_attr(miri, ignore = "arithmetic only, too slow under Miri")]
    fn sweeps_and_refreshes_touch_only_their_lanes() {
        let values = tricky_lanes();
        every_word(&values, |lanes, w| {
            for tag in 0..4 {
                let model =
                    lanes.map(|l| if l != 0 && u32::from(l) >> KEY_BITS == tag { 0 } else { l });
                assert_eq!(without_tagged(w, tag), word(model), "{lanes:x?} {tag}");
                let cleared = lanes.iter().zip(&model).filter(|(l, m)| l != m);
                assert_eq!(tagged(w, tag), cleared.count());
            }
            for epoch in 0..4 {
                let f = at_epoch(Fingerprint::of(0x2000), epoch);
                let live: Vec<usize> = (0..LANES).filter(|&k| model_is_copy(lanes[k], f)).collect();
                let expected = if live.is_empty() {
                    Refresh::Absent
                } else if live.iter().any(|&k| lanes[k] == f.get() as u16) {
                    Refresh::Current
                } else {
                    Refresh::To(with_lane(lanes, live[0], f.get() as u16))
                };
                assert_eq!(refreshed(w, f), expected, "{lanes:x?} {epoch}");
            }
        });
    }

    #[test]
    #[cfg_attr(miri, ignore = "arithmetic only, too slow under Miri")]
    fn fingerprints_are_14_bits_never_0_or_all_ones_and_choose_buckets_by_them_alone() {
        assert_eq!(Windowed::fingerprint(0).get(), 1 | AT_EPOCH);
        assert_eq!(Windowed::fingerprint(0x3FFF).get(), 0x3FFE | AT_EPOCH);
        assert_eq!(Windowed::fingerprint(0xFFFF_4002).get(), 2 | AT_EPOCH);
        for key in 1..KEY {
            let f = Windowed::fingerprint(u64::from(key) | 0xC000);
            assert_eq!(f.get(), key | AT_EPOCH);
            for epoch in 0..8 {
                assert_eq!(Windowed::key(at_epoch(f, epoch)).get(), key);
            }
        }
    }

    #[test]
    fn check_refuses_lanes_without_a_fingerprint() {
        assert!(Windowed::check(word([lane(5, 2), 0, lane(0x3FFE, 3), 0]), 7).is_ok());
        for bad in [lane(0, 1), lane(KEY, 0), lane(KEY, 3)] {
            assert!(matches!(
                Windowed::check(word([lane(5, 2), 0, bad, 0]), 7),
                Err(LoadError::MalformedBucket { bucket: 7 })
            ));
        }
        assert!(Windowed::check(UNUSED_WORD, 0).is_err());
    }
}
