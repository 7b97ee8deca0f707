//! Command hooks with real scripts (sh and python3) around real built-in
//! tools, through the same five-step pipeline the agent loop runs.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "http_support/hook_server.rs"]
mod hook_server;
mod modes_support;

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_ai::{Content, Tool, ToolCall, ToolResultMessage};
use agent_ai::{Message, UserContent};
use agent_core::{
    AgentTool, AgentToolResult, ToolError, ToolSet, UpdateSink, run_single_tool_call,
};
use coding_agent::app::{AgentSession, PromptError};
use coding_agent::hooks::prompt::MAX_STOP_CONTINUATIONS;
use coding_agent::hooks::{CommandHooks, HooksSettings};
use coding_agent::tools::builtin_tool;
use coding_agent::warnings::{LineLayer, WarningReceiver};
use coding_agent::{ToolContext, wrap_tool_definition};
use hook_server::HookServer;
use modes_support::{Fixture, reply, text};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use tracing_subscriber::Layer;
use tracing_subscriber::layer::SubscriberExt;

/// A project directory with hook scripts in `hooks/`.
struct Project {
    dir: tempfile::TempDir,
}

impl Project {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("hooks")).unwrap();
        Project { dir }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Writes an executable script `hooks/<name>`; returns its path.
    fn script(&self, name: &str, text: &str) -> String {
        use std::os::unix::fs::PermissionsExt;
        let path = self.path().join("hooks").join(name);
        std::fs::write(&path, text).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path.to_string_lossy().into_owned()
    }

    /// The hooks of `settings` (the `"hooks"` value) for this project.
    fn hooks(&self, settings: Value) -> CommandHooks {
        let settings: HooksSettings = serde_json::from_value(settings).unwrap();
        let places = coding_agent::guard::policy::Places::for_cwd(self.path());
        let (config, warnings) = settings.compile(&places).unwrap();
        assert!(warnings.is_empty(), "{warnings:?}");
        CommandHooks::new(config, self.path().to_path_buf())
    }

    /// Runs `name` with `args` through the pipeline with `hooks`.
    async fn call(&self, hooks: &CommandHooks, name: &str, args: Value) -> ToolResultMessage {
        self.call_in(hooks, name, args, &CancellationToken::new())
            .await
    }

    /// [`Project::call`] in the run `cancel` cancels.
    async fn call_in(
        &self,
        hooks: &CommandHooks,
        name: &str,
        args: Value,
        cancel: &CancellationToken,
    ) -> ToolResultMessage {
        let cwd = self.path().to_path_buf();
        let factory = Arc::new(move |cancel: CancellationToken| ToolContext {
            cancel,
            ..ToolContext::new(cwd.clone())
        });
        let mut tools: Vec<Arc<dyn AgentTool>> = ["bash", "read", "find"]
            .into_iter()
            .map(|tool| wrap_tool_definition(builtin_tool(tool).unwrap(), factory.clone()))
            .collect();
        tools.push(Arc::new(McpSecret::default()));
        let tools = ToolSet::new(tools).unwrap();
        let call = ToolCall::new("call_1", name, args);
        let run = run_single_tool_call(&tools, &call, hooks, cancel);
        tokio::time::timeout(Duration::from_secs(30), run)
            .await
            .expect("the call never ended")
    }
}

/// A tool by an MCP server's tool's name that answers `secret`.
struct McpSecret {
    tool: Tool,
}

impl Default for McpSecret {
    fn default() -> Self {
        McpSecret {
            tool: Tool {
                name: "mcp__vault__secret".into(),
                description: "Tells a secret.".into(),
                parameters: json!({"type": "object", "properties": {}}),
            },
        }
    }
}

#[async_trait::async_trait]
impl AgentTool for McpSecret {
    fn tool(&self) -> &Tool {
        &self.tool
    }

    fn label(&self) -> &str {
        "Secret"
    }

    async fn execute(
        &self,
        _tool_call_id: &str,
        _params: Value,
        _cancel: CancellationToken,
        _updates: UpdateSink,
    ) -> Result<AgentToolResult, ToolError> {
        Ok(AgentToolResult::text("secret"))
    }
}

fn one_hook(event: &str, matcher: &str, command: &str, extra: Value) -> Value {
    one_handler(
        event,
        matcher,
        json!({"type": "command", "command": command}),
        extra,
    )
}

