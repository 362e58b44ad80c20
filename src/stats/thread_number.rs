//! Thread numbers: a small number for each live thread, so that a thread owns a shard of a
//! filter's counters and bumps it without a locked instruction.
//!
//! The registry is process-wide and uses `std`'s atomics directly, outside every filter and
//! outside the loom models: a number is handed back in a thread-local destructor, which loom 0.7
//! cannot model (its operations on a lazy static crash there, and its `join` does not wait for
//! thread-local destructors), so `tests/filter/stats.rs` checks the counts across threads that come and
//! go instead. Under the model checker every thread is numberless, and models own no shard.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::sync::MODEL_CHECKING;

/// How many threads at once can hold a number.
const LIMIT: usize = 1024;

/// One bit a number, set while a thread holds it.
static TAKEN: [AtomicU64; LIMIT / 64] = [const { AtomicU64::new(0) }; LIMIT / 64];

/// A number for this thread, unique among the threads alive at once and as small as it can be:
/// a thread takes the lowest free number when it first asks and gives it back when it exits.
/// A counter shard indexed by one has one writer at a time, and a process whose threads come and
/// go (a pool that grows and shrinks) keeps reusing the first numbers instead of running past
/// the owned shards. `None` while the thread is being torn down, when [`LIMIT`] threads already
/// hold one, and always under loom, whose model threads start afresh in every execution.
#[inline]
pub(crate) fn thread_number() -> Option<usize> {
    std::thread_local! {
        static NUMBER: Number = Number::take();
    }
    if MODEL_CHECKING {
        return None;
    }
    NUMBER.try_with(|number| number.0).ok().flatten()
}

/// A thread's number, returned to the registry when the thread exits.
struct Number(Option<usize>);

impl Number {
    /// The lowest free number, if any is free.
    fn take() -> Self {
        for (word_index, word) in TAKEN.iter().enumerate() {
            // Relaxed: only a guess at a free bit; the `fetch_or` decides.
            let mut seen = word.load(Ordering::Relaxed);
            while seen != u64::MAX {
                let bit = 1 << (!seen).trailing_zeros();
                // Acquire: pairs with the Release `fetch_and` in `drop` of the number's last
                // holder, so its plain stores to the shards it owned happen-before this thread's
                // plain loads of them (a shard's count carries over exactly).
                let previous = word.fetch_or(bit, Ordering::Acquire);
                if previous & bit == 0 {
                    return Self(Some(word_index * 64 + bit.trailing_zeros() as usize));
                }
                seen = previous;
            }
        }
        Self(None)
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

#[cfg(test)]
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
