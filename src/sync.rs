//! The one door through which the crate reaches atomics and thread hints.
//!
//! Under `--cfg loom` every atomic is loom's, so the model checker sees each access the protocol
//! makes; otherwise they are `std`'s. No other module names `std::sync::atomic` or `loom`.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering};

#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering};

/// Reads a bucket word that the caller is about to overwrite with a CAS.
///
/// loom explores only one execution when a thread loads an atomic and then writes it
/// (tokio-rs/loom#392), which lets broken protocols pass. A failed `compare_exchange` is a load to
/// the model, so under loom this read is one; `u64::MAX` as the expected value is harmless because
/// a success stores the same word back.
#[inline]
pub(crate) fn load_for_update(word: &AtomicU64, order: Ordering) -> u64 {
    #[cfg(loom)]
    {
        match word.compare_exchange(u64::MAX, u64::MAX, Ordering::AcqRel, order) {
            Ok(same) | Err(same) => same,
        }
    }
    #[cfg(not(loom))]
    {
        word.load(order)
    }
}

/// [`load_for_update`] after a plain load of the same word that returned `seen`: the word a
/// writer is about to overwrite with a CAS, given the value it has just loaded from
/// it.
///
/// Under loom it reads the word again as [`load_for_update`] does; outside loom it returns `seen`,
/// which the CAS that follows checks anyway. Callers take the decision that a value is *absent*
/// on the plain load, which loom may serve stale: a read that is a CAS under loom always reads
/// the newest value and would hide ordering bugs in that decision.
#[inline]
pub(crate) fn reload_for_update(word: &AtomicU64, seen: u64, order: Ordering) -> u64 {
    #[cfg(loom)]
    {
        let _ = seen;
        match word.compare_exchange(u64::MAX, u64::MAX, Ordering::AcqRel, order) {
            Ok(same) | Err(same) => same,
        }
    }
    #[cfg(not(loom))]
    {
        let _ = (word, order);
        seen
    }
}

/// Gives the processor (or, under loom, the model) to another thread while waiting for one.
#[inline]
pub(crate) fn yield_now() {
    #[cfg(loom)]
    loom::thread::yield_now();
    #[cfg(not(loom))]
    std::thread::yield_now();
}
