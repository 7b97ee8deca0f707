//! RPC mode (`--mode rpc`): commands as JSON lines on stdin; responses and
//! events as JSON lines on stdout, protocol-compatible with Pi's RPC mode
//! (`modes/rpc/rpc-mode.ts`), so a client written for Pi works unchanged.
//!
//! - Framing: see [`super::jsonl`].
//! - A command is `{id?, type, ...}`; its response is
//!   `{id?, type:"response", command, success, data?}` or
//!   `{id?, type:"response", command, success:false, error}`. Events carry no id.
//! - `prompt` answers at once, then the run's events follow; while a run is
//!   going, `prompt` needs `streamingBehavior` (`steer` or `followUp`),
//!   except during a compaction alone (`compact`, or the automatic one
//!   after a run's `agent_end`), a `navigate_tree` (writing the summary of
//!   the branch left) or a run's tail (after its `agent_end`: Stop hooks,
//!   saving), when `get_state` says it is not streaming: the prompt then
//!   waits for it, as a follow-up, and so does a `steer` or `follow_up`
//!   then. The `images` of `prompt`, `steer` and `follow_up`
//!   are checked first, as `read` checks an image: one a provider would
//!   refuse fails the command, naming it and why.
//!   `abort` answers once the run has ended (its last events come first).
//!   `bash` answers when the command is done; other commands are served meanwhile.
//! - Commands are read from the start, while MCP servers start in the
//!   background (`get_state` lists them as `starting`); a prompt's run waits
//!   for them before its first request, so that request offers their tools.
//! - A field the command reads, required or optional, gets `Invalid
//!   command: "<field>" must be a string` (or `a boolean`) when it is of the
//!   wrong type, as a missing required one does; `null` is taken as absent,
//!   and fields the command does not read are ignored, as in Pi.
//! - An unknown type gets `Unknown command: <type>` (without the id, as Pi);
//!   a line that is not a JSON object, `command: "parse"` and
//!   `Failed to parse command: ...`.
//!
//! Served: `prompt`, `steer`, `follow_up`, `abort`, `new_session`,
//! `get_state`, `get_messages`, `get_last_assistant_text`, `bash`,
//! `abort_bash`, `set_steering_mode`, `set_follow_up_mode`,
//! `set_session_name`, `get_commands`, `compact`, `set_auto_compaction`,
//! `set_auto_retry`, `abort_retry`, `get_session_stats`, `switch_session`,
//! `get_fork_messages`, `fork`, `clone`, `export_html`,
//! `get_available_models`, `set_model`, `cycle_model` (see `models`), and,
//! beyond Pi, `get_tree` and `navigate_tree` (the interactive `/tree`:
//! `targetId`, `summarize`, `customInstructions`). Besides the agent's
//! events, the session's own are written: `auto_retry_start`,
//! `auto_retry_end`, `compaction_start`, `compaction_end`, `queue_update`,
//! `permission_decision`.
//! - A tool call that needs approval is asked of the client as an
//!   `extension_ui_request` (see [`approval`]); `extension_ui_response`
//!   answers it. The client's own `bash` command is not asked about (as in Pi).
//!
//! When stdin ends, the mode waits for the running prompt, the bash commands
//! and the model listings to finish, writes what they produce (every
//! command's response), and returns.
//!
//! When the caller's stop token fires (the binary's SIGINT, SIGTERM or SIGHUP),
//! no further command is read: the running prompt is aborted (its tools are
//! cancelled, so the bash tool kills its process group) and the running user
//! bash commands are cancelled (killed the same way); the mode waits for both,
//! writes their last events and responses, and returns [`RpcEnd::Stopped`].

use std::sync::Arc;

use agent_ai::Message;
use agent_core::{AgentEvent, QueueMode, UpdateSink};
use serde_json::{Map, Value, json};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio::task::{JoinHandle, JoinSet};
use tokio_util::sync::CancellationToken;

pub mod approval;
mod images;
mod models;
mod thinking;

use self::approval::RpcApprovals;
use crate::app::{AgentSession, PromptError, SessionMark};
use crate::hooks::lifecycle::SessionEndReason;
use crate::modes::jsonl::{read_lines, serialize_json_line};
use crate::modes::user_bash::run_user_bash;
use crate::session::BashExecution;
use crate::session_event::{SessionEvent, SessionEvents};
use crate::templates::TemplateKind;
use crate::tools::bash::ops::{BashOperations, LocalBashOperations};

/// Pi's text when `prompt` arrives during a run without `streamingBehavior`.
const ALREADY_PROCESSING: &str = "Agent is already processing. Specify streamingBehavior ('steer' or 'followUp') to queue the message.";

/// Later Pi's text for a `bash` command of nothing but white space, which
/// ran nothing and was recorded as an empty `bashExecution` the model read
/// with every later request (`docs/DEVIATIONS.md` M19).
const EMPTY_BASH_COMMAND: &str = "Invalid bash command: command cannot be empty";

/// Why `set_session_name` refuses a name holding a control character.
const NAME_ON_ONE_LINE: &str =
    "Session name cannot hold control characters (a line break, a tab): give it on one line";

