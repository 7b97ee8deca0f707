//! The built-in tools, one per file, and the registry that finds them by name.

use std::sync::Arc;

use crate::definition::ToolDefinition;

pub mod ls;

/// The names of Pi's built-in tools, in Pi's order (`allToolNames`).
pub const BUILTIN_TOOL_NAMES: [&str; 7] = ["read", "bash", "edit", "write", "grep", "find", "ls"];

/// The built-in tool called `name`, working on the local machine; `None` for
/// any other name (and for a built-in not yet present in this build).
pub fn builtin_tool(name: &str) -> Option<Arc<dyn ToolDefinition>> {
    let tool: Arc<dyn ToolDefinition> = match name {
        "ls" => Arc::new(ls::LsTool::local()),
        _ => return None,
    };
    Some(tool)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_registered_tool_answers_to_its_own_name() {
        for name in BUILTIN_TOOL_NAMES {
            if let Some(tool) = builtin_tool(name) {
                assert_eq!(tool.tool().name, name);
            }
        }
        assert!(builtin_tool("ls").is_some());
    }

    #[test]
    fn unknown_names_find_nothing() {
        assert!(builtin_tool("delete").is_none());
        assert!(builtin_tool("LS").is_none());
    }
}
