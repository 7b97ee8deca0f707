//! The helper protocol: what the local side asks the helper on the remote
//! host, and what comes back, over one SSH channel (the helper's stdin and
//! stdout).
//!
//! One [`Call`] per Operations method, so the helper runs exactly the local
//! implementation and its answer crosses unchanged. Every frame carries the
//! id of its call, so calls of a parallel batch run at once on one channel
//! (sshd's default `MaxSessions 10` is never approached). A call gets one
//! final [`Reply`]; `bash` first streams [`Reply::Output`] chunks. A
//! [`Call::Cancel`] with a call's id cancels it (the helper still sends its
//! final reply: `Aborted`, or the answer that was already on its way).
//!
//! Framing: the helper first writes [`GREETING`] and its version on a line of
//! their own (whatever a login script printed before is skipped), then both
//! sides write frames: a 4-byte big-endian length and that many bytes of JSON.

use std::io;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use super::whole::{ToolAnswer, ToolCall};
use crate::sandbox::{Enforced, Grant, KernelError, SandboxMode, SandboxPolicy};
use crate::support::fs_error::FsError;
use crate::support::truncate::format_size;
use crate::support::walk::{SearchError, Searched};
use crate::tools::bash::ops::{ExecError, ExitStatus};
use crate::tools::find::ops::FindRequest;
use crate::tools::grep::ops::{GrepMatch, GrepRequest};
use crate::tools::ls::ops::EntryStat;
use crate::tools::read::lines::{LineWindow, WindowText};
use crate::tools::read::ops::{FileInfo, ReadError};

/// The helper's first line starts with this, then a space and its version.
pub const GREETING: &str = "coding-agent-remote-helper";

/// A frame larger than this is refused: the stream is not ours (a login
/// script printing after the greeting) or is corrupt. A whole file travels
/// in one frame (edit's read and write, a written file, grep's matches), so
/// the sender never sends one this large: the call is refused instead (see
/// `push_frame`).
pub const MAX_FRAME_BYTES: usize = 512 * 1024 * 1024;

/// One message on the channel: the call's id and its body.
#[derive(Debug, Serialize, Deserialize)]
pub struct Frame<T> {
    /// Chosen by the local side, unique per connection.
    pub id: u64,
    /// The call or the reply.
    pub body: T,
}

/// Bytes, as base64 in the JSON.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Bytes(pub Vec<u8>);

impl Serialize for Bytes {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use base64::Engine as _;
        serializer.serialize_str(&base64::engine::general_purpose::STANDARD.encode(&self.0))
    }
}

impl<'de> Deserialize<'de> for Bytes {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use base64::Engine as _;
        let text = String::deserialize(deserializer)?;
        base64::engine::general_purpose::STANDARD
            .decode(text)
            .map(Bytes)
            .map_err(serde::de::Error::custom)
    }
}

/// What the local side asks: one variant per Operations method.
#[derive(Debug, Serialize, Deserialize)]
pub enum Call {
    /// `ReadOperations::exists`.
    ReadExists(PathBuf),
    /// `ReadOperations::access`.
    ReadAccess(PathBuf),
    /// `ReadOperations::read_prefix`.
    ReadPrefix(PathBuf, usize),
    /// `ReadOperations::read_all`.
    ReadAll(PathBuf),
    /// `ReadOperations::read_lines`.
    ReadLines(PathBuf, LineWindow),
    /// `WriteOperations::mkdir`, refused outside the sandbox when one is
    /// given.
    Mkdir(PathBuf, Option<RemoteSandbox>),
    /// `WriteOperations::write_file` and `EditOperations::write_file`,
    /// refused outside the sandbox when one is given: the host resolves the
    /// path's links, which this machine cannot see.
    WriteFile(PathBuf, Bytes, Option<RemoteSandbox>),
    /// `EditOperations::access`.
    EditAccess(PathBuf),
    /// `EditOperations::read_file`.
    EditRead(PathBuf),
    /// `BashOperations::exec`.
    Bash(BashCall),
    /// `GrepOperations::search`.
    Grep(GrepRequest),
    /// `FindOperations::glob`.
    Find(FindRequest),
    /// `LsOperations::exists`.
    LsExists(PathBuf),
    /// `LsOperations::stat`.
    LsStat(PathBuf),
    /// `LsOperations::read_dir`.
    LsReadDir(PathBuf),
    /// The path with its links resolved (asked of the working directory
    /// once, at connect: see `RemoteOperations::queue_key`).
    RealPath(PathBuf),
    /// `BashOperations::output_log`: create a full-output file in the
    /// directory (default: the helper's temp directory) with this prefix.
    LogCreate(Option<PathBuf>, String),
    /// Append to a full-output file.
    LogAppend(PathBuf, Bytes),
    /// Remove a full-output file.
    LogRemove(PathBuf),
    /// Run a tool whole on the helper (`read`, `ls`: see `remote/whole.rs`).
    Tool(ToolCall),
    /// What the helper's kernel can enforce of the sandbox, and what this
    /// sandbox's policy, made there, grants ([`Probed`]; asked once, at
    /// start).
    SandboxProbe(RemoteSandbox),
    /// Cancel the call with this frame's id.
    Cancel,
    /// One output chunk of the call with this frame's id was taken: the
    /// helper may send another (see [`OUTPUT_WINDOW`]).
    Taken,
    /// Whether the helper still reads and answers ([`Reply::Pong`]), asked
    /// when a call has heard nothing for a while.
    Ping,
}

