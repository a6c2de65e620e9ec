//! The allocator the `loopcheck` binary (and the benches, so they measure what ships)
//! uses: mimalloc, asked for memory the way the system allocator is.
//!
//! The `mimalloc` crate passes every request to `mi_malloc_aligned`, even with the
//! alignment of a byte or a word. mimalloc 3 serves that on its fast path only for small
//! blocks whose free slot happens to be aligned; any other size (a response body, a
//! transcript entry) takes its aligned slow path, which over-allocates unless the size is
//! a power of two. Every block `mi_malloc` returns is aligned to 16 bytes, or to its own
//! size below that, as std's `System` allocator assumes of `malloc`: so a request that
//! asks no more than that goes to `mi_malloc`, and only a larger alignment to the aligned
//! entry points.
//!
//! [`Allocator`] is the one public item: a process declares it as its
//! `#[global_allocator]` and calls [`Allocator::keep_freed_memory`] first. It is public
//! because the binary and the benches are crates of their own that link this library; a
//! `#[global_allocator]` declared in the library behind a cargo feature would not do, as
//! a package's features are shared by all its targets (the tests would get it too, and so
//! would every crate that uses the library, the wiremock plug-in's users among them),
//! and a feature the binary required would leave it unbuilt by a plain `cargo build`.
//! Everything behind it is crate-private.
//!
//! Off switch: `LOOPCHECK_PLAIN_ALLOC=1` in the environment makes [`Allocator`] forward
//! every request to the system allocator (std's `System`), to measure what mimalloc gives
//! or to rule it out. It is read once, at the process's first allocation, and holds for
//! the process's life, so every block goes back to the allocator that gave it.

use std::alloc::{GlobalAlloc, Layout, System};
use std::ffi::{CStr, c_int, c_long, c_void};
use std::sync::atomic::{AtomicU8, Ordering};

use libmimalloc_sys as ffi;

/// The alignment every `mi_malloc` block has (`MI_MAX_ALIGN_SIZE`), for sizes at least as
/// large.
const MALLOC_ALIGN: usize = 16;

/// The environment variable that makes [`Allocator`] the system allocator when it is `1`.
const PLAIN_ALLOC: &CStr = c"LOOPCHECK_PLAIN_ALLOC";

/// The process's global allocator: mimalloc, or the system allocator when
/// `LOOPCHECK_PLAIN_ALLOC=1` (see the module's documentation). Declare it with
/// `#[global_allocator]` and call [`Allocator::keep_freed_memory`] first thing in `main`.
pub struct Allocator;

impl Allocator {
    /// Keeps the memory the process frees for its own reuse instead of handing it back
    /// to the OS a second later, unless `MIMALLOC_PURGE_DELAY` says otherwise (nothing
    /// to do under the system allocator): see the crate-private `keep_freed_memory`.
    pub fn keep_freed_memory(&self) {
        keep_freed_memory();
    }
}

/// Which allocator [`Allocator`] forwards to, once chosen.
static CHOICE: AtomicU8 = AtomicU8::new(UNDECIDED);
const UNDECIDED: u8 = 0;
const MIMALLOC: u8 = 1;
const SYSTEM: u8 = 2;

/// Whether [`Allocator`] forwards to the system allocator: chosen at the first call.
#[inline]
fn plain() -> bool {
    match CHOICE.load(Ordering::Relaxed) {
        MIMALLOC => false,
        SYSTEM => true,
        _ => choose(),
    }
}

/// Reads the switch and keeps what it says; the first choice made stands, should two
/// threads make it at once.
#[cold]
fn choose() -> bool {
    // libc's `getenv`, not `std::env`: std copies the value into a new string, which
    // would allocate from inside the allocator before it has chosen.
    // SAFETY: a valid C string; the pointer returned, if any, is read before anything
    // could change the environment (the first allocation precedes `main`'s own code).
    let value = unsafe {
        let value = libc::getenv(PLAIN_ALLOC.as_ptr());
        (!value.is_null()).then(|| CStr::from_ptr(value))
    };
    let choice = if switched_on(value) { SYSTEM } else { MIMALLOC };
    match CHOICE.compare_exchange(UNDECIDED, choice, Ordering::Relaxed, Ordering::Relaxed) {
        Ok(_) => choice == SYSTEM,
        Err(first) => first == SYSTEM,
    }
}

