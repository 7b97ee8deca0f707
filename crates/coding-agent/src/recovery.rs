//! The session-level recoveries around one prompt: they wrap the agent's
//! loop, not the provider (whose own retries of a refused request come
//! first). Before the prompt, a context already past `contextWindow -
//! reserveTokens` for the model now in use (continued with a smaller window,
//! or after a model change) is compacted (`reason: threshold`), as Pi does,
//! so the prompt is not sent to be refused. After each run:
//!
//! 1. an answer that says the context is too long: one compaction
//!    (`reason: overflow`) and one more try; a second overflow ends the run
//!    with a message saying what to do. Where the error says how long the
//!    request was, later requests scale their token estimates by how far it
//!    fell short ([`AgentSession::learn_request_size`]); where it states a
//!    window smaller than the one assumed, the session uses it from then on,
//!    and with nothing to compact asks again at once (the answer's room
//!    shrinks with the window);
//! 2. a transient failure ([`crate::retry`]): `auto_retry_start`, the failed
//!    answer leaves the context (a cut answer's tool calls never run), a
//!    wait that `abort_retry` or `abort` cancels, then the turn again;
//!    `auto_retry_end` says how the retries ended;
//! 3. a context past `contextWindow - reserveTokens`: a compaction
//!    (`reason: threshold`), with no new turn.
//!
//! A run of tool calls does not wait for its end: after a turn that leaves
//! the context past the threshold, the run stops before the model reads the
//! results (`AgentSession::stop_to_compact`), is compacted, and goes on
//! (`agent_end`, the compaction's events, then `agent_start` again).
//!
//! A threshold compaction that fails (a summariser that is down) is not
//! tried again until the next prompt, which says so once; the overflow
//! recovery still compacts.
//!
//! With auto-compaction off (`compaction.enabled`, RPC
//! `set_auto_compaction`) none of these compacts, as in Pi: an overflow
//! ends the run with its error. `/compact` and RPC `compact` still do.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_ai::overflow::{is_context_overflow, overflow_context_window, overflow_request_tokens};
use agent_ai::{AssistantMessage, Message, Model, StopReason};
use agent_core::{AgentError, AgentEvent};

use crate::app::AgentSession;
use crate::compaction::{
    CompactionError, CompactionSettings, DEFAULT_CONTEXT_WINDOW, known_context_window,
};
use crate::retry::RetrySettings;
use crate::session_event::{CompactionReason, SessionEvent};
use crate::support::sync::lock;

/// What the session is told after a second overflow in a row.
pub const OVERFLOW_RECOVERY_FAILED: &str = "Context overflow recovery failed after one compact-and-retry attempt. Try reducing context or switching to a larger-context model.";

/// `finalError` of retries cancelled by `abort_retry` or `abort`.
pub const RETRY_CANCELLED: &str = "Retry cancelled";

/// Retry and compaction settings, and the model's context window and
/// `maxTokens` setting.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RecoverySettings {
    /// `retry.*`.
    pub retry: RetrySettings,
    /// `compaction.*`.
    pub compaction: CompactionSettings,
    /// The window from settings or the server, when known.
    pub context_window: Option<u64>,
    /// The provider's `maxTokens` setting, when given: the answer's room
    /// whatever the window (see [`RecoverySettings::answer_limit`]).
    pub max_tokens: Option<u32>,
}

impl RecoverySettings {
    /// The window of `model`: the configured or served one, else the
    /// built-in table's, else Pi's default for unknown models.
    pub fn window_for(&self, model: &Model) -> u64 {
        self.context_window
            .or_else(|| known_context_window(&model.id))
            .unwrap_or(DEFAULT_CONTEXT_WINDOW)
    }

    /// The most tokens a request to `model` asks for, thinking included
    /// (`agent_ai::Context::max_tokens`; the provider's `max_tokens`, 8192
    /// by default, caps the answer itself): a quarter of the window, at
    /// least 256 (an answer with a tool call needs that much), or the
    /// `maxTokens` setting when that is more. A server counts the answer's
    /// room against the window, and the window may be learnt only from a
    /// refusal: a vLLM server with 8192 tokens refused every request asking
    /// for 8192 ("8192 in the completion"), and Anthropic's thinking budget
    /// on top of `maxTokens` asked for 18432 tokens of an 8192 window.
    pub fn answer_limit(&self, model: &Model) -> u32 {
        let quarter = u32::try_from(self.window_for(model) / 4).unwrap_or(u32::MAX);
        let limit = quarter.max(MIN_ANSWER_LIMIT);
        self.max_tokens.map_or(limit, |set| set.max(limit))
    }
}

