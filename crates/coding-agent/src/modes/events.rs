//! Agent events as JSON, in Pi's shapes (`--mode json` and `--mode rpc` print
//! one per line): `{"type":"tool_execution_start","toolCallId":…,"toolName":…,"args":…}`.
//!
//! Key order follows the object literals in Pi's agent loop, so lines compare
//! equal as text. Provider events (`assistantMessageEvent`) serialise in Pi's
//! shape on their own (agent-ai's `AssistantMessageEvent`). A tool result is
//! `{content, details?}` (plus `terminate:
//! true` when set), as Pi's tools return it.

use agent_ai::MessageRef;
use agent_core::{AgentEvent, AgentToolResult};
use serde_json::{Map, Value, json};

/// The JSON Pi emits for `event`.
pub fn event_json(event: &AgentEvent) -> Value {
    match event {
        AgentEvent::AgentStart => json!({"type": "agent_start"}),
        AgentEvent::AgentEnd { messages } => json!({"type": "agent_end", "messages": messages}),
        AgentEvent::TurnStart => json!({"type": "turn_start"}),
        AgentEvent::TurnEnd {
            message,
            tool_results,
        } => {
            // Whole messages, `role` included, as Pi's are.
            let tool_results: Vec<MessageRef> =
                tool_results.iter().map(MessageRef::ToolResult).collect();
            json!({"type": "turn_end", "message": message, "toolResults": tool_results})
        }
        AgentEvent::MessageStart { message } => {
            json!({"type": "message_start", "message": message})
        }
        AgentEvent::MessageUpdate {
            assistant_message_event,
        } => json!({
            "type": "message_update",
            "assistantMessageEvent": assistant_message_event,
            "message": MessageRef::Assistant(assistant_message_event.message()),
        }),
        AgentEvent::MessageEnd { message } => json!({"type": "message_end", "message": message}),
        AgentEvent::ToolExecutionStart {
            tool_call_id,
            tool_name,
            args,
        } => json!({
            "type": "tool_execution_start",
            "toolCallId": tool_call_id,
            "toolName": tool_name,
            "args": args,
        }),
        AgentEvent::ToolExecutionUpdate {
            tool_call_id,
            tool_name,
            args,
            partial_result,
        } => json!({
            "type": "tool_execution_update",
            "toolCallId": tool_call_id,
            "toolName": tool_name,
            "args": args,
            "partialResult": tool_result_json(partial_result),
        }),
        AgentEvent::ToolExecutionEnd {
            tool_call_id,
            tool_name,
            result,
            is_error,
        } => json!({
            "type": "tool_execution_end",
            "toolCallId": tool_call_id,
            "toolName": tool_name,
            "result": tool_result_json(result),
            "isError": is_error,
        }),
    }
}

/// Pi's `AgentToolResult`: `{content, details?, terminate?}`.
pub fn tool_result_json(result: &AgentToolResult) -> Value {
    let mut object = Map::new();
    object.insert("content".into(), json!(result.content));
    if let Some(details) = &result.details {
        object.insert("details".into(), details.clone());
    }
    if result.terminate {
        object.insert("terminate".into(), Value::Bool(true));
    }
    Value::Object(object)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_execution_end_has_pi_keys_in_pi_order() {
        let event = AgentEvent::ToolExecutionEnd {
            tool_call_id: "c1".into(),
            tool_name: "ls".into(),
            result: AgentToolResult::text("a.txt").with_details(json!({})),
            is_error: true,
        };
        assert_eq!(
            event_json(&event).to_string(),
            r#"{"type":"tool_execution_end","toolCallId":"c1","toolName":"ls","result":{"content":[{"type":"text","text":"a.txt"}],"details":{}},"isError":true}"#
        );
    }

    #[test]
    fn a_result_without_details_has_no_details_key() {
        let mut result = AgentToolResult::text("done");
        result.terminate = true;
        assert_eq!(
            tool_result_json(&result).to_string(),
            r#"{"content":[{"type":"text","text":"done"}],"terminate":true}"#
        );
    }
}
