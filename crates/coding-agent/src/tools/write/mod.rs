//! `write`: create or overwrite a file (`docs/tool-behaviour.md` §4.2).

pub mod ops;

use agent_core::{AgentToolResult, ToolError};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use self::ops::WriteOperations;
use crate::definition::{OnCancel, ToolContext, ToolFailure, ToolOutput, ToolSpec, TypedTool};
use crate::render::preview::{count, head_lines, line_count};
use crate::render::{RenderOptions, Style, StyledLine, call, result};
use crate::support::cancel::aborted;
use crate::support::truncate::format_size;
use crate::tools::OpsTool;

/// What the model reads about `write` (Pi's text).
const DESCRIPTION: &str = "Write content to a file. Creates the file if it doesn't exist, overwrites if it does. Automatically creates parent directories.";

/// `write` as the model and the system prompt know it. A write stops only
/// between its steps, so a file is never changed behind an "aborted".
pub const SPEC: ToolSpec = ToolSpec {
    prompt_snippet: Some("Create or overwrite files"),
    prompt_guidelines: &["Use write only for new files or complete rewrites."],
    on_cancel: OnCancel::ToolAnswers,
    ..ToolSpec::new("write", "Write", DESCRIPTION)
};

/// Arguments of `write`; the doc comments are Pi's parameter descriptions.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct WriteArgs {
    /// Path to the file to write (relative or absolute)
    pub path: String,
    /// Content to write to the file
    pub content: String,
}

/// Lines of the new content shown before the view is expanded.
const CONTENT_PREVIEW_LINES: usize = 10;

/// The `write` tool: writes a whole file, creating parent directories, one
/// write at a time per file (the mutation queue), atomically.
/// [`Typed`](crate::definition::Typed) makes it a
/// [`ToolDefinition`](crate::ToolDefinition).
pub type WriteTool = OpsTool<dyn WriteOperations>;

impl TypedTool for WriteTool {
    type Args = WriteArgs;
    type Details = ();
    const SPEC: ToolSpec = SPEC;

    /// `write path (N lines, size)`, then the new content as added lines:
    /// its first lines while collapsed (also while it streams).
    fn render_call(&self, args: &Value, options: RenderOptions) -> Vec<StyledLine> {
        let header = call::with_main_arg(call::header("write"), call::str_arg(args, "path"));
        let Some(content) = call::str_arg(args, "content") else {
            return vec![header];
        };
        let size = format!(
            " ({}, {})",
            count(line_count(content), "line", "lines"),
            format_size(content.len())
        );
        let mut lines = vec![header.push(size, Style::Dim)];
        lines.extend(head_lines(
            content,
            CONTENT_PREVIEW_LINES,
            Style::Success,
            options,
        ));
        lines
    }

    /// The tool's confirmation dim (the call already shows the content);
    /// errors in the error style.
    fn render_result(
        &self,
        result: &AgentToolResult,
        _details: Option<&()>,
        is_error: bool,
        options: RenderOptions,
    ) -> Vec<StyledLine> {
        if is_error {
            return result::error_lines(result, options);
        }
        result
            .content
            .iter()
            .filter_map(|content| content.as_text())
            .flat_map(|text| head_lines(text, result::TEXT_PREVIEW_LINES, Style::Dim, options))
            .collect()
    }

    async fn run(
        &self,
        args: WriteArgs,
        ctx: &ToolContext,
    ) -> Result<ToolOutput<()>, ToolFailure<()>> {
        let abs = self.resolve(&args.path, &ctx.cwd);
        if args.path.ends_with('/') {
            // A folder's name: Node's open fails so, before any folder is
            // made (ours failed later, naming a rename the model never asked
            // for).
            let mut shown = abs.display().to_string();
            if !shown.ends_with('/') {
                shown.push('/');
            }
            return Err(ToolError::new(format!(
                "EISDIR: illegal operation on a directory, open '{shown}'"
            ))
            .into());
        }
        let changed = self
            .mutate_file(&abs, &ctx.cancel, |ops, target, cancel| async move {
                if let Some(dir) = target.parent() {
                    ops.mkdir(dir).await?;
                }
                if cancel.is_cancelled() {
                    return Err(aborted());
                }
                // DEVIATIONS #3: Pi counts UTF-16 code units and calls them bytes.
                let bytes = args.content.len();
                ops.write_file(&target, args.content.into_bytes()).await?;
                Ok(ToolOutput::text(format!(
                    "Successfully wrote {bytes} bytes to {}",
                    args.path
                )))
            })
            .await??;
        Ok(changed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::definition::{ToolDefinition, Typed};
    use serde_json::json;

    #[test]
    fn schema_is_pis() {
        assert_eq!(
            Typed::<WriteTool>::default().tool().parameters,
            json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "Path to the file to write (relative or absolute)"},
                    "content": {"type": "string", "description": "Content to write to the file"}
                },
                "required": ["path", "content"]
            })
        );
    }
}
