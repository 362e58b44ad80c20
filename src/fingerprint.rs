//! Fingerprints: the 16 bits of an item that a plain bucket lane stores, or the 17 of a
//! semi-sorted bucket (`bucket`).
//!
//! A value of 0 marks an empty place, and 0xFFFF in the low 16 bits is reserved: with no plain
//! lane ever holding it, no plain bucket word is ever all ones
//! ([`UNUSED_WORD`](crate::bucket::UNUSED_WORD)), which the snapshot scan uses as its "not copied
//! yet" sentinel and a snapshot's loader refuses. So a plain fingerprint is in `1..=0xFFFE`,
//! 65,534 values; a semi-sorted one adds the mixed hash's 17th bit, 131,068 values. [`Fingerprint`]
//! is the one place that says so: every fingerprint the crate handles is made here, from a mixed
//! hash or from a place it checks.
//!
//! Of the 2^16 low-hash values, 0 and 0xFFFF fold onto their neighbours 1 and 0xFFFE, so two
//! random items share a fingerprint with probability `(65,532 + 2 × 2²) / 2^32`, about
//! 1/65,532; with eight lanes to compare (two buckets of four) at load `a`, a lookup of an absent
//! item matches with probability about `8a / 65,532`: the crate's false-positive rate, which
//! the crate docs ("Guarantees") state for users. The 17th bit of a semi-sorted fingerprint halves
//! both: about `8a / 131,064`.

/// A fingerprint: never 0 (an empty place), its low 16 bits never 0xFFFF (reserved), and at most
/// 17 bits (the semi-sorted encoding's; a plain one has 16).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(transparent)]
// `pub` in a private module: named by the sealed `BucketEncoding`'s methods, never outside.
pub struct Fingerprint(u32);

impl Fingerprint {
    /// The `bits`-bit fingerprint of a mixed hash: its low `bits` bits, with 0 and 0xFFFF in the
    /// low 16 mapped to 1 and 0xFFFE. `bits` is 16 or 17; the 17th bit is taken as it is, so a
    /// 17-bit fingerprint's low 16 bits are the 16-bit one's.
    #[inline(always)]
    pub(crate) const fn of_mixed(mixed: u64, bits: u32) -> Self {
        // Both excluded values are fixed by flipping the lowest bit, and `low + 1 < 2` tests for
        // both at once: four instructions, no branch.
        let flip = ((mixed as u16).wrapping_add(1) < 2) as u32;
        Self((mixed as u32 & ((1 << bits) - 1)) ^ flip)
    }

    /// The fingerprint a place holds, or `None` for an empty place or a value no fingerprint
    /// takes.
    #[inline]
    pub(crate) const fn from_entry(value: u32) -> Option<Self> {
        if (value as u16).wrapping_add(1) < 2 || value >> 17 != 0 {
            None
        } else {
            Some(Self(value))
        }
    }

    /// The fingerprint in a place that is known to hold one (a table's, in which every
    /// non-empty place holds a fingerprint).
    #[inline]
    pub(crate) const fn in_occupied_entry(value: u32) -> Self {
        debug_assert!(Self::from_entry(value).is_some());
        Self(value)
    }

    /// `value` as a fingerprint, for unit tests.
    ///
    /// # Panics
    ///
    /// If `value` is no fingerprint ([`from_entry`](Self::from_entry)).
    #[cfg(any(test, feature = "test-hooks"))]
    pub(crate) const fn of(value: u32) -> Self {
        match Self::from_entry(value) {
            Some(fingerprint) => fingerprint,
            None => panic!("a fingerprint is below 2^17, with its low 16 bits in 1..=0xFFFE"),
        }
    }

    /// The fingerprint's value.
    #[inline(always)]
    pub(crate) const fn get(self) -> u32 {
        self.0
    }
}

/// The smallest fingerprint, as a placeholder (a batch's buffer of slots before it fills).
impl Default for Fingerprint {
    fn default() -> Self {
        Self(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg_attr(miri, ignore = "arithmetic only, too slow under Miri")]
    fn a_fingerprint_is_never_empty_nor_reserved() {
        assert_eq!(Fingerprint::of_mixed(0, 16).get(), 1);
        assert_eq!(Fingerprint::of_mixed(0xFFFF_0000, 16).get(), 1);
        assert_eq!(Fingerprint::of_mixed(0x1_0002, 16).get(), 2);
        assert_eq!(Fingerprint::of_mixed(0xFFFF, 16).get(), 0xFFFE);
        assert_eq!(Fingerprint::of_mixed(u64::MAX, 16).get(), 0xFFFE);
        assert_eq!(Fingerprint::of_mixed(0x1_0000, 17).get(), 0x1_0001);
        assert_eq!(Fingerprint::of_mixed(0x3_FFFF, 17).get(), 0x1_FFFE);
        assert_eq!(Fingerprint::of_mixed(u64::MAX, 17).get(), 0x1_FFFE);
        for f in 1..0xFFFF {
            assert_eq!(Fingerprint::of_mixed(f as u64 | 0xABCD_0000, 16).get(), f);
            assert_eq!(Fingerprint::of_mixed(f as u64 | 0xABCD_0000, 17).get(), f | 0x1_0000);
            assert_eq!(Fingerprint::from_entry(f).map(Fingerprint::get), Some(f));
            assert_eq!(
                Fingerprint::from_entry(f | 0x1_0000).map(Fingerprint::get),
                Some(f | 0x1_0000)
            );
        }
        for reserved in [0, 0xFFFF, 0x1_0000, 0x1_FFFF, 0x2_0001] {
            assert_eq!(Fingerprint::from_entry(reserved), None);
        }
    }
}
