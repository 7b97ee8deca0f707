//! The sandbox helper: a program that restricts itself, then becomes the
//! command. Restricting must happen in the process that runs the command,
//! between fork and exec; doing it there from Rust needs `unsafe`
//! (`pre_exec`), so instead the command is started as
//! `HELPER __sandbox POLICY_JSON -- PROGRAM ARGS...`, where `HELPER` is a
//! binary whose `main` calls [`run_if_invoked`] first: the `coding-agent`
//! binary, or a library user's own. The helper applies the policy to itself
//! and `exec`s the program, which keeps the helper's pid (so killing the
//! process group still kills the command) and inherits the restriction, as
//! does everything it starts.

use std::ffi::OsString;
use std::io::Write;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::ExitCode;

use super::kernel::restrict_current_thread;
use super::policy::SandboxPolicy;
use crate::tools::bash::ops::Launcher;

/// The hidden first argument that makes a binary the sandbox helper.
pub const HELPER_ARG: &str = "__sandbox";

/// The environment variable a sandboxed command sees: the sandbox's mode.
pub const SANDBOX_ENV: &str = "CODING_AGENT_SANDBOX";

/// The exit status when the sandbox cannot be applied (the command never ran).
pub const EXIT_SANDBOX_FAILED: u8 = 126;

/// The exit status when the sandboxed program cannot be started (as shells do).
pub const EXIT_NOT_STARTED: u8 = 127;

/// This process's own image, to start the sandbox helper from: on Linux
/// `/proc/self/exe`, which opens the running image whatever is at its path
/// now. Its path could be in a writable root (`/tmp`, the workspace of a
/// developer running `./target/release/coding-agent`): a sandboxed command
/// that put another program there had the next command started through it,
/// unsandboxed. (A remote helper whose file another session's upload
/// replaced runs on the same way.)
pub fn running_executable() -> std::io::Result<std::path::PathBuf> {
    if cfg!(target_os = "linux") {
        Ok(std::path::PathBuf::from("/proc/self/exe"))
    } else {
        std::env::current_exe()
    }
}

/// How to start a program under `policy` through `helper`: the launcher
/// whose command line, followed by the program and its arguments, runs it
/// sandboxed.
pub fn helper_launcher(helper: &Path, policy: &SandboxPolicy) -> Launcher {
    // Serialising a struct of paths, bools and a unit enum cannot fail.
    let policy = serde_json::to_string(policy).unwrap_or_default();
    Launcher {
        program: helper.to_path_buf(),
        args: vec![HELPER_ARG.into(), policy.into(), "--".into()],
    }
}

/// Call first in `main`: when this process was started as the sandbox
/// helper, it restricts itself and becomes the command, and this returns
/// only the exit status of a failure; otherwise it returns `None` at once.
pub fn run_if_invoked() -> Option<ExitCode> {
    let mut args = std::env::args_os().skip(1);
    if args.next()? != HELPER_ARG {
        return None;
    }
    Some(match run_helper(args.collect()) {
        Ok(never) => match never {},
        Err((status, message)) => {
            // Dropped when stderr cannot take it (the tool's pipe already
            // gone, `2>/dev/full`): `eprintln!` panicked there, and the
            // command ended with 101 instead of this status.
            let _ = writeln!(std::io::stderr(), "coding-agent sandbox: {message}");
            ExitCode::from(status)
        }
    })
}

/// Restricts this process to the policy in `args` and execs the command;
/// returns only on failure, with the exit status and what went wrong.
fn run_helper(args: Vec<OsString>) -> Result<std::convert::Infallible, (u8, String)> {
    let usage = || {
        (
            EXIT_SANDBOX_FAILED,
            format!("usage: {HELPER_ARG} POLICY_JSON -- PROGRAM [ARGS...]"),
        )
    };
    let [policy, separator, program, rest @ ..] = args.as_slice() else {
        return Err(usage());
    };
    if separator != "--" {
        return Err(usage());
    }
    let policy: SandboxPolicy = policy
        .to_str()
        .and_then(|json| serde_json::from_str(json).ok())
        .ok_or_else(usage)?;
    restrict_current_thread(&policy).map_err(|error| {
        (
            EXIT_SANDBOX_FAILED,
            format!("{error}; the command did not run. Run without the sandbox (--sandbox off) to run it unrestricted"),
        )
    })?;
    let mut command = std::process::Command::new(program);
    command.args(rest).env(SANDBOX_ENV, policy.mode.as_str());
    let error = command.exec();
    Err((
        EXIT_NOT_STARTED,
        format!("cannot run {}: {error}", Path::new(program).display()),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    use crate::sandbox::policy::SandboxMode;

    #[test]
    fn the_launcher_carries_the_policy() {
        let policy = SandboxPolicy {
            mode: SandboxMode::WorkspaceWrite,
            writable_roots: vec![PathBuf::from("/w")],
            allow_network: false,
        };
        assert_eq!(
            helper_launcher(Path::new("/bin/coding-agent"), &policy),
            Launcher {
                program: PathBuf::from("/bin/coding-agent"),
                args: [
                    "__sandbox",
                    r#"{"mode":"workspace-write","writableRoots":["/w"],"allowNetwork":false}"#,
                    "--",
                ]
                .map(OsString::from)
                .to_vec(),
            }
        );
    }

    #[test]
    fn bad_helper_arguments_are_refused_before_anything_runs() {
        let usage = format!("usage: {HELPER_ARG} POLICY_JSON -- PROGRAM [ARGS...]");
        for args in [
            vec![],
            vec!["{}", "--", "/bin/true"],
            vec![
                r#"{"mode":"off","writableRoots":[],"allowNetwork":true}"#,
                "-x",
                "/bin/true",
            ],
        ] {
            let args = args.into_iter().map(OsString::from).collect();
            assert_eq!(
                run_helper(args).map(|never| match never {}),
                Err((EXIT_SANDBOX_FAILED, usage.clone()))
            );
        }
    }
}
