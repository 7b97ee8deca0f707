//! A bash command line taken apart into the simple commands it would run.
//!
//! The policy judges commands one by one, so `ls && rm -rf ~` cannot hide the
//! second half behind the first. This module uses a real shell parser
//! (`brush-parser`) and walks everything that runs a command: lists (`;`,
//! `&&`, `||`, `&`), pipelines, subshells, brace groups, `if`/`for`/`while`/
//! `case` bodies, function bodies, `$(...)`, backticks and process
//! substitutions. Redirections that write are kept as the command's writes.
//! Words are flattened to the text the command would see where that is
//! known (quotes removed, `~`, `$HOME` and `$PWD` resolved); anything else
//! (other variables, substitutions) is marked dynamic so the policy never
//! treats it as a harmless literal.
//!
//! `bash -c '...'`, `sh -c` and `eval` are not expanded here: the policy
//! (`commands.rs`) parses their literal script again with
//! `parse_inheriting`, given the values the line set before them.
//!
//! The parser and the walk recurse once per level of nesting, and a stack
//! overflow cannot be caught: a line nested deeper than [`MAX_NESTING`] is
//! not parsed, and the parse runs on a thread with a stack of its own.

use brush_parser::ast::{
    Command, CommandPrefixOrSuffixItem, CompoundCommand, CompoundList, IoFileRedirectKind,
    IoFileRedirectTarget, IoRedirect, Pipeline, SimpleCommand,
};
use brush_parser::word::{
    Parameter, ParameterExpr, ParameterTestType, SubstringMatchKind, TildeExpr, WordPiece,
    WordPieceWithSource,
};
use brush_parser::{ParserOptions, ast};
use std::sync::Arc;

use super::commands::{is_stdin_path, nested_script, printed_text, program, unwrap};
use super::evaluated::{Evaluated, is_integer, is_subscript_code};
use super::variables::{MAX_VARIANTS, Values, inherited_value, is_name};

/// What a word holds for the working directory (`$PWD`, `$(pwd)`, `~+`):
/// no word of bash holds a NUL, so it stands for nothing else.
pub const WORKING_DIRECTORY: &str = "\u{0}PWD\u{0}";

/// What a word holds for the home directory (`~`, `$HOME`): the policy
/// writes it `~` at a word's start and the home folder's path anywhere
/// else, since only a leading `~` means home to the paths it judges
/// (`rm -rf /$HOME` was judged as deleting `/~` and ran).
pub const HOME_DIRECTORY: &str = "\u{0}HOME\u{0}";

/// What a word holds for the previous working directory (`~-`,
/// `$OLDPWD`): the policy puts the folder a `cd` before it left in its
/// place, or takes the word as unknown when no `cd` came first.
pub const OLD_WORKING_DIRECTORY: &str = "\u{0}OLDPWD\u{0}";

/// What a word holds for `~name`, the home folder of the user `name`,
/// until the policy looks the user up where bash runs (on this machine:
/// its password database; with `--remote`, no one can tell). It was
/// taken for unknown and never judged against read rules: `cat
/// ~bin/true` ran as "only reads" with `read(/bin/**)` denied.
pub fn users_home(name: &str) -> String {
    format!("{USERS_HOME_START}{name}\u{0}")
}

/// How [`users_home`] starts: no word of bash holds a NUL.
pub const USERS_HOME_START: &str = "\u{0}~";

/// What a word holds for `${X:?}` of a value known only at run time:
/// unknown, but never empty ([`Arg::without_unknowns`] keeps it).
const NEVER_EMPTY: &str = "${...:?}";

/// How deep substitutions and `bash -c` strings may nest before the policy
/// stops looking and asks (a model never needs more; a crafted input might).
pub const MAX_DEPTH: usize = 8;

/// How deep brackets, braces, substitutions and compound commands may
/// nest in a line before it is not parsed: the parser and the walk
/// recurse once for each level (3000 nested braces overflowed the stack
/// and killed the process), and a person's command nests a few levels.
pub const MAX_NESTING: usize = 100;

/// The stack the parse runs on: room for [`MAX_NESTING`] levels in the
/// parser, the walk and the syntax tree's drop, whatever thread asks.
const PARSE_STACK: usize = 64 * 1024 * 1024;

/// One word of a command, as far as it is known before running it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Arg {
    /// The text the command would receive: quotes removed, `~`/`$HOME` as
    /// [`HOME_DIRECTORY`], `$PWD` as [`WORKING_DIRECTORY`]; unknown parts
    /// as `$NAME` or `$(...)`.
    pub text: String,
    /// False when part of the word is only known at run time.
    pub literal: bool,
    /// True when the word holds an unquoted `*`, `?` or `[`: bash puts the
    /// names it matches in its place (a redirect's target too, when one
    /// matches), so `.gi?/config` is `.git/config`.
    pub pattern: bool,
    /// True when the word is known but for a brace expansion (`{.env,}`),
    /// which bash turns into several words: [`Arg::expansions`] lists them.
    pub braces: bool,
    /// True when an unknown part is made of a value the line itself gives,
    /// by an expansion the walk does not follow (`${F:1}`, `${F%?}` after
    /// `F=.env`): not any file, but one the line chose, so a rule guarding
    /// reads cannot let it pass unseen.
    pub derived: bool,
}

impl Arg {
    /// A literal word (tests and wrappers build these).
    pub fn literal(text: &str) -> Self {
        Self {
            text: text.to_owned(),
            literal: true,
            pattern: false,
            braces: false,
            derived: false,
        }
    }

    /// The texts bash makes of the word before matching patterns: the word
    /// itself, or each of its brace expansions; `None` when part of it is
    /// known only at run time (or it expands to too many words to judge).
    pub fn expansions(&self) -> Option<Vec<String>> {
        match (self.literal, self.braces) {
            (true, _) => Some(vec![self.text.clone()]),
            (false, true) => super::expand::brace_expansions(&self.text),
            (false, false) => None,
        }
    }

    /// Only a run-time part (`$NAME`, `$(...)`): none of the text.
    pub(super) fn unknown(text: &str) -> Self {
        Self {
            literal: false,
            ..Self::literal(text)
        }
    }

    /// The word as it reads when every part known only at run time is
    /// empty (`$E` in `git $E push`, `$IFS` in `push$IFS`): what a deny or
    /// ask rule must also be matched against, since `$E` may well be empty.
    /// A `${X:?}`, which is never empty, stays as a name (`{...:?}`).
    pub fn without_unknowns(&self) -> String {
        if self.literal {
            return self.text.clone();
        }
        let mut text = self
            .text
            .replace("$((...))", "")
            .replace("$(...)", "")
            .replace("${...}", "");
        text = text.replace("~?", "");
        let mut out = String::with_capacity(text.len());
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            if c == '$' {
                while chars
                    .next_if(|n| n.is_ascii_alphanumeric() || "_@*#?$!-".contains(*n))
                    .is_some()
                {}
            } else {
                out.push(c);
            }
        }
        out
    }
}

/// One simple command with what it writes.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Part {
    /// The command's words, program first (after any `NAME=value` prefixes).
    pub words: Vec<Arg>,
    /// What the `NAME=value` assignments before the command set for it.
    pub assigned: Vec<(String, Arg)>,
    /// Files written by `>`, `>>`, `>|`, `<>` and `&>` redirections.
    pub writes: Vec<Arg>,
    /// Files read by `<` and `<>` redirections.
    pub reads: Vec<Arg>,
    /// The words of the commands before this one in its pipeline (`curl x | sh`).
    pub upstream: Upstream,
    /// Set when this part stands for something the walk cannot judge (a
    /// substitution hidden in a parameter default, too deep a nesting).
    pub opaque: Option<String>,
    /// Set when this part defines a function that calls itself (a fork bomb's shape).
    pub recursive_function: Option<String>,
    /// True when the script points a descriptor somewhere other than where
    /// the bash tool opened it (`1<file`, `3<file`, `1>&0`, `exec 2<>f`):
    /// then a write to `/dev/stdout` or `/dev/fd/N` opens that file again,
    /// for writing, so it is not the harmless output it usually is.
    pub descriptors_moved: bool,
    /// Set when the command cannot be judged for its size (more
    /// combinations of values than are judged): asked about, and refused
    /// in bypass mode, which would run it unseen.
    pub unjudgeable: Option<String>,
    /// For a command that runs a script (`bash -c`, `eval`, `trap`): the
    /// values the line gave its variables before it, with those its own
    /// prefix (`F=x bash -c ...`) and `env` give, which the script sees.
    pub(super) inherited: Option<Values>,
    /// What its here-strings and here-documents (`<<< TEXT`, `<<E`) give
    /// the command on stdin: the text when it is literal, `None` when it
    /// holds an expansion. A `< <(echo TEXT)` gives what the echo prints.
    pub stdin: Vec<Option<String>>,
    /// What the process substitutions among its words (`. <(echo TEXT)`)
    /// print, where that is literal text ([`Stage::output`]): the script
    /// of a shell or `source` given one as its file.
    pub substituted: Vec<String>,
}

/// One command of a pipeline, as the commands after it see it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stage {
    /// Its words.
    pub words: Vec<Arg>,
    /// What its here-strings and here-documents give it ([`Part::stdin`]).
    pub stdin: Vec<Option<String>>,
}

