//! What a tool answers when its call is cancelled. Pi's tools all say
//! `Operation aborted` (bash has its own `Command aborted`), so the text lives once.

use agent_core::ToolError;

/// Pi's text for a cancelled call.
pub const ABORTED: &str = "Operation aborted";

/// The error a tool returns when its call is cancelled.
pub fn aborted() -> ToolError {
    ToolError::new(ABORTED)
}
