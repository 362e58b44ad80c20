//! The named filters that every connection shares.
//!
//! The map from names to filters is an immutable `HashMap` behind an [`ArcSwap`]: a command
//! loads the current map without a lock, finds its filter and works on it through `&self`, as
//! the library intends. Creating or deleting a filter (`CF.RESERVE`, the first `CF.ADD` to a
//! new name, `DEL`) copies the map and swaps the copy in; those are rare next to the item
//! commands, and a copy of a map of `Arc`s is cheap.
//!
//! Memory is bounded: the tables of all filters together never exceed the configured maximum,
//! checked before a table is allocated.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use arc_swap::ArcSwap;
use lockfree_cuckoo::CuckooFilter;

/// The `CF.RESERVE` parameters a filter was created with, as the client gave them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Settings {
    /// The capacity asked for; the filter accepts at least this many distinct items.
    pub capacity: u64,
    /// `MAXITERATIONS`: kept and reported; the library's insert bounds its own search (a
    /// breadth-first search of at most five relocations), so it does not change behaviour.
    pub max_iterations: u64,
}

/// One named filter.
#[derive(Debug)]
pub struct Entry {
    /// The filter itself.
    pub filter: CuckooFilter,
    /// What it was created with.
    pub settings: Settings,
    /// Successful `CF.DEL`s, for `CF.INFO`'s "Number of items deleted" (a statistic: Relaxed,
    /// it orders nothing).
    deletes: AtomicU64,
}

impl Entry {
    /// A filter with these settings, or `None` if the table cannot be allocated.
    pub fn new(settings: Settings) -> Option<Self> {
        let capacity = usize::try_from(settings.capacity).ok()?;
        let filter = CuckooFilter::builder().capacity(capacity).try_build().ok()?;
        Some(Self::with_filter(filter, settings, 0))
    }

    /// An entry around an existing filter (one loaded from a save file).
    pub fn with_filter(filter: CuckooFilter, settings: Settings, deletes: u64) -> Self {
        Self { filter, settings, deletes: AtomicU64::new(deletes) }
    }

    /// How many `CF.DEL`s removed an item.
    pub fn deletes(&self) -> u64 {
        self.deletes.load(Ordering::Relaxed)
    }

    /// Counts one successful `CF.DEL`.
    pub fn count_delete(&self) {
        self.deletes.fetch_add(1, Ordering::Relaxed);
    }
}

/// Why a filter was not created.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CreateError {
    /// The name is taken (`CF.RESERVE` only; an implicit create uses the existing filter).
    Exists,
    /// The table would take the filters' memory over the configured maximum, or could not be
    /// allocated.
    OutOfMemory,
}

type Map = HashMap<Box<[u8]>, Arc<Entry>>;

/// The shared map of named filters.
#[derive(Debug)]
pub struct Store {
    map: ArcSwap<Map>,
    max_memory: usize,
    /// Bytes of all tables in the map, plus estimates for tables being built. Only the
    /// accounting reads it (Relaxed: a bound on a sum, not a publication).
    used: AtomicUsize,
}

impl Store {
    /// An empty store whose filters may take `max_memory` bytes in all.
    pub fn new(max_memory: usize) -> Self {
        Self { map: ArcSwap::from_pointee(Map::new()), max_memory, used: AtomicUsize::new(0) }
    }

    /// Runs `f` on the filter named `name`, or on `None` if there is none.
    pub fn with<R>(&self, name: &[u8], f: impl FnOnce(Option<&Entry>) -> R) -> R {
        let map = self.map.load();
        f(map.get(name).map(|entry| &**entry))
    }

    /// Runs `f` on the filter named `name`, creating it with `settings` first if there is none.
    ///
    /// # Errors
    ///
    /// [`CreateError::OutOfMemory`] when it had to be created and could not be.
    pub fn with_or_create<R>(
        &self,
        name: &[u8],
        settings: Settings,
        f: impl FnOnce(&Entry) -> R,
    ) -> Result<R, CreateError> {
        {
            let map = self.map.load();
            if let Some(entry) = map.get(name) {
                return Ok(f(entry));
            }
        }
        let entry = match self.create(name, settings) {
            Ok(entry) => entry,
            // Another connection created it meanwhile: use theirs, as if it had been first.
            Err(CreateError::Exists) => match self.map.load().get(name) {
                Some(entry) => Arc::clone(entry),
                None => return self.with_or_create(name, settings, f),
            },
            Err(e) => return Err(e),
        };
        Ok(f(&entry))
    }

    /// Creates an empty filter named `name`.
    ///
    /// # Errors
    ///
    /// [`CreateError::Exists`] if the name is taken, [`CreateError::OutOfMemory`] if the table
    /// does not fit.
    pub fn create(&self, name: &[u8], settings: Settings) -> Result<Arc<Entry>, CreateError> {
        if self.map.load().contains_key(name) {
            return Err(CreateError::Exists);
        }
        // A bound on the table's size before it exists: 2.2 bytes an item for large tables
        // (the library's sizing), and room for the small-table reserve and the filter's fixed
        // parts.
        let estimate = usize::try_from(settings.capacity).unwrap_or(usize::MAX).saturating_mul(11)
            / 5
            + (1 << 16);
        self.reserve(estimate)?;
        let Some(entry) = Entry::new(settings) else {
            self.release(estimate);
            return Err(CreateError::OutOfMemory);
        };
        let actual = entry.filter.memory_usage();
        self.used.fetch_add(actual, Ordering::Relaxed);
        self.release(estimate);
        self.insert(name, Arc::new(entry))
    }

