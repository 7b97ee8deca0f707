//! `prompt` and `agent` hooks: a model reads the event and says whether the
//! agent may go on, as Claude Code's prompt and agent hooks do. The hook's
//! prompt, with `$ARGUMENTS` replaced by the event's JSON (appended when the
//! prompt does not name it), goes to the session's model (or the hook's
//! `model`, by id on the same provider) with no history. A prompt hook's
//! model has no tools: one answer. An agent hook's may first read the
//! project with the read-only tools (read, grep, find, ls), for at most
//! [`MAX_AGENT_TURNS`] turns. The answer `{"ok": true}` is a command's exit
//! 0; `{"ok": false, "reason": "..."}` is its exit 2 with the reason on
//! stderr, so each event acts on it as on a command's block. An answer that
//! says neither, a failed request, no model to ask and the timeout are
//! failures (a warning, or a block with `"onError": "block"`).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use agent_ai::{Message, Model, Provider, StopReason};
use agent_core::{Agent, AgentContext, LoopConfig, ModelHandle, ToolCallHooks, ToolSet};
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use super::config::PromptHook;
use super::runner::RunStatus;
use crate::definition::ToolDefinition;
use crate::support::one_shot::{Question, Unanswered, ask_once};

/// A verdict prompt: the task, what the model may do before it answers
/// (`lead`, which ends in "answer"), and the answer's shape, written once
/// for both kinds of hook.
macro_rules! verdict_prompt {
    ($lead:literal) => {
        concat!(
            "You check one step of a coding agent for a hook its user configured. Follow the \
             user's instructions to judge the event they describe (given as JSON). ",
            $lead,
            " with one JSON object and nothing else: {\"ok\": true} to let the step go \
             on, or {\"ok\": false, \"reason\": \"what is wrong, for the agent to read\"} to \
             stop it."
        )
    };
}

/// What a prompt hook's model is told it is doing.
pub const JUDGE_SYSTEM_PROMPT: &str = verdict_prompt!("Answer");

/// What an agent hook's model is told it is doing.
pub const INVESTIGATOR_SYSTEM_PROMPT: &str = verdict_prompt!(
    "You may look at the project first with the read, grep, find and ls tools (they cannot \
     change anything). When you know, answer"
);

/// The read-only tools an agent hook's model may use.
const INVESTIGATOR_TOOLS: [&str; 4] = ["read", "grep", "find", "ls"];

/// Turns an agent hook's model may take (Claude Code's limit): a model
/// that keeps reading stops there and its last answer is read.
pub const MAX_AGENT_TURNS: usize = 50;

/// The answer's length at the most: a verdict and a reason.
const MAX_ANSWER_TOKENS: u32 = 1024;

/// What prompt and agent hooks ask with, set by the session.
#[derive(Clone, Default)]
pub struct Asking {
    /// The session's model, as it is at the time.
    pub model: Option<ModelHandle>,
    /// Judges an agent hook's model's tool calls: the permission policy
    /// (a deny rule on `read` holds for it too); none outside a guard.
    pub tool_check: Option<Arc<dyn ToolCallHooks>>,
    /// The tools an agent hook's model reads the project with, when they
    /// are not this machine's in the hooks' folder: with `--remote`, the
    /// remote host's, so it reads the files the agent's calls act on.
    pub project_tools: Option<Arc<ToolSet>>,
}

impl std::fmt::Debug for Asking {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Asking")
            .field("model", &self.model.is_some())
            .field("tool_check", &self.tool_check.is_some())
            .field("project_tools", &self.project_tools.is_some())
            .finish()
    }
}

/// How a verdict ended: its status, and the reason of a `false` one (the
/// "stderr" a block reads).
pub(super) struct Verdict {
    pub status: RunStatus,
    pub reason: String,
}

/// Asks the model `hook` names for its verdict on the event `input`.
pub(super) async fn judge(
    hook: &PromptHook,
    asking: &Asking,
    input: &[u8],
    timeout: Duration,
    cancel: &CancellationToken,
) -> Verdict {
    let Some((model, provider)) = hook_model(hook, asking.model.as_ref()) else {
        return failed("has no model to ask (prompt hooks run in a session)".to_owned());
    };
    let question = Question {
        system_prompt: JUDGE_SYSTEM_PROMPT,
        request: with_arguments(&hook.prompt, &String::from_utf8_lossy(input)),
        max_tokens: MAX_ANSWER_TOKENS,
        reasoning: None,
    };
    let answer = tokio::select! {
        answer = ask_once(&model, &provider, question, cancel) => answer,
        () = tokio::time::sleep(timeout) => return status(RunStatus::no_answer_within(timeout)),
    };
    match answer {
        Ok(text) => read_verdict(&text),
        Err(Unanswered::Cancelled) => status(RunStatus::Aborted),
        Err(Unanswered::Failed(error)) => failed(format!("could not ask {}: {error}", model.id)),
    }
}

