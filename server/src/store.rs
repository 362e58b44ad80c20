//! The named filters that every connection shares, and the bound on their memory.
//!
//! The map from names to filters is a lock-free concurrent hash map: a command finds its
//! filter without a lock and works on it through `&self`, as the library intends, and creating
//! or deleting a filter costs the same however many exist.
//!
//! # Memory
//!
//! `--max-memory` bounds the sum of every filter's
//! [`memory_usage`](lockfree_cuckoo::CuckooFilter::memory_usage), growth included, and
//! [`used_memory`](Store::used_memory) is that sum, exact whenever no insert is running:
//!
//! - **Creating or loading** a filter charges its bytes, refused before a table is allocated
//!   when they do not fit (an estimate of the first table is reserved while it is built).
//! - **A fixed filter** (`EXPANSION 0`) never changes its memory: its inserts and removes run
//!   with no lock and no accounting.
//! - **A growable filter** grows only inside an insert, where the library decides, so each
//!   insert into one first reserves the most that insert can add ([`growth_bound`]), then runs,
//!   then charges what the filter actually grew and gives the rest back. When the reservation
//!   does not fit in what is left of the maximum, the insert is refused as a full filter's (even
//!   if it would have found room in the filter's levels: only the library knows, inside the
//!   insert, whether it grows). Inserts into the same growable filter run one at a time (a
//!   mutex per filter), since an insert makes at most one growth only when no other insert
//!   runs beside it: with several at once, a level that one of them added may be filled by the
//!   others and grown past in turn. Lookups, removes and inserts into other filters go on
//!   meanwhile.
//! - **Removes** never add memory here: every growable filter the store holds has a byte
//!   ceiling (this server builds them with `--max-memory` as theirs, and refuses to load one
//!   without), and the library adds room for pending removals only to filters without one.
//! - **Deleting** a filter gives back its bytes as last charged, under the same mutex, so that
//!   an insert running on it then either finished and was charged, or finds it deleted and is
//!   refused.
//!
//! - **Names** are charged with their filter (at most [`MAX_KEY_BYTES`] each).
//!
//! Tables being built, a growth's reservation, and the bytes of unfinished `CF.LOADCHUNK`
//! transfers ([`Transfers`]) count against the same maximum (one [`Budget`]) but not in
//! `used_memory`.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use lockfree_cuckoo::InsertError;
use lockfree_cuckoo_commands::{
    growth_bound, Budget, Defaults, Entry, Filter, KeyError, Keyspace, Settings, Transfers,
};

/// The longest filter name, in bytes: past any name a client means (Redis Cluster's are a few
/// hundred bytes at most), and a bound on what a name costs beside its filter.
pub const MAX_KEY_BYTES: usize = 64 << 10;

type Map = papaya::HashMap<Box<[u8]>, Held>;

/// How far a filter's memory may go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Growth {
    /// A fixed filter: its memory never changes.
    Fixed,
    /// A growable filter whose `memory_usage` the library keeps within this many bytes (its
    /// `Builder::max_memory`).
    UpTo(usize),
}

impl Growth {
    /// The growth of `filter`; `None` for a growable filter without a byte ceiling, which the
    /// store does not hold.
    pub fn of_filter(filter: &Filter) -> Option<Self> {
        if !filter.is_growable() {
            return Some(Self::Fixed);
        }
        filter.max_memory().map(Self::UpTo)
    }
}

/// A filter in the map, with what the accounting keeps for it.
#[derive(Debug)]
struct Held {
    entry: Arc<Entry>,
    growth: Growth,
    /// The bytes of its name, charged with it.
    name_bytes: usize,
    /// The bytes charged for the filter. Taken by every insert into a growable filter, and by
    /// the deletion.
    charge: Mutex<Charge>,
}

#[derive(Debug)]
struct Charge {
    bytes: usize,
    /// The filter left the map and its bytes were given back: it may not grow any more.
    deleted: bool,
}