/// The least [`RecoverySettings::answer_limit`] a small window leaves.
const MIN_ANSWER_LIMIT: u32 = 256;

/// What to do after a run ended with its last answer.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Next {
    /// Compact for an overflow, then ask again.
    RecoverOverflow,
    /// A second overflow: give up.
    OverflowAgain,
    /// Wait this long, then ask again.
    Retry(Duration),
    /// The retries are used up: the last failure, held back from the
    /// session file while a retry could replace it, is saved now.
    RetriesExhausted,
    /// Compact because the context is nearly full.
    Compact,
    /// Done.
    Stop,
}

/// The recovery state of one prompt.
#[derive(Debug, Default)]
struct Chain {
    /// Retries made since the last successful answer.
    attempt: u32,
    /// An overflow was compacted already and no answer succeeded since.
    overflow_recovered: bool,
}

impl Chain {
    fn next(
        &mut self,
        answer: &AssistantMessage,
        settings: &RecoverySettings,
        window: u64,
        context_tokens: u64,
    ) -> Next {
        if answer.stop_reason == StopReason::Aborted {
            return Next::Stop;
        }
        if is_context_overflow(answer, Some(window)) {
            if !settings.compaction.enabled {
                // Auto-compaction off means no compaction the user did not
                // ask for, the overflow's included (Pi's check returns at
                // once): the run ends with the refusal.
                return Next::Stop;
            }
            if answer.stop_reason == StopReason::Stop {
                // A whole answer from a context past the window (a server
                // that cut it silently, or a window set too small): it
                // stands, and asking again would only repeat it. The
                // context is compacted for the next prompt.
                return Next::Compact;
            }
            return if self.overflow_recovered {
                Next::OverflowAgain
            } else {
                Next::RecoverOverflow
            };
        }
        // The rule that kept the answer out of the session file
        // (`RetrySettings::retry_delay`). One not retried at all (a server
        // asking for a longer wait than a retry may take) was saved as it
        // came, and the run ends with its error, which says how long.
        if let Some(delay) = settings.retry.retry_delay(answer, self.attempt + 1) {
            if self.attempt >= settings.retry.max_retries {
                return Next::RetriesExhausted;
            }
            self.attempt += 1;
            return Next::Retry(delay);
        }
        if answer.stop_reason != StopReason::Error
            && settings.compaction.should_compact(context_tokens, window)
        {
            return Next::Compact;
        }
        Next::Stop
    }
}

