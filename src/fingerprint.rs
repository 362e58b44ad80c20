//! Fingerprints: the 16 bits of an item that a bucket lane stores.
//!
//! A lane value of 0 marks an empty lane, and 0xFFFF is reserved: with no lane ever holding it,
//! no bucket word is ever all ones ([`UNUSED_WORD`](crate::bucket::UNUSED_WORD)), which the
//! snapshot scan uses as its "not copied yet" sentinel and a snapshot's loader refuses. So a
//! fingerprint is in `1..=0xFFFE`, 65,534 values, and [`Fingerprint`] is the one place that
//! says so: every fingerprint the crate handles is made here, from a mixed hash or from a lane
//! it checks.
//!
//! Of the 2^16 low-hash values, 0 and 0xFFFF fold onto their neighbours 1 and 0xFFFE, so two
//! random items share a fingerprint with probability `(65,532 + 2 × 2²) / 2^32`, about
//! 1/65,532; with eight lanes to compare (two buckets of four) at load `a`, a lookup of an absent
//! item matches with probability about `8a / 65,532`: the crate's false-positive rate, which
//! the crate docs ("Guarantees") state for users.

/// A fingerprint: never 0 (an empty lane), never 0xFFFF (reserved).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(transparent)]
pub(crate) struct Fingerprint(u16);

impl Fingerprint {
    /// The fingerprint of a mixed hash: its low 16 bits, with 0 mapped to 1 and 0xFFFF to 0xFFFE.
    #[inline]
    pub(crate) const fn of_mixed(mixed: u64) -> Self {
        let low = mixed as u16;
        // Both excluded values are fixed by flipping the lowest bit, and `low + 1 < 2` tests for
        // both at once: four instructions, no branch.
        Self(low ^ (low.wrapping_add(1) < 2) as u16)
    }

    /// The fingerprint a lane holds, or `None` for an empty lane or the reserved value.
    #[inline]
    pub(crate) const fn from_lane(value: u16) -> Option<Self> {
        if value.wrapping_add(1) < 2 {
            None
        } else {
            Some(Self(value))
        }
    }

    /// The fingerprint in a lane that is known to hold one (a full bucket's, in a table, where
    /// no lane holds the reserved value).
    #[inline]
    pub(crate) const fn in_occupied_lane(value: u16) -> Self {
        debug_assert!(value != 0 && value != u16::MAX);
        Self(value)
    }

    /// `value` as a fingerprint, for unit tests.
    ///
    /// # Panics
    ///
    /// If `value` is 0 or 0xFFFF.
    #[cfg(any(test, feature = "test-hooks"))]
    pub(crate) const fn of(value: u16) -> Self {
        match Self::from_lane(value) {
            Some(fingerprint) => fingerprint,
            None => panic!("a fingerprint is in 1..=0xFFFE"),
        }
    }

    /// The lane value.
    #[inline]
    pub(crate) const fn get(self) -> u16 {
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
        assert_eq!(Fingerprint::of_mixed(0).get(), 1);
        assert_eq!(Fingerprint::of_mixed(0xFFFF_0000).get(), 1);
        assert_eq!(Fingerprint::of_mixed(0x1_0002).get(), 2);
        assert_eq!(Fingerprint::of_mixed(0xFFFF).get(), 0xFFFE);
        assert_eq!(Fingerprint::of_mixed(u64::MAX).get(), 0xFFFE);
        for f in 1..0xFFFF {
            assert_eq!(Fingerprint::of_mixed(f as u64 | 0xABCD_0000).get(), f);
            assert_eq!(Fingerprint::from_lane(f).map(Fingerprint::get), Some(f));
        }
        assert_eq!(Fingerprint::from_lane(0), None);
        assert_eq!(Fingerprint::from_lane(0xFFFF), None);
    }
}
