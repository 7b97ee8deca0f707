//! `edit`: exact-text replacements in one file (`docs/tool-behaviour.md` §4.3).

mod apply;
pub mod diff;
pub mod diff_view;
pub mod fuzzy;
pub mod ops;

use agent_core::{AgentToolResult, ToolError};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use serde_with::skip_serializing_none;

pub use self::apply::{Applied, ApplyError, Replacement, apply_edits};
use self::diff_view::diff_lines;
use self::ops::{EditOperations, within_edit_limit};
use crate::definition::{OnCancel, ToolContext, ToolFailure, ToolOutput, ToolSpec, TypedTool};
use crate::render::{RenderOptions, Style, StyledLine, call, result};
use crate::support::cancel::aborted;
use crate::support::fs_error::FsError;
use crate::tools::OpsTool;

/// What the model reads about `edit` (Pi's text).
const DESCRIPTION: &str = "Edit a single file using exact text replacement. Every edits[].oldText must match a unique, non-overlapping region of the original file. If two changes affect the same block or nearby lines, merge them into one edit instead of emitting overlapping edits. Do not include large unchanged regions just to connect distant changes.";

/// `edit` as the model and the system prompt know it. An edit stops only
/// between its steps, so a file is never changed behind an "aborted".
pub const SPEC: ToolSpec = ToolSpec {
    prompt_snippet: Some(
        "Make precise file edits with exact text replacement, including multiple disjoint edits in one call",
    ),
    prompt_guidelines: GUIDELINES,
    on_cancel: OnCancel::ToolAnswers,
    ..ToolSpec::new("edit", "Edit", DESCRIPTION)
};

const GUIDELINES: &[&str] = &[
    "Use edit for precise changes (edits[].oldText must match exactly)",
    "When changing multiple separate locations in one file, use one edit call with multiple entries in edits[] instead of multiple edit calls",
    "Each edits[].oldText is matched against the original file, not after earlier edits are applied. Do not emit overlapping or nested edits. Merge nearby changes into one edit.",
    "Keep edits[].oldText as small as possible while still being unique in the file. Do not pad with large unchanged regions.",
];

/// Arguments of `edit`; the doc comments are Pi's parameter descriptions.
/// Unknown properties are rejected, as Pi's schema says
/// (`additionalProperties: false`).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EditArgs {
    /// Path to the file to edit (relative or absolute)
    pub path: String,
    /// One or more targeted replacements. Each edit is matched against the original file, not incrementally. Do not include overlapping or nested edits. If two changes touch the same block or nearby lines, merge them into one edit instead.
    pub edits: Vec<EditEntry>,
}

// One replacement. (A doc comment here would become a description in the
// schema, which Pi's has not.)
#[allow(missing_docs)]
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct EditEntry {
    /// Exact text for one targeted replacement. It must be unique in the original file and must not overlap with any other edits[].oldText in the same call.
    pub old_text: String,
    /// Replacement text for this targeted edit.
    pub new_text: String,
}

/// The `edit` tool: replaces unique, non-overlapping text spans in one file,
/// all or none, one call at a time per file (the mutation queue), atomically.
/// [`Typed`](crate::definition::Typed) makes it a
/// [`ToolDefinition`](crate::ToolDefinition).
pub type EditTool = OpsTool<dyn EditOperations>;

/// What `edit` reports besides its text (Pi's `EditToolDetails`).
#[skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EditDetails {
    /// Pi's numbered diff of the change.
    pub diff: String,
    /// The first line that changed (1-based), when one did.
    pub first_changed_line: Option<usize>,
}

impl TypedTool for EditTool {
    type Args = EditArgs;
    type Details = EditDetails;
    const SPEC: ToolSpec = SPEC;

    /// Pi's shims for shapes models send: `edits` as a JSON string holding an
    /// array, and the legacy top-level `oldText`/`newText` (appended to
    /// `edits`).
    fn prepare_arguments(&self, arguments: Value) -> Result<Value, ToolError> {
        Ok(prepare_edit_arguments(arguments))
    }

    /// `edit path`, with the number of replacements when there are several.
    fn render_call(&self, args: &Value, _options: RenderOptions) -> Vec<StyledLine> {
        let line = call::with_main_arg(call::header("edit"), call::str_arg(args, "path"));
        let edits = args
            .get("edits")
            .and_then(Value::as_array)
            .map_or(0, Vec::len);
        vec![if edits > 1 {
            line.push(format!(" ({edits} edits)"), Style::Dim)
        } else {
            line
        }]
    }

    /// The coloured diff from the details; the tool's text when a hook
    /// replaced the details; errors in the error style.
    fn render_result(
        &self,
        result: &AgentToolResult,
        details: Option<&EditDetails>,
        is_error: bool,
        options: RenderOptions,
    ) -> Vec<StyledLine> {
        if is_error {
            return result::error_lines(result, options);
        }
        let diff = details
            .map(|details| details.diff.as_str())
            .filter(|diff| !diff.is_empty());
        match diff {
            Some(diff) => diff_lines(diff, options),
            None => result::content_lines(result, options),
        }
    }

