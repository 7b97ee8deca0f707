//! The conversation as it may be replayed to a model (Pi's
//! `transform-messages`), before any wire format.
//!
//! Provider-neutral: when the providers are merged this belongs in a shared
//! module; only [`transform_messages`] is used from outside.
//!
//! - An assistant message that ended in `error` or `aborted` is dropped: it is
//!   an incomplete turn the model should redo from the last good state.
//! - A tool call with no result before the next assistant or user message gets
//!   a synthetic error result `No result provided`, since every API rejects a
//!   call without an answer.
//! - Messages from another model lose what only that model can read: thinking
//!   becomes plain text (redacted thinking is dropped), and tool call ids are
//!   rewritten by `normalize_id` (results follow their calls).

use std::collections::{HashMap, HashSet};

use crate::message::{
    AssistantContent, AssistantMessage, Content, Message, StopReason, TextContent,
    ToolResultMessage, now_millis,
};
use crate::stream::Model;

/// Pi's text for a tool call that never got its result.
pub(super) const NO_RESULT: &str = "No result provided";

/// `messages` made safe to replay to `model`.
pub(super) fn transform_messages(
    messages: &[Message],
    model: &Model,
    normalize_id: fn(&str) -> String,
) -> Vec<Message> {
    let mut renamed: HashMap<String, String> = HashMap::new();
    let adapted: Vec<Message> = messages
        .iter()
        .map(|message| match message {
            Message::Assistant(assistant) => Message::Assistant(adapt_assistant(
                assistant,
                model,
                normalize_id,
                &mut renamed,
            )),
            Message::ToolResult(result) => match renamed.get(&result.tool_call_id) {
                Some(id) => Message::ToolResult(ToolResultMessage {
                    tool_call_id: id.clone(),
                    ..result.clone()
                }),
                None => message.clone(),
            },
            Message::User(_) => message.clone(),
        })
        .collect();

    let mut out = Vec::with_capacity(adapted.len());
    let mut pending: Vec<(String, String)> = Vec::new();
    let mut answered: HashSet<String> = HashSet::new();
    for message in adapted {
        match &message {
            Message::Assistant(assistant) => {
                answer_orphans(&mut out, &mut pending, &mut answered);
                if matches!(
                    assistant.stop_reason,
                    StopReason::Error | StopReason::Aborted
                ) {
                    continue;
                }
                pending = assistant
                    .tool_calls()
                    .map(|call| (call.id.clone(), call.name.clone()))
                    .collect();
            }
            Message::ToolResult(result) => {
                answered.insert(result.tool_call_id.clone());
            }
            Message::User(_) => answer_orphans(&mut out, &mut pending, &mut answered),
        }
        out.push(message);
    }
    out
}

fn answer_orphans(
    out: &mut Vec<Message>,
    pending: &mut Vec<(String, String)>,
    answered: &mut HashSet<String>,
) {
    for (id, name) in pending.drain(..) {
        if !answered.contains(&id) {
            out.push(Message::ToolResult(ToolResultMessage {
                tool_call_id: id,
                tool_name: name,
                content: vec![Content::text(NO_RESULT)],
                details: None,
                is_error: true,
                timestamp: now_millis(),
            }));
        }
    }
    answered.clear();
}

fn adapt_assistant(
    assistant: &AssistantMessage,
    model: &Model,
    normalize_id: fn(&str) -> String,
    renamed: &mut HashMap<String, String>,
) -> AssistantMessage {
    let same_model = assistant.provider == model.provider
        && assistant.api == model.api
        && assistant.model == model.id;
    if same_model {
        return assistant.clone();
    }
    let content = assistant
        .content
        .iter()
        .filter_map(|block| match block {
            AssistantContent::Thinking(thinking) => {
                if thinking.redacted == Some(true) || thinking.thinking.trim().is_empty() {
                    None
                } else {
                    Some(AssistantContent::Text(TextContent {
                        text: thinking.thinking.clone(),
                        text_signature: None,
                    }))
                }
            }
            AssistantContent::Text(text) => Some(AssistantContent::Text(TextContent {
                text: text.text.clone(),
                text_signature: None,
            })),
            AssistantContent::ToolCall(call) => {
                let id = normalize_id(&call.id);
                if id != call.id {
                    renamed.insert(call.id.clone(), id.clone());
                }
                let mut call = call.clone();
                call.id = id;
                Some(AssistantContent::ToolCall(call))
            }
        })
        .collect();
    AssistantMessage {
        content,
        ..assistant.clone()
    }
}
