//! Permission rules in Claude Code's syntax, adapted to this agent's tool
//! names: `bash`, `bash(cargo test)`, `bash(git push:*)`, `bash(git * main)`,
//! `read(src/**)`, `edit(**/*.rs)`, `write(/etc/**)`, `grep`,
//! `mcp__server__tool`, `mcp__server__*` (see `docs/permissions.md`).
//!
//! A rule is parsed once ([`Rule::parse`], so a typo in settings is an error
//! at start, not a rule that silently never matches) and compiled against the
//! session's [`Places`] (relative paths are under the workspace, `~` is home).

use std::path::{Path, PathBuf};

use globset::{GlobSet, GlobSetBuilder};

use crate::support::paths::normalize_lexically;
use crate::support::walk::absolute_glob;

use crate::support::mcp_names;

use super::paths::Places;

/// The tools whose rules take a path pattern, and which family they are in:
/// a `read(...)` rule covers every reading tool, and a `write(...)` or
/// `edit(...)` rule every writing one (bash redirections included).
const READ_FAMILY: [&str; 4] = ["read", "grep", "find", "ls"];
const WRITE_FAMILY: [&str; 2] = ["write", "edit"];

/// One rule as written, with its compiled matcher.
#[derive(Debug, Clone)]
pub struct Rule {
    /// The rule as the user wrote it (what `policy check` reports).
    pub text: String,
    tool: ToolName,
    spec: Spec,
}

#[derive(Debug, Clone)]
enum ToolName {
    Exact(String),
    /// `mcp__server__*` or a bare `mcp__server`: every tool of that server,
    /// which holds the server's part of its tools' names
    /// ([`mcp_names::server_part`]).
    McpServer(String),
}

#[derive(Debug, Clone)]
enum Spec {
    /// A bare tool name: every call.
    Any,
    /// `bash(...)`: a command pattern.
    Command(CommandPattern),
    /// A file tool's path pattern, compiled against the places, the
    /// folder its literal part names (`/home/u/.ssh` for `~/.ssh/**`), and
    /// the absolute globs compiled (what a search leaves out).
    Path(GlobSet, PathBuf, Vec<String>),
}

/// Why a rule cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid permission rule `{rule}`: {reason}")]
pub struct RuleError {
    /// The rule as written.
    pub rule: String,
    /// What is wrong with it.
    pub reason: String,
}

