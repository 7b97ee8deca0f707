//! Print mode (`-p`) and JSON mode (`--mode json`): run the prompts one after
//! another, then exit (Pi's `runPrintMode`).
//!
//! Text prints the final assistant message's text blocks, one per line; a
//! run that ended in error prints its error on stderr. JSON prints the session
//! header, then every event as one line, as it happens. Both say on stderr
//! when a failed turn is retried or the context is compacted.
//!
//! Exit status: 0 when the last run ended normally, 1 when it ended in error
//! (or was aborted, or a UserPromptSubmit hook refused the prompt: its reason
//! goes to stderr), 130 when `interrupt` fired (Ctrl-C): the run is then
//! aborted (running tools are cancelled, their processes killed), and what it
//! produced, the aborted answer included, is saved before returning.

use std::io::{self, Write};

use agent_ai::{AssistantContent, AssistantMessage, Message, StopReason};
use agent_core::AgentEvent;
use tokio_util::sync::CancellationToken;

use crate::app::{AgentSession, PromptError};
use crate::session_event::SessionEvent;

/// What print mode writes on stdout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PrintFormat {
    /// The final answer's text.
    Text,
    /// The session header, then every event, one JSON object a line.
    Json,
}

/// Exit status of a run interrupted by Ctrl-C (as a shell reports SIGINT).
pub const EXIT_INTERRUPTED: u8 = 130;

/// Runs `prompts` in order; returns the exit status (see the module docs).
/// Stops after a run that ended in error. Fails only when `out` or `err`
/// cannot be written.
pub async fn run_print(
    session: &AgentSession,
    prompts: &[Message],
    format: PrintFormat,
    out: &mut dyn Write,
    err: &mut dyn Write,
    interrupt: &CancellationToken,
) -> io::Result<u8> {
    if format == PrintFormat::Json {
        writeln!(out, "{}", serde_json::to_string(&session.header())?)?;
        out.flush()?;
    }
    let mut events = session.subscribe_all();
    let mut interrupted = false;
    // Taken from the events, not the history: a compaction after the run
    // may have summarised the answer away already.
    let mut answer: Option<AssistantMessage> = None;
    for prompt in prompts {
        if interrupted {
            break;
        }
        answer = None;
        let run = session.prompt(prompt.clone());
        tokio::pin!(run);
        loop {
            tokio::select! {
                biased;
                Some(event) = events.recv() => {
                    keep_answer(&event, &mut answer);
                    handle(&event, format, out, err)?;
                }
                () = interrupt.cancelled(), if !interrupted => {
                    interrupted = true;
                    session.abort();
                }
                result = &mut run => {
                    match result {
                        Ok(_) => break,
                        // Ctrl-C while the hooks before the run ran.
                        Err(PromptError::Aborted) => return Ok(EXIT_INTERRUPTED),
                        // Refused (a hook's block says which and why).
                        Err(error) => {
                            writeln!(err, "{error}")?;
                            return Ok(1);
                        }
                    }
                }
            }
        }
        // The run's last events were sent before it returned.
        while let Some(event) = events.try_recv() {
            keep_answer(&event, &mut answer);
            handle(&event, format, out, err)?;
        }
        if answer.as_ref().is_some_and(failed) {
            break;
        }
    }
    let status = match &answer {
        Some(last) if matches!(last.stop_reason, StopReason::Error | StopReason::Aborted) => {
            if format == PrintFormat::Text {
                let reason = match last.stop_reason {
                    StopReason::Aborted => "aborted",
                    _ => "error",
                };
                match &last.error_message {
                    Some(message) => writeln!(err, "{message}")?,
                    None => writeln!(err, "Request {reason}")?,
                }
            }
            1
        }
        Some(last) => {
            if format == PrintFormat::Text {
                let mut said = false;
                for block in &last.content {
                    if let AssistantContent::Text(text) = block {
                        writeln!(out, "{}", text.text)?;
                        said = true;
                    }
                }
                // Nothing on stdout, exit 0: say why, or it reads as a
                // silent failure (a reasoning model that spent its output
                // limit thinking).
                if !said && last.stop_reason == StopReason::Length {
                    writeln!(
                        err,
                        "The answer reached the output limit before any text (it was all thinking); raise maxTokens or lower the thinking level"
                    )?;
                } else if !said {
                    writeln!(err, "The answer has no text")?;
                }
            }
            0
        }
        None => 0,
    };
    out.flush()?;
    Ok(if interrupted {
        EXIT_INTERRUPTED
    } else {
        status
    })
}

/// Whether a run's answer ended it in error (or aborted).
fn failed(answer: &AssistantMessage) -> bool {
    matches!(answer.stop_reason, StopReason::Error | StopReason::Aborted)
}

/// Keeps the answer `event` completes, if it completes one: the run's last
/// is its result (a retried turn's failed answer comes before the retry's).
fn keep_answer(event: &SessionEvent, answer: &mut Option<AssistantMessage>) {
    if let SessionEvent::Agent(agent_event) = event
        && let AgentEvent::MessageEnd {
            message: Message::Assistant(message),
        } = agent_event.as_ref()
    {
        *answer = Some(message.clone());
    }
}

/// Shows an event: every one in JSON mode; the session's retries and
/// compactions on stderr in both.
fn handle(
    event: &SessionEvent,
    format: PrintFormat,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> io::Result<()> {
    if let Some(line) = event.describe() {
        writeln!(err, "coding-agent: {line}")?;
    }
    if format == PrintFormat::Json {
        writeln!(out, "{}", event.to_json())?;
        out.flush()?;
    }
    Ok(())
}
