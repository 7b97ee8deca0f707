//! What `edit` needs of a file system: check, read and replace one file.

use std::fs::OpenOptions;
use std::io;
use std::path::Path;

use async_trait::async_trait;

use crate::support::fs_error::{FsError, SpecialFile};
use crate::support::mutation_queue::MutationTarget;
use crate::support::paths::HomeDir;
use crate::tools::write::ops::{LocalFileOperations, WriteOperations, blocking};

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

/// The local file system, as `write` has it: writes are atomic and queued
/// alike.
#[async_trait]
impl EditOperations for LocalFileOperations {
    async fn access(&self, path: &Path) -> Result<(), FsError> {
        let path = path.to_path_buf();
        blocking(move || {
            let error = |e: io::Error| FsError::new(&e, "access", &path);
            // Node's access(R_OK | W_OK) passes for a directory; reading it
            // then fails, as in Pi.
            let metadata = std::fs::metadata(&path).map_err(error)?;
            if metadata.is_dir() {
                return Ok(());
            }
            if let Some(special) = SpecialFile::of(&metadata) {
                let waits = "editing it waits for the other end";
                return Err(FsError::other(special.refusal(&path, waits, "cat")));
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
        WriteOperations::write_file(self, path, content).await
    }
}
