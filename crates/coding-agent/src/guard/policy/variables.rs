//! The values a command line gives its own variables, so that
//! `F=.env; cat $F` is judged as reading `.env` and `x=/; rm -rf $x` as
//! deleting `/`.
//!
//! A variable's value is known before running only where the line itself
//! sets it (`F=.env`, `export F=.env`, `for F in a b`). Even then the walk
//! cannot tell which of its values a later command sees: a branch may skip
//! an assignment, a loop may run one after the use, `read F` sets it from
//! input, and the value bash inherited stands until the first assignment
//! runs. So a command that reads such a variable is judged as it always
//! was, with the variable unknown, and once more for each combination of
//! the values the line gave its variables before it. The policy keeps the
//! strictest verdict, so knowing a value can only tighten a decision.
//!
//! Unknown is taken as possibly empty (`rm -rf "$D"/*` may be `rm -rf
//! /*`), which a variable the line surely set is not: where an assignment
//! of a known value surely ran first (not in a branch, a loop, a subshell
//! or after `||`, and not undone by `unset`, `read` or a function), the
//! first, unknown, variant takes one of its values instead.

use std::collections::{BTreeSet, HashMap};

use super::shell::{Arg, HOME_DIRECTORY, OLD_WORKING_DIRECTORY, WORKING_DIRECTORY};

/// How many combinations of values one command is judged with; a line
/// that gives the variables of one command more is asked about instead
/// (only a crafted line gets there).
pub const MAX_VARIANTS: usize = 16;

/// The builtins whose `NAME=value` arguments set variables as an
/// assignment does.
const DECLARING: [&str; 5] = ["export", "declare", "typeset", "local", "readonly"];

/// The builtins that set or unset the variables their arguments name.
const SETTING: [&str; 12] = [
    "export",
    "declare",
    "typeset",
    "local",
    "readonly",
    "unset",
    "read",
    "readarray",
    "mapfile",
    "getopts",
    "printf",
    "let",
];

/// What the walk knows of variables so far: every value given to each.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Values {
    /// Each variable's values in the order the line gives them, each once.
    given: HashMap<String, Vec<Arg>>,
    /// Choices an expansion makes that no variable holds, each with how
    /// many ways it goes: `${x:-w}` is `x`'s value or `w`, and a value
    /// split by an `IFS` the line sets is split or not. Chosen as
    /// variables are.
    branches: HashMap<String, usize>,
    /// The value to use for each variable while one variant of a command
    /// is walked; empty while its first, unknown, variant is.
    chosen: HashMap<String, usize>,
    /// The variables with values that the current command reads.
    read: BTreeSet<String>,
    /// The home folder bash inherits in `HOME`, when known: what an
    /// operator makes of `$HOME` (`${HOME%/}`) is worked out on it.
    home: Option<String>,
    /// The variables an assignment surely ran for before the command
    /// walked, each to a value the line gives: `D=out; rm -rf "$D"/*`
    /// cannot see `D` unset, and its unknown variant (`rm -rf /*`) had
    /// that line refused in every mode.
    sure: BTreeSet<String>,
    /// How many constructs the walk is inside whose commands may not run
    /// or run in a subshell (a branch, a loop, a pipeline, `( )`, `&`):
    /// an assignment there is not sure ([`Values::unsure`]).
    unsure: usize,
    /// The functions the line defines: calling one may run any assignment.
    functions: BTreeSet<String>,
}

impl Values {
    /// No values given yet, in a shell whose `HOME` is `home`.
    pub fn at_home(home: Option<&str>) -> Self {
        Self {
            home: home.map(str::to_owned),
            ..Self::default()
        }
    }

    /// The home folder bash inherits, when known.
    pub fn home(&self) -> Option<&str> {
        self.home.as_deref()
    }

    /// The values a nested script (`$(...)`) starts with: those given so far.
    pub fn inherited(&self) -> Self {
        Self {
            given: self.given.clone(),
            home: self.home.clone(),
            ..Self::default()
        }
    }

    /// True when the line gives `name` a value (the walk follows it).
    pub fn gives(&self, name: &str) -> bool {
        self.given.contains_key(name)
    }

    /// The values the line gives `name`, in order.
    pub fn given(&self, name: &str) -> &[Arg] {
        self.given.get(name).map_or(&[], Vec::as_slice)
    }

    /// Every variable the line gives values, with them (a nested walk's
    /// values taken back, as `eval x=...` sets `x` for the line).
    pub fn all_given(&self) -> impl Iterator<Item = (&str, &[Arg])> {
        self.given
            .iter()
            .map(|(name, values)| (name.as_str(), values.as_slice()))
    }

