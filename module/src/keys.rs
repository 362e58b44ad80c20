//! The engine's keyspace as the commands see it: keys opened through the module API, values
//! of the module's type.

use std::cell::Cell;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use lockfree_cuckoo::{BuildError, InsertError};
use lockfree_cuckoo_commands::{
    growth_bound, Defaults, Entry, KeyError, Keyspace, Settings, Transfers, DEFAULT_BUCKET_SIZE,
    DEFAULT_EXPANSION, DEFAULT_MAX_ITERATIONS,
};
use valkey_module::key::ValkeyKeyWritable;
use valkey_module::{Context, ContextFlags};

use crate::value::{register, CF_TYPE};

/// `cf-initial-size`: the capacity of a filter `CF.ADD` or `CF.INSERT` creates without one.
pub(crate) static INITIAL_SIZE: AtomicI64 = AtomicI64::new(1024);
/// `cf-bucket-size`, `cf-max-iterations`, `cf-expansion-factor`: RedisBloom's defaults for the
/// options a `CF.RESERVE` leaves out, and for the filters the adds create.
pub(crate) static BUCKET_SIZE: AtomicI64 = AtomicI64::new(DEFAULT_BUCKET_SIZE as i64);
pub(crate) static MAX_ITERATIONS: AtomicI64 = AtomicI64::new(DEFAULT_MAX_ITERATIONS as i64);
pub(crate) static EXPANSION_FACTOR: AtomicI64 = AtomicI64::new(DEFAULT_EXPANSION as i64);
/// `cf-max-expansions`: the most levels (RedisBloom's sub-filters) a growable filter grows to;
/// an insert that would need one more is refused with `Maximum expansions reached`.
pub(crate) static MAX_EXPANSIONS: AtomicI64 = AtomicI64::new(32);
/// `cf-max-memory`: the most bytes one growable filter grows to, and the most that
/// `CF.LOADCHUNK` transfers under way hold together.
pub(crate) static MAX_MEMORY: AtomicI64 = AtomicI64::new(DEFAULT_MAX_MEMORY);
/// `cf-max-memory`'s default, 64 MiB: what one key of an engine that many applications share
/// can take without asking (a growable filter from 1024 holds about 30 million items in it). An engine's
/// keys share one `maxmemory`, and any client that may write one key could otherwise grow it
/// into gigabytes; a larger filter is a choice, made with `CONFIG SET` or with `CF.RESERVE` of
/// a fixed filter (`EXPANSION 0`), which takes what its capacity asks whatever this says.
pub(crate) const DEFAULT_MAX_MEMORY: i64 = 64 << 20;

fn max_memory() -> usize {
    usize::try_from(MAX_MEMORY.load(Ordering::Relaxed)).unwrap_or(usize::MAX)
}

/// The keys of the database the command runs in.
pub(crate) struct Keys<'c> {
    pub(crate) ctx: &'c Context,
    /// Whether the command may change the filters it reads: their keys are then opened for
    /// writing, so that the engine sees them modified (`WATCH`, client-side caching).
    pub(crate) write: bool,
    /// Set when the command created an empty filter (`CF.RESERVE`, or an add to a missing
    /// key), which is replicated with its hasher's key.
    pub(crate) created: Cell<bool>,
}

impl<'c> Keys<'c> {
    pub(crate) fn new(ctx: &'c Context, write: bool) -> Self {
        Self { ctx, write, created: Cell::new(false) }
    }
}

impl Keys<'_> {
    fn writable(&self, key: &[u8]) -> ValkeyKeyWritable {
        self.ctx.open_key_writable(&self.ctx.create_string(key))
    }

    /// Puts `entry` at the empty key `key`, and returns it as the key now holds it.
    fn store<'k>(&self, key: &'k ValkeyKeyWritable, entry: Entry) -> Result<&'k Entry, KeyError> {
        key.set_value(&CF_TYPE, entry).map_err(|_| KeyError::WrongType)?;
        let stored = key.get_value::<Entry>(&CF_TYPE).ok().flatten().ok_or(KeyError::WrongType)?;
        register(stored);
        Ok(stored)
    }

    /// The key `key` opened for writing, if it holds no value.
    fn empty(&self, key: &[u8]) -> Result<ValkeyKeyWritable, KeyError> {
        let writable = self.writable(key);
        match writable.get_value::<Entry>(&CF_TYPE) {
            Err(_) => Err(KeyError::WrongType),
            Ok(Some(_)) => Err(KeyError::Exists),
            Ok(None) => Ok(writable),
        }
    }
}

