//! What `write` needs of a file system: create directories, replace a file.

use std::path::{Path, PathBuf};

use async_trait::async_trait;

use crate::support::atomic_write::write_atomic;
use crate::support::fs_error::FsError;
use crate::support::mutation_queue::{FileKey, MutationTarget, local_queue_key};
use crate::support::paths::HomeDir;

/// The file-system calls of the `write` tool (Pi's `WriteOperations`).
///
/// Paths arrive absolute but not normalised (`..` possible): see
/// [the paths Operations are given](crate::tools#the-paths-operations-are-given)
/// before checking one against a root.
#[async_trait]
pub trait WriteOperations: HomeDir + MutationTarget {
    /// Creates `dir` and any missing parents; an existing directory is fine.
    async fn mkdir(&self, dir: &Path) -> Result<(), FsError>;

    /// Replaces the contents of the file at `path`, creating it if needed.
    async fn write_file(&self, path: &Path, content: Vec<u8>) -> Result<(), FsError>;
}

/// The local file system, for the tools that change files: `write` and
/// `edit` (which implements its Operations in `edit/ops.rs`). Writes are
/// atomic (temporary file, fsync, rename: DEVIATIONS #10) and go through
/// symlinks to the files they point to.
#[derive(Debug, Clone, Copy, Default)]
pub struct LocalFileOperations;

/// Files on this machine are queued by their real path, so symlinks to one
/// file share a queue, or (a file with other hard links) by their inode, so
/// hard links do too.
impl MutationTarget for LocalFileOperations {
    fn queue_key(&self, path: &Path) -> FileKey {
        local_queue_key(path)
    }
}

/// `~` is this machine's `$HOME`.
impl HomeDir for LocalFileOperations {}

#[async_trait]
impl WriteOperations for LocalFileOperations {
    async fn mkdir(&self, dir: &Path) -> Result<(), FsError> {
        let dir = dir.to_path_buf();
        blocking(move || create_dirs(&dir)).await
    }

    async fn write_file(&self, path: &Path, content: Vec<u8>) -> Result<(), FsError> {
        let path: PathBuf = path.to_path_buf();
        blocking(move || write_atomic(&path, &content)).await
    }
}

/// Creates `dir` and any missing parents (blocking): `mkdir` as
/// [`WriteOperations`] has it.
pub(crate) fn create_dirs(dir: &Path) -> Result<(), FsError> {
    std::fs::create_dir_all(dir).map_err(|e| FsError::new(&e, "mkdir", dir))
}

/// Runs blocking file work off the async runtime.
pub(crate) async fn blocking<T, F>(work: F) -> Result<T, FsError>
where
    F: FnOnce() -> Result<T, FsError> + Send + 'static,
    T: Send + 'static,
{
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| FsError::other(e.to_string()))?
}
