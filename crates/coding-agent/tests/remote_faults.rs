//! `--remote` when the network or the host misbehaves: a wrong host key and
//! an unreachable host fail at start with ssh's words (and soon); a
//! connection killed mid-call ends that call as an error, leaves nothing
//! running on the remote, and the next call reconnects.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "remote_support/mod.rs"]
mod remote_support;

use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_core::{AgentToolResult, ToolError};
use coding_agent::ToolContext;
use coding_agent::remote::{RemoteOperations, remote_tool};
use remote_support::{
    BIN, HOST, HomeFile, HungMount, Sshd, alive, cache_env, command_line, descendants, eventually,
    the_helper, threads_waiting_on_fuse,
};
use serde_json::json;
use tokio::task::JoinHandle;

/// Runs `coding-agent tool ls {} --remote ...` with `extra` flags; returns
/// the exit status, stderr and how long it took.
fn run_binary(sshd: &Sshd, dir: &Path, extra: &[&str]) -> (Option<i32>, String, Duration) {
    let started = Instant::now();
    let (cache_var, cache) = cache_env();
    let output = Command::new(BIN)
        .args(["tool", "ls", "{}"])
        .args(sshd.flags(dir))
        .args(extra)
        .env(cache_var, cache)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
        started.elapsed(),
    )
}

/// The binary run against `port` on 127.0.0.1 in place of the sshd, giving
/// up connecting after 2 s: for a host that is not there or never answers.
fn run_binary_on_port(sshd: &Sshd, port: u16) -> (Option<i32>, String, Duration) {
    let port_option = format!("Port={port}");
    let options = [
        "--ssh-option",
        &port_option,
        "--ssh-option",
        "ConnectTimeout=2",
    ];
    run_binary(sshd, Path::new("/"), &options)
}

/// Puts another key for the test sshd's host and port in its known_hosts,
/// as if the host's key had changed.
fn change_the_known_host_key(sshd: &Sshd) {
    let other = sshd.dir().join("other");
    let status = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-f"])
        .arg(&other)
        .status()
        .unwrap();
    assert!(status.success());
    let key = std::fs::read_to_string(other.with_extension("pub")).unwrap();
    let key: Vec<&str> = key.split_whitespace().take(2).collect();
    std::fs::write(
        sshd.dir().join("known_hosts"),
        format!("[127.0.0.1]:{} {}\n", sshd.port, key.join(" ")),
    )
    .unwrap();
}

#[test]
fn a_changed_host_key_fails_at_start_in_ssh_words() {
    let Some(sshd) = Sshd::start() else {
        return;
    };
    change_the_known_host_key(&sshd);

    let (status, stderr, _) = run_binary(&sshd, Path::new("/"), &[]);

    assert_eq!(status, Some(1), "{stderr}");
    assert!(
        stderr.starts_with(&format!(
            "coding-agent: --remote {HOST}/: cannot connect to {HOST}: "
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains("REMOTE HOST IDENTIFICATION HAS CHANGED")
            && stderr.trim_end().ends_with("Host key verification failed."),
        "{stderr}"
    );
}

/// With `StrictHostKeyChecking no` ssh connects to a host whose key
/// changed; its warning was hidden, as ssh's stderr is shown only when a
/// connection fails.
#[test]
fn a_changed_host_key_accepted_by_the_configuration_is_warned_about() {
    let Some(sshd) = Sshd::start() else {
        return;
    };
    change_the_known_host_key(&sshd);

    let (status, stderr, _) = run_binary(
        &sshd,
        Path::new("/"),
        &["--ssh-option", "StrictHostKeyChecking=no"],
    );

    assert_eq!(status, Some(0), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "ssh warned that the host key of {HOST} has changed (REMOTE HOST IDENTIFICATION HAS CHANGED) and connected anyway"
        )),
        "{stderr}"
    );
}