/// Runs `messages` as a prompt with the recoveries (see the module docs).
pub(crate) async fn run_messages(
    session: &AgentSession,
    messages: Vec<Message>,
) -> Result<Vec<Message>, AgentError> {
    let agent = session.agent();
    // A threshold compaction that failed during the last prompt is tried
    // again for this one.
    session.set_threshold_compaction_failed(false);
    compact_if_full(session).await;
    session.take_stopped_to_compact();
    let mut added = agent.prompt_messages(messages).await?;
    let chain = Arc::new(Mutex::new(Chain::default()));
    let _watching = watch_answers(session, &chain);
    loop {
        // Stopped after a turn of tool calls, their results last.
        if session.take_stopped_to_compact()
            && !matches!(
                agent.history().snapshot().last(),
                Some(Message::Assistant(_)) | None
            )
        {
            let outcome = session
                .start_compaction(CompactionReason::Threshold, None)
                .await;
            let cancelled = matches!(outcome, Err(CompactionError::Cancelled));
            end_compaction(session, CompactionReason::Threshold, &outcome, false);
            if cancelled {
                break;
            }
            added.extend(agent.continue_run().await?);
            continue;
        }
        let Some(answer) = last_answer(&agent.history().snapshot()) else {
            break;
        };
        // A good answer mid-run ended the retries as it came
        // ([`watch_answers`]); the last one may be an abort.
        if answer.stop_reason == StopReason::Aborted {
            let attempt = std::mem::take(&mut lock(&chain).attempt);
            if attempt > 0 {
                // An answer the user aborted did not succeed: the retries
                // end cancelled (Pi reports them a success;
                // docs/DEVIATIONS.md).
                session.notify(SessionEvent::AutoRetryEnd {
                    success: false,
                    attempt,
                    final_error: Some(RETRY_CANCELLED.to_owned()),
                    failed: None,
                });
            }
        }
        let settings = session.recovery();
        let window = session.context_window();
        let next = lock(&chain).next(&answer, &settings, window, session.context_tokens());
        let error = answer.error_message.clone().unwrap_or_default();
        match next {
            Next::Stop => {
                // Retries under way end with a failure that is not retried
                // (a 400 after a 503, a 429 asking for a longer wait, or
                // retries switched off meanwhile):
                // say so, or a client waits on its "retrying" for ever.
                let attempt = std::mem::take(&mut lock(&chain).attempt);
                if attempt > 0 {
                    session.notify(SessionEvent::AutoRetryEnd {
                        success: false,
                        attempt,
                        final_error: Some(error),
                        failed: None,
                    });
                }
                break;
            }
            // One failed threshold compaction this prompt is enough.
            Next::Compact if session.threshold_compaction_failed() => break,
            Next::Compact => {
                let outcome = session
                    .start_compaction(CompactionReason::Threshold, None)
                    .await;
                end_compaction(session, CompactionReason::Threshold, &outcome, false);
                // Messages queued meanwhile go out now, as Pi continues
                // after a compaction; they waited for the next prompt.
                let queued = session.take_next_queued();
                if queued.is_empty() {
                    break;
                }
                added.extend(agent.prompt_messages(queued).await?);
                continue;
            }
            Next::OverflowAgain => {
                session.notify(SessionEvent::CompactionEnd {
                    reason: CompactionReason::Overflow,
                    result: None,
                    aborted: false,
                    will_retry: false,
                    // Pi's text, then the numbers: a prompt too long for
                    // the window on its own read as the generic advice.
                    error_message: Some(format!(
                        "{OVERFLOW_RECOVERY_FAILED} {}",
                        too_small_for_the_window(session)
                    )),
                });
                break;
            }
            Next::RecoverOverflow => {
                lock(&chain).overflow_recovered = true;
                drop_failed_answer(session);
                if let Some(said) = overflow_request_tokens(&error) {
                    session.learn_request_size(said);
                }
                let adopted = overflow_context_window(&error)
                    .is_some_and(|stated| adopt_server_window(session, stated));
                // The window learnt changes the request even with nothing
                // to compact: the answer's room is a quarter of it now
                // ([`RecoverySettings::answer_limit`]). A vLLM server
                // refused a first prompt for its "8192 in the completion",
                // and the recovery ended with "Nothing to compact".
                let ask_as_is = adopted && session.compaction_plan().is_err();
                if !ask_as_is {
                    let outcome = session
                        .start_compaction(CompactionReason::Overflow, None)
                        .await;
                    if !end_compaction(session, CompactionReason::Overflow, &outcome, true) {
                        // The run ends with the refused answer, as without
                        // the recovery: print and json mode exit with its
                        // error.
                        put_back(session, answer);
                        break;
                    }
                    // The rebuilt context ends with the failed answer again.
                    drop_failed_answer(session);
                }
            }
            Next::RetriesExhausted => {
                session.notify(SessionEvent::AutoRetryEnd {
                    success: false,
                    attempt: lock(&chain).attempt,
                    final_error: Some(error),
                    failed: Some(Box::new(answer)),
                });
                break;
            }
            Next::Retry(delay) => {
                // Cancellable before anyone hears of the wait, and the
                // prompt on disk by then.
                let cancel = session.begin_wait();
                session.save_unanswered();
                session.notify(SessionEvent::AutoRetryStart {
                    attempt: lock(&chain).attempt,
                    max_attempts: settings.retry.max_retries,
                    delay_ms: u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
                    error_message: error,
                });
                drop_failed_answer(session);
                let waited = tokio::select! {
                    () = cancel.cancelled() => false,
                    () = tokio::time::sleep(delay) => true,
                };
                session.end_wait();
                if !waited {
                    session.notify(SessionEvent::AutoRetryEnd {
                        success: false,
                        attempt: lock(&chain).attempt,
                        final_error: Some(RETRY_CANCELLED.to_owned()),
                        failed: Some(Box::new(answer.clone())),
                    });
                    // The answer goes back: the run ended with it.
                    put_back(session, answer);
                    break;
                }
            }
        }
        added.extend(agent.continue_run().await?);
    }
    Ok(added)
}