/// Refuses a filter whose first table would take the engine's `used_memory` past its
/// `maxmemory`, before allocating it: the engine checks its limit before a command runs, not
/// against what the command then allocates, so `CF.RESERVE x 100000000` under `maxmemory 50mb`
/// would otherwise take 220 MB and leave every later write refused. No eviction policy makes
/// room for it: a filter never evicts other keys at its creation. Filters the AOF or a primary
/// creates exist already, and are taken whatever their size.
fn check_max_memory(ctx: &Context, settings: &Settings) -> Result<(), KeyError> {
    if ctx.get_flags().intersects(ContextFlags::LOADING | ContextFlags::REPLICATED) {
        return Ok(());
    }
    // SAFETY: the engine's API table is filled at load and only read after; a function the
    // engine lacks is None.
    let ratio = unsafe { valkey_module::raw::RedisModule_GetUsedMemoryRatio };
    // 0 without a `maxmemory`: nothing to check, and no INFO to build.
    // SAFETY: a plain query of the engine.
    if ratio.is_none_or(|ratio| unsafe { ratio() } == 0.0) {
        return Ok(());
    }
    let info = ctx.server_info("memory");
    let field = |name: &str| info.field(name)?.to_string_lossy().parse::<u64>().ok();
    let (Some(max), Some(used)) = (field("maxmemory"), field("used_memory")) else {
        return Ok(());
    };
    let needed = u64::try_from(settings.first_table_bound()).unwrap_or(u64::MAX);
    if max > 0 && used.saturating_add(needed) > max {
        return Err(KeyError::OverMaxMemory);
    }
    Ok(())
}

/// Whether the command comes from the AOF being loaded or from the primary: its filters exist
/// already, and are taken whatever their size.
fn trusted(ctx: &Context) -> bool {
    ctx.get_flags().intersects(ContextFlags::LOADING | ContextFlags::REPLICATED)
}

/// The bytes left under the engine's `maxmemory`, or `None` without one. The ratio is the
/// engine's own cheap query, made for every insert; `maxmemory` itself is read from `INFO` at
/// most every 100 ms (a `CONFIG SET maxmemory` applies within that).
fn headroom(ctx: &Context) -> Option<usize> {
    // SAFETY: the engine's API table is filled at load and only read after; a function the
    // engine lacks is None.
    let ratio = unsafe { valkey_module::raw::RedisModule_GetUsedMemoryRatio }?;
    // SAFETY: a plain query of the engine.
    let ratio = f64::from(unsafe { ratio() });
    if ratio == 0.0 {
        return None;
    }
    static MAXMEMORY: Mutex<Option<(Instant, u64)>> = Mutex::new(None);
    let mut cached = MAXMEMORY.lock().unwrap_or_else(PoisonError::into_inner);
    let max = match *cached {
        Some((read, max)) if read.elapsed() < Duration::from_millis(100) => max,
        _ => {
            let info = ctx.server_info("memory");
            let max = info.field("maxmemory")?.to_string_lossy().parse::<u64>().ok()?;
            *cached = Some((Instant::now(), max));
            max
        }
    };
    Some((max as f64 * (1.0 - ratio)).max(0.0) as usize)
}

fn build(settings: &Settings) -> Result<Entry, KeyError> {
    // Every table on the engine's allocator, so that `used_memory` and `maxmemory` count it.
    match Entry::new(*settings, max_memory(), false) {
        // A growable filter whose first table alone is past `cf-max-memory` was asked for by
        // its capacity, as a fixed one of that capacity may be: it gets that table, and grows
        // no further.
        Err(BuildError::CeilingBelowCapacity { setting: "max_memory", initial, .. }) => {
            Entry::new(*settings, initial, false)
        }
        built => built,
    }
    .map_err(|_| KeyError::OutOfMemory)
}