/// Whether a switch's value turns it on: `1`, and nothing else.
fn switched_on(value: Option<&CStr>) -> bool {
    value == Some(c"1")
}

// SAFETY: `plain` gives the same answer for the process's whole life, so every block is
// freed, grown and shrunk by the allocator that gave it; each of those keeps its own
// contract.
unsafe impl GlobalAlloc for Allocator {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract, passed on.
        unsafe {
            match plain() {
                true => System.alloc(layout),
                false => Mimalloc.alloc(layout),
            }
        }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract, passed on.
        unsafe {
            match plain() {
                true => System.alloc_zeroed(layout),
                false => Mimalloc.alloc_zeroed(layout),
            }
        }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract, passed on; `ptr` came from the same allocator.
        unsafe {
            match plain() {
                true => System.dealloc(ptr, layout),
                false => Mimalloc.dealloc(ptr, layout),
            }
        }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller's contract, passed on; `ptr` came from the same allocator.
        unsafe {
            match plain() {
                true => System.realloc(ptr, layout, new_size),
                false => Mimalloc.realloc(ptr, layout, new_size),
            }
        }
    }
}

/// mimalloc as a [`GlobalAlloc`], asked as `malloc` is (what [`Allocator`] forwards to
/// unless switched off).
pub(crate) struct Mimalloc;

/// Whether `mi_malloc` of `size` bytes is aligned enough for `align` (a Rust layout's size
/// is a multiple of its alignment, so `align <= size` unless the size is zero).
fn malloc_aligns(align: usize, size: usize) -> bool {
    align <= MALLOC_ALIGN && align <= size
}

/// A block of `layout` from `plain` when its blocks are aligned enough, else from
/// `aligned`: mimalloc's plain and aligned entry points of one kind.
///
/// # Safety
/// As [`GlobalAlloc::alloc`]: `layout` has a non-zero size.
#[inline]
unsafe fn allocate(
    layout: Layout,
    plain: unsafe extern "C" fn(usize) -> *mut c_void,
    aligned: unsafe extern "C" fn(usize, usize) -> *mut c_void,
) -> *mut u8 {
    // SAFETY: plain FFI calls; a null result is passed on as failure.
    unsafe {
        if malloc_aligns(layout.align(), layout.size()) {
            plain(layout.size()).cast()
        } else {
            aligned(layout.size(), layout.align()).cast()
        }
    }
}

