//! How the bash tool runs a command: [`BashOperations`], and the local
//! implementation that runs `<shell> -c <command>` on this machine.
//!
//! The trait is shaped so that a remote (SSH) implementation fits: the command,
//! its working directory and the extra environment travel as data, output comes
//! back as raw bytes through a channel, and the outcome is an exit code or a
//! signal name. Timeout and cancellation are the implementation's job, because
//! only it can stop the command; it reports them as distinct errors
//! ([`ExecError::TimedOut`], [`ExecError::Aborted`]), as Pi's convention does.

use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};
use std::pin::pin;
use std::process::Stdio;
use std::time::Duration;

use async_trait::async_trait;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::sync::{OnceCell, mpsc};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::log::{LocalOutputLog, NoOutputLog, OutputLog};
use crate::support::process_group::{ProcessGroup, detached_command, signal_name};

/// After the shell exits, how long to keep reading output that is still in
/// the pipes (Pi's `EXIT_STDIO_GRACE_MS`). A background child that inherited
/// the pipes (`(server &)`) keeps them open forever; past this grace the call
/// returns anyway and leaves that child running.
pub const EXIT_STDIO_GRACE: Duration = Duration::from_millis(100);

/// Bytes read from the command's pipes at a time.
const READ_CHUNK_BYTES: usize = 64 * 1024;

/// Where output goes while the command runs: raw bytes, stdout and stderr
/// interleaved in arrival order. Bounded, so a slow consumer slows the reader
/// instead of growing memory.
pub type OutputSender = mpsc::Sender<Vec<u8>>;

/// Everything about one run besides the command and its working directory.
#[derive(Debug)]
pub struct ExecOptions {
    /// Variables set on top of the environment the command would get anyway.
    pub env: Vec<(String, String)>,
    /// Kill the command after this long; `None` = no limit.
    pub timeout: Option<Duration>,
    /// Kill the command when this fires.
    pub cancel: CancellationToken,
    /// Receives the output as it arrives (Pi's `onData`).
    pub on_data: OutputSender,
}

/// How a command ended on its own.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum ExitStatus {
    /// The shell exited with this code.
    Code(i32),
    /// The shell was killed by this signal (`SIGKILL`), for example by the OOM killer.
    Signal(String),
}

/// Why a command produced no [`ExitStatus`].
#[derive(Debug, thiserror::Error)]
pub enum ExecError {
    /// Cancelled; the command was killed.
    #[error("aborted")]
    Aborted,
    /// The timeout passed; the command was killed.
    #[error("timeout")]
    TimedOut,
    /// The working directory is missing (Pi's text).
    #[error("Working directory does not exist: {}\nCannot execute bash commands.", .0.display())]
    CwdMissing(PathBuf),
    /// A configured shell path does not exist (Pi's text).
    #[error("Custom shell path not found: {}", .0.display())]
    ShellNotFound(PathBuf),
    /// The shell could not be started; worded like Node's spawn errors
    /// (`spawn /bin/bash ENOENT`), which is what Pi shows.
    #[error("spawn {} {reason}", shell.display())]
    Spawn {
        /// The shell that failed to start.
        shell: PathBuf,
        /// The errno name (`ENOENT`), or the error text when there is none.
        reason: String,
    },
    /// Waiting for the command failed.
    #[error("{0}")]
    Io(#[from] io::Error),
}

/// Runs shell commands for the bash tool.
#[async_trait]
pub trait BashOperations: Send + Sync {
    /// Runs `command` in `cwd`, sending its output to `options.on_data` as it
    /// arrives, until it exits, times out or is cancelled. On timeout or
    /// cancellation the command and everything it started are killed and
    /// [`ExecError::TimedOut`] or [`ExecError::Aborted`] is returned (the
    /// output read before that has been sent). Returns soon after the command
    /// exits even when a background child keeps its output open.
    async fn exec(
        &self,
        command: &str,
        cwd: &Path,
        options: ExecOptions,
    ) -> Result<ExitStatus, ExecError>;

    /// The file a command's whole output goes to once it is over the
    /// limits, created on first need in `dir` (default: the temp directory)
    /// on the machine commands run on, so the notice names a path there.
    ///
    /// The default keeps none ([`NoOutputLog`]): the output is cut with a
    /// notice that names no file. It was a file in this machine's temp
    /// directory, which an implementation that runs commands elsewhere (in
    /// memory, in a container) wrote to without knowing, and whose path it
    /// told the model although nothing the model reaches can open it.
    /// Operations that wrap others forward it (the sandbox's do).
    fn output_log(&self, _dir: Option<&Path>, _prefix: &str) -> Box<dyn OutputLog> {
        Box::new(NoOutputLog)
    }
}

/// A program that starts the shell for us: the command line becomes
/// `<program> <args...> <shell> -c <command>` (the sandbox helper is one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launcher {
    /// The program to run instead of the shell.
    pub program: PathBuf,
    /// Its arguments, before the shell's path.
    pub args: Vec<OsString>,
}

