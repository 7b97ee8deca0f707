//! Print mode (`-p`) and JSON mode (`--mode json`): run the prompts one after
//! another, then exit (Pi's `runPrintMode`).
//!
//! Text prints the final assistant message's text blocks, one per line; a
//! run that ended in error prints its error on stderr. JSON prints the session
//! header, then every event as one line, as it happens. Both log a warning
//! (`tracing`: the binary's warnings layer, filtered by `CODING_AGENT_LOG`)
//! when a failed turn is retried or the context is compacted, an error when
//! that fails the run.
//!
//! Once JSON mode has written the header, every way a run ends is on
//! stdout: a run's end in its events (`message_end` with `stopReason:
//! "error"`, `agent_end`), a prompt refused before its run started as a
//! failed `prompt` response, the line RPC writes for it. What fails before
//! the header (the command line, the settings) is on stderr alone, with
//! exit status 2 for a usage error, else 1.
//!
//! Exit status: 0 when the last run ended normally, 1 when it ended in error
//! (or was aborted, or its context overflowed and could not be compacted, or
//! a UserPromptSubmit hook refused the prompt: its reason goes to stderr, or
//! in JSON mode to stdout), 130 when `interrupt` fired (Ctrl-C): the run is
//! then aborted (running tools are cancelled, their processes killed), and what it
//! produced, the aborted answer included, is saved before returning (the
//! binary then ends by the signal rather than with 130).
//!
//! A stderr that cannot be written loses what is said there, not the run:
//! a failed write of a notice ended the run half-way, unsaved.
//!
//! A reader that closes stdout early (`--mode json | head -1`) ends the run
//! the same way, saved, with status 141 (a shell's report of SIGPIPE): no one
//! reads the rest, and dropping the run half-way would lose its prompt. In
//! text mode the answer is written after the run, which is saved whole;
//! the status is 141 as well, since the answer did not all reach its reader.

use std::io::{self, Write};

use agent_ai::{AssistantContent, AssistantMessage, Message, StopReason};
use agent_core::AgentEvent;
use tokio_util::sync::CancellationToken;

use crate::app::{AgentSession, PromptError};
use crate::session_event::{SessionEvent, retry_failed};

/// What print mode writes on stdout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PrintFormat {
    /// The final answer's text.
    Text,
    /// The session header, then every event, one JSON object a line.
    Json,
}

/// `prompt` stamped now: a command line's prompts are all made at start,
/// and each is sent once the runs before it have ended.
fn sent_now(prompt: &Message) -> Message {
    let mut prompt = prompt.clone();
    if let Message::User(user) = &mut prompt {
        user.timestamp = agent_ai::message::now_millis();
    }
    prompt
}

/// Exit status of a run interrupted by Ctrl-C (as a shell reports SIGINT).
pub const EXIT_INTERRUPTED: u8 = 130;

/// Exit status of a run whose stdout reader went away (as a shell reports
/// SIGPIPE).
pub const EXIT_READER_GONE: u8 = 141;