impl Held {
    fn charge(&self) -> std::sync::MutexGuard<'_, Charge> {
        // Nothing panics while the lock is held; a poisoned lock still holds a sound count.
        self.charge.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The shared map of named filters.
#[derive(Debug)]
pub struct Store {
    map: Map,
    /// `--max-memory`: the filters, their names, and the transfers under way.
    budget: Arc<Budget>,
    /// Capacity of a filter that `CF.ADD` or `CF.INSERT` creates without one.
    default_capacity: u64,
    /// Bytes charged for the filters in the map: their `memory_usage` and names, summed.
    /// Relaxed, as every count here: a sum, it publishes nothing.
    used: AtomicUsize,
    /// `CF.SCANDUMP` and `CF.LOADCHUNK` transfers under way, the loads within the budget.
    transfers: Transfers,
}

impl Store {
    /// An empty store whose filters may take `max_memory` bytes in all, growth included,
    /// creating filters of `default_capacity` for `CF.ADD` to a new name.
    pub fn new(max_memory: usize, default_capacity: u64) -> Self {
        let budget = Arc::new(Budget::new(max_memory));
        Self {
            map: Map::new(),
            transfers: Transfers::with_budget(Arc::clone(&budget), true),
            budget,
            default_capacity,
            used: AtomicUsize::new(0),
        }
    }

    /// Runs `f` on the filter named `name`, or on `None` if there is none.
    pub fn with<R>(&self, name: &[u8], f: impl FnOnce(Option<&Entry>) -> R) -> R {
        let map = self.map.pin();
        f(map.get(name).map(|held| &*held.entry))
    }

    /// Adds `entry` (new, or loaded from a save file) under `name`, its memory counted;
    /// `growth` says how far it may grow.
    ///
    /// # Errors
    ///
    /// [`KeyError::Exists`] if the name is taken, [`KeyError::NameTooLong`] if it is longer
    /// than [`MAX_KEY_BYTES`], [`KeyError::OutOfMemory`] if it does not fit.
    pub fn put(&self, name: &[u8], entry: Entry, growth: Growth) -> Result<Arc<Entry>, KeyError> {
        check_name(name)?;
        let bytes = entry.filter.memory_usage();
        self.reserve(bytes + name.len())?;
        let entry = Arc::new(entry);
        let charge = Mutex::new(Charge { bytes, deleted: false });
        let held = Held { entry: Arc::clone(&entry), growth, name_bytes: name.len(), charge };
        match self.map.pin().try_insert(name.into(), held) {
            Ok(_) => {
                self.used.fetch_add(bytes + name.len(), Ordering::Relaxed);
                Ok(entry)
            }
            Err(_) => {
                self.release(bytes + name.len());
                Err(KeyError::Exists)
            }
        }
    }

    /// Builds an empty filter with `settings` within the memory maximum, and adds it.
    fn build_and_put(&self, name: &[u8], settings: &Settings) -> Result<Arc<Entry>, KeyError> {
        check_name(name)?;
        let estimate = settings.first_table_bound();
        self.reserve(estimate)?;
        // The library keeps one filter within the whole maximum; the reservations keep all of
        // them within it together.
        let built = Entry::new(*settings, self.budget.max(), true);
        self.release(estimate);
        let entry = built.map_err(|_| KeyError::OutOfMemory)?;
        let growth = if entry.filter.is_growable() {
            Growth::UpTo(self.budget.max())
        } else {
            Growth::Fixed
        };
        self.put(name, entry, growth)
    }

    /// Deletes the named filters; returns how many existed.
    pub fn delete<'a>(&self, names: impl Iterator<Item = &'a [u8]>) -> usize {
        let map = self.map.pin();
        let mut removed = 0;
        for name in names {
            if let Some(held) = map.remove(name) {
                self.forget(held);
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
                self.forget(held);
            }
        }
        self.transfers.clear();
    }

