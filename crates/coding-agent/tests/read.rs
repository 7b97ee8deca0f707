//! `read` end to end on real files: Pi's test cases (A.1), every
//! `read_*` parity fixture, and the deliberate deviations, named.

// Test helpers outside `#[test]` functions panic on purpose too.
#![allow(clippy::unwrap_used)]

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use agent_ai::{Content, Model};
use agent_core::{AgentToolResult, ToolError};
use async_trait::async_trait;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use coding_agent::support::paths::HomeDir;
use coding_agent::tools::read::lines::{LineWindow, WindowText};
use coding_agent::tools::read::ops::{FileInfo, ReadError, ReadOperations};
use coding_agent::tools::read::{ReadTool, ReadToolOptions};
use coding_agent::{ToolContext, ToolDefinition, Typed};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

mod image_support;
use image_support::{png_claiming, png_claiming_as, png_of};

/// A fresh root laid out as the parity README says: `work/` (the cwd),
/// `home/` and `tmp/`.
struct Root {
    dir: tempfile::TempDir,
}

impl Root {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        for sub in ["work", "home", "tmp"] {
            std::fs::create_dir(dir.path().join(sub)).unwrap();
        }
        Root { dir }
    }

    fn cwd(&self) -> PathBuf {
        self.dir.path().join("work")
    }

    fn file(&self, name: &str, content: impl AsRef<[u8]>) -> PathBuf {
        let path = self.cwd().join(name);
        std::fs::write(&path, content).unwrap();
        path
    }

    /// Pi's `generated` setup: `prefix`, `pattern` with `{n}` = 1..=count, `suffix`.
    fn generated(&self, name: &str, prefix: &str, pattern: &str, count: usize, suffix: &str) {
        let body: String = (1..=count)
            .map(|n| pattern.replace("{n}", &n.to_string()))
            .collect();
        self.file(name, format!("{prefix}{body}{suffix}"));
    }

    async fn read(&self, args: Value) -> Result<AgentToolResult, ToolError> {
        read_with(
            &Typed::<ReadTool>::default(),
            ToolContext::new(self.cwd()),
            args,
        )
        .await
    }
}

async fn read_with(
    tool: &Typed<ReadTool>,
    ctx: ToolContext,
    args: Value,
) -> Result<AgentToolResult, ToolError> {
    tool.execute(args, ctx).await
}

fn text_only(result: &AgentToolResult) -> &str {
    assert_eq!(
        result.content.len(),
        1,
        "expected one text block: {result:?}"
    );
    result.content[0].as_text().unwrap()
}

/// `prefix` + lines `{n}` joined with `\n` for n in `range`.
fn numbered(pattern: &str, range: std::ops::RangeInclusive<usize>) -> String {
    range
        .map(|n| pattern.replace("{n}", &n.to_string()))
        .collect::<Vec<_>>()
        .join("\n")
}

const FILE_3_LINES: &str = "Hello, world!\nLine 2\nLine 3";
const TEN_LINES: &str =
    "line 1\nline 2\nline 3\nline 4\nline 5\nline 6\nline 7\nline 8\nline 9\nline 10\n";

// ---- the tool as the model sees it ----

#[test]
fn schema_description_and_prompt_texts_are_pis() {
    let tool = Typed::<ReadTool>::default();
    assert_eq!(tool.tool().name, "read");
    assert_eq!(tool.label(), "Read");
    assert_eq!(
        tool.tool().description,
        "Read the contents of a file. Supports text files and images (jpg, png, gif, webp). Images are sent as attachments. For text files, output is truncated to 2000 lines or 50KB (whichever is hit first). Use offset/limit for large files. When you need the full file, continue with offset until complete."
    );
    assert_eq!(
        tool.tool().parameters,
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "Path to the file to read (relative or absolute)"},
                "offset": {"type": "number", "description": "Line number to start reading from (1-indexed)"},
                "limit": {"type": "number", "description": "Maximum number of lines to read"}
            },
            "required": ["path"]
        })
    );
    assert_eq!(tool.prompt_snippet(), Some("Read file contents"));
    assert_eq!(
        tool.prompt_guidelines(),
        ["Use read to examine files instead of cat or sed."]
    );
}

// ---- Pi's test cases, A.1 ----

#[tokio::test]
async fn r1_reads_a_small_file_verbatim() {
    let root = Root::new();
    let path = root.file("test.txt", FILE_3_LINES);
    let result = root.read(json!({"path": path})).await.unwrap();
    assert_eq!(text_only(&result), FILE_3_LINES);
    assert_eq!(result.details, None);
}

#[tokio::test]
async fn r2_missing_file_is_enoent_with_the_absolute_path() {
    let root = Root::new();
    let error = root
        .read(json!({"path": "nonexistent.txt"}))
        .await
        .unwrap_err();
    assert_eq!(
        error.message(),
        format!(
            "ENOENT: no such file or directory, access '{}'",
            root.cwd().join("nonexistent.txt").display()
        )
    );
}

#[tokio::test]
async fn r3_more_than_2000_lines_shows_the_first_2000() {
    let root = Root::new();
    root.file("large.txt", numbered("Line {n}", 1..=2500));
    let result = root.read(json!({"path": "large.txt"})).await.unwrap();
    assert_eq!(
        text_only(&result),
        format!(
            "{}\n\n[Showing lines 1-2000 of 2500. Use offset=2001 to continue.]",
            numbered("Line {n}", 1..=2000)
        )
    );
}

#[tokio::test]
async fn r4_more_than_50kb_is_cut_by_bytes() {
    let root = Root::new();
    let line = format!("Line {{n}}: {}", "x".repeat(200));
    root.file("wide.txt", numbered(&line, 1..=500));
    let result = root.read(json!({"path": "wide.txt"})).await.unwrap();
    assert_eq!(
        text_only(&result),
        format!(
            "{}\n\n[Showing lines 1-243 of 500 (50.0KB limit). Use offset=244 to continue.]",
            numbered(&line, 1..=243)
        )
    );
    let truncation = &result.details.as_ref().unwrap()["truncation"];
    assert_eq!(truncation["truncatedBy"], "bytes");
    assert_eq!(truncation["outputLines"], 243);
    assert_eq!(truncation["outputBytes"], 51164);
    assert_eq!(truncation["totalBytes"], 105391);
}

