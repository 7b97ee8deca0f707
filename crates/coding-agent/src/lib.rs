//! `coding-agent`: the product layer.
//!
//! [`ToolDefinition`] is a tool as the product knows it: an [`agent_core::AgentTool`]
//! whose `execute` also receives a [`ToolContext`] (cwd, cancellation, model, UI),
//! plus a prompt snippet, prompt guidelines and terminal renderers.
//! [`wrap_tool_definition`] turns one into an `AgentTool` for the loop. The seven
//! built-in tools live in [`tools`], one folder each, and reach files and
//! processes only through the narrow Operations trait in their folder's `ops`.
//!
//! Around them, the product: [`settings`] (model selection), [`prompt`] (the
//! system prompt), [`session`] (JSONL session files), [`app`] (the wiring of
//! all of them into one agent), [`modes`] (print, JSON, RPC and interactive)
//! and [`warnings`] (logged warnings as lines).

pub mod app;
pub mod compaction;
pub mod definition;
pub mod export;
pub mod guard;
pub mod hooks;
#[cfg(feature = "mcp")]
pub mod mcp;
pub mod modes;
pub mod prompt;
pub mod recovery;
pub mod remote;
pub mod render;
pub mod retry;
pub mod sandbox;
pub mod session;
pub mod session_event;
pub mod settings;
pub mod support;
pub mod thinking;
pub mod tools;
pub mod warnings;

pub use definition::{
    OnCancel, ToolContext, ToolDefinition, ToolFailure, ToolOutput, Typed, TypedTool, UiHandle,
    wrap_tool_definition,
};
