//! The helper: this binary on the remote host (`coding-agent remote-helper`),
//! answering [`Call`]s on its stdin and stdout with the local Operations.
//!
//! Running the same code as a local tool is what makes remote answers
//! byte-identical: grep and find walk with the in-process ignore rules and
//! ordering, read streams its window, writes are atomic, bash runs in its
//! own process group. Each call runs on its own task, or on a thread of the
//! whole-call pool (`remote/pool.rs`), so a parallel batch runs in parallel
//! here too.
//!
//! When its stdin ends (the connection dropped, or the agent exited), every
//! running call is cancelled, which kills every command's process group, and
//! the helper exits: nothing is left running on the remote host.

use std::collections::HashMap;
use std::io;
use std::os::unix::ffi::OsStringExt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{Semaphore, mpsc};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use super::pool::WholePool;
use super::protocol::{
    BashCall, Bytes, Call, Frame, GREETING, OUTPUT_WINDOW, Probed, RemoteSandbox, Reply, WireFs,
    WireIo, WireRead, read_frame, write_frames,
};
use super::whole::run_whole;
use crate::sandbox::{
    Grant, KernelError, SandboxPolicy, Sandboxed, SandboxedBashOperations, running_executable,
};
use crate::support::sync::lock;
use crate::support::walk::LocalSearchOperations;
use crate::tools::bash::log::{create_log_file, log_dir};
use crate::tools::bash::ops::{BashOperations, ExecError, ExecOptions, LocalBashOperations};
use crate::tools::edit::ops::EditOperations;
use crate::tools::find::ops::FindOperations;
use crate::tools::grep::ops::GrepOperations;
use crate::tools::ls::ops::{LocalLsOperations, LsOperations};
use crate::tools::read::ops::{LocalReadOperations, ReadOperations};
use crate::tools::write::ops::{LocalFileOperations, WriteOperations};

/// Bytes read from the channel at a time, at most.
const READ_BUFFER_BYTES: usize = 64 * 1024;

/// Replies waiting for the writer, at most; a slow link slows the calls.
const REPLIES_IN_FLIGHT: usize = 64;

/// How long calls may take to end once the connection is gone.
const CALLS_DRAIN: Duration = Duration::from_secs(2);

/// Output chunks of one command waiting to be framed, at most.
const CHUNKS_IN_FLIGHT: usize = 16;

/// The version a helper answers with; the local side starts only its own.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The calls running: how to cancel each, and its output window (see
/// [`OUTPUT_WINDOW`]).
type Running = Arc<Mutex<HashMap<u64, (CancellationToken, Arc<Semaphore>)>>>;

