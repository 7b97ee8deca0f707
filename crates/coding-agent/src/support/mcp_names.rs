//! The names the model calls MCP tools by: `mcp__<server>__<tool>`, as Claude
//! Code and Codex name them (so permission rules like `mcp__github__*` carry
//! over), made to fit what every model API accepts: `^[a-zA-Z0-9_-]{1,64}$`.
//!
//! Permission rules and hook matchers find a server's tools by the
//! `mcp__<server>__` their names start with, so that start is kept whole:
//! a long name is cut in its tool part only, a server's part never holds
//! `__` nor starts or ends with `_`, and a server whose part would leave its
//! tools no room ([`MAX_SERVER_PART`]) or that two servers would share is
//! refused when the configuration is read. Here, not in `mcp/`: the policy
//! reads rules by the same names without the `mcp` feature.

use std::collections::BTreeSet;

use crate::support::safe_name::{fnv1a, underscore_unsafe};

/// The longest tool name the model APIs accept.
pub const MAX_NAME_LEN: usize = 64;

/// What a name cut to [`MAX_NAME_LEN`] ends in: `_` and a 16-digit hash of
/// the whole name, so two long names stay apart.
const HASH_LEN: usize = 17;

/// The longest server part that leaves a tool part of at least one
/// character and the hash: `mcp__` + 39 + `__` + 1 + 17 = 64.
pub const MAX_SERVER_PART: usize = MAX_NAME_LEN - "mcp____".len() - 1 - HASH_LEN;

/// Whether `name` is an MCP server's tool's, by the `mcp__` every such name
/// starts with (as hook matchers and permission rules tell them apart).
pub fn is_mcp_tool(name: &str) -> bool {
    name.starts_with("mcp__")
}

/// `mcp__<server>__<tool>`: every character outside `[a-zA-Z0-9_-]`
/// replaced by `_`, the server's part as [`server_part`] gives it. A name
/// over [`MAX_NAME_LEN`] keeps `mcp__<server>__` and the start of the
/// tool's part, and ends in a hash of the whole.
pub fn tool_name(server: &str, tool: &str) -> String {
    let prefix = format!("mcp__{}__", server_part(server));
    let name = format!("{prefix}{}", sanitise(tool));
    if name.len() <= MAX_NAME_LEN {
        return name;
    }
    let hash = format!("_{:016x}", fnv1a(name.as_bytes()));
    // The prefix and at least one character of the tool's part, since the
    // server's part is at most MAX_SERVER_PART long (a longer one, refused
    // at configuration, is cut as well rather than made invalid).
    let mut short: String = name.chars().take(MAX_NAME_LEN - HASH_LEN).collect();
    short.push_str(&hash);
    short
}

/// The server's name as its tools' names carry it: no `__` inside and no
/// `_` at either end, so the first `__` after `mcp__` always ends it (a rule
/// on server `a` cannot cover the tools of `a__b` or `a.`); `_` when
/// nothing else is left.
pub fn server_part(server: &str) -> String {
    let mut part = String::new();
    for c in sanitise(server).chars() {
        if !(c == '_' && part.ends_with('_')) {
            part.push(c);
        }
    }
    match part.trim_matches('_') {
        "" => "_".to_owned(),
        trimmed => trimmed.to_owned(),
    }
}

/// The tool name a permission rule's `mcp__<server>__<tool>` means: the
/// server is what comes before the first `__`, the rest is the tool, each
/// named as [`tool_name`] names them, so a rule written with a long tool's
/// full name still matches its cut one.
pub fn rule_tool_name(after_prefix: &str) -> String {
    match after_prefix.split_once("__") {
        Some((server, tool)) => tool_name(server, tool),
        None => tool_name(after_prefix, ""),
    }
}

/// Why `server` cannot have tools named after it, if it cannot: its name
/// has no letter, digit or `-` (its part would be `_`, and a rule naming
/// one of its tools in full, `mcp_____read`, could not be told apart from
/// the separators: it matched nothing, so a deny did not hold), or its part
/// is longer than [`MAX_SERVER_PART`].
pub fn server_name_problem(server: &str) -> Option<String> {
    let part = server_part(server);
    if part == "_" {
        return Some(
            "its name has no letter or digit its tools' names (mcp__<server>__<tool>) could carry: name it with letters, digits, - or _"
                .to_owned(),
        );
    }
    (part.len() > MAX_SERVER_PART).then(|| {
        format!(
            "its name is too long for its tools' names (mcp__{part}__<tool> must fit in {MAX_NAME_LEN} characters with room for the tool): name it with at most {MAX_SERVER_PART} letters, digits, - or _"
        )
    })
}

