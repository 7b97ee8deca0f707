//! One OpenSSH connection to the remote host and the helper running on it.
//!
//! The system `ssh` does the connecting, so the user's `~/.ssh/config`,
//! agent, `known_hosts`, `ProxyJump` and certificates all apply. A
//! connection is:
//! - the *master*: `ssh -o ControlMaster=yes -o ControlPersist=no host <script>`,
//!   whose session prints a sentinel line (what a login script printed
//!   before it is skipped), `uname -sm` and `$HOME`, reads the helper's path
//!   from its stdin and `exec`s the helper there (printing a sentinel instead
//!   when it is missing, so it can be uploaded over the control socket first);
//! - the *helper*: this binary on the remote, uploaded once per build into a
//!   cache directory there, speaking [`super::protocol`] on the master
//!   session's stdin and stdout. Being the master's own session, a call
//!   crosses four processes (agent, ssh, sshd, helper), not the five a
//!   second `ssh -S` client would add. No login shell runs per call: the
//!   remote `.bashrc` runs at most once per connection.
//!
//! Only this process holds the master's stdin. If this process dies however
//! it dies, that stdin closes, the helper sees its input end, kills what it
//! runs and exits, the session ends and the master exits: no ssh is left
//! behind locally, and nothing on the remote.
//!
//! `BatchMode` is always on, whatever `--ssh-option` says (no prompt can
//! block the agent), and host keys
//! are checked as the user's configuration says: an unknown or changed key
//! fails the connection with ssh's own words.

use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::client::{HelperChannel, Lost};
use super::helper::VERSION;
use super::protocol::{Call, Reply, greeting_version};
use super::target::RemoteTarget;
use crate::support::paths::{expand_home, expand_own_home};
use crate::support::stderr_tail::keep_tail;
use crate::support::sync::lock;

/// How long ssh may take to reach the host, unless the user's ssh
/// configuration or an `--ssh-option ConnectTimeout=` says otherwise.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// How often ssh checks that the server still answers (three missed answers
/// end the connection), unless the user's configuration or an
/// `--ssh-option` sets `ServerAliveInterval`.
const DEFAULT_KEEPALIVE_INTERVAL: Duration = Duration::from_secs(15);

/// How long starting a connection may take at most, all steps together
/// (connecting, authenticating, the first answer), so a host that accepts
/// the TCP connection and then says nothing cannot hang the agent.
const START_LIMIT: Duration = Duration::from_secs(60);

/// How long uploading the helper may take (it is tens of megabytes).
const UPLOAD_LIMIT: Duration = Duration::from_secs(600);

/// The stderr kept of each ssh process: the end, where its reason is.
const STDERR_KEPT_BYTES: usize = 4096;

/// How to reach the remote host.
#[derive(Debug, Clone)]
pub struct RemoteOptions {
    /// Host, user, port and working directory.
    pub target: RemoteTarget,
    /// `ssh -F FILE` (`~/` is this user's home).
    pub ssh_config: Option<PathBuf>,
    /// `ssh -o KEY=VALUE` each; they come after the options the agent needs
    /// (`BatchMode=yes`, its `ControlPath`, `ControlMaster`,
    /// `ControlPersist=no`), which they cannot change (ssh takes the first
    /// value it sees). The agent's defaults (`ConnectTimeout`,
    /// `ServerAliveInterval`) are given only for what these and the ssh
    /// configuration leave unset.
    pub ssh_options: Vec<String>,
    /// The binary uploaded as the helper; `None`: this executable.
    pub helper_binary: Option<PathBuf>,
    /// The remote directory the helper is cached in, absolute or under `~/`
    /// (the remote user's home); `None`: `~/.cache/coding-agent` there.
    pub cache_dir: Option<PathBuf>,
}

impl RemoteOptions {
    /// Options for `target` with everything else left to ssh's configuration.
    pub fn new(target: RemoteTarget) -> Self {
        RemoteOptions {
            target,
            ssh_config: None,
            ssh_options: Vec::new(),
            helper_binary: None,
            cache_dir: None,
        }
    }
}

/// The `"remote"` key of the global `settings.json`: the same as the flags,
/// which win over it key by key.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RemoteSettings {
    /// `[ssh://][user@]host[:port][/abs/path]` or `host:/abs/path`, as `--remote`.
    pub target: Option<String>,
    /// As `--ssh-config` (`~/` is this user's home).
    pub ssh_config: Option<PathBuf>,
    /// As `--ssh-option`, each `KEY=VALUE`.
    #[serde(default)]
    pub ssh_options: Vec<String>,
    /// The remote directory the helper is cached in, absolute or under `~/`
    /// (the remote home) [default: `~/.cache/coding-agent` there].
    pub cache_dir: Option<PathBuf>,
}

/// Why a connection could not be made; each text says what to do about it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConnectError {
    /// ssh failed; its own words follow.
    #[error("cannot connect to {host}: {message}")]
    Ssh {
        /// `[user@]host[:port]`.
        host: String,
        /// What ssh said (`Host key verification failed.`, ...).
        message: String,
    },
    /// The remote cannot run this binary as the helper.
    #[error(
        "{host} runs {remote}, but this coding-agent is built for {local}: its helper cannot run there. Run a coding-agent built for {remote}."
    )]
    Platform {
        /// `[user@]host[:port]`.
        host: String,
        /// `uname -sm` of the remote.
        remote: String,
        /// The same for this build.
        local: String,
    },
    /// `uname -sm` failed on the remote, so its platform is unknown.
    #[error(
        "uname -sm failed on {host}: {message}. The platform must be known to start the helper there: make `uname` work for a non-interactive ssh session on that host."
    )]
    Uname {
        /// `[user@]host[:port]`.
        host: String,
        /// What uname said, or that it printed nothing.
        message: String,
    },
    /// The helper could not be uploaded or started.
    #[error("cannot start the coding-agent helper on {host}: {message}")]
    Helper {
        /// `[user@]host[:port]`.
        host: String,
        /// What went wrong, and what to change.
        message: String,
    },
    /// The working directory is not a directory on the remote.
    #[error("{dir} on {host}: {message}")]
    Cwd {
        /// `[user@]host[:port]`.
        host: String,
        /// The directory asked for.
        dir: String,
        /// What is wrong with it.
        message: String,
    },
}

/// What ssh printed on stderr, the last [`STDERR_KEPT_BYTES`] of it.
#[derive(Debug, Clone, Default)]
struct Stderr {
    kept: Arc<Mutex<Vec<u8>>>,
    /// Fires once the pipe has ended.
    ended: CancellationToken,
}