/// Lets the model `hook` names read the project in `cwd` with the
/// read-only tools (each call judged by `asking.tool_check`), then asks for
/// its verdict on the event `input`.
pub(super) async fn investigate(
    hook: &PromptHook,
    asking: &Asking,
    input: &[u8],
    cwd: &Path,
    timeout: Duration,
    cancel: &CancellationToken,
) -> Verdict {
    let Some((model, provider)) = hook_model(hook, asking.model.as_ref()) else {
        return failed("has no model to ask (agent hooks run in a session)".to_owned());
    };
    let tools = match &asking.project_tools {
        Some(tools) => Arc::clone(tools),
        None => match investigator_tools(crate::tools::builtin_tool, cwd.to_path_buf()) {
            Ok(tools) => Arc::new(tools),
            Err(error) => return failed(format!("cannot give its model tools: {error}")),
        },
    };
    let model_id = model.id.clone();
    let mut config = LoopConfig::new(model, provider);
    if let Some(check) = &asking.tool_check {
        config.hooks = check.clone();
    }
    let turns = AtomicUsize::new(0);
    config.should_stop_after_turn = Some(Arc::new(move |_turn: &agent_core::TurnSummary<'_>| {
        turns.fetch_add(1, Ordering::Relaxed) + 1 >= MAX_AGENT_TURNS
    }));
    let context = AgentContext::new(Some(INVESTIGATOR_SYSTEM_PROMPT.to_owned()), tools);
    let agent = Agent::new(config, context);
    let request = with_arguments(&hook.prompt, &String::from_utf8_lossy(input));
    let messages = tokio::select! {
        messages = agent.prompt(request) => messages,
        () = cancel.cancelled() => {
            agent.abort();
            return status(RunStatus::Aborted);
        }
        () = tokio::time::sleep(timeout) => {
            agent.abort();
            return status(RunStatus::no_answer_within(timeout));
        }
    };
    let messages = match messages {
        Ok(messages) => messages,
        Err(error) => return failed(format!("could not ask {model_id}: {error}")),
    };
    let last = match messages.last() {
        Some(Message::Assistant(answer)) => Some(answer),
        _ => None,
    };
    match last {
        Some(answer) if answer.stop_reason == StopReason::Error => failed(format!(
            "could not ask {model_id}: {}",
            answer.error_message.as_deref().unwrap_or("unknown error")
        )),
        Some(answer) if answer.stop_reason == StopReason::Aborted => status(RunStatus::Aborted),
        Some(answer) => read_verdict(&answer.text()),
        // The run stopped after a turn's tool results: the turn limit.
        None => failed(format!(
            "{model_id} gave no verdict within {MAX_AGENT_TURNS} turns"
        )),
    }
}

/// The read-only tools an agent hook's model gets, made by `lookup` and
/// working in `cwd`.
pub(super) fn investigator_tools(
    lookup: impl Fn(&str) -> Option<Arc<dyn ToolDefinition>>,
    cwd: PathBuf,
) -> anyhow::Result<ToolSet> {
    let names = INVESTIGATOR_TOOLS.map(str::to_owned);
    crate::tools::tool_set_from(Some(&names), cwd, lookup)
}

/// The model and provider a prompt or agent hook asks: the session's, or
/// the hook's `model` by id on the session's provider; `None` outside a
/// session.
fn hook_model(
    hook: &PromptHook,
    model: Option<&ModelHandle>,
) -> Option<(Model, Arc<dyn Provider>)> {
    let choice = model?.current();
    let model = match &hook.model {
        Some(id) => Model::new(id, &choice.model.provider, &choice.model.api),
        None => choice.model,
    };
    Some((model, choice.provider))
}