impl Stage {
    /// What the stage prints when that is literal text: an `echo` or
    /// `printf` of literal words, or a `cat` of a
    /// literal here-document or here-string (`cat <<E | sh`). `None` for
    /// anything else.
    pub fn output(&self) -> Option<Vec<String>> {
        if let Some(printed) = printed_text(&self.words) {
            return Some(printed);
        }
        // `cat`, `cat -`, `cat /dev/stdin`, and `tee` (which prints what
        // it reads whatever it also writes): `tee <<E | sh` ran `E`.
        let cat = matches!(self.words.as_slice(), [cat] | [cat, _]
            if program(&self.words) == "cat" && cat.literal)
            && self
                .words
                .get(1)
                .is_none_or(|dash| dash.text == "-" || is_stdin_path(&dash.text));
        let tee = program(&self.words) == "tee";
        match (cat || tee) && !self.stdin.is_empty() {
            true => self.stdin.iter().cloned().collect(),
            false => None,
        }
    }
}

/// The commands before a part in its pipelines (one list for each
/// pipeline it is nested in), shared with every part after them: a copy
/// for each stage made a pipeline of `n` stages cost `n²`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Upstream(Vec<(Arc<[Stage]>, usize)>);

impl Upstream {
    /// Each earlier stage's words, innermost pipeline first.
    pub fn stages(&self) -> impl Iterator<Item = &Vec<Arg>> {
        self.0
            .iter()
            .flat_map(|(stages, before)| &stages[..*before])
            .map(|stage| &stage.words)
    }

    /// The stage right before the part, whose output it reads.
    pub fn previous(&self) -> Option<&Stage> {
        let (stages, before) = self.0.iter().find(|(_, before)| *before > 0)?;
        stages.get(before - 1)
    }

    /// True when no command comes before the part in a pipeline.
    pub fn is_empty(&self) -> bool {
        self.stages().next().is_none()
    }
}

impl Part {
    /// The command's words joined by spaces: what rules match against.
    pub fn command_line(&self) -> String {
        join(&self.words)
    }
}

/// `words` with every part known only at run time left empty
/// ([`Arg::without_unknowns`]), the words that are then empty left out.
pub fn without_unknowns(words: &[Arg]) -> Vec<Arg> {
    words
        .iter()
        .map(|word| Arg {
            text: word.without_unknowns(),
            ..word.clone()
        })
        .filter(|word| !word.text.is_empty())
        .collect()
}

/// The words' texts joined by single spaces.
pub fn join(words: &[Arg]) -> String {
    let texts: Vec<&str> = words.iter().map(|w| w.text.as_str()).collect();
    texts.join(" ")
}

/// Why a command line could not be taken apart.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ParseFailure(pub String);

/// Every simple command `script` would run, in source order.
///
/// `$PWD`, `$(pwd)` and `~+` are written [`WORKING_DIRECTORY`], `~-` and
/// `$OLDPWD` [`OLD_WORKING_DIRECTORY`]: which folders they are depends on
/// the `cd`s before each command, which the policy follows. Fails on a
/// syntax error: the policy asks then.
pub fn parse(script: &str, depth: usize) -> Result<Vec<Part>, ParseFailure> {
    parse_inheriting(script, depth, Values::default())
}

/// [`parse`] for a script another runs (`bash -c`, `eval`), which sees
/// `values`, those the line gave its variables before it. On a thread
/// with a stack of its own ([`PARSE_STACK`]).
pub(super) fn parse_inheriting(
    script: &str,
    depth: usize,
    values: Values,
) -> Result<Vec<Part>, ParseFailure> {
    std::thread::scope(|scope| {
        std::thread::Builder::new()
            .name("bash-parse".to_owned())
            .stack_size(PARSE_STACK)
            .spawn_scoped(scope, || parse_with(script, depth, values))
            .map_err(|e| ParseFailure(format!("no thread to parse the command on: {e}")))?
            .join()
            .unwrap_or_else(|_| {
                Err(ParseFailure(
                    "the shell parser failed on this command".to_owned(),
                ))
            })
    })
}

/// Why `script` nests too deep to be parsed ([`MAX_NESTING`]), if it
/// does. Two cheap counts, the deeper taken, so that a quote one of them
/// misreads does not hide a nesting from both: `lexed_depth` follows
/// quotes, comments and here-documents; `counted_depth` reads none.
pub fn too_deep(script: &str) -> Option<String> {
    let deepest = lexed_depth(script).max(counted_depth(script));
    (deepest > MAX_NESTING).then(|| {
        format!(
            "a line nested more than {MAX_NESTING} levels deep (brackets, braces, substitutions, compound commands)"
        )
    })
}

/// The keywords that open a compound command, where a command starts.
const OPENING: [&str; 6] = ["if", "case", "for", "select", "while", "until"];
/// The keywords that close one.
const CLOSING: [&str; 3] = ["fi", "esac", "done"];
/// The words after which a command starts.
const LEADING: [&str; 7] = ["then", "do", "else", "elif", "if", "while", "until"];

/// The deepest nesting of `script` counting every `(`, `{` and `[` as an
/// opening, every `)`, `}` and `]` as a closing, quoted or not, and the
/// keywords of compound commands where a command starts.
fn counted_depth(script: &str) -> usize {
    let (mut depth, mut deepest) = (0usize, 0usize);
    let mut starts = true;
    let bytes = script.as_bytes();
    let mut at = 0;
    while at < bytes.len() {
        let byte = bytes[at];
        if byte.is_ascii_alphabetic() {
            let end = word_end(bytes, at);
            let word = &script[at..end];
            if starts && OPENING.contains(&word) {
                depth += 1;
            } else if starts && CLOSING.contains(&word) {
                depth = depth.saturating_sub(1);
            }
            starts = LEADING.contains(&word);
            at = end;
            continue;
        }
        match byte {
            b'(' | b'{' | b'[' => depth += 1,
            b')' | b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
        if !matches!(byte, b' ' | b'\t') {
            starts = matches!(byte, b';' | b'&' | b'|' | b'(' | b'{' | b'\n' | b'!' | b'`');
        }
        deepest = deepest.max(depth);
        at += 1;
    }
    deepest.max(depth)
}

/// Where the word of letters, digits and `_` starting at `at` ends.
fn word_end(bytes: &[u8], at: usize) -> usize {
    bytes[at..]
        .iter()
        .position(|b| !(b.is_ascii_alphanumeric() || *b == b'_'))
        .map_or(bytes.len(), |len| at + len)
}

/// What a level of [`lexed_depth`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Level {
    /// `(`, `$(`, `<(`: commands until `)`.
    Paren,
    /// `$((` or `((`: arithmetic until `))`.
    Arithmetic,
    /// `{` where a command starts, until `}` where one starts.
    Brace,
    /// `if`, `case`, `for`, `while`, ... until `fi`, `esac`, `done`.
    Keyword,
    /// `"..."`.
    Double,
    /// `${...}`; inside double quotes, a `'` in it is a character.
    Parameter { quoted: bool },
    /// `` `...` ``.
    Backtick,
}

/// The deepest nesting of `script` as bash reads it, roughly: quotes,
/// comments and here-documents hold no nesting, `$(`, `${`, `((`,
/// backticks, subshells, brace groups and compound commands do. A closing
/// that closes nothing open is a character (a `case` pattern's `)`).
fn lexed_depth(script: &str) -> usize {
    let bytes = script.as_bytes();
    let mut open: Vec<Level> = Vec::new();
    let mut deepest = 0usize;
    let mut heredocs: Vec<(String, bool)> = Vec::new();
    let mut starts = true;
    let mut at = 0;
    while at < bytes.len() {
        let byte = bytes[at];
        let next = bytes.get(at + 1).copied();
        let top = open.last().copied();
        let mut next_starts = false;
        match (top, byte) {
            (_, b'\\') => at += 1,
            (Some(Level::Double), b'"') => {
                open.pop();
            }
            (Some(Level::Parameter { .. }), b'}') => {
                open.pop();
            }
            (Some(Level::Backtick), b'`') => {
                open.pop();
            }
            (Some(Level::Parameter { quoted: false }) | None, b'\'')
            | (Some(Level::Paren | Level::Brace | Level::Keyword | Level::Backtick), b'\'') => {
                at = skip_single_quoted(bytes, at);
            }
            (Some(Level::Double), b'\'') => {}
            (_, b'$') if next == Some(b'(') => {
                let arithmetic = bytes.get(at + 2) == Some(&b'(');
                open.push(if arithmetic {
                    Level::Arithmetic
                } else {
                    Level::Paren
                });
                at += 1 + usize::from(arithmetic);
            }
            (_, b'$') if next == Some(b'{') => {
                let quoted = top == Some(Level::Double);
                open.push(Level::Parameter { quoted });
                at += 1;
            }
            (_, b'`') => open.push(Level::Backtick),
            (Some(Level::Double), _) => {}
            (_, b'"') => open.push(Level::Double),
            (Some(Level::Arithmetic), b'(') => open.push(Level::Paren),
            (Some(Level::Arithmetic), b')') if next == Some(b')') => {
                open.pop();
                at += 1;
            }
            (Some(Level::Arithmetic) | Some(Level::Parameter { .. }), _) => {}
            (_, b'(') if starts && next == Some(b'(') => {
                open.push(Level::Arithmetic);
                at += 1;
            }
            (_, b'(') => {
                open.push(Level::Paren);
                next_starts = true;
            }
            // A command starts after a `case` pattern's `)`.
            (_, b')') => {
                if top == Some(Level::Paren) {
                    open.pop();
                }
                next_starts = true;
            }
            (_, b'{') if starts && next.is_none_or(|n| n.is_ascii_whitespace()) => {
                open.push(Level::Brace);
                next_starts = true;
            }
            (_, b'}') if starts && top == Some(Level::Brace) => {
                open.pop();
            }
            (_, b'#') if at == 0 || b" \t\n;&|()".contains(&bytes[at - 1]) => {
                while at + 1 < bytes.len() && bytes[at + 1] != b'\n' {
                    at += 1;
                }
            }
            (_, b'<') if next == Some(b'<') && bytes.get(at + 2) != Some(&b'<') => {
                let (delimiter, end) = heredoc_delimiter(bytes, at + 2);
                heredocs.push(delimiter);
                at = end.saturating_sub(1);
            }
            (_, b'\n') => {
                for (delimiter, tabs) in std::mem::take(&mut heredocs) {
                    at = skip_heredoc(script, at + 1, &delimiter, tabs);
                }
                next_starts = true;
            }
            (_, b';' | b'&' | b'|' | b'!') => next_starts = true,
            (_, b' ' | b'\t') => next_starts = starts,
            (_, letter) if letter.is_ascii_alphabetic() => {
                let end = word_end(bytes, at);
                let word = &script[at..end];
                if starts && OPENING.contains(&word) {
                    open.push(Level::Keyword);
                } else if starts && CLOSING.contains(&word) && top == Some(Level::Keyword) {
                    open.pop();
                }
                next_starts = starts && LEADING.contains(&word);
                at = end - 1;
            }
            _ => {}
        }
        starts = next_starts;
        deepest = deepest.max(open.len());
        at += 1;
    }
    deepest
}