    /// Gives back the bytes of a filter that left the map.
    fn forget(&self, held: &Held) {
        let mut charge = held.charge();
        charge.deleted = true;
        let bytes = std::mem::take(&mut charge.bytes) + held.name_bytes;
        self.used.fetch_sub(bytes, Ordering::Relaxed);
        self.release(bytes);
    }

    /// The filters as they are now, sorted by name (for `SAVE`).
    pub fn entries(&self) -> Vec<(Box<[u8]>, Arc<Entry>)> {
        let map = self.map.pin();
        let mut all: Vec<_> = map.iter().map(|(k, v)| (k.clone(), Arc::clone(&v.entry))).collect();
        all.sort_by(|a, b| a.0.cmp(&b.0));
        all
    }

    /// Does the expiry work that is due in every filter whose items expire
    /// ([`Filter::tick`]): their epochs start on time whether or not anyone writes them.
    pub fn tick(&self) {
        for held in self.map.pin().values() {
            held.entry.filter.tick();
        }
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

    /// Bytes of all filters, growth included: the sum of their `memory_usage`, exact whenever
    /// no insert is running.
    pub fn used_memory(&self) -> usize {
        self.used.load(Ordering::Relaxed)
    }

    /// The configured maximum for [`used_memory`](Self::used_memory).
    pub fn max_memory(&self) -> usize {
        self.budget.max()
    }

    /// Bytes the unfinished `CF.LOADCHUNK` transfers hold (within the maximum, beside
    /// [`used_memory`](Self::used_memory)).
    pub fn transfer_bytes(&self) -> usize {
        self.transfers.held_bytes()
    }

    fn reserve(&self, bytes: usize) -> Result<(), KeyError> {
        self.budget.reserve(bytes).then_some(()).ok_or(KeyError::OutOfMemory)
    }

    fn release(&self, bytes: usize) {
        self.budget.release(bytes);
    }

    /// An insert into the growable filter `held`, within the memory maximum (see the module
    /// documentation).
    fn insert_growable(&self, held: &Held, item: &[u8], ceiling: usize) -> Result<(), InsertError> {
        let mut charge = held.charge();
        if charge.deleted {
            return Err(InsertError::Full);
        }
        let worst = growth_bound(charge.bytes, ceiling);
        if self.reserve(worst).is_err() {
            return Err(InsertError::Full);
        }
        let inserted = held.entry.filter.insert(item);
        // Levels are only added: the memory never shrinks while the filter is in the map.
        let grown = held.entry.filter.memory_usage().saturating_sub(charge.bytes);
        charge.bytes += grown;
        self.used.fetch_add(grown, Ordering::Relaxed);
        // The reservation becomes the growth. A growth past it would mean the bound is wrong:
        // it is charged all the same, so that `used_memory` stays exact.
        debug_assert!(grown <= worst, "a growth of {grown} bytes passed its bound of {worst}");
        if grown <= worst {
            self.release(worst - grown);
        } else {
            self.budget.force(grown - worst);
        }
        inserted
    }
}

/// Refuses a name longer than [`MAX_KEY_BYTES`].
fn check_name(name: &[u8]) -> Result<(), KeyError> {
    if name.len() > MAX_KEY_BYTES {
        return Err(KeyError::NameTooLong { limit: MAX_KEY_BYTES });
    }
    Ok(())
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
        match self.build_and_put(key, settings) {
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
        self.build_and_put(key, settings).map(drop)
    }

    /// A filter from `CF.LOADCHUNK`; a growable one without a byte ceiling is refused.
    fn adopt(&self, key: &[u8], entry: Entry) -> Result<(), KeyError> {
        let growth = Growth::of_filter(&entry.filter).ok_or(KeyError::OutOfMemory)?;
        self.put(key, entry, growth).map(drop)
    }

    fn transfers(&self) -> &Transfers {
        &self.transfers
    }

    fn defaults(&self) -> Defaults {
        Defaults { capacity: self.default_capacity, ..Defaults::REDISBLOOM }
    }

    fn insert(&self, key: &[u8], entry: &Entry, item: &[u8]) -> Result<(), InsertError> {
        if !entry.filter.is_growable() {
            return entry.filter.insert(item);
        }
        let map = self.map.pin();
        match map.get(key) {
            Some(held) if std::ptr::eq(&*held.entry, entry) => match held.growth {
                Growth::UpTo(ceiling) => self.insert_growable(held, item, ceiling),
                Growth::Fixed => entry.filter.insert(item),
            },
            // Deleted (or replaced) while the command ran: its bytes are no longer counted, so
            // it may not grow.
            _ => Err(InsertError::Full),
        }
    }
}

#[cfg(test)]
mod tests {
    use lockfree_cuckoo::CuckooFilter;

