//! `agent-core`: the agent loop.
//!
//! The loop knows tools only as [`AgentTool`]. Each tool call goes through five
//! steps (see [`pipeline`]): prepare_arguments, schema validation,
//! `before_tool_call`, execute, `after_tool_call`. Every failure at every step,
//! a panic included, becomes a tool-result message with `isError: true`; nothing
//! escapes the loop. The order of the events the loop emits is written down once,
//! in [`event`].

pub mod event;
pub mod tool;

pub use event::AgentEvent;
pub use tool::{AgentTool, AgentToolResult, ExecutionMode, ToolError, ToolUpdate, UpdateSink};
