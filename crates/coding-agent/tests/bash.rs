//! The `bash` tool: Pi's test cases (docs/tool-behaviour.md §4.4), the parity
//! fixtures `bash_*.json`, and where we go beyond Pi (DEVIATIONS #7, #8; process
//! groups, bounded memory, background children).

// Test helpers outside `#[test]` functions panic on purpose, like the tests themselves.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use agent_core::{AgentToolResult, ToolError, UpdateSink};
use coding_agent::tools::bash::ops::{
    BashOperations, ExecError, ExecOptions, ExitStatus, LocalBashOperations,
};
use coding_agent::tools::bash::{BashTool, BashToolOptions, SpawnContext};
use coding_agent::{ToolContext, ToolDefinition, Typed};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// A fresh root with `work/` (the cwd), `home/` (`$HOME`) and `tmp/` (where
/// full-output files go), as the parity README lays fixtures out.
struct Fixture {
    _root: tempfile::TempDir,
    work: PathBuf,
    home: PathBuf,
    tmp: PathBuf,
}

impl Fixture {
    fn new() -> Self {
        let root = tempfile::tempdir().unwrap();
        let [work, home, tmp] = ["work", "home", "tmp"].map(|d| root.path().join(d));
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

    fn options(&self) -> BashToolOptions {
        let home = self.home.to_string_lossy().into_owned();
        BashToolOptions {
            temp_dir: Some(self.tmp.clone()),
            spawn_hook: Some(Arc::new(move |mut spawn: SpawnContext| {
                spawn.env.push(("HOME".into(), home.clone()));
                spawn
            })),
            ..BashToolOptions::default()
        }
    }

    fn tool(&self) -> Typed<BashTool> {
        self.tool_with(self.options())
    }

    fn tool_with(&self, options: BashToolOptions) -> Typed<BashTool> {
        Typed::new(BashTool {
            ops: Arc::new(LocalBashOperations::new()),
            options,
        })
    }

    fn ctx(&self) -> ToolContext {
        ToolContext::new(&self.work)
    }

    async fn run(&self, args: Value) -> Result<AgentToolResult, ToolError> {
        run_tool(&self.tool(), self.ctx(), args).await.0
    }

    fn tmp_files(&self) -> Vec<PathBuf> {
        std::fs::read_dir(&self.tmp)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect()
    }
}

/// Runs the tool (failing the test instead of hanging if it never returns)
/// and collects its progress updates.
async fn run_tool(
    tool: &Typed<BashTool>,
    ctx: ToolContext,
    args: Value,
) -> (Result<AgentToolResult, ToolError>, Vec<AgentToolResult>) {
    let (sink, mut receiver) = UpdateSink::channel();
    let ctx = ToolContext {
        updates: sink,
        ..ctx
    };
    let result = tokio::time::timeout(Duration::from_secs(20), tool.execute(args, ctx))
        .await
        .expect("the bash tool did not return");
    let mut updates = Vec::new();
    while let Ok(update) = receiver.try_recv() {
        updates.push(update);
    }
    (result, updates)
}

fn text(result: &AgentToolResult) -> &str {
    assert_eq!(result.content.len(), 1);
    result.content[0].as_text().unwrap()
}

fn ok_text(result: Result<AgentToolResult, ToolError>) -> String {
    let result = result.unwrap();
    assert_eq!(result.details, None);
    text(&result).to_owned()
}

fn err_text(result: Result<AgentToolResult, ToolError>) -> String {
    result.unwrap_err().message().to_owned()
}

/// Processes of process group `pgid` that are still running (zombies are dead).
fn live_group_members(pgid: i32) -> Vec<i32> {
    let mut members = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // pid (comm) state ppid pgrp ...: split after the last ')' since comm may hold spaces.
        let Some(rest) = stat.rsplit_once(')').map(|(_, rest)| rest) else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        if fields.get(2) == Some(&pgid.to_string().as_str()) && fields[0] != "Z" {
            members.push(pid);
        }
    }
    members
}