// SAFETY: every block comes from mimalloc and goes back to it (`mi_free` takes blocks from
// any of its entry points); `malloc_aligns` sends a request to the unaligned entry points
// only when their blocks are aligned enough for it.
unsafe impl GlobalAlloc for Mimalloc {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract is `allocate`'s.
        unsafe { allocate(layout, ffi::mi_malloc, ffi::mi_malloc_aligned) }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract is `allocate`'s.
        unsafe { allocate(layout, ffi::mi_zalloc, ffi::mi_zalloc_aligned) }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        // SAFETY: `ptr` came from this allocator (the caller's contract).
        unsafe { ffi::mi_free(ptr.cast::<c_void>()) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: `ptr` came from this allocator with `layout` (the caller's contract).
        unsafe {
            if malloc_aligns(layout.align(), new_size) {
                ffi::mi_realloc(ptr.cast::<c_void>(), new_size).cast()
            } else {
                ffi::mi_realloc_aligned(ptr.cast::<c_void>(), new_size, layout.align()).cast()
            }
        }
    }
}

/// `mi_option_purge_delay` in mimalloc's option enum (`mimalloc.h`; the sys crate names
/// no constant for it).
const PURGE_DELAY: c_int = 15;

unsafe extern "C" {
    /// An option's value, unless the environment (`MIMALLOC_<OPTION>`) set it.
    fn mi_option_set_default(option: c_int, value: c_long);
}

/// Keeps the memory the process frees for its own reuse, instead of handing it back to
/// the OS a second after it is freed (mimalloc's `purge_delay` of -1), unless
/// `MIMALLOC_PURGE_DELAY` says otherwise.
///
/// A run frees each case's session, transcript and all, and the next case asks for as
/// much again; a server frees each expired session. Memory handed back and taken again
/// costs a page fault and a page zeroed by the kernel (2 MB of it under transparent huge
/// pages), which took a quarter of the fake server's CPU time in a profile of sessions freed
/// one after another. The process keeps the most it ever held instead, which it would
/// hold again at its next peak.
pub(crate) fn keep_freed_memory() {
    // SAFETY: a plain FFI call with a valid option index; it only stores the value.
    unsafe { mi_option_set_default(PURGE_DELAY, -1) }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Only `1` switches the system allocator on.
    #[test]
    fn only_one_switches_the_plain_allocator_on() {
        assert!(switched_on(Some(c"1")));
        for off in [None, Some(c""), Some(c"0"), Some(c"true"), Some(c"11")] {
            assert!(!switched_on(off), "{off:?}");
        }
    }

    unsafe extern "C" {
        fn mi_option_get(option: c_int) -> c_long;
    }

    /// [`PURGE_DELAY`] is the purge delay: its default is mimalloc 3's 1000 ms (a newer
    /// mimalloc that moves the option, or its default, fails here to be checked again),
    /// and [`keep_freed_memory`] turns purging off.
    #[test]
    fn keep_freed_memory_turns_off_the_purge_delay() {
        if std::env::var_os("MIMALLOC_PURGE_DELAY").is_some() {
            return; // the environment's value wins, by design
        }
        // SAFETY: plain FFI calls with a valid option index.
        unsafe {
            assert_eq!(
                mi_option_get(PURGE_DELAY),
                1000,
                "mimalloc's default purge delay"
            );
            keep_freed_memory();
            assert_eq!(mi_option_get(PURGE_DELAY), -1);
        }
    }

    /// Every block is aligned as its layout asks, through allocation, zeroed allocation and
    /// growth, for the alignments Rust types use and a few larger ones.
    #[test]
    fn blocks_are_aligned_as_their_layouts_ask() {
        let allocator = Mimalloc;
        for align in [1, 2, 4, 8, 16, 32, 64, 4096] {
            for size in [
                1, 3, 8, 12, 16, 24, 40, 48, 56, 72, 100, 1000, 1025, 5000, 70_000,
            ] {
                let size = size.max(align) / align * align;
                let layout = Layout::from_size_align(size, align).expect("a layout");
                // SAFETY: non-zero sizes; every block is freed with its own layout.
                unsafe {
                    let block = allocator.alloc(layout);
                    assert!(!block.is_null());
                    assert_eq!(block as usize % align, 0, "alloc {size} aligned {align}");
                    block.write_bytes(7, size);
                    let grown = allocator.realloc(block, layout, size * 3);
                    assert_eq!(grown as usize % align, 0, "realloc {size} aligned {align}");
                    assert_eq!(*grown.add(size - 1), 7, "realloc keeps the contents");
                    allocator.dealloc(grown, Layout::from_size_align(size * 3, align).unwrap());
                    let zeroed = allocator.alloc_zeroed(layout);
                    assert_eq!(zeroed as usize % align, 0, "zalloc {size} aligned {align}");
                    assert!((0..size).all(|i| *zeroed.add(i) == 0));
                    allocator.dealloc(zeroed, layout);
                }
            }
        }
    }
}
