//! The one door through which the crate reaches atomics.
//!
//! Under `--cfg loom` every atomic is loom's, so the model checker sees each access the protocol
//! makes; otherwise they are `std`'s. No other module names `std::sync::atomic` or `loom`.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};

#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};

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