/// Runs `prompts` in order; returns the exit status (see the module docs).
/// Stops after a run that ended in error. Fails only when `out` cannot be
/// written, and not when its reader went away; what `err` cannot take is
/// dropped.
pub async fn run_print(
    session: &AgentSession,
    prompts: &[Message],
    format: PrintFormat,
    out: &mut dyn Write,
    err: &mut dyn Write,
    interrupt: &CancellationToken,
) -> io::Result<u8> {
    let mut sink = Sink {
        format,
        out,
        err,
        reader_gone: false,
    };
    if format == PrintFormat::Json {
        let header = serde_json::to_string(&session.header())?;
        sink.write_out(|out| writeln!(out, "{header}"))?;
    }
    // Text shows the answer once it ends: it needs no update of a
    // streaming message.
    let mut events = match format {
        PrintFormat::Json => session.subscribe_all(),
        PrintFormat::Text => session.subscribe_settled(),
    };
    // A reader gone before the first prompt: none is started.
    let mut interrupted = sink.reader_gone;
    // Taken from the events, not the history: a compaction after the run
    // may have summarised the answer away already.
    let mut outcome = Outcome::default();
    for prompt in prompts {
        if interrupted {
            break;
        }
        outcome = Outcome::default();
        let run = session.prompt(sent_now(prompt));
        tokio::pin!(run);
        loop {
            tokio::select! {
                biased;
                Some(event) = events.recv() => {
                    outcome.note(&event);
                    sink.show(&event)?;
                    if sink.reader_gone && !interrupted {
                        interrupted = true;
                        session.abort();
                    }
                }
                () = interrupt.cancelled(), if !interrupted => {
                    interrupted = true;
                    session.abort();
                }
                result = &mut run => {
                    match result {
                        Ok(_) => break,
                        // Ctrl-C while the hooks before the run ran.
                        Err(PromptError::Aborted) => return Ok(sink.interrupted_status()),
                        // Refused (a hook's block says which and why).
                        Err(error) => {
                            sink.refused(&error)?;
                            return Ok(1);
                        }
                    }
                }
            }
        }
        // The run's last events were sent before it returned.
        while let Some(event) = events.try_recv() {
            outcome.note(&event);
            sink.show(&event)?;
        }
        if outcome.failed() {
            break;
        }
    }
    let status = match &outcome.answer {
        Some(last) if matches!(last.stop_reason, StopReason::Error | StopReason::Aborted) => {
            if format == PrintFormat::Text {
                let reason = match last.stop_reason {
                    StopReason::Aborted => "aborted",
                    _ => "error",
                };
                match &last.error_message {
                    Some(message) => sink.say(message),
                    None => sink.say(format_args!("Request {reason}")),
                }
            }
            1
        }
        // Its error is on stderr already, as the compaction's end.
        _ if outcome.overflow_unrecovered => 1,
        Some(last) => {
            if format == PrintFormat::Text {
                let mut said = false;
                for block in &last.content {
                    if let AssistantContent::Text(text) = block {
                        sink.write_out(|out| writeln!(out, "{}", text.text))?;
                        said = true;
                    }
                }
                // Nothing on stdout, exit 0: say why, or it reads as a
                // silent failure; nor does a text cut short read as one.
                if !said {
                    sink.say(why_no_text(last));
                } else if last.stop_reason == StopReason::Length {
                    sink.say(CUT_OFF);
                }
            }
            0
        }
        None => 0,
    };
    sink.write_out(|_| Ok(()))?;
    Ok(if interrupted || sink.reader_gone {
        sink.interrupted_status()
    } else {
        status
    })
}

/// What is said under an answer whose text the output limit cut short.
pub(crate) const CUT_OFF: &str = "The answer was cut off at the output limit (maxTokens)";

/// Why an answer without text has none: a reasoning model that spent its
/// output limit thinking is told how to leave room for text; an answer cut
/// at the limit without thinking is not (said of one, it sent users looking
/// for a thinking level they never set). The interactive mode says the
/// same under such an answer.
pub(crate) fn why_no_text(answer: &AssistantMessage) -> &'static str {
    let thought = answer
        .content
        .iter()
        .any(|block| matches!(block, AssistantContent::Thinking(_)));
    match answer.stop_reason {
        StopReason::Length if thought => {
            "The answer reached the output limit before any text (it was all thinking); raise maxTokens or lower the thinking level"
        }
        StopReason::Length => "The answer reached the output limit before any text",
        _ => "The answer has no text",
    }
}

/// How a run ended, taken from its events.
#[derive(Default)]
struct Outcome {
    /// Its last answer: the run's result (a retried turn's failed answer
    /// comes before the retry's).
    answer: Option<AssistantMessage>,
    /// The context overflowed and its recovery failed. The answer need not
    /// be an error: a server that says so with an empty answer cut at the
    /// output limit (`finish_reason: "length"`) leaves one that looks like
    /// an ending, and the run exited 0 where a 400 exited 1.
    overflow_unrecovered: bool,
}

impl Outcome {
    /// Notes what `event` says of the run's end.
    fn note(&mut self, event: &SessionEvent) {
        if event.overflow_recovery_failed() {
            self.overflow_unrecovered = true;
        }
        if let SessionEvent::Agent(agent_event) = event
            && let AgentEvent::MessageEnd {
                message: Message::Assistant(message),
            } = agent_event.as_ref()
        {
            self.answer = Some(message.clone());
        }
    }