/// Output chunks of one call sent and not yet taken, at most. The helper
/// sends the next only once the caller took one (`Call::Taken`), so a
/// command that prints faster than its output is taken (bash's output log
/// appends it to the remote file as it comes) waits on its pipe, instead of
/// piling up in this machine's memory: 1 GB printed kept 240 MB here.
pub const OUTPUT_WINDOW: usize = 64;

/// A command for the helper to run (the data of `BashOperations::exec`).
#[derive(Debug, Serialize, Deserialize)]
pub struct BashCall {
    /// The command, for `bash -c`.
    pub command: String,
    /// Its working directory.
    pub cwd: PathBuf,
    /// Variables set on top of the helper's environment.
    pub env: Vec<(String, String)>,
    /// Kill it after this many milliseconds.
    pub timeout_ms: Option<u64>,
    /// Run it under this sandbox (Landlock there); `None`: unconfined.
    pub sandbox: Option<RemoteSandbox>,
}

/// The sandbox of a remote command, as the session asked for it. The helper
/// makes the policy itself, so the writable temp directories are the remote
/// host's, not this machine's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RemoteSandbox {
    /// `read-only` or `workspace-write`.
    pub mode: SandboxMode,
    /// The remote working directory and the extra writable roots.
    pub workspace_roots: Vec<PathBuf>,
    /// TCP allowed.
    pub allow_network: bool,
}

impl RemoteSandbox {
    /// The policy on the host the helper runs on, and what it grants there
    /// (that host's home folder and `$TMPDIR` decide it).
    pub fn policy(&self) -> (SandboxPolicy, Grant) {
        let (policy, granted) =
            SandboxPolicy::for_workspace_saying(self.mode, &self.workspace_roots);
        (policy.with_network(self.allow_network), granted)
    }
}

/// The helper's answer to [`Call::SandboxProbe`]: the session's sandbox is
/// decided from it, and its start notice says what it grants, as the
/// remote host enforces it.
#[derive(Debug, Serialize, Deserialize)]
pub struct Probed {
    /// What the kernel there enforces, or why it cannot.
    pub kernel: Result<Enforced, KernelError>,
    /// What the policy made there lets commands write.
    pub granted: Grant,
}

/// What comes back.
#[derive(Debug, Serialize, Deserialize)]
pub enum Reply {
    /// `exists` answers.
    Exists(bool),
    /// `ReadOperations::access`.
    FileInfo(Result<FileInfo, WireIo>),
    /// `read_prefix`.
    Prefix(Result<Bytes, WireIo>),
    /// `read_all`.
    All(Result<Bytes, WireRead>),
    /// `read_lines`.
    Lines(Result<WindowText, WireRead>),
    /// `mkdir`, `write_file`, `EditOperations::access`.
    Done(Result<(), WireFs>),
    /// `EditOperations::read_file`.
    File(Result<Bytes, WireFs>),
    /// A chunk of a command's output (not final).
    Output(Bytes),
    /// How a command ended.
    Exit(Result<ExitStatus, WireExec>),
    /// `grep`.
    Grep(Result<Searched<GrepMatch>, SearchError>),
    /// `find`.
    Find(Result<Searched<String>, SearchError>),
    /// `LsOperations::stat`.
    Stat(Result<EntryStat, WireIo>),
    /// `LsOperations::read_dir`: the names' bytes.
    Names(Result<Vec<Bytes>, WireIo>),
    /// `LogCreate`: the file's path on the remote.
    Created(Result<PathBuf, WireIo>),
    /// `LogAppend`, `LogRemove`.
    Io(Result<(), WireIo>),
    /// `RealPath`.
    RealPath(Result<PathBuf, WireIo>),
    /// A tool run whole: its result or its error.
    Tool(ToolAnswer),
    /// `SandboxProbe`.
    Sandbox(Probed),
    /// The helper could not take the call (a version mismatch).
    Refused(String),
    /// `Ping`: the helper reads and answers.
    Pong,
}