/// Runs commands on this machine with `<shell> -c`, each in its own process
/// group so that a timeout or cancellation kills grandchildren too.
#[derive(Debug, Default)]
pub struct LocalBashOperations {
    shell_path: Option<PathBuf>,
    default_shell: OnceCell<PathBuf>,
    launcher: Option<Launcher>,
}

impl LocalBashOperations {
    /// Uses `/bin/bash`, else `bash` on the `PATH`, else `sh` (as Pi does).
    pub fn new() -> Self {
        Self::default()
    }

    /// Uses the shell at `shell_path`; running fails if it does not exist.
    pub fn with_shell(shell_path: impl Into<PathBuf>) -> Self {
        LocalBashOperations {
            shell_path: Some(shell_path.into()),
            default_shell: OnceCell::new(),
            launcher: None,
        }
    }

    /// The same operations, starting the shell through `launcher`.
    pub fn launched_by(mut self, launcher: Launcher) -> Self {
        self.launcher = Some(launcher);
        self
    }

    async fn shell(&self) -> Result<PathBuf, ExecError> {
        match &self.shell_path {
            Some(path) if exists(path).await => Ok(path.clone()),
            Some(path) => Err(ExecError::ShellNotFound(path.clone())),
            None => Ok(self.default_shell.get_or_init(find_bash).await.clone()),
        }
    }
}

async fn exists(path: &Path) -> bool {
    tokio::fs::try_exists(path).await.unwrap_or(false)
}

/// `/bin/bash`, else the first `bash` on the `PATH`, else `sh`.
async fn find_bash() -> PathBuf {
    let bin_bash = Path::new("/bin/bash");
    if exists(bin_bash).await {
        return bin_bash.to_path_buf();
    }
    if let Some(path) = std::env::var_os("PATH") {
        for dir in std::env::split_paths(&path) {
            let candidate = dir.join("bash");
            if exists(&candidate).await {
                return candidate;
            }
        }
    }
    PathBuf::from("sh")
}

#[async_trait]
impl BashOperations for LocalBashOperations {
    async fn exec(
        &self,
        command: &str,
        cwd: &Path,
        options: ExecOptions,
    ) -> Result<ExitStatus, ExecError> {
        if !exists(cwd).await {
            return Err(ExecError::CwdMissing(cwd.to_path_buf()));
        }
        let shell = self.shell().await?;
        let mut command_line = match &self.launcher {
            Some(launcher) => {
                let mut command_line = detached_command(&launcher.program);
                command_line.args(&launcher.args).arg(&shell);
                command_line
            }
            None => detached_command(&shell),
        };
        let program = self
            .launcher
            .as_ref()
            .map_or(shell.as_path(), |launcher| launcher.program.as_path());
        // One pipe for stdout and stderr, as a terminal has one screen: the
        // output is in the order the command wrote it (two pipes read side
        // by side put an error message after the lines that followed it).
        let (writer, output) = tokio::net::unix::pipe::pipe().map_err(ExecError::Io)?;
        let writer = writer.into_blocking_fd().map_err(ExecError::Io)?;
        let writer_too = writer.try_clone().map_err(ExecError::Io)?;
        let mut child = command_line
            .arg("-c")
            .arg(command)
            .current_dir(cwd)
            .envs(options.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::from(writer))
            .stderr(Stdio::from(writer_too))
            .spawn()
            .map_err(|error| spawn_error(program, &error, command.len()))?;
        // Our copies of the write end go now: the pipe ends when the
        // command's (and what it left in the background) do.
        drop(command_line);
        let group = ProcessGroup::of(child.id());
        let run = Run {
            group,
            on_data: options.on_data,
            killed: None,
        };
        run.drive(&mut child, output, options.cancel, options.timeout)
            .await
    }

    /// A file in `dir`, else this machine's temp directory, where the
    /// commands run.
    fn output_log(&self, dir: Option<&Path>, prefix: &str) -> Box<dyn OutputLog> {
        Box::new(LocalOutputLog::new(dir, prefix))
    }
}