/// `{event: [{matcher, hooks: [handler with extra's fields]}]}`.
fn one_handler(event: &str, matcher: &str, mut handler: Value, extra: Value) -> Value {
    handler
        .as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    json!({ event: [{"matcher": matcher, "hooks": [handler]}] })
}

fn texts(result: &ToolResultMessage) -> Vec<&str> {
    result.content.iter().filter_map(Content::as_text).collect()
}

/// Warnings logged on this thread while `run` runs.
async fn with_warnings<T>(run: impl Future<Output = T>) -> (T, Vec<String>) {
    let (layer, mut receiver): (LineLayer, WarningReceiver) = LineLayer::channel();
    // Warnings only, as the binary logs them (reqwest's debug lines are not).
    let subscriber = tracing_subscriber::registry()
        .with(layer.with_filter(tracing_subscriber::filter::LevelFilter::WARN));
    let guard = tracing::subscriber::set_default(subscriber);
    let value = run.await;
    drop(guard);
    let mut lines = Vec::new();
    while let Ok(line) = receiver.try_recv() {
        lines.push(line);
    }
    (value, lines)
}

const BLOCK_RM: &str = r#"#!/usr/bin/env python3
import json, sys
event = json.load(sys.stdin)
command = event["tool_input"].get("command", "")
if command.split()[:1] == ["rm"]:
    print(f"rm is not allowed here ({command}); move files to .trash instead", file=sys.stderr)
    sys.exit(2)
"#;

#[tokio::test]
async fn pre_tool_use_exit_2_blocks_rm_and_the_model_reads_the_hooks_stderr() {
    let project = Project::new();
    std::fs::write(project.path().join("keep.txt"), "data").unwrap();
    let script = project.script("block_rm.py", BLOCK_RM);
    let hooks = project.hooks(one_hook("PreToolUse", "Bash", &script, json!({})));

    let blocked = project
        .call(&hooks, "bash", json!({"command": "rm -f keep.txt"}))
        .await;
    assert!(blocked.is_error);
    assert_eq!(
        texts(&blocked),
        [
            "Blocked by PreToolUse hook: rm is not allowed here (rm -f keep.txt); move files to .trash instead"
        ]
    );
    assert!(project.path().join("keep.txt").exists());

    let allowed = project
        .call(&hooks, "bash", json!({"command": "cat keep.txt"}))
        .await;
    assert!(!allowed.is_error, "{allowed:?}");
    assert_eq!(texts(&allowed), ["data"]);
}

/// Claude Code's `if` on a handler: a hook that blocks whatever it is given
/// runs only for the calls its permission rule matches (`Bash(rm *)`, any
/// part of a command line), so the other calls run.
#[tokio::test]
async fn a_hooks_if_rule_runs_it_only_for_the_calls_the_rule_matches() {
    let project = Project::new();
    std::fs::write(project.path().join("keep.txt"), "data").unwrap();
    let hooks = project.hooks(one_hook(
        "PreToolUse",
        "",
        "echo 'no rm' >&2; exit 2",
        json!({"if": "Bash(rm *)"}),
    ));
    for command in ["rm -f keep.txt", "cat keep.txt && rm keep.txt"] {
        let blocked = project
            .call(&hooks, "bash", json!({ "command": command }))
            .await;
        assert_eq!(texts(&blocked), ["Blocked by PreToolUse hook: no rm"]);
    }
    assert!(project.path().join("keep.txt").exists());
    let ran = project
        .call(&hooks, "bash", json!({"command": "cat keep.txt"}))
        .await;
    assert_eq!(texts(&ran), ["data"]);
    let read = project
        .call(&hooks, "read", json!({"path": "keep.txt"}))
        .await;
    assert_eq!(texts(&read), ["data"]);
}

/// `continue: false` stops the agent, as in Claude Code: the call is
/// refused and the run is cancelled (it went on to the next calls and
/// turns, while the model read that the hook had stopped the agent).
#[tokio::test]
async fn pre_tool_use_continue_false_refuses_the_call_and_stops_the_run() {
    let project = Project::new();
    let hooks = project.hooks(one_hook(
        "PreToolUse",
        "Bash",
        r#"echo '{"continue": false, "stopReason": "enough for today"}'"#,
        json!({}),
    ));
    let run = CancellationToken::new();
    let (stopped, warnings) = with_warnings(project.call_in(
        &hooks,
        "bash",
        json!({"command": "echo second-call > ran.txt"}),
        &run,
    ))
    .await;
    assert!(stopped.is_error);
    assert!(run.is_cancelled(), "the run goes on");
    assert!(!project.path().join("ran.txt").exists());
    assert_eq!(
        warnings,
        ["Warning: a PreToolUse hook stopped the agent: enough for today"]
    );
}