impl Reply {
    /// Whether this reply ends its call (everything but output chunks).
    pub fn is_final(&self) -> bool {
        !matches!(self, Reply::Output(_))
    }
}

/// An [`io::Error`] across the wire: the OS error number when there is one
/// (both ends run the same OS: the helper is only started after checking),
/// else the kind's name and the text.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WireIo {
    os: Option<i32>,
    kind: String,
    message: String,
}

/// The kinds kept by name when an error has no OS number.
const KINDS: [io::ErrorKind; 8] = [
    io::ErrorKind::NotFound,
    io::ErrorKind::PermissionDenied,
    io::ErrorKind::AlreadyExists,
    io::ErrorKind::IsADirectory,
    io::ErrorKind::NotADirectory,
    io::ErrorKind::Interrupted,
    io::ErrorKind::InvalidData,
    io::ErrorKind::UnexpectedEof,
];

impl From<&io::Error> for WireIo {
    fn from(error: &io::Error) -> Self {
        WireIo {
            os: error.raw_os_error(),
            kind: format!("{:?}", error.kind()),
            message: error.to_string(),
        }
    }
}

impl From<WireIo> for io::Error {
    fn from(wire: WireIo) -> Self {
        if let Some(code) = wire.os {
            return io::Error::from_raw_os_error(code);
        }
        let kind = KINDS
            .into_iter()
            .find(|kind| format!("{kind:?}") == wire.kind)
            .unwrap_or(io::ErrorKind::Other);
        io::Error::new(kind, wire.message)
    }
}

/// A [`ReadError`] across the wire.
#[derive(Debug, Serialize, Deserialize)]
pub enum WireRead {
    /// [`ReadError::Aborted`].
    Aborted,
    /// [`ReadError::Io`].
    Io(WireIo),
}

impl From<ReadError> for WireRead {
    fn from(error: ReadError) -> Self {
        match error {
            ReadError::Aborted => WireRead::Aborted,
            ReadError::Io(e) => WireRead::Io(WireIo::from(&e)),
        }
    }
}

impl From<WireRead> for ReadError {
    fn from(wire: WireRead) -> Self {
        match wire {
            WireRead::Aborted => ReadError::Aborted,
            WireRead::Io(e) => ReadError::Io(e.into()),
        }
    }
}

/// An [`FsError`] across the wire.
#[derive(Debug, Serialize, Deserialize)]
pub struct WireFs {
    code: Option<String>,
    message: String,
}

impl From<FsError> for WireFs {
    fn from(error: FsError) -> Self {
        WireFs {
            code: error.code.map(str::to_owned),
            message: error.message,
        }
    }
}

impl From<WireFs> for FsError {
    fn from(wire: WireFs) -> Self {
        FsError::reported(wire.code.as_deref(), wire.message)
    }
}

/// An [`ExecError`] across the wire.
#[derive(Debug, Serialize, Deserialize)]
pub enum WireExec {
    /// [`ExecError::Aborted`].
    Aborted,
    /// [`ExecError::TimedOut`].
    TimedOut,
    /// [`ExecError::CwdMissing`].
    CwdMissing(PathBuf),
    /// [`ExecError::ShellNotFound`].
    ShellNotFound(PathBuf),
    /// [`ExecError::Spawn`].
    Spawn(PathBuf, String),
    /// [`ExecError::Io`].
    Io(WireIo),
}

impl From<ExecError> for WireExec {
    fn from(error: ExecError) -> Self {
        match error {
            ExecError::Aborted => WireExec::Aborted,
            ExecError::TimedOut => WireExec::TimedOut,
            ExecError::CwdMissing(path) => WireExec::CwdMissing(path),
            ExecError::ShellNotFound(path) => WireExec::ShellNotFound(path),
            ExecError::Spawn { shell, reason } => WireExec::Spawn(shell, reason),
            ExecError::Io(e) => WireExec::Io(WireIo::from(&e)),
        }
    }
}

