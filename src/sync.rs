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

/// A number for this thread, unique among the threads alive at once and as small as it can be:
/// a thread takes the lowest free number when it first asks and gives it back when it exits.
/// A counter stripe indexed by one has one writer at a time, and a process whose threads come
/// and go (a pool that grows and shrinks) keeps reusing the first numbers instead of running
/// past the owned stripes. `None` while the thread is being torn down, when 1024 threads already
/// hold one, and always under loom, whose model threads start afresh in every execution.
#[inline]
pub(crate) fn thread_number() -> Option<usize> {
    #[cfg(loom)]
    {
        None
    }
    #[cfg(not(loom))]
    {
        std::thread_local! {
            static NUMBER: numbers::Number = numbers::Number::take();
        }
        NUMBER.try_with(|number| number.get()).ok().flatten()
    }
}

/// The registry of [`thread_number`]s: one bit a number, set while a thread holds it. Process-wide
/// std atomics, outside every filter and outside the loom models: the hand-over happens in a
/// thread-local destructor, and loom 0.7 cannot model one (its operations on a lazy static crash
/// there, and its `join` does not wait for thread-local destructors), so `tests/stats.rs` checks
/// the counts across threads that come and go instead.
#[cfg(not(loom))]
mod numbers {
    use std::sync::atomic::{AtomicU64 as StdAtomicU64, Ordering};

    /// How many threads at once can hold a number.
    const LIMIT: usize = 1024;

    static TAKEN: [StdAtomicU64; LIMIT / 64] = [const { StdAtomicU64::new(0) }; LIMIT / 64];

    /// A thread's number, returned to the registry when the thread exits.
    pub(super) struct Number(Option<usize>);

    impl Number {
        /// The lowest free number, if any is free.
        pub(super) fn take() -> Self {
            for (word_index, word) in TAKEN.iter().enumerate() {
                // Relaxed: only a guess at a free bit; the `fetch_or` decides.
                let mut seen = word.load(Ordering::Relaxed);
                while seen != u64::MAX {
                    let bit = 1 << (!seen).trailing_zeros();
                    // Acquire: pairs with the Release `fetch_and` in `drop` of the number's last
                    // holder, so its plain stores to the stripes it owned happen-before this
                    // thread's plain loads of them (a stripe's count carries over exactly).
                    let previous = word.fetch_or(bit, Ordering::Acquire);
                    if previous & bit == 0 {
                        return Self(Some(word_index * 64 + bit.trailing_zeros() as usize));
                    }
                    seen = previous;
                }
            }
            Self(None)
        }

        pub(super) fn get(&self) -> Option<usize> {
            self.0
        }
    }

    impl Drop for Number {
        fn drop(&mut self) {
            if let Some(number) = self.0 {
                // Release: pairs with the Acquire `fetch_or` in `take` of the next holder.
                TAKEN[number / 64].fetch_and(!(1 << (number % 64)), Ordering::Release);
            }
        }
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

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// A thread's number goes back to the registry when it exits, so threads that come and go
    /// one after another reuse one number while another thread holds its own throughout.
    #[test]
    fn thread_numbers_are_reused_after_their_thread_exits() {
        let mine = thread_number().expect("a number is free");
        let numbers: Vec<usize> = (0..50)
            .map(|_| std::thread::spawn(|| thread_number().unwrap()).join().unwrap())
            .collect();
        assert!(numbers.iter().all(|&n| n != mine));
        // Other tests' threads may hold numbers meanwhile; the churn here still stays small.
        let distinct: std::collections::HashSet<_> = numbers.iter().collect();
        assert!(distinct.len() < 10, "{numbers:?}");
        assert!(numbers.iter().all(|&n| n < 64), "{numbers:?}");
    }
}
