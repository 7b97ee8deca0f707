//! The real binary in a real terminal: a tmux server of its own (100x30)
//! running `coding-agent` against a scripted model, with keys sent and the
//! screen read back. A missing tmux skips the test, except under `CI=true`,
//! where it fails (`.ci/run` installs tmux), so no test passes having run
//! nothing.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use super::sse_server::SseServer;

/// Longest any screen is waited for; a slow machine is not a failure before it.
pub const DEADLINE: Duration = Duration::from_secs(30);

/// A tmux server of its own (its own socket) running the binary.
pub struct Tmux {
    socket: String,
    _dir: tempfile::TempDir,
    /// The directory the binary runs in (`work/` in a temp dir, holding
    /// `notes.txt`).
    pub cwd: PathBuf,
    /// `CODING_AGENT_DIR` (`agent/` beside `cwd`).
    pub agent_dir: PathBuf,
    command: String,
}

impl Tmux {
    /// None when tmux is missing outside CI; under `CI=true` a missing tmux
    /// fails the test (`.ci/run` installs it), so it cannot pass having run nothing.
    pub fn start(server: &SseServer) -> Option<Tmux> {
        Self::start_in(server, &[], |_| {})
    }

    /// As [`Tmux::start`], with more arguments for the binary and `prepare`
    /// called on the working directory before it starts (to add project
    /// settings, files).
    pub fn start_in(
        server: &SseServer,
        args: &[&str],
        prepare: impl FnOnce(&Path),
    ) -> Option<Tmux> {
        Self::start_with_env(server, &[], args, prepare)
    }

    /// As [`Tmux::start_in`], with variables set for the binary (`prepare`
    /// may write the files they name).
    pub fn start_with_env(
        server: &SseServer,
        env: &[(&str, String)],
        args: &[&str],
        prepare: impl FnOnce(&Path),
    ) -> Option<Tmux> {
        let tmux = Self::unlaunched(server, env, args, prepare)?;
        tmux.launch();
        Some(tmux)
    }

    /// As [`Tmux::start`], with the binary run from an interactive shell
    /// ([`Tmux::launch_from_shell`]).
    pub fn start_from_shell(server: &SseServer) -> Option<Tmux> {
        let tmux = Self::unlaunched(server, &[], &[], |_| {})?;
        tmux.launch_from_shell();
        Some(tmux)
    }

    /// The directories and the command line, nothing started yet.
    fn unlaunched(
        server: &SseServer,
        env: &[(&str, String)],
        args: &[&str],
        prepare: impl FnOnce(&Path),
    ) -> Option<Tmux> {
        if Command::new("tmux").arg("-V").output().is_err() {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "tmux is not installed, and CI=true: `.ci/run` installs it"
            );
            eprintln!("tmux is not installed: skipping (CI=true makes this a failure)");
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let cwd = root.join("work");
        std::fs::create_dir_all(&cwd).unwrap();
        std::fs::write(cwd.join("notes.txt"), "alpha\nbeta\ngamma\n").unwrap();
        let agent_dir = root.join("agent");
        std::fs::create_dir_all(&agent_dir).unwrap();
        prepare(&cwd);
        let socket = format!(
            "tui-test-{}-{}",
            std::process::id(),
            root.file_name().unwrap().to_string_lossy()
        );
        let vars: String = env
            .iter()
            .map(|(name, value)| format!("{name}='{value}' "))
            .collect();
        let command = format!(
            "env {vars}CODING_AGENT_DIR={agent} TERM=xterm-256color {bin} --provider openai --model test-model --base-url {url} --api-key test-key {args}",
            agent = agent_dir.display(),
            bin = env!("CARGO_BIN_EXE_coding-agent"),
            url = server.base_url,
            args = args.join(" "),
        );
        Some(Tmux {
            socket,
            _dir: dir,
            cwd,
            agent_dir,
            command,
        })
    }

    /// Starts the binary (again, once the last run has quit: a tmux server
    /// ends with its last session).
    pub fn launch(&self) {
        self.new_session(&self.command);
    }

    /// Starts an interactive shell (job control on, prompt `$ `) and runs
    /// the binary from it, as a user does: Ctrl+Z stops it to that shell.
    pub fn launch_from_shell(&self) {
        self.new_session("env PS1='$ ' bash --norc --noprofile -i");
        self.wait_for("the shell's prompt", |s| s.starts_with("$"));
        self.type_text(&self.command);
        self.key("Enter");
    }

    fn new_session(&self, command: &str) {
        let start = Instant::now();
        loop {
            let output = Command::new("tmux")
                .args([
                    "-L",
                    &self.socket,
                    "-f",
                    "/dev/null",
                    "new-session",
                    "-d",
                    "-x",
                    "100",
                    "-y",
                    "30",
                    "-c",
                ])
                .arg(&self.cwd)
                .arg(command)
                .output()
                .unwrap();
            if output.status.success() {
                return;
            }
            // The server of the last run may still be exiting.
            assert!(
                start.elapsed() < DEADLINE,
                "tmux new-session failed: {}",
                String::from_utf8_lossy(&output.stderr)
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Runs a tmux command on this server (`set -g ...`, `show-buffer`);
    /// returns its stdout.
    pub fn tmux(&self, args: &[&str]) -> String {
        let output = Command::new("tmux")
            .args(["-L", &self.socket])
            .args(args)
            .output()
            .unwrap();
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    /// The screen as text.
    pub fn screen(&self) -> String {
        self.tmux(&["capture-pane", "-p"])
    }

    /// Types `text` literally.
    pub fn type_text(&self, text: &str) {
        self.tmux(&["send-keys", "-l", text]);
    }

    /// Presses `key` (tmux's key names: `Enter`, `Escape`, `C-c`, `Down`).
    pub fn key(&self, key: &str) {
        self.tmux(&["send-keys", key]);
    }

    /// Once the UI is up, sends `prompt` and waits for the scripted model's
    /// final answer to it; the screen then.
    pub fn ask(&self, prompt: &str) -> String {
        self.wait_for("the footer", |s| s.contains("openai/test-model"));
        self.type_text(prompt);
        self.key("Enter");
        let answer = format!("Done. Last user message: {prompt}");
        self.wait_for("the answer", |s| s.contains(&answer))
    }

    /// Waits until the screen satisfies `done`; fails with the screen after [`DEADLINE`].
    pub fn wait_for(&self, what: &str, done: impl Fn(&str) -> bool) -> String {
        let start = Instant::now();
        loop {
            let screen = self.screen();
            if done(&screen) {
                return screen;
            }
            assert!(
                start.elapsed() < DEADLINE,
                "waited for {what}; screen:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Quits the app (Ctrl+C twice) and waits until it has gone.
    pub fn quit(&self) {
        self.key("C-c");
        self.key("C-c");
        self.wait_for("the app to quit", |s| !s.contains("openai/test-model"));
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        self.tmux(&["kill-server"]);
    }
}