    /// Which of `count` ways the choice `key` goes in the variant being
    /// walked; `None` while the unknown variant is (the choice is then
    /// noted, to be made in the next variants).
    pub fn branch(&mut self, key: &str, count: usize) -> Option<usize> {
        self.branches.entry(key.to_owned()).or_insert(count);
        match self.chosen.get(key) {
            Some(&at) => Some(at),
            None => {
                self.read.insert(key.to_owned());
                None
            }
        }
    }

    /// Starts walking a new command: no variable read yet, none chosen.
    pub fn start_command(&mut self) {
        self.read.clear();
        self.chosen.clear();
    }

    /// The value `$name` has in the variant being walked; `None` while the
    /// unknown variant is (the variable is then noted as read, to be
    /// chosen in the next variants), or when the line gave it no value.
    /// A variable surely set is never unknown: the unknown variant takes
    /// its first value (the next ones are judged with each).
    pub fn lookup(&mut self, name: &str) -> Option<&Arg> {
        let values = self.given.get(name)?;
        match self.chosen.get(name) {
            Some(&at) => values.get(at),
            None => {
                self.read.insert(name.to_owned());
                values.first().filter(|_| self.sure.contains(name))
            }
        }
    }

    /// Every combination of values of the variables the unknown variant
    /// read, each as a choice for [`Values::choose`]; `Err` with their
    /// number when there are more than [`MAX_VARIANTS`].
    pub fn variants(&self) -> Result<Vec<HashMap<String, usize>>, usize> {
        if self.read.is_empty() {
            return Ok(Vec::new());
        }
        let mut variants = vec![HashMap::new()];
        for name in &self.read {
            let count = self.count(name);
            if variants.len().saturating_mul(count) > MAX_VARIANTS {
                let total = self
                    .read
                    .iter()
                    .map(|name| self.count(name))
                    .fold(1usize, usize::saturating_mul);
                return Err(total);
            }
            variants = variants
                .into_iter()
                .flat_map(|choice| {
                    (0..count).map(move |at| {
                        let mut choice = choice.clone();
                        choice.insert(name.clone(), at);
                        choice
                    })
                })
                .collect();
        }
        Ok(variants)
    }

    /// How many ways `name` (a variable or a [`Values::branch`]) goes.
    fn count(&self, name: &str) -> usize {
        match self.branches.get(name) {
            Some(&count) => count,
            None => self.given.get(name).map_or(0, Vec::len),
        }
    }

    /// Walks the next variant with these values.
    pub fn choose(&mut self, choice: HashMap<String, usize>) {
        self.chosen = choice;
    }

    /// True while a variant with values is walked (not the first, unknown one).
    pub fn choosing(&self) -> bool {
        !self.chosen.is_empty()
    }

    /// Enters (`true`) or leaves a construct whose commands may not run or
    /// run in a subshell: a branch (`if`, `case`, `||`, `&&` after the
    /// first command), a loop, a pipeline, `( )`, `&`, a function's body.
    pub fn unsure(&mut self, entering: bool) {
        match entering {
            true => self.unsure += 1,
            false => self.unsure -= 1,
        }
    }

    /// The variables surely set so far, to be put back with
    /// [`Values::keep_sure`] where what ran since may not have.
    pub fn sure(&self) -> BTreeSet<String> {
        self.sure.clone()
    }

    /// Keeps sure only those of `before` still sure: an `a && D=x` chain
    /// sets `D` for the commands after it in the chain, not after.
    pub fn keep_sure(&mut self, before: &BTreeSet<String>) {
        self.sure.retain(|name| before.contains(name));
    }

    /// Notes that `name` surely holds one of its known values here (a
    /// `for` loop's body over a list of known words).
    pub fn be_sure(&mut self, name: &str) {
        self.sure.insert(name.to_owned());
    }

    /// Notes that no assignment to `name` is sure any more.
    pub fn forget(&mut self, name: &str) {
        self.sure.remove(name);
    }

    /// Notes a function the line defines: a call to it may set or unset
    /// any variable ([`Values::settle`]).
    pub fn define(&mut self, name: &str) {
        self.functions.insert(name.to_owned());
    }

