//! glibc's malloc, told to keep the memory of freed request buffers for the next ones.
//!
//! Each Produce frame (often about 1 MiB) is read into a buffer of its own, which the
//! handler frees after the append. With glibc's defaults a buffer that size is mapped
//! anew (the mmap threshold starts at 128 KiB) or its pages are handed back to the
//! kernel when it is freed (the trim threshold), so every frame's pages are faulted in
//! and zeroed again. On a 1 KiB acks=1 produce that was a quarter of the network
//! thread's time, and more on a virtual machine that returns free memory to its host.
//! Above these thresholds glibc still maps and trims as before, so the memory kept is
//! bounded by them, per malloc arena.

/// Allocations below this come from the heap and are reused (glibc's own upper bound
/// for its moving threshold on 64-bit).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const MMAP_THRESHOLD: libc::c_int = 32 << 20;
/// Free memory at the top of a heap beyond this is handed back to the kernel.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const TRIM_THRESHOLD: libc::c_int = 64 << 20;

/// Sets the thresholds once for the process, unless `GLIBC_TUNABLES` sets malloc's own.
pub(crate) fn keep_freed_buffers() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        static ONCE: std::sync::Once = std::sync::Once::new();
        ONCE.call_once(|| {
            let tuned = std::env::var_os("GLIBC_TUNABLES")
                .is_some_and(|t| t.to_string_lossy().contains("glibc.malloc."));
            if tuned {
                return;
            }
            // SAFETY: mallopt only changes allocator parameters; glibc takes its own
            // lock, and it may be called at any time from any thread.
            unsafe {
                libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD);
                libc::mallopt(libc::M_TRIM_THRESHOLD, TRIM_THRESHOLD);
            }
        });
    }
}