/// Serves calls from `input` until it ends, writing replies to `output`.
pub async fn serve(
    input: impl AsyncRead + Unpin,
    mut output: impl AsyncWrite + Unpin + Send + 'static,
) -> io::Result<()> {
    use tokio::io::AsyncWriteExt as _;
    output
        .write_all(format!("{GREETING} {VERSION}\n").as_bytes())
        .await?;
    output.flush().await?;
    let (replies, mut outgoing) = mpsc::channel::<Frame<Reply>>(REPLIES_IN_FLIGHT);
    let writer = tokio::spawn(async move {
        let mut buffer = Vec::new();
        while let Some(frame) = outgoing.recv().await {
            // An answer too large to send refuses its call instead.
            let mut refuse = |id, why: String| {
                Some(Frame {
                    id,
                    body: Reply::Refused(format!("its answer is {why}")),
                })
            };
            if write_frames(&mut output, frame, &mut outgoing, &mut buffer, &mut refuse)
                .await
                .is_err()
            {
                // The connection is gone; the reader sees it too and stops.
                break;
            }
        }
    });
    // Buffered: the calls of a batch arrive together and are read with one
    // system call, not two per frame.
    let mut input = tokio::io::BufReader::with_capacity(READ_BUFFER_BYTES, input);
    let running: Running = Arc::default();
    let mut calls = JoinSet::new();
    let whole_calls = WholePool::per_core(replies.clone());
    let ended = loop {
        match read_frame::<Call>(&mut input).await {
            Ok(Some(Frame {
                id,
                body: Call::Cancel,
            })) => {
                if let Some((cancel, _)) = lock(&running).get(&id) {
                    cancel.cancel();
                }
            }
            Ok(Some(Frame {
                id,
                body: Call::Taken,
            })) => {
                if let Some((_, window)) = lock(&running).get(&id) {
                    window.add_permits(1);
                }
            }
            Ok(Some(Frame { id, body })) => {
                let cancel = CancellationToken::new();
                let window = Arc::new(Semaphore::new(OUTPUT_WINDOW));
                lock(&running).insert(id, (cancel.clone(), Arc::clone(&window)));
                let whole = matches!(body, Call::Tool(_));
                // bash sends its output through `output` as it runs.
                let (output, running) = (replies.clone(), Arc::clone(&running));
                let call = async move {
                    let reply = answer(id, body, cancel, &window, &output).await;
                    lock(&running).remove(&id);
                    Frame { id, body: reply }
                };
                if whole {
                    // A whole read or ls blocks on files from start to end;
                    // the pool sends its reply.
                    whole_calls.submit(Box::pin(call));
                } else {
                    let replies = replies.clone();
                    calls.spawn(async move {
                        let _ = replies.send(call.await).await;
                    });
                }
            }
            Ok(None) => break Ok(()),
            Err(e) => break Err(e),
        }
        // Reap finished calls so the set stays as small as the running ones.
        while calls.try_join_next().is_some() {}
    };
    for (cancel, _) in lock(&running).values() {
        cancel.cancel();
    }
    // Cancelled commands die at once (their groups are killed); a read
    // blocked in the kernel (a FIFO nobody writes) cannot be interrupted, so
    // it is given up on: the process exits anyway (see `serve_stdio`).
    let _ = tokio::time::timeout(CALLS_DRAIN, async {
        while calls.join_next().await.is_some() {}
        whole_calls.finished().await;
    })
    .await;
    // The writer ends once every sender is gone, the pool's included.
    drop(whole_calls);
    drop(replies);
    let _ = tokio::time::timeout(Duration::from_secs(1), writer).await;
    ended
}

/// Serves on the process's own stdin and stdout (the hidden subcommand).
/// The caller should exit the process once this returns rather than wait
/// for the runtime: a blocking read may never end.
///
/// sshd gives the helper pipes; they are read and written as non-blocking
/// pipes on the runtime itself. Tokio's `stdin()`/`stdout()`, the fallback
/// for anything else, hand every read and write to a blocking thread and
/// back: three thread switches per call.
pub async fn serve_stdio() -> io::Result<()> {
    use std::os::fd::AsFd as _;
    use std::os::unix::fs::FileTypeExt as _;
    use tokio::net::unix::pipe;
    let input = std::fs::File::from(std::io::stdin().as_fd().try_clone_to_owned()?);
    let output = std::fs::File::from(std::io::stdout().as_fd().try_clone_to_owned()?);
    let is_pipe = |file: &std::fs::File| file.metadata().is_ok_and(|m| m.file_type().is_fifo());
    if is_pipe(&input) && is_pipe(&output) {
        return serve(
            pipe::Receiver::from_file(input)?,
            pipe::Sender::from_file(output)?,
        )
        .await;
    }
    serve(tokio::io::stdin(), tokio::io::stdout()).await
}