impl Stderr {
    fn collect(&self, pipe: impl AsyncRead + Unpin + Send + 'static) {
        let kept = Arc::clone(&self.kept);
        let ended = self.ended.clone();
        tokio::spawn(async move {
            let _ended = ended.drop_guard();
            keep_tail(pipe, &kept, STDERR_KEPT_BYTES).await;
        });
    }

    /// The text so far, trimmed.
    fn text(&self) -> String {
        let kept = lock(&self.kept);
        String::from_utf8_lossy(&kept).trim().to_owned()
    }

    /// The whole text, once ssh has closed its stderr (it has exited), or
    /// what came within a second.
    async fn final_text(&self) -> String {
        let _ = tokio::time::timeout(Duration::from_secs(1), self.ended.cancelled()).await;
        self.text()
    }
}

/// A live connection: the master, its control socket, the helper channel.
#[derive(Debug)]
pub struct Connection {
    /// Holds the control socket; removed with the connection.
    control_dir: tempfile::TempDir,
    /// Killed when the connection is dropped, which closes every session.
    _master: Child,
    /// The helper, on the master's session; its stdin is the lifeline.
    channel: HelperChannel,
    /// The remote user's home directory.
    home: PathBuf,
}

/// Where the control socket's directory goes: `tmp` (TMPDIR) when it is a
/// directory that ssh can take verbatim in `ControlPath=`, else `/tmp`.
/// Verbatim: the socket's path there is short enough for a Unix socket
/// (104 bytes on macOS, 108 on Linux, with the 17 that ssh adds while it
/// creates it), and holds nothing ssh's option parser reads as syntax: a
/// space ended the value (`keyword controlpath extra arguments at end of
/// line`), `%h` was expanded to the host, a `"` was an unbalanced quote;
/// each failed every connection. A TMPDIR that did not exist failed them
/// too.
fn control_parent(tmp: &Path) -> &Path {
    if ssh_takes_verbatim(tmp) && tmp.is_dir() {
        tmp
    } else {
        Path::new("/tmp")
    }
}

/// Whether `dir` can be written into `ControlPath=` as it is (see
/// [`control_parent`]): absolute, short enough, and of bytes ssh's option
/// parser gives no meaning to (non-ASCII ones included).
fn ssh_takes_verbatim(dir: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    const SOCKET_PATH_MAX: usize = 103;
    // `/ca-ssh-XXXXXX`, `/s`, and ssh's `.XXXXXXXXXXXXXXXX`.
    const ADDED: usize = 14 + 2 + 17;
    let bytes = dir.as_os_str().as_bytes();
    dir.is_absolute()
        && bytes.len() + ADDED <= SOCKET_PATH_MAX
        && bytes
            .iter()
            .all(|&b| !b.is_ascii() || b.is_ascii_alphanumeric() || b"/._+,:@-".contains(&b))
}

impl Connection {
    /// The helper channel.
    pub fn channel(&self) -> &HelperChannel {
        &self.channel
    }

    /// The master's control socket: `ssh -S <it> host COMMAND` runs a
    /// command on this connection (the benchmarks' baseline round trip).
    pub fn control_path(&self) -> PathBuf {
        self.control_dir.path().join("s")
    }

    /// The remote user's `$HOME`.
    pub fn home(&self) -> &Path {
        &self.home
    }

    /// Connects, checks the platform, and starts (uploading if needed) the helper.
    pub async fn open(options: &RemoteOptions) -> Result<Self, ConnectError> {
        let host = options.target.authority();
        let ssh_error = |message: String| ConnectError::Ssh {
            host: host.clone(),
            message,
        };
        // Made 0700 as it is created: the umask alone left it 0755.
        let control_dir = tempfile::Builder::new()
            .prefix("ca-ssh-")
            .permissions(std::fs::Permissions::from_mode(0o700))
            .tempdir_in(control_parent(&std::env::temp_dir()))
            .map_err(|e| {
                ssh_error(format!(
                    "cannot create a directory for the control socket: {e}"
                ))
            })?;
        let started = tokio::time::timeout(START_LIMIT, async {
            let ssh = Ssh {
                options,
                control: control_dir.path().join("s"),
                defaults: defaults_left_unset(options).await,
            };
            let master = ssh.start_master().await?;
            Ok((ssh, master))
        });
        let (ssh, mut master) = started
            .await
            .map_err(|_| ssh_error(format!("no answer within {} s", START_LIMIT.as_secs())))?
            .map_err(ssh_error)?;
        let uname = master
            .uname
            .as_deref()
            .map_err(|message| ConnectError::Uname {
                host: host.clone(),
                message: message.to_owned(),
            })?;
        check_platform(&host, uname)?;
        let home = master.home.clone();
        let helper_error = |message| ConnectError::Helper {
            host: host.clone(),
            message,
        };
        let helper_path = helper_path(options, &home).map_err(helper_error)?;
        ssh.start_helper(&mut master, &helper_path)
            .await
            .map_err(helper_error)?;
        // ssh's stderr is shown only when a connection fails, so its
        // warning that it connected to a host whose key changed (as a
        // configuration with `StrictHostKeyChecking no` lets it) went unseen.
        if master.stderr.text().contains(HOST_KEY_CHANGED) {
            tracing::warn!(
                "ssh warned that the host key of {host} has changed ({HOST_KEY_CHANGED}) and connected anyway, as StrictHostKeyChecking in your ssh configuration allows: someone may be intercepting the connection. Check the key (ssh {host}) before trusting this session."
            );
        }
        let Master {
            child,
            stdin,
            stdout,
            stderr,
            ..
        } = master;
        let why_lost = async move {
            // Give ssh a moment to exit and say why.
            stderr.final_text().await
        };
        Ok(Connection {
            control_dir,
            _master: child,
            channel: HelperChannel::start(stdin, stdout, why_lost),
            home,
        })
    }
}

/// The master while the connection starts: its pipes, and what its session
/// said about the remote.
struct Master {
    child: Child,
    stdin: ChildStdin,
    /// Buffered: lines are read from it before the helper's frames.
    stdout: BufReader<ChildStdout>,
    stderr: Stderr,
    /// `uname -sm` of the remote, or why it failed.
    uname: Result<String, String>,
    /// `$HOME` of the remote user.
    home: PathBuf,
}

/// What ssh's warning about a changed host key says.
const HOST_KEY_CHANGED: &str = "REMOTE HOST IDENTIFICATION HAS CHANGED";

/// How the upload script's report of a short upload begins.
const UPLOAD_CUT_SHORT: &str = "the upload was cut short";

/// What the master's session prints when the helper is not at the path it
/// was given.
const HELPER_MISSING: &str = "coding-agent-helper-missing";

/// What the master's session prints, on a line of its own, before `uname
/// -sm` and `$HOME`: whatever comes before it is a login script's output
/// (a `.bashrc` that greets, an `~/.ssh/rc`), which must not be taken for
/// the platform or the home directory.
const SCRIPT_STARTED: &str = "coding-agent-remote-script-started";

