//! A hint that brings memory towards the core before a loop reaches it: for rows looked up in an order
//! that scatters them over buffers larger than the caches, where each look-up waited for memory.

/// Ask for the cache line at ADDRESS to be brought into the core's first cache. A hint only: nothing is
/// read, and no address faults, so ADDRESS may be any (a bucket, a row's bytes past a slice's end).
#[inline(always)]
pub fn fetch<T>(address: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch reads nothing and faults at no address.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>(address as *const i8);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = address;
}
