//! The seven Operations traits on a remote host: each method is one call to
//! the helper, which runs the local implementation there.
//!
//! A lost connection ends the call with `Remote connection lost: ...` in the
//! shape of the trait's error, so the tool reports it as it reports any
//! failure (`isError`), and the next call reconnects. Nothing ever falls back
//! to the local machine.

use std::ffi::OsString;
use std::io;
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use super::client::Lost;
use super::connection::{CallError, RemoteHost};
use super::log::RemoteOutputLog;
use super::protocol::{BashCall, Bytes, Call, RemoteSandbox, Reply};
use crate::support::fs_error::FsError;
use crate::support::mutation_queue::{FileKey, MutationTarget};
use crate::support::paths::{HomeDir, normalize_lexically};
use crate::support::walk::{SearchError, Searched};
use crate::tools::bash::log::OutputLog;
use crate::tools::bash::ops::{BashOperations, ExecError, ExecOptions, ExitStatus};
use crate::tools::edit::ops::EditOperations;
use crate::tools::find::ops::{FindOperations, FindRequest};
use crate::tools::grep::ops::{GrepMatch, GrepOperations, GrepRequest};
use crate::tools::ls::ops::{EntryStat, LsOperations};
use crate::tools::read::lines::{LineWindow, WindowText};
use crate::tools::read::ops::{FileInfo, ReadError, ReadOperations};
use crate::tools::write::ops::WriteOperations;

/// Every Operations trait, on one remote host. Cheap to clone.
#[derive(Debug, Clone)]
pub struct RemoteOperations {
    host: Arc<RemoteHost>,
    /// What bash runs under there (`remote/sandbox.rs`); `None`: unconfined.
    sandbox: Option<RemoteSandbox>,
}

impl RemoteOperations {
    /// Operations acting on `host`.
    pub fn new(host: Arc<RemoteHost>) -> Self {
        RemoteOperations {
            host,
            sandbox: None,
        }
    }

    /// The same, with bash run under `sandbox` on the host.
    #[must_use]
    pub fn with_sandbox(mut self, sandbox: Option<RemoteSandbox>) -> Self {
        self.sandbox = sandbox;
        self
    }

    /// The host they act on.
    pub fn host(&self) -> &Arc<RemoteHost> {
        &self.host
    }

    async fn call(&self, call: Call, cancel: &CancellationToken) -> Result<Reply, CallError> {
        self.host.call(call, cancel).await
    }

    /// grep's or find's call: `found` takes the walk's result out of the
    /// reply, or hands back a reply of another kind.
    async fn walk<T>(
        &self,
        call: Call,
        cancel: &CancellationToken,
        found: impl FnOnce(Reply) -> Result<Result<T, SearchError>, Reply>,
    ) -> Result<T, SearchError> {
        match self.call(call, cancel).await {
            Ok(reply) => {
                found(reply).unwrap_or_else(|other| Err(SearchError::Other(unexpected(&other))))
            }
            Err(CallError::Aborted) => Err(SearchError::Cancelled),
            Err(CallError::Lost(lost)) => Err(SearchError::Other(lost.to_string())),
        }
    }

    /// A call that cannot be cancelled.
    async fn ask(&self, call: Call) -> Result<Reply, Lost> {
        self.host.ask(call).await
    }
}

/// An answer that does not fit the call (a helper of another version), or
/// the refusal of a call (too large to send, either way).
pub(super) fn unexpected(reply: &Reply) -> String {
    match reply {
        Reply::Refused(why) => format!(
            "Remote call refused: {why}. Ask for less (a part of the file, a lower limit), or work on the remote host with bash"
        ),
        other => format!("the remote helper answered {other:?}"),
    }
}

/// How long after a command's timeout a silent remote host counts as
/// stalled: the helper kills the command at its timeout and answers at once.
const STALLED_LINK_GRACE: Duration = Duration::from_secs(10);

fn io_lost(lost: Lost) -> io::Error {
    io::Error::other(lost.to_string())
}

/// A read's call that got no reply: stopped, or lost.
fn read_error(error: CallError) -> ReadError {
    match error {
        CallError::Aborted => ReadError::Aborted,
        CallError::Lost(lost) => io_lost(lost).into(),
    }
}

fn io_unexpected(reply: &Reply) -> io::Error {
    io::Error::other(unexpected(reply))
}

/// The remote user's home: `~` in every tool's path arguments.
impl HomeDir for RemoteOperations {
    fn home_dir(&self) -> Option<PathBuf> {
        Some(self.host.home().to_path_buf())
    }
}

#[async_trait]
impl ReadOperations for RemoteOperations {
    async fn exists(&self, path: &Path) -> bool {
        matches!(
            self.ask(Call::ReadExists(path.to_path_buf())).await,
            Ok(Reply::Exists(true))
        )
    }