/// The master's session's lines after [`SCRIPT_STARTED`] each begin with
/// what they are, so a missing or empty one is seen at once: when `uname`
/// failed, `$HOME` was read as the platform and the start waited 60 s for
/// a line that never came. `uname -sm` as it printed it:
const PLATFORM: &str = "platform ";
/// Instead of [`PLATFORM`], what `uname -sm` said when it failed:
const UNAME_FAILED: &str = "uname-failed ";
/// `$HOME`:
const HOME: &str = "home ";

/// Builds the ssh command lines of one connection.
struct Ssh<'a> {
    options: &'a RemoteOptions,
    control: PathBuf,
    /// The agent's defaults the user's configuration leaves unset (see
    /// [`defaults_left_unset`]), as `-o` options.
    defaults: Vec<String>,
}

/// `ssh <first> [-F config] <the user's --ssh-options> <last> [-l user]
/// [-p port] -- host`. ssh keeps the first value it sees of an option, so
/// none of the user's options can change one in `first`, and each of them
/// wins over the same one in `last`.
fn ssh_command(options: &RemoteOptions, first: &[String], last: &[String]) -> Command {
    let mut ssh = Command::new("ssh");
    ssh.args(first);
    if let Some(config) = &options.ssh_config {
        ssh.arg("-F").arg(expand_own_home(config));
    }
    for option in &options.ssh_options {
        ssh.arg("-o").arg(option);
    }
    ssh.args(last);
    if let Some(user) = &options.target.user {
        ssh.arg("-l").arg(user);
    }
    if let Some(port) = options.target.port {
        ssh.arg("-p").arg(port.to_string());
    }
    ssh.arg("--").arg(&options.target.host).kill_on_drop(true);
    ssh
}

/// The agent's defaults, as `-o` options, for what the user's ssh
/// configuration and `--ssh-option`s leave unset, as `ssh -G` (the
/// configuration ssh would use for the host) prints it: given always, they
/// came before the configuration file, so they won over it (`ConnectTimeout
/// 2` there still waited 10 s). When `ssh -G` fails, all of them (the
/// connection then fails with ssh's words anyway).
async fn defaults_left_unset(options: &RemoteOptions) -> Vec<String> {
    let effective = ssh_command(options, &["-G".into()], &[])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .await;
    let printed = match effective {
        Ok(output) if output.status.success() => String::from_utf8_lossy(&output.stdout).into(),
        _ => String::new(),
    };
    unset_defaults(&printed)
}

/// [`defaults_left_unset`] from what `ssh -G` printed. An unset
/// `ConnectTimeout` prints as `none` (or, from older versions, `-1`); an
/// unset `ServerAliveInterval` prints as its default, `0` (no keepalives),
/// as one set to `0` does, so only `--ssh-option ServerAliveInterval=0`
/// turns them off. `ServerAliveCountMax` is not given: the agent wants
/// ssh's default, 3.
fn unset_defaults(effective: &str) -> Vec<String> {
    let value = |key: &str| {
        effective
            .lines()
            .find_map(|line| line.strip_prefix(key)?.strip_prefix(' '))
    };
    let mut defaults = Vec::new();
    if value("connecttimeout").is_none_or(|v| v == "none" || v.starts_with('-')) {
        defaults.push(format!(
            "ConnectTimeout={}",
            DEFAULT_CONNECT_TIMEOUT.as_secs()
        ));
    }
    if value("serveraliveinterval").is_none_or(|v| v == "0") {
        defaults.push(format!(
            "ServerAliveInterval={}",
            DEFAULT_KEEPALIVE_INTERVAL.as_secs()
        ));
    }
    defaults
        .into_iter()
        .flat_map(|d| ["-o".into(), d])
        .collect()
}

