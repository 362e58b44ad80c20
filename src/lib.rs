//! A lock-free concurrent cuckoo filter.
//!
//! [`CuckooFilter`] is an approximate set for many threads at once, shared as
//! `Arc<CuckooFilter>`: `insert`, `contains` and `remove` all take `&self`, and nothing in the
//! crate takes a lock. It follows Fan, Andersen, Kaminsky and Mitzenmacher, "Cuckoo Filter:
//! Practically Better Than Bloom" (CoNEXT 2014): each item leaves a 16-bit fingerprint in one of
//! two buckets of four lanes, and a bucket is one `AtomicU64` updated by compare-and-swap.
//!
//! ```
//! use std::sync::Arc;
//! use std::thread;
//! use lockfree_cuckoo::CuckooFilter;
//!
//! let seen = Arc::new(CuckooFilter::with_capacity(100_000));
//! let workers: Vec<_> = (0..4u64)
//!     .map(|w| {
//!         let seen = Arc::clone(&seen);
//!         thread::spawn(move || {
//!             for i in 0..1_000 {
//!                 seen.insert(&(w, i)).expect("within capacity");
//!             }
//!         })
//!     })
//!     .collect();
//! for worker in workers {
//!     worker.join().unwrap();
//! }
//! assert!((0..4u64).all(|w| (0..1_000).all(|i| seen.contains(&(w, i)))));
//! assert_eq!(seen.len(), 4_000);
//! ```
//!
//! # Guarantees
//!
//! - **No false negatives.** `contains` returns `true` for every item inserted and not since
//!   removed, also while other threads relocate fingerprints between buckets.
//! - **False positives** are rare: about `8 × load / 65,532` of absent items (eight lanes to
//!   compare, each holding one of 65,534 fingerprints, two of which are twice as likely as the
//!   rest): 0.0115% at the promised capacity (load 0.94), 0.0122% with every lane full.
//!   The filter mixes every hash before using it, so this holds for weak hashers too (an
//!   identity hash of integer keys), as long as distinct items hash differently. A filter with
//!   semi-sorted buckets ([`SemiSorted`], below) halves the rate in the same memory.
//! - **Keyed, portable hashing.** The default hasher ([`DefaultHashBuilder`]) is keyed by a seed
//!   each filter draws at random (see Security below) and specified in `FORMAT.md` with the key
//!   as a parameter: under one seed an item hashes the same on every target, with any CPU
//!   features and in every version, and a snapshot records the seed, so a snapshot saved by one
//!   build loads into an equal filter in another. [`AHashBuilder`] is an opt-in for filters
//!   that stay in one build.
//! - **Wait-free lookups**: `contains` finishes in a bounded number of steps whatever other
//!   threads do. **Lock-free updates**: an `insert` or `remove` retries only when another
//!   thread's operation made progress, and never waits for a live snapshot
//!   ([`write_to`](CuckooFilter::write_to)), which makes one pass over the table. A
//!   [`ChunkedSnapshot`] writes the same bytes a chunk at a time, each chunk costing its own
//!   bytes, for a filter nobody writes meanwhile (a server's dump in pieces).
//! - **Nothing lost.** An insert that finds no room returns [`InsertError::Full`] and leaves the
//!   set as it was; a fingerprint being relocated is never outside the table.
//! - **Multiset.** An item inserted `k` times is present until removed `k` times, and its
//!   `k + 1`-th remove answers `false`; one item fits at most eight times, in growable filters
//!   too. [`len`](CuckooFilter::len) is always the accepted inserts less the removes that
//!   answered `true`. Copies of an item share its two buckets, so items inserted several times
//!   each meet a refusal below the capacity: see Multisets below.
//! - **Capacity.** [`CuckooFilter::with_capacity(n)`](CuckooFilter::with_capacity) accepts `n`
//!   distinct items, from any number of threads, at about 2.13 bytes an item for large `n` (no
//!   power-of-two rounding).
//! - **Growth.** A filter built with [`Builder::growable`] (optionally up to
//!   [`max_capacity`](Builder::max_capacity) or [`max_memory`](Builder::max_memory)) never needs
//!   its final size: when its newest table is full (90% of the items it promises), an insert it
//!   refuses adds a table four times larger, while every other thread goes on inserting, looking up
//!   and removing. Nothing moves, nothing is lost, no operation waits for a growth, and every
//!   guarantee above holds during and after it. **Memory follows the live items**, not the history:
//!   an insert puts an item's copy in the table that holds its other copies, or refuses it there
//!   as a fixed filter would (its copies fill its buckets, or that table is not full but crowded
//!   around them), so re-inserting and removing live items, any number of times, on any number
//!   of threads, grows nothing, and a refused copy never lands in another table. One difference
//!   remains: a remove that finds the item's fingerprint in two tables (a colliding item in the
//!   other, as rare as a false positive; or a copy inserted while another thread grew the filter,
//!   or while the item's table was full) cannot tell which copy is the item's, since one may be
//!   another item's only copy. It takes none and records a *pending removal*
//!   ([`Stats::pending_removals`]), counted out of `len` and [`count`](CuckooFilter::count); the
//!   item stays a false positive until it is settled. Pending removals are bounded by the copies
//!   that match (once they are as many, they are completed, and a further remove answers
//!   `false`), and they are settled when the ambiguity goes: the item's next insert takes a pending copy
//!   back instead of storing another; once they are as many as the matching copies (every copy
//!   is the item's own, and removed), the remove that made them so takes every copy; and once
//!   one table alone matches (the colliding item was removed), the item's next remove, or the
//!   sweep before a growth or at the ceiling, frees them.
//!
//! # Semi-sorted buckets
//!
//! [`Builder::layout`]`::<`[`SemiSorted`]`>()` builds the paper's second filter (Fan et
//! al., section 5.2): each bucket's four fingerprints sorted by their low four bits, whose four
//! nibbles are stored together as one 12-bit code, which leaves room for 17-bit fingerprints in
//! the same 64-bit bucket. Same capacity, same memory, same guarantees (every operation, growth,
//! snapshots, merges), about half the false positives: `8 × load / 131,064`, 0.0057% at the
//! promised capacity. The cost is time, measured in `BENCHMARKS.md` ("Semi-sorted buckets"):
//! lookups of absent items at about the plain filter's rate, of present items about three
//! quarters (a present item's buckets are decoded); inserts and removes about 0.6 to 0.8 (every
//! write decodes and re-sorts its bucket).
//!
//! The layout is part of the filter's type (`CuckooFilter<S, SemiSorted>`): every operation is
//! compiled for it alone, and filters of different layouts cannot be merged. Choose it when
//! false positives cost more than lookups: each one is a wasted disk read or network round trip
//! behind the filter, and the filter is not the bottleneck. Keep the plain layout when lookups
//! are the hot path, or when most lookups find their item. Snapshots record the layout: a
//! filter of the other refuses them ([`LoadError::EncodingMismatch`]), and
//! [`encoding_of_snapshot`] tells a front-end that stores both which to load.
//!
//! ```
//! use lockfree_cuckoo::{encoding_of_snapshot, CuckooFilter, Encoding, SemiSorted};
//!
//! let filter = CuckooFilter::builder().capacity(100_000).layout::<SemiSorted>().build();
//! filter.insert("page:42")?;
//! assert!(filter.contains("page:42"));
//! let bytes = filter.to_bytes();
//! assert_eq!(encoding_of_snapshot(&bytes)?, Encoding::SemiSorted);
//! let loaded = CuckooFilter::builder().layout::<SemiSorted>().load(&bytes)?;
//! assert!(loaded.contains("page:42"));
//! assert!(CuckooFilter::from_bytes(&bytes).is_err(), "a plain filter refuses it");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Items and their types
//!
//! An item is whatever its [`Hash`](core::hash::Hash) impl writes to the hasher: the filter
//! keeps no type, so two values are one item exactly when they write the same and the hasher
//! then gives the same hash. Look items up with the type they were inserted as. What that means
//! depends on the hasher:
//!
//! - Under the default hasher ([`DefaultHashBuilder`], `FORMAT.md`) every integer write is one
//!   64-bit word, zero-extended: `1u8`, `1u16`, `1u32`, `1u64`, `1usize` and non-negative
//!   signed values of those widths are one item, and so are `'a'` and `97u32` (a `char` writes
//!   a `u32`) and `true` and `1u8`. Negative values are not: `i8` to `i32` write the bits of
//!   their own width (`-1i32` is `0xFFFF_FFFF`), while `i64` and `isize` write all 64 bits, so
//!   `-1i32` and `-1i64` are two items. A `u128` or `i128` writes two words, low first, and a
//!   last word of zero hashes as if it were not there (the last word is paired with zero,
//!   `FORMAT.md`): `1u128` and `1u64` are one item, and so are `(7u64, 0u64)` and `7u64`,
//!   while `-1i128` and `-1i64` are two.
//! - Strings and bytes differ whatever the hasher: a `str` writes its bytes and then `0xFF`,
//!   and a `[u8]` (also a `Vec<u8>` or `[u8; N]`) writes its length and then its bytes, so
//!   `"ab"` and `b"ab"` are two items; `"ab"`, `String::from("ab")` and `Box<str>` are one.
//! - Other hashers may write each integer width as its own number of bytes (SipHash, std's
//!   `RandomState`, does), so there even `1u32` and `1u64` are two items.
//!
//! # Consistency
//!
//! Every operation is atomic with respect to the item it touches:
//!
//! - A `contains(x)` that starts after an `insert(x)` returned `Ok` — on any thread, once that
//!   return is visible to the caller (a join, a channel, a lock, an atomic flag) — returns `true`
//!   until a `remove(x)` takes that copy.
//! - A `contains(x)` that starts after `remove(x)` took the last copy returns `false`, unless a
//!   colliding item keeps the fingerprint (a false positive) or a lookup saw removals under it
//!   on every validation attempt, when it answers `true` conservatively
//!   ([`Stats::conservative_lookups`] counts these).
//! - Colliding items (same fingerprint and buckets) and repeated keys are counted together: the
//!   filter holds one copy per insert of any of them and gives one up per remove. An insert and a
//!   remove of colliding items that run at the same time on different threads may take effect in
//!   either order; one that happens before the other (same thread, or ordered by a join, channel
//!   or lock) takes effect first.
//! - Operations on the filter do not order memory for anything else: seeing an item through
//!   `contains` does not make the inserting thread's other writes visible. Synchronise those
//!   yourself.
//! - Growth changes none of this: a `contains(x)` that starts after `insert(x)` returned is
//!   `true` whatever levels other threads add meanwhile, and a snapshot or clone holds every item
//!   present throughout it, in whichever level. A
//!   [`contains_batch`](CuckooFilter::contains_batch) reads the list of levels once, when it
//!   starts: a level added during the batch holds only items inserted after the batch began,
//!   which its lookups may or may not see, like any insert concurrent with the batch.
//! - [`len`](CuckooFilter::len) and [`stats`](CuckooFilter::stats) are sums of sharded counters:
//!   exact when no insert or remove is in flight, approximate while they run.
//!
//! # Security
//!
//! Servers fill filters with items their clients choose. Whoever knows where items land can
//! aim items at a few buckets, so:
//!
//! - **The key.** [`CuckooFilter::with_capacity`] and [`CuckooFilter::builder`] key the default
//!   hasher with a seed drawn from the standard library's `HashMap` keys (`RandomState`, which
//!   the operating system seeds), a different one for every filter. The hasher is foldhash's
//!   folded multiply with secret key words: without the key nobody places items in chosen
//!   buckets faster than by trying random items, and no class of items hashes alike for every
//!   key. [`Builder::seed`] fixes the seed for reproducible filters (tests, shards to
//!   [merge](CuckooFilter::merge), replicas); a fixed seed is a known key.
//! - **Growth.** A growable filter adds a level only when an insert is refused by a newest level
//!   holding at least 90% of its promise; below that, the item alone is refused
//!   ([`InsertError::Full`], counted in [`Stats::crowded_refusals`]), with no level added and
//!   nothing lost. Random items first meet a refusal above their table's whole promise, so they
//!   grow as without the rule. Copies crowd too (Multisets below), and a growable filter refuses
//!   them as a fixed one does, in the table that holds the item's other copies, adding no level:
//!   inserting one item many times grows nothing.
//! - **With the key**, an attacker fills chosen buckets, a dozen items each: items whose buckets
//!   and paths it filled are refused, while memory and the levels stay where random items leave
//!   them.
//! - **Snapshots reveal the key**: [`to_bytes`](CuckooFilter::to_bytes),
//!   [`write_to`](CuckooFilter::write_to) and serde record the seed so that the filter loads
//!   equal anywhere. Whoever reads a snapshot can compute where any item lands; keep snapshots
//!   as private as the filter.
//!
//! # Removing
//!
//! A filter stores fingerprints, not items: removing an item that was never inserted may remove
//! a different item with the same fingerprint and buckets, which then reads as absent. Remove
//! only what you inserted, as often as you inserted it. In a grown filter, a remove that finds
//! the item's fingerprint in two tables keeps it as a pending removal (see Growth above).
//!
//! # Multisets
//!
//! An item's copies share its two buckets, eight lanes. Copies of different items that meet in
//! a bucket fill it sooner than distinct items do, since no relocation moves a copy out of a
//! pair its item already fills, so a filter of items inserted `k` times each first refuses an
//! insert below its capacity. Copies accepted before the first refusal, as a share of the
//! capacity the filter was built for (100,000 items, five seeds, least and median; `cargo run
//! --release -p lockfree-cuckoo-eval --bin multisets`):
//!
//! | copies of each item | fixed filter | growable filter |
//! |---:|---:|---:|
//! | 1 | 103.5% / 103.7% | none (it grows; runs stopped at 16 times) |
//! | 2 | 87.2% / 89.1% | 87.2% / 89.1% |
//! | 4 | 33.6% / 36.6% | 33.6% / 36.6% |
//! | 8 | 0.2% / 0.9% | 0.2% / 0.9% |
//!
//! A growable filter refuses such copies where a fixed one does, in the level that holds the
//! item's other copies (a level that holds less than 90% of its promise is crowded, not full),
//! and adds a level only when its newest level is full: adding one for each crowded pair would
//! let copies of a few items grow it without bound. Eight copies fill an item's pair, and an item
//! with a bucket in a full pair has room for four copies at most. Size a filter of
//! multisets by its copies, with room to spare, or insert each item once and keep the counts
//! elsewhere.
//!
//! # Expiry
//!
//! A [`WindowedFilter`], built by [`Builder::expire_after`], forgets: "have I seen this in the
//! last hour?" for deduplicating events and webhooks, replay protection of tokens and nonces,
//! and rate limits, in one filter instead of one key per time window.
//!
//! ```
//! use std::time::Duration;
//! use lockfree_cuckoo::CuckooFilter;
//!
//! let seen = CuckooFilter::builder().capacity(100_000).expire_after(Duration::from_secs(3600)).build();
//! let first_time = |nonce: &str| {
//!     let new = !seen.contains(nonce);
//!     seen.insert(nonce).map(|()| new)
//! };
//! assert_eq!(first_time("n-1"), Ok(true));
//! assert_eq!(first_time("n-1"), Ok(false));
//! ```
//!
//! - **The window.** An item is present for at least the window after its last insert, under
//!   any interleaving of threads: no false negative inside it. Inserting a present item
//!   refreshes it (the filter is a set), and `remove` takes it as in a [`CuckooFilter`].
//! - **The factor, 1.5.** Each lane keeps a 2-bit tag of the epoch it was written in; an epoch
//!   lasts at least half the window (`P`), and at epoch `e` tags `e`, `e - 1` and `e - 2` are
//!   live. An item last written at time `t` in epoch `e` is dead once epoch `e + 3` starts, which
//!   is no earlier than `start(e + 1) + 2P`, after `t + 2P`, the end of its window; and while
//!   the filter is maintained, epochs start on time and `e + 3` starts by `start(e) + 3P`, at
//!   most 1.5 windows after `t`. Items expire in steps of half a window.
//! - **No hidden thread.** The expiry work (emptying the dead tag before it comes back as a new
//!   epoch's) is done by inserts, 128 buckets by every 64th insert of a thread and more by an
//!   insert that finds no room, and by [`WindowedFilter::tick`]. Lookups never wait for it, and
//!   once an epoch's sweep is done (the whole table) they cost a plain lookup and one read of the
//!   epoch: no lane then holds an expired entry, so they need not test ages. A
//!   filter that gets few inserts should be ticked at least every half window; a late tick only
//!   keeps expired items longer (stale positives), never drops a live one. So does a thread
//!   stopped in the middle of an insert or remove: the sweep of the next epoch waits for the
//!   writers of the one before (`src/windowed/epochs.rs`), and until it runs, expired items stay
//!   and inserts may be refused; lookups and the other writers go on.
//! - **The clock** is read only when an epoch may start, through [`Clock`]: [`SystemClock`]
//!   (monotonic) by default, [`ManualClock`] for tests and for front-ends whose primary decides
//!   when time moves.
//! - **Space and accuracy.** 14-bit fingerprints, so a false-positive rate of about
//!   `8a / 16,380` at load `a`. The capacity counts the items inserted within any window; a
//!   stream of distinct items at the capacity's rate holds 1.5 windows of them at once, and the
//!   table is sized for 1.6, so it stays 88% full at most: a false-positive rate of about 0.04%
//!   at capacity (0.041% with 1.48 windows of items held, `tests/filter/expiry.rs`), and about
//!   3.4 bytes an item of capacity.
//! - **Not for windowed filters:** growth ([`BuildError::WindowWithGrowth`]) and merging (the
//!   type has no `merge`: items of two filters of different clocks have no common age).
//! - **Snapshots** carry the ages and the clock: [`WindowedFilter::write_to`] records the epoch
//!   and the time into it, and a filter loaded from the snapshot
//!   ([`WindowedBuilder::load`]) goes on from there; the time a snapshot spends saved does not
//!   count, so every item stays present at least as long as it would have in the saved filter.
//!
//! # Cargo features
//!
//! - `serde` (off by default): `Serialize` and `Deserialize` for [`CuckooFilter`], as its
//!   versioned snapshot bytes (see [`CuckooFilter::to_bytes`]); every check of
//!   [`CuckooFilter::from_bytes`] applies on the way in.
//! - `test-hooks` (off by default): unstable hooks for this crate's own tests and evaluation
//!   tools, such as crafting a hash with a given fingerprint and bucket. They are not part of the
//!   public API and may change or disappear in any release.