/// A call the user stops still reaches the PostToolUseFailure hooks, told
/// `is_interrupt` (they were killed by the same abort, with a warning on
/// every Esc, and never read their input).
#[tokio::test]
async fn an_interrupted_call_runs_the_failure_hooks_told_it_was_an_interrupt() {
    let project = Project::new();
    let seen = project.path().join("seen.json");
    let hooks = project.hooks(one_hook(
        "PostToolUseFailure",
        "Bash",
        &format!("cat > {}", seen.display()),
        json!({}),
    ));
    let run = CancellationToken::new();
    let stop = {
        let run = run.clone();
        async move {
            tokio::time::sleep(Duration::from_millis(300)).await;
            run.cancel();
        }
    };
    let call = project.call_in(&hooks, "bash", json!({"command": "sleep 30"}), &run);
    let ((result, warnings), ()) = tokio::join!(with_warnings(call), stop);
    assert!(result.is_error);
    assert_eq!(warnings, Vec::<String>::new());
    let input: Value = serde_json::from_str(&std::fs::read_to_string(&seen).unwrap()).unwrap();
    assert_eq!(
        (&input["hook_event_name"], &input["is_interrupt"]),
        (&json!("PostToolUseFailure"), &json!(true))
    );
}

#[tokio::test]
async fn the_hook_reads_claude_codes_input_on_stdin() {
    let project = Project::new();
    let dump = project.path().join("input.json");
    let hooks = project.hooks(one_hook(
        "PreToolUse",
        "*",
        &format!("cat > {}", dump.display()),
        json!({}),
    ));
    project
        .call(&hooks, "bash", json!({"command": "true"}))
        .await;
    let input: Value = serde_json::from_str(&std::fs::read_to_string(&dump).unwrap()).unwrap();
    assert_eq!(
        input,
        json!({
            "session_id": "",
            "transcript_path": "",
            "cwd": project.path().to_string_lossy(),
            "permission_mode": "default",
            "hook_event_name": "PreToolUse",
            "tool_name": "bash",
            "tool_input": {"command": "true"},
            "tool_use_id": "call_1"
        })
    );
}

#[tokio::test]
async fn updated_input_changes_the_arguments_the_tool_sees() {
    let project = Project::new();
    let script = project.script(
        "rewrite.sh",
        r#"#!/bin/sh
cat > /dev/null
printf '%s' '{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow", "updatedInput": {"command": "echo rewritten by the hook"}}}'
"#,
    );
    let hooks = project.hooks(one_hook("PreToolUse", "bash", &script, json!({})));
    let result = project
        .call(&hooks, "bash", json!({"command": "echo original"}))
        .await;
    assert!(!result.is_error, "{result:?}");
    assert_eq!(texts(&result), ["rewritten by the hook\n"]);
}

#[tokio::test]
async fn updated_input_the_schema_refuses_fails_the_call_with_the_validators_text() {
    let project = Project::new();
    let hooks = project.hooks(one_hook(
        "PreToolUse",
        "bash",
        r#"echo '{"hookSpecificOutput": {"updatedInput": {"cmd": "ls"}}}'"#,
        json!({}),
    ));
    let result = project
        .call(&hooks, "bash", json!({"command": "echo original"}))
        .await;
    assert!(result.is_error);
    let sent_by_the_model = project
        .call(&project.hooks(json!({})), "bash", json!({"cmd": "ls"}))
        .await;
    assert!(sent_by_the_model.is_error);
    assert_eq!(texts(&result), texts(&sent_by_the_model));
}

#[tokio::test]
async fn post_tool_use_additional_context_reaches_the_model_after_the_output() {
    let project = Project::new();
    std::fs::write(project.path().join("notes.txt"), "hello\n").unwrap();
    let script = project.script(
        "context.py",
        r#"#!/usr/bin/env python3
import json, sys
event = json.load(sys.stdin)
answer = {"hookSpecificOutput": {"hookEventName": "PostToolUse",
          "additionalContext": "read " + event["tool_input"]["path"] + " (" + event["tool_response"]["content"][0]["text"].strip() + ")"}}
print(json.dumps(answer))
"#,
    );
    let hooks = project.hooks(one_hook("PostToolUse", "Read", &script, json!({})));
    let result = project
        .call(&hooks, "read", json!({"path": "notes.txt"}))
        .await;
    assert!(!result.is_error, "{result:?}");
    assert_eq!(
        texts(&result),
        [
            "hello\n",
            "PostToolUse hook additional context: read notes.txt (hello)"
        ]
    );
}