/// Where the single-quoted text opening at `at` ends (its closing `'`).
fn skip_single_quoted(bytes: &[u8], at: usize) -> usize {
    let ansi = at > 0 && bytes[at - 1] == b'$';
    let mut end = at + 1;
    while end < bytes.len() && bytes[end] != b'\'' {
        end += if ansi && bytes[end] == b'\\' { 2 } else { 1 };
    }
    end
}

/// The delimiter of a here-document whose operator's `<<` ends before
/// `at` (quotes and escapes taken off), whether `<<-` strips tabs, and
/// where the word ends.
fn heredoc_delimiter(bytes: &[u8], mut at: usize) -> ((String, bool), usize) {
    let tabs = bytes.get(at) == Some(&b'-');
    at += usize::from(tabs);
    while bytes.get(at).is_some_and(|b| matches!(b, b' ' | b'\t')) {
        at += 1;
    }
    let mut delimiter = Vec::new();
    while let Some(&byte) = bytes.get(at) {
        if byte.is_ascii_whitespace() || b";&|<>()".contains(&byte) {
            break;
        }
        if !matches!(byte, b'\'' | b'"' | b'\\') {
            delimiter.push(byte);
        }
        at += 1;
    }
    ((String::from_utf8_lossy(&delimiter).into_owned(), tabs), at)
}

/// Where the line after a here-document's body starting at `from` ends
/// (the body's last newline): its lines are text, up to `delimiter`.
fn skip_heredoc(script: &str, from: usize, delimiter: &str, tabs: bool) -> usize {
    let mut at = from;
    while at < script.len() {
        let end = script[at..].find('\n').map_or(script.len(), |len| at + len);
        let line = &script[at..end];
        let line = if tabs {
            line.trim_start_matches('\t')
        } else {
            line
        };
        if line == delimiter {
            return end;
        }
        at = end + 1;
    }
    script.len()
}

/// The parser's program of `script`.
fn parse_program(
    script: &str,
    options: &ParserOptions,
) -> Result<brush_parser::ast::Program, ParseFailure> {
    std::panic::catch_unwind(|| {
        brush_parser::Parser::new(std::io::Cursor::new(script), options).parse_program()
    })
    .map_err(|_| ParseFailure("the shell parser failed on this command".to_owned()))?
    .map_err(|e| ParseFailure(format!("bash syntax error: {e}")))
}

/// `script` with every `select` where a command starts (outside quotes)
/// written `for   `: `select NAME in WORDS; do LIST; done` runs `LIST`
/// as the `for` loop of the same shape does. `None` when there is none.
fn select_as_for(script: &str) -> Option<String> {
    let bytes = script.as_bytes();
    let mut out = script.to_owned().into_bytes();
    let mut quote: Option<u8> = None;
    let mut found = false;
    let mut at = 0;
    while at < bytes.len() {
        let c = bytes[at];
        match quote {
            Some(q) if c == q => quote = None,
            Some(b'"') if c == b'\\' => at += 1,
            Some(_) => {}
            None if c == b'\\' => at += 1,
            None if c == b'\'' || c == b'"' => quote = Some(c),
            None if bytes[at..].starts_with(b"select")
                && bytes.get(at + 6).is_some_and(|c| matches!(c, b' ' | b'\t')) =>
            {
                let before = script[..at].trim_end_matches([' ', '\t']);
                let starts = before.is_empty()
                    || before.ends_with([';', '&', '|', '(', '{', '\n', '!'])
                    || ["do", "then", "else", "elif"].iter().any(|word| {
                        before.strip_suffix(word).is_some_and(|rest| {
                            rest.is_empty() || rest.ends_with([' ', '\t', ';', '\n'])
                        })
                    });
                if starts {
                    out[at..at + 6].copy_from_slice(b"for   ");
                    found = true;
                }
            }
            None => {}
        }
        at += 1;
    }
    found.then(|| String::from_utf8(out).ok()).flatten()
}

/// [`parse`] for a script that runs inside another (`$(...)`), which
/// sees the values the outer one gave its variables before it.
fn parse_with(script: &str, depth: usize, values: Values) -> Result<Vec<Part>, ParseFailure> {
    Ok(walk(script, depth, values)?.parts)
}

/// The walk of `script`: its parts, and the values it left its variables.
fn walk(script: &str, depth: usize, values: Values) -> Result<Walk, ParseFailure> {
    if depth > MAX_DEPTH {
        return Err(ParseFailure(format!(
            "commands nested more than {MAX_DEPTH} levels deep"
        )));
    }
    if let Some(why) = too_deep(script) {
        return Err(ParseFailure(why));
    }
    let options = ParserOptions::default();
    let program = match parse_program(script, &options) {
        // The parser knows no `select`; it is shaped as `for` is.
        Err(e) => match select_as_for(script) {
            Some(script) => parse_program(&script, &options).map_err(|_| e)?,
            None => return Err(e),
        },
        Ok(program) => program,
    };
    let mut walk = Walk {
        source: script.to_owned(),
        parts: Vec::new(),
        depth,
        options,
        descriptors_moved: false,
        evaluated: Evaluated::default(),
        values,
        here: Vec::new(),
        printed: std::collections::HashMap::new(),
    };
    for list in &program.complete_commands {
        walk.list(list)?;
    }
    // What bash would evaluate of a value (`$((x))` of `x='a[$(rm ~)]'`)
    // runs a command no word shows: the line asks, and the quoted code it
    // may run is judged as if it ran, so a deny rule holds for it in every
    // mode (bypass runs what asks).
    if let Some(why) = walk.evaluated.danger(&walk.parts, script) {
        for code in std::mem::take(&mut walk.evaluated.quoted_code) {
            walk.word(&code)?;
        }
        walk.parts.push(Part {
            words: vec![Arg::literal("((")],
            opaque: Some(why),
            ..Part::default()
        });
    }
    let moved = walk.descriptors_moved;
    for part in &mut walk.parts {
        part.descriptors_moved |= moved;
    }
    Ok(walk)
}

struct Walk {
    /// The script walked: where the parser's positions point.
    source: String,
    parts: Vec<Part>,
    depth: usize,
    options: ParserOptions,
    /// A redirection of this script moves a descriptor ([`Part::descriptors_moved`]).
    descriptors_moved: bool,
    /// What bash evaluates of values (arithmetic, names, expansions).
    evaluated: Evaluated,
    /// The values the script has given its variables so far.
    values: Values,
    /// What the redirections walked last give on stdin ([`Part::stdin`]).
    here: Vec<Option<String>>,
    /// What each command substitution walked prints, when that is one
    /// literal text ([`Stage::output`]): kept from the first variant,
    /// which alone walks it, for the others.
    printed: std::collections::HashMap<String, Option<String>>,
}

/// Whether a file redirection points descriptor `fd` (`None`: the kind's
/// default, 0 or 1) somewhere the bash tool did not open it: a descriptor
/// above 2, standard output or error read from a file, or a duplicate of
/// anything but standard output or error (`1>&0`, `2<&3`).
fn moves_descriptor(
    fd: Option<i32>,
    kind: &IoFileRedirectKind,
    target: &IoFileRedirectTarget,
) -> bool {
    let reads = matches!(
        kind,
        IoFileRedirectKind::Read
            | IoFileRedirectKind::ReadAndWrite
            | IoFileRedirectKind::DuplicateInput
    );
    let duplicates_other = match target {
        IoFileRedirectTarget::Fd(other) => !matches!(other, 1 | 2),
        IoFileRedirectTarget::Duplicate(word) => {
            !matches!(word.value.as_str(), "1" | "2" | "-" | "1-" | "2-")
        }
        _ => false,
    };
    let duplicating = matches!(
        kind,
        IoFileRedirectKind::DuplicateInput | IoFileRedirectKind::DuplicateOutput
    );
    match fd {
        Some(fd) if fd > 2 => true,
        Some(1 | 2) if reads => true,
        _ => duplicating && duplicates_other,
    }
}

impl Walk {
    /// Walks each command of `list`, following which assignments surely
    /// ran ([`Values::settle`]): in `a && D=x && b` for `b`, not after the
    /// chain (`false && D=x; rm -rf "$D"/*`), nor after `||` or `&`.
    fn list(&mut self, list: &CompoundList) -> Result<(), ParseFailure> {
        for item in &list.0 {
            match item.1 {
                ast::SeparatorOperator::Async => self.unsure(|walk| walk.and_or(&item.0))?,
                ast::SeparatorOperator::Sequence => self.and_or(&item.0)?,
            }
        }
        Ok(())
    }

