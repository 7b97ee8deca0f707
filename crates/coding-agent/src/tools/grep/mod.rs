//! `grep`: search file contents for a pattern (`docs/tool-behaviour.md` §4.5).
//!
//! The search itself goes through [`GrepOperations`]; this file owns what the
//! model reads: the schema, the line formats (`path:line: text`, context lines
//! `path-n- text`), line and byte truncation, and the notices.
//!
//! Beyond Pi: one ignore policy shared with `find` (DEVIATIONS #4), output
//! sorted by path then line (#4), no `rg` binary (#5), and context lines
//! numbered as the matches are (#32).

mod context;
pub mod ops;

use std::collections::VecDeque;
use std::fmt::Write as _;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_with::skip_serializing_none;

use self::ops::{GrepMatch, GrepOperations, GrepRequest, MatchLines};
use crate::definition::{ToolContext, ToolFailure, ToolOutput, ToolSpec, TypedTool};
use crate::render::result::ListKind;
use crate::render::{RenderOptions, StyledLine, call};
use crate::support::truncate::{
    GREP_MAX_LINE_LENGTH, Limits, Truncation, truncate_line, truncate_list,
};
use crate::support::walk::{Searched, limit_notice};
use crate::tools::OpsTool;

/// The whole answer when nothing matched.
const NO_MATCHES: &str = "No matches found";

/// Matches returned when the model gives no `limit`.
const DEFAULT_LIMIT: usize = 100;

/// What the model reads about `grep` (Pi's text).
const DESCRIPTION: &str = "Search file contents for a pattern. Returns matching lines with file paths and line numbers. Respects .gitignore. Output is truncated to 100 matches or 50KB (whichever is hit first). Long lines are truncated to 500 chars.";

/// `grep` as the model and the system prompt know it.
pub const SPEC: ToolSpec = ToolSpec {
    prompt_snippet: Some("Search file contents for patterns (respects .gitignore)"),
    list_result: Some(ListKind {
        singular: "match",
        plural: "matches",
        empty: NO_MATCHES,
        is_item: is_match_line,
    }),
    ..ToolSpec::new("grep", "Grep", DESCRIPTION)
};

/// Arguments of `grep`; the doc comments are Pi's parameter descriptions.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GrepArgs {
    /// Search pattern (regex or literal string)
    pub pattern: String,
    /// Directory or file to search (default: current directory)
    pub path: Option<String>,
    /// Filter files by glob pattern, e.g. '*.ts' or '**/*.spec.ts'
    pub glob: Option<String>,
    /// Case-insensitive search (default: false)
    pub ignore_case: Option<bool>,
    /// Treat pattern as literal string instead of regex (default: false)
    pub literal: Option<bool>,
    /// Number of lines to show before and after each match (default: 0)
    pub context: Option<f64>,
    /// Maximum number of matches to return (default: 100)
    pub limit: Option<f64>,
    /// Absolute path globs the search leaves out: set by the permission
    /// policy (the files deny and ask rules guard below the folder
    /// searched), not offered to the model.
    #[schemars(skip)]
    #[serde(default)]
    pub exclude: Vec<String>,
}

/// The argument the permission policy adds to a grep call: what it leaves
/// out ([`GrepArgs::exclude`]).
pub const EXCLUDE_ARG: &str = "exclude";

/// The `grep` tool; [`Typed`](crate::definition::Typed) makes it a
/// [`ToolDefinition`](crate::ToolDefinition).
pub type GrepTool = OpsTool<dyn GrepOperations>;

/// What `grep` reports besides its text (Pi's `GrepToolDetails`).
#[skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GrepDetails {
    /// The match limit, when it was reached.
    pub match_limit_reached: Option<usize>,
    /// How the output was cut to 50 KB, when it was.
    pub truncation: Option<Truncation>,
    /// Some lines were cut to 500 characters.
    pub lines_truncated: Option<bool>,
}

/// Pi's `Math.max(1, limit ?? 100)`. Pi stops once the count is `>= limit`, so
/// a fractional limit acts as the next whole number (shown as that number).
fn effective_limit(limit: Option<f64>) -> usize {
    match limit {
        Some(l) if l.is_finite() => l.ceil().max(1.0) as usize,
        _ => DEFAULT_LIMIT,
    }
}

/// Pi's `context > 0 ? context : 0`, in whole lines.
fn context_lines(context: Option<f64>) -> usize {
    match context {
        Some(c) if c.is_finite() && c > 0.0 => c.floor() as usize,
        _ => 0,
    }
}

impl TypedTool for GrepTool {
    type Args = GrepArgs;
    type Details = GrepDetails;
    const SPEC: ToolSpec = SPEC;

