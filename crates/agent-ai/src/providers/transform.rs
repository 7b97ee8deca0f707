//! Preparing a conversation for replay to a provider; API-independent (Pi's
//! `transform-messages.ts`).
//!
//! Two repairs every API needs before the history is sent again:
//! - an assistant message that ended in `error` or `aborted` is an incomplete
//!   turn (half a tool call, reasoning without an answer) and is dropped;
//! - a tool call with no result before the next assistant or user message
//!   (the run was interrupted) gets a synthetic error result
//!   `No result provided`, since APIs reject calls without results.
//!
//! Thinking from a different model is sent as plain text (its signature would
//! mean nothing there); redacted thinking from a different model is dropped.

use std::collections::HashSet;

use crate::message::{
    AssistantContent, Content, Message, StopReason, TextContent, ToolCall, ToolResultMessage,
    now_millis,
};
use crate::stream::Model;

/// The text of the synthetic result for a call that never got one (Pi's).
pub const NO_RESULT_PROVIDED: &str = "No result provided";

/// `messages` as they should be replayed to `model`; see the module docs.
pub fn transform_messages(messages: &[Message], model: &Model) -> Vec<Message> {
    let mut out = Vec::with_capacity(messages.len());
    let mut pending: Vec<ToolCall> = Vec::new();
    let mut answered: HashSet<String> = HashSet::new();
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
                let same_model = assistant.provider == model.provider
                    && assistant.api == model.api
                    && assistant.model == model.id;
                let mut assistant = assistant.clone();
                assistant.content = assistant
                    .content
                    .into_iter()
                    .filter_map(|block| for_model(block, same_model))
                    .collect();
                pending = assistant.tool_calls().cloned().collect();
                out.push(Message::Assistant(assistant));
            }
            Message::ToolResult(result) => {
                answered.insert(result.tool_call_id.clone());
                out.push(message.clone());
            }
            Message::User(_) => {
                close_pending(&mut out, &mut pending, &mut answered);
                out.push(message.clone());
            }
        }
    }
    out
}

/// One assistant block as `model` should see it.
fn for_model(block: AssistantContent, same_model: bool) -> Option<AssistantContent> {
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
        AssistantContent::ToolCall(mut call) if !same_model => {
            call.thought_signature = None;
            Some(AssistantContent::ToolCall(call))
        }
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
            transform_messages(&messages, &model()),
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
            stamped_zero(transform_messages(&messages, &model())),
            vec![
                assistant(vec![call("c1"), call("c2")], StopReason::ToolUse),
                result("c1", "ok", false),
                result("c2", "No result provided", true),
                user("stop"),
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
            stamped_zero(transform_messages(&messages, &model())),
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
            transform_messages(&[Message::Assistant(other)], &model()),
            vec![Message::Assistant(expected)]
        );
    }
}
