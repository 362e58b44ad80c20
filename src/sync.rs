//! The one door through which the crate reaches atomics, thread-locals and CPU hints.
//!
//! Under `--cfg loom` every atomic and thread-local is loom's, so the model checker sees each
//! access the protocol makes; otherwise they are `std`'s. No other module names `loom` or
//! carries `cfg(loom)`: what must differ under the model checker (smaller stripes, fewer
//! counters) reads [`MODEL_CHECKING`]. One module names `std::sync::atomic` on purpose: the
//! process-wide registry of thread numbers (`stats::thread_number`), which no model can reach.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering};

#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering};

#[cfg(loom)]
pub(crate) use loom::cell::UnsafeCell;
#[cfg(loom)]
pub(crate) use loom::thread_local;
#[cfg(not(loom))]
pub(crate) use std::thread_local;

/// A cell for data that is written before it is published and only read after: loom's, which
/// reports a read that the write does not happen-before (so a model sees a publication whose
/// ordering is too weak), or a plain `core::cell::UnsafeCell` with loom's closure API.
#[cfg(not(loom))]
#[derive(Debug)]
pub(crate) struct UnsafeCell<T>(core::cell::UnsafeCell<T>);

#[cfg(not(loom))]
impl<T> UnsafeCell<T> {
    pub(crate) const fn new(value: T) -> Self {
        Self(core::cell::UnsafeCell::new(value))
    }

    /// Calls `f` with a pointer to the value, to read it.
    #[inline(always)]
    pub(crate) fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
        f(self.0.get())
    }
}

/// Whether the crate is built for the loom model checker (`--cfg loom`). Sizes that keep models
/// small or let them fail (one bucket a stripe, one counter shard) read it.
pub(crate) const MODEL_CHECKING: bool = cfg!(loom);

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

/// [`load_for_update`] for a pointer: the value a thread is about to replace with a CAS. Under
/// loom a CAS that always fails, expecting a value never stored (the all-ones address).
#[inline]
pub(crate) fn load_ptr_for_update<T>(pointer: &AtomicPtr<T>, order: Ordering) -> *mut T {
    #[cfg(loom)]
    {
        let never = usize::MAX as *mut T;
        match pointer.compare_exchange(never, never, Ordering::AcqRel, order) {
            Ok(same) | Err(same) => same,
        }
    }
    #[cfg(not(loom))]
    {
        pointer.load(order)
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

/// A hint to load the cache line of `value` soon (a no-op off x86_64 and under loom). It reads
/// nothing and orders nothing.
#[inline(always)]
pub(crate) fn prefetch<T>(value: &T) {
    #[cfg(all(target_arch = "x86_64", not(loom)))]
    // SAFETY: `_mm_prefetch` needs SSE, which every x86_64 CPU has. A prefetch is a hint: it
    // never faults, writes nothing and changes no value the program can observe; the address
    // comes from a live reference in any case.
    unsafe {
        use core::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>((value as *const T).cast::<i8>());
    }
    #[cfg(not(all(target_arch = "x86_64", not(loom))))]
    let _ = value;
}
