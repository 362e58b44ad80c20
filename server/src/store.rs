//! The named filters that every connection shares.
//!
//! The map from names to filters is a lock-free concurrent hash map: a command finds its
//! filter without a lock and works on it through `&self`, as the library intends, and creating
//! or deleting a filter costs the same however many exist.
//!
//! Memory is bounded: the tables of all filters as they were created (or loaded) never exceed
//! the configured maximum, checked before a table is allocated; a growable filter grows up to
//! that maximum on its own, and what its growth adds is not counted against the others.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use lockfree_cuckoo_commands::{Entry, KeyError, Keyspace, Loads, Settings};

type Map = papaya::HashMap<Box<[u8]>, Held>;

/// A filter in the map, with the bytes counted for it when it was added.
#[derive(Debug)]
struct Held {
    entry: Arc<Entry>,
    bytes: usize,
}

/// The shared map of named filters.
#[derive(Debug)]
pub struct Store {
    map: Map,
    max_memory: usize,
    /// Capacity of a filter that `CF.ADD` or `CF.INSERT` creates without one.
    default_capacity: u64,
    /// Bytes of all tables in the map when they were added, plus estimates for tables being
    /// built. Only the accounting reads it (Relaxed: a bound on a sum, not a publication).
    used: AtomicUsize,
    /// `CF.LOADCHUNK` transfers under way, within the same maximum.
    loads: Loads,
}

impl Store {
    /// An empty store whose filters may take `max_memory` bytes in all, creating filters of
    /// `default_capacity` for `CF.ADD` to a new name.
    pub fn new(max_memory: usize, default_capacity: u64) -> Self {
        Self {
            map: Map::new(),
            max_memory,
            default_capacity,
            used: AtomicUsize::new(0),
            loads: Loads::new(max_memory, true),
        }
    }

    /// Runs `f` on the filter named `name`, or on `None` if there is none.
    pub fn with<R>(&self, name: &[u8], f: impl FnOnce(Option<&Entry>) -> R) -> R {
        let map = self.map.pin();
        f(map.get(name).map(|held| &*held.entry))
    }

    /// Adds `entry` (new, or loaded from a save file) under `name`, its memory counted.
    ///
    /// # Errors
    ///
    /// [`KeyError::Exists`] if the name is taken, [`KeyError::OutOfMemory`] if it does not fit.
    pub fn put(&self, name: &[u8], entry: Entry) -> Result<Arc<Entry>, KeyError> {
        let bytes = entry.filter.memory_usage();
        self.reserve(bytes)?;
        let entry = Arc::new(entry);
        let held = Held { entry: Arc::clone(&entry), bytes };
        match self.map.pin().try_insert(name.into(), held) {
            Ok(_) => Ok(entry),
            Err(_) => {
                self.release(bytes);
                Err(KeyError::Exists)
            }
        }
    }

    /// Builds an empty filter with `settings` within the memory maximum.
    fn build(&self, settings: &Settings) -> Result<Entry, KeyError> {
        let estimate = settings.first_table_bound();
        self.reserve(estimate)?;
        let built = Entry::new(*settings, self.max_memory, true);
        self.release(estimate);
        built.map_err(|_| KeyError::OutOfMemory)
    }

    /// Deletes the named filters; returns how many existed.
    pub fn delete<'a>(&self, names: impl Iterator<Item = &'a [u8]>) -> usize {
        let map = self.map.pin();
        let mut removed = 0;
        for name in names {
            if let Some(held) = map.remove(name) {
                self.release(held.bytes);
                removed += 1;
            }
        }
        removed
    }

    /// Deletes every filter and every transfer under way (`FLUSHDB`, `FLUSHALL`).
    pub fn clear(&self) {
        let map = self.map.pin();
        for name in map.keys() {
            if let Some(held) = map.remove(name) {
                self.release(held.bytes);
            }
        }
        self.loads.clear();
    }

    /// The filters as they are now, sorted by name (for `SAVE`).
    pub fn entries(&self) -> Vec<(Box<[u8]>, Arc<Entry>)> {
        let map = self.map.pin();
        let mut all: Vec<_> = map.iter().map(|(k, v)| (k.clone(), Arc::clone(&v.entry))).collect();
        all.sort_by(|a, b| a.0.cmp(&b.0));
        all
    }

    /// How many of the names exist.
    pub fn count_existing<'a>(&self, names: impl Iterator<Item = &'a [u8]>) -> usize {
        let map = self.map.pin();
        names.filter(|name| map.contains_key(*name)).count()
    }

    /// How many filters there are.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes of all tables, as counted when each filter was added.
    pub fn used_memory(&self) -> usize {
        self.used.load(Ordering::Relaxed)
    }

    /// The configured maximum for [`used_memory`](Self::used_memory).
    pub fn max_memory(&self) -> usize {
        self.max_memory
    }

    fn reserve(&self, bytes: usize) -> Result<(), KeyError> {
        let mut used = self.used.load(Ordering::Relaxed);
        loop {
            let next = used.checked_add(bytes).filter(|&n| n <= self.max_memory);
            let Some(next) = next else { return Err(KeyError::OutOfMemory) };
            match self.used.compare_exchange_weak(used, next, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => return Ok(()),
                Err(now) => used = now,
            }
        }
    }

    fn release(&self, bytes: usize) {
        self.used.fetch_sub(bytes, Ordering::Relaxed);
    }
}

