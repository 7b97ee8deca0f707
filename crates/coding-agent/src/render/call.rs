//! Reading a call's arguments for display.
//!
//! While the model streams a call, `render_call` gets the JSON parsed so far:
//! any field may be missing, half a string, or of the wrong type (validation
//! has not run yet). So every accessor answers `None` for anything it cannot
//! use, and renderers show [`PENDING`] for a main argument not yet there.

use serde_json::Value;

use super::{Style, StyledLine};

/// Shown in place of a main argument that has not arrived yet.
pub const PENDING: &str = "…";

/// The first line of a call: the tool's name in bold.
pub fn header(name: &str) -> StyledLine {
    StyledLine::new(name, Style::Bold)
}

/// Appends a space and the call's main argument in the accent style, or
/// [`PENDING`] when it is missing.
#[must_use]
pub fn with_main_arg(line: StyledLine, value: Option<&str>) -> StyledLine {
    let line = line.push(" ", Style::Normal);
    match value {
        Some(value) => line.push(value, Style::Accent),
        None => line.push(PENDING, Style::Dim),
    }
}

/// Appends, dimmed, the parts of a call that qualify its main argument
/// (` in src`, ` limit 5`): those the call has, in order.
#[must_use]
pub fn with_qualifiers(
    line: StyledLine,
    parts: impl IntoIterator<Item = Option<String>>,
) -> StyledLine {
    let qualifiers: String = parts.into_iter().flatten().collect();
    if qualifiers.is_empty() {
        line
    } else {
        line.push(qualifiers, Style::Dim)
    }
}

/// ` in <path>`, when the call names a directory (`find`, `grep`).
pub fn in_path(args: &Value) -> Option<String> {
    non_empty_str_arg(args, "path").map(|path| format!(" in {path}"))
}

/// ` <key> <number>`, when the call gives that number (` limit 5`).
pub fn number_qualifier(args: &Value, key: &str) -> Option<String> {
    number_arg(args, key).map(|number| format!(" {key} {}", format_number(number)))
}

/// A string argument.
pub fn str_arg<'a>(args: &'a Value, key: &str) -> Option<&'a str> {
    args.get(key)?.as_str()
}

/// A string argument that says something (empty strings mean "default" to
/// the tools that take optional paths and globs).
pub fn non_empty_str_arg<'a>(args: &'a Value, key: &str) -> Option<&'a str> {
    str_arg(args, key).filter(|value| !value.is_empty())
}

/// A number argument.
pub fn number_arg(args: &Value, key: &str) -> Option<f64> {
    args.get(key)?.as_f64()
}

/// A boolean argument.
pub fn bool_arg(args: &Value, key: &str) -> Option<bool> {
    args.get(key)?.as_bool()
}

/// A number as the model wrote it: `50`, `2.5` (no `.0` on whole numbers).
pub fn format_number(number: f64) -> String {
    format!("{number}")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::render::to_markup;

    #[test]
    fn arguments_of_the_wrong_type_or_missing_read_as_absent() {
        let args = json!({"path": 3, "limit": "10", "flag": "true", "empty": ""});
        assert_eq!(str_arg(&args, "path"), None);
        assert_eq!(number_arg(&args, "limit"), None);
        assert_eq!(bool_arg(&args, "flag"), None);
        assert_eq!(str_arg(&args, "empty"), Some(""));
        assert_eq!(non_empty_str_arg(&args, "empty"), None);
        assert_eq!(str_arg(&json!(null), "path"), None);
        assert_eq!(str_arg(&json!("a string"), "path"), None);
    }

    #[test]
    fn numbers_show_without_a_trailing_zero_fraction() {
        assert_eq!(format_number(50.0), "50");
        assert_eq!(format_number(2.5), "2.5");
        assert_eq!(format_number(-1.0), "-1");
    }

    #[test]
    fn a_missing_main_argument_shows_as_pending() {
        assert_eq!(
            to_markup(&[with_main_arg(header("read"), None)]),
            "[bold]read[/] [dim]…[/]"
        );
        assert_eq!(
            to_markup(&[with_main_arg(header("read"), Some("a.rs"))]),
            "[bold]read[/] [accent]a.rs[/]"
        );
    }
}
