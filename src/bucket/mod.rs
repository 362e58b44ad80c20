//! Bucket words: how four fingerprints sit in one `u64`, in either [`Encoding`].
//!
//! A bucket is a multiset of at most [`LANES`] fingerprints, held in one word that every change
//! replaces by one CAS (`table`). The encoding decides how the multiset maps to the word, and it
//! lives here alone: the table, its protocol, the path search, scans, snapshots and merges are
//! written once against [`BucketEncoding`] and know nothing of the bit layout.
//!
//! - [`plain`]: four 16-bit lanes, each a fingerprint or 0 for empty. A fingerprint keeps its
//!   lane until it leaves.
//! - [`semi_sorted`]: the paper's semi-sorted bucket. Four 17-bit fingerprints sorted by their low
//!   four bits, whose four nibbles are stored as one 12-bit code: a write re-sorts the word, so a
//!   fingerprint's lane can change when another fingerprint of its bucket comes or goes.
//!
//! In both, a word is a function of the multiset it holds (the semi-sorted order breaks ties by
//! the rest of the fingerprint), so two words are equal exactly when they hold the same
//! fingerprints, and a CAS that expects a word expects its multiset. The protocol speaks of
//! *copies*, the members of a bucket's multiset, never of lanes; see the table's Orderings.

mod pair;
pub(crate) mod plain;
pub(crate) mod semi_sorted;
pub(crate) mod windowed;

use core::fmt;

use crate::encoding::Encoding;
use crate::error::LoadError;
use crate::fingerprint::Fingerprint;

/// Fingerprints a bucket holds.
pub(crate) const LANES: usize = 4;

/// A word no bucket ever holds, in either encoding: free for the protocol to use as a sentinel
/// (the snapshot scan's "not copied yet"). Plain lanes never hold 0xFFFF; a semi-sorted word's
/// code is never 4095. To a lookup it is a full bucket that matches no fingerprint.
pub(crate) const UNUSED_WORD: u64 = u64::MAX;

/// The lowest bit of each 16-bit lane.
const LOW_BITS: u64 = 0x0001_0001_0001_0001;
/// The highest bit of each 16-bit lane: where match flags are kept.
const HIGH_BITS: u64 = 0x8000_8000_8000_8000;
const LANE_BITS: u32 = 16;

/// Whether flags from [`BucketEncoding::match_flags`] (or'ed, for several words) name a copy
/// of the fingerprint.
#[inline]
pub(crate) const fn any_match(flags: u64) -> bool {
    flags & HIGH_BITS != 0
}

/// The classic has-zero-lane test before its mask (`& HIGH_BITS`): borrows can set flags above a
/// true zero lane, so only the lowest flag is exact, and one exists exactly when some lane is
/// zero. The flags of several words can share the mask: the mask of their `|` is the `|` of their
/// masks, which [`any_match`] applies.
#[inline]
const fn unmasked_zero_lane_flags(word: u64) -> u64 {
    word.wrapping_sub(LOW_BITS) & !word
}

/// The high bit of every lane of `word` that is not zero, exactly in every lane (unlike the
/// has-zero-lane test, whose borrows can flag lanes above a zero one).
#[inline]
const fn nonzero_lanes(word: u64) -> u64 {
    // Per lane, the low 15 bits plus 0x7FFF carry into bit 15 exactly when they are not all
    // zero, and never out of the lane; or-ing the word adds lanes with only bit 15 set.
    const LOW_15: u64 = !HIGH_BITS;
    (((word & LOW_15) + LOW_15) | word) & HIGH_BITS
}

/// How many lanes `flags` flags, given flags in the lanes' high bits alone: a population count
/// by one multiply, which sums the flags into the top lane, where builds for CPUs without
/// assuming a `popcnt` instruction count bit by bit.
#[inline(always)]
pub(super) const fn flagged_lanes(flags: u64) -> u32 {
    ((flags >> (LANE_BITS - 1)).wrapping_mul(LOW_BITS) >> (3 * LANE_BITS)) as u32
}

/// How a filter's buckets hold their fingerprints, as a type: [`Plain`](plain::Plain) (the
/// default) or [`SemiSorted`](semi_sorted::SemiSorted), chosen with
/// [`Builder::layout`](crate::Builder::layout). A filter's operations are compiled for its
/// layout alone, and filters of different layouts are different types (merging them does not
/// compile). Sealed: the crate's two layouts are the only ones.
///
/// # Examples
///
/// ```
/// use lockfree_cuckoo::{CuckooFilter, Layout, SemiSorted};
///
/// fn fill<L: Layout>(filter: &CuckooFilter<lockfree_cuckoo::DefaultHashBuilder, L>) {
///     for key in 0..100u32 {
///         filter.insert(&key).unwrap();
///     }
/// }
/// let plain = CuckooFilter::with_capacity(1_000);
/// let semi = CuckooFilter::builder().capacity(1_000).layout::<SemiSorted>().build();
/// fill(&plain);
/// fill(&semi);
/// assert_eq!((plain.len(), semi.len()), (100, 100));
/// ```
pub trait Layout: BucketEncoding {}

