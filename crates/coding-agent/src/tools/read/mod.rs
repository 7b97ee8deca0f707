//! `read`: a file's text, a window of its lines at a time, or an image as an
//! attachment. Texts, limits and notices are Pi 0.73.1's (`docs/tool-behaviour.md` §4.1).
//!
//! Where we go beyond Pi:
//! - the file is streamed, never loaded whole: only the lines shown are kept,
//!   the rest is counted (DEVIATIONS #6);
//! - a binary file (a NUL byte in its first 8 KB) is described in one line
//!   instead of being sent as bytes decoded to replacement characters;
//! - an image file over 64 MB, or an image too large to decode, is left out
//!   with the reason, unread or undecoded (DEVIATIONS #24).

pub mod image;
pub mod lines;
pub mod ops;

use std::path::{Path, PathBuf};

use agent_ai::Content;
use agent_core::ToolError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_with::skip_serializing_none;

use self::lines::{LineWindow, WindowCollector};
use self::ops::{FileInfo, ReadError, ReadOperations};
use crate::definition::{ToolContext, ToolFailure, ToolOutput, ToolSpec, TypedTool};
use crate::render::{RenderOptions, Style, StyledLine, call};
use crate::support::cancel::aborted;
use crate::support::fs_error::FsError;
use crate::support::js_number;
use crate::support::notices::append_notice;
use crate::support::paths::read_path_candidates;
use crate::support::truncate::{DEFAULT_MAX_BYTES, Limits, TruncatedBy, Truncation, format_size};
use crate::tools::OpsTool;
use image::ImageType;

/// What the model reads about `read` (Pi's text, word for word).
const DESCRIPTION: &str = "Read the contents of a file. Supports text files and images (jpg, png, gif, webp). Images are sent as attachments. For text files, output is truncated to 2000 lines or 50KB (whichever is hit first). Use offset/limit for large files. When you need the full file, continue with offset until complete.";

/// `read` as the model and the system prompt know it.
pub const SPEC: ToolSpec = ToolSpec {
    prompt_snippet: Some("Read file contents"),
    prompt_guidelines: &["Use read to examine files instead of cat or sed."],
    ..ToolSpec::new("read", "Read", DESCRIPTION)
};

/// Bytes looked at before reading: magic bytes tell images, a NUL byte
/// tells binary files (the same window git and grep use).
const SNIFF_LEN: usize = 8192;

/// The arguments of `read`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct ReadArgs {
    /// Path to the file to read (relative or absolute)
    pub path: String,
    /// Line number to start reading from (1-indexed)
    pub offset: Option<f64>,
    /// Maximum number of lines to read
    pub limit: Option<f64>,
}

/// How `read` treats images.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadToolOptions {
    /// Shrink and re-encode images over the inline limits (2000x2000 pixels,
    /// 4.5 MiB of base64); when false every image is attached as it is.
    /// Pi's `autoResizeImages`, true by default.
    pub auto_resize_images: bool,
}

impl Default for ReadToolOptions {
    fn default() -> Self {
        ReadToolOptions {
            auto_resize_images: true,
        }
    }
}

/// The `read` tool; [`Typed`](crate::definition::Typed) makes it a
/// [`ToolDefinition`](crate::ToolDefinition).
pub type ReadTool = OpsTool<dyn ReadOperations, ReadToolOptions>;

/// What `read` reports besides its text (Pi's `ReadToolDetails`).
#[skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ReadDetails {
    /// How the text was cut to the line and byte limits, when it was.
    pub truncation: Option<Truncation>,
}

