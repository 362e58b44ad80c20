//! RedisBloom's cuckoo filter commands (`CF.*`) on [`lockfree_cuckoo`] filters, without any
//! networking: what the server (`server/`) and an engine module both run, so that their
//! commands behave the same.
//!
//! A host parses a request with [`parse`], which gives a [`Command`] or the error reply
//! RedisBloom gives for it (its option names, ranges and texts), and runs it with
//! [`Command::run`] on its [`Keyspace`]: the host's own map of names to [`Entry`] values. The
//! result is a [`Reply`] that the host writes in RESP2 or RESP3 ([`Reply::write`]) or walks with
//! its engine's reply calls. [`COMMANDS`] is the one list of the commands, with RedisBloom's
//! arities and flags, for a host's command table.
//!
//! # Where these commands differ from RedisBloom's
//!
//! - Buckets always hold four 16-bit fingerprints (about 0.012% false positives at full load,
//!   against RedisBloom's 8-bit fingerprints and 1.5 to 3%): `BUCKETSIZE` is checked and
//!   kept, and `CF.INFO` reports a bucket size of 4 (`CF.DEBUG`, RedisBloom's line, says
//!   `bktsize:4` and this filter's buckets and levels).
//! - `MAXITERATIONS` is checked and kept: inserts here search breadth-first for a path of at
//!   most five relocations instead of a random walk.
//! - `EXPANSION 0` makes a fixed filter; any other value a growable one, which grows by levels
//!   of four times the buckets of the newest whatever the value (`CF.INFO` reports the value
//!   asked for, and its levels as "Number of filters").
//! - `CF.SCANDUMP` chunks are the library's versioned snapshot bytes (`FORMAT.md`), not
//!   RedisBloom's (a filter holding no item answers `0` and null at once, as RedisBloom's
//!   does, so it makes no key on the other side). Each call costs its chunk ([`Transfers`]),
//!   and a cursor that continues no dump under way is an error. `CF.LOADCHUNK` creates the key
//!   only from a whole snapshot that passes every check, and refuses a chunk out of order.
//! - `CF.COMPACT` has nothing to do and answers `OK`: removes take their fingerprint out of the
//!   table at once.
//! - The `CF.INSERT` capacity and `CF.RESERVE` bounds are RedisBloom's (up to 2^30 items).
//! - `CF.RESERVE key capacity ... SEED n` (an extension; RedisBloom ignores the word) keys the
//!   filter's hasher with `n`, any 64-bit unsigned integer. Without it each new filter draws a
//!   random key, so that clients cannot aim items at chosen buckets; filters reserved with one
//!   seed map every item alike, which a module uses to replicate the filters it creates, and a
//!   user to build filters to compare or merge. Whoever knows a filter's seed can craft items
//!   that collide in it: keep seeds chosen this way from the clients that choose the items.
//! - `CF.RESERVE key capacity ... ENCODING SEMISORTED` (an extension) builds the filter with
//!   semi-sorted buckets: half the false-positive rate in the same memory, for slower writes
//!   (`lockfree_cuckoo::Encoding`); `ENCODING PLAIN` is the default. `CF.INFO` of a semi-sorted
//!   filter adds the field "Encoding".
//! - `CF.RESERVE key capacity EXPIRE seconds` (an extension) builds a filter whose items
//!   expire: each is present for at least `seconds` after its last insert and gone within one
//!   and a half times that (up to the false-positive rate, about 0.05% at capacity), where
//!   `capacity` is the items inserted within any window; a stream of that many distinct items
//!   a window never fills it. It is a fixed filter of its own layout: `EXPANSION` other than 0
//!   and `ENCODING` are refused with it. The word is RedisBloom's request for the feature
//!   ("Expiration on items") and the library's `expire_after`; it is about the items, not the
//!   key, whose own `EXPIRE` is unchanged. `CF.INFO` adds "Encoding" `windowed` and "Expire
//!   after" in seconds; `CF.COUNT` answers 0 or 1 (an insert of a present item refreshes it).
//!   The host starts the filter's epochs ([`Filter::tick`]): a module's primary sends each to
//!   its replicas as `CF.TICK key epoch`, which only a primary's stream or the AOF may send.

mod args;
mod budget;
mod command;
mod docs;
mod entry;
mod filter;
mod keyspace;
mod reply;
mod settings;
mod transfers;

pub use args::{lower_name, parse_i64, Argv};
pub use budget::{growth_bound, Budget};
pub use command::{
    encoding_name, find, parse, Command, Spec, COMMANDS, MAX_CAPACITY, MAX_LEVELS_REACHED,
};
pub use docs::{Arg, ArgKind, Docs, KeyUse};
pub use entry::Entry;
pub use filter::Filter;
pub use keyspace::{KeyError, Keyspace};
pub use reply::{header, write_bulk, write_error, Protocol, Reply};
pub use settings::{
    Defaults, Options, Settings, DEFAULT_BUCKET_SIZE, DEFAULT_EXPANSION, DEFAULT_MAX_ITERATIONS,
    MAX_EXPANSION, MAX_EXPIRE,
};
pub use transfers::{Loaded, Transfers, CHUNK_BYTES, MAX_DUMPS};