    /// Notes which variables the command `words` (with `assigned`, as
    /// walked in its unknown variant) surely sets: an assignment or a
    /// declaration of a known value, where the walk is sure to run it.
    /// Any other command that names a variable may unset it or give it an
    /// unknown value (`unset D`, `read D`, `D=$(cmd)`), and `eval` or
    /// `source` any variable.
    pub fn settle(&mut self, words: &[Arg], assigned: &[(String, Arg)], appended: &[bool]) {
        // A known value given where it may not run leaves the variable
        // as it was: sure of one of its known values, or not.
        let set = |values: &mut Self, name: &str, value: &Arg, appended: bool| {
            let known = value.literal || value.braces;
            if !known || (appended && !values.sure.contains(name)) {
                values.sure.remove(name);
            } else if values.unsure == 0 {
                values.sure.insert(name.to_owned());
            }
        };
        let program = words.first().map_or("", |word| word.text.as_str());
        if words.is_empty() {
            for ((name, value), appended) in assigned.iter().zip(appended) {
                set(self, name, value, *appended);
            }
        } else if matches!(program, "eval" | "source" | "." | "trap")
            || self.functions.contains(program)
        {
            self.sure.clear();
        } else if DECLARING.contains(&program)
            && !words[1..].iter().any(|word| word.text.starts_with('-'))
        {
            for word in &words[1..] {
                if let Some((name, value)) = word.text.split_once('=') {
                    let value = Arg {
                        text: value.to_owned(),
                        ..word.clone()
                    };
                    set(self, name, &value, false);
                }
            }
        } else if SETTING.contains(&program) && words.iter().any(|word| !word.literal) {
            // `unset $X` may unset any of them.
            self.sure.clear();
        } else {
            for word in &words[1..] {
                let name = word
                    .text
                    .split_once('=')
                    .map_or(&*word.text, |(name, _)| name);
                self.sure.remove(name);
            }
        }
    }

    /// Notes a value given to `name`. One known only at run time adds
    /// nothing: every command is judged with its variables unknown anyway.
    /// Bash expands no braces in an assignment, so `F={a,b}` is the text.
    ///
    /// `HOME`, `PWD` and `OLDPWD` start with the value bash inherited (the
    /// home folder, the working directories the policy tracks), which
    /// stands until an assignment runs: `~` is then either.
    pub fn give(&mut self, name: &str, value: &Arg) {
        if !(value.literal || value.braces) {
            return;
        }
        let value = Arg {
            literal: true,
            braces: false,
            derived: false,
            ..value.clone()
        };
        let values = self.given.entry(name.to_owned()).or_default();
        if values.is_empty()
            && let Some(inherited) = inherited_value(name)
        {
            values.push(Arg::literal(inherited));
        }
        if !values.iter().any(|known| known.text == value.text) {
            values.push(value);
        }
    }

    /// Notes `name+=value`: each value the line gave `name` with `value`
    /// after it, and `value` alone (what it appends to may be empty).
    pub fn append(&mut self, name: &str, value: &Arg) {
        if !(value.literal || value.braces) {
            return;
        }
        let before: Vec<Arg> = self.given(name).to_vec();
        for known in before {
            let text = format!("{}{}", known.text, value.text);
            self.give(
                name,
                &Arg {
                    text,
                    pattern: known.pattern || value.pattern,
                    ..Arg::literal("")
                },
            );
        }
        self.give(name, value);
    }

    /// Notes the values a `for name in words` loop gives `name`: each word,
    /// or each word its braces expand to.
    pub fn give_each(&mut self, name: &str, word: &Arg) {
        match word.expansions() {
            Some(texts) if word.braces => {
                for text in texts {
                    let pattern = word.pattern && super::expand::has_glob(&text);
                    self.give(
                        name,
                        &Arg {
                            pattern,
                            ..Arg::literal(&text)
                        },
                    );
                }
            }
            _ => self.give(name, word),
        }
    }

    /// Notes what a simple command sets: the assignments of one that runs
    /// nothing (`F=.env`; not `F=.env cmd`, which sets it for `cmd` only),
    /// the `NAME=value` arguments of `export` and the like. `appended`
    /// says which assignments were `+=`, whose value is not the text.
    pub fn remember(&mut self, words: &[Arg], assigned: &[(String, Arg)], appended: &[bool]) {
        if words.is_empty() {
            for ((name, value), appended) in assigned.iter().zip(appended) {
                match appended {
                    true => self.append(name, value),
                    false => self.give(name, value),
                }
            }
            return;
        }
        // `printf -v NAME FORMAT ARGS`: the format is the value when it
        // holds no directive, and any of the arguments may be one.
        if words.first().is_some_and(|w| w.text == "printf") {
            let at = words.iter().position(|w| w.text == "-v");
            if let Some(name) = at.and_then(|at| words.get(at + 1))
                && is_name(&name.text)
            {
                let name = name.text.clone();
                for value in &words[at.unwrap_or_default() + 2..] {
                    self.give(&name, value);
                }
            }
            return;
        }
        if !words
            .first()
            .is_some_and(|program| DECLARING.contains(&program.text.as_str()))
        {
            return;
        }
        for word in &words[1..] {
            let Some((name, value)) = word.text.split_once('=') else {
                continue;
            };
            if is_name(name) {
                self.give(
                    name,
                    &Arg {
                        text: value.to_owned(),
                        ..word.clone()
                    },
                );
            }
        }
    }
}