impl ReadTool {
    /// The file to read and what it is: the plain path when it can be
    /// opened, else the first other spelling that exists (macOS screenshot
    /// names), else the plain path's error. The plain path is not looked up
    /// before it is opened: one system call fewer on every read.
    async fn locate(&self, path: &str, cwd: &Path) -> Result<(PathBuf, FileInfo), ToolError> {
        let mut candidates = read_path_candidates(path, cwd, self.ops.home_dir().as_deref());
        let plain = candidates.remove(0);
        let error = match self.ops.access(&plain).await {
            Ok(info) => return Ok((plain, info)),
            Err(error) => error,
        };
        for candidate in candidates {
            if self.ops.exists(&candidate).await {
                let info = self
                    .ops
                    .access(&candidate)
                    .await
                    .map_err(|e| FsError::new(&e, "access", &candidate))?;
                return Ok((candidate, info));
            }
        }
        Err(FsError::new(&error, "access", &plain).into())
    }

    async fn read(
        &self,
        args: ReadArgs,
        ctx: &ToolContext,
    ) -> Result<ToolOutput<ReadDetails>, ToolError> {
        let (absolute, info) = self.locate(&args.path, &ctx.cwd).await?;
        if info.is_dir {
            return Err(ToolError::new(
                "EISDIR: illegal operation on a directory, read",
            ));
        }
        if let Some(special) = info.special.filter(|kind| kind.waits()) {
            return Err(ToolError::new(special.refusal(
                &absolute,
                "reading it waits for a writer",
                "cat",
            )));
        }
        let prefix = self
            .ops
            .read_prefix(&absolute, SNIFF_LEN)
            .await
            .map_err(|e| FsError::without_path(&e, "read"))?;
        if let Some(kind) = image::sniff(&prefix) {
            return self.read_image(kind, &absolute, info.len, ctx).await;
        }
        if prefix.contains(&0) {
            let what = match binary_size(&info, prefix.len()) {
                Some(what) => format!(" ({what})"),
                None => String::new(),
            };
            return Ok(ToolOutput::text(format!(
                "Binary file {}{what} cannot be shown as text. Use bash (e.g. file, strings, xxd) to inspect it.",
                args.path
            )));
        }
        // A file shorter than the prefix came whole with it: its window is
        // cut from those bytes instead of opening and reading it again.
        let whole = (prefix.len() < SNIFF_LEN).then_some(prefix);
        self.read_text(&args, &absolute, whole, ctx).await
    }

    async fn read_text(
        &self,
        args: &ReadArgs,
        absolute: &Path,
        whole: Option<Vec<u8>>,
        ctx: &ToolContext,
    ) -> Result<ToolOutput<ReadDetails>, ToolError> {
        // Pi: `offset ? max(0, offset - 1) : 0`; casting saturates, so NaN
        // and negative offsets start at line 1 and fractions round down.
        let start = args.offset.map_or(0, |offset| (offset - 1.0) as usize);
        let limit = line_limit(args.limit);
        let window = LineWindow {
            start,
            max_selected: limit,
            limits: Limits::default(),
        };
        let text = match whole {
            Some(bytes) => {
                let mut collector = WindowCollector::new(window);
                collector.push(&bytes);
                collector.finish()
            }
            None => self
                .ops
                .read_lines(absolute, window, &ctx.cancel)
                .await
                .map_err(read_error)?,
        };
        let total = text.file_lines;
        if start >= total {
            return Err(ToolError::new(format!(
                "Offset {} is beyond end of file ({total} lines total)",
                js_number::format(args.offset.unwrap_or(0.0))
            )));
        }
        let selection = text.selection;
        let first = start + 1;
        if selection.first_line_exceeds_limit {
            let notice = format!(
                "[Line {first} is {}, exceeds {} limit. Use bash: sed -n '{first}p' {} | head -c {DEFAULT_MAX_BYTES}]",
                format_size(text.first_line_bytes),
                format_size(DEFAULT_MAX_BYTES),
                shell_word(&args.path),
            );
            return Ok(ToolOutput::text(notice).with_details(ReadDetails {
                truncation: Some(selection),
            }));
        }
        if selection.truncated {
            let last = (first + selection.output_lines).saturating_sub(1);
            let next = last + 1;
            let notice = match selection.truncated_by {
                Some(TruncatedBy::Lines) => {
                    format!(
                        "Showing lines {first}-{last} of {total}. Use offset={next} to continue."
                    )
                }
                _ => format!(
                    "Showing lines {first}-{last} of {total} ({} limit). Use offset={next} to continue.",
                    format_size(DEFAULT_MAX_BYTES)
                ),
            };
            let text = append_notice(&selection.content, &notice);
            return Ok(ToolOutput::text(text).with_details(ReadDetails {
                truncation: Some(selection),
            }));
        }
        if let Some(limit) = limit
            && start.saturating_add(limit) < total
        {
            let shown_to = start + limit;
            let notice = format!(
                "{} more lines in file. Use offset={} to continue.",
                total - shown_to,
                shown_to + 1
            );
            return Ok(ToolOutput::text(append_notice(&selection.content, &notice)));
        }
        Ok(ToolOutput::text(selection.content))
    }

