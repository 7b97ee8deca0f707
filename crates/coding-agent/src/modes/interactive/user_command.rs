//! `!cmd` and `!!cmd`: a command the user runs in the session's shell (the
//! one the bash tool uses: sandboxed, or on the remote host), shown as a
//! bash call with its output as it comes, and added to the conversation as
//! Pi's `bashExecution` (`!!` keeps it from the model). One runs at a time;
//! Esc cancels it.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use agent_core::{AgentToolResult, UpdateSink};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::app::App;
use crate::app::{AgentSession, SessionMark};
use crate::modes::user_bash::{UserBashRun, run_user_bash};
use crate::render::{Style, StyledLine};
use crate::tools::bash::ops::BashOperations;

/// The user's commands: where they run, and the one running.
pub(super) struct UserCommands {
    ops: Arc<dyn BashOperations>,
    running: Option<Running>,
    /// Numbers the commands, for their ids in the transcript.
    started: u64,
}

struct Running {
    task: JoinHandle<Result<UserBashRun, String>>,
    /// Snapshots of its output, as the bash tool sends them.
    updates: mpsc::UnboundedReceiver<AgentToolResult>,
    cancel: CancellationToken,
    excluded: bool,
    /// The session it started in, where it is recorded.
    ran_in: SessionMark,
}

/// What the running command did.
pub(super) enum Event {
    /// Its output so far.
    Output(AgentToolResult),
    /// It ended; `excluded` when the model is not to see it.
    Ended {
        outcome: Result<Box<UserBashRun>, String>,
        excluded: bool,
        ran_in: SessionMark,
    },
}

impl UserCommands {
    pub(super) fn new(ops: Arc<dyn BashOperations>) -> Self {
        UserCommands {
            ops,
            running: None,
            started: 0,
        }
    }

    /// Starts `command` in `cwd` and shows it running; it is recorded in
    /// the session `ran_in`.
    pub(super) fn start(
        &mut self,
        app: &mut App,
        command: String,
        excluded: bool,
        cwd: &Path,
        ran_in: SessionMark,
    ) {
        self.started += 1;
        let id = format!("user-bash-{}", self.started);
        app.user_bash_started(&id, &command, excluded, Instant::now());
        let cancel = CancellationToken::new();
        let (sink, updates) = UpdateSink::channel();
        let ops = Arc::clone(&self.ops);
        let cwd = cwd.to_path_buf();
        let task = tokio::spawn({
            let cancel = cancel.clone();
            async move {
                run_user_bash(ops.as_ref(), &command, &cwd, cancel, &sink)
                    .await
                    .map_err(|error| error.to_string())
            }
        });
        self.running = Some(Running {
            task,
            updates,
            cancel,
            excluded,
            ran_in,
        });
    }

    /// Cancels the running command (its process group is killed).
    pub(super) fn cancel(&self) {
        if let Some(running) = &self.running {
            running.cancel.cancel();
        }
    }

    /// Resolves once no command runs (at once when none does); what it
    /// printed meanwhile is dropped (for quitting, after
    /// [`UserCommands::cancel`]).
    pub(super) async fn wait(&mut self) {
        while self.running.is_some() {
            let _ = self.next().await;
        }
    }

    /// The running command's next output or its end; never while none
    /// runs. Output already sent comes before the end.
    pub(super) async fn next(&mut self) -> Event {
        let Some(running) = self.running.as_mut() else {
            return std::future::pending().await;
        };
        let outcome = tokio::select! {
            biased;
            Some(update) = running.updates.recv() => return Event::Output(update),
            outcome = &mut running.task => outcome,
        };
        let Some(Running {
            excluded, ran_in, ..
        }) = self.running.take()
        else {
            unreachable!("a command is running");
        };
        Event::Ended {
            outcome: outcome
                .unwrap_or_else(|error| Err(format!("the command's task failed: {error}")))
                .map(Box::new),
            excluded,
            ran_in,
        }
    }

    /// Shows how a command ended and adds it to the conversation (after the
    /// run, when the agent is working).
    pub(super) fn finish(
        session: &AgentSession,
        app: &mut App,
        outcome: Result<Box<UserBashRun>, String>,
        excluded: bool,
        ran_in: &SessionMark,
    ) {
        let now = Instant::now();
        match outcome {
            Ok(run) => {
                let (result, failed) = run.as_tool_result();
                app.user_bash_ended(result, failed, now);
                let mut execution = run.execution;
                execution.exclude_from_context = excluded.then_some(true);
                if let Err(error) = session.record_bash(execution, ran_in) {
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
