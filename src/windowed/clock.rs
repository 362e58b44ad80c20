//! [`Clock`]: where a windowed filter reads the time.

use core::fmt;
use core::time::Duration;
use std::sync::Arc;
use std::time::Instant;

use crate::sync::{AtomicU64, Ordering};

/// The time source of a [`WindowedFilter`](crate::WindowedFilter): a monotonic reading, as a
/// duration since an origin of the clock's choosing that never changes.
///
/// The filter reads it only when it may start a new epoch: in [`tick`](crate::WindowedFilter::tick),
/// and in one insert of about 64, never in a lookup. A reading that goes backwards is taken as
/// no time passing. [`SystemClock`] is the default; [`ManualClock`] lets tests move time by hand.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use lockfree_cuckoo::{Clock, ManualClock};
///
/// let clock = ManualClock::new();
/// clock.advance(Duration::from_secs(5));
/// assert_eq!(clock.now(), Duration::from_secs(5));
/// ```
pub trait Clock: Send + Sync + fmt::Debug + 'static {
    /// The time since the clock's origin.
    fn now(&self) -> Duration;
}

/// The system's monotonic clock ([`Instant`]), counted from when the value was made.
///
/// # Examples
///
/// ```
/// use lockfree_cuckoo::{Clock, SystemClock};
///
/// let clock = SystemClock::new();
/// assert!(clock.now() < std::time::Duration::from_secs(60));
/// ```
#[derive(Clone, Copy, Debug)]
pub struct SystemClock {
    origin: Instant,
}

impl SystemClock {
    /// The monotonic clock, counting from now.
    ///
    /// # Examples
    ///
    /// ```
    /// let clock = lockfree_cuckoo::SystemClock::new();
    /// # let _ = clock;
    /// ```
    pub fn new() -> Self {
        Self { origin: Instant::now() }
    }
}

impl Default for SystemClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for SystemClock {
    fn now(&self) -> Duration {
        self.origin.elapsed()
    }
}

/// A clock that moves only when told to; clones share one reading. For tests, and for front-ends
/// whose primary decides when time moves (replicas follow its epochs, not their own clocks).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use lockfree_cuckoo::{CuckooFilter, ManualClock};
///
/// let clock = ManualClock::new();
/// let filter = CuckooFilter::builder()
///     .capacity(1_000)
///     .expire_after(Duration::from_secs(60))
///     .clock(clock.clone())
///     .build();
/// filter.insert("token")?;
/// clock.advance(Duration::from_secs(59));
/// filter.tick();
/// assert!(filter.contains("token"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, Default)]
pub struct ManualClock {
    nanos: Arc<AtomicU64>,
}

impl ManualClock {
    /// A clock at zero.
    ///
    /// # Examples
    ///
    /// ```
    /// use lockfree_cuckoo::{Clock, ManualClock};
    ///
    /// assert_eq!(ManualClock::new().now(), std::time::Duration::ZERO);
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// Moves the clock forward by `by` (saturating at about 584 years).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use lockfree_cuckoo::{Clock, ManualClock};
    ///
    /// let clock = ManualClock::new();
    /// clock.advance(Duration::from_millis(1_500));
    /// assert_eq!(clock.now(), Duration::from_millis(1_500));
    /// ```
    pub fn advance(&self, by: Duration) {
        let by = u64::try_from(by.as_nanos()).unwrap_or(u64::MAX);
        // Relaxed: the reading is a value, not a publication; the filter orders what it does
        // with it through its own epoch word.
        let mut now = self.nanos.load(Ordering::Relaxed);
        while let Err(actual) = self.nanos.compare_exchange_weak(
            now,
            now.saturating_add(by),
            Ordering::Relaxed,
            Ordering::Relaxed,
        ) {
            now = actual;
        }
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Duration {
        // Relaxed: as in `advance`.
        Duration::from_nanos(self.nanos.load(Ordering::Relaxed))
    }
}
