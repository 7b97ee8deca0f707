//! `ls`: the entries of one directory, sorted as Pi sorts them, directories
//! marked with `/`, dotfiles included and `.gitignore` not applied.

pub mod collate;
pub mod ops;

use std::path::Path;
use std::sync::Arc;

use agent_ai::Tool;
use agent_core::{AgentToolResult, ToolError, UpdateSink};
use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use self::collate::collation_key;
use self::ops::{LocalLsOperations, LsOperations};
use crate::definition::{ToolContext, ToolDefinition, parse_args};
use crate::render::result::{ListKind, list_lines};
use crate::render::{RenderOptions, Style, StyledLine, call};
use crate::support::fs_error::FsError;
use crate::support::notices::append_notices;
use crate::support::paths::resolve_dir_arg;
use crate::support::truncate::{DEFAULT_MAX_BYTES, Limits, format_size, truncate_head};

/// The tool's name.
pub const NAME: &str = "ls";

/// What the model reads about the tool (Pi's text).
pub const DESCRIPTION: &str = "List directory contents. Returns entries sorted alphabetically, \
with '/' suffix for directories. Includes dotfiles. Output is truncated to 500 entries or 50KB \
(whichever is hit first).";

/// The line for "Available tools:" in the system prompt.
pub const PROMPT_SNIPPET: &str = "List directory contents";

/// Entries listed when the model gives no `limit`.
const DEFAULT_LIMIT: f64 = 500.0;

/// What an empty listing says (also when `limit` is 0 or less).
const EMPTY_DIRECTORY: &str = "(empty directory)";

/// Arguments of `ls`; the doc comments are the parameter descriptions the model reads.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct LsArgs {
    /// Directory to list (default: current directory)
    pub path: Option<String>,
    /// Maximum number of entries to return (default: 500)
    pub limit: Option<f64>,
}

/// The `ls` tool. It reaches the file system only through its [`LsOperations`].
pub struct LsTool {
    tool: Tool,
    ops: Arc<dyn LsOperations>,
}

impl LsTool {
    /// `ls` over the given operations (a remote file system, a test double).
    pub fn new(ops: Arc<dyn LsOperations>) -> Self {
        LsTool {
            tool: Tool::for_args::<LsArgs>(NAME, DESCRIPTION),
            ops,
        }
    }

    /// `ls` over the local file system.
    pub fn local() -> Self {
        LsTool::new(Arc::new(LocalLsOperations))
    }

    /// Lists the directory; the caller races this against cancellation.
    async fn list(&self, args: LsArgs, cwd: &Path) -> Result<AgentToolResult, ToolError> {
        let dir = resolve_dir_arg(args.path.as_deref(), cwd);
        let limit = args.limit.unwrap_or(DEFAULT_LIMIT);

        if !self.ops.exists(&dir).await {
            return Err(ToolError::new(format!("Path not found: {}", dir.display())));
        }
        let is_directory = self
            .ops
            .stat(&dir)
            .await
            .map_err(|e| ToolError::from(FsError::new(&e, "stat", &dir)))?
            .is_directory;
        if !is_directory {
            return Err(ToolError::new(format!(
                "Not a directory: {}",
                dir.display()
            )));
        }
        let mut entries: Vec<(String, std::ffi::OsString)> = self
            .ops
            .read_dir(&dir)
            .await
            .map_err(|e| {
                ToolError::new(format!(
                    "Cannot read directory: {}",
                    FsError::new(&e, "scandir", &dir)
                ))
            })?
            .into_iter()
            .map(|raw| (raw.to_string_lossy().into_owned(), raw))
            .collect();
        // Pi sorts Node's byte-ordered readdir with a stable, case-insensitive
        // localeCompare; the raw bytes break ties the same way.
        entries.sort_by_cached_key(|(name, raw)| {
            (collation_key(name), raw.as_encoded_bytes().to_vec())
        });

        let mut listed: Vec<String> = Vec::new();
        let mut entry_limit_reached = false;
        for (name, raw) in entries {
            if listed.len() as f64 >= limit {
                entry_limit_reached = true;
                break;
            }
            // Entries that vanish or cannot be stated (a dangling symlink) are left out, as in Pi.
            let Ok(stat) = self.ops.stat(&dir.join(&raw)).await else {
                continue;
            };
            let suffix = if stat.is_directory { "/" } else { "" };
            listed.push(format!("{name}{suffix}"));
        }

        if listed.is_empty() {
            return Ok(AgentToolResult::text(EMPTY_DIRECTORY));
        }
        let truncation = truncate_head(&listed.join("\n"), Limits::bytes_only());
        let mut notices = Vec::new();
        let mut details = Map::new();
        if entry_limit_reached {
            notices.push(format!(
                "{} entries limit reached. Use limit={} for more",
                js_number(limit),
                js_number(limit * 2.0)
            ));
            details.insert("entryLimitReached".into(), js_number_value(limit));
        }
        if truncation.truncated {
            notices.push(format!("{} limit reached", format_size(DEFAULT_MAX_BYTES)));
            details.insert("truncation".into(), json!(truncation));
        }
        let result = AgentToolResult::text(append_notices(truncation.content, &notices));
        Ok(if details.is_empty() {
            result
        } else {
            result.with_details(Value::Object(details))
        })
    }
}

