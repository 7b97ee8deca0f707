//! The sandbox on the real kernel: bash commands started through the
//! `coding-agent` binary's sandbox helper, and `write`/`edit` through their
//! sandboxed Operations. These tests need Landlock (Linux 6.7+ for TCP) and
//! fail where it is missing: a sandbox that cannot be tested is not known to
//! work.
//!
//! Fixtures live under Cargo's target temp dir, not `/tmp`, because the temp
//! directories are writable inside the sandbox.

// Test helpers outside `#[test]` functions panic on purpose, like the tests themselves.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use agent_core::{AgentToolResult, ToolError};
use coding_agent::definition::Typed;
use coding_agent::sandbox::kernel::probe;
use coding_agent::sandbox::{
    Sandbox, SandboxMode, SandboxPolicy, SandboxRequest, SandboxedBashOperations,
};
use coding_agent::tools::bash::ops::{BashOperations, LocalBashOperations};
use coding_agent::tools::bash::{BashTool, BashToolOptions, SpawnContext};
use coding_agent::{ToolContext, ToolDefinition};
use serde_json::{Value, json};

/// The binary under test, which is also the sandbox helper.
const HELPER: &str = env!("CARGO_BIN_EXE_coding-agent");

/// `work/` (the workspace root and cwd), `home/` (`$HOME`, outside every
/// root) and `tmp/` (the sandbox's temp directory).
struct Fixture {
    _root: tempfile::TempDir,
    work: PathBuf,
    home: PathBuf,
    tmp: PathBuf,
}

impl Fixture {
    fn new() -> Self {
        let root = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        let base = root.path().canonicalize().unwrap();
        let [work, home, tmp] = ["work", "home", "tmp"].map(|d| base.join(d));
        for dir in [&work, &home, &tmp] {
            std::fs::create_dir(dir).unwrap();
        }
        Fixture {
            _root: root,
            work,
            home,
            tmp,
        }
    }

    fn policy(&self, mode: SandboxMode, allow_network: bool) -> SandboxPolicy {
        SandboxPolicy {
            mode,
            writable_roots: vec![self.work.clone(), self.tmp.clone()],
            allow_network,
        }
    }

    fn sandboxed(&self, mode: SandboxMode, allow_network: bool) -> Arc<dyn BashOperations> {
        Arc::new(SandboxedBashOperations::new(
            Path::new(HELPER),
            self.policy(mode, allow_network),
        ))
    }

    /// A bash tool running through `ops` with `HOME` and `TMPDIR` set to
    /// the fixture's.
    fn bash(&self, ops: Arc<dyn BashOperations>) -> Typed<BashTool> {
        let env = vec![
            ("HOME".to_owned(), self.home.to_string_lossy().into_owned()),
            ("TMPDIR".to_owned(), self.tmp.to_string_lossy().into_owned()),
        ];
        Typed::new(BashTool {
            ops,
            options: BashToolOptions {
                temp_dir: Some(self.tmp.clone()),
                spawn_hook: Some(Arc::new(move |mut spawn: SpawnContext| {
                    spawn.env.extend(env.clone());
                    spawn
                })),
                ..BashToolOptions::default()
            },
        })
    }

    async fn run(
        &self,
        tool: &dyn ToolDefinition,
        args: Value,
    ) -> Result<AgentToolResult, ToolError> {
        tokio::time::timeout(
            Duration::from_secs(20),
            tool.execute(args, ToolContext::new(&self.work)),
        )
        .await
        .expect("the tool did not return")
    }

    /// The notice a denied bash command ends with under `policy(mode, network)`.
    fn notice(&self, mode: SandboxMode, allow_network: bool) -> String {
        self.policy(mode, allow_network).bash_denial_notice()
    }
}

fn text(result: Result<AgentToolResult, ToolError>) -> String {
    let result = result.unwrap();
    result.content[0].as_text().unwrap().to_owned()
}

fn error(result: Result<AgentToolResult, ToolError>) -> String {
    result.unwrap_err().message().to_owned()
}