/// `updatedMCPToolOutput` replaces what an MCP tool answered and, as in
/// Claude Code, only that: a script answering every tool with it leaves
/// bash's output alone.
#[tokio::test]
async fn post_tool_use_may_replace_what_the_model_reads_of_an_mcp_tool() {
    let project = Project::new();
    let hooks = project.hooks(one_hook(
        "PostToolUse",
        "",
        r#"echo '{"hookSpecificOutput": {"hookEventName": "PostToolUse", "updatedMCPToolOutput": "[redacted]"}}'"#,
        json!({}),
    ));
    let result = project.call(&hooks, "mcp__vault__secret", json!({})).await;
    assert_eq!(texts(&result), ["[redacted]"]);
    let result = project
        .call(&hooks, "bash", json!({"command": "echo secret"}))
        .await;
    assert_eq!(texts(&result), ["secret\n"]);
}

#[tokio::test]
async fn a_hook_past_its_timeout_is_killed_and_the_call_proceeds_with_a_warning() {
    let project = Project::new();
    let pid_file = project.path().join("sleep.pid");
    let script = project.script(
        "slow.sh",
        &format!(
            "#!/bin/sh\nsleep 30 &\necho $! > {}\nwait\n",
            pid_file.display()
        ),
    );
    let hooks = project.hooks(one_hook(
        "PreToolUse",
        "bash",
        &script,
        json!({"timeout": 0.5}),
    ));
    let started = Instant::now();
    let (result, warnings) =
        with_warnings(project.call(&hooks, "bash", json!({"command": "echo went ahead"}))).await;
    assert!(started.elapsed() < Duration::from_secs(10));
    assert!(!result.is_error, "{result:?}");
    assert_eq!(texts(&result), ["went ahead\n"]);
    assert_eq!(
        warnings,
        [format!(
            "Warning: PreToolUse hook \"{script}\" timed out after 0.5s and was killed"
        )]
    );
    let pid = std::fs::read_to_string(&pid_file).unwrap();
    assert!(gone(pid.trim()).await, "the hook's sleep {pid} survived");
}

#[tokio::test]
async fn on_error_block_makes_a_crash_or_a_timeout_block_the_call() {
    let project = Project::new();
    let crash = project.script(
        "crash.sh",
        "#!/bin/sh\necho 'jq: command not found' >&2\nexit 127\n",
    );
    let hooks = project.hooks(one_hook(
        "PreToolUse",
        "bash",
        &crash,
        json!({"onError": "block"}),
    ));
    let result = project
        .call(&hooks, "bash", json!({"command": "touch made.txt"}))
        .await;
    assert!(result.is_error);
    assert_eq!(
        texts(&result),
        [format!(
            "Blocked by PreToolUse hook: PreToolUse hook \"{crash}\" failed with exit code 127: jq: command not found"
        )]
    );
    assert!(!project.path().join("made.txt").exists());

    let hooks = project.hooks(one_hook(
        "PreToolUse",
        "bash",
        "sleep 30",
        json!({"onError": "block", "timeout": 0.3}),
    ));
    let result = project
        .call(&hooks, "bash", json!({"command": "touch made.txt"}))
        .await;
    assert_eq!(
        texts(&result),
        [
            "Blocked by PreToolUse hook: PreToolUse hook \"sleep 30\" timed out after 0.3s and was killed"
        ]
    );
    assert!(!project.path().join("made.txt").exists());
}

#[tokio::test]
async fn a_crash_without_on_error_is_a_warning_and_the_call_runs() {
    let project = Project::new();
    let hooks = project.hooks(one_hook("PreToolUse", "bash", "exit 1", json!({})));
    let (result, warnings) =
        with_warnings(project.call(&hooks, "bash", json!({"command": "touch made.txt"}))).await;
    assert!(!result.is_error, "{result:?}");
    assert!(project.path().join("made.txt").exists());
    assert_eq!(
        warnings,
        ["Warning: PreToolUse hook \"exit 1\" failed with exit code 1"]
    );
}