#[async_trait]
impl ToolDefinition for LsTool {
    fn tool(&self) -> &Tool {
        &self.tool
    }

    fn label(&self) -> &str {
        "Ls"
    }

    fn prompt_snippet(&self) -> Option<&str> {
        Some(PROMPT_SNIPPET)
    }

    /// `ls path` (`.` by default) and how many entries at most.
    fn render_call(&self, args: &Value, _options: RenderOptions) -> Vec<StyledLine> {
        let path = call::non_empty_str_arg(args, "path").unwrap_or(".");
        let line = call::with_main_arg(call::header("ls"), Some(path));
        vec![match call::number_arg(args, "limit") {
            Some(limit) => line.push(format!(" limit {}", call::format_number(limit)), Style::Dim),
            None => line,
        }]
    }

    /// The number of entries and the first lines (all when expanded).
    fn render_result(
        &self,
        result: &AgentToolResult,
        is_error: bool,
        options: RenderOptions,
    ) -> Vec<StyledLine> {
        let kind = ListKind {
            singular: "entry",
            plural: "entries",
            empty: EMPTY_DIRECTORY,
            is_item: |_| true,
        };
        list_lines(result, is_error, kind, options)
    }

    async fn execute(
        &self,
        _tool_call_id: &str,
        params: Value,
        ctx: ToolContext,
        _updates: UpdateSink,
    ) -> Result<AgentToolResult, ToolError> {
        if ctx.cancel.is_cancelled() {
            return Err(aborted());
        }
        let args: LsArgs = parse_args(NAME, params)?;
        race_cancel(&ctx.cancel, self.list(args, &ctx.cwd)).await
    }
}

/// Runs `work` unless `cancel` fires first.
async fn race_cancel(
    cancel: &CancellationToken,
    work: impl Future<Output = Result<AgentToolResult, ToolError>>,
) -> Result<AgentToolResult, ToolError> {
    tokio::select! {
        biased;
        () = cancel.cancelled() => Err(aborted()),
        result = work => result,
    }
}

fn aborted() -> ToolError {
    ToolError::new("Operation aborted")
}

/// A number as JavaScript prints it in a template string (`500`, `2.5`); the
/// two agree for every limit a model plausibly sends.
fn js_number(n: f64) -> String {
    format!("{n}")
}

/// A number as JSON in `details`: `500`, not `500.0`, for whole numbers.
fn js_number_value(n: f64) -> Value {
    if n.fract() == 0.0 && n.abs() < 9_007_199_254_740_992.0 {
        json!(n as i64)
    } else {
        json!(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schema_and_texts_are_pis() {
        let tool = LsTool::local();
        assert_eq!(tool.tool().name, "ls");
        assert_eq!(
            tool.tool().description,
            "List directory contents. Returns entries sorted alphabetically, with '/' suffix \
for directories. Includes dotfiles. Output is truncated to 500 entries or 50KB (whichever is \
hit first)."
        );
        assert_eq!(
            tool.tool().parameters,
            json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "Directory to list (default: current directory)"},
                    "limit": {"type": "number", "description": "Maximum number of entries to return (default: 500)"}
                }
            })
        );
        assert_eq!(tool.prompt_snippet(), Some("List directory contents"));
        assert!(tool.prompt_guidelines().is_empty());
        assert_eq!(tool.label(), "Ls");
    }

    #[test]
    fn limits_print_like_javascript_numbers() {
        assert_eq!(js_number(500.0), "500");
        assert_eq!(js_number(2.5), "2.5");
        assert_eq!(js_number_value(500.0), json!(500));
        assert_eq!(js_number_value(2.5), json!(2.5));
    }
}
