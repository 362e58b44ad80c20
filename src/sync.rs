//! The one door through which the crate reaches atomics, thread-locals and CPU hints.
//!
//! Under `--cfg loom` every atomic and thread-local is loom's, so the model checker sees each
//! access the protocol makes; otherwise they are `std`'s. No other module names
//! `std::sync::atomic`, `thread_local!` or `loom`, and no other module carries `cfg(loom)`: what
//! must differ under the model checker (smaller stripes, fewer counters) reads
//! [`MODEL_CHECKING`].

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering};

#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering};

#[cfg(loom)]
pub(crate) use loom::thread_local;
#[cfg(not(loom))]
pub(crate) use std::thread_local;

/// Whether the crate is built for the loom model checker (`--cfg loom`). Sizes that keep models
/// small or let them fail (one bucket a version stripe, one counter stripe) read it.
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

/// Gives the processor (or, under loom, the model) to another thread while waiting for one.
#[inline]
pub(crate) fn yield_now() {
    #[cfg(loom)]
    loom::thread::yield_now();
    #[cfg(not(loom))]
    std::thread::yield_now();
}

/// A number unique to this thread, small for the process's first threads: numbers are handed out
/// in the order threads first ask and never reused, so a counter stripe indexed by one has one
/// writer for the life of the process. `None` while the thread is being torn down, and always
/// under loom, whose model threads start afresh in every execution.
#[inline]
pub(crate) fn thread_number() -> Option<usize> {
    #[cfg(loom)]
    {
        None
    }
    #[cfg(not(loom))]
    {
        use std::sync::atomic::AtomicUsize as StdAtomicUsize;
        static NEXT: StdAtomicUsize = StdAtomicUsize::new(0);
        std::thread_local! {
            // Relaxed: uniqueness comes from the atomic read-modify-write alone.
            static NUMBER: usize = NEXT.fetch_add(1, Ordering::Relaxed);
        }
        NUMBER.try_with(|n| *n).ok()
    }
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
