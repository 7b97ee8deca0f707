//! The ways the agent runs without a terminal UI: print (`-p`), JSON
//! (`--mode json`) and RPC (`--mode rpc`), all driving one [`AgentSession`](crate::app::AgentSession).
//!
//! - [`print`](mod@print): run prompts, print the answer (or every event as JSON).
//! - [`rpc`]: JSON commands in, responses and events out.
//! - `interactive`: the terminal UI, when no prompt is given (feature `tui`).
//! - [`events`]: agent events in Pi's JSON shapes; [`jsonl`]: line framing;
//!   [`user_bash`]: RPC's `bash` command.
//!
//! The modes take any [`agent_ai::Provider`], so tests drive them with a
//! scripted one and the binary with an HTTP one.

pub mod events;
#[cfg(feature = "tui")]
pub mod interactive;
pub mod jsonl;
pub mod print;
pub mod rpc;
pub mod user_bash;

pub use print::{PrintFormat, run_print};
pub use rpc::{RpcEnd, run_rpc, run_rpc_until, run_rpc_with};
