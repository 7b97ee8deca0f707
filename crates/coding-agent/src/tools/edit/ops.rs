//! What `edit` needs of a file system: check, read and replace one file.

use std::fs::OpenOptions;
use std::io::{self, Read};
use std::path::Path;

use async_trait::async_trait;

use crate::support::fs_error::{FsError, SpecialFile};
use crate::support::mutation_queue::MutationTarget;
use crate::support::paths::HomeDir;
use crate::support::truncate::format_size;
use crate::tools::write::ops::{LocalFileOperations, WriteOperations, blocking};

/// The largest file `edit` takes. It reads the file whole and matches in
/// two views of it (exact and fuzzy), several times its size in memory: a
/// 50 MB one-line file took 1.45 GB, and a 10 GB sparse file the machine's
/// whole memory. Source files are far below this.
///
/// The tool refuses a file over it whatever [`EditOperations`] read it;
/// the local ones refuse it before reading.
pub const MAX_EDIT_FILE: u64 = 16 << 20;

/// Refuses a file of `len` bytes over [`MAX_EDIT_FILE`], saying what to do
/// instead: the one text of the limit, for the tool and the local
/// Operations alike.
pub(crate) fn within_edit_limit(len: u64) -> Result<(), FsError> {
    if len <= MAX_EDIT_FILE {
        return Ok(());
    }
    Err(FsError::other(format!(
        "the file is {}; edit reads and rewrites a file whole and takes files up to {}. Change a \
         file this large with bash (e.g. sed -i, or a script that streams it)",
        format_size(usize::try_from(len).unwrap_or(usize::MAX)),
        format_size(MAX_EDIT_FILE as usize)
    )))
}

/// The file-system calls of the `edit` tool (Pi's `EditOperations`).
///
/// Paths arrive absolute but not normalised (`..` possible): see
/// [the paths Operations are given](crate::tools#the-paths-operations-are-given)
/// before checking one against a root.
#[async_trait]
pub trait EditOperations: HomeDir + MutationTarget {
    /// Fails unless the file at `path` exists and may be read and written.
    /// An implementation that can tell the size cheaply may refuse a file
    /// over [`MAX_EDIT_FILE`] here, sparing the read.
    async fn access(&self, path: &Path) -> Result<(), FsError>;

    /// The file's bytes. The tool refuses them when they are over
    /// [`MAX_EDIT_FILE`], so an implementation need not check; one that can
    /// should stop reading past it rather than hold a huge file whole.
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
            within_edit_limit(metadata.len())?;
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
            let failed = |e: io::Error| match e.kind() {
                io::ErrorKind::IsADirectory => FsError::without_path(&e, "read"),
                _ => FsError::new(&e, "open", &path),
            };
            // No further than the limit: the file may have grown since
            // `access` looked.
            let mut bytes = Vec::new();
            std::fs::File::open(&path)
                .and_then(|file| file.take(MAX_EDIT_FILE + 1).read_to_end(&mut bytes))
                .map_err(failed)?;
            within_edit_limit(bytes.len() as u64).map(|()| bytes)
        })
        .await
    }

    async fn write_file(&self, path: &Path, content: Vec<u8>) -> Result<(), FsError> {
        WriteOperations::write_file(self, path, content).await
    }
}