/// Waits (a bounded while) for every process of the group to be gone.
async fn assert_group_gone(pgid: i32) {
    for _ in 0..100 {
        if live_group_members(pgid).is_empty() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!(
        "processes of group {pgid} still running: {:?}",
        live_group_members(pgid)
    );
}

fn read_pid(path: &Path) -> i32 {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .next()
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

// ---- What the model sees of the tool --------------------------------------

#[test]
fn schema_description_and_snippet_are_pis() {
    let tool = Typed::<BashTool>::default();
    assert_eq!(tool.tool().name, "bash");
    assert_eq!(tool.label(), "Bash");
    assert_eq!(
        tool.tool().description,
        "Execute a bash command in the current working directory. Returns stdout and stderr. Output is truncated to last 2000 lines or 50KB (whichever is hit first). If truncated, full output is saved to a temp file. Optionally provide a timeout in seconds."
    );
    assert_eq!(
        tool.tool().parameters,
        json!({
            "type": "object",
            "properties": {
                "command": {"type": "string", "description": "Bash command to execute"},
                "timeout": {"type": "number", "description": "Timeout in seconds (optional, no default timeout)"}
            },
            "required": ["command"]
        })
    );
    assert_eq!(
        tool.prompt_snippet(),
        Some("Execute bash commands (ls, grep, find, etc.)")
    );
    assert!(tool.prompt_guidelines().is_empty());
}

/// Parity `val_bash_command_array`: an array for `command` is rejected by
/// schema validation (agent-ai's validator writes Pi's text); the schema
/// above says `command` must be a string, and the tool never runs it.
#[tokio::test]
async fn command_array_is_rejected_before_running() {
    let fx = Fixture::new();
    let error = err_text(fx.run(json!({"command": ["echo", "hi"]})).await);
    assert!(
        error.starts_with("Invalid arguments for tool \"bash\""),
        "{error}"
    );
}

/// No command line holds a NUL: the model is told so, not the spawn's
/// error (which named the program that starts the shell, the agent itself
/// when sandboxed).
#[tokio::test]
async fn a_command_holding_a_nul_is_refused_saying_why() {
    let fx = Fixture::new();
    assert_eq!(
        err_text(fx.run(json!({"command": "echo a\u{0}b"})).await),
        "The command contains a NUL character (\\0), which no command line can hold; remove it or write it as printf '\\0'"
    );
}

// ---- Pi's test cases (A.4) -------------------------------------------------

#[tokio::test]
async fn b1_echo_returns_its_output_without_details() {
    let fx = Fixture::new();
    let text = ok_text(fx.run(json!({"command": "echo 'test output'"})).await);
    assert_eq!(text, "test output\n");
}

#[tokio::test]
async fn b2_nonzero_exit_is_an_error_with_the_output() {
    let fx = Fixture::new();
    assert_eq!(
        err_text(fx.run(json!({"command": "exit 1"})).await),
        "(no output)\n\nCommand exited with code 1"
    );
    assert_eq!(
        err_text(fx.run(json!({"command": "echo out; exit 1"})).await),
        "out\n\n\nCommand exited with code 1"
    );
    assert_eq!(
        err_text(fx.run(json!({"command": "exit 2"})).await),
        "(no output)\n\nCommand exited with code 2"
    );
}

#[tokio::test]
async fn b3_timeout_kills_the_command() {
    let fx = Fixture::new();
    assert_eq!(
        err_text(fx.run(json!({"command": "sleep 5", "timeout": 1})).await),
        "Command timed out after 1 seconds"
    );
}

#[tokio::test]
async fn fractional_timeout_is_printed_as_given() {
    let fx = Fixture::new();
    assert_eq!(
        err_text(fx.run(json!({"command": "sleep 5", "timeout": 0.5})).await),
        "Command timed out after 0.5 seconds"
    );
}

#[tokio::test]
async fn zero_or_negative_timeout_means_no_timeout() {
    let fx = Fixture::new();
    for timeout in [0.0, -1.0] {
        let result = fx
            .run(json!({"command": "sleep 0.2; echo hi", "timeout": timeout}))
            .await;
        assert_eq!(ok_text(result), "hi\n");
    }
}

#[tokio::test]
async fn b4_missing_working_directory_is_reported() {
    let fx = Fixture::new();
    let ctx = ToolContext::new("/this/directory/definitely/does/not/exist/12345");
    let (result, _) = run_tool(&fx.tool(), ctx, json!({"command": "echo test"})).await;
    assert_eq!(
        err_text(result),
        "Working directory does not exist: /this/directory/definitely/does/not/exist/12345\nCannot execute bash commands."
    );
}

#[tokio::test]
async fn b5_spawn_errors_propagate() {
    use std::os::unix::fs::PermissionsExt;
    let fx = Fixture::new();
    // A shell whose interpreter is missing: exec fails with ENOENT, as in Pi's test.
    let shell = fx.home.join("fake-shell");
    std::fs::write(&shell, "#!/nonexistent-shell-path-xyz123\n").unwrap();
    std::fs::set_permissions(&shell, std::fs::Permissions::from_mode(0o755)).unwrap();
    let tool = Typed::new(BashTool {
        ops: Arc::new(LocalBashOperations::with_shell(&shell)),
        options: fx.options(),
    });
    let (result, _) = run_tool(&tool, fx.ctx(), json!({"command": "echo test"})).await;
    assert_eq!(
        err_text(result),
        format!("spawn {} ENOENT", shell.display())
    );
}

/// Operations whose command prints a line, then loses its connection (what
/// `--remote` gives when sshd goes away mid-command).
struct LostMidRun;

#[async_trait::async_trait]
impl BashOperations for LostMidRun {
    async fn exec(
        &self,
        _command: &str,
        _cwd: &Path,
        options: ExecOptions,
    ) -> Result<ExitStatus, ExecError> {
        options
            .on_data
            .send(b"tick 1\ntick 2\n".to_vec())
            .await
            .unwrap();
        Err(ExecError::Io(std::io::Error::other(
            "Remote connection lost: Connection to box closed by remote host.",
        )))
    }
}

/// The output a command printed before its connection was lost reaches the
/// model, as it does before a timeout: how far a long build got.
#[tokio::test]
async fn output_before_a_lost_connection_is_kept() {
    let fx = Fixture::new();
    let tool = Typed::new(BashTool {
        ops: Arc::new(LostMidRun),
        options: fx.options(),
    });
    let (result, _) = run_tool(&tool, fx.ctx(), json!({"command": "make"})).await;
    assert_eq!(
        err_text(result),
        "tick 1\ntick 2\n\n\nRemote connection lost: Connection to box closed by remote host."
    );
}

#[tokio::test]
async fn missing_custom_shell_is_reported() {
    let fx = Fixture::new();
    let tool = Typed::new(BashTool {
        ops: Arc::new(LocalBashOperations::with_shell(
            "/nonexistent-shell-path-xyz123",
        )),
        options: fx.options(),
    });
    let (result, _) = run_tool(&tool, fx.ctx(), json!({"command": "echo test"})).await;
    assert_eq!(
        err_text(result),
        "Custom shell path not found: /nonexistent-shell-path-xyz123"
    );
}

#[tokio::test]
async fn b6_to_b8_command_prefix_runs_first() {
    let fx = Fixture::new();
    let with_prefix = |prefix: &str| {
        fx.tool_with(BashToolOptions {
            command_prefix: Some(prefix.to_owned()),
            ..fx.options()
        })
    };
    let tool = with_prefix("export TEST_VAR=hello");
    let (result, _) = run_tool(&tool, fx.ctx(), json!({"command": "echo $TEST_VAR"})).await;
    assert_eq!(ok_text(result), "hello\n");

    let tool = with_prefix("echo prefix-output");
    let (result, _) = run_tool(&tool, fx.ctx(), json!({"command": "echo command-output"})).await;
    assert_eq!(ok_text(result), "prefix-output\ncommand-output\n");

    let (result, _) = run_tool(&fx.tool(), fx.ctx(), json!({"command": "echo no-prefix"})).await;
    assert_eq!(ok_text(result), "no-prefix\n");
}

#[tokio::test]
async fn stderr_and_stdout_share_one_stream_in_arrival_order() {
    let fx = Fixture::new();
    let result = fx
        .run(json!({"command": "echo err 1>&2; sleep 0.2; echo out"}))
        .await;
    assert_eq!(ok_text(result), "err\nout\n");
    // Without a pause between them too: one pipe, so exactly the order the
    // command wrote (two pipes read side by side grouped them at random).
    let script = "for i in $(seq 1 200); do echo out$i; echo err$i >&2; done";
    let written: String = (1..=200).map(|i| format!("out{i}\nerr{i}\n")).collect();
    for _ in 0..5 {
        let result = fx.run(json!({"command": script})).await;
        assert_eq!(ok_text(result), written);
    }
}

#[tokio::test]
async fn seq_3000_shows_the_last_2000_lines_and_saves_everything() {
    let fx = Fixture::new();
    let (result, updates) = run_tool(&fx.tool(), fx.ctx(), json!({"command": "seq 1 3000"})).await;
    let result = result.unwrap();
    let [path] = fx.tmp_files().try_into().unwrap();
    let name = path.file_name().unwrap().to_str().unwrap();
    assert!(
        name.len() == "pi-bash-.log".len() + 16
            && name.starts_with("pi-bash-")
            && name.ends_with(".log")
            && name[8..24].bytes().all(|b| b.is_ascii_hexdigit()),
        "{name}"
    );
    let shown: String = (1002..=3000).map(|i| format!("{i}\n")).collect();
    assert_eq!(
        text(&result),
        format!(
            "{shown}\n\n[Showing lines 1002-3001 of 3001. Full output: {}]",
            path.display()
        )
    );
    let all: String = (1..=3000).map(|i| format!("{i}\n")).collect();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), all);
    let details = result.details.unwrap();
    assert_eq!(details["fullOutputPath"], json!(path));
    let truncation = &details["truncation"];
    assert_eq!(truncation["truncated"], json!(true));
    assert_eq!(truncation["truncatedBy"], json!("lines"));
    assert_eq!(truncation["totalLines"], json!(3001));
    assert_eq!(truncation["outputLines"], json!(2000));
    assert_eq!(truncation["content"], json!(shown));
    // The last progress update is the final state, truncation included.
    let last = updates.last().unwrap();
    assert_eq!(last.content[0].as_text(), Some(shown.as_str()));
    assert_eq!(
        last.details.as_ref().unwrap()["fullOutputPath"],
        json!(path)
    );
}

