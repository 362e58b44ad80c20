//! Merging: adding every fingerprint of one filter to another, while both are in use.
//!
//! The other filter is read with one snapshot scan (its guarantee: every item present throughout
//! is in the copy), then each fingerprint of the copy is inserted into this filter with the
//! usual lock-free insert. Inserts only add, so no thread ever sees an item of either filter
//! missing, and a refused insert loses nothing.

use core::hash::BuildHasher;

use crate::bucket::{BucketEncoding, Layout};
use crate::error::MergeError;
use crate::filter::CuckooFilter;
use crate::hash::{alt_index, Slots};
use crate::levels::Levels;
use crate::snapshot::format::probes;

impl<S: BuildHasher, E: Layout> CuckooFilter<S, E> {
    /// Adds every fingerprint of `other` to this filter: afterwards, every item of `other`
    /// reads as present here, with its copies added to this filter's.
    ///
    /// Both filters must have the same settings: the same bucket count (build them with the
    /// same capacity) and hashers that agree (the default hasher with the same
    /// [`seed`](crate::Builder::seed); filters built with random keys never agree), which is
    /// checked as a snapshot load checks it.
    /// Growable filters must also have the same levels; each level is merged into its
    /// counterpart, and a full level returns [`MergeError::Full`] rather than growing, since a
    /// fingerprint's buckets are only known in the table it is in.
    /// Both may be in use by other threads meanwhile: neither ever gives a false negative, and
    /// every item present in `other` throughout the merge is in this filter when it returns
    /// `Ok`; items inserted into or removed from `other` during the merge may or may not be
    /// added. This is how shards built on many threads or machines become one filter (ship them
    /// with [`to_bytes`](Self::to_bytes)).
    ///
    /// Merging a filter into itself doubles every item's copies.
    ///
    /// # Errors
    ///
    /// - [`MergeError::BucketCountMismatch`],
    ///   [`MergeError::LevelCountMismatch`] or [`MergeError::HasherMismatch`] when the settings
    ///   differ; nothing was changed.
    /// - [`MergeError::Full`] when this filter ran out of room: it says how many fingerprints
    ///   were added and how many were not. Nothing that was in either filter is lost. The
    ///   fingerprints that `other` kept for removed items (growable filters,
    ///   [`Stats::retained_removals`](crate::Stats::retained_removals)) cannot be told from its
    ///   items', so [`len`](Self::len) counts up to that many of those added as removed: it
    ///   never counts a removed item, and may count fewer than were added.
    ///
    /// # Panics
    ///
    /// If the copy of `other` cannot be allocated.
    ///
    /// # Examples
    ///
    /// ```
    /// use lockfree_cuckoo::CuckooFilter;
    ///
    /// // Shards share a seed, so that their hashers agree.
    /// let shard = || CuckooFilter::builder().capacity(1_000).seed(7).build();
    /// let (a, b) = (shard(), shard());
    /// a.insert("from a")?;
    /// b.insert("from b")?;
    /// a.merge(&b)?;
    /// assert!(a.contains("from a") && a.contains("from b"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn merge(&self, other: &CuckooFilter<S, E>) -> Result<(), MergeError> {
        let (mine, others) = (probes(self.hasher()), probes(other.hasher()));
        let hasher_mismatch = (0..mine.len()).find(|&k| mine[k] != others[k]);
        merge_levels(self.levels(), other.levels(), hasher_mismatch)
    }
}

/// [`CuckooFilter::merge`] on the filters' levels; `hasher_mismatch` is the
/// first probe the hashers disagree on.
fn merge_levels<E: BucketEncoding>(
    ours: &Levels<E>,
    theirs: &Levels<E>,
    hasher_mismatch: Option<usize>,
) -> Result<(), MergeError> {
    let (levels, other) = (ours, theirs);
    let (ours, theirs) = (levels.oldest_first(), other.oldest_first());
    if ours.len() != theirs.len() {
        return Err(MergeError::LevelCountMismatch { ours: ours.len(), theirs: theirs.len() });
    }
    for (mine, others) in ours.iter().zip(&theirs) {
        let (ours, theirs) = (mine.bucket_count(), others.bucket_count());
        if ours != theirs {
            return Err(MergeError::BucketCountMismatch { ours, theirs });
        }
    }
    if let Some(probe) = hasher_mismatch {
        return Err(MergeError::HasherMismatch { probe });
    }
    let copies = theirs
        .iter()
        .map(|table| table.scan().expect("cannot allocate the copy of the merged filter"))
        .collect::<Vec<_>>();
    let total: usize = copies.iter().flat_map(|c| c.words()).map(E::occupied).sum();
    // The other filter's retained removals come along as fingerprints: they are not items.
    let retained = other.retained();
    let mut merged = 0;
    // Level by level: a fingerprint's buckets are only known in the table it is in.
    for (table, copy) in ours.iter().zip(&copies) {
        let buckets = table.bucket_count();
        for (index, word) in copy.words().enumerate() {
            for fingerprint in E::fingerprints(word) {
                // Copies are interchangeable, so either bucket of the pair may come first.
                let second = alt_index(index, E::key(fingerprint), buckets);
                let slots = Slots { fingerprint, first: index, second };
                if table.insert(slots).is_err() {
                    // Which fingerprints were removed items' is not known: count as many of
                    // those added as can be, so that `len` counts no removed item.
                    let added = retained.min(merged as u64);
                    levels.add_retained(added);
                    return Err(MergeError::Full { merged, remaining: total - merged });
                }
                merged += 1;
            }
        }
    }
    levels.add_retained(retained);
    Ok(())
}
