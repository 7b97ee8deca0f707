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
//!   [`agent`]: the [`Agent`] handle around it.

pub mod agent;
pub mod agent_loop;
pub mod batch;
pub mod event;
pub mod hooks;
pub mod pipeline;
pub mod queue;
pub mod tool;
pub mod tool_set;

pub use agent::{Agent, AgentError, AgentEvents};
pub use agent_loop::{
    AgentContext, ContinueError, LoopConfig, StopAfterTurn, TurnSummary, agent_loop,
    agent_loop_continue,
};
pub use batch::{BatchOutcome, execute_tool_calls};
pub use event::{AgentEvent, Emit};
pub use hooks::{
    AfterToolCallContext, BeforeToolCall, NoHooks, ToolCallContext, ToolCallHooks,
    ToolResultOverride,
};
pub use pipeline::{
    ToolCallScope, error_result, run_single_tool_call, run_single_tool_call_with_updates,
};
pub use queue::{MessageQueue, QueueMode};
pub use tool::{AgentTool, AgentToolResult, ExecutionMode, ToolError, ToolUpdate, UpdateSink};
pub use tool_set::ToolSet;
