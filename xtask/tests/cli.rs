//! The command line of `cargo xtask`: what a mistyped task or option gets.

// Test helpers outside #[test] functions; a panic is the failure report.
#![allow(clippy::unwrap_used)]

use std::process::Command;

/// Runs the xtask binary with `args`: (exit code, stdout, stderr).
fn xtask(args: &[&str]) -> (Option<i32>, String, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args(args)
        .output()
        .unwrap();
    (
        output.status.code(),
        String::from_utf8(output.stdout).unwrap(),
        String::from_utf8(output.stderr).unwrap(),
    )
}

const USAGE: &str = "\
usage: cargo xtask <task>

tasks:
  ci               what CI checks: fmt, clippy -D warnings, the layering check,
                   cargo doc without warnings, the tests
  check-layers     the crate layering rules (agent-ai <- agent-core <- coding-agent)
  deny             cargo-deny's licenses, bans and sources checks against deny.toml,
                   offline (advisories too when a local advisory database exists)
  dist             target/dist/coding-agent-<version>-<target>.tar.gz and its .sha256;
                   refuses on a dirty working tree or disagreeing crate versions
  package [--allow-dirty]
                   cargo package (dry run, offline) for agent-ai, agent-core and
                   coding-agent, after checking their crates.io metadata
  bench [--quick]  end-to-end figures of the built-in tools (long; needs disk space)
  bench-session [--quick]
                   the client's time per turn at turns 30 and 300 of one session against
                   a loopback model that answers at once (60 turns with --quick)
  e2e-local [--small]
                   the opt-in tier against a real local model (llama.cpp's server and
                   Qwen2.5-Coder 1.5B, or 0.5B with --small; built and cached once)
  help             this text
";

fn usage_error(problem: &str) -> (Option<i32>, String, String) {
    (
        Some(2),
        String::new(),
        format!("error: {problem}\n\n{USAGE}\n"),
    )
}

#[test]
fn an_unknown_task_prints_the_usage_and_exits_2() {
    assert_eq!(xtask(&["publish"]), usage_error("unknown task `publish`"));
}

#[test]
fn no_task_prints_the_usage_and_exits_2() {
    assert_eq!(xtask(&[]), usage_error("no task given"));
}

#[test]
fn an_unknown_option_prints_the_usage_and_exits_2() {
    assert_eq!(
        xtask(&["dist", "--allow-dirty"]),
        usage_error("`dist` takes no option `--allow-dirty`")
    );
    assert_eq!(
        xtask(&["deny", "--offline"]),
        usage_error("`deny` takes no option `--offline`")
    );
    assert_eq!(
        xtask(&["ci", "--quick"]),
        usage_error("`ci` takes no option `--quick`")
    );
    assert_eq!(
        xtask(&["package", "--no-verify"]),
        usage_error("`package` takes no option `--no-verify`")
    );
    assert_eq!(
        xtask(&["bench", "--quick", "--fast"]),
        usage_error("`bench` takes no option `--fast`")
    );
}

#[test]
fn help_prints_the_usage_and_succeeds() {
    assert_eq!(xtask(&["help"]), (Some(0), USAGE.to_owned(), String::new()));
}
