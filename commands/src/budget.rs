//! A maximum on the bytes a host holds for its clients, and what is reserved against it.

use std::sync::atomic::{AtomicUsize, Ordering};

/// Bytes reserved against a fixed maximum, by any thread: a host's filters and the
/// `CF.LOADCHUNK` transfers under way share one (the server's `--max-memory`), so that
/// neither can take what the other was promised.
///
/// Relaxed throughout: a bound on a sum, it publishes nothing.
#[derive(Debug)]
pub struct Budget {
    max: usize,
    reserved: AtomicUsize,
}

impl Budget {
    /// Nothing reserved, at most `max` bytes.
    pub const fn new(max: usize) -> Self {
        Self { max, reserved: AtomicUsize::new(0) }
    }

    /// Reserves `bytes`; false, and nothing reserved, if they do not fit.
    pub fn reserve(&self, bytes: usize) -> bool {
        let mut reserved = self.reserved.load(Ordering::Relaxed);
        loop {
            let Some(next) = reserved.checked_add(bytes).filter(|&n| n <= self.max) else {
                return false;
            };
            match self.reserved.compare_exchange_weak(
                reserved,
                next,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return true,
                Err(now) => reserved = now,
            }
        }
    }

    /// Reserves `bytes` whether or not they fit: what was taken already (a growth past its
    /// estimate) is counted all the same.
    pub fn force(&self, bytes: usize) {
        self.reserved.fetch_add(bytes, Ordering::Relaxed);
    }

    /// Gives back `bytes` reserved earlier.
    pub fn release(&self, bytes: usize) {
        self.reserved.fetch_sub(bytes, Ordering::Relaxed);
    }

    /// Whether `bytes` more would fit now.
    pub fn fits(&self, bytes: usize) -> bool {
        self.reserved().checked_add(bytes).is_some_and(|n| n <= self.max)
    }

    /// Bytes reserved now.
    pub fn reserved(&self) -> usize {
        self.reserved.load(Ordering::Relaxed)
    }

    /// The maximum.
    pub fn max(&self) -> usize {
        self.max
    }
}

/// The most one insert adds to a growable filter of `bytes` whose ceiling is `ceiling`, when no
/// other insert runs on it: one level, of at most four times the buckets of the newest (the
/// library's growth factor; fewer to fit the ceiling), so at most four times the newest level's
/// bytes, and those are within `bytes`. The eighth more covers what a level adds beside its
/// table that level 0 lacks (a block of pending removals, under 1% of the table), the 4 KiB a
/// small filter's fixed parts. The tests grow filters of many sizes against it.
pub fn growth_bound(bytes: usize, ceiling: usize) -> usize {
    let level = bytes.saturating_mul(4).saturating_add(bytes / 8).saturating_add(4096);
    level.min(ceiling.saturating_sub(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reservations_stay_within_the_maximum() {
        let budget = Budget::new(100);
        assert!(budget.reserve(60));
        assert!(!budget.reserve(41));
        assert!(budget.fits(40) && !budget.fits(41));
        assert!(budget.reserve(40));
        assert!(!budget.reserve(1));
        budget.release(100);
        assert_eq!(budget.reserved(), 0);
        assert!(!budget.reserve(usize::MAX));
        budget.force(150);
        assert!(!budget.fits(0));
    }
}