    fn and_or(&mut self, and_or: &ast::AndOrList) -> Result<(), ParseFailure> {
        self.pipeline(&and_or.first)?;
        let after_first = self.values.sure();
        let mut all_and = true;
        for next in &and_or.additional {
            all_and &= matches!(next, ast::AndOr::And(_));
            let (ast::AndOr::And(p) | ast::AndOr::Or(p)) = next;
            match all_and {
                true => self.pipeline(p)?,
                false => self.unsure(|walk| walk.pipeline(p))?,
            }
        }
        self.values.keep_sure(&after_first);
        Ok(())
    }

    /// [`Walk::list`] of commands that may not run, or run in a subshell:
    /// what they assign is not sure after them.
    fn unsure_list(&mut self, list: &CompoundList) -> Result<(), ParseFailure> {
        self.unsure(|walk| walk.list(list))
    }

    /// Runs `walk` as [`Walk::unsure_list`] does.
    fn unsure<T>(
        &mut self,
        walk: impl FnOnce(&mut Self) -> Result<T, ParseFailure>,
    ) -> Result<T, ParseFailure> {
        self.values.unsure(true);
        let walked = walk(self);
        self.values.unsure(false);
        walked
    }

    /// Walks each stage, then gives every part of a stage the stages
    /// before it: one list shared by all ([`Upstream`]).
    fn pipeline(&mut self, pipeline: &Pipeline) -> Result<(), ParseFailure> {
        let mut stages: Vec<Stage> = Vec::new();
        let mut firsts = Vec::new();
        // Each stage of a pipeline runs in a subshell of its own.
        let subshells = pipeline.seq.len() > 1;
        for command in &pipeline.seq {
            let first = self.parts.len();
            match subshells {
                true => self.unsure(|walk| walk.command(command))?,
                false => self.command(command)?,
            }
            firsts.push(first);
            let stage = self.parts[first..]
                .iter()
                .find(|part| !part.words.is_empty())
                .map(|part| Stage {
                    words: part.words.clone(),
                    stdin: part.stdin.clone(),
                });
            stages.push(stage.unwrap_or_default());
        }
        if stages.len() < 2 {
            return Ok(());
        }
        let shared: Arc<[Stage]> = stages.into();
        let ends = firsts.iter().skip(1).copied().chain([self.parts.len()]);
        for (before, (first, end)) in firsts.iter().copied().zip(ends).enumerate().skip(1) {
            for part in &mut self.parts[first..end] {
                part.upstream.0.push((Arc::clone(&shared), before));
            }
        }
        Ok(())
    }

    fn command(&mut self, command: &Command) -> Result<(), ParseFailure> {
        match command {
            Command::Simple(simple) => self.simple(simple),
            Command::Compound(compound, redirects) => {
                let (writes, reads) =
                    self.redirects_both(redirects.iter().flat_map(|r| r.0.iter()))?;
                if !writes.is_empty() || !reads.is_empty() {
                    // `{ ...; } > f` writes f and `{ cat; } < f` reads it,
                    // whatever runs inside.
                    self.parts.push(Part {
                        words: vec![Arg::literal(":")],
                        writes,
                        reads,
                        ..Part::default()
                    });
                }
                self.compound(compound)
            }
            Command::Function(function) => {
                let name = function.fname.value.clone();
                self.values.define(&name);
                let first = self.parts.len();
                let body = &function.body;
                let (writes, reads) =
                    self.redirects_both(body.1.iter().flat_map(|r| r.0.iter()))?;
                self.unsure(|walk| walk.compound(&body.0))?;
                let calls_itself = self.parts[first..]
                    .iter()
                    .any(|p| p.words.first().is_some_and(|w| w.text == name));
                self.parts.push(Part {
                    words: vec![Arg::literal(":")],
                    writes,
                    reads,
                    recursive_function: calls_itself.then_some(name),
                    ..Part::default()
                });
                Ok(())
            }
            Command::ExtendedTest(test, redirects) => {
                let (writes, reads) =
                    self.redirects_both(redirects.iter().flat_map(|r| r.0.iter()))?;
                let text = test.expr.to_string();
                // The operands of `-eq` and the like are arithmetic; the
                // rest (strings, patterns, file tests) is not.
                let tokens: Vec<&str> = text.split_whitespace().collect();
                for (at, token) in tokens.iter().enumerate() {
                    if ["-eq", "-ne", "-lt", "-le", "-gt", "-ge"].contains(token) {
                        let operands = [at.checked_sub(1), Some(at + 1)];
                        for operand in operands.into_iter().flatten().filter_map(|i| tokens.get(i))
                        {
                            self.evaluated.arithmetic.push((*operand).to_owned());
                        }
                    }
                }
                if is_subscript_code(&text) {
                    self.evaluated.subscript_code = Some(
                        "a variable name whose subscript runs a command, inside [[ ]]".to_owned(),
                    );
                }
                self.parts.push(Part {
                    words: vec![Arg::literal("[[")],
                    writes,
                    reads,
                    opaque: hides_command(&test.expr.to_string())
                        .then(|| "a command substitution inside [[ ]]".to_owned()),
                    ..Part::default()
                });
                Ok(())
            }
        }
    }

    fn compound(&mut self, compound: &CompoundCommand) -> Result<(), ParseFailure> {
        match compound {
            CompoundCommand::BraceGroup(group) => self.list(&group.list),
            CompoundCommand::Subshell(subshell) => self.unsure_list(&subshell.list),
            CompoundCommand::ForClause(clause) => {
                let mut integers = true;
                let mut known = clause.values.as_ref().is_some_and(|v| !v.is_empty());
                for word in clause.values.iter().flatten() {
                    let value = self.word(&word.value)?;
                    integers &= value.literal && is_integer(&value.text);
                    known &= value.literal || value.braces;
                    self.values.give_each(&clause.variable_name, &value);
                }
                // The body runs with one of the list's words, so a list of
                // known words leaves no unknown value there (`for f in
                // src/*.rs; do wc -l "$f"; done` reads the `.rs` files);
                // from a list with an unknown word (`for D in $E`) any value
                // may come. After the loop, it is as sure as before.
                let before = self.values.sure();
                match known {
                    true => self.values.be_sure(&clause.variable_name),
                    false => self.values.forget(&clause.variable_name),
                }
                // `for i in 1 2 3` sets `i` to integers; any other list
                // (or the arguments, without one) to what may be code.
                self.evaluated.loop_variables.push((
                    clause.variable_name.clone(),
                    integers && clause.values.is_some(),
                ));
                let walked = self.unsure_list(&clause.body.list);
                self.values.keep_sure(&before);
                walked
            }
            CompoundCommand::ArithmeticForClause(clause) => {
                for expr in [&clause.initializer, &clause.condition, &clause.updater]
                    .into_iter()
                    .flatten()
                {
                    self.arithmetic(&expr.value);
                }
                self.unsure_list(&clause.body.list)
            }
            CompoundCommand::CaseClause(clause) => {
                self.word(&clause.value.value)?;
                for case in &clause.cases {
                    if let Some(list) = &case.cmd {
                        self.unsure_list(list)?;
                    }
                }
                Ok(())
            }
            CompoundCommand::IfClause(clause) => {
                self.unsure_list(&clause.condition)?;
                self.unsure_list(&clause.then)?;
                for other in clause.elses.iter().flatten() {
                    if let Some(condition) = &other.condition {
                        self.unsure_list(condition)?;
                    }
                    self.unsure_list(&other.body)?;
                }
                Ok(())
            }
            CompoundCommand::WhileClause(clause) | CompoundCommand::UntilClause(clause) => {
                self.unsure_list(&clause.0)?;
                self.unsure_list(&clause.1.list)
            }
            CompoundCommand::Coprocess(coprocess) => {
                self.unsure(|walk| walk.command(&coprocess.body))
            }
            CompoundCommand::Arithmetic(arithmetic) => {
                if let Some(inner) = self.nested_subshell(arithmetic)? {
                    let outer = std::mem::replace(&mut self.source, inner);
                    let program = parse_program(&self.source, &self.options);
                    let walked = program.and_then(|program| {
                        program
                            .complete_commands
                            .iter()
                            .try_for_each(|list| self.unsure_list(list))
                    });
                    self.source = outer;
                    return walked;
                }
                self.arithmetic(&arithmetic.expr.value);
                Ok(())
            }
        }
    }

    /// `( (ls) )`, which the parser reads as arithmetic: bash reads `((`
    /// as arithmetic only when the two are adjacent; with a space between
    /// them it is a subshell in a subshell. The text inside the outer one.
    fn nested_subshell(
        &self,
        arithmetic: &ast::ArithmeticCommand,
    ) -> Result<Option<String>, ParseFailure> {
        let chars: Vec<char> = self.source.chars().collect();
        let (start, end) = (arithmetic.loc.start.index, arithmetic.loc.end.index);
        let spaced = chars.get(start) == Some(&'(')
            && chars.get(start + 1).is_some_and(|c| c.is_whitespace());
        if !spaced || end <= start + 1 || end > chars.len() {
            return Ok(None);
        }
        Ok(Some(chars[start + 1..end - 1].iter().collect()))
    }

    fn arithmetic(&mut self, text: &str) {
        self.evaluated.arithmetic.push(text.to_owned());
        if hides_command(text) {
            self.parts.push(Part {
                words: vec![Arg::literal("((")],
                opaque: Some("a command substitution inside an arithmetic expression".to_owned()),
                ..Part::default()
            });
        }
    }

