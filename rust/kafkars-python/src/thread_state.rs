//! A Python thread state kept for the life of a Rust thread that calls into Python often.
//!
//! `Python::attach` on a thread without one creates a thread state and deletes it again on
//! release: every request on a handler thread paid for a new `PyThreadState` and its 16 KiB
//! frame stack, an `mmap` and a `munmap` whose TLB shootdown interrupted the other CPU
//! (6 % of the broker's CPU at a million records a second). A kept state makes each
//! attach only a GIL acquisition.

use pyo3::ffi;

/// The kept state, made on the thread's first call: `PyGILState_Ensure`'s own count stays
/// at one while the thread runs, so a release never reaches zero and deletes the state.
struct Kept(Option<(ffi::PyGILState_STATE, *mut ffi::PyThreadState)>);

impl Kept {
    fn new() -> Self {
        // Safety: called without the GIL and with no thread state of PyO3's (the thread
        // is not attached); `Py_IsInitialized` is checked first.
        unsafe {
            if ffi::Py_IsInitialized() == 0 {
                return Kept(None);
            }
            let gstate = ffi::PyGILState_Ensure();
            Kept(Some((gstate, ffi::PyEval_SaveThread())))
        }
    }
}

impl Drop for Kept {
    fn drop(&mut self) {
        // The thread is ending: its pool was closed by a shutdown that released the GIL
        // to join it. Give the state back so the interpreter deletes it.
        if let Some((gstate, tstate)) = self.0 {
            unsafe {
                if ffi::Py_IsInitialized() != 0 {
                    ffi::PyEval_RestoreThread(tstate);
                    ffi::PyGILState_Release(gstate);
                }
            }
        }
    }
}

thread_local! {
    static KEPT: Kept = Kept::new();
}

/// Gives the calling thread a Python thread state that lives until the thread ends; call
/// it without the GIL held, before attaching. A no-op after the first call on a thread.
pub(crate) fn keep_for_this_thread() {
    let _ = KEPT.try_with(|_| ());
}
