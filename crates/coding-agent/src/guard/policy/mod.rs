//! The permission policy: given a tool call, allow, ask or deny, with the
//! reason the model reads and the rule that decided.
//!
//! Order (see `docs/permissions.md`): deny rules, then the always-deny list
//! (only an exact allow rule overrides it), then the always-ask list, ask
//! rules, allow rules, the known-safe list, and finally the mode. Deny beats
//! ask beats allow, and a bash command is as strict as its strictest part:
//! `shell.rs` takes the line apart, every simple command is judged on its
//! own. The policy touches nothing: `coding-agent policy check` and the
//! guard in `before_tool_call` ask it the same question.

mod commands;
mod decision;
mod evaluated;
mod expand;
pub mod paths;
mod rules;
pub mod shell;
mod variables;

use serde_json::Value;
use std::path::Path;

pub use decision::{Decision, Mode, SandboxFacts, Verdict};
pub use paths::Places;
use paths::users_home_named;
pub use rules::{Rule, RuleError, Subject};

use commands::{
    GitAlias, ScriptFrom, Written, always_asked, always_denied, changes_attributes,
    changes_git_configuration, changes_what_runs, deletes_derived_tree, deletes_unknown_tree,
    git_alias, hands_off_outside, has_flag, is_interpreter, is_known_safe, nested_script, operands,
    program, script_source, unwrap, uses_network, written_files, xargs_reading,
};
use shell::{Arg, Part, Stage, join, without_unknowns};
use variables::Values;

use crate::support::paths::{read_path_candidates, resolve_to_cwd};

/// Where `part` moves the commands after it, when it is a `cd`: the places
/// there, or (`Err`) the command, when where it goes is known only at run
/// time (`cd "$D"`, `cd -`, `popd`, a name `CDPATH` may find elsewhere).
/// `cd -P` goes where the directory's links lead, as bash does (`cd` alone
/// is logical: `link/..` is where `link` stands). `None` for any other
/// command.
///
/// `home_set`: the line sets `HOME`, so `cd` alone goes where it says.
fn change_directory(
    part: &Part,
    places: &Places,
    cdpath: bool,
    home_set: bool,
) -> Option<Result<Places, String>> {
    let words = unwrap(&part.words);
    let words = if words.inner.is_empty() {
        &part.words[..]
    } else {
        words.inner
    };
    if !matches!(program(words), "cd" | "pushd" | "popd") {
        return None;
    }
    let operands: Vec<&Arg> = words
        .iter()
        .skip(1)
        .filter(|w| !w.text.starts_with('-') || w.text == "-")
        .collect();
    let physical = words
        .iter()
        .skip(1)
        .any(|w| w.text.starts_with('-') && !w.text.starts_with("--") && w.text.contains('P'));
    // With CDPATH set, `cd name` may go to a `name` in any of its folders.
    let searched = |dir: &str| {
        cdpath
            && !dir.starts_with('/')
            && !dir.starts_with('~')
            && !matches!(dir.split('/').next(), Some("." | ".."))
    };
    Some(match (program(words), operands.as_slice()) {
        ("cd", []) => match &places.home {
            Some(home) if !home_set => Ok(places.moved(&home.to_string_lossy())),
            _ => Err(part.command_line()),
        },
        ("cd" | "pushd", [dir]) if dir.literal && dir.text != "-" && !searched(&dir.text) => {
            // `cd se?` goes where its pattern matches, when one folder does.
            let target = match dir.pattern {
                false => Some(dir.text.clone()),
                true => match places.named_by(dir).as_deref() {
                    Some([one]) if one.is_dir() => Some(one.to_string_lossy().into_owned()),
                    _ => None,
                },
            };
            let Some(target) = target else {
                return Some(Err(part.command_line()));
            };
            if physical {
                places
                    .moved_physically(&target)
                    .ok_or_else(|| part.command_line())
            } else {
                Ok(places.moved(&target))
            }
        }
        _ => Err(part.command_line()),
    })
}

/// The verdict on a path whose links cannot be followed to where they lead
/// (see [`Places::seen_as`]): it may lead anywhere, so it asks.
fn untold(written: &std::path::Path) -> Verdict {
    if paths::only_a_process_can_tell(written) {
        return Verdict::new(
            Decision::Deny,
            format!(
                "`{}` goes through a link in /proc or /dev (`..` after it, or a folder open as a descriptor), so where it leads cannot be told; name the file by its own path",
                written.display()
            ),
        )
        .firm();
    }
    Verdict::new(
        Decision::Ask,
        format!(
            "where `{}` leads cannot be told (a link into /proc or /dev, a part that cannot be searched, or a path too long to follow); it needs approval",
            written.display()
        ),
    )
    .firm()
}

/// grep's `-d recurse` (`-drecurse`, `--directories=recurse`, any prefix of
/// the long name): `-r` by another name.
fn recurses_directories(words: &[Arg]) -> bool {
    let long = |option: &str| option.len() > 2 && "--directories".starts_with(option);
    words.iter().enumerate().skip(1).any(|(at, word)| {
        let next_is_recurse = words.get(at + 1).is_some_and(|next| next.text == "recurse");
        match word.text.split_once('=') {
            Some((option, value)) => long(option) && value == "recurse",
            None => {
                word.text == "-drecurse"
                    || ((word.text == "-d" || long(&word.text)) && next_is_recurse)
            }
        }
    })
}

/// The most words one command may have to be judged.
const MAX_WORDS: usize = 4096;

/// Variables bash or the programs it runs read, so that setting one
/// changes what the commands after it run or read, exported or not (a
/// variable the environment holds is exported already).
const READ_WHEN_SET: &[&str] = &[
    "PATH",
    "HOME",
    "PWD",
    "OLDPWD",
    "IFS",
    "CDPATH",
    "BASH_ENV",
    "ENV",
    "SHELLOPTS",
    "BASHOPTS",
    "PS4",
    "PROMPT_COMMAND",
    "BASH_XTRACEFD",
    "EDITOR",
    "VISUAL",
    "PAGER",
    "GIT_PAGER",
    "MANPAGER",
    "SHELL",
    "TMPDIR",
    "NODE_OPTIONS",
    "PYTHONPATH",
    "PYTHONSTARTUP",
    "PERL5LIB",
    "PERL5OPT",
    "RUBYOPT",
    "RUBYLIB",
    "RUSTC_WRAPPER",
];

/// Whether setting `name` (not as a command's prefix) changes what later
/// commands run: `exported` by `export` or `declare -x` (or `set -a`), or
/// read by bash or a program whether exported or not, or already in the
/// environment bash inherits.
fn set_changes_what_runs(name: &str, value: &Arg, exported: bool) -> bool {
    let read = READ_WHEN_SET.contains(&name)
        || ["LD_", "GIT_", "DYLD_"]
            .iter()
            .any(|prefix| name.starts_with(prefix))
        || std::env::var_os(name).is_some();
    (exported || read) && changes_what_runs(name, value)
}

/// The variables `part` sets for the commands after it that change what
/// they run ([`set_changes_what_runs`]): a bare `NAME=value`, or the
/// `NAME=value` (or `NAME`) arguments of `export`, `declare`, `typeset`,
/// `local` and `readonly`. A prefix (`NAME=value cmd`) sets it for `cmd`
/// only, which [`Policy::judge_command`] judges.
fn sets_what_runs(part: &Part, all_exported: bool) -> Vec<String> {
    if part.words.is_empty() {
        return part
            .assigned
            .iter()
            .filter(|(name, value)| set_changes_what_runs(name, value, all_exported))
            .map(|(name, _)| name.clone())
            .collect();
    }
    let program = program(&part.words);
    if !matches!(
        program,
        "export" | "declare" | "typeset" | "local" | "readonly"
    ) {
        return Vec::new();
    }
    let flags = |word: &&Arg| word.text.starts_with('-') && !word.text.starts_with("--");
    let exported = all_exported
        || program == "export"
        || part.words[1..]
            .iter()
            .filter(flags)
            .any(|word| word.text.contains('x'));
    let mut names = Vec::new();
    for word in part.words[1..].iter().filter(|word| !flags(word)) {
        let (name, value) = match word.text.split_once('=') {
            Some((name, value)) => (name.trim_end_matches('+'), value),
            None if exported => (word.text.as_str(), ""),
            None => continue,
        };
        let value = Arg {
            text: value.to_owned(),
            ..word.clone()
        };
        if variables::is_name(name)
            && set_changes_what_runs(name, &value, exported)
            && !names.iter().any(|known| known == name)
        {
            names.push(name.to_owned());
        }
    }
    names
}

/// Whether the line turns on `set -a` (`allexport`): every variable it
/// sets after is exported.
fn exports_all(parts: &[Part]) -> bool {
    parts.iter().any(|part| {
        program(&part.words) == "set"
            && part.words[1..].iter().any(|word| {
                (word.text.starts_with('-')
                    && !word.text.starts_with("--")
                    && word.text.contains('a'))
                    || word.text == "allexport"
            })
    })
}

/// Whether any of `parts` sets `name` for the commands after it.
fn sets_variable(parts: &[Part], name: &str) -> bool {
    parts.iter().any(|part| {
        (part.words.is_empty() && part.assigned.iter().any(|(set, _)| set == name))
            || (matches!(
                program(&part.words),
                "export" | "declare" | "typeset" | "local" | "readonly" | "read" | "printf"
            ) && part.words[1..].iter().any(|word| {
                word.text == name
                    || word
                        .text
                        .split_once('=')
                        .is_some_and(|(set, _)| set == name)
            }))
    })
}

