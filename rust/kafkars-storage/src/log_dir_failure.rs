//! Kafka's `LogDirFailureChannel`: an I/O error on one log's files takes its whole log
//! dir offline (the disk is suspect, not just that partition), so every partition in
//! the dir answers KAFKA_STORAGE_ERROR while the other dirs keep serving.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use crate::error::LogError;

/// The offline state of one log dir, shared by the [`LogManager`](crate::LogManager)
/// and every [`Log`](crate::Log) in the dir.
#[derive(Debug)]
pub struct LogDirFailure {
    path: PathBuf,
    offline: AtomicBool,
}

impl LogDirFailure {
    /// An online dir.
    pub fn new(path: PathBuf) -> Self {
        LogDirFailure {
            path,
            offline: AtomicBool::new(false),
        }
    }

    /// The dir.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether an I/O error took the dir offline.
    pub fn is_offline(&self) -> bool {
        self.offline.load(Ordering::Acquire)
    }

    /// Takes the dir offline after `error` (logged once), unless the error says nothing
    /// about the disk: running out of file descriptors is the process's limit, not a
    /// failed dir.
    pub fn maybe_add_offline_log_dir(&self, error: &LogError) {
        let LogError::Io { source, .. } = error else {
            return;
        };
        if is_descriptor_exhaustion(source) {
            return;
        }
        if !self.offline.swap(true, Ordering::AcqRel) {
            tracing::error!(log_dir = %self.path.display(), %error,
                "log dir taken offline: its partitions answer KAFKA_STORAGE_ERROR until restart");
        }
    }
}

/// EMFILE or ENFILE.
fn is_descriptor_exhaustion(e: &io::Error) -> bool {
    use rustix::io::Errno;
    matches!(Errno::from_io_error(e), Some(Errno::MFILE | Errno::NFILE))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn io_errors_take_the_dir_offline_but_fd_exhaustion_does_not() {
        let dir = LogDirFailure::new(PathBuf::from("/d"));
        let emfile = LogError::io("/d/x", rustix::io::Errno::MFILE.into());
        dir.maybe_add_offline_log_dir(&emfile);
        assert!(!dir.is_offline());
        dir.maybe_add_offline_log_dir(&LogError::Offline("t-0".into()));
        assert!(!dir.is_offline());
        let enospc = LogError::io("/d/x", rustix::io::Errno::NOSPC.into());
        dir.maybe_add_offline_log_dir(&enospc);
        assert!(dir.is_offline());
    }
}