/// Why RPC mode returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RpcEnd {
    /// The input ended and the work it started is done.
    InputClosed,
    /// The stop token fired; the work in progress was aborted and has ended.
    Stopped,
    /// Whoever read the output went away (an editor that crashed): the work
    /// in progress was aborted, as on a stop, and has ended.
    ReaderGone,
}

/// Serves RPC commands from `input` on `output` until `input` ends and the
/// work it started is done. Fails only when `output` cannot be written.
pub async fn run_rpc(
    session: AgentSession,
    input: impl AsyncRead + Unpin + Send + 'static,
    output: impl AsyncWrite + Unpin,
) -> std::io::Result<()> {
    run_rpc_until(session, input, output, &CancellationToken::new()).await?;
    Ok(())
}

/// [`run_rpc`] that also returns when `stop` fires, after aborting the run
/// and the user bash commands in progress (see the module docs).
pub async fn run_rpc_until(
    session: AgentSession,
    input: impl AsyncRead + Unpin + Send + 'static,
    output: impl AsyncWrite + Unpin,
    stop: &CancellationToken,
) -> std::io::Result<RpcEnd> {
    let bash_ops = Arc::new(LocalBashOperations::new());
    run_rpc_with(session, bash_ops, input, output, stop).await
}

/// How many events in a row are written before a waiting command is read.
const EVENTS_BEFORE_INPUT: usize = 16;

/// [`run_rpc_until`] with the operations user `bash` commands run through.
pub async fn run_rpc_with(
    session: AgentSession,
    bash_ops: Arc<dyn BashOperations>,
    input: impl AsyncRead + Unpin + Send + 'static,
    output: impl AsyncWrite + Unpin,
    stop: &CancellationToken,
) -> std::io::Result<RpcEnd> {
    let (line_sender, mut lines) = mpsc::unbounded_channel();
    let reader = tokio::spawn(read_lines(input, line_sender));
    let (bash_done, mut bash_results) = mpsc::unbounded_channel();
    let (later, later_responses) = mpsc::unbounded_channel();
    // Calls that need approval are asked of the client.
    let approvals = session.guard().map(|guard| {
        let (approver, approvals) = approval::rpc_approver(guard.approval_timeout());
        guard.set_approver(Arc::new(approver));
        approvals
    });
    let mut server = Server {
        approvals,
        events: session.subscribe_all(),
        session,
        output,
        run: None,
        bash_ops,
        bash_cancel: stop.child_token(),
        bash_running: 0,
        bash_done,
        listings: JoinSet::new(),
        later,
        later_responses,
        stop: stop.clone(),
        reader_gone: false,
    };
    let mut input_open = true;
    let mut stopping = false;
    let mut events_in_a_row = 0;
    loop {
        // A stop does not wait for the model listings: they are dropped
        // with the server, unanswered.
        if (stopping || !input_open)
            && server.run.is_none()
            && server.bash_running == 0
            && (stopping || server.listings.is_empty())
        {
            break;
        }
        // Events go first, but not for ever: a client reading slower than
        // a long answer streams always has an update waiting, and its
        // `abort` (any command) was read only after the whole answer.
        if events_in_a_row >= EVENTS_BEFORE_INPUT {
            events_in_a_row = 0;
            if !stopping && let Ok(line) = lines.try_recv() {
                server.on_line(&line).await?;
                continue;
            }
        }
        tokio::select! {
            biased;
            Some(event) = server.events.recv() => {
                events_in_a_row += 1;
                server.on_event(&event).await?;
            }
            Some(done) = bash_results.recv() => server.on_bash_done(done).await?,
            // Sent before the run's task ends: written before it is joined.
            Some(response) = server.later_responses.recv() => {
                server.on_later_response(&response).await?;
            }
            Some(request) = next_approval_request(&mut server.approvals) => {
                server.write(&request).await?;
            }
            // Its response was sent before it ended: written above.
            Some(_) = server.listings.join_next(), if !server.listings.is_empty() => {}
            () = join(&mut server.run), if server.run.is_some() => {
                if let Some(ended) = server.run.take() {
                    server.after_run(ended);
                }
            }
            // The run and the bash commands hold child tokens of `stop`: they
            // are cancelled already; what is left is to wait for them.
            () = stop.cancelled(), if !stopping => stopping = true,
            line = lines.recv(), if input_open && !stopping => match line {
                Some(line) => server.on_line(&line).await?,
                None => {
                    input_open = false;
                    if let Some(approvals) = &server.approvals {
                        approvals.input_ended();
                    }
                }
            },
        }
    }
    server.drain_events().await?;
    reader.abort();
    Ok(if server.reader_gone {
        RpcEnd::ReaderGone
    } else if stopping {
        RpcEnd::Stopped
    } else {
        RpcEnd::InputClosed
    })
}

/// A prompt being run.
struct Run {
    task: JoinHandle<()>,
    /// Its last `agent_end` has been written, and no `agent_start` since.
    ended: bool,
    /// Aborts it (`abort`, `new_session`; a child of the stop token).
    abort: CancellationToken,
    /// Messages queued while it ran go out when it ends, unless it was
    /// aborted: set when one came while no turn of it was left to take it
    /// (during a compaction, a move in the tree, or its tail; see
    /// [`Server::send_after_the_run`]). A prompt's turns take the messages
    /// queued during them themselves.
    then_queued: bool,
    /// It has no turns of its own (`compact`, `navigate_tree`): a prompt
    /// meanwhile waits for it.
    without_turns: bool,
    /// It went on after an `agent_end` of its own (a compaction past the
    /// threshold mid-run): the client may have taken that `agent_end` for
    /// the run's end, so a prompt without `streamingBehavior` follows up.
    went_on: bool,
}