/// Ends the retries at each good answer of the run as it comes, as Pi does
/// at `message_end`: `auto_retry_end` (success) goes out then, not when the
/// whole run is over, and the attempts count again from one, so brief
/// failures scattered over a long run of tool calls do not add up to the
/// limit. Watches until the returned guard is dropped; the listener holds
/// the session weakly (see [`crate::app::WeakSession`]): it stays with the
/// agent until the next event after that.
fn watch_answers(session: &AgentSession, chain: &Arc<Mutex<Chain>>) -> Watching {
    let live = Arc::new(AtomicBool::new(true));
    let (weak, chain, watching) = (session.downgrade(), Arc::clone(chain), Arc::clone(&live));
    session.agent().subscribe_with(move |event| {
        if !watching.load(Ordering::SeqCst) {
            return false;
        }
        if let AgentEvent::MessageEnd {
            message: Message::Assistant(answer),
        } = event
            && !is_failed(answer)
            && answer.stop_reason != StopReason::Aborted
        {
            let mut chain = lock(&chain);
            chain.overflow_recovered = false;
            if chain.attempt > 0
                && let Some(session) = weak.upgrade()
            {
                session.notify(SessionEvent::AutoRetryEnd {
                    success: true,
                    attempt: std::mem::take(&mut chain.attempt),
                    final_error: None,
                    failed: None,
                });
            }
        }
        true
    });
    Watching(live)
}

/// Stops [`watch_answers`] when the run is over.
struct Watching(Arc<AtomicBool>);

impl Drop for Watching {
    fn drop(&mut self) {
        self.0.store(false, Ordering::SeqCst);
    }
}

/// Pi's check before a prompt: compacts a context past the threshold of the
/// model now in use, unless nothing was answered since the last compaction
/// (its size is then an estimate the compaction itself made; Pi skips that
/// case too). A failure is reported and the prompt goes on: the overflow
/// recovery after it still applies.
async fn compact_if_full(session: &AgentSession) {
    let settings = session.recovery();
    if session.context_is_estimated()
        || !settings
            .compaction
            .should_compact(session.context_tokens(), session.context_window())
    {
        return;
    }
    let outcome = session
        .start_compaction(CompactionReason::Threshold, None)
        .await;
    end_compaction(session, CompactionReason::Threshold, &outcome, false);
}

/// Emits `compaction_end` for `outcome`; whether the compaction succeeded.
/// A threshold compaction with nothing to compact was never announced
/// ([`AgentSession::start_compaction`]): it has no end either.
pub(crate) fn end_compaction(
    session: &AgentSession,
    reason: CompactionReason,
    outcome: &Result<crate::session::CompactionResult, CompactionError>,
    will_retry: bool,
) -> bool {
    if reason == CompactionReason::Threshold
        && matches!(
            outcome,
            Err(CompactionError::NothingToCompact | CompactionError::AlreadyCompacted)
        )
    {
        return false;
    }
    let prefix = match reason {
        CompactionReason::Manual => "Compaction failed: ",
        CompactionReason::Threshold => "Auto-compaction failed: ",
        CompactionReason::Overflow => "Context overflow recovery failed: ",
    };
    let (result, aborted, error_message) = match outcome {
        Ok(result) => (Some(result.clone()), false, None),
        Err(CompactionError::Cancelled) => (None, true, None),
        Err(CompactionError::NothingToCompact) if reason == CompactionReason::Overflow => {
            let hint = too_small_for_the_window(session);
            (
                None,
                false,
                Some(format!(
                    "{prefix}{}. {hint}",
                    CompactionError::NothingToCompact
                )),
            )
        }
        Err(error) => (None, false, Some(format!("{prefix}{error}"))),
    };
    let failed = error_message.is_some();
    let succeeded = result.is_some();
    session.notify(SessionEvent::CompactionEnd {
        reason,
        result,
        aborted,
        will_retry: will_retry && succeeded,
        error_message,
    });
    if reason == CompactionReason::Threshold
        && failed
        && !session.set_threshold_compaction_failed(true)
    {
        tracing::warn!(
            "Auto-compaction is not tried again until the next prompt; an overflow still is"
        );
    }
    succeeded
}