impl Ssh<'_> {
    /// `ssh <options> -- host COMMAND`, sharing the control socket.
    fn command(&self, master: bool, remote_command: &str) -> Command {
        // Before the user's `--ssh-option`s, so none of those can change
        // them: the control socket is ours, and with `BatchMode=no` given
        // after `BatchMode=yes` ssh could prompt and wait for an answer no
        // one sees; `ControlPersist=no` keeps no ssh behind once this
        // process ends.
        let own = [
            "-o".into(),
            format!("ControlPath={}", self.control.display()),
            "-o".into(),
            format!("ControlMaster={}", if master { "yes" } else { "no" }),
            "-o".into(),
            "BatchMode=yes".into(),
            "-o".into(),
            "ControlPersist=no".into(),
            "-T".into(),
        ];
        let mut ssh = ssh_command(self.options, &own, &self.defaults);
        ssh.arg(remote_command);
        ssh
    }

    /// Starts ssh running `remote_command` (see [`Ssh::command`]), keeping
    /// the tail of its stderr.
    fn spawn(
        &self,
        master: bool,
        remote_command: &str,
        stdin: Stdio,
        stdout: Stdio,
    ) -> Result<(Child, Stderr), String> {
        let mut child = self
            .command(master, remote_command)
            .stdin(stdin)
            .stdout(stdout)
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot run ssh: {e}"))?;
        let stderr = Stderr::default();
        if let Some(pipe) = child.stderr.take() {
            stderr.collect(pipe);
        }
        Ok((child, stderr))
    }

    /// [`Ssh::spawn`] with its stdin and stdout as pipes to this process.
    fn piped(
        &self,
        master: bool,
        remote_command: &str,
    ) -> Result<(Child, ChildStdin, ChildStdout, Stderr), String> {
        let (mut child, stderr) =
            self.spawn(master, remote_command, Stdio::piped(), Stdio::piped())?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err("ssh has no pipes".into());
        };
        Ok((child, stdin, stdout, stderr))
    }

    /// Starts the master; its session prints [`SCRIPT_STARTED`], `uname
    /// -sm` and `$HOME`, then waits for the helper's path on its stdin (see
    /// [`Ssh::start_helper`]).
    async fn start_master(&self) -> Result<Master, String> {
        // Without SSH_CLIENT, the bash of each command does not source the
        // remote `~/.bashrc` again (bash does so when it sees it was started
        // by sshd): the login script runs once per connection, not per call.
        // The sentinel's leading newline ends a login script's last line
        // when that has none, so the sentinel is a line of its own.
        // `read` takes one line and no more from the pipe, so the helper
        // `exec`ed in the shell's place reads its frames from the next byte.
        let command = format!("exec /bin/sh -c {}", sh_quote(&master_script()));
        let (mut child, stdin, stdout, stderr) = self.piped(true, &command)?;
        let mut stdout = BufReader::new(stdout);
        match script_report(&mut stdout).await {
            Ok((uname, home)) => Ok(Master {
                child,
                stdin,
                stdout,
                stderr,
                uname,
                home,
            }),
            Err(printed) => {
                let status = child.wait().await.ok();
                let said = stderr.final_text().await;
                Err(match (said.is_empty(), printed.is_empty()) {
                    (false, _) => said,
                    (true, true) => format!("ssh exited ({})", describe(status)),
                    (true, false) => format!(
                        "ssh exited ({}); the remote session printed: {printed}",
                        describe(status)
                    ),
                })
            }
        }
    }

    /// Has the master's session run the helper at `path`, uploading it first
    /// if it is not there, and reads its greeting.
    async fn start_helper(&self, master: &mut Master, path: &Path) -> Result<(), String> {
        let mut uploaded = false;
        loop {
            let line = format!("{}\n", path.to_string_lossy());
            master
                .stdin
                .write_all(line.as_bytes())
                .await
                .map_err(|e| format!("ssh closed its input: {e}"))?;
            master.stdin.flush().await.map_err(|e| e.to_string())?;
            let answer = tokio::time::timeout(START_LIMIT, helper_answer(&mut master.stdout))
                .await
                .map_err(|_| {
                    format!(
                        "{} did not answer within {} s",
                        path.display(),
                        START_LIMIT.as_secs()
                    )
                })?;
            match answer {
                Some(HelperAnswer::Greeting(version)) if version == VERSION => return Ok(()),
                Some(HelperAnswer::Greeting(version)) => {
                    return Err(format!(
                        "{} answered as version {version}, expected {VERSION}; remove it so it is uploaded again",
                        path.display()
                    ));
                }
                Some(HelperAnswer::Missing) if !uploaded => {
                    self.upload(path).await?;
                    uploaded = true;
                }
                Some(HelperAnswer::Missing) => {
                    return Err(format!(
                        "{} is still missing after uploading it",
                        path.display()
                    ));
                }
                None => {
                    let status = master.child.wait().await.ok();
                    return Err(helper_failure(
                        path,
                        &master.stderr.final_text().await,
                        status,
                    ));
                }
            }
        }
    }

    /// Copies the helper binary to `path` on the remote (see
    /// [`upload_script`]).
    async fn upload(&self, path: &Path) -> Result<(), String> {
        let binary = helper_binary(self.options)?;
        let file = std::fs::File::open(&binary)
            .map_err(|e| format!("cannot read {}: {e}", binary.display()))?;
        let size = file
            .metadata()
            .map_err(|e| format!("cannot read {}: {e}", binary.display()))?
            .len();
        let command = format!("exec /bin/sh -c {}", sh_quote(&upload_script(path, size)));
        let (mut upload, stderr) = self.spawn(false, &command, Stdio::from(file), Stdio::null())?;
        let status = tokio::time::timeout(UPLOAD_LIMIT, upload.wait())
            .await
            .map_err(|_| format!("uploading took over {} s", UPLOAD_LIMIT.as_secs()))?
            .map_err(|e| e.to_string())?;
        if status.success() {
            return Ok(());
        }
        Err(upload_failure(path, status, &stderr.final_text().await))
    }
}

/// Why the upload of the helper to `path` failed, from the exit `status` of
/// its ssh and what it `said` on stderr.
fn upload_failure(path: &Path, status: std::process::ExitStatus, said: &str) -> String {
    let dir = path.parent().unwrap_or(Path::new("/")).display();
    // 255 is ssh's own failure: the connection ended mid-upload (the
    // remote script removed its partial file; its words never came).
    // Advice about a writable directory misled there.
    if status.code() == Some(255) || said.starts_with(UPLOAD_CUT_SHORT) {
        let why = if said.is_empty() {
            format!("{UPLOAD_CUT_SHORT} ({})", describe(Some(status)))
        } else {
            said.to_owned()
        };
        return format!(
            "cannot upload it to {dir}: {why}; nothing was kept, and the next start uploads it again"
        );
    }
    let why = if said.is_empty() {
        format!("the upload failed ({})", describe(Some(status)))
    } else {
        said.to_owned()
    };
    format!(
        "cannot upload it to {dir}: {why}. If that directory is not writable, set remote.cacheDir to one that is"
    )
}

/// Why the helper at `path` ended without its greeting, with what to do:
/// a file system that does not allow executing files (exit 126), or a
/// damaged helper (an upload cut short by an older version, a file changed
/// by hand), which the next start uploads again once it is removed.
fn helper_failure(path: &Path, said: &str, status: Option<std::process::ExitStatus>) -> String {
    let said = if said.is_empty() { "no message" } else { said };
    let again = "remove it so the next start uploads it again";
    match status.and_then(|s| s.code()) {
        Some(126) => format!(
            "{} cannot be executed there ({said}): if its file system does not allow executing files, set remote.cacheDir to one that does; if the file lost its execute permission, {again}",
            path.display(),
        ),
        _ => format!(
            "{} ended without answering ({said}; {}): if it is damaged, {again}",
            path.display(),
            describe(status)
        ),
    }
}

/// The master's session (see [`Ssh::start_master`]): [`SCRIPT_STARTED`],
/// the platform, the home, then the helper at each path read from stdin.
/// `$(...)` ends uname's output with exactly one newline, also when it
/// printed none.
fn master_script() -> String {
    format!(
        "printf '\\n%s\\n' {SCRIPT_STARTED}; \
         if u=$(uname -sm 2>&1); then printf '{PLATFORM}%s\\n' \"$u\"; else printf '{UNAME_FAILED}%s\\n' \"$u\"; fi; \
         printf '{HOME}%s\\n' \"$HOME\"; \
         while read -r helper; do [ -f \"$helper\" ] && exec env -u SSH_CLIENT -u SSH2_CLIENT \"$helper\" remote-helper; echo {HELPER_MISSING}; done"
    )
}

