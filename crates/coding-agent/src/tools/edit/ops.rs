//! What `edit` needs of a file system: check, read and replace one file.

use std::fs::OpenOptions;
use std::io;
use std::path::{Path, PathBuf};

use async_trait::async_trait;

use crate::support::atomic_write::write_atomic;
use crate::support::fs_error::FsError;
use crate::support::mutation_queue::{MutationTarget, local_queue_path};
use crate::support::paths::HomeDir;
use crate::tools::write::ops::blocking;

/// The file-system calls of the `edit` tool (Pi's `EditOperations`).
#[async_trait]
pub trait EditOperations: HomeDir + MutationTarget {
    /// Fails unless the file at `path` exists and may be read and written.
    async fn access(&self, path: &Path) -> Result<(), FsError>;

    /// The file's bytes.
    async fn read_file(&self, path: &Path) -> Result<Vec<u8>, FsError>;

    /// Replaces the file's contents.
    async fn write_file(&self, path: &Path, content: Vec<u8>) -> Result<(), FsError>;
}

/// The local file system; writes are atomic (DEVIATIONS #10).
#[derive(Debug, Clone, Copy, Default)]
pub struct LocalEditOperations;

/// Files on this machine are queued by their real path, so symlinks to one
/// file share a queue.
#[async_trait]
impl MutationTarget for LocalEditOperations {
    async fn queue_path(&self, path: &Path) -> PathBuf {
        local_queue_path(path).await
    }
}

/// `~` is this machine's `$HOME`.
impl HomeDir for LocalEditOperations {}

#[async_trait]
impl EditOperations for LocalEditOperations {
    async fn access(&self, path: &Path) -> Result<(), FsError> {
        let path = path.to_path_buf();
        blocking(move || {
            let error = |e: io::Error| FsError::new(&e, "access", &path);
            // Node's access(R_OK | W_OK) passes for a directory; reading it
            // then fails, as in Pi.
            if std::fs::metadata(&path).map_err(error)?.is_dir() {
                return Ok(());
            }
            // Opening for reading and writing (without truncating) asks the
            // OS the same question access(2) does.
            OpenOptions::new()
                .read(true)
                .write(true)
                .open(&path)
                .map(drop)
                .map_err(error)
        })
        .await
    }

    async fn read_file(&self, path: &Path) -> Result<Vec<u8>, FsError> {
        let path = path.to_path_buf();
        blocking(move || {
            std::fs::read(&path).map_err(|e| match e.kind() {
                io::ErrorKind::IsADirectory => FsError::without_path(&e, "read"),
                _ => FsError::new(&e, "open", &path),
            })
        })
        .await
    }

    async fn write_file(&self, path: &Path, content: Vec<u8>) -> Result<(), FsError> {
        let path = path.to_path_buf();
        blocking(move || write_atomic(&path, &content)).await
    }
}
