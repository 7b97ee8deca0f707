//! Shared helpers for the loop tests: test tools, scripted replies, and a
//! compact text form of events so whole sequences can be compared with `assert_eq!`.
#![allow(dead_code, clippy::unwrap_used)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_ai::testing::ScriptedResponse;
use agent_ai::{
    AssistantContent, AssistantMessage, Content, Message, ScriptedProvider, TextContent, Tool,
    ToolCall,
};
use agent_core::{
    AgentContext, AgentEvent, AgentTool, AgentToolResult, ExecutionMode, LoopConfig, ToolError,
    ToolSet, UpdateSink,
};
use async_trait::async_trait;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// A tool call block.
pub fn call(id: &str, name: &str, arguments: Value) -> AssistantContent {
    AssistantContent::ToolCall(ToolCall {
        id: id.into(),
        name: name.into(),
        arguments,
        thought_signature: None,
        recovered_from_text: None,
    })
}

/// A bare tool call.
pub fn tool_call(id: &str, name: &str, arguments: Value) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        arguments,
        thought_signature: None,
        recovered_from_text: None,
    }
}

/// A text block.
pub fn text(t: &str) -> AssistantContent {
    AssistantContent::Text(TextContent {
        text: t.into(),
        text_signature: None,
    })
}

/// A scripted reply with these blocks.
pub fn reply(content: Vec<AssistantContent>) -> ScriptedResponse {
    ScriptedResponse::Message(ScriptedProvider::reply(content))
}

/// A reply that ended with an error.
pub fn failed_reply(message: &str) -> ScriptedResponse {
    let mut m: AssistantMessage = ScriptedProvider::reply(vec![]);
    m.stop_reason = agent_ai::StopReason::Error;
    m.error_message = Some(message.into());
    ScriptedResponse::Message(m)
}

/// All text of a content list, blocks joined with `\n`.
pub fn content_text(content: &[Content]) -> String {
    content
        .iter()
        .filter_map(Content::as_text)
        .collect::<Vec<_>>()
        .join("\n")
}

fn message_label(message: &Message) -> String {
    match message {
        Message::User(m) => match &m.content {
            agent_ai::UserContent::Text(t) => format!("user {t}"),
            agent_ai::UserContent::Blocks(b) => format!("user {}", content_text(b)),
        },
        Message::Assistant(_) => "assistant".into(),
        Message::ToolResult(r) => format!("toolResult {}", r.tool_call_id),
    }
}

/// One event as a short line.
pub fn compact(event: &AgentEvent) -> String {
    match event {
        AgentEvent::AgentStart => "agent_start".into(),
        AgentEvent::AgentEnd { messages } => format!("agent_end({} messages)", messages.len()),
        AgentEvent::TurnStart => "turn_start".into(),
        AgentEvent::TurnEnd { tool_results, .. } => {
            format!("turn_end({} results)", tool_results.len())
        }
        AgentEvent::MessageStart { message } => {
            format!("message_start({})", message_label(message))
        }
        AgentEvent::MessageUpdate {
            assistant_message_event,
            ..
        } => {
            let kind = serde_json::to_value(assistant_message_event.as_ref())
                .ok()
                .and_then(|v| v["type"].as_str().map(str::to_owned))
                .unwrap_or_default();
            format!("message_update({kind})")
        }
        AgentEvent::MessageEnd { message } => format!("message_end({})", message_label(message)),
        AgentEvent::ToolExecutionStart { tool_call_id, .. } => {
            format!("tool_start({tool_call_id})")
        }
        AgentEvent::ToolExecutionUpdate {
            tool_call_id,
            partial_result,
            ..
        } => format!(
            "tool_update({tool_call_id}: {})",
            content_text(&partial_result.content)
        ),
        AgentEvent::ToolExecutionEnd {
            tool_call_id,
            result,
            is_error,
            ..
        } => format!(
            "tool_end({tool_call_id} {}: {})",
            if *is_error { "ERR" } else { "ok" },
            content_text(&result.content)
        ),
    }
}

/// The events of a run of the prompt `go` answered once, without a tool
/// call (the answer's message events as a scripted provider gives them).
pub const ANSWERED_GO: [&str; 8] = [
    "agent_start",
    "turn_start",
    "message_start(user go)",
    "message_end(user go)",
    "message_start(assistant)",
    "message_end(assistant)",
    "turn_end(0 results)",
    "agent_end(2 messages)",
];

/// The compact lines of the events a streamed assistant message with these
/// block kinds produces (`text`, `toolcall`, `thinking`).
pub fn streamed_assistant(blocks: &[&str]) -> Vec<String> {
    let mut lines = vec!["message_start(assistant)".to_owned()];
    for block in blocks {
        for step in ["start", "delta", "end"] {
            lines.push(format!("message_update({block}_{step})"));
        }
    }
    lines.push("message_end(assistant)".into());
    lines
}

/// Collects events from the loop.
#[derive(Clone, Default)]
pub struct Recorder {
    pub events: Arc<Mutex<Vec<AgentEvent>>>,
}