/// The remote shell script that receives the helper (`size` bytes) on its
/// stdin and puts it at `path`: into a temporary file next to it, checked
/// to be whole, made executable, then renamed, so a helper is never seen
/// half-written. The check matters: an upload cut short (Ctrl-C, a dropped
/// connection) ends `cat` as a normal end of input would, and the
/// truncated binary was renamed into place, where it crashed at every
/// later start.
///
/// The temporary file is removed whatever ends the script: an interrupted
/// upload left one (8-10 MB) in the cache for good, because the report of
/// the short upload was written to a stderr whose reader had gone, the
/// shell died of SIGPIPE, and a shell killed by a signal runs no `EXIT`
/// trap. So SIGPIPE is ignored (a write to the gone reader fails instead),
/// hangup and termination remove the file too, and it is removed before
/// the report.
fn upload_script(path: &Path, size: u64) -> String {
    let dir = path.parent().unwrap_or(Path::new("/"));
    let (dir, path) = (
        sh_quote(&dir.to_string_lossy()),
        sh_quote(&path.to_string_lossy()),
    );
    format!(
        "set -e; umask 077; mkdir -p {dir}; \
         [ ! -e {path} ] || [ -f {path} ] || {{ printf '%s is in the way: it is not a file; remove it, or set remote.cacheDir to another directory\\n' {path} >&2; exit 1; }}; \
         t={path}.$$.tmp; trap '' PIPE; trap 'rm -f \"$t\"' EXIT; trap 'rm -f \"$t\"; exit 1' HUP INT TERM; cat >\"$t\"; \
         n=$(wc -c <\"$t\"); [ \"$n\" -eq {size} ] || {{ rm -f \"$t\"; echo \"{UPLOAD_CUT_SHORT}: $n of {size} bytes arrived\" >&2; exit 1; }}; \
         chmod 700 \"$t\"; mv -f \"$t\" {path}; trap - EXIT"
    )
}

/// What the master's session said after it was given the helper's path.
enum HelperAnswer {
    /// The helper runs and answered with its version.
    Greeting(String),
    /// There is no helper at the path.
    Missing,
}

/// The next line of `stdout`, without its newline; `None` at its end.
/// Bytes that are not UTF-8 (a login script's binary chatter) are replaced,
/// not taken for the end of the session.
async fn next_line(stdout: &mut BufReader<ChildStdout>) -> Option<String> {
    let mut line = Vec::new();
    match stdout.read_until(b'\n', &mut line).await {
        Ok(0) | Err(_) => None,
        Ok(_) => Some(
            String::from_utf8_lossy(&line)
                .trim_end_matches('\n')
                .to_owned(),
        ),
    }
}

/// `uname -sm` (or why it failed) and `$HOME` as the master's session
/// printed them after [`SCRIPT_STARTED`], skipping the lines before it;
/// when the session ended first, the last of those lines (a login shell
/// that refuses, such as `nologin`, says why on stdout).
async fn script_report(
    stdout: &mut BufReader<ChildStdout>,
) -> Result<(Result<String, String>, PathBuf), String> {
    /// Lines kept of what came before the end, and characters of each.
    const KEPT: usize = 3;
    const LINE_CHARS: usize = 200;
    let mut before: std::collections::VecDeque<String> = std::collections::VecDeque::new();
    loop {
        let Some(line) = next_line(stdout).await else {
            return Err(Vec::from(before).join(" / "));
        };
        if line == SCRIPT_STARTED {
            break;
        }
        if !line.trim().is_empty() {
            if before.len() == KEPT {
                before.pop_front();
            }
            before.push_back(line.trim().chars().take(LINE_CHARS).collect());
        }
    }
    let ended = || String::new();
    let platform = next_line(stdout).await.ok_or_else(ended)?;
    let uname = if let Some(uname) = platform.strip_prefix(PLATFORM) {
        match uname.trim() {
            "" => Err("it printed nothing".to_owned()),
            uname => Ok(uname.to_owned()),
        }
    } else if let Some(failure) = platform.strip_prefix(UNAME_FAILED) {
        Err(match failure.trim() {
            "" => "no message".to_owned(),
            said => said.to_owned(),
        })
    } else {
        return Err(String::new());
    };
    // Past the rest of a failed uname's message, when it spans lines.
    let home = loop {
        let line = next_line(stdout).await.ok_or_else(ended)?;
        if let Some(home) = line.strip_prefix(HOME) {
            break home.to_owned();
        }
    };
    Ok((uname, PathBuf::from(home)))
}

/// Reads lines until the helper's greeting or the sentinel that it is
/// missing (anything else, a remote login script's chatter, is skipped);
/// `None` when the session ended first.
async fn helper_answer(stdout: &mut BufReader<ChildStdout>) -> Option<HelperAnswer> {
    loop {
        let line = next_line(stdout).await?;
        if line == HELPER_MISSING {
            return Some(HelperAnswer::Missing);
        }
        if let Some(version) = greeting_version(&line) {
            return Some(HelperAnswer::Greeting(version));
        }
    }
}

fn describe(status: Option<std::process::ExitStatus>) -> String {
    match status {
        Some(status) => status.to_string(),
        None => "no exit status".into(),
    }
}

/// `text` as a shell word a person would type: as it is when nothing in it
/// is special to the shell, else quoted ([`sh_quote`]).
fn shell_word(text: &str) -> String {
    let plain = !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "@%+=:,./_-~".contains(c));
    if plain {
        text.to_owned()
    } else {
        sh_quote(text)
    }
}

/// `text` quoted for a POSIX shell (and for fish, which reads `'\''` alike).
pub fn sh_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}

/// `uname -sm` of a machine this binary runs on.
fn local_platform() -> String {
    let os = match std::env::consts::OS {
        "linux" => "Linux",
        "macos" => "Darwin",
        "freebsd" => "FreeBSD",
        other => other,
    };
    format!("{os} {}", std::env::consts::ARCH)
}

fn check_platform(host: &str, uname: &str) -> Result<(), ConnectError> {
    let local = local_platform();
    let remote = uname.trim().replace(" arm64", " aarch64");
    if remote == local {
        return Ok(());
    }
    Err(ConnectError::Platform {
        host: host.to_owned(),
        remote: uname.trim().to_owned(),
        local,
    })
}

fn helper_binary(options: &RemoteOptions) -> Result<PathBuf, String> {
    match &options.helper_binary {
        Some(path) => Ok(path.clone()),
        None => std::env::current_exe().map_err(|e| format!("cannot find this executable: {e}")),
    }
}

/// Where the helper of this build lives on the remote:
/// `<cache dir>/coding-agent-<version>-<build id>`. The build id comes from
/// the binary's size and modification time, so each build is uploaded once
/// and a rebuilt binary never runs an older helper.
fn helper_path(options: &RemoteOptions, home: &Path) -> Result<PathBuf, String> {
    use std::hash::{Hash, Hasher};
    let binary = helper_binary(options)?;
    let metadata =
        std::fs::metadata(&binary).map_err(|e| format!("cannot read {}: {e}", binary.display()))?;
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    metadata.len().hash(&mut hasher);
    metadata
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .hash(&mut hasher);
    let dir = match &options.cache_dir {
        Some(dir) => remote_cache_dir(dir, home)?,
        None => home.join(".cache/coding-agent"),
    };
    Ok(dir.join(format!("coding-agent-{VERSION}-{:016x}", hasher.finish())))
}

