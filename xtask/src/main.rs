//! `cargo xtask`: project tasks that need more than one cargo command.
//!
//! - `ci`: everything CI checks (`.ci/run` calls it): fmt, clippy, the layering
//!   check, docs without warnings and the tests (see `ci.rs`).
//! - `check-layers`: the crate layering rules (see `layers.rs`).
//! - `deny`: cargo-deny's licenses, bans and sources checks, offline (see `deny.rs`).
//! - `dist`: the release archive for this host (see `dist.rs`).
//! - `package`: `cargo package` for each library crate (see `package.rs`).
//! - `e2e-local`: the opt-in tier against a real local model (see `e2e_local.rs`).
//! - `bench`: end-to-end figures of the built-in tools against a baseline
//!   measured in the same run (see `bench.rs`).
//! - `bench-session`: the per-turn cost of a 300-turn session against a
//!   loopback model (see `long_session.rs`).
//!
//! Every task says what it does as it goes and exits non-zero with the reason
//! when it fails; a command line it does not understand prints the usage and
//! exits with status 2.

mod bench;
mod ci;
mod deny;
mod dist;
mod e2e_local;
mod layers;
mod long_session;
mod package;
mod workspace;

use std::path::PathBuf;
use std::process::{Command, ExitCode};

use anyhow::{Context, Result, bail};

/// What `cargo xtask` prints for `help` and for a command line it cannot parse.
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

/// A task with its options, as read from the command line.
#[derive(Debug, PartialEq, Eq)]
enum Task {
    Ci,
    CheckLayers,
    Deny,
    Dist,
    Package { allow_dirty: bool },
    Bench { quick: bool },
    BenchSession { quick: bool },
    E2eLocal { small: bool },
    Help,
}

/// Reads the command line (without the program name); `Err` says what is wrong
/// with it.
fn parse(args: &[String]) -> Result<Task, String> {
    let Some((task, options)) = args.split_first() else {
        return Err("no task given".into());
    };
    let no_options = |parsed: Task| match options.first() {
        None => Ok(parsed),
        Some(option) => Err(format!("`{task}` takes no option `{option}`")),
    };
    match task.as_str() {
        "ci" => no_options(Task::Ci),
        "check-layers" => no_options(Task::CheckLayers),
        "deny" => no_options(Task::Deny),
        "dist" => no_options(Task::Dist),
        "package" => optional_flag("package", options, "--allow-dirty")
            .map(|allow_dirty| Task::Package { allow_dirty }),
        "help" | "--help" | "-h" => no_options(Task::Help),
        "bench" => optional_flag("bench", options, "--quick").map(|quick| Task::Bench { quick }),
        "bench-session" => optional_flag("bench-session", options, "--quick")
            .map(|quick| Task::BenchSession { quick }),
        "e2e-local" => {
            optional_flag("e2e-local", options, "--small").map(|small| Task::E2eLocal { small })
        }
        other => Err(format!("unknown task `{other}`")),
    }
}

