//! `find`: search for files by glob pattern (`docs/tool-behaviour.md` §4.6).
//!
//! The walk goes through [`FindOperations`]; this file owns what the model
//! reads: the schema, the result list, byte truncation and the notices.
//!
//! Beyond Pi: one ignore policy shared with `grep` (DEVIATIONS #4: `.git/` is
//! never listed), sorted output (#4), and no `fd` binary (#5), so a missing
//! path reads `Path not found: <abs>` (Pi's own wording for custom operations)
//! instead of fd's error text.

pub mod ops;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_with::skip_serializing_none;

use self::ops::{FindOperations, FindRequest};
use crate::definition::{ToolContext, ToolFailure, ToolOutput, ToolSpec, TypedTool};
use crate::render::result::ListKind;
use crate::render::{RenderOptions, StyledLine, call};
use crate::support::truncate::{Truncation, truncate_list};
use crate::support::walk::{Searched, limit_notice};
use crate::tools::OpsTool;

/// The whole answer when nothing matched.
const NO_FILES: &str = "No files found matching pattern";

/// Results returned when the model gives no `limit`.
const DEFAULT_LIMIT: usize = 1000;

/// What the model reads about `find` (Pi's text).
const DESCRIPTION: &str = "Search for files by glob pattern. Returns matching file paths relative to the search directory. Respects .gitignore. Output is truncated to 1000 results or 50KB (whichever is hit first).";

/// `find` as the model and the system prompt know it.
pub const SPEC: ToolSpec = ToolSpec {
    prompt_snippet: Some("Find files by glob pattern (respects .gitignore)"),
    list_result: Some(ListKind {
        singular: "file",
        plural: "files",
        empty: NO_FILES,
        is_item: |_| true,
    }),
    ..ToolSpec::new("find", "Find", DESCRIPTION)
};

/// Arguments of `find`; the doc comments are Pi's parameter descriptions.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct FindArgs {
    /// Glob pattern to match files, e.g. '*.ts', '**/*.json', or 'src/**/*.spec.ts'
    pub pattern: String,
    /// Directory to search in (default: current directory)
    pub path: Option<String>,
    /// Maximum number of results (default: 1000)
    pub limit: Option<f64>,
}

/// The `find` tool; [`Typed`](crate::definition::Typed) makes it a
/// [`ToolDefinition`](crate::ToolDefinition).
pub type FindTool = OpsTool<dyn FindOperations>;

/// What `find` reports besides its text (Pi's `FindToolDetails`).
#[skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FindDetails {
    /// The result limit, when it was reached.
    pub result_limit_reached: Option<usize>,
    /// How the list was cut to 50 KB, when it was.
    pub truncation: Option<Truncation>,
}

/// Pi passes `limit ?? 1000` to `fd --max-results`, where 0 means no limit;
/// a fraction acts as the next whole number. `None`: no limit.
fn effective_limit(limit: Option<f64>) -> Option<usize> {
    match limit {
        None => Some(DEFAULT_LIMIT),
        Some(l) if l.is_finite() && l > 0.0 => Some(l.ceil() as usize),
        Some(_) => None,
    }
}

impl TypedTool for FindTool {
    type Args = FindArgs;
    type Details = FindDetails;
    const SPEC: ToolSpec = SPEC;

    /// `find pattern`, then where and how many at most.
    fn render_call(&self, args: &Value, _options: RenderOptions) -> Vec<StyledLine> {
        let line = call::with_main_arg(call::header("find"), call::str_arg(args, "pattern"));
        let qualifiers = [call::in_path(args), call::number_qualifier(args, "limit")];
        vec![call::with_qualifiers(line, qualifiers)]
    }

    async fn run(
        &self,
        args: FindArgs,
        ctx: &ToolContext,
    ) -> Result<ToolOutput<FindDetails>, ToolFailure<FindDetails>> {
        let search_path = self.resolve_dir(args.path.as_deref(), &ctx.cwd);
        let limit = effective_limit(args.limit);
        let request = FindRequest {
            path: search_path.clone(),
            pattern: args.pattern,
            limit,
        };
        let searched = self
            .ops
            .glob(request, ctx.cancel.clone())
            .await
            .map_err(|error| error.for_model(&search_path))?;
        Ok(format_result(&searched, limit))
    }
}

/// Pi's output: one path per line, cut to 50KB, then the notices; the
/// entries that could not be read said last.
fn format_result(searched: &Searched<String>, limit: Option<usize>) -> ToolOutput<FindDetails> {
    let paths = &searched.found;
    if paths.is_empty() {
        return ToolOutput::text(searched.nothing_found(NO_FILES));
    }
    let result_limit_reached = limit.filter(|&limit| paths.len() >= limit);
    let count_notice = result_limit_reached.map(|limit| limit_notice(limit, "results"));
    let (text, truncation) = truncate_list(paths, count_notice, searched.notices());
    ToolOutput::text(text).with_details_if_any(FindDetails {
        result_limit_reached,
        truncation,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::definition::{ToolDefinition, Typed};
    use serde_json::json;

    #[test]
    fn limit_defaults_to_1000_and_zero_means_none() {
        assert_eq!(effective_limit(None), Some(1000));
        assert_eq!(effective_limit(Some(5.0)), Some(5));
        assert_eq!(effective_limit(Some(2.5)), Some(3));
        assert_eq!(effective_limit(Some(0.0)), None);
        assert_eq!(effective_limit(Some(-1.0)), None);
    }

    #[test]
    fn schema_is_pis() {
        let tool = Typed::<FindTool>::default();
        assert_eq!(
            tool.tool().parameters,
            json!({
                "type": "object",
                "properties": {
                    "pattern": {"type": "string", "description": "Glob pattern to match files, e.g. '*.ts', '**/*.json', or 'src/**/*.spec.ts'"},
                    "path": {"type": "string", "description": "Directory to search in (default: current directory)"},
                    "limit": {"type": "number", "description": "Maximum number of results (default: 1000)"}
                },
                "required": ["pattern"]
            })
        );
        assert_eq!(tool.tool().name, "find");
        assert_eq!(tool.tool().description, DESCRIPTION);
    }
}
