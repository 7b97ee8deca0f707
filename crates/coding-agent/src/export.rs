//! `export_html`: a session as one self-contained HTML file (styles inline,
//! images as `data:` URIs, no script, nothing fetched), readable offline in
//! any browser. It shows the branch's whole history: the messages a
//! compaction summarised too, and the summary where it took their place.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use agent_ai::{AssistantContent, Content, Message, UserContent};

use crate::compaction::SummaryKind;
use crate::session::{ContextItem, HistoryItem, SessionHeader, SessionManager};
use crate::session_event::grouped;
use crate::support::atomic_write::write_atomic_private;
use crate::support::fs_error::{FsError, SpecialFile};
use crate::support::paths::normalize_lexically;

/// The page's styles: readable without a network, light and dark alike.
const STYLE: &str = "body{font:15px/1.5 system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#1d1d1f;background:#fff}
@media (prefers-color-scheme:dark){body{color:#e6e6e6;background:#161616}section{border-color:#333}}
header{border-bottom:1px solid #ccc;margin-bottom:1.5rem}
section{border:1px solid #ddd;border-radius:6px;padding:.5rem 1rem;margin:1rem 0}
h2{font-size:.8rem;text-transform:uppercase;letter-spacing:.05em;margin:.25rem 0;opacity:.7}
pre{white-space:pre-wrap;word-break:break-word;font:13px/1.4 ui-monospace,monospace;margin:.5rem 0}
.user{border-left:4px solid #3a7bd5}.assistant{border-left:4px solid #2e9e5b}
.toolResult{border-left:4px solid #999}.error{border-left:4px solid #d33}
.compaction{border-left:4px solid #c90;opacity:.85}
.thinking{opacity:.7;font-style:italic}img{max-width:100%}";

/// Why an export was not written.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// The output is the session's own file: `/export` and RPC
    /// `export_html` wrote the page over it, said success, and every later
    /// save failed (the file was no session any more).
    #[error("the output is the session file itself; name another file for the HTML")]
    IsTheSession,
    /// Writing the page failed.
    #[error(transparent)]
    Write(#[from] FsError),
}

/// Writes the page of `session`'s whole history to `path` (relative to
/// `cwd`), or to the default name in `cwd`; returns where. A file already
/// there is replaced whole or not at all; the session's own file is
/// refused. Every export (`--export`, `/export`, RPC `export_html`) writes
/// through here.
pub fn write_session_html(
    cwd: &Path,
    session: &SessionManager,
    path: Option<&Path>,
) -> Result<PathBuf, ExportError> {
    let path = path.map_or_else(|| default_export_path(cwd, session), |path| cwd.join(path));
    if session.file().is_some_and(|file| same_file(&path, file)) {
        return Err(ExportError::IsTheSession);
    }
    let (name, history) = (session.name(), session.history());
    write_page(
        &path,
        &session_html(session.header(), name.as_deref(), &history),
    )?;
    Ok(path)
}

/// The file an export writes when no path is given: in `cwd`, named as
/// Pi names it, after the session file (`coding-agent-session-<time>_<id>.html`).
/// The header's id was used: one crafted as `z/../../x` put the page
/// outside `cwd`. A session saved nowhere (`--no-session`) has an id of
/// its own making.
fn default_export_path(cwd: &Path, session: &SessionManager) -> PathBuf {
    let name = match session.file().and_then(Path::file_name) {
        Some(name) => {
            let name = name.to_string_lossy();
            name.strip_suffix(".jsonl").unwrap_or(&name).to_owned()
        }
        None => session.id().to_owned(),
    };
    cwd.join(format!("coding-agent-session-{name}.html"))
}

/// Whether `a` and `b` name one file: the same inode when both exist (a
/// symlink or a hard link to the session file is the session file), else
/// the same path (a session not written yet would replace the page there
/// at its first save, and the page be lost).
fn same_file(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(a), Ok(b)) => (a.dev(), a.ino()) == (b.dev(), b.ino()),
        _ => normalize_lexically(a) == normalize_lexically(b),
    }
}

/// Whether `path` is this process's standard output, by any name
/// (`/dev/stdout`, `/proc/self/fd/1`, the pipe's or terminal's own), by
/// device and inode. A mode whose stdout carries something else refuses to
/// export there: RPC `export_html` to `/dev/stdout` wrote the page into
/// the protocol stream its client reads as JSON lines.
pub fn is_stdout(path: &Path) -> bool {
    is_one_of(path, [stdout_metadata()])
}

/// The metadata of this process's standard output.
pub(crate) fn stdout_metadata() -> std::io::Result<std::fs::Metadata> {
    use std::os::fd::AsFd as _;
    std::io::stdout()
        .as_fd()
        .try_clone_to_owned()
        .map(std::fs::File::from)
        .and_then(|stdout| stdout.metadata())
}

/// Whether `path` names the same file (device and inode) as one of
/// `files`.
pub(crate) fn is_one_of(
    path: &Path,
    files: impl IntoIterator<Item = std::io::Result<std::fs::Metadata>>,
) -> bool {
    use std::os::unix::fs::MetadataExt as _;
    let Ok(target) = std::fs::metadata(path) else {
        return false;
    };
    files
        .into_iter()
        .flatten()
        .any(|file| (file.dev(), file.ino()) == (target.dev(), target.ino()))
}

/// Writes `html` to `path`: a file is replaced whole or not at all; stdout,
/// a pipe or a device (`/dev/stdout`, `/dev/null`) is written to as it is,
/// having nothing a new file could be renamed over (the atomic write
/// followed `/dev/stdout` to `pipe:[N]` and failed with ENOENT, and refused
/// `/dev/null` with the file tools' advice).
fn write_page(path: &Path, html: &str) -> Result<(), FsError> {
    use std::io::Write as _;
    match std::fs::metadata(path) {
        Ok(meta) if SpecialFile::of(&meta).is_some() => {
            let pipe = SpecialFile::of(&meta) == Some(SpecialFile::Pipe);
            open_stream(path, pipe)?
                .write_all(html.as_bytes())
                .map_err(|error| FsError::new(&error, "write", path))
        }
        _ => write_atomic_private(path, html.as_bytes()),
    }
}

/// Opens `path` to write to as it is. A named pipe is opened without
/// waiting, then written to as usual: opening one no one reads waits for a
/// reader, and held the export (over RPC or in the terminal, the whole
/// session) until one came, perhaps never.
fn open_stream(path: &Path, pipe: bool) -> Result<std::fs::File, FsError> {
    use rustix::fs::OFlags;
    use std::os::unix::fs::OpenOptionsExt as _;
    let mut options = std::fs::OpenOptions::new();
    options.write(true);
    if pipe {
        options.custom_flags(OFlags::NONBLOCK.bits() as i32);
    }
    let file = options.open(path).map_err(|error| {
        if pipe && error.raw_os_error() == Some(rustix::io::Errno::NXIO.raw_os_error()) {
            FsError::other(format!(
                "no one is reading the pipe {}: start its reader first, or name a file",
                path.display()
            ))
        } else {
            FsError::new(&error, "open", path)
        }
    })?;
    if pipe {
        rustix::fs::fcntl_setfl(&file, OFlags::empty())
            .map_err(|error| FsError::new(&error.into(), "fcntl", path))?;
    }
    Ok(file)
}

/// The HTML page of a session's history: every message, and where the
/// conversation was compacted, the summary the model read from then on.
pub fn session_html(header: &SessionHeader, name: Option<&str>, history: &[HistoryItem]) -> String {
    let title = name.unwrap_or(&header.id);
    let mut html = format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{}</title>\n<style>\n{STYLE}\n</style>\n</head>\n<body>\n<header><h1>{}</h1><p>{} &middot; {}</p></header>\n",
        escape(title),
        escape(title),
        escape(&header.timestamp),
        escape(&header.cwd),
    );
    for item in history {
        match item {
            HistoryItem::Context(item) => html.push_str(&item_html(item)),
            HistoryItem::Compaction {
                summary,
                tokens_before,
            } => {
                let _ = write!(
                    html,
                    "<section class=\"compaction\"><h2>Compacted from {} tokens; the model read this summary from here on</h2>\n<pre>{}</pre></section>\n",
                    grouped(*tokens_before),
                    escape(summary)
                );
            }
        }
    }
    html.push_str("</body>\n</html>\n");
    html
}

/// A step of the conversation: a user's own command and a branch's summary
/// as what they are (both read as a "User" message).
fn item_html(item: &ContextItem) -> String {
    match item {
        ContextItem::Message(message) => message_html(message),
        ContextItem::Command(run) => {
            let ended = match (run.cancelled, run.exit_code) {
                (true, _) => " (cancelled)".to_owned(),
                (false, Some(0) | None) => String::new(),
                (false, Some(code)) => format!(" (exit code {code})"),
            };
            let label = if run.context_message().is_some() {
                "User command"
            } else {
                "User command, kept from the model"
            };
            format!(
                "<section class=\"user\"><h2>{label}</h2>\n<pre><b>$ {}</b>{}\n{}</pre></section>\n",
                escape(&run.command),
                escape(&ended),
                escape(&run.output)
            )
        }
        ContextItem::Summary { kind, summary, .. } => {
            let label = match kind {
                SummaryKind::Compaction => "Summary",
                SummaryKind::Branch => "Summary of the branch left",
            };
            format!(
                "<section class=\"compaction\"><h2>{label}</h2>\n<pre>{}</pre></section>\n",
                escape(summary)
            )
        }
    }
}

fn message_html(message: &Message) -> String {
    let mut body = String::new();
    let (class, label) = match message {
        Message::User(user) => {
            match &user.content {
                UserContent::Text(text) => push_text(&mut body, text),
                UserContent::Blocks(blocks) => push_blocks(&mut body, blocks),
            }
            ("user", "User".to_owned())
        }
        Message::Assistant(assistant) => {
            for block in &assistant.content {
                match block {
                    AssistantContent::Text(text) => push_text(&mut body, &text.text),
                    AssistantContent::Thinking(thinking) => {
                        let _ = writeln!(
                            body,
                            "<pre class=\"thinking\">{}</pre>",
                            escape(&thinking.thinking)
                        );
                    }
                    AssistantContent::ToolCall(call) => {
                        let arguments = serde_json::to_string_pretty(&call.arguments)
                            .unwrap_or_else(|_| call.arguments.to_string());
                        let _ = writeln!(
                            body,
                            "<pre><b>{}</b> {}</pre>",
                            escape(&call.name),
                            escape(&arguments)
                        );
                    }
                }
            }
            if let Some(error) = &assistant.error_message {
                let _ = writeln!(body, "<pre>{}</pre>", escape(error));
            }
            let class = if assistant.error_message.is_some() {
                "assistant error"
            } else {
                "assistant"
            };
            (class, format!("Assistant ({})", assistant.model))
        }
        Message::ToolResult(result) => {
            push_blocks(&mut body, &result.content);
            let class = if result.is_error {
                "toolResult error"
            } else {
                "toolResult"
            };
            (class, format!("Result of {}", result.tool_name))
        }
    };
    format!(
        "<section class=\"{class}\"><h2>{}</h2>\n{body}</section>\n",
        escape(&label)
    )
}

fn push_text(body: &mut String, text: &str) {
    let _ = writeln!(body, "<pre>{}</pre>", escape(text));
}

fn push_blocks(body: &mut String, blocks: &[Content]) {
    for block in blocks {
        match block {
            Content::Text(text) => push_text(body, &text.text),
            Content::Image(image) => {
                let _ = writeln!(
                    body,
                    "<img alt=\"image\" src=\"data:{};base64,{}\">",
                    escape(&image.mime_type),
                    escape(&image.data)
                );
            }
        }
    }
}

/// Text safe inside HTML elements and attribute values.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            // A control character (a NUL a binary printed, a stray escape)
            // is an HTML parse error: its picture (`␀`, `␛`) shows it.
            '\0'..='\u{8}' | '\u{b}' | '\u{c}' | '\u{e}'..='\u{1f}' => {
                out.push(char::from_u32(0x2400 + u32::from(c)).unwrap_or('\u{fffd}'));
            }
            '\u{7f}' => out.push('\u{2421}'),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use agent_ai::{ImageContent, ToolResultMessage, UserMessage};

    use super::*;

    /// NUL and other control characters were written raw: a parse error
    /// in every browser, and invisible where they show at all.
    #[test]
    fn control_characters_are_shown_by_their_pictures() {
        assert_eq!(
            escape("a\0b\x1b[31m\tc\r\n\x7f<"),
            "a\u{2400}b\u{241b}[31m\tc\r\n\u{2421}&lt;"
        );
    }

    #[test]
    fn text_is_escaped_and_images_are_inline() {
        let result = ToolResultMessage {
            tool_call_id: "c1".into(),
            tool_name: "read".into(),
            content: vec![
                Content::text("a < b & \"c\""),
                Content::Image(ImageContent {
                    data: "AAAA".into(),
                    mime_type: "image/png".into(),
                }),
            ],
            details: None,
            is_error: false,
            timestamp: 0,
        };
        assert_eq!(
            message_html(&result.into()),
            "<section class=\"toolResult\"><h2>Result of read</h2>\n<pre>a &lt; b &amp; &quot;c&quot;</pre>\n<img alt=\"image\" src=\"data:image/png;base64,AAAA\">\n</section>\n"
        );
        assert_eq!(
            message_html(&UserMessage::text("<script>").into()),
            "<section class=\"user\"><h2>User</h2>\n<pre>&lt;script&gt;</pre>\n</section>\n"
        );
    }

    /// A user's `!cmd` and a branch's summary read as "User" messages, the
    /// command wrapped in the text the model reads; a `!!cmd` was left out.
    #[test]
    fn commands_and_branch_summaries_are_shown_as_what_they_are() {
        let run = |command: &str, exit_code, exclude| {
            ContextItem::Command(crate::session::BashExecution {
                role: "bashExecution".into(),
                command: command.into(),
                output: "out <1>\n".into(),
                exit_code,
                cancelled: false,
                truncated: false,
                full_output_path: None,
                timestamp: 0,
                exclude_from_context: exclude,
            })
        };
        assert_eq!(
            item_html(&run("ls", Some(0), None)),
            "<section class=\"user\"><h2>User command</h2>\n<pre><b>$ ls</b>\nout &lt;1&gt;\n</pre></section>\n"
        );
        assert_eq!(
            item_html(&run("make", Some(2), Some(true))),
            "<section class=\"user\"><h2>User command, kept from the model</h2>\n<pre><b>$ make</b> (exit code 2)\nout &lt;1&gt;\n</pre></section>\n"
        );
        let summary = ContextItem::Summary {
            kind: SummaryKind::Branch,
            summary: "tried X".into(),
            timestamp: 0,
        };
        assert_eq!(
            item_html(&summary),
            "<section class=\"compaction\"><h2>Summary of the branch left</h2>\n<pre>tried X</pre></section>\n"
        );
    }
}