#[tokio::test]
async fn r5_offset_starts_at_that_line() {
    let root = Root::new();
    root.file("hundred.txt", numbered("Line {n}", 1..=100));
    let result = root
        .read(json!({"path": "hundred.txt", "offset": 51}))
        .await
        .unwrap();
    assert_eq!(text_only(&result), numbered("Line {n}", 51..=100));
    assert_eq!(result.details, None);
}

#[tokio::test]
async fn r6_limit_stops_early_and_says_how_many_lines_remain() {
    let root = Root::new();
    root.file("hundred.txt", numbered("Line {n}", 1..=100));
    let result = root
        .read(json!({"path": "hundred.txt", "limit": 10}))
        .await
        .unwrap();
    assert_eq!(
        text_only(&result),
        format!(
            "{}\n\n[90 more lines in file. Use offset=11 to continue.]",
            numbered("Line {n}", 1..=10)
        )
    );
    assert_eq!(result.details, None);
}

/// DEVIATIONS #20: Pi shows 8 lines for `limit: 8.5` and then counts "1.5 more
/// lines" from offset 9.5; the fraction is dropped, so the notice counts whole
/// lines and its offset can be followed.
#[tokio::test]
async fn fractional_limit_counts_whole_lines() {
    let root = Root::new();
    root.file("ten.txt", numbered("Line {n}", 1..=10));
    let result = root
        .read(json!({"path": "ten.txt", "limit": 8.5}))
        .await
        .unwrap();
    assert_eq!(
        text_only(&result),
        format!(
            "{}\n\n[2 more lines in file. Use offset=9 to continue.]",
            numbered("Line {n}", 1..=8)
        )
    );
}

#[tokio::test]
async fn r7_offset_and_limit_together() {
    let root = Root::new();
    root.file("hundred.txt", numbered("Line {n}", 1..=100));
    let result = root
        .read(json!({"path": "hundred.txt", "offset": 41, "limit": 20}))
        .await
        .unwrap();
    assert_eq!(
        text_only(&result),
        format!(
            "{}\n\n[40 more lines in file. Use offset=61 to continue.]",
            numbered("Line {n}", 41..=60)
        )
    );
}

/// A name that really holds a no-break space: Pi maps it to a plain space
/// and cannot open the file; it is read under the name as written.
#[tokio::test]
async fn a_name_holding_a_no_break_space_is_read() {
    let root = Root::new();
    root.file("my\u{00A0}notes.txt", "kept\n");
    let result = root
        .read(json!({"path": "my\u{00A0}notes.txt"}))
        .await
        .unwrap();
    assert_eq!(text_only(&result), "kept\n");
}

#[tokio::test]
async fn r8_offset_past_the_end_is_an_error() {
    let root = Root::new();
    root.file("short.txt", "Line 1\nLine 2\nLine 3");
    let error = root
        .read(json!({"path": "short.txt", "offset": 100}))
        .await
        .unwrap_err();
    assert_eq!(
        error.message(),
        "Offset 100 is beyond end of file (3 lines total)"
    );
    // A huge offset is written as JavaScript writes it, as Pi's text has it.
    let error = root
        .read(json!({"path": "short.txt", "offset": 1e300}))
        .await
        .unwrap_err();
    assert_eq!(
        error.message(),
        "Offset 1e+300 is beyond end of file (3 lines total)"
    );
}

#[tokio::test]
async fn r9_line_truncation_details_are_pis() {
    let root = Root::new();
    root.file("large.txt", numbered("Line {n}", 1..=2500));
    let result = root.read(json!({"path": "large.txt"})).await.unwrap();
    assert_eq!(
        result.details,
        Some(json!({"truncation": {
            "content": numbered("Line {n}", 1..=2000),
            "truncated": true,
            "truncatedBy": "lines",
            "totalLines": 2500,
            "totalBytes": 23892,
            "outputLines": 2000,
            "outputBytes": 18892,
            "lastLinePartial": false,
            "firstLineExceedsLimit": false,
            "maxLines": 2000,
            "maxBytes": 51200
        }}))
    );
}

/// A 1x1 grey+alpha PNG, Pi's test image.
const GRAY_ALPHA_PNG: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mP8/x8AAwMCAO+X2Z0AAAAASUVORK5CYII=";

fn image_result(result: &AgentToolResult) -> (&str, &str, &str) {
    assert_eq!(
        result.content.len(),
        2,
        "expected text and image: {result:?}"
    );
    let text = result.content[0].as_text().unwrap();
    let Content::Image(image) = &result.content[1] else {
        panic!("second block is not an image: {result:?}");
    };
    (text, image.mime_type.as_str(), &*image.data)
}

/// Pi 0.73.1's answer: this 1x1 grey+alpha PNG's IDAT checksum is wrong,
/// so it does not decode and is omitted (DEVIATIONS #11, withdrawn).
#[tokio::test]
async fn r10_a_png_with_a_bad_checksum_is_omitted_as_pi_does() {
    let root = Root::new();
    root.file("image.txt", STANDARD.decode(GRAY_ALPHA_PNG).unwrap());
    let result = root.read(json!({"path": "image.txt"})).await.unwrap();
    assert_eq!(
        text_only(&result),
        "Read image file [image/png]\n[Image omitted: could not be resized below the inline image size limit.]"
    );
    assert_eq!(result.details, None);
}

