//! [`Filter`]: a key's filter, of the layout its `CF.RESERVE ... ENCODING` (or `EXPIRE`) or its
//! snapshot chose. The one place where a layout chosen at run time meets the library, whose
//! filters have their layout in their type: every method matches once and runs the typed
//! filter's.

use std::hash::Hash;
use std::io::{self, Read, Write};
use std::time::Duration;

use lockfree_cuckoo::{
    encoding_of_snapshot, BuildError, Builder, ChunkError, ChunkedSnapshot, CuckooFilter,
    DefaultHashBuilder, Encoding, InsertError, LoadError, SemiSorted, SnapshotInfo, Stats,
    WindowedBuilder, WindowedFilter, ENCODING_PREFIX_LEN,
};

/// A filter of any layout.
#[derive(Debug)]
pub enum Filter {
    /// Plain buckets, the default.
    Plain(CuckooFilter),
    /// Semi-sorted buckets (`ENCODING SEMISORTED`).
    SemiSorted(CuckooFilter<DefaultHashBuilder, SemiSorted>),
    /// Items that expire (`EXPIRE seconds`), epochs started by the host. Boxed: its epochs'
    /// counters take a cache line each.
    Windowed(Box<WindowedFilter>),
}

/// `$body` with `$f` bound to the typed filter inside `$filter`, whatever its layout.
macro_rules! any {
    ($filter:expr, $f:ident => $body:expr) => {
        match $filter {
            Filter::Plain($f) => $body,
            Filter::SemiSorted($f) => $body,
            Filter::Windowed($f) => $body,
        }
    };
}

/// `$body` with `$f` bound to the typed filter inside `$filter` if it is a
/// [`CuckooFilter`], else `$windowed`.
macro_rules! either {
    ($filter:expr, $f:ident => $body:expr, windowed => $windowed:expr) => {
        match $filter {
            Filter::Plain($f) => $body,
            Filter::SemiSorted($f) => $body,
            Filter::Windowed(_) => $windowed,
        }
    };
}

/// Where a windowed snapshot keeps the time into its epoch (`FORMAT.md`, "The window block"):
/// the one field in which a replica's snapshot differs from its primary's, whose clock it does
/// not share.
const INTO_EPOCH: std::ops::Range<usize> = 88..96;
/// The checksum at the end of every snapshot, which covers that field.
const CHECKSUM_LEN: usize = 8;

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

impl From<WindowedFilter> for Filter {
    fn from(filter: WindowedFilter) -> Self {
        Self::Windowed(Box::new(filter))
    }
}

/// A windowed filter as the front-ends run it: epochs start only in [`Filter::tick`] and
/// [`Filter::follow`], never in an insert, so that replicas applying the same commands and
/// epochs hold the same words.
fn hosted(builder: WindowedBuilder) -> WindowedBuilder {
    builder.sweep_on_insert(false)
}

