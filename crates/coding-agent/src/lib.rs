//! `coding-agent`: the product layer.
//!
//! [`ToolDefinition`] is a tool as the product knows it: an [`agent_core::AgentTool`]
//! whose `execute` also receives a [`ToolContext`] (cwd, cancellation, model, UI),
//! plus a prompt snippet, prompt guidelines and terminal renderers.
//! [`wrap_tool_definition`] turns one into an `AgentTool` for the loop. The seven
//! built-in tools live in [`tools`], and reach files and processes only through
//! the narrow traits in [`ops`].
//!
//! Around them, the product: [`settings`] (model selection), [`prompt`] (the
//! system prompt), [`session`] (JSONL session files) and [`modes`] (print,
//! JSON and RPC).

pub mod definition;
pub mod modes;
pub mod ops;
pub mod prompt;
pub mod remote;
pub mod render;
pub mod session;
pub mod settings;
pub mod support;
pub mod tools;

pub use definition::{ToolContext, ToolDefinition, UiHandle, wrap_tool_definition};
