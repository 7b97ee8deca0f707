//! The tools on a remote host over OpenSSH (`--remote`).
//!
//! [`RemoteHost`] holds one ssh connection (a ControlMaster) and a helper:
//! this same binary, uploaded to the host once per build and started as
//! `coding-agent remote-helper`, which answers one [`protocol::Call`] per
//! Operations method with the local implementation. [`RemoteOperations`]
//! implements every Operations trait with those calls, so the tools run
//! unchanged and give the same answers as locally; `read` and `ls`, which
//! ask several things in a row, are run whole by the helper ([`whole`]). `docs/remote.md` says
//! why this design, what runs where, and the security model.

pub mod client;
pub mod connection;
pub mod context;
pub mod helper;
pub mod log;
pub mod ops;
mod pool;
pub mod protocol;
pub mod sandbox;
pub mod target;
pub mod whole;

pub use client::Lost;
pub use connection::{ConnectError, RemoteHost, RemoteOptions, RemoteSettings};
pub use ops::RemoteOperations;
pub use target::{RemoteTarget, TargetError};

use std::sync::Arc;

use crate::definition::{ToolDefinition, Typed, TypedTool};
use crate::tools::{bash, edit, find, grep, write};
use whole::WholeTool;

/// The built-in tool called `name`, acting on the host of `ops`; `None` for
/// any other name (the remote twin of [`crate::tools::builtin_tool`]).
pub fn remote_tool(name: &str, ops: &RemoteOperations) -> Option<Arc<dyn ToolDefinition>> {
    let ops = Arc::new(ops.clone());
    let tool: Arc<dyn ToolDefinition> = match name {
        "read" | "ls" => Arc::new(WholeTool::new(name, Arc::clone(ops.host()))?),
        "bash" => typed(bash::BashTool::new(ops)),
        "edit" => typed(edit::EditTool::new(ops)),
        "write" => typed(write::WriteTool::new(ops)),
        "grep" => typed(grep::GrepTool::new(ops)),
        "find" => typed(find::FindTool::new(ops)),
        _ => return None,
    };
    Some(tool)
}

fn typed<T: TypedTool + 'static>(tool: T) -> Arc<dyn ToolDefinition> {
    Arc::new(Typed::new(tool))
}
