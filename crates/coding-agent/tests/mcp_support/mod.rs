//! Real MCP servers and clients from the package registries (`.ci/run`
//! installs them): `mcp-server-everything` (npm), `mcp-server-time` and the
//! Python `mcp` SDK (PyPI).

#![allow(dead_code)]

use std::path::Path;
use std::process::Command;

/// Whether `program` runs. Missing, a test is skipped with a note, except
/// under `CI=true`, where a missing tool fails the test: CI must run them.
pub fn installed(program: &str, version_args: &[&str]) -> bool {
    let found = Command::new(program)
        .args(version_args)
        .output()
        .is_ok_and(|output| output.status.success());
    if !found {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "{program} is not installed (CI=true): run .ci/run's installs"
        );
        eprintln!("{program} is not installed: skipping");
    }
    found
}

/// Whether the Python `mcp` SDK can be imported.
pub fn python_mcp_installed() -> bool {
    installed("python3", &["-c", "import mcp.client.stdio"])
}

/// Whether `mcp-server-everything` is on PATH (it has no `--version`; `node`
/// must run and the package must be there).
pub fn everything_installed() -> bool {
    installed("sh", &["-c", "command -v mcp-server-everything"])
}

/// Whether `mcp-server-time` is on PATH.
pub fn time_installed() -> bool {
    installed("sh", &["-c", "command -v mcp-server-time"])
}

/// A shell command that runs `server` with its stdin copied to `log`: what
/// the client sent, to check cancellations.
pub fn recording_stdin(server: &str, log: &Path) -> String {
    format!("tee -a '{}' | {server}", log.display())
}

/// A shell command that runs `server` in its own process, whose pid it
/// writes to `pid` first (so a test can kill it).
pub fn writing_pid(server: &str, pid: &Path) -> String {
    format!("echo $$ > '{}'; exec {server}", pid.display())
}
