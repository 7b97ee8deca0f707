//! What of a saved conversation may be sent to the model again.

use agent_ai::message::now_millis;
use agent_ai::{Content, Message, StopReason, ToolResultMessage};

/// The text of the synthetic result of a tool call that never got one (Pi's text).
pub const NO_RESULT_PROVIDED: &str = "No result provided";

/// What the model is sent of a conversation (Pi's `transformMessages`):
/// assistant messages that ended in `error` or `aborted` are left out, and a
/// tool call with no result before the next assistant or user message gets
/// the error result [`NO_RESULT_PROVIDED`].
pub fn replayable_messages(messages: &[Message]) -> Vec<Message> {
    let mut out = Vec::with_capacity(messages.len());
    let mut pending: Vec<(String, String)> = Vec::new();
    let mut answered: Vec<String> = Vec::new();
    let close_pending = |out: &mut Vec<Message>,
                         pending: &mut Vec<(String, String)>,
                         answered: &mut Vec<String>| {
        for (id, name) in pending.drain(..) {
            if !answered.contains(&id) {
                out.push(Message::ToolResult(ToolResultMessage {
                    tool_call_id: id,
                    tool_name: name,
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
                pending = assistant
                    .tool_calls()
                    .map(|call| (call.id.clone(), call.name.clone()))
                    .collect();
                out.push(message.clone());
            }
            Message::ToolResult(result) => {
                answered.push(result.tool_call_id.clone());
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
