//! `prompt` hooks: a model reads the event and says whether the agent may
//! go on, as Claude Code's prompt hooks do. The hook's prompt, with
//! `$ARGUMENTS` replaced by the event's JSON (appended when the prompt does
//! not name it), goes to the session's model (or the hook's `model`, by id
//! on the same provider) with no tools and no history. The answer
//! `{"ok": true}` is a command's exit 0; `{"ok": false, "reason": "..."}`
//! is its exit 2 with the reason on stderr, so each event acts on it as on
//! a command's block. An answer that says neither, a failed request, no
//! model to ask and the timeout are failures (a warning, or a block with
//! `"onError": "block"`).

use std::time::Duration;

use agent_ai::Model;
use agent_core::ModelHandle;
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use super::config::PromptHook;
use super::runner::RunStatus;
use crate::support::one_shot::{Question, Unanswered, ask_once};

/// What the model is told it is doing.
pub const JUDGE_SYSTEM_PROMPT: &str = "You check one step of a coding agent for a hook its user \
configured. Follow the user's instructions to judge the event they describe (given as JSON). \
Answer with one JSON object and nothing else: {\"ok\": true} to let the step go on, or \
{\"ok\": false, \"reason\": \"what is wrong, for the agent to read\"} to stop it.";

/// The answer's length at the most: a verdict and a reason.
const MAX_ANSWER_TOKENS: u32 = 1024;

/// How a verdict ended: its status, and the reason of a `false` one (the
/// "stderr" a block reads).
pub(super) struct Verdict {
    pub status: RunStatus,
    pub reason: String,
}

/// Asks the model `hook` names for its verdict on the event `input`.
pub(super) async fn judge(
    hook: &PromptHook,
    model: Option<&ModelHandle>,
    input: &[u8],
    timeout: Duration,
    cancel: &CancellationToken,
) -> Verdict {
    let Some(handle) = model else {
        return failed("has no model to ask (prompt hooks run in a session)".to_owned());
    };
    let choice = handle.current();
    let model = match &hook.model {
        Some(id) => Model::new(id, &choice.model.provider, &choice.model.api),
        None => choice.model,
    };
    let question = Question {
        system_prompt: JUDGE_SYSTEM_PROMPT,
        request: with_arguments(&hook.prompt, &String::from_utf8_lossy(input)),
        max_tokens: MAX_ANSWER_TOKENS,
        reasoning: None,
    };
    let answer = tokio::select! {
        answer = ask_once(&model, &choice.provider, question, cancel) => answer,
        () = tokio::time::sleep(timeout) => return status(RunStatus::TimedOut(timeout)),
    };
    match answer {
        Ok(text) => read_verdict(&text),
        Err(Unanswered::Cancelled) => status(RunStatus::Aborted),
        Err(Unanswered::Failed(error)) => failed(format!("could not ask {}: {error}", model.id)),
    }
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
    use super::*;

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
