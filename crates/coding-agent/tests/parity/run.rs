//! Running one call through the real binary in a case's root, with the
//! case's environment, and a generous time limit so a hung tool fails the
//! case instead of the whole run.

use std::io::Read;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use super::layout::Layout;
use super::remote_support::{Sshd, cache_env};

const BIN: &str = env!("CARGO_BIN_EXE_coding-agent");

/// How long one call may take (Pi's slowest fixture sleeps a few seconds).
const CALL_LIMIT: Duration = Duration::from_secs(120);

/// How long stdout may stay open after the binary exits (a background child
/// that inherited it).
const DRAIN_LIMIT: Duration = Duration::from_secs(10);

/// What the binary did.
pub struct Run {
    pub status: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

/// `coding-agent tool TOOL ARGS_JSON --cwd work/` with `HOME`, `TMPDIR`,
/// `TZ=UTC` and `env` set for the child only.
pub fn run_tool(
    tool: &str,
    args_json: &str,
    layout: &Layout,
    env: &[(String, String)],
) -> Result<Run, String> {
    run_with(tool, args_json, layout, env, &[])
}

/// [`run_tool`] through `--remote` on `sshd`: the same environment is set
/// for the helper there with ssh's `SetEnv`.
pub fn run_tool_remotely(
    tool: &str,
    args_json: &str,
    layout: &Layout,
    env: &[(String, String)],
    sshd: &Sshd,
) -> Result<Run, String> {
    let mut remote_env = vec![
        ("HOME".to_owned(), layout.home.display().to_string()),
        (
            "XDG_CONFIG_HOME".to_owned(),
            layout.home.join(".config").display().to_string(),
        ),
        ("TMPDIR".to_owned(), layout.tmp.display().to_string()),
        ("TZ".to_owned(), "UTC".to_owned()),
    ];
    remote_env.extend(env.iter().cloned());
    let set_env = remote_env
        .iter()
        .map(|(k, v)| format!("\"{k}={v}\""))
        .collect::<Vec<_>>()
        .join(" ");
    let mut flags = sshd.flags(&layout.work);
    flags.extend(["--ssh-option".to_owned(), format!("SetEnv={set_env}")]);
    // sshd sets HOME from the account, not SetEnv: the remote `~` is the
    // login's home, outside the remote sandbox's roots, where the local
    // run's (in the layout, under the temp directory) is inside them. The
    // sandbox is off so the two answer the same.
    flags.extend(["--sandbox".to_owned(), "off".to_owned()]);
    let (cache_var, cache) = cache_env();
    let env = [env, &[(cache_var.to_owned(), cache.display().to_string())]].concat();
    run_with(tool, args_json, layout, &env, &flags)
}

fn run_with(
    tool: &str,
    args_json: &str,
    layout: &Layout,
    env: &[(String, String)],
    extra: &[String],
) -> Result<Run, String> {
    let mut child = Command::new(BIN)
        .arg("tool")
        .arg(tool)
        .arg(args_json)
        .arg("--cwd")
        .arg(&layout.work)
        .args(extra)
        .current_dir(&layout.work)
        .env("HOME", &layout.home)
        .env("XDG_CONFIG_HOME", layout.home.join(".config"))
        .env("TMPDIR", &layout.tmp)
        .env("TZ", "UTC")
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start {BIN}: {e}"))?;
    let stdout = drain(child.stdout.take());
    let stderr = drain(child.stderr.take());

    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if started.elapsed() > CALL_LIMIT => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("no answer within {CALL_LIMIT:?}"));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(10)),
            Err(e) => return Err(format!("waiting for the binary: {e}")),
        }
    };
    let collect = |output: mpsc::Receiver<Vec<u8>>, stream: &str| {
        output
            .recv_timeout(DRAIN_LIMIT)
            .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
            .map_err(|_| format!("{stream} still open {DRAIN_LIMIT:?} after the binary exited"))
    };
    Ok(Run {
        status: status.code(),
        stdout: collect(stdout, "stdout")?,
        stderr: collect(stderr, "stderr")?,
    })
}

/// Reads a pipe to its end on a thread, so a full pipe never blocks the child.
fn drain(pipe: Option<impl Read + Send + 'static>) -> mpsc::Receiver<Vec<u8>> {
    let (sender, receiver) = mpsc::channel();
    if let Some(mut pipe) = pipe {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = pipe.read_to_end(&mut bytes);
            let _ = sender.send(bytes);
        });
    }
    receiver
}
