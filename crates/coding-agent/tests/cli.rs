//! The `coding-agent tool` command, run as a real process: exact stdout JSON
//! and exit status for results, tool errors and usage errors.

// Helpers outside `#[test]` functions set up fixtures; a failed setup should panic.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

mod unprivileged;

const BIN: &str = env!("CARGO_BIN_EXE_coding-agent");

/// Pi's validation text for `{"limit": "ten"}`: the call never reaches the tool.
const LS_LIMIT_NOT_A_NUMBER: &str = "Validation failed for tool \"ls\":\n  - limit: must be number\n\nReceived arguments:\n{\n  \"limit\": \"ten\"\n}";

/// A temp directory holding `a.txt` and `sub/`.
fn workdir() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().canonicalize().unwrap();
    std::fs::write(path.join("a.txt"), "x").unwrap();
    std::fs::create_dir(path.join("sub")).unwrap();
    (dir, path)
}

fn run(args: &[&str], current_dir: &Path) -> Output {
    Command::new(BIN)
        .args(args)
        .current_dir(current_dir)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn run_with_stdin(args: &[&str], current_dir: &Path, stdin: &str) -> Output {
    let mut child = Command::new(BIN)
        .args(args)
        .current_dir(current_dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

/// (exit status, stdout, stderr)
fn outcome(output: Output) -> (Option<i32>, String, String) {
    (
        output.status.code(),
        String::from_utf8(output.stdout).unwrap(),
        String::from_utf8(output.stderr).unwrap(),
    )
}

fn printed(json: &str) -> (Option<i32>, String, String) {
    (Some(0), format!("{json}\n"), String::new())
}

#[test]
fn tool_prints_a_successful_result_as_json() {
    let (_dir, cwd) = workdir();
    assert_eq!(
        outcome(run(
            &["tool", "ls", "{}", "--cwd", cwd.to_str().unwrap()],
            Path::new("/")
        )),
        printed(
            r#"{"isError":false,"content":[{"type":"text","text":"a.txt\nsub/"}],"details":null}"#
        )
    );
}

#[test]
fn tool_prints_details_when_the_tool_gives_them() {
    let (_dir, cwd) = workdir();
    assert_eq!(
        outcome(run(&["tool", "ls", r#"{"limit":1}"#], &cwd)),
        printed(
            r#"{"isError":false,"content":[{"type":"text","text":"a.txt\n\n[1 entries limit reached. Use limit=2 for more]"}],"details":{"entryLimitReached":1}}"#
        )
    );
}

#[test]
fn tool_error_is_printed_as_data_and_exits_zero() {
    let (_dir, cwd) = workdir();
    let expected = format!(
        r#"{{"isError":true,"content":[{{"type":"text","text":"Path not found: {}/nope"}}],"details":{{}}}}"#,
        cwd.display()
    );
    assert_eq!(
        outcome(run(&["tool", "ls", r#"{"path":"nope"}"#], &cwd)),
        printed(&expected)
    );
}

#[test]
fn unknown_tool_is_a_tool_error() {
    let (_dir, cwd) = workdir();
    assert_eq!(
        outcome(run(&["tool", "delete", r#"{"path":"x"}"#], &cwd)),
        printed(
            r#"{"isError":true,"content":[{"type":"text","text":"Tool delete not found"}],"details":{}}"#
        )
    );
}

/// A usage error whose message cannot be written (`2>/dev/full`) still
/// exits 2: the failed write panicked (status 101).
#[test]
fn a_usage_error_with_stderr_full_still_exits_2() {
    let (_dir, cwd) = workdir();
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let output = Command::new(BIN)
        .args(["tool", "ls", "{"])
        .current_dir(&cwd)
        .stdin(Stdio::null())
        .stderr(full)
        .output()
        .unwrap();
    assert_eq!(
        (output.status.code(), output.stdout.as_slice()),
        (Some(2), &b""[..])
    );
}

#[test]
fn arguments_of_the_wrong_type_are_a_tool_error() {
    let (_dir, cwd) = workdir();
    let expected = serde_json::json!({
        "isError": true,
        "content": [{"type": "text", "text": LS_LIMIT_NOT_A_NUMBER}],
        "details": {}
    });
    let (status, stdout, stderr) = outcome(run(&["tool", "ls", r#"{"limit":"ten"}"#], &cwd));
    assert_eq!((status, stderr.as_str()), (Some(0), ""));
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&stdout).unwrap(),
        expected
    );
}

#[test]
fn arguments_can_come_from_standard_input() {
    let (_dir, cwd) = workdir();
    assert_eq!(
        outcome(run_with_stdin(
            &["tool", "ls", "-", "--cwd", "sub"],
            &cwd,
            r#"{"path": ".."}"#
        )),
        printed(
            r#"{"isError":false,"content":[{"type":"text","text":"a.txt\nsub/"}],"details":null}"#
        )
    );
}

#[test]
fn relative_cwd_resolves_against_the_current_directory() {
    let (_dir, cwd) = workdir();
    std::fs::write(cwd.join("sub/inner.txt"), "").unwrap();
    let expected = format!(
        r#"{{"isError":true,"content":[{{"type":"text","text":"Path not found: {}/sub/missing"}}],"details":{{}}}}"#,
        cwd.display()
    );
    assert_eq!(
        outcome(run(
            &["tool", "ls", r#"{"path":"missing"}"#, "--cwd", "sub"],
            &cwd
        )),
        printed(&expected)
    );
}

#[test]
fn invalid_json_is_a_usage_error() {
    let (_dir, cwd) = workdir();
    assert_eq!(
        outcome(run(&["tool", "ls", "{bad"], &cwd)),
        (
            Some(2),
            String::new(),
            "coding-agent: ARGS_JSON is not valid JSON: key must be a string at line 1 column 2\n"
                .to_owned()
        )
    );
}

#[test]
fn invalid_json_on_standard_input_is_a_usage_error() {
    let (_dir, cwd) = workdir();
    assert_eq!(
        outcome(run_with_stdin(&["tool", "ls", "-"], &cwd, "")),
        (
            Some(2),
            String::new(),
            "coding-agent: ARGS_JSON is not valid JSON: EOF while parsing a value at line 1 column 0\n"
                .to_owned()
        )
    );
}

#[test]
fn missing_arguments_are_a_usage_error() {
    let (_dir, cwd) = workdir();
    let (status, stdout, stderr) = outcome(run(&["tool", "ls"], &cwd));
    assert_eq!((status, stdout.as_str()), (Some(2), ""));
    assert!(
        stderr.contains("the following required arguments were not provided:\n  <ARGS_JSON>"),
        "{stderr}"
    );
}

#[test]
fn a_missing_cwd_is_a_usage_error() {
    let (_dir, cwd) = workdir();
    assert_eq!(
        outcome(run(&["tool", "ls", "{}", "--cwd", "nowhere"], &cwd)),
        (
            Some(2),
            String::new(),
            "coding-agent: --cwd nowhere: No such file or directory (os error 2)\n".to_owned()
        )
    );
}

#[test]
fn a_file_as_cwd_is_a_usage_error() {
    let (_dir, cwd) = workdir();
    assert_eq!(
        outcome(run(&["tool", "ls", "{}", "--cwd", "a.txt"], &cwd)),
        (
            Some(2),
            String::new(),
            "coding-agent: --cwd a.txt: not a directory\n".to_owned()
        )
    );
}

/// Whether `pid` has installed a handler for SIGINT (bit 2 of `SigCgt`).
#[cfg(target_os = "linux")]
fn catches_sigint(pid: u32) -> bool {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix("SigCgt:"))
        .and_then(|mask| u64::from_str_radix(mask.trim(), 16).ok())
        .is_some_and(|mask| mask & (1 << (2 - 1)) != 0)
}

/// `tool` with stdin piped, stdout and stderr captured, once it handles
/// SIGINT.
#[cfg(target_os = "linux")]
fn spawn_tool(args: &[&str], cwd: &Path) -> std::process::Child {
    let child = Command::new(BIN)
        .arg("tool")
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !catches_sigint(child.id()) {
        assert!(
            std::time::Instant::now() < deadline,
            "the binary never installed its Ctrl-C handler"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    child
}

/// Sends SIGINT to `child`, waits for it (a minute at most) and returns
/// (the signal that ended it, stdout, stderr).
#[cfg(target_os = "linux")]
fn interrupt(mut child: std::process::Child) -> (Option<i32>, String, String) {
    use std::io::Read;
    use std::os::unix::process::ExitStatusExt as _;

    let kill = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the binary went on after Ctrl-C"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    };
    let mut stdout = String::new();
    let mut stderr = String::new();
    child.stdout.unwrap().read_to_string(&mut stdout).unwrap();
    child.stderr.unwrap().read_to_string(&mut stderr).unwrap();
    (status.signal(), stdout, stderr)
}

/// Ctrl-C while the arguments are awaited on stdin ends the process at
/// once, by SIGINT: it kept waiting for them until a second Ctrl-C.
#[cfg(target_os = "linux")]
#[test]
fn ctrl_c_while_the_arguments_are_read_ends_by_sigint() {
    let (_dir, cwd) = workdir();
    let mut child = spawn_tool(&["ls", "-"], &cwd);
    // Kept open, and nothing written: the read would wait for good.
    let _stdin = child.stdin.take();
    assert_eq!(
        interrupt(child),
        (
            Some(2),
            String::new(),
            "coding-agent: interrupted, cancelling the call (Ctrl-C again to exit now)\n"
                .to_owned()
        )
    );
}

/// Ctrl-C during a call: the call is cancelled and its result printed,
/// then the process ends by SIGINT, so a shell loop running `tool` stops (it
/// exited 0 and the loop went on).
#[cfg(target_os = "linux")]
#[test]
fn ctrl_c_during_a_call_prints_the_aborted_result_then_ends_by_sigint() {
    let (_dir, cwd) = workdir();
    let command = r#"{"command":"touch started; sleep 60"}"#;
    let child = spawn_tool(&["bash", command], &cwd);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !cwd.join("started").exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "the command never ran"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert_eq!(
        interrupt(child),
        (
            Some(2),
            "{\"isError\":true,\"content\":[{\"type\":\"text\",\"text\":\"Command aborted\"}],\"details\":{\"ended\":\"aborted\"}}\n"
                .to_owned(),
            "coding-agent: interrupted, cancelling the call (Ctrl-C again to exit now)\n"
                .to_owned()
        )
    );
}

/// A colleague's file the user may write, in a folder they may write: the
/// write (and the edit) goes in place, as Pi writes, so the file keeps its
/// owner and group; replacing it by a new file would make it the user's
/// alone. It needs root to give the file to another user (CI runs as root).
#[test]
fn a_file_of_another_owner_is_written_in_place_and_keeps_its_owner() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let uid = Command::new("id").arg("-u").output().unwrap().stdout;
    if String::from_utf8_lossy(&uid).trim() != "0" {
        assert!(
            std::env::var_os("CI").is_none(),
            "this test needs root, to own a file the unprivileged user writes"
        );
        eprintln!("skipped: not root, so no file can belong to another user");
        return;
    }
    let (_guard, dir) = workdir();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let file = dir.join("team.txt");
    std::fs::write(&file, "old\n").unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o666)).unwrap();
    let inode = std::fs::metadata(&file).unwrap().ino();

    let written = tool_unprivileged(
        &["write", r#"{"path": "team.txt", "content": "new\n"}"#],
        &dir,
    );
    assert_eq!(written["isError"], false, "{written}");
    let edited = tool_unprivileged(
        &[
            "edit",
            r#"{"path": "team.txt", "edits": [{"oldText": "new", "newText": "newer"}]}"#,
        ],
        &dir,
    );
    assert_eq!(edited["isError"], false, "{edited}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "newer\n");
    let meta = std::fs::metadata(&file).unwrap();
    assert_eq!((meta.uid(), meta.gid(), meta.ino()), (0, 0, inode));
}

/// Without `$HOME` (cron, systemd units, some containers) `~` is the home
/// the password database gives the user, as Node's `os.homedir()` gives
/// Pi; it was taken for a folder named `~` in the working directory, which
/// `write` then created.
#[test]
fn without_home_set_a_tilde_is_the_users_home_from_the_password_database() {
    let (_guard, dir) = workdir();
    let uid = Command::new("id").arg("-u").output().unwrap().stdout;
    let entry = Command::new("getent")
        .args(["passwd", String::from_utf8_lossy(&uid).trim()])
        .output()
        .unwrap()
        .stdout;
    let entry = String::from_utf8(entry).unwrap();
    let home = entry.trim_end().split(':').nth(5).expect("a passwd entry");
    for unset in [None, Some("")] {
        let mut command = Command::new(BIN);
        match unset {
            None => command.env_remove("HOME"),
            Some(empty) => command.env("HOME", empty),
        };
        let output = command
            .args(["tool", "read", r#"{"path": "~/no-such-file-here"}"#])
            .current_dir(&dir)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let result: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
        assert_eq!(
            result["content"][0]["text"],
            format!("ENOENT: no such file or directory, access '{home}/no-such-file-here'"),
            "HOME {unset:?}"
        );
    }
}

/// `coding-agent tool ARGS` in `dir` as a user without root's rights (root
/// passes every permission check): as root through `setpriv` as nobody,
/// as anyone else as themselves. Its JSON result.
fn tool_unprivileged(args: &[&str], dir: &Path) -> serde_json::Value {
    let mut command = unprivileged::command(BIN);
    let output = command
        .arg("tool")
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .expect("setpriv (util-linux) runs");
    serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&output.stderr)))
}

/// Permissions the user lacks: a search root that cannot be read is an
/// error, not "no matches" (the walk skipped it as it skips an unreadable
/// entry below); a file the user may write in a directory they may not is
/// written in place, as Pi writes (no temporary file can be made there).
#[test]
fn unreadable_search_roots_fail_and_a_writable_file_in_a_closed_directory_is_written() {
    use std::os::unix::fs::PermissionsExt;
    let mode = |path: &Path, mode: u32| {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    };
    let (_guard, dir) = workdir();
    mode(&dir, 0o755);
    let closed = dir.join("closed");
    std::fs::create_dir(&closed).unwrap();
    std::fs::write(closed.join("u.txt"), "needle\n").unwrap();
    mode(&closed, 0o000);
    let private = dir.join("private.txt");
    std::fs::write(&private, "needle\n").unwrap();
    mode(&private, 0o000);
    let shared = dir.join("shared");
    std::fs::create_dir(&shared).unwrap();
    std::fs::write(shared.join("notes.txt"), "old\n").unwrap();
    mode(&shared.join("notes.txt"), 0o666);
    mode(&shared, 0o555);

    let refused = |tool: &str, args: serde_json::Value| {
        let result = tool_unprivileged(&[tool, &args.to_string()], &dir);
        assert_eq!(result["isError"], true, "{result}");
        result["content"][0]["text"].as_str().unwrap().to_owned()
    };
    let scandir = format!("EACCES: permission denied, scandir '{}'", closed.display());
    assert_eq!(
        refused(
            "grep",
            serde_json::json!({"pattern": "needle", "path": "closed"})
        ),
        scandir
    );
    assert_eq!(
        refused(
            "find",
            serde_json::json!({"pattern": "*", "path": "closed"})
        ),
        scandir
    );
    assert_eq!(
        refused(
            "grep",
            serde_json::json!({"pattern": "needle", "path": "private.txt"})
        ),
        format!("EACCES: permission denied, open '{}'", private.display())
    );
    // Below the root they are skipped, and said: not a bare "no matches".
    let searched = |tool: &str, args: serde_json::Value| {
        let result = tool_unprivileged(&[tool, &args.to_string()], &dir);
        assert_eq!(result["isError"], false, "{result}");
        result["content"][0]["text"].as_str().unwrap().to_owned()
    };
    let skipped = "[2 paths could not be read and were skipped: closed, private.txt]";
    assert_eq!(
        searched("grep", serde_json::json!({"pattern": "needle"})),
        format!("No matches found\n\n{skipped}")
    );
    assert_eq!(
        searched("find", serde_json::json!({"pattern": "u.txt"})),
        "No files found matching pattern\n\n[1 path could not be read and was skipped: closed]"
    );

    let written = tool_unprivileged(
        &[
            "write",
            r#"{"path": "shared/notes.txt", "content": "new\n"}"#,
        ],
        &dir,
    );
    assert_eq!(written["isError"], false, "{written}");
    assert_eq!(
        std::fs::read_to_string(shared.join("notes.txt")).unwrap(),
        "new\n"
    );
    mode(&closed, 0o755);
    mode(&shared, 0o755);
}
