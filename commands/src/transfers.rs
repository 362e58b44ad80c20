//! `CF.SCANDUMP` and `CF.LOADCHUNK`: a filter's snapshot bytes (the library's versioned format,
//! `FORMAT.md`) in chunks, and the chunks put together again.
//!
//! A dump's cursor is one more than the offset of the end of the chunk it returned, so chunks
//! come in order and a loader knows where each one starts: `cursor - 1 - len`. Each chunk is
//! written from the filter's buckets as they are then (the library's
//! [`ChunkedSnapshot`]), so a call costs its chunk, not the filter: the dumps under way are
//! kept by key and cursor between calls, a few hundred bytes each, at most [`MAX_DUMPS`]. A
//! filter written during its dump ends the dump with an error when the writes show (a level
//! added, or another item count at the end), and may otherwise miss items that moved meanwhile:
//! dump a filter that no one writes, as with RedisBloom.
//!
//! The loader keeps the bytes received for a key aside and creates the key only when they make
//! a whole snapshot that the library accepts: a bad chunk, a chunk out of order or a snapshot
//! that fails its checks is an error, and the key stays as it was.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use lockfree_cuckoo::{ChunkError, ChunkedSnapshot, CuckooFilter, LoadError};

use crate::filter::Filter;

use crate::budget::Budget;
use crate::reply::Reply;

/// The largest chunk `CF.SCANDUMP` returns, as RedisBloom's.
pub const CHUNK_BYTES: usize = 16 << 20;

/// The most dumps kept between calls, for all keys together; past it the least recently
/// continued one is forgotten, and its next call answers an error.
pub const MAX_DUMPS: usize = 256;

/// A dump under way: where it is, and what the filter was (the snapshot refuses another).
#[derive(Debug)]
struct Dump {
    snapshot: ChunkedSnapshot,
    /// When it was last continued, for forgetting the oldest.
    used: u64,
}

/// The dumps under way, by key and the cursor that continues each.
#[derive(Debug, Default)]
struct Dumps {
    by_cursor: HashMap<(Vec<u8>, u64), Dump>,
    clock: u64,
}

/// The transfers under way in a keyspace: `CF.SCANDUMP`'s dumps and `CF.LOADCHUNK`'s loads,
/// each load within a bound on the bytes they hold.
#[derive(Debug)]
pub struct Transfers {
    /// The bound on the bytes loads hold, which a host may change (`set_limit`); Relaxed: a
    /// bound, read under the lock of `staged`, it publishes nothing.
    limit: AtomicUsize,
    /// A budget the loads' bytes are also reserved from, which the host's filters share.
    budget: Option<Arc<Budget>>,
    /// Whether loaded filters may use huge pages (`Settings::build`).
    huge_pages: bool,
    /// Taken by `CF.LOADCHUNK` alone, never by the commands on filters.
    staged: Mutex<Staged>,
    /// Taken by `CF.SCANDUMP` alone, never while a chunk is written.
    dumps: Mutex<Dumps>,
}

/// The loads, and the bytes they hold: each load's buffer and its key.
#[derive(Debug, Default)]
struct Staged {
    by_key: HashMap<Vec<u8>, Vec<u8>>,
    bytes: usize,
}

/// Bytes a load of `key` holding `bytes` counts.
fn held(key: &[u8], bytes: &[u8]) -> usize {
    key.len() + bytes.len()
}

/// What a chunk completed.
#[derive(Debug)]
// Returned once a chunk and moved straight into the keyspace: a box would only add an allocation.
#[allow(clippy::large_enum_variant)]
pub enum Loaded {
    /// More chunks are needed.
    Partial,
    /// The chunks make this filter.
    Whole(Filter),
}

/// RedisBloom's reply to a chunk it cannot take, whatever the reason: its own tests and clients
/// compare the whole text.
pub(crate) const LOAD_FAILED: &str = "Couldn't load chunk!";