impl Rule {
    /// Parses `text`, resolving path patterns against `places`.
    pub fn parse(text: &str, places: &Places) -> Result<Self, RuleError> {
        let error = |reason: &str| RuleError {
            rule: text.to_owned(),
            reason: reason.to_owned(),
        };
        let trimmed = text.trim();
        let (name, spec) = match trimmed.split_once('(') {
            Some((name, rest)) => {
                let inner = rest
                    .strip_suffix(')')
                    .ok_or_else(|| error("a `(` needs a closing `)` at the end"))?;
                if inner.matches(')').count() > inner.matches('(').count() {
                    return Err(error("it has a `)` more than its `(`s"));
                }
                (name.trim(), Some(inner.trim()))
            }
            None => (trimmed, None),
        };
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "_-*".contains(c))
        {
            return Err(error(
                "a rule starts with a tool name such as `bash` or `read`",
            ));
        }
        // `MCP__srv` is `mcp__srv`: the prefix in any case, the server's
        // name as written.
        let name = match name.get(..5) {
            Some(prefix) if prefix.eq_ignore_ascii_case("mcp__") => format!("mcp__{}", &name[5..]),
            _ => name.to_owned(),
        };
        let tool = match name.strip_prefix("mcp__") {
            Some(rest) => mcp_tool_name(rest).map_err(|reason| error(&reason))?,
            None if name.contains('*') => {
                return Err(error(
                    "a tool name has no wildcards: name the tool (`bash`, `read`, ...) or, for every tool of an MCP server, `mcp__server__*`",
                ));
            }
            // Claude Code capitalises its tools (`Bash(...)`): accept either.
            None => ToolName::Exact(name.to_ascii_lowercase()),
        };
        let spec = match (spec, &tool) {
            (None | Some("*" | ""), _) => Spec::Any,
            // It would match no command at all, silently.
            (Some(":*"), ToolName::Exact(name)) if name == "bash" => {
                return Err(error(
                    "`:*` follows the start of a command (`bash(npm run:*)`); for every command write `bash`",
                ));
            }
            (Some(pattern), ToolName::Exact(name)) if name == "bash" => {
                Spec::Command(CommandPattern::new(pattern).map_err(|e| error(&e))?)
            }
            (Some(pattern), ToolName::Exact(name))
                if READ_FAMILY.contains(&name.as_str())
                    || WRITE_FAMILY.contains(&name.as_str()) =>
            {
                let (globs, base, patterns) = path_globs(pattern, places).map_err(|e| error(&e))?;
                Spec::Path(globs, base, patterns)
            }
            (Some(_), _) => {
                return Err(error(
                    "only bash (a command) and read, write, edit, grep, find, ls (a path) take a pattern in parentheses",
                ));
            }
        };
        Ok(Self {
            text: trimmed.to_owned(),
            tool,
            spec,
        })
    }

    /// True when the rule names a built-in tool or an MCP tool: a rule about
    /// another name matches only a tool a library user added by that name.
    pub fn names_a_known_tool(&self) -> bool {
        match &self.tool {
            ToolName::McpServer(_) => true,
            ToolName::Exact(name) => {
                crate::support::mcp_names::is_mcp_tool(name)
                    || crate::tools::BUILTIN_TOOL_NAMES.contains(&name.as_str())
            }
        }
    }

    /// True when the rule names a tool of the MCP server whose tools' names
    /// carry `part` ([`mcp_names::server_part`]), or the server itself.
    pub fn names_mcp_server(&self, part: &str) -> bool {
        match &self.tool {
            ToolName::McpServer(server) => server == part,
            ToolName::Exact(name) => name.starts_with(&format!("mcp__{part}__")),
        }
    }

    /// True when the rule is about `tool` (a read rule covers the read family,
    /// a write or edit rule the write family).
    fn covers(&self, tool: &str) -> bool {
        match &self.tool {
            ToolName::Exact(name) => {
                name == tool
                    || (name == "read" && READ_FAMILY.contains(&tool))
                    || (WRITE_FAMILY.contains(&name.as_str()) && WRITE_FAMILY.contains(&tool))
            }
            ToolName::McpServer(part) => tool
                .strip_prefix("mcp__")
                .and_then(|rest| rest.strip_prefix(part.as_str()))
                .is_some_and(|rest| rest.starts_with("__")),
        }
    }

    /// True when the rule matches a call of `tool` on `subject`.
    pub fn matches(&self, tool: &str, subject: Subject<'_>) -> bool {
        if !self.covers(tool) {
            return false;
        }
        match (&self.spec, subject) {
            (Spec::Any, _) => true,
            (Spec::Command(pattern), Subject::Command(line)) => pattern.matches(line),
            (Spec::Path(globs, ..), Subject::Path(path)) => globs.is_match(path),
            _ => false,
        }
    }

    /// True for a bash rule that may match a command line starting with
    /// `known` and going on with words known only at run time: its pattern
    /// and `known` agree as far as both go (`git push *` and `git `, for
    /// `git $E push`). A bare `bash` rule matches every command.
    pub fn may_match_after(&self, known: &str) -> bool {
        if !matches!(&self.tool, ToolName::Exact(name) if name == "bash") {
            return false;
        }
        match &self.spec {
            Spec::Any => true,
            Spec::Command(pattern) => {
                let start = &pattern.pieces[0];
                start.starts_with(known) || known.starts_with(start.as_str())
            }
            Spec::Path(..) => false,
        }
    }

    /// True when the rule names paths (`read(.env)`), not every call.
    pub fn names_paths(&self) -> bool {
        matches!(self.spec, Spec::Path(..))
    }

    /// True for a rule naming paths that `tool`'s family opens
    /// (`edit(src/**)` for `write`).
    pub fn guards_paths_of(&self, tool: &str) -> bool {
        self.names_paths() && self.covers(tool)
    }

    /// For a rule about `tool` whose paths may lie below `tree` (its
    /// literal folder inside the tree, or the tree inside that folder with
    /// a pattern going on below it: `**/.env`), the absolute globs of those
    /// paths: a search of `tree` would read them although a read of each
    /// would be judged by this rule, so it leaves them out.
    pub fn guarded_below(&self, tool: &str, tree: &Path) -> Option<&[String]> {
        match &self.spec {
            Spec::Path(_, base, patterns)
                if self.covers(tool) && (base.starts_with(tree) || tree.starts_with(base)) =>
            {
                Some(patterns)
            }
            _ => None,
        }
    }

    /// True for a bash rule without wildcards that names exactly `line`: the
    /// only kind that can allow a command on the always-deny or always-ask list.
    pub fn names_exactly(&self, line: &str) -> bool {
        matches!(&self.spec, Spec::Command(p) if p.is_exact() && p.matches(line))
            && matches!(&self.tool, ToolName::Exact(name) if name == "bash")
    }
}

