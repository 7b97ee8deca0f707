//! What `read` needs from a file system, and nothing more: it can look, never
//! write.
//!
//! Text is asked for as a [`LineWindow`] and comes back as a [`WindowText`],
//! both plain data, so a remote implementation can compute the window where
//! the file lives (or stream the bytes home through a
//! [`WindowCollector`]) instead of shipping the whole file.

use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use async_trait::async_trait;

use tokio_util::sync::CancellationToken;

use super::lines::{LineWindow, WindowCollector, WindowText};
use crate::support::fs_error::SpecialFile;
use crate::support::paths::HomeDir;

/// Bytes read from a local file per step; cancellation is checked between steps.
const CHUNK: usize = 256 * 1024;

/// What [`ReadOperations::access`] learns about a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct FileInfo {
    /// The path is a directory (read answers with EISDIR, as Pi does).
    pub is_dir: bool,
    /// Size in bytes.
    pub len: u64,
    /// A pipe or a socket: opening it for reading waits for a writer,
    /// maybe forever, so it is not opened and read refuses it.
    #[serde(default)]
    pub special: Option<SpecialFile>,
}

/// Reading stopped: the call was cancelled, or the file system failed.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The call was cancelled while reading.
    #[error("{}", crate::support::cancel::ABORTED)]
    Aborted,
    /// The file system's error, kept whole so the tool can word it as Node does.
    #[error(transparent)]
    Io(#[from] io::Error),
}

/// The file system as `read` sees it.
///
/// Paths arrive absolute but not normalised (`..` possible): see
/// [the paths Operations are given](crate::tools#the-paths-operations-are-given)
/// before checking one against a root.
#[async_trait]
pub trait ReadOperations: HomeDir + Send + Sync {
    /// Whether anything exists at `path` (used to try the other spellings
    /// macOS gives screenshot names).
    async fn exists(&self, path: &Path) -> bool;

    /// Checks that `path` can be read, like Node's `fs.access(path, R_OK)`,
    /// and says what it is. The error is the OS's (`NotFound`,
    /// `PermissionDenied`, ...).
    async fn access(&self, path: &Path) -> io::Result<FileInfo>;

    /// The first `len` bytes of the file (fewer if it is shorter), enough to
    /// tell images and binary files from text.
    async fn read_prefix(&self, path: &Path, len: usize) -> io::Result<Vec<u8>>;

    /// The whole file. Only for images, which are sent whole.
    async fn read_all(&self, path: &Path, cancel: &CancellationToken)
    -> Result<Vec<u8>, ReadError>;

    /// The lines of `window`, the file's line count and the first selected
    /// line's size, without holding more of the file than the window keeps.
    async fn read_lines(
        &self,
        path: &Path,
        window: LineWindow,
        cancel: &CancellationToken,
    ) -> Result<WindowText, ReadError>;
}

/// [`ReadOperations`] on the local file system; blocking calls run on tokio's
/// blocking pool.
#[derive(Debug, Clone, Copy, Default)]
pub struct LocalReadOperations;

/// Runs blocking file work off the async runtime (see
/// [`crate::support::blocking`]); the work's own error survives the trip.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, ReadError> + Send + 'static,
) -> Result<T, ReadError> {
    crate::support::blocking::blocking(move || Ok(work()))
        .await
        .map_err(ReadError::Io)?
}

