//! The built-in tools' terminal renderers: calls (complete and still
//! streaming), results (success, error, collapsed, expanded, bash's live
//! tail), compared whole in the compact markup of `render::to_markup`.

// Setup helpers outside #[test] functions panic on failure too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use agent_ai::{Content, Tool};
use agent_core::{AgentToolResult, ToolError};
use async_trait::async_trait;
use coding_agent::render::{RenderOptions, to_markup};
use coding_agent::tools::builtin_tool;
use coding_agent::{ToolContext, ToolDefinition};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

const COLLAPSED: RenderOptions = RenderOptions {
    expanded: false,
    is_partial: false,
    width: 0,
    elapsed: None,
};

const EXPANDED: RenderOptions = RenderOptions {
    expanded: true,
    ..COLLAPSED
};

fn call(tool: &str, args: Value) -> String {
    call_with(tool, args, COLLAPSED)
}

fn call_with(tool: &str, args: Value, options: RenderOptions) -> String {
    let tool = builtin_tool(tool).unwrap();
    to_markup(&tool.render_call(&args, options))
}

fn result(tool: &str, result: &AgentToolResult, is_error: bool, options: RenderOptions) -> String {
    let tool = builtin_tool(tool).unwrap();
    to_markup(&tool.render_result(result, is_error, options))
}

fn ok(tool: &str, text: &str, options: RenderOptions) -> String {
    result(tool, &AgentToolResult::text(text), false, options)
}

fn error(tool: &str, text: &str) -> String {
    result(tool, &AgentToolResult::text(text), true, COLLAPSED)
}

