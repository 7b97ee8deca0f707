//! The tools through `--remote` where a remote run could differ from a local
//! one: atomic writes, the mutation queue, streaming reads, bash's process
//! groups and live output, the ignore rules of grep and find, and the
//! Landlock sandbox applied on the remote host. Each test
//! talks to a real sshd on 127.0.0.1 (see `remote_support`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "e2e_support/mod.rs"]
mod e2e_support;
#[path = "remote_support/mod.rs"]
mod remote_support;

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use agent_ai::Content;
use agent_core::{AgentToolResult, ToolError, UpdateSink};
use coding_agent::remote::sandbox::remote_sandbox;
use coding_agent::remote::{RemoteOperations, remote_tool};
use coding_agent::sandbox::{SandboxMode, SandboxRequest};
use coding_agent::tools::builtin_tool;
use coding_agent::{ToolContext, ToolDefinition};
use remote_support::{
    BIN, HOST, HomeFile, HungMount, Sshd, alive, cache_env, eventually, the_helper,
    threads_waiting_on_fuse,
};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// A connected remote and a local temp directory it works in (the "remote"
/// is this machine, so the test can look at the files directly).
struct Remote {
    sshd: Sshd,
    dir: tempfile::TempDir,
    ops: RemoteOperations,
}

impl Remote {
    async fn start() -> Option<Self> {
        let sshd = Sshd::start()?;
        let dir = tempfile::tempdir().unwrap();
        let host = sshd.connect(dir.path()).await;
        Some(Remote {
            sshd,
            dir,
            ops: RemoteOperations::new(Arc::new(host)),
        })
    }

    fn path(&self, name: &str) -> std::path::PathBuf {
        self.dir.path().join(name)
    }

    fn tool(&self, name: &str) -> Arc<dyn ToolDefinition> {
        remote_tool(name, &self.ops).unwrap()
    }

    async fn run(&self, name: &str, args: Value) -> Result<AgentToolResult, ToolError> {
        run(
            &self.tool(name),
            self.dir.path(),
            args,
            CancellationToken::new(),
        )
        .await
        .0
    }
}

async fn run(
    tool: &Arc<dyn ToolDefinition>,
    cwd: &Path,
    args: Value,
    cancel: CancellationToken,
) -> (Result<AgentToolResult, ToolError>, Vec<AgentToolResult>) {
    let (sink, mut receiver) = UpdateSink::channel();
    let ctx = ToolContext {
        cancel,
        updates: sink,
        ..ToolContext::new(cwd)
    };
    let result = tokio::time::timeout(Duration::from_secs(60), tool.execute(args, ctx))
        .await
        .expect("the tool did not return");
    let mut updates = Vec::new();
    while let Ok(update) = receiver.try_recv() {
        updates.push(update);
    }
    (result, updates)
}

fn text(result: &AgentToolResult) -> String {
    result
        .content
        .iter()
        .map(|c| match c {
            Content::Text(t) => t.text.clone(),
            other => format!("{other:?}"),
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn remote_writes_replace_the_file_atomically_and_keep_its_mode() {
    let Some(remote) = Remote::start().await else {
        return;
    };
    let file = remote.path("config.txt");
    std::fs::write(&file, "old\n").unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o640)).unwrap();
    let inode = std::fs::metadata(&file).unwrap().ino();

    let result = remote
        .run("write", json!({"path": "config.txt", "content": "new\n"}))
        .await
        .unwrap();

    assert_eq!(text(&result), "Successfully wrote 4 bytes to config.txt");
    let metadata = std::fs::metadata(&file).unwrap();
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "new\n");
    assert_eq!(metadata.permissions().mode() & 0o777, 0o640);
    assert_ne!(
        metadata.ino(),
        inode,
        "replaced by a rename, not rewritten in place"
    );
    let names: Vec<_> = std::fs::read_dir(remote.dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["config.txt"], "no temporary file left behind");
}

#[tokio::test(flavor = "multi_thread")]
async fn parallel_remote_edits_of_one_file_queue_and_lose_nothing() {
    let Some(remote) = Remote::start().await else {
        return;
    };
    let lines: Vec<String> = (0..10).map(|i| format!("line {i}")).collect();
    std::fs::write(remote.path("f.txt"), lines.join("\n")).unwrap();
    let edit = remote.tool("edit");
    let edits = (0..10).map(|i| {
        let edit = Arc::clone(&edit);
        let cwd = remote.dir.path().to_path_buf();
        async move {
            let args = json!({"path": "f.txt", "edits": [{"oldText": format!("line {i}"), "newText": format!("edited {i}")}]});
            run(&edit, &cwd, args, CancellationToken::new()).await.0
        }
    });
    for result in futures::future::join_all(edits).await {
        result.unwrap();
    }
    let expected: Vec<String> = (0..10).map(|i| format!("edited {i}")).collect();
    assert_eq!(
        std::fs::read_to_string(remote.path("f.txt")).unwrap(),
        expected.join("\n")
    );
}