#[test]
fn the_probe_finds_landlock_with_file_and_tcp_rules() {
    let enforced =
        probe().expect("Landlock is not available on this kernel; the sandbox cannot be tested");
    assert!(enforced.writes_contained(), "{enforced:?}");
    assert!(enforced.network_contained(), "{enforced:?}");
}

#[test]
fn a_default_sandbox_is_active_with_the_network_off() {
    let fixture = Fixture::new();
    let sandbox = Sandbox::start(&SandboxRequest::default(), &fixture.work, HELPER.into()).unwrap();
    let status = sandbox.status();
    assert_eq!(status.mode, SandboxMode::WorkspaceWrite);
    assert!(status.active);
    assert!(!status.network_allowed);
    assert_eq!(status.roots[0], fixture.work);
    assert_eq!(status.notice(&SandboxRequest::default()), None);
}

#[tokio::test]
async fn touching_a_file_in_home_fails_in_the_sandbox_and_works_without_it() {
    let fixture = Fixture::new();
    let target = fixture.home.join("x");
    let sandboxed = fixture.bash(fixture.sandboxed(SandboxMode::WorkspaceWrite, false));
    let denied = error(
        fixture
            .run(&sandboxed, json!({"command": "touch \"$HOME/x\""}))
            .await,
    );
    assert_eq!(
        denied,
        format!(
            "touch: cannot touch '{}': Permission denied\n\n{}\n\n\nCommand exited with code 1",
            target.display(),
            fixture.notice(SandboxMode::WorkspaceWrite, false)
        )
    );
    assert!(!target.exists());

    let unsandboxed = fixture.bash(Arc::new(LocalBashOperations::new()));
    let ran = text(
        fixture
            .run(&unsandboxed, json!({"command": "touch \"$HOME/x\""}))
            .await,
    );
    assert_eq!(ran, "(no output)");
    assert!(target.exists());
}

#[tokio::test]
async fn writes_under_the_workspace_the_temp_dir_and_to_devices_succeed() {
    let fixture = Fixture::new();
    let bash = fixture.bash(fixture.sandboxed(SandboxMode::WorkspaceWrite, false));
    let command = "mkdir -p d/e && echo work > d/e/f && echo tmp > \"$TMPDIR/t\" \
                   && echo gone > /dev/null && cat d/e/f \"$TMPDIR/t\" && echo $CODING_AGENT_SANDBOX";
    let output = text(fixture.run(&bash, json!({ "command": command })).await);
    assert_eq!(output, "work\ntmp\nworkspace-write\n");
    assert_eq!(
        std::fs::read_to_string(fixture.work.join("d/e/f")).unwrap(),
        "work\n"
    );
}

/// Output over the limits is kept whole in a file in the temp directory,
/// sandboxed as not: the sandbox's Operations once left the file to the
/// trait's default, which keeps none, and the model lost the means to read
/// the rest.
#[tokio::test]
async fn sandboxed_output_over_the_limits_is_kept_whole_in_a_file() {
    let fixture = Fixture::new();
    let bash = fixture.bash(fixture.sandboxed(SandboxMode::WorkspaceWrite, false));
    let output = text(
        fixture
            .run(&bash, json!({ "command": "seq 1 30000" }))
            .await,
    );
    let path = output
        .split_once("Full output: ")
        .and_then(|(_, rest)| rest.split_once(']'))
        .map(|(path, _)| PathBuf::from(path))
        .unwrap_or_else(|| panic!("no full-output file named: {output}"));
    assert!(path.starts_with(&fixture.tmp), "{}", path.display());
    let expected: String = (1..=30000).map(|n| format!("{n}\n")).collect();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), expected);
}

#[tokio::test]
async fn read_only_refuses_writes_even_in_the_workspace_but_reads_anywhere() {
    let fixture = Fixture::new();
    std::fs::write(fixture.home.join("notes"), "readable\n").unwrap();
    let bash = fixture.bash(fixture.sandboxed(SandboxMode::ReadOnly, false));
    let read = text(fixture.run(&bash, json!({"command": "cat \"$HOME/notes\" /etc/hostname >/dev/null && cat \"$HOME/notes\""})).await);
    assert_eq!(read, "readable\n");
    let denied = error(
        fixture
            .run(&bash, json!({"command": "echo x > inside"}))
            .await,
    );
    assert_eq!(
        denied,
        format!(
            "/bin/bash: line 1: inside: Permission denied\n\n{}\n\n\nCommand exited with code 1",
            fixture.notice(SandboxMode::ReadOnly, false)
        )
    );
    assert!(!fixture.work.join("inside").exists());
}