    /// `grep /pattern/` (`"pattern"` when literal), then where and how.
    fn render_call(&self, args: &Value, _options: RenderOptions) -> Vec<StyledLine> {
        let literal = call::bool_arg(args, "literal") == Some(true);
        let pattern = call::str_arg(args, "pattern").map(|pattern| {
            if literal {
                format!("\"{pattern}\"")
            } else {
                format!("/{pattern}/")
            }
        });
        let line = call::with_main_arg(call::header("grep"), pattern.as_deref());
        let glob = call::non_empty_str_arg(args, "glob").map(|glob| format!(" ({glob})"));
        let ignore_case = call::bool_arg(args, "ignoreCase") == Some(true);
        let qualifiers = [
            call::in_path(args),
            glob,
            ignore_case.then(|| " ignoring case".to_owned()),
            call::number_qualifier(args, "context"),
            call::number_qualifier(args, "limit"),
        ];
        vec![call::with_qualifiers(line, qualifiers)]
    }

    async fn run(
        &self,
        args: GrepArgs,
        ctx: &ToolContext,
    ) -> Result<ToolOutput<GrepDetails>, ToolFailure<GrepDetails>> {
        let search_path = self.resolve_dir(args.path.as_deref(), &ctx.cwd);
        let limit = effective_limit(args.limit);
        let request = GrepRequest {
            path: search_path.clone(),
            pattern: args.pattern,
            glob: args.glob.filter(|g| !g.is_empty()),
            ignore_case: args.ignore_case.unwrap_or(false),
            literal: args.literal.unwrap_or(false),
            context: context_lines(args.context),
            limit,
            exclude: args.exclude,
        };
        let searched = self
            .ops
            .search(request, ctx.cancel.clone())
            .await
            .map_err(|error| error.for_model(&search_path))?;
        Ok(format_result(&searched, limit))
    }
}

/// Whether an output line is a match (`path:12: text`) rather than a context
/// line (`path-12- text`): whichever separator comes first decides.
fn is_match_line(line: &str) -> bool {
    let bytes = line.as_bytes();
    for (index, &byte) in bytes.iter().enumerate() {
        if byte != b':' && byte != b'-' {
            continue;
        }
        let rest = &bytes[index + 1..];
        let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
        if digits > 0 && rest[digits..].starts_with(&[byte, b' ']) {
            return byte == b':';
        }
    }
    false
}

/// Pi's output: one line per match (or per context line), cut to 500 chars
/// each and 50KB in all, then the notices; the entries left out, searched
/// in part or not read said last.
fn format_result(searched: &Searched<GrepMatch>, limit: usize) -> ToolOutput<GrepDetails> {
    let matches = &searched.found;
    if matches.is_empty() {
        return ToolOutput::text(searched.nothing_found(NO_MATCHES));
    }
    let mut output = Output::default();
    let mut held = HeldLines::default();
    for m in matches {
        match &m.lines {
            MatchLines::Line(text) => output.push(&m.path, ':', m.line_number, text),
            MatchLines::Window { first, last, lines } => {
                for (number, text) in held.window(*first, *last, lines) {
                    let separator = if number == m.line_number { ':' } else { '-' };
                    output.push(&m.path, separator, number, text);
                }
            }
            MatchLines::Unreadable => {
                output.push(&m.path, ':', m.line_number, "(unable to read file)");
            }
        }
    }

    let match_limit_reached = (matches.len() >= limit).then_some(limit);
    let count_notice = match_limit_reached.map(|limit| limit_notice(limit, "matches"));
    let lines_truncated = output.lines_truncated;
    let lines_notice = lines_truncated.then(|| {
        format!(
            "Some lines truncated to {GREP_MAX_LINE_LENGTH} chars. Use read tool to see full lines"
        )
    });
    let later_notices = [lines_notice].into_iter().chain(searched.notices());
    let (text, truncation) = output.finish(count_notice, later_notices);
    ToolOutput::text(text).with_details_if_any(GrepDetails {
        match_limit_reached,
        truncation,
        lines_truncated: lines_truncated.then_some(true),
    })
}

/// The output lines as [`truncate_list`] cuts them to 50 KB, made one at a
/// time: kept up to the first line past the limit, and only counted after
/// it. Made whole, 100 windows over a 5 MB log were 10 million lines (667
/// MB) to show 816 of them.
#[derive(Default)]
struct Output {
    /// The lines up to the first one the byte limit cuts.
    kept: Vec<String>,
    /// Lines of the whole output.
    lines: usize,
    /// Bytes of the whole output, the `\n` between its lines included.
    bytes: usize,
    /// Some line was cut to [`GREP_MAX_LINE_LENGTH`] characters, shown or
    /// not (Pi says so of the lines past the 50 KB too).
    lines_truncated: bool,
    /// The line being added, its buffer reused for the lines only counted.
    line: String,
}

impl Output {
    /// Adds `path{separator}number{separator} text`, `text` cut to
    /// [`GREP_MAX_LINE_LENGTH`] characters.
    fn push(&mut self, path: &str, separator: char, number: u64, text: &str) {
        let (text, cut) = truncate_line(text, GREP_MAX_LINE_LENGTH);
        self.lines_truncated |= cut;
        self.line.clear();
        let _ = write!(self.line, "{path}{separator}{number}{separator} {text}");
        if self.bytes <= Limits::bytes_only().max_bytes {
            self.kept.push(self.line.clone());
        }
        self.bytes += usize::from(self.lines > 0) + self.line.len();
        self.lines += 1;
    }