impl Run {
    /// Over for the client, as in Pi: its task has ended, or its
    /// `agent_end` has been written (what follows is its tail: saving,
    /// Stop hooks, the recovery's checks, which may retry or compact).
    fn is_over(&self) -> bool {
        self.task.is_finished() || self.ended
    }
}

/// Waits for the run, if any (its outcome is in its events).
async fn join(run: &mut Option<Run>) {
    if let Some(run) = run {
        let _ = (&mut run.task).await;
    }
}

/// The next approval request to write; never, without a guard.
async fn next_approval_request(approvals: &mut Option<RpcApprovals>) -> Option<Value> {
    match approvals {
        Some(approvals) => approvals.requests.recv().await,
        None => std::future::pending().await,
    }
}

/// A finished user `bash` command: its id and outcome.
type BashDone = (Option<Value>, SessionMark, Result<BashExecution, String>);

struct Server<W> {
    session: AgentSession,
    /// Approval requests out and the client's answers in (with a guard).
    approvals: Option<RpcApprovals>,
    events: SessionEvents,
    output: W,
    /// The prompt being run.
    run: Option<Run>,
    bash_ops: Arc<dyn BashOperations>,
    /// Cancels the user bash commands running now (`abort_bash`; a child of
    /// the stop token).
    bash_cancel: CancellationToken,
    bash_running: usize,
    bash_done: mpsc::UnboundedSender<BashDone>,
    /// The `get_available_models` being answered (endpoints asked for their
    /// lists): waited for when the input ends, as a run is. Untracked, the
    /// response to `get_available_models` piped in just before the input
    /// closed was lost whenever the mode returned before the listing did.
    listings: JoinSet<()>,
    /// Responses written when their work ends: a compaction's, a tree
    /// move's, a prompt refused after it was accepted (a hook blocked it),
    /// the model list (endpoints asked for theirs).
    later: mpsc::UnboundedSender<Value>,
    later_responses: mpsc::UnboundedReceiver<Value>,
    /// The caller's stop token: the parent of every run's and bash command's.
    stop: CancellationToken,
    /// The output's reader went away: nothing more is written, and the
    /// stop token was cancelled. The run went on to its end unseen, noticed
    /// at the next write and then left unsaved when the process exited.
    reader_gone: bool,
}

impl<W: AsyncWrite + Unpin> Server<W> {
    async fn write(&mut self, value: &Value) -> std::io::Result<()> {
        if self.reader_gone {
            return Ok(());
        }
        let line = serialize_json_line(value);
        let written = match self.output.write_all(line.as_bytes()).await {
            Ok(()) => self.output.flush().await,
            error => error,
        };
        match written {
            Err(error) if error.kind() == std::io::ErrorKind::BrokenPipe => {
                self.reader_gone = true;
                self.stop.cancel();
                Ok(())
            }
            written => written,
        }
    }

    async fn on_event(&mut self, event: &SessionEvent) -> std::io::Result<()> {
        if let (Some(run), SessionEvent::Agent(agent_event)) = (&mut self.run, event) {
            match **agent_event {
                AgentEvent::AgentEnd { .. } => run.ended = true,
                AgentEvent::AgentStart => {
                    run.went_on |= run.ended;
                    run.ended = false;
                }
                _ => {}
            }
        }
        self.write(&event.to_json()).await
    }

    /// Writes the events already sent (after a run ended), then the
    /// response the run gave, if any.
    async fn drain_events(&mut self) -> std::io::Result<()> {
        while let Some(event) = self.events.try_recv() {
            self.on_event(&event).await?;
        }
        while let Ok(response) = self.later_responses.try_recv() {
            self.write(&response).await?;
        }
        Ok(())
    }

    /// A response a run sent when its work ended, after the run's events.
    async fn on_later_response(&mut self, response: &Value) -> std::io::Result<()> {
        self.drain_events().await?;
        self.write(response).await
    }

    async fn on_bash_done(&mut self, (id, ran_in, outcome): BashDone) -> std::io::Result<()> {
        self.bash_running = self.bash_running.saturating_sub(1);
        let response = match outcome {
            Ok(execution) => {
                let data = json!({
                    "output": execution.output,
                    "exitCode": execution.exit_code,
                    "cancelled": execution.cancelled,
                    "truncated": execution.truncated,
                    "fullOutputPath": execution.full_output_path,
                });
                if let Err(error) = self.session.record_bash(execution, &ran_in) {
                    tracing::warn!("cannot save the session: {error}");
                }
                success(id, "bash", Some(strip_nulls(data)))
            }
            Err(message) => failure(id, "bash", &message),
        };
        self.write(&response).await
    }