/// Where the folders a word names by a marker are, for one part: the
/// working directory it runs in (`cd src; cat $PWD/key` reads `src/key`),
/// the one the last `cd` left (`None`: no `cd` came first, so `~-` is
/// unknown), the home folder (`None` when it is not known), and where
/// users' home folders (`~name`) are looked up.
struct Placing<'a> {
    cwd: &'a str,
    left: Option<&'a str>,
    home: Option<&'a str>,
    places: &'a Places,
}

impl Placing<'_> {
    /// `text` with the markers of [`shell`] replaced by the folders, and
    /// whether all of them are known. In a `word`, home at the start is
    /// `~`, as rules and reasons write it; anywhere else (and in a script
    /// read again, `word` false) it is the home folder's path: only a
    /// leading `~` means home to the paths judged, and `rm -rf /$HOME`
    /// was judged as deleting `/~`.
    fn text(&self, text: &str, word: bool) -> (String, bool) {
        let mut known = true;
        let mut put = |text: &str, marker: &str, folder: Option<&str>, unknown: &str| {
            if !text.contains(marker) {
                return text.to_owned();
            }
            known &= folder.is_some();
            text.replace(marker, folder.unwrap_or(unknown))
        };
        let text = put(text, shell::WORKING_DIRECTORY, Some(self.cwd), "");
        let text = put(&text, shell::OLD_WORKING_DIRECTORY, self.left, "$OLDPWD");
        let leading = word
            && text
                .strip_prefix(shell::HOME_DIRECTORY)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'));
        let text = match leading {
            true => format!("~{}", &text[shell::HOME_DIRECTORY.len()..]),
            false => text,
        };
        let text = put(&text, shell::HOME_DIRECTORY, self.home, "$HOME");
        let text = self.users_homes(&text, word, &mut known);
        (text, known)
    }

    /// `text` with each user's home ([`shell::users_home`]) put in: as
    /// `~name` at a word's start, as `~` is (the paths judged look it up),
    /// its folder anywhere else; `~name` unknown (`known` false) when the
    /// user cannot be looked up ([`Places::users_home`]).
    fn users_homes(&self, text: &str, word: bool, known: &mut bool) -> String {
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        while let Some(at) = rest.find(shell::USERS_HOME_START) {
            out.push_str(&rest[..at]);
            let after = &rest[at + shell::USERS_HOME_START.len()..];
            let (name, after) = after.split_once('\u{0}').unwrap_or((after, ""));
            match self.places.users_home(name) {
                Some(home) if !(word && out.is_empty()) => out.push_str(&home.to_string_lossy()),
                home => {
                    *known &= home.is_some();
                    out.push('~');
                    out.push_str(name);
                }
            }
            rest = after;
        }
        out.push_str(rest);
        out
    }

    fn arg(&self, arg: &Arg) -> Arg {
        let (text, known) = self.text(&arg.text, true);
        Arg {
            text,
            literal: arg.literal && known,
            ..arg.clone()
        }
    }

    /// `part` with its words, assignments, redirections and the scripts
    /// it reads on stdin placed.
    fn part(&self, part: &Part) -> Part {
        let all = |args: &[Arg]| args.iter().map(|arg| self.arg(arg)).collect::<Vec<_>>();
        Part {
            words: all(&part.words),
            assigned: part
                .assigned
                .iter()
                .map(|(name, value)| (name.clone(), self.arg(value)))
                .collect(),
            writes: all(&part.writes),
            reads: all(&part.reads),
            stdin: part
                .stdin
                .iter()
                .map(|text| text.as_ref().map(|text| self.text(text, false).0))
                .collect(),
            substituted: part
                .substituted
                .iter()
                .map(|text| self.text(text, false).0)
                .collect(),
            ..part.clone()
        }
    }
}

/// How many names the regular file at `path` has, when more than one.
fn hard_links(path: &std::path::Path) -> Option<u64> {
    use std::os::unix::fs::MetadataExt;
    let metadata = std::fs::metadata(path).ok()?;
    (metadata.is_file() && metadata.nlink() > 1).then(|| metadata.nlink())
}

/// A bash write to a descriptor's path: `/dev/stdout`, `/dev/stderr` and
/// `/dev/fd/1`/`2` show output (unless the script moved a descriptor:
/// then opening one opens whatever file it points at, for writing);
/// `/dev/stdin` and any other `/dev/fd/N` may be open on any file. `None`
/// for any other path.
fn descriptor_write(target: &Arg, descriptors_moved: bool) -> Option<Verdict> {
    let path = paths::normalize(std::path::Path::new(&target.text));
    let fd = match path.to_str()? {
        "/dev/stdout" => "1",
        "/dev/stderr" => "2",
        "/dev/stdin" => "0",
        other => other.strip_prefix("/dev/fd/")?,
    };
    let shown = path.display();
    Some(match fd {
        "1" | "2" if !descriptors_moved => {
            Verdict::new(Decision::Allow, format!("`{shown}` shows output"))
        }
        "1" | "2" => Verdict::new(
            Decision::Ask,
            format!(
                "writes to `{shown}` after the command pointed a descriptor at a file (`N<file`, `N>&M`): opening it writes that file; this needs approval"
            ),
        )
        .firm(),
        _ => Verdict::new(
            Decision::Ask,
            format!(
                "writes to `{shown}`, a descriptor that may be open on any file: opening it writes that file; write to the file by name, or this needs approval"
            ),
        )
        .firm(),
    })
}

/// `words` joined, the program named without its directory (`/bin/rm x`
/// is `rm x`), as deny and ask rules match it.
/// Programs whose path arguments they do not read the contents of: a read
/// rule does not judge `rm .env` or `echo ~/.ssh/id_rsa`.
const NOT_READING: &[&str] = &[
    "echo", "printf", "rm", "rmdir", "touch", "mkdir", "cd", "pushd", "test", "[", "basename",
    "dirname", "realpath", "readlink", "which", "type", "command", "chmod", "chown", "chgrp", "ls",
    "stat", "true", "false", ":", "export", "unset", "local", "declare", "typeset", "readonly",
    "set", "shift", "kill", "sleep", "wait", "exit", "return",
];

/// The command line with the options before its first operand left out, in
/// each way they can be read: an option may take the next word as its value
/// (`git -C dir push`, `kubectl -n prod delete`) or not (`git --no-pager
/// push`). Deny and ask rules on `git push` or `kubectl delete` are matched
/// against these too: a global option before the subcommand slipped past
/// them. Empty when no option comes first.
fn without_leading_options(words: &[Arg]) -> Vec<String> {
    /// Most readings tried: a crafted line of many options must not make
    /// the policy slow (a rule is then matched against the first ones).
    const MOST: usize = 16;
    let mut lines = Vec::new();
    let mut starts = vec![1];
    while let Some(at) = starts.pop() {
        let Some(word) = words.get(at) else {
            continue;
        };
        let text = word.text.as_str();
        if text == "--" || !text.starts_with('-') || text == "-" {
            let ended = text == "--";
            let rest = if ended {
                &words[at + 1..]
            } else {
                &words[at..]
            };
            if (at > 1 || ended) && lines.len() < MOST {
                lines.push(named(&[&words[..1], rest].concat()));
            }
            continue;
        }
        if starts.len() + lines.len() >= MOST {
            continue;
        }
        starts.push(at + 1);
        let takes_value = !text.contains('=')
            && words
                .get(at + 1)
                .is_some_and(|next| !next.text.starts_with('-'));
        if takes_value {
            starts.push(at + 2);
        }
    }
    lines.sort();
    lines.dedup();
    lines
}

fn named(words: &[Arg]) -> String {
    let mut line = program(words).to_owned();
    for word in words.iter().skip(1) {
        line.push(' ');
        line.push_str(&word.text);
    }
    line
}

/// The rule lists as written in settings and flags.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RuleTexts {
    /// Rules that let calls run unasked.
    pub allow: Vec<String>,
    /// Rules that make calls ask.
    pub ask: Vec<String>,
    /// Rules that refuse calls.
    pub deny: Vec<String>,
}

/// The policy of one session: mode, sandbox facts, places and rules.
#[derive(Debug, Clone)]
pub struct Policy {
    mode: Mode,
    sandbox: SandboxFacts,
    places: Places,
    allow: Vec<Rule>,
    /// Allow rules the user gave for this session only; dropped when it
    /// ends ([`Policy::end_session`]).
    session_allow: Vec<Rule>,
    ask: Vec<Rule>,
    deny: Vec<Rule>,
}

/// Whether a bash command reads or writes a path it names, which the
/// rules of that family judge.
#[derive(Clone, Copy)]
enum Access {
    Read,
    Write,
}

impl Access {
    /// The tool whose rules judge it.
    fn tool(self) -> &'static str {
        match self {
            Self::Read => "read",
            Self::Write => "write",
        }
    }

    fn verb(self) -> &'static str {
        match self {
            Self::Read => "reads",
            Self::Write => "writes",
        }
    }

    /// What to do instead of reading or writing a whole guarded folder.
    fn narrower(self) -> &'static str {
        match self {
            Self::Read => {
                "search with the grep tool (it leaves them out) or name a narrower folder"
            }
            Self::Write => "name the files it may change, outside what the rule guards",
        }
    }
}

/// Whose rule a matching rule is, for the reason text.
enum Kind {
    Allow,
    Ask,
    Deny,
}