impl Transfers {
    /// No transfers, at most `limit` bytes held by loads together (their keys included), and
    /// the filters they make on huge pages if `huge_pages` says so.
    pub fn new(limit: usize, huge_pages: bool) -> Self {
        Self {
            limit: AtomicUsize::new(limit),
            budget: None,
            huge_pages,
            staged: Mutex::new(Staged::default()),
            dumps: Mutex::new(Dumps::default()),
        }
    }

    /// As [`new`](Self::new), with every byte a load holds also reserved from `budget`, and
    /// given back when the load ends.
    pub fn with_budget(budget: Arc<Budget>, huge_pages: bool) -> Self {
        Self { budget: Some(budget), ..Self::new(usize::MAX, huge_pages) }
    }

    /// Changes the bound on the bytes loads hold, for the chunks that come next.
    pub fn set_limit(&self, limit: usize) {
        self.limit.store(limit, Ordering::Relaxed);
    }

    /// Bytes the loads under way hold.
    pub fn held_bytes(&self) -> usize {
        self.staged.lock().unwrap_or_else(|e| e.into_inner()).bytes
    }

    /// The chunk of `filter`'s snapshot that `cursor` (0 to start) asks for, as `CF.SCANDUMP`
    /// replies: the next cursor and at most `chunk_bytes` bytes, or `0` and null once the
    /// snapshot is all sent.
    ///
    /// # Errors
    ///
    /// An error reply when `cursor` continues no dump of `key` (never started, or forgotten),
    /// when the filter is not the one the dump started from or changed in a way the dump can
    /// see (its layout, hasher key, ceilings or levels; its item count at the end), or when
    /// the chunk cannot be allocated.
    pub fn dump_chunk(
        &self,
        key: &[u8],
        filter: &Filter,
        cursor: u64,
        chunk_bytes: usize,
    ) -> Result<Reply, Reply> {
        let mut snapshot = if cursor == 0 {
            filter.chunked_snapshot()
        } else {
            let dumps = self.dumps.lock().unwrap_or_else(|e| e.into_inner());
            // Kept where it is: another client may be dumping the same filter.
            match dumps.by_cursor.get(&(key.to_vec(), cursor)) {
                Some(dump) => dump.snapshot.clone(),
                None => return Err(Reply::error(NO_DUMP)),
            }
        };
        let mut out = Vec::new();
        let written =
            filter.write_next_chunk(&mut snapshot, chunk_bytes, &mut out).map_err(|e| match e {
                ChunkError::Changed => Reply::error(DUMP_CHANGED),
                _ => Reply::error_owned(format!("ERR {e}")),
            })?;
        if written == 0 {
            return Ok(Reply::Array(vec![Reply::Int(0), Reply::Null]));
        }
        let next = snapshot.offset() + 1;
        let mut dumps = self.dumps.lock().unwrap_or_else(|e| e.into_inner());
        dumps.clock += 1;
        let used = dumps.clock;
        dumps.by_cursor.insert((key.to_vec(), next), Dump { snapshot, used });
        if dumps.by_cursor.len() > MAX_DUMPS {
            let oldest = dumps.by_cursor.iter().min_by_key(|(_, d)| d.used).map(|(k, _)| k.clone());
            if let Some(oldest) = oldest {
                dumps.by_cursor.remove(&oldest);
            }
        }
        Ok(Reply::Array(vec![Reply::Int(next as i64), Reply::Bulk(out)]))
    }

