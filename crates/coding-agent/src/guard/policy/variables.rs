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

use std::collections::{BTreeSet, HashMap};

use super::shell::Arg;

/// How many combinations of values one command is judged with; a line
/// that gives the variables of one command more is asked about instead
/// (only a crafted line gets there).
pub const MAX_VARIANTS: usize = 16;

/// The builtins whose `NAME=value` arguments set variables as an
/// assignment does.
const DECLARING: [&str; 5] = ["export", "declare", "typeset", "local", "readonly"];

/// What the walk knows of variables so far: every value given to each.
#[derive(Debug, Clone, Default)]
pub struct Values {
    /// Each variable's values in the order the line gives them, each once.
    given: HashMap<String, Vec<Arg>>,
    /// The value to use for each variable while one variant of a command
    /// is walked; empty while its first, unknown, variant is.
    chosen: HashMap<String, usize>,
    /// The variables with values that the current command reads.
    read: BTreeSet<String>,
}

impl Values {
    /// The values a nested script (`$(...)`) starts with: those given so far.
    pub fn inherited(&self) -> Self {
        Self {
            given: self.given.clone(),
            ..Self::default()
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
    pub fn lookup(&mut self, name: &str) -> Option<&Arg> {
        let values = self.given.get(name)?;
        match self.chosen.get(name) {
            Some(&at) => values.get(at),
            None => {
                self.read.insert(name.to_owned());
                None
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
            let count = self.given.get(name).map_or(0, Vec::len);
            if variants.len().saturating_mul(count) > MAX_VARIANTS {
                let total = self
                    .read
                    .iter()
                    .map(|name| self.given.get(name).map_or(0, Vec::len))
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

    /// Walks the next variant with these values.
    pub fn choose(&mut self, choice: HashMap<String, usize>) {
        self.chosen = choice;
    }

    /// True while a variant with values is walked (not the first, unknown one).
    pub fn choosing(&self) -> bool {
        !self.chosen.is_empty()
    }

    /// Notes a value given to `name`. One known only at run time adds
    /// nothing: every command is judged with its variables unknown anyway.
    /// Bash expands no braces in an assignment, so `F={a,b}` is the text.
    pub fn give(&mut self, name: &str, value: &Arg) {
        if !(value.literal || value.braces) {
            return;
        }
        let value = Arg {
            literal: true,
            braces: false,
            ..value.clone()
        };
        let values = self.given.entry(name.to_owned()).or_default();
        if !values.iter().any(|known| known.text == value.text) {
            values.push(value);
        }
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
                if !appended {
                    self.give(name, value);
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

/// True for a bash variable name: a letter or `_`, then letters, digits, `_`.
fn is_name(text: &str) -> bool {
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
        assert_eq!(
            values.read.iter().map(String::as_str).collect::<Vec<_>>(),
            ["A", "D"]
        );
    }
}