/// A guard that printed a log line before its deny let the call run with
/// no word, `"onError": "block"` or not: the deny holds, and the user is
/// told why the hook's answer was not read.
#[tokio::test]
async fn a_deny_after_a_log_line_still_refuses_the_call_with_a_warning() {
    let project = Project::new();
    let command = r#"echo 'checking the command'; echo '{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": "no touching"}}'"#;
    let hooks = project.hooks(one_hook("PreToolUse", "bash", command, json!({})));
    let (result, warnings) =
        with_warnings(project.call(&hooks, "bash", json!({"command": "touch made.txt"}))).await;
    assert_eq!(texts(&result), ["Blocked by PreToolUse hook: no touching"]);
    assert!(!project.path().join("made.txt").exists());
    assert_eq!(
        warnings,
        [format!(
            "Warning: PreToolUse hook \"{command}\" wrote other text before its JSON answer: the JSON must be all of a hook's stdout (write log lines to stderr), so only a refusal in it is heeded"
        )]
    );
}

fn http_hook(event: &str, url: &str, extra: Value) -> Value {
    one_handler(event, "bash", json!({"type": "http", "url": url}), extra)
}

#[tokio::test]
async fn an_http_hook_reads_the_event_as_json_and_answers_as_a_command_would() {
    let server = HookServer::start(&[(
        "/pre",
        "200 OK",
        r#"{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": "no touching"}}"#,
    )]);
    let project = Project::new();
    let url = format!("{}/pre", server.url);
    let hooks = project.hooks(http_hook("PreToolUse", &url, json!({})));
    let result = project
        .call(&hooks, "bash", json!({"command": "touch made.txt"}))
        .await;
    assert_eq!(texts(&result), ["Blocked by PreToolUse hook: no touching"]);
    assert!(!project.path().join("made.txt").exists());
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    assert_eq!(request.headers["content-type"], "application/json");
    assert_eq!(
        (
            &request.body["hook_event_name"],
            &request.body["tool_name"],
            &request.body["tool_input"],
            &request.body["cwd"],
        ),
        (
            &json!("PreToolUse"),
            &json!("bash"),
            &json!({"command": "touch made.txt"}),
            &json!(project.path().to_string_lossy()),
        )
    );
}

#[tokio::test]
async fn an_http_hooks_failures_are_warnings_and_block_only_with_on_error_block() {
    // An answer past the 16 MiB a hook's answer may hold.
    let huge = format!("{{\"reason\": \"{}\"}}", "x".repeat(17 << 20));
    let server = HookServer::start(&[
        ("/down", "503 Service Unavailable", "database is down"),
        ("/text", "200 OK", "allow it"),
        ("/empty", "204 No Content", ""),
        ("/huge", "200 OK", &huge),
    ]);
    let project = Project::new();
    // A port nothing listens on: bound, then let go.
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}/", listener.local_addr().unwrap())
    };
    let url = |path: &str| format!("{}{path}", server.url);
    let cases = [
        (
            url("/down"),
            format!(
                "PreToolUse hook \"{}\" answered HTTP 503 Service Unavailable: database is down",
                url("/down")
            ),
        ),
        (
            url("/text"),
            format!(
                "PreToolUse hook \"{}\" answered with a body that is not a JSON object",
                url("/text")
            ),
        ),
        // Worded for a request, not a process (they said `timed out after
        // 0.5s and was killed` and `wrote more than 16 MiB on stdout`).
        (
            url("/silent"),
            format!(
                "PreToolUse hook \"{}\" did not answer within 0.5s",
                url("/silent")
            ),
        ),
        (
            url("/huge"),
            format!(
                "PreToolUse hook \"{}\" answered more than 16 MiB: its answer was not read",
                url("/huge")
            ),
        ),
        (
            closed.clone(),
            format!("PreToolUse hook \"{closed}\" could not be reached: "),
        ),
    ];
    for (target, failure) in &cases {
        let hooks = project.hooks(http_hook("PreToolUse", target, json!({"timeout": 0.5})));
        let (result, warnings) =
            with_warnings(project.call(&hooks, "bash", json!({"command": "echo ran"}))).await;
        assert_eq!(texts(&result), ["ran\n"], "{target}");
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(
            warnings[0].starts_with(&format!("Warning: {failure}")),
            "{warnings:?}"
        );

        let strict = project.hooks(http_hook(
            "PreToolUse",
            target,
            json!({"timeout": 0.5, "onError": "block"}),
        ));
        let result = project
            .call(&strict, "bash", json!({"command": "echo ran"}))
            .await;
        let text = texts(&result).concat();
        assert!(
            text.starts_with(&format!("Blocked by PreToolUse hook: {failure}")),
            "{text}"
        );
    }
    // An empty 2xx answer says nothing: the call runs, without a warning.
    let hooks = project.hooks(http_hook("PreToolUse", &url("/empty"), json!({})));
    let (result, warnings) =
        with_warnings(project.call(&hooks, "bash", json!({"command": "echo ran"}))).await;
    assert_eq!((texts(&result), warnings), (vec!["ran\n"], vec![]));
}