    /// Adds a filter that already exists (loaded from a save file) under `name`.
    ///
    /// # Errors
    ///
    /// As [`create`](Self::create).
    pub fn adopt(&self, name: &[u8], entry: Entry) -> Result<Arc<Entry>, CreateError> {
        let bytes = entry.filter.memory_usage();
        self.reserve(bytes)?;
        self.insert(name, Arc::new(entry))
    }

    /// Puts `entry`, whose memory is already counted, in the map unless `name` is taken.
    fn insert(&self, name: &[u8], entry: Arc<Entry>) -> Result<Arc<Entry>, CreateError> {
        let mut taken = false;
        self.map.rcu(|map| {
            taken = map.contains_key(name);
            if taken {
                return Arc::clone(map);
            }
            let mut next = Map::clone(map);
            next.insert(name.into(), Arc::clone(&entry));
            Arc::new(next)
        });
        if taken {
            self.release(entry.filter.memory_usage());
            return Err(CreateError::Exists);
        }
        Ok(entry)
    }

    /// Deletes the named filters; returns how many existed.
    pub fn delete<'a>(&self, names: impl Iterator<Item = &'a [u8]> + Clone) -> usize {
        let mut removed = Vec::new();
        self.map.rcu(|map| {
            removed.clear();
            let mut next = Map::clone(map);
            for name in names.clone() {
                if let Some(entry) = next.remove(name) {
                    removed.push(entry);
                }
            }
            Arc::new(next)
        });
        for entry in &removed {
            self.release(entry.filter.memory_usage());
        }
        removed.len()
    }

    /// The filters as they are now, sorted by name (for `SAVE`).
    pub fn entries(&self) -> Vec<(Box<[u8]>, Arc<Entry>)> {
        let map = self.map.load();
        let mut all: Vec<_> = map.iter().map(|(k, v)| (k.clone(), Arc::clone(v))).collect();
        all.sort_by(|a, b| a.0.cmp(&b.0));
        all
    }

    /// How many of the names exist.
    pub fn count_existing<'a>(&self, names: impl Iterator<Item = &'a [u8]>) -> usize {
        let map = self.map.load();
        names.filter(|name| map.contains_key(*name)).count()
    }

    /// How many filters there are.
    pub fn len(&self) -> usize {
        self.map.load().len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes of all tables.
    pub fn used_memory(&self) -> usize {
        self.used.load(Ordering::Relaxed)
    }

    /// The configured maximum for [`used_memory`](Self::used_memory).
    pub fn max_memory(&self) -> usize {
        self.max_memory
    }

    fn reserve(&self, bytes: usize) -> Result<(), CreateError> {
        let mut used = self.used.load(Ordering::Relaxed);
        loop {
            let next = used.checked_add(bytes).filter(|&n| n <= self.max_memory);
            let Some(next) = next else { return Err(CreateError::OutOfMemory) };
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

#[cfg(test)]
mod tests {
    use super::*;

    const SMALL: Settings = Settings { capacity: 1000, max_iterations: 20 };

    #[test]
    fn create_use_delete() {
        let store = Store::new(1 << 30);
        store.create(b"a", SMALL).unwrap();
        assert_eq!(store.create(b"a", SMALL).unwrap_err(), CreateError::Exists);
        store.with(b"a", |e| e.unwrap().filter.insert(b"x".as_slice()).unwrap());
        let found = store.with_or_create(b"a", SMALL, |e| e.filter.contains(b"x".as_slice()));
        assert_eq!(found, Ok(true));
        assert!(store.used_memory() > 0);
        assert_eq!(store.delete([&b"a"[..], b"b"].into_iter()), 1);
        assert_eq!(store.used_memory(), 0);
        assert!(store.with(b"a", |e| e.is_none()));
    }

    #[test]
    fn memory_is_bounded_before_allocation() {
        let store = Store::new(1 << 20);
        let huge = Settings { capacity: u64::MAX, max_iterations: 20 };
        assert_eq!(store.create(b"h", huge).unwrap_err(), CreateError::OutOfMemory);
        let big = Settings { capacity: 10_000_000, max_iterations: 20 };
        assert_eq!(store.create(b"b", big).unwrap_err(), CreateError::OutOfMemory);
        assert_eq!(store.used_memory(), 0);
        assert!(store.is_empty());
        store.create(b"s", SMALL).unwrap();
    }

    #[test]
    fn racing_implicit_creates_share_one_filter() {
        let store = Arc::new(Store::new(1 << 30));
        let threads: Vec<_> = (0..4u32)
            .map(|t| {
                let store = Arc::clone(&store);
                std::thread::spawn(move || {
                    for i in 0..100u32 {
                        let name = format!("f{}", i % 10);
                        store
                            .with_or_create(name.as_bytes(), SMALL, |e| {
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
