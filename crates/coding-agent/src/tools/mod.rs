//! The built-in tools, one folder each, and the registry that finds them by name.
//!
//! A tool's folder holds everything only it uses: `mod.rs` (the definition and
//! its renderers), `ops.rs` (the narrow Operations trait through which it
//! reaches files and processes, with the local implementation; remote and test
//! implementations plug in beside it) and its own helpers. What several tools
//! share lives in [`crate::support`].

use std::sync::Arc;

use crate::definition::{ToolDefinition, Typed};

pub mod bash;
pub mod edit;
pub mod find;
pub mod grep;
pub mod ls;
pub mod read;
pub mod write;

/// The names of Pi's built-in tools, in Pi's order (`allToolNames`).
pub const BUILTIN_TOOL_NAMES: [&str; 7] = ["read", "bash", "edit", "write", "grep", "find", "ls"];

/// The built-in tool called `name`, working on the local machine; `None` for
/// any other name.
pub fn builtin_tool(name: &str) -> Option<Arc<dyn ToolDefinition>> {
    let tool: Arc<dyn ToolDefinition> = match name {
        "read" => Arc::new(Typed::<read::ReadTool>::default()),
        "bash" => Arc::new(Typed::<bash::BashTool>::default()),
        "edit" => Arc::new(Typed::<edit::EditTool>::default()),
        "write" => Arc::new(Typed::<write::WriteTool>::default()),
        "grep" => Arc::new(Typed::<grep::GrepTool>::default()),
        "find" => Arc::new(Typed::<find::FindTool>::default()),
        "ls" => Arc::new(Typed::<ls::LsTool>::default()),
        _ => return None,
    };
    Some(tool)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_name_finds_the_tool_of_that_name() {
        for name in BUILTIN_TOOL_NAMES {
            let tool = builtin_tool(name).unwrap_or_else(|| panic!("{name} is not registered"));
            assert_eq!(tool.tool().name, name);
        }
    }

    #[test]
    fn unknown_names_find_nothing() {
        assert!(builtin_tool("delete").is_none());
        assert!(builtin_tool("LS").is_none());
    }
}
