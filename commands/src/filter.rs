//! [`Filter`]: a key's filter, of the layout its `CF.RESERVE ... ENCODING` or its snapshot chose.
//! The one place where a layout chosen at run time meets the library, whose filters have their
//! layout in their type: every method matches once and runs the typed filter's.

use std::hash::Hash;
use std::io::{self, Read, Write};

use lockfree_cuckoo::{
    encoding_of_snapshot, BuildError, Builder, ChunkError, ChunkedSnapshot, CuckooFilter,
    DefaultHashBuilder, Encoding, InsertError, LoadError, SemiSorted, SnapshotInfo, Stats,
    ENCODING_PREFIX_LEN,
};

/// A filter of either layout.
#[derive(Clone, Debug)]
pub enum Filter {
    /// Plain buckets, the default.
    Plain(CuckooFilter),
    /// Semi-sorted buckets (`ENCODING SEMISORTED`).
    SemiSorted(CuckooFilter<DefaultHashBuilder, SemiSorted>),
}

/// `$body` with `$f` bound to the typed filter inside `$filter`.
macro_rules! either {
    ($filter:expr, $f:ident => $body:expr) => {
        match $filter {
            Filter::Plain($f) => $body,
            Filter::SemiSorted($f) => $body,
        }
    };
}

impl From<CuckooFilter> for Filter {
    fn from(filter: CuckooFilter) -> Self {
        Self::Plain(filter)
    }
}

impl From<CuckooFilter<DefaultHashBuilder, SemiSorted>> for Filter {
    fn from(filter: CuckooFilter<DefaultHashBuilder, SemiSorted>) -> Self {
        Self::SemiSorted(filter)
    }
}

impl Filter {
    /// Builds the filter `builder` describes, in `encoding`.
    ///
    /// # Errors
    ///
    /// As [`Builder::try_build`].
    pub fn build(builder: Builder, encoding: Encoding) -> Result<Self, BuildError> {
        Ok(match encoding {
            Encoding::SemiSorted => builder.layout::<SemiSorted>().try_build()?.into(),
            _ => builder.try_build()?.into(),
        })
    }

    /// Loads a snapshot of either layout from `bytes`, with `builder`'s settings.
    ///
    /// # Errors
    ///
    /// As [`Builder::load`].
    pub fn load(builder: Builder, bytes: &[u8]) -> Result<Self, LoadError> {
        Ok(match encoding_of_snapshot(bytes)? {
            Encoding::SemiSorted => builder.layout::<SemiSorted>().load(bytes)?.into(),
            _ => builder.load(bytes)?.into(),
        })
    }

    /// Loads one snapshot of either layout from `r`, reading no further, with `builder`'s
    /// settings.
    ///
    /// # Errors
    ///
    /// As [`Builder::read_from`].
    pub fn read_from(builder: Builder, mut r: impl Read) -> Result<Self, LoadError> {
        let mut prefix = [0; ENCODING_PREFIX_LEN];
        let mut got = 0;
        while got < prefix.len() {
            match r.read(&mut prefix[got..]) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(LoadError::Io(e)),
            }
        }
        let whole = (&prefix[..got]).chain(r);
        Ok(match encoding_of_snapshot(&prefix[..got])? {
            Encoding::SemiSorted => builder.layout::<SemiSorted>().read_from(whole)?.into(),
            _ => builder.read_from(whole)?.into(),
        })
    }

    /// The layout's value.
    pub fn encoding(&self) -> Encoding {
        either!(self, f => f.encoding())
    }

    /// [`CuckooFilter::insert`].
    ///
    /// # Errors
    ///
    /// As [`CuckooFilter::insert`].
    pub fn insert<T: Hash + ?Sized>(&self, item: &T) -> Result<(), InsertError> {
        either!(self, f => f.insert(item))
    }

    /// [`CuckooFilter::contains`].
    pub fn contains<T: Hash + ?Sized>(&self, item: &T) -> bool {
        either!(self, f => f.contains(item))
    }

    /// [`CuckooFilter::contains_batch`].
    pub fn contains_batch<T: Hash>(&self, items: &[T], out: &mut [bool]) {
        either!(self, f => f.contains_batch(items, out));
    }

    /// [`CuckooFilter::count`].
    pub fn count<T: Hash + ?Sized>(&self, item: &T) -> usize {
        either!(self, f => f.count(item))
    }

    /// [`CuckooFilter::remove`].
    pub fn remove<T: Hash + ?Sized>(&self, item: &T) -> bool {
        either!(self, f => f.remove(item))
    }

    /// [`CuckooFilter::len`].
    pub fn len(&self) -> usize {
        either!(self, f => f.len())
    }

    /// [`CuckooFilter::is_empty`].
    pub fn is_empty(&self) -> bool {
        either!(self, f => f.is_empty())
    }

    /// [`CuckooFilter::capacity`].
    pub fn capacity(&self) -> usize {
        either!(self, f => f.capacity())
    }

    /// [`CuckooFilter::is_growable`].
    pub fn is_growable(&self) -> bool {
        either!(self, f => f.is_growable())
    }

    /// [`CuckooFilter::max_memory`].
    pub fn max_memory(&self) -> Option<usize> {
        either!(self, f => f.max_memory())
    }

    /// [`CuckooFilter::set_max_levels`].
    pub fn set_max_levels(&self, levels: usize) {
        either!(self, f => f.set_max_levels(levels));
    }

    /// [`CuckooFilter::max_levels`].
    pub fn max_levels(&self) -> usize {
        either!(self, f => f.max_levels())
    }

    /// [`CuckooFilter::memory_usage`].
    pub fn memory_usage(&self) -> usize {
        either!(self, f => f.memory_usage())
    }

    /// [`CuckooFilter::bucket_count`].
    pub fn bucket_count(&self) -> usize {
        either!(self, f => f.bucket_count())
    }

    /// [`CuckooFilter::stats`].
    pub fn stats(&self) -> Stats {
        either!(self, f => f.stats())
    }

    /// [`CuckooFilter::hasher`].
    pub fn hasher(&self) -> &DefaultHashBuilder {
        either!(self, f => f.hasher())
    }

    /// [`CuckooFilter::to_bytes`].
    pub fn to_bytes(&self) -> Vec<u8> {
        either!(self, f => f.to_bytes())
    }

    /// [`CuckooFilter::write_to`].
    ///
    /// # Errors
    ///
    /// As [`CuckooFilter::write_to`].
    pub fn write_to(&self, w: impl Write) -> io::Result<SnapshotInfo> {
        either!(self, f => f.write_to(w))
    }

    /// [`CuckooFilter::chunked_snapshot`].
    pub fn chunked_snapshot(&self) -> ChunkedSnapshot {
        either!(self, f => f.chunked_snapshot())
    }

    /// [`ChunkedSnapshot::write_next`] of this filter.
    ///
    /// # Errors
    ///
    /// As [`ChunkedSnapshot::write_next`].
    pub fn write_next_chunk(
        &self,
        snapshot: &mut ChunkedSnapshot,
        max_bytes: usize,
        out: &mut Vec<u8>,
    ) -> Result<usize, ChunkError> {
        either!(self, f => snapshot.write_next(f, max_bytes, out))
    }
}