    /// Whether the run ended in error (or aborted): no prompt after it runs.
    fn failed(&self) -> bool {
        self.overflow_unrecovered
            || self.answer.as_ref().is_some_and(|answer| {
                matches!(answer.stop_reason, StopReason::Error | StopReason::Aborted)
            })
    }
}

/// Where a run's output goes: stdout, which its reader may close early,
/// and stderr.
struct Sink<'a> {
    format: PrintFormat,
    out: &'a mut dyn Write,
    err: &'a mut dyn Write,
    /// Stdout's reader went away: nothing more is written there.
    reader_gone: bool,
}

impl Sink<'_> {
    /// Shows an event: every one in JSON mode; the session's retries and
    /// compactions are logged in both. They went to stderr directly, headed
    /// `coding-agent:` like a fatal error, and `CODING_AGENT_LOG=error` could
    /// not silence them. Those that end the run in error (retries used up,
    /// an overflow that could not be compacted) are errors, the rest
    /// warnings.
    fn show(&mut self, event: &SessionEvent) -> io::Result<()> {
        if let Some(line) = event.describe() {
            if let SessionEvent::AutoRetryEnd { attempt, .. } = event
                && event.retries_exhausted()
                && self.format == PrintFormat::Text
            {
                // The error itself ends the output, as Pi prints it: it was
                // said twice, here and there.
                tracing::error!("{}", retry_failed(*attempt));
            } else if event.retries_exhausted() || event.overflow_recovery_failed() {
                tracing::error!("{line}");
            } else {
                tracing::warn!("{line}");
            }
        }
        if self.format == PrintFormat::Json {
            self.write_out(|out| writeln!(out, "{}", event.to_json()))?;
        }
        Ok(())
    }

    /// Writes to stdout and flushes, unless its reader went away, which is
    /// noted rather than failed.
    fn write_out(
        &mut self,
        write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
    ) -> io::Result<()> {
        if self.reader_gone {
            return Ok(());
        }
        match write(self.out).and_then(|()| self.out.flush()) {
            Err(error) if error.kind() == io::ErrorKind::BrokenPipe => {
                self.reader_gone = true;
                Ok(())
            }
            result => result,
        }
    }

    /// Says why a prompt was refused before its run started: on stderr in
    /// text mode; in JSON mode as RPC answers a prompt that failed, `{"type":
    /// "response", "command": "prompt", "success": false, "error": ...}` (no
    /// `id`: no command asked). A JSON reader got the session header alone
    /// and exit status 1, which a crash gives too.
    fn refused(&mut self, error: &PromptError) -> io::Result<()> {
        match self.format {
            PrintFormat::Text => {
                self.say(error);
                Ok(())
            }
            PrintFormat::Json => {
                let line = serde_json::json!({
                    "type": "response",
                    "command": "prompt",
                    "success": false,
                    "error": error.to_string(),
                });
                self.write_out(|out| writeln!(out, "{line}"))
            }
        }
    }

    /// Writes `line` to stderr, or nothing when it cannot be written.
    fn say(&mut self, line: impl std::fmt::Display) {
        let _ = writeln!(self.err, "{line}");
    }

    /// The status of a run that was stopped: by its reader or by Ctrl-C.
    fn interrupted_status(&mut self) -> u8 {
        if self.reader_gone {
            EXIT_READER_GONE
        } else {
            EXIT_INTERRUPTED
        }
    }
}

#[cfg(test)]
mod tests {
    use agent_ai::{Model, ThinkingContent};

    use super::*;

    #[test]
    fn an_answer_cut_at_the_limit_blames_thinking_only_when_it_thought() {
        let mut answer = AssistantMessage::empty(&Model::new("m", "p", "a"));
        answer.stop_reason = StopReason::Length;
        assert_eq!(
            why_no_text(&answer),
            "The answer reached the output limit before any text"
        );
        answer
            .content
            .push(AssistantContent::Thinking(ThinkingContent {
                thinking: "first, the".into(),
                thinking_signature: None,
                redacted: None,
            }));
        assert!(
            why_no_text(&answer)
                .ends_with("(it was all thinking); raise maxTokens or lower the thinking level")
        );
        answer.stop_reason = StopReason::Stop;
        assert_eq!(why_no_text(&answer), "The answer has no text");
    }
}