    /// The image of `len` bytes at `absolute`, fitted to what a model takes;
    /// one over [`image::MAX_IMAGE_FILE_BYTES`] is omitted unread, since it is
    /// read whole.
    async fn read_image(
        &self,
        kind: ImageType,
        absolute: &Path,
        len: u64,
        ctx: &ToolContext,
    ) -> Result<ToolOutput<ReadDetails>, ToolError> {
        if len > image::MAX_IMAGE_FILE_BYTES {
            return Ok(ToolOutput::text(omitted(
                kind,
                &image::file_too_large_reason(len),
            )));
        }
        let bytes = self
            .ops
            .read_all(absolute, &ctx.cancel)
            .await
            .map_err(read_error)?;
        let resize = self.options.auto_resize_images;
        let cancel = ctx.cancel.clone();
        let fitted = tokio::task::spawn_blocking(move || {
            if resize {
                image::fit_image(&bytes, kind, &cancel)
            } else {
                Ok(image::Fit::Image(image::FittedImage::unchanged(
                    &bytes, kind,
                )))
            }
        })
        .await
        .map_err(|e| ToolError::new(e.to_string()))?
        .map_err(|_| aborted())?;
        let mut content = match fitted {
            image::Fit::Image(fitted) => {
                let mut text = format!("Read image file [{}]", fitted.mime_type);
                if let Some(note) = fitted.dimension_note() {
                    text.push('\n');
                    text.push_str(&note);
                }
                vec![
                    Content::text(text),
                    Content::image(fitted.data, fitted.mime_type),
                ]
            }
            unfit => {
                let why = unfit.too_large_reason().unwrap_or_else(|| {
                    "could not be resized below the inline image size limit".to_owned()
                });
                vec![Content::text(omitted(kind, &why))]
            }
        };
        image::note_unsent_images(&mut content, ctx.model.as_ref());
        Ok(ToolOutput {
            content,
            details: None,
        })
    }
}

impl TypedTool for ReadTool {
    type Args = ReadArgs;
    type Details = ReadDetails;
    const SPEC: ToolSpec = SPEC;

    /// `read path:first-last`, the range as the tool will read it.
    fn render_call(&self, args: &Value, _options: RenderOptions) -> Vec<StyledLine> {
        let line = call::with_main_arg(call::header("read"), call::str_arg(args, "path"));
        let range = line_range(
            call::number_arg(args, "offset"),
            call::number_arg(args, "limit"),
        );
        vec![match range {
            Some(range) => line.push(range, Style::Dim),
            None => line,
        }]
    }

    async fn run(
        &self,
        args: ReadArgs,
        ctx: &ToolContext,
    ) -> Result<ToolOutput<ReadDetails>, ToolFailure<ReadDetails>> {
        Ok(self.read(args, ctx).await?)
    }
}