impl From<WireExec> for ExecError {
    fn from(wire: WireExec) -> Self {
        match wire {
            WireExec::Aborted => ExecError::Aborted,
            WireExec::TimedOut => ExecError::TimedOut,
            WireExec::CwdMissing(path) => ExecError::CwdMissing(path),
            WireExec::ShellNotFound(path) => ExecError::ShellNotFound(path),
            WireExec::Spawn(shell, reason) => ExecError::Spawn { shell, reason },
            WireExec::Io(e) => ExecError::Io(e.into()),
        }
    }
}

/// Frames gathered into one write, at most (bytes); a single larger frame
/// still goes whole.
const BATCH_BYTES: usize = 1024 * 1024;

/// Appends one frame (length and JSON) to `out`.
fn encode_frame<T: Serialize>(frame: &Frame<T>, out: &mut Vec<u8>) -> io::Result<()> {
    let start = out.len();
    out.extend_from_slice(&[0; 4]);
    serde_json::to_writer(&mut *out, frame).map_err(io::Error::other)?;
    let len =
        u32::try_from(out.len() - start - 4).map_err(|_| io::Error::other("frame too large"))?;
    out[start..start + 4].copy_from_slice(&len.to_be_bytes());
    Ok(())
}

/// Encodes `frame` onto `out`, unless it would be over [`MAX_FRAME_BYTES`]
/// (the other side takes such a frame for a broken stream, and every call
/// on the connection would be lost): it is taken back and `oversized`
/// gives what goes instead, if anything (the helper: a refusal of that
/// call; the local side has told the caller).
fn push_frame<T: Serialize>(
    frame: Frame<T>,
    out: &mut Vec<u8>,
    max: usize,
    oversized: &mut impl FnMut(u64, String) -> Option<Frame<T>>,
) -> io::Result<()> {
    let start = out.len();
    let encoded = encode_frame(&frame, out);
    let len = out.len() - start - 4;
    if encoded.is_ok() && len <= max {
        return Ok(());
    }
    out.truncate(start);
    let why = format!(
        "too large to send over the remote connection ({}; a message carries at most {})",
        format_size(len),
        format_size(max)
    );
    match oversized(frame.id, why) {
        Some(instead) => encode_frame(&instead, out),
        None => Ok(()),
    }
}

/// Writes `first` and every frame already waiting in `queue` as one write
/// and one flush. The calls (or replies) of a parallel batch then cross the
/// pipe, ssh and the other side's reader together instead of waking each
/// process once per frame.
pub async fn write_frames<T: Serialize>(
    out: &mut (impl AsyncWrite + Unpin),
    first: Frame<T>,
    queue: &mut tokio::sync::mpsc::Receiver<Frame<T>>,
    buffer: &mut Vec<u8>,
    oversized: &mut impl FnMut(u64, String) -> Option<Frame<T>>,
) -> io::Result<()> {
    buffer.clear();
    push_frame(first, buffer, MAX_FRAME_BYTES, oversized)?;
    while buffer.len() < BATCH_BYTES {
        match queue.try_recv() {
            Ok(frame) => push_frame(frame, buffer, MAX_FRAME_BYTES, oversized)?,
            Err(_) => break,
        }
    }
    if buffer.is_empty() {
        return Ok(());
    }
    out.write_all(buffer).await?;
    out.flush().await
}

/// Reads one frame; `Ok(None)` at a clean end of the stream.
pub async fn read_frame<T: for<'de> Deserialize<'de>>(
    input: &mut (impl AsyncRead + Unpin),
) -> io::Result<Option<Frame<T>>> {
    let mut len = [0u8; 4];
    match input.read_exact(&mut len).await {
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    let len = u32::from_be_bytes(len) as usize;
    if len > MAX_FRAME_BYTES {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("a frame of {len} bytes is over the limit of {MAX_FRAME_BYTES}"),
        ));
    }
    let mut json = vec![0u8; len];
    input.read_exact(&mut json).await?;
    serde_json::from_slice(&json)
        .map(Some)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

