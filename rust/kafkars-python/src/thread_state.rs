//! A Python thread state kept for the life of a Rust thread that calls into Python often.
//!
//! `Python::attach` on a thread without one creates a thread state and deletes it again on
//! release: every request on a handler thread paid for a new `PyThreadState` and its 16 KiB
//! frame stack, an `mmap` and a `munmap` whose TLB shootdown interrupted the other CPU
//! (6 % of the broker's CPU at a million records a second). A kept state makes each
//! attach only a GIL acquisition.

use std::cell::Cell;

use pyo3::ffi;

/// The kept state: `PyGILState_Ensure`'s own count stays at one while the thread runs, so
/// a release never reaches zero and deletes the state.
struct Kept {
    gstate: ffi::PyGILState_STATE,
    tstate: *mut ffi::PyThreadState,
}

impl Drop for Kept {
    fn drop(&mut self) {
        // The thread is ending: its pool was closed by a shutdown that released the GIL
        // to join it. Give the state back so the interpreter deletes it.
        unsafe {
            if ffi::Py_IsInitialized() != 0 {
                ffi::PyEval_RestoreThread(self.tstate);
                ffi::PyGILState_Release(self.gstate);
            }
        }
    }
}

thread_local! {
    static KEPT: Cell<Option<Kept>> = const { Cell::new(None) };
}

/// Gives the calling thread a Python thread state that lives until the thread ends; call
/// it without the GIL held, before attaching. A no-op after the first call on a thread.
pub(crate) fn keep_for_this_thread() {
    let _ = KEPT.try_with(|kept| {
        let current = kept.take();
        if current.is_some() {
            kept.set(current);
            return;
        }
        // Safety: the interpreter is running (this thread serves its requests) and this
        // thread holds neither the GIL nor a thread state of PyO3's (not attached).
        let state = unsafe {
            if ffi::Py_IsInitialized() == 0 {
                return;
            }
            let gstate = ffi::PyGILState_Ensure();
            Kept {
                gstate,
                tstate: ffi::PyEval_SaveThread(),
            }
        };
        kept.set(Some(state));
    });
}