    async fn on_line(&mut self, line: &str) -> std::io::Result<()> {
        // A lone surrogate escape (editor text cut in an emoji, as
        // `JSON.stringify` writes it) is read as Pi's `JSON.parse` reads it,
        // not refused with the command it came in.
        let command = match agent_ai::json_text::from_str::<Value>(line) {
            Ok(command) if command.is_object() => command,
            // Any other JSON (`null`, `[1,2]`) is no more a command than
            // bad JSON is, as in Pi.
            Ok(_) => {
                return self
                    .write(&unparsable("a command must be a JSON object"))
                    .await;
            }
            Err(error) => return self.write(&unparsable(&error.to_string())).await,
        };
        if command.get("type").and_then(Value::as_str) == Some("extension_ui_response") {
            // The answer to an approval request (anything else is ignored, as in Pi).
            if let Some(approvals) = &self.approvals {
                approvals.answer(&command);
            }
            return Ok(());
        }
        if let Some(response) = self.handle(&command).await? {
            // What the command itself set off (`thinking_level_changed`,
            // `queue_update`) goes first, as in Pi: those events are queued
            // already, and a response that overtook them told the client of
            // a change it had not yet been shown.
            self.drain_events().await?;
            self.write(&response).await?;
        }
        Ok(())
    }

    /// The response to `command`, or `None` when it answers later (`bash`).
    async fn handle(&mut self, command: &Value) -> std::io::Result<Option<Value>> {
        let id = command.get("id").cloned();
        let Some(kind) = command.get("type").and_then(Value::as_str) else {
            return Ok(Some(unknown_command(command.get("type"))));
        };
        match self.serve(command, id.clone(), kind).await {
            Ok(response) => Ok(response),
            Err(Unserved::Output(error)) => Err(error),
            Err(Unserved::Field(error)) => Ok(Some(failure(id, kind, &error))),
        }
    }