/// Runs one call with the local Operations; `bash` streams its output
/// through `replies` first.
async fn answer(
    id: u64,
    call: Call,
    cancel: CancellationToken,
    window: &Semaphore,
    replies: &mpsc::Sender<Frame<Reply>>,
) -> Reply {
    let read = LocalReadOperations;
    let ls = LocalLsOperations;
    match call {
        Call::ReadExists(path) => Reply::Exists(read.exists(&path).await),
        Call::ReadAccess(path) => Reply::FileInfo(read.access(&path).await.map_err(wire_io)),
        Call::ReadPrefix(path, len) => Reply::Prefix(
            read.read_prefix(&path, len)
                .await
                .map(Bytes)
                .map_err(wire_io),
        ),
        Call::ReadAll(path) => Reply::All(
            read.read_all(&path, &cancel)
                .await
                .map(Bytes)
                .map_err(WireRead::from),
        ),
        Call::ReadLines(path, window) => Reply::Lines(
            read.read_lines(&path, window, &cancel)
                .await
                .map_err(WireRead::from),
        ),
        Call::Mkdir(dir, sandbox) => Reply::Done(
            writes_under(sandbox)
                .mkdir(&dir)
                .await
                .map_err(WireFs::from),
        ),
        Call::WriteFile(path, Bytes(content), sandbox) => Reply::Done(
            WriteOperations::write_file(&*writes_under(sandbox), &path, content)
                .await
                .map_err(WireFs::from),
        ),
        Call::EditAccess(path) => Reply::Done(
            LocalFileOperations
                .access(&path)
                .await
                .map_err(WireFs::from),
        ),
        Call::EditRead(path) => Reply::File(
            LocalFileOperations
                .read_file(&path)
                .await
                .map(Bytes)
                .map_err(WireFs::from),
        ),
        Call::Bash(bash) => run_bash(id, bash, cancel, window, replies).await,
        Call::Grep(request) => Reply::Grep(
            LocalSearchOperations::default()
                .search(request, cancel)
                .await,
        ),
        Call::Find(request) => {
            Reply::Find(LocalSearchOperations::default().glob(request, cancel).await)
        }
        Call::LsExists(path) => Reply::Exists(ls.exists(&path).await),
        Call::LsStat(path) => Reply::Stat(ls.stat(&path).await.map_err(wire_io)),
        Call::RealPath(path) => {
            Reply::RealPath(tokio::fs::canonicalize(&path).await.map_err(wire_io))
        }
        Call::LsReadDir(path) => Reply::Names(
            ls.read_dir(&path)
                .await
                .map(|names| names.into_iter().map(|n| Bytes(n.into_vec())).collect())
                .map_err(wire_io),
        ),
        Call::LogCreate(dir, prefix) => Reply::Created(
            blocking(move || create_log_file(&log_dir(dir.as_deref()), &prefix).map(|(p, _)| p))
                .await,
        ),
        Call::LogAppend(path, Bytes(bytes)) => Reply::Io(
            blocking(move || {
                use std::io::Write as _;
                std::fs::OpenOptions::new()
                    .append(true)
                    .open(path)?
                    .write_all(&bytes)
            })
            .await,
        ),
        Call::LogRemove(path) => Reply::Io(blocking(move || std::fs::remove_file(path)).await),
        Call::Tool(call) => run_whole(call, cancel).await,
        Call::SandboxProbe(sandbox) => Reply::Sandbox(Probed {
            kernel: tokio::task::spawn_blocking(crate::sandbox::kernel::probe)
                .await
                .unwrap_or_else(|e| Err(KernelError::Refused(e.to_string()))),
            granted: made_here(&sandbox).1,
        }),
        Call::Ping => Reply::Pong,
        Call::Cancel | Call::Taken => Reply::Refused("not a call of its own".into()),
    }
}

/// Runs file work off the helper's async threads.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> io::Result<T> + Send + 'static,
) -> Result<T, WireIo> {
    crate::support::blocking::blocking(work)
        .await
        .map_err(wire_io)
}

fn wire_io(error: io::Error) -> WireIo {
    WireIo::from(&error)
}

/// Runs a command with the local bash operations, forwarding its output as
/// it arrives, within its `window`.
async fn run_bash(
    id: u64,
    bash: BashCall,
    cancel: CancellationToken,
    window: &Semaphore,
    replies: &mpsc::Sender<Frame<Reply>>,
) -> Reply {
    let (on_data, mut chunks) = mpsc::channel::<Vec<u8>>(CHUNKS_IN_FLIGHT);
    let forward = {
        let replies = replies.clone();
        let cancel = cancel.clone();
        async move {
            while let Some(chunk) = chunks.recv().await {
                // Sent once the caller took an earlier chunk; a caller that
                // left cancels the call, and the rest is dropped.
                tokio::select! {
                    permit = window.acquire() => match permit {
                        Ok(permit) => permit.forget(),
                        Err(_) => break,
                    },
                    () = cancel.cancelled() => break,
                }
                let frame = Frame {
                    id,
                    body: Reply::Output(Bytes(chunk)),
                };
                if replies.send(frame).await.is_err() {
                    break;
                }
            }
        }
    };
    let options = ExecOptions {
        env: bash.env,
        timeout: bash.timeout_ms.map(Duration::from_millis),
        cancel,
        on_data,
    };
    let exec: Box<dyn BashOperations> = match &bash.sandbox {
        None => Box::new(LocalBashOperations::new()),
        // The sandbox helper is this binary (`docs/permissions.md`).
        Some(sandbox) => match running_executable() {
            Ok(me) => Box::new(SandboxedBashOperations::new(&me, policy_of(sandbox))),
            Err(e) => return Reply::Exit(Err(ExecError::Io(e).into())),
        },
    };
    let (outcome, ()) = tokio::join!(exec.exec(&bash.command, &bash.cwd, options), forward);
    Reply::Exit(outcome.map_err(Into::into))
}