/// Whether the options of `task` are exactly `flag` (true) or nothing (false).
fn optional_flag(task: &str, options: &[String], flag: &str) -> Result<bool, String> {
    match options {
        [] => Ok(false),
        [only] if only == flag => Ok(true),
        _ => match options.iter().find(|option| *option != flag) {
            Some(other) => Err(format!("`{task}` takes no option `{other}`")),
            None => Err(format!("`{task}` takes `{flag}` at most once")),
        },
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let task = match parse(&args) {
        Ok(task) => task,
        Err(problem) => {
            eprintln!("error: {problem}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let outcome = match task {
        Task::Ci => ci::run(),
        Task::CheckLayers => layers::run(),
        Task::Deny => deny::run(),
        Task::Dist => dist::run(),
        Task::Package { allow_dirty } => package::run(allow_dirty),
        Task::Bench { quick } => bench::run(quick),
        Task::BenchSession { quick } => long_session::run(quick),
        Task::E2eLocal { small } => e2e_local::run(small),
        Task::Help => {
            print!("{USAGE}");
            Ok(())
        }
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::FAILURE
        }
    }
}

/// The workspace root (the parent of this crate's directory).
pub(crate) fn workspace_root() -> PathBuf {
    let manifest_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    manifest_dir
        .parent()
        .map(PathBuf::from)
        .unwrap_or(manifest_dir)
}

/// The cargo that runs us (`$CARGO`), so nested builds use the same toolchain.
pub(crate) fn cargo_command() -> Command {
    Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
}

/// Runs `cargo` with `args` in the workspace root and fails if it fails.
pub(crate) fn cargo(args: &[&str]) -> Result<()> {
    let mut command = cargo_command();
    command.args(args).current_dir(workspace_root());
    run_command(&mut command)
}

/// Runs `command` (its output goes to ours), printing it first; fails with the
/// command line and status if it fails.
pub(crate) fn run_command(command: &mut Command) -> Result<()> {
    let line = command_line(command);
    eprintln!("$ {line}");
    let status = command
        .status()
        .with_context(|| format!("could not start `{line}`"))?;
    if !status.success() {
        bail!("`{line}` failed ({status})");
    }
    Ok(())
}

/// Runs `command` and returns its stdout; fails with the command line, status
/// and stderr if it fails.
pub(crate) fn command_output(command: &mut Command) -> Result<String> {
    let line = command_line(command);
    let output = command
        .output()
        .with_context(|| format!("could not start `{line}`"))?;
    if !output.status.success() {
        bail!(
            "`{line}` failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim_end()
        );
    }
    String::from_utf8(output.stdout).with_context(|| format!("`{line}` printed non-UTF-8 output"))
}

/// `command` as a shell-like line for messages (the program's file name, not its path).
fn command_line(command: &Command) -> String {
    let program = std::path::Path::new(command.get_program())
        .file_name()
        .unwrap_or(command.get_program())
        .to_string_lossy()
        .into_owned();
    std::iter::once(program)
        .chain(command.get_args().map(|a| a.to_string_lossy().into_owned()))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(line: &str) -> Vec<String> {
        line.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn every_task_parses_without_options() {
        assert_eq!(parse(&args("ci")), Ok(Task::Ci));
        assert_eq!(parse(&args("check-layers")), Ok(Task::CheckLayers));
        assert_eq!(parse(&args("deny")), Ok(Task::Deny));
        assert_eq!(parse(&args("dist")), Ok(Task::Dist));
        assert_eq!(
            parse(&args("package")),
            Ok(Task::Package { allow_dirty: false })
        );
        assert_eq!(parse(&args("bench")), Ok(Task::Bench { quick: false }));
        assert_eq!(
            parse(&args("bench-session")),
            Ok(Task::BenchSession { quick: false })
        );
        assert_eq!(
            parse(&args("e2e-local")),
            Ok(Task::E2eLocal { small: false })
        );
        assert_eq!(parse(&args("help")), Ok(Task::Help));
    }

    #[test]
    fn e2e_local_takes_small_once() {
        assert_eq!(
            parse(&args("e2e-local --small")),
            Ok(Task::E2eLocal { small: true })
        );
        assert!(parse(&args("e2e-local --big")).is_err());
    }

    #[test]
    fn bench_takes_quick_once() {
        assert_eq!(
            parse(&args("bench --quick")),
            Ok(Task::Bench { quick: true })
        );
        assert_eq!(
            parse(&args("bench --quick --quick")),
            Err("`bench` takes `--quick` at most once".into())
        );
        assert_eq!(
            parse(&args("bench --fast")),
            Err("`bench` takes no option `--fast`".into())
        );
    }

    #[test]
    fn package_takes_allow_dirty_once() {
        assert_eq!(
            parse(&args("package --allow-dirty")),
            Ok(Task::Package { allow_dirty: true })
        );
        assert_eq!(
            parse(&args("package --allow-dirty --allow-dirty")),
            Err("`package` takes `--allow-dirty` at most once".into())
        );
        assert_eq!(
            parse(&args("package --no-verify")),
            Err("`package` takes no option `--no-verify`".into())
        );
    }

    #[test]
    fn options_on_tasks_without_options_are_refused() {
        assert_eq!(
            parse(&args("dist --allow-dirty")),
            Err("`dist` takes no option `--allow-dirty`".into())
        );
        assert_eq!(
            parse(&args("ci --quick")),
            Err("`ci` takes no option `--quick`".into())
        );
    }

    #[test]
    fn unknown_or_missing_tasks_are_refused() {
        assert_eq!(
            parse(&args("publish")),
            Err("unknown task `publish`".into())
        );
        assert_eq!(parse(&[]), Err("no task given".into()));
    }
}