#[tokio::test]
async fn a_prompt_hook_without_a_model_to_ask_fails_open_unless_told_to_block() {
    let project = Project::new();
    let settings = |extra: Value| {
        let handler = json!({"type": "prompt", "prompt": "Is $ARGUMENTS safe?"});
        one_handler("PreToolUse", "bash", handler, extra)
    };
    let failure = "PreToolUse hook \"Is $ARGUMENTS safe?\" has no model to ask (prompt hooks run in a session)";
    let hooks = project.hooks(settings(json!({})));
    let (result, warnings) =
        with_warnings(project.call(&hooks, "bash", json!({"command": "echo ran"}))).await;
    assert_eq!(texts(&result), ["ran\n"]);
    assert_eq!(warnings, [format!("Warning: {failure}")]);
    let strict = project.hooks(settings(json!({"onError": "block"})));
    let result = project
        .call(&strict, "bash", json!({"command": "echo ran"}))
        .await;
    assert_eq!(
        texts(&result),
        [format!("Blocked by PreToolUse hook: {failure}")]
    );
}

#[tokio::test]
async fn claude_code_tool_names_in_matchers_select_our_tools() {
    let project = Project::new();
    std::fs::write(project.path().join("a.rs"), "").unwrap();
    let deny = |reason: &str| {
        format!(
            r#"echo '{{"hookSpecificOutput": {{"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": "{reason}"}}}}'"#
        )
    };
    let hooks = project.hooks(json!({"PreToolUse": [
        {"matcher": "Glob", "hooks": [{"type": "command", "command": deny("no globbing")}]},
        {"matcher": "Read|Write", "hooks": [{"type": "command", "command": deny("no reading")}]}
    ]}));
    let find = project
        .call(&hooks, "find", json!({"pattern": "*.rs"}))
        .await;
    assert_eq!(texts(&find), ["Blocked by PreToolUse hook: no globbing"]);
    let read = project.call(&hooks, "read", json!({"path": "a.rs"})).await;
    assert_eq!(texts(&read), ["Blocked by PreToolUse hook: no reading"]);
    let bash = project
        .call(&hooks, "bash", json!({"command": "echo ok"}))
        .await;
    assert_eq!(texts(&bash), ["ok\n"]);
}

#[tokio::test]
async fn ask_without_anyone_to_approve_fails_closed() {
    let project = Project::new();
    let hooks = project.hooks(one_hook(
        "PreToolUse",
        "bash",
        r#"echo '{"hookSpecificOutput": {"permissionDecision": "ask", "permissionDecisionReason": "touches CI"}}'"#,
        json!({}),
    ));
    let result = project
        .call(&hooks, "bash", json!({"command": "touch made.txt"}))
        .await;
    assert_eq!(
        texts(&result),
        [
            "Blocked: a PreToolUse hook asks for approval of this call, and no one can approve it here: touches CI (to let such calls run here, approve them with a PermissionRequest hook; or run in interactive or RPC mode, where the user is asked)"
        ]
    );
    assert!(!project.path().join("made.txt").exists());
}

/// A PreToolUse hook's `additionalContext` belongs to its call. Kept by
/// call id until the call's result, that of a call refused before running
/// was added to the next call of the same id (`second` then read `STALE
/// CONTEXT FROM FIRST CALL`); the model reads it with the refusal instead.
#[tokio::test]
async fn a_refused_calls_pre_tool_use_context_goes_with_its_refusal_not_a_later_call() {
    let project = Project::new();
    let hooks = project.hooks(one_hook(
        "PreToolUse",
        "bash",
        r#"grep -q SECRETCMD && echo '{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "ask", "additionalContext": "STALE CONTEXT FROM FIRST CALL"}}'; exit 0"#,
        json!({}),
    ));
    // `Project::call` gives every call the same id.
    let refused = project
        .call(&hooks, "bash", json!({"command": "echo SECRETCMD"}))
        .await;
    assert_eq!(
        texts(&refused),
        [
            "Blocked: a PreToolUse hook asks for approval of this call, and no one can approve it here (to let such calls run here, approve them with a PermissionRequest hook; or run in interactive or RPC mode, where the user is asked)\n\nPreToolUse hook additional context: STALE CONTEXT FROM FIRST CALL"
        ]
    );
    let later = project
        .call(&hooks, "bash", json!({"command": "echo second"}))
        .await;
    assert_eq!(texts(&later), ["second\n"]);
}

