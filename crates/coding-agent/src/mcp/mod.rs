//! The Model Context Protocol, both ways, on the official SDK (`rmcp`).
//!
//! - Client: the servers in `"mcpServers"` ([`config`]) start with the
//!   session ([`servers`]); each of their tools becomes a tool of the agent
//!   named `mcp__<server>__<tool>` ([`crate::support::mcp_names`], [`tool`]) whose results map to
//!   what the model reads ([`content`]), within what a turn can hold
//!   ([`limits`]).
//! - Server: `coding-agent mcp serve` offers the built-in tools to other MCP
//!   clients over stdio ([`serve`]).
//!
//! See `docs/extensions.md` for the configuration users write.

mod client;
pub mod config;
pub mod content;
mod http;
pub mod limits;
mod listing;
pub mod report;
pub mod serve;
mod serve_io;
pub mod servers;
mod stdio;
pub mod tool;

pub use config::{ServerConfig, Transport};
pub use servers::{McpServers, ServerStatus};