    /// A simple command, judged once with the variables it reads unknown
    /// and once more for each combination of the values the script gave
    /// them before ([`Values`]): one part for each. The commands inside it
    /// (`$(...)`, `<(...)`) are walked once, in the first walk, with their
    /// own variants: walked again per value, nested ones multiplied.
    fn simple(&mut self, simple: &SimpleCommand) -> Result<(), ParseFailure> {
        self.values.start_command();
        let mut parts = vec![self.simple_part(simple)?];
        match self.values.variants() {
            Ok(variants) => {
                for choice in variants {
                    self.values.choose(choice);
                    parts.push(self.simple_part(simple)?);
                }
            }
            Err(count) => {
                parts[0].unjudgeable = Some(format!(
                    "a command whose variables this line gives {count} combinations of values (more than {MAX_VARIANTS} are not judged)"
                ));
            }
        }
        self.values.start_command();
        let appended: Vec<bool> = simple
            .prefix
            .iter()
            .flat_map(|p| p.0.iter())
            .flat_map(|item| match item {
                CommandPrefixOrSuffixItem::AssignmentWord(assignment, _) => {
                    match &assignment.value {
                        ast::AssignmentValue::Scalar(_) => vec![assignment.append],
                        ast::AssignmentValue::Array(elements) => vec![false; elements.len()],
                    }
                }
                _ => Vec::new(),
            })
            .collect();
        for part in &mut parts {
            self.values.remember(&part.words, &part.assigned, &appended);
            part.inherited = self.inherited_by(part);
        }
        // The first part is walked with what is unknown unknown.
        self.values
            .settle(&parts[0].words, &parts[0].assigned, &appended);
        for part in &parts {
            self.evaluated_values(part);
        }
        self.parts.extend(parts);
        Ok(())
    }

    /// For a command that runs a script (`bash -c`, `eval`, `trap`): the
    /// values that script sees, those the line gave so far with those of
    /// the command's own prefix and of `env NAME=value`.
    fn inherited_by(&self, part: &Part) -> Option<Values> {
        let unwrapped = unwrap(&part.words);
        let inner = match unwrapped.inner.is_empty() {
            true => &part.words[..],
            false => unwrapped.inner,
        };
        let _script = nested_script(inner)?;
        let mut values = self.values.inherited();
        for (name, value) in &part.assigned {
            values.give(name, value);
        }
        let wrapping = &part.words[..part.words.len() - inner.len()];
        for word in wrapping {
            if let Some((name, value)) = word.text.split_once('=')
                && is_name(name)
            {
                values.give(
                    name,
                    &Arg {
                        text: value.to_owned(),
                        ..word.clone()
                    },
                );
            }
        }
        Some(values)
    }

    /// `eval x=...` sets `x` for the rest of the line: the values its
    /// script gives are taken as the line's (its commands are judged by
    /// the policy, as a nested script).
    fn evaluated_values(&mut self, part: &Part) {
        if part.words.first().is_none_or(|word| word.text != "eval") {
            return;
        }
        let Some(Ok(script)) = nested_script(&part.words) else {
            return;
        };
        let Ok(inner) = walk(&script, self.depth + 1, self.values.inherited()) else {
            return;
        };
        for (name, values) in inner.values.all_given() {
            for value in values {
                self.values.give(name, value);
            }
        }
    }

    fn simple_part(&mut self, simple: &SimpleCommand) -> Result<Part, ParseFailure> {
        let mut part = Part::default();
        let mut redirects = Vec::new();
        // A prefix holds only assignments and redirections; the program name
        // comes next, then the arguments, so words keep their order.
        for item in simple.prefix.iter().flat_map(|p| p.0.iter()) {
            self.item(item, &mut part, &mut redirects, true)?;
        }
        if let Some(name) = &simple.word_or_name {
            let arg = self.word(&name.value)?;
            push_expanded(&mut part.words, arg);
        }
        for item in simple.suffix.iter().flat_map(|s| s.0.iter()) {
            self.item(item, &mut part, &mut redirects, false)?;
        }
        (part.writes, part.reads) = self.redirects_both(redirects.into_iter())?;
        part.stdin = std::mem::take(&mut self.here);
        Ok(part)
    }

    fn item<'i>(
        &mut self,
        item: &'i CommandPrefixOrSuffixItem,
        part: &mut Part,
        redirects: &mut Vec<&'i IoRedirect>,
        prefix: bool,
    ) -> Result<(), ParseFailure> {
        match item {
            // After the program, `a=b` is an argument (`dd of=/dev/sda`).
            CommandPrefixOrSuffixItem::Word(word)
            | CommandPrefixOrSuffixItem::AssignmentWord(_, word)
                if !prefix || matches!(item, CommandPrefixOrSuffixItem::Word(_)) =>
            {
                let arg = self.word(&word.value)?;
                push_expanded(&mut part.words, arg);
            }
            CommandPrefixOrSuffixItem::Word(_) => {}
            CommandPrefixOrSuffixItem::IoRedirect(redirect) => redirects.push(redirect),
            CommandPrefixOrSuffixItem::AssignmentWord(assignment, _) => {
                let name = match &assignment.name {
                    ast::AssignmentName::VariableName(name)
                    | ast::AssignmentName::ArrayElementName(name, _) => name.clone(),
                };
                // The value may hold `$(...)`: walk it for its commands.
                // An array's elements are each a value it holds.
                match &assignment.value {
                    ast::AssignmentValue::Scalar(value) => {
                        let value = self.word(&value.value)?;
                        part.assigned.push((name, value));
                    }
                    ast::AssignmentValue::Array(elements) => {
                        for (_, value) in elements {
                            let value = self.word(&value.value)?;
                            part.assigned.push((name.clone(), value));
                        }
                    }
                }
            }
            CommandPrefixOrSuffixItem::ProcessSubstitution(_, subshell) => {
                if let Some(printed) = self.substitution(subshell)? {
                    part.substituted.extend(printed);
                }
                // It becomes a `/dev/fd/N` path only known at run time.
                part.words.push(Arg::unknown("$(...)"));
            }
        }
        Ok(())
    }

    /// Walks the commands of a process substitution (in the first,
    /// unknown, variant only) and gives what they print when that is
    /// literal text: one command whose [`Stage::output`] is known.
    fn substitution(
        &mut self,
        subshell: &ast::SubshellCommand,
    ) -> Result<Option<Vec<String>>, ParseFailure> {
        if self.values.choosing() {
            return Ok(None);
        }
        let first = self.parts.len();
        let here = std::mem::take(&mut self.here);
        self.unsure_list(&subshell.list)?;
        self.here = here;
        Ok(match &self.parts[first..] {
            [only] => Stage {
                words: only.words.clone(),
                stdin: only.stdin.clone(),
            }
            .output(),
            _ => None,
        })
    }

    /// The files `redirects` write, and those they read.
    fn redirects_both<'r>(
        &mut self,
        redirects: impl Iterator<Item = &'r IoRedirect>,
    ) -> Result<(Vec<Arg>, Vec<Arg>), ParseFailure> {
        let mut writes = Vec::new();
        let mut reads = Vec::new();
        self.here.clear();
        for redirect in redirects {
            match redirect {
                IoRedirect::File(fd, kind, target) => {
                    self.descriptors_moved |= moves_descriptor(*fd, kind, target);
                    let writing = matches!(
                        kind,
                        IoFileRedirectKind::Write
                            | IoFileRedirectKind::Append
                            | IoFileRedirectKind::Clobber
                            | IoFileRedirectKind::ReadAndWrite
                            | IoFileRedirectKind::DuplicateOutput
                    );
                    match target {
                        IoFileRedirectTarget::Filename(word) => {
                            let arg = self.word(&word.value)?;
                            let reading = matches!(
                                kind,
                                IoFileRedirectKind::Read | IoFileRedirectKind::ReadAndWrite
                            );
                            if reading {
                                reads.push(arg.clone());
                            }
                            if writing {
                                writes.push(arg);
                            }
                        }
                        IoFileRedirectTarget::Duplicate(word) => {
                            // `>&2` duplicates a descriptor; `>& file` writes a file.
                            let arg = self.word(&word.value)?;
                            let descriptor =
                                arg.text.chars().all(|c| c.is_ascii_digit() || c == '-');
                            if writing && !descriptor {
                                writes.push(arg);
                            }
                        }
                        IoFileRedirectTarget::Fd(_) => {}
                        IoFileRedirectTarget::ProcessSubstitution(_, subshell) => {
                            let printed = self.substitution(subshell)?;
                            // `sh < <(echo TEXT)` reads the text on stdin.
                            if matches!(kind, IoFileRedirectKind::Read) {
                                self.here.extend(printed.into_iter().flatten().map(Some));
                            }
                        }
                    }
                }
                IoRedirect::OutputAndError(word, _) => {
                    let arg = self.word(&word.value)?;
                    writes.push(arg);
                }
                IoRedirect::HereString(_, word) => {
                    let arg = self.word(&word.value)?;
                    self.here
                        .push(arg.literal.then(|| format!("{}\n", arg.text)));
                }
                IoRedirect::HereDocument(_, doc) => {
                    let text = &doc.doc.value;
                    let expands = doc.requires_expansion && text.contains(['$', '`', '\\']);
                    self.here.push((!expands).then(|| text.clone()));
                    if doc.requires_expansion && hides_command(&doc.doc.value) {
                        let pieces =
                            brush_parser::word::parse_heredoc(&doc.doc.value, &self.options)
                                .map_err(|e| ParseFailure(format!("here-document: {e}")))?;
                        self.flatten(&pieces, true)?;
                    }
                }
            }
        }
        Ok((writes, reads))
    }

    /// Flattens one word, adding the commands of its substitutions to the parts.
    fn word(&mut self, raw: &str) -> Result<Arg, ParseFailure> {
        let pieces = brush_parser::word::parse(raw, &self.options)
            .map_err(|e| ParseFailure(format!("cannot read the word `{raw}`: {e}")))?;
        let mut arg = self.flatten(&pieces, false)?;
        let literal = literal_text(&pieces);
        if is_subscript_code(&literal) {
            self.evaluated.subscript_code = Some(format!(
                "the quoted name `{raw}`, whose subscript runs a command where bash reads it as a variable,"
            ));
        }
        if literal.contains("$(") || literal.contains('`') {
            self.evaluated.quoted_code.push(literal);
        }
        arg.pattern |= pieces
            .iter()
            .any(|p| matches!(&p.piece, WordPiece::Text(t) if t.contains(['*', '?', '['])));
        // The braces and the comma (or `..`) are bash's only unquoted, but
        // the alternatives may be quoted or expanded (`{'.env',x}`).
        let unquoted: String = pieces
            .iter()
            .filter_map(|p| match &p.piece {
                WordPiece::Text(t) => Some(t.as_str()),
                _ => None,
            })
            .collect();
        let braces = unquoted.contains('{')
            && unquoted.contains('}')
            && (unquoted.contains(',') || unquoted.contains(".."));
        if braces {
            // Brace expansion turns one word into several: not one literal
            // word, though each of them is known when the rest is.
            arg.braces = arg.literal;
            arg.literal = false;
        }
        Ok(arg)
    }

    /// `quoted`: the pieces are inside double quotes, where a variable's
    /// value is neither split into words nor matched as a pattern.
    fn flatten(
        &mut self,
        pieces: &[WordPieceWithSource],
        quoted: bool,
    ) -> Result<Arg, ParseFailure> {
        let mut arg = Arg::literal("");
        for piece in pieces {
            match &piece.piece {
                WordPiece::Text(text) | WordPiece::SingleQuotedText(text) => {
                    arg.text.push_str(text);
                }
                WordPiece::AnsiCQuotedText(text) => arg.text.push_str(&ansi_c_decoded(text)),
                WordPiece::EscapeSequence(text) => {
                    arg.text.push_str(text.strip_prefix('\\').unwrap_or(text));
                }
                WordPiece::DoubleQuotedSequence(inner)
                | WordPiece::GettextDoubleQuotedSequence(inner) => {
                    let inner = self.flatten(inner, true)?;
                    arg.text.push_str(&inner.text);
                    arg.literal &= inner.literal;
                    arg.derived |= inner.derived;
                    // A loop's pattern stands for the names it matched.
                    arg.pattern |= inner.pattern;
                }
                // A tilde's expansion is not split into words.
                WordPiece::TildeExpansion(TildeExpr::Home) => self.variable(&mut arg, "HOME", true),
                WordPiece::TildeExpansion(TildeExpr::WorkingDir) => {
                    self.variable(&mut arg, "PWD", true);
                }
                WordPiece::TildeExpansion(TildeExpr::OldWorkingDir) => {
                    self.variable(&mut arg, "OLDPWD", true);
                }
                WordPiece::TildeExpansion(TildeExpr::UserHome(name)) => {
                    arg.text.push_str(&users_home(name));
                }
                // A folder of the directory stack (`~+1`): unknown.
                WordPiece::TildeExpansion(_) => {
                    arg.text.push_str("~?");
                    arg.literal = false;
                }
                WordPiece::ParameterExpansion(expr) => self.parameter(&mut arg, expr, quoted),
                WordPiece::CommandSubstitution(script)
                | WordPiece::BackquotedCommandSubstitution(script) => {
                    if !self.values.choosing() {
                        let parts = parse_with(script, self.depth + 1, self.values.inherited())?;
                        let printed = match parts.as_slice() {
                            [only] => printed_once(only),
                            _ => None,
                        };
                        self.printed.insert(script.clone(), printed);
                        self.parts.extend(parts);
                    }
                    // What bash puts in: the text without its last
                    // newlines, split at blanks unless quoted (then it is
                    // not one word: unknown). ``rm -rf `echo /` `` and
                    // `rm -rf $(echo $HOME)` delete what they print.
                    let printed = self.printed.get(script).cloned().flatten();
                    let printed = printed
                        .map(|text| text.trim_end_matches('\n').to_owned())
                        .filter(|text| {
                            quoted
                                || !text.contains(|c: char| c.is_whitespace() || "*?[".contains(c))
                        });
                    // `$(pwd)` is `$PWD` (`rm -rf "$(pwd)"` deletes the
                    // workspace as surely).
                    if matches!(script.trim(), "pwd" | "pwd -L" | "pwd -P") {
                        arg.text.push_str(WORKING_DIRECTORY);
                    } else if let Some(printed) = printed {
                        arg.text.push_str(&printed);
                    } else {
                        arg.text.push_str("$(...)");
                        arg.literal = false;
                    }
                }
                WordPiece::ArithmeticExpression(expr) => {
                    self.arithmetic(&expr.value);
                    arg.text.push_str("$((...))");
                    arg.literal = false;
                }
            }
        }
        Ok(arg)
    }
}

