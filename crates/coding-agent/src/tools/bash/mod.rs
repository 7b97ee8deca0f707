//! The `bash` tool: runs a shell command in the working directory and shows
//! the model the tail of its output (Pi 0.73.1, `docs/tool-behaviour.md` §4.4).
//!
//! Output of any size streams through a bounded [`OutputAccumulator`](output::OutputAccumulator) on a
//! blocking thread ([`run`]); the model gets the last 2000 lines or 50 KB with Pi's
//! notice naming a file that holds everything. Where we go beyond Pi:
//! escape sequences are stripped from what the model reads (DEVIATIONS #7),
//! and a shell killed by a signal is an error (DEVIATIONS #8).

pub mod ansi;
pub mod log;
pub mod ops;
pub mod output;
pub mod run;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use agent_ai::Content;
use agent_core::AgentToolResult;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_with::skip_serializing_none;

use self::ops::{BashOperations, ExecError, ExitStatus};
use self::output::OutputSnapshot;
use self::run::{CommandRun, run_streaming};
use crate::definition::{OnCancel, ToolContext, ToolFailure, ToolOutput, ToolSpec, TypedTool};
use crate::render::preview::{clip, count, head, limit, notice_line, split_notice, tail_lines};
use crate::render::{RenderOptions, Style, StyledLine, call, result};
use crate::support::js_number;
use crate::support::notices::append_notice;
use crate::support::truncate::{TruncatedBy, Truncation, format_size};
use crate::tools::OpsTool;

/// What the model reads about `bash` (Pi's text).
const DESCRIPTION: &str = "Execute a bash command in the current working directory. Returns stdout and stderr. Output is truncated to last 2000 lines or 50KB (whichever is hit first). If truncated, full output is saved to a temp file. Optionally provide a timeout in seconds.";

/// `bash` as the model and the system prompt know it. A cancelled command
/// is killed and answers with its output so far.
pub const SPEC: ToolSpec = ToolSpec {
    prompt_snippet: Some("Execute bash commands (ls, grep, find, etc.)"),
    aborted: ABORTED,
    on_cancel: OnCancel::ToolAnswers,
    ..ToolSpec::new("bash", "Bash", DESCRIPTION)
};

/// Lines of output shown, the last ones, before the view is expanded.
const OUTPUT_TAIL_LINES: usize = 5;

/// Lines of a multi-line command shown before the view is expanded.
const COMMAND_PREVIEW_LINES: usize = 5;

/// The arguments a model passes to `bash`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct BashArgs {
    /// Bash command to execute
    pub command: String,
    /// Timeout in seconds (optional, no default timeout)
    pub timeout: Option<f64>,
}

/// What is about to run; a [`SpawnHook`] may rewrite it (Pi's `spawnHook`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpawnContext {
    /// The full command, command prefix included.
    pub command: String,
    /// The directory it runs in.
    pub cwd: PathBuf,
    /// Variables set on top of the inherited environment.
    pub env: Vec<(String, String)>,
}

/// Rewrites a command, its directory or its environment just before it runs.
pub type SpawnHook = Arc<dyn Fn(SpawnContext) -> SpawnContext + Send + Sync>;

/// Settings of the bash tool beyond its operations.
#[derive(Clone, Default)]
pub struct BashToolOptions {
    /// Runs before every command, on its own line (for example `shopt -s expand_aliases`).
    pub command_prefix: Option<String>,
    /// Rewrites each command before it runs.
    pub spawn_hook: Option<SpawnHook>,
    /// Where full-output files go; defaults to the temp directory of the
    /// machine commands run on.
    pub temp_dir: Option<PathBuf>,
}

impl std::fmt::Debug for BashToolOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BashToolOptions")
            .field("command_prefix", &self.command_prefix)
            .field("has_spawn_hook", &self.spawn_hook.is_some())
            .field("temp_dir", &self.temp_dir)
            .finish()
    }
}

