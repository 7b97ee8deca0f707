//! Running hooks, those of one event in parallel: a command as `sh -c
//! COMMAND` in the working directory, the event's JSON on stdin, each in its
//! own process group so a timeout or an abort kills everything the hook
//! started (a `sleep` under a shell script included); an `http` hook as a
//! POST (see `hooks/http.rs`).

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use futures::future::join_all;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

use super::config::{Action, Handler, OnError};
use super::judge::{Asking, investigate, judge};
use super::outcome::seconds;
use crate::support::process_group::{ProcessGroup, detached_command, signal_name};

/// How much of a hook's stdout (or an `http` hook's answer) is kept. It is
/// the hook's answer, read only when whole (a deny with a long reason, an
/// `updatedInput` holding a file's text), so the bound is generous; past it
/// the answer is not read at all (see `hooks/outcome.rs`, `hooks/http.rs`) and the rest is
/// read and dropped so the hook never blocks on a full pipe.
pub(super) const STDOUT_LIMIT: usize = 16 * 1024 * 1024;

/// How much of a hook's stderr is kept: a reason or a warning for people.
pub(super) const STDERR_LIMIT: usize = 256 * 1024;

/// How long the pipes are still read once the hook's shell has exited. What
/// it wrote is in them by then; a background process it left may hold them
/// open for as long as it runs, and what that one writes later is not the
/// hook's answer.
const DRAIN_AFTER_EXIT: Duration = Duration::from_millis(100);

/// Environment variables naming the project directory (Claude Code's, so
/// `"$CLAUDE_PROJECT_DIR"/.claude/hooks/x.sh` works, and ours).
const PROJECT_DIR_VARS: [&str; 2] = ["CLAUDE_PROJECT_DIR", "CODING_AGENT_PROJECT_DIR"];

/// How a hook's process ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunStatus {
    /// It exited with this code.
    Exited(i32),
    /// A signal killed it (the signal's name).
    Signalled(String),
    /// Its process ran past its timeout; its process group was killed (an
    /// `http`, `prompt` or `agent` hook's timeout is a `RequestFailed`: it
    /// did not answer within it).
    TimedOut(Duration),
    /// The call or prompt was aborted; its process group was killed.
    Aborted,
    /// It could not be started.
    SpawnFailed(String),
    /// An `http` hook's request failed, or a `prompt` or `agent` hook's
    /// model gave no verdict: what happened (`answered HTTP 503 Service
    /// Unavailable`, `could not be reached: ...`).
    RequestFailed(String),
}

impl RunStatus {
    /// A hook that asks (an `http` hook's server, a `prompt` or `agent`
    /// hook's model) got no answer within `timeout`: no process was killed,
    /// so it does not read as a command's [`RunStatus::TimedOut`] (an HTTP
    /// hook's said it `timed out after 2s and was killed`).
    pub(super) fn no_answer_within(timeout: Duration) -> Self {
        RunStatus::RequestFailed(format!("did not answer within {}", seconds(timeout)))
    }
}

/// One hook's run.
#[derive(Debug, Clone, PartialEq)]
pub struct HookRun {
    /// The command that ran, or the URL posted to.
    pub command: String,
    /// What its failure does.
    pub on_error: OnError,
    /// How it ended.
    pub status: RunStatus,
    /// Its stdout, or an `http` hook's 2xx answer (lossy UTF-8, its first
    /// 16 MiB).
    pub stdout: String,
    /// `stdout` ran past its 16 MiB: what was kept is not the whole answer.
    pub stdout_cut: bool,
    /// Its stderr, or the body of an `http` hook's failed answer (its first
    /// 256 KiB).
    pub stderr: String,
}

/// The first `limit` bytes of an output, and whether there were more.
pub(super) struct Capped {
    kept: Vec<u8>,
    limit: usize,
    cut: bool,
}

impl Capped {
    pub(super) fn new(limit: usize) -> Self {
        Self {
            kept: Vec::new(),
            limit,
            cut: false,
        }
    }

    pub(super) fn push(&mut self, bytes: &[u8]) {
        let room = self.limit.saturating_sub(self.kept.len());
        self.cut |= bytes.len() > room;
        self.kept
            .extend_from_slice(bytes.get(..bytes.len().min(room)).unwrap_or_default());
    }

    /// Whether more was pushed than is kept.
    pub(super) fn is_cut(&self) -> bool {
        self.cut
    }

    /// Reads `pipe` to its end (or until this future is dropped).
    async fn read_from(&mut self, pipe: Option<impl AsyncRead + Unpin>) {
        let Some(mut pipe) = pipe else {
            return;
        };
        let mut buffer = [0u8; 8192];
        while let Ok(n) = pipe.read(&mut buffer).await {
            if n == 0 {
                break;
            }
            self.push(buffer.get(..n).unwrap_or_default());
        }
    }

    /// The kept bytes as lossy UTF-8, and whether there were more.
    pub(super) fn into_text(self) -> (String, bool) {
        (String::from_utf8_lossy(&self.kept).into_owned(), self.cut)
    }
}

