//! [`Encoding`]: a bucket layout as a value, for what is chosen or recorded at run time.

use core::fmt;

/// How a bucket's fingerprints are laid out in its word, as a value: a filter's
/// [`Layout`](crate::Layout) type's ([`CuckooFilter::encoding`](crate::CuckooFilter::encoding)), what its
/// snapshots record ([`encoding_of_snapshot`](crate::encoding_of_snapshot)), and what a
/// front-end that chooses the
/// layout at run time stores.
///
/// Both hold four fingerprints in a 64-bit bucket, so a filter takes the same memory for the same
/// capacity in either; they differ in fingerprint width, and so in the false-positive rate, and
/// in the cost of an operation.
///
/// # Examples
///
/// ```
/// use lockfree_cuckoo::{CuckooFilter, Encoding, SemiSorted};
///
/// let filter = CuckooFilter::builder().capacity(1_000).layout::<SemiSorted>().build();
/// filter.insert("a")?;
/// assert!(filter.contains("a"));
/// assert_eq!(filter.encoding(), Encoding::SemiSorted);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Encoding {
    /// Four 16-bit fingerprints: a false-positive rate of about `8a / 65,532` at load `a`
    /// (0.012% when full), and the fastest operations.
    #[default]
    Plain,
    /// The semi-sorted bucket of Fan et al. (CoNEXT 2014, section 5.2): four 17-bit
    /// fingerprints, whose low four bits are sorted and stored together as one 12-bit code, in
    /// the same 64 bits. Half the plain false-positive rate (`8a / 131,064`) for the same memory;
    /// lookups of absent items cost about as much as plain ones, and every write decodes and
    /// re-encodes its bucket (`BENCHMARKS.md`, "Semi-sorted buckets").
    SemiSorted,
    /// Four 14-bit fingerprints, each with a 2-bit age, so that items expire
    /// ([`Builder::expire_after`](crate::Builder::expire_after)): a false-positive rate of
    /// about `8a / 16,380` at load `a`.
    Windowed,
}

impl Encoding {
    /// The encoding's name, as the server's `CF.INFO` shows it.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(lockfree_cuckoo::Encoding::SemiSorted.name(), "semi-sorted");
    /// ```
    pub const fn name(self) -> &'static str {
        match self {
            Self::Plain => "plain",
            Self::SemiSorted => "semi-sorted",
            Self::Windowed => "windowed",
        }
    }

    /// Bits of each fingerprint: 16, 17 for [`SemiSorted`](Self::SemiSorted), 14 for
    /// [`Windowed`](Self::Windowed).
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(lockfree_cuckoo::Encoding::Plain.fingerprint_bits(), 16);
    /// ```
    pub const fn fingerprint_bits(self) -> u32 {
        match self {
            Self::Plain => 16,
            Self::SemiSorted => 17,
            Self::Windowed => 14,
        }
    }
}

impl fmt::Display for Encoding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
