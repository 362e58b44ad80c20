//! The options a filter is created with, RedisBloom's names and ranges.

use std::time::Duration;

use lockfree_cuckoo::{BuildError, CuckooFilter, Encoding};

use crate::filter::Filter;

/// `CF.RESERVE`'s options, as the client gave them (or RedisBloom's defaults).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Settings {
    /// The capacity asked for: the filter accepts at least this many distinct items before it
    /// grows (or, with `EXPANSION 0`, before an insert is refused).
    pub capacity: u64,
    /// `BUCKETSIZE` (1 to 255, default 2): kept and reported. This filter's buckets always hold
    /// four 16-bit fingerprints; a bucket size is RedisBloom's trade between space and false
    /// positives, which the 16-bit fingerprints settle here (0.012% at full load).
    pub bucket_size: u8,
    /// `MAXITERATIONS` (1 to 65,535, default 20): kept and reported. An insert here searches
    /// breadth-first for a path of at most five relocations and commits it back to front, so it
    /// never runs the random walk this bounds in RedisBloom.
    pub max_iterations: u16,
    /// `EXPANSION` (0 to 32,768, default 1): 0 makes a fixed filter that refuses inserts when
    /// full (RedisBloom's non-scaling filter); any other value makes a growable one. This
    /// filter grows by levels of four times the buckets of the newest, whatever the value.
    pub expansion: u16,
    /// `SEED` (this crate's option, not RedisBloom's): the key of the filter's hasher, so that
    /// filters reserved with one seed map every item alike (a primary and its replicas, shards
    /// to merge); `None` draws a random one.
    pub seed: Option<u64>,
    /// `ENCODING PLAIN|SEMISORTED` (this crate's option): how the buckets hold their
    /// fingerprints ([`Encoding`]); semi-sorted buckets halve the false-positive rate in the same
    /// memory. Default plain; [`Encoding::Windowed`] for a filter whose items expire.
    pub encoding: Encoding,
    /// `EXPIRE seconds` (this crate's option): each item is present for at least this many
    /// seconds after its last insert, and gone within one and a half times it
    /// ([`lockfree_cuckoo::WindowedFilter`]); such a filter is fixed. `None`: items stay until
    /// removed.
    pub expire: Option<u64>,
}

/// RedisBloom's default `BUCKETSIZE`.
pub const DEFAULT_BUCKET_SIZE: u8 = 2;
/// RedisBloom's default `MAXITERATIONS`.
pub const DEFAULT_MAX_ITERATIONS: u16 = 20;
/// RedisBloom's default `EXPANSION`.
pub const DEFAULT_EXPANSION: u16 = 1;
/// The largest `EXPANSION` RedisBloom accepts.
pub const MAX_EXPANSION: i64 = 32_768;
/// The longest `EXPIRE`, in seconds (about 136 years).
pub const MAX_EXPIRE: i64 = u32::MAX as i64;

/// What a host fills in for the options a command leaves out: RedisBloom's configuration
/// `cf-initial-size`, `cf-bucket-size`, `cf-max-iterations` and `cf-expansion-factor`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Defaults {
    /// The capacity of a filter that `CF.ADD` or `CF.INSERT` creates without one.
    pub capacity: u64,
    /// `BUCKETSIZE` where `CF.RESERVE` gives none (and of filters the adds create).
    pub bucket_size: u8,
    /// `MAXITERATIONS` likewise.
    pub max_iterations: u16,
    /// `EXPANSION` likewise: 0 makes the filters that the adds create fixed.
    pub expansion: u16,
}

impl Defaults {
    /// RedisBloom's defaults: 1024, 2, 20, 1.
    pub const REDISBLOOM: Self = Self {
        capacity: 1024,
        bucket_size: DEFAULT_BUCKET_SIZE,
        max_iterations: DEFAULT_MAX_ITERATIONS,
        expansion: DEFAULT_EXPANSION,
    };

    /// The settings of a filter that an add creates, of `capacity` if the command gave one.
    pub const fn settings(&self, capacity: Option<u64>) -> Settings {
        let capacity = match capacity {
            Some(capacity) => capacity,
            None => self.capacity,
        };
        self.with_options(capacity, &Options::NONE)
    }