#![cfg_attr(docsrs, feature(doc_cfg))]

// First: rustdoc lists a type's methods in the order of the modules that declare them, so the
// filter's page leads with construction and the three operations, then batches, merges and
// snapshots.
mod builder;
mod filter;

mod batch;
mod bucket;
mod encoding;
mod error;
mod fingerprint;
mod hash;
mod hasher;
#[cfg(feature = "test-hooks")]
mod hooks;
mod levels;
mod merge;
mod pending;
mod pipeline;
mod published;
mod sizing;
mod snapshot;
mod stats;
mod sync;
mod table;
mod windowed;

pub use bucket::plain::Plain;
pub use bucket::semi_sorted::SemiSorted;
pub use bucket::Layout;
pub use builder::Builder;
pub use encoding::Encoding;
pub use error::{BuildError, ChunkError, InsertError, LoadError, MergeError};
pub use filter::CuckooFilter;
pub use hasher::{AHashBuilder, DefaultHashBuilder, DefaultHasher};
pub use snapshot::{encoding_of_snapshot, ChunkedSnapshot, SnapshotInfo, ENCODING_PREFIX_LEN};
pub use stats::{InsertPaths, Stats};
pub use windowed::{Clock, ManualClock, SystemClock, WindowedBuilder, WindowedFilter, MIN_WINDOW};

#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
