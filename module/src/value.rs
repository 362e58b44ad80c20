//! The module data type: a key's [`Entry`] in the engine's RDB, AOF, `DUMP`/`RESTORE`,
//! `COPY`, `MEMORY USAGE` and `DEBUG DIGEST`.
//!
//! RDB encoding 1 of a value: its settings and deletes as unsigned integers (capacity, bucket
//! size, max iterations, expansion, deletes), the length of the filter's snapshot (the
//! library's versioned format, `FORMAT.md`), then the snapshot as string buffers of at most
//! 16 MiB each. A value that does not load whole and valid (a short read, a damaged or hostile
//! payload, a setting out of range) is refused: loading fails rather than make a filter that
//! could miss items.

use std::collections::BTreeSet;
use std::os::raw::{c_char, c_int, c_longlong, c_void};
use std::ptr::null_mut;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use lockfree_cuckoo::{CuckooFilter, Encoding};
use lockfree_cuckoo_commands::{Entry, Filter, Settings, CHUNK_BYTES};
use valkey_module::digest::Digest;
use valkey_module::native_types::ValkeyType;
use valkey_module::raw;

/// The value encoding this build writes and reads.
const ENCODING: i32 = 1;

/// The type's name, nine characters as the engines ask (`TYPE` answers it).
pub(crate) const TYPE_NAME: &str = "LFCuckooF";

/// The cuckoo filter type, registered at load.
pub(crate) static CF_TYPE: ValkeyType = ValkeyType::new(
    TYPE_NAME,
    ENCODING,
    raw::RedisModuleTypeMethods {
        version: raw::REDISMODULE_TYPE_METHOD_VERSION as u64,
        rdb_load: Some(rdb_load),
        rdb_save: Some(rdb_save),
        aof_rewrite: Some(aof_rewrite),
        mem_usage: Some(mem_usage),
        digest: Some(digest),
        free: Some(free),
        aux_load: None,
        aux_save: None,
        aux_save2: None,
        aux_save_triggers: 0,
        free_effort: None,
        unlink: None,
        copy: Some(copy),
        // The filter's first level lives inside it, pointed to by its level chain: moving the
        // value is not a plain copy of its bytes.
        defrag: None,
        mem_usage2: None,
        free_effort2: None,
        unlink2: None,
        copy2: None,
    },
);

/// The addresses of every live value, so that `INFO` can add up their memory; the engine
/// may free values on a background thread (`FLUSHALL ASYNC`), which removes them here first.
static LIVE: Mutex<BTreeSet<usize>> = Mutex::new(BTreeSet::new());

fn live() -> std::sync::MutexGuard<'static, BTreeSet<usize>> {
    LIVE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Boxes `entry` for the engine, counted among the live values.
fn into_raw(entry: Entry) -> *mut c_void {
    let raw = Box::into_raw(Box::new(entry));
    register(raw);
    raw.cast()
}

/// How many live values are filters whose items expire: the timer that ticks them
/// (`expiry.rs`) scans nothing while there are none. Changed under the lock of [`LIVE`];
/// Relaxed, a count that publishes nothing.
static WINDOWED: AtomicUsize = AtomicUsize::new(0);

/// Whether any live filter's items expire.
pub(crate) fn any_windowed() -> bool {
    WINDOWED.load(Ordering::Relaxed) > 0
}

/// Counts a value the engine now holds among the live ones.
pub(crate) fn register(entry: *const Entry) {
    let mut live = live();
    // SAFETY: the engine holds `entry`, a boxed `Entry`, until `free`.
    if live.insert(entry as usize) && unsafe { &*entry }.filter.window().is_some() {
        WINDOWED.fetch_add(1, Ordering::Relaxed);
    }
}

/// How many filters exist, and their bytes together.
pub(crate) fn totals() -> (usize, usize) {
    let live = live();
    // SAFETY: every address in the set is a boxed `Entry` that `free` has not dropped yet:
    // `free` takes it out of the set, under this lock, before dropping it.
    let bytes = live.iter().map(|&raw| unsafe { &*(raw as *const Entry) }.filter.memory_usage());
    (live.len(), bytes.sum())
}

unsafe extern "C" fn free(value: *mut c_void) {
    // SAFETY: the engine hands back a value this module boxed (`into_raw`), once.
    let entry = unsafe { Box::from_raw(value.cast::<Entry>()) };
    if live().remove(&(value as usize)) && entry.filter.window().is_some() {
        WINDOWED.fetch_sub(1, Ordering::Relaxed);
    }
    drop(entry);
}

/// The entry behind a value pointer the engine passes to a type method.
///
/// # Safety
///
/// `value` must be a live value of this type.
unsafe fn entry<'a>(value: *const c_void) -> &'a Entry {
    // SAFETY: as the caller promises.
    unsafe { &*value.cast::<Entry>() }
}

