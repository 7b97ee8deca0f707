//! Preparing a conversation for replay to a provider; API-independent (Pi's
//! `transform-messages.ts`).
//!
//! Three repairs every API needs before the history is sent again:
//! - an assistant message that ended in `error` or `aborted` is an incomplete
//!   turn (half a tool call, reasoning without an answer) and is dropped;
//! - a tool call with no result before the next assistant or user message
//!   (the run was interrupted) gets a synthetic error result
//!   `No result provided`, since APIs reject calls without results;
//! - a result whose call is not in the assistant message before it (its
//!   turn failed, or a damaged session lost the line with the call) and a
//!   second result for one call are dropped: APIs reject those too.
//!
//! Messages from a different model lose what only that model can read:
//! thinking is sent as plain text (its signature would mean nothing there),
//! redacted thinking is dropped, text and tool-call signatures are removed,
//! and tool-call ids are rewritten by the API's `normalize_id` when it has
//! one (Anthropic accepts only `[a-zA-Z0-9_-]{1,64}`); results follow their
//! calls' new ids.

use std::collections::{HashMap, HashSet};

use crate::message::{
    AssistantContent, AssistantMessage, Content, Message, StopReason, TextContent, ToolCall,
    ToolResultMessage, now_millis,
};
use crate::stream::Model;

/// The text of the synthetic result for a call that never got one (Pi's).
pub const NO_RESULT_PROVIDED: &str = "No result provided";

/// What a tool result that holds only images says as text (Pi's), for APIs
/// that want text in every result.
pub const IMAGE_ONLY_RESULT: &str = "(see attached image)";

/// Rewrites a tool-call id from another model into one this API accepts.
pub type NormalizeId = fn(&str) -> String;

/// `messages` as they should be replayed to `model`; see the module docs.
pub fn transform_messages(
    messages: &[Message],
    model: &Model,
    normalize_id: Option<NormalizeId>,
) -> Vec<Message> {
    let mut out = Vec::with_capacity(messages.len());
    let mut pending: Vec<ToolCall> = Vec::new();
    let mut answered: HashSet<String> = HashSet::new();
    let mut renamed: HashMap<String, String> = HashMap::new();
    let close_pending =
        |out: &mut Vec<Message>, pending: &mut Vec<ToolCall>, answered: &mut HashSet<String>| {
            for call in pending.drain(..) {
                if !answered.contains(&call.id) {
                    out.push(Message::ToolResult(ToolResultMessage {
                        tool_call_id: call.id,
                        tool_name: call.name,
                        content: vec![Content::text(NO_RESULT_PROVIDED)],
                        details: None,
                        is_error: true,
                        timestamp: now_millis(),
                    }));
                }
            }
            answered.clear();
        };
    for message in messages {
        match message {
            Message::Assistant(assistant) => {
                close_pending(&mut out, &mut pending, &mut answered);
                if matches!(
                    assistant.stop_reason,
                    StopReason::Error | StopReason::Aborted
                ) {
                    continue;
                }
                let assistant = for_model(assistant, model, normalize_id, &mut renamed);
                pending = assistant.tool_calls().cloned().collect();
                out.push(Message::Assistant(assistant));
            }
            Message::ToolResult(result) => {
                let mut result = result.clone();
                if let Some(id) = renamed.get(&result.tool_call_id) {
                    result.tool_call_id.clone_from(id);
                }
                let called = pending.iter().any(|call| call.id == result.tool_call_id);
                if called && answered.insert(result.tool_call_id.clone()) {
                    out.push(Message::ToolResult(result));
                }
            }
            Message::User(_) => {
                close_pending(&mut out, &mut pending, &mut answered);
                out.push(message.clone());
            }
        }
    }
    out
}

/// `assistant` as `model` should see it; ids rewritten are recorded in
/// `renamed` (old to new) for the results that follow.
fn for_model(
    assistant: &AssistantMessage,
    model: &Model,
    normalize_id: Option<NormalizeId>,
    renamed: &mut HashMap<String, String>,
) -> AssistantMessage {
    let same_model = assistant.provider == model.provider
        && assistant.api == model.api
        && assistant.model == model.id;
    let content = assistant
        .content
        .iter()
        .cloned()
        .filter_map(|block| match block {
            AssistantContent::ToolCall(mut call) if !same_model => {
                call.thought_signature = None;
                if let Some(normalize) = normalize_id {
                    let id = normalize(&call.id);
                    if id != call.id {
                        renamed.insert(std::mem::replace(&mut call.id, id.clone()), id);
                    }
                }
                Some(AssistantContent::ToolCall(call))
            }
            block => block_for_model(block, same_model),
        })
        .collect();
    AssistantMessage {
        content,
        ..assistant.clone()
    }
}

