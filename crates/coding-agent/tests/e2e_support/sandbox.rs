//! A throwaway world for one run of the binary: a temp root with `home/`
//! (HOME), `agent/` (CODING_AGENT_DIR), `work/` (the cwd, the repository the
//! agent edits) and `tmp/` (TMPDIR); an environment holding only PATH, those
//! and a dummy key; the provider, model and base URL pointing at a
//! [`ModelServer`]. Plus the processes such a run leaves, seen through /proc.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::server::ModelServer;
use super::wire::{API_KEY, Answer, MODEL, Wire};

/// The binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_coding-agent");

/// How long a test waits for anything before it fails.
pub const PATIENCE: Duration = Duration::from_secs(20);

/// How often polling loops look again.
const POLL: Duration = Duration::from_millis(10);

/// The temp directories of one test.
pub struct Sandbox {
    _dir: tempfile::TempDir,
    /// The temp root holding the others (for extra directories).
    pub root: PathBuf,
    /// HOME.
    pub home: PathBuf,
    /// CODING_AGENT_DIR.
    pub agent_dir: PathBuf,
    /// The working directory.
    pub work: PathBuf,
    /// TMPDIR.
    pub tmp: PathBuf,
}

impl Sandbox {
    /// Fresh, empty directories.
    pub fn new() -> Self {
        Self::in_dir(tempfile::tempdir().unwrap())
    }

    /// Fresh, empty directories outside the system temp directory (under
    /// Cargo's target dir), for tests of the bash sandbox, which lets
    /// commands write the temp directories.
    pub fn outside_temp() -> Self {
        Self::in_dir(tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap())
    }

    fn in_dir(dir: tempfile::TempDir) -> Self {
        let root = dir.path().canonicalize().unwrap();
        let sandbox = Sandbox {
            home: root.join("home"),
            agent_dir: root.join("agent"),
            work: root.join("work"),
            tmp: root.join("tmp"),
            root,
            _dir: dir,
        };
        for dir in [
            &sandbox.home,
            &sandbox.agent_dir,
            &sandbox.work,
            &sandbox.tmp,
        ] {
            std::fs::create_dir_all(dir).unwrap();
        }
        sandbox
    }

    /// The binary in the work directory with the isolated environment,
    /// talking `wire` to `server`; add the mode flags and prompts.
    pub fn command(&self, wire: Wire, server: &ModelServer) -> Command {
        self.command_for(wire, server, MODEL)
    }

    /// The binary in the work directory with the isolated environment and
    /// nothing else: the settings choose the model (add keys with `env`).
    pub fn bare_command(&self) -> Command {
        self.bare_command_of(Path::new(BIN))
    }

    /// [`Sandbox::bare_command`] running `program` (a copy of the binary).
    pub fn bare_command_of(&self, program: &Path) -> Command {
        let mut command = Command::new(program);
        command
            .current_dir(&self.work)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &self.home)
            .env("CODING_AGENT_DIR", &self.agent_dir)
            .env("TMPDIR", &self.tmp);
        command
    }

    /// [`Sandbox::command`] with `--model model`.
    pub fn command_for(&self, wire: Wire, server: &ModelServer, model: &str) -> Command {
        self.command_of(Path::new(BIN), wire, server, model)
    }

    /// [`Sandbox::command_for`] running `program` (a copy of the binary).
    pub fn command_of(
        &self,
        program: &Path,
        wire: Wire,
        server: &ModelServer,
        model: &str,
    ) -> Command {
        let mut command = self.bare_command_of(program);
        command
            .env(wire.key_env(), API_KEY)
            .args(["--provider", wire.provider(), "--model", model])
            .args(["--base-url", &wire.base_url(server.addr())]);
        command
    }

    /// Writes the global settings (`settings.json` of the agent dir).
    pub fn write_global_settings(&self, settings: &Value) {
        std::fs::write(self.agent_dir.join("settings.json"), settings.to_string()).unwrap();
    }

    /// Writes the work directory's project settings
    /// (`.coding-agent/settings.json`); returns their path.
    pub fn write_project_settings(&self, settings: &Value) -> PathBuf {
        let path = self.work.join(".coding-agent").join("settings.json");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, settings.to_string()).unwrap();
        path
    }

    /// The session files of `dir` (`.jsonl`), sorted.
    pub fn session_files(dir: &Path) -> Vec<PathBuf> {
        let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .filter_map(Result::ok)
            .map(|entry| entry.path())
            .filter(|path| path.extension().is_some_and(|ext| ext == "jsonl"))
            .collect();
        files.sort();
        files
    }

    /// The default session directory of the work directory (Pi's naming).
    pub fn default_session_dir(&self) -> PathBuf {
        let cwd = self.work.to_string_lossy();
        let safe = cwd.trim_start_matches('/').replace(['/', '\\', ':'], "-");
        self.agent_dir.join("sessions").join(format!("--{safe}--"))
    }
}