/// A command over Linux's limit for one argument (128 KB) cannot start;
/// the error says so and what to do instead (Node says only `spawn E2BIG`).
#[tokio::test]
async fn a_command_over_the_argument_limit_says_what_to_do() {
    let fx = Fixture::new();
    let command = format!(": {}", "x".repeat(140 * 1024));
    let error = err_text(fx.run(json!({ "command": command })).await);
    assert!(
        error.ends_with(
            "E2BIG: the command is 141 KB, more than Linux takes in one argument (128 KB); put long content in a file with the write tool, then run a short command on it"
        ),
        "{error}"
    );
}

/// A command leads a session of its own, as Pi's `detached: true` makes it:
/// in ours, what prompts on `/dev/tty` (git's credentials, ssh's password)
/// was stopped by SIGTTIN in the background and the call never ended.
#[tokio::test]
async fn a_command_leads_a_session_of_its_own_without_a_terminal() {
    let fx = Fixture::new();
    let command = "read -r pid _ _ _ group session _ < /proc/$$/stat; \
        echo $((session == pid)) $((group == pid)); \
        (exec 3</dev/tty) 2>/dev/null && echo terminal || echo no terminal";
    let out = ok_text(fx.run(json!({ "command": command })).await);
    assert_eq!(out, "1 1\nno terminal\n");
}