impl Policy {
    /// A policy; fails on the first rule that cannot be parsed.
    pub fn new(
        mode: Mode,
        sandbox: SandboxFacts,
        places: Places,
        rules: &RuleTexts,
    ) -> Result<Self, RuleError> {
        let parse = |texts: &[String]| -> Result<Vec<Rule>, RuleError> {
            texts.iter().map(|t| Rule::parse(t, &places)).collect()
        };
        Ok(Self {
            mode,
            sandbox,
            allow: parse(&rules.allow)?,
            session_allow: Vec::new(),
            ask: parse(&rules.ask)?,
            deny: parse(&rules.deny)?,
            places,
        })
    }

    /// The same policy with what the session's sandbox turned out to
    /// contain (known once the sandbox has started, which needs the mode:
    /// bypass turns it off).
    pub fn with_sandbox(mut self, sandbox: SandboxFacts) -> Self {
        self.sandbox = sandbox;
        self
    }

    /// The mode in force.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// The places decisions are relative to.
    pub fn places(&self) -> &Places {
        &self.places
    }

    /// Adds `rule` to `list`: an approval's "allow for this session"
    /// (`for_session`: [`Policy::end_session`] drops it) or "always allow",
    /// or what a PermissionRequest hook's `updatedPermissions` adds. Ask and
    /// deny rules stay until the process ends, session or not (they only
    /// tighten).
    pub fn add_rule(
        &mut self,
        list: Decision,
        rule: &str,
        for_session: bool,
    ) -> Result<(), RuleError> {
        let rule = Rule::parse(rule, &self.places)?;
        match (list, for_session) {
            (Decision::Allow, true) => self.session_allow.push(rule),
            (Decision::Allow, false) => self.allow.push(rule),
            (Decision::Ask, _) => self.ask.push(rule),
            (Decision::Deny, _) => self.deny.push(rule),
        }
        Ok(())
    }

    /// The session ended (a new one started, another was opened): the rules
    /// allowed for it alone go; the settings' and "always" rules stay.
    pub fn end_session(&mut self) {
        self.session_allow.clear();
    }

    /// The verdict on calling `tool` with `args` (validated arguments).
    pub fn check(&self, tool: &str, args: &Value) -> Verdict {
        let path_arg = |key: &str| args.get(key).and_then(Value::as_str);
        let verdict = match tool {
            "bash" => match path_arg("command") {
                Some(command) => self.judge_script(command, 0, false, None),
                None => Verdict::new(Decision::Ask, "the bash call has no command to judge"),
            },
            "read" | "grep" | "find" | "ls" => {
                // The path as the tool resolves it (`@`, unicode spaces, and
                // for read the other spellings it tries), and where it leads.
                let raw = path_arg("path").filter(|p| !p.is_empty()).unwrap_or(".");
                let (cwd, home) = (self.places.cwd(), self.places.home.as_deref());
                let named = if tool == "read" {
                    read_path_candidates(raw, cwd, home)
                } else {
                    vec![resolve_to_cwd(raw, cwd, home)]
                };
                let verdicts = named
                    .iter()
                    .flat_map(|path| match self.places.seen_as(path) {
                        Ok(seen) => seen
                            .iter()
                            .map(|path| self.judge_read(tool, path))
                            .collect(),
                        Err(written) => vec![untold(&written)],
                    });
                Verdict::strictest(verdicts)
                    .unwrap_or_else(|| Verdict::new(Decision::Allow, format!("{tool} only reads")))
            }
            "write" | "edit" => match path_arg("path") {
                Some(path) => {
                    // As the tool opens it: a relative path normalised (as
                    // Node's `path.resolve`), an absolute one as written.
                    let (cwd, home) = (self.places.cwd(), self.places.home.as_deref());
                    let opened = resolve_to_cwd(path, cwd, home);
                    self.judge_write(tool, &Arg::literal(&opened.to_string_lossy()))
                }
                None => Verdict::new(Decision::Ask, format!("the {tool} call names no path")),
            },
            other => self.judge_other(other),
        };
        self.settle(verdict)
    }

    /// Plan mode never asks (it refuses); bypass never asks (it runs).
    fn settle(&self, verdict: Verdict) -> Verdict {
        match (self.mode, verdict.decision) {
            (Mode::Plan, Decision::Ask) => Verdict {
                decision: Decision::Deny,
                // Nothing is asked in plan mode: the model must not tell
                // the user to approve what cannot be approved.
                reason: format!(
                    "plan mode is read-only: {}",
                    ["; running it needs approval", "; it needs approval"]
                        .iter()
                        .find_map(|ask| verdict.reason.strip_suffix(ask))
                        .unwrap_or(&verdict.reason)
                ),
                suggestions: Vec::new(),
                ..verdict
            },
            (Mode::Bypass, Decision::Ask) => Verdict {
                decision: Decision::Allow,
                reason: format!("bypass mode runs it unasked: {}", verdict.reason),
                suggestions: Vec::new(),
                ..verdict
            },
            _ => verdict,
        }
    }

    /// The first rule of `kind` matching `tool` on any of `subjects`.
    fn rule(&self, kind: &Kind, tool: &str, subjects: &[Subject<'_>]) -> Option<&Rule> {
        self.rules(kind)
            .find(|rule| subjects.iter().any(|s| rule.matches(tool, *s)))
    }

    /// The rules of `kind`, in order; the session's allow rules after the
    /// lasting ones.
    fn rules<'a>(&'a self, kind: &Kind) -> impl Iterator<Item = &'a Rule> + use<'a> {
        let (lasting, session): (&[Rule], &[Rule]) = match kind {
            Kind::Allow => (&self.allow, &self.session_allow),
            Kind::Ask => (&self.ask, &[]),
            Kind::Deny => (&self.deny, &[]),
        };
        lasting.iter().chain(session)
    }

