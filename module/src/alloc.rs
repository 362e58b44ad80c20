//! The module's global allocator: the engine's, so that filters count in `used_memory` and
//! `maxmemory`, with alignment kept for every layout.
//!
//! The engine's allocator promises the alignment of `malloc` at most, and some builds less (a
//! size prefix before each block): `valkey-module`'s own allocator relies on jemalloc's size
//! classes for more, and a Valkey built on the C library's `malloc` hands it misaligned blocks
//! for the filter's cache-padded counters. Here a layout aligned to more than 8 bytes gets a
//! block with room to align within it, and the block's start is kept just before the pointer
//! handed out.

use std::alloc::{GlobalAlloc, Layout};
use std::mem::size_of;

use valkey_module::raw;

/// The alignment every engine block has.
const ENGINE_ALIGN: usize = 8;

/// The engine's allocator, aligned as each layout asks.
#[derive(Clone, Copy, Debug)]
pub struct EngineAlloc;

// SAFETY: every block comes from the engine's allocator and goes back to it; a block handed
// out for a layout is at least its size and aligned to its alignment (below), and `dealloc`
// receives the same layout, so it finds the engine's block the same way.
unsafe impl GlobalAlloc for EngineAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the engine's API table is filled at load, before any allocation of the
        // module, and only read after.
        let Some(alloc) = (unsafe { raw::RedisModule_Alloc }) else { return std::ptr::null_mut() };
        if layout.align() <= ENGINE_ALIGN {
            // SAFETY: a plain engine allocation of the layout's size.
            return unsafe { alloc(layout.size()) }.cast();
        }
        // Room for the start's address before the pointer, and for aligning it.
        let Some(total) = layout.size().checked_add(layout.align() + size_of::<usize>()) else {
            return std::ptr::null_mut();
        };
        // SAFETY: an engine allocation of `total` bytes.
        let start = unsafe { alloc(total) }.cast::<u8>();
        if start.is_null() {
            return start;
        }
        let first = start as usize + size_of::<usize>();
        let aligned = (first + layout.align() - 1) & !(layout.align() - 1);
        // SAFETY: `aligned - size_of::<usize>()` is at or after `start`, and `aligned +
        // size` at most `start + total`; the address slot is 8-aligned since `aligned` is.
        unsafe {
            let pointer = start.add(aligned - start as usize);
            pointer.cast::<usize>().sub(1).write(start as usize);
            pointer
        }
    }

    /// The engine's `calloc` where the engine's alignment is enough: a table of gigabytes
    /// (`CF.RESERVE x 1000000000`) is then fresh pages that the kernel zeroes as they are first
    /// touched, and its reserve does not block the engine for a pass that writes every byte.
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as in `alloc`.
        let calloc = unsafe { raw::RedisModule_Calloc };
        match calloc {
            // SAFETY: an engine allocation of `size` zeroed bytes, freed by `dealloc` as a
            // plain block (alignment at most the engine's).
            Some(calloc) if layout.align() <= ENGINE_ALIGN => {
                unsafe { calloc(1, layout.size()) }.cast()
            }
            _ => {
                // SAFETY: the caller's layout, passed on.
                let pointer = unsafe { self.alloc(layout) };
                if !pointer.is_null() {
                    // SAFETY: `alloc` returned at least `size` writable bytes.
                    unsafe { pointer.write_bytes(0, layout.size()) };
                }
                pointer
            }
        }
    }

    unsafe fn dealloc(&self, pointer: *mut u8, layout: Layout) {
        // SAFETY: as in `alloc`.
        let Some(free) = (unsafe { raw::RedisModule_Free }) else { return };
        let start = if layout.align() <= ENGINE_ALIGN {
            pointer
        } else {
            // SAFETY: `alloc` wrote the block's start just before the pointer for this layout.
            unsafe { pointer.cast::<usize>().sub(1).read() as *mut u8 }
        };
        // SAFETY: `start` is the engine's block, freed once.
        unsafe { free(start.cast()) };
    }
}
