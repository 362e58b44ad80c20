//! The window of a batch: item `i + AHEAD` is hashed and its buckets requested from memory while
//! item `i`, whose buckets were requested `AHEAD` items earlier and have usually arrived, is
//! checked, so that the memory latencies of several items overlap.

/// Items hashed and prefetched ahead of the one being checked (a power of two).
const AHEAD: usize = 16;

/// Calls `visit(i, key_at(i))` for `i` in `0..len`, in order, with `prefetch` called on the keys
/// of the next [`AHEAD`] items meanwhile. Stops at the first `i` for which `visit` returns false
/// and returns it; returns `len` if none did.
#[inline]
pub(crate) fn pipelined<K: Copy + Default>(
    len: usize,
    mut key_at: impl FnMut(usize) -> K,
    prefetch: impl Fn(K),
    mut visit: impl FnMut(usize, K) -> bool,
) -> usize {
    let mut ring = [K::default(); AHEAD];
    for (i, slot) in ring.iter_mut().enumerate().take(len) {
        *slot = key_at(i);
        prefetch(*slot);
    }
    for i in 0..len {
        let current = ring[i % AHEAD];
        if i + AHEAD < len {
            let next = key_at(i + AHEAD);
            prefetch(next);
            ring[i % AHEAD] = next;
        }
        if !visit(i, current) {
            return i;
        }
    }
    len
}