/// The `bash` tool; [`Typed`](crate::definition::Typed) makes it a
/// [`ToolDefinition`](crate::ToolDefinition).
pub type BashTool = OpsTool<dyn BashOperations, BashToolOptions>;

/// What `bash` reports besides its text: Pi's `truncation` and
/// `fullOutputPath` when the output was cut, and how a failed command ended.
#[skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BashDetails {
    /// How the output was cut to its tail, when it was.
    pub truncation: Option<Truncation>,
    /// The file holding the whole output, when it was cut.
    pub full_output_path: Option<PathBuf>,
    /// How a failed command ended; absent on success and while it runs.
    pub ended: Option<CommandEnd>,
}

/// How a failed command ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum CommandEnd {
    /// The shell exited with this non-zero code.
    ExitCode(i32),
    /// A signal killed the shell (DEVIATIONS #8: Pi reports it as success).
    Signal(String),
    /// The timeout, in seconds, passed and the command was killed.
    TimedOut(f64),
    /// The call was cancelled and the command killed.
    Aborted,
}

impl CommandEnd {
    /// The status line the model reads after the output (Pi's texts).
    pub fn status_text(&self) -> String {
        match self {
            CommandEnd::ExitCode(code) => format!("Command exited with code {code}"),
            CommandEnd::Signal(signal) => format!("Command terminated by signal {signal}"),
            CommandEnd::TimedOut(seconds) => format!(
                "Command timed out after {} seconds",
                js_number::format(*seconds)
            ),
            CommandEnd::Aborted => ABORTED.to_owned(),
        }
    }

    /// The short status a terminal shows.
    fn summary(&self) -> String {
        match self {
            CommandEnd::ExitCode(code) => format!("exit {code}"),
            CommandEnd::Signal(signal) => format!("terminated by signal {signal}"),
            CommandEnd::TimedOut(seconds) => {
                format!("timed out after {} seconds", js_number::format(*seconds))
            }
            CommandEnd::Aborted => "aborted".to_owned(),
        }
    }

    /// What the model reads of a command that ended this way after printing
    /// `shown`: the output, then the status line.
    pub fn result_text(&self, shown: &str) -> String {
        let output = if shown.is_empty() && self.marks_no_output() {
            NO_OUTPUT
        } else {
            shown
        };
        append_status(output, &self.status_text())
    }

    /// Pi shows `(no output)` before the status of a command that exited
    /// (or was killed by a signal), and nothing before a timeout or abort.
    fn marks_no_output(&self) -> bool {
        matches!(self, CommandEnd::ExitCode(_) | CommandEnd::Signal(_))
    }
}

/// Bash's text for a cancelled call (the other tools say `Operation aborted`).
const ABORTED: &str = "Command aborted";

/// Pi's text for a command that exited having printed nothing.
pub(crate) const NO_OUTPUT: &str = "(no output)";

/// What the model reads of a command holding a NUL character.
const NUL_IN_COMMAND: &str = "The command contains a NUL character (\\0), which no command line can hold; remove it or write it as printf '\\0'";

/// The output as the model reads it (Pi's `formatOutput`): the tail, or
/// `empty_text` when the tail is empty, plus Pi's notice when cut; and
/// `details` (`truncation`, `fullOutputPath`) only when cut.
///
/// Pi passes [`NO_OUTPUT`] for a command that exited and `""` for one that was
/// stopped (the status says why). A cut tail can be empty too: an 80 KB line
/// and its newline keep only the empty line after it, which read as a blank
/// before the notice, where Pi says `(no output)`.
pub(crate) fn shown_output(
    snapshot: &OutputSnapshot,
    empty_text: &str,
) -> (String, Option<BashDetails>) {
    let truncation = &snapshot.truncation;
    let content = if truncation.content.is_empty() {
        empty_text
    } else {
        &truncation.content
    };
    if !truncation.truncated {
        return (content.to_owned(), None);
    }
    let end = truncation.total_lines;
    let start = (end + 1).saturating_sub(truncation.output_lines);
    let mut notice = if truncation.last_line_partial {
        format!(
            "Showing last {} of line {end} (line is {})",
            format_size(truncation.output_bytes),
            format_size(snapshot.last_line_bytes)
        )
    } else if truncation.truncated_by == Some(TruncatedBy::Bytes) {
        format!(
            "Showing lines {start}-{end} of {end} ({} limit)",
            format_size(truncation.max_bytes)
        )
    } else {
        format!("Showing lines {start}-{end} of {end}")
    };
    if let Some(path) = &snapshot.full_output_path {
        notice.push_str(&format!(". Full output: {}", path.display()));
    }
    if let Some(kept) = snapshot.full_output_cut_at {
        notice.push_str(&format!(
            " (only its first {} were kept)",
            format_size(kept)
        ));
    }
    let details = BashDetails {
        truncation: Some(truncation.clone()),
        full_output_path: snapshot.full_output_path.clone(),
        ended: None,
    };
    (append_notice(content, &notice), Some(details))
}