#[tokio::test]
async fn abort_kills_the_command_and_keeps_its_output() {
    let fx = Fixture::new();
    let ctx = fx.ctx();
    let cancel: CancellationToken = ctx.cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        cancel.cancel();
    });
    let (result, _) = run_tool(
        &fx.tool(),
        ctx,
        json!({"command": "echo $$ > pgid; echo started; sleep 5"}),
    )
    .await;
    assert_eq!(err_text(result), "started\n\n\nCommand aborted");
    assert_group_gone(read_pid(&fx.work.join("pgid"))).await;
}

#[tokio::test]
async fn already_cancelled_call_does_not_run() {
    let fx = Fixture::new();
    let ctx = fx.ctx();
    ctx.cancel.cancel();
    let (result, _) = run_tool(&fx.tool(), ctx, json!({"command": "touch ran"})).await;
    assert_eq!(err_text(result), "Command aborted");
    assert!(!fx.work.join("ran").exists());
}

#[tokio::test]
async fn progress_updates_are_cumulative_snapshots() {
    let fx = Fixture::new();
    let (result, updates) = run_tool(
        &fx.tool(),
        fx.ctx(),
        json!({"command": "for i in 1 2 3; do echo $i; sleep 0.3; done"}),
    )
    .await;
    assert_eq!(ok_text(result), "1\n2\n3\n");
    let seen: Vec<(Vec<&str>, Option<&Value>)> = updates
        .iter()
        .map(|u| {
            (
                u.content.iter().filter_map(|c| c.as_text()).collect(),
                u.details.as_ref(),
            )
        })
        .collect();
    let empty = json!({});
    assert_eq!(
        seen,
        vec![
            (vec![], None),
            (vec!["1\n"], Some(&empty)),
            (vec!["1\n2\n"], Some(&empty)),
            (vec!["1\n2\n3\n"], Some(&empty)),
        ]
    );
}