/// Gives each `(server, tool)` pair its name. A tool whose
/// `mcp__<server>__<tool>` needs nothing replaced or cut has that name,
/// whatever else the server lists: permission rules, `--tools` and hook
/// matchers name it so. The others (and a second tool of one name) take
/// theirs in the order of their names, not the server's: their name if it
/// is free, else `_2`, `_3`, ... added, never a name another tool has as
/// it is. Taken in list order, `a.b` listed before `a_b` took
/// `mcp__d__a_b`, so `--deny mcp__d__a_b` blocked `a.b` while the real
/// `a_b` ran, and a re-list in another order swapped the two.
pub fn assign<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Vec<String> {
    let pairs: Vec<(&str, &str)> = pairs.into_iter().collect();
    let mut names = vec![String::new(); pairs.len()];
    let mut taken = BTreeSet::new();
    let mut changed = Vec::new();
    for (index, &(server, tool)) in pairs.iter().enumerate() {
        let name = tool_name(server, tool);
        let as_is = name == format!("mcp__{}__{tool}", server_part(server));
        if as_is && taken.insert(name.clone()) {
            names[index] = name;
        } else {
            changed.push(index);
        }
    }
    // Stable: tools of one name keep the server's order among themselves.
    changed.sort_by_key(|&index| pairs[index]);
    for index in changed {
        let (server, tool) = pairs[index];
        let base = tool_name(server, tool);
        let mut name = base.clone();
        let mut n = 2;
        while !taken.insert(name.clone()) {
            let suffix = format!("_{n}");
            let keep = base.len().min(MAX_NAME_LEN - suffix.len());
            name = format!("{}{suffix}", &base[..keep]);
            n += 1;
        }
        names[index] = name;
    }
    names
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
    /// has `a_b` in its tools' names, and `a.` has `a` (which the
    /// configuration refuses next to a server `a`).
    #[test]
    fn a_server_part_never_holds_the_separator() {
        assert_eq!(tool_name("a__b", "c"), "mcp__a_b__c");
        assert_eq!(tool_name("a.__b", "x__y"), "mcp__a_b__x__y");
        assert_eq!(tool_name("__", "t"), "mcp_____t");
        assert_eq!(tool_name("a.", "echo"), "mcp__a__echo");
        assert_eq!(tool_name("_a ", "echo"), "mcp__a__echo");
        assert!(!tool_name("a__b", "c").starts_with("mcp__a__"));
    }

    /// A long name keeps its server's whole start, so `mcp__<server>__*`
    /// rules and `mcp__<server>__.*` matchers still find it; a rule naming
    /// the tool in full means the cut name.
    #[test]
    fn a_cut_name_keeps_its_server_whole() {
        let server = "s".repeat(MAX_SERVER_PART);
        let tool = "get_the_current_time_in_a_zone";
        let name = tool_name(&server, tool);
        assert_eq!(name.len(), MAX_NAME_LEN);
        assert!(name.starts_with(&format!("mcp__{server}__g")), "{name}");
        assert_eq!(rule_tool_name(&format!("{server}__{tool}")), name);
        assert_eq!(server_name_problem(&server), None);
        assert!(server_name_problem(&format!("{server}x")).is_some());
    }

    /// A server whose name leaves nothing of its own in its tools' names
    /// (`документы`, `""`) is refused: `mcp_____read` read as a rule meant
    /// another name, so `--deny mcp_____read` let the tool run.
    #[test]
    fn a_server_named_without_letters_or_digits_is_refused() {
        for server in ["документы", "", "__", "."] {
            assert!(server_name_problem(server).is_some(), "{server:?}");
        }
        for server in ["-", "a", "документы-2"] {
            assert_eq!(server_name_problem(server), None, "{server:?}");
        }
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

    /// A tool whose name needs no change keeps it, wherever it is listed:
    /// `a.b` listed first took `mcp__d__a_b`, so `--deny mcp__d__a_b`
    /// blocked `a.b` and the real `a_b` ran, and a second `dup` took
    /// `mcp__d__dup_2` from the real `dup_2`.
    #[test]
    fn a_name_that_needs_no_change_is_kept_whatever_the_order() {
        let listed = [
            ("d", "dup"),
            ("d", "dup"),
            ("d", "dup_2"),
            ("d", "a.b"),
            ("d", "a_b"),
            ("d", "a-b"),
        ];
        let names = assign(listed);
        assert_eq!(
            names,
            [
                "mcp__d__dup",
                "mcp__d__dup_3",
                "mcp__d__dup_2",
                "mcp__d__a_b_2",
                "mcp__d__a_b",
                "mcp__d__a-b",
            ]
        );
        // Listed again in another order (after `list_changed`), each tool
        // keeps its name.
        let mut reordered = listed.to_vec();
        reordered.reverse();
        let again = assign(reordered.iter().copied());
        for ((_, tool), name) in reordered.iter().zip(&again) {
            let before = listed.iter().position(|(_, t)| t == tool).unwrap();
            if *tool != "dup" {
                assert_eq!(name, &names[before], "{tool}");
            }
        }
    }

    #[test]
    fn collisions_get_numbered_suffixes_by_name() {
        let names = assign([("s", "a.b"), ("s", "a b"), ("s", "a/b"), ("t", "x")]);
        assert_eq!(
            names,
            ["mcp__s__a_b_2", "mcp__s__a_b", "mcp__s__a_b_3", "mcp__t__x"]
        );
        let long = "x".repeat(70);
        let names = assign([("s", long.as_str()), ("s", long.as_str())]);
        assert!(names.iter().all(|n| valid(n)));
        assert_ne!(names[0], names[1]);
    }
}
