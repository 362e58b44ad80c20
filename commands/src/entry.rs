//! What a key holds: a filter with the options it was created with.

use std::sync::atomic::{AtomicU64, Ordering};

use lockfree_cuckoo::BuildError;

use crate::filter::Filter;

use crate::settings::Settings;

/// A key's value: the filter, its settings and the count of `CF.DEL`s that removed an item.
/// Every command works on it through `&self`, as the library intends.
#[derive(Debug)]
pub struct Entry {
    /// The filter.
    pub filter: Filter,
    /// What it was created with (or, for a loaded one, what it is reported with).
    pub settings: Settings,
    /// Successful `CF.DEL`s, for `CF.INFO`'s "Number of items deleted" (a statistic: Relaxed,
    /// it orders nothing).
    deletes: AtomicU64,
}

impl Entry {
    /// A new, empty filter with these settings, built as [`Settings::build`] does.
    ///
    /// # Errors
    ///
    /// As [`Settings::build`].
    pub fn new(
        settings: Settings,
        max_memory: usize,
        huge_pages: bool,
    ) -> Result<Self, BuildError> {
        Ok(Self::with_filter(settings.build(max_memory, huge_pages)?, settings, 0))
    }

    /// An entry around an existing filter (loaded from a save file or from chunks).
    pub fn with_filter(filter: Filter, settings: Settings, deletes: u64) -> Self {
        Self { filter, settings, deletes: AtomicU64::new(deletes) }
    }

    /// How many `CF.DEL`s removed an item.
    pub fn deletes(&self) -> u64 {
        self.deletes.load(Ordering::Relaxed)
    }

    /// A copy with its own filter, as it is now (`COPY`, `RESTORE` of a copy).
    pub fn duplicate(&self) -> Self {
        Self::with_filter(self.filter.duplicate(), self.settings, self.deletes())
    }

    pub(crate) fn count_delete(&self) {
        self.deletes.fetch_add(1, Ordering::Relaxed);
    }
}