/// The value bash starts with for a variable the policy resolves itself
/// (the marker the policy puts the folder in place of).
pub fn inherited_value(name: &str) -> Option<&'static str> {
    match name {
        "HOME" => Some(HOME_DIRECTORY),
        "PWD" => Some(WORKING_DIRECTORY),
        "OLDPWD" => Some(OLD_WORKING_DIRECTORY),
        _ => None,
    }
}

/// True for a bash variable name: a letter or `_`, then letters, digits, `_`.
pub fn is_name(text: &str) -> bool {
    let mut chars = text.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(pairs: &[(&str, &[&str])]) -> Values {
        let mut values = Values::default();
        for (name, texts) in pairs {
            for text in *texts {
                values.give(name, &Arg::literal(text));
            }
        }
        values
    }

    #[test]
    fn a_variable_read_unknown_first_is_then_chosen_value_by_value() {
        let mut values = values(&[("F", &[".env", "x"])]);
        values.start_command();
        assert_eq!(values.lookup("F"), None);
        assert_eq!(values.lookup("G"), None);
        let variants = values.variants().unwrap();
        assert_eq!(variants.len(), 2);
        let mut seen = Vec::new();
        for choice in variants {
            values.choose(choice);
            seen.push(values.lookup("F").unwrap().text.clone());
        }
        assert_eq!(seen, [".env", "x"]);
    }

    #[test]
    fn combinations_are_counted_and_capped() {
        let mut values = values(&[("A", &["1", "2", "3", "4"]), ("B", &["a", "b", "c", "d"])]);
        values.start_command();
        values.lookup("A");
        values.lookup("B");
        assert_eq!(values.variants().unwrap().len(), MAX_VARIANTS);
        values.give("B", &Arg::literal("e"));
        assert_eq!(values.variants(), Err(20));
    }

    #[test]
    fn only_known_values_of_assignments_and_declarations_are_kept() {
        let mut values = Values::default();
        let unknown = Arg {
            literal: false,
            ..Arg::literal("$(...)")
        };
        values.remember(
            &[],
            &[
                ("A".into(), Arg::literal(".env")),
                ("B".into(), unknown),
                ("C".into(), Arg::literal("more")),
            ],
            &[false, false, true],
        );
        values.remember(
            &[
                Arg::literal("export"),
                Arg::literal("-x"),
                Arg::literal("D=~/.ssh"),
            ],
            &[],
            &[],
        );
        values.remember(&[Arg::literal("env"), Arg::literal("E=1")], &[], &[]);
        values.start_command();
        for name in ["A", "B", "C", "D", "E"] {
            values.lookup(name);
        }
        // `C+=more` appends to what may be empty: `more` is one value.
        assert_eq!(
            values.read.iter().map(String::as_str).collect::<Vec<_>>(),
            ["A", "C", "D"]
        );
    }

    #[test]
    fn an_append_adds_to_each_value_and_stands_alone() {
        let mut values = values(&[("F", &[".en", "x"])]);
        values.append("F", &Arg::literal("v"));
        let texts: Vec<&str> = values.given("F").iter().map(|v| v.text.as_str()).collect();
        assert_eq!(texts, [".en", "x", ".env", "xv", "v"]);
    }

    #[test]
    fn home_and_the_working_directories_keep_their_inherited_value() {
        let mut values = Values::default();
        values.give("HOME", &Arg::literal("/"));
        values.give("PWD", &Arg::literal("/etc"));
        let texts =
            |name| -> Vec<String> { values.given(name).iter().map(|v| v.text.clone()).collect() };
        assert_eq!(texts("HOME"), [HOME_DIRECTORY, "/"]);
        assert_eq!(texts("PWD"), [WORKING_DIRECTORY, "/etc"]);
    }

    #[test]
    fn printf_v_gives_its_format_and_arguments() {
        let mut values = Values::default();
        let words: Vec<Arg> = ["printf", "-v", "F", "%s", ".env"]
            .into_iter()
            .map(Arg::literal)
            .collect();
        values.remember(&words, &[], &[]);
        let texts: Vec<&str> = values.given("F").iter().map(|v| v.text.as_str()).collect();
        assert_eq!(texts, ["%s", ".env"]);
    }

    #[test]
    fn a_branch_is_chosen_as_a_variable_is() {
        let mut values = values(&[("F", &["a", "b"])]);
        values.start_command();
        assert_eq!(values.branch("k", 2), None);
        assert_eq!(values.lookup("F"), None);
        let variants = values.variants().unwrap();
        assert_eq!(variants.len(), 4);
        values.choose(variants[3].clone());
        assert_eq!(values.branch("k", 2), Some(1));
    }
}