/// This host's files, limited to what `sandbox` lets commands write (the
/// policy made here, links resolved here), as write and edit are locally.
fn writes_under(sandbox: Option<RemoteSandbox>) -> Arc<dyn WriteOperations> {
    match sandbox {
        Some(sandbox) => Arc::new(Sandboxed::new(policy_of(&sandbox))),
        None => Arc::new(LocalFileOperations),
    }
}

/// The policy of `sandbox` on this host.
fn policy_of(sandbox: &RemoteSandbox) -> SandboxPolicy {
    made_here(sandbox).0
}

/// The policy of `sandbox` on this host and what it grants, made (its roots
/// resolved) the first time this helper sees it (the sandbox probe, at
/// start) and kept: made again for each call, it followed a root a command
/// had replaced with a link, as a local session's would
/// ([`SandboxPolicy::for_workspace`]).
fn made_here(sandbox: &RemoteSandbox) -> (SandboxPolicy, Grant) {
    static MADE: Mutex<Vec<(RemoteSandbox, (SandboxPolicy, Grant))>> = Mutex::new(Vec::new());
    let mut made = lock(&MADE);
    if let Some((_, policy)) = made.iter().find(|(seen, _)| seen == sandbox) {
        return policy.clone();
    }
    let policy = sandbox.policy();
    made.push((sandbox.clone(), policy.clone()));
    policy
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::remote::protocol::read_greeting;

    /// A command that prints without end sends `OUTPUT_WINDOW` chunks, then
    /// waits until one is taken: its output cannot pile up on the caller.
    #[tokio::test]
    async fn output_stops_at_the_window_until_a_chunk_is_taken() {
        let (local, remote) = tokio::io::duplex(1 << 16);
        let (remote_read, remote_write) = tokio::io::split(remote);
        tokio::spawn(serve(remote_read, remote_write));
        let (mut from_helper, mut to_helper) = tokio::io::split(local);
        read_greeting(&mut from_helper).await.unwrap();
        let dir = tempfile::tempdir().unwrap();
        let (queue, mut queued) = mpsc::channel(4);
        let mut send = async |body| {
            let frame = Frame { id: 1, body };
            write_frames(
                &mut to_helper,
                frame,
                &mut queued,
                &mut Vec::new(),
                &mut |_, _| unreachable!(),
            )
            .await
            .unwrap();
        };
        send(Call::Bash(BashCall {
            command: "yes".into(),
            cwd: dir.path().to_path_buf(),
            env: Vec::new(),
            timeout_ms: None,
            sandbox: None,
        }))
        .await;
        // A frame that is due gets seconds (a loaded machine); one that must
        // not come, half a second to show it does not.
        let (due, never) = (Duration::from_secs(10), Duration::from_millis(500));
        let mut next = async |wait| {
            tokio::time::timeout(wait, read_frame::<Reply>(&mut from_helper))
                .await
                .ok()
                .map(|frame| frame.unwrap().unwrap().body)
        };
        for _ in 0..OUTPUT_WINDOW {
            assert!(matches!(next(due).await, Some(Reply::Output(_))));
        }
        assert!(next(never).await.is_none(), "more than the window was sent");
        send(Call::Taken).await;
        assert!(matches!(next(due).await, Some(Reply::Output(_))));
        assert!(next(never).await.is_none(), "one taken, more than one sent");
        send(Call::Cancel).await;
        drop(queue);
    }
}
