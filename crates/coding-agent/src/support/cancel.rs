//! What a tool answers when its call is cancelled. Pi's tools all say
//! `Operation aborted` (bash has its own `Command aborted`), the text the
//! agent loop gives the calls of a run it stopped, so the text lives once,
//! in agent-core.

use agent_core::ToolError;

/// Pi's text for a cancelled call: agent-core's, so that a call the tool
/// stopped and one the loop stopped read the same to the model.
pub use agent_core::pipeline::ABORTED_TEXT as ABORTED;

/// The error a tool returns when its call is cancelled.
pub fn aborted() -> ToolError {
    ToolError::new(ABORTED)
}
