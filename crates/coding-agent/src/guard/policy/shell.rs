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
//! (`commands.rs`) parses their literal script again with [`parse`].

use brush_parser::ast::{
    Command, CommandPrefixOrSuffixItem, CompoundCommand, CompoundList, IoFileRedirectKind,
    IoFileRedirectTarget, IoRedirect, Pipeline, SimpleCommand,
};
use brush_parser::word::{Parameter, ParameterExpr, TildeExpr, WordPiece, WordPieceWithSource};
use brush_parser::{ParserOptions, ast};

use super::evaluated::{Evaluated, is_integer, is_subscript_code};
use super::variables::Values;

/// What a word holds for the working directory (`$PWD`, `$(pwd)`, `~+`):
/// no word of bash holds a NUL, so it stands for nothing else.
pub const WORKING_DIRECTORY: &str = "\u{0}PWD\u{0}";

/// What a word holds for the previous working directory (`~-`,
/// `$OLDPWD`): the policy puts the folder a `cd` before it left in its
/// place, or takes the word as unknown when no `cd` came first.
pub const OLD_WORKING_DIRECTORY: &str = "\u{0}OLDPWD\u{0}";

/// How deep substitutions and `bash -c` strings may nest before the policy
/// stops looking and asks (a model never needs more; a crafted input might).
pub const MAX_DEPTH: usize = 8;

/// One word of a command, as far as it is known before running it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Arg {
    /// The text the command would receive: quotes removed, `~`/`$HOME` as
    /// `~`, `$PWD` as the working directory; unknown parts as `$NAME` or `$(...)`.
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
}