/// A login that refuses the session on stdout (`nologin`'s "This account
/// is currently not available.") is quoted: the start failed with only
/// "ssh exited (exit status: 1)".
#[test]
fn a_login_refused_on_stdout_is_quoted() {
    let Some(sshd) = Sshd::start_with(
        "ForceCommand printf 'This account is currently not available.\\n'; exit 1",
    ) else {
        return;
    };

    let (status, stderr, _) = run_binary(&sshd, Path::new("/"), &[]);

    assert_eq!(status, Some(1), "{stderr}");
    assert_eq!(
        stderr.trim_end(),
        format!(
            "coding-agent: --remote {HOST}/: cannot connect to {HOST}: ssh exited (exit status: 1); the remote session printed: This account is currently not available."
        )
    );
}

#[test]
fn an_unknown_host_key_is_refused_not_accepted() {
    let Some(sshd) = Sshd::start() else {
        return;
    };
    std::fs::write(sshd.dir().join("known_hosts"), "").unwrap();

    let (status, stderr, _) = run_binary(&sshd, Path::new("/"), &[]);

    assert_eq!(status, Some(1), "{stderr}");
    assert!(
        stderr.trim_end().ends_with("Host key verification failed."),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read_to_string(sshd.dir().join("known_hosts")).unwrap(),
        ""
    );
}

#[test]
fn a_host_that_never_answers_fails_after_the_connect_timeout() {
    let Some(sshd) = Sshd::start() else {
        return;
    };
    // Accepts TCP connections (the kernel does) but never speaks SSH.
    let silent = TcpListener::bind(("127.0.0.1", 0)).unwrap();
    let port = silent.local_addr().unwrap().port();

    let (status, stderr, took) = run_binary_on_port(&sshd, port);

    assert_eq!(status, Some(1), "{stderr}");
    assert!(
        stderr.contains("Connection timed out during banner exchange"),
        "{stderr}"
    );
    assert!(took < Duration::from_secs(15), "took {took:?}");
    drop(silent);
}

#[test]
fn a_closed_port_fails_at_once_with_ssh_words() {
    let Some(sshd) = Sshd::start() else {
        return;
    };
    let closed = TcpListener::bind(("127.0.0.1", 0)).unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);

    let (status, stderr, _) = run_binary_on_port(&sshd, port);

    assert_eq!(status, Some(1), "{stderr}");
    assert_eq!(
        stderr.trim_end(),
        format!(
            "coding-agent: --remote {HOST}/: cannot connect to {HOST}: ssh: connect to host 127.0.0.1 port {port}: Connection refused"
        )
    );
}

#[test]
fn a_remote_of_another_platform_is_refused_at_start_naming_what_it_needs() {
    // A `uname` first on the sessions' PATH (set by the server: sshd sets
    // PATH after the variables a client sends) that reports a Mac.
    let shim = tempfile::tempdir().unwrap();
    let uname = shim.path().join("uname");
    std::fs::write(&uname, "#!/bin/sh\necho Darwin arm64\n").unwrap();
    std::fs::set_permissions(&uname, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!("SetEnv PATH={}:/usr/bin:/bin\n", shim.path().display());
    let Some(sshd) = Sshd::start_with(&path) else {
        return;
    };

    let (status, stderr, _) = run_binary(&sshd, Path::new("/"), &[]);

    assert_eq!(status, Some(1), "{stderr}");
    let local = format!(
        "{} {}",
        if cfg!(target_os = "linux") {
            "Linux"
        } else {
            std::env::consts::OS
        },
        std::env::consts::ARCH
    );
    assert_eq!(
        stderr.trim_end(),
        format!(
            "coding-agent: --remote {HOST}/: {HOST} runs Darwin arm64, but this coding-agent is built for {local}: its helper cannot run there. Run a coding-agent built for Darwin arm64."
        )
    );
}

/// A login script that prints (here through `BASH_ENV`, which the remote
/// user's bash sources for the session's command as it would a `.bashrc`
/// or sshd an `~/.ssh/rc`), its last line without a newline, is skipped:
/// it was taken for `uname -sm` and the connection refused.
#[test]
fn a_login_script_that_prints_does_not_break_the_connection() {
    let noise = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(
        noise.path(),
        "echo 'Welcome to box!'\necho 'Linux x86_64'\nprintf 'no newline at the end'\n",
    )
    .unwrap();
    let bash_env = format!("SetEnv BASH_ENV={}\n", noise.path().display());
    let Some(sshd) = Sshd::start_with(&bash_env) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("seen.txt"), "").unwrap();

    let output = sshd
        .command(&["tool", "ls", "{}"], dir.path())
        .output()
        .unwrap();

    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    let answer: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(answer["content"][0]["text"], "seen.txt", "{answer}");
}

