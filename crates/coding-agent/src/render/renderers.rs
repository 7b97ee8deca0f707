//! Which renderer draws a call: the tool set of the session, looked up by
//! name in a map built once, so a custom or MCP tool's own
//! [`ToolDefinition::render_call`] and [`ToolDefinition::render_result`]
//! are used, and drawing a frame builds no tool.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use agent_core::AgentToolResult;
use serde_json::Value;

use super::{RenderOptions, StyledLine, generic};
use crate::ToolDefinition;
use crate::tools::{BUILTIN_TOOL_NAMES, builtin_tool};

/// The renderers of a tool set, by tool name; a name it does not hold (a
/// tool of an older session, say) is drawn by [`generic`].
#[derive(Clone)]
pub struct ToolRenderers {
    by_name: HashMap<String, Arc<dyn ToolDefinition>>,
}

impl ToolRenderers {
    /// The renderers of `tools`; a later tool of the same name wins, as it
    /// does in the tool set offered to the model.
    pub fn new(tools: impl IntoIterator<Item = Arc<dyn ToolDefinition>>) -> Self {
        ToolRenderers {
            by_name: tools
                .into_iter()
                .map(|tool| (tool.tool().name.clone(), tool))
                .collect(),
        }
    }

    /// The seven built-in tools' renderers.
    pub fn builtin() -> Self {
        ToolRenderers::new(BUILTIN_TOOL_NAMES.into_iter().filter_map(builtin_tool))
    }

    /// The call `name(args)` as its tool draws it.
    pub fn call_lines(&self, name: &str, args: &Value, options: RenderOptions) -> Vec<StyledLine> {
        match self.by_name.get(name) {
            Some(tool) => tool.render_call(args, options),
            None => generic::call_lines(name, args, options),
        }
    }

    /// A result (or a progress update, `options.is_partial`) of a call to
    /// `name` as its tool draws it.
    pub fn result_lines(
        &self,
        name: &str,
        result: &AgentToolResult,
        is_error: bool,
        options: RenderOptions,
    ) -> Vec<StyledLine> {
        match self.by_name.get(name) {
            Some(tool) => tool.render_result(result, is_error, options),
            None => generic::result_lines(result, is_error, options),
        }
    }
}

impl Default for ToolRenderers {
    fn default() -> Self {
        ToolRenderers::builtin()
    }
}

impl fmt::Debug for ToolRenderers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut names: Vec<&String> = self.by_name.keys().collect();
        names.sort();
        f.debug_struct("ToolRenderers")
            .field("tools", &names)
            .finish()
    }
}