/// A cut or corrupt image is not attached: the provider would refuse it,
/// and from the history every later request (Pi decodes every image, so
/// it answers the same).
#[tokio::test]
async fn a_cut_or_corrupt_png_is_omitted_not_attached() {
    let whole = noise_png(100, 50);
    let root = Root::new();
    root.file("head.png", &whole[..60]);
    root.file("tail-cut.png", &whole[..whole.len() - 20]);
    let mut scrambled = whole.clone();
    let middle = scrambled.len() / 2;
    scrambled[middle..middle + 16].fill(0xAB);
    root.file("scrambled.png", scrambled);
    for name in ["head.png", "tail-cut.png", "scrambled.png"] {
        let result = root.read(json!({"path": name})).await.unwrap();
        assert_eq!(
            text_only(&result),
            "Read image file [image/png]\n[Image omitted: could not be resized below the inline image size limit.]",
            "{name}"
        );
    }
    let result = root.read(json!({"path": "whole.png"})).await;
    assert!(result.is_err(), "no such file");
    root.file("whole.png", whole);
    let result = root.read(json!({"path": "whole.png"})).await.unwrap();
    assert_eq!(image_result(&result).1, "image/png");
}

#[tokio::test]
async fn r11_png_extension_holding_text_is_read_as_text() {
    let root = Root::new();
    root.file("not-an-image.png", "definitely not a png");
    let result = root
        .read(json!({"path": "not-an-image.png"}))
        .await
        .unwrap();
    assert_eq!(text_only(&result), "definitely not a png");
}

#[tokio::test]
async fn offset_zero_means_from_the_first_line() {
    let root = Root::new();
    root.file("test.txt", FILE_3_LINES);
    let result = root
        .read(json!({"path": "test.txt", "offset": 0}))
        .await
        .unwrap();
    assert_eq!(text_only(&result), FILE_3_LINES);
}

#[tokio::test]
async fn limit_zero_shows_nothing_but_the_notice() {
    let root = Root::new();
    root.file("test.txt", FILE_3_LINES);
    let result = root
        .read(json!({"path": "test.txt", "limit": 0}))
        .await
        .unwrap();
    assert_eq!(
        text_only(&result),
        "\n\n[3 more lines in file. Use offset=1 to continue.]"
    );
}

/// DEVIATIONS #34: a negative `limit` means no limit. Pi slices with it
/// (`lines.slice(start, start + limit)`): at line 1 that is every line but
/// the last, noted `[4 more lines in file. Use offset=0 to continue.]`;
/// further on, nothing. We took it as 0 by accident: no text, one turn lost.
#[tokio::test]
async fn deviation_34_a_negative_limit_means_no_limit() {
    let root = Root::new();
    root.file("test.txt", FILE_3_LINES);
    let result = root
        .read(json!({"path": "test.txt", "limit": -1}))
        .await
        .unwrap();
    assert_eq!(text_only(&result), FILE_3_LINES);
    let result = root
        .read(json!({"path": "test.txt", "offset": 2, "limit": -5}))
        .await
        .unwrap();
    assert_eq!(text_only(&result), "Line 2\nLine 3");
}

#[tokio::test]
async fn trailing_newline_is_kept_and_counts_as_a_line() {
    let root = Root::new();
    root.file("ab.txt", "a\nb\n");
    let whole = root.read(json!({"path": "ab.txt"})).await.unwrap();
    assert_eq!(text_only(&whole), "a\nb\n");
    let last = root
        .read(json!({"path": "ab.txt", "offset": 3}))
        .await
        .unwrap();
    assert_eq!(text_only(&last), "");
}

#[tokio::test]
async fn first_line_over_50kb_gets_a_sed_hint() {
    let root = Root::new();
    root.file("long1.txt", format!("{}\nshort", "y".repeat(60000)));
    let result = root.read(json!({"path": "long1.txt"})).await.unwrap();
    assert_eq!(
        text_only(&result),
        "[Line 1 is 58.6KB, exceeds 50.0KB limit. Use bash: sed -n '1p' long1.txt | head -c 51200]"
    );
    let truncation = &result.details.as_ref().unwrap()["truncation"];
    assert_eq!(truncation["firstLineExceedsLimit"], true);
    assert_eq!(truncation["content"], "");
    assert_eq!(truncation["outputLines"], 0);
}

#[tokio::test]
async fn empty_file_reads_as_empty_text() {
    let root = Root::new();
    root.file("empty.txt", "");
    let result = root.read(json!({"path": "empty.txt"})).await.unwrap();
    assert_eq!(text_only(&result), "");
    assert_eq!(result.details, None);
}

#[tokio::test]
async fn the_file_tools_refuse_a_named_pipe_at_once_instead_of_waiting_for_its_other_end() {
    // DEVIATIONS #23: Pi opens it, and the call waits for a writer (or a
    // reader) that may never come.
    let root = Root::new();
    let pipe = root.cwd().join("pipe");
    let made = std::process::Command::new("mkfifo").arg(&pipe).status();
    assert!(made.unwrap().success());
    let calls = [
        (
            "read",
            json!({"path": "pipe"}),
            "reading it waits for a writer",
        ),
        (
            "grep",
            json!({"pattern": "x", "path": "pipe"}),
            "searching it waits for a writer",
        ),
        (
            "write",
            json!({"path": "pipe", "content": "x"}),
            "writing it waits for a reader",
        ),
        (
            "edit",
            json!({"path": "pipe", "edits": [{"oldText": "a", "newText": "b"}]}),
            "editing it waits for the other end",
        ),
    ];
    for (name, args, waits) in calls {
        let tool = coding_agent::tools::builtin_tool(name).unwrap();
        let call = tool.execute(args, ToolContext::new(root.cwd()));
        let result = tokio::time::timeout(std::time::Duration::from_secs(10), call).await;
        let error = result.expect("the call waited on the pipe").unwrap_err();
        let said = format!(
            "{} is a named pipe, not a file: {waits}, maybe forever.",
            pipe.display()
        );
        assert!(
            error.message().contains(&said),
            "{name}: {}",
            error.message()
        );
    }
    use std::os::unix::fs::FileTypeExt;
    assert!(
        std::fs::metadata(&pipe).unwrap().file_type().is_fifo(),
        "left as it was"
    );
}