    /// [`Server::handle`] for the command `id` of the type `kind`; its
    /// fields are read with [`field`], which refuses one of the wrong type.
    async fn serve(
        &mut self,
        command: &Value,
        id: Option<Value>,
        kind: &str,
    ) -> Result<Option<Value>, Unserved> {
        let text = |name: &str| field(command, name, Value::as_str, "a string");
        let flag = |name: &str| field(command, name, Value::as_bool, "a boolean");
        let session = self.session.clone();
        let response = match kind {
            "prompt" => {
                let Some(message) = text("message")? else {
                    return Ok(Some(missing(id, kind, "message")));
                };
                let behaviour = text("streamingBehavior")?;
                let message = match images::user_message(message, command).await {
                    Ok(message) => message,
                    Err(error) => return Ok(Some(failure(id, kind, &error))),
                };
                if session.agent().is_running() || self.run.is_some() {
                    // A run whose turns are over (a compaction alone, or its
                    // tail: Stop hooks, saving) is not streaming: the prompt
                    // waits for it as a follow-up does, as the terminal UI
                    // queues what is typed meanwhile. The client cannot see
                    // when it will end; refused, it could only retry until
                    // then (`docs/DEVIATIONS.md` M18). Waiting for the tail
                    // here froze every command behind a slow Stop hook, and
                    // the prompt was refused after all.
                    // And a run that went on after an `agent_end` the
                    // client may have taken for its end: a Pi client sends
                    // its next prompt then, and refused, it was lost.
                    let waits =
                        !self.is_streaming() || self.run.as_ref().is_some_and(|run| run.went_on);
                    let queued = match behaviour {
                        Some("steer") => session.steer(message).await,
                        Some("followUp") => session.follow_up(message).await,
                        Some(other) => {
                            let error = format!(
                                "Invalid streamingBehavior {other:?}: expected \"steer\" or \"followUp\""
                            );
                            return Ok(Some(failure(id, kind, &error)));
                        }
                        None if waits => session.follow_up(message).await,
                        None => return Ok(Some(failure(id, kind, ALREADY_PROCESSING))),
                    };
                    self.send_after_the_run();
                    match queued {
                        Ok(()) => success(id, kind, None),
                        Err(refused) => failure(id, kind, &refused.to_string()),
                    }
                } else {
                    // The response goes out before the run's first event.
                    self.write(&success(id.clone(), kind, None)).await?;
                    self.start_run(id, message);
                    return Ok(None);
                }
            }
            "steer" | "follow_up" => {
                let Some(message) = text("message")? else {
                    return Ok(Some(missing(id, kind, "message")));
                };
                let message = match images::user_message(message, command).await {
                    Ok(message) => message,
                    Err(error) => return Ok(Some(failure(id, kind, &error))),
                };
                let queued = if kind == "steer" {
                    session.steer(message).await
                } else {
                    session.follow_up(message).await
                };
                self.send_after_the_run();
                match queued {
                    Ok(()) => success(id, kind, None),
                    Err(refused) => failure(id, kind, &refused.to_string()),
                }
            }
            "abort" => {
                if let Some(ended) = self.abort().await? {
                    self.after_run(ended);
                }
                success(id, kind, None)
            }
            "new_session" => {
                let parent = text("parentSession")?.map(str::to_owned);
                self.abort().await?;
                session.end_session(SessionEndReason::Clear).await;
                session.new_session(parent);
                success(id, kind, Some(json!({"cancelled": false})))
            }
            "get_state" => success(id, kind, Some(self.state())),
            "get_messages" => success(
                id,
                kind,
                Some(json!({"messages": *session.agent().history().snapshot()})),
            ),
            "get_last_assistant_text" => success(
                id,
                kind,
                Some(json!({"text": session.last_assistant_text()})),
            ),
            "bash" => {
                let Some(command_line) = text("command")? else {
                    return Ok(Some(missing(id, kind, "command")));
                };
                if command_line.trim().is_empty() {
                    return Ok(Some(failure(id, kind, EMPTY_BASH_COMMAND)));
                }
                self.start_bash(id, command_line.to_owned());
                return Ok(None);
            }
            "abort_bash" => {
                self.bash_cancel.cancel();
                self.bash_cancel = self.stop.child_token();
                success(id, kind, None)
            }
            "set_steering_mode" | "set_follow_up_mode" => {
                let mode = match text("mode")? {
                    Some("all") => QueueMode::All,
                    Some("one-at-a-time") => QueueMode::OneAtATime,
                    _ => {
                        let message = "Invalid mode: expected \"all\" or \"one-at-a-time\"";
                        return Ok(Some(failure(id, kind, message)));
                    }
                };
                if kind == "set_steering_mode" {
                    session.set_steering_mode(mode);
                } else {
                    session.set_follow_up_mode(mode);
                }
                success(id, kind, None)
            }
            "set_session_name" => {
                let name = text("name")?.unwrap_or_default().trim();
                if name.is_empty() {
                    failure(id, kind, "Session name cannot be empty")
                } else if name.chars().any(char::is_control) {
                    // Shown on one line in `/resume` and `--resume`'s list,
                    // where a line break or a bell took the next row.
                    failure(id, kind, NAME_ON_ONE_LINE)
                } else {
                    match session.set_session_name(name) {
                        Ok(()) => success(id, kind, None),
                        Err(error) => failure(id, kind, &error.to_string()),
                    }
                }
            }
            "get_commands" => success(id, kind, Some(json!({"commands": commands(&session)}))),
            "compact" => {
                let focus = text("customInstructions")?.map(str::to_owned);
                self.abort().await?;
                // Run as a run: `get_state` answers meanwhile (isCompacting)
                // and `abort` cancels it; the response comes when it ends.
                let session = session.clone();
                self.start_without_turns(async move {
                    let outcome = session.compact(focus.as_deref()).await;
                    Some(match outcome {
                        Ok(result) => success(id, "compact", serde_json::to_value(result).ok()),
                        Err(error) => failure(id, "compact", &error.to_string()),
                    })
                });
                return Ok(None);
            }
            "set_auto_compaction" | "set_auto_retry" => {
                let Some(enabled) = flag("enabled")? else {
                    return Ok(Some(failure(id, kind, &must_be("enabled", "a boolean"))));
                };
                if kind == "set_auto_compaction" {
                    session.set_auto_compaction(enabled);
                } else {
                    session.set_auto_retry(enabled);
                }
                success(id, kind, None)
            }
            "abort_retry" => {
                session.abort_retry();
                success(id, kind, None)
            }
            "get_session_stats" => success(id, kind, serde_json::to_value(session.stats()).ok()),
            "set_thinking_level" => {
                let Some(level) = text("level")? else {
                    return Ok(Some(missing(id, kind, "level")));
                };
                match thinking::set_thinking_level(&session, level) {
                    Ok(()) => success(id, kind, None),
                    Err(error) => failure(id, kind, &error),
                }
            }
            "cycle_thinking_level" => match thinking::cycle_thinking_level(&session) {
                Ok(data) => success(id, kind, Some(data)),
                Err(error) => failure(id, kind, &error),
            },
            "get_available_models" | "set_model" | "cycle_model" => {
                let Some(catalog) = session.models() else {
                    return Ok(Some(failure(id, kind, "No models are configured")));
                };
                match kind {
                    "get_available_models" => {
                        // Asking endpoints for their lists takes up to their
                        // timeout: answered when it is done, while events,
                        // responses and an abort go on (switching models
                        // stays in order with the prompts around it).
                        let (session, later) = (session.clone(), self.later.clone());
                        self.listings.spawn(async move {
                            let models = models::available_models(&session, &catalog).await;
                            let listed = json!({"models": models});
                            let _ = later.send(success(id, "get_available_models", Some(listed)));
                        });
                        return Ok(None);
                    }
                    "set_model" => {
                        let (Some(provider), Some(model_id)) =
                            (text("provider")?, text("modelId")?)
                        else {
                            return Ok(Some(missing(id, kind, "provider\" and \"modelId")));
                        };
                        match models::set_model(&session, &catalog, provider, model_id).await {
                            Ok(model) => success(id, kind, serde_json::to_value(model).ok()),
                            Err(error) => failure(id, kind, &error),
                        }
                    }
                    _ => match models::cycle_model(&session, &catalog).await {
                        Ok(Some(model)) => success(
                            id,
                            kind,
                            Some(json!({
                                "model": model,
                                "thinkingLevel": session.thinking_level(),
                                "isScoped": !catalog.cycle.is_empty(),
                            })),
                        ),
                        Ok(None) => success(id, kind, Some(Value::Null)),
                        Err(error) => failure(id, kind, &error),
                    },
                }
            }
            "switch_session" => {
                let Some(path) = text("sessionPath")? else {
                    return Ok(Some(missing(id, kind, "sessionPath")));
                };
                // Checked first: a wrong path does not cost the run.
                if let Err(error) = session.check_switch(std::path::Path::new(path)) {
                    return Ok(Some(failure(id, kind, &error.to_string())));
                }
                self.abort().await?;
                match session.switch_session(std::path::Path::new(path)) {
                    Ok(()) => success(id, kind, Some(json!({"cancelled": false}))),
                    Err(error) => failure(id, kind, &error.to_string()),
                }
            }
            "get_fork_messages" => {
                let messages: Vec<Value> = session
                    .fork_messages()
                    .into_iter()
                    .map(|(entry_id, text)| json!({"entryId": entry_id, "text": text}))
                    .collect();
                success(id, kind, Some(json!({"messages": messages})))
            }
            "fork" => {
                let Some(entry_id) = text("entryId")? else {
                    return Ok(Some(missing(id, kind, "entryId")));
                };
                // Checked first, as Pi does: a wrong id does not cost the run.
                if let Err(error) = session.check_fork(entry_id) {
                    return Ok(Some(failure(id, kind, &error.to_string())));
                }
                self.abort().await?;
                match session.fork(entry_id) {
                    Ok(text) => success(id, kind, Some(json!({"text": text, "cancelled": false}))),
                    Err(error) => failure(id, kind, &error.to_string()),
                }
            }
            "get_tree" => success(id, kind, Some(json!({"rows": session.tree()}))),
            "navigate_tree" => {
                let Some(target) = text("targetId")?.map(str::to_owned) else {
                    return Ok(Some(missing(id, kind, "targetId")));
                };
                let summarize = flag("summarize")?.unwrap_or(false);
                let focus = text("customInstructions")?.map(str::to_owned);
                // Checked first, as for `fork`: a wrong id aborted the run.
                if let Err(error) = session.check_tree_target(&target) {
                    return Ok(Some(failure(id, kind, &error.to_string())));
                }
                self.abort().await?;
                // A summary of the branch left is a model request: run as
                // a run, like a compaction.
                let session = session.clone();
                self.start_without_turns(async move {
                    let outcome = session
                        .navigate_tree(&target, summarize, focus.as_deref())
                        .await;
                    Some(match outcome {
                        Ok(moved) => success(
                            id,
                            "navigate_tree",
                            Some(json!({
                                "editorText": moved.editor_text,
                                "summarized": moved.summary.is_some(),
                                "cancelled": false,
                            })),
                        ),
                        Err(error) => failure(id, "navigate_tree", &error.to_string()),
                    })
                });
                return Ok(None);
            }
            "clone" => {
                self.abort().await?;
                match session.clone_session() {
                    Ok(()) => success(id, kind, Some(json!({"cancelled": false}))),
                    Err(error) => failure(id, kind, &error.to_string()),
                }
            }
            "export_html" => {
                let path = text("outputPath")?.map(std::path::Path::new);
                // The protocol stream is no place for the page (the
                // terminal UI refuses its terminal likewise, M29).
                if let Some(path) = path
                    && crate::export::is_stdout(&session.cwd().join(path))
                {
                    let error = format!(
                        "Not exported: {} is this process's stdout, which carries the RPC \
                         responses and events; name a file",
                        path.display()
                    );
                    return Ok(Some(failure(id, kind, &error)));
                }
                match session.export_html(path) {
                    Ok(path) => success(id, kind, Some(json!({"path": path}))),
                    Err(error) => {
                        failure(id, kind, &format!("Cannot write the HTML file: {error}"))
                    }
                }
            }
            _ => unknown_command(command.get("type")),
        };
        Ok(Some(response))
    }

