//! [`WindowedBuilder`]: the options of a [`WindowedFilter`], and building it.

use core::fmt;
use core::time::Duration;

use super::clock::{Clock, SystemClock};
use super::epochs::{Epochs, MAX_BUCKETS};
use super::{WindowedFilter, MIN_WINDOW, SIZED_FOR};
use crate::bucket::plain::Plain;
use crate::bucket::windowed::Windowed;
use crate::builder::Builder;
use crate::error::BuildError;
use crate::hasher::DefaultHashBuilder;
use crate::sizing::buckets_for;
use crate::table::Table;

/// Configures a [`WindowedFilter`]: made by [`Builder::expire_after`](crate::Builder::expire_after).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use lockfree_cuckoo::{CuckooFilter, SystemClock};
///
/// let filter = CuckooFilter::builder()
///     .capacity(1_000)
///     .expire_after(Duration::from_secs(10))
///     .clock(SystemClock::new())
///     .build();
/// assert_eq!(filter.window(), Duration::from_secs(10));
/// ```
#[must_use = "a builder does nothing until `build` is called"]
pub struct WindowedBuilder<S = DefaultHashBuilder> {
    /// The options set before [`Builder::expire_after`]: capacity, hasher, and the test hooks.
    base: Builder<S, Plain>,
    window: Duration,
    clock: Box<dyn Clock>,
    sweep_on_insert: bool,
}

impl<S> WindowedBuilder<S> {
    pub(crate) fn new(base: Builder<S, Plain>, window: Duration) -> Self {
        Self { base, window, clock: Box::new(SystemClock::new()), sweep_on_insert: true }
    }

    /// Whether inserts do expiry work of their own: a little each, and starting epochs when
    /// they are due (the default). Without it, an insert sweeps only when it finds no room, and
    /// only [`tick`](WindowedFilter::tick) and [`follow`](WindowedFilter::follow) start epochs:
    /// for a front-end whose replicas apply the same operations and must hold the same words,
    /// which calls `tick` on a timer (at least every half window) and sends the epochs it
    /// starts to the replicas.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use lockfree_cuckoo::CuckooFilter;
    ///
    /// let filter = CuckooFilter::builder()
    ///     .capacity(100)
    ///     .expire_after(Duration::from_secs(60))
    ///     .sweep_on_insert(false)
    ///     .build();
    /// filter.insert("a")?;
    /// # Ok::<(), lockfree_cuckoo::InsertError>(())
    /// ```
    pub fn sweep_on_insert(mut self, enabled: bool) -> Self {
        self.sweep_on_insert = enabled;
        self
    }

    /// Reads the time from `clock` instead of the system's monotonic clock ([`SystemClock`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use lockfree_cuckoo::{CuckooFilter, ManualClock};
    ///
    /// let filter = CuckooFilter::builder()
    ///     .capacity(100)
    ///     .expire_after(Duration::from_secs(1))
    ///     .clock(ManualClock::new())
    ///     .build();
    /// # let _ = filter;
    /// ```
    pub fn clock(mut self, clock: impl Clock) -> Self {
        self.clock = Box::new(clock);
        self
    }

    /// Builds the filter.
    ///
    /// # Panics
    ///
    /// Where [`try_build`](Self::try_build) returns an error.
    pub fn build(self) -> WindowedFilter<S> {
        match self.try_build() {
            Ok(filter) => filter,
            Err(err) => panic!("{err}"),
        }
    }

    /// Builds the filter, or says why it cannot be.
    ///
    /// # Errors
    ///
    /// [`BuildError::WindowTooShort`] for a window below [`MIN_WINDOW`],
    /// [`BuildError::WindowWithGrowth`] when the builder was made
    /// [`growable`](crate::Builder::growable), [`BuildError::CapacityOverflow`] and
    /// [`BuildError::AllocationFailed`] as for a [`CuckooFilter`](crate::CuckooFilter).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use lockfree_cuckoo::{BuildError, CuckooFilter};
    ///
    /// let err = CuckooFilter::builder().capacity(10).growable().expire_after(Duration::from_secs(1));
    /// assert!(matches!(err.try_build(), Err(BuildError::WindowWithGrowth)));
    /// ```
    pub fn try_build(self) -> Result<WindowedFilter<S>, BuildError> {
        if self.window < MIN_WINDOW {
            return Err(BuildError::WindowTooShort { window: self.window });
        }
        if self.base.growth.is_some() {
            return Err(BuildError::WindowWithGrowth);
        }
        let requested = self.base.capacity;
        // A steady stream holds up to 1.5 windows of items at the end of each epoch (three live
        // epochs); the table promises 1.6 windows, so that it is 88% full then, not 94%, and an
        // epoch that runs late does not tip it over.
        let buckets = match self.base.buckets {
            Some(buckets) => buckets,
            None => requested
                .checked_mul(SIZED_FOR.0)
                .map(|items| items / SIZED_FOR.1)
                .and_then(buckets_for)
                .filter(|&b| b as u64 <= MAX_BUCKETS)
                .ok_or(BuildError::CapacityOverflow { requested })?,
        };
        let table =
            Table::<Windowed>::try_new(buckets, self.base.lookup_retries, self.base.huge_pages)?;
        let epochs = Epochs::new(buckets, self.window / 2, self.clock);
        let sweeps = self.sweep_on_insert;
        Ok(WindowedFilter::from_parts(table, epochs, self.window, sweeps, self.base.hasher))
    }

    /// The options set before [`Builder::expire_after`], the clock, and whether inserts sweep.
    pub(super) fn into_parts(self) -> (Builder<S, Plain>, Box<dyn Clock>, bool) {
        (self.base, self.clock, self.sweep_on_insert)
    }
}

impl<S> fmt::Debug for WindowedBuilder<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WindowedBuilder")
            .field("capacity", &self.base.capacity)
            .field("window", &self.window)
            .field("clock", &self.clock)
            .finish_non_exhaustive()
    }
}
