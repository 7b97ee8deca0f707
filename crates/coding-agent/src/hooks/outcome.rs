//! What the runs of one event say together, read by Claude Code's rules:
//! exit 0 means stdout is the answer (JSON, or plain text that becomes
//! context for UserPromptSubmit and SessionStart), exit 2 blocks with stderr
//! as the reason, anything else (another code, a signal, a timeout, a command
//! that cannot start, garbled JSON, JSON of the wrong shape) is a warning, or
//! a block when the entry says `"onError": "block"`. A refusal in JSON of the
//! wrong shape, or after a log line, still refuses: safety fails closed.
//!
//! The texts here are what the model and the user read about hooks.

use std::time::Duration;

use serde_json::Value;

use super::config::{HookEvent, OnError};
use super::io::{
    HookDecision, HookOutput, PermissionBehavior, PermissionDecision, PermissionRequestAnswer,
};
use super::runner::{HookRun, RunStatus, STDOUT_LIMIT};

/// Claude Code caps text a hook injects at 10,000 characters.
pub const CONTEXT_LIMIT: usize = 10_000;

/// What the hooks of one event said.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Outcome {
    /// Reasons to refuse (the call, the prompt) or to go on (Stop): exit 2's
    /// stderr, `decision: "block"`'s reason, `permissionDecision: "deny"`'s
    /// reason, failures of `onError: "block"` entries.
    pub blocks: Vec<String>,
    /// The strongest of `allow` < `ask` < `defer` (a deny is in `blocks`).
    pub permission: Option<PermissionDecision>,
    /// The reasons given with `allow` or `ask`, for the user.
    pub permission_reasons: Vec<String>,
    /// The first `updatedInput`, in settings order.
    pub updated_input: Option<Value>,
    /// The first `updatedMCPToolOutput`, in settings order.
    pub updated_output: Option<Value>,
    /// Text for the model: `additionalContext`, or plain stdout where that counts.
    pub context: Vec<String>,
    /// `continue: false`: the reason to stop (its `stopReason`, or a default).
    pub stop: Option<String>,
    /// PermissionRequest: a deny said `interrupt: true`, stop the agent too.
    pub interrupt: bool,
    /// PermissionRequest: each allow's `updatedPermissions`, in settings order.
    pub updated_permissions: Vec<Value>,
    /// For the user: failures of fail-open hooks and `systemMessage`s.
    pub warnings: Vec<String>,
}

/// Reads the runs of `event`; every text in the outcome is cut to
/// [`CONTEXT_LIMIT`] characters (`Outcome::cap_texts`).
pub fn read_runs(event: HookEvent, runs: Vec<HookRun>) -> Outcome {
    let mut outcome = Outcome::default();
    for run in runs {
        match run.status {
            RunStatus::Exited(0) => read_stdout(event, &run, &mut outcome),
            RunStatus::Exited(2) if event.can_block() => {
                outcome.blocks.push(blocked_by_exit_2(event, &run));
            }
            _ => {
                let failure = failure(event, &run.command, &run.status, run.stderr.trim());
                push_failure(&mut outcome, run.on_error, failure);
            }
        }
    }
    if !event.can_block() {
        // Shown, not dropped: they were lost unseen, so `"onError":
        // "block"` showed less than `warn`, and exit 2's stderr nothing.
        outcome.warnings.append(&mut outcome.blocks);
    }
    outcome.cap_texts();
    outcome
}

impl Outcome {
    /// Cuts every text a hook supplied (reasons, context, `stopReason`,
    /// messages, warnings) to [`CONTEXT_LIMIT`] characters, in one place:
    /// each may reach the model, the session file and every later request,
    /// so a hook that writes megabytes must not put them there. A line
    /// after the cut says how much was left out: exit 2's stderr ended
    /// mid-word at 10,000 characters, read as the whole reason.
    fn cap_texts(&mut self) {
        let texts = self
            .blocks
            .iter_mut()
            .chain(&mut self.permission_reasons)
            .chain(&mut self.context)
            .chain(&mut self.stop)
            .chain(&mut self.warnings);
        for text in texts {
            if let Some((end, _)) = text.char_indices().nth(CONTEXT_LIMIT) {
                let left_out = text[end..].chars().count();
                text.truncate(end);
                text.push_str(&cut_marker(left_out));
            }
        }
    }
}