/// The prompt with `$ARGUMENTS` replaced by `input`, or `input` after it.
fn with_arguments(prompt: &str, input: &str) -> String {
    if prompt.contains("$ARGUMENTS") {
        prompt.replace("$ARGUMENTS", input)
    } else {
        format!("{prompt}\n\n{input}")
    }
}

/// `{"ok": ..., "reason": ...}`, found in the answer (models wrap JSON in
/// fences or a sentence despite being told not to).
fn read_verdict(text: &str) -> Verdict {
    #[derive(Deserialize)]
    struct Answer {
        ok: bool,
        #[serde(default)]
        reason: Option<String>,
    }
    let object = match (text.find('{'), text.rfind('}')) {
        (Some(start), Some(end)) if start < end => text.get(start..=end),
        _ => None,
    };
    match object.and_then(|json| serde_json::from_str::<Answer>(json).ok()) {
        Some(Answer { ok: true, .. }) => status(RunStatus::Exited(0)),
        Some(Answer { ok: false, reason }) => Verdict {
            status: RunStatus::Exited(2),
            reason: reason
                .filter(|r| !r.trim().is_empty())
                .unwrap_or_else(|| "the hook's model said no, without a reason".to_owned()),
        },
        None => {
            let shown: String = text.trim().chars().take(200).collect();
            failed(format!(
                "answered {shown:?}, not {{\"ok\": true}} or {{\"ok\": false, \"reason\": ...}}"
            ))
        }
    }
}

fn status(status: RunStatus) -> Verdict {
    Verdict {
        status,
        reason: String::new(),
    }
}

fn failed(what: String) -> Verdict {
    status(RunStatus::RequestFailed(what))
}

#[cfg(test)]
mod tests {
    use agent_ai::testing::ScriptedProvider;
    use agent_ai::{AssistantContent, ToolCall};
    use serde_json::json;

    use super::*;

    #[tokio::test]
    async fn an_agent_hooks_model_that_keeps_reading_stops_after_the_turn_limit() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "a").unwrap();
        let reads = (0..MAX_AGENT_TURNS + 5).map(|n| {
            let call = ToolCall::new(format!("c{n}"), "read", json!({"path": "a.txt"}));
            ScriptedProvider::reply(vec![AssistantContent::ToolCall(call)])
        });
        let provider = Arc::new(ScriptedProvider::from_messages(reads));
        let asking = Asking {
            model: Some(ModelHandle::new(
                ScriptedProvider::model(),
                provider.clone(),
            )),
            ..Asking::default()
        };
        let hook = PromptHook {
            prompt: "Check $ARGUMENTS".into(),
            model: None,
        };
        let verdict = investigate(
            &hook,
            &asking,
            b"{}",
            dir.path(),
            Duration::from_secs(30),
            &CancellationToken::new(),
        )
        .await;
        assert_eq!(provider.requests().len(), MAX_AGENT_TURNS);
        assert_eq!(
            verdict.status,
            RunStatus::RequestFailed("scripted gave no verdict within 50 turns".into())
        );
        assert_eq!(
            provider.requests()[0].system_prompt.as_deref(),
            Some(INVESTIGATOR_SYSTEM_PROMPT)
        );
    }

    #[test]
    fn the_event_goes_where_the_prompt_names_it_or_after_it() {
        assert_eq!(
            with_arguments("Check $ARGUMENTS now", "{\"a\":1}"),
            "Check {\"a\":1} now"
        );
        assert_eq!(with_arguments("Check it", "{}"), "Check it\n\n{}");
    }

    #[test]
    fn a_verdict_is_found_in_fences_and_sentences_and_anything_else_fails() {
        let ok = read_verdict("```json\n{\"ok\": true}\n```");
        assert_eq!(
            (ok.status, ok.reason),
            (RunStatus::Exited(0), String::new())
        );
        let no = read_verdict("Here: {\"ok\": false, \"reason\": \"rm is destructive\"}");
        assert_eq!(
            (no.status, no.reason),
            (RunStatus::Exited(2), "rm is destructive".to_owned())
        );
        let bare = read_verdict("{\"ok\": false}");
        assert_eq!(bare.reason, "the hook's model said no, without a reason");
        for text in ["Sure, go ahead.", "{\"allow\": true}", "} {"] {
            let verdict = read_verdict(text);
            assert!(
                matches!(&verdict.status, RunStatus::RequestFailed(what) if what.starts_with("answered ")),
                "{text}"
            );
        }
    }
}
