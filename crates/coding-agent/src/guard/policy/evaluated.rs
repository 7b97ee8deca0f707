//! Where bash reads data as code: a command line that looks harmless word by
//! word can still run a command that is written in a variable's value or in a
//! quoted string, because bash evaluates some values again.
//!
//! - Arithmetic (`$((x))`, `((x))`, `let`, `for ((...))`, `[[ x -eq 1 ]]`,
//!   array subscripts, `${s:x:y}`) evaluates a variable's value as an
//!   expression, and an array subscript inside it runs its command
//!   substitutions: `x='a[$(rm -rf ~)]'; echo $((x))` runs `rm`. A name whose
//!   value the script sets only to integers (a loop counter) is safe; any
//!   other value may be code.
//! - A variable name with a subscript is evaluated where bash takes a name:
//!   `printf -v 'a[$(rm -rf ~)]' x`, `test -v`, `unset`, `read`, `declare`.
//! - `${!x}` names a variable by another's value (with its subscript), and
//!   `${x@P}` expands a value as a prompt, substitutions included.
//! - `declare -i` makes every later assignment arithmetic, `declare -n` a
//!   name's value a name.
//!
//! Such a line is a script known only at run time: the policy asks, as it
//! does for `eval "$C"` (`docs/permissions.md`).

use std::collections::BTreeSet;

use super::shell::Part;

/// The builtins that take variable names as arguments (and so evaluate a
/// subscript written in one).
const NAME_TAKERS: [&str; 11] = [
    "unset",
    "read",
    "mapfile",
    "readarray",
    "declare",
    "typeset",
    "local",
    "export",
    "readonly",
    "getopts",
    "let",
];

/// What the walk saw that bash evaluates: the arithmetic expressions (raw
/// text), the names `for` loops set, and parameter expansions that read a
/// value as code.
#[derive(Debug, Default)]
pub(super) struct Evaluated {
    pub arithmetic: Vec<String>,
    /// The variables `for` loops set, each with whether to integers only.
    pub loop_variables: Vec<(String, bool)>,
    /// Why a parameter expansion reads a value as code (`${!x}`, `${x@P}`).
    pub expansion: Option<String>,
    /// A quoted word holding a subscript with a command substitution.
    pub subscript_code: Option<String>,
    /// The quoted words holding a command substitution (`'$(rm -rf ~)'`):
    /// code bash runs if it evaluates them.
    pub quoted_code: Vec<String>,
}

impl Evaluated {
    /// Why `parts` (the simple commands of `script`) may run what a value
    /// holds, if they may.
    pub fn danger(&self, parts: &[Part], script: &str) -> Option<String> {
        if let Some(why) = self
            .expansion
            .clone()
            .or_else(|| self.subscript_code.clone())
        {
            return Some(why);
        }
        if let Some(why) = parts.iter().find_map(name_taken_at_run_time) {
            return Some(why);
        }
        let mut arithmetic = self.arithmetic.clone();
        // `let` takes arithmetic expressions as its arguments.
        for part in parts {
            if part.words.first().is_some_and(|w| w.text == "let") {
                arithmetic.extend(part.words[1..].iter().map(|w| w.text.clone()));
            }
        }
        let mut read = BTreeSet::new();
        let mut set_in_arithmetic = BTreeSet::new();
        for text in &arithmetic {
            for (name, assigned) in arithmetic_names(text) {
                if assigned {
                    set_in_arithmetic.insert(name.clone());
                }
                read.insert(name);
            }
        }
        read.into_iter()
            .find(|name| !only_integers(name, &set_in_arithmetic, parts, &self.loop_variables, script))
            .map(|name| {
                format!(
                    "arithmetic on `{name}` (bash reads its value as code, a subscript in it running commands, and the value is known only at run time)"
                )
            })
    }
}

/// Whether a word (its literal, quoted text) names a variable with a
/// subscript holding a command substitution: `a[$(rm -rf ~)]`.
pub(super) fn is_subscript_code(literal: &str) -> bool {
    literal.find('[').is_some_and(|open| {
        let after = &literal[open..];
        after.contains("$(") || after.contains('`')
    })
}