    async fn run(
        &self,
        args: EditArgs,
        ctx: &ToolContext,
    ) -> Result<ToolOutput<EditDetails>, ToolFailure<EditDetails>> {
        if args.edits.is_empty() {
            return Err(ToolFailure::new(
                "Edit tool input is invalid. edits must contain at least one replacement.",
            ));
        }
        let abs = self.resolve(&args.path, &ctx.cwd);
        let changed = self
            .mutate_file(&abs, &ctx.cancel, |ops, target, cancel| async move {
                ops.access(&target)
                    .await
                    .map_err(|e| could_not_edit(&args.path, &e))?;
                if cancel.is_cancelled() {
                    return Err(aborted());
                }
                let original = ops.read_file(&target).await?;
                // Here, not only in the local Operations: over in-memory
                // ones a 40 MB one-line file was edited and took 1.2 GB.
                within_edit_limit(original.len() as u64)
                    .map_err(|e| could_not_edit(&args.path, &e))?;
                if cancel.is_cancelled() {
                    return Err(aborted());
                }
                let replacements: Vec<Replacement> = args
                    .edits
                    .into_iter()
                    .map(|e| Replacement {
                        old_text: e.old_text,
                        new_text: e.new_text,
                    })
                    .collect();
                let count = replacements.len();
                let applied =
                    tokio::task::spawn_blocking(move || apply_edits(&original, &replacements))
                        .await
                        .map_err(|e| ToolError::new(e.to_string()))?
                        .map_err(|e| ToolError::new(e.message(&args.path)))?;
                if cancel.is_cancelled() {
                    return Err(aborted());
                }
                ops.write_file(&target, applied.content).await?;
                Ok(ToolOutput::text(format!(
                    "Successfully replaced {count} block(s) in {}.",
                    args.path
                ))
                .with_details(EditDetails {
                    diff: applied.diff.diff,
                    first_changed_line: applied.diff.first_changed_line,
                }))
            })
            .await??;
        Ok(changed)
    }
}

/// Pi's text when the file cannot be read and written.
fn could_not_edit(path: &str, err: &FsError) -> ToolError {
    ToolError::new(match err.code {
        Some(code) => format!("Could not edit file: {path}. Error code: {code}."),
        None => format!("Could not edit file: {path}. Error: {}.", err.message),
    })
}

/// Pi's `prepareArguments` for `edit`: runs before validation, so it sees
/// whatever the model sent.
fn prepare_edit_arguments(arguments: Value) -> Value {
    let Value::Object(mut args) = arguments else {
        return arguments;
    };
    if let Some(Value::String(text)) = args.get("edits")
        && let Ok(parsed @ Value::Array(_)) = serde_json::from_str::<Value>(text)
    {
        args.insert("edits".into(), parsed);
    }
    if let (Some(Value::String(_)), Some(Value::String(_))) =
        (args.get("oldText"), args.get("newText"))
    {
        let old_text = args.remove("oldText").unwrap_or_default();
        let new_text = args.remove("newText").unwrap_or_default();
        let mut edits = match args.remove("edits") {
            Some(Value::Array(edits)) => edits,
            _ => Vec::new(),
        };
        edits.push(json!({"oldText": old_text, "newText": new_text}));
        args.insert("edits".into(), Value::Array(edits));
    }
    Value::Object(args)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::definition::{ToolDefinition, Typed};

    #[test]
    fn schema_is_pis_and_closed() {
        assert_eq!(
            Typed::<EditTool>::default().tool().parameters,
            json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "Path to the file to edit (relative or absolute)"},
                    "edits": {
                        "type": "array",
                        "description": "One or more targeted replacements. Each edit is matched against the original file, not incrementally. Do not include overlapping or nested edits. If two changes touch the same block or nearby lines, merge them into one edit instead.",
                        "items": {
                            "type": "object",
                            "properties": {
                                "oldText": {"type": "string", "description": "Exact text for one targeted replacement. It must be unique in the original file and must not overlap with any other edits[].oldText in the same call."},
                                "newText": {"type": "string", "description": "Replacement text for this targeted edit."}
                            },
                            "required": ["oldText", "newText"],
                            "additionalProperties": false
                        }
                    }
                },
                "required": ["path", "edits"],
                "additionalProperties": false
            })
        );
    }

    #[test]
    fn legacy_old_new_text_becomes_one_edit() {
        assert_eq!(
            prepare_edit_arguments(json!({"path": "p", "oldText": "aaa", "newText": "x"})),
            json!({"path": "p", "edits": [{"oldText": "aaa", "newText": "x"}]})
        );
    }

    #[test]
    fn edits_sent_as_a_json_string_are_parsed() {
        assert_eq!(
            prepare_edit_arguments(
                json!({"path": "p", "edits": "[{\"oldText\":\"a\",\"newText\":\"b\"}]"})
            ),
            json!({"path": "p", "edits": [{"oldText": "a", "newText": "b"}]})
        );
    }

    #[test]
    fn legacy_edit_is_appended_to_edits() {
        assert_eq!(
            prepare_edit_arguments(json!({
                "path": "p",
                "edits": [{"oldText": "q", "newText": "r"}],
                "oldText": "a",
                "newText": "b"
            })),
            json!({"path": "p", "edits": [{"oldText": "q", "newText": "r"}, {"oldText": "a", "newText": "b"}]})
        );
    }

    #[test]
    fn unparseable_or_non_array_edits_strings_are_left_for_validation() {
        for edits in ["[{oops", "{\"oldText\":\"a\",\"newText\":\"b\"}"] {
            assert_eq!(
                prepare_edit_arguments(json!({"path": "f.py", "edits": edits})),
                json!({"path": "f.py", "edits": edits})
            );
        }
        assert_eq!(prepare_edit_arguments(json!("text")), json!("text"));
    }

    #[test]
    fn legacy_pair_needs_both_strings() {
        let args = json!({"path": "p", "oldText": "a", "newText": 1});
        assert_eq!(prepare_edit_arguments(args.clone()), args);
    }
}