/// A loopback server that accepts connections until the test ends.
fn loopback_server() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().take(4) {
            drop(stream);
        }
    });
    port
}

#[tokio::test]
async fn a_tcp_connect_to_loopback_is_refused_with_the_network_off_and_works_with_it_on() {
    let fixture = Fixture::new();
    let port = loopback_server();
    let command = format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected");

    let off = fixture.bash(fixture.sandboxed(SandboxMode::WorkspaceWrite, false));
    let denied = error(fixture.run(&off, json!({ "command": command })).await);
    assert_eq!(
        denied,
        format!(
            "/bin/bash: connect: Permission denied\n/bin/bash: line 1: /dev/tcp/127.0.0.1/{port}: Permission denied\n\n{}\n\n\nCommand exited with code 1",
            fixture.notice(SandboxMode::WorkspaceWrite, false)
        )
    );

    let on = fixture.bash(fixture.sandboxed(SandboxMode::WorkspaceWrite, true));
    let connected = text(fixture.run(&on, json!({ "command": command })).await);
    assert_eq!(connected, "connected\n");
}

#[tokio::test]
async fn processes_started_in_the_sandbox_cannot_leave_it() {
    let fixture = Fixture::new();
    let bash = fixture.bash(fixture.sandboxed(SandboxMode::WorkspaceWrite, false));
    // A grandchild in a new session, and a daemon that outlives the command
    // (double fork, detached): both stay confined.
    let command = "setsid sh -c 'touch \"$HOME/grandchild\" 2>/dev/null; echo grandchild $?' & wait; \
                   (nohup sh -c 'sleep 0.3; touch \"$HOME/daemon\"' >/dev/null 2>&1 &); echo started";
    let output = text(fixture.run(&bash, json!({ "command": command })).await);
    assert_eq!(output, "grandchild 1\nstarted\n");
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert!(!fixture.home.join("grandchild").exists());
    assert!(!fixture.home.join("daemon").exists());
}

#[tokio::test]
async fn write_and_edit_outside_the_roots_are_refused_with_the_sandbox_reason() {
    let fixture = Fixture::new();
    let sandbox = Sandbox::start(&SandboxRequest::default(), &fixture.work, HELPER.into()).unwrap();
    let write = sandbox.builtin_tool("write").unwrap();
    let edit = sandbox.builtin_tool("edit").unwrap();
    let outside = fixture.home.join("outside.txt");
    std::fs::write(&outside, "old\n").unwrap();
    let reason = sandbox
        .policy()
        .check_write(&outside, "open")
        .unwrap_err()
        .message;
    assert!(reason.starts_with(&format!(
        "Permission denied (sandbox: writes are limited to {}, ",
        fixture.work.display()
    )));

    let written = fixture
        .run(write.as_ref(), json!({"path": outside, "content": "new\n"}))
        .await;
    assert_eq!(error(written), reason);
    let edited = fixture
        .run(
            edit.as_ref(),
            json!({"path": outside, "edits": [{"oldText": "old", "newText": "new"}]}),
        )
        .await;
    assert_eq!(error(edited), reason);
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "old\n");

    // A link in the workspace to a file not yet there, outside: the write
    // would create that file.
    let created = fixture.home.join("created.txt");
    std::os::unix::fs::symlink(&created, fixture.work.join("link")).unwrap();
    let through = fixture
        .run(write.as_ref(), json!({"path": "link", "content": "new\n"}))
        .await;
    assert!(
        error(through).starts_with("Permission denied (sandbox: writes are limited to "),
        "the write through the link was not refused"
    );
    assert!(!created.exists());

    let inside = text(
        fixture
            .run(
                write.as_ref(),
                json!({"path": "sub/inside.txt", "content": "ok\n"}),
            )
            .await,
    );
    assert_eq!(inside, "Successfully wrote 3 bytes to sub/inside.txt");
    assert_eq!(
        std::fs::read_to_string(fixture.work.join("sub/inside.txt")).unwrap(),
        "ok\n"
    );
}