impl Arg {
    /// A literal word (tests and wrappers build these).
    pub fn literal(text: &str) -> Self {
        Self {
            text: text.to_owned(),
            literal: true,
            pattern: false,
            braces: false,
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
    fn unknown(text: &str) -> Self {
        Self {
            literal: false,
            ..Self::literal(text)
        }
    }

    /// The word as it reads when every part known only at run time is
    /// empty (`$E` in `git $E push`, `$IFS` in `push$IFS`): what a deny or
    /// ask rule must also be matched against, since `$E` may well be empty.
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
    pub upstream: Vec<Vec<Arg>>,
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
    parse_with(script, depth, Values::default())
}

/// [`parse`] for a script that runs inside another (`$(...)`), which
/// sees the values the outer one gave its variables before it.
fn parse_with(script: &str, depth: usize, values: Values) -> Result<Vec<Part>, ParseFailure> {
    if depth > MAX_DEPTH {
        return Err(ParseFailure(format!(
            "commands nested more than {MAX_DEPTH} levels deep"
        )));
    }
    let options = ParserOptions::default();
    let program = std::panic::catch_unwind(|| {
        brush_parser::Parser::new(std::io::Cursor::new(script), &options).parse_program()
    })
    .map_err(|_| ParseFailure("the shell parser failed on this command".to_owned()))?
    .map_err(|e| ParseFailure(format!("bash syntax error: {e}")))?;
    let mut walk = Walk {
        parts: Vec::new(),
        depth,
        options,
        descriptors_moved: false,
        evaluated: Evaluated::default(),
        values,
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
    let mut parts = walk.parts;
    for part in &mut parts {
        part.descriptors_moved |= moved;
    }
    Ok(parts)
}

struct Walk {
    parts: Vec<Part>,
    depth: usize,
    options: ParserOptions,
    /// A redirection of this script moves a descriptor ([`Part::descriptors_moved`]).
    descriptors_moved: bool,
    /// What bash evaluates of values (arithmetic, names, expansions).
    evaluated: Evaluated,
    /// The values the script has given its variables so far.
    values: Values,
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
    fn list(&mut self, list: &CompoundList) -> Result<(), ParseFailure> {
        for item in &list.0 {
            self.pipeline(&item.0.first)?;
            for next in &item.0.additional {
                match next {
                    ast::AndOr::And(p) | ast::AndOr::Or(p) => self.pipeline(p)?,
                }
            }
        }
        Ok(())
    }

    fn pipeline(&mut self, pipeline: &Pipeline) -> Result<(), ParseFailure> {
        let mut upstream: Vec<Vec<Arg>> = Vec::new();
        for command in &pipeline.seq {
            let first = self.parts.len();
            self.command(command)?;
            let mut stage_words = Vec::new();
            for part in &mut self.parts[first..] {
                part.upstream.extend(upstream.iter().cloned());
                if stage_words.is_empty() {
                    stage_words = part.words.clone();
                }
            }
            upstream.push(stage_words);
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
                let first = self.parts.len();
                let body = &function.body;
                let (writes, reads) =
                    self.redirects_both(body.1.iter().flat_map(|r| r.0.iter()))?;
                self.compound(&body.0)?;
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
            CompoundCommand::Subshell(subshell) => self.list(&subshell.list),
            CompoundCommand::ForClause(clause) => {
                let mut integers = true;
                for word in clause.values.iter().flatten() {
                    let value = self.word(&word.value)?;
                    integers &= value.literal && is_integer(&value.text);
                    self.values.give_each(&clause.variable_name, &value);
                }
                // `for i in 1 2 3` sets `i` to integers; any other list
                // (or the arguments, without one) to what may be code.
                self.evaluated.loop_variables.push((
                    clause.variable_name.clone(),
                    integers && clause.values.is_some(),
                ));
                self.list(&clause.body.list)
            }
            CompoundCommand::ArithmeticForClause(clause) => {
                for expr in [&clause.initializer, &clause.condition, &clause.updater]
                    .into_iter()
                    .flatten()
                {
                    self.arithmetic(&expr.value);
                }
                self.list(&clause.body.list)
            }
            CompoundCommand::CaseClause(clause) => {
                self.word(&clause.value.value)?;
                for case in &clause.cases {
                    if let Some(list) = &case.cmd {
                        self.list(list)?;
                    }
                }
                Ok(())
            }
            CompoundCommand::IfClause(clause) => {
                self.list(&clause.condition)?;
                self.list(&clause.then)?;
                for other in clause.elses.iter().flatten() {
                    if let Some(condition) = &other.condition {
                        self.list(condition)?;
                    }
                    self.list(&other.body)?;
                }
                Ok(())
            }
            CompoundCommand::WhileClause(clause) | CompoundCommand::UntilClause(clause) => {
                self.list(&clause.0)?;
                self.list(&clause.1.list)
            }
            CompoundCommand::Coprocess(coprocess) => self.command(&coprocess.body),
            CompoundCommand::Arithmetic(arithmetic) => {
                self.arithmetic(&arithmetic.expr.value);
                Ok(())
            }
        }
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
                parts[0].opaque = Some(format!(
                    "a command whose variables this line gives {count} combinations of values"
                ));
            }
        }
        self.values.start_command();
        let appended: Vec<bool> = simple
            .prefix
            .iter()
            .flat_map(|p| p.0.iter())
            .filter_map(|item| match item {
                CommandPrefixOrSuffixItem::AssignmentWord(_, word) => Some(
                    word.value
                        .split_once('=')
                        .is_some_and(|(name, _)| name.ends_with('+')),
                ),
                _ => None,
            })
            .collect();
        for part in &parts {
            self.values.remember(&part.words, &part.assigned, &appended);
        }
        self.parts.extend(parts);
        Ok(())
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
            CommandPrefixOrSuffixItem::AssignmentWord(_, word) => {
                let (name, value) = word.value.split_once('=').unwrap_or((&word.value, ""));
                // The value may hold `$(...)`: walk it for its commands.
                let value = self.word(value)?;
                part.assigned
                    .push((name.trim_end_matches('+').to_owned(), value));
            }
            CommandPrefixOrSuffixItem::ProcessSubstitution(_, subshell) => {
                if !self.values.choosing() {
                    self.list(&subshell.list)?;
                }
                // It becomes a `/dev/fd/N` path only known at run time.
                part.words.push(Arg::unknown("$(...)"));
            }
        }
        Ok(())
    }