impl Keyspace for Store {
    fn read<R>(&self, key: &[u8], f: impl FnOnce(Option<&Entry>) -> R) -> Result<R, KeyError> {
        Ok(self.with(key, f))
    }

    fn read_or_create<R>(
        &self,
        key: &[u8],
        settings: &Settings,
        f: impl FnOnce(&Entry) -> R,
    ) -> Result<R, KeyError> {
        let map = self.map.pin();
        if let Some(held) = map.get(key) {
            return Ok(f(&held.entry));
        }
        match self.build(settings).and_then(|entry| self.put(key, entry)) {
            Ok(entry) => Ok(f(&entry)),
            // Another connection created it meanwhile: use theirs, as if it had been first.
            Err(KeyError::Exists) => match map.get(key) {
                Some(held) => Ok(f(&held.entry)),
                None => self.read_or_create(key, settings, f),
            },
            Err(e) => Err(e),
        }
    }

    fn create(&self, key: &[u8], settings: &Settings) -> Result<(), KeyError> {
        if self.map.pin().contains_key(key) {
            return Err(KeyError::Exists);
        }
        self.put(key, self.build(settings)?).map(drop)
    }

    fn adopt(&self, key: &[u8], entry: Entry) -> Result<(), KeyError> {
        self.put(key, entry).map(drop)
    }

    fn loads(&self) -> &Loads {
        &self.loads
    }

    fn default_capacity(&self) -> u64 {
        self.default_capacity
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMALL: Settings = Settings::with_capacity(1000);

    #[test]
    fn create_use_delete() {
        let store = Store::new(1 << 30, 1024);
        store.create(b"a", &SMALL).unwrap();
        assert_eq!(store.create(b"a", &SMALL).unwrap_err(), KeyError::Exists);
        store.with(b"a", |e| e.unwrap().filter.insert(b"x".as_slice()).unwrap());
        let found = store.read_or_create(b"a", &SMALL, |e| e.filter.contains(b"x".as_slice()));
        assert_eq!(found, Ok(true));
        assert!(store.used_memory() > 0);
        assert_eq!(store.delete([&b"a"[..], b"b"].into_iter()), 1);
        assert_eq!(store.used_memory(), 0);
        assert!(store.with(b"a", |e| e.is_none()));
    }

    #[test]
    fn memory_is_bounded_before_allocation() {
        let store = Store::new(1 << 20, 1024);
        let huge = Settings::with_capacity(u64::MAX);
        assert_eq!(store.create(b"h", &huge).unwrap_err(), KeyError::OutOfMemory);
        let big = Settings::with_capacity(10_000_000);
        assert_eq!(store.create(b"b", &big).unwrap_err(), KeyError::OutOfMemory);
        assert_eq!(store.used_memory(), 0);
        assert!(store.is_empty());
        store.create(b"s", &SMALL).unwrap();
        store.clear();
        assert_eq!(store.used_memory(), 0);
        assert!(store.is_empty());
    }

    #[test]
    fn racing_implicit_creates_share_one_filter() {
        let store = Arc::new(Store::new(1 << 30, 1024));
        let threads: Vec<_> = (0..4u32)
            .map(|t| {
                let store = Arc::clone(&store);
                std::thread::spawn(move || {
                    for i in 0..100u32 {
                        let name = format!("f{}", i % 10);
                        store
                            .read_or_create(name.as_bytes(), &SMALL, |e| {
                                e.filter.insert(&(t, i)).unwrap()
                            })
                            .unwrap();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(store.len(), 10);
        let items: usize = store.entries().iter().map(|(_, e)| e.filter.len()).sum();
        assert_eq!(items, 400, "an insert went to a filter that lost the race");
        let tables: usize = store.entries().iter().map(|(_, e)| e.filter.memory_usage()).sum();
        assert_eq!(store.used_memory(), tables);
    }
}