    async fn access(&self, path: &Path) -> io::Result<FileInfo> {
        match self.ask(Call::ReadAccess(path.to_path_buf())).await {
            Ok(Reply::FileInfo(info)) => info.map_err(Into::into),
            Ok(other) => Err(io_unexpected(&other)),
            Err(lost) => Err(io_lost(lost)),
        }
    }

    async fn read_prefix(&self, path: &Path, len: usize) -> io::Result<Vec<u8>> {
        match self.ask(Call::ReadPrefix(path.to_path_buf(), len)).await {
            Ok(Reply::Prefix(bytes)) => bytes.map(|Bytes(b)| b).map_err(Into::into),
            Ok(other) => Err(io_unexpected(&other)),
            Err(lost) => Err(io_lost(lost)),
        }
    }

    async fn read_all(
        &self,
        path: &Path,
        cancel: &CancellationToken,
    ) -> Result<Vec<u8>, ReadError> {
        match self.call(Call::ReadAll(path.to_path_buf()), cancel).await {
            Ok(Reply::All(bytes)) => bytes.map(|Bytes(b)| b).map_err(Into::into),
            Ok(other) => Err(io_unexpected(&other).into()),
            Err(error) => Err(read_error(error)),
        }
    }

    async fn read_lines(
        &self,
        path: &Path,
        window: LineWindow,
        cancel: &CancellationToken,
    ) -> Result<WindowText, ReadError> {
        match self
            .call(Call::ReadLines(path.to_path_buf(), window), cancel)
            .await
        {
            Ok(Reply::Lines(text)) => text.map_err(Into::into),
            Ok(other) => Err(io_unexpected(&other).into()),
            Err(error) => Err(read_error(error)),
        }
    }
}

/// `mkdir`, `write_file` and edit's `access`: done, or an [`FsError`].
fn fs_done(reply: Result<Reply, Lost>) -> Result<(), FsError> {
    match reply {
        Ok(Reply::Done(done)) => done.map_err(Into::into),
        Ok(other) => Err(FsError::other(unexpected(&other))),
        Err(lost) => Err(FsError::other(lost.to_string())),
    }
}

/// Files are queued per host, by their lexical path, the working directory
/// spelled as its links resolve: given through a link (`--remote
/// host:/srv/app` where `/srv/app` links to `/data/app`), the model names a
/// file both ways (`q.txt` and the path `pwd` prints), and two queues for one
/// file lost half of a batch's edits. Other links, symbolic or hard, stay
/// two queues (resolving each path, or asking for its inode, would cost a
/// round trip before the call takes its turn).
impl MutationTarget for RemoteOperations {
    fn host(&self) -> Option<String> {
        Some(self.host.queue_name())
    }

    fn queue_key(&self, path: &Path) -> FileKey {
        let path = normalize_lexically(path);
        FileKey::Path(match path.strip_prefix(self.host.cwd()) {
            Ok(rest) => self.host.real_cwd().join(rest),
            Err(_) => path,
        })
    }
}

#[async_trait]
impl WriteOperations for RemoteOperations {
    async fn mkdir(&self, dir: &Path) -> Result<(), FsError> {
        fs_done(
            self.ask(Call::Mkdir(dir.to_path_buf(), self.sandbox.clone()))
                .await,
        )
    }

    async fn write_file(&self, path: &Path, content: Vec<u8>) -> Result<(), FsError> {
        let reply = self
            .ask(Call::WriteFile(
                path.to_path_buf(),
                Bytes(content),
                self.sandbox.clone(),
            ))
            .await;
        written(reply, path)
    }
}

/// A write's outcome. One whose connection was lost may still land: the
/// helper finishes the calls it has before it exits, so "lost" is not "not
/// written", and the model is told to look before it writes again.
fn written(reply: Result<Reply, Lost>, path: &Path) -> Result<(), FsError> {
    match reply {
        Err(lost) => Err(FsError::other(format!(
            "{}. The write may have reached {} or not: read it before writing it again",
            lost.to_string().trim_end_matches('.'),
            path.display()
        ))),
        reply => fs_done(reply),
    }
}

#[async_trait]
impl EditOperations for RemoteOperations {
    async fn access(&self, path: &Path) -> Result<(), FsError> {
        fs_done(self.ask(Call::EditAccess(path.to_path_buf())).await)
    }

    async fn read_file(&self, path: &Path) -> Result<Vec<u8>, FsError> {
        match self.ask(Call::EditRead(path.to_path_buf())).await {
            Ok(Reply::File(bytes)) => bytes.map(|Bytes(b)| b).map_err(Into::into),
            Ok(other) => Err(FsError::other(unexpected(&other))),
            Err(lost) => Err(FsError::other(lost.to_string())),
        }
    }

    async fn write_file(&self, path: &Path, content: Vec<u8>) -> Result<(), FsError> {
        WriteOperations::write_file(self, path, content).await
    }
}

