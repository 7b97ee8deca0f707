//! Which tools a hook's `matcher` selects, read as Claude Code reads it, with
//! our tool names and Claude Code's accepted alike (so `"Bash"` and `"bash"`
//! both select bash, `"Glob"` selects find).
//!
//! `*`, `""` or no matcher select every tool. A matcher of letters, digits,
//! `_` and `|` only is a list of exact names, so `Read` does not select
//! `mcp__x__Reader`. Anything else is a regex found anywhere in the name, as
//! Claude Code tests it (`new RegExp(matcher).test(toolName)`): a script's
//! `mcp__memory__*` must select `mcp__memory__get_note` here as it does
//! there; `^` and `$` anchor it.

use regex::Regex;

/// Our built-in tools and the names Claude Code gives the same tools.
const CLAUDE_CODE_NAMES: [(&str, &[&str]); 7] = [
    ("bash", &["Bash"]),
    ("read", &["Read"]),
    ("write", &["Write"]),
    ("edit", &["Edit", "MultiEdit"]),
    ("grep", &["Grep"]),
    ("find", &["Glob"]),
    ("ls", &["LS"]),
];

/// A matcher that is not a valid regex.
#[derive(Debug, thiserror::Error)]
#[error("hooks: matcher \"{matcher}\" is not a valid regex: {reason}")]
pub struct MatcherError {
    matcher: String,
    reason: String,
}

/// A compiled `matcher`.
#[derive(Debug, Clone)]
pub enum Matcher {
    /// Every tool.
    All,
    /// One of these names.
    Names(Vec<String>),
    /// The regex is found in the name (unanchored, as Claude Code's).
    Regex(Regex),
}

impl Matcher {
    /// Compiles `matcher`.
    pub fn new(matcher: &str) -> Result<Self, MatcherError> {
        let matcher = matcher.trim();
        if matcher.is_empty() || matcher == "*" {
            return Ok(Matcher::All);
        }
        let plain = matcher
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '|');
        if plain {
            let names = matcher.split('|').filter(|n| !n.is_empty());
            return Ok(Matcher::Names(names.map(str::to_owned).collect()));
        }
        Regex::new(matcher)
            .map(Matcher::Regex)
            .map_err(|error| MatcherError {
                matcher: matcher.to_owned(),
                reason: error.to_string(),
            })
    }

    /// Whether the tool called `tool` (our name) is selected, by its name
    /// or by Claude Code's name for it.
    pub fn matches(&self, tool: &str) -> bool {
        let mut names = std::iter::once(tool).chain(claude_code_names(tool).iter().copied());
        match self {
            Matcher::All => true,
            Matcher::Names(list) => names.any(|name| list.iter().any(|n| n == name)),
            Matcher::Regex(regex) => names.any(|name| regex.is_match(name)),
        }
    }
}

fn claude_code_names(tool: &str) -> &'static [&'static str] {
    CLAUDE_CODE_NAMES
        .iter()
        .find(|(ours, _)| *ours == tool)
        .map_or(&[], |(_, theirs)| theirs)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn selected(matcher: &str) -> Vec<&'static str> {
        let matcher = Matcher::new(matcher).unwrap();
        [
            "bash",
            "read",
            "write",
            "edit",
            "grep",
            "find",
            "ls",
            "mcp__memory__store",
        ]
        .into_iter()
        .filter(|tool| matcher.matches(tool))
        .collect()
    }

    #[test]
    fn empty_and_star_select_every_tool() {
        assert_eq!(selected("").len(), 8);
        assert_eq!(selected("*").len(), 8);
    }

    #[test]
    fn our_names_and_claude_codes_select_the_same_tools() {
        assert_eq!(selected("bash|edit"), ["bash", "edit"]);
        assert_eq!(selected("Bash|Edit"), ["bash", "edit"]);
        assert_eq!(selected("Write|MultiEdit"), ["write", "edit"]);
        assert_eq!(
            selected("Glob|LS|Grep|Read"),
            ["read", "grep", "find", "ls"]
        );
    }

    #[test]
    fn plain_names_are_exact_and_case_sensitive() {
        assert!(selected("Bas").is_empty());
        assert!(selected("BASH").is_empty());
    }

    /// Claude Code tests a matcher that is not a plain list with
    /// `new RegExp(matcher).test(toolName)`: unanchored. A script's
    /// `mcp__memory__*` (a regex: `mcp__memory_` then any `_`s) selected
    /// no memory tool here while the whole name had to match.
    #[test]
    fn regexes_match_anywhere_in_the_name_as_claude_codes_do() {
        assert_eq!(selected("mcp__memory__.*"), ["mcp__memory__store"]);
        assert_eq!(selected("mcp__memory__*"), ["mcp__memory__store"]);
        assert_eq!(selected("mcp__.*|Bash"), ["bash", "mcp__memory__store"]);
        assert_eq!(selected("(Edit|Write).*"), ["write", "edit"]);
        assert_eq!(selected("^(re|wr)"), ["read", "write"]);
        assert_eq!(selected("^ba.h$"), ["bash"]);
        // A plain name is still exact.
        assert!(selected("mcp__mem").is_empty());
    }
}
