//! Calls of tools that bring no renderer of their own (MCP servers' tools,
//! tools the transcript knows only by name): the name and the arguments as
//! JSON, and the result's text collapsed like the built-ins'. An MCP tool
//! (`mcp__<server>__<tool>`) shows as `<server> <tool> <arguments>`.

use agent_core::AgentToolResult;
use serde_json::Value;

use super::{RenderOptions, Style, StyledLine, call, preview, result};

/// The call's line: `<name> <arguments>`, or `<server> <tool> <arguments>`
/// for a name in the `mcp__<server>__<tool>` form.
pub fn call_lines(name: &str, args: &Value, options: RenderOptions) -> Vec<StyledLine> {
    let line = match name
        .strip_prefix("mcp__")
        .and_then(|rest| rest.split_once("__"))
    {
        Some((server, tool)) => mcp_call_line(server, tool, args, options),
        None => with_args(call::header(name), args, options),
    };
    vec![line]
}

/// `<server> <tool> <arguments>`: an MCP tool has no main argument to pick,
/// so the arguments are shown whole (clipped to the width).
pub fn mcp_call_line(server: &str, tool: &str, args: &Value, options: RenderOptions) -> StyledLine {
    let line = call::header(server)
        .push(" ", Style::Normal)
        .push(tool, Style::Accent);
    with_args(line, args, options)
}

/// The first lines of a result's text and any notice, images as
/// placeholders; errors in the error style.
pub fn result_lines(
    result: &AgentToolResult,
    is_error: bool,
    options: RenderOptions,
) -> Vec<StyledLine> {
    if is_error {
        result::error_lines(result, options)
    } else {
        result::content_lines(result, options)
    }
}

/// `line`, a space and the arguments as compact JSON (none when empty).
fn with_args(line: StyledLine, args: &Value, options: RenderOptions) -> StyledLine {
    match args {
        Value::Object(map) if map.is_empty() => line,
        Value::Null => line,
        other => line
            .push(" ", Style::Normal)
            .push(preview::clip(&other.to_string(), options), Style::Dim),
    }
}