/// What ends a text cut by `Outcome::cap_texts`.
fn cut_marker(left_out: usize) -> String {
    format!(
        "\n\n[... {left_out} more characters cut: a hook's text is capped at {CONTEXT_LIMIT} characters]"
    )
}

fn push_failure(outcome: &mut Outcome, on_error: OnError, failure: String) {
    match on_error {
        OnError::Warn => outcome.warnings.push(failure),
        OnError::Block => outcome.blocks.push(failure),
    }
}

fn read_stdout(event: HookEvent, run: &HookRun, outcome: &mut Outcome) {
    let stdout = run.stdout.trim();
    if stdout.is_empty() {
        return;
    }
    // Plain text as much as JSON: the start of a cut answer is not the
    // answer (a prompt's context would be the first 10,000 characters of
    // whatever ran away).
    if run.stdout_cut {
        let failure = format!(
            "{event} hook \"{}\" wrote more than {} MiB on stdout: its answer was not read",
            run.command,
            STDOUT_LIMIT / (1024 * 1024)
        );
        return push_failure(outcome, run.on_error, failure);
    }
    if !stdout.starts_with('{') {
        return read_plain(event, run, stdout, outcome);
    }
    let error = match serde_json::from_str::<HookOutput>(stdout) {
        Ok(output) => return read_output(event, &run.command, output, outcome),
        Err(error) => error,
    };
    let Ok(answer) = serde_json::from_str::<Value>(stdout) else {
        let failure = format!(
            "{event} hook \"{}\" wrote invalid JSON: {error}",
            run.command
        );
        return push_failure(outcome, run.on_error, failure);
    };
    let problem = format!("wrote JSON that does not fit {event}'s answer: {error}");
    read_unread_answer(event, run, &answer, &problem, outcome);
}

/// Stdout that does not start with `{`: plain text, as Claude Code reads
/// it (context for UserPromptSubmit and SessionStart, nothing for the other
/// events), except what is plainly a failed answer. A guard that printed a
/// log line before its `permissionDecision: "deny"` let the call run
/// unseen, even with `"onError": "block"`; one that printed `[1,2]` was
/// ignored unseen too.
fn read_plain(event: HookEvent, run: &HookRun, stdout: &str, outcome: &mut Outcome) {
    let text_is_context = matches!(event, HookEvent::UserPromptSubmit | HookEvent::SessionStart);
    if text_is_context {
        outcome.context.push(stdout.to_owned());
    }
    // `stdout` is trimmed: its last line is not empty.
    let last_line = stdout.lines().next_back().unwrap_or_default().trim();
    if let Ok(answer @ Value::Object(_)) = serde_json::from_str::<Value>(last_line) {
        let problem = "wrote other text before its JSON answer: the JSON must be all of a \
            hook's stdout (write log lines to stderr), so only a refusal in it is heeded";
        return read_unread_answer(event, run, &answer, problem, outcome);
    }
    // Only a warning, whatever `onError` says: Claude Code reads it as
    // plain text, which answers nothing, and a hook that prints a count
    // (`3`) is no broken guard.
    if !text_is_context && let Ok(value) = serde_json::from_str::<Value>(stdout) {
        outcome.warnings.push(format!(
            "{event} hook \"{}\" wrote JSON that is not an object ({}), so it answered nothing: \
             an answer is a JSON object such as {{\"decision\": \"block\", \"reason\": \"...\"}}",
            run.command,
            json_kind(&value)
        ));
    }
}

/// `an array`, `a string`, ... for a warning.
fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// An answer that is a JSON object but could not be read as one (it does
/// not fit the event's shape, or other text came before it; `problem` says
/// which): a failure of the hook, a warning or a block as its `onError`
/// says. A refusal in it still refuses, with the warning: safety fails
/// closed.
fn read_unread_answer(
    event: HookEvent,
    run: &HookRun,
    answer: &Value,
    problem: &str,
    outcome: &mut Outcome,
) {
    let failure = format!("{event} hook \"{}\" {problem}", run.command);
    let Some(reason) = refusal(event, answer, outcome) else {
        return push_failure(outcome, run.on_error, failure);
    };
    // The refusal is the block; the user still learns what was wrong.
    outcome.warnings.push(failure);
    let reason = reason
        .as_str()
        .filter(|r| !r.trim().is_empty())
        .map_or_else(
            || {
                format!(
                    "{event} hook \"{}\" refused in an answer that could not be read whole: it {problem}",
                    run.command
                )
            },
            str::to_owned,
        );
    outcome.blocks.push(reason);
}