impl Layout for plain::Plain {}
impl Layout for semi_sorted::SemiSorted {}

/// An encoding of bucket words, as a type: the table and everything above it are generic over
/// it, so each encoding's operations compile to straight-line code with no test of which one
/// is in use. `pub` in a private module, so that [`Layout`] is sealed.
///
/// Every function is pure. Words handed to them are table words (or a snapshot's words that
/// passed [`check`](Self::check)), or [`UNUSED_WORD`].
pub trait BucketEncoding: Copy + Default + Send + Sync + fmt::Debug + 'static {
    /// The value users see.
    const ENCODING: Encoding;

    /// Bits of a fingerprint: the low bits of an item's mixed hash (`hash`).
    const FINGERPRINT_BITS: u32;

    /// The fingerprint of a mixed hash.
    fn fingerprint(mixed: u64) -> Fingerprint;

    /// The part of `fingerprint` that chooses its other bucket (`hash::alt_index`): all of it,
    /// except in an encoding whose lanes also hold something else (a windowed entry's age).
    #[inline(always)]
    fn key(fingerprint: Fingerprint) -> Fingerprint {
        fingerprint
    }

    /// Flags, to be tested by [`any_match`], of the copies of `fingerprint` in `word`. The flags
    /// of several words, or'ed, tell whether any of them holds it.
    fn match_flags(word: u64, fingerprint: Fingerprint) -> u64;

    /// Flags, to be tested by [`any_match`], of the copies of `fingerprint` in both of an item's
    /// buckets: [`match_flags`](Self::match_flags) of both, or'ed, unless the encoding shares
    /// work between the two words (then only whether any is set is exact).
    #[inline(always)]
    fn pair_match_flags(first: u64, second: u64, fingerprint: Fingerprint) -> u64 {
        Self::match_flags(first, fingerprint) | Self::match_flags(second, fingerprint)
    }

    /// Whether a lookup tests in two steps: [`pair_candidates`](Self::pair_candidates), a cheap
    /// test that no copy of the fingerprint is in either word, then, only when it cannot tell,
    /// [`pair_holds`](Self::pair_holds). When `false`, a lookup makes the one test of
    /// [`pair_match_flags`](Self::pair_match_flags).
    const TWO_STEP_LOOKUP: bool = false;

    /// Flags, tested by [`any_match`], that are zero when neither word holds `fingerprint`; when
    /// not zero, either may hold it ([`pair_holds`](Self::pair_holds) tells).
    #[inline(always)]
    fn pair_candidates(first: u64, second: u64, fingerprint: Fingerprint) -> u64 {
        Self::pair_match_flags(first, second, fingerprint)
    }

    /// Whether either word holds `fingerprint`: a lookup's second step, after
    /// [`pair_candidates`](Self::pair_candidates) found candidates.
    #[inline(always)]
    fn pair_holds(first: u64, second: u64, fingerprint: Fingerprint) -> bool {
        any_match(Self::pair_match_flags(first, second, fingerprint))
    }

    /// Whether `word` holds a copy of `fingerprint`.
    #[inline(always)]
    fn contains(word: u64, fingerprint: Fingerprint) -> bool {
        any_match(Self::match_flags(word, fingerprint))
    }

    /// How many copies of `fingerprint` `word` holds.
    fn count(word: u64, fingerprint: Fingerprint) -> usize;

    /// How many fingerprints `word` holds.
    fn occupied(word: u64) -> usize;

    /// Whether `word` has room for one more fingerprint.
    fn has_room(word: u64) -> bool;

    /// Whether an insert of `fingerprint` may move `entry`, a value of [`entries`](Self::entries),
    /// to make room: always, unless the encoding's entries age (a windowed insert leaves dead
    /// entries to the sweep).
    #[inline(always)]
    fn movable(entry: u32, fingerprint: Fingerprint) -> bool {
        let _ = (entry, fingerprint);
        true
    }

    /// `word` with one more copy of `fingerprint`, or `None` when it is full.
    fn with_copy(word: u64, fingerprint: Fingerprint) -> Option<u64>;

    /// `word` with one copy of `fingerprint` fewer, or `None` when it holds none.
    fn without_copy(word: u64, fingerprint: Fingerprint) -> Option<u64>;

    /// The fingerprints `word` holds, and 0 for each free place, in lane order.
    fn entries(word: u64) -> [u32; LANES];

    /// Whether a snapshot's word `word`, for bucket `bucket`, is one a table of this encoding
    /// can hold: a loader refuses any other, so that a table never holds a word its functions
    /// were not written for.
    ///
    /// # Errors
    ///
    /// The [`LoadError`] that names what is wrong with the word.
    fn check(word: u64, bucket: u64) -> Result<(), LoadError>;

    /// The fingerprints `word` holds.
    #[inline]
    fn fingerprints(word: u64) -> impl Iterator<Item = Fingerprint> {
        Self::entries(word).into_iter().filter(|&e| e != 0).map(Fingerprint::in_occupied_entry)
    }
}