/// Pi's `appendStatus`: the status after a blank line, or alone after no text.
fn append_status(text: &str, status: &str) -> String {
    if text.is_empty() {
        status.to_owned()
    } else {
        format!("{text}\n\n{status}")
    }
}

/// The line under a command's output: how it ended (or that it still runs)
/// and how long it ran.
fn status_line(ended: Option<&CommandEnd>, running: bool, elapsed: Option<Duration>) -> StyledLine {
    let line = match ended {
        _ if running => StyledLine::new("running", Style::Dim),
        Some(ended) => StyledLine::new(ended.summary(), Style::Error),
        None => StyledLine::new("exit 0", Style::Success),
    };
    match elapsed {
        Some(elapsed) => line.push(format!(" · {}", format_elapsed(elapsed)), Style::Dim),
        None => line,
    }
}

/// `0.4s`, `12.3s`, `2m 5s`.
fn format_elapsed(elapsed: Duration) -> String {
    let seconds = elapsed.as_secs_f64();
    if seconds < 60.0 {
        format!("{seconds:.1}s")
    } else {
        let whole = elapsed.as_secs();
        format!("{}m {}s", whole / 60, whole % 60)
    }
}

impl TypedTool for BashTool {
    type Args = BashArgs;
    type Details = BashDetails;
    const SPEC: ToolSpec = SPEC;

    /// `$ command` (its first lines while collapsed) and the timeout.
    fn render_call(&self, args: &Value, options: RenderOptions) -> Vec<StyledLine> {
        let prompt = call::header("$");
        let Some(command) = call::str_arg(args, "command") else {
            return vec![call::with_main_arg(prompt, None)];
        };
        let head = head(command, limit(COMMAND_PREVIEW_LINES, options));
        let mut command_lines = head.lines.iter().map(|line| clip(line, options));
        let mut first = prompt.push(" ", Style::Normal);
        if let Some(line) = command_lines.next() {
            first = first.push(line, Style::Accent);
        }
        // Only a positive timeout is one (0 or less runs without), so only
        // that is shown.
        if let Some(timeout) = call::number_arg(args, "timeout").filter(|t| *t > 0.0) {
            first = first.push(
                format!(" (timeout {}s)", call::format_number(timeout)),
                Style::Dim,
            );
        }
        let mut lines = vec![first];
        lines.extend(command_lines.map(|line| StyledLine::new(line, Style::Accent)));
        if head.more > 0 {
            lines.push(StyledLine::new(
                format!("… {}", count(head.more, "more line", "more lines")),
                Style::Dim,
            ));
        }
        lines
    }