    /// The text and its truncation, as [`truncate_list`] makes them of the
    /// whole output: the lines kept reach past the limit when it cuts, so
    /// they are cut where the whole would be, and the totals are the
    /// whole's.
    fn finish(
        self,
        count_notice: Option<String>,
        later_notices: impl IntoIterator<Item = Option<String>>,
    ) -> (String, Option<Truncation>) {
        let (text, truncation) = truncate_list(&self.kept, count_notice, later_notices);
        let truncation = truncation.map(|truncation| Truncation {
            total_lines: self.lines,
            total_bytes: self.bytes,
            ..truncation
        });
        (text, truncation)
    }
}

/// The lines of the file whose windows are being shown: a window brings
/// only the lines no earlier window of its file held
/// ([`MatchLines::Window`]), so those it shares with the window before are
/// kept from it, and the lines before it dropped.
#[derive(Default)]
struct HeldLines<'a> {
    /// Number of the first line held.
    first: u64,
    lines: VecDeque<&'a str>,
}

impl<'a> HeldLines<'a> {
    /// The lines `first..=last` with their numbers, `new` being the last of
    /// them. New lines that do not follow those held (a file's first
    /// window) start them again; a line neither holds shows as empty.
    fn window(
        &mut self,
        first: u64,
        last: u64,
        new: &'a [String],
    ) -> impl Iterator<Item = (u64, &'a str)> + '_ {
        let start = (last + 1).saturating_sub(new.len() as u64);
        if start != self.first + self.lines.len() as u64 {
            self.lines.clear();
            self.first = start;
        }
        self.lines.extend(new.iter().map(String::as_str));
        let before = usize::try_from(first.saturating_sub(self.first))
            .unwrap_or(usize::MAX)
            .min(self.lines.len());
        self.lines.drain(..before);
        self.first += before as u64;
        let held = &*self;
        (first..=last).map(move |number| {
            let index = number
                .checked_sub(held.first)
                .and_then(|i| usize::try_from(i).ok());
            let line = index.and_then(|i| held.lines.get(i));
            (number, line.copied().unwrap_or_default())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::definition::{ToolDefinition, Typed};
    use serde_json::json;

    #[test]
    fn limit_defaults_to_100_and_is_at_least_1() {
        assert_eq!(effective_limit(None), 100);
        assert_eq!(effective_limit(Some(0.0)), 1);
        assert_eq!(effective_limit(Some(-5.0)), 1);
        assert_eq!(effective_limit(Some(2.5)), 3);
        assert_eq!(effective_limit(Some(f64::NAN)), 100);
    }

    #[test]
    fn context_is_whole_positive_lines() {
        assert_eq!(context_lines(None), 0);
        assert_eq!(context_lines(Some(-1.0)), 0);
        assert_eq!(context_lines(Some(2.7)), 2);
    }

    #[test]
    fn the_output_keeps_its_lines_only_up_to_the_first_past_50kb() {
        let mut output = Output::default();
        for number in 1..=100_000 {
            output.push("f", ':', number, "0123456789");
        }
        let kept = output.kept.join("\n").len();
        let last = output.kept.last().map_or(0, String::len);
        assert!(
            kept > 51_200 && kept - last - 1 <= 51_200,
            "kept {kept} bytes"
        );
        assert_eq!(output.lines, 100_000);
        let (_, truncation) = output.finish(None, []);
        let truncation = truncation.unwrap_or_default();
        assert_eq!(truncation.total_lines, 100_000);
        assert_eq!(truncation.output_bytes, kept - last - 1);
    }

    #[test]
    fn schema_is_pis() {
        let tool = Typed::<GrepTool>::default();
        assert_eq!(
            tool.tool().parameters,
            json!({
                "type": "object",
                "properties": {
                    "pattern": {"type": "string", "description": "Search pattern (regex or literal string)"},
                    "path": {"type": "string", "description": "Directory or file to search (default: current directory)"},
                    "glob": {"type": "string", "description": "Filter files by glob pattern, e.g. '*.ts' or '**/*.spec.ts'"},
                    "ignoreCase": {"type": "boolean", "description": "Case-insensitive search (default: false)"},
                    "literal": {"type": "boolean", "description": "Treat pattern as literal string instead of regex (default: false)"},
                    "context": {"type": "number", "description": "Number of lines to show before and after each match (default: 0)"},
                    "limit": {"type": "number", "description": "Maximum number of matches to return (default: 100)"}
                },
                "required": ["pattern"]
            })
        );
        assert_eq!(tool.tool().name, "grep");
        assert_eq!(tool.tool().description, DESCRIPTION);
    }
}