/// The window a builder is given to load a windowed snapshot, which records its own.
const ANY_WINDOW: Duration = Duration::from_secs(1);

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

    /// Builds a filter whose items expire a `window` after their last insert, with
    /// `builder`'s capacity and seed; its epochs start only when the host ticks it.
    ///
    /// # Errors
    ///
    /// As [`WindowedBuilder::try_build`].
    pub fn build_windowed(builder: Builder, window: Duration) -> Result<Self, BuildError> {
        Ok(hosted(builder.expire_after(window)).try_build()?.into())
    }

    /// Loads a snapshot of either layout from `bytes`, with `builder`'s settings.
    ///
    /// # Errors
    ///
    /// As [`Builder::load`].
    pub fn load(builder: Builder, bytes: &[u8]) -> Result<Self, LoadError> {
        Ok(match encoding_of_snapshot(bytes)? {
            Encoding::SemiSorted => builder.layout::<SemiSorted>().load(bytes)?.into(),
            Encoding::Windowed => hosted(builder.expire_after(ANY_WINDOW)).load(bytes)?.into(),
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
            Encoding::Windowed => hosted(builder.expire_after(ANY_WINDOW)).read_from(whole)?.into(),
            _ => builder.read_from(whole)?.into(),
        })
    }

    /// The layout's value.
    pub fn encoding(&self) -> Encoding {
        either!(self, f => f.encoding(), windowed => Encoding::Windowed)
    }

    /// [`CuckooFilter::insert`].
    ///
    /// # Errors
    ///
    /// As [`CuckooFilter::insert`].
    pub fn insert<T: Hash + ?Sized>(&self, item: &T) -> Result<(), InsertError> {
        any!(self, f => f.insert(item))
    }

    /// [`CuckooFilter::contains`].
    pub fn contains<T: Hash + ?Sized>(&self, item: &T) -> bool {
        any!(self, f => f.contains(item))
    }

    /// [`CuckooFilter::contains_batch`].
    pub fn contains_batch<T: Hash>(&self, items: &[T], out: &mut [bool]) {
        match self {
            Self::Plain(f) => f.contains_batch(items, out),
            Self::SemiSorted(f) => f.contains_batch(items, out),
            Self::Windowed(f) => {
                for (item, found) in items.iter().zip(out) {
                    *found = f.contains(item);
                }
            }
        }
    }

    /// [`CuckooFilter::count`]; 0 or 1 for a windowed filter, a set.
    pub fn count<T: Hash + ?Sized>(&self, item: &T) -> usize {
        either!(self, f => f.count(item), windowed => usize::from(self.contains(item)))
    }

    /// [`CuckooFilter::remove`].
    pub fn remove<T: Hash + ?Sized>(&self, item: &T) -> bool {
        any!(self, f => f.remove(item))
    }

    /// [`CuckooFilter::len`].
    pub fn len(&self) -> usize {
        any!(self, f => f.len())
    }

    /// [`CuckooFilter::is_empty`].
    pub fn is_empty(&self) -> bool {
        any!(self, f => f.is_empty())
    }

    /// [`CuckooFilter::capacity`].
    pub fn capacity(&self) -> usize {
        any!(self, f => f.capacity())
    }

    /// [`CuckooFilter::is_growable`]; a windowed filter never grows.
    pub fn is_growable(&self) -> bool {
        either!(self, f => f.is_growable(), windowed => false)
    }

    /// [`CuckooFilter::max_memory`].
    pub fn max_memory(&self) -> Option<usize> {
        either!(self, f => f.max_memory(), windowed => None)
    }

    /// [`CuckooFilter::set_max_levels`]; nothing for a windowed filter, which has one level.
    pub fn set_max_levels(&self, levels: usize) {
        either!(self, f => f.set_max_levels(levels), windowed => {});
    }

    /// [`CuckooFilter::max_levels`].
    pub fn max_levels(&self) -> usize {
        either!(self, f => f.max_levels(), windowed => 1)
    }

    /// [`CuckooFilter::memory_usage`].
    pub fn memory_usage(&self) -> usize {
        any!(self, f => f.memory_usage())
    }

    /// [`CuckooFilter::bucket_count`].
    pub fn bucket_count(&self) -> usize {
        any!(self, f => f.bucket_count())
    }

    /// [`CuckooFilter::stats`].
    pub fn stats(&self) -> Stats {
        any!(self, f => f.stats())
    }

    /// [`CuckooFilter::hasher`].
    pub fn hasher(&self) -> &DefaultHashBuilder {
        any!(self, f => f.hasher())
    }

    /// [`CuckooFilter::to_bytes`].
    pub fn to_bytes(&self) -> Vec<u8> {
        any!(self, f => f.to_bytes())
    }

    /// [`CuckooFilter::write_to`].
    ///
    /// # Errors
    ///
    /// As [`CuckooFilter::write_to`].
    pub fn write_to(&self, w: impl Write) -> io::Result<SnapshotInfo> {
        any!(self, f => f.write_to(w))
    }

    /// [`CuckooFilter::chunked_snapshot`].
    pub fn chunked_snapshot(&self) -> ChunkedSnapshot {
        any!(self, f => f.chunked_snapshot())
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
        match self {
            Self::Plain(f) => snapshot.write_next(f, max_bytes, out),
            Self::SemiSorted(f) => snapshot.write_next(f, max_bytes, out),
            Self::Windowed(f) => snapshot.write_next_windowed(f, max_bytes, out),
        }
    }

    /// A filter of its own holding what this one holds now (`COPY`, `RESTORE` of a copy); a
    /// windowed one through its snapshot, with its epoch and ages.
    ///
    /// # Panics
    ///
    /// If the copy does not fit in memory (as any `Vec` allocation).
    pub fn duplicate(&self) -> Self {
        match self {
            Self::Plain(f) => f.clone().into(),
            Self::SemiSorted(f) => f.clone().into(),
            Self::Windowed(f) => {
                let builder = hosted(CuckooFilter::builder().expire_after(ANY_WINDOW));
                match builder.load(&f.to_bytes()) {
                    Ok(copy) => copy.into(),
                    Err(err) => panic!("a windowed filter's own snapshot does not load: {err}"),
                }
            }
        }
    }

    /// The window of a filter whose items expire ([`WindowedFilter::window`]).
    pub fn window(&self) -> Option<Duration> {
        match self {
            Self::Windowed(f) => Some(f.window()),
            _ => None,
        }
    }

    /// [`WindowedFilter::tick`]: the expiry work that is due. Returns the epoch it started, for
    /// the host to send to replicas ([`follow`](Self::follow)); `None` when it started none or
    /// the filter's items do not expire.
    pub fn tick(&self) -> Option<u64> {
        match self {
            Self::Windowed(f) => f.tick().then(|| f.epoch()),
            _ => None,
        }
    }

    /// [`WindowedFilter::follow`]: starts epochs until `epoch` is the current one, as the
    /// primary did. `None` when the filter's items do not expire.
    pub fn follow(&self, epoch: u64) -> Option<bool> {
        match self {
            Self::Windowed(f) => Some(f.follow(epoch)),
            _ => None,
        }
    }

    /// The bytes `DEBUG DIGEST` covers: the snapshot, less a windowed filter's time into its
    /// epoch (and the checksum over it), which a replica's clock does not share. Equal on a
    /// primary and a replica that applied the same commands and epochs.
    pub fn digest_bytes(&self) -> Vec<u8> {
        let mut bytes = self.to_bytes();
        if let Self::Windowed(_) = self {
            bytes[INTO_EPOCH].fill(0);
            bytes.truncate(bytes.len() - CHECKSUM_LEN);
        }
        bytes
    }
}