impl Recorder {
    pub fn emit(&self) -> impl Fn(AgentEvent) + Send + Sync + '_ {
        move |event| self.events.lock().unwrap().push(event)
    }

    pub fn lines(&self) -> Vec<String> {
        self.events.lock().unwrap().iter().map(compact).collect()
    }

    pub fn events(&self) -> Vec<AgentEvent> {
        self.events.lock().unwrap().clone()
    }
}

/// Expands `["a", ...]` and nested helper vecs into one expected sequence.
#[macro_export]
macro_rules! lines {
    ($($part:expr),* $(,)?) => {{
        let mut all: Vec<String> = Vec::new();
        $( $crate::common::Extend::extend_into($part, &mut all); )*
        all
    }};
}

/// Things `lines!` accepts: a line or a list of lines.
pub trait Extend {
    fn extend_into(self, all: &mut Vec<String>);
}

impl Extend for &str {
    fn extend_into(self, all: &mut Vec<String>) {
        all.push(self.to_owned());
    }
}

impl Extend for String {
    fn extend_into(self, all: &mut Vec<String>) {
        all.push(self);
    }
}

impl Extend for Vec<String> {
    fn extend_into(self, all: &mut Vec<String>) {
        all.extend(self);
    }
}

/// The tool of Pi's additional loop scenarios: schema `{ms: number}`; sends
/// `partial <id>` at once, sleeps `ms`, panics with `boom <id>` when `ms` is
/// 13, returns `done <id>`, and tries a late update `late <id>` 5 ms after
/// returning (recording whether the sink accepted it).
pub struct SleepTool {
    tool: Tool,
    mode: ExecutionMode,
    pub late_accepted: Arc<Mutex<Vec<(String, bool)>>>,
}

impl SleepTool {
    pub fn new(name: &str) -> Self {
        SleepTool {
            tool: Tool {
                name: name.into(),
                description: "Sleeps.".into(),
                parameters: json!({
                    "type": "object",
                    "properties": {"ms": {"type": "number"}},
                    "required": ["ms"]
                }),
            },
            mode: ExecutionMode::Parallel,
            late_accepted: Arc::default(),
        }
    }

    pub fn sequential(mut self) -> Self {
        self.mode = ExecutionMode::Sequential;
        self
    }
}

#[async_trait]
impl AgentTool for SleepTool {
    fn tool(&self) -> &Tool {
        &self.tool
    }

    fn label(&self) -> &str {
        "Sleep"
    }

    fn execution_mode(&self) -> ExecutionMode {
        self.mode
    }

    async fn execute(
        &self,
        tool_call_id: &str,
        params: Value,
        _cancel: CancellationToken,
        updates: UpdateSink,
    ) -> Result<AgentToolResult, ToolError> {
        updates.send(AgentToolResult::text(format!("partial {tool_call_id}")));
        let ms = params["ms"].as_f64().unwrap_or(0.0);
        tokio::time::sleep(Duration::from_millis(ms as u64)).await;
        if ms == 13.0 {
            panic!("boom {tool_call_id}");
        }
        let late = self.late_accepted.clone();
        let id = tool_call_id.to_owned();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(5)).await;
            let accepted = updates.send(AgentToolResult::text(format!("late {id}")));
            late.lock().unwrap().push((id, accepted));
        });
        Ok(AgentToolResult::text(format!("done {tool_call_id}")).with_details(json!({"ms": ms})))
    }
}

/// A tool that echoes `value`, as in Pi's agent-loop tests: `echoed: <value>`,
/// details `{value}`. Records what it executed.
pub struct EchoTool {
    tool: Tool,
    pub executed: Arc<Mutex<Vec<String>>>,
    pub terminate: bool,
}

impl EchoTool {
    pub fn new() -> Self {
        EchoTool {
            tool: Tool {
                name: "echo".into(),
                description: "Echoes.".into(),
                parameters: json!({
                    "type": "object",
                    "properties": {"value": {"type": "string"}},
                    "required": ["value"]
                }),
            },
            executed: Arc::default(),
            terminate: false,
        }
    }
}

#[async_trait]
impl AgentTool for EchoTool {
    fn tool(&self) -> &Tool {
        &self.tool
    }

    fn label(&self) -> &str {
        "Echo"
    }

    async fn execute(
        &self,
        _tool_call_id: &str,
        params: Value,
        _cancel: CancellationToken,
        _updates: UpdateSink,
    ) -> Result<AgentToolResult, ToolError> {
        let value = params["value"].as_str().unwrap_or_default().to_owned();
        self.executed.lock().unwrap().push(value.clone());
        let mut result =
            AgentToolResult::text(format!("echoed: {value}")).with_details(json!({"value": value}));
        result.terminate = self.terminate;
        Ok(result)
    }
}

/// A loop configuration around a scripted provider.
pub fn config(provider: &ScriptedProvider) -> LoopConfig {
    LoopConfig::new(ScriptedProvider::model(), Arc::new(provider.clone()))
}

/// A context holding these tools.
pub fn context(tools: Vec<Arc<dyn AgentTool>>) -> AgentContext {
    AgentContext::new(None, Arc::new(ToolSet::new(tools).unwrap()))
}

/// A user prompt.
pub fn user(t: &str) -> Message {
    agent_ai::UserMessage::text(t).into()
}
