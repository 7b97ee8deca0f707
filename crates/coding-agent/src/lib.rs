//! `coding-agent`: the product layer.
//!
//! [`ToolDefinition`] is a tool as the product knows it: an [`agent_core::AgentTool`]
//! whose `execute` also receives a [`ToolContext`] (cwd, cancellation, model),
//! plus a prompt snippet, prompt guidelines and terminal renderers.
//! [`wrap_tool_definition`] turns one into an `AgentTool` for the loop. The seven
//! built-in tools live in [`tools`], one folder each, and reach files and
//! processes only through the narrow Operations trait in their folder's `ops`;
//! [`tools`] says which paths those are given.
//!
//! Around them, the product: [`settings`] (model selection), [`prompt`] (the
//! system prompt), [`templates`] (prompt templates, `/name args`), [`skills`]
//! (Agent Skills: listed for the model, `/skill:name`),
//! [`session`] (JSONL session files), [`app`] (the wiring of
//! all of them into one agent), [`modes`] (print, JSON, RPC and interactive)
//! and [`warnings`] (logged warnings as lines).
//!
//! Features: `tui` (the interactive terminal UI) and `mcp` (MCP servers'
//! tools, and our tools served to MCP clients), both on by default; with
//! `default-features = false` the crate is the tools, the wiring and the
//! print, JSON and RPC modes.
//!
//! # Quick start
//!
//! One call of a built-in tool, through the same five steps the agent loop
//! takes (prepare, validate, `before_tool_call`, execute, `after_tool_call`):
//!
//! ```
//! use std::sync::Arc;
//!
//! use agent_ai::{Content, ToolCall};
//! use agent_core::{NoHooks, ToolSet, run_single_tool_call};
//! use coding_agent::tools::builtin_tool;
//! use coding_agent::{CancellationToken, ToolContext, wrap_tool_definition};
//! use serde_json::json;
//!
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let dir = tempfile::tempdir().unwrap();
//! std::fs::write(dir.path().join("a.txt"), "first\nsecond\n").unwrap();
//! let cwd = dir.path().to_path_buf();
//! let read = wrap_tool_definition(
//!     builtin_tool("read").unwrap(),
//!     Arc::new(move |cancel| ToolContext { cancel, ..ToolContext::new(cwd.clone()) }),
//! );
//! let tools = ToolSet::new([read]).unwrap();
//!
//! let call = ToolCall::new("call_1", "read", json!({"path": "a.txt", "offset": 2}));
//! let result = run_single_tool_call(&tools, &call, &NoHooks, &CancellationToken::new()).await;
//! let text: String = result.content.iter().filter_map(Content::as_text).collect();
//! assert!(!result.is_error);
//! assert_eq!(text, "second\n");
//! # });
//! ```
//!
//! More in `examples/`: `one_call` (write, edit, read, and the text a model
//! gets for a wrong argument) and `in_memory_tools` (the tools over your own
//! Operations, driven by an agent).

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
pub mod skills;
pub mod support;
pub mod templates;
pub mod thinking;
pub mod tools;
pub mod warnings;

pub use definition::{
    OnCancel, ToolContext, ToolDefinition, ToolFailure, ToolOutput, ToolSpec, Typed, TypedTool,
    wrap_tool_definition,
};

/// What implementing a tool or an Operations trait takes (agent-core's
/// re-exports): the attribute the implementations carry, and the
/// cancellation token their methods are given.
pub use agent_core::{CancellationToken, async_trait};