impl Keyspace for Keys<'_> {
    fn read<R>(&self, key: &[u8], f: impl FnOnce(Option<&Entry>) -> R) -> Result<R, KeyError> {
        let name = self.ctx.create_string(key);
        if self.write {
            let key = self.ctx.open_key_writable(&name);
            let entry = key.get_value::<Entry>(&CF_TYPE).map_err(|_| KeyError::WrongType)?;
            return Ok(f(entry.map(|entry| &*entry)));
        }
        let key = self.ctx.open_key(&name);
        let entry = key.get_value::<Entry>(&CF_TYPE).map_err(|_| KeyError::WrongType)?;
        Ok(f(entry))
    }

    fn read_or_create<R>(
        &self,
        key: &[u8],
        settings: &Settings,
        f: impl FnOnce(&Entry) -> R,
    ) -> Result<R, KeyError> {
        let writable = self.writable(key);
        let found = writable.get_value::<Entry>(&CF_TYPE).map_err(|_| KeyError::WrongType)?;
        match found {
            Some(entry) => Ok(f(entry)),
            None => {
                check_max_memory(self.ctx, settings)?;
                let entry = self.store(&writable, build(settings)?)?;
                self.created.set(true);
                Ok(f(entry))
            }
        }
    }

    fn create(&self, key: &[u8], settings: &Settings) -> Result<(), KeyError> {
        let writable = self.empty(key)?;
        check_max_memory(self.ctx, settings)?;
        self.store(&writable, build(settings)?)?;
        self.created.set(true);
        Ok(())
    }

    fn adopt(&self, key: &[u8], entry: Entry) -> Result<(), KeyError> {
        // A client's snapshot of a growable filter without a byte ceiling could grow without
        // bound (this module never builds one); the AOF's and a primary's exist already.
        let unbounded = entry.filter.is_growable() && entry.filter.max_memory().is_none();
        if unbounded && !trusted(self.ctx) {
            return Err(KeyError::OutOfMemory);
        }
        let writable = self.empty(key)?;
        self.store(&writable, entry).map(drop)
    }

    fn transfers(&self) -> &Transfers {
        static LOADS: OnceLock<Transfers> = OnceLock::new();
        let loads = LOADS.get_or_init(|| Transfers::new(max_memory(), false));
        // `CONFIG SET cuckoo.cf-max-memory` applies to the next chunk. The bound is for
        // clients: the chunks of the AOF being loaded and those the primary sends carry filters
        // that exist already (which may be larger: a fixed filter's size is its capacity's),
        // and refusing them would lose those filters.
        loads.set_limit(if trusted(self.ctx) { usize::MAX } else { max_memory() });
        loads
    }

    fn insert(&self, _key: &[u8], entry: &Entry, item: &[u8]) -> Result<(), InsertError> {
        // The engine runs one command at a time: the limit in force is set before each insert,
        // so `CONFIG SET cuckoo.cf-max-expansions` applies to every filter from its next insert.
        let filter = &entry.filter;
        let mut limit = usize::try_from(MAX_EXPANSIONS.load(Ordering::Relaxed)).unwrap_or(1);
        // Near `maxmemory`, a filter may not add a level that could pass it: its levels are
        // held where they are, and an insert that needs another is refused as a full filter's.
        if filter.is_growable()
            && !trusted(self.ctx)
            && headroom(self.ctx)
                .is_some_and(|room| room < growth_bound(filter.memory_usage(), usize::MAX))
        {
            limit = limit.min(filter.stats().levels);
        }
        if filter.max_levels() != limit.min(32) {
            filter.set_max_levels(limit);
        }
        filter.insert(item)
    }

    fn follows_primary(&self) -> bool {
        trusted(self.ctx)
    }

    fn defaults(&self) -> Defaults {
        // The configurations' ranges (`lib.rs`) make the conversions exact; a value out of
        // range keeps RedisBloom's default.
        let get = |config: &AtomicI64| config.load(Ordering::Relaxed);
        let r = Defaults::REDISBLOOM;
        Defaults {
            capacity: u64::try_from(get(&INITIAL_SIZE)).unwrap_or(r.capacity),
            bucket_size: u8::try_from(get(&BUCKET_SIZE)).unwrap_or(r.bucket_size),
            max_iterations: u16::try_from(get(&MAX_ITERATIONS)).unwrap_or(r.max_iterations),
            expansion: u16::try_from(get(&EXPANSION_FACTOR)).unwrap_or(r.expansion),
        }
    }
}