    use super::*;

    const SMALL: Settings = Settings::with_capacity(1000);

    /// What `used_memory` should be: every filter's bytes and its name's.
    fn sizes(store: &Store) -> usize {
        store.entries().iter().map(|(name, e)| e.filter.memory_usage() + name.len()).sum()
    }

    #[test]
    fn create_use_delete() {
        let store = Store::new(1 << 30, 1024);
        store.create(b"a", &SMALL).unwrap();
        assert_eq!(store.create(b"a", &SMALL).unwrap_err(), KeyError::Exists);
        store.with(b"a", |e| store.insert(b"a", e.unwrap(), b"x").unwrap());
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
        assert_eq!(store.budget.reserved(), 0);
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
                        let item = format!("{t}.{i}");
                        store
                            .read_or_create(name.as_bytes(), &SMALL, |e| {
                                store.insert(name.as_bytes(), e, item.as_bytes()).unwrap()
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
        assert_eq!(store.used_memory(), sizes(&store));
    }

    /// Each growth of a filter inserted into alone stays within `growth_bound`, at sizes from
    /// a one-bucket filter to one whose first level has a million buckets.
    #[test]
    fn every_growth_is_within_its_bound() {
        for capacity in [0u64, 4, 100, 1024, 10_000, 100_000, 1_000_000] {
            let settings = Settings::with_capacity(capacity);
            let filter = settings.build(usize::MAX, false).unwrap();
            let mut bytes = filter.memory_usage();
            let mut growths = 0;
            let mut item = 0u64;
            while growths < if capacity < 100_000 { 4 } else { 1 } {
                item += 1;
                filter.insert(&item).unwrap();
                let now = filter.memory_usage();
                if now != bytes {
                    let bound = growth_bound(bytes, usize::MAX);
                    assert!(now - bytes <= bound, "{capacity}: {bytes} grew by {}", now - bytes);
                    (bytes, growths) = (now, growths + 1);
                }
            }
        }
    }

    #[test]
    fn growth_is_counted_and_bounded() {
        let max = 4 << 20;
        let store = Arc::new(Store::new(max, 64));
        let threads: Vec<_> = (0..4u32)
            .map(|t| {
                let store = Arc::clone(&store);
                std::thread::spawn(move || {
                    let mut refused = 0;
                    for i in 0..400_000u32 {
                        // A filter of each thread's own, and one all of them share.
                        let name = if i % 3 == 0 { "shared".into() } else { format!("own{t}") };
                        let item = format!("{t}.{i}");
                        let added = store.read_or_create(name.as_bytes(), &SMALL, |e| {
                            store.insert(name.as_bytes(), e, item.as_bytes())
                        });
                        if added != Ok(Ok(())) {
                            refused += 1;
                            if refused > 1000 {
                                break;
                            }
                        }
                        assert!(store.budget.reserved() <= max);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let used = store.used_memory();
        assert_eq!(used, sizes(&store));
        assert!(used <= max, "{used} bytes over {max}");
        // The filters grew well past their first tables before they were refused.
        assert!(used > max / 4, "{used} bytes of {max}");
        assert_eq!(store.budget.reserved(), used);
        store.clear();
        assert_eq!((store.used_memory(), store.budget.reserved()), (0, 0));
    }

    #[test]
    fn a_deleted_filter_does_not_grow() {
        let store = Store::new(1 << 30, 4);
        store.create(b"f", &Settings::with_capacity(4)).unwrap();
        store.with(b"f", |e| {
            let e = e.unwrap();
            assert_eq!(store.delete([&b"f"[..]].into_iter()), 1);
            assert_eq!(store.insert(b"f", e, b"x"), Err(InsertError::Full));
        });
        assert_eq!(store.used_memory(), 0);
    }

    #[test]
    fn names_are_bounded_and_charged() {
        let store = Store::new(1 << 30, 1024);
        let long = vec![b'n'; MAX_KEY_BYTES + 1];
        let refused = KeyError::NameTooLong { limit: MAX_KEY_BYTES };
        assert_eq!(store.create(&long, &SMALL), Err(refused.clone()));
        let entry = Entry::new(SMALL, 1 << 20, true).unwrap();
        assert_eq!(store.put(&long, entry, Growth::Fixed).unwrap_err(), refused);
        assert_eq!(store.read_or_create(&long, &SMALL, |_| ()), Err(refused));
        let longest = &long[..MAX_KEY_BYTES];
        store.create(longest, &SMALL).unwrap();
        assert_eq!(store.used_memory(), sizes(&store));
        assert!(store.used_memory() > MAX_KEY_BYTES);
        assert_eq!(store.delete([longest].into_iter()), 1);
        assert_eq!((store.used_memory(), store.budget.reserved()), (0, 0));
    }

    #[test]
    fn unfinished_loads_count_against_the_maximum() {
        let store = Store::new(2 << 20, 1024);
        let big = Settings::with_capacity(600_000);
        let snapshot = big.build(usize::MAX, false).unwrap().to_bytes();
        assert!(snapshot.len() > (1 << 20) && snapshot.len() < (2 << 20), "{}", snapshot.len());
        // A filter taking most of the maximum leaves no room for the transfer's bytes.
        store.create(b"f", &Settings::with_capacity(500_000)).unwrap();
        let first = store.transfers().add(b"t", 0, &snapshot[..4096]);
        assert!(first.is_err(), "a load past the maximum began");
        store.clear();
        // Alone, it fits, and holds its bytes within the budget until it completes.
        assert!(store.transfers().add(b"t", 0, &snapshot[..1 << 20]).is_ok());
        assert_eq!(store.budget.reserved(), store.transfer_bytes());
        assert!(store.transfer_bytes() > 1 << 20);
        let refused = store.create(b"g", &Settings::with_capacity(500_000));
        assert_eq!(refused, Err(KeyError::OutOfMemory));
        store.clear();
        assert_eq!((store.transfer_bytes(), store.budget.reserved()), (0, 0));
    }

    #[test]
    fn a_growable_filter_without_a_byte_ceiling_is_refused() {
        let store = Store::new(1 << 30, 1024);
        let unbounded = CuckooFilter::builder().capacity(100).growable().build();
        let entry = Entry::with_filter(unbounded.into(), SMALL, 0);
        assert_eq!(store.adopt(b"u", entry), Err(KeyError::OutOfMemory));
        let bounded = CuckooFilter::builder().capacity(100).max_memory(1 << 20).build().into();
        assert_eq!(Growth::of_filter(&bounded), Some(Growth::UpTo(1 << 20)));
        store.adopt(b"b", Entry::with_filter(bounded, SMALL, 0)).unwrap();
        let fixed = CuckooFilter::with_capacity(100).into();
        assert_eq!(Growth::of_filter(&fixed), Some(Growth::Fixed));
        assert_eq!(store.used_memory(), sizes(&store));
    }
}
