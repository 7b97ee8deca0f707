//! `!cmd` and `!!cmd`: a command the user runs in the session's shell (the
//! one the bash tool uses: sandboxed, or on the remote host), shown as a
//! bash call and added to the conversation as Pi's `bashExecution` (`!!`
//! keeps it from the model). One runs at a time; Esc cancels it.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use agent_core::AgentToolResult;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::app::App;
use crate::app::AgentSession;
use crate::modes::user_bash::{as_tool_result, run_user_bash};
use crate::render::{Style, StyledLine};
use crate::session::BashExecution;
use crate::tools::bash::ops::BashOperations;

/// The user's commands: where they run, and the one running.
pub(super) struct UserCommands {
    ops: Arc<dyn BashOperations>,
    running: Option<Running>,
    /// Numbers the commands, for their ids in the transcript.
    started: u64,
}

struct Running {
    task: JoinHandle<Result<BashExecution, String>>,
    cancel: CancellationToken,
    excluded: bool,
}

impl UserCommands {
    pub(super) fn new(ops: Arc<dyn BashOperations>) -> Self {
        UserCommands {
            ops,
            running: None,
            started: 0,
        }
    }

    /// Starts `command` in `cwd` and shows it running.
    pub(super) fn start(&mut self, app: &mut App, command: String, excluded: bool, cwd: &Path) {
        self.started += 1;
        let id = format!("user-bash-{}", self.started);
        app.user_bash_started(&id, &command, excluded, Instant::now());
        let cancel = CancellationToken::new();
        let ops = Arc::clone(&self.ops);
        let cwd = cwd.to_path_buf();
        let task = tokio::spawn({
            let cancel = cancel.clone();
            async move {
                run_user_bash(ops.as_ref(), &command, &cwd, cancel)
                    .await
                    .map_err(|error| error.to_string())
            }
        });
        self.running = Some(Running {
            task,
            cancel,
            excluded,
        });
    }

    /// Cancels the running command (its process group is killed).
    pub(super) fn cancel(&self) {
        if let Some(running) = &self.running {
            running.cancel.cancel();
        }
    }

    /// Resolves when the running command has ended; never while none runs.
    pub(super) async fn ended(&mut self) -> (Result<BashExecution, String>, bool) {
        let Some(running) = self.running.as_mut() else {
            return std::future::pending().await;
        };
        let outcome = (&mut running.task)
            .await
            .unwrap_or_else(|error| Err(format!("the command's task failed: {error}")));
        let excluded = running.excluded;
        self.running = None;
        (outcome, excluded)
    }

    /// Shows how a command ended and adds it to the conversation (after the
    /// run, when the agent is working).
    pub(super) fn finish(
        session: &AgentSession,
        app: &mut App,
        outcome: Result<BashExecution, String>,
        excluded: bool,
    ) {
        let now = Instant::now();
        match outcome {
            Ok(mut run) => {
                let (result, failed) = as_tool_result(&run);
                app.user_bash_ended(result, failed, now);
                run.exclude_from_context = excluded.then_some(true);
                if let Err(error) = session.record_bash(run) {
                    app.notice(vec![StyledLine::new(
                        format!("Cannot save the session: {error}"),
                        Style::Error,
                    )]);
                }
            }
            Err(error) => app.user_bash_ended(AgentToolResult::text(error), true, now),
        }
    }
}