/// What `part`, the one command of a substitution, prints when that is one
/// literal text ([`Stage::output`]; not an `echo` of escapes, which prints
/// either of two).
fn printed_once(part: &Part) -> Option<String> {
    let stage = Stage {
        words: part.words.clone(),
        stdin: part.stdin.clone(),
    };
    match stage.output()?.as_slice() {
        [text] => Some(text.clone()),
        _ => None,
    }
}

/// What an expansion with an operator makes of a value the line gives.
enum Expansion {
    /// This text, in the variant being walked.
    Known(Arg),
    /// Known only at run time; `derived` when made of a value the line
    /// gives by an operator the walk does not follow ([`Arg::derived`]).
    Unknown { derived: bool },
}

/// The key of [`Values::branch`] for a default's `${x:-word}` (all of a
/// command's defaults go together: each doubles the variants).
const DEFAULT_BRANCH: &str = "\u{0}default";

/// The key of [`Values::branch`] for splitting values at the `IFS` the
/// line sets.
const IFS_BRANCH: &str = "\u{0}IFS";

impl Walk {
    /// Puts `$name` into `arg`: in a variant with values, the one chosen
    /// (`quoted`: not split into words), else the name, unknown. `HOME`,
    /// `PWD` and `OLDPWD` are the places the policy tracks, unless the
    /// line sets them (then they are as any variable the line sets, and
    /// their inherited value one of the values).
    fn variable(&mut self, arg: &mut Arg, name: &str, quoted: bool) {
        if let Some(tracked) = self.tracked(name) {
            arg.text.push_str(tracked);
            return;
        }
        let split = self.splits(quoted, name);
        match self.values.lookup(name).cloned() {
            Some(value) => self.put(arg, &value, quoted, split),
            None => {
                arg.text.push('$');
                arg.text.push_str(name);
                arg.literal = false;
            }
        }
    }