/// A terminal is refused as a pipe is: reading it waits for someone to
/// type, and a read left blocked on our own terminal after an abort kept
/// eating the keys meant for the editor. `/dev/tty` is told by its device
/// number, without opening it, so this holds with or without a terminal.
/// `/dev/ptmx` too: opening it makes a new terminal nobody types at, and
/// read and grep waited on it until aborted.
#[tokio::test]
async fn read_and_grep_refuse_a_terminal_at_once() {
    let root = Root::new();
    for terminal in ["/dev/tty", "/dev/ptmx"] {
        for (name, args, command) in [
            ("read", json!({"path": terminal}), "cat"),
            (
                "grep",
                json!({"pattern": "x", "path": terminal}),
                "grep PATTERN",
            ),
        ] {
            let tool = coding_agent::tools::builtin_tool(name).unwrap();
            let call = tool.execute(args, ToolContext::new(root.cwd()));
            let result = tokio::time::timeout(std::time::Duration::from_secs(10), call).await;
            let error = result
                .expect("the call waited on the terminal")
                .unwrap_err();
            assert_eq!(
                error.message(),
                format!(
                    "{terminal} is a terminal, not a file: the file tools only read and change \
                     regular files (reading a terminal waits for someone to type, maybe \
                     forever). If you mean to use it, do it with bash and a timeout (e.g. \
                     timeout 5 {command} {terminal})"
                ),
                "{name}"
            );
        }
    }
    // Another character device is still read as far as the limits.
    let tool = coding_agent::tools::builtin_tool("read").unwrap();
    let zero = tool
        .execute(json!({"path": "/dev/null"}), ToolContext::new(root.cwd()))
        .await
        .unwrap();
    assert_eq!(text_only(&zero), "");
}

/// A Unix socket cannot be opened as a file at all: the refusal says so
/// and names a client, not a writer to wait for and `cat`.
#[tokio::test]
async fn a_socket_is_refused_with_how_to_talk_to_it() {
    let root = Root::new();
    let socket = root.cwd().join("app.sock");
    let _listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    for (name, args) in [
        ("read", json!({"path": "app.sock"})),
        ("write", json!({"path": "app.sock", "content": "x"})),
    ] {
        let tool = coding_agent::tools::builtin_tool(name).unwrap();
        let error = tool
            .execute(args, ToolContext::new(root.cwd()))
            .await
            .unwrap_err();
        assert!(
            error.message().contains(&format!(
                "{} is a socket, not a file: it cannot be opened as one; a program listens on it",
                socket.display()
            )),
            "{name}: {}",
            error.message()
        );
        assert!(
            error.message().contains("curl --unix-socket"),
            "{}",
            error.message()
        );
    }
}

/// A device has no size: `/dev/zero` is named as what it is, not as "0B".
#[tokio::test]
async fn a_binary_device_is_named_as_a_device_not_by_its_size() {
    let root = Root::new();
    let tool = coding_agent::tools::builtin_tool("read").unwrap();
    let result = tool
        .execute(json!({"path": "/dev/zero"}), ToolContext::new(root.cwd()))
        .await
        .unwrap();
    assert_eq!(
        text_only(&result),
        "Binary file /dev/zero (a character device) cannot be shown as text. Use bash (e.g. file, strings, xxd) to inspect it."
    );
}

/// procfs gives its files a size of 0: a binary one is described by the
/// bytes it holds, not as `(0B)`.
#[tokio::test]
async fn a_binary_file_of_procfs_is_described_by_the_bytes_read() {
    let root = Root::new();
    let tool = coding_agent::tools::builtin_tool("read").unwrap();
    let result = tool
        .execute(
            json!({"path": "/proc/self/cmdline"}),
            ToolContext::new(root.cwd()),
        )
        .await
        .unwrap();
    let held = std::fs::read("/proc/self/cmdline").unwrap().len();
    assert!(held > 0 && held < 8192, "{held}");
    assert_eq!(
        text_only(&result),
        format!(
            "Binary file /proc/self/cmdline ({held}B) cannot be shown as text. Use bash (e.g. \
             file, strings, xxd) to inspect it."
        )
    );
}

/// DEVIATIONS #23: Pi's edit reads a device whole (`/dev/zero` until memory
/// runs out; a terminal until input comes), and our write, which renames a
/// new file over its target, put a regular file in a device's place (as
/// root, `/dev/null` too). Both refuse at once and leave it as it is.
#[tokio::test]
async fn edit_and_write_refuse_a_device_and_leave_it_as_it_is() {
    let root = Root::new();
    // A null device of our own, so a regression replaces nothing real.
    let device = root.cwd().join("null");
    let made = std::process::Command::new("mknod")
        .arg(&device)
        .args(["c", "1", "3"])
        .status()
        .unwrap();
    assert!(made.success(), "mknod needs root (CI runs as root)");
    let refusal = |path: &std::path::Path, command: &str| {
        format!(
            "{} is a character device, not a file: the file tools only read and change regular \
             files (reading a device may never end, and writing would put a regular file in its \
             place). If you mean to use it, do it with bash and a timeout (e.g. timeout 5 \
             {command} {})",
            path.display(),
            path.display()
        )
    };
    let write = coding_agent::tools::builtin_tool("write").unwrap();
    let error = write
        .execute(
            json!({"path": "null", "content": "x"}),
            ToolContext::new(root.cwd()),
        )
        .await
        .unwrap_err();
    assert_eq!(error.message(), refusal(&device, "tee"));
    use std::os::unix::fs::FileTypeExt;
    let kind = std::fs::metadata(&device).unwrap().file_type();
    assert!(kind.is_char_device(), "left as it was");
    // A pty master: read whole, it would wait for input that never comes.
    let edit = coding_agent::tools::builtin_tool("edit").unwrap();
    let args = json!({"path": "/dev/ptmx", "edits": [{"oldText": "a", "newText": "b"}]});
    let call = edit.execute(args, ToolContext::new(root.cwd()));
    let result = tokio::time::timeout(std::time::Duration::from_secs(10), call).await;
    let error = result.expect("the edit waited on the device").unwrap_err();
    assert!(
        error.message().starts_with(
            "Could not edit file: /dev/ptmx. Error: /dev/ptmx is a terminal, not a file: the \
             file tools only read and change regular files"
        ),
        "{}",
        error.message()
    );
}