#[test]
fn the_helper_refuses_bad_arguments_without_running_anything() {
    let output = Command::new(HELPER)
        .args(["__sandbox", "not json", "--", "/bin/sh", "-c", "echo ran"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(126));
    assert_eq!(String::from_utf8_lossy(&output.stdout), "");
    assert_eq!(
        String::from_utf8_lossy(&output.stderr),
        "coding-agent sandbox: usage: __sandbox POLICY_JSON -- PROGRAM [ARGS...]\n"
    );
}

/// The helper's own message on a stderr that cannot take it (`2>/dev/full`,
/// or the tool's pipe already gone) is dropped: `eprintln!` panicked there,
/// and the command ended with 101, not the helper's own status.
#[test]
fn the_helper_exits_with_its_own_status_when_its_stderr_is_gone() {
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let status = Command::new(HELPER)
        .args(["__sandbox", "not json", "--", "/bin/sh", "-c", "echo ran"])
        .stderr(full)
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(126));
}

/// Re-points `link` between `inside` and `outside` (atomically, by renaming
/// a fresh link over it) until the returned flag is set.
fn swap_link_until_stopped(
    link: PathBuf,
    inside: PathBuf,
    outside: PathBuf,
) -> (
    Arc<std::sync::atomic::AtomicBool>,
    std::thread::JoinHandle<()>,
) {
    use std::sync::atomic::{AtomicBool, Ordering};
    let stop = Arc::new(AtomicBool::new(false));
    let stopped = Arc::clone(&stop);
    let fresh = link.with_extension("swapping");
    let swapper = std::thread::spawn(move || {
        while !stopped.load(Ordering::Relaxed) {
            for target in [&inside, &outside] {
                let _ = std::fs::remove_file(&fresh);
                std::os::unix::fs::symlink(target, &fresh).unwrap();
                std::fs::rename(&fresh, &link).unwrap();
            }
        }
    });
    (stop, swapper)
}

/// A link in the workspace re-pointed, between the sandbox's check and the
/// write, from a file inside to one outside: `write` and `edit` wrote
/// outside the roots (the probe won on its 9th and 52nd attempt). The kernel
/// now refuses the write itself, so no attempt may get through.
#[tokio::test]
async fn a_link_swapped_after_the_check_cannot_carry_write_or_edit_outside() {
    use std::sync::atomic::Ordering;
    const ATTEMPTS: usize = 400;
    let fixture = Fixture::new();
    let sandbox = Sandbox::start(&SandboxRequest::default(), &fixture.work, HELPER.into()).unwrap();
    let write = sandbox.builtin_tool("write").unwrap();
    let edit = sandbox.builtin_tool("edit").unwrap();
    let (inside, outside) = (
        fixture.work.join("inside.txt"),
        fixture.home.join("outside.txt"),
    );
    let (stop, swapper) =
        swap_link_until_stopped(fixture.work.join("L"), inside.clone(), outside.clone());
    let mut escaped = None;
    for attempt in 1..=ATTEMPTS {
        let _ = fixture
            .run(write.as_ref(), json!({"path": "L", "content": "ESCAPED\n"}))
            .await;
        if outside.exists() {
            escaped = Some(("write", attempt));
            break;
        }
    }
    std::fs::write(&outside, "old\n").unwrap();
    for attempt in 1..=ATTEMPTS {
        if escaped.is_some() {
            break;
        }
        std::fs::write(&inside, "old\n").unwrap();
        let _ = fixture
            .run(
                edit.as_ref(),
                json!({"path": "L", "edits": [{"oldText": "old", "newText": "ESCAPED"}]}),
            )
            .await;
        if std::fs::read_to_string(&outside).unwrap() != "old\n" {
            escaped = Some(("edit", attempt));
        }
    }
    stop.store(true, Ordering::Relaxed);
    swapper.join().unwrap();
    assert_eq!(
        escaped, None,
        "(tool, attempt) that wrote outside the roots"
    );
}