    /// The marker of a place the policy tracks (`HOME`, `PWD`, `OLDPWD`),
    /// when the line does not set it (then it is as any variable the line
    /// sets, its inherited value one of the values).
    fn tracked(&self, name: &str) -> Option<&'static str> {
        inherited_value(name).filter(|_| !self.values.gives(name))
    }

    /// What a pattern or case operator makes of `value`, a value the line
    /// gives or a tracked place's marker. The home marker is worked on as
    /// the folder it stands for, when known (`${HOME%/}` is the home
    /// folder, and `rm -rf "${HOME%/}"` deleted it while judged as a
    /// folder named at run time); what an operator makes of a working
    /// directory (which a `cd` before moves) or of a user's home (looked
    /// up once the walk is done) is not followed, nor is an
    /// operator [`Walk::changed`] does not do on a place.
    fn changed_value(&self, expr: &ParameterExpr, value: Arg) -> Expansion {
        let holds = |marker: &str| value.text.contains(marker);
        let places = [
            HOME_DIRECTORY,
            WORKING_DIRECTORY,
            OLD_WORKING_DIRECTORY,
            USERS_HOME_START,
        ];
        if !places.into_iter().any(holds) {
            // Not the value itself: `F=a.env; cat ${F:1}` reads `.env`.
            return match self.changed(expr, &value.text) {
                Some(text) => Expansion::Known(Arg { text, ..value }),
                None => Expansion::Unknown { derived: true },
            };
        }
        let home = self.values.home();
        let (Some(home), false, false, false) = (
            home,
            holds(WORKING_DIRECTORY),
            holds(OLD_WORKING_DIRECTORY),
            holds(USERS_HOME_START),
        ) else {
            return Expansion::Unknown { derived: true };
        };
        let text = value.text.replace(HOME_DIRECTORY, home);
        match self.changed(expr, &text) {
            Some(changed) if changed == text => Expansion::Known(value),
            Some(changed) => Expansion::Known(Arg {
                text: changed,
                ..value
            }),
            None => Expansion::Unknown { derived: true },
        }
    }

    /// Whether the variant being walked splits the unquoted values of
    /// `name` at the characters of an `IFS` the line sets (bash does once
    /// the assignment ran, not before): a choice made in the variants, for
    /// the variables the line gives values.
    fn splits(&mut self, quoted: bool, name: &str) -> bool {
        let separators = self.separators();
        if quoted || separators.is_empty() || !self.values.gives(name) {
            return false;
        }
        self.values.branch(IFS_BRANCH, 2) == Some(1)
    }

    /// The characters other than blanks of the values the line gives `IFS`.
    fn separators(&self) -> String {
        self.values
            .given("IFS")
            .iter()
            .flat_map(|value| value.text.chars())
            .filter(|c| !c.is_whitespace())
            .collect()
    }

    /// Puts a known `value` into `arg`. Unquoted, bash splits it into
    /// words at blanks (and with `split`, at the line's `IFS`): one word
    /// cannot hold several, so it is then unknown.
    fn put(&mut self, arg: &mut Arg, value: &Arg, quoted: bool, split: bool) {
        let text = match (quoted, split) {
            (true, _) => Some(value.text.clone()),
            (false, false) => {
                (!value.text.contains(char::is_whitespace)).then(|| value.text.clone())
            }
            (false, true) => {
                let separators = self.separators();
                let mut fields = value
                    .text
                    .split(|c: char| c.is_whitespace() || separators.contains(c))
                    .filter(|field| !field.is_empty());
                match (fields.next(), fields.next()) {
                    (Some(one), None) => Some(one.to_owned()),
                    (None, _) => Some(String::new()),
                    _ => None,
                }
            }
        };
        match text {
            Some(text) => {
                arg.pattern |= value.pattern || (!quoted && super::expand::has_glob(&text));
                arg.text.push_str(&text);
            }
            None => {
                arg.text.push_str("${...}");
                arg.literal = false;
            }
        }
    }

    /// Puts a parameter expansion into `arg`: `$x` as [`Walk::variable`];
    /// one with an operator as [`Walk::operated`] makes it.
    fn parameter(&mut self, arg: &mut Arg, expr: &ParameterExpr, quoted: bool) {
        if let Some(name) = known_parameter(expr) {
            self.variable(arg, name, quoted);
            return;
        }
        self.evaluated_expansion(expr);
        let text = format!("{expr:?}");
        if hides_command(&text) {
            self.parts.push(Part {
                words: vec![Arg::literal("${")],
                opaque: Some("a command substitution inside a parameter expansion".to_owned()),
                ..Part::default()
            });
        }
        match self.operated(expr) {
            Expansion::Known(value) => {
                let split = !quoted
                    && parameter_of(expr)
                        .and_then(parameter_name)
                        .is_some_and(|name| self.splits(quoted, name));
                self.put(arg, &value, quoted, split);
            }
            Expansion::Unknown { derived } => {
                // `${X:?}` stops the command when `X` is empty or unset:
                // `rm -rf "${X:?}"/` never deletes `/`.
                let never_empty = matches!(
                    expr,
                    ParameterExpr::IndicateErrorIfNullOrUnset {
                        test_type: ParameterTestType::UnsetOrNull,
                        ..
                    }
                );
                arg.text
                    .push_str(if never_empty { NEVER_EMPTY } else { "${...}" });
                arg.literal = false;
                arg.derived |= derived;
            }
        }
    }

    /// What an expansion with an operator makes of the values the line
    /// gives its variable, in the variant being walked. A default
    /// (`${x:-w}`, `${x:=w}`) is the value or the word, an alternative
    /// (`${x:+w}`) empty or the word: a choice the variants make. Removing
    /// or replacing a pattern of plain text and changing case are done
    /// here; any other operator (a pattern with `*`, a substring, a
    /// transformation) gives the value unchanged in the variants, and the
    /// unknown variant is [`Arg::derived`]: what it makes is not followed.
    fn operated(&mut self, expr: &ParameterExpr) -> Expansion {
        use ParameterExpr as E;
        let Some(parameter) = parameter_of(expr) else {
            return Expansion::Unknown { derived: false };
        };
        let Some(name) = parameter_name(parameter) else {
            return Expansion::Unknown { derived: false };
        };
        if is_indirect(expr) {
            return Expansion::Unknown { derived: false };
        }
        let name = name.to_owned();
        let given = self.values.gives(&name);
        // `"${a[*]}"` joins the elements with `IFS`'s first character.
        let joined = matches!(
            parameter,
            Parameter::NamedWithAllIndices {
                concatenate: true,
                ..
            }
        );
        let tracked = self.tracked(&name);
        let value = |walk: &mut Self| match tracked
            .map(Arg::literal)
            .or_else(|| walk.values.lookup(&name).cloned())
        {
            Some(value) if !joined => Expansion::Known(value),
            Some(_) => Expansion::Unknown { derived: true },
            None => Expansion::Unknown {
                derived: given && joined,
            },
        };
        match expr {
            E::Parameter { .. } | E::IndicateErrorIfNullOrUnset { .. } => value(self),
            E::UseDefaultValues { default_value, .. }
            | E::AssignDefaultValues { default_value, .. } => {
                if matches!(expr, E::AssignDefaultValues { .. })
                    && !self.values.choosing()
                    && let Some(word) = default_value
                    && let Ok(word) = self.word(word)
                {
                    self.values.give(&name, &word);
                }
                match self.values.branch(DEFAULT_BRANCH, 2) {
                    Some(0) => value(self),
                    Some(_) => self.default_word(default_value.as_deref()),
                    // Noted as read, so that the variants give it its
                    // values: `rm -rf ${HOME:=/x}` is the home folder.
                    None => {
                        self.values.lookup(&name);
                        Expansion::Unknown { derived: false }
                    }
                }
            }
            E::UseAlternativeValue {
                alternative_value, ..
            } => match self.values.branch(DEFAULT_BRANCH, 2) {
                Some(0) => Expansion::Known(Arg::literal("")),
                Some(_) => self.default_word(alternative_value.as_deref()),
                None => Expansion::Unknown { derived: false },
            },
            E::ParameterLength { .. } | E::VariableNames { .. } | E::MemberKeys { .. } => {
                Expansion::Unknown { derived: false }
            }
            _ => match value(self) {
                Expansion::Known(value) => self.changed_value(expr, value),
                Expansion::Unknown { .. } => Expansion::Unknown { derived: given },
            },
        }
    }

    /// The word of a default or alternative as the variant makes it.
    fn default_word(&mut self, word: Option<&str>) -> Expansion {
        let Some(word) = word else {
            return Expansion::Known(Arg::literal(""));
        };
        match self.word(word) {
            Ok(word) if word.literal => Expansion::Known(word),
            _ => Expansion::Unknown { derived: false },
        }
    }

    /// What a pattern or case operator makes of `value`, where it is
    /// plain text; `None` for any other.
    fn changed(&self, expr: &ParameterExpr, value: &str) -> Option<String> {
        use ParameterExpr as E;
        let plain = |pattern: &Option<String>| match pattern {
            Some(pattern) => plain_text(pattern, &self.options),
            None => Some(String::new()),
        };
        match expr {
            E::RemoveSmallestSuffixPattern { pattern, .. }
            | E::RemoveLargestSuffixPattern { pattern, .. } => {
                let pattern = plain(pattern)?;
                Some(value.strip_suffix(&pattern).unwrap_or(value).to_owned())
            }
            E::RemoveSmallestPrefixPattern { pattern, .. }
            | E::RemoveLargestPrefixPattern { pattern, .. } => {
                let pattern = plain(pattern)?;
                Some(value.strip_prefix(&pattern).unwrap_or(value).to_owned())
            }
            E::ReplaceSubstring {
                pattern,
                replacement,
                match_kind,
                ..
            } => {
                let pattern = plain_text(pattern, &self.options)?;
                let replacement = plain(replacement)?;
                if pattern.is_empty() {
                    return Some(value.to_owned());
                }
                Some(match match_kind {
                    SubstringMatchKind::Prefix => match value.strip_prefix(&pattern) {
                        Some(rest) => format!("{replacement}{rest}"),
                        None => value.to_owned(),
                    },
                    SubstringMatchKind::Suffix => match value.strip_suffix(&pattern) {
                        Some(rest) => format!("{rest}{replacement}"),
                        None => value.to_owned(),
                    },
                    SubstringMatchKind::FirstOccurrence => {
                        value.replacen(&pattern, &replacement, 1)
                    }
                    SubstringMatchKind::Anywhere => value.replace(&pattern, &replacement),
                })
            }
            // `${x^^}` and `${x,,}` (a pattern other than none or `?`
            // changes some characters only).
            E::UppercasePattern { pattern, .. } if any_character(pattern) => {
                Some(value.to_uppercase())
            }
            E::LowercasePattern { pattern, .. } if any_character(pattern) => {
                Some(value.to_lowercase())
            }
            E::UppercaseFirstChar { pattern, .. } | E::LowercaseFirstChar { pattern, .. }
                if any_character(pattern) =>
            {
                let mut chars = value.chars();
                let first = chars.next().map_or(String::new(), |c| {
                    match matches!(expr, E::UppercaseFirstChar { .. }) {
                        true => c.to_uppercase().collect(),
                        false => c.to_lowercase().collect(),
                    }
                });
                Some(first + chars.as_str())
            }
            _ => None,
        }
    }

    /// Notes what a parameter expansion evaluates: a subscript or a
    /// substring's bounds (arithmetic), a name read from a value (`${!x}`),
    /// a value expanded as a prompt (`${x@P}`).
    fn evaluated_expansion(&mut self, expr: &ParameterExpr) {
        // Every variant but these two says `indirect`.
        let debug = format!("{expr:?}");
        if debug.contains("indirect: true") {
            self.evaluated.expansion = Some(
                "`${!...}` (a variable named by another's value, its subscript evaluated)"
                    .to_owned(),
            );
        }
        if debug.contains("PromptExpand") {
            self.evaluated.expansion =
                Some("`${...@P}` (a value expanded as a prompt, its substitutions run)".to_owned());
        }
        if let ParameterExpr::Substring { offset, length, .. } = expr {
            self.evaluated.arithmetic.push(offset.value.clone());
            if let Some(length) = length {
                self.evaluated.arithmetic.push(length.value.clone());
            }
        }
        if let Some(Parameter::NamedWithIndex { index, .. }) = parameter_of(expr) {
            self.evaluated.arithmetic.push(index.clone());
        }
    }
}