    /// The last lines of the output (all when expanded), its truncation
    /// notice, and how the command ended (or that it still runs) with the
    /// elapsed time. Errors that carry no command status (the shell could
    /// not start) show in the error style.
    fn render_result(
        &self,
        result: &AgentToolResult,
        details: Option<&BashDetails>,
        is_error: bool,
        options: RenderOptions,
    ) -> Vec<StyledLine> {
        let text = result::joined_text(result);
        let ended = details.and_then(|details| details.ended.as_ref());
        let output = match ended {
            _ if options.is_partial || !is_error => text.as_ref(),
            // The output before the status line the tool appended.
            Some(ended) => text
                .strip_suffix(&ended.status_text())
                .map_or(text.as_ref(), |output| {
                    output.strip_suffix("\n\n").unwrap_or(output)
                }),
            None => return result::error_lines(result, options),
        };
        let (output, notice) = split_notice(output);
        let mut lines = if output == "(no output)" {
            vec![StyledLine::new(output, Style::Dim)]
        } else {
            let total = details
                .and_then(|details| details.truncation.as_ref())
                .map(|truncation| truncation.total_lines);
            tail_lines(output, OUTPUT_TAIL_LINES, total, Style::Normal, options)
        };
        lines.extend(notice.map(notice_line));
        lines.push(status_line(
            ended.filter(|_| is_error),
            options.is_partial,
            options.elapsed,
        ));
        lines
    }