/// The cache directory as configured, with `~` the remote user's `home`.
/// A relative one is refused: it would land wherever sshd starts the
/// session, and `~` unexpanded made a directory named `~` in the remote
/// home (a trap: `rm -rf ~` to clean it up deletes the home).
fn remote_cache_dir(dir: &Path, home: &Path) -> Result<PathBuf, String> {
    let dir = expand_home(dir, home);
    if dir.is_absolute() {
        return Ok(dir);
    }
    Err(format!(
        "the cache directory {} (remote.cacheDir or CODING_AGENT_REMOTE_CACHE) is relative: give an absolute path or one starting with ~/ (the remote home)",
        dir.display()
    ))
}

/// The live connection, or the attempt under way to make one (`None` until
/// it ends), as a call finds it: every call that waits for one attempt gets
/// its outcome from here.
type Link = watch::Receiver<Option<Result<Arc<Connection>, Lost>>>;

/// Why a call to the helper got no reply.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CallError {
    /// The connection was lost, or could not be made again.
    #[error(transparent)]
    Lost(#[from] Lost),
    /// The call was stopped while it waited for a connection, so it never
    /// reached the host.
    #[error("{}", crate::support::cancel::ABORTED)]
    Aborted,
}

/// `--ssh-config` as a path that names the same file from any directory
/// (one under `~/` stays so): the session records it in the flags that
/// reach the host again, and `../home/.ssh/config` there named another file,
/// or none, from the next directory the session was taken up in.
fn absolute_config(config: PathBuf) -> PathBuf {
    if config.starts_with("~") {
        return config;
    }
    std::path::absolute(&config).unwrap_or(config)
}

/// The remote host as the tools use it: a connection that is reopened once
/// when a call finds it lost.
#[derive(Debug)]
pub struct RemoteHost {
    options: RemoteOptions,
    /// The latest connection or attempt; replaced by a new attempt only
    /// when the calls find it lost or failed.
    link: Mutex<Link>,
    cwd: PathBuf,
    /// `cwd` with its links resolved: a working directory given through a
    /// link names its files two ways (see `RemoteOperations::queue_key`).
    real_cwd: PathBuf,
    /// The remote user's `$HOME` when connecting: what `~` means in the
    /// tools' paths and in the permission policy.
    home: PathBuf,
}

impl RemoteHost {
    /// Connects and checks the working directory (the remote home when the
    /// target names none). Errors are for the user, at start.
    pub async fn connect(mut options: RemoteOptions) -> Result<Self, ConnectError> {
        options.ssh_config = options.ssh_config.map(absolute_config);
        let connection = Connection::open(&options).await?;
        let cwd = options
            .target
            .dir
            .clone()
            .unwrap_or_else(|| connection.home().to_path_buf());
        let cwd_error = |message: &str| ConnectError::Cwd {
            host: options.target.authority(),
            dir: cwd.display().to_string(),
            message: message.to_owned(),
        };
        let never = CancellationToken::new();
        match connection
            .channel()
            .call(Call::LsStat(cwd.clone()), &never)
            .await
        {
            Ok(Reply::Stat(Ok(stat))) if stat.is_directory => {}
            Ok(Reply::Stat(Ok(_))) => return Err(cwd_error("not a directory")),
            Ok(Reply::Stat(Err(e))) => return Err(cwd_error(&io::Error::from(e).to_string())),
            Ok(other) => return Err(cwd_error(&format!("unexpected answer {other:?}"))),
            Err(lost) => return Err(cwd_error(&lost.to_string())),
        }
        let real_cwd = match connection
            .channel()
            .call(Call::RealPath(cwd.clone()), &never)
            .await
        {
            Ok(Reply::RealPath(Ok(real))) => real,
            // Known to exist a moment ago: as given, at worst two queues.
            _ => cwd.clone(),
        };
        Ok(RemoteHost {
            options,
            home: connection.home().to_path_buf(),
            link: Mutex::new(watch::channel(Some(Ok(Arc::new(connection)))).1),
            cwd,
            real_cwd,
        })
    }

    /// The working directory on the remote.
    pub fn cwd(&self) -> &Path {
        &self.cwd
    }

    /// The working directory with its links resolved, as the remote host
    /// found it at connect.
    pub fn real_cwd(&self) -> &Path {
        &self.real_cwd
    }

    /// The remote user's home directory.
    pub fn home(&self) -> &Path {
        &self.home
    }

    /// `[user@]host[:port]`.
    pub fn authority(&self) -> String {
        self.options.target.authority()
    }

    /// The target with the working directory the tools use (the remote
    /// home when none was given): `--remote` with it reaches the same place.
    pub fn target(&self) -> RemoteTarget {
        RemoteTarget {
            dir: Some(self.cwd.clone()),
            ..self.options.target.clone()
        }
    }

    /// Where the tools act, as a session records it: the target, and the
    /// flags that reach it again (the ssh configuration and options given).
    pub fn tools_host(&self) -> crate::app::tools_host::ToolsHost {
        let target = self.target().to_string();
        let mut flags = format!("--remote {}", shell_word(&target));
        if let Some(config) = &self.options.ssh_config {
            flags.push_str(&format!(
                " --ssh-config {}",
                shell_word(&config.to_string_lossy())
            ));
        }
        for option in &self.options.ssh_options {
            flags.push_str(&format!(" --ssh-option {}", shell_word(option)));
        }
        crate::app::tools_host::ToolsHost { target, flags }
    }

    /// The host's name in the per-file mutation queue: the target plus the
    /// ssh configuration, since one alias may name different hosts under
    /// different configurations.
    pub fn queue_name(&self) -> String {
        let config = self
            .options
            .ssh_config
            .as_ref()
            .map(|c| format!(" -F {}", c.display()))
            .unwrap_or_default();
        format!("ssh://{}{config}", self.authority())
    }

    /// The live connection; reconnects once if the last one was lost.
    ///
    /// The calls of a parallel batch that find it lost all wait for one
    /// attempt and share its outcome: each tried again in turn, so four
    /// calls to a host that stopped answering ended one `ConnectTimeout`
    /// after another. Only a call that comes after a failed attempt tries
    /// again. The attempt runs on its own task, so a call that stops
    /// waiting (see [`RemoteHost::connection_unless`]) leaves it to the
    /// others.
    pub async fn connection(&self) -> Result<Arc<Connection>, Lost> {
        let mut link = {
            let mut latest = lock(&self.link);
            let spent = match &*latest.borrow() {
                Some(Ok(connection)) => connection.channel().is_closed(),
                Some(Err(_)) => true,
                // Under way, unless its task ended without an outcome.
                None => latest.has_changed().is_err(),
            };
            if spent {
                *latest = self.reconnect();
            }
            latest.clone()
        };
        let outcome = link
            .wait_for(Option::is_some)
            .await
            .ok()
            .and_then(|outcome| outcome.clone());
        outcome.unwrap_or_else(|| {
            Err(Lost(
                "the attempt to reconnect ended without an outcome; the next call tries again"
                    .into(),
            ))
        })
    }