    /// The rules of `kind` that name paths (`read(~/.ssh/**)`).
    fn path_rules<'a>(&'a self, kind: &Kind) -> impl Iterator<Item = &'a Rule> + use<'a> {
        self.rules(kind).filter(|rule| rule.names_paths())
    }

    /// The first deny or ask rule on the paths `tool` reads or writes: what
    /// a bash command's reads (`read`) or writes (`write`) are judged
    /// against, `None` when no rule guards them (the common case).
    fn path_guard(&self, tool: &str) -> Option<&Rule> {
        self.path_rules(&Kind::Deny)
            .chain(self.path_rules(&Kind::Ask))
            .find(|rule| rule.guards_paths_of(tool))
    }

    /// Deny, then ask, then allow rules on one subject, with reasons naming
    /// `what`. Plan mode lets no allow rule through.
    fn by_rules(&self, tool: &str, subjects: &[Subject<'_>], what: &str) -> Option<Verdict> {
        let kinds: &[Kind] = if self.mode == Mode::Plan {
            &[Kind::Deny, Kind::Ask]
        } else {
            &[Kind::Deny, Kind::Ask, Kind::Allow]
        };
        kinds.iter().find_map(|kind| {
            let rule = self.rule(kind, tool, subjects)?;
            let (decision, verb) = match kind {
                Kind::Deny => (Decision::Deny, "is denied"),
                Kind::Ask => (Decision::Ask, "needs approval"),
                Kind::Allow => (Decision::Allow, "is allowed"),
            };
            let reason = format!("{what} {verb} by the rule `{}`", rule.text);
            Some(Verdict::new(decision, reason).by_rule(&rule.text))
        })
    }

    fn judge_read(&self, tool: &str, path: &std::path::Path) -> Verdict {
        let what = format!("{tool} of `{}`", path.display());
        let verdict = self
            .by_rules(tool, &[Subject::Path(path)], &what)
            .unwrap_or_else(|| Verdict::new(Decision::Allow, format!("{tool} only reads")));
        // grep reads the files below the folder it searches: those a deny
        // or ask rule keeps from `read` must not come out of a grep of
        // their parent (`grep -r KEY ~` and `read(~/.ssh/**)`), whatever
        // lets the grep itself run. The search leaves them out, and says so.
        // A rule naming the path searched itself decided above: an ask
        // answered yes lets the grep read it.
        let guarding: Vec<(&Rule, &[String])> = match tool {
            "grep" => self
                .rules(&Kind::Deny)
                .chain(self.rules(&Kind::Ask))
                .filter(|rule| !rule.matches(tool, Subject::Path(path)))
                .filter_map(|rule| Some((rule, rule.guarded_below(tool, path)?)))
                .collect(),
            _ => Vec::new(),
        };
        if guarding.is_empty() || verdict.decision == Decision::Deny {
            return verdict;
        }
        let named: Vec<String> = guarding
            .iter()
            .map(|(rule, _)| format!("`{}`", rule.text))
            .collect();
        let verb = if named.len() == 1 { "guards" } else { "guard" };
        let reason = match verdict.decision {
            Decision::Allow => format!(
                "{}; it leaves out the files {} {verb}",
                verdict.reason,
                named.join(", ")
            ),
            _ => verdict.reason.clone(),
        };
        Verdict {
            reason,
            left_out: guarding
                .into_iter()
                .flat_map(|(_, globs)| globs.iter().cloned())
                .collect(),
            ..verdict
        }
    }

    /// A write to `target` by the write or edit tool, or by a bash redirection.
    fn judge_write(&self, tool: &str, target: &Arg) -> Verdict {
        // A deny on any file the word may name is final (bypass mode runs
        // what would only be asked).
        if target.pattern || !target.literal {
            let denied = self.places.named_by(target).and_then(|named| {
                named
                    .iter()
                    .flat_map(|opened| self.places.seen_as(opened).unwrap_or_default())
                    .map(|path| self.judge_write_at(tool, &path))
                    .find(|verdict| verdict.decision == Decision::Deny)
            });
            if let Some(denied) = denied {
                return denied;
            }
        }
        if target.pattern {
            return Verdict::new(
                Decision::Ask,
                format!(
                    "writes to `{}`, a pattern bash replaces with the file it matches; name the file itself, or this needs approval",
                    target.text
                ),
            )
            .firm();
        }
        if !target.literal {
            return Verdict::new(
                Decision::Ask,
                format!(
                    "writes to `{}`, a file named only at run time; this needs approval",
                    target.text
                ),
            )
            .firm();
        }
        let raw = self.places.joined(&target.text);
        let path = paths::normalize(&raw);
        let seen = match self.places.seen_as(&raw) {
            Ok(seen) => seen,
            Err(written) => return untold(&written),
        };
        Verdict::strictest(seen.iter().map(|path| self.judge_write_at(tool, path)))
            .unwrap_or_else(|| self.judge_write_at(tool, &path))
    }

    /// A write to the absolute `path`.
    fn judge_write_at(&self, tool: &str, path: &std::path::Path) -> Verdict {
        let path = path.to_path_buf();
        let shown = path.display();
        if paths::is_block_device(&path) {
            return Verdict::new(
                Decision::Deny,
                format!("writing onto the disk device `{shown}` is never allowed"),
            )
            .firm();
        }
        // The agent's own standard output is not bash's: only a redirection
        // shows output through `/dev/stdout`.
        if paths::is_harmless_device(&path, tool == "bash") {
            return Verdict::new(
                Decision::Allow,
                format!("`{shown}` discards or shows output"),
            );
        }
        let rule_tool = if tool == "bash" { "write" } else { tool };
        let mut by_rule = self.by_rules(
            rule_tool,
            &[Subject::Path(&path)],
            &format!("writing `{shown}`"),
        );
        if let Some(denied) = by_rule.take_if(|v| v.decision == Decision::Deny) {
            return denied;
        }
        if tool == "bash"
            && let Some(network) = self.network_redirection(&path)
        {
            return by_rule.unwrap_or(network);
        }
        // A hard link is the same file under another name: writing
        // `ws/c` writes `.git/config` or a file outside the workspace too,
        // if that is what it was linked to, and no path tells which.
        if matches!(self.mode, Mode::Default | Mode::Auto)
            && let Some(links) = hard_links(&path)
        {
            return Verdict::new(
                Decision::Ask,
                format!(
                    "`{shown}` has {links} hard links: writing it changes the file under every one of its names, which may be outside the workspace or the project's configuration; it needs approval"
                ),
            )
            .firm();
        }
        if let Some(verdict) = by_rule {
            return verdict;
        }
        match self.mode {
            Mode::Plan => Verdict::new(
                Decision::Deny,
                format!("plan mode is read-only: writing `{shown}` is not allowed"),
            ),
            Mode::Bypass => Verdict::new(Decision::Allow, "bypass mode: nothing is asked"),
            // Else the model could loosen its own policy for the sessions
            // after this one, or have `git status` run a program.
            Mode::Default | Mode::Auto if let Some(what) = self.places.configuration(&path) => {
                Verdict::new(
                    Decision::Ask,
                    format!(
                        "`{shown}` is {what}: writing it changes what later commands and sessions may do; it needs approval"
                    ),
                )
                .firm()
            }
            Mode::Default | Mode::Auto if self.places.in_workspace(&path) => Verdict::new(
                Decision::Allow,
                format!("`{shown}` is inside the workspace"),
            ),
            Mode::Default | Mode::Auto => Verdict::new(
                Decision::Ask,
                format!(
                    "`{shown}` is outside the workspace ({}); writing there needs approval",
                    self.roots_text()
                ),
            )
            .suggesting(format!("write({shown})")),
        }
    }

    /// A bash redirection to `/dev/tcp/HOST/PORT` or `/dev/udp/...`: a
    /// network connection, judged as a network command is. `None` for any
    /// other path.
    fn network_redirection(&self, path: &std::path::Path) -> Option<Verdict> {
        let (protocol, peer) = paths::network_device(path)?;
        let shown = path.display();
        let ask = |why: String| Verdict::new(Decision::Ask, why).firm();
        Some(match self.mode {
            Mode::Bypass => Verdict::new(Decision::Allow, "bypass mode: nothing is asked"),
            Mode::Auto if self.sandbox.active && self.sandbox.network_allowed => Verdict::new(
                Decision::Allow,
                format!("auto mode: `{shown}` ({protocol} to {peer}) runs inside the sandbox"),
            ),
            Mode::Auto if self.sandbox.active => ask(format!(
                "`{shown}` opens a {protocol} connection to {peer}: it uses the network, which the sandbox keeps off; it needs approval (or --allow-network)"
            )),
            _ => ask(format!(
                "`{shown}` opens a {protocol} connection to {peer}: it uses the network; it needs approval"
            )),
        })
    }

    /// The workspace roots; when every one is too broad to hold anything
    /// ([`Places::in_workspace`]), that: "is outside the workspace (/)"
    /// read as a contradiction.
    fn roots_text(&self) -> String {
        let roots = &self.places.roots;
        if let Some(why) = roots.first().and_then(|root| self.places.too_broad(root))
            && roots
                .iter()
                .all(|root| self.places.too_broad(root).is_some())
        {
            return format!(
                "the session started in {why} ({}), too broad to count as a workspace",
                roots[0].display()
            );
        }
        let roots: Vec<String> = roots.iter().map(|r| r.display().to_string()).collect();
        roots.join(", ")
    }

    fn judge_other(&self, tool: &str) -> Verdict {
        let what = format!("the tool `{tool}`");
        self.by_rules(tool, &[Subject::Call], &what)
            .unwrap_or_else(|| match self.mode {
                Mode::Bypass => Verdict::new(Decision::Allow, "bypass mode: nothing is asked"),
                _ => Verdict::new(
                    Decision::Ask,
                    format!("`{tool}` is not a built-in tool; calling it needs approval"),
                )
                .suggesting(tool.to_owned()),
            })
    }

    /// A whole command line: the strictest verdict of its parts.
    /// `descriptors_moved`: the command that runs this script (`bash -c`)
    /// moved a descriptor ([`Part::descriptors_moved`]), which the script
    /// inherits.
    /// `inherited`: the values the line running this script (`bash -c`,
    /// `eval`) gave its variables, which the script sees.
    fn judge_script(
        &self,
        script: &str,
        depth: usize,
        descriptors_moved: bool,
        inherited: Option<Values>,
    ) -> Verdict {
        if let Some(why) = shell::too_deep(script) {
            return self.unjudgeable(&why);
        }
        // `$PWD`, `$(pwd)` and `~+` are where the part runs, which a `cd`
        // before it moves: placed below, part by part.
        let inherited = inherited
            .unwrap_or_else(|| Values::at_home(self.places.home.as_deref().and_then(Path::to_str)));
        let parts = match shell::parse_inheriting(script, depth, inherited) {
            Ok(mut parts) => {
                for part in &mut parts {
                    part.descriptors_moved |= descriptors_moved;
                }
                parts
            }
            Err(e) => {
                return Verdict::new(
                    Decision::Ask,
                    format!("the command cannot be judged ({e}); it needs approval"),
                )
                .firm();
            }
        };
        let mut verdict: Option<Verdict> = None;
        // CDPATH set for bash (inherited, or by the script itself).
        let cdpath = script.contains("CDPATH")
            || std::env::var_os("CDPATH").is_some_and(|value| !value.is_empty());
        // Where the parts run: a `cd` moves those after it.
        let mut moved: Option<Policy> = None;
        let mut lost: Option<String> = None;
        // The folder the last `cd` left, for `~-` and `$OLDPWD`.
        let mut left: Option<String> = None;
        let all_exported = exports_all(&parts);
        let home_set = sets_variable(&parts, "HOME");
        for part in &parts {
            let here = moved.as_ref().unwrap_or(self);
            let cwd = here.places.cwd().to_string_lossy();
            let home = self.places.home.as_deref().map(Path::to_string_lossy);
            let part = &Placing {
                cwd: &cwd,
                left: left.as_deref(),
                home: home.as_deref(),
                places: &here.places,
            }
            .part(part);
            let mut part_verdict = here.judge_part(part, depth);
            if let Some(set) = self.setting_what_runs(part, all_exported) {
                part_verdict = part_verdict.stricter(set);
            }
            if let Some(cd) = &lost {
                part_verdict = part_verdict.stricter(
                    Verdict::new(
                        Decision::Ask,
                        format!(
                            "`{}` runs after `{cd}`, in a directory known only at run time; it needs approval",
                            part.command_line()
                        ),
                    )
                    .firm(),
                );
            }
            match change_directory(part, &here.places, cdpath, home_set) {
                Some(Ok(places)) => {
                    left = Some(cwd.into_owned());
                    moved = Some(Policy {
                        places,
                        ..self.clone()
                    });
                }
                Some(Err(cd)) => lost = Some(cd),
                None => {}
            }
            // An assignment allowed says nothing: the reason to read is
            // the next command's (`F=x; cat $F`).
            let runs_nothing =
                part.words.is_empty() && part.writes.is_empty() && part.reads.is_empty();
            if runs_nothing && part_verdict.decision == Decision::Allow {
                continue;
            }
            let next = match verdict {
                Some(v) => v.stricter(part_verdict),
                None => part_verdict,
            };
            if next.decision == Decision::Deny {
                return next;
            }
            verdict = Some(next);
        }
        verdict.unwrap_or_else(|| Verdict::new(Decision::Allow, "nothing to run"))
    }

    /// A command the policy cannot judge for its size or depth: asked
    /// about, and refused in bypass mode, which runs what asks unseen (a
    /// command of too many words is refused in every mode).
    fn unjudgeable(&self, what: &str) -> Verdict {
        match self.mode {
            Mode::Bypass => Verdict::new(
                Decision::Deny,
                format!("{what} cannot be judged, and bypass mode would run it unseen; simplify or split it"),
            )
            .firm(),
            _ => Verdict::new(
                Decision::Ask,
                format!("{what} cannot be judged; it needs approval"),
            )
            .firm(),
        }
    }

    /// Default and plan mode ask about a line that sets a variable which
    /// changes what the commands after it run ([`sets_what_runs`]):
    /// `HOME=x; git status` reads `x/.gitconfig`, which may run a program,
    /// as surely as `HOME=x git status` does. Auto and bypass let it run,
    /// as they do a prefix.
    fn setting_what_runs(&self, part: &Part, all_exported: bool) -> Option<Verdict> {
        if !matches!(self.mode, Mode::Default | Mode::Plan) {
            return None;
        }
        let names = sets_what_runs(part, all_exported);
        if names.is_empty() {
            return None;
        }
        let shown = match part.words.is_empty() {
            true => part
                .assigned
                .iter()
                .map(|(name, value)| format!("{name}={}", value.text))
                .collect::<Vec<_>>()
                .join(" "),
            false => part.command_line(),
        };
        Some(
            Verdict::new(
                Decision::Ask,
                format!(
                    "`{shown}` sets {} for the commands after it, which can make even a reading command run other programs or read other files; it needs approval",
                    names.join(", ")
                ),
            )
            .firm(),
        )
    }

    fn judge_part(&self, part: &Part, depth: usize) -> Verdict {
        // Each word may be a path to look up: a crafted line of tens of
        // thousands (brace expansions multiply them) would keep the policy
        // busy for minutes, and asking would let bypass mode run it unseen.
        if part.words.len() > MAX_WORDS {
            return Verdict::new(
                Decision::Deny,
                format!(
                    "a command of more than {MAX_WORDS} words is not judged; split it (`xargs` passes many arguments)"
                ),
            )
            .firm();
        }
        if let Some(what) = &part.unjudgeable {
            return self.unjudgeable(what);
        }
        if let Some(what) = &part.opaque {
            return Verdict::new(
                Decision::Ask,
                format!("{what} cannot be judged; it needs approval"),
            )
            .firm();
        }
        if let Some(name) = &part.recursive_function {
            return Verdict::new(
                Decision::Deny,
                format!("the function `{name}` calls itself (the shape of a fork bomb); this is never allowed"),
            )
            .firm();
        }
        // Patterns after these match other files than bash's defaults
        // (`GLOBIGNORE=x; cat *` reads `.env`), so the words cannot be
        // judged by the files they match here.
        let changer = match program(&part.words) {
            "shopt" => Some(part.command_line()),
            _ => part
                .assigned
                .iter()
                .any(|(name, _)| name == "GLOBIGNORE")
                .then(|| "GLOBIGNORE".to_owned()),
        };
        if let Some(changer) = changer {
            return Verdict::new(
                Decision::Ask,
                format!(
                    "`{changer}` changes which files bash's patterns match, so the commands after it cannot be judged by them; it needs approval"
                ),
            )
            .firm();
        }
        let unwrapped = unwrap(&part.words);
        let (wrappers, inner) = if unwrapped.inner.is_empty() {
            (Vec::new(), &part.words[..])
        } else {
            (unwrapped.wrappers, unwrapped.inner)
        };
        let runs = match wrappers.contains(&"xargs") {
            true => self.xargs_runs(part, inner),
            false => vec![inner.to_vec()],
        };
        let judge_write = |target: Arg| {
            descriptor_write(&target, part.descriptors_moved)
                .unwrap_or_else(|| self.judge_write("bash", &target))
        };
        let redirections =
            part.writes
                .iter()
                .cloned()
                .map(judge_write)
                .chain(part.reads.iter().filter_map(|read| {
                    let path = paths::normalize(&self.places.joined(&read.text));
                    self.network_redirection(&path)
                }));
        // The command first: of equal verdicts its reason is the one to read.
        let runs = runs.iter().flat_map(|inner| {
            let command =
                (!part.words.is_empty()).then(|| self.judge_command(part, &wrappers, inner, depth));
            command
                .into_iter()
                .chain(self.judge_bash_writes(part, inner, judge_write))
                .chain(self.judge_bash_reads(part, inner))
        });
        Verdict::strictest(runs.chain(redirections))
            .unwrap_or_else(|| Verdict::new(Decision::Allow, "nothing to run"))
    }

    /// What the deny and ask rules on reading paths (`read(~/.ssh/**)`)
    /// say of the files a command reads: its path arguments (unless it is a
    /// program that does not read them, `echo`, `rm`, `touch`, ...), the
    /// values of `name=path` arguments (`dd if=...`), its `<` redirections,
    /// and the folders a recursive reader (`grep -r`, `rg`, `tar`, `cp -r`)
    /// is given when guarded files lie below them. Such a rule held for the
    /// read tool while `cat ~/.ssh/id_rsa` ran unasked.
    fn judge_bash_reads(&self, part: &Part, inner: &[Arg]) -> Vec<Verdict> {
        // No rule guards a read: nothing to look up (the common case). An
        // `edit(...)` rule alone must not make a read of a path known only
        // at run time ask.
        let Some(guard) = self.path_guard("read") else {
            return Vec::new();
        };
        let program = program(inner);
        let searches = matches!(program, "grep" | "egrep" | "fgrep" | "rg" | "ag" | "ack");
        // After `--` every word is an operand (`grep -v -- -x .env`).
        let operand_words: Vec<&Arg> = operands(inner);
        // git subcommands that name files without printing what is in them.
        let git_names_only = program == "git"
            && operand_words.first().is_some_and(|sub| {
                matches!(
                    sub.text.as_str(),
                    "rm" | "mv" | "check-ignore" | "check-attr" | "ls-files" | "status"
                )
            });
        let mut args: Vec<&Arg> = match program {
            _ if NOT_READING.contains(&program) || git_names_only => Vec::new(),
            // Only the starting points are paths; the rest is expression
            // (`-name .env` names no file to read).
            "find" => inner
                .iter()
                .skip(1)
                .take_while(|a| !a.text.starts_with('-') && a.text != "(" && a.text != "!")
                .collect(),
            // The last operand is written, not read (`cp .env.example .env`).
            "cp" | "mv" | "install" | "ln" if !has_flag(inner, "t", &["target-directory"]) => {
                operand_words
                    .split_last()
                    .map_or(Vec::new(), |(_, read)| read.to_vec())
            }
            _ => operand_words,
        };
        // A search's first operand is its pattern, unless an option gave it
        // (`-e P`, `-ie.`, `--regexp=P`, `--reg P`, `-f FILE`).
        let pattern_given = inner.iter().skip(1).any(|a| {
            let t = a.text.as_str();
            match t.strip_prefix("--") {
                Some(long) => {
                    let name = long.split('=').next().unwrap_or(long);
                    !name.is_empty() && ["regexp", "file"].iter().any(|o| o.starts_with(name))
                }
                None => t.strip_prefix('-').is_some_and(|cluster| {
                    cluster
                        .chars()
                        .take_while(char::is_ascii_alphabetic)
                        .any(|c| c == 'e' || c == 'f')
                }),
            }
        });
        if searches && !pattern_given && !args.is_empty() {
            args.remove(0);
        }
        let recursive = match program {
            "grep" | "egrep" | "fgrep" => {
                has_flag(inner, "rR", &["recursive", "dereference-recursive"])
                    || recurses_directories(inner)
            }
            "cp" => has_flag(inner, "rRa", &["recursive", "archive"]),
            "diff" => has_flag(inner, "r", &["recursive"]),
            // What `-exec` runs reads what is found.
            "find" => inner
                .iter()
                .any(|a| matches!(a.text.as_str(), "-exec" | "-execdir" | "-ok" | "-okdir")),
            "git" => inner
                .iter()
                .any(|a| matches!(a.text.as_str(), "--no-index" | "grep" | "add")),
            "rg" | "ag" | "ack" | "tar" | "zip" | "rsync" | "scp" => true,
            _ => false,
        };
        // `if=path`, a long option's `--from-file=path`, a short option's
        // attached `-f.env`, and git's `REV:path` (`git show HEAD:.env`
        // prints the committed file; the path is the repository's, and
        // `:0:path` names the index).
        let options = inner.iter().skip(1).filter(|a| a.text.starts_with('-'));
        let git_root = (program == "git")
            .then(|| self.places.repository_root())
            .flatten();
        let values = args.iter().copied().chain(options).flat_map(|a| {
            let t = a.text.as_str();
            let mut values: Vec<String> = Vec::new();
            if let Some((_, value)) = t.split_once('=') {
                values.push(value.to_owned());
            }
            // `-f.env`, `-vf.env`: the value may follow any letter.
            if !t.starts_with("--") && t.starts_with('-') && t.len() > 2 && t.len() <= 64 {
                let letters = t[1..]
                    .find(|c: char| !c.is_ascii_alphabetic())
                    .map_or(t.len(), |at| at + 1);
                values.extend((2..=letters.min(t.len() - 1)).map(|at| t[at..].to_owned()));
            }
            if program == "git" {
                for value in [t.split_once(':'), t.rsplit_once(':')]
                    .into_iter()
                    .flatten()
                {
                    values.push(value.1.to_owned());
                    if let Some(root) = &git_root {
                        values.push(root.join(value.1).to_string_lossy().into_owned());
                    }
                }
            }
            values.into_iter().map(|value| Arg {
                text: value,
                ..a.clone()
            })
        });
        // A search given no folder reads the working directory, and so does
        // `git grep` (its operands are the pattern and pathspecs).
        let git_grep = program == "git" && inner.iter().any(|a| a.text == "grep");
        let here =
            (recursive && ((searches && args.is_empty()) || git_grep)).then(|| Arg::literal("."));
        let paths: Vec<Arg> = args
            .iter()
            .map(|a| (*a).clone())
            .chain(values)
            .chain(part.reads.iter().cloned())
            .chain(here)
            .filter(|a| !a.text.is_empty())
            .collect();
        // `$(< file)` is bash's `cat file`: a part with no words.
        let line = match part.words.is_empty() {
            true => part
                .reads
                .iter()
                .map(|read| format!("$(< {})", read.text))
                .collect::<Vec<_>>()
                .join(" "),
            false => part.command_line(),
        };
        paths
            .iter()
            .filter_map(|path| self.judge_bash_path(Access::Read, &line, path, recursive, guard))
            .collect()
    }

    /// What the rules on writing (`edit(src/**)`) say of the files a
    /// command writes or deletes ([`written_files`]): they held for `>` and
    /// `tee` only, so `cp /etc/hostname src/a.rs` ran in auto mode, and in
    /// default mode its approval overrode the deny. A known-safe program
    /// (`tee`) runs unasked, so what it writes is judged as a redirection's
    /// target is (`redirected`), by the mode too; any other program asks or
    /// runs by the mode already, and only the deny and ask rules on the
    /// paths it writes add to that.
    fn judge_bash_writes(
        &self,
        part: &Part,
        inner: &[Arg],
        redirected: impl Fn(Arg) -> Verdict,
    ) -> Vec<Verdict> {
        let written = written_files(inner);
        if is_known_safe(inner) {
            return written
                .into_iter()
                .filter_map(|written| match written {
                    Written::File { path, .. } => Some(redirected(path)),
                    _ => None,
                })
                .collect();
        }
        // No rule guards writing a path: nothing to look up.
        let Some(guard) = self.path_guard("write") else {
            return Vec::new();
        };
        let line = part.command_line();
        let mut verdicts = Vec::new();
        for written in written {
            let paths = match written {
                Written::File { path, tree } => vec![(path, tree)],
                Written::Into {
                    destination,
                    folder,
                    sources,
                    tree,
                } => self.landing(destination, folder, &sources, tree),
                Written::Unnamed => {
                    let reason = format!(
                        "`{line}` writes the files its input names, known only at run time, which may be ones the rule `{}` guards; it needs approval",
                        guard.text
                    );
                    verdicts.push(Verdict::new(Decision::Ask, reason).firm());
                    continue;
                }
            };
            verdicts.extend(paths.iter().filter_map(|(path, tree)| {
                self.judge_bash_path(Access::Write, &line, path, *tree, guard)
            }));
        }
        verdicts
    }

    /// The files `cp`, `mv`, `install` or `ln` writes at `destination`
    /// ([`Written::Into`]), each with whether what lies below it is written
    /// too: the destination itself, or, when it is a folder, each source
    /// under its own name inside it (`cp src/m.rs .` writes `./m.rs`, not
    /// every file of the workspace).
    fn landing(
        &self,
        destination: Arg,
        folder: bool,
        sources: &[Arg],
        tree: bool,
    ) -> Vec<(Arg, bool)> {
        let folder = folder
            || self
                .places
                .named_by(&destination)
                .is_some_and(|named| !named.is_empty() && named.iter().all(|path| path.is_dir()));
        if !folder {
            return vec![(destination, false)];
        }
        sources
            .iter()
            .map(|source| match Path::new(&source.text).file_name() {
                Some(name) => {
                    let text = format!(
                        "{}/{}",
                        destination.text.trim_end_matches('/'),
                        name.to_string_lossy()
                    );
                    let landed = Arg {
                        text,
                        literal: destination.literal && source.literal,
                        pattern: destination.pattern || source.pattern,
                        braces: destination.braces || source.braces,
                        derived: destination.derived || source.derived,
                    };
                    (landed, tree)
                }
                // `cp -r .. dir`: what it names there is known at run time.
                None => (destination.clone(), true),
            })
            .collect()
    }

    /// [`Policy::judge_bash_reads`] and [`Policy::judge_bash_writes`] for
    /// one path `line` reads or writes (`access`): every file bash may make
    /// of the word (its brace expansions, the names its pattern matches),
    /// where their links lead. `recursive`: what lies below a folder it
    /// names is read or written too.
    fn judge_bash_path(
        &self,
        access: Access,
        line: &str,
        path: &Arg,
        recursive: bool,
        guard: &Rule,
    ) -> Option<Verdict> {
        // Anyone's home folder, for all the policy can tell: fail closed.
        if let Some((name, _)) = users_home_named(&path.text)
            && !path.literal
            && self.places.users_home(name).is_none()
        {
            return Some(
                Verdict::new(
                    Decision::Ask,
                    format!(
                        "`{line}` {} `{}`, in the home folder of the user `{name}`, which the policy cannot look up (no such user on this machine, or another host's) and so cannot judge against the rule `{}`; write the folder's path, or it needs approval",
                        access.verb(), path.text, guard.text
                    ),
                )
                .firm(),
            );
        }
        if path.derived {
            return Some(
                Verdict::new(
                    Decision::Ask,
                    format!(
                        "`{line}` {} `{}`, made of a value this line sets by an expansion the policy does not follow, which cannot be judged against the rule `{}`; it needs approval",
                        access.verb(), path.text, guard.text
                    ),
                )
                .firm(),
            );
        }
        let Some(named) = self.places.named_by(path) else {
            if path.braces {
                // Known but for a brace expansion too large to list.
                let reason = format!(
                    "`{line}` {} what a brace expansion of too many words names, which cannot be judged against the rule `{}`; name the files",
                    access.verb(),
                    guard.text
                );
                return Some(Verdict::new(Decision::Deny, reason).firm());
            }
            return Some(self.judge_bash_path_at_run_time(access, line, path, recursive, guard));
        };
        let mut resolved = Vec::new();
        for opened in named {
            match self.places.seen_as(&opened) {
                Ok(seen) => resolved.extend(seen),
                Err(written) => return Some(untold(&written)),
            }
        }
        // A folder given to a program that does not recurse is not read
        // (`wc -l *` with `sec/` among the names).
        let read: Vec<&std::path::PathBuf> = resolved
            .iter()
            .filter(|path| recursive || !path.is_dir())
            .collect();
        for (kind, decision, verb) in [
            (Kind::Deny, Decision::Deny, "is denied"),
            (Kind::Ask, Decision::Ask, "needs approval"),
        ] {
            let found = self.path_rules(&kind).find_map(|rule| {
                let path = read
                    .iter()
                    .find(|path| rule.matches(access.tool(), Subject::Path(path)))?;
                Some((rule, path))
            });
            if let Some((rule, seen)) = found {
                let shown = match self.places.resolve(&path.text) == **seen {
                    true => format!("`{}`", path.text),
                    false => format!("`{}` (`{}`)", path.text, seen.display()),
                };
                let reason = format!(
                    "`{line}` {} {shown}, which {verb} by the rule `{}`",
                    access.verb(),
                    rule.text
                );
                return Some(Verdict::new(decision, reason).by_rule(&rule.text));
            }
            let below = self.path_rules(&kind).find(|rule| {
                recursive
                    && resolved
                        .iter()
                        .any(|path| rule.guarded_below(access.tool(), path).is_some())
            });
            if let Some(rule) = below {
                let reason = format!(
                    "`{line}` {} the files below `{}`, among them what the rule `{}` guards; {}",
                    access.verb(),
                    path.text,
                    rule.text,
                    access.narrower()
                );
                return Some(Verdict::new(decision, reason).by_rule(&rule.text));
            }
        }
        None
    }

    /// A read or write of a path known only at run time (`cat "$F"`, `cp x
    /// "$F"`, `F` from the environment or `read`): it was let pass
    /// unjudged, so `cat ${IFS}/bin/true` read `/bin/true` with
    /// `read(/bin/**)` denied. It is judged as it reads with the unknown
    /// parts empty, as deny rules read any word (`${IFS}` splits away; a
    /// word of unknowns alone names no file then); otherwise it may name
    /// any file, so while a rule on such paths is set it asks, and no allow
    /// rule lifts that.
    fn judge_bash_path_at_run_time(
        &self,
        access: Access,
        line: &str,
        path: &Arg,
        recursive: bool,
        guard: &Rule,
    ) -> Verdict {
        let known = path.without_unknowns();
        if !known.is_empty()
            && let Some(verdict) =
                self.judge_bash_path(access, line, &Arg::literal(&known), recursive, guard)
            && verdict.decision == Decision::Deny
        {
            return verdict;
        }
        Verdict::new(
            Decision::Ask,
            format!(
                "`{line}` {} `{}`, a path known only at run time, which may be one the rule `{}` guards; name the file, or it needs approval",
                access.verb(),
                path.text,
                guard.text
            ),
        )
        .firm()
    }

    fn judge_command(
        &self,
        part: &Part,
        wrappers: &[&str],
        inner: &[Arg],
        depth: usize,
    ) -> Verdict {
        if let Some(alias) = git_alias(inner) {
            return self.judge_git_alias(part, wrappers, alias, depth);
        }
        let from_stdin = self.judge_stdin_script(part, inner, depth);
        if let Some(denied) = from_stdin
            .as_ref()
            .filter(|verdict| verdict.decision == Decision::Deny)
        {
            return denied.clone();
        }
        let verdict = self.judge_command_alone(part, wrappers, inner, depth);
        match from_stdin {
            Some(script) => verdict.stricter(script),
            // A script the policy cannot read runs unjudged in auto and
            // bypass mode; that is the reason to read, not the pipeline's
            // first command (`echo cGF3 | base64 -d | sh` read "`echo
            // cGF3` only reads").
            None if script_source(inner).is_some()
                && verdict.decision == Decision::Allow
                && verdict.rule.is_none() =>
            {
                let full = part.command_line();
                let how = match self.mode {
                    Mode::Auto => "it runs unjudged, inside the sandbox",
                    _ => "it runs unjudged",
                };
                Verdict::new(
                    Decision::Allow,
                    format!(
                        "{} mode: `{full}` runs a script the policy cannot read (a file, or what a command before it prints); {how}",
                        self.mode.name()
                    ),
                )
                .firm()
            }
            None => verdict,
        }
    }

    /// A shell or `source` reading its script on stdin, or from a process
    /// substitution ([`script_source`]), runs what a here-string, a
    /// here-document or `< <(echo ...)` gives it, what a literal `echo`,
    /// `printf` or `cat <<E` before it in the pipeline prints
    /// ([`Stage::output`]), or what `<(echo ...)` prints: judged as a
    /// `bash -c` script is. `None` when it reads no such literal text (a
    /// script from a file or a download asks by the other rules).
    fn judge_stdin_script(&self, part: &Part, inner: &[Arg], depth: usize) -> Option<Verdict> {
        let scripts: Vec<String> = match script_source(inner)? {
            ScriptFrom::Stdin => part
                .stdin
                .iter()
                .flatten()
                .cloned()
                .chain(self.piped_output(part).into_iter().flatten())
                .collect(),
            ScriptFrom::File(file) if !file.literal => part.substituted.clone(),
            ScriptFrom::File(_) => return None,
        };
        Verdict::strictest(scripts.iter().map(|script| {
            self.judge_script(
                script,
                depth + 1,
                part.descriptors_moved,
                part.inherited.clone(),
            )
        }))
    }

    /// What the stage before `part` in its pipeline prints, when that is
    /// literal text ([`Stage::output`]), its places put in as in `part`
    /// (the stage is not placed with it).
    fn piped_output(&self, part: &Part) -> Option<Vec<String>> {
        let printed = part.upstream.previous().and_then(Stage::output)?;
        let home = self.places.home.as_deref().map(Path::to_string_lossy);
        let cwd = self.places.cwd().to_string_lossy();
        let placing = Placing {
            cwd: &cwd,
            left: None,
            home: home.as_deref(),
            places: &self.places,
        };
        Some(
            printed
                .iter()
                .map(|text| placing.text(text, false).0)
                .collect(),
        )
    }

    /// The commands `xargs` runs of `inner`, given what it reads: a
    /// literal here-string or here-document, or what the stage before
    /// prints. `xargs rm -rf <<< ~` deletes the home folder as `rm -rf ~`
    /// does. The items are appended to `inner`, or with `-I R` put in
    /// place of `R` in its words, one command for each item. The items
    /// are read as xargs reads them ([`commands::XargsReading::items`]: at NULs with
    /// `-0`, quotes and backslashes taken away by default, `echo '"/"' |
    /// xargs rm -rf` deleting `/`); they are known only at run time when
    /// the input comes from elsewhere (a file, `-a FILE`, a command whose
    /// output the policy cannot tell).
    fn xargs_runs(&self, part: &Part, inner: &[Arg]) -> Vec<Vec<Arg>> {
        /// More commands than this are judged as one of unknown input.
        const MAX_LINES: usize = 64;
        let options = part.words[..part.words.len() - inner.len()]
            .iter()
            .rposition(|word| program(std::slice::from_ref(word)) == "xargs")
            .map_or(&[][..], |at| {
                &part.words[at + 1..part.words.len() - inner.len()]
            });
        let reading = xargs_reading(options);
        let given: Option<Vec<String>> = match part.stdin.is_empty() {
            false => part.stdin.iter().cloned().collect(),
            true => self.piped_output(part),
        };
        // The items of each text it may read (`echo -e` has two readings).
        let inputs: Option<Vec<Vec<String>>> =
            given.and_then(|texts| texts.iter().map(|text| reading.items(text)).collect());
        let Some(replace) = reading.replace else {
            // The items are arguments, never expanded: `echo '~' | xargs
            // rm -rf` removes a file named `~`.
            let arguments = |items: &Vec<String>| -> Vec<Arg> {
                items
                    .iter()
                    .map(|item| match item.starts_with('~') {
                        true => Arg::literal(&format!("./{item}")),
                        false => Arg::literal(item),
                    })
                    .collect()
            };
            return match inputs {
                Some(inputs) => inputs
                    .iter()
                    .map(|items| [inner, &arguments(items)].concat())
                    .collect(),
                None => vec![[inner, &[Arg::unknown("$(...)")]].concat()],
            };
        };
        // An item may be put inside a script (`sh -c 'rm -rf {}'`), where
        // a `~` is the home folder: it is put in as it is.
        let put = |line: Option<&str>| -> Vec<Arg> {
            inner
                .iter()
                .map(|word| match (word.text.contains(&replace), line) {
                    (false, _) => word.clone(),
                    (true, Some(line)) => Arg {
                        text: word.text.replace(&replace, line),
                        ..word.clone()
                    },
                    (true, None) => Arg {
                        text: word.text.replace(&replace, "$(...)"),
                        literal: false,
                        ..word.clone()
                    },
                })
                .collect()
        };
        match inputs {
            Some(inputs) if inputs.iter().map(Vec::len).sum::<usize>() <= MAX_LINES => inputs
                .iter()
                .flatten()
                .map(|item| put(Some(item)))
                .collect(),
            _ => vec![put(None)],
        }
    }

    /// `git -c alias.NAME=TEXT NAME`: judged as what the alias runs, and
    /// asked about at least (bypass runs it; a deny rule on what it runs
    /// holds).
    fn judge_git_alias(
        &self,
        part: &Part,
        wrappers: &[&str],
        alias: GitAlias,
        depth: usize,
    ) -> Verdict {
        let full = part.command_line();
        let ask = Verdict::new(
            Decision::Ask,
            format!(
                "`{full}` defines a git alias on its command line and runs it; it needs approval"
            ),
        )
        .firm();
        let verdict = match alias {
            GitAlias::Git(words) => {
                let expanded = Part {
                    words: words.clone(),
                    ..part.clone()
                };
                self.judge_command(&expanded, wrappers, &words, depth + 1)
            }
            GitAlias::Shell(script) => self.judge_script(
                &script,
                depth + 1,
                part.descriptors_moved,
                part.inherited.clone(),
            ),
            GitAlias::Unknown(reason) => {
                Verdict::new(Decision::Ask, format!("{reason}; it needs approval")).firm()
            }
        };
        match verdict.decision {
            Decision::Deny => verdict,
            _ => verdict.stricter(ask),
        }
    }

    fn judge_command_alone(
        &self,
        part: &Part,
        wrappers: &[&str],
        inner: &[Arg],
        depth: usize,
    ) -> Verdict {
        let full = part.command_line();
        let inner_line = join(inner);
        let lines = [Subject::Command(&full), Subject::Command(&inner_line)];
        // Deny and ask rules see through wrappers and a program's path
        // (`sudo /bin/rm x` is `rm x`); allow rules do not: one allowing
        // `rm:*` must not allow `./rm`, nor `git push:*` `sudo git push`.
        let named_line = named(inner);
        // `git $E push` is `git push` when `$E` is empty, as it may well be.
        let guessed = without_unknowns(inner);
        let guessed_line = named(&guessed);
        let unoptioned = without_leading_options(inner);
        let mut strict = vec![
            Subject::Command(&full),
            Subject::Command(&inner_line),
            Subject::Command(&named_line),
            Subject::Command(&guessed_line),
        ];
        strict.extend(unoptioned.iter().map(|line| Subject::Command(line)));
        if let Some(rule) = self.rule(&Kind::Deny, "bash", &strict) {
            return Verdict::new(
                Decision::Deny,
                format!("`{full}` is denied by the rule `{}`", rule.text),
            )
            .by_rule(&rule.text);
        }
        let exact = self.rules(&Kind::Allow).find(|r| r.names_exactly(&full));
        if let Some(reason) = always_denied(inner, &self.places) {
            match exact {
                Some(rule) => return self.allowed_by(&full, rule),
                None => return Verdict::new(Decision::Deny, reason).firm(),
            }
        }
        let floor = |verdict: Verdict| self.wrapper_floor(verdict, wrappers, &full, &inner_line);
        let prefixed = self.prefixed(part, &full);
        if let Some(nested) = nested_script(inner) {
            // The script runs with the prefix (`BASH_ENV=x bash -c ls`):
            // its own verdict, and the prefix's.
            let verdict = floor(match nested {
                Ok(script) => self.judge_script(
                    &script,
                    depth + 1,
                    part.descriptors_moved,
                    part.inherited.clone(),
                ),
                Err(reason) => Verdict::new(Decision::Ask, format!("{reason}; it needs approval"))
                    .firm()
                    .suggesting_command(&full),
            });
            return match prefixed {
                Some(asked) => verdict.stricter(asked),
                None => verdict,
            };
        }
        // No rule and no list can know what a program named at run time is
        // (`$X -rf x`): auto mode would run it unjudged.
        if inner.first().is_some_and(|word| !word.literal) {
            return Verdict::new(
                Decision::Ask,
                format!("`{full}` runs a program named only at run time; it needs approval"),
            )
            .firm();
        }
        let always =
            always_asked(inner, &part.upstream).or_else(|| always_asked(&guessed, &part.upstream));
        if let Some(reason) = always {
            return match exact {
                Some(rule) => self.allowed_by(&full, rule),
                // A rule names one simple command: for `sh` at the end of
                // `curl URL | sh` it would let every later `anything | sh`
                // skip the always-ask list, so none is suggested.
                None if !part.upstream.is_empty() => Verdict::new(Decision::Ask, reason).firm(),
                None => Verdict::new(Decision::Ask, reason)
                    .firm()
                    .suggesting_command(&full),
            };
        }
        if is_interpreter(program(inner)) && inner.get(1).is_some_and(|a| !a.literal) {
            return Verdict::new(
                Decision::Ask,
                format!("`{full}` runs a script only known at run time; it needs approval"),
            )
            .firm()
            .suggesting_command(&full);
        }
        if let Some(rule) = self.rule(&Kind::Ask, "bash", &strict) {
            return Verdict::new(
                Decision::Ask,
                format!("`{full}` needs approval by the rule `{}`", rule.text),
            )
            .by_rule(&rule.text);
        }
        // `$X` may become anything: a deny or ask rule that the words known
        // so far agree with may match what the command turns out to be.
        let known: Vec<Arg> = inner
            .iter()
            .take_while(|word| word.literal)
            .cloned()
            .collect();
        if known.len() < inner.len() {
            let known = format!("{} ", named(&known));
            if let Some(rule) = self
                .rules(&Kind::Deny)
                .chain(self.rules(&Kind::Ask))
                .find(|rule| rule.may_match_after(&known))
            {
                return Verdict::new(
                    Decision::Ask,
                    format!(
                        "`{full}` has words known only at run time, which may make the rule `{}` match; it needs approval",
                        rule.text
                    ),
                )
                .firm();
            }
        }
        if let Some(asked) = prefixed {
            return asked;
        }
        if part
            .assigned
            .iter()
            .any(|(name, value)| changes_what_runs(name, value))
        {
            return floor(self.by_mode(&full, inner));
        }
        let rule_lines: &[Subject<'_>] = if wrappers.is_empty() {
            &lines
        } else {
            &lines[..1]
        };
        if let Some(verdict) = self.by_rules("bash", rule_lines, &format!("`{full}`")) {
            return verdict;
        }
        if is_known_safe(inner) {
            return floor(Verdict::new(
                Decision::Allow,
                format!("`{inner_line}` only reads (known-safe list)"),
            ));
        }
        let verdict = floor(self.by_mode(&full, inner));
        if is_interpreter(program(inner)) && !part.upstream.is_empty() {
            // A rule for `bash` at the end of `echo hi | bash` would let
            // every later `anything | bash` run unasked.
            return Verdict {
                suggestions: Vec::new(),
                ..verdict
            };
        }
        verdict
    }

    /// Set before a command, `GIT_CONFIG_*` gives `git status` a program
    /// to run, `LD_PRELOAD` loads a library into any program, `BASH_ENV`
    /// is run by `bash -c` and `PAGER` by git: no allow rule or known-safe
    /// entry, which name what a command does, can vouch for it then.
    /// Default and plan mode ask; `None` in the others, or without such a
    /// prefix.
    fn prefixed(&self, part: &Part, full: &str) -> Option<Verdict> {
        let assigned: Vec<&str> = part
            .assigned
            .iter()
            .filter(|(name, value)| changes_what_runs(name, value))
            .map(|(name, _)| name.as_str())
            .collect();
        if assigned.is_empty() || !matches!(self.mode, Mode::Default | Mode::Plan) {
            return None;
        }
        Some(
            Verdict::new(
                Decision::Ask,
                format!(
                    "`{full}` runs with {} set, which can make even a reading command run other programs; it needs approval",
                    assigned.join(", ")
                ),
            )
            .firm(),
        )
    }

    fn allowed_by(&self, full: &str, rule: &Rule) -> Verdict {
        Verdict::new(
            Decision::Allow,
            format!("`{full}` is allowed by the exact rule `{}`", rule.text),
        )
        .by_rule(&rule.text)
    }

    /// What the mode says about a command no rule or list decided.
    fn by_mode(&self, full: &str, inner: &[Arg]) -> Verdict {
        let ask = |reason: String| Verdict::new(Decision::Ask, reason).suggesting_command(full);
        match self.mode {
            Mode::Default | Mode::Plan => ask(format!(
                "`{full}` is not on the known-safe list; running it needs approval"
            )),
            // `rm -rf "$D"` runs: refused in bypass, it refused every
            // `rm -rf "$tmp"` of a `tmp=$(mktemp -d)`. Only the shapes an
            // empty value turns into `/` or the home folder (`"$D"/*`) are
            // refused, in every mode, by the always-deny list; and what an
            // operator makes of a place (`${PWD%/}`), which may well be it.
            Mode::Bypass if deletes_derived_tree(inner) => Verdict::new(
                Decision::Deny,
                format!(
                    "`{full}` deletes a directory made by an expansion the policy does not follow from a folder it knows (the working directory, the home folder or a value this line sets), and bypass mode would run it unseen; name the directory itself"
                ),
            )
            .firm(),
            Mode::Bypass => Verdict::new(Decision::Allow, "bypass mode: nothing is asked"),
            Mode::Auto if !self.sandbox.active => ask(format!(
                "`{full}` needs approval: the sandbox is not active, so auto mode asks before running bash"
            )),
            // `git $E push` is `git push` when `$E` is empty.
            Mode::Auto
                if (uses_network(inner) || uses_network(&without_unknowns(inner)))
                    && !self.sandbox.network_allowed =>
            {
                ask(format!(
                    "`{full}` uses the network, which the sandbox keeps off; it needs approval (or --allow-network)"
                ))
            }
            Mode::Auto if deletes_unknown_tree(inner) => ask(format!(
                "`{full}` deletes a directory named only at run time; it needs approval"
            )),
            Mode::Auto if let Some(what) = self.names_configuration(inner) => ask(format!(
                "`{full}` names {what}: changing it changes what later commands and sessions may do, and the sandbox cannot keep a command inside the workspace from it; it needs approval"
            )),
            Mode::Auto if let Some(which) = changes_git_configuration(inner) => ask(format!(
                "`{full}` changes {which}, which can name programs that later git commands run outside the sandbox; it needs approval"
            )),
            Mode::Auto if let Some(what) = self.attributes_changed_outside(inner) => ask(format!(
                "`{full}` changes the mode, owner, times or attributes of {what}, which the sandbox does not govern; it needs approval"
            )),
            Mode::Auto if hands_off_outside(inner) => ask(format!(
                "`{full}` has a process outside the sandbox (a terminal multiplexer, a service manager, a container engine) run or change things; it needs approval"
            )),
            Mode::Auto => Verdict::new(
                Decision::Allow,
                format!("auto mode: `{full}` runs inside the sandbox"),
            ),
        }
    }

    /// For `chmod`, `chown`, `touch` and the like ([`changes_attributes`]):
    /// the first operand naming something outside the workspace (where
    /// its links lead counts: `chmod 777 link`), or one named only at run
    /// time. Every operand counts, a mode or an owner too (`755` is a name
    /// in the workspace, and harmless).
    fn attributes_changed_outside(&self, words: &[Arg]) -> Option<String> {
        if !changes_attributes(words) {
            return None;
        }
        operands(words).into_iter().find_map(|arg| {
            let Some(named) = self.places.named_by(arg) else {
                return Some(format!("`{}`, known only at run time", arg.text));
            };
            named
                .iter()
                .find_map(|opened| match self.places.seen_as(opened) {
                    Ok(seen) => seen
                        .iter()
                        .find(|path| !self.places.in_workspace(path))
                        .map(|path| format!("`{}`, outside the workspace", path.display())),
                    Err(written) => Some(format!("`{}`", written.display())),
                })
        })
    }

    /// What a literal argument of `words` names among the workspace's
    /// configuration ([`Places::configuration`]): `cp x
    /// .coding-agent/settings.json` or `sed -i ... .git/config` write there
    /// as surely as a redirect does, and the sandbox allows the workspace.
    fn names_configuration(&self, words: &[Arg]) -> Option<&'static str> {
        words
            .iter()
            .skip(1)
            .filter(|word| word.literal && !word.text.is_empty())
            .find_map(|word| {
                let text = word
                    .text
                    .split_once('=')
                    .map_or(word.text.as_str(), |(_, value)| value);
                let path = self.places.resolve(text);
                match word.pattern {
                    true => self.places.configuration_matching(&path),
                    false => self.places.configuration(&path),
                }
            })
    }

    /// `sudo X`, `env X`, `timeout N X`, ...: judged as X, and asked at least.
    fn wrapper_floor(
        &self,
        verdict: Verdict,
        wrappers: &[&str],
        full: &str,
        inner: &str,
    ) -> Verdict {
        match wrappers.first() {
            Some(wrapper) if verdict.decision == Decision::Allow && verdict.rule.is_none() => {
                Verdict::new(
                    Decision::Ask,
                    format!(
                        "`{full}` runs `{inner}` through `{wrapper}`; a wrapped command needs approval even when it alone would not"
                    ),
                )
                .suggesting_command(full)
            }
            _ => verdict,
        }
    }
}