    /// Runs `message` (the command `id`'s) as a prompt, until it ends or is
    /// aborted.
    fn start_run(&mut self, id: Option<Value>, message: Message) {
        let session = self.session.clone();
        self.start(move |abort| async move {
            // MCP servers still starting are waited for, so the first
            // request carries their tools; an abort meanwhile ends the run
            // as it would a started one.
            let aborted = tokio::select! {
                () = session.extra_tools_listed() => false,
                () = abort.cancelled() => true,
            };
            let outcome = if aborted {
                session.prompt_aborted(message).await
            } else {
                session.prompt(message).await
            };
            match outcome {
                // The abort's own response says it ended.
                Ok(_) | Err(PromptError::Aborted) => None,
                // Pi's second response to a prompt that failed.
                Err(error) => Some(failure(id, "prompt", &error.to_string())),
            }
        });
    }

    /// Runs `work` in a task as the run: an abort (`abort`, `new_session`,
    /// a signal) reaches it through the session, and the response it gives
    /// is written after the run's events. `work` is handed the abort token.
    fn start<F, Fut>(&mut self, work: F)
    where
        F: FnOnce(CancellationToken) -> Fut,
        Fut: Future<Output = Option<Value>> + Send + 'static,
    {
        let session = self.session.clone();
        let later = self.later.clone();
        let abort = self.stop.child_token();
        let work = work(abort.clone());
        let task = tokio::spawn({
            let abort = abort.clone();
            async move {
                tokio::pin!(work);
                // The work is polled first: a prompt's first poll claims the
                // agent for the run, so an abort that came before it still
                // ends the run.
                let response = tokio::select! {
                    biased;
                    response = &mut work => response,
                    () = abort.cancelled() => {
                        session.abort();
                        work.await
                    }
                };
                if let Some(response) = response {
                    let _ = later.send(response);
                }
            }
        });
        self.run = Some(Run {
            task,
            abort,
            ended: false,
            then_queued: false,
            without_turns: false,
            went_on: false,
        });
    }

