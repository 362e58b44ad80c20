//! The memory of a table's bucket words: on Linux, a table of at least one huge page (2 MiB)
//! gets an anonymous mapping aligned to 2 MiB that the kernel is advised to back with
//! transparent huge pages; every other table is an ordinary heap allocation.
//!
//! With 4 KiB pages, a lookup in a table larger than the cache misses the TLB as well as the
//! cache, twice: a 243 MiB table is 62,000 pages, far beyond any TLB, but 122 huge pages (the
//! measured effect is in `BENCHMARKS.md`). The mapping is a performance hint only: everything
//! falls back quietly to 4 KiB pages (a kernel without transparent huge pages or set to `never`
//! ignores the advice) or to the heap (other systems; a refused mapping; the loom model checker,
//! whose atomics are not plain memory).

use core::fmt;
use core::ops::Deref;
use core::ptr::NonNull;

use crate::sync::AtomicU64;

/// The size of a transparent huge page on x86_64 and on 4 KiB-page arm64 kernels.
#[cfg(any(test, target_os = "linux"))]
const HUGE_PAGE: usize = 2 << 20;

/// Bucket words that no other thread can reach until the table holding them is shared.
///
/// A pointer and a length whichever the backing, so that indexing costs what indexing a boxed
/// slice costs: a lookup's critical path has no branch on where its table lives.
pub(crate) struct Words {
    words: NonNull<AtomicU64>,
    len: usize,
    /// From [`mapping::map`] (unmapped when dropped) rather than from `Box<[AtomicU64]>`.
    mapped: bool,
}

// SAFETY: `Words` owns its memory exclusively, as `Box<[AtomicU64]>` does, and gives out only
// shared references to `AtomicU64`, which is `Sync`.
unsafe impl Send for Words {}
// SAFETY: as for `Send`: `&Words` gives out only `&[AtomicU64]`.
unsafe impl Sync for Words {}

impl Words {
    /// `len` words each holding `value`, on huge pages if `huge_pages` allows and the table is
    /// large enough; `None` when the memory cannot be had.
    pub(crate) fn filled(len: usize, value: u64, huge_pages: bool) -> Option<Self> {
        if let Some(words) = Self::mapped(len, huge_pages) {
            // A fresh mapping reads as zeros; write only what differs, so that the pages of a
            // zeroed table are not touched before they are used.
            if value != 0 {
                // Relaxed: no other thread has the words.
                words.iter().for_each(|word| word.store(value, crate::sync::Ordering::Relaxed));
            }
            return Some(words);
        }
        if value == 0 && !crate::sync::MODEL_CHECKING {
            return Self::zeroed(len);
        }
        let mut words = Vec::new();
        words.try_reserve_exact(len).ok()?;
        words.extend((0..len).map(|_| AtomicU64::new(value)));
        Some(Self::boxed(words.into_boxed_slice()))
    }

    /// `len` zeroed words on the heap, from the allocator's zeroed allocation: a large one is
    /// fresh pages that the kernel zeroes as they are first touched, so that building a table
    /// of gigabytes costs no pass over it (an engine module would block for seconds), and its
    /// memory grows as items arrive. `None` when the memory cannot be had.
    fn zeroed(len: usize) -> Option<Self> {
        let layout = core::alloc::Layout::array::<AtomicU64>(len).ok()?;
        if layout.size() == 0 {
            return Some(Self::boxed(Box::default()));
        }
        // SAFETY: the layout has a non-zero size (checked above).
        let words = NonNull::new(unsafe { std::alloc::alloc_zeroed(layout) })?.cast();
        // The allocation is the one `Box<[AtomicU64]>` of `len` words would make (the global
        // allocator, this layout), so `Drop` frees it as that box.
        Some(Self { words, len, mapped: false })
    }

    /// The words of `values`, placed as [`filled`](Self::filled) places them. If no mapping
    /// can be had, the words take over the vector's own allocation, so this cannot fail.
    pub(crate) fn from_values(values: Vec<u64>, huge_pages: bool) -> Self {
        if let Some(words) = Self::mapped(values.len(), huge_pages) {
            for (word, value) in words.iter().zip(values) {
                // Relaxed: no other thread has the words.
                word.store(value, crate::sync::Ordering::Relaxed);
            }
            return words;
        }
        Self::boxed(values.into_iter().map(AtomicU64::new).collect())
    }

