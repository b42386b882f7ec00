//! Ahead of the writer of a preallocated segment (`preallocate` / `log.preallocate`): a
//! background thread allocates the disk blocks and fills the page cache with zero pages
//! a little past the segment's end, so an append copies into pages that are already
//! there instead of allocating them (and, on a virtual machine that returns free memory
//! to its host, faulting them in) on the request's thread.
//!
//! The segment file already has its full `segment.bytes` length (sparse, as Kafka's
//! `RandomAccessFile.setLength`): reading ahead over a hole or an unwritten extent fills
//! the page cache with zeros without any I/O. Every step is advisory: an error (no space,
//! a file system without fallocate) only leaves the append to do the work itself.

use std::fs::File;
use std::num::NonZeroU64;
use std::sync::mpsc::{Sender, channel};
use std::sync::{Arc, Mutex, OnceLock};

use rustix::fs::{Advice, FallocateFlags, fadvise, fallocate};

/// The least and the most a segment is kept ready past its end. Between the two it is
/// as much as the segment already holds, so a partition taking a trickle of data holds
/// little memory and disk ahead, and a busy one stays a few requests ahead.
pub(crate) const AHEAD_MIN: u64 = 64 * 1024;
pub(crate) const AHEAD_MAX: u64 = 16 * 1024 * 1024;

struct Job {
    file: Arc<File>,
    from: u64,
    to: u64,
}

fn queue() -> &'static Mutex<Option<Sender<Job>>> {
    static QUEUE: OnceLock<Mutex<Option<Sender<Job>>>> = OnceLock::new();
    QUEUE.get_or_init(|| {
        let (tx, rx) = channel::<Job>();
        let spawned = std::thread::Builder::new()
            .name("segment-preallocator".into())
            .spawn(move || {
                for job in rx {
                    prepare(&job.file, job.from, job.to);
                }
            });
        Mutex::new(spawned.ok().map(|_| tx))
    })
}

/// Allocates `[from, to)` of `file` and reads it into the page cache, on the background
/// thread (at once when the thread could not be started).
pub(crate) fn prepare_in_background(file: &Arc<File>, from: u64, to: u64) {
    if to <= from {
        return;
    }
    let job = Job {
        file: Arc::clone(file),
        from,
        to,
    };
    let sender = queue().lock().unwrap_or_else(|e| e.into_inner());
    if let Some(Err(e)) = sender.as_ref().map(|s| s.send(job)) {
        let job = e.0;
        prepare(&job.file, job.from, job.to);
    }
}

fn prepare(file: &File, from: u64, to: u64) {
    // A roll or truncation may have trimmed the file since the job was queued: blocks
    // past its end would stay allocated until it is deleted.
    let to = file.metadata().map_or(0, |m| m.len()).min(to);
    if to <= from {
        return;
    }
    let len = to - from;
    // KEEP_SIZE: never moves the end of a file trimmed between the check and the call.
    if let Err(e) = fallocate(file, FallocateFlags::KEEP_SIZE, from, len) {
        tracing::debug!(error = %e, "segment preallocation: fallocate failed");
    }
    if let Err(e) = fadvise(file, from, NonZeroU64::new(len), Advice::WillNeed) {
        tracing::debug!(error = %e, "segment preallocation: readahead failed");
    }
}