    /// Adds the chunk `data` that starts at byte `start` of the snapshot for `key`.
    ///
    /// Memory grows with the bytes that arrive, never with what a header claims: a forged
    /// length costs nothing it does not carry.
    ///
    /// # Errors
    ///
    /// RedisBloom's replies: `Couldn't load chunk!` for an empty chunk or one that does not
    /// follow the bytes received (nothing changes) and for a snapshot the library refuses (the
    /// transfer is dropped), `Couldn't create filter!` when that happens at the first chunk,
    /// and `Insufficient memory` for bytes over the bound or the budget (the transfer is
    /// dropped).
    pub fn add(&self, key: &[u8], start: u64, data: &[u8]) -> Result<Loaded, Reply> {
        if data.is_empty() {
            return Err(Reply::error(LOAD_FAILED));
        }
        let mut staged = self.staged.lock().unwrap_or_else(|e| e.into_inner());
        if start == 0 {
            self.drop_load(&mut staged, key);
        }
        let received = staged.by_key.get(key).map_or(0, Vec::len);
        if start != received as u64 {
            return Err(Reply::error(LOAD_FAILED));
        }
        let mut bytes = self.drop_load(&mut staged, key).unwrap_or_default();
        let needed = key.len() + bytes.len() + data.len();
        let limit = self.limit.load(Ordering::Relaxed);
        if staged.bytes.saturating_add(needed) > limit || !self.reserve(needed) {
            return Err(Reply::error(INSUFFICIENT));
        }
        if bytes.try_reserve_exact(data.len()).is_err() {
            self.release(needed);
            return Err(Reply::error(INSUFFICIENT));
        }
        bytes.extend_from_slice(data);
        match Filter::load(CuckooFilter::builder().huge_pages(self.huge_pages), &bytes) {
            Ok(filter) => {
                self.release(needed);
                Ok(Loaded::Whole(filter))
            }
            Err(LoadError::Truncated { expected, found }) if found == bytes.len() as u64 => {
                // A snapshot that could never fit is refused now; the memory it needs is
                // taken only as its chunks arrive.
                let expected = usize::try_from(expected).unwrap_or(usize::MAX);
                let more = expected.saturating_sub(bytes.len());
                let fits = staged.bytes.saturating_add(key.len()).saturating_add(expected) <= limit
                    && self.budget.as_ref().map_or(true, |budget| budget.fits(more));
                if !fits {
                    self.release(needed);
                    return Err(Reply::error(INSUFFICIENT));
                }
                staged.bytes += held(key, &bytes);
                staged.by_key.insert(key.to_vec(), bytes);
                Ok(Loaded::Partial)
            }
            failed => {
                self.release(needed);
                // The first chunk holds the header, from which RedisBloom creates its filter.
                Err(Reply::error(match failed {
                    Err(_) if start == 0 => "Couldn't create filter!",
                    _ => LOAD_FAILED,
                }))
            }
        }
    }

    /// Takes the load of `key` out, its bytes no longer counted or reserved.
    fn drop_load(&self, staged: &mut Staged, key: &[u8]) -> Option<Vec<u8>> {
        let bytes = staged.by_key.remove(key)?;
        staged.bytes -= held(key, &bytes);
        self.release(held(key, &bytes));
        Some(bytes)
    }

    fn reserve(&self, bytes: usize) -> bool {
        self.budget.as_ref().map_or(true, |budget| budget.reserve(bytes))
    }

    fn release(&self, bytes: usize) {
        if let Some(budget) = &self.budget {
            budget.release(bytes);
        }
    }

    /// Drops every transfer under way (`FLUSHALL`).
    pub fn clear(&self) {
        let mut staged = self.staged.lock().unwrap_or_else(|e| e.into_inner());
        self.release(staged.bytes);
        *staged = Staged::default();
        *self.dumps.lock().unwrap_or_else(|e| e.into_inner()) = Dumps::default();
    }
}

const INSUFFICIENT: &str = "ERR Insufficient memory to load the chunks";

/// The reply to a `CF.SCANDUMP` cursor that continues no dump.
pub(crate) const NO_DUMP: &str =
    "ERR no dump of this filter is at this cursor (never started, or forgotten): start again at 0";

/// The reply when the filter changed during its dump.
pub(crate) const DUMP_CHANGED: &str =
    "ERR the filter was written during its dump: start again at 0, with no writes meanwhile";