/// Runs `handlers` at once, each with `input` on stdin, in `cwd` (`prompt`
/// and `agent` hooks ask with `asking`); results in the handlers' order.
pub async fn run_all(
    handlers: &[Handler],
    input: &[u8],
    cwd: &Path,
    asking: &Asking,
    cancel: &CancellationToken,
) -> Vec<HookRun> {
    join_all(
        handlers
            .iter()
            .map(|handler| run_one(handler, input, cwd, asking, cancel)),
    )
    .await
}

async fn run_one(
    handler: &Handler,
    input: &[u8],
    cwd: &Path,
    asking: &Asking,
    cancel: &CancellationToken,
) -> HookRun {
    let finished = |status, (stdout, stdout_cut), stderr| HookRun {
        command: handler.name().to_owned(),
        on_error: handler.on_error,
        status,
        stdout,
        stdout_cut,
        stderr,
    };
    let nothing = || (String::new(), false);
    let line = match &handler.action {
        Action::Command(line) => line,
        Action::Http(hook) => {
            let answer = super::http::post(hook, input, handler.timeout, cancel).await;
            return match answer.status {
                RunStatus::Exited(_) => {
                    finished(answer.status, (answer.body, false), String::new())
                }
                status => finished(status, nothing(), answer.body),
            };
        }
        Action::Prompt(hook) => {
            let verdict = judge(hook, asking, input, handler.timeout, cancel).await;
            return finished(verdict.status, nothing(), verdict.reason);
        }
        Action::Agent(hook) => {
            let verdict = investigate(hook, asking, input, cwd, handler.timeout, cancel).await;
            return finished(verdict.status, nothing(), verdict.reason);
        }
    };
    // By its path: a `sh` found on the PATH could be one a sandboxed
    // command planted in the workspace (an activated `.venv/bin`), and
    // hooks run outside the sandbox.
    let mut command = detached_command("/bin/sh");
    command
        .arg("-c")
        .arg(line)
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    for var in PROJECT_DIR_VARS {
        command.env(var, cwd);
    }
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(error) => {
            return finished(
                RunStatus::SpawnFailed(error.to_string()),
                nothing(),
                String::new(),
            );
        }
    };
    let mut group = ProcessGroup::of(child.id());
    let (stdin, stdout, stderr) = (child.stdin.take(), child.stdout.take(), child.stderr.take());
    let write = async {
        if let Some(mut stdin) = stdin {
            // A hook that does not read its input closes the pipe: not an error.
            let _ = stdin.write_all(input).await;
        }
    };
    let run = async {
        let (mut stdout_kept, mut stderr_kept) =
            (Capped::new(STDOUT_LIMIT), Capped::new(STDERR_LIMIT));
        let status = {
            let pipes = async {
                tokio::join!(
                    write,
                    stdout_kept.read_from(stdout),
                    stderr_kept.read_from(stderr)
                )
            };
            tokio::pin!(pipes);
            let exit = child.wait();
            tokio::pin!(exit);
            tokio::select! {
                _ = &mut pipes => exit.await,
                status = &mut exit => {
                    let _ = tokio::time::timeout(DRAIN_AFTER_EXIT, pipes).await;
                    status
                }
            }
        };
        (stdout_kept.into_text(), stderr_kept.into_text().0, status)
    };
    tokio::select! {
        (stdout, stderr, status) = run => {
            // Reaped: the id may be reused, and the hook's own background
            // children are its business.
            group.release();
            let status = match status {
                Ok(status) => exit_status(status),
                Err(error) => RunStatus::SpawnFailed(error.to_string()),
            };
            finished(status, stdout, stderr)
        }
        () = tokio::time::sleep(handler.timeout) => {
            group.kill();
            finished(RunStatus::TimedOut(handler.timeout), nothing(), String::new())
        }
        () = cancel.cancelled() => {
            group.kill();
            finished(RunStatus::Aborted, nothing(), String::new())
        }
    }
}