/// Node's wording (`spawn /bin/bash ENOENT`); a command over the kernel's
/// limit for one argument also says what to do instead.
fn spawn_error(shell: &Path, error: &io::Error, command_len: usize) -> ExecError {
    let reason = match error.raw_os_error().map(nix::errno::Errno::from_raw) {
        Some(nix::errno::Errno::E2BIG) => format!(
            "E2BIG: the command is {} KB, more than Linux takes in one argument (128 KB); put long content in a file with the write tool, then run a short command on it",
            command_len.div_ceil(1024)
        ),
        Some(code) => format!("{code:?}"),
        None => error.to_string(),
    };
    ExecError::Spawn {
        shell: shell.to_path_buf(),
        reason,
    }
}

/// One running command: reads its output pipe into `on_data`, waits for the
/// shell, and kills the group on timeout or cancellation.
struct Run {
    group: ProcessGroup,
    on_data: OutputSender,
    killed: Option<ExecError>,
}

impl Run {
    async fn drive(
        mut self,
        child: &mut tokio::process::Child,
        output: tokio::net::unix::pipe::Receiver,
        cancel: CancellationToken,
        timeout: Option<Duration>,
    ) -> Result<ExitStatus, ExecError> {
        let mut output = Some(output);
        let mut buf = vec![0u8; READ_CHUNK_BYTES];
        let mut kill_trigger = pin!(kill_trigger(cancel, timeout));
        let mut grace = pin!(tokio::time::sleep(Duration::ZERO));
        let mut status: Option<std::process::ExitStatus> = None;
        loop {
            if status.is_some() && output.is_none() {
                break;
            }
            tokio::select! {
                read = read_some(&mut output, &mut buf), if output.is_some() => {
                    match read {
                        Ok(n) if n > 0 => self.forward(&buf[..n], kill_trigger.as_mut(), status.is_some()).await,
                        _ => output = None,
                    }
                }
                exited = child.wait(), if status.is_none() => {
                    status = Some(exited?);
                    self.group.release();
                    grace.as_mut().reset(Instant::now() + EXIT_STDIO_GRACE);
                }
                reason = kill_trigger.as_mut(), if self.killed.is_none() && status.is_none() => {
                    self.kill(reason);
                }
                () = grace.as_mut(), if status.is_some() => break,
            }
        }
        if let Some(reason) = self.killed {
            return Err(reason);
        }
        Ok(status.map_or(ExitStatus::Code(-1), exit_status))
    }

    fn kill(&mut self, reason: ExecError) {
        self.group.kill();
        self.killed = Some(reason);
    }

    /// Hands a chunk to the consumer, still killing on time if the consumer is slow.
    async fn forward(
        &mut self,
        chunk: &[u8],
        mut kill_trigger: std::pin::Pin<&mut impl Future<Output = ExecError>>,
        exited: bool,
    ) {
        let on_data = self.on_data.clone();
        let mut send = pin!(on_data.send(chunk.to_vec()));
        loop {
            tokio::select! {
                // A closed receiver means nobody wants the output; keep draining
                // the pipes anyway so the command does not block on a full pipe.
                _ = send.as_mut() => return,
                reason = kill_trigger.as_mut(), if self.killed.is_none() && !exited => {
                    self.kill(reason);
                }
            }
        }
    }
}

/// Resolves when the run must be killed: on cancellation or after `timeout`.
async fn kill_trigger(cancel: CancellationToken, timeout: Option<Duration>) -> ExecError {
    let deadline = async {
        match timeout {
            Some(timeout) => tokio::time::sleep(timeout).await,
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        () = cancel.cancelled() => ExecError::Aborted,
        () = deadline => ExecError::TimedOut,
    }
}

/// Reads from a pipe that may already be closed (`None` never resolves).
async fn read_some<R: AsyncRead + Unpin>(
    pipe: &mut Option<R>,
    buf: &mut [u8],
) -> io::Result<usize> {
    match pipe {
        Some(pipe) => pipe.read(buf).await,
        None => std::future::pending().await,
    }
}

fn exit_status(status: std::process::ExitStatus) -> ExitStatus {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => ExitStatus::Code(code),
        (None, Some(signal)) => ExitStatus::Signal(signal_name(signal)),
        (None, None) => ExitStatus::Code(status.into_raw()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spawn_errors_read_like_nodes() {
        let error = io::Error::from_raw_os_error(2);
        assert_eq!(
            spawn_error(Path::new("/no/shell"), &error, 10).to_string(),
            "spawn /no/shell ENOENT"
        );
        let error = io::Error::from_raw_os_error(7);
        assert_eq!(
            spawn_error(Path::new("/bin/bash"), &error, 200_000).to_string(),
            "spawn /bin/bash E2BIG: the command is 196 KB, more than Linux takes in one argument (128 KB); put long content in a file with the write tool, then run a short command on it"
        );
    }
}