    /// [`RemoteHost::connection`], unless `cancel` fires first: a stopped
    /// call (Esc, RPC `abort`) ended only when the attempt it waited for
    /// did, after ssh's `ConnectTimeout`.
    pub async fn connection_unless(
        &self,
        cancel: &CancellationToken,
    ) -> Result<Arc<Connection>, CallError> {
        // A live connection is taken even by a call already stopped: its
        // cancellation then reaches the helper, as it always did.
        tokio::select! {
            biased;
            connection = self.connection() => Ok(connection?),
            () = cancel.cancelled() => Err(CallError::Aborted),
        }
    }

    /// Starts an attempt to connect again, on a task of its own.
    fn reconnect(&self) -> Link {
        let (done, link) = watch::channel(None);
        let options = self.options.clone();
        tokio::spawn(async move {
            tokio::select! {
                outcome = Connection::open(&options) => {
                    done.send_replace(Some(outcome.map(Arc::new).map_err(|e| Lost(e.to_string()))));
                }
                // The host is gone and no call waits: stop (ssh is killed).
                () = done.closed() => {}
            }
        });
        link
    }

    /// Runs one call to its final reply (see [`HelperChannel::call`]);
    /// `cancel` also ends the wait for a connection.
    pub async fn call(&self, call: Call, cancel: &CancellationToken) -> Result<Reply, CallError> {
        let connection = self.connection_unless(cancel).await?;
        Ok(connection.channel().call(call, cancel).await?)
    }