/// The reason field (`Null` when absent) of the refusal in an `answer` that
/// is JSON but not of the event's shape: `decision: "block"`,
/// `permissionDecision: "deny"`, a PermissionRequest deny (whose
/// `interrupt: true` holds too). Such an answer is otherwise ignored, and a
/// deny whose reason was a list let the call run. Read in any case
/// (`"DENY"`): that guard's call ran too, its intent plain.
fn refusal<'a>(event: HookEvent, answer: &'a Value, outcome: &mut Outcome) -> Option<&'a Value> {
    let is =
        |value: &Value, word: &str| value.as_str().is_some_and(|v| v.eq_ignore_ascii_case(word));
    let specific = &answer["hookSpecificOutput"];
    let request = &specific["decision"];
    if is(&answer["decision"], "block") {
        Some(&answer["reason"])
    } else if is(&specific["permissionDecision"], "deny") {
        Some(&specific["permissionDecisionReason"])
    } else if event == HookEvent::PermissionRequest && is(&request["behavior"], "deny") {
        outcome.interrupt |= request["interrupt"] == true;
        Some(&request["message"])
    } else {
        None
    }
}

fn read_output(event: HookEvent, command: &str, output: HookOutput, outcome: &mut Outcome) {
    if let Some(message) = output.system_message.filter(|m| !m.trim().is_empty()) {
        outcome.warnings.push(message);
    }
    if output.continue_ == Some(false) {
        let reason = output
            .stop_reason
            .filter(|r| !r.trim().is_empty())
            .unwrap_or_else(|| format!("{event} hook \"{command}\" stopped the agent"));
        outcome.stop.get_or_insert(reason);
    }
    let reason = output.reason.filter(|r| !r.trim().is_empty());
    match output.decision {
        Some(HookDecision::Block) => outcome.blocks.push(
            reason
                .unwrap_or_else(|| format!("{event} hook \"{command}\" blocked without a reason")),
        ),
        Some(HookDecision::Approve) => {
            outcome.permission = outcome.permission.max(Some(PermissionDecision::Allow))
        }
        None => {}
    }
    let Some(specific) = output.hook_specific_output else {
        return;
    };
    let reason = specific
        .permission_decision_reason
        .filter(|r| !r.trim().is_empty());
    match specific.permission_decision {
        Some(PermissionDecision::Deny) => outcome
            .blocks
            .push(reason.unwrap_or_else(|| format!("{event} hook \"{command}\" denied this call"))),
        Some(decision) => {
            outcome.permission = outcome.permission.max(Some(decision));
            outcome.permission_reasons.extend(reason);
        }
        None => {}
    }
    if outcome.updated_input.is_none() {
        outcome.updated_input = specific.updated_input;
    }
    if outcome.updated_output.is_none() {
        outcome.updated_output = specific.updated_mcp_tool_output;
    }
    if let Some(context) = specific.additional_context.filter(|c| !c.trim().is_empty()) {
        outcome.context.push(context.trim().to_owned());
    }
    if let Some(answer) = specific
        .decision
        .filter(|_| event == HookEvent::PermissionRequest)
    {
        read_request_answer(command, answer, outcome);
    }
}

/// PermissionRequest's `decision`: a deny joins the blocks (it wins over
/// any allow), an allow is an `allow` permission with its arguments.
fn read_request_answer(command: &str, answer: PermissionRequestAnswer, outcome: &mut Outcome) {
    match answer.behavior {
        PermissionBehavior::Deny => {
            outcome.interrupt |= answer.interrupt == Some(true);
            outcome.blocks.push(
                answer
                    .message
                    .filter(|m| !m.trim().is_empty())
                    .unwrap_or_else(|| {
                        format!("PermissionRequest hook \"{command}\" denied this call")
                    }),
            );
        }
        PermissionBehavior::Allow => {
            outcome.permission = outcome.permission.max(Some(PermissionDecision::Allow));
            if outcome.updated_input.is_none() {
                outcome.updated_input = answer.updated_input;
            }
            outcome
                .updated_permissions
                .extend(answer.updated_permissions);
        }
    }
}