unsafe extern "C" fn rdb_save(rdb: *mut raw::RedisModuleIO, value: *mut c_void) {
    // SAFETY: the engine saves a live value of this type.
    let entry = unsafe { entry(value) };
    for field in settings_fields(entry) {
        raw::save_unsigned(rdb, field);
    }
    let snapshot = entry.filter.to_bytes();
    raw::save_unsigned(rdb, snapshot.len() as u64);
    for chunk in snapshot.chunks(CHUNK_BYTES) {
        raw::save_slice(rdb, chunk);
    }
}

fn settings_fields(entry: &Entry) -> [u64; 5] {
    let s = entry.settings;
    [
        s.capacity,
        u64::from(s.bucket_size),
        u64::from(s.max_iterations),
        u64::from(s.expansion),
        entry.deletes(),
    ]
}

unsafe extern "C" fn rdb_load(rdb: *mut raw::RedisModuleIO, encoding: c_int) -> *mut c_void {
    if encoding != ENCODING {
        return null_mut();
    }
    load(rdb).map_or(null_mut(), into_raw)
}

fn load(rdb: *mut raw::RedisModuleIO) -> Option<Entry> {
    let mut fields = [0; 5];
    for field in &mut fields {
        *field = raw::load_unsigned(rdb).ok()?;
    }
    let [capacity, bucket_size, max_iterations, expansion, deletes] = fields;
    let settings = Settings {
        capacity,
        bucket_size: u8::try_from(bucket_size).ok().filter(|&b| b >= 1)?,
        max_iterations: u16::try_from(max_iterations).ok().filter(|&m| m >= 1)?,
        expansion: u16::try_from(expansion).ok()?,
        // The seed, the encoding and the window are the snapshot's, below.
        seed: None,
        encoding: Encoding::Plain,
        expire: None,
    };
    let len = usize::try_from(raw::load_unsigned(rdb).ok()?).ok()?;
    // Grown as the chunks arrive, so a forged length costs nothing it does not carry.
    let mut snapshot = Vec::new();
    while snapshot.len() < len {
        let chunk = raw::load_string_buffer(rdb).ok()?;
        let chunk = chunk.as_ref();
        if chunk.is_empty() || chunk.len() > len - snapshot.len() {
            return None;
        }
        snapshot.extend_from_slice(chunk);
    }
    // Every table on the engine's allocator, as for a new filter.
    let filter = Filter::load(CuckooFilter::builder().huge_pages(false), &snapshot).ok()?;
    let settings = settings.describing(&filter);
    Some(Entry::with_filter(filter, settings, deletes))
}

/// An AOF rewrite without the RDB preamble writes the filter as the `CF.LOADCHUNK` commands of
/// its snapshot, as `CF.SCANDUMP` cuts it. What a snapshot does not carry (the settings as
/// asked, the deletes) comes back as a loaded filter reports them.
unsafe extern "C" fn aof_rewrite(
    aof: *mut raw::RedisModuleIO,
    key: *mut raw::RedisModuleString,
    value: *mut c_void,
) {
    // SAFETY: the engine rewrites a live value of this type.
    let entry = unsafe { entry(value) };
    let snapshot = entry.filter.to_bytes();
    let mut end = 0;
    for chunk in snapshot.chunks(CHUNK_BYTES) {
        end += chunk.len();
        // SAFETY: the engine's API table is filled once at load and only read.
        let Some(emit) = (unsafe { raw::RedisModule_EmitAOF }) else { return };
        // SAFETY: the format "slb" takes the key string, a long long and a buffer with its
        // length, which follow in that order; the buffer outlives the call.
        unsafe {
            emit(
                aof,
                c"CF.LOADCHUNK".as_ptr(),
                c"slb".as_ptr(),
                key,
                (end + 1) as c_longlong,
                chunk.as_ptr().cast::<c_char>(),
                chunk.len(),
            );
        }
    }
}

unsafe extern "C" fn mem_usage(value: *const c_void) -> usize {
    // SAFETY: the engine asks about a live value of this type.
    let entry = unsafe { entry(value) };
    std::mem::size_of::<Entry>() + entry.filter.memory_usage()
}

/// `DEBUG DIGEST`: the snapshot's bytes (but for a windowed filter's time into its epoch,
/// which a replica's clock does not share) and the settings, so that a primary and its
/// replicas agree exactly when they hold the same filter.
unsafe extern "C" fn digest(md: *mut raw::RedisModuleDigest, value: *mut c_void) {
    // SAFETY: the engine digests a live value of this type.
    let entry = unsafe { entry(value) };
    let mut digest = Digest::new(md);
    digest.add_string_buffer(&entry.filter.digest_bytes());
    for field in settings_fields(entry) {
        digest.add_long_long(field as c_longlong);
    }
    digest.end_sequence();
}

/// `COPY`: a filter of its own, as the source is now.
unsafe extern "C" fn copy(
    _from: *mut raw::RedisModuleString,
    _to: *mut raw::RedisModuleString,
    value: *const c_void,
) -> *mut c_void {
    // SAFETY: the engine copies a live value of this type.
    into_raw(unsafe { entry(value) }.duplicate())
}
