//! The `.lock` file that keeps a second broker off a log directory.

use std::fs::{File, OpenOptions, TryLockError};
use std::path::{Path, PathBuf};

use crate::error::{IoContext, LogError, Result};

/// File name of the lock inside each log directory.
pub const LOCK_FILE: &str = ".lock";

/// An exclusive OS lock on `<log dir>/.lock`, released when dropped.
#[derive(Debug)]
pub struct DirLock {
    path: PathBuf,
    file: File,
}

impl DirLock {
    /// Takes the lock or fails with [`LogError::DirLocked`] when another process
    /// (or another `LogManager` in this one) holds it.
    pub fn acquire(dir: &Path) -> Result<Self> {
        let path = dir.join(LOCK_FILE);
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .at(&path)?;
        match file.try_lock() {
            Ok(()) => Ok(DirLock { path, file }),
            Err(TryLockError::WouldBlock) => Err(LogError::DirLocked {
                path: dir.to_path_buf(),
            }),
            Err(TryLockError::Error(e)) => Err(LogError::io(&path, e)),
        }
    }

    /// Path of the lock file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for DirLock {
    fn drop(&mut self) {
        let _ = self.file.unlock();
    }
}