/// Reads `file` to its end in chunks, handing each to `sink`, and stops at
/// the next chunk once `cancel` fires.
fn stream(
    mut file: File,
    cancel: &CancellationToken,
    mut sink: impl FnMut(&[u8]),
) -> Result<(), ReadError> {
    // A small file gets a small buffer: a fresh 256 KiB one is a mapping
    // made and unmapped per call. One byte more than the size sees the end
    // in the first read; a file that grows meanwhile just takes more reads,
    // and one that reports no size (`/proc`) gets the whole chunk.
    let size = file.metadata().map_or(0, |m| m.len());
    let capacity = match usize::try_from(size) {
        Ok(size) if size > 0 => size.saturating_add(1).min(CHUNK),
        _ => CHUNK,
    };
    let mut buffer = vec![0u8; capacity];
    loop {
        if cancel.is_cancelled() {
            return Err(ReadError::Aborted);
        }
        match file.read(&mut buffer) {
            Ok(0) => return Ok(()),
            Ok(n) => sink(&buffer[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e.into()),
        }
    }
}

/// `~` is this machine's `$HOME`.
impl HomeDir for LocalReadOperations {}

#[async_trait]
impl ReadOperations for LocalReadOperations {
    async fn exists(&self, path: &Path) -> bool {
        let path = path.to_path_buf();
        blocking(move || Ok(path.try_exists()?))
            .await
            .unwrap_or(false)
    }

    async fn access(&self, path: &Path) -> io::Result<FileInfo> {
        let path = path.to_path_buf();
        let info = blocking(move || {
            let special = SpecialFile::of(&std::fs::metadata(&path)?);
            if let Some(special) = special.filter(|kind| kind.waits()) {
                return Ok(FileInfo {
                    is_dir: false,
                    len: 0,
                    special: Some(special),
                });
            }
            // Opening for reading is what R_OK asks; it also works on a
            // directory, which read reports itself.
            let metadata = File::open(&path)?.metadata()?;
            Ok(FileInfo {
                is_dir: metadata.is_dir(),
                len: metadata.len(),
                special: SpecialFile::of(&metadata),
            })
        })
        .await;
        info.map_err(into_io)
    }

    async fn read_prefix(&self, path: &Path, len: usize) -> io::Result<Vec<u8>> {
        let path = path.to_path_buf();
        blocking(move || {
            let mut prefix = Vec::with_capacity(len);
            File::open(&path)?
                .take(u64::try_from(len).unwrap_or(u64::MAX))
                .read_to_end(&mut prefix)?;
            Ok(prefix)
        })
        .await
        .map_err(into_io)
    }

    async fn read_all(
        &self,
        path: &Path,
        cancel: &CancellationToken,
    ) -> Result<Vec<u8>, ReadError> {
        let (path, cancel): (PathBuf, _) = (path.to_path_buf(), cancel.clone());
        blocking(move || {
            let file = File::open(&path)?;
            let mut all = Vec::new();
            stream(file, &cancel, |chunk| all.extend_from_slice(chunk))?;
            Ok(all)
        })
        .await
    }

    async fn read_lines(
        &self,
        path: &Path,
        window: LineWindow,
        cancel: &CancellationToken,
    ) -> Result<WindowText, ReadError> {
        let (path, cancel) = (path.to_path_buf(), cancel.clone());
        blocking(move || {
            let file = File::open(&path)?;
            let mut collector = WindowCollector::new(window);
            stream(file, &cancel, |chunk| collector.push(chunk))?;
            Ok(collector.finish())
        })
        .await
    }
}

/// For the calls that cannot be cancelled: every error is an I/O error.
fn into_io(error: ReadError) -> io::Error {
    match error {
        ReadError::Io(e) => e,
        ReadError::Aborted => {
            io::Error::new(io::ErrorKind::Interrupted, crate::support::cancel::ABORTED)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::support::truncate::Limits;

    #[tokio::test]
    async fn local_line_reads_stop_once_cancelled() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.txt");
        std::fs::write(&path, "a\nb\n").unwrap();
        let window = LineWindow {
            start: 0,
            max_selected: None,
            limits: Limits::default(),
        };
        let cancel = CancellationToken::new();
        let text = LocalReadOperations
            .read_lines(&path, window, &cancel)
            .await
            .unwrap();
        assert_eq!(
            (text.file_lines, text.selection.content.as_str()),
            (3, "a\nb\n")
        );
        cancel.cancel();
        let error = LocalReadOperations
            .read_lines(&path, window, &cancel)
            .await
            .unwrap_err();
        assert!(matches!(error, ReadError::Aborted), "{error:?}");
    }

    #[tokio::test]
    async fn local_prefix_is_at_most_the_asked_length() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.txt");
        std::fs::write(&path, "0123456789").unwrap();
        let ops = LocalReadOperations;
        assert_eq!(ops.read_prefix(&path, 4).await.unwrap(), b"0123");
        assert_eq!(ops.read_prefix(&path, 100).await.unwrap(), b"0123456789");
        assert_eq!(
            ops.access(&path).await.unwrap(),
            FileInfo {
                is_dir: false,
                len: 10,
                special: None,
            }
        );
        assert!(ops.access(dir.path()).await.unwrap().is_dir);
    }
}
