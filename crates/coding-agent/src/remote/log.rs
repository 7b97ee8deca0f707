//! The full-output file of a remote bash command: created and written on
//! the remote host (in the helper's temp directory unless the bash tool
//! names one), so the truncation notice names a path there, which the
//! model's next `read` or `bash` on that host can open.
//!
//! The output reached this machine to be shown, so the part kept in the
//! file travels back in chunks of 1 MiB: a command printing
//! 100 MB moves it twice over the link (see `docs/remote.md`, Limits).

use std::io;
use std::path::PathBuf;
use std::sync::Arc;

use tokio::runtime::Handle;

use super::connection::RemoteHost;
use super::protocol::{Bytes, Call, Reply};
use crate::tools::bash::log::OutputLog;

/// Bytes gathered before one append call.
const CHUNK_BYTES: usize = 1024 * 1024;

/// A full-output file on the remote host.
pub struct RemoteOutputLog {
    host: Arc<RemoteHost>,
    /// The runtime the calls run on: the log's methods run on a blocking
    /// thread, which waits for each call.
    runtime: Option<Handle>,
    dir: Option<PathBuf>,
    prefix: String,
    path: Option<PathBuf>,
    pending: Vec<u8>,
}

impl RemoteOutputLog {
    /// A log to be created in `dir` (default: the remote temp directory);
    /// must be made on the async runtime.
    pub fn new(host: Arc<RemoteHost>, dir: Option<PathBuf>, prefix: &str) -> Self {
        RemoteOutputLog {
            host,
            runtime: Handle::try_current().ok(),
            dir,
            prefix: prefix.to_owned(),
            path: None,
            pending: Vec::new(),
        }
    }

    /// Runs `call` to its reply, waiting on this (blocking) thread.
    fn call(&self, call: Call) -> io::Result<Reply> {
        let runtime = self.runtime.as_ref().ok_or_else(|| {
            io::Error::other("the remote full-output file needs the async runtime")
        })?;
        runtime
            .block_on(self.host.ask(call))
            .map_err(|lost| io::Error::other(lost.to_string()))
    }

    fn done(&self, call: Call) -> io::Result<()> {
        match self.call(call)? {
            Reply::Io(done) => done.map_err(Into::into),
            other => Err(io::Error::other(format!(
                "the remote helper answered {other:?}"
            ))),
        }
    }

    fn path(&self) -> io::Result<PathBuf> {
        self.path
            .clone()
            .ok_or_else(|| io::Error::other("the full-output file was not created"))
    }

    fn send_pending(&mut self) -> io::Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let chunk = Bytes(std::mem::take(&mut self.pending));
        self.done(Call::LogAppend(self.path()?, chunk))
    }
}

impl OutputLog for RemoteOutputLog {
    fn create(&mut self) -> io::Result<PathBuf> {
        if let Some(path) = &self.path {
            return Ok(path.clone());
        }
        let path = match self.call(Call::LogCreate(self.dir.clone(), self.prefix.clone()))? {
            Reply::Created(path) => path?,
            other => {
                return Err(io::Error::other(format!(
                    "the remote helper answered {other:?}"
                )));
            }
        };
        self.path = Some(path.clone());
        Ok(path)
    }

    fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.path()?;
        self.pending.extend_from_slice(bytes);
        if self.pending.len() >= CHUNK_BYTES {
            self.send_pending()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.send_pending()
    }

    fn remove(&mut self) -> io::Result<()> {
        self.pending.clear();
        match self.path.take() {
            Some(path) => self.done(Call::LogRemove(path)),
            None => Ok(()),
        }
    }
}
