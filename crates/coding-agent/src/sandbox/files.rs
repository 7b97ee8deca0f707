//! `write` and `edit` under the sandbox: their Operations wrapped so that a
//! write outside the policy's roots is refused with the sandbox's reason
//! before it reaches the file system. Reads pass through, as in bash.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;

use super::policy::SandboxPolicy;
use crate::support::fs_error::FsError;
use crate::support::mutation_queue::{FileKey, MutationTarget};
use crate::support::paths::HomeDir;
use crate::tools::edit::ops::EditOperations;
use crate::tools::write::ops::WriteOperations;

/// Operations that refuse writes outside a [`SandboxPolicy`].
pub struct Sandboxed<Ops: ?Sized> {
    inner: Arc<Ops>,
    policy: SandboxPolicy,
}

impl<Ops: ?Sized> Sandboxed<Ops> {
    /// `inner`, limited to what `policy` lets commands write.
    pub fn new(inner: Arc<Ops>, policy: SandboxPolicy) -> Self {
        Sandboxed { inner, policy }
    }

    fn check(&self, path: &Path, syscall: &str) -> Result<(), FsError> {
        self.policy.check_write(path, syscall)
    }
}

/// The files are the inner Operations': `~` is their home.
impl<Ops: HomeDir + ?Sized> HomeDir for Sandboxed<Ops> {
    fn home_dir(&self) -> Option<PathBuf> {
        self.inner.home_dir()
    }
}

/// The files are the inner Operations': queued as they queue them.
impl<Ops: MutationTarget + ?Sized> MutationTarget for Sandboxed<Ops> {
    fn host(&self) -> Option<String> {
        self.inner.host()
    }

    fn queue_key(&self, path: &Path) -> FileKey {
        self.inner.queue_key(path)
    }
}

#[async_trait]
impl<Ops: WriteOperations + ?Sized> WriteOperations for Sandboxed<Ops> {
    /// `write` makes sure the parent exists before every write: an existing
    /// directory outside the roots is left alone (creating nothing), so the
    /// refusal that follows names the file.
    async fn mkdir(&self, dir: &Path) -> Result<(), FsError> {
        match self.check(dir, "mkdir") {
            Ok(()) => self.inner.mkdir(dir).await,
            Err(_) if dir.is_dir() => Ok(()),
            Err(denied) => Err(denied),
        }
    }

    async fn write_file(&self, path: &Path, content: Vec<u8>) -> Result<(), FsError> {
        self.check(path, "open")?;
        self.inner.write_file(path, content).await
    }
}

#[async_trait]
impl<Ops: EditOperations + ?Sized> EditOperations for Sandboxed<Ops> {
    /// Not refused here: `edit` words a failed access as its own error and
    /// hides the reason; the write that follows is refused with it.
    async fn access(&self, path: &Path) -> Result<(), FsError> {
        self.inner.access(path).await
    }

    async fn read_file(&self, path: &Path) -> Result<Vec<u8>, FsError> {
        self.inner.read_file(path).await
    }

    async fn write_file(&self, path: &Path, content: Vec<u8>) -> Result<(), FsError> {
        self.check(path, "open")?;
        self.inner.write_file(path, content).await
    }
}
