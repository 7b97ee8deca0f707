//! Names made from outside text (a tool call's id, an MCP server's name) that
//! must fit both file names and the model APIs' tool names.

/// `text` with every character outside `[a-zA-Z0-9_-]` replaced by `_`.
pub fn underscore_unsafe(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}