/// A text or thinking block as `model` should see it.
fn block_for_model(block: AssistantContent, same_model: bool) -> Option<AssistantContent> {
    match block {
        AssistantContent::Thinking(thinking) => {
            if thinking.redacted == Some(true) {
                return same_model.then_some(AssistantContent::Thinking(thinking));
            }
            if same_model && thinking.thinking_signature.is_some() {
                return Some(AssistantContent::Thinking(thinking));
            }
            if thinking.thinking.trim().is_empty() {
                return None;
            }
            if same_model {
                return Some(AssistantContent::Thinking(thinking));
            }
            Some(AssistantContent::Text(TextContent {
                text: thinking.thinking,
                text_signature: None,
            }))
        }
        AssistantContent::Text(text) if !same_model => Some(AssistantContent::Text(TextContent {
            text: text.text,
            text_signature: None,
        })),
        block => Some(block),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::{AssistantMessage, ThinkingContent, UserMessage};
    use serde_json::json;

    fn model() -> Model {
        Model::new("gpt-4o", "openai", "openai-completions")
    }

    fn assistant(content: Vec<AssistantContent>, stop_reason: StopReason) -> Message {
        let mut message = AssistantMessage::empty(&model());
        message.content = content;
        message.stop_reason = stop_reason;
        message.timestamp = 0;
        Message::Assistant(message)
    }

    fn call(id: &str) -> AssistantContent {
        AssistantContent::ToolCall(ToolCall::new(id, "read", json!({"path": "a"})))
    }

    fn result(id: &str, text: &str, is_error: bool) -> Message {
        Message::ToolResult(ToolResultMessage {
            tool_call_id: id.into(),
            tool_name: "read".into(),
            content: vec![Content::text(text)],
            details: None,
            is_error,
            timestamp: 0,
        })
    }

    fn user(text: &str) -> Message {
        let mut message = UserMessage::text(text);
        message.timestamp = 0;
        Message::User(message)
    }

    /// Zeroes the timestamps of synthetic results so whole values compare.
    fn stamped_zero(mut messages: Vec<Message>) -> Vec<Message> {
        for message in &mut messages {
            if let Message::ToolResult(result) = message {
                result.timestamp = 0;
            }
        }
        messages
    }

    #[test]
    fn errored_and_aborted_assistant_messages_are_dropped() {
        let messages = vec![
            user("hi"),
            assistant(vec![call("c1")], StopReason::Error),
            assistant(vec![], StopReason::Aborted),
            user("again"),
        ];
        assert_eq!(
            transform_messages(&messages, &model(), None),
            vec![user("hi"), user("again")]
        );
    }

    #[test]
    fn orphaned_calls_get_a_no_result_provided_error_before_the_next_user_message() {
        let messages = vec![
            assistant(vec![call("c1"), call("c2")], StopReason::ToolUse),
            result("c1", "ok", false),
            user("stop"),
        ];
        assert_eq!(
            stamped_zero(transform_messages(&messages, &model(), None)),
            vec![
                assistant(vec![call("c1"), call("c2")], StopReason::ToolUse),
                result("c1", "ok", false),
                result("c2", "No result provided", true),
                user("stop"),
            ]
        );
    }

    // A session whose line holding the call was lost (the loader keeps what
    // came before a broken line) replayed the result alone, and both APIs
    // refused every later request with a 400.
    #[test]
    fn results_without_their_call_are_dropped() {
        let messages = vec![
            user("run"),
            result("lost", "hello", false),
            assistant(vec![call("c1")], StopReason::Error),
            result("c1", "from a failed turn", false),
            assistant(vec![call("c2")], StopReason::ToolUse),
            result("c2", "ok", false),
            result("c2", "again", false),
            assistant(vec![], StopReason::Stop),
        ];
        assert_eq!(
            transform_messages(&messages, &model(), None),
            vec![
                user("run"),
                assistant(vec![call("c2")], StopReason::ToolUse),
                result("c2", "ok", false),
                assistant(vec![], StopReason::Stop),
            ]
        );
    }

    #[test]
    fn orphaned_calls_are_closed_before_the_next_assistant_message() {
        let messages = vec![
            assistant(vec![call("c1")], StopReason::ToolUse),
            assistant(vec![], StopReason::Stop),
        ];
        assert_eq!(
            stamped_zero(transform_messages(&messages, &model(), None)),
            vec![
                assistant(vec![call("c1")], StopReason::ToolUse),
                result("c1", "No result provided", true),
                assistant(vec![], StopReason::Stop),
            ]
        );
    }

    #[test]
    fn thinking_from_another_model_becomes_text() {
        let mut other =
            AssistantMessage::empty(&Model::new("claude", "anthropic", "anthropic-messages"));
        other.timestamp = 0;
        other.content = vec![AssistantContent::Thinking(ThinkingContent {
            thinking: "hmm".into(),
            thinking_signature: Some("sig".into()),
            redacted: None,
        })];
        let mut expected = other.clone();
        expected.content = vec![AssistantContent::Text(TextContent {
            text: "hmm".into(),
            text_signature: None,
        })];
        assert_eq!(
            transform_messages(&[Message::Assistant(other)], &model(), None),
            vec![Message::Assistant(expected)]
        );
    }

    #[test]
    fn ids_from_another_model_are_normalized_and_results_follow_them() {
        fn underscores(id: &str) -> String {
            id.replace(['|', '.'], "_")
        }
        let mut other =
            AssistantMessage::empty(&Model::new("claude", "anthropic", "anthropic-messages"));
        other.timestamp = 0;
        other.stop_reason = StopReason::ToolUse;
        let mut signed = ToolCall::new("call|1.a", "read", json!({"path": "a"}));
        signed.thought_signature = Some("opaque".into());
        other.content = vec![AssistantContent::ToolCall(signed)];
        let mut expected = other.clone();
        expected.content = vec![AssistantContent::ToolCall(ToolCall::new(
            "call_1_a",
            "read",
            json!({"path": "a"}),
        ))];
        let messages = vec![Message::Assistant(other), result("call|1.a", "ok", false)];
        assert_eq!(
            transform_messages(&messages, &model(), Some(underscores)),
            vec![
                Message::Assistant(expected),
                result("call_1_a", "ok", false)
            ]
        );
        // The model's own ids are left alone.
        let own = vec![assistant(vec![call("call|2")], StopReason::ToolUse)];
        assert_eq!(transform_messages(&own, &model(), Some(underscores)), own);
    }
}
