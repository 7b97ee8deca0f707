//! Recovering tool calls that a model wrote as text.
//!
//! Smaller models served behind OpenAI-compatible endpoints often answer a
//! tool request with the call *as text*, either the bare JSON object, the
//! same in a ```` ```json ```` fence, or Hermes/Qwen-style
//! `<tool_call>{...}</tool_call>` blocks, instead of in the API's
//! `tool_calls` field. The agent would then stop, showing JSON to the user.
//!
//! [`recover_text_tool_calls`] turns such an answer into real tool calls, but
//! only when there is no doubt: the response has no tool calls of its own,
//! its *whole* text (trimmed) is one of those shapes, every object in it has
//! exactly the keys `name` and `arguments`, the name is one of the tools
//! sent with the request, and the arguments are an object (or a string
//! holding a JSON object). Anything else (prose around the JSON, an unknown
//! tool, arguments that are not an object) stays text. Recovered calls carry
//! `recoveredFromText: true`. Pi has no such recovery: this is deviation P1
//! in `docs/DEVIATIONS.md`.

use std::collections::HashSet;

use serde_json::{Map, Value};

use crate::message::{AssistantContent, AssistantMessage, Message, StopReason, ToolCall};
use crate::tool::Tool;

/// Appended, on the wire only, to the result of a call recovered from text.
///
/// A model that writes its calls as text is a small one, and at temperature 0
/// it tends to call the same tool again instead of reading the result the
/// chat template put before it. Measured with Qwen2.5-Coder-1.5B-Instruct
/// behind llama.cpp's server (the `cargo xtask e2e-local` requests replayed):
/// with the bare result it re-called read, bash and edit with the same
/// arguments every time; with this line it answered from the result in all
/// three. The stored result is unchanged; models whose calls arrive in
/// `tool_calls` never see it.
pub const RECOVERED_RESULT_NUDGE: &str =
    "(Tool result above. Answer the user now, or call another tool if you still need one.)";

/// The ids of the calls in `messages` that were recovered from text.
pub fn recovered_call_ids(messages: &[Message]) -> HashSet<&str> {
    messages
        .iter()
        .filter_map(|message| match message {
            Message::Assistant(assistant) => Some(assistant.tool_calls()),
            _ => None,
        })
        .flatten()
        .filter(|call| call.recovered_from_text == Some(true))
        .map(|call| call.id.as_str())
        .collect()
}

/// Replaces the text of `message` with the tool calls it spells out, when
/// it is exactly one of the shapes in the module docs and `message` has no
/// tool calls yet. The calls take the place of the first text block (thinking
/// stays), get ids from `new_id`, and `stopReason` becomes `toolUse`.
/// Returns the content indexes of the recovered calls (empty when nothing
/// was recovered and `message` is unchanged).
pub fn recover_text_tool_calls(
    message: &mut AssistantMessage,
    tools: &[Tool],
    new_id: &mut dyn FnMut() -> String,
) -> Vec<usize> {
    if message.tool_calls().next().is_some() {
        return Vec::new();
    }
    let Some(first_text) = message
        .content
        .iter()
        .position(|c| matches!(c, AssistantContent::Text(_)))
    else {
        return Vec::new();
    };
    let Some(calls) = parse_calls(&message.text(), tools) else {
        return Vec::new();
    };
    let recovered: Vec<AssistantContent> = calls
        .into_iter()
        .map(|(name, arguments)| {
            let mut call = ToolCall::new(new_id(), name, arguments);
            call.recovered_from_text = Some(true);
            AssistantContent::ToolCall(call)
        })
        .collect();
    let count = recovered.len();
    let mut content = Vec::with_capacity(message.content.len() + count);
    for (index, block) in std::mem::take(&mut message.content).into_iter().enumerate() {
        if index == first_text {
            content.extend(recovered.iter().cloned());
        }
        if !matches!(block, AssistantContent::Text(_)) {
            content.push(block);
        }
    }
    message.content = content;
    message.stop_reason = StopReason::ToolUse;
    (first_text..first_text + count).collect()
}

/// The `(name, arguments)` of each call `text` spells out, or `None` when
/// `text` is not wholly made of calls to known tools.
fn parse_calls(text: &str, tools: &[Tool]) -> Option<Vec<(String, Value)>> {
    let text = text.trim();
    let objects = if text.starts_with("<tool_call>") {
        tool_call_blocks(text)?
    } else if let Some(inner) = json_fence(text) {
        vec![inner]
    } else {
        vec![text]
    };
    objects
        .into_iter()
        .map(|object| parse_call(object, tools))
        .collect()
}