/// Why `part` hands bash a variable name known only at run time, or makes
/// later values code (`declare -i`, `declare -n`), if it does.
fn name_taken_at_run_time(part: &Part) -> Option<String> {
    let program = part.words.first()?.text.as_str();
    let args = &part.words[1..];
    let flagged = |flag: char| {
        args.iter()
            .any(|w| w.text.starts_with('-') && !w.text.starts_with("--") && w.text.contains(flag))
    };
    let declares = matches!(
        program,
        "declare" | "typeset" | "local" | "export" | "readonly"
    );
    if declares && (flagged('i') || flagged('n')) {
        return Some(format!(
            "`{program} -i` or `-n` (later values evaluated as arithmetic, or as names)"
        ));
    }
    let takes_names = NAME_TAKERS.contains(&program)
        || (matches!(program, "printf" | "test" | "[") && flagged('v'))
        || (program == "wait" && flagged('p'));
    // The name is what comes before `=` (`export PATH="$PATH:/x"` names
    // `PATH`, whatever its value).
    let dynamic_name = args.iter().any(|w| {
        !w.literal && {
            let name = w.text.split('=').next().unwrap_or_default();
            name.contains('$') || name.contains('`')
        }
    });
    (takes_names && dynamic_name).then(|| {
        format!("`{program}` given a variable name known only at run time (bash evaluates its subscript)")
    })
}

/// Whether the script gives `name` only integers: it sets it in arithmetic
/// or to integer literals, never otherwise (no command takes it as a name,
/// no loop runs over it, no `${name:=...}`).
fn only_integers(
    name: &str,
    set_in_arithmetic: &BTreeSet<String>,
    parts: &[Part],
    loop_variables: &[(String, bool)],
    script: &str,
) -> bool {
    let mut set = set_in_arithmetic.contains(name);
    for (variable, integers) in loop_variables {
        if variable == name {
            if !integers {
                return false;
            }
            set = true;
        }
    }
    for part in parts {
        for (assigned, value) in &part.assigned {
            if assigned == name {
                if !(value.literal && is_integer(&value.text)) {
                    return false;
                }
                set = true;
            }
        }
        let named = part.words.iter().any(|w| {
            w.text == name
                || w.text
                    .strip_prefix(name)
                    .is_some_and(|rest| rest.starts_with(['=', '[', '+']))
        });
        if named {
            return false;
        }
    }
    let defaulted = [":=", "="]
        .iter()
        .any(|op| script.contains(&format!("${{{name}{op}")));
    set && !defaulted
}

/// Whether `text` is a decimal integer, which arithmetic reads as itself.
pub(super) fn is_integer(text: &str) -> bool {
    let digits = text.strip_prefix('-').unwrap_or(text);
    !digits.is_empty() && digits.chars().all(|c| c.is_ascii_digit())
}

/// The variable names an arithmetic expression reads, each with whether it
/// sets it (`i=0`, `i+=2`, `i++`, `--i`). Numbers with a base (`16#ff`,
/// `0x1f`) are numbers, not names.
fn arithmetic_names(text: &str) -> Vec<(String, bool)> {
    let chars: Vec<char> = text.chars().collect();
    let mut names = Vec::new();
    let mut at = 0;
    while at < chars.len() {
        let c = chars[at];
        if c.is_ascii_digit() {
            while at < chars.len()
                && (chars[at].is_ascii_alphanumeric() || "#_@".contains(chars[at]))
            {
                at += 1;
            }
            continue;
        }
        if !(c.is_ascii_alphabetic() || c == '_') {
            at += 1;
            continue;
        }
        let start = at;
        while at < chars.len() && (chars[at].is_ascii_alphanumeric() || chars[at] == '_') {
            at += 1;
        }
        let name: String = chars[start..at].iter().collect();
        let before: String = chars[..start].iter().rev().take(2).collect();
        let after: String = chars[at..]
            .iter()
            .skip_while(|c| c.is_whitespace())
            .take(3)
            .collect();
        let sets = before == "++"
            || before == "--"
            || after.starts_with("++")
            || after.starts_with("--")
            || (after.starts_with('=') && !after.starts_with("=="))
            || ["+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>="]
                .iter()
                .any(|op| after.starts_with(op));
        names.push((name, sets));
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_in_arithmetic_are_found_with_what_sets_them() {
        assert_eq!(
            arithmetic_names("i=0; i<n; i++"),
            [
                ("i".to_owned(), true),
                ("i".to_owned(), false),
                ("n".to_owned(), false),
                ("i".to_owned(), true)
            ]
        );
        assert_eq!(arithmetic_names("16#ff + 0x1f + 2"), []);
        assert_eq!(
            arithmetic_names("$x + ${y}"),
            [("x".to_owned(), false), ("y".to_owned(), false)]
        );
        assert_eq!(arithmetic_names("x == 1"), [("x".to_owned(), false)]);
    }

    #[test]
    fn a_subscript_with_a_substitution_is_code() {
        assert!(is_subscript_code("a[$(rm -rf ~)]"));
        assert!(is_subscript_code("a[`id`]"));
        assert!(!is_subscript_code("$(date)"));
        assert!(!is_subscript_code("a[1]"));
    }
}
