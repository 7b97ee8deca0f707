//! What the end-to-end tests share: they drive the BUILT binary
//! (`CARGO_BIN_EXE_coding-agent`) against a loopback model server that
//! speaks the real APIs' streaming formats.
//!
//! - [`server`]: the HTTP/1.1 server that records requests and replies with
//!   scripted server-sent events (or stalls).
//! - [`wire`]: those events byte for byte, for OpenAI chat completions and
//!   Anthropic messages, and a format-independent reading of requests.
//! - [`sandbox`]: temp HOME, agent dir, cwd and TMPDIR; the spawned binary;
//!   the processes it leaves, seen through /proc.
//! - [`rpc`]: a client of `--mode rpc`.
//! - [`summary`]: the summariser's requests and answers, for compaction.

#![allow(dead_code, unused_imports, clippy::unwrap_used, clippy::expect_used)]

pub mod rpc;
pub mod sandbox;
pub mod server;
pub mod summary;
pub mod wire;

pub use rpc::Rpc;
pub use sandbox::*;
pub use server::{ModelServer, Reply, Request};
pub use summary::{is_summary_request, summary_reply, summary_text};
pub use wire::{Answer, Call, MODEL, Wire};