/// What to do when the server refuses a context with nothing left to
/// compact: what fills the window, in numbers, and the ways out (the
/// answer's room, `max_tokens`, counts against the window too).
fn too_small_for_the_window(session: &AgentSession) -> String {
    format!(
        "The model's context window is {} tokens; the system prompt and tool definitions take about {} and the messages about {}. Give the model a larger window (its contextWindow setting and the server's context size), a smaller maxTokens (a server counts the answer's room against the window too), or fewer tools (--tools).",
        session.context_window(),
        session.fixed_tokens(),
        session.context_tokens(),
    )
}

/// Compacts for the window a refusal `stated` the server has, when it is
/// smaller than the one assumed (settings, the known table, else 128,000),
/// until the model changes; says so once (later refusals state the same).
/// A llama.cpp started with 8,000 tokens refused each request past them,
/// while the session, planning for 128,000, found nothing to compact.
/// Whether it adopted `stated`.
fn adopt_server_window(session: &AgentSession, stated: u64) -> bool {
    let assumed = session.context_window();
    if stated >= assumed {
        return false;
    }
    tracing::warn!(
        "the server's context size is {stated} tokens, less than the {assumed} assumed: compacting for {stated} from now on (set the provider's contextWindow to {stated} to compact in time from the start)"
    );
    session.set_context_window(Some(stated));
    true
}

/// Puts a failed answer [`drop_failed_answer`] took out back at the end of
/// the context.
fn put_back(session: &AgentSession, answer: AssistantMessage) {
    let agent = session.agent();
    let mut messages = agent.messages();
    messages.push(Message::Assistant(answer));
    agent.set_messages(messages);
}

/// The last message if it is the model's.
fn last_answer(messages: &[Message]) -> Option<AssistantMessage> {
    match messages.last()? {
        Message::Assistant(answer) => Some(answer.clone()),
        _ => None,
    }
}

/// Takes the failed answer out of the context (it is not sent again; its
/// tool calls never run).
fn drop_failed_answer(session: &AgentSession) {
    let agent = session.agent();
    let mut messages = agent.messages();
    if matches!(messages.last(), Some(Message::Assistant(a)) if is_failed(a)) {
        messages.pop();
        agent.set_messages(messages);
    }
}