/// `:first-last` (1-based) for a call with an offset or a limit, numbers
/// taken as `read_text` takes them; `:first` when no last line is known.
fn line_range(offset: Option<f64>, limit: Option<f64>) -> Option<String> {
    if offset.is_none() && limit.is_none() {
        return None;
    }
    let first = offset.map_or(0, |offset| (offset - 1.0) as usize) + 1;
    Some(match line_limit(limit) {
        Some(limit) if limit > 0 => format!(":{first}-{}", first.saturating_add(limit - 1)),
        _ => format!(":{first}"),
    })
}

/// The lines a `limit` argument asks for: its whole part (DEVIATIONS #20),
/// and none for a negative one, which asks for no limit (DEVIATIONS #34).
/// Pi slices with it (`lines.slice(start, start + limit)`), showing every
/// line but the last at line 1, nothing further on, and a notice that says
/// `Use offset=0`; a plain cast made it 0, which showed nothing.
fn line_limit(limit: Option<f64>) -> Option<usize> {
    limit
        .filter(|limit| *limit >= 0.0)
        .map(|limit| limit as usize)
}

/// `path` as one word of a shell command, for the `sed` hint (DEVIATIONS
/// #35): unchanged when it holds only characters the shell takes literally,
/// as Pi writes it; else single-quoted, a leading `~/` left outside so the
/// shell expands it as read did. Pi pastes it raw, so `my notes.txt` gave a
/// command reading `my` and `notes.txt`.
fn shell_word(path: &str) -> String {
    let (home, rest) = match path.strip_prefix("~/") {
        Some(rest) => ("~/", rest),
        None if path == "~" => return path.to_owned(),
        None => ("", path),
    };
    // `~` elsewhere is quoted: the shell expands `~user`, read does not.
    let is_plain = |c: char| c.is_alphanumeric() || "_-.,/+:=@%".contains(c);
    if !rest.is_empty() && rest.chars().all(is_plain) {
        return path.to_owned();
    }
    format!("{home}'{}'", rest.replace('\'', r"'\''"))
}

/// What a binary file's description gives as its size, when `prefix`
/// bytes of it were read: its size, or what it is for a device, which has
/// none (`/dev/zero` says 0 bytes). procfs says 0 bytes too, for files that
/// hold some (`/proc/self/cmdline` read as `(0B)`): a size under what was
/// read is the bytes read, when they were all of the file, else unknown.
fn binary_size(info: &FileInfo, prefix: usize) -> Option<String> {
    let size = match info.special {
        Some(special) => return Some(special.name().to_owned()),
        None if info.len >= prefix as u64 => usize::try_from(info.len).unwrap_or(usize::MAX),
        None if prefix < SNIFF_LEN => prefix,
        None => return None,
    };
    Some(format_size(size))
}

/// What the model reads of an image of `kind` left out because of `why`.
fn omitted(kind: ImageType, why: &str) -> String {
    format!(
        "Read image file [{}]\n[Image omitted: {why}.]",
        kind.mime_type()
    )
}

fn read_error(error: ReadError) -> ToolError {
    match error {
        ReadError::Aborted => aborted(),
        ReadError::Io(e) => FsError::without_path(&e, "read").into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shell_word_is_quoted_only_when_it_must_be() {
        for (path, word) in [
            ("src/main.rs", "src/main.rs"),
            ("~/notes/été.md", "~/notes/été.md"),
            ("~/my notes.md", "~/'my notes.md'"),
            ("it's", r"'it'\''s'"),
            ("a;rm -rf b", "'a;rm -rf b'"),
            ("~bob/x", "'~bob/x'"),
            ("~/", "~/''"),
            ("", "''"),
        ] {
            assert_eq!(shell_word(path), word, "{path}");
        }
    }

    #[test]
    fn a_negative_limit_is_none_and_a_fraction_its_whole_part() {
        assert_eq!(line_limit(Some(-1.0)), None);
        assert_eq!(line_limit(Some(2.5)), Some(2));
        assert_eq!(line_limit(Some(0.0)), Some(0));
        assert_eq!(line_limit(None), None);
    }
}
