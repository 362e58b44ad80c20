//! `CF.SCANDUMP` and `CF.LOADCHUNK`: a filter's snapshot bytes (the library's versioned format,
//! `FORMAT.md`) in chunks, and the chunks put together again.
//!
//! A dump's cursor is one more than the offset of the end of the chunk it returned, so chunks
//! come in order and a loader knows where each one starts: `cursor - 1 - len`. The loader keeps
//! the bytes received for a key aside and creates the key only when they make a whole
//! snapshot that the library accepts: a bad chunk, a chunk out of order or a snapshot that
//! fails its checks is an error, and the key stays as it was. Each chunk is cut from a snapshot
//! taken for that call, so a filter written between two `CF.SCANDUMP`s gives chunks of two
//! snapshots, whose checksum the loader then refuses: dump a filter that no one writes, as
//! with RedisBloom.

use std::collections::HashMap;
use std::io::{self, Write};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use lockfree_cuckoo::{CuckooFilter, LoadError};

use crate::reply::Reply;

/// The largest chunk `CF.SCANDUMP` returns, as RedisBloom's.
pub const CHUNK_BYTES: usize = 16 << 20;

/// The chunk of `filter`'s snapshot that `cursor` (0 to start) asks for, as `CF.SCANDUMP`
/// replies: the next cursor and the bytes, or `0` and null once the snapshot is all sent.
pub fn dump_chunk(filter: &CuckooFilter, cursor: u64, chunk_bytes: usize) -> Reply {
    let skip = usize::try_from(cursor.saturating_sub(1)).unwrap_or(usize::MAX);
    let mut window = Window { skip, out: Vec::new(), want: chunk_bytes };
    // The window refuses the bytes past its chunk, which ends the snapshot's writing early.
    let _ = filter.write_to(&mut window);
    if window.out.is_empty() {
        return Reply::Array(vec![Reply::Int(0), Reply::Null]);
    }
    let next = skip as u64 + window.out.len() as u64 + 1;
    Reply::Array(vec![Reply::Int(next as i64), Reply::Bulk(window.out)])
}

/// Keeps the bytes from `skip` on, `want` of them at most.
struct Window {
    skip: usize,
    want: usize,
    out: Vec<u8>,
}

impl Write for Window {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let dropped = buf.len().min(self.skip);
        self.skip -= dropped;
        let room = self.want - self.out.len();
        if room == 0 {
            return Err(io::Error::new(io::ErrorKind::WriteZero, "the chunk is full"));
        }
        let kept = (buf.len() - dropped).min(room);
        self.out.extend_from_slice(&buf[dropped..dropped + kept]);
        Ok(dropped + kept)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The `CF.LOADCHUNK` transfers under way, by key, within a bound on the bytes they hold.
#[derive(Debug)]
pub struct Loads {
    /// The bound on the bytes held, which a host may change (`set_limit`); Relaxed: a bound,
    /// read under the lock of `staged`, it publishes nothing.
    limit: AtomicUsize,
    /// Whether loaded filters may use huge pages (`Settings::build`).
    huge_pages: bool,
    /// Taken by `CF.LOADCHUNK` alone, never by the commands on filters.
    staged: Mutex<Staged>,
}

/// The transfers, and the bytes they hold: each transfer's buffer and its key.
#[derive(Debug, Default)]
struct Staged {
    by_key: HashMap<Vec<u8>, Vec<u8>>,
    bytes: usize,
}

impl Staged {
    /// Takes the transfer of `key` out, its bytes no longer counted.
    fn take(&mut self, key: &[u8]) -> Option<Vec<u8>> {
        let bytes = self.by_key.remove(key)?;
        self.bytes -= key.len() + bytes.capacity();
        Some(bytes)
    }

    /// Keeps `bytes` as the transfer of `key`, counted.
    fn keep(&mut self, key: &[u8], bytes: Vec<u8>) {
        self.bytes += key.len() + bytes.capacity();
        self.by_key.insert(key.to_vec(), bytes);
    }
}

/// What a chunk completed.
#[derive(Debug)]
// Returned once a chunk and moved straight into the keyspace: a box would only add an allocation.
#[allow(clippy::large_enum_variant)]
pub enum Loaded {
    /// More chunks are needed.
    Partial,
    /// The chunks make this filter.
    Whole(CuckooFilter),
}

/// RedisBloom's reply to a chunk it cannot take, whatever the reason: its own tests and clients
/// compare the whole text.
pub(crate) const LOAD_FAILED: &str = "Couldn't load chunk!";

impl Loads {
    /// No transfers, at most `limit` bytes held for them together (their keys included), and
    /// the filters they make on huge pages if `huge_pages` says so.
    pub fn new(limit: usize, huge_pages: bool) -> Self {
        Self { limit: AtomicUsize::new(limit), huge_pages, staged: Mutex::new(Staged::default()) }
    }

    /// Changes the bound on the bytes held, for the chunks that come next.
    pub fn set_limit(&self, limit: usize) {
        self.limit.store(limit, Ordering::Relaxed);
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
    /// and `Insufficient memory` for bytes over the bound.
    pub fn add(&self, key: &[u8], start: u64, data: &[u8]) -> Result<Loaded, Reply> {
        if data.is_empty() {
            return Err(Reply::error(LOAD_FAILED));
        }
        let mut staged = self.staged.lock().unwrap_or_else(|e| e.into_inner());
        if start == 0 {
            staged.take(key);
        }
        let held = staged.by_key.get(key).map(Vec::len);
        if start != held.unwrap_or(0) as u64 {
            return Err(Reply::error(LOAD_FAILED));
        }
        let limit = self.limit.load(Ordering::Relaxed);
        let mut bytes = staged.take(key).unwrap_or_default();
        let needed = key.len() + bytes.len() + data.len();
        if staged.bytes.saturating_add(needed) > limit {
            return Err(Reply::error("ERR Insufficient memory to load the chunks"));
        }
        bytes.extend_from_slice(data);
        match CuckooFilter::builder().huge_pages(self.huge_pages).load(&bytes) {
            Ok(filter) => Ok(Loaded::Whole(filter)),
            Err(LoadError::Truncated { expected, found }) if found == bytes.len() as u64 => {
                // A snapshot that could never fit is refused now; the memory it needs is
                // taken only as its chunks arrive.
                let expected = usize::try_from(expected).unwrap_or(usize::MAX);
                if staged.bytes.saturating_add(key.len()).saturating_add(expected) > limit {
                    return Err(Reply::error("ERR Insufficient memory to load the chunks"));
                }
                staged.keep(key, bytes);
                Ok(Loaded::Partial)
            }
            // The first chunk holds the header, from which RedisBloom creates its filter.
            Err(_) if start == 0 => Err(Reply::error("Couldn't create filter!")),
            Err(_) => Err(Reply::error(LOAD_FAILED)),
        }
    }

    /// Drops every transfer under way (`FLUSHALL`).
    pub fn clear(&self) {
        let mut staged = self.staged.lock().unwrap_or_else(|e| e.into_inner());
        *staged = Staged::default();
    }
}