/// An answer that failed: an error, or a stop at the length limit before
/// any output (the overflow of a full context); the run cannot go on from
/// it, and it is not sent again.
fn is_failed(answer: &AssistantMessage) -> bool {
    match answer.stop_reason {
        StopReason::Error => true,
        StopReason::Length => answer.usage.output == 0,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use agent_ai::ErrorKind;

    use super::*;

    fn answer(stop_reason: StopReason, error: Option<(&str, ErrorKind)>) -> AssistantMessage {
        let mut message = AssistantMessage::empty(&Model::new("m", "p", "a"));
        message.stop_reason = stop_reason;
        if let Some((text, kind)) = error {
            message.error_message = Some(text.to_owned());
            message.error_kind = Some(kind);
        }
        message
    }

    fn busy() -> AssistantMessage {
        answer(
            StopReason::Error,
            Some((
                "503 busy",
                ErrorKind::Status {
                    status: 503,
                    error_type: None,
                    retry_after: None,
                },
            )),
        )
    }

    #[test]
    fn transient_failures_are_retried_with_backoff_until_the_retries_are_used_up() {
        let settings = RecoverySettings::default();
        let mut chain = Chain::default();
        let steps: Vec<Next> = (0..4)
            .map(|_| chain.next(&busy(), &settings, 100_000, 10))
            .collect();
        assert_eq!(
            steps,
            [
                Next::Retry(Duration::from_secs(2)),
                Next::Retry(Duration::from_secs(4)),
                Next::Retry(Duration::from_secs(8)),
                Next::RetriesExhausted
            ]
        );
    }

    #[test]
    fn a_server_asking_for_a_longer_wait_than_allowed_is_not_retried() {
        let limited = |after: u64| {
            answer(
                StopReason::Error,
                Some((
                    "429 rate limited",
                    ErrorKind::Status {
                        status: 429,
                        error_type: None,
                        retry_after: Some(Duration::from_secs(after)),
                    },
                )),
            )
        };
        let settings = RecoverySettings::default();
        let mut chain = Chain::default();
        assert_eq!(
            chain.next(&limited(86_400), &settings, 100_000, 10),
            Next::Stop
        );
        assert_eq!(
            chain.next(&limited(30), &settings, 100_000, 10),
            Next::Retry(Duration::from_secs(30))
        );
        // After a retry began, the run ends too (reporting the retries'
        // end); the answer was saved as it came.
        assert_eq!(
            chain.next(&limited(86_400), &settings, 100_000, 10),
            Next::Stop
        );
    }

    #[test]
    fn one_overflow_is_compacted_and_retried_a_second_is_not() {
        let overflow = answer(
            StopReason::Error,
            Some(("400 prompt is too long", ErrorKind::Other)),
        );
        let settings = RecoverySettings::default();
        let mut chain = Chain::default();
        assert_eq!(
            chain.next(&overflow, &settings, 100_000, 10),
            Next::RecoverOverflow
        );
        chain.overflow_recovered = true;
        assert_eq!(
            chain.next(&overflow, &settings, 100_000, 10),
            Next::OverflowAgain
        );
    }

    #[test]
    fn with_auto_compaction_off_an_overflow_ends_the_run() {
        let mut settings = RecoverySettings::default();
        settings.compaction.enabled = false;
        let overflow = answer(
            StopReason::Error,
            Some(("400 prompt is too long", ErrorKind::Other)),
        );
        let mut whole = answer(StopReason::Stop, None);
        whole.usage.input = 9000;
        for answer in [overflow, whole] {
            assert_eq!(
                Chain::default().next(&answer, &settings, 8192, 9000),
                Next::Stop
            );
        }
    }

    #[test]
    fn a_whole_answer_past_the_window_stands_and_an_empty_cut_one_is_asked_again() {
        let settings = RecoverySettings::default();
        let mut chain = Chain::default();
        let mut whole = answer(StopReason::Stop, None);
        whole.usage.input = 9000;
        assert_eq!(chain.next(&whole, &settings, 8192, 9000), Next::Compact);
        chain.overflow_recovered = true;
        assert_eq!(chain.next(&whole, &settings, 8192, 9000), Next::Compact);
        assert!(!is_failed(&whole));

        let mut empty = answer(StopReason::Length, None);
        empty.usage.input = 8190;
        assert!(is_failed(&empty));
        let mut chain = Chain::default();
        assert_eq!(
            chain.next(&empty, &settings, 8192, 8190),
            Next::RecoverOverflow
        );
    }

    #[test]
    fn a_full_context_is_compacted_after_a_good_answer_only() {
        let settings = RecoverySettings::default();
        let mut chain = Chain::default();
        let done = answer(StopReason::Stop, None);
        assert_eq!(chain.next(&done, &settings, 8192, 7000), Next::Compact);
        assert_eq!(chain.next(&done, &settings, 8192, 1000), Next::Stop);
        let aborted = answer(StopReason::Aborted, None);
        assert_eq!(chain.next(&aborted, &settings, 8192, 7000), Next::Stop);
    }

    #[test]
    fn retries_off_means_a_failure_ends_the_run() {
        let mut settings = RecoverySettings::default();
        settings.retry.enabled = false;
        assert_eq!(
            Chain::default().next(&busy(), &settings, 100_000, 10),
            Next::Stop
        );
    }

    /// A model the known table has, and one it has not.
    fn claude_and_local() -> (Model, Model) {
        (
            Model::new("claude-sonnet-4-5", "anthropic", "anthropic-messages"),
            Model::new("my-model", "local", "openai-completions"),
        )
    }

    #[test]
    fn the_window_comes_from_settings_then_the_table_then_pis_default() {
        let mut settings = RecoverySettings::default();
        let (claude, local) = claude_and_local();
        assert_eq!(settings.window_for(&claude), 200_000);
        assert_eq!(settings.window_for(&local), 128_000);
        settings.context_window = Some(4096);
        assert_eq!(settings.window_for(&claude), 4096);
    }

    #[test]
    fn a_request_asks_for_a_quarter_of_the_window_or_the_max_tokens_setting() {
        let mut settings = RecoverySettings::default();
        let (claude, local) = claude_and_local();
        assert_eq!(settings.answer_limit(&claude), 50_000);
        assert_eq!(settings.answer_limit(&local), 32_000);
        settings.context_window = Some(8192);
        assert_eq!(settings.answer_limit(&local), 2048);
        settings.context_window = Some(512);
        assert_eq!(settings.answer_limit(&local), 256, "room for a tool call");
        settings.context_window = Some(8192);
        settings.max_tokens = Some(6000);
        assert_eq!(settings.answer_limit(&local), 6000, "the setting wins");
        settings.max_tokens = Some(1000);
        assert_eq!(settings.answer_limit(&local), 2048);
    }
}