// ---- Parity fixtures (bash_*.json) -----------------------------------------

#[tokio::test]
async fn parity_bash_background_child() {
    let fx = Fixture::new();
    let text = ok_text(
        fx.run(json!({"command": "(sleep 3 &) ; echo started"}))
            .await,
    );
    assert_eq!(text, "started\n");
}

#[tokio::test]
async fn parity_bash_creates_file() {
    let fx = Fixture::new();
    let result = fx
        .run(json!({"command": "echo made > made.txt && cat made.txt"}))
        .await;
    assert_eq!(ok_text(result), "made\n");
    let files: Vec<_> = std::fs::read_dir(&fx.work).unwrap().collect();
    assert_eq!(files.len(), 1);
    assert_eq!(
        std::fs::read_to_string(fx.work.join("made.txt")).unwrap(),
        "made\n"
    );
}

#[tokio::test]
async fn parity_bash_env_var() {
    let fx = Fixture::new();
    let tool = fx.tool_with(BashToolOptions {
        spawn_hook: Some(Arc::new(|mut spawn: SpawnContext| {
            spawn.env.push(("PI_ORACLE_VAR".into(), "from-env".into()));
            spawn
        })),
        ..fx.options()
    });
    let (result, _) = run_tool(
        &tool,
        fx.ctx(),
        json!({"command": "echo \"$PI_ORACLE_VAR\""}),
    )
    .await;
    assert_eq!(ok_text(result), "from-env\n");
}

#[tokio::test]
async fn commands_inherit_the_process_environment() {
    // Cargo sets CARGO_PKG_NAME for the test process; the command must see it.
    let fx = Fixture::new();
    let result = fx.run(json!({"command": "echo \"$CARGO_PKG_NAME\""})).await;
    assert_eq!(ok_text(result), "coding-agent\n");
}

#[tokio::test]
async fn parity_bash_home() {
    let fx = Fixture::new();
    let text = ok_text(fx.run(json!({"command": "echo $HOME"})).await);
    assert_eq!(text, format!("{}\n", fx.home.display()));
}

/// DEVIATIONS #8: Pi answers `before\n` as a success; a shell killed by a
/// signal is an error here.
#[tokio::test]
async fn parity_bash_killed_by_signal_is_an_error() {
    let fx = Fixture::new();
    assert_eq!(
        err_text(fx.run(json!({"command": "echo before; kill -9 $$"})).await),
        "before\n\n\nCommand terminated by signal SIGKILL"
    );
    assert_eq!(
        err_text(fx.run(json!({"command": "kill -TERM $$"})).await),
        "(no output)\n\nCommand terminated by signal SIGTERM"
    );
}

#[tokio::test]
async fn parity_bash_no_output() {
    let fx = Fixture::new();
    assert_eq!(
        ok_text(fx.run(json!({"command": "true"})).await),
        "(no output)"
    );
}