    /// The files `redirects` write, and those they read.
    fn redirects_both<'r>(
        &mut self,
        redirects: impl Iterator<Item = &'r IoRedirect>,
    ) -> Result<(Vec<Arg>, Vec<Arg>), ParseFailure> {
        let mut writes = Vec::new();
        let mut reads = Vec::new();
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
                            if !self.values.choosing() {
                                self.list(&subshell.list)?;
                            }
                        }
                    }
                }
                IoRedirect::OutputAndError(word, _) => {
                    let arg = self.word(&word.value)?;
                    writes.push(arg);
                }
                IoRedirect::HereString(_, word) => {
                    self.word(&word.value)?;
                }
                IoRedirect::HereDocument(_, doc) => {
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
                    // A loop's pattern stands for the names it matched.
                    arg.pattern |= inner.pattern;
                }
                WordPiece::TildeExpansion(TildeExpr::Home) => arg.text.push('~'),
                WordPiece::TildeExpansion(TildeExpr::WorkingDir) => {
                    arg.text.push_str(WORKING_DIRECTORY)
                }
                WordPiece::TildeExpansion(TildeExpr::OldWorkingDir) => {
                    arg.text.push_str(OLD_WORKING_DIRECTORY);
                }
                WordPiece::TildeExpansion(_) => {
                    arg.text.push_str("~?");
                    arg.literal = false;
                }
                WordPiece::ParameterExpansion(expr) => match known_parameter(expr) {
                    Some("HOME") => arg.text.push('~'),
                    Some("PWD") => arg.text.push_str(WORKING_DIRECTORY),
                    Some("OLDPWD") => arg.text.push_str(OLD_WORKING_DIRECTORY),
                    Some(name) => match self.values.lookup(name) {
                        // Unquoted, a value with blanks becomes several
                        // words, which one word cannot hold: left unknown.
                        Some(value) if quoted || !value.text.contains(char::is_whitespace) => {
                            arg.text.push_str(&value.text);
                            arg.pattern |=
                                value.pattern || (!quoted && super::expand::has_glob(&value.text));
                        }
                        _ => {
                            arg.text.push('$');
                            arg.text.push_str(name);
                            arg.literal = false;
                        }
                    },
                    None => {
                        arg.text.push_str("${...}");
                        arg.literal = false;
                        self.evaluated_expansion(expr);
                        let text = format!("{expr:?}");
                        if hides_command(&text) {
                            self.parts.push(Part {
                                words: vec![Arg::literal("${")],
                                opaque: Some(
                                    "a command substitution inside a parameter expansion"
                                        .to_owned(),
                                ),
                                ..Part::default()
                            });
                        }
                    }
                },
                WordPiece::CommandSubstitution(script)
                | WordPiece::BackquotedCommandSubstitution(script) => {
                    if !self.values.choosing() {
                        let parts = parse_with(script, self.depth + 1, self.values.inherited())?;
                        self.parts.extend(parts);
                    }
                    // `$(pwd)` is `$PWD` (`rm -rf "$(pwd)"` deletes the
                    // workspace as surely).
                    if matches!(script.trim(), "pwd" | "pwd -L" | "pwd -P") {
                        arg.text.push_str(WORKING_DIRECTORY);
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

impl Walk {
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
            'a' => Some('\u{7}'),
            'b' => Some('\u{8}'),
            'e' | 'E' => Some('\u{1b}'),
            'f' => Some('\u{c}'),
            'n' => Some('\n'),
            'r' => Some('\r'),
            't' => Some('\t'),
            'v' => Some('\u{b}'),
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

/// A number read from up to `most` more digits of `radix` after `start`
/// (a first digit already read); `None` when there is no digit at all.
fn digits(
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