#[tokio::test]
async fn directory_is_eisdir() {
    let root = Root::new();
    let error = root.read(json!({"path": "."})).await.unwrap_err();
    assert_eq!(
        error.message(),
        "EISDIR: illegal operation on a directory, read"
    );
}

#[tokio::test]
async fn leading_at_sign_is_stripped() {
    let root = Root::new();
    root.file("test.txt", FILE_3_LINES);
    let result = root.read(json!({"path": "@test.txt"})).await.unwrap();
    assert_eq!(text_only(&result), FILE_3_LINES);
}

/// A PNG of `width` x `height` RGB noise, which compresses badly.
fn noise_png(width: u32, height: u32) -> Vec<u8> {
    let mut state = 0x9e37_79b9_7f4a_7c15_u64;
    let image = image::RgbImage::from_fn(width, height, |_, _| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let [r, g, b, ..] = state.to_le_bytes();
        image::Rgb([r, g, b])
    });
    png_of(&image)
}

/// Sizes, encoding and note are Pi's; the pixels are our resampler's
/// (DEVIATIONS #19), so only the dimensions are compared.
#[tokio::test]
async fn image_over_2000_pixels_is_resized_with_a_coordinate_note() {
    let root = Root::new();
    root.file("wide.png", noise_png(3000, 1000));
    let result = root.read(json!({"path": "wide.png"})).await.unwrap();
    let (text, mime, data) = image_result(&result);
    assert_eq!(
        text,
        "Read image file [image/jpeg]\n[Image: original 3000x1000, displayed at 2000x667. Multiply coordinates by 1.50 to map to original image.]"
    );
    assert_eq!(mime, "image/jpeg");
    let decoded = image::load_from_memory(&STANDARD.decode(data).unwrap()).unwrap();
    assert_eq!((decoded.width(), decoded.height()), (2000, 667));
}

#[tokio::test]
async fn small_image_over_the_pixel_limit_is_resized_as_png() {
    let root = Root::new();
    let png = png_of(&image::RgbImage::from_pixel(
        2100,
        30,
        image::Rgb([10, 20, 30]),
    ));
    root.file("strip.png", &png);
    let result = root.read(json!({"path": "strip.png"})).await.unwrap();
    let (text, mime, data) = image_result(&result);
    assert_eq!(
        text,
        "Read image file [image/png]\n[Image: original 2100x30, displayed at 2000x29. Multiply coordinates by 1.05 to map to original image.]"
    );
    assert_eq!(mime, "image/png");
    let decoded = image::load_from_memory(&STANDARD.decode(data).unwrap()).unwrap();
    assert_eq!((decoded.width(), decoded.height()), (2000, 29));

    // With autoResizeImages off, the same image goes out as it is.
    let tool = Typed::new(ReadTool {
        ops: Arc::new(coding_agent::tools::read::ops::LocalReadOperations),
        options: ReadToolOptions {
            auto_resize_images: false,
        },
    });
    let result = read_with(
        &tool,
        ToolContext::new(root.cwd()),
        json!({"path": "strip.png"}),
    )
    .await
    .unwrap();
    assert_eq!(
        image_result(&result),
        (
            "Read image file [image/png]",
            "image/png",
            STANDARD.encode(&png).as_str()
        )
    );
}

#[tokio::test]
async fn an_image_too_large_to_decode_is_described_not_decoded() {
    let root = Root::new();
    root.file("bomb.png", png_claiming(20_000, 20_000));
    let result = root.read(json!({"path": "bomb.png"})).await.unwrap();
    assert_eq!(
        text_only(&result),
        "Read image file [image/png]\n[Image omitted: 20000x20000 pixels is more than the 100 \
         megapixels read scales down; make a smaller copy with bash first (e.g. convert IMAGE \
         -resize 2000x2000 small.png) and read that.]"
    );
    // Just within the limit, it is decoded (and, holding no such pixels,
    // fails as any broken image does).
    assert_decoded_as_broken(&root, "almost.png", png_claiming(10_000, 10_000)).await;
}

/// Reads `bytes`, an image file claiming pixels it does not hold, as
/// `name`: it is decoded, not refused for its size, and so fails as any
/// broken image does.
async fn assert_decoded_as_broken(root: &Root, name: &str, bytes: Vec<u8>) {
    root.file(name, bytes);
    let result = root.read(json!({ "path": name })).await.unwrap();
    assert!(
        text_only(&result)
            .ends_with("[Image omitted: could not be resized below the inline image size limit.]"),
        "{}",
        text_only(&result)
    );
}

/// DEVIATIONS #24, by bytes: 10000x10000 pixels of 16-bit RGBA took 1.15
/// GB to scale down, where 8-bit RGB takes 650 MB. A 16-bit image may have
/// as many pixels as fit in the 400 MB 100 megapixels of 8-bit RGBA take.
#[tokio::test]
async fn an_image_of_16_bit_colour_is_bounded_by_its_decoded_bytes() {
    let root = Root::new();
    root.file("deep.png", png_claiming_as(8_000, 8_000, 16, 6));
    let result = root.read(json!({"path": "deep.png"})).await.unwrap();
    assert_eq!(
        text_only(&result),
        "Read image file [image/png]\n[Image omitted: 8000x8000 pixels is more than the 50 \
         megapixels read scales down at 16 bits per channel; make a smaller copy with bash \
         first (e.g. convert IMAGE -resize 2000x2000 small.png) and read that.]"
    );
    // Within the bytes, it is decoded (and fails as any broken image does).
    assert_decoded_as_broken(&root, "deep_ok.png", png_claiming_as(7_000, 7_000, 16, 6)).await;
}