    /// The settings of `CF.RESERVE key capacity` with `options`: these defaults where an
    /// option was left out.
    pub const fn with_options(&self, capacity: u64, options: &Options) -> Settings {
        const fn or<T: Copy>(given: Option<T>, default: T) -> T {
            match given {
                Some(value) => value,
                None => default,
            }
        }
        // A filter whose items expire is fixed, in its own layout (the parser refuses
        // `EXPANSION` and `ENCODING` with `EXPIRE`).
        let (expansion, encoding) = match options.expire {
            Some(_) => (0, Encoding::Windowed),
            None => (or(options.expansion, self.expansion), or(options.encoding, Encoding::Plain)),
        };
        Settings {
            capacity,
            bucket_size: or(options.bucket_size, self.bucket_size),
            max_iterations: or(options.max_iterations, self.max_iterations),
            expansion,
            seed: options.seed,
            encoding,
            expire: options.expire,
        }
    }
}

/// The options a `CF.RESERVE` gave, each `None` where it gave none and the host's [`Defaults`]
/// apply.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Options {
    /// `BUCKETSIZE`.
    pub bucket_size: Option<u8>,
    /// `MAXITERATIONS`.
    pub max_iterations: Option<u16>,
    /// `EXPANSION`.
    pub expansion: Option<u16>,
    /// `SEED`.
    pub seed: Option<u64>,
    /// `ENCODING`.
    pub encoding: Option<Encoding>,
    /// `EXPIRE`.
    pub expire: Option<u64>,
}

impl Options {
    /// No option given.
    pub const NONE: Self = Self {
        bucket_size: None,
        max_iterations: None,
        expansion: None,
        seed: None,
        encoding: None,
        expire: None,
    };
}

impl Settings {
    /// A filter of `capacity` with RedisBloom's other defaults.
    pub const fn with_capacity(capacity: u64) -> Self {
        Defaults::REDISBLOOM.settings(Some(capacity))
    }

    /// Builds the filter these settings describe; a growable one may take at most
    /// `max_memory` bytes as it grows; `huge_pages` as
    /// [`Builder::huge_pages`](lockfree_cuckoo::Builder::huge_pages) (a module host says no, so
    /// that the engine's allocator counts every table). Its hasher is keyed with
    /// [`seed`](Self::seed), or at random. A filter whose items expire starts its epochs only
    /// when the host calls [`Filter::tick`] or [`Filter::follow`], so that a primary and its
    /// replicas, applying the same commands and the same epochs, hold the same words.
    ///
    /// # Errors
    ///
    /// The library's [`BuildError`]: a capacity too large for the address space, or a table
    /// that could not be allocated.
    pub fn build(&self, max_memory: usize, huge_pages: bool) -> Result<Filter, BuildError> {
        let capacity = usize::try_from(self.capacity).unwrap_or(usize::MAX);
        let mut builder = CuckooFilter::builder().capacity(capacity).huge_pages(huge_pages);
        if let Some(seed) = self.seed {
            builder = builder.seed(seed);
        }
        if let Some(seconds) = self.expire {
            return Filter::build_windowed(builder, Duration::from_secs(seconds));
        }
        if self.expansion != 0 {
            builder = builder.max_memory(max_memory);
        }
        Filter::build(builder, self.encoding)
    }

    /// An upper bound on the bytes of the first table, known before it is allocated: about 2.2
    /// bytes an item for large tables (the library's sizing; 3.5 for a filter whose items
    /// expire), plus room for small tables' reserve and the filter's fixed parts.
    pub fn first_table_bound(&self) -> usize {
        let items = usize::try_from(self.capacity).unwrap_or(usize::MAX);
        // A windowed table holds 1.6 windows of items (`lockfree_cuckoo::WindowedFilter`).
        let items = if self.expire.is_some() { items.saturating_mul(8) / 5 } else { items };
        items.saturating_mul(11) / 5 + (1 << 16)
    }

    /// The settings a filter loaded from a snapshot is reported with: its capacity, its seed,
    /// its encoding, its window, and `EXPANSION` 1 when it can grow (a snapshot keeps the
    /// filter, not its options).
    pub fn of_loaded(filter: &Filter) -> Self {
        let mut settings = Self::with_capacity(filter.capacity() as u64);
        if !filter.is_growable() {
            settings.expansion = 0;
        }
        settings.describing(filter)
    }

    /// These settings with what `filter`, loaded from a snapshot, records of itself: its seed,
    /// its encoding and its window (in whole seconds).
    pub fn describing(mut self, filter: &Filter) -> Self {
        self.seed = Some(filter.hasher().seed());
        self.encoding = filter.encoding();
        self.expire = filter.window().map(|window| window.as_secs());
        self
    }
}
