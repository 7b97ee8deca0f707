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
use crate::tools::bash::ops::{BashOperations, ExecError, ExitStatus};
use crate::tools::bash::run::{CommandRun, run_streaming};
use crate::tools::bash::{BashDetails, CommandEnd};

/// Runs `command` in `cwd` until it exits or `cancel` fires, sending
/// snapshots of its output to `updates` as the bash tool does. The result
/// is the `bashExecution` message Pi records (its fields are Pi's
/// `BashResult`); `Err` when the command could not be started.
pub async fn run_user_bash(
    ops: &dyn BashOperations,
    command: &str,
    cwd: &Path,
    cancel: CancellationToken,
    updates: &UpdateSink,
) -> Result<BashExecution, ExecError> {
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
    Ok(BashExecution {
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
    })
}

/// `run` as the bash tool would have reported it, so a UI draws it with the
/// bash renderer (the output's tail, how it ended); true when it failed.
pub fn as_tool_result(run: &BashExecution) -> (AgentToolResult, bool) {
    let ended = if run.cancelled {
        Some(CommandEnd::Aborted)
    } else {
        run.exit_code
            .filter(|&code| code != 0)
            .map(CommandEnd::ExitCode)
    };
    let text = match &ended {
        Some(ended) => ended.result_text(&run.output),
        None if run.output.is_empty() => "(no output)".to_owned(),
        None => run.output.clone(),
    };
    let failed = ended.is_some();
    let details = BashDetails {
        truncation: None,
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