/// The tool (or server) an MCP rule names, `rest` being what follows
/// `mcp__`: named as the tools are ([`mcp_names`]), so a rule on server `a.`
/// or on a long tool's full name matches the names the model calls. A `*`
/// stands only for every tool of a server (`mcp__server__*`): anywhere else
/// it would be a rule that silently matches nothing.
fn mcp_tool_name(rest: &str) -> Result<ToolName, String> {
    let (rest, every_tool) = match rest.strip_suffix("__*") {
        Some(server) => (server, true),
        None => (rest, false),
    };
    if rest.contains('*') || rest.is_empty() {
        return Err(
            "an MCP rule names a server (`mcp__server`, or `mcp__server__*` for every tool of it) or one tool (`mcp__server__tool`); `*` stands only for every tool"
                .to_owned(),
        );
    }
    Ok(if every_tool || !rest.contains("__") {
        ToolName::McpServer(mcp_names::server_part(rest))
    } else {
        ToolName::Exact(mcp_names::rule_tool_name(rest))
    })
}

/// What a call is about, for matching rules.
#[derive(Debug, Clone, Copy)]
pub enum Subject<'a> {
    /// A simple command of bash, its words joined by spaces.
    Command(&'a str),
    /// An absolute, normalised path.
    Path(&'a Path),
    /// A tool without a command or path (MCP and other tools).
    Call,
}

/// `cargo test` (exact), `git push:*` (prefix at a word boundary),
/// `git * main` (`*` matches any text; a trailing ` *` also matches nothing).
#[derive(Debug, Clone)]
struct CommandPattern {
    /// The literal texts between the wildcards.
    pieces: Vec<String>,
    /// The pattern ended in ` *` (or `:*`): the bare prefix matches too.
    open_end: bool,
}

impl CommandPattern {
    /// The pattern read as bash reads a command line, since that is how
    /// the command it is matched against was read: quotes and escapes
    /// removed (`rm -rf 'my dir'` is `rm -rf my dir`), blanks between words
    /// one space. A `*` is a wildcard unless quoted or escaped. Written as
    /// in the command, `bash(rm -rf 'my dir':*)` matched nothing, and the
    /// deny did not hold. `Err` for a quote left open or a trailing `\`.
    fn new(pattern: &str) -> Result<Self, String> {
        let (pattern, prefix) = match pattern.strip_suffix(":*") {
            Some(prefix) => (prefix.trim_end(), true),
            None => (pattern, false),
        };
        let mut pieces = Vec::new();
        let mut piece = String::new();
        let mut quote: Option<char> = None;
        let mut blank = false;
        let mut chars = pattern.chars();
        while let Some(c) = chars.next() {
            if quote.is_none() && matches!(c, ' ' | '\t') {
                blank = true;
                continue;
            }
            if std::mem::take(&mut blank) {
                piece.push(' ');
            }
            match (quote, c) {
                (None, '\'' | '"') => quote = Some(c),
                (Some(open), _) if c == open => quote = None,
                (None, '*') => pieces.push(std::mem::take(&mut piece)),
                (None | Some('"'), '\\') => {
                    let escaped = chars
                        .next()
                        .ok_or("it ends in a `\\` that escapes nothing")?;
                    if quote.is_some() && !matches!(escaped, '$' | '`' | '"' | '\\') {
                        piece.push('\\');
                    }
                    piece.push(escaped);
                }
                _ => piece.push(c),
            }
        }
        if let Some(open) = quote {
            return Err(format!(
                "a `{open}` is not closed (a rule reads quotes as bash does: write `\\{open}` for the character)"
            ));
        }
        if prefix {
            piece.push(' ');
            pieces.push(std::mem::take(&mut piece));
        }
        pieces.push(piece);
        let open_end = pieces.len() > 1
            && pieces.last().is_some_and(String::is_empty)
            && pieces[pieces.len() - 2].ends_with(' ');
        Ok(Self { pieces, open_end })
    }

    fn is_exact(&self) -> bool {
        self.pieces.len() == 1
    }

    fn matches(&self, line: &str) -> bool {
        if self.open_end {
            let mut bare = self.pieces[..self.pieces.len() - 1].to_vec();
            if let Some(last) = bare.last_mut() {
                last.truncate(last.trim_end().len());
            }
            if wildcard(&bare, line) {
                return true;
            }
        }
        wildcard(&self.pieces, line)
    }
}

/// The rule's pattern naming exactly the command `line` (its words joined
/// by spaces): the characters a rule reads as bash does (quotes, `\`, a
/// tab, a blank after another) escaped, so it matches `line` again.
pub fn command_pattern(line: &str) -> String {
    let mut pattern = String::with_capacity(line.len());
    let mut after_blank = false;
    for c in line.chars() {
        let blank = c == ' ';
        if matches!(c, '\'' | '"' | '\\' | '\t') || (blank && after_blank) {
            pattern.push('\\');
        }
        pattern.push(c);
        after_blank = blank;
    }
    pattern
}

/// Glob matching where `pieces` are the literal texts between `*`s.
fn wildcard(pieces: &[String], text: &str) -> bool {
    match pieces {
        [] => text.is_empty(),
        [only] => only == text,
        [first, middle @ .., last] => {
            let Some(mut rest) = text.strip_prefix(first.as_str()) else {
                return false;
            };
            for piece in middle {
                match rest.find(piece.as_str()) {
                    Some(at) => rest = &rest[at + piece.len()..],
                    None => return false,
                }
            }
            rest.len() >= last.len() && rest.ends_with(last.as_str())
        }
    }
}

/// The globs of a path pattern: the pattern and everything below it, with
/// `~` as home and relative patterns under the working directory.
fn path_globs(pattern: &str, places: &Places) -> Result<(GlobSet, PathBuf, Vec<String>), String> {
    let absolute = if pattern.starts_with('/') || pattern.starts_with('~') {
        places.resolve(pattern).to_string_lossy().into_owned()
    } else {
        let base = places.cwd().to_string_lossy().into_owned();
        format!(
            "{}/{}",
            base.trim_end_matches('/'),
            pattern.trim_start_matches("./")
        )
    };
    // Written plainly, as the paths it is matched against are: `grep(.)`
    // names the working directory, not a path ending in `/.`.
    let absolute = normalize_lexically(Path::new(&absolute))
        .to_string_lossy()
        .into_owned();
    let mut builder = GlobSetBuilder::new();
    // `dir/**` covers `dir` itself too: grep, find and ls of `dir` read
    // what is below it.
    let itself = absolute.strip_suffix("/**").map(str::to_owned);
    let patterns: Vec<String> = [
        absolute.clone(),
        format!("{}/**", absolute.trim_end_matches('/')),
    ]
    .into_iter()
    .chain(itself)
    .collect();
    for glob in &patterns {
        builder.add(absolute_glob(glob).map_err(|e| e.to_string())?);
    }
    // The components before the first one with a pattern in it.
    let base: PathBuf = Path::new(&absolute)
        .components()
        .take_while(|part| {
            !part
                .as_os_str()
                .to_string_lossy()
                .contains(['*', '?', '[', '{'])
        })
        .collect();
    Ok((builder.build().map_err(|e| e.to_string())?, base, patterns))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn places() -> Places {
        Places::at(Path::new("/work/p"), Some(Path::new("/home/u")))
    }

    fn rule(text: &str) -> Rule {
        match Rule::parse(text, &places()) {
            Ok(rule) => rule,
            Err(e) => panic!("{e}"),
        }
    }

    /// A pattern is matched as written plainly: `grep(.)` and `read(./)`
    /// name the working directory (they matched `/work/p/.`, no path).
    #[test]
    fn path_patterns_are_read_written_plainly() {
        fn at(path: &str) -> Subject<'_> {
            Subject::Path(Path::new(path))
        }
        assert!(rule("grep(.)").matches("grep", at("/work/p")));
        assert!(rule("read(./)").matches("read", at("/work/p/src/a.rs")));
        assert!(rule("read(src/../.env)").matches("read", at("/work/p/.env")));
        assert!(!rule("read(src/../.env)").matches("read", at("/work/p/src/.env")));
    }

    #[test]
    fn command_patterns_match_exactly_by_prefix_or_by_wildcard() {
        // Each rule, the command lines it matches and those it does not.
        let cases: [(&str, &[&str], &[&str]); 6] = [
            ("bash(cargo test)", &["cargo test"], &["cargo test --all"]),
            (
                "bash(git push:*)",
                &["git push", "git push origin main"],
                &["git pushy"],
            ),
            ("bash(ls *)", &["ls"], &["lsof"]),
            (
                "bash(git * main)",
                &["git push origin main"],
                &["git push origin dev"],
            ),
            (
                "Bash(npm run test:*)",
                &["npm run test unit"],
                &["npm run test:unit"],
            ),
            ("bash", &["anything at all"], &[]),
        ];
        for (text, matched, unmatched) in cases {
            let rule = rule(text);
            for (lines, expected) in [(matched, true), (unmatched, false)] {
                for line in lines {
                    assert_eq!(
                        rule.matches("bash", Subject::Command(line)),
                        expected,
                        "{text} vs {line}"
                    );
                }
            }
        }
    }

    /// The rule suggested for a command line matches that line, whatever
    /// quotes, blanks or backslashes its words held.
    #[test]
    fn a_suggested_pattern_matches_its_line_again() {
        for line in ["echo it's", r#"echo "a\b""#, "echo a  b", "printf a\tb"] {
            let rule = rule(&format!("bash({})", command_pattern(line)));
            assert!(rule.matches("bash", Subject::Command(line)), "{line}");
            assert!(rule.names_exactly(line), "{line}");
        }
        assert!(Rule::parse("bash(echo 'x)", &places()).is_err());
    }

    #[test]
    fn path_patterns_are_under_the_workspace_home_or_absolute() {
        let cases = [
            ("read(src/**)", "read", "/work/p/src/a/b.rs", true),
            ("read(src/**)", "grep", "/work/p/src/a", true),
            ("read(src)", "read", "/work/p/src/lib.rs", true),
            ("read(src/**)", "read", "/work/p/srcx/a", false),
            ("edit(**/*.rs)", "edit", "/work/p/a/b.rs", true),
            ("edit(**/*.rs)", "write", "/work/p/b.rs", true),
            ("edit(*.rs)", "edit", "/work/p/a/b.rs", false),
            ("write(/etc/**)", "write", "/etc/passwd", true),
            ("write(/etc/**)", "read", "/etc/passwd", false),
            ("read(~/.ssh/**)", "read", "/home/u/.ssh/id_rsa", true),
            ("read(./.env)", "read", "/work/p/.env", true),
        ];
        for (text, tool, path, expected) in cases {
            assert_eq!(
                rule(text).matches(tool, Subject::Path(Path::new(path))),
                expected,
                "{text} {tool} {path}"
            );
        }
    }

    #[test]
    fn mcp_rules_name_a_tool_or_a_whole_server() {
        assert!(rule("mcp__fs__read").matches("mcp__fs__read", Subject::Call));
        assert!(!rule("mcp__fs__read").matches("mcp__fs__write", Subject::Call));
        assert!(rule("mcp__fs__*").matches("mcp__fs__write", Subject::Call));
        assert!(rule("mcp__fs").matches("mcp__fs__write", Subject::Call));
        assert!(!rule("mcp__fs__*").matches("mcp__fsx__write", Subject::Call));
        // The prefix in any case, as the other tools' names are.
        assert!(rule("MCP__fs").matches("mcp__fs__write", Subject::Call));
        assert!(rule("Mcp__fs__read").matches("mcp__fs__read", Subject::Call));
    }

    /// Rules name tools as the model sees them ([`mcp_names`]): a server
    /// rule still covers a long tool's cut name, a rule on a tool's full
    /// name matches its cut one, and `mcp__a` covers no tool of `a_b`.
    #[test]
    fn mcp_rules_match_the_names_tools_are_given() {
        let server = "time-server-for-the-prod-cluster-eu-w";
        let tool = "get_the_current_time_in_a_time_zone_of_choice";
        let name = mcp_names::tool_name(server, tool);
        assert!(name.len() == mcp_names::MAX_NAME_LEN && !name.contains(tool));
        for text in [
            format!("mcp__{server}"),
            format!("mcp__{server}__*"),
            format!("mcp__{server}__{tool}"),
        ] {
            assert!(rule(&text).matches(&name, Subject::Call), "{text} {name}");
        }
        assert!(!rule("mcp__a").matches("mcp__a_b__echo", Subject::Call));
        assert!(rule("mcp__a_").matches(&mcp_names::tool_name("a.", "echo"), Subject::Call));
    }

    /// A `*` anywhere but `mcp__server__*` would match nothing, silently:
    /// a deny rule that does not hold.
    #[test]
    fn a_wildcard_in_a_tool_name_is_an_error() {
        for text in [
            "mcp__bad__ech*",
            "mcp__bad*",
            "mcp__*__echo",
            "mcp__*",
            "ba*",
            "*",
        ] {
            let error = Rule::parse(text, &places()).unwrap_err();
            assert!(
                error.reason.contains("`*`") || error.reason.contains("wildcards"),
                "{text}: {}",
                error.reason
            );
        }
    }

    #[test]
    fn bad_rules_are_errors_that_say_what_to_write() {
        let cases = [
            (
                "bash(ls",
                "invalid permission rule `bash(ls`: a `(` needs a closing `)` at the end",
            ),
            (
                "(ls)",
                "invalid permission rule `(ls)`: a rule starts with a tool name such as `bash` or `read`",
            ),
            (
                "bash(ls))",
                "invalid permission rule `bash(ls))`: it has a `)` more than its `(`s",
            ),
            (
                "grepx(foo)",
                "invalid permission rule `grepx(foo)`: only bash (a command) and read, write, edit, grep, find, ls (a path) take a pattern in parentheses",
            ),
            (
                "bash(:*)",
                "invalid permission rule `bash(:*)`: `:*` follows the start of a command (`bash(npm run:*)`); for every command write `bash`",
            ),
        ];
        for (text, expected) in cases {
            match Rule::parse(text, &places()) {
                Ok(_) => panic!("{text} parsed"),
                Err(e) => assert_eq!(e.to_string(), expected),
            }
        }
    }
}