    /// Runs one call that is never stopped to its final reply.
    pub async fn ask(&self, call: Call) -> Result<Reply, Lost> {
        let connection = self.connection().await?;
        connection
            .channel()
            .call(call, &CancellationToken::new())
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_control_socket_leaves_a_tmpdir_too_long_for_a_socket_path() {
        let macos = Path::new("/var/folders/zz/zyxvpxvq6csfxvn_n0000000000000/T");
        assert!(ssh_takes_verbatim(macos));
        let long = format!("/home/runner/work/{}", "x".repeat(60));
        assert_eq!(control_parent(Path::new(&long)), Path::new("/tmp"));
    }

    /// Each of these TMPDIRs failed every connection: ssh split the value
    /// at the space, expanded `%h`, refused the unbalanced quote; a
    /// TMPDIR that does not exist left nowhere for the socket.
    #[test]
    fn the_control_socket_leaves_a_tmpdir_ssh_cannot_take() {
        let root = tempfile::tempdir().unwrap();
        for name in ["sp ace", "pct%h", "q\"uote", "tab\t", "it's", "b\\s"] {
            let tmp = root.path().join(name);
            std::fs::create_dir(&tmp).unwrap();
            assert_eq!(control_parent(&tmp), Path::new("/tmp"), "{name}");
        }
        let missing = root.path().join("missing");
        assert_eq!(control_parent(&missing), Path::new("/tmp"));
        let plain = root.path().join("plain-1.x");
        std::fs::create_dir(&plain).unwrap();
        assert_eq!(control_parent(&plain), plain);
    }

    /// `--ssh-option BatchMode=no` came before the agent's `BatchMode=yes`
    /// and won (ssh keeps the first value), so ssh could prompt and wait.
    #[test]
    fn the_options_the_agent_needs_come_before_the_users() {
        let mut options = RemoteOptions::new(RemoteTarget::parse("box").unwrap());
        options.ssh_options = vec!["BatchMode=no".into(), "ConnectTimeout=2".into()];
        let ssh = Ssh {
            options: &options,
            control: PathBuf::from("/tmp/ca-ssh-x/s"),
            defaults: unset_defaults(""),
        };
        let command = ssh.command(true, "true");
        let args: Vec<_> = command
            .as_std()
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        let at = |option: &str| args.iter().position(|a| a.starts_with(option)).unwrap();
        for own in [
            "ControlPath=",
            "ControlMaster=",
            "BatchMode=yes",
            "ControlPersist=",
        ] {
            assert!(at(own) < at("BatchMode=no"), "{own}: {args:?}");
        }
        assert!(at("ConnectTimeout=2") < at("ConnectTimeout=10"), "{args:?}");
    }

    /// What the agent's ssh command makes of the connection's settings,
    /// as `ssh -G` (given the same arguments) prints them.
    async fn effective(options: &RemoteOptions, keys: &[&str]) -> Vec<String> {
        let ssh = Ssh {
            options,
            control: PathBuf::from("/tmp/ca-ssh-x/s"),
            defaults: defaults_left_unset(options).await,
        };
        let command = ssh.command(true, "true");
        let output = Command::new("ssh")
            .arg("-G")
            .args(command.as_std().get_args())
            .output()
            .await
            .unwrap();
        assert!(output.status.success(), "{output:?}");
        let printed = String::from_utf8_lossy(&output.stdout).into_owned();
        keys.iter()
            .map(|key| {
                printed
                    .lines()
                    .find(|line| line.split(' ').next() == Some(key))
                    .unwrap_or_default()
                    .to_owned()
            })
            .collect()
    }

    /// The agent's `-o ConnectTimeout=10 -o ServerAliveInterval=15 -o
    /// ServerAliveCountMax=3` won over the same settings in the user's ssh
    /// configuration (a command-line option beats the file): `ConnectTimeout
    /// 2` there still waited 10 s for a host that was down. They apply only
    /// where the configuration and the `--ssh-option`s set nothing.
    #[tokio::test]
    async fn the_users_ssh_configuration_wins_over_the_agents_defaults() {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("config");
        let keys = [
            "connecttimeout",
            "serveraliveinterval",
            "serveralivecountmax",
        ];
        let mut options = RemoteOptions::new(RemoteTarget::parse("box").unwrap());
        options.ssh_config = Some(config.clone());

        std::fs::write(
            &config,
            "Host box\n ConnectTimeout 2\n ServerAliveInterval 5\n ServerAliveCountMax 9\n",
        )
        .unwrap();
        assert_eq!(
            effective(&options, &keys).await,
            [
                "connecttimeout 2",
                "serveraliveinterval 5",
                "serveralivecountmax 9"
            ]
        );

        options.ssh_options = vec!["ConnectTimeout=3".into()];
        assert_eq!(effective(&options, &keys[..1]).await, ["connecttimeout 3"]);

        options.ssh_options.clear();
        std::fs::write(&config, "Host other\n ConnectTimeout 2\n").unwrap();
        assert_eq!(
            effective(&options, &keys).await,
            [
                "connecttimeout 10",
                "serveraliveinterval 15",
                "serveralivecountmax 3"
            ]
        );
    }

    /// How `ssh -G` says a setting is unset: `ConnectTimeout` as `none` (a
    /// `0` set on purpose stays); `ServerAliveInterval` as its default `0`.
    #[test]
    fn defaults_are_given_for_what_ssh_prints_as_unset() {
        let given = |printed: &str| unset_defaults(printed).join(" ");
        assert_eq!(
            given("user me\nconnecttimeout none\nserveraliveinterval 0\n"),
            "-o ConnectTimeout=10 -o ServerAliveInterval=15"
        );
        assert_eq!(given("connecttimeout 0\nserveraliveinterval 30\n"), "");
        assert_eq!(
            given(""),
            "-o ConnectTimeout=10 -o ServerAliveInterval=15",
            "ssh -G failed"
        );
    }

    /// The master's script run by a local shell with `uname` replaced: a
    /// failing one was not seen as such (`$HOME` was taken for the platform
    /// and the start waited 60 s), an empty one gave `box runs , but ...`.
    #[tokio::test]
    async fn a_failing_or_silent_uname_is_reported_as_such() {
        let bin = tempfile::tempdir().unwrap();
        let report = |uname: &str| {
            let fake = bin.path().join("uname");
            std::fs::write(&fake, format!("#!/bin/sh\n{uname}\n")).unwrap();
            std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
            let mut shell = Command::new("/bin/sh")
                .args(["-c", &master_script()])
                .env("PATH", bin.path())
                .env("HOME", "/home/u")
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .spawn()
                .unwrap();
            let stdout = shell.stdout.take().unwrap();
            async move { script_report(&mut BufReader::new(stdout)).await.unwrap() }
        };
        let home = PathBuf::from("/home/u");
        assert_eq!(
            report("printf 'Linux x86_64'").await,
            (Ok("Linux x86_64".to_owned()), home.clone())
        );
        assert_eq!(
            report("echo 'uname: cannot run' >&2; echo 'second line' >&2; exit 1").await,
            (Err("uname: cannot run".to_owned()), home.clone())
        );
        assert_eq!(
            report("exit 0").await,
            (Err("it printed nothing".to_owned()), home)
        );
        let error = ConnectError::Uname {
            host: "box".into(),
            message: "it printed nothing".into(),
        };
        assert_eq!(
            error.to_string(),
            "uname -sm failed on box: it printed nothing. The platform must be known to start the helper there: make `uname` work for a non-interactive ssh session on that host."
        );
    }

    #[test]
    fn quoting_survives_single_quotes() {
        assert_eq!(sh_quote("it's"), r"'it'\''s'");
    }

    #[test]
    fn a_remote_of_another_platform_is_refused_with_both_names() {
        let local = local_platform();
        assert!(check_platform("box", &format!("{local}\n")).is_ok());
        assert_eq!(
            check_platform("box", "Plan9 mips").unwrap_err().to_string(),
            format!(
                "box runs Plan9 mips, but this coding-agent is built for {local}: its helper cannot run there. Run a coding-agent built for Plan9 mips."
            )
        );
    }

    /// An upload cut short by a dropped connection: its stderr's reader is
    /// gone too. The report then killed the shell with SIGPIPE before its
    /// `EXIT` trap, and the partial file stayed in the cache for good.
    #[test]
    fn an_upload_cut_short_with_no_one_listening_leaves_nothing() {
        use std::io::Write;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("coding-agent-helper");
        let mut shell = std::process::Command::new("/bin/sh")
            .args(["-c", &upload_script(&path, 1000)])
            .stdin(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        drop(shell.stderr.take());
        shell
            .stdin
            .take()
            .unwrap()
            .write_all(b"\x7fELF half")
            .unwrap();
        assert!(!shell.wait().unwrap().success());
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert!(left.is_empty(), "{left:?}");
    }

    /// An upload cut short was blamed on the directory: `the upload ended
    /// early (exit status: 255). If that directory is not writable, ...`.
    #[test]
    fn an_upload_cut_short_is_said_so_without_blaming_the_directory() {
        use std::os::unix::process::ExitStatusExt;
        let path = Path::new("/home/u/.cache/coding-agent/helper");
        let exited = |code: i32| std::process::ExitStatus::from_raw(code << 8);
        assert_eq!(
            upload_failure(path, exited(255), ""),
            "cannot upload it to /home/u/.cache/coding-agent: the upload was cut short (exit status: 255); nothing was kept, and the next start uploads it again"
        );
        assert_eq!(
            upload_failure(
                path,
                exited(1),
                "the upload was cut short: 9 of 1000 bytes arrived"
            ),
            "cannot upload it to /home/u/.cache/coding-agent: the upload was cut short: 9 of 1000 bytes arrived; nothing was kept, and the next start uploads it again"
        );
        assert_eq!(
            upload_failure(path, exited(1), "mkdir: Permission denied"),
            "cannot upload it to /home/u/.cache/coding-agent: mkdir: Permission denied. If that directory is not writable, set remote.cacheDir to one that is"
        );
    }

    /// The upload script run by a real shell: bytes cut short leave no
    /// helper (and no temporary file); whole ones become an executable one.
    #[test]
    fn an_upload_cut_short_leaves_nothing_and_a_whole_one_the_helper() {
        use std::io::Write;
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cache dir").join("coding-agent-helper");
        let upload = |bytes: &[u8], size: u64| {
            let mut shell = std::process::Command::new("/bin/sh")
                .args(["-c", &upload_script(&path, size)])
                .stdin(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            shell.stdin.take().unwrap().write_all(bytes).unwrap();
            shell.wait_with_output().unwrap()
        };
        let cut = upload(b"\x7fELF half", 1000);
        assert!(!cut.status.success());
        assert_eq!(
            String::from_utf8_lossy(&cut.stderr),
            "the upload was cut short: 9 of 1000 bytes arrived\n"
        );
        let left: Vec<_> = std::fs::read_dir(path.parent().unwrap()).unwrap().collect();
        assert!(left.is_empty(), "{left:?}");

        let whole = upload(b"\x7fELF whole", 10);
        assert!(whole.status.success(), "{whole:?}");
        assert_eq!(std::fs::read(&path).unwrap(), b"\x7fELF whole");
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);

        // A directory where the helper goes: the upload was moved into it,
        // 38 MB a try, and the start said the helper was still missing.
        std::fs::remove_file(&path).unwrap();
        std::fs::create_dir(&path).unwrap();
        let blocked = upload(b"\x7fELF whole", 10);
        assert!(!blocked.status.success());
        assert_eq!(
            String::from_utf8_lossy(&blocked.stderr),
            format!(
                "{} is in the way: it is not a file; remove it, or set remote.cacheDir to another directory\n",
                path.display()
            )
        );
        assert_eq!(
            std::fs::read_dir(&path).unwrap().count(),
            0,
            "nothing moved into it"
        );
    }
}