    /// Runs `work` (a compaction, a move in the tree) as a run with no
    /// turns of its own: what is sent meanwhile waits for it, as a
    /// follow-up, and goes out when it ends. A move's summary was run as a
    /// prompt: a plain `prompt` then was refused as "already processing",
    /// and a `follow_up` was accepted and then dropped with the move.
    /// What was queued before it, for a prompt just aborted for it, is not
    /// sent when it ends: it stays queued, as after an `abort` (it went out
    /// on its own once a compaction ended, even one that failed), or goes
    /// with the branch a move leaves.
    fn start_without_turns<Fut>(&mut self, work: Fut)
    where
        Fut: Future<Output = Option<Value>> + Send + 'static,
    {
        let left_queued = self.session.pending_message_count() > 0;
        self.start(move |_| work);
        if let Some(run) = &mut self.run {
            run.then_queued = !left_queued;
            run.without_turns = true;
        }
    }

    /// Has the messages queued now sent when the run ends, when no turn of
    /// it is left to take them: during a compaction alone, a move in the
    /// tree or the run's tail (Stop hooks, saving), when it is not streaming. A follow-up queued
    /// during a slow Stop hook was never sent (`pendingMessageCount: 1`
    /// for ever).
    fn send_after_the_run(&mut self) {
        if !self.is_streaming()
            && let Some(run) = &mut self.run
        {
            run.then_queued = true;
        }
    }

    /// Whether all that runs has no turns: `compact`, `navigate_tree`, or
    /// the automatic compaction after a run's `agent_end` (the run's turns
    /// are over; what is queued now goes out when the compaction ends).
    fn only_without_turns(&self) -> bool {
        self.run
            .as_ref()
            .is_some_and(|run| run.without_turns || (run.ended && self.session.is_compacting()))
    }

    /// Pi's `isStreaming`, which covers its whole run: whether a prompt
    /// without `streamingBehavior` is refused now. The agent's turns, what
    /// comes before them (the MCP servers, the hooks, a compaction due
    /// before the prompt) and the waits before a retry are; a compaction
    /// alone or a move in the tree is not (a prompt waits for it), nor a
    /// run's tail (a prompt waits it out). The agent's own last steps
    /// after its `agent_end` are of the tail too: a client that answered
    /// `agent_end` with a prompt at once was refused while the agent had
    /// not yet marked itself idle (seen under load).
    fn is_streaming(&self) -> bool {
        let Some(run) = &self.run else {
            return self.session.agent().is_running();
        };
        let turns_running = self.session.agent().is_running() && !run.ended;
        !self.only_without_turns() && (turns_running || !run.is_over() || self.session.is_waiting())
    }

    /// After a run ended: the messages queued during it, when they came
    /// after its turns (during a compaction or its tail: see
    /// [`Run::then_queued`]) and
    /// was not aborted, go out as a run, as after an automatic compaction
    /// (they waited for the next prompt, or were lost when the input closed).
    /// Aborting a manual compaction or a move in the tree does not hold back
    /// the prompts that waited for it: they were accepted for after it, and
    /// stopping a slow summary is how a client gets them answered sooner.
    fn after_run(&mut self, ended: Run) {
        if !ended.then_queued
            || (ended.abort.is_cancelled() && !ended.without_turns)
            || self.session.pending_message_count() == 0
        {
            return;
        }
        let session = self.session.clone();
        self.start(move |_| async move {
            match session.send_queued().await {
                Ok(_) => None,
                Err(error) => {
                    tracing::warn!("the messages queued during the run were not sent: {error}");
                    None
                }
            }
        });
    }

    /// Aborts the run, if any, and waits for it to end; its events come
    /// first. Returns the run that ended.
    async fn abort(&mut self) -> std::io::Result<Option<Run>> {
        if let Some(run) = &self.run {
            run.abort.cancel();
        }
        join(&mut self.run).await;
        let ended = self.run.take();
        self.drain_events().await?;
        Ok(ended)
    }

    fn start_bash(&mut self, id: Option<Value>, command: String) {
        self.bash_running += 1;
        let ops = Arc::clone(&self.bash_ops);
        let cwd = self.session.cwd().to_path_buf();
        let cancel = self.bash_cancel.clone();
        let done = self.bash_done.clone();
        let ran_in = self.session.mark();
        tokio::spawn(async move {
            let outcome =
                run_user_bash(ops.as_ref(), &command, &cwd, cancel, &UpdateSink::discard())
                    .await
                    .map(|run| run.execution)
                    .map_err(|error| error.to_string());
            let _ = done.send((id, ran_in, outcome));
        });
    }