/// The bodies of one or more `<tool_call>...</tool_call>` blocks that make up
/// all of `text` (whitespace between them allowed).
fn tool_call_blocks(text: &str) -> Option<Vec<&str>> {
    const OPEN: &str = "<tool_call>";
    const CLOSE: &str = "</tool_call>";
    let mut blocks = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        let after_open = rest.strip_prefix(OPEN)?;
        let end = after_open.find(CLOSE)?;
        blocks.push(&after_open[..end]);
        rest = after_open[end + CLOSE.len()..].trim_start();
    }
    Some(blocks)
}

/// The inside of a single ```` ```json ... ``` ```` fence making up all of
/// `text`.
fn json_fence(text: &str) -> Option<&str> {
    let after_open = text.strip_prefix("```")?;
    let language_end = after_open
        .find(|c: char| !c.is_ascii_alphanumeric())
        .unwrap_or(after_open.len());
    if !after_open[..language_end].eq_ignore_ascii_case("json") {
        return None;
    }
    let inner = after_open[language_end..].strip_suffix("```")?;
    (!inner.contains("```")).then_some(inner)
}

/// One `{"name": ..., "arguments": ...}` object naming a known tool.
fn parse_call(text: &str, tools: &[Tool]) -> Option<(String, Value)> {
    let text = text.trim();
    if !text.starts_with('{') {
        return None;
    }
    let Value::Object(object) = serde_json::from_str::<Value>(text).ok()? else {
        return None;
    };
    if object.len() != 2 {
        return None;
    }
    let name = object.get("name")?.as_str()?;
    if !tools.iter().any(|tool| tool.name == name) {
        return None;
    }
    let arguments: Map<String, Value> = match object.get("arguments")? {
        Value::Object(arguments) => arguments.clone(),
        Value::String(encoded) => match serde_json::from_str(encoded).ok()? {
            Value::Object(arguments) => arguments,
            _ => return None,
        },
        _ => return None,
    };
    Some((name.to_owned(), Value::Object(arguments)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::{TextContent, ThinkingContent};
    use crate::stream::Model;
    use serde_json::json;

    fn tools() -> Vec<Tool> {
        ["read", "bash"]
            .into_iter()
            .map(|name| Tool {
                name: name.into(),
                description: String::new(),
                parameters: json!({"type": "object"}),
            })
            .collect()
    }

    fn reply(content: Vec<AssistantContent>) -> AssistantMessage {
        let mut message = AssistantMessage::empty(&Model::new("m", "p", "openai-completions"));
        message.content = content;
        message.timestamp = 0;
        message
    }

    /// What a recovered message looks like: the calls, with stopReason toolUse.
    fn tool_use(content: Vec<AssistantContent>) -> AssistantMessage {
        let mut message = reply(content);
        message.stop_reason = StopReason::ToolUse;
        message
    }

    fn text(text: &str) -> AssistantContent {
        AssistantContent::Text(TextContent {
            text: text.into(),
            text_signature: None,
        })
    }

    fn recovered(id: &str, name: &str, arguments: Value) -> AssistantContent {
        let mut call = ToolCall::new(id, name, arguments);
        call.recovered_from_text = Some(true);
        AssistantContent::ToolCall(call)
    }

    /// Runs the recovery on a message holding `texts`; returns the message
    /// and the indexes of the recovered calls.
    fn recover(content: Vec<AssistantContent>) -> (AssistantMessage, Vec<usize>) {
        let mut message = reply(content);
        let mut next = 0;
        let indexes = recover_text_tool_calls(&mut message, &tools(), &mut || {
            next += 1;
            format!("text_call_{next}")
        });
        (message, indexes)
    }

    /// `answer` becomes one recovered call (the first id) of `name` with
    /// `arguments`, in place of the text.
    fn assert_one_call(answer: &str, name: &str, arguments: Value) {
        let (message, indexes) = recover(vec![text(answer)]);
        assert_eq!(indexes, [0]);
        let expected = tool_use(vec![recovered("text_call_1", name, arguments)]);
        assert_eq!(message, expected);
    }

    fn assert_stays_text(answer: &str) {
        let (message, indexes) = recover(vec![text(answer)]);
        assert_eq!(indexes, Vec::<usize>::new());
        assert_eq!(message, reply(vec![text(answer)]));
    }

    #[test]
    fn json_fence_with_a_known_tool_becomes_a_tool_call() {
        assert_one_call(
            "```json\n{\"name\": \"read\", \"arguments\": {\"path\": \"README.md\"}}\n```",
            "read",
            json!({"path": "README.md"}),
        );
    }

    #[test]
    fn json_fence_on_one_line_becomes_a_tool_call() {
        assert_one_call(
            "```json {\"name\": \"read\", \"arguments\": {\"path\": \"README.md\"}} ```",
            "read",
            json!({"path": "README.md"}),
        );
    }

    #[test]
    fn bare_json_object_becomes_a_tool_call() {
        assert_one_call(
            "  {\"name\": \"bash\", \"arguments\": {\"command\": \"ls -la\"}}\n",
            "bash",
            json!({"command": "ls -la"}),
        );
    }

    #[test]
    fn one_tool_call_block_becomes_a_tool_call() {
        assert_one_call(
            "<tool_call>\n{\"name\": \"read\", \"arguments\": {\"path\": \"a.txt\"}}\n</tool_call>",
            "read",
            json!({"path": "a.txt"}),
        );
    }

    #[test]
    fn two_tool_call_blocks_become_two_calls_in_order_after_thinking() {
        let thinking = AssistantContent::Thinking(ThinkingContent {
            thinking: "Two files.".into(),
            thinking_signature: Some("reasoning_content".into()),
            redacted: None,
        });
        let (message, indexes) = recover(vec![
            thinking.clone(),
            text(
                "<tool_call>{\"name\": \"read\", \"arguments\": {\"path\": \"a.txt\"}}</tool_call>\n\
                 <tool_call>{\"name\": \"read\", \"arguments\": {\"path\": \"b.txt\"}}</tool_call>",
            ),
        ]);
        assert_eq!(indexes, [1, 2]);
        let expected = tool_use(vec![
            thinking,
            recovered("text_call_1", "read", json!({"path": "a.txt"})),
            recovered("text_call_2", "read", json!({"path": "b.txt"})),
        ]);
        assert_eq!(message, expected);
    }

    #[test]
    fn arguments_as_a_json_string_holding_an_object_are_decoded() {
        assert_one_call(
            r#"{"name": "read", "arguments": "{\"path\": \"README.md\", \"limit\": 5}"}"#,
            "read",
            json!({"path": "README.md", "limit": 5}),
        );
    }

    #[test]
    fn recovered_flag_is_serialized_only_when_true() {
        let (message, _) = recover(vec![text(r#"{"name": "read", "arguments": {}}"#)]);
        assert_eq!(
            serde_json::to_value(&message.content).unwrap(),
            json!([{"type": "toolCall", "id": "text_call_1", "name": "read", "arguments": {},
                    "recoveredFromText": true}])
        );
        assert_eq!(
            serde_json::to_value(ToolCall::new("c", "read", json!({}))).unwrap(),
            json!({"id": "c", "name": "read", "arguments": {}})
        );
    }

    #[test]
    fn prose_around_json_stays_text() {
        assert_stays_text(
            "I will read it now: {\"name\": \"read\", \"arguments\": {\"path\": \"README.md\"}}",
        );
        assert_stays_text(
            "Here is the call:\n```json\n{\"name\": \"read\", \"arguments\": {\"path\": \"a\"}}\n```",
        );
        assert_stays_text(
            "<tool_call>{\"name\": \"read\", \"arguments\": {\"path\": \"a\"}}</tool_call> done",
        );
    }

    #[test]
    fn unknown_tool_name_stays_text() {
        assert_stays_text(r#"{"name": "deploy", "arguments": {"env": "prod"}}"#);
        assert_stays_text(
            "<tool_call>{\"name\": \"read\", \"arguments\": {}}</tool_call>\
             <tool_call>{\"name\": \"deploy\", \"arguments\": {}}</tool_call>",
        );
    }

    #[test]
    fn arguments_that_are_not_an_object_stay_text() {
        assert_stays_text(r#"{"name": "read", "arguments": ["README.md"]}"#);
        assert_stays_text(r#"{"name": "read", "arguments": "README.md"}"#);
        assert_stays_text(r#"{"name": "read", "arguments": "[1, 2]"}"#);
        assert_stays_text(r#"{"name": "read"}"#);
    }

    #[test]
    fn objects_with_other_keys_or_other_fences_stay_text() {
        assert_stays_text(r#"{"name": "read", "arguments": {}, "note": "x"}"#);
        assert_stays_text("```python\n{\"name\": \"read\", \"arguments\": {}}\n```");
        assert_stays_text("{\"name\": \"read\", \"arguments\": {}");
    }

    #[test]
    fn a_response_with_real_tool_calls_is_left_alone() {
        let call = AssistantContent::ToolCall(ToolCall::new("c1", "read", json!({})));
        let answer = text(r#"{"name": "bash", "arguments": {"command": "ls"}}"#);
        let (message, indexes) = recover(vec![answer.clone(), call.clone()]);
        assert_eq!(indexes, Vec::<usize>::new());
        assert_eq!(message, reply(vec![answer, call]));
    }
}