#[test]
fn a_cache_dir_that_cannot_be_created_is_refused_at_start_naming_the_setting() {
    let Some(sshd) = Sshd::start() else {
        return;
    };
    // Under a regular file: no directory can be made there, even by root.
    let file = tempfile::NamedTempFile::new().unwrap();
    let cache = file.path().join("cache");
    let output = sshd
        .command(&["tool", "ls", "{}"], Path::new("/"))
        .env("CODING_AGENT_REMOTE_CACHE", &cache)
        .output()
        .unwrap();

    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.starts_with(&format!(
            "coding-agent: --remote {HOST}/: cannot start the coding-agent helper on {HOST}: "
        )) && stderr.contains(&cache.display().to_string())
            && stderr
                .trim_end()
                .ends_with("If that directory is not writable, set remote.cacheDir to one that is"),
        "{stderr}"
    );
}

/// A helper in the cache that does not start (damaged, or no longer
/// executable) is named, with what to do about it.
#[test]
fn a_damaged_cached_helper_is_named_with_how_to_replace_it() {
    use std::os::unix::fs::PermissionsExt;
    let Some(sshd) = Sshd::start() else {
        return;
    };
    let cache = tempfile::tempdir().unwrap();
    let run = || {
        let output = sshd
            .command(&["tool", "ls", "{}"], Path::new("/"))
            .env("CODING_AGENT_REMOTE_CACHE", cache.path())
            .output()
            .unwrap();
        (
            output.status.code(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    };
    let (status, stderr) = run();
    assert_eq!(status, Some(0), "{stderr}");
    let helper = std::fs::read_dir(cache.path())
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .find(|path| {
            path.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("coding-agent-")
        })
        .unwrap();

    // Replaced by a rename: the first run's helper may still be exiting.
    let damaged = cache.path().join("damaged");
    std::fs::write(&damaged, "#!/bin/sh\nexit 3\n").unwrap();
    std::fs::set_permissions(&damaged, std::fs::Permissions::from_mode(0o700)).unwrap();
    std::fs::rename(&damaged, &helper).unwrap();
    let (status, stderr) = run();
    assert_eq!(
        (status, stderr.trim_end()),
        (
            Some(1),
            format!(
                "coding-agent: --remote {HOST}/: cannot start the coding-agent helper on {HOST}: {} ended without answering (no message; exit status: 3): if it is damaged, remove it so the next start uploads it again",
                helper.display()
            )
            .as_str()
        )
    );

    std::fs::set_permissions(&helper, std::fs::Permissions::from_mode(0o600)).unwrap();
    let (status, stderr) = run();
    assert_eq!(status, Some(1), "{stderr}");
    assert!(
        stderr.contains("cannot be executed there")
            && stderr
                .trim_end()
                .ends_with("if the file lost its execute permission, remove it so the next start uploads it again"),
        "{stderr}"
    );
}

/// A relative cache directory is refused before anything is uploaded: it
/// landed wherever sshd starts the session (the remote home here).
#[test]
fn a_relative_cache_dir_is_refused_at_start_saying_how_to_write_it() {
    let Some(sshd) = Sshd::start() else {
        return;
    };
    let landed = HomeFile::new("ca-remote-relative-cache");
    let output = sshd
        .command(&["tool", "ls", "{}"], Path::new("/"))
        .env("CODING_AGENT_REMOTE_CACHE", landed.name())
        .output()
        .unwrap();

    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert_eq!(
        stderr.trim_end(),
        format!(
            "coding-agent: --remote {HOST}/: cannot start the coding-agent helper on {HOST}: the cache directory {} (remote.cacheDir or CODING_AGENT_REMOTE_CACHE) is relative: give an absolute path or one starting with ~/ (the remote home)",
            landed.name()
        )
    );
    assert!(!landed.0.exists());
}

/// Every process below `pid`.
/// Kills the sshd's sessions while `call` runs: the call must end (within
/// 30 s) as `Remote connection lost: ...`, and `helper` must exit.
async fn drop_connection_under(
    sshd: &Sshd,
    call: JoinHandle<Result<AgentToolResult, ToolError>>,
    helper: u32,
) {
    assert!(sshd.kill_sessions() > 0);
    let error = tokio::time::timeout(Duration::from_secs(30), call)
        .await
        .expect("the call did not end after the connection dropped")
        .unwrap()
        .unwrap_err();
    assert!(
        error.to_string().starts_with("Remote connection lost: "),
        "{error}"
    );
    eventually("the remote helper's exit", || !alive(helper)).await;
}

/// Kills the server side of the connection while `tool` runs with `args`;
/// the call must end as `Remote connection lost: ...`, the helper and what
/// it ran must die, and the next call must work on a new connection.
async fn connection_killed_mid_call(tool: &str, args: serde_json::Value, started: &str) {
    let Some(sshd) = Sshd::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let host = Arc::new(sshd.connect(dir.path()).await);
    let ops = RemoteOperations::new(Arc::clone(&host));
    let definition = remote_tool(tool, &ops).unwrap();
    let ctx = ToolContext::new(dir.path());
    let call = tokio::spawn(async move { definition.execute(args, ctx).await });
    let marker = dir.path().join(started);
    eventually("the call's start", || marker.exists()).await;
    let helper = the_helper(&sshd);
    let remote_processes = descendants(helper);

    drop_connection_under(&sshd, call, helper).await;
    for pid in remote_processes {
        eventually("the remote command's death", || !alive(pid)).await;
    }
    let ls = remote_tool("ls", &ops).unwrap();
    let listed = ls
        .execute(json!({}), ToolContext::new(dir.path()))
        .await
        .expect("the next call reconnects");
    assert!(!listed.content.is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_connection_killed_mid_bash_ends_the_call_and_the_next_reconnects() {
    connection_killed_mid_call(
        "bash",
        json!({"command": "sleep 300 & echo $! > started; wait"}),
        "started",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_connection_killed_mid_read_ends_the_call_and_the_next_reconnects() {
    // A read on a hung mount blocks on the remote until the connection is
    // killed.
    let Some(sshd) = Sshd::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let Some(_hung) = HungMount::new(&dir.path().join("hung")) else {
        return;
    };
    let host = Arc::new(sshd.connect(dir.path()).await);
    let ops = RemoteOperations::new(Arc::clone(&host));
    let read = remote_tool("read", &ops).unwrap();
    let ctx = ToolContext::new(dir.path());
    let call = tokio::spawn(async move { read.execute(json!({"path": "hung/a.txt"}), ctx).await });
    let helper = the_helper(&sshd);
    eventually("the helper's read waits on the hung mount", || {
        threads_waiting_on_fuse(helper) == 1
    })
    .await;
    assert!(!call.is_finished(), "the read blocks on the hung mount");

    drop_connection_under(&sshd, call, helper).await;
    std::fs::write(dir.path().join("a.txt"), "after\n").unwrap();
    let read = remote_tool("read", &ops).unwrap();
    let again = read
        .execute(json!({"path": "a.txt"}), ToolContext::new(dir.path()))
        .await
        .expect("the next call reconnects");
    assert_eq!(
        serde_json::to_value(&again.content).unwrap(),
        json!([{"type": "text", "text": "after\n"}])
    );
}

/// A host that has never seen this build gets the helper uploaded into the
/// cache directory, and the master's session runs it: a call works, and the
/// only process on the remote besides sshd's is that helper, exec'd in the
/// place of the session's shell (no second ssh session, no waiting shell).
#[tokio::test(flavor = "multi_thread")]
async fn a_fresh_cache_dir_gets_the_helper_which_runs_as_the_only_session() {
    let Some(sshd) = Sshd::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("seen.txt"), "hello\n").unwrap();
    let cache = tempfile::tempdir().unwrap();
    let options = coding_agent::remote::RemoteOptions {
        cache_dir: Some(cache.path().join("fresh")),
        ..sshd.options(dir.path())
    };
    let host = Arc::new(
        coding_agent::remote::RemoteHost::connect(options)
            .await
            .unwrap(),
    );
    let uploaded: Vec<_> = std::fs::read_dir(cache.path().join("fresh"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        uploaded.len() == 1 && uploaded[0].starts_with("coding-agent-"),
        "{uploaded:?}"
    );
    let read = remote_tool("read", &RemoteOperations::new(Arc::clone(&host))).unwrap();
    let result = read
        .execute(json!({"path": "seen.txt"}), ToolContext::new(dir.path()))
        .await
        .unwrap();
    let local = coding_agent::tools::builtin_tool("read")
        .unwrap()
        .execute(json!({"path": "seen.txt"}), ToolContext::new(dir.path()))
        .await
        .unwrap();
    assert_eq!(result.content, local.content, "the local read's answer");
    assert!(format!("{:?}", result.content).contains("hello"));
    let helper = the_helper(&sshd);
    let others: Vec<String> = descendants(sshd.pid())
        .into_iter()
        .filter(|pid| *pid != helper)
        .map(command_line)
        .filter(|command| !command.starts_with("sshd"))
        .collect();
    assert!(others.is_empty(), "{others:?}");
}

/// A stalled link (here the helper stopped with SIGSTOP, as a suspended
/// sshd or a dead network) does not hold a bash call past its timeout:
/// it ends STALLED_LINK_GRACE (10 s) after it, saying the connection
/// stalled. (It waited for ssh's keepalives, 46 s in a probe.)
#[tokio::test(flavor = "multi_thread")]
async fn a_stalled_link_ends_a_bash_call_soon_after_its_timeout() {
    let Some(sshd) = Sshd::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let host = Arc::new(sshd.connect(dir.path()).await);
    let ops = RemoteOperations::new(Arc::clone(&host));
    let bash = remote_tool("bash", &ops).unwrap();
    let ctx = ToolContext::new(dir.path());
    let args = json!({"command": "touch started; sleep 60", "timeout": 1});
    let started = Instant::now();
    let call = tokio::spawn(async move { bash.execute(args, ctx).await });
    let marker = dir.path().join("started");
    eventually("the call's start", || marker.exists()).await;
    let helper = the_helper(&sshd);
    let signal = |name: &str| {
        Command::new("kill")
            .args([name, &helper.to_string()])
            .status()
            .unwrap()
    };
    assert!(signal("-STOP").success());
    let ended = tokio::time::timeout(Duration::from_secs(40), call).await;
    // The link still stalled, the next call connects again: it waited on
    // the stalled one until ssh gave up (48 s in a probe).
    std::fs::write(dir.path().join("a.txt"), "after\n").unwrap();
    let read = remote_tool("read", &ops).unwrap();
    let next = tokio::time::timeout(
        Duration::from_secs(20),
        read.execute(json!({"path": "a.txt"}), ToolContext::new(dir.path())),
    )
    .await;
    assert!(signal("-CONT").success());
    let error = ended
        .expect("the call waited on the stalled link")
        .unwrap()
        .unwrap_err();
    assert!(
        error
            .to_string()
            .contains("no answer from the remote host 10 s after the command's timeout of 1 s"),
        "{error}"
    );
    assert!(started.elapsed() < Duration::from_secs(25));
    let next = next
        .expect("the next call waited on the stalled link")
        .unwrap();
    assert!(format!("{:?}", next.content).contains("after"), "{next:?}");
}

/// A TMPDIR ssh cannot take in `ControlPath=` (a space split the value, a
/// `%h` was expanded) or that does not exist failed every connection: the
/// control socket goes to `/tmp` then.
#[test]
fn a_tmpdir_ssh_cannot_take_does_not_break_the_connection() {
    let Some(sshd) = Sshd::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("seen.txt"), "").unwrap();
    let tmp = tempfile::tempdir().unwrap();
    for name in ["sp ace", "pct%h", "q\"uote", "missing"] {
        let tmpdir = tmp.path().join(name);
        if name != "missing" {
            std::fs::create_dir(&tmpdir).unwrap();
        }
        let output = sshd
            .command(&["tool", "ls", "{}"], dir.path())
            .env("TMPDIR", &tmpdir)
            .output()
            .unwrap();

        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "{name}: {stderr}");
        let answer: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
        assert_eq!(answer["content"][0]["text"], "seen.txt", "{answer}");
    }
}

/// A `uname` that fails on the remote was not seen as such: the start
/// waited 60 s and said `no answer within 60 s`.
#[test]
fn a_failing_uname_on_the_remote_is_reported_at_once() {
    let bin = tempfile::tempdir().unwrap();
    let uname = bin.path().join("uname");
    std::fs::write(&uname, "#!/bin/sh\necho 'uname: broken' >&2\nexit 1\n").unwrap();
    std::fs::set_permissions(&uname, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!("SetEnv PATH={}:/usr/bin:/bin\n", bin.path().display());
    let Some(sshd) = Sshd::start_with(&path) else {
        return;
    };

    let (status, stderr, _) = run_binary(&sshd, Path::new("/"), &[]);

    assert_eq!(status, Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!("uname -sm failed on {HOST}: uname: broken.")),
        "{stderr}"
    );
}

/// A port that accepts TCP connections and never says a word, as a host
/// whose sshd is stopped (`kill -STOP`): ssh waits there for the banner
/// until its `ConnectTimeout`. Each connection is one ssh attempt; they are
/// counted, and kept open until this is dropped.
struct Silent {
    port: u16,
    accepted: Arc<std::sync::Mutex<Vec<std::net::TcpStream>>>,
}

impl Silent {
    fn start() -> Self {
        let listener = TcpListener::bind(("127.0.0.1", 0)).unwrap();
        let port = listener.local_addr().unwrap().port();
        let accepted = Arc::new(std::sync::Mutex::new(Vec::new()));
        let kept = Arc::clone(&accepted);
        // Ends with the test process: it only ever blocks in accept.
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                kept.lock().unwrap().push(stream);
            }
        });
        Silent { port, accepted }
    }

    /// Connections so far: ssh's attempts.
    fn attempts(&self) -> usize {
        self.accepted.lock().unwrap().len()
    }

    /// Whether every attempt's connection is still open (ssh still waits).
    fn all_open(&self) -> bool {
        self.accepted.lock().unwrap().iter().all(|stream| {
            stream.set_nonblocking(true).unwrap();
            let mut byte = [0u8; 1];
            // ssh's own banner may be there to read; an end is not.
            match stream.peek(&mut byte) {
                Ok(read) => read > 0,
                Err(e) => e.kind() == std::io::ErrorKind::WouldBlock,
            }
        })
    }
}

/// A host connected through its own copy of the test ssh config, whose
/// `Port` the test then points elsewhere (see [`Silent`]).
struct Moving {
    sshd: Sshd,
    dir: tempfile::TempDir,
    config: tempfile::NamedTempFile,
    host: Arc<coding_agent::remote::RemoteHost>,
}

impl Moving {
    async fn connect(ssh_options: &[&str]) -> Option<Self> {
        let sshd = Sshd::start()?;
        let dir = tempfile::tempdir().unwrap();
        let config = tempfile::NamedTempFile::new().unwrap();
        std::fs::copy(sshd.ssh_config(), config.path()).unwrap();
        let options = coding_agent::remote::RemoteOptions {
            ssh_config: Some(config.path().to_path_buf()),
            ssh_options: ssh_options.iter().map(|o| (*o).to_owned()).collect(),
            ..sshd.options(dir.path())
        };
        let host = Arc::new(
            coding_agent::remote::RemoteHost::connect(options)
                .await
                .unwrap(),
        );
        Some(Moving {
            sshd,
            dir,
            config,
            host,
        })
    }

    /// Has the next connections go to `port`.
    fn point_to(&self, port: u16) {
        let config = std::fs::read_to_string(self.sshd.ssh_config()).unwrap();
        let listens = format!("Port {}\n", self.sshd.port);
        assert!(config.contains(&listens), "{config}");
        let moved = config.replace(&listens, &format!("Port {port}\n"));
        std::fs::write(self.config.path(), moved).unwrap();
    }

    /// Drops the connection (the server side dies, as on a network drop)
    /// and has the next attempts wait on `silent`.
    async fn drop_towards(&self, silent: &Silent) {
        let old = self.host.connection().await.unwrap();
        assert!(self.sshd.kill_sessions() > 0);
        eventually("the channel's end", || old.channel().is_closed()).await;
        self.point_to(silent.port);
    }

    /// Starts `tool` with `args`, stopped by `cancel`.
    fn call(
        &self,
        tool: &str,
        args: serde_json::Value,
        cancel: &tokio_util::sync::CancellationToken,
    ) -> JoinHandle<Result<AgentToolResult, ToolError>> {
        let definition = remote_tool(tool, &RemoteOperations::new(Arc::clone(&self.host))).unwrap();
        let ctx = ToolContext {
            cancel: cancel.clone(),
            ..ToolContext::new(self.dir.path())
        };
        tokio::spawn(async move { definition.execute(args, ctx).await })
    }
}

/// The calls of a parallel batch that find the connection dropped wait for
/// one reconnect and share its failure: each tried again in turn, so four
/// calls against a host that stopped answering ended one ConnectTimeout
/// after another (+3, +6, +9, +12 s in a probe). The next call tries anew.
#[tokio::test(flavor = "multi_thread")]
async fn a_batch_after_a_dropped_connection_shares_one_reconnect_and_its_failure() {
    let Some(remote) = Moving::connect(&["ConnectTimeout=2"]).await else {
        return;
    };
    std::fs::write(remote.dir.path().join("a.txt"), "after\n").unwrap();
    let silent = Silent::start();
    remote.drop_towards(&silent).await;
    let never = tokio_util::sync::CancellationToken::new();

    let batch = [
        remote.call("read", json!({"path": "a.txt"}), &never),
        remote.call("ls", json!({}), &never),
        remote.call("grep", json!({"pattern": "after"}), &never),
        remote.call("bash", json!({"command": "echo hi"}), &never),
    ];
    for call in batch {
        let error = tokio::time::timeout(Duration::from_secs(60), call)
            .await
            .expect("the call ends once the reconnect fails")
            .unwrap()
            .unwrap_err()
            .to_string();
        assert!(
            error.contains(&format!(
                "Remote connection lost: cannot connect to {HOST}: Connection timed out during banner exchange"
            )),
            "{error}"
        );
    }
    assert_eq!(silent.attempts(), 1, "one reconnect for the whole batch");

    remote.point_to(remote.sshd.port);
    let again = remote
        .call("read", json!({"path": "a.txt"}), &never)
        .await
        .unwrap()
        .expect("the next call reconnects");
    assert!(
        format!("{:?}", again.content).contains("after"),
        "{again:?}"
    );
}

/// A stop (Esc, RPC `abort`) ends the calls waiting for a reconnect at once,
/// with the words of a stopped call, while ssh still waits for the host:
/// they waited out ssh's ConnectTimeout (10 s) one after another, and the
/// abort's answer came after the last (29 s in a probe).
#[tokio::test(flavor = "multi_thread")]
async fn a_stop_ends_the_calls_waiting_for_a_reconnect_at_once() {
    let Some(remote) = Moving::connect(&["ConnectTimeout=50"]).await else {
        return;
    };
    let silent = Silent::start();
    remote.drop_towards(&silent).await;
    let stop = tokio_util::sync::CancellationToken::new();
    let read = remote.call("read", json!({"path": "a.txt"}), &stop);
    let bash = remote.call("bash", json!({"command": "echo hi"}), &stop);
    eventually("ssh's attempt to reach the host", || silent.attempts() == 1).await;

    stop.cancel();

    let ended = |call: JoinHandle<Result<AgentToolResult, ToolError>>| async move {
        tokio::time::timeout(Duration::from_secs(40), call)
            .await
            .expect("the stopped call ended")
            .unwrap()
            .unwrap_err()
            .to_string()
    };
    assert_eq!(ended(read).await, "Operation aborted");
    assert_eq!(ended(bash).await, "Command aborted");
    assert!(silent.all_open(), "ssh still waits for the host");
    assert_eq!(silent.attempts(), 1);
}
