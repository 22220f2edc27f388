//! Memory of the flash array: how much a device needs (from its geometry and
//! data mode), how much the machine has, and fallible allocation of the big
//! arrays, so that a device too large for the machine is a typed
//! [`MemoryError`] instead of an allocation abort.
//!
//! Why both an estimate and fallible allocation: with Linux overcommit an
//! allocation larger than free memory often succeeds, and the process is then
//! killed when the array is filled. So constructors that size a device from
//! user input refuse up front when the estimate (the most the array can come
//! to hold) exceeds `MemAvailable`; `try_reserve` catches what the kernel
//! refuses outright (and machines without `/proc/meminfo`). The data bytes of
//! a full-data array are allocated zeroed and never filled ([`zeroed`]): the
//! kernel maps them as they are first written, so the memory they take
//! follows the pages programmed, not the capacity.

use crate::array::{DataMode, NandConfig};
use crate::error::MemoryError;
use crate::spare::{PACKED_BYTES_PER_BLOCK, PACKED_BYTES_PER_PAGE};

/// Bytes the array of `cfg` holds in memory: per page, its program count (a
/// byte, or a bit in metadata-only mode, two with partial programs:
/// `programs.rs`) and, in full-data
/// mode, its OOB and data, in metadata-only mode its packed OOB (`spare.rs`);
/// per block, the write pointer, erase count and bad flag (and
/// the packed OOB's base). Metadata-only mode also stores the data and OOB of
/// the FTL's own metadata pages, and any spare area it cannot pack, as they
/// are written: that depends on the FTL and is not counted here.
pub fn needed(cfg: &NandConfig) -> u64 {
    let g = &cfg.geometry;
    let pages = g.page_count() as u64;
    let blocks = g.block_count() as u64;
    let (per_page, per_block, programs) = match cfg.data_mode {
        DataMode::Full => (g.oob_size as u64 + g.page_size as u64, 0, pages),
        DataMode::MetaOnly => {
            // A second bit a page once partial programs count above 1.
            let words = if g.nop > 1 { 2 } else { 1 };
            (PACKED_BYTES_PER_PAGE, PACKED_BYTES_PER_BLOCK, pages.div_ceil(64) * 8 * words)
        }
    };
    programs + pages * per_page + blocks * (4 + 4 + 1 + per_block)
}

/// `MemAvailable` from `/proc/meminfo`, in bytes, or the environment variable
/// `TXFTL_MEMORY_AVAILABLE` (bytes) if it is set and lower: a cap on what a
/// device may use (and how tests check refusals on any machine). `None`
/// where neither can be read.
pub fn available() -> Option<u64> {
    let meminfo = mem_available();
    let cap = std::env::var("TXFTL_MEMORY_AVAILABLE")
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok());
    match (meminfo, cap) {
        (Some(m), Some(c)) => Some(m.min(c)),
        (m, c) => m.or(c),
    }
}

/// `MemAvailable`, read at most every 200 ms: every mount checks its tables
/// fit, and crash enumeration mounts tens of thousands of times a second,
/// where reading the file took a sixth of the time. What the machine has
/// does not change faster than that matters here.
fn mem_available() -> Option<u64> {
    use std::sync::Mutex;
    use std::time::{Duration, Instant};
    static LAST: Mutex<Option<(Instant, Option<u64>)>> = Mutex::new(None);
    let mut last = LAST.lock().unwrap_or_else(|e| e.into_inner());
    match *last {
        Some((at, value)) if at.elapsed() < Duration::from_millis(200) => value,
        _ => {
            let info = std::fs::read_to_string("/proc/meminfo").ok();
            let value = info.as_deref().and_then(parse_mem_available);
            *last = Some((Instant::now(), value));
            value
        }
    }
}

fn parse_mem_available(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let mut fields = line.split_whitespace().skip(1);
    let kib: u64 = fields.next()?.parse().ok()?;
    (fields.next() == Some("kB")).then_some(kib * 1024)
}

/// Refuses `needed` bytes when the machine reports less available.
pub fn check(needed: u64) -> Result<(), MemoryError> {
    match available() {
        Some(available) if needed > available => Err(MemoryError::TooLarge { needed, available }),
        _ => Ok(()),
    }
}

/// A plain number whose all-zero bit pattern is its zero: what the kernel's
/// zeroed pages hold.
///
/// # Safety
/// Every bit pattern of zero bytes must be a valid `Self`, equal to `ZERO`.
pub unsafe trait Zeroable: Copy + PartialEq {
    const ZERO: Self;
}

macro_rules! zeroable {
    ($($t:ty),*) => {$(
        // SAFETY: an integer (or bool) of all-zero bytes is its zero.
        unsafe impl Zeroable for $t {
            const ZERO: Self = 0 as $t;
        }
    )*};
}
zeroable!(u8, u16, u32, u64, usize);
// SAFETY: `false` is the all-zero byte.
unsafe impl Zeroable for bool {
    const ZERO: Self = false;
}