/// DEVIATIONS #24: an image file was read whole before any check, so a PNG
/// with 1.5 GB after its end took 1.56 GB. One over 64 MB is not read.
#[tokio::test]
async fn an_image_file_too_large_to_load_is_refused_unread() {
    let root = Root::new();
    let path = root.file("bigtail.png", png_of(&image::RgbImage::new(10, 10)));
    let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    file.set_len(65 * 1024 * 1024).unwrap();
    let result = root.read(json!({"path": "bigtail.png"})).await.unwrap();
    assert_eq!(
        text_only(&result),
        "Read image file [image/png]\n[Image omitted: the file is 65.0MB, more than the 64.0MB \
         read loads to scale an image down; make a smaller copy with bash first (e.g. convert \
         IMAGE -resize 2000x2000 small.png) and read that.]"
    );
}

#[tokio::test]
async fn image_for_a_model_without_image_input_says_it_will_be_omitted() {
    let root = Root::new();
    root.file("image.png", noise_png(4, 3));
    let mut ctx = ToolContext::new(root.cwd());
    ctx.model = Some(Model::new("text-only", "test", "openai-completions"));
    let result = read_with(
        &Typed::<ReadTool>::default(),
        ctx.clone(),
        json!({"path": "image.png"}),
    )
    .await
    .unwrap();
    assert_eq!(
        image_result(&result).0,
        "Read image file [image/png]\n[Current model does not support images. The image will be omitted from this request.]"
    );

    ctx.model.as_mut().unwrap().supports_images = true;
    let result = read_with(
        &Typed::<ReadTool>::default(),
        ctx,
        json!({"path": "image.png"}),
    )
    .await
    .unwrap();
    assert_eq!(image_result(&result).0, "Read image file [image/png]");
}

#[tokio::test]
async fn undecodable_image_is_omitted_with_pis_text() {
    let root = Root::new();
    let mut broken = STANDARD.decode(GRAY_ALPHA_PNG).unwrap();
    broken.truncate(16);
    root.file("broken.png", &broken);
    let result = root.read(json!({"path": "broken.png"})).await.unwrap();
    assert_eq!(
        text_only(&result),
        "Read image file [image/png]\n[Image omitted: could not be resized below the inline image size limit.]"
    );
}

#[tokio::test]
async fn invalid_utf8_is_decoded_with_replacement_characters() {
    let root = Root::new();
    root.file("latin1.txt", b"caf\xe9\nna\xefve");
    let result = root.read(json!({"path": "latin1.txt"})).await.unwrap();
    assert_eq!(text_only(&result), "caf\u{FFFD}\nna\u{FFFD}ve");
}

// ---- parity fixtures: `parity/fixtures/cases/read_*.json` ----

#[tokio::test]
async fn parity_read_absolute() {
    let root = Root::new();
    let path = root.file("a.txt", "absolute ok\n");
    let result = root.read(json!({"path": path})).await.unwrap();
    assert_eq!(text_only(&result), "absolute ok\n");
    assert_eq!(result.details, None);
}

#[tokio::test]
async fn parity_read_binary_deviation_binary_file_is_described_not_decoded() {
    // Pi sends the bytes decoded as UTF-8, 128 U+FFFD included; a model can
    // do nothing with that, so we say what the file is and how to look at it.
    let root = Root::new();
    root.file("bin.dat", (0..=255u8).collect::<Vec<_>>());
    let result = root.read(json!({"path": "bin.dat"})).await.unwrap();
    assert_eq!(
        text_only(&result),
        "Binary file bin.dat (256B) cannot be shown as text. Use bash (e.g. file, strings, xxd) to inspect it."
    );
    assert_eq!(result.details, None);
}

#[tokio::test]
async fn parity_read_curly_quote_fallback() {
    let root = Root::new();
    root.file("it\u{2019}s.txt", "curly ok\n");
    let result = root.read(json!({"path": "it's.txt"})).await.unwrap();
    assert_eq!(text_only(&result), "curly ok\n");
}

#[tokio::test]
async fn parity_read_exactly_2000_lines_no_trailing_nl() {
    let root = Root::new();
    root.generated("f.txt", "", "l{n}\n", 1999, "l2000");
    let result = root.read(json!({"path": "f.txt"})).await.unwrap();
    assert_eq!(text_only(&result), numbered("l{n}", 1..=2000));
    assert_eq!(result.details, None);
}