/// A model that reaches outside the work directory: bash runs `command`,
/// then write puts `escaped` into `outside`, then it answers `closing`.
pub fn escaping_model(wire: Wire, command: &str, outside: &Path, closing: &str) -> ModelServer {
    ModelServer::answering(
        wire,
        vec![
            Answer::call("call_rm", "bash", json!({"command": command})),
            Answer::call(
                "call_write",
                "write",
                json!({"path": outside, "content": "escaped\n"}),
            ),
            Answer::text(&[closing]),
        ],
    )
}

/// A spawned binary, killed (SIGKILL) and reaped if the test ends first.
pub struct Running {
    child: Child,
}

impl Running {
    /// Spawns `command` with stdout and stderr captured, stdin null.
    pub fn spawn(mut command: Command) -> Self {
        let child = command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        Running { child }
    }

    /// Spawns `command` with stdin, stdout and stderr piped.
    pub fn spawn_piped(mut command: Command) -> Self {
        let child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        Running { child }
    }

    /// Spawns `command` with the stdin it was given, stdout and stderr
    /// piped.
    pub fn spawn_with_stdin(mut command: Command) -> Self {
        let child = command
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        Running { child }
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends `signal` (`INT` is what Ctrl+C sends, `TERM`, `HUP`) to this
    /// process only.
    pub fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .args([&format!("-{signal}"), &self.pid().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
    }

    /// SIGKILL, then reaps it.
    pub fn kill_9(&mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }

    /// Its stdin (for `--mode rpc`), taken once.
    pub fn take_stdin(&mut self) -> ChildStdin {
        self.child.stdin.take().unwrap()
    }

    /// Its stdout as lines arriving on a channel (read by a thread).
    pub fn stdout_lines(&mut self) -> Receiver<String> {
        let stdout = self.child.stdout.take().unwrap();
        let (sender, receiver) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        receiver
    }

    /// Reads stdout up to the first line holding `text`, then closes it, as
    /// a reader such as `head` does.
    pub fn close_stdout_after(&mut self, text: &str) {
        let mut lines = BufReader::new(self.child.stdout.take().unwrap()).lines();
        let found = lines.any(|line| line.is_ok_and(|line| line.contains(text)));
        assert!(found, "stdout ended before a line holding {text:?}");
    }

    /// Waits for it to exit (within [`PATIENCE`]); returns its status, stdout
    /// and stderr (what is left of them).
    pub fn finish(mut self) -> (ExitStatus, String, String) {
        use std::io::Read;
        let mut stdout = self.child.stdout.take();
        let mut stderr = self.child.stderr.take();
        let out = std::thread::spawn(move || {
            let mut text = String::new();
            if let Some(pipe) = stdout.as_mut() {
                pipe.read_to_string(&mut text).unwrap();
            }
            text
        });
        let err = std::thread::spawn(move || {
            let mut text = String::new();
            if let Some(pipe) = stderr.as_mut() {
                pipe.read_to_string(&mut text).unwrap();
            }
            text
        });
        let deadline = Instant::now() + PATIENCE;
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            assert!(Instant::now() < deadline, "the binary did not exit");
            std::thread::sleep(POLL);
        };
        (status, out.join().unwrap(), err.join().unwrap())
    }

    /// [`Running::finish`] for a run that must succeed quietly: exit status
    /// 0 and nothing on stderr (both shown, with stdout, when not). Returns
    /// stdout.
    pub fn finish_quietly(self) -> String {
        let (status, stdout, stderr) = self.finish();
        assert_eq!(
            (status.code(), stderr.as_str()),
            (Some(0), ""),
            "stdout: {stdout}"
        );
        stdout
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Writes `command` as one JSON line to an RPC process.
pub fn send(stdin: &mut ChildStdin, command: &Value) {
    writeln!(stdin, "{command}").unwrap();
    stdin.flush().unwrap();
}

/// The next stdout line as JSON; panics after [`PATIENCE`].
pub fn next_json(lines: &Receiver<String>) -> Value {
    match lines.recv_timeout(PATIENCE) {
        Ok(line) => serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}")),
        Err(RecvTimeoutError::Timeout) => panic!("no output line within {PATIENCE:?}"),
        Err(RecvTimeoutError::Disconnected) => panic!("stdout closed"),
    }
}

/// Polls `condition` until it holds; panics naming `what` after [`PATIENCE`].
pub fn wait_until(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + PATIENCE;
    while !condition() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(POLL);
    }
}

/// The live (not zombie) processes with an argument containing `marker`,
/// with their arguments.
pub fn processes_with(marker: &str) -> Vec<(u32, Vec<String>)> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().filter_map(Result::ok) {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        // A zombie's cmdline is empty; a process gone meanwhile reads as an error.
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let args: Vec<String> = cmdline
            .split(|&b| b == 0)
            .filter(|arg| !arg.is_empty())
            .map(|arg| String::from_utf8_lossy(arg).into_owned())
            .collect();
        if args.iter().any(|arg| arg.contains(marker)) {
            found.push((pid, args));
        }
    }
    found
}