    /// Pi's `RpcSessionState`.
    fn state(&self) -> Value {
        let session = &self.session;
        let (steering, follow_up) = session.queue_modes();
        let mut state = strip_nulls(json!({
            "model": session.model(),
            "thinkingLevel": session.thinking_level(),
            "isStreaming": self.is_streaming(),
            "isCompacting": session.is_compacting(),
            "steeringMode": queue_mode_name(steering),
            "followUpMode": queue_mode_name(follow_up),
            "sessionFile": session.session_file(),
            "sessionId": session.header().id,
            "sessionName": session.session_name(),
            "autoCompactionEnabled": session.compaction_settings().enabled,
            "messageCount": session.agent().history().snapshot().len(),
            "pendingMessageCount": session.pending_message_count(),
        }));
        add_mcp_servers(&mut state, session);
        state
    }
}

/// `mcpServers` (name, status, error, tools) when the session has MCP
/// servers; left out otherwise, so a session without them answers exactly
/// as Pi does.
#[cfg(feature = "mcp")]
fn add_mcp_servers(state: &mut Value, session: &AgentSession) {
    let servers = session.mcp_status();
    if let (false, Some(state)) = (servers.is_empty(), state.as_object_mut()) {
        state.insert("mcpServers".into(), json!(servers));
    }
}

#[cfg(not(feature = "mcp"))]
fn add_mcp_servers(_state: &mut Value, _session: &AgentSession) {}

/// Pi's `RpcSlashCommand`s: the prompt templates (`/name args` in a
/// prompt puts one in).
fn commands(session: &AgentSession) -> Vec<Value> {
    session
        .prompt_templates()
        .iter()
        .map(|template| {
            json!({
                "name": template.name,
                "description": template.description,
                "source": match template.kind {
                    TemplateKind::Prompt => "prompt",
                    TemplateKind::Skill => "skill",
                },
                "location": template.location,
                "path": template.path,
            })
        })
        .collect()
}

fn queue_mode_name(mode: QueueMode) -> &'static str {
    match mode {
        QueueMode::OneAtATime => "one-at-a-time",
        QueueMode::All => "all",
    }
}

/// Drops `null` members: Pi's `undefined` fields are absent from its JSON.
fn strip_nulls(value: Value) -> Value {
    match value {
        Value::Object(object) => Value::Object(
            object
                .into_iter()
                .filter(|(_, v)| !v.is_null())
                .collect::<Map<String, Value>>(),
        ),
        other => other,
    }
}

fn response(id: Option<Value>, command: &str, success: bool) -> Map<String, Value> {
    let mut object = Map::new();
    if let Some(id) = id {
        object.insert("id".into(), id);
    }
    object.insert("type".into(), json!("response"));
    object.insert("command".into(), json!(command));
    object.insert("success".into(), json!(success));
    object
}

fn success(id: Option<Value>, command: &str, data: Option<Value>) -> Value {
    let mut object = response(id, command, true);
    if let Some(data) = data {
        object.insert("data".into(), data);
    }
    Value::Object(object)
}

fn failure(id: Option<Value>, command: &str, error: &str) -> Value {
    let mut object = response(id, command, false);
    object.insert("error".into(), json!(error));
    Value::Object(object)
}

/// Why [`Server::serve`] gave no response: the output failed, or a field of
/// the command had the wrong type (answered as the command's failure).
enum Unserved {
    Output(std::io::Error),
    Field(String),
}

impl From<std::io::Error> for Unserved {
    fn from(error: std::io::Error) -> Self {
        Unserved::Output(error)
    }
}

/// The command's field `name` as `read` takes it (`expected` names its
/// type), `None` when it is absent or `null` (JavaScript's `undefined`). A
/// value of another type is refused, as a missing required field is: it was
/// ignored, and `export_html` with an `outputPath` of 5 wrote the default
/// file, `navigate_tree` with `"summarize": "yes"` summarised nothing.
fn field<'a, T>(
    command: &'a Value,
    name: &str,
    read: impl FnOnce(&'a Value) -> Option<T>,
    expected: &str,
) -> Result<Option<T>, Unserved> {
    match command.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(value) => read(value)
            .map(Some)
            .ok_or_else(|| Unserved::Field(must_be(name, expected))),
    }
}

/// What a command is told of a field that is missing or not of the type
/// `expected` (Pi reads fields unchecked).
fn must_be(name: &str, expected: &str) -> String {
    format!("Invalid command: \"{name}\" must be {expected}")
}

fn missing(id: Option<Value>, command: &str, name: &str) -> Value {
    failure(id, command, &must_be(name, "a string"))
}

/// Pi's answer to a line that is not a command, without an id.
fn unparsable(reason: &str) -> Value {
    failure(None, "parse", &format!("Failed to parse command: {reason}"))
}

/// Pi answers an unknown type without the command's id; a missing type
/// prints as JavaScript's `undefined`.
fn unknown_command(kind: Option<&Value>) -> Value {
    let mut object = Map::new();
    object.insert("type".into(), json!("response"));
    let name = match kind {
        Some(Value::String(name)) => {
            object.insert("command".into(), json!(name));
            name.clone()
        }
        Some(other) => {
            object.insert("command".into(), other.clone());
            other.to_string()
        }
        None => "undefined".to_owned(),
    };
    object.insert("success".into(), json!(false));
    object.insert("error".into(), json!(format!("Unknown command: {name}")));
    Value::Object(object)
}
