//! `ls`: the entries of one directory, sorted as Pi sorts them, directories
//! marked with `/`, dotfiles included and `.gitignore` not applied.

pub mod collate;
pub mod ops;

use agent_core::ToolError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_with::skip_serializing_none;

use self::collate::first_in_order;
use self::ops::LsOperations;
use crate::definition::{ToolContext, ToolFailure, ToolOutput, ToolSpec, TypedTool};
use crate::render::result::ListKind;
use crate::render::{RenderOptions, StyledLine, call};
use crate::support::fs_error::FsError;
use crate::support::js_number;
use crate::support::truncate::{Truncation, truncate_list};
use crate::tools::OpsTool;

/// What the model reads about `ls` (Pi's text).
const DESCRIPTION: &str = "List directory contents. Returns entries sorted alphabetically, \
with '/' suffix for directories. Includes dotfiles. Output is truncated to 500 entries or 50KB \
(whichever is hit first).";

/// `ls` as the model and the system prompt know it.
pub const SPEC: ToolSpec = ToolSpec {
    prompt_snippet: Some("List directory contents"),
    list_result: Some(ListKind {
        singular: "entry",
        plural: "entries",
        empty: EMPTY_DIRECTORY,
        is_item: |_| true,
    }),
    ..ToolSpec::new("ls", "Ls", DESCRIPTION)
};

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

/// The `ls` tool; [`Typed`](crate::definition::Typed) makes it a
/// [`ToolDefinition`](crate::ToolDefinition). It reaches the file system only
/// through its [`LsOperations`].
pub type LsTool = OpsTool<dyn LsOperations>;

/// What `ls` reports besides its text (Pi's `LsToolDetails`).
#[skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LsDetails {
    /// The entry limit, when it was reached.
    #[serde(serialize_with = "js_number::serialize_option")]
    pub entry_limit_reached: Option<f64>,
    /// How the listing was cut to 50 KB, when it was.
    pub truncation: Option<Truncation>,
}

impl TypedTool for LsTool {
    type Args = LsArgs;
    type Details = LsDetails;
    const SPEC: ToolSpec = SPEC;

    /// Lists the directory.
    async fn run(
        &self,
        args: LsArgs,
        ctx: &ToolContext,
    ) -> Result<ToolOutput<LsDetails>, ToolFailure<LsDetails>> {
        let dir = self.resolve_dir(args.path.as_deref(), &ctx.cwd);
        let limit = args.limit.unwrap_or(DEFAULT_LIMIT);

        if !self.ops.exists(&dir).await {
            return Err(ToolFailure::new(format!(
                "Path not found: {}",
                dir.display()
            )));
        }
        let is_directory = self
            .ops
            .stat(&dir)
            .await
            .map_err(|e| ToolError::from(FsError::new(&e, "stat", &dir)))?
            .is_directory;
        if !is_directory {
            return Err(ToolFailure::new(format!(
                "Not a directory: {}",
                dir.display()
            )));
        }
        let names = self.ops.read_dir(&dir).await.map_err(|e| {
            ToolError::new(format!(
                "Cannot read directory: {}",
                FsError::new(&e, "scandir", &dir)
            ))
        })?;
        // One entry past `limit` is only needed to say the limit was reached.
        let take = if limit > 0.0 {
            (limit.ceil() as usize).saturating_add(1)
        } else {
            1
        };
        let first = first_in_order(&names, take);
        let (listed, entry_limit_reached) = self.list(&dir, &names, &first, limit).await;

        if listed.is_empty() {
            return Ok(ToolOutput::text(EMPTY_DIRECTORY));
        }
        let limit_notice = entry_limit_reached.map(|limit| {
            format!(
                "{} entries limit reached. Use limit={} for more",
                js_number::format(limit),
                js_number::format(limit * 2.0)
            )
        });
        let (text, truncation) = truncate_list(&listed, limit_notice, []);
        Ok(ToolOutput::text(text).with_details_if_any(LsDetails {
            entry_limit_reached,
            truncation,
        }))
    }

    /// `ls path` (`.` by default) and how many entries at most.
    fn render_call(&self, args: &Value, _options: RenderOptions) -> Vec<StyledLine> {
        let path = call::non_empty_str_arg(args, "path").unwrap_or(".");
        let line = call::with_main_arg(call::header("ls"), Some(path));
        vec![call::with_qualifiers(
            line,
            [call::number_qualifier(args, "limit")],
        )]
    }
}

impl LsTool {
    /// The entries `order` names (indices into `names`), up to `limit`, each
    /// `/`-suffixed when a directory; and the limit, when an entry was left
    /// after it. An entry that cannot be stated (a dangling symlink, or any
    /// entry of a directory that may be read but not searched) is listed
    /// without a `/` (DEVIATIONS #33): Pi leaves it out, so a directory of dead
    /// links read `(empty directory)` and the model never saw the links it had
    /// to fix or remove.
    async fn list(
        &self,
        dir: &std::path::Path,
        names: &[std::ffi::OsString],
        order: &[usize],
        limit: f64,
    ) -> (Vec<String>, Option<f64>) {
        let mut listed = Vec::new();
        for &index in order {
            if listed.len() as f64 >= limit {
                return (listed, Some(limit));
            }
            let raw = &names[index];
            let is_directory = self
                .ops
                .stat(&dir.join(raw))
                .await
                .is_ok_and(|stat| stat.is_directory);
            let suffix = if is_directory { "/" } else { "" };
            listed.push(format!("{}{suffix}", raw.to_string_lossy()));
        }
        (listed, None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::definition::{ToolDefinition, Typed};
    use serde_json::json;

    #[test]
    fn schema_and_texts_are_pis() {
        let tool = Typed::<LsTool>::default();
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
}