#[tokio::test]
async fn a_permission_request_hook_answers_a_pre_tool_use_ask_where_no_one_is_asked() {
    let project = Project::new();
    let mut settings = one_hook(
        "PreToolUse",
        "bash",
        r#"echo '{"hookSpecificOutput": {"permissionDecision": "ask", "updatedInput": {"command": "touch asked.txt"}}}'"#,
        json!({}),
    );
    // The PermissionRequest hook sees the arguments PreToolUse gave, and
    // keeps them by allowing without its own.
    settings["PermissionRequest"] = one_hook(
        "PermissionRequest",
        "bash",
        r#"grep -q 'touch asked.txt' && echo '{"hookSpecificOutput": {"decision": {"behavior": "allow"}}}'"#,
        json!({}),
    )["PermissionRequest"]
        .clone();
    let hooks = project.hooks(settings);
    let result = project
        .call(&hooks, "bash", json!({"command": "touch made.txt"}))
        .await;
    assert!(!result.is_error, "{result:?}");
    assert!(project.path().join("asked.txt").exists());
    assert!(!project.path().join("made.txt").exists());

    let denies = project.hooks(json!({
        "PreToolUse": one_hook("PreToolUse", "bash",
            r#"echo '{"hookSpecificOutput": {"permissionDecision": "ask"}}'"#, json!({}))["PreToolUse"],
        "PermissionRequest": one_hook("PermissionRequest", "bash",
            "echo 'not in this repository' >&2; exit 2", json!({}))["PermissionRequest"],
    }));
    let result = project
        .call(&denies, "bash", json!({"command": "touch made.txt"}))
        .await;
    assert_eq!(
        texts(&result),
        ["Blocked by PermissionRequest hook: not in this repository"]
    );
    assert!(!project.path().join("made.txt").exists());

    // A deny with `interrupt` cancels the run the call is part of.
    let interrupts = project.hooks(json!({
        "PreToolUse": one_hook("PreToolUse", "bash",
            r#"echo '{"hookSpecificOutput": {"permissionDecision": "ask"}}'"#, json!({}))["PreToolUse"],
        "PermissionRequest": one_hook("PermissionRequest", "bash",
            r#"echo '{"hookSpecificOutput": {"decision": {"behavior": "deny", "interrupt": true}}}'"#,
            json!({}))["PermissionRequest"],
    }));
    let run = CancellationToken::new();
    project
        .call_in(&denies, "bash", json!({"command": "touch made.txt"}), &run)
        .await;
    assert!(!run.is_cancelled(), "a deny without interrupt");
    let result = project
        .call_in(
            &interrupts,
            "bash",
            json!({"command": "touch made.txt"}),
            &run,
        )
        .await;
    assert!(result.is_error);
    assert!(run.is_cancelled(), "the run is stopped");
    assert!(!project.path().join("made.txt").exists());
}

/// Whether process `pid` is gone (or a zombie) within a few seconds.
async fn gone(pid: &str) -> bool {
    let pid: i32 = pid.parse().unwrap();
    for _ in 0..100 {
        if !modes_support::process_alive(pid) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

fn role(message: &Message) -> &'static str {
    match message {
        Message::User(_) => "user",
        Message::Assistant(_) => "assistant",
        _ => "other",
    }
}

/// A session over a scripted model with `hooks` (the `"hooks"` value).
fn session_with(
    project: &Project,
    hooks: Value,
    answers: usize,
) -> (Fixture, AgentSession, agent_ai::ScriptedProvider) {
    let fixture = Fixture::new();
    let script = (0..answers).map(|n| reply(vec![text(&format!("answer {n}"))]));
    let (session, provider) =
        fixture.session_with_hooks(&[], script.collect(), Some(Arc::new(project.hooks(hooks))));
    (fixture, session, provider)
}

#[tokio::test]
async fn user_prompt_submit_exit_2_refuses_the_prompt_before_the_model_sees_it() {
    let project = Project::new();
    let mut hooks = one_hook(
        "UserPromptSubmit",
        "",
        "grep -q password && { echo 'no secrets in prompts' >&2; exit 2; }; exit 0",
        json!({}),
    );
    hooks["SessionStart"] =
        one_hook("SessionStart", "", "echo 'branch: main'", json!({}))["SessionStart"].clone();
    let (_fixture, session, provider) = session_with(&project, hooks, 1);
    let (messages, warnings) = with_warnings(session.prompt(AgentSession::user_message(
        "my password is hunter2",
        Vec::new(),
    )))
    .await;
    // An error, not an empty success: each mode tells its reader (RPC a
    // second response, print mode stderr and exit status 1).
    match messages {
        Err(PromptError::Blocked(reason)) => assert_eq!(
            reason,
            "Prompt blocked by UserPromptSubmit hook: no secrets in prompts"
        ),
        other => panic!("{other:?}"),
    }
    assert!(provider.requests().is_empty());
    assert_eq!(warnings, Vec::<String>::new());
    // The session's start is still due: its context goes with the next
    // prompt sent (a refused first prompt lost it).
    session
        .prompt(AgentSession::user_message("hello", Vec::new()))
        .await
        .unwrap();
    let sent = format!("{:?}", provider.requests()[0].messages);
    assert!(
        sent.contains("SessionStart hook additional context: branch: main"),
        "{sent}"
    );
}

#[tokio::test]
async fn an_abort_kills_the_hooks_before_the_run_and_nothing_is_sent() {
    let project = Project::new();
    let (_fixture, session, provider) = session_with(
        &project,
        one_hook("UserPromptSubmit", "", "sleep 30", json!({})),
        1,
    );
    let aborting = async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        session.abort();
    };
    let started = Instant::now();
    let (outcome, ()) = tokio::join!(
        session.prompt(AgentSession::user_message("go", Vec::new())),
        aborting
    );
    assert!(matches!(outcome, Err(PromptError::Aborted)), "{outcome:?}");
    // Killed, not waited for: its 600 s default timeout would hold the test.
    assert!(started.elapsed() < Duration::from_secs(20));
    assert!(provider.requests().is_empty());
}

#[tokio::test]
async fn a_stop_hook_that_always_blocks_lets_the_agent_go_on_a_bounded_number_of_times() {
    let project = Project::new();
    let (_fixture, session, provider) = session_with(
        &project,
        one_hook(
            "Stop",
            "",
            r#"echo '{"decision": "block", "reason": "not done yet"}'"#,
            json!({}),
        ),
        MAX_STOP_CONTINUATIONS + 2,
    );
    let (messages, warnings) =
        with_warnings(session.prompt(AgentSession::user_message("go", Vec::new()))).await;
    let roles: Vec<&str> = messages.unwrap().iter().map(role).collect();
    assert_eq!(
        roles,
        ["user", "assistant"].repeat(MAX_STOP_CONTINUATIONS + 1)
    );
    let requests = provider.requests();
    assert_eq!(requests.len(), MAX_STOP_CONTINUATIONS + 1);
    let Some(Message::User(feedback)) = requests[1].messages.last() else {
        panic!("the second request ends with the hook's feedback")
    };
    assert_eq!(
        feedback.content,
        UserContent::Text("Stop hook feedback: not done yet".into())
    );
    assert_eq!(
        warnings,
        ["Warning: Stop hooks blocked 6 times in a row; the agent stops here"]
    );
}

/// `continue: false` lets the agent stop, and, as Claude Code shows it, its
/// `stopReason` is shown (it was dropped without a word).
#[tokio::test]
async fn a_stop_hooks_stop_reason_is_shown_and_the_agent_stops() {
    let project = Project::new();
    let (_fixture, session, provider) = session_with(
        &project,
        one_hook(
            "Stop",
            "",
            r#"echo '{"continue": false, "stopReason": "budget spent", "decision": "block", "reason": "go on"}'"#,
            json!({}),
        ),
        2,
    );
    let (messages, warnings) =
        with_warnings(session.prompt(AgentSession::user_message("go", Vec::new()))).await;
    let roles: Vec<&str> = messages.unwrap().iter().map(role).collect();
    assert_eq!(roles, ["user", "assistant"]);
    assert_eq!(provider.requests().len(), 1);
    assert_eq!(warnings, ["Warning: budget spent"]);
}
