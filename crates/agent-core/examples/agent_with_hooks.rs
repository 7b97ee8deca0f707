//! An agent with a custom tool and a hook that blocks a call, answered by a
//! scripted provider (no network): `cargo run -p agent-core --example agent_with_hooks`.
//!
//! The script plays the model: it first calls `shout` twice (once with a word
//! the hook refuses), then answers with text. The events show each call: one
//! that runs has `tool_execution_start` and `tool_execution_end`; one the
//! hook blocked never starts, so its error result message is all there is of
//! it (Pi emits a start and an end for it too: `docs/DEVIATIONS.md` #22).

use std::sync::Arc;

use agent_ai::testing::ScriptedResponse;
use agent_ai::{AssistantContent, Content, Message, ScriptedProvider, TextContent, Tool, ToolCall};
use agent_core::{
    Agent, AgentContext, AgentEvent, AgentTool, AgentToolResult, BeforeToolCall, CancellationToken,
    LoopConfig, ToolCallContext, ToolCallHooks, ToolError, ToolSet, UpdateSink, Updates,
    async_trait,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

/// Arguments of `shout`.
#[derive(Deserialize, JsonSchema)]
struct ShoutArgs {
    /// What to shout.
    text: String,
}

/// A tool that upper-cases its text.
struct Shout {
    tool: Tool,
}

#[async_trait]
impl AgentTool for Shout {
    fn tool(&self) -> &Tool {
        &self.tool
    }

    fn label(&self) -> &str {
        "Shout"
    }

    async fn execute(
        &self,
        _id: &str,
        params: Value,
        _cancel: CancellationToken,
        _updates: UpdateSink,
    ) -> Result<AgentToolResult, ToolError> {
        // Validation already ran: the arguments match the schema.
        let args: ShoutArgs = serde_json::from_value(params)
            .map_err(|e| ToolError::new(format!("Invalid arguments: {e}")))?;
        Ok(AgentToolResult::text(args.text.to_uppercase()))
    }
}

/// Refuses to shout rude words; everything else proceeds.
struct Polite;

#[async_trait]
impl ToolCallHooks for Polite {
    async fn before_tool_call(
        &self,
        call: &ToolCallContext<'_>,
        _cancel: &CancellationToken,
    ) -> Result<BeforeToolCall, ToolError> {
        if call.args["text"].as_str() == Some("darn") {
            return Ok(BeforeToolCall::Block {
                reason: Some("Shouting that is not allowed here. Pick another word.".into()),
            });
        }
        Ok(BeforeToolCall::Proceed)
    }
}

fn call(id: &str, text: &str) -> AssistantContent {
    AssistantContent::ToolCall(ToolCall::new(id, "shout", json!({ "text": text })))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let provider = ScriptedProvider::new([
        ScriptedResponse::Message(ScriptedProvider::reply(vec![
            call("c1", "hello"),
            call("c2", "darn"),
        ])),
        ScriptedResponse::Message(ScriptedProvider::reply(vec![AssistantContent::Text(
            TextContent {
                text: "I shouted HELLO; the other word was refused.".into(),
                text_signature: None,
            },
        )])),
    ]);
    let shout: Arc<dyn AgentTool> = Arc::new(Shout {
        tool: Tool::for_args::<ShoutArgs>("shout", "Shout a text."),
    });
    let tools = Arc::new(ToolSet::new([shout])?);
    let config =
        LoopConfig::new(ScriptedProvider::model(), Arc::new(provider)).with_hooks(Arc::new(Polite));
    let agent = Agent::new(config, AgentContext::new(None, tools));

    // Read after the run: without the streaming message's updates, each of
    // which would hold the answer so far (see `Agent::subscribe`).
    let mut events = agent.subscribe_to(Updates::None);
    let added = agent.prompt("Shout hello, then darn.").await?;
    let mut lines = Vec::new();
    while let Some(event) = events.try_recv() {
        let line = match event {
            AgentEvent::ToolExecutionStart { tool_call_id, .. } => {
                format!("{tool_call_id}: started")
            }
            AgentEvent::ToolExecutionEnd {
                tool_call_id,
                is_error,
                ..
            } => format!("{tool_call_id}: ended (error: {is_error})"),
            AgentEvent::MessageEnd {
                message: Message::ToolResult(result),
            } => {
                let text: String = result.content.iter().filter_map(Content::as_text).collect();
                format!("{}: result {text:?}", result.tool_call_id)
            }
            _ => continue,
        };
        println!("{line}");
        lines.push(line);
    }
    println!("the run added {} messages", added.len());
    // The example checks itself, so CI notices when it stops being true.
    assert_eq!(
        lines,
        [
            "c1: started",
            "c1: ended (error: false)",
            "c1: result \"HELLO\"",
            "c2: result \"Shouting that is not allowed here. Pick another word.\"",
        ]
    );
    Ok(())
}