#[tokio::test]
async fn parity_read_jpg() {
    const JPEG: &str = "/9j/4AAQSkZJRgABAgAAAQABAAD/wAARCAAIAAgDAREAAhEBAxEB/9sAQwADAgIDAgIDAwMDBAMDBAUIBQUEBAUKBwcGCAwKDAwLCgsLDQ4SEA0OEQ4LCxAWEBETFBUVFQwPFxgWFBgSFBUU/9sAQwEDBAQFBAUJBQUJFA0LDRQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQU/8QAHwAAAQUBAQEBAQEAAAAAAAAAAAECAwQFBgcICQoL/8QAtRAAAgEDAwIEAwUFBAQAAAF9AQIDAAQRBRIhMUEGE1FhByJxFDKBkaEII0KxwRVS0fAkM2JyggkKFhcYGRolJicoKSo0NTY3ODk6Q0RFRkdISUpTVFVWV1hZWmNkZWZnaGlqc3R1dnd4eXqDhIWGh4iJipKTlJWWl5iZmqKjpKWmp6ipqrKztLW2t7i5usLDxMXGx8jJytLT1NXW19jZ2uHi4+Tl5ufo6erx8vP09fb3+Pn6/8QAHwEAAwEBAQEBAQEBAQAAAAAAAAECAwQFBgcICQoL/8QAtREAAgECBAQDBAcFBAQAAQJ3AAECAxEEBSExBhJBUQdhcRMiMoEIFEKRobHBCSMzUvAVYnLRChYkNOEl8RcYGRomJygpKjU2Nzg5OkNERUZHSElKU1RVVldYWVpjZGVmZ2hpanN0dXZ3eHl6goOEhYaHiImKkpOUlZaXmJmaoqOkpaanqKmqsrO0tba3uLm6wsPExcbHyMnK0tPU1dbX2Nna4uPk5ebn6Onq8vP09fb3+Pn6/9oADAMBAAIRAxEAPwDmPhR+yp/qf9D9P4a9TOeMN/eMvDbj34PfP//Z";
    let root = Root::new();
    root.file("photo.jpg", STANDARD.decode(JPEG).unwrap());
    let result = root.read(json!({"path": "photo.jpg"})).await.unwrap();
    assert_eq!(
        image_result(&result),
        ("Read image file [image/jpeg]", "image/jpeg", JPEG)
    );
    assert_eq!(result.details, None);
}

#[tokio::test]
async fn parity_read_limit_zero() {
    let root = Root::new();
    root.file("ten.txt", TEN_LINES);
    let result = root
        .read(json!({"path": "ten.txt", "limit": 0}))
        .await
        .unwrap();
    assert_eq!(
        text_only(&result),
        "\n\n[11 more lines in file. Use offset=1 to continue.]"
    );
    assert_eq!(result.details, None);
}

#[tokio::test]
async fn parity_read_long_line_with_offset() {
    let root = Root::new();
    root.generated("long.txt", "one\ntwo\n", "y", 60000, "\nfour\n");
    let result = root
        .read(json!({"path": "long.txt", "offset": 3}))
        .await
        .unwrap();
    assert_eq!(
        text_only(&result),
        "[Line 3 is 58.6KB, exceeds 50.0KB limit. Use bash: sed -n '3p' long.txt | head -c 51200]"
    );
    assert_eq!(
        result.details,
        Some(json!({"truncation": {
            "content": "", "truncated": true, "truncatedBy": "bytes", "totalLines": 3,
            "totalBytes": 60006, "outputLines": 0, "outputBytes": 0, "lastLinePartial": false,
            "firstLineExceedsLimit": true, "maxLines": 2000, "maxBytes": 51200
        }}))
    );
}

/// DEVIATIONS #35: the path in the `sed` hint is quoted for the shell when
/// it holds anything but safe characters; Pi pastes it raw, so `my notes.txt`
/// gave a command that reads `my` and `notes.txt`. A plain path stays as Pi
/// writes it (`parity_read_long_line_with_offset`).
#[tokio::test]
async fn deviation_35_the_sed_hint_quotes_a_path_that_needs_it() {
    let root = Root::new();
    let long = "y".repeat(60_000);
    for (name, arg, shown) in [
        ("my notes.txt", "my notes.txt", "'my notes.txt'"),
        ("it's.txt", "it's.txt", r"'it'\''s.txt'"),
        ("$x.txt", "$x.txt", "'$x.txt'"),
    ] {
        root.file(name, &long);
        let result = root.read(json!({"path": arg})).await.unwrap();
        assert_eq!(
            text_only(&result),
            format!(
                "[Line 1 is 58.6KB, exceeds 50.0KB limit. Use bash: sed -n '1p' {shown} | head -c 51200]"
            )
        );
    }
}

#[tokio::test]
async fn parity_read_no_trailing_newline_limit() {
    let root = Root::new();
    root.file("f.txt", "one\ntwo");
    let result = root
        .read(json!({"path": "f.txt", "limit": 5}))
        .await
        .unwrap();
    assert_eq!(text_only(&result), "one\ntwo");
}

#[tokio::test]
async fn parity_read_offset_negative() {
    let root = Root::new();
    root.file("ten.txt", TEN_LINES);
    let result = root
        .read(json!({"path": "ten.txt", "offset": -5, "limit": 2}))
        .await
        .unwrap();
    assert_eq!(
        text_only(&result),
        "line 1\nline 2\n\n[9 more lines in file. Use offset=3 to continue.]"
    );
}

#[tokio::test]
async fn parity_read_offset_past_end() {
    let root = Root::new();
    root.file("ten.txt", TEN_LINES);
    let error = root
        .read(json!({"path": "ten.txt", "offset": 100}))
        .await
        .unwrap_err();
    assert_eq!(
        error.message(),
        "Offset 100 is beyond end of file (11 lines total)"
    );
}

#[tokio::test]
async fn parity_read_png() {
    const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAQAAAADCAIAAAA7ljmRAAAAEElEQVR42mM4IScHRww4OQD1xwwx7+oCFgAAAABJRU5ErkJggg==";
    let root = Root::new();
    root.file("img.png", STANDARD.decode(PNG).unwrap());
    let result = root.read(json!({"path": "img.png"})).await.unwrap();
    assert_eq!(
        image_result(&result),
        ("Read image file [image/png]", "image/png", PNG)
    );
}

#[tokio::test]
async fn parity_read_relative_dotdot() {
    let root = Root::new();
    root.file("a.txt", "dotdot ok\n");
    std::fs::create_dir(root.cwd().join("sub")).unwrap();
    let result = root.read(json!({"path": "sub/../a.txt"})).await.unwrap();
    assert_eq!(text_only(&result), "dotdot ok\n");
}