/// The variable a parameter names (`x`, `x[1]`, `x[@]`); `None` for a
/// positional or special one.
fn parameter_name(parameter: &Parameter) -> Option<&str> {
    match parameter {
        Parameter::Named(name)
        | Parameter::NamedWithIndex { name, .. }
        | Parameter::NamedWithAllIndices { name, .. } => Some(name),
        Parameter::Positional(_) | Parameter::Special(_) => None,
    }
}

/// Whether an expansion reads the variable its parameter's value names
/// (`${!x}`, `${!x%y}`).
fn is_indirect(expr: &ParameterExpr) -> bool {
    format!("{expr:?}").contains("indirect: true")
}

/// The text a pattern or replacement word stands for when it is plain:
/// no `*`, `?` or `[` unquoted, no expansion. `None` otherwise.
fn plain_text(raw: &str, options: &ParserOptions) -> Option<String> {
    let pieces = brush_parser::word::parse(raw, options).ok()?;
    let mut text = String::new();
    for piece in &pieces {
        match &piece.piece {
            WordPiece::Text(t) if !super::expand::has_glob(t) => text.push_str(t),
            WordPiece::SingleQuotedText(t) => text.push_str(t),
            WordPiece::EscapeSequence(t) => text.push_str(t.strip_prefix('\\').unwrap_or(t)),
            WordPiece::DoubleQuotedSequence(inner)
                if inner.iter().all(|p| {
                    matches!(p.piece, WordPiece::Text(_) | WordPiece::EscapeSequence(_))
                }) =>
            {
                text.push_str(&literal_text(inner));
            }
            _ => return None,
        }
    }
    Some(text)
}

/// Whether a case operator's pattern matches every character: none, or `?`.
fn any_character(pattern: &Option<String>) -> bool {
    matches!(pattern.as_deref(), None | Some("" | "?"))
}

/// The parameter an expansion reads; `None` for `${!prefix*}` and `${!a[@]}`.
fn parameter_of(expr: &ParameterExpr) -> Option<&Parameter> {
    use ParameterExpr as E;
    match expr {
        E::Parameter { parameter, .. }
        | E::UseDefaultValues { parameter, .. }
        | E::AssignDefaultValues { parameter, .. }
        | E::IndicateErrorIfNullOrUnset { parameter, .. }
        | E::UseAlternativeValue { parameter, .. }
        | E::ParameterLength { parameter, .. }
        | E::RemoveSmallestSuffixPattern { parameter, .. }
        | E::RemoveLargestSuffixPattern { parameter, .. }
        | E::RemoveSmallestPrefixPattern { parameter, .. }
        | E::RemoveLargestPrefixPattern { parameter, .. }
        | E::Substring { parameter, .. }
        | E::Transform { parameter, .. }
        | E::UppercaseFirstChar { parameter, .. }
        | E::UppercasePattern { parameter, .. }
        | E::LowercaseFirstChar { parameter, .. }
        | E::LowercasePattern { parameter, .. }
        | E::ReplaceSubstring { parameter, .. } => Some(parameter),
        E::VariableNames { .. } | E::MemberKeys { .. } => None,
    }
}

/// The text of a word's literal pieces (quoted or not), without what
/// expansions would put there: `'a['"\$(rm)"']'` is `a[$(rm)]`.
fn literal_text(pieces: &[WordPieceWithSource]) -> String {
    let mut text = String::new();
    for piece in pieces {
        match &piece.piece {
            WordPiece::Text(t) | WordPiece::SingleQuotedText(t) => text.push_str(t),
            WordPiece::AnsiCQuotedText(t) => text.push_str(&ansi_c_decoded(t)),
            WordPiece::EscapeSequence(t) => text.push_str(t.strip_prefix('\\').unwrap_or(t)),
            WordPiece::DoubleQuotedSequence(inner)
            | WordPiece::GettextDoubleQuotedSequence(inner) => text.push_str(&literal_text(inner)),
            _ => {}
        }
    }
    text
}

/// Adds `arg` to a command's words as bash would: a word known but for
/// its braces becomes the words they expand to (`{rm,-rf,/}` is `rm -rf
/// /`, and the empty ones go), so rules and lists judge the command that
/// runs; any other word as it is.
fn push_expanded(words: &mut Vec<Arg>, arg: Arg) {
    let expanded = arg.braces.then(|| arg.expansions()).flatten();
    let Some(expanded) = expanded else {
        words.push(arg);
        return;
    };
    words.extend(
        expanded
            .into_iter()
            .filter(|text| !text.is_empty())
            .map(|text| Arg {
                pattern: arg.pattern && super::expand::has_glob(&text),
                ..Arg::literal(&text)
            }),
    );
}

/// The text of `$'...'` as bash makes it: its escapes decoded (`$'\x72m'`
/// is `rm`, `$'\x2eenv'` is `.env`), up to a NUL, which ends it. A byte
/// past ASCII (`\xff`) stands as the character of that number.
fn ansi_c_decoded(raw: &str) -> String {
    let mut out = String::new();
    let mut chars = raw.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let Some(escape) = chars.next() else {
            out.push('\\');
            break;
        };
        let decoded = match escape {
            letter if control_escape(letter).is_some() => control_escape(letter),
            '\\' | '\'' | '"' | '?' => Some(escape),
            'c' => chars.next().map(|x| char::from((x as u8) & 0x1f)),
            // `\x{2e}`: as many digits as the braces hold.
            'x' if chars.peek() == Some(&'{') => {
                chars.next();
                let value = digits(&mut chars, 16, 8, None);
                if chars.peek() == Some(&'}') {
                    chars.next();
                }
                value.and_then(char::from_u32)
            }
            'x' => digits(&mut chars, 16, 2, None).and_then(char::from_u32),
            'u' => digits(&mut chars, 16, 4, None).and_then(char::from_u32),
            'U' => digits(&mut chars, 16, 8, None).and_then(char::from_u32),
            '0'..='7' => digits(&mut chars, 8, 2, escape.to_digit(8)).and_then(char::from_u32),
            other => {
                out.push('\\');
                Some(other)
            }
        };
        match decoded {
            Some('\0') => break,
            Some(c) => out.push(c),
            None => {}
        }
    }
    out
}

/// The control character a C-style escape letter stands for (`\n`, `\t`,
/// `\e`, ...), as `$'...'`, printf and `echo -e` read them alike.
pub(super) fn control_escape(letter: char) -> Option<char> {
    Some(match letter {
        'a' => '\u{7}',
        'b' => '\u{8}',
        'e' | 'E' => '\u{1b}',
        'f' => '\u{c}',
        'n' => '\n',
        'r' => '\r',
        't' => '\t',
        'v' => '\u{b}',
        _ => return None,
    })
}

/// A number read from up to `most` more digits of `radix` after `start`
/// (a first digit already read); `None` when there is no digit at all.
pub(super) fn digits(
    chars: &mut std::iter::Peekable<std::str::Chars<'_>>,
    radix: u32,
    most: usize,
    start: Option<u32>,
) -> Option<u32> {
    let mut value = start;
    for _ in 0..most {
        let Some(digit) = chars.peek().and_then(|c| c.to_digit(radix)) else {
            break;
        };
        value = Some(value.unwrap_or(0) * radix + digit);
        chars.next();
    }
    value
}

/// The name of a plain `$NAME`/`${NAME}` expansion; `None` for anything with
/// an operator (`${X:-...}`, `${#X}`, ...).
fn known_parameter(expr: &ParameterExpr) -> Option<&str> {
    match expr {
        ParameterExpr::Parameter {
            parameter: Parameter::Named(name),
            indirect: false,
        } => Some(name),
        _ => None,
    }
}

/// True when `text` may run a command when expanded.
fn hides_command(text: &str) -> bool {
    text.contains("$(") || text.contains('`') || text.contains("<(") || text.contains(">(")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nesting_is_counted_as_bash_reads_it() {
        assert_eq!(lexed_depth("ls"), 0);
        assert_eq!(lexed_depth("{ ( ls ); }"), 2);
        assert_eq!(lexed_depth("echo \"$(echo \"${x:-$(pwd)}\")\""), 5);
        assert_eq!(lexed_depth("echo $(( (1 + 2) * 3 ))"), 2);
        assert_eq!(lexed_depth("if true; then while x; do :; done; fi"), 2);
        // Quotes, comments and here-documents hold no nesting.
        assert_eq!(lexed_depth("echo '((((' \"((((\" # ((((\nls"), 1);
        assert_eq!(lexed_depth("cat <<'E'\n((((\nE\nls"), 0);
        // A `case` pattern's `)` closes nothing.
        assert_eq!(lexed_depth("case x in a) { ls; } ;; esac"), 2);
    }

    #[test]
    fn a_closing_one_count_misreads_does_not_hide_a_nesting() {
        // Quoted closings cancel nothing in the count that reads quotes ...
        let quoted = format!("{}ls{}", "( echo ')'; ".repeat(200), ")".repeat(200));
        assert!(too_deep(&quoted).is_some());
        // ... and a quote misread (a `'` in a here-document) hides nothing
        // from the count that reads none.
        let heredoc = format!("cat <<E\n'\nE\n{}ls{}", "{ ".repeat(200), "; }".repeat(200));
        assert!(too_deep(&heredoc).is_some());
        let braces = format!("{}ls{}", "{ echo }}; ".repeat(200), "; }".repeat(200));
        assert!(too_deep(&braces).is_some());
        assert!(too_deep("{ { ( ls ) } } && echo \"$(echo \"$(pwd)\")\"").is_none());
    }
}