fn exit_status(status: std::process::ExitStatus) -> RunStatus {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => RunStatus::Exited(code),
        (None, Some(signal)) => RunStatus::Signalled(signal_name(signal)),
        (None, None) => RunStatus::Signalled("unknown".to_owned()),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::time::Instant;

    use super::*;

    fn handler(command: &str, timeout: Duration) -> Handler {
        Handler {
            action: Action::Command(command.into()),
            timeout,
            on_error: OnError::Warn,
            condition: None,
        }
    }

    /// Runs `commands` as the hooks of one Stop event, in a fresh directory.
    async fn run_each(
        commands: &[&str],
        timeout: Duration,
        cancel: &CancellationToken,
    ) -> Vec<HookRun> {
        let dir = tempfile::tempdir().unwrap();
        let handlers: Vec<_> = commands.iter().map(|c| handler(c, timeout)).collect();
        run_all(
            &handlers,
            b"{\"hook_event_name\":\"Stop\"}",
            dir.path(),
            &Asking::default(),
            cancel,
        )
        .await
    }

    async fn run(command: &str, timeout: Duration) -> HookRun {
        let runs = run_each(&[command], timeout, &CancellationToken::new()).await;
        runs.into_iter().next().unwrap()
    }

    fn statuses(runs: Vec<HookRun>) -> Vec<RunStatus> {
        runs.into_iter().map(|r| r.status).collect()
    }

    #[tokio::test]
    async fn the_hook_reads_its_input_and_both_streams_and_the_code_are_kept() {
        let run = run("cat; echo; echo oops >&2; exit 3", Duration::from_secs(10)).await;
        assert_eq!(
            run,
            HookRun {
                command: "cat; echo; echo oops >&2; exit 3".into(),
                on_error: OnError::Warn,
                status: RunStatus::Exited(3),
                stdout: "{\"hook_event_name\":\"Stop\"}\n".into(),
                stdout_cut: false,
                stderr: "oops\n".into(),
            }
        );
    }

    #[tokio::test]
    async fn the_project_dir_is_the_cwd_and_in_the_environment() {
        let run = run(
            "test \"$CLAUDE_PROJECT_DIR\" = \"$(pwd -P)\" && test \"$CODING_AGENT_PROJECT_DIR\" = \"$CLAUDE_PROJECT_DIR\"",
            Duration::from_secs(10),
        )
        .await;
        assert_eq!(run.status, RunStatus::Exited(0), "{run:?}");
    }

    #[tokio::test]
    async fn a_hook_past_its_timeout_is_killed_with_its_process_group() {
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("pid");
        // The shell starts a grandchild that would outlive a plain kill of the shell.
        let command = format!("sleep 30 & echo $! > {}; wait", pid_file.display());
        let started = Instant::now();
        let run = run(&command, Duration::from_millis(500)).await;
        assert_eq!(run.status, RunStatus::TimedOut(Duration::from_millis(500)));
        assert!(started.elapsed() < Duration::from_secs(10));
        let pid: i32 = std::fs::read_to_string(&pid_file)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert!(process_gone(pid).await, "the hook's sleep {pid} survived");
    }

    #[tokio::test]
    async fn an_abort_kills_the_running_hooks() {
        let cancel = CancellationToken::new();
        let canceller = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(200)).await;
            canceller.cancel();
        });
        let started = Instant::now();
        let runs = run_each(&["sleep 30", "sleep 31"], Duration::from_secs(60), &cancel).await;
        assert!(started.elapsed() < Duration::from_secs(10));
        assert_eq!(statuses(runs), [RunStatus::Aborted, RunStatus::Aborted]);
    }

    #[tokio::test]
    async fn hooks_of_one_event_run_in_parallel() {
        let dir = tempfile::tempdir().unwrap();
        let barrier = dir.path().join("barrier");
        // Each waits for the other's file: only a parallel run finishes both.
        let waiting = |mine: &str, other: &str| {
            let barrier = barrier.display();
            format!("touch {barrier}.{mine}; while [ ! -e {barrier}.{other} ]; do sleep 0.05; done")
        };
        let (a, b) = (waiting("a", "b"), waiting("b", "a"));
        let runs = run_each(
            &[&a, &b],
            Duration::from_secs(10),
            &CancellationToken::new(),
        )
        .await;
        assert_eq!(statuses(runs), [RunStatus::Exited(0), RunStatus::Exited(0)]);
    }

    #[tokio::test]
    async fn a_long_answer_is_read_whole_and_one_past_the_limit_is_marked_cut() {
        let long = run(
            "head -c 300000 /dev/zero | tr '\\0' x",
            Duration::from_secs(30),
        )
        .await;
        assert_eq!((long.stdout.len(), long.stdout_cut), (300_000, false));
        let past = run(
            &format!("head -c {} /dev/zero", STDOUT_LIMIT + 1),
            Duration::from_secs(30),
        )
        .await;
        assert_eq!(past.status, RunStatus::Exited(0));
        assert_eq!((past.stdout.len(), past.stdout_cut), (STDOUT_LIMIT, true));
    }

    #[tokio::test]
    async fn a_hook_is_done_when_its_shell_exits_though_a_background_child_holds_its_pipes() {
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("pid");
        let command = format!(
            "(sleep 300; echo late) & echo $! > {}; echo '{{}}'",
            pid_file.display()
        );
        // Waiting for the pipes to close would run into the timeout.
        let run = run(&command, Duration::from_secs(30)).await;
        let pid = std::fs::read_to_string(&pid_file).unwrap();
        std::process::Command::new("kill")
            .arg(pid.trim())
            .status()
            .unwrap();
        assert_eq!(run.status, RunStatus::Exited(0), "{run:?}");
        assert_eq!(run.stdout, "{}\n");
    }

    #[tokio::test]
    async fn a_missing_command_is_exit_127_from_the_shell() {
        let run = run("/nonexistent/hook.sh", Duration::from_secs(10)).await;
        assert_eq!(run.status, RunStatus::Exited(127));
        assert!(run.stderr.contains("/nonexistent/hook.sh"), "{run:?}");
    }

    /// Whether `pid` is gone (or a zombie) within a few seconds.
    async fn process_gone(pid: i32) -> bool {
        for _ in 0..100 {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"));
            match stat {
                Err(_) => return true,
                Ok(stat) if stat.split_whitespace().nth(2) == Some("Z") => return true,
                Ok(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        }
        false
    }
}