    fn boxed(words: Box<[AtomicU64]>) -> Self {
        let len = words.len();
        let words = NonNull::from(Box::leak(words)).cast();
        Self { words, len, mapped: false }
    }

    /// `len` zeroed words on huge pages, or `None` when they are not wanted or cannot be had.
    #[cfg(target_os = "linux")]
    fn mapped(len: usize, huge_pages: bool) -> Option<Self> {
        // loom's atomics are not plain words: a zeroed mapping is not a valid value of them.
        // Miri cannot model the mapping's trimming (a partial `munmap`).
        if !huge_pages || crate::sync::MODEL_CHECKING || cfg!(miri) {
            return None;
        }
        let bytes = len.checked_mul(core::mem::size_of::<AtomicU64>())?;
        if bytes < HUGE_PAGE {
            return None;
        }
        Some(Self { words: mapping::map(bytes)?.cast(), len, mapped: true })
    }

    #[cfg(not(target_os = "linux"))]
    fn mapped(_len: usize, _huge_pages: bool) -> Option<Self> {
        None
    }

    /// Whether the words sit in a mapping advised to use huge pages (whether the kernel
    /// followed the advice is up to it).
    #[cfg(test)]
    pub(crate) fn is_mapped(&self) -> bool {
        self.mapped
    }
}

impl Deref for Words {
    type Target = [AtomicU64];

    #[inline]
    fn deref(&self) -> &[AtomicU64] {
        // SAFETY: `words` points to `len` initialised words that `self` owns: a leaked box, a
        // zeroed allocation, or our own readable and writable mapping, aligned for `AtomicU64`,
        // whose anonymous memory starts zeroed; zero bits are a valid `AtomicU64` (std's, with
        // `u64`'s layout: loom's is never zeroed or mapped). The slice lives no longer than `&self`, and the memory as long as `self`.
        unsafe { core::slice::from_raw_parts(self.words.as_ptr(), self.len) }
    }
}

impl Drop for Words {
    fn drop(&mut self) {
        #[cfg(target_os = "linux")]
        if self.mapped {
            // SAFETY: the mapping came from `mapping::map` for exactly these bytes, and no
            // reference into it outlives `self`.
            unsafe { mapping::unmap(self.words.cast(), self.len * core::mem::size_of::<u64>()) };
            return;
        }
        let words = core::ptr::slice_from_raw_parts_mut(self.words.as_ptr(), self.len);
        // SAFETY: not mapped, so `words` is the box leaked in `boxed`, or the zeroed allocation
        // of `zeroed` with the layout of such a box (all-zero bits are a valid `AtomicU64`),
        // dropped once, here.
        drop(unsafe { Box::from_raw(words) });
    }
}

impl fmt::Debug for Words {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let backing = if self.mapped { "huge-page mapping" } else { "heap" };
        f.debug_struct("Words").field("len", &self.len).field("backing", &backing).finish()
    }
}

#[cfg(target_os = "linux")]
mod mapping {
    use core::ffi::c_void;
    use core::ptr::{self, NonNull};

    use super::HUGE_PAGE;

    /// `bytes` (at least one huge page) of zeroed anonymous memory starting on a huge-page
    /// boundary, advised with `MADV_HUGEPAGE`, or `None` if the kernel refuses the mapping.
    pub(super) fn map(bytes: usize) -> Option<NonNull<c_void>> {
        // SAFETY: `sysconf` only reads a configuration value.
        let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).ok()?;
        if page == 0 || HUGE_PAGE % page != 0 {
            return None;
        }
        // Room to slide the start up to the next huge-page boundary.
        let reserved = bytes.checked_add(HUGE_PAGE)?;
        // SAFETY: an anonymous private mapping at an address of the kernel's choosing replaces
        // nothing; it is checked for failure below.
        let base = unsafe {
            libc::mmap(
                ptr::null_mut(),
                reserved,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return None;
        }
        let base_address = base as usize;
        let start = base_address.next_multiple_of(HUGE_PAGE);
        let end = (start + bytes).next_multiple_of(page);
        let reserved_end = base_address + reserved;
        // Pointers into the mapping are derived from `base`, keeping its provenance.
        let at = |address: usize| base.wrapping_byte_add(address - base_address);
        // SAFETY: both ranges lie inside the mapping made above and start and end on page
        // boundaries (`base` is page-aligned and `HUGE_PAGE` a multiple of the page); nothing
        // refers to them. A failure leaves some slack mapped: harmless, as untouched anonymous
        // memory costs no RAM, so the results are not checked.
        unsafe {
            if start > base_address {
                libc::munmap(base, start - base_address);
            }
            if reserved_end > end {
                libc::munmap(at(end), reserved_end - end);
            }
        }
        // SAFETY: `start..end` is mapped above and owned by us; `madvise` changes no content. A
        // refusal (EINVAL on a kernel without transparent huge pages) leaves 4 KiB pages, which
        // is the fallback, so the result is not checked.
        unsafe {
            libc::madvise(at(start), end - start, libc::MADV_HUGEPAGE);
        }
        NonNull::new(at(start))
    }