/// Skips whatever comes before the greeting line (a login script's output)
/// and returns the helper's version from it.
pub async fn read_greeting(input: &mut (impl AsyncRead + Unpin)) -> io::Result<String> {
    let mut line = Vec::new();
    loop {
        let mut byte = [0u8; 1];
        if input.read(&mut byte).await? == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the helper ended before greeting",
            ));
        }
        if byte[0] != b'\n' {
            line.push(byte[0]);
            continue;
        }
        if let Some(version) = greeting_version(&String::from_utf8_lossy(&line)) {
            return Ok(version);
        }
        line.clear();
    }
}

/// The version in `line` when it is the helper's greeting.
pub fn greeting_version(line: &str) -> Option<String> {
    line.strip_prefix(GREETING)
        .and_then(|v| v.strip_prefix(' '))
        .map(|version| version.trim().to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn frames_round_trip_after_a_noisy_login() {
        let mut wire = b"Welcome to the box!\n".to_vec();
        wire.extend_from_slice(format!("{GREETING} 1.2.3\n").as_bytes());
        let frame = Frame {
            id: 7,
            body: Call::WriteFile(PathBuf::from("/a b"), Bytes(vec![0, 255, 10]), None),
        };
        // A second frame already queued goes out in the same write.
        let (queue, mut queued) = tokio::sync::mpsc::channel(4);
        queue
            .send(Frame {
                id: 8,
                body: Call::Cancel,
            })
            .await
            .unwrap();
        write_frames(
            &mut wire,
            frame,
            &mut queued,
            &mut Vec::new(),
            &mut |_, _| unreachable!("no frame is oversized"),
        )
        .await
        .unwrap();
        let mut input = wire.as_slice();
        assert_eq!(read_greeting(&mut input).await.unwrap(), "1.2.3");
        let back: Frame<Call> = read_frame(&mut input).await.unwrap().unwrap();
        assert_eq!(back.id, 7);
        assert!(
            matches!(&back.body, Call::WriteFile(path, Bytes(bytes), None) if path == &PathBuf::from("/a b") && bytes == &[0, 255, 10]),
            "{back:?}"
        );
        let next: Frame<Call> = read_frame(&mut input).await.unwrap().unwrap();
        assert!(
            matches!((next.id, &next.body), (8, Call::Cancel)),
            "{next:?}"
        );
        assert!(read_frame::<Call>(&mut input).await.unwrap().is_none());
    }

    /// A frame past the limit is never written (the reader would take the
    /// stream for broken and every call on it would be lost): what
    /// `oversized` gives goes in its place, and the frames around it go.
    #[tokio::test]
    async fn a_frame_over_the_limit_is_replaced_by_what_its_sender_says() {
        let mut out = Vec::new();
        let small = |id| Frame {
            id,
            body: Reply::Exists(true),
        };
        push_frame(small(1), &mut out, 200, &mut |_, _| unreachable!()).unwrap();
        let mut said = Vec::new();
        let big = Frame {
            id: 2,
            body: Reply::Output(Bytes(vec![b'x'; 1000])),
        };
        push_frame(big, &mut out, 200, &mut |id, why| {
            said.push((id, why));
            Some(Frame {
                id,
                body: Reply::Refused("too large".into()),
            })
        })
        .unwrap();
        push_frame(small(3), &mut out, 200, &mut |_, _| unreachable!()).unwrap();
        assert_eq!(
            said,
            [(
                2,
                "too large to send over the remote connection (1.3KB; a message carries at most 200B)"
                    .to_owned()
            )]
        );
        let mut input = out.as_slice();
        let mut ids_and_bodies = Vec::new();
        while let Some(frame) = read_frame::<Reply>(&mut input).await.unwrap() {
            ids_and_bodies.push(format!("{} {:?}", frame.id, frame.body));
        }
        assert_eq!(
            ids_and_bodies,
            [
                "1 Exists(true)",
                "2 Refused(\"too large\")",
                "3 Exists(true)"
            ]
        );
    }

    #[test]
    fn io_errors_keep_their_os_number_or_kind() {
        let os = io::Error::from(WireIo::from(&io::Error::from_raw_os_error(13)));
        assert_eq!(os.kind(), io::ErrorKind::PermissionDenied);
        let named = io::Error::from(WireIo::from(&io::Error::new(
            io::ErrorKind::NotFound,
            "gone",
        )));
        assert_eq!(
            (named.kind(), named.to_string()),
            (io::ErrorKind::NotFound, "gone".to_owned())
        );
    }
}