/// `vec![value; n]`, but a refused allocation is an error naming the total
/// `needed` by the array it belongs to. A zero `value` costs nothing until
/// written ([`zeroed`]): a table whose default is stored as zero takes
/// memory and set-up time only for the entries a run sets.
pub fn filled<T: Zeroable>(n: usize, value: T, needed: u64) -> Result<Vec<T>, MemoryError> {
    if value == T::ZERO {
        let v = zeroed(n, needed)?;
        huge_pages(v.as_ptr() as *mut u8, n * std::mem::size_of::<T>());
        return Ok(v);
    }
    let mut v = Vec::new();
    v.try_reserve_exact(n).map_err(|_| MemoryError::AllocationFailed {
        failed: (n * std::mem::size_of::<T>()) as u64,
        needed,
    })?;
    huge_pages(v.as_mut_ptr() as *mut u8, n * std::mem::size_of::<T>());
    v.resize(n, value);
    Ok(v)
}

/// `n` zeros, but a refused allocation is an error naming the total
/// `needed` by the array it belongs to. The allocator's zeroed memory is
/// mapped by the kernel on first write (calloc's large allocations are
/// fresh mappings), so entries never written take no memory and no time:
/// the full-data array's page bytes, which are never read before their page
/// is programmed (an unprogrammed page reads as 0xFF from its program
/// count), and every table that stores its default as zero.
pub fn zeroed<T: Zeroable>(n: usize, needed: u64) -> Result<Vec<T>, MemoryError> {
    let refused = MemoryError::AllocationFailed {
        failed: (n as u64).saturating_mul(std::mem::size_of::<T>() as u64),
        needed,
    };
    let layout = std::alloc::Layout::array::<T>(n).map_err(|_| refused.clone())?;
    if layout.size() == 0 {
        return Ok(Vec::new());
    }
    // SAFETY: `layout` has a non-zero size.
    let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
    if ptr.is_null() {
        return Err(refused);
    }
    // SAFETY: `ptr` was allocated by the global allocator with the layout of
    // `n` values of `T`, which a Vec<T> of capacity `n` frees with; all `n`
    // values are initialized (all-zero bytes are a valid `T`: `Zeroable`).
    Ok(unsafe { Vec::from_raw_parts(ptr as *mut T, n, n) })
}

/// Asks Linux to back a large table with transparent huge pages (2 MiB)
/// where the system leaves that to the program (`madvise` mode): the FTL's
/// and the array's per-page tables are read at random addresses, and at
/// hundreds of MiB their 4 KiB pages miss the TLB on nearly every access.
/// Only a hint: it changes no content and may be refused.
fn huge_pages(ptr: *mut u8, len: usize) {
    const HUGE: usize = 2 << 20;
    if len < 2 * HUGE {
        return;
    }
    #[cfg(target_os = "linux")]
    {
        let start = (ptr as usize).next_multiple_of(HUGE);
        let end = (ptr as usize + len) / HUGE * HUGE;
        if end > start {
            // SAFETY: the range lies inside the allocation just reserved;
            // MADV_HUGEPAGE changes no memory contents.
            unsafe {
                libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = ptr;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mem_available_is_parsed_in_bytes() {
        let info = "MemTotal:       16000000 kB\nMemFree:  100 kB\nMemAvailable:    3000000 kB\n";
        assert_eq!(parse_mem_available(info), Some(3_000_000 * 1024));
        assert_eq!(parse_mem_available("MemTotal: 5 kB\n"), None);
    }

    #[test]
    fn the_estimate_counts_data_and_whole_spare_areas_only_in_full_mode() {
        let p = crate::preset("tiny").unwrap();
        let g = p.geometry;
        let full = needed(&p.config(DataMode::Full, crate::ViolationPolicy::Panic));
        let meta = needed(&p.config(DataMode::MetaOnly, crate::ViolationPolicy::Panic));
        let (pages, blocks) = (g.page_count() as u64, g.block_count() as u64);
        assert_eq!(full, pages * (1 + 64 + 512) + blocks * 9);
        assert_eq!(meta, pages.div_ceil(64) * 8 + pages * 6 + blocks * (9 + 12 + 16));
    }

    #[test]
    fn a_refused_allocation_is_an_error_not_an_abort() {
        // More than any address space holds: try_reserve refuses it at once.
        let e = filled(usize::MAX / 2, 0u8, u64::MAX).unwrap_err();
        assert!(matches!(e, MemoryError::AllocationFailed { .. }), "{e}");
        assert!(check(u64::MAX).is_err() || available().is_none());
    }
}
