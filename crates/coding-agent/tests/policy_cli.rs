//! `coding-agent policy check`, run as a real process: one JSON verdict on
//! stdout, exit 0, settings and flags applied, and nothing run.

// Helpers outside `#[test]` functions set up fixtures; a failed setup should panic.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_coding-agent");

fn check(args: &[&str], cwd: &Path, agent_dir: &Path) -> Output {
    check_command(args, cwd, agent_dir).output().unwrap()
}

/// The `policy check` process [`check`] runs, to add to.
fn check_command(args: &[&str], cwd: &Path, agent_dir: &Path) -> Command {
    let mut command = Command::new(BIN);
    command
        .arg("policy")
        .arg("check")
        .args(args)
        .current_dir(cwd)
        .env("CODING_AGENT_DIR", agent_dir)
        .env("HOME", agent_dir)
        .stdin(Stdio::null());
    command
}

fn verdict(output: &Output) -> Value {
    assert_eq!(
        output.status.code(),
        Some(0),
        "stderr: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8(output.stdout.clone()).unwrap();
    assert_eq!(stdout.lines().count(), 1, "{stdout}");
    serde_json::from_str(&stdout).unwrap()
}

#[test]
fn prints_the_verdict_and_runs_nothing() {
    let work = tempfile::tempdir().unwrap();
    let agent = tempfile::tempdir().unwrap();
    let command = json!({"command": "touch made-by-check"}).to_string();
    let out = check(
        &["bash", &command, "--permission-mode", "bypass"],
        work.path(),
        agent.path(),
    );
    assert_eq!(
        verdict(&out),
        json!({"decision": "allow", "reason": "bypass mode: nothing is asked", "rule": null})
    );
    assert!(!work.path().join("made-by-check").exists());
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "Warning: permission mode bypass: no call is asked about and bash is not sandboxed; deny rules and the always-deny list still apply\n"
    );
}

/// The policy's notices are warnings like a session's: `CODING_AGENT_LOG`
/// filters them. They were printed past it, headed `coding-agent:`.
#[test]
fn coding_agent_log_filters_the_notices() {
    let work = tempfile::tempdir().unwrap();
    let agent = tempfile::tempdir().unwrap();
    let command = json!({"command": "ls"}).to_string();
    let out = check_command(
        &["bash", &command, "--permission-mode", "bypass"],
        work.path(),
        agent.path(),
    )
    .env("CODING_AGENT_LOG", "error")
    .output()
    .unwrap();
    assert_eq!(verdict(&out)["decision"], "allow");
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
}

#[test]
fn settings_rules_flags_and_cwd_decide() {
    let work = tempfile::tempdir().unwrap();
    let agent = tempfile::tempdir().unwrap();
    std::fs::write(
        agent.path().join("settings.json"),
        json!({"permissions": {"allow": ["bash(cargo test:*)"]}}).to_string(),
    )
    .unwrap();
    let cwd = work.path().to_str().unwrap();
    let test = json!({"command": "cargo test --all"}).to_string();
    assert_eq!(
        verdict(&check(
            &["bash", &test, "--cwd", cwd],
            agent.path(),
            agent.path()
        )),
        json!({"decision": "allow", "reason": "`cargo test --all` is allowed by the rule `bash(cargo test:*)`", "rule": "bash(cargo test:*)"})
    );
    assert_eq!(
        verdict(&check(
            &["bash", &test, "--deny", "bash(cargo *)"],
            work.path(),
            agent.path()
        )),
        json!({"decision": "deny", "reason": "`cargo test --all` is denied by the rule `bash(cargo *)`", "rule": "bash(cargo *)"})
    );
    let home = json!({"command": "rm -rf \"$HOME\""}).to_string();
    assert_eq!(
        verdict(&check(&["bash", &home], work.path(), agent.path()))["decision"],
        "deny"
    );
    let outside = json!({"path": "/etc/motd", "content": "x"}).to_string();
    assert_eq!(
        verdict(&check(
            &["write", &outside, "--permission-mode", "plan"],
            work.path(),
            agent.path()
        )),
        json!({"decision": "deny", "reason": "plan mode is read-only: writing `/etc/motd` is not allowed", "rule": null})
    );
    // A grep of a folder holding a file a deny rule guards runs without it:
    // the verdict says what it leaves out.
    let grep = json!({"pattern": "KEY"}).to_string();
    let real = work.path().canonicalize().unwrap();
    let env = real.join(".env").display().to_string();
    assert_eq!(
        verdict(&check(
            &["grep", &grep, "--deny", "read(.env)"],
            &real,
            agent.path()
        )),
        json!({"decision": "allow",
               "reason": "grep only reads; it leaves out the files `read(.env)` guards",
               "rule": null, "leftOut": [env, format!("{env}/**")]})
    );
}

#[test]
fn a_bad_rule_is_a_usage_error() {
    let work = tempfile::tempdir().unwrap();
    let out = check(
        &["bash", "{\"command\":\"ls\"}", "--allow", "bash(ls"],
        work.path(),
        work.path(),
    );
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "coding-agent: invalid permission rule `bash(ls`: a `(` needs a closing `)` at the end\n"
    );
}

/// 3000 nested braces overflowed the parser's stack and killed the
/// process (exit 134): a line nested that deep gets a verdict instead.
#[test]
fn a_line_nested_too_deep_gets_a_verdict_not_a_crash() {
    let work = tempfile::tempdir().unwrap();
    let braces = format!("{}ls{}", "{ ".repeat(3000), "; }".repeat(3000));
    let arithmetic = format!("echo $(({}", "(".repeat(20000));
    for line in [braces, arithmetic] {
        let command = json!({ "command": line }).to_string();
        let out = check(&["bash", &command], work.path(), work.path());
        let verdict = verdict(&out);
        assert_eq!(verdict["decision"], "ask", "{verdict}");
        assert!(
            verdict["reason"]
                .as_str()
                .is_some_and(|reason| reason.contains("levels deep")),
            "{verdict}"
        );
    }
}

/// With `HOME` unset, empty or relative (and no `CODING_AGENT_DIR`), the
/// agent directory was `./.coding-agent`: a repository's own settings were
/// read as the user's, so its `allow` rules and `defaultMode: bypass`
/// applied with no trust question. The home is now the password
/// database's (this reads, and never writes, the real user's agent
/// directory, which trusts no temporary folder).
#[test]
fn a_missing_home_does_not_make_a_projects_settings_the_users() {
    let work = tempfile::tempdir().unwrap();
    std::fs::create_dir(work.path().join(".coding-agent")).unwrap();
    std::fs::write(
        work.path().join(".coding-agent/settings.json"),
        json!({"permissions": {"allow": ["bash(touch:*)"], "defaultMode": "bypass"}}).to_string(),
    )
    .unwrap();
    let touch = json!({"command": "touch /etc/x"}).to_string();
    for home in [None, Some(""), Some("."), Some(".coding-agent")] {
        let mut command = Command::new(BIN);
        command
            .args(["policy", "check", "bash", &touch])
            .current_dir(work.path())
            .env_remove("CODING_AGENT_DIR")
            .stdin(Stdio::null());
        match home {
            Some(home) => command.env("HOME", home),
            None => command.env_remove("HOME"),
        };
        let out = command.output().unwrap();
        assert_eq!(verdict(&out)["decision"], "ask", "HOME={home:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("is not trusted, so only its deny and ask rules apply"),
            "HOME={home:?}: {stderr}"
        );
    }
}