#[tokio::test]
async fn parity_bash_set_e_pipefail() {
    let fx = Fixture::new();
    let result = fx
        .run(json!({"command": "set -o pipefail; false | true; echo \"rc=$?\""}))
        .await;
    assert_eq!(ok_text(result), "rc=1\n");
}

#[tokio::test]
async fn parity_bash_stdout_stderr() {
    let fx = Fixture::new();
    let text = ok_text(
        fx.run(json!({"command": "echo one; echo two >&2; echo three"}))
            .await,
    );
    let mut lines: Vec<&str> = text.lines().collect();
    lines.sort_unstable();
    assert_eq!(lines, ["one", "three", "two"]);
    assert!(text.ends_with('\n'));
}

#[tokio::test]
async fn parity_bash_timeout_with_output() {
    let fx = Fixture::new();
    assert_eq!(
        err_text(
            fx.run(json!({"command": "echo before; sleep 5", "timeout": 1}))
                .await
        ),
        "before\n\n\nCommand timed out after 1 seconds"
    );
}

#[tokio::test]
async fn parity_bash_unicode_output() {
    let fx = Fixture::new();
    let result = fx
        .run(json!({"command": "printf 'h\\xc3\\xa9llo \\xe4\\xb8\\x96\\n'"}))
        .await;
    assert_eq!(ok_text(result), "h\u{e9}llo \u{4e16}\n");
}

// ---- Beyond Pi --------------------------------------------------------------

#[tokio::test]
async fn a_character_split_across_writes_is_decoded_whole() {
    let fx = Fixture::new();
    let result = fx
        .run(json!({"command": "printf '\\xc3'; sleep 0.2; printf '\\xa9\\n'"}))
        .await;
    assert_eq!(ok_text(result), "\u{e9}\n");
}

/// DEVIATIONS #7: Pi passes escape codes to the model.
#[tokio::test]
async fn escape_codes_are_stripped_from_the_text() {
    let fx = Fixture::new();
    let result = fx
        .run(json!({"command": "printf '\\033[31mred\\033[0m \\033]0;title\\007done\\n'"}))
        .await;
    assert_eq!(ok_text(result), "red done\n");
}

/// DEVIATIONS #7: a binary's control characters mean nothing to the model
/// (Pi's `sanitizeBinaryOutput` drops them from a user's `!command`); tab,
/// newline and carriage return stay, and a NUL shows as `␀`: it separates
/// names (`find -print0` read as `aa/b` for `a` and `a/b`).
#[tokio::test]
async fn control_characters_are_stripped_from_the_text() {
    let fx = Fixture::new();
    let result = fx
        .run(json!({"command": "printf 'a\\0b\\001c\\007\\tt\\r\\n'"}))
        .await;
    assert_eq!(ok_text(result), "a\u{2400}bc\tt\r\n");
    let result = fx
        .run(json!({"command": "mkdir -p a/b && find a -print0"}))
        .await;
    assert_eq!(ok_text(result), "a\u{2400}a/b\u{2400}");
}

/// DEVIATIONS #7: the full-output file keeps the escape codes.
#[tokio::test]
async fn full_output_file_keeps_escape_codes() {
    let fx = Fixture::new();
    let result = fx
        .run(json!({"command": "for i in $(seq 1 2500); do printf '\\033[32m%d\\033[0m\\n' $i; done"}))
        .await
        .unwrap();
    let [path] = fx.tmp_files().try_into().unwrap();
    let shown: String = (502..=2500).map(|i| format!("{i}\n")).collect();
    assert_eq!(
        text(&result),
        format!(
            "{shown}\n\n[Showing lines 502-2501 of 2501. Full output: {}]",
            path.display()
        )
    );
    let raw: String = (1..=2500)
        .map(|i| format!("\x1b[32m{i}\x1b[0m\n"))
        .collect();
    assert_eq!(std::fs::read_to_string(path).unwrap(), raw);
}