    /// Unmaps what [`map`] returned.
    ///
    /// # Safety
    ///
    /// `start` and `bytes` are a pointer [`map`] returned and the size it was asked for, unmapped
    /// only once, with no reference into the memory left.
    pub(super) unsafe fn unmap(start: NonNull<c_void>, bytes: usize) {
        // SAFETY: by the caller's contract the range is ours to unmap; `munmap` rounds the
        // length up to the page, as `map` kept it.
        unsafe {
            libc::munmap(start.as_ptr(), bytes);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sync::Ordering;

    // Under Miri nothing is mapped, and a large table would only be slow.
    const LARGE: usize = if cfg!(miri) { 1_000 } else { 3 * HUGE_PAGE / 8 + 5 };

    #[test]
    fn filled_words_hold_the_value_on_either_backing() {
        for huge_pages in [false, true] {
            for (len, value) in [(0, 0), (7, 0), (7, u64::MAX), (LARGE, 0), (LARGE, 0xAB)] {
                let words = Words::filled(len, value, huge_pages).unwrap();
                assert_eq!(words.len(), len);
                assert!(words.iter().all(|w| w.load(Ordering::Relaxed) == value));
            }
        }
    }

    /// A zeroed table on the heap is the allocator's zeroed memory, not a pass that writes
    /// it: building 512 MiB of table leaves the process's resident memory where it was (an
    /// engine module builds gigabytes this way without blocking for the pass).
    #[test]
    #[cfg(target_os = "linux")]
    #[cfg_attr(miri, ignore = "no /proc under Miri, and too large")]
    fn a_large_zeroed_heap_table_is_not_written_when_built() {
        fn resident() -> usize {
            let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
            let pages: usize = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
            pages * 4096
        }
        let len = (512 << 20) / 8;
        let before = resident();
        let words = Words::filled(len, 0, false).unwrap();
        let grown = resident().saturating_sub(before);
        assert!(grown < 64 << 20, "building touched {grown} bytes");
        words[len / 2].store(5, Ordering::Relaxed);
        assert_eq!(words[len / 2].load(Ordering::Relaxed), 5);
        assert_eq!(words[len - 1].load(Ordering::Relaxed), 0);
    }

    #[test]
    fn values_keep_their_order() {
        let values: Vec<u64> = (0..LARGE as u64).map(|i| i * 3 + 1).collect();
        for huge_pages in [false, true] {
            let words = Words::from_values(values.clone(), huge_pages);
            assert!(words.iter().map(|w| w.load(Ordering::Relaxed)).eq(values.iter().copied()));
        }
    }

    /// Tables of at least one huge page are mapped on a huge-page boundary on Linux when asked;
    /// smaller tables, and tables built without huge pages, stay on the heap.
    #[test]
    #[cfg_attr(miri, ignore = "Miri maps nothing")]
    fn large_tables_are_mapped_on_a_huge_page_boundary() {
        let mapped = Words::filled(LARGE, 0, true).unwrap();
        assert_eq!(mapped.is_mapped(), cfg!(target_os = "linux"));
        if mapped.is_mapped() {
            assert_eq!(mapped.as_ptr() as usize % HUGE_PAGE, 0);
        }
        assert!(!Words::filled(LARGE, 0, false).unwrap().is_mapped());
        assert!(!Words::filled(HUGE_PAGE / 8 - 1, 0, true).unwrap().is_mapped());
        assert_eq!(Words::filled(HUGE_PAGE / 8, 0, true).unwrap().is_mapped(), mapped.is_mapped());
    }
}
