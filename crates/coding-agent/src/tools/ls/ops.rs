//! What the `ls` tool needs from a file system: whether a path exists, what it
//! is, and the names in a directory. Nothing else, so `ls` cannot change a file.

use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};

use async_trait::async_trait;

use crate::support::blocking::blocking;
use crate::support::paths::HomeDir;

/// What `ls` learns from a stat: only whether the path is a directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct EntryStat {
    /// True for a directory (after following symlinks).
    pub is_directory: bool,
}

/// The file-system access `ls` runs through (Pi's `LsOperations`).
///
/// Paths arrive absolute but not normalised (`..` possible): see
/// [the paths Operations are given](crate::tools#the-paths-operations-are-given)
/// before checking one against a root.
#[async_trait]
pub trait LsOperations: HomeDir + Send + Sync {
    /// Whether anything exists at `path`, following symlinks (a dangling link does not exist).
    async fn exists(&self, path: &Path) -> bool;

    /// Stats `path`, following symlinks.
    async fn stat(&self, path: &Path) -> io::Result<EntryStat>;

    /// The names in the directory at `path` (without `.` and `..`), in any order.
    async fn read_dir(&self, path: &Path) -> io::Result<Vec<OsString>>;
}

/// [`LsOperations`] on the local file system. Each call runs on tokio's
/// blocking pool so a slow disk or network mount never stalls the runtime.
#[derive(Debug, Clone, Copy, Default)]
pub struct LocalLsOperations;

/// `~` is this machine's `$HOME`.
impl HomeDir for LocalLsOperations {}

#[async_trait]
impl LsOperations for LocalLsOperations {
    async fn exists(&self, path: &Path) -> bool {
        let path = path.to_path_buf();
        blocking(move || Ok(path.exists())).await.unwrap_or(false)
    }

    async fn stat(&self, path: &Path) -> io::Result<EntryStat> {
        let path: PathBuf = path.to_path_buf();
        blocking(move || {
            std::fs::metadata(&path).map(|m| EntryStat {
                is_directory: m.is_dir(),
            })
        })
        .await
    }

    async fn read_dir(&self, path: &Path) -> io::Result<Vec<OsString>> {
        let path = path.to_path_buf();
        blocking(move || {
            std::fs::read_dir(&path)?
                .map(|entry| entry.map(|e| e.file_name()))
                .collect()
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[tokio::test]
    async fn local_operations_follow_symlinks() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::fs::write(dir.path().join("file"), "x").unwrap();
        std::os::unix::fs::symlink(dir.path().join("sub"), dir.path().join("link")).unwrap();
        std::os::unix::fs::symlink(dir.path().join("gone"), dir.path().join("dangling")).unwrap();
        let ops = LocalLsOperations;

        let is_dir = |name: &str| {
            let path = dir.path().join(name);
            async move { ops.stat(&path).await.map(|s| s.is_directory).ok() }
        };
        assert_eq!(is_dir("sub").await, Some(true));
        assert_eq!(is_dir("link").await, Some(true));
        assert_eq!(is_dir("file").await, Some(false));
        assert_eq!(is_dir("dangling").await, None);
        assert!(ops.exists(&dir.path().join("link")).await);
        assert!(!ops.exists(&dir.path().join("dangling")).await);

        let mut names = ops.read_dir(dir.path()).await.unwrap();
        names.sort();
        assert_eq!(names, ["dangling", "file", "link", "sub"]);
    }
}