#[tokio::test]
async fn output_over_the_byte_limit_names_the_limit() {
    let fx = Fixture::new();
    let result = fx
        .run(json!({"command": "yes 0123456789012345678901234567890123456789012345678 | head -n 1500"}))
        .await
        .unwrap();
    let [path] = fx.tmp_files().try_into().unwrap();
    let line = "0123456789012345678901234567890123456789012345678\n";
    assert_eq!(
        text(&result),
        format!(
            "{}\n\n[Showing lines 477-1501 of 1501 (50.0KB limit). Full output: {}]",
            line.repeat(1024),
            path.display()
        )
    );
    assert_eq!(std::fs::metadata(path).unwrap().len(), 75_000);
}

#[tokio::test]
async fn one_huge_line_shows_its_end() {
    let fx = Fixture::new();
    let result = fx
        .run(json!({"command": "head -c 100000 /dev/zero | tr '\\0' x"}))
        .await
        .unwrap();
    let [path] = fx.tmp_files().try_into().unwrap();
    assert_eq!(
        text(&result),
        format!(
            "{}\n\n[Showing last 50.0KB of line 1 (line is 97.7KB). Full output: {}]",
            "x".repeat(51_200),
            path.display()
        )
    );
}

// An 80 KB line and its newline keep only the empty line after it: the model
// read a blank before the notice where Pi's `formatOutput` says `(no output)`
// when the command exited, and nothing when it was stopped (the status says why).
#[tokio::test]
async fn an_empty_tail_reads_as_pi_words_it() {
    let fx = Fixture::new();
    let long_line = "printf '%080000d\\n' 0";
    for (command, timeout, before, after) in [
        (long_line.to_owned(), None, "(no output)", ""),
        (
            format!("{long_line}; exit 3"),
            None,
            "(no output)",
            "\n\nCommand exited with code 3",
        ),
        (
            format!("{long_line}; sleep 5"),
            Some(1),
            "",
            "\n\nCommand timed out after 1 seconds",
        ),
    ] {
        let result = fx
            .run(json!({"command": command, "timeout": timeout}))
            .await;
        let shown = match result {
            Ok(result) => text(&result).to_owned(),
            Err(error) => error.message().to_owned(),
        };
        let path = fx.tmp_files().pop().unwrap();
        assert_eq!(
            shown,
            format!(
                "{before}\n\n[Showing lines 2-2 of 2 (50.0KB limit). Full output: {}]{after}",
                path.display()
            )
        );
        std::fs::remove_file(path).unwrap();
    }
}

#[tokio::test]
async fn large_output_without_timeout_is_drained_while_running() {
    // 200 KB on stdout and 300 KB on stderr: far more than a pipe holds, so a
    // reader that waited for the exit first would deadlock.
    let fx = Fixture::new();
    let result = fx
        .run(json!({"command": "yes abcdefghi | head -n 20000; yes err | head -c 300000 >&2; echo end >&2"}))
        .await
        .unwrap();
    let [path] = fx.tmp_files().try_into().unwrap();
    assert_eq!(std::fs::metadata(&path).unwrap().len(), 500_004);
    let shown = text(&result);
    assert!(shown.starts_with("err\nerr\n"), "{}", &shown[..40]);
    assert!(
        shown.ends_with(&format!(
            "err\nend\n\n\n[Showing lines 93003-95002 of 95002. Full output: {}]",
            path.display()
        )),
        "{}",
        &shown[shown.len() - 200..]
    );
}

#[tokio::test]
async fn timeout_kills_background_jobs_of_the_command_too() {
    let fx = Fixture::new();
    let result = fx
        .run(json!({"command": "echo $$ > pgid; sleep 30 & sleep 30", "timeout": 1}))
        .await;
    assert_eq!(err_text(result), "Command timed out after 1 seconds");
    assert_group_gone(read_pid(&fx.work.join("pgid"))).await;
}

#[tokio::test]
async fn background_child_holding_the_pipes_does_not_block_the_call() {
    let fx = Fixture::new();
    let result = fx
        .run(json!({"command": "(sleep 30 & echo $! > bg.pid); echo done"}))
        .await;
    assert_eq!(ok_text(result), "done\n");
    // Pi leaves such a child running; stop it so the test leaves nothing behind.
    let pid = read_pid(&fx.work.join("bg.pid"));
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
}