/// Kills (SIGKILL, by pid) every process still carrying its marker, so a
/// failing test leaves none of the processes it started behind.
pub struct KillOnDrop(pub String);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        for (pid, _) in processes_with(&self.0) {
            let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
        }
    }
}

/// A bash command that sleeps a minute (longer than [`PATIENCE`], so a
/// test that waits for it fails) in a process named `sleep-<marker>` (so it
/// can be found in /proc), then prints `never`.
pub fn slow_command(marker: &str) -> String {
    format!("(exec -a sleep-{marker} sleep 60); echo never")
}

/// The flags that let [`slow_command`] past the permission policy (it is not
/// on the known-safe list, and print mode has no one to ask).
pub const ALLOW_SLOW: [&str; 2] = ["--allow", "bash(exec:*)"];

/// Whether the sleep of [`slow_command`] is running.
pub fn slow_command_running(marker: &str) -> bool {
    let name = format!("sleep-{marker}");
    processes_with(marker)
        .iter()
        .any(|(_, args)| args.first() == Some(&name))
}

/// A marker no other test or run shares.
pub fn unique_marker(test: &str) -> String {
    format!("e2e{}{test}", std::process::id())
}

/// The lines of a session file as JSON; a line that does not parse is
/// returned as a string value.
pub fn session_lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|_| Value::String(line.to_owned())))
        .collect()
}

/// The role of each message entry of a session, in order.
pub fn session_roles(lines: &[Value]) -> Vec<String> {
    lines
        .iter()
        .filter(|line| line["type"] == "message")
        .map(|line| line["message"]["role"].as_str().unwrap_or("?").to_owned())
        .collect()
}