#[tokio::test]
async fn parity_read_trunc_bytes() {
    let root = Root::new();
    let pattern = format!("{{n}} {}", "x".repeat(96));
    root.generated("wide.txt", "", &format!("{pattern}\n"), 1000, "");
    let result = root.read(json!({"path": "wide.txt"})).await.unwrap();
    assert_eq!(
        text_only(&result),
        format!(
            "{}\n\n[Showing lines 1-508 of 1001 (50.0KB limit). Use offset=509 to continue.]",
            numbered(&pattern, 1..=508)
        )
    );
    let truncation = &result.details.as_ref().unwrap()["truncation"];
    assert_eq!(
        (
            &truncation["totalLines"],
            &truncation["totalBytes"],
            &truncation["outputLines"],
            &truncation["outputBytes"]
        ),
        (&json!(1001), &json!(100893), &json!(508), &json!(51199))
    );
}

#[tokio::test]
async fn parity_read_trunc_lines_offset() {
    let root = Root::new();
    root.generated("big.txt", "", "line {n}\n", 3000, "");
    let result = root
        .read(json!({"path": "big.txt", "offset": 2500}))
        .await
        .unwrap();
    assert_eq!(
        text_only(&result),
        format!("{}\n", numbered("line {n}", 2500..=3000))
    );
    assert_eq!(result.details, None);
}

// ---- DEVIATIONS #6: streaming, bounded memory ----

/// `line 1` .. `line {lines}`, each ending in `\n`, then zeros up to `size`
/// bytes: a sparse tail that costs no disk, forming one huge last line.
fn huge_file(path: &Path, lines: usize, size: u64) -> u64 {
    let file = std::fs::File::create(path).unwrap();
    let mut writer = BufWriter::new(file);
    for n in 1..=lines {
        writeln!(writer, "line {n}").unwrap();
    }
    let file = writer.into_inner().unwrap();
    let written = file.metadata().unwrap().len();
    file.set_len(size).unwrap();
    size - written
}

#[tokio::test]
async fn deviation_6_reads_a_late_window_of_a_huge_file_by_streaming() {
    let root = Root::new();
    let tail = huge_file(&root.cwd().join("big.log"), 1_000_100, 200 * 1024 * 1024);
    let result = root
        .read(json!({"path": "big.log", "offset": 1_000_000, "limit": 50}))
        .await
        .unwrap();
    // 1,000,100 numbered lines and the zero-filled last line: 1,000,101.
    assert_eq!(
        text_only(&result),
        format!(
            "{}\n\n[52 more lines in file. Use offset=1000050 to continue.]",
            numbered("line {n}", 1_000_000..=1_000_049)
        )
    );

    // The last line is ~185 MB; it is measured, never held.
    let result = root
        .read(json!({"path": "big.log", "offset": 1_000_101}))
        .await
        .unwrap();
    assert_eq!(
        text_only(&result),
        format!(
            "[Line 1000101 is {}, exceeds 50.0KB limit. Use bash: sed -n '1000101p' big.log | head -c 51200]",
            coding_agent::support::truncate::format_size(tail as usize)
        )
    );
    assert_eq!(
        result.details.as_ref().unwrap()["truncation"]["totalBytes"],
        json!(tail)
    );
}

// ---- cancellation ----

#[tokio::test]
async fn cancelled_before_start_is_aborted() {
    let root = Root::new();
    root.file("test.txt", FILE_3_LINES);
    let ctx = ToolContext::new(root.cwd());
    ctx.cancel.cancel();
    let error = read_with(
        &Typed::<ReadTool>::default(),
        ctx,
        json!({"path": "test.txt"}),
    )
    .await
    .unwrap_err();
    assert_eq!(error.message(), "Operation aborted");
}

/// A file system whose line reads never finish, to cancel a read mid-way.
/// A `short` file fits in the prefix read to sniff it; the other is longer.
struct StuckLines {
    short: bool,
}

impl HomeDir for StuckLines {}

#[async_trait]
impl ReadOperations for StuckLines {
    async fn exists(&self, _path: &Path) -> bool {
        true
    }
    async fn access(&self, _path: &Path) -> std::io::Result<FileInfo> {
        Ok(FileInfo {
            is_dir: false,
            len: 10,
            special: None,
        })
    }
    async fn read_prefix(&self, _path: &Path, len: usize) -> std::io::Result<Vec<u8>> {
        Ok(if self.short {
            b"some text\n".to_vec()
        } else {
            b"some text\n".repeat(len).split_off(len)
        })
    }
    async fn read_all(
        &self,
        _path: &Path,
        _cancel: &CancellationToken,
    ) -> Result<Vec<u8>, ReadError> {
        unreachable!("only images are read whole")
    }
    async fn read_lines(
        &self,
        _path: &Path,
        _window: LineWindow,
        _cancel: &CancellationToken,
    ) -> Result<WindowText, ReadError> {
        std::future::pending().await
    }
}

#[tokio::test]
async fn cancelled_while_reading_is_aborted() {
    let ctx = ToolContext::new("/anywhere");
    let cancel = ctx.cancel.clone();
    let tool = Typed::new(ReadTool {
        ops: Arc::new(StuckLines { short: false }),
        ..Default::default()
    });
    let call =
        tokio::spawn(async move { read_with(&tool, ctx, json!({"path": "file.txt"})).await });
    tokio::task::yield_now().await;
    cancel.cancel();
    let error = call.await.unwrap().unwrap_err();
    assert_eq!(error.message(), "Operation aborted");
}

/// A file shorter than the prefix read to sniff it is shown from those
/// bytes: its lines are not read a second time.
#[tokio::test]
async fn a_file_that_fits_in_the_sniffed_prefix_is_not_read_again() {
    let tool = Typed::new(ReadTool {
        ops: Arc::new(StuckLines { short: true }),
        ..Default::default()
    });
    let read = read_with(
        &tool,
        ToolContext::new("/anywhere"),
        json!({"path": "file.txt"}),
    );
    let result = tokio::time::timeout(std::time::Duration::from_secs(10), read)
        .await
        .expect("answered without reading the lines")
        .unwrap();
    assert_eq!(
        serde_json::to_value(&result.content).unwrap(),
        json!([{"type": "text", "text": "some text\n"}])
    );
}