/// `prefix 1` .. `prefix n`, one a line, no final newline.
fn numbered(prefix: &str, n: usize) -> String {
    (1..=n)
        .map(|i| format!("{prefix} {i}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The markup of `numbered` lines `from..=to` in a style (`None`: normal).
fn numbered_markup(prefix: &str, from: usize, to: usize, style: Option<&str>) -> String {
    (from..=to)
        .map(|i| match style {
            Some(style) => format!("[{style}]{prefix} {i}[/]"),
            None => format!("{prefix} {i}"),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// How the loop turns a tool's `Err` into the result the model reads.
fn as_result(outcome: Result<AgentToolResult, ToolError>) -> (AgentToolResult, bool) {
    match outcome {
        Ok(result) => (result, false),
        Err(error) => {
            let details = error.details().cloned().unwrap_or_else(|| json!({}));
            (
                AgentToolResult::text(error.message()).with_details(details),
                true,
            )
        }
    }
}

// ---------------------------------------------------------------- read

#[test]
fn read_call_shows_the_path_and_the_line_range() {
    assert_eq!(
        call(
            "read",
            json!({"path": "src/main.rs", "offset": 10, "limit": 20})
        ),
        "[bold]read[/] [accent]src/main.rs[/][dim]:10-29[/]"
    );
    assert_eq!(
        call("read", json!({"path": "src/main.rs", "offset": 10})),
        "[bold]read[/] [accent]src/main.rs[/][dim]:10[/]"
    );
    assert_eq!(
        call("read", json!({"path": "src/main.rs", "limit": 5})),
        "[bold]read[/] [accent]src/main.rs[/][dim]:1-5[/]"
    );
    assert_eq!(
        call("read", json!({"path": "src/main.rs"})),
        "[bold]read[/] [accent]src/main.rs[/]"
    );
}

#[test]
fn read_call_takes_odd_numbers_as_the_tool_does() {
    assert_eq!(
        call("read", json!({"path": "a", "offset": 0, "limit": 2.7})),
        "[bold]read[/] [accent]a[/][dim]:1-2[/]"
    );
    assert_eq!(
        call("read", json!({"path": "a", "offset": 3, "limit": 0})),
        "[bold]read[/] [accent]a[/][dim]:3[/]"
    );
}

#[test]
fn read_call_with_partial_arguments_shows_what_has_arrived() {
    assert_eq!(call("read", json!({})), "[bold]read[/] [dim]…[/]");
    assert_eq!(call("read", json!(null)), "[bold]read[/] [dim]…[/]");
    assert_eq!(
        call("read", json!({"path": "src/ma"})),
        "[bold]read[/] [accent]src/ma[/]"
    );
    assert_eq!(
        call("read", json!({"offset": 4, "path": 7})),
        "[bold]read[/] [dim]…[/][dim]:4[/]"
    );
}

#[test]
fn read_result_collapses_to_its_first_lines() {
    let text = numbered("line", 12);
    assert_eq!(
        ok("read", &text, COLLAPSED),
        format!(
            "{}\n[dim]… 2 more lines[/]",
            numbered_markup("line", 1, 10, None)
        )
    );
    assert_eq!(ok("read", &text, EXPANDED), text);
}

#[test]
fn read_result_keeps_its_continuation_notice_in_view() {
    let text = format!(
        "{}\n\n[Showing lines 1-12 of 5000. Use offset=13 to continue.]",
        numbered("line", 12)
    );
    assert_eq!(
        ok("read", &text, COLLAPSED),
        format!(
            "{}\n[dim]… 2 more lines[/]\n[warning][Showing lines 1-12 of 5000. Use offset=13 to continue.][/]",
            numbered_markup("line", 1, 10, None)
        )
    );
}

#[test]
fn read_result_shows_an_image_as_a_placeholder() {
    let image = AgentToolResult {
        content: vec![
            Content::text("Read image file [image/png]"),
            Content::image("A".repeat(16_800), "image/png"),
        ],
        details: None,
        terminate: false,
    };
    assert_eq!(
        result("read", &image, false, COLLAPSED),
        "Read image file [image/png]\n[dim][image: image/png, 12.3KB][/]"
    );
}

#[test]
fn read_error_is_red_and_says_what_the_model_read() {
    assert_eq!(
        error("read", "Offset 50 is beyond end of file (3 lines total)"),
        "[error]Offset 50 is beyond end of file (3 lines total)[/]"
    );
}

// ---------------------------------------------------------------- write

#[test]
fn write_call_shows_the_size_and_the_first_lines_as_added() {
    let content = format!("{}\n", numbered("row", 12));
    assert_eq!(
        call("write", json!({"path": "out.txt", "content": content})),
        format!(
            "[bold]write[/] [accent]out.txt[/][dim] (12 lines, 75B)[/]\n{}\n[dim]… 2 more lines[/]",
            numbered_markup("row", 1, 10, Some("success"))
        )
    );
    assert_eq!(
        call_with(
            "write",
            json!({"path": "out.txt", "content": content}),
            EXPANDED
        ),
        format!(
            "[bold]write[/] [accent]out.txt[/][dim] (12 lines, 75B)[/]\n{}",
            numbered_markup("row", 1, 12, Some("success"))
        )
    );
}

#[test]
fn write_call_while_streaming_shows_what_has_arrived() {
    let streaming = RenderOptions {
        is_partial: true,
        ..COLLAPSED
    };
    assert_eq!(
        call_with("write", json!({}), streaming),
        "[bold]write[/] [dim]…[/]"
    );
    assert_eq!(
        call_with("write", json!({"path": "big.rs"}), streaming),
        "[bold]write[/] [accent]big.rs[/]"
    );
    assert_eq!(
        call_with(
            "write",
            json!({"path": "big.rs", "content": "fn ma"}),
            streaming
        ),
        "[bold]write[/] [accent]big.rs[/][dim] (1 line, 5B)[/]\n[success]fn ma[/]"
    );
    assert_eq!(
        call_with("write", json!({"path": "empty", "content": ""}), streaming),
        "[bold]write[/] [accent]empty[/][dim] (0 lines, 0B)[/]"
    );
}

#[test]
fn write_call_preview_of_a_huge_file_stays_bounded() {
    let content = format!("{}\n{}", "x".repeat(2_000_000), "y\n".repeat(100_000));
    let options = RenderOptions {
        width: 20,
        ..COLLAPSED
    };
    assert_eq!(
        call_with(
            "write",
            json!({"path": "huge", "content": content}),
            options
        ),
        format!(
            "[bold]write[/] [accent]huge[/][dim] (100001 lines, 2.1MB)[/]\n[success]{}…[/]\n{}\n[dim]… 99991 more lines[/]",
            "x".repeat(19),
            ["[success]y[/]"; 9].join("\n")
        )
    );
}

#[test]
fn write_result_is_dim_on_success_and_red_on_error() {
    assert_eq!(
        ok("write", "Successfully wrote 79 bytes to out.txt", COLLAPSED),
        "[dim]Successfully wrote 79 bytes to out.txt[/]"
    );
    assert_eq!(
        error("write", "EACCES: permission denied, open '/etc/x'"),
        "[error]EACCES: permission denied, open '/etc/x'[/]"
    );
}

// ---------------------------------------------------------------- edit

#[test]
fn edit_call_shows_the_path_and_how_many_edits() {
    assert_eq!(
        call(
            "edit",
            json!({"path": "src/lib.rs", "edits": [{"oldText": "a", "newText": "b"}]})
        ),
        "[bold]edit[/] [accent]src/lib.rs[/]"
    );
    assert_eq!(
        call(
            "edit",
            json!({"path": "src/lib.rs", "edits": [{}, {"oldText": "x"}]})
        ),
        "[bold]edit[/] [accent]src/lib.rs[/][dim] (2 edits)[/]"
    );
    assert_eq!(
        call("edit", json!({"edits": "[{"})),
        "[bold]edit[/] [dim]…[/]"
    );
}

#[tokio::test]
async fn edit_result_colours_the_diff_it_made() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("f.txt"), "a\nb\nc\n").unwrap();
    let tool = builtin_tool("edit").unwrap();
    let outcome = tool
        .execute(
            json!({"path": "f.txt", "edits": [{"oldText": "b", "newText": "B\nB2"}]}),
            ToolContext::new(dir.path()),
        )
        .await;
    let (edited, is_error) = as_result(outcome);
    // Pi's numbered diff: context lines carry their old line number.
    assert_eq!(
        result("edit", &edited, is_error, COLLAPSED),
        "[dim] 1 a[/]\n[error]-2 b[/]\n[success]+2 B[/]\n[success]+3 B2[/]\n[dim] 3 c[/]"
    );
}

#[test]
fn edit_result_collapses_a_long_diff() {
    let diff: String = (1..=45).map(|i| format!("+{i:>2} new {i}\n")).collect();
    let edited = AgentToolResult::text("Successfully replaced 1 block(s) in f.")
        .with_details(json!({"diff": diff, "firstChangedLine": 1}));
    let collapsed = result("edit", &edited, false, COLLAPSED);
    assert_eq!(collapsed.lines().count(), 41);
    assert!(collapsed.ends_with("[success]+40 new 40[/]\n[dim]… 5 more diff lines[/]"));
    let expanded = result("edit", &edited, false, EXPANDED);
    assert_eq!(expanded.lines().count(), 45);
    assert!(expanded.ends_with("[success]+45 new 45[/]"));
}

#[test]
fn edit_result_without_a_diff_shows_the_text() {
    assert_eq!(
        ok("edit", "Successfully replaced 1 block(s) in f.", COLLAPSED),
        "Successfully replaced 1 block(s) in f."
    );
}

#[test]
fn edit_error_is_red() {
    assert_eq!(
        error(
            "edit",
            "Could not find the exact text in f.txt. The old text must match exactly including all whitespace and newlines."
        ),
        "[error]Could not find the exact text in f.txt. The old text must match exactly including all whitespace and newlines.[/]"
    );
}

// ---------------------------------------------------------------- bash

#[test]
fn bash_call_shows_the_command_and_its_timeout() {
    assert_eq!(
        call("bash", json!({"command": "cargo test"})),
        "[bold]$[/] [accent]cargo test[/]"
    );
    assert_eq!(
        call("bash", json!({"command": "sleep 1", "timeout": 2.5})),
        "[bold]$[/] [accent]sleep 1[/][dim] (timeout 2.5s)[/]"
    );
    assert_eq!(call("bash", json!({"timeout": 5})), "[bold]$[/] [dim]…[/]");
    // Small models send `timeout: 0`, which means none: nothing to show.
    assert_eq!(
        call("bash", json!({"command": "ls", "timeout": 0})),
        "[bold]$[/] [accent]ls[/]"
    );
    assert_eq!(call("bash", json!({"command": ""})), "[bold]$[/] ");
}

#[test]
fn bash_call_collapses_a_long_script() {
    let script = numbered("echo", 7);
    assert_eq!(
        call("bash", json!({"command": script})),
        "[bold]$[/] [accent]echo 1[/]\n[accent]echo 2[/]\n[accent]echo 3[/]\n[accent]echo 4[/]\n[accent]echo 5[/]\n[dim]… 2 more lines[/]"
    );
    assert_eq!(
        call_with("bash", json!({"command": script}), EXPANDED),
        format!(
            "[bold]$[/] [accent]echo 1[/]\n{}",
            numbered_markup("echo", 2, 7, Some("accent"))
        )
    );
}

fn running(seconds: f64) -> RenderOptions {
    RenderOptions {
        is_partial: true,
        elapsed: Some(Duration::from_secs_f64(seconds)),
        ..COLLAPSED
    }
}

fn done(seconds: f64) -> RenderOptions {
    RenderOptions {
        elapsed: Some(Duration::from_secs_f64(seconds)),
        ..COLLAPSED
    }
}

#[test]
fn bash_progress_shows_a_live_tail_and_that_it_runs() {
    assert_eq!(
        result("bash", &AgentToolResult::default(), false, running(0.0)),
        "[dim]running[/][dim] · 0.0s[/]"
    );
    assert_eq!(
        ok("bash", &format!("{}\n", numbered("out", 8)), running(2.5)),
        format!(
            "[dim]… 3 earlier lines[/]\n{}\n[dim]running[/][dim] · 2.5s[/]",
            numbered_markup("out", 4, 8, None)
        )
    );
}

#[test]
fn bash_progress_counts_lines_the_tool_no_longer_holds() {
    let update = AgentToolResult::text(numbered("out", 8)).with_details(json!({
        "truncation": {"totalLines": 5000, "outputLines": 8, "truncated": true},
        "fullOutputPath": "/tmp/pi-bash-0123456789abcdef.log"
    }));
    assert_eq!(
        result("bash", &update, false, running(61.0)),
        format!(
            "[dim]… 4995 earlier lines[/]\n{}\n[dim]running[/][dim] · 1m 1s[/]",
            numbered_markup("out", 4, 8, None)
        )
    );
}

#[test]
fn bash_result_shows_the_tail_the_exit_status_and_the_time() {
    assert_eq!(
        ok("bash", "hello\n", done(0.25)),
        "hello\n[success]exit 0[/][dim] · 0.2s[/]"
    );
    assert_eq!(
        ok("bash", "(no output)", COLLAPSED),
        "[dim](no output)[/]\n[success]exit 0[/]"
    );
    let text = numbered("out", 8);
    assert_eq!(
        ok("bash", &text, EXPANDED),
        format!("{}\n[success]exit 0[/]", numbered_markup("out", 1, 8, None))
    );
}

#[test]
fn bash_result_keeps_the_truncation_notice_in_view() {
    let text = format!(
        "{}\n\n[Showing lines 4993-5000 of 5000. Full output: /tmp/pi-bash-0123456789abcdef.log]",
        numbered("out", 8)
    );
    let truncated = AgentToolResult::text(text).with_details(json!({
        "truncation": {"totalLines": 5000, "outputLines": 8, "truncated": true},
        "fullOutputPath": "/tmp/pi-bash-0123456789abcdef.log"
    }));
    assert_eq!(
        result("bash", &truncated, false, COLLAPSED),
        format!(
            "[dim]… 4995 earlier lines[/]\n{}\n[warning][Showing lines 4993-5000 of 5000. Full output: /tmp/pi-bash-0123456789abcdef.log][/]\n[success]exit 0[/]",
            numbered_markup("out", 4, 8, None)
        )
    );
}

#[tokio::test]
async fn bash_result_reads_the_exit_code_from_the_details() {
    let dir = tempfile::tempdir().unwrap();
    let tool = builtin_tool("bash").unwrap();
    let outcome = tool
        .execute(
            json!({"command": "echo out; exit 3"}),
            ToolContext::new(dir.path()),
        )
        .await;
    let (failed, is_error) = as_result(outcome);
    assert_eq!(
        result("bash", &failed, is_error, done(1.0)),
        "out\n[error]exit 3[/][dim] · 1.0s[/]"
    );
}

/// A failed bash result with `details.ended`.
fn bash_failure(text: &str, ended: Value) -> String {
    let failed = AgentToolResult::text(text).with_details(json!({ "ended": ended }));
    result("bash", &failed, true, COLLAPSED)
}

#[test]
fn bash_result_names_timeouts_aborts_and_signals() {
    assert_eq!(
        bash_failure(
            "(no output)\n\nCommand exited with code 1",
            json!({"exitCode": 1})
        ),
        "[dim](no output)[/]\n[error]exit 1[/]"
    );
    assert_eq!(
        bash_failure(
            "partial\n\nCommand timed out after 2.5 seconds",
            json!({"timedOut": 2.5})
        ),
        "partial\n[error]timed out after 2.5 seconds[/]"
    );
    assert_eq!(
        bash_failure("Command aborted", json!("aborted")),
        "[error]aborted[/]"
    );
    assert_eq!(
        bash_failure(
            "x\n\nCommand terminated by signal SIGKILL",
            json!({"signal": "SIGKILL"})
        ),
        "x\n[error]terminated by signal SIGKILL[/]"
    );
}

#[test]
fn bash_errors_without_a_status_are_red_whole() {
    assert_eq!(
        error(
            "bash",
            "Working directory does not exist: /gone\nCannot execute bash commands."
        ),
        "[error]Working directory does not exist: /gone[/]\n[error]Cannot execute bash commands.[/]"
    );
}

#[test]
fn bash_output_lines_are_cut_to_the_width_while_collapsed() {
    let options = RenderOptions {
        width: 8,
        ..COLLAPSED
    };
    assert_eq!(
        ok("bash", "0123456789abcdef\nshort", options),
        "0123456…\nshort\n[success]exit 0[/]"
    );
}

// ---------------------------------------------------------------- grep

#[test]
fn grep_call_shows_the_pattern_and_its_options() {
    assert_eq!(
        call(
            "grep",
            json!({"pattern": "TODO", "path": "src", "glob": "*.rs", "ignoreCase": true, "context": 2, "limit": 50})
        ),
        "[bold]grep[/] [accent]/TODO/[/][dim] in src (*.rs) ignoring case context 2 limit 50[/]"
    );
    assert_eq!(
        call("grep", json!({"pattern": "a.b", "literal": true})),
        "[bold]grep[/] [accent]\"a.b\"[/]"
    );
    assert_eq!(
        call("grep", json!({"path": "src"})),
        "[bold]grep[/] [dim]…[/][dim] in src[/]"
    );
}

#[test]
fn grep_result_counts_matches_not_context_lines() {
    let text = "a.rs-1- before\na.rs:2: hit: 3: x\na.rs-3- after-4- y\n--\nb-1-.rs:9: hit";
    assert_eq!(
        ok("grep", text, COLLAPSED),
        "[dim]2 matches[/]\na.rs-1- before\na.rs:2: hit: 3: x\na.rs-3- after-4- y\n--\nb-1-.rs:9: hit"
    );
}

#[test]
fn grep_result_collapses_and_keeps_its_notice() {
    let text = format!(
        "{}\n\n[12 matches limit reached. Use limit=24 for more, or refine pattern]",
        numbered("src/a.rs:1:", 12)
    );
    assert_eq!(
        ok("grep", &text, COLLAPSED),
        format!(
            "[dim]12 matches[/]\n{}\n[dim]… 2 more lines[/]\n[warning][12 matches limit reached. Use limit=24 for more, or refine pattern][/]",
            numbered_markup("src/a.rs:1:", 1, 10, None)
        )
    );
    assert_eq!(
        ok("grep", &text, EXPANDED),
        format!(
            "[dim]12 matches[/]\n{}\n[warning][12 matches limit reached. Use limit=24 for more, or refine pattern][/]",
            numbered_markup("src/a.rs:1:", 1, 12, None)
        )
    );
}

#[test]
fn grep_result_without_matches_is_dim_and_errors_red() {
    assert_eq!(
        ok("grep", "No matches found", COLLAPSED),
        "[dim]No matches found[/]"
    );
    assert_eq!(
        error("grep", "Path not found: /work/nope"),
        "[error]Path not found: /work/nope[/]"
    );
}

// ---------------------------------------------------------------- find

#[test]
fn find_call_shows_the_pattern_where_and_the_limit() {
    assert_eq!(
        call(
            "find",
            json!({"pattern": "**/*.rs", "path": "crates", "limit": 10})
        ),
        "[bold]find[/] [accent]**/*.rs[/][dim] in crates limit 10[/]"
    );
    assert_eq!(
        call("find", json!({"pattern": "*.md", "path": ""})),
        "[bold]find[/] [accent]*.md[/]"
    );
    assert_eq!(call("find", json!({})), "[bold]find[/] [dim]…[/]");
}

#[test]
fn find_result_counts_files() {
    assert_eq!(ok("find", "a.rs", COLLAPSED), "[dim]1 file[/]\na.rs");
    assert_eq!(
        ok("find", &numbered("f", 11), COLLAPSED),
        format!(
            "[dim]11 files[/]\n{}\n[dim]… 1 more line[/]",
            numbered_markup("f", 1, 10, None)
        )
    );
    assert_eq!(
        ok("find", "No files found matching pattern", COLLAPSED),
        "[dim]No files found matching pattern[/]"
    );
    assert_eq!(
        error("find", "Not a directory: /work/a.rs"),
        "[error]Not a directory: /work/a.rs[/]"
    );
}

// ---------------------------------------------------------------- ls

#[test]
fn ls_call_shows_the_directory() {
    assert_eq!(call("ls", json!({})), "[bold]ls[/] [accent].[/]");
    assert_eq!(
        call("ls", json!({"path": "src", "limit": 20})),
        "[bold]ls[/] [accent]src[/][dim] limit 20[/]"
    );
}

#[test]
fn ls_result_counts_entries() {
    assert_eq!(
        ok(
            "ls",
            "Cargo.toml\nsrc/\n\n[2 entries limit reached. Use limit=4 for more]",
            COLLAPSED
        ),
        "[dim]2 entries[/]\nCargo.toml\nsrc/\n[warning][2 entries limit reached. Use limit=4 for more][/]"
    );
    assert_eq!(
        ok("ls", "(empty directory)", COLLAPSED),
        "[dim](empty directory)[/]"
    );
    assert_eq!(
        error("ls", "Path not found: /work/x"),
        "[error]Path not found: /work/x[/]"
    );
}

// ---------------------------------------------------------------- defaults

/// A tool that keeps the default renderers.
struct Echo {
    tool: Tool,
}

#[derive(Deserialize, JsonSchema)]
struct EchoArgs {
    /// What to say.
    #[allow(dead_code)]
    text: String,
}

#[async_trait]
impl ToolDefinition for Echo {
    fn tool(&self) -> &Tool {
        &self.tool
    }

    fn label(&self) -> &str {
        "Echo"
    }

    async fn execute(
        &self,
        _params: Value,
        _ctx: ToolContext,
    ) -> Result<AgentToolResult, ToolError> {
        Ok(AgentToolResult::default())
    }
}

#[test]
fn tools_without_renderers_show_name_arguments_and_text() {
    let echo = Echo {
        tool: Tool::for_args::<EchoArgs>("echo", "Says things."),
    };
    assert_eq!(
        to_markup(&echo.render_call(&json!({"text": "hi"}), COLLAPSED)),
        "[bold]echo[/] [dim]{\"text\":\"hi\"}[/]"
    );
    assert_eq!(
        to_markup(&echo.render_result(&AgentToolResult::text("hi\nthere"), false, COLLAPSED)),
        "hi\nthere"
    );
    assert_eq!(
        to_markup(&echo.render_result(&AgentToolResult::text("bad"), true, COLLAPSED)),
        "[error]bad[/]"
    );
}