/// A working directory given through a link names its files two ways: by
/// the link (`f.txt`, relative) and by the real path (the one `pwd` prints).
/// Edits of one file by both names in one batch share one queue; they had
/// two, and half of the edits were lost while all reported success.
#[tokio::test(flavor = "multi_thread")]
async fn edits_through_a_linked_working_directory_queue_with_those_by_its_real_path() {
    let Some(sshd) = Sshd::start() else {
        return;
    };
    let real = tempfile::tempdir().unwrap();
    let links = tempfile::tempdir().unwrap();
    let link = links.path().join("app");
    std::os::unix::fs::symlink(real.path(), &link).unwrap();
    let host = sshd.connect(&link).await;
    let ops = RemoteOperations::new(Arc::new(host));
    let lines: Vec<String> = (0..10).map(|i| format!("line {i}")).collect();
    std::fs::write(real.path().join("f.txt"), lines.join("\n")).unwrap();
    let edit = remote_tool("edit", &ops).unwrap();
    let real_file = real.path().join("f.txt").display().to_string();
    let edits = (0..10).map(|i| {
        let (edit, cwd) = (Arc::clone(&edit), link.clone());
        let path = if i % 2 == 0 { "f.txt".to_owned() } else { real_file.clone() };
        async move {
            let args = json!({"path": path, "edits": [{"oldText": format!("line {i}"), "newText": format!("edited {i}")}]});
            run(&edit, &cwd, args, CancellationToken::new()).await.0
        }
    });
    for result in futures::future::join_all(edits).await {
        result.unwrap();
    }
    let expected: Vec<String> = (0..10).map(|i| format!("edited {i}")).collect();
    assert_eq!(
        std::fs::read_to_string(real.path().join("f.txt")).unwrap(),
        expected.join("\n")
    );
}

/// The helper runs a batch's reads on a thread per core, and a read on a
/// hung mount blocks its thread for good. With every such thread blocked,
/// the batch's other reads still answer, and so does a cancelled one.
#[tokio::test(flavor = "multi_thread")]
async fn reads_behind_reads_blocked_on_every_helper_thread_still_answer() {
    let Some(remote) = Remote::start().await else {
        return;
    };
    let Some(hung) = HungMount::new(&remote.path("hung")) else {
        return;
    };
    // The helper runs on this machine: it has as many cores as the test sees.
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    std::fs::write(remote.path("a.txt"), "after\n").unwrap();
    let read = remote.tool("read");
    let blocked: Vec<_> = (0..cores)
        .map(|n| {
            let (read, dir, args) = (
                Arc::clone(&read),
                remote.dir.path().to_path_buf(),
                json!({"path": format!("hung/{n}.txt")}),
            );
            tokio::spawn(async move { read.execute(args, ToolContext::new(dir)).await })
        })
        .collect();
    let helper = the_helper(&remote.sshd);
    eventually("every blocked read holds a helper thread", || {
        threads_waiting_on_fuse(helper) == cores
    })
    .await;
    let cancelled = CancellationToken::new();
    cancelled.cancel();
    let (answered, aborted) = tokio::join!(
        remote.run("read", json!({"path": "a.txt"})),
        run(
            &read,
            remote.dir.path(),
            json!({"path": "a.txt"}),
            cancelled
        ),
    );
    assert_eq!(text(&answered.unwrap()), "after\n");
    assert_eq!(aborted.0.unwrap_err().message(), "Operation aborted");
    assert!(
        blocked.iter().all(|call| !call.is_finished()),
        "the reads on the hung mount are still blocked"
    );
    // Dropping the mount ends the blocked reads (ENOTCONN).
    drop(hung);
}

