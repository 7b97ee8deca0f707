//! The names the model calls MCP tools by: `mcp__<server>__<tool>`, as Claude
//! Code and Codex name them (so permission rules like `mcp__github__*` carry
//! over), made to fit what every model API accepts: `^[a-zA-Z0-9_-]{1,64}$`.

use std::collections::BTreeSet;

use crate::support::safe_name::{fnv1a, underscore_unsafe};

/// The longest tool name the model APIs accept.
pub const MAX_NAME_LEN: usize = 64;

/// `mcp__<server>__<tool>` with every character outside `[a-zA-Z0-9_-]`
/// replaced by `_`, and in the server's part a run of underscores made one:
/// the first `__` after `mcp__` then always ends the server, so a rule on
/// server `a` (`mcp__a`) cannot cover server `a__b`'s tools. A name over
/// [`MAX_NAME_LEN`] keeps its start and ends in a hash of the whole, so two
/// long names stay apart.
pub fn tool_name(server: &str, tool: &str) -> String {
    let name = format!("mcp__{}__{}", server_part(server), sanitise(tool));
    if name.len() <= MAX_NAME_LEN {
        return name;
    }
    let hash = format!("_{:016x}", fnv1a(name.as_bytes()));
    let mut short: String = name.chars().take(MAX_NAME_LEN - hash.len()).collect();
    short.push_str(&hash);
    short
}

/// Gives each `(server, tool)` pair its name, in order; a name already taken
/// (two tools that differ only in characters that were replaced) gets `_2`,
/// `_3`, ... so the result depends only on the order of the pairs.
pub fn assign<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Vec<String> {
    let mut taken = BTreeSet::new();
    pairs
        .into_iter()
        .map(|(server, tool)| {
            let base = tool_name(server, tool);
            let mut name = base.clone();
            let mut n = 2;
            while !taken.insert(name.clone()) {
                let suffix = format!("_{n}");
                let keep = base.len().min(MAX_NAME_LEN - suffix.len());
                name = format!("{}{suffix}", &base[..keep]);
                n += 1;
            }
            name
        })
        .collect()
}

/// The server's name as its tools' names carry it: no `__` inside.
fn server_part(server: &str) -> String {
    let mut part = String::new();
    for c in sanitise(server).chars() {
        if !(c == '_' && part.ends_with('_')) {
            part.push(c);
        }
    }
    part
}

fn sanitise(part: &str) -> String {
    if part.is_empty() {
        "_".into()
    } else {
        underscore_unsafe(part)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn valid(name: &str) -> bool {
        (1..=MAX_NAME_LEN).contains(&name.len())
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    }

    /// `mcp__a` names server `a` only: a server called `a__b` (or `a.__b`)
    /// has `a_b` in its tools' names.
    #[test]
    fn a_server_part_never_holds_the_separator() {
        assert_eq!(tool_name("a__b", "c"), "mcp__a_b__c");
        assert_eq!(tool_name("a.__b", "x__y"), "mcp__a_b__x__y");
        assert_eq!(tool_name("__", "t"), "mcp_____t");
        assert!(!tool_name("a__b", "c").starts_with("mcp__a__"));
    }

    #[test]
    fn names_join_server_and_tool_and_replace_other_characters() {
        assert_eq!(
            tool_name("time", "get_current_time"),
            "mcp__time__get_current_time"
        );
        assert_eq!(
            tool_name("my server", "files.read/v2"),
            "mcp__my_server__files_read_v2"
        );
        assert_eq!(tool_name("é", ""), "mcp______");
    }

    #[test]
    fn long_names_are_cut_to_64_with_a_stable_hash() {
        let long = "a".repeat(80);
        let one = tool_name("srv", &long);
        let other = tool_name("srv", &format!("{long}b"));
        assert_eq!(one.len(), MAX_NAME_LEN);
        assert!(valid(&one) && valid(&other));
        assert_ne!(one, other);
        assert_eq!(one, tool_name("srv", &long));
    }

    #[test]
    fn collisions_get_numbered_suffixes_in_order() {
        let names = assign([("s", "a.b"), ("s", "a_b"), ("s", "a b"), ("t", "x")]);
        assert_eq!(
            names,
            ["mcp__s__a_b", "mcp__s__a_b_2", "mcp__s__a_b_3", "mcp__t__x"]
        );
        let long = "x".repeat(70);
        let names = assign([("s", long.as_str()), ("s", long.as_str())]);
        assert!(names.iter().all(|n| valid(n)));
        assert_ne!(names[0], names[1]);
    }
}