#[async_trait]
impl BashOperations for RemoteOperations {
    async fn exec(
        &self,
        command: &str,
        cwd: &Path,
        options: ExecOptions,
    ) -> Result<ExitStatus, ExecError> {
        let lost = |lost: Lost| ExecError::Io(io_lost(lost));
        let connection = match self.host.connection_unless(&options.cancel).await {
            Ok(connection) => connection,
            Err(CallError::Aborted) => return Err(ExecError::Aborted),
            Err(CallError::Lost(why)) => return Err(lost(why)),
        };
        let call = Call::Bash(BashCall {
            command: command.to_owned(),
            cwd: cwd.to_path_buf(),
            env: options.env,
            timeout_ms: options
                .timeout
                .map(|t| u64::try_from(t.as_millis()).unwrap_or(u64::MAX)),
            sandbox: self.sandbox.clone(),
        });
        let mut replies = connection.channel().start_call(call).await.map_err(lost)?;
        let answered = async {
            loop {
                match replies.next(&options.cancel).await.map_err(lost)? {
                    Some(Reply::Output(Bytes(chunk))) => {
                        // A consumer that left still lets the command finish.
                        let _ = options.on_data.send(chunk).await;
                    }
                    Some(Reply::Exit(outcome)) => return outcome.map_err(Into::into),
                    Some(other) => return Err(ExecError::Io(io_unexpected(&other))),
                    None => return Err(lost(Lost("the helper sent no exit status".into()))),
                }
            }
        };
        // The helper kills the command at its timeout; a link that stalls
        // (a suspended sshd, a dead network without keepalives) would hold
        // the call until ssh noticed, minutes later, so the timeout is kept
        // here too, with a grace for the helper's answer to arrive.
        let Some(timeout) = options.timeout else {
            return answered.await;
        };
        match tokio::time::timeout(timeout + STALLED_LINK_GRACE, answered).await {
            Ok(outcome) => outcome,
            Err(_) => {
                let why = format!(
                    "no answer from the remote host {} s after the command's timeout of {} s (the connection is stalled)",
                    STALLED_LINK_GRACE.as_secs(),
                    timeout.as_secs_f64()
                );
                // The next call connects again: kept, it waited on the
                // stalled link until ssh gave up, most of a minute.
                connection.channel().abandon(why.clone());
                Err(lost(Lost(why)))
            }
        }
    }

    fn output_log(&self, dir: Option<&Path>, prefix: &str) -> Box<dyn OutputLog> {
        Box::new(RemoteOutputLog::new(
            Arc::clone(&self.host),
            dir.map(Path::to_path_buf),
            prefix,
        ))
    }
}

#[async_trait]
impl GrepOperations for RemoteOperations {
    async fn search(
        &self,
        request: GrepRequest,
        cancel: CancellationToken,
    ) -> Result<Searched<GrepMatch>, SearchError> {
        self.walk(Call::Grep(request), &cancel, |reply| match reply {
            Reply::Grep(found) => Ok(found),
            other => Err(other),
        })
        .await
    }
}

#[async_trait]
impl FindOperations for RemoteOperations {
    async fn glob(
        &self,
        request: FindRequest,
        cancel: CancellationToken,
    ) -> Result<Searched<String>, SearchError> {
        self.walk(Call::Find(request), &cancel, |reply| match reply {
            Reply::Find(found) => Ok(found),
            other => Err(other),
        })
        .await
    }
}

#[async_trait]
impl LsOperations for RemoteOperations {
    async fn exists(&self, path: &Path) -> bool {
        matches!(
            self.ask(Call::LsExists(path.to_path_buf())).await,
            Ok(Reply::Exists(true))
        )
    }

    async fn stat(&self, path: &Path) -> io::Result<EntryStat> {
        match self.ask(Call::LsStat(path.to_path_buf())).await {
            Ok(Reply::Stat(stat)) => stat.map_err(Into::into),
            Ok(other) => Err(io_unexpected(&other)),
            Err(lost) => Err(io_lost(lost)),
        }
    }

    async fn read_dir(&self, path: &Path) -> io::Result<Vec<OsString>> {
        match self.ask(Call::LsReadDir(path.to_path_buf())).await {
            Ok(Reply::Names(names)) => names
                .map(|names| {
                    names
                        .into_iter()
                        .map(|Bytes(b)| OsString::from_vec(b))
                        .collect()
                })
                .map_err(Into::into),
            Ok(other) => Err(io_unexpected(&other)),
            Err(lost) => Err(io_lost(lost)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_whose_connection_was_lost_may_have_landed_and_says_so() {
        let lost = Err(Lost(
            "Connection to 127.0.0.1 closed by remote host.".into(),
        ));
        assert_eq!(
            written(lost, Path::new("/srv/app/config.toml"))
                .unwrap_err()
                .to_string(),
            "Remote connection lost: Connection to 127.0.0.1 closed by remote host. The write may have reached /srv/app/config.toml or not: read it before writing it again"
        );
        assert!(written(Ok(Reply::Done(Ok(()))), Path::new("a")).is_ok());
    }
}
