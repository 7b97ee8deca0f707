//! `write` and `edit` under the sandbox: the local file system, with every
//! write refused outside the policy's roots, by the agent's check first and
//! then by the kernel. Reads pass through, as in bash.
//!
//! The check alone was not enough: it resolves the path's links, and the
//! write resolves them again. A link in the workspace re-pointed between
//! the two (sandboxed bash may make one, and leave a loop swapping it in the
//! background) carried `write` outside the roots on the 9th attempt and
//! `edit` on the 52nd. So each write now runs on a thread of its own that
//! first restricts itself with the same Landlock rules bash runs under
//! ([`super::kernel::restrict_current_thread`]): the kernel judges every
//! path where the system call meets it, the temporary file's creation and
//! its rename included, which leaves no moment to win. Walking the path
//! with `openat` and `O_NOFOLLOW` could do the same in user space, but it
//! would mean a second implementation of the atomic write, its temporary
//! file, rename and in-place cases, all done by directory descriptor, kept
//! in step with bash's rules by hand. The check stays first: it names the
//! roots in its refusal, and it tells a path that is outside them from one
//! that is wrong (`ENOTDIR`).
//!
//! The thread is a new OS thread for each write, never one of tokio's
//! blocking pool: a Landlock restriction is permanent and covers only the
//! thread that makes it, so a pooled thread would have carried it into
//! whatever work it ran next (a session file written under `~` refused).

use std::path::{Path, PathBuf};

use async_trait::async_trait;

use super::kernel::restrict_current_thread;
use super::policy::SandboxPolicy;
use crate::support::atomic_write::write_atomic;
use crate::support::fs_error::FsError;
use crate::support::mutation_queue::{FileKey, MutationTarget};
use crate::support::paths::HomeDir;
use crate::tools::edit::ops::EditOperations;
use crate::tools::write::ops::{LocalFileOperations, WriteOperations, create_dirs};

/// This machine's files, written only where a [`SandboxPolicy`] lets
/// commands write. Its writes need the kernel to enforce the policy (Linux
/// Landlock): where it cannot, they fail, saying why, rather than run
/// unconfined. (A session's sandbox is on only where the kernel was found
/// to enforce it; see [`super::Sandbox::start`].)
pub struct Sandboxed {
    files: LocalFileOperations,
    policy: SandboxPolicy,
}

impl Sandboxed {
    /// The local file system, limited to what `policy` lets commands write.
    pub fn new(policy: SandboxPolicy) -> Self {
        Sandboxed {
            files: LocalFileOperations,
            policy,
        }
    }

    /// Runs `work` on `path` on a new thread that the kernel has first
    /// restricted to the policy (see the module docs for why a new one).
    /// A permission error it meets is the sandbox's when `path` is, checked
    /// again now, outside the roots (a link re-pointed since the first
    /// check): the model then reads the sandbox's refusal, not a bare
    /// `EACCES`. Inside them it is the file's own (a read-only file).
    async fn contained(
        &self,
        path: &Path,
        syscall: &'static str,
        work: impl FnOnce(&Path) -> Result<(), FsError> + Send + 'static,
    ) -> Result<(), FsError> {
        let policy = self.policy.clone();
        let owned = path.to_path_buf();
        let (done, outcome) = tokio::sync::oneshot::channel();
        std::thread::Builder::new()
            .name("sandboxed-write".into())
            .spawn(move || {
                let result = match restrict_current_thread(&policy) {
                    Ok(_) => work(&owned),
                    Err(reason) => Err(FsError::other(format!(
                        "{reason}; nothing was written to {}. Run without the sandbox (--sandbox off) to write it unrestricted",
                        owned.display()
                    ))),
                };
                // A dropped receiver means the call was cancelled.
                let _ = done.send(result);
            })
            .map_err(|error| FsError::new(&error, syscall, path))?;
        let result = outcome
            .await
            .unwrap_or_else(|_| Err(FsError::other("the sandboxed write's thread panicked")));
        match result {
            Err(error) if error.code == Some("EACCES") => Err(self
                .policy
                .check_write(path, syscall)
                .err()
                .unwrap_or(error)),
            other => other,
        }
    }
}

/// `~` is this machine's `$HOME`.
impl HomeDir for Sandboxed {
    fn home_dir(&self) -> Option<PathBuf> {
        self.files.home_dir()
    }
}

/// Queued as this machine's files are.
impl MutationTarget for Sandboxed {
    fn queue_key(&self, path: &Path) -> FileKey {
        self.files.queue_key(path)
    }
}

#[async_trait]
impl WriteOperations for Sandboxed {
    /// `write` makes sure the parent exists before every write: an existing
    /// directory outside the roots is left alone (creating nothing), so the
    /// refusal that follows names the file.
    async fn mkdir(&self, dir: &Path) -> Result<(), FsError> {
        match self.policy.check_write(dir, "mkdir") {
            Ok(()) => self.contained(dir, "mkdir", create_dirs).await,
            Err(_) if dir.is_dir() => Ok(()),
            Err(denied) => Err(denied),
        }
    }

    async fn write_file(&self, path: &Path, content: Vec<u8>) -> Result<(), FsError> {
        self.policy.check_write(path, "open")?;
        self.contained(path, "open", move |path| write_atomic(path, &content))
            .await
    }
}

#[async_trait]
impl EditOperations for Sandboxed {
    /// Not refused here: `edit` words a failed access as its own error and
    /// hides the reason; the write that follows is refused with it.
    async fn access(&self, path: &Path) -> Result<(), FsError> {
        EditOperations::access(&self.files, path).await
    }

    async fn read_file(&self, path: &Path) -> Result<Vec<u8>, FsError> {
        self.files.read_file(path).await
    }

    async fn write_file(&self, path: &Path, content: Vec<u8>) -> Result<(), FsError> {
        WriteOperations::write_file(self, path, content).await
    }
}