fn blocked_by_exit_2(event: HookEvent, run: &HookRun) -> String {
    let stderr = run.stderr.trim();
    if stderr.is_empty() {
        format!(
            "{event} hook \"{}\" exited with code 2 without a reason on stderr",
            run.command
        )
    } else {
        stderr.to_owned()
    }
}

/// The text of a failed run, with its stderr when it wrote one.
fn failure(event: HookEvent, command: &str, status: &RunStatus, stderr: &str) -> String {
    let what = match status {
        RunStatus::Exited(code) => format!("failed with exit code {code}"),
        RunStatus::Signalled(signal) => format!("was killed by {signal}"),
        RunStatus::TimedOut(timeout) => {
            format!("timed out after {} and was killed", seconds(*timeout))
        }
        RunStatus::Aborted => "was aborted".to_owned(),
        RunStatus::SpawnFailed(error) => format!("could not start: {error}"),
        RunStatus::RequestFailed(what) => what.clone(),
    };
    let mut text = format!("{event} hook \"{command}\" {what}");
    if !stderr.is_empty() {
        text.push_str(": ");
        text.push_str(stderr);
    }
    text
}

/// `1.5s`, `60s` (f64's Display writes no `.0`).
pub(super) fn seconds(duration: Duration) -> String {
    format!("{}s", duration.as_secs_f64())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::json;

    use super::*;

    fn run(status: RunStatus, stdout: &str, stderr: &str, on_error: OnError) -> HookRun {
        HookRun {
            command: "hook.sh".into(),
            on_error,
            status,
            stdout: stdout.into(),
            stdout_cut: false,
            stderr: stderr.into(),
        }
    }

    fn exited(code: i32, stdout: &str, stderr: &str) -> HookRun {
        run(RunStatus::Exited(code), stdout, stderr, OnError::Warn)
    }

    #[test]
    fn exit_2_blocks_with_stderr_and_ignores_stdout() {
        let outcome = read_runs(
            HookEvent::PreToolUse,
            vec![exited(
                2,
                "{\"decision\":\"approve\"}",
                "rm is not allowed\n",
            )],
        );
        assert_eq!(
            outcome,
            Outcome {
                blocks: vec!["rm is not allowed".into()],
                ..Outcome::default()
            }
        );
        let silent = read_runs(HookEvent::PreToolUse, vec![exited(2, "", "")]);
        assert_eq!(
            silent.blocks,
            ["PreToolUse hook \"hook.sh\" exited with code 2 without a reason on stderr"]
        );
    }

    #[test]
    fn failures_warn_by_default_and_block_when_the_entry_says_so() {
        let runs = |on_error| {
            vec![
                run(RunStatus::Exited(1), "", "jq: not found\n", on_error),
                run(
                    RunStatus::TimedOut(Duration::from_millis(1500)),
                    "",
                    "",
                    on_error,
                ),
                run(RunStatus::Signalled("SIGSEGV".into()), "", "", on_error),
                run(
                    RunStatus::SpawnFailed("No such file".into()),
                    "",
                    "",
                    on_error,
                ),
                run(RunStatus::Exited(0), "{not json", "", on_error),
                HookRun {
                    stdout_cut: true,
                    ..run(
                        RunStatus::Exited(0),
                        "{\"decision\":\"block\"",
                        "",
                        on_error,
                    )
                },
                HookRun {
                    stdout_cut: true,
                    ..run(RunStatus::Exited(0), "AAAAAAAA", "", on_error)
                },
            ]
        };
        let texts = [
            "PreToolUse hook \"hook.sh\" failed with exit code 1: jq: not found",
            "PreToolUse hook \"hook.sh\" timed out after 1.5s and was killed",
            "PreToolUse hook \"hook.sh\" was killed by SIGSEGV",
            "PreToolUse hook \"hook.sh\" could not start: No such file",
            "PreToolUse hook \"hook.sh\" wrote invalid JSON: key must be a string at line 1 column 2",
            "PreToolUse hook \"hook.sh\" wrote more than 16 MiB on stdout: its answer was not read",
            "PreToolUse hook \"hook.sh\" wrote more than 16 MiB on stdout: its answer was not read",
        ];
        assert_eq!(
            read_runs(HookEvent::PreToolUse, runs(OnError::Warn)),
            Outcome {
                warnings: texts.map(String::from).to_vec(),
                ..Outcome::default()
            }
        );
        assert_eq!(
            read_runs(HookEvent::PreToolUse, runs(OnError::Block)),
            Outcome {
                blocks: texts.map(String::from).to_vec(),
                ..Outcome::default()
            }
        );
    }

    /// SessionStart, SessionEnd and Notification refuse nothing: what would
    /// block them is shown as a warning. It was dropped unseen, so
    /// `"onError": "block"` showed less than `warn` did.
    #[test]
    fn what_would_block_an_event_that_cannot_block_is_a_warning() {
        for event in [
            HookEvent::SessionStart,
            HookEvent::SessionEnd,
            HookEvent::Notification,
        ] {
            let outcome = read_runs(
                event,
                vec![
                    exited(2, "", "cleanup failed: disk full\n"),
                    run(RunStatus::Exited(1), "", "setup failed", OnError::Block),
                    exited(0, r#"{"decision": "block", "reason": "not now"}"#, ""),
                ],
            );
            assert_eq!(
                outcome,
                Outcome {
                    warnings: vec![
                        format!(
                            "{event} hook \"hook.sh\" failed with exit code 2: cleanup failed: disk full"
                        ),
                        format!("{event} hook \"hook.sh\" failed with exit code 1: setup failed"),
                        "not now".into(),
                    ],
                    ..Outcome::default()
                },
                "{event}"
            );
        }
    }

    #[test]
    fn permission_request_decisions_allow_with_arguments_and_a_deny_wins() {
        let answer = |decision: Value| {
            json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest",
                "decision": decision}})
            .to_string()
        };
        let allow = answer(json!({"behavior": "allow", "updatedInput": {"command": "ls"}}));
        let allowed = read_runs(HookEvent::PermissionRequest, vec![exited(0, &allow, "")]);
        assert_eq!(
            allowed,
            Outcome {
                permission: Some(PermissionDecision::Allow),
                updated_input: Some(json!({"command": "ls"})),
                ..Outcome::default()
            }
        );
        let deny = answer(json!({"behavior": "deny", "message": "not on Fridays"}));
        let silent_deny = answer(json!({"behavior": "deny"}));
        let denied = read_runs(
            HookEvent::PermissionRequest,
            vec![
                exited(0, &allow, ""),
                exited(0, &deny, ""),
                exited(0, &silent_deny, ""),
            ],
        );
        assert_eq!(
            denied.blocks,
            [
                "not on Fridays",
                "PermissionRequest hook \"hook.sh\" denied this call"
            ]
        );
        // Another event's `decision` object means nothing.
        let other = read_runs(HookEvent::PreToolUse, vec![exited(0, &deny, "")]);
        assert_eq!(other, Outcome::default());
    }

    #[test]
    fn pre_tool_use_json_decisions_combine_deny_over_defer_over_ask_over_allow() {
        let answer = |decision: &str, reason: &str| {
            json!({"hookSpecificOutput": {"hookEventName": "PreToolUse",
                "permissionDecision": decision, "permissionDecisionReason": reason}})
            .to_string()
        };
        let outcome = read_runs(
            HookEvent::PreToolUse,
            vec![
                exited(0, &answer("allow", "known safe"), ""),
                exited(0, &answer("ask", "touches CI"), ""),
            ],
        );
        assert_eq!(
            outcome,
            Outcome {
                permission: Some(PermissionDecision::Ask),
                permission_reasons: vec!["known safe".into(), "touches CI".into()],
                ..Outcome::default()
            }
        );
        let deferred = read_runs(
            HookEvent::PreToolUse,
            vec![
                exited(0, &answer("ask", ""), ""),
                exited(0, &answer("defer", ""), ""),
            ],
        );
        assert_eq!(deferred.permission, Some(PermissionDecision::Defer));
        let denied = read_runs(
            HookEvent::PreToolUse,
            vec![
                exited(0, &answer("allow", ""), ""),
                exited(0, &answer("deny", "no network"), ""),
            ],
        );
        assert_eq!(denied.blocks, ["no network"]);
        assert_eq!(denied.permission, Some(PermissionDecision::Allow));
    }

    #[test]
    fn updated_input_context_and_stop_are_read_from_json() {
        let outcome = read_runs(
            HookEvent::PreToolUse,
            vec![
                exited(
                    0,
                    &json!({
                        "continue": false,
                        "stopReason": "budget spent",
                        "systemMessage": "rewrote the command",
                        "hookSpecificOutput": {
                            "hookEventName": "PreToolUse",
                            "updatedInput": {"command": "ls -a"},
                            "additionalContext": "  the repo is read-only today\n"
                        }
                    })
                    .to_string(),
                    "",
                ),
                exited(
                    0,
                    &json!({"hookSpecificOutput": {"updatedInput": {"command": "second"}}})
                        .to_string(),
                    "",
                ),
            ],
        );
        assert_eq!(
            outcome,
            Outcome {
                updated_input: Some(json!({"command": "ls -a"})),
                context: vec!["the repo is read-only today".into()],
                stop: Some("budget spent".into()),
                warnings: vec!["rewrote the command".into()],
                ..Outcome::default()
            }
        );
    }

    #[test]
    fn plain_stdout_is_context_only_for_prompt_and_session_start() {
        for event in [HookEvent::UserPromptSubmit, HookEvent::SessionStart] {
            let outcome = read_runs(event, vec![exited(0, "branch: main\n", "")]);
            assert_eq!(outcome.context, ["branch: main"], "{event}");
        }
        for event in [
            HookEvent::PreToolUse,
            HookEvent::PostToolUse,
            HookEvent::Stop,
        ] {
            let outcome = read_runs(event, vec![exited(0, "branch: main\n", "")]);
            assert_eq!(outcome, Outcome::default(), "{event}");
        }
    }

    #[test]
    fn decision_block_uses_its_reason_or_names_the_hook() {
        let outcome = read_runs(
            HookEvent::Stop,
            vec![
                exited(0, r#"{"decision": "block", "reason": "tests fail"}"#, ""),
                exited(0, r#"{"decision": "block"}"#, ""),
            ],
        );
        assert_eq!(
            outcome.blocks,
            [
                "tests fail",
                "Stop hook \"hook.sh\" blocked without a reason"
            ]
        );
    }

    /// A deny whose reason was a list made the whole answer unreadable, so
    /// the call ran: a refusal holds whatever else its answer got wrong.
    #[test]
    fn a_refusal_in_json_of_the_wrong_shape_still_refuses_with_a_warning() {
        let answer = |value: Value| exited(0, &value.to_string(), "");
        let outcome = read_runs(
            HookEvent::PreToolUse,
            vec![
                answer(json!({"hookSpecificOutput": {"permissionDecision": "deny",
                    "permissionDecisionReason": ["list"]}})),
                answer(json!({"decision": "block", "reason": "no network",
                    "systemMessage": 5})),
            ],
        );
        let misfit = "PreToolUse hook \"hook.sh\" wrote JSON that does not fit PreToolUse's answer: invalid type:";
        assert_eq!(outcome.blocks.len(), 2, "{outcome:?}");
        assert!(
            outcome.blocks[0].starts_with(
                "PreToolUse hook \"hook.sh\" refused in an answer that could not be read whole: it wrote JSON that does not fit PreToolUse's answer: invalid type: sequence"
            ),
            "{outcome:?}"
        );
        assert_eq!(outcome.blocks[1], "no network");
        assert_eq!(outcome.warnings.len(), 2, "{outcome:?}");
        assert!(
            outcome.warnings.iter().all(|w| w.starts_with(misfit)),
            "{outcome:?}"
        );
        let outcome = read_runs(
            HookEvent::PermissionRequest,
            vec![answer(json!({"hookSpecificOutput": {"decision":
                {"behavior": "deny", "message": "not here", "interrupt": true,
                 "updatedPermissions": 1}}, "continue": "no"}))],
        );
        assert_eq!(
            (outcome.blocks, outcome.interrupt),
            (vec!["not here".to_owned()], true)
        );
        // Nothing refused: the answer is ignored with the warning, as before.
        let outcome = read_runs(
            HookEvent::PreToolUse,
            vec![answer(
                json!({"hookSpecificOutput": {"permissionDecision": "allow",
                "permissionDecisionReason": 1}}),
            )],
        );
        assert_eq!(outcome.permission, None);
        assert!(outcome.blocks.is_empty());
        assert!(outcome.warnings[0].starts_with(misfit), "{outcome:?}");
    }

    fn deny(reason: &str) -> String {
        json!({"hookSpecificOutput": {"hookEventName": "PreToolUse",
            "permissionDecision": "deny", "permissionDecisionReason": reason}})
        .to_string()
    }

    /// A guard that printed a log line before its deny let the call run
    /// unseen, even with `"onError": "block"`: its JSON is not read as the
    /// answer (Claude Code reads such stdout as plain text), but a refusal
    /// in it refuses, and the hook's mistake is named.
    #[test]
    fn a_json_answer_after_other_text_is_a_failure_whose_refusal_still_refuses() {
        let problem = "PreToolUse hook \"hook.sh\" wrote other text before its JSON answer: the JSON must be all of a hook's stdout (write log lines to stderr), so only a refusal in it is heeded";
        let denied = read_runs(
            HookEvent::PreToolUse,
            vec![exited(0, &format!("checking rm\n{}\n", deny("no rm")), "")],
        );
        assert_eq!(
            denied,
            Outcome {
                blocks: vec!["no rm".into()],
                warnings: vec![problem.into()],
                ..Outcome::default()
            }
        );
        let allow = r#"checking ls
{"hookSpecificOutput": {"permissionDecision": "allow"}}"#;
        for on_error in [OnError::Warn, OnError::Block] {
            let outcome = read_runs(
                HookEvent::PreToolUse,
                vec![run(RunStatus::Exited(0), allow, "", on_error)],
            );
            let failed = vec![problem.to_owned()];
            let expected = match on_error {
                OnError::Warn => Outcome {
                    warnings: failed,
                    ..Outcome::default()
                },
                OnError::Block => Outcome {
                    blocks: failed,
                    ..Outcome::default()
                },
            };
            assert_eq!(outcome, expected, "{on_error:?}");
        }
        // Where plain text is context, it still is, and the mistake is named.
        let stdout = "branch: main\n{\"decision\": \"block\"}";
        let outcome = read_runs(HookEvent::UserPromptSubmit, vec![exited(0, stdout, "")]);
        assert_eq!(outcome.context, [stdout]);
        assert_eq!(
            outcome.blocks,
            [
                "UserPromptSubmit hook \"hook.sh\" refused in an answer that could not be read whole: it wrote other text before its JSON answer: the JSON must be all of a hook's stdout (write log lines to stderr), so only a refusal in it is heeded"
            ]
        );
    }

    /// `[1,2]` was dropped unseen. It answers nothing, as plain text does
    /// (Claude Code's reading), so it is a warning even with `"onError":
    /// "block"`; where plain text is context it is context.
    #[test]
    fn json_that_is_not_an_object_is_a_warning_naming_the_hook() {
        for (stdout, kind) in [
            ("[1,2]", "an array"),
            ("\"x\"", "a string"),
            ("3", "a number"),
        ] {
            let outcome = read_runs(
                HookEvent::PreToolUse,
                vec![run(RunStatus::Exited(0), stdout, "", OnError::Block)],
            );
            assert_eq!(
                outcome,
                Outcome {
                    warnings: vec![format!(
                        "PreToolUse hook \"hook.sh\" wrote JSON that is not an object ({kind}), so it answered nothing: an answer is a JSON object such as {{\"decision\": \"block\", \"reason\": \"...\"}}"
                    )],
                    ..Outcome::default()
                }
            );
            let context = read_runs(HookEvent::UserPromptSubmit, vec![exited(0, stdout, "")]);
            assert_eq!(
                context,
                Outcome {
                    context: vec![stdout.into()],
                    ..Outcome::default()
                }
            );
        }
    }

    /// A decision that is none of the known words is an answer that does
    /// not fit: a guard with `"onError": "block"` whose answer cannot be
    /// read blocks. `"DENY"` is read as the deny it plainly is (the call
    /// ran), and a top-level `"decision": "deny"` is no longer ignored
    /// unseen.
    #[test]
    fn an_unknown_decision_fails_and_a_capitalised_refusal_still_refuses() {
        let capitalised = read_runs(
            HookEvent::PreToolUse,
            vec![exited(0, &deny("no rm").replace("deny", "DENY"), "")],
        );
        assert_eq!(capitalised.blocks, ["no rm"]);
        assert!(
            capitalised.warnings[0].starts_with(
                "PreToolUse hook \"hook.sh\" wrote JSON that does not fit PreToolUse's answer: unknown variant `DENY`"
            ),
            "{capitalised:?}"
        );
        let blocked = read_runs(
            HookEvent::Stop,
            vec![exited(
                0,
                r#"{"decision": "BLOCK", "reason": "tests fail"}"#,
                "",
            )],
        );
        assert_eq!(blocked.blocks, ["tests fail"]);
        let unknown = [
            deny("").replace("deny", "maybe"),
            r#"{"decision": "deny", "reason": "no"}"#.to_owned(),
        ];
        for stdout in &unknown {
            let warned = read_runs(HookEvent::PreToolUse, vec![exited(0, stdout, "")]);
            assert!(warned.blocks.is_empty(), "{warned:?}");
            assert!(warned.warnings[0].contains("unknown variant"), "{warned:?}");
            let failed = read_runs(
                HookEvent::PreToolUse,
                vec![run(RunStatus::Exited(0), stdout, "", OnError::Block)],
            );
            assert_eq!(failed.blocks, warned.warnings, "{stdout}");
            assert!(failed.warnings.is_empty(), "{failed:?}");
        }
    }

    #[test]
    fn injected_text_is_capped_at_ten_thousand_characters() {
        let long = "é".repeat(CONTEXT_LIMIT + 5);
        let outcome = read_runs(HookEvent::SessionStart, vec![exited(0, &long, "")]);
        assert_eq!(
            outcome.context,
            [format!(
                "{}\n\n[... 5 more characters cut: a hook's text is capped at 10000 characters]",
                "é".repeat(CONTEXT_LIMIT)
            )]
        );
    }

    /// Exit 2's stderr ended mid-word at 10,000 characters, read as the
    /// whole reason: the model is told how much it did not get.
    #[test]
    fn a_cut_reason_says_how_much_was_left_out() {
        let stderr = format!("{}tail of the reason", "x".repeat(CONTEXT_LIMIT));
        let outcome = read_runs(HookEvent::PreToolUse, vec![exited(2, "", &stderr)]);
        assert_eq!(
            outcome.blocks,
            [format!(
                "{}\n\n[... 18 more characters cut: a hook's text is capped at 10000 characters]",
                "x".repeat(CONTEXT_LIMIT)
            )]
        );
    }

    /// Every text a hook's JSON supplies is capped as its context is: a
    /// deny's or an ask's reason, a block's reason, `stopReason`, a
    /// PermissionRequest deny's message, `systemMessage`.
    #[test]
    fn every_text_a_hook_supplies_is_capped() {
        let long = "é".repeat(CONTEXT_LIMIT + 5);
        let cut = format!("{}{}", "é".repeat(CONTEXT_LIMIT), cut_marker(5));
        let cut = cut.as_str();
        let answer = |value: Value| exited(0, &value.to_string(), "");
        let outcome = read_runs(
            HookEvent::PreToolUse,
            vec![
                answer(json!({"hookSpecificOutput": {"permissionDecision": "deny",
                    "permissionDecisionReason": long}})),
                answer(
                    json!({"decision": "block", "reason": long, "systemMessage": long,
                    "continue": false, "stopReason": long}),
                ),
                answer(json!({"hookSpecificOutput": {"permissionDecision": "ask",
                    "permissionDecisionReason": long}})),
            ],
        );
        assert_eq!(outcome.blocks, [cut, cut]);
        assert_eq!(outcome.permission_reasons, [cut]);
        assert_eq!(outcome.stop.as_deref(), Some(cut));
        assert_eq!(outcome.warnings, [cut]);
        let outcome = read_runs(
            HookEvent::PermissionRequest,
            vec![answer(json!({"hookSpecificOutput": {"decision":
                {"behavior": "deny", "message": long}}}))],
        );
        assert_eq!(outcome.blocks, [cut]);
    }
}