    async fn run(
        &self,
        args: BashArgs,
        ctx: &ToolContext,
    ) -> Result<ToolOutput<BashDetails>, ToolFailure<BashDetails>> {
        let command = match &self.options.command_prefix {
            Some(prefix) => format!("{prefix}\n{}", args.command),
            None => args.command,
        };
        let mut spawn = SpawnContext {
            command,
            cwd: ctx.cwd.clone(),
            env: Vec::new(),
        };
        if let Some(hook) = &self.options.spawn_hook {
            spawn = hook(spawn);
        }
        // The operating system takes no argument holding a NUL: say so, not
        // the spawn's error, which names whatever program started the shell.
        if spawn.command.contains('\0') {
            return Err(ToolFailure::new(NUL_IN_COMMAND));
        }
        // Only a positive, representable number of seconds is a timeout (as Pi's `timeout > 0`).
        let timeout = args
            .timeout
            .filter(|seconds| *seconds > 0.0)
            .and_then(|seconds| Duration::try_from_secs_f64(seconds).ok());

        let (outcome, snapshot) = run_streaming(
            self.ops.as_ref(),
            CommandRun {
                command: &spawn.command,
                cwd: &spawn.cwd,
                env: spawn.env,
                timeout,
                temp_dir: self.options.temp_dir.as_deref(),
            },
            ctx.cancel.clone(),
            &ctx.updates,
        )
        .await;
        let empty_text = if outcome.is_ok() { NO_OUTPUT } else { "" };
        let (shown, details) = shown_output(&snapshot, empty_text);
        let ended = match outcome {
            Ok(ExitStatus::Code(0)) => {
                return Ok(ToolOutput {
                    content: vec![Content::text(shown)],
                    details,
                });
            }
            Ok(ExitStatus::Code(code)) => CommandEnd::ExitCode(code),
            Ok(ExitStatus::Signal(signal)) => CommandEnd::Signal(signal),
            Err(ExecError::TimedOut) => CommandEnd::TimedOut(args.timeout.unwrap_or_default()),
            Err(ExecError::Aborted) => CommandEnd::Aborted,
            // A failure mid-run (a `--remote` connection lost) keeps what
            // the command printed before it, as a timeout does; one before
            // the start has printed nothing.
            Err(other) => {
                let text = append_status(&shown, &other.to_string());
                let failure = ToolFailure::new(text);
                return Err(match details {
                    Some(details) => failure.with_details(details),
                    None => failure,
                });
            }
        };
        Err(
            ToolFailure::new(ended.result_text(&shown)).with_details(BashDetails {
                ended: Some(ended),
                ..details.unwrap_or_default()
            }),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::support::truncate::{Limits, truncate_tail};

    fn snapshot_of(text: &str, last_line_bytes: usize) -> OutputSnapshot {
        OutputSnapshot {
            truncation: truncate_tail(text, Limits::default()),
            last_line_bytes,
            full_output_path: Some(PathBuf::from("/tmp/pi-bash-0123456789abcdef.log")),
            full_output_cut_at: None,
        }
    }

    #[test]
    fn status_follows_a_blank_line_or_stands_alone() {
        assert_eq!(
            append_status("out\n", "Command exited with code 1"),
            "out\n\n\nCommand exited with code 1"
        );
        assert_eq!(append_status("", "Command aborted"), "Command aborted");
    }

    #[test]
    fn byte_truncation_names_the_limit() {
        let text: String = (1..=600).map(|i| format!("{i:0>99}\n")).collect();
        let (shown, _) = shown_output(&snapshot_of(&text, 0), NO_OUTPUT);
        assert!(shown.ends_with(
            "\n\n[Showing lines 89-601 of 601 (50.0KB limit). Full output: /tmp/pi-bash-0123456789abcdef.log]"
        ));
    }

    #[test]
    fn a_full_output_file_that_was_cut_says_how_much_it_kept() {
        let text: String = (1..=3000).map(|i| format!("{i}\n")).collect();
        let snapshot = OutputSnapshot {
            full_output_cut_at: Some(64 * 1024 * 1024),
            ..snapshot_of(&text, 0)
        };
        let (shown, _) = shown_output(&snapshot, NO_OUTPUT);
        assert!(shown.ends_with(
            "\n\n[Showing lines 1002-3001 of 3001. Full output: /tmp/pi-bash-0123456789abcdef.log \
             (only its first 64.0MB were kept)]"
        ));
    }

    #[test]
    fn a_partial_last_line_names_its_size() {
        let text = "z".repeat(60_000);
        let (shown, _) = shown_output(&snapshot_of(&text, 60_000), NO_OUTPUT);
        assert_eq!(
            shown,
            format!(
                "{}\n\n[Showing last 50.0KB of line 1 (line is 58.6KB). Full output: /tmp/pi-bash-0123456789abcdef.log]",
                "z".repeat(51_200)
            )
        );
    }

    /// Operations that run nowhere: every command prints 3000 lines.
    struct Printer;

    #[async_trait::async_trait]
    impl BashOperations for Printer {
        async fn exec(
            &self,
            _command: &str,
            _cwd: &std::path::Path,
            options: ops::ExecOptions,
        ) -> Result<ExitStatus, ExecError> {
            let lines: String = (1..=3000).map(|i| format!("{i}\n")).collect();
            options.on_data.send(lines.into_bytes()).await.ok();
            Ok(ExitStatus::Code(0))
        }
    }

    // The trait's default wrote the full output of an in-memory
    // implementation's long command to this machine's /tmp, and the model
    // was told that path, which exists nowhere it can reach.
    #[tokio::test]
    async fn operations_that_keep_no_file_leave_none_and_name_none() {
        let temp = tempfile::tempdir().unwrap();
        let run = CommandRun {
            command: "seq 3000",
            cwd: std::path::Path::new("/memory"),
            env: Vec::new(),
            timeout: None,
            temp_dir: Some(temp.path()),
        };
        let (outcome, snapshot) = run_streaming(
            &Printer,
            run,
            agent_core::CancellationToken::new(),
            &agent_core::UpdateSink::discard(),
        )
        .await;
        assert_eq!(outcome.unwrap(), ExitStatus::Code(0));
        let (shown, details) = shown_output(&snapshot, NO_OUTPUT);
        let notice = shown.rsplit_once("\n\n\n").map(|(_, notice)| notice);
        assert_eq!(notice, Some("[Showing lines 1002-3001 of 3001]"));
        assert_eq!(details.unwrap().full_output_path, None);
        assert_eq!(std::fs::read_dir(temp.path()).unwrap().count(), 0);
    }

    #[test]
    fn untruncated_output_has_no_details() {
        let snapshot = OutputSnapshot {
            truncation: truncate_tail("a\n", Limits::default()),
            last_line_bytes: 0,
            full_output_path: None,
            full_output_cut_at: None,
        };
        assert_eq!(shown_output(&snapshot, NO_OUTPUT), ("a\n".to_owned(), None));
    }
}
