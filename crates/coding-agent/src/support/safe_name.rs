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

/// FNV-1a of `bytes`: a hash that stays the same from one run to the next
/// (the standard library's is seeded per process), for names made from
/// text too long or too free to use as it is.
pub fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    })
}