#[tokio::test(flavor = "multi_thread")]
async fn reading_near_the_end_of_a_large_remote_file_moves_only_the_window() {
    let Some(remote) = Remote::start().await else {
        return;
    };
    let line = "x".repeat(99);
    let lines = 500_000; // 50 MB
    {
        use std::io::Write;
        let mut out =
            std::io::BufWriter::new(std::fs::File::create(remote.path("big.txt")).unwrap());
        for _ in 0..lines {
            writeln!(out, "{line}").unwrap();
        }
    }
    let connection = remote.ops.host().connection().await.unwrap();
    let before = connection.channel().bytes_received();

    let result = remote
        .run(
            "read",
            json!({"path": "big.txt", "offset": lines - 1, "limit": 2}),
        )
        .await
        .unwrap();

    let moved = connection.channel().bytes_received() - before;
    assert_eq!(
        text(&result),
        format!("{line}\n{line}\n\n[1 more lines in file. Use offset=500001 to continue.]")
    );
    assert!(
        moved < 16 * 1024,
        "{moved} bytes came back for a 2-line window of 50 MB"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn remote_bash_streams_output_while_the_command_runs() {
    let Some(remote) = Remote::start().await else {
        return;
    };
    let (sink, mut updates) = UpdateSink::channel();
    let ctx = ToolContext {
        updates: sink,
        ..ToolContext::new(remote.dir.path())
    };
    let bash = remote.tool("bash");
    let run = tokio::spawn(async move {
        bash.execute(
            json!({"command": "echo first; while [ ! -e go ]; do sleep 0.05; done; echo second"}),
            ctx,
        )
        .await
    });
    // The command waits for `go`; "first" must be shown before it exists.
    loop {
        let update = tokio::time::timeout(Duration::from_secs(30), updates.recv())
            .await
            .expect("no progress update within 30 s")
            .expect("the tool ended without showing the first line");
        if text(&update) == "first\n" {
            break;
        }
    }
    std::fs::write(remote.path("go"), "").unwrap();
    let result = run.await.unwrap().unwrap();
    assert_eq!(text(&result), "first\nsecond\n");
}

/// The command: a background grandchild (its pid in `grandchild.pid`) and
/// the shell's own pid in `shell.pid`, then a long wait.
const GROUP_COMMAND: &str =
    "sh -c 'sleep 300 & echo $! > grandchild.pid; wait' & echo $$ > shell.pid; wait";

fn pid_in(remote: &Remote, name: &str) -> Option<u32> {
    std::fs::read_to_string(remote.path(name))
        .ok()?
        .trim()
        .parse()
        .ok()
}

#[tokio::test(flavor = "multi_thread")]
async fn remote_bash_timeout_kills_the_whole_group_grandchildren_included() {
    let Some(remote) = Remote::start().await else {
        return;
    };
    let error = remote
        .run("bash", json!({"command": GROUP_COMMAND, "timeout": 2}))
        .await
        .unwrap_err();

    assert_eq!(error.to_string(), "Command timed out after 2 seconds");
    let grandchild = pid_in(&remote, "grandchild.pid").expect("the grandchild started");
    let shell = pid_in(&remote, "shell.pid").expect("the shell started");
    eventually("the remote group's death", || {
        !alive(grandchild) && !alive(shell)
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn cancelling_remote_bash_kills_the_whole_group_grandchildren_included() {
    let Some(remote) = Remote::start().await else {
        return;
    };
    let cancel = CancellationToken::new();
    let bash = remote.tool("bash");
    let cwd = remote.dir.path().to_path_buf();
    let call = tokio::spawn({
        let cancel = cancel.clone();
        async move {
            run(&bash, &cwd, json!({"command": GROUP_COMMAND}), cancel)
                .await
                .0
        }
    });
    eventually("the grandchild's start", || {
        pid_in(&remote, "grandchild.pid").is_some()
    })
    .await;
    cancel.cancel();
    let error = call.await.unwrap().unwrap_err();

    assert_eq!(error.to_string(), "Command aborted");
    let grandchild = pid_in(&remote, "grandchild.pid").unwrap();
    let shell = pid_in(&remote, "shell.pid").unwrap();
    eventually("the remote group's death", || {
        !alive(grandchild) && !alive(shell)
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn remote_grep_and_find_keep_the_ignore_rules_and_order_of_local_ones() {
    let Some(remote) = Remote::start().await else {
        return;
    };
    let files = [
        (".gitignore", "ignored/\n*.log\n"),
        ("b.txt", "needle b\n"),
        ("a/z.txt", "needle az\n"),
        ("a.txt", "needle a\n"),
        ("ignored/x.txt", "needle ignored\n"),
        ("debug.log", "needle log\n"),
        (".hidden/h.txt", "needle hidden\n"),
    ];
    for (name, content) in files {
        let path = remote.path(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }
    for (name, args) in [
        ("grep", json!({"pattern": "needle"})),
        ("grep", json!({"pattern": "needle", "context": 1})),
        ("find", json!({"pattern": "**/*.txt"})),
        ("find", json!({"pattern": "*"})),
        ("ls", json!({})),
    ] {
        let local = run(
            &builtin_tool(name).unwrap(),
            remote.dir.path(),
            args.clone(),
            CancellationToken::new(),
        )
        .await
        .0
        .unwrap();
        let through_ssh = remote.run(name, args.clone()).await.unwrap();
        assert_eq!(text(&through_ssh), text(&local), "{name} {args}");
        assert_eq!(through_ssh.details, local.details, "{name} {args}");
        if name != "ls" {
            assert!(
                !text(&local).contains("ignored"),
                "{name} {args}: {}",
                text(&local)
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn remote_commands_do_not_look_started_by_sshd_so_bashrc_is_not_sourced_per_call() {
    let Some(remote) = Remote::start().await else {
        return;
    };
    // bash sources ~/.bashrc for `bash -c` when SSH_CLIENT says sshd started
    // it; the helper runs every command without it.
    let result = remote
        .run(
            "bash",
            json!({"command": "echo ${SSH_CLIENT-unset} ${SSH_CONNECTION:+connection-kept}"}),
        )
        .await
        .unwrap();
    assert_eq!(text(&result), "unset connection-kept\n");
}

/// Runs `command`; its stdout parsed as JSON (`tool` and `policy check`
/// print one object).
fn json_output(command: &mut std::process::Command) -> Value {
    let output = command.output().unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

#[test]
fn a_truncated_remote_bash_keeps_its_full_output_on_the_remote_and_names_that_path() {
    let Some(sshd) = Sshd::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    // Full-output files go to TMPDIR: this machine's and the remote's differ,
    // so the notice shows which one the file was written on.
    let local_tmp = tempfile::tempdir().unwrap();
    let remote_tmp = tempfile::tempdir().unwrap();
    let set_env = format!("SetEnv=TMPDIR={}", remote_tmp.path().display());
    let output = json_output(
        sshd.command(&["tool", "bash", r#"{"command":"seq 1 3000"}"#], dir.path())
            .args(["--ssh-option", &set_env])
            .env("TMPDIR", local_tmp.path()),
    );

    let path = output["details"]["fullOutputPath"].as_str().unwrap();
    assert!(
        Path::new(path).starts_with(remote_tmp.path()),
        "{path} is not in the remote TMPDIR {}",
        remote_tmp.path().display()
    );
    let text = output["content"][0]["text"].as_str().unwrap();
    assert!(
        text.ends_with(&format!(
            "[Showing lines 1002-3001 of 3001. Full output: {path}]"
        )),
        "{text}"
    );
    let expected: String = (1..=3000).map(|n| format!("{n}\n")).collect();
    assert_eq!(std::fs::read_to_string(path).unwrap(), expected);
    assert_eq!(std::fs::read_dir(local_tmp.path()).unwrap().count(), 0);
}

#[test]
fn tilde_in_remote_tool_paths_is_the_remote_home_not_the_local_one() {
    let Some(sshd) = Sshd::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    // This process's HOME is elsewhere, so `~` resolved here would miss.
    let local_home = tempfile::tempdir().unwrap();
    let read = HomeFile::new("ca-remote-tilde-read");
    std::fs::write(&read.0, "in the remote home\n").unwrap();
    let written = HomeFile::new("ca-remote-tilde-write");
    // The remote home is outside the remote workspace: unsandboxed, so the
    // write lands there (the sandbox refuses it, as it would locally).
    let tool = |name: &str, args: Value| {
        json_output(
            sshd.command(
                &["tool", name, &args.to_string(), "--sandbox", "off"],
                dir.path(),
            )
            .env("HOME", local_home.path()),
        )
    };

    let output = tool("read", json!({"path": format!("~/{}", read.name())}));
    assert_eq!(output["content"][0]["text"], "in the remote home\n");
    let output = tool(
        "write",
        json!({"path": format!("~/{}", written.name()), "content": "x"}),
    );
    assert_eq!(output["isError"], false, "{output}");
    assert_eq!(std::fs::read_to_string(&written.0).unwrap(), "x");
    let output = tool("find", json!({"pattern": read.name(), "path": "~"}));
    assert_eq!(output["content"][0]["text"], read.name());
    assert_eq!(std::fs::read_dir(local_home.path()).unwrap().count(), 0);
}

#[test]
fn the_policy_judges_paths_on_the_remote_host() {
    let Some(sshd) = Sshd::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let local_home = tempfile::tempdir().unwrap();
    let remote_home = HomeFile::new("x");
    let remote_home = remote_home.0.parent().unwrap();
    // Run from a local directory that is not the remote one.
    let elsewhere = tempfile::tempdir().unwrap();
    let check = |tool: &str, args: Value, extra: &[&str]| {
        let args = args.to_string();
        json_output(
            sshd.command(&["policy", "check", tool, &args], dir.path())
                .args(extra)
                .current_dir(elsewhere.path())
                .env("HOME", local_home.path()),
        )
    };

    let inside = check("write", json!({"path": "src/x.rs"}), &[]);
    assert_eq!(inside["decision"], "allow", "{inside}");
    assert_eq!(
        inside["reason"],
        format!(
            "`{}/src/x.rs` is inside the workspace",
            dir.path().display()
        )
    );
    let outside = check("write", json!({"path": "/etc/x"}), &[]);
    assert_eq!(outside["decision"], "ask", "{outside}");
    // `~` is the remote user's home: a rule on the remote home matches.
    let rule = format!("write({}/**)", remote_home.display());
    let home = check("write", json!({"path": "~/notes"}), &["--deny", &rule]);
    assert_eq!(home["decision"], "deny", "{home}");
    // auto mode counts on the sandbox the remote kernel enforces (this
    // one has Landlock), and asks without it.
    let auto = |extra: &[&str]| {
        let flags = [&["--permission-mode", "auto"], extra].concat();
        check("bash", json!({"command": "touch built.txt"}), &flags)
    };
    let sandboxed = auto(&[]);
    assert_eq!(sandboxed["decision"], "allow", "{sandboxed}");
    let unsandboxed = auto(&["--sandbox", "off"]);
    assert_eq!(unsandboxed["decision"], "ask", "{unsandboxed}");

    // The same host from the user's settings instead of --remote, as a
    // session takes it (policy check judged the local directory then).
    let agent_dir = tempfile::tempdir().unwrap();
    let settings = json!({"remote": {
        "target": format!("{HOST}{}", dir.path().display()),
        "sshConfig": sshd.ssh_config(),
    }});
    std::fs::write(agent_dir.path().join("settings.json"), settings.to_string()).unwrap();
    let (cache_var, cache) = cache_env();
    let args = json!({"path": "src/x.rs"}).to_string();
    let from_settings = json_output(
        std::process::Command::new(BIN)
            .args(["policy", "check", "write", &args])
            .current_dir(elsewhere.path())
            .env("HOME", local_home.path())
            .env("CODING_AGENT_DIR", agent_dir.path())
            .env(cache_var, cache)
            .stdin(std::process::Stdio::null()),
    );
    assert_eq!(from_settings["reason"], inside["reason"], "{from_settings}");
}

#[tokio::test(flavor = "multi_thread")]
async fn sandboxed_remote_bash_cannot_write_outside_the_remote_workspace() {
    let Some(remote) = Remote::start().await else {
        return;
    };
    // The "remote" kernel is this one, which has Landlock (tests/sandbox.rs
    // requires it too).
    let sandboxing = remote_sandbox(&SandboxRequest::default(), remote.ops.host())
        .await
        .unwrap();
    assert!(
        sandboxing.sandbox.status().active,
        "{:?}",
        sandboxing.notice
    );
    assert_eq!(
        sandboxing.notice,
        Some(format!(
            "Sandbox: on {HOST}: bash runs there under Landlock (workspace-write)"
        ))
    );
    // Outside the workspace and outside every temp directory (the sandbox
    // lets commands write /tmp, where the workspace is).
    let outside = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let target = outside.path().join("touched");
    let touch = json!({"command": format!("touch inside && touch '{}'", target.display())});
    let sandboxed = remote.ops.clone().with_sandbox(sandboxing.commands);
    let bash = remote_tool("bash", &sandboxed).unwrap();
    let (result, _) = run(
        &bash,
        remote.dir.path(),
        touch.clone(),
        CancellationToken::new(),
    )
    .await;
    let error = result.unwrap_err();
    assert!(error.message().contains("Permission denied"), "{error}");
    assert!(
        remote.path("inside").exists(),
        "the workspace stays writable"
    );
    assert!(!target.exists());

    // The same command without the sandbox writes there.
    remote.run("bash", touch).await.unwrap();
    assert!(target.exists());
}

/// Write and edit under the remote sandbox are refused outside it as they
/// are locally, the host resolving the path's links: a link in the remote
/// project to a folder outside let the model write there unasked, and
/// `--sandbox read-only` did not stop write at all.
#[tokio::test(flavor = "multi_thread")]
async fn sandboxed_remote_writes_are_refused_outside_the_sandbox_through_links_too() {
    let Some(remote) = Remote::start().await else {
        return;
    };
    let outside = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    std::os::unix::fs::symlink(outside.path(), remote.path("out")).unwrap();
    let write = |path: &str| json!({"path": path, "content": "x"});
    for (mode, inside_allowed) in [
        (SandboxMode::WorkspaceWrite, true),
        (SandboxMode::ReadOnly, false),
    ] {
        let request = SandboxRequest {
            mode: Some(mode),
            ..SandboxRequest::default()
        };
        let sandboxing = remote_sandbox(&request, remote.ops.host()).await.unwrap();
        let sandboxed = remote.ops.clone().with_sandbox(sandboxing.commands);
        let tool = remote_tool("write", &sandboxed).unwrap();
        let dir = remote.dir.path();
        let (through_link, _) = run(
            &tool,
            dir,
            write("out/escaped.txt"),
            CancellationToken::new(),
        )
        .await;
        let error = through_link.unwrap_err();
        assert!(error.message().contains("sandbox"), "{mode:?}: {error}");
        assert!(!outside.path().join("escaped.txt").exists(), "{mode:?}");
        let (inside, _) = run(&tool, dir, write("inside.txt"), CancellationToken::new()).await;
        assert_eq!(inside.is_ok(), inside_allowed, "{mode:?}: {inside:?}");
    }
    // Unsandboxed, the link is followed.
    remote.run("write", write("out/escaped.txt")).await.unwrap();
    assert!(outside.path().join("escaped.txt").exists());
}

#[test]
fn the_tool_command_runs_remote_bash_in_the_remote_sandbox_and_says_so() {
    let Some(sshd) = Sshd::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let target = outside.path().join("touched");
    let args = json!({"command": format!("touch '{}'", target.display())}).to_string();
    let output = sshd
        .command(&["tool", "bash", &args], dir.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(&format!(
            "Sandbox: on {HOST}: bash runs there under Landlock (workspace-write)"
        )),
        "{stderr}"
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("Permission denied"), "{stdout}");
    assert!(!target.exists());

    let output = sshd
        .command(&["tool", "bash", &args, "--sandbox", "off"], dir.path())
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    assert!(target.exists());
}

/// What the sandbox lets commands write is worked out on the remote host,
/// which enforces it. Started in the remote home, the helper left the home
/// out (every write in bash failed) while the notice, worked out with this
/// machine's home and `$TMPDIR`, said the sandbox was simply on; and a
/// remote directory that happened to be this machine's home was called
/// "your home folder".
#[test]
fn the_sandbox_notice_says_what_the_remote_host_leaves_out_and_grants() {
    let Some(sshd) = Sshd::start() else {
        return;
    };
    let remote_home = HomeFile::new("x")
        .0
        .parent()
        .unwrap()
        .canonicalize()
        .unwrap();
    // This machine's home and TMPDIR differ from the remote's.
    let local_home = tempfile::tempdir().unwrap();
    let local_tmp = tempfile::tempdir().unwrap();
    let remote_tmp = tempfile::tempdir().unwrap();
    let set_env = format!("SetEnv=TMPDIR={}", remote_tmp.path().display());
    let notice_in = |dir: &Path| {
        let output = sshd
            .command(&["tool", "bash", r#"{"command":"true"}"#], dir)
            .args(["--ssh-option", &set_env])
            .env("HOME", local_home.path())
            .env("TMPDIR", local_tmp.path())
            .output()
            .unwrap();
        assert!(output.status.success(), "{output:?}");
        String::from_utf8_lossy(&output.stderr).into_owned()
    };

    let in_remote_home = notice_in(&remote_home);
    let expected = format!(
        "Sandbox: {} is your home folder: too broad to be writable (a sandbox around it holds nothing back), so it is not; writes are limited to {}, /tmp, /dev/shm and /dev/null-like devices. Start the agent in a project folder, or pass --sandbox off to run without the sandbox knowingly (on {HOST})",
        remote_home.display(),
        remote_tmp.path().canonicalize().unwrap().display()
    );
    assert!(in_remote_home.contains(&expected), "{in_remote_home}");

    let in_local_home = notice_in(local_home.path());
    assert!(
        in_local_home.contains(&format!(
            "Sandbox: on {HOST}: bash runs there under Landlock (workspace-write)"
        )),
        "{in_local_home}"
    );
    assert!(!in_local_home.contains("home folder"), "{in_local_home}");
}

/// Another session uploading the same build renames a new file over the
/// cached helper; a helper already running keeps starting sandboxed commands
/// (it once failed with "spawn ...coding-agent-... (deleted) ENOENT", seen
/// when the parity suite and these tests uploaded at once).
#[tokio::test]
async fn a_running_helper_sandboxes_commands_after_its_file_was_replaced() {
    let Some(remote) = Remote::start().await else {
        return;
    };
    let sandboxing = remote_sandbox(&SandboxRequest::default(), remote.ops.host())
        .await
        .unwrap();
    assert!(sandboxing.sandbox.status().active);
    let cache = remote_support::cache_dir();
    // Listed before anything is renamed: a directory read while files come
    // and go may name the copy made for an earlier entry, gone by then.
    let helpers: Vec<_> = std::fs::read_dir(&cache)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| {
            let name = path.file_name().unwrap().to_string_lossy();
            // Not another test's upload in progress (`<helper>.<pid>.tmp`).
            name.starts_with("coding-agent-") && !name.ends_with(".tmp")
        })
        .collect();
    let mut replaced = 0;
    for path in helpers {
        let mut copy = path.clone().into_os_string();
        copy.push(".replacement");
        std::fs::copy(&path, &copy).unwrap();
        std::fs::rename(&copy, &path).unwrap();
        replaced += 1;
    }
    assert!(replaced > 0, "no cached helper in {}", cache.display());
    let sandboxed = remote.ops.clone().with_sandbox(sandboxing.commands);
    let bash = remote_tool("bash", &sandboxed).unwrap();
    let (result, _) = run(
        &bash,
        remote.dir.path(),
        json!({"command": "touch made-after-replace"}),
        CancellationToken::new(),
    )
    .await;
    result.unwrap();
    assert!(remote.path("made-after-replace").exists());
}

#[test]
fn with_remote_the_skills_are_the_remote_projects_and_the_model_is_told_their_remote_paths() {
    let Some(sshd) = Sshd::start() else {
        return;
    };
    let sandbox = e2e_support::Sandbox::new();
    // This machine's skill: the remote tools could not read it.
    let local = sandbox.agent_dir.join("skills/local-only/SKILL.md");
    std::fs::create_dir_all(local.parent().unwrap()).unwrap();
    std::fs::write(&local, "---\ndescription: Local.\n---\nL\n").unwrap();
    // The remote project, a repository with a skill of its own.
    let project = tempfile::tempdir().unwrap();
    std::fs::create_dir(project.path().join(".git")).unwrap();
    let skill = project.path().join(".agents/skills/deploy/SKILL.md");
    std::fs::create_dir_all(skill.parent().unwrap()).unwrap();
    std::fs::write(
        &skill,
        "---\ndescription: Deploy the site.\n---\nRun make deploy\n",
    )
    .unwrap();

    let wire = e2e_support::Wire::OpenAi;
    let server =
        e2e_support::ModelServer::answering(wire, vec![e2e_support::Answer::text(&["ok"])]);
    let (cache_var, cache) = remote_support::cache_env();
    let mut command = sandbox.command(wire, &server);
    command
        .args(sshd.flags(project.path()))
        .args(["--trust", "-p", "hello"])
        .env(cache_var, cache);
    let output = command.output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    let requests = server.requests();
    let system = requests[0].body["messages"][0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        system.contains("<name>deploy</name>") && system.contains(&skill.display().to_string()),
        "{system}"
    );
    assert!(!system.contains("local-only"), "{system}");
}

#[test]
fn with_remote_an_agent_hooks_model_reads_the_remote_project() {
    let Some(sshd) = Sshd::start() else {
        return;
    };
    let sandbox = e2e_support::Sandbox::new();
    // This machine's folder says nothing is protected; the remote project,
    // where the agent's `rm` would run, protects keep.txt.
    std::fs::write(sandbox.work.join("PROTECTED.md"), "nothing\n").unwrap();
    let project = tempfile::tempdir().unwrap();
    std::fs::write(project.path().join("PROTECTED.md"), "keep.txt\n").unwrap();
    std::fs::write(project.path().join("keep.txt"), "data").unwrap();
    sandbox.write_global_settings(&json!({
        "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
            {"type": "agent", "prompt": "Refuse deleting a file PROTECTED.md lists. The call: $ARGUMENTS"}
        ]}]}
    }));
    let wire = e2e_support::Wire::OpenAi;
    let server = e2e_support::ModelServer::only(
        wire,
        vec![
            e2e_support::Answer::call("call_rm", "bash", json!({"command": "rm keep.txt"})),
            e2e_support::Answer::call("look", "read", json!({"path": "PROTECTED.md"})),
            e2e_support::Answer::text(&[r#"{"ok": false, "reason": "keep.txt is protected"}"#]),
            e2e_support::Answer::text(&["Done."]),
        ],
    );
    let (cache_var, cache) = remote_support::cache_env();
    let mut command = sandbox.command(wire, &server);
    command
        .args(sshd.flags(project.path()))
        .args(["-p", "clean up"])
        .env(cache_var, cache);
    let output = command.output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        "Done.\n",
        "{stderr}"
    );
    assert!(project.path().join("keep.txt").exists());
    let requests = server.requests();
    assert_eq!(requests.len(), 4, "{stderr}");
    let looked = wire.transcript(&requests[2].body);
    assert_eq!(looked.last().unwrap(), "tool look: keep.txt\n");
    let transcript = wire.transcript(&requests[3].body);
    assert_eq!(
        transcript[2],
        "tool call_rm: Blocked by PreToolUse hook: keep.txt is protected"
    );
}

/// `~/` in the cache directory (`CODING_AGENT_REMOTE_CACHE`, as
/// `remote.cacheDir`) is the remote user's home, and in `--ssh-config` (as
/// `remote.sshConfig`) this machine's: the first made a directory named `~`
/// in the remote home, the second failed in ssh ("Can't open user config
/// file ~/ssh_config").
#[test]
fn tilde_in_the_cache_dir_is_the_remote_home_and_in_the_ssh_config_the_local_one() {
    let Some(sshd) = Sshd::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let local_home = tempfile::tempdir().unwrap();
    std::fs::copy(sshd.ssh_config(), local_home.path().join("ssh_config")).unwrap();
    let cache = HomeFile::new("ca-remote-tilde-cache");

    let output = std::process::Command::new(BIN)
        .args([
            "tool",
            "ls",
            "{}",
            "--ssh-config",
            "~/ssh_config",
            "--remote",
        ])
        .arg(format!("{HOST}{}", dir.path().display()))
        .env("HOME", local_home.path())
        .env("CODING_AGENT_REMOTE_CACHE", format!("~/{}", cache.name()))
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();

    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(cache.0.is_dir(), "no helper cache at {}", cache.0.display());
    let cached: Vec<String> = std::fs::read_dir(&cache.0)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        cached.len() == 1 && cached[0].starts_with("coding-agent-"),
        "{cached:?}"
    );
    assert!(!cache.0.with_file_name("~").exists());
}

/// The control sockets' directories (`ca-ssh-*`) left in `tmp`.
fn control_dirs(tmp: &Path) -> Vec<String> {
    std::fs::read_dir(tmp)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with("ca-ssh-"))
        .collect()
}

/// The control socket's directory (in this machine's TMPDIR) is private
/// while a session runs, and gone once it ends in print and RPC modes too
/// (it stayed behind, empty, after every run of both).
#[test]
fn the_control_socket_directory_is_private_and_gone_after_print_and_rpc_runs() {
    let Some(sshd) = Sshd::start() else {
        return;
    };
    let sandbox = e2e_support::Sandbox::new();
    let project = tempfile::tempdir().unwrap();
    // The "remote" is this machine: its bash can look at this TMPDIR.
    let stat = format!("stat -c %a {}/ca-ssh-*", sandbox.tmp.display());
    let wire = e2e_support::Wire::OpenAi;
    let server = e2e_support::ModelServer::only(
        wire,
        vec![
            e2e_support::Answer::call("mode", "bash", json!({"command": stat})),
            e2e_support::Answer::text(&["Done."]),
        ],
    );
    let (cache_var, cache) = remote_support::cache_env();
    let command = |args: &[&str]| {
        let mut command = sandbox.command(wire, &server);
        command
            .args(sshd.flags(project.path()))
            .args(args)
            .env(cache_var, &cache);
        command
    };
    let run = |args: &[&str]| {
        let output = command(args)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "{args:?}: {stderr}");
        assert_eq!(control_dirs(&sandbox.tmp), Vec::<String>::new(), "{args:?}");
    };

    run(&["-p", "look"]);
    let transcript = wire.transcript(&server.requests()[1].body);
    assert_eq!(transcript.last().unwrap(), "tool mode: 700\n");
    // No input: RPC ends at once, after connecting.
    run(&["--mode", "rpc"]);
    // RPC stopped by a signal, which ends the process without the runtime's
    // shutdown.
    let mut rpc = e2e_support::Running::spawn_piped(command(&["--mode", "rpc"]));
    let (mut stdin, lines) = (rpc.take_stdin(), rpc.stdout_lines());
    e2e_support::send(&mut stdin, &json!({"id": "s", "type": "get_state"}));
    assert_eq!(e2e_support::next_json(&lines)["id"], "s");
    rpc.signal("TERM");
    let (status, _, stderr) = rpc.finish();
    assert_eq!(status.code(), Some(130), "{stderr}");
    assert_eq!(control_dirs(&sandbox.tmp), Vec::<String>::new(), "{stderr}");
}

/// A command printing megabytes in RPC mode, its full output kept in a
/// file on the remote host while its progress is shown: the async task
/// sending progress waited on a lock the output's writer held across a
/// round trip to the host, which only that blocked worker could finish.
/// The run hung for good (SIGTERM ignored), in RPC and interactive mode.
#[test]
fn a_remote_command_printing_megabytes_in_rpc_mode_ends() {
    let Some(sshd) = Sshd::start() else {
        return;
    };
    let sandbox = e2e_support::Sandbox::new();
    let project = tempfile::tempdir().unwrap();
    let wire = e2e_support::Wire::OpenAi;
    let command = "yes | head -c 20000000; echo END";
    let server = e2e_support::ModelServer::only(
        wire,
        [1, 2]
            .into_iter()
            .flat_map(|n| {
                [
                    e2e_support::Answer::call(
                        &format!("c{n}"),
                        "bash",
                        json!({"command": command}),
                    ),
                    e2e_support::Answer::text(&["Done."]),
                ]
            })
            .collect(),
    );
    let (cache_var, cache) = remote_support::cache_env();
    let mut rpc = sandbox.command(wire, &server);
    rpc.args(sshd.flags(project.path()))
        .args(["--mode", "rpc", "--permission-mode", "bypass"])
        .env(cache_var, &cache);
    let mut rpc = e2e_support::Running::spawn_piped(rpc);
    let (mut stdin, lines) = (rpc.take_stdin(), rpc.stdout_lines());
    for n in 1..=2 {
        e2e_support::send(
            &mut stdin,
            &json!({"id": n, "type": "prompt", "message": "go"}),
        );
        let end = loop {
            let line = e2e_support::next_json(&lines);
            if line["type"] == "tool_execution_end" {
                break line;
            }
        };
        let output = end["result"]["content"][0]["text"].as_str().unwrap();
        let tail = &output[output.len().saturating_sub(300)..];
        assert!(output.contains("y\nEND\n"), "run {n}: {tail:?}");
        while e2e_support::next_json(&lines)["type"] != "agent_end" {}
    }
    drop(stdin);
    let (status, _, stderr) = rpc.finish();
    assert!(status.success(), "{stderr}");
}

/// A TMPDIR too long to hold a socket path (macOS's is 49 bytes, a CI
/// runner's can be more than 100) puts the control socket in /tmp instead;
/// ssh failed to start the connection before ("ControlPath too long").
#[test]
fn a_long_tmpdir_puts_the_control_socket_in_tmp() {
    let Some(sshd) = Sshd::start() else {
        return;
    };
    let sandbox = e2e_support::Sandbox::new();
    let project = tempfile::tempdir().unwrap();
    let long = sandbox.tmp.join("x".repeat(100));
    std::fs::create_dir(&long).unwrap();
    let wire = e2e_support::Wire::OpenAi;
    let server = e2e_support::ModelServer::only(
        wire,
        vec![
            e2e_support::Answer::call("where", "bash", json!({"command": "echo remote"})),
            e2e_support::Answer::text(&["Done."]),
        ],
    );
    let (cache_var, cache) = remote_support::cache_env();
    let output = sandbox
        .command(wire, &server)
        .args(sshd.flags(project.path()))
        .args(["-p", "look"])
        .env(cache_var, &cache)
        .env("TMPDIR", &long)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&output.stdout), "Done.\n");
    let transcript = wire.transcript(&server.requests()[1].body);
    assert_eq!(transcript.last().unwrap(), "tool where: remote\n");
    assert_eq!(control_dirs(&long), Vec::<String>::new());
}

/// A session records where its tools run. Continued with the same
/// `--remote` it says nothing; continued without (`-c` alone), where the
/// tools ran on the remote paths its history names before, it warns naming
/// the host and the flag that goes back there, and records the change.
#[test]
fn continuing_a_remote_session_elsewhere_warns_naming_the_flag_to_go_back() {
    let Some(sshd) = Sshd::start() else {
        return;
    };
    let sandbox = e2e_support::Sandbox::new();
    let project = tempfile::tempdir().unwrap();
    let wire = e2e_support::Wire::OpenAi;
    let server =
        e2e_support::ModelServer::answering(wire, vec![e2e_support::Answer::text(&["ok"])]);
    let (cache_var, cache) = remote_support::cache_env();
    let run = |args: &[&str], remote: &[String]| {
        let output = sandbox
            .command(wire, &server)
            .args(args)
            .args(remote)
            .env(cache_var, &cache)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        assert!(output.status.success(), "{args:?}: {stderr}");
        stderr
    };
    let there = sshd.flags(project.path());

    let first = run(&["-p", "go"], &there);
    let again = run(&["-c", "-p", "again"], &there);
    let here = run(&["-c", "-p", "here"], &[]);

    let target = format!("ssh://{HOST}{}", project.path().display());
    // The flags that reach the host again, its ssh configuration included
    // (without it the alias did not resolve).
    let flags = format!(
        "--remote {target} --ssh-config {}",
        sshd.ssh_config().display()
    );
    assert!(!first.contains("tools ran on"), "{first}");
    assert!(!again.contains("tools ran on"), "{again}");
    assert!(
        here.contains(&format!(
            "Warning: this session's tools ran on {target}; now they run on this machine. To continue there, add {flags}\n"
        )),
        "{here}"
    );
    let files = e2e_support::Sandbox::session_files(&sandbox.default_session_dir());
    assert_eq!(files.len(), 1, "{files:?}");
    let recorded: Vec<Value> = e2e_support::session_lines(&files[0])
        .into_iter()
        .filter(|line| line["customType"] == "tools_host")
        .map(|line| line["data"].clone())
        .collect();
    assert_eq!(
        recorded,
        [
            json!({"remote": target, "flags": flags}),
            json!({"remote": null})
        ]
    );
}

/// The flags a session records to reach its host again name the ssh
/// configuration from any directory: given relative (`--ssh-config
/// ../home/.ssh/config`), the warning's "To continue there, add ..."
/// named another file, or none, from the next directory.
#[tokio::test(flavor = "multi_thread")]
async fn a_relative_ssh_config_is_recorded_as_an_absolute_path() {
    let Some(sshd) = Sshd::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let here = std::env::current_dir().unwrap();
    let up = "../".repeat(here.components().count() - 1);
    let relative = Path::new(&up).join(sshd.ssh_config().strip_prefix("/").unwrap());
    let options = coding_agent::remote::RemoteOptions {
        ssh_config: Some(relative),
        ..sshd.options(dir.path())
    };

    let host = coding_agent::remote::RemoteHost::connect(options)
        .await
        .unwrap();

    let flags = host.tools_host().flags;
    let (_, config) = flags.split_once(" --ssh-config ").unwrap();
    assert!(Path::new(config).is_absolute(), "{flags}");
    assert_eq!(
        std::fs::canonicalize(config).unwrap(),
        std::fs::canonicalize(sshd.ssh_config()).unwrap()
    );
}
