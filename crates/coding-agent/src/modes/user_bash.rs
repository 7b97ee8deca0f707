//! A command the user (not the model) runs, as RPC's `bash` command does
//! (Pi's `executeBash`): it runs through the bash tool's [`BashOperations`],
//! its output is kept the way the bash tool keeps it (escape sequences
//! stripped, the tail within Pi's limits, the whole in a temp file when cut),
//! and the outcome is Pi's `BashResult`.

use std::path::{Path, PathBuf};

use agent_ai::Content;
use agent_ai::message::now_millis;
use agent_core::{AgentToolResult, UpdateSink};
use tokio_util::sync::CancellationToken;

use crate::session::BashExecution;
use crate::support::notices::append_notice;
use crate::support::truncate::Truncation;
use crate::tools::bash::ops::{BashOperations, ExecError, ExitStatus};
use crate::tools::bash::run::{CommandRun, run_streaming};
use crate::tools::bash::{BashDetails, CommandEnd, NO_OUTPUT, shown_output};

/// A user command that ran: Pi's record of it, and its output as the bash
/// tool shows its own (the tail, and a notice saying how much came before
/// and where the whole output is).
#[derive(Debug, Clone)]
pub struct UserBashRun {
    /// What the session keeps and the model reads (Pi's `BashResult`).
    pub execution: BashExecution,
    /// The output with the bash tool's notice, and its details when cut.
    shown: (String, Option<BashDetails>),
}

impl UserBashRun {
    /// The run as the bash tool would have reported it, so a UI draws it
    /// with the bash renderer; true when it failed.
    pub fn as_tool_result(&self) -> (AgentToolResult, bool) {
        let (shown, details) = self.shown.clone();
        tool_result(&self.execution, shown, details.and_then(|d| d.truncation))
    }
}

/// Runs `command` in `cwd` until it exits or `cancel` fires, sending
/// snapshots of its output to `updates` as the bash tool does; `Err` when
/// the command could not be started.
pub async fn run_user_bash(
    ops: &dyn BashOperations,
    command: &str,
    cwd: &Path,
    cancel: CancellationToken,
    updates: &UpdateSink,
) -> Result<UserBashRun, ExecError> {
    let run = CommandRun {
        command,
        cwd,
        env: Vec::new(),
        timeout: None,
        temp_dir: None,
    };
    let (outcome, snapshot) = run_streaming(ops, run, cancel, updates).await;
    let (exit_code, cancelled) = match outcome {
        Ok(ExitStatus::Code(code)) => (Some(code), false),
        // Node reports a signalled child with a null code, which Pi counts as cancelled.
        Ok(ExitStatus::Signal(_)) | Err(ExecError::Aborted | ExecError::TimedOut) => (None, true),
        Err(error) => return Err(error),
    };
    // As the bash tool: `(no output)` for a command that exited, nothing
    // before the status of one that was stopped.
    let shown = shown_output(&snapshot, if cancelled { "" } else { NO_OUTPUT });
    let execution = BashExecution {
        role: "bashExecution".into(),
        command: command.to_owned(),
        output: snapshot.truncation.content,
        exit_code,
        cancelled,
        truncated: snapshot.truncation.truncated,
        full_output_path: snapshot
            .full_output_path
            .map(|path| path.to_string_lossy().into_owned()),
        timestamp: now_millis(),
        exclude_from_context: None,
    };
    Ok(UserBashRun { execution, shown })
}

/// A saved run as the bash tool would have reported it (see
/// [`UserBashRun::as_tool_result`]): how much output came before the tail
/// is not saved, so a cut output says only that it was cut, and where the
/// whole is, as the model reads it.
pub fn as_tool_result(run: &BashExecution) -> (AgentToolResult, bool) {
    let shown = match &run.full_output_path {
        Some(path) if run.truncated => append_notice(
            &run.output,
            &format!("Output truncated. Full output: {path}"),
        ),
        _ => run.output.clone(),
    };
    tool_result(run, shown, None)
}

/// `run`'s result with `shown` as its output; `truncation` says how much
/// came before (for the renderer's count of the lines not shown).
fn tool_result(
    run: &BashExecution,
    shown: String,
    truncation: Option<Truncation>,
) -> (AgentToolResult, bool) {
    let ended = if run.cancelled {
        Some(CommandEnd::Aborted)
    } else {
        run.exit_code
            .filter(|&code| code != 0)
            .map(CommandEnd::ExitCode)
    };
    let text = match &ended {
        Some(ended) => ended.result_text(&shown),
        None if shown.is_empty() => "(no output)".to_owned(),
        None => shown,
    };
    let failed = ended.is_some();
    let details = BashDetails {
        truncation,
        full_output_path: run.full_output_path.as_ref().map(PathBuf::from),
        ended,
    };
    let result = AgentToolResult {
        content: vec![Content::text(text)],
        details: serde_json::to_value(details).ok(),
        terminate: false,
    };
    (result, failed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::bash::ops::LocalBashOperations;

    fn text(result: &AgentToolResult) -> &str {
        result.content[0].as_text().unwrap_or_default()
    }

    /// A long output shows as the bash tool shows its own: how many lines
    /// came before the tail, and where the whole is. The terminal UI counted
    /// only the tail's hidden lines and never named the file.
    #[tokio::test]
    async fn a_cut_output_says_how_much_came_before_and_where_the_whole_is() {
        let dir = tempfile::tempdir().unwrap();
        let run = run_user_bash(
            &LocalBashOperations::new(),
            "seq 1 3000",
            dir.path(),
            CancellationToken::new(),
            &UpdateSink::discard(),
        )
        .await
        .unwrap();
        let path = run.execution.full_output_path.clone().unwrap();
        let (result, failed) = run.as_tool_result();
        assert!(!failed);
        assert!(
            text(&result).ends_with(&format!(
                "\n3000\n\n\n[Showing lines 1002-3001 of 3001. Full output: {path}]"
            )),
            "{}",
            text(&result)
        );
        let details: BashDetails = serde_json::from_value(result.details.unwrap()).unwrap();
        assert_eq!(details.truncation.map(|t| t.total_lines), Some(3001));

        // Saved and read back, the counts are gone; the file is still named.
        let (saved, _) = as_tool_result(&run.execution);
        assert!(
            text(&saved).ends_with(&format!(
                "\n3000\n\n\n[Output truncated. Full output: {path}]"
            )),
            "{}",
            text(&saved)
        );
        let _ = std::fs::remove_file(path);
    }
}
