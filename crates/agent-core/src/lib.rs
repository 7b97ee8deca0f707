//! `agent-core`: the agent loop.
//!
//! The loop knows tools only as [`AgentTool`]. Each tool call goes through five
//! steps (see [`pipeline`]): prepare_arguments, schema validation,
//! `before_tool_call`, execute, `after_tool_call`. Every failure at every step,
//! a panic included, becomes a tool-result message with `isError: true`; nothing
//! escapes the loop. The order of the events the loop emits is written down once,
//! in [`event`].
//!
//! Where things are:
//! - [`tool`]: what a tool is to the loop; [`tool_set`]: the tools of an agent,
//!   validators compiled once; [`hooks`]: `before_tool_call` / `after_tool_call`.
//! - [`pipeline`]: one call, five steps ([`run_single_tool_call`] runs one
//!   without a model); [`batch`]: the calls of one message, parallel or sequential.
//! - [`agent_loop`](mod@agent_loop): turns, queues ([`queue`]), stopping, cancellation;
//!   [`agent`]: the [`Agent`] handle around it; [`history`]: the conversation,
//!   one owner, shared with every request; [`listener`]: a subscriber's queue,
//!   and which updates of a streaming message it keeps.
//!
//! # Quick start
//!
//! An agent with one tool, answered by a scripted provider (agent-ai's
//! `testing` feature) instead of a model:
//!
//! ```
//! use std::sync::Arc;
//!
//! use agent_ai::testing::{ScriptedProvider, ScriptedResponse};
//! use agent_ai::{AssistantContent, Tool, ToolCall};
//! use agent_core::{
//!     Agent, AgentContext, AgentTool, AgentToolResult, CancellationToken, LoopConfig, ToolError,
//!     ToolSet, UpdateSink, async_trait,
//! };
//! use serde_json::{Value, json};
//!
//! struct Echo(Tool);
//!
//! #[async_trait]
//! impl AgentTool for Echo {
//!     fn tool(&self) -> &Tool {
//!         &self.0
//!     }
//!     fn label(&self) -> &str {
//!         "Echo"
//!     }
//!     async fn execute(
//!         &self,
//!         _id: &str,
//!         params: Value,
//!         _cancel: CancellationToken,
//!         _updates: UpdateSink,
//!     ) -> Result<AgentToolResult, ToolError> {
//!         Ok(AgentToolResult::text(params["text"].as_str().unwrap_or_default()))
//!     }
//! }
//!
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let echo = Echo(Tool {
//!     name: "echo".into(),
//!     description: "Say it back.".into(),
//!     parameters: json!({"type": "object", "properties": {"text": {"type": "string"}}}),
//! });
//! let call = ToolCall::new("c1", "echo", json!({"text": "hi"}));
//! let provider = ScriptedProvider::new([
//!     ScriptedResponse::Message(ScriptedProvider::reply(vec![AssistantContent::ToolCall(call)])),
//!     ScriptedResponse::Message(ScriptedProvider::reply(vec![])),
//! ]);
//! let tools = Arc::new(ToolSet::new([Arc::new(echo) as Arc<dyn AgentTool>]).unwrap());
//! let config = LoopConfig::new(ScriptedProvider::model(), Arc::new(provider));
//! let agent = Agent::new(config, AgentContext::new(None, tools));
//!
//! let added = agent.prompt("Say hi").await.unwrap();
//! // The prompt, the call, its result, the last answer.
//! assert_eq!(added.len(), 4);
//! assert_eq!(agent.messages(), added);
//! # });
//! ```

pub mod agent;
pub mod agent_loop;
pub mod batch;
pub mod event;
pub mod history;
pub mod hooks;
pub mod listener;
pub mod model;
pub mod pipeline;
pub mod queue;
mod sync;
pub mod tool;
pub mod tool_set;

pub use agent::{Agent, AgentError};
pub use agent_loop::{
    AgentContext, ContinueError, LoopConfig, StopAfterTurn, TurnSummary, agent_loop,
    agent_loop_continue,
};
pub use batch::{BatchOutcome, execute_tool_calls};
pub use event::{AgentEvent, Emit};
pub use history::History;
pub use hooks::{
    AfterToolCallContext, BeforeToolCall, NoHooks, ToolCallContext, ToolCallHooks,
    ToolResultOverride,
};
pub use listener::{AgentEvents, Events, Listener, StreamedEvent, Updates};
pub use model::{ModelChoice, ModelHandle, TransformContext};
pub use pipeline::{
    ToolCallScope, error_result, run_single_tool_call, run_single_tool_call_with_updates,
};
pub use queue::{MessageQueue, QueueMode};
pub use tool::{AgentTool, AgentToolResult, ExecutionMode, ToolError, ToolUpdate, UpdateSink};
pub use tool_set::ToolSet;

/// What implementing [`AgentTool`] or [`ToolCallHooks`] takes, re-exported
/// so that an embedder needs no dependencies of its own for it: the
/// attribute their implementations carry, and the cancellation token their
/// methods are given.
pub use async_trait::async_trait;
pub use tokio_util::sync::CancellationToken;
