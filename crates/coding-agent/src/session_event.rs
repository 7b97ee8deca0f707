//! What a session tells its modes: the agent's events, and the session's
//! own around them (auto-retry, compaction), in one ordered stream so a mode
//! shows `auto_retry_start` after the failed turn's `agent_end` and before
//! the retry's `agent_start`.

use agent_ai::{AssistantContent, AssistantMessage, AssistantMessageEvent, ThinkingLevel};
use agent_core::AgentEvent;
use serde::Serialize;
use serde_json::Value;
use serde_with::skip_serializing_none;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;
use tokio::sync::mpsc;

use crate::guard::record::CallDecision;
use crate::modes::events::event_json;
use crate::session::CompactionResult;
use crate::support::sync::lock;

/// Why a compaction runs (Pi's `reason`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CompactionReason {
    /// `/compact` or RPC `compact`.
    Manual,
    /// The context passed `contextWindow - reserveTokens`.
    Threshold,
    /// The provider said the context is too long.
    Overflow,
}

/// One event of a session. Its JSON shape (Pi's, what RPC and `--mode json`
/// write) is derived: `type` is the variant's name in snake case, the
/// fields are camel case, and a missing optional field is left out.
#[skip_serializing_none]
#[derive(Debug, Clone, Serialize)]
#[serde(
    tag = "type",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum SessionEvent {
    /// The agent's own (written by [`event_json`]).
    #[serde(skip)]
    Agent(Box<AgentEvent>),
    /// A failed turn will be asked again after `delay_ms`.
    AutoRetryStart {
        /// 1 for the first retry.
        attempt: u32,
        /// `retry.maxRetries`.
        max_attempts: u32,
        /// The wait before it.
        delay_ms: u64,
        /// Why the turn failed.
        error_message: String,
    },
    /// The retries ended: a turn succeeded, or they were used up or cancelled.
    AutoRetryEnd {
        /// A retried turn succeeded.
        success: bool,
        /// The retries made.
        attempt: u32,
        /// The last error, when they failed (`Retry cancelled` when cancelled).
        final_error: Option<String>,
        /// The failed answer, saved now that no retry replaces it.
        #[serde(skip)]
        failed: Option<Box<AssistantMessage>>,
    },
    /// What waits in the steering and follow-up queues changed.
    QueueUpdate {
        /// The steering messages' texts, oldest first.
        steering: Vec<String>,
        /// The follow-up messages' texts, oldest first.
        follow_up: Vec<String>,
    },
    /// The permission guard decided about a tool call.
    PermissionDecision(CallDecision),
    /// A compaction started.
    CompactionStart {
        /// Why.
        reason: CompactionReason,
    },
    /// A compaction that summarises its history in several requests (one
    /// too long for a single one) finished one of them. Not Pi's: its
    /// compactions are one request.
    CompactionProgress {
        /// Requests answered so far.
        done: usize,
        /// Requests in all.
        of: usize,
    },
    /// A compaction ended.
    CompactionEnd {
        /// Why it ran.
        reason: CompactionReason,
        /// The summary and what was kept, when it succeeded.
        result: Option<CompactionResult>,
        /// It was cancelled.
        aborted: bool,
        /// The failed turn is asked again now (overflow recovery).
        will_retry: bool,
        /// What went wrong, when it failed.
        error_message: Option<String>,
    },
    /// The session's thinking level changed (Pi's `thinking_level_changed`).
    ThinkingLevelChanged {
        /// The new level.
        level: ThinkingLevel,
    },
}

impl SessionEvent {
    /// A line for a person (stderr in print mode, a notice in the terminal
    /// UI), for the session's own events; `None` for the agent's and for a
    /// quiet ending.
    pub fn describe(&self) -> Option<String> {
        Some(match self {
            SessionEvent::Agent(_)
            | SessionEvent::QueueUpdate { .. }
            | SessionEvent::PermissionDecision(_)
            | SessionEvent::ThinkingLevelChanged { .. } => return None,
            SessionEvent::AutoRetryStart {
                attempt,
                max_attempts,
                delay_ms,
                error_message,
            } => format!(
                "Retrying ({attempt}/{max_attempts}) in {}: {error_message}",
                agent_ai::providers::retry::seconds(Duration::from_millis(*delay_ms))
            ),
            SessionEvent::AutoRetryEnd {
                success: true,
                attempt,
                ..
            } => format!("Retry {attempt} succeeded"),
            SessionEvent::AutoRetryEnd {
                attempt,
                final_error,
                ..
            } => match final_error.as_deref() {
                Some(crate::recovery::RETRY_CANCELLED) => {
                    format!("Retry cancelled after {}", attempts(*attempt))
                }
                error => format!(
                    "{}: {}",
                    retry_failed(*attempt),
                    error.unwrap_or("unknown error")
                ),
            },
            SessionEvent::CompactionStart { reason } => match reason {
                CompactionReason::Manual => "Compacting context...",
                CompactionReason::Threshold => "Auto-compacting...",
                CompactionReason::Overflow => "Context overflow detected, auto-compacting...",
            }
            .to_owned(),
            SessionEvent::CompactionProgress { done, of } => {
                format!("Compaction: {done} of {of} summary requests done")
            }
            SessionEvent::CompactionEnd {
                result: Some(result),
                ..
            } => format!("Compacted from {} tokens", grouped(result.tokens_before)),
            SessionEvent::CompactionEnd {
                error_message: Some(error),
                ..
            } => error.clone(),
            // Pi's two texts: the user's own compaction, or one the session
            // started (at the threshold, on an overflow).
            SessionEvent::CompactionEnd {
                aborted: true,
                reason,
                ..
            } => match reason {
                CompactionReason::Manual => "Compaction cancelled",
                CompactionReason::Threshold | CompactionReason::Overflow => {
                    "Auto-compaction cancelled"
                }
            }
            .to_owned(),
            SessionEvent::CompactionEnd { .. } => return None,
        })
    }

    /// The retries of a turn ran out: it failed every time. Not when they
    /// succeeded, nor when the user cancelled them.
    pub fn retries_exhausted(&self) -> bool {
        matches!(
            self,
            SessionEvent::AutoRetryEnd {
                success: false,
                final_error,
                ..
            } if final_error.as_deref() != Some(crate::recovery::RETRY_CANCELLED)
        )
    }

    /// The context overflowed and compacting it failed (or it overflowed
    /// again after one compaction): the turn is not asked again.
    pub fn overflow_recovery_failed(&self) -> bool {
        matches!(
            self,
            SessionEvent::CompactionEnd {
                reason: CompactionReason::Overflow,
                error_message: Some(_),
                ..
            }
        )
    }

    /// The event in Pi's JSON shape (what RPC and `--mode json` write).
    pub fn to_json(&self) -> Value {
        match self {
            SessionEvent::Agent(event) => event_json(event),
            own => serde_json::to_value(own).unwrap_or_default(),
        }
    }
}

/// What a subscriber's queue holds.
#[derive(Debug)]
pub(crate) enum Queued {
    Event(SessionEvent),
    /// The update of the streaming message waiting in the subscriber's
    /// slot ([`Listener::slot`]), if the slot still holds the update this
    /// marker was queued for (a later event may have sent it on already).
    Latest(u64),
}

/// The message update a subscriber has not received yet, and the number
/// of the marker queued for it.
#[derive(Debug, Default)]
struct Slot {
    marker: u64,
    update: Option<SessionEvent>,
    /// For a subscriber of the newest update: the deltas of `update`'s
    /// block that came after it, kept here rather than in an update of
    /// their own. Holding their message would make the provider copy the
    /// whole of it at its next delta (a 1.5 MB answer in 20-character
    /// deltas took 15.8 s of CPU in the terminal UI), so it is held weakly.
    later: Option<Later>,
}

/// Deltas merged into a waiting update.
#[derive(Debug)]
struct Later {
    /// Their text, in order.
    text: String,
    /// The message the newest came with, while the provider still has it
    /// as it was: a provider changes its message only to send an event
    /// (`AssistantMessageEvent`'s contract), so the reference fails only
    /// once a newer event is on its way.
    message: Weak<AssistantMessage>,
}

impl Slot {
    /// The waiting update, brought up to date: with the message of the
    /// deltas merged into it when the provider still has that message, else
    /// with their text appended to its own, older one (a tool call's
    /// arguments, parsed by the provider, then stay as they were until the
    /// next update).
    fn take_update(&mut self) -> Option<SessionEvent> {
        let mut update = self.update.take()?;
        if let Some(later) = self.later.take()
            && let Some(delta) = block_delta(&mut update)
        {
            delta.text.push_str(&later.text);
            match later.message.upgrade() {
                Some(newest) => *delta.partial = newest,
                None => delta.append_to_message(&later.text),
            }
        }
        Some(update)
    }
}

/// Which updates of a streaming message a subscriber gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Updates {
    /// Every one (merged by block once the subscriber is far behind).
    All,
    /// Only the newest not yet received.
    Newest,
    /// None: the subscriber reads the message at its end.
    None,
}

/// How far behind a subscriber of every update may fall, in events, before
/// the deltas of one block that wait are merged into one update.
const MERGE_BACKLOG: usize = 32;

/// Where one subscriber's events go.
#[derive(Debug, Clone)]
pub(crate) struct Listener {
    sender: mpsc::UnboundedSender<Queued>,
    /// Updates of the streaming message wait here while the subscriber is
    /// behind. Every update carries the whole message so far, and a fast
    /// stream (a proxy delivering 64 KB at once, a tool call's arguments
    /// in 30-character pieces) queued thousands of them, each a copy:
    /// memory grew with the square of the message (1 GB for 80 KB of text
    /// in 10,000 deltas; 2.8 GB for a 300 KB `write` in `--mode json`, and
    /// a 30 MB one was killed for memory). A subscriber that draws the
    /// message gets only the newest update ([`Updates::Newest`]); one
    /// that reads every delta (`--mode json`, RPC) gets them all, but once
    /// it is [`MERGE_BACKLOG`] events behind, consecutive deltas of one
    /// block wait merged into one update: the same text, fewer copies.
    /// (The message is shared, not copied, but an update that waits
    /// holds it: the provider then copies it to append the next delta. A
    /// subscriber of the newest update holds only the first of a run of
    /// deltas; see [`Slot::later`].)
    slot: Arc<Mutex<Slot>>,
    updates: Updates,
    /// Events queued and not yet received.
    backlog: Arc<AtomicUsize>,
}

impl Listener {
    /// A queue for `SessionEvents` that gets `updates`.
    pub(crate) fn new(updates: Updates) -> (Listener, SessionEvents) {
        let (sender, receiver) = mpsc::unbounded_channel();
        let slot = Arc::default();
        let backlog = Arc::default();
        let events = SessionEvents {
            receiver,
            slot: Arc::clone(&slot),
            backlog: Arc::clone(&backlog),
        };
        let listener = Listener {
            sender,
            slot,
            updates,
            backlog,
        };
        (listener, events)
    }

    /// Queues `event`; false once the subscriber is gone.
    pub(crate) fn send(&self, event: SessionEvent) -> bool {
        let update = is_update(&event);
        if update && self.updates == Updates::None {
            return !self.sender.is_closed();
        }
        let mut slot = lock(&self.slot);
        let slot = &mut *slot;
        let waits = update
            && (self.updates == Updates::Newest
                || self.backlog.load(Ordering::Relaxed) >= MERGE_BACKLOG);
        if !waits {
            // The update waiting goes first: events stay in order.
            if let Some(pending) = slot.take_update()
                && !self.queue(Queued::Event(pending))
            {
                return false;
            }
            return self.queue(Queued::Event(event));
        }
        let event = match slot.update.take() {
            None => event,
            // Its marker is queued already.
            Some(mut waiting) if self.updates == Updates::Newest => {
                let mut event = event;
                slot.update = Some(match (block_delta(&mut waiting), block_delta(&mut event)) {
                    (Some(earlier), Some(delta)) if earlier.block == delta.block => {
                        let later = slot.later.get_or_insert_with(|| Later {
                            text: String::new(),
                            message: Weak::new(),
                        });
                        later.text.push_str(delta.text);
                        later.message = Arc::downgrade(delta.partial);
                        waiting
                    }
                    _ => {
                        slot.later = None;
                        event
                    }
                });
                return true;
            }
            Some(mut waiting) => {
                let mut event = event;
                if prepend_delta(&mut waiting, &mut event) {
                    slot.update = Some(event);
                    return true;
                }
                if !self.queue(Queued::Event(waiting)) {
                    return false;
                }
                event
            }
        };
        slot.update = Some(event);
        slot.marker += 1;
        self.queue(Queued::Latest(slot.marker))
    }

    fn queue(&self, queued: Queued) -> bool {
        self.backlog.fetch_add(1, Ordering::Relaxed);
        self.sender.send(queued).is_ok()
    }
}

/// Whether `event` is an update of the streaming message.
fn is_update(event: &SessionEvent) -> bool {
    matches!(event, SessionEvent::Agent(agent) if matches!(**agent, AgentEvent::MessageUpdate { .. }))
}

/// Puts the delta of `waiting` before the delta of `event` when both add
/// to the same block (`event` then stands for both: it carries the newer
/// message); false, and nothing changed, when they do not.
fn prepend_delta(waiting: &mut SessionEvent, event: &mut SessionEvent) -> bool {
    match (block_delta(waiting), block_delta(event)) {
        (Some(earlier), Some(later)) if earlier.block == later.block => {
            later.text.insert_str(0, earlier.text);
            true
        }
        _ => false,
    }
}

/// The kind of content block a delta adds to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BlockKind {
    Text,
    Thinking,
    ToolCall,
}

/// A delta update, opened up.
struct BlockDelta<'a> {
    /// The block it adds to: its kind and index.
    block: (BlockKind, usize),
    /// The text it adds.
    text: &'a mut String,
    /// The message with that text added.
    partial: &'a mut Arc<AssistantMessage>,
}

impl BlockDelta<'_> {
    /// Adds `text` to the block in the message, as the provider added it;
    /// a tool call's arguments are parsed by the provider and stay as
    /// they are.
    fn append_to_message(self, text: &str) {
        let (kind, index) = self.block;
        match (kind, Arc::make_mut(self.partial).content.get_mut(index)) {
            (BlockKind::Text, Some(AssistantContent::Text(block))) => block.text.push_str(text),
            (BlockKind::Thinking, Some(AssistantContent::Thinking(block))) => {
                block.thinking.push_str(text);
            }
            _ => {}
        }
    }
}

/// The block a delta update adds to, its text and its message.
fn block_delta(event: &mut SessionEvent) -> Option<BlockDelta<'_>> {
    let SessionEvent::Agent(agent) = event else {
        return None;
    };
    let AgentEvent::MessageUpdate {
        assistant_message_event,
        ..
    } = &mut **agent
    else {
        return None;
    };
    match &mut **assistant_message_event {
        AssistantMessageEvent::TextDelta {
            content_index,
            delta,
            partial,
        } => Some(BlockDelta {
            block: (BlockKind::Text, *content_index),
            text: delta,
            partial,
        }),
        AssistantMessageEvent::ThinkingDelta {
            content_index,
            delta,
            partial,
        } => Some(BlockDelta {
            block: (BlockKind::Thinking, *content_index),
            text: delta,
            partial,
        }),
        AssistantMessageEvent::ToolCallDelta {
            content_index,
            delta,
            partial,
        } => Some(BlockDelta {
            block: (BlockKind::ToolCall, *content_index),
            text: delta,
            partial,
        }),
        _ => None,
    }
}

/// The events of a session, in order; see [`crate::app::AgentSession::subscribe_all`].
#[derive(Debug)]
pub struct SessionEvents {
    receiver: mpsc::UnboundedReceiver<Queued>,
    slot: Arc<Mutex<Slot>>,
    backlog: Arc<AtomicUsize>,
}

impl SessionEvents {
    /// The next event; `None` once the session is gone.
    pub async fn recv(&mut self) -> Option<SessionEvent> {
        loop {
            let queued = self.receiver.recv().await?;
            if let Some(event) = self.take(queued) {
                return Some(event);
            }
        }
    }

    /// The next event if one is waiting, without waiting.
    pub fn try_recv(&mut self) -> Option<SessionEvent> {
        loop {
            let queued = self.receiver.try_recv().ok()?;
            if let Some(event) = self.take(queued) {
                return Some(event);
            }
        }
    }

    /// The event `queued` stands for; `None` for an update a later event
    /// already delivered.
    fn take(&self, queued: Queued) -> Option<SessionEvent> {
        self.backlog.fetch_sub(1, Ordering::Relaxed);
        match queued {
            Queued::Event(event) => Some(event),
            Queued::Latest(marker) => {
                let mut slot = lock(&self.slot);
                (slot.marker == marker)
                    .then(|| slot.take_update())
                    .flatten()
            }
        }
    }
}

/// How a failed retry's line begins: `Retry failed after 3 attempts`.
pub(crate) fn retry_failed(attempt: u32) -> String {
    format!("Retry failed after {}", attempts(attempt))
}

/// `1 attempt`, `3 attempts`.
fn attempts(n: u32) -> String {
    let noun = if n == 1 { "attempt" } else { "attempts" };
    format!("{n} {noun}")
}

/// `n` with its digits in groups of three (`12,345`), as Pi shows token
/// counts (`toLocaleString`).
pub(crate) fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::guard::Decision;
    use crate::guard::record::{DECISION_TYPE, DecidedBy};

    /// A coalescing subscriber gets of a run of updates only the newest
    /// waiting, and every other event in order; one of every update gets
    /// all; one of none, none.
    #[test]
    fn a_subscriber_gets_the_updates_it_asked_for_and_every_other_event() {
        let other = || SessionEvent::Agent(Box::new(AgentEvent::AgentStart));
        let seen = |updates: Updates| {
            let (listener, mut events) = Listener::new(updates);
            let mut stream = Streamer::new();
            for piece in ["a", "b", "c"] {
                stream.delta(&listener, piece);
            }
            assert!(listener.send(other()));
            stream.delta(&listener, "d");
            let mut seen = Vec::new();
            while let Some(event) = events.try_recv() {
                seen.push(match event {
                    SessionEvent::Agent(agent) => match *agent {
                        AgentEvent::MessageUpdate {
                            assistant_message_event,
                        } => assistant_message_event.message().text(),
                        _ => "other".to_owned(),
                    },
                    _ => unreachable!(),
                });
            }
            seen
        };
        assert_eq!(seen(Updates::Newest), ["abc", "other", "abcd"]);
        assert_eq!(seen(Updates::All), ["a", "ab", "abc", "other", "abcd"]);
        assert_eq!(seen(Updates::None), ["other"]);
    }

    /// A subscriber of every delta that falls behind gets the deltas of a
    /// block merged, not dropped: the text is whole, the copies of the
    /// message fewer. (A 300 KB `write` in `--mode json` held 2.8 GB.)
    #[test]
    fn a_subscriber_far_behind_gets_every_delta_merged_by_block() {
        let delta = |index: usize, text: &str| {
            let partial = Arc::new(agent_ai::testing::ScriptedProvider::reply(Vec::new()));
            let event = if index == 0 {
                agent_ai::AssistantMessageEvent::TextDelta {
                    content_index: 0,
                    delta: text.into(),
                    partial,
                }
            } else {
                agent_ai::AssistantMessageEvent::ToolCallDelta {
                    content_index: index,
                    delta: text.into(),
                    partial,
                }
            };
            SessionEvent::Agent(Box::new(AgentEvent::MessageUpdate {
                assistant_message_event: Box::new(event),
            }))
        };
        let (listener, mut events) = Listener::new(Updates::All);
        let pieces: Vec<String> = (0..200).map(|n| format!("{n},")).collect();
        for piece in &pieces {
            assert!(listener.send(delta(0, piece)));
        }
        for piece in ["{\"a\"", ":1}"] {
            assert!(listener.send(delta(1, piece)));
        }
        assert!(
            listener.send(SessionEvent::Agent(Box::new(AgentEvent::AgentEnd {
                messages: Vec::new()
            })))
        );
        let mut received = Vec::new();
        while let Some(mut event) = events.try_recv() {
            received.push(block_delta(&mut event).map(|delta| (delta.block, delta.text.clone())));
        }
        // The first MERGE_BACKLOG came one by one; the rest of the text
        // and then the call's arguments each came as one.
        assert_eq!(received.len(), MERGE_BACKLOG + 3, "{received:?}");
        assert!(
            received[..MERGE_BACKLOG]
                .iter()
                .all(|r| r.as_ref().is_some_and(|(b, _)| *b == (BlockKind::Text, 0)))
        );
        let text: String = received
            .iter()
            .flatten()
            .filter(|(block, _)| *block == (BlockKind::Text, 0))
            .map(|(_, text)| text.as_str())
            .collect();
        assert_eq!(text, pieces.concat());
        assert_eq!(
            received[MERGE_BACKLOG + 1],
            Some(((BlockKind::ToolCall, 1), "{\"a\":1}".to_owned()))
        );
        assert_eq!(received[MERGE_BACKLOG + 2], None, "then the other event");
    }

    /// A provider streaming text the way the HTTP ones do: it keeps its
    /// message and appends each delta in place (`Arc::make_mut`), so it
    /// copies the whole message whenever a subscriber still holds it.
    struct Streamer {
        message: Arc<AssistantMessage>,
    }

    impl Streamer {
        fn new() -> Streamer {
            let mut message = agent_ai::testing::ScriptedProvider::reply(Vec::new());
            message
                .content
                .push(agent_ai::AssistantContent::Text(agent_ai::TextContent {
                    text: String::new(),
                    text_signature: None,
                }));
            Streamer {
                message: Arc::new(message),
            }
        }

        /// Appends `piece` to the text, as the provider's next delta does.
        fn append(&mut self, piece: &str) {
            match &mut Arc::make_mut(&mut self.message).content[0] {
                agent_ai::AssistantContent::Text(text) => text.text.push_str(piece),
                _ => unreachable!(),
            }
        }

        /// Appends `piece` and sends its delta.
        fn delta(&mut self, listener: &Listener, piece: &str) {
            self.append(piece);
            let event = agent_ai::AssistantMessageEvent::TextDelta {
                content_index: 0,
                delta: piece.into(),
                partial: Arc::clone(&self.message),
            };
            assert!(
                listener.send(SessionEvent::Agent(Box::new(AgentEvent::MessageUpdate {
                    assistant_message_event: Box::new(event),
                })))
            );
        }
    }

    /// The text and delta of a received update.
    fn text_and_delta(event: Option<SessionEvent>) -> (String, String) {
        let mut event = event.expect("an update");
        let text = match &event {
            SessionEvent::Agent(agent) => match &**agent {
                AgentEvent::MessageUpdate {
                    assistant_message_event,
                } => assistant_message_event.message().text(),
                other => panic!("not an update: {other:?}"),
            },
            other => panic!("not an agent event: {other:?}"),
        };
        let delta = block_delta(&mut event).expect("a delta").text.clone();
        (text, delta)
    }

    /// A subscriber that draws the message and is behind the stream must
    /// not hold the provider's message: while it did, every delta made the
    /// provider copy the whole message to append to it (a 1.5 MB answer in
    /// 20-character deltas took 15.8 s of CPU in the terminal UI). What it
    /// receives is still the newest message, with every delta since the
    /// last update it received.
    #[test]
    fn a_drawing_subscriber_behind_the_stream_leaves_the_provider_its_message() {
        let (listener, mut events) = Listener::new(Updates::Newest);
        let mut stream = Streamer::new();
        stream.delta(&listener, "a");
        for piece in ["b", "c", "d"] {
            stream.delta(&listener, piece);
            assert_eq!(
                Arc::strong_count(&stream.message),
                1,
                "the subscriber holds the message sent with {piece:?}"
            );
        }
        assert_eq!(
            text_and_delta(events.try_recv()),
            ("abcd".to_owned(), "abcd".to_owned())
        );
        assert!(events.try_recv().is_none(), "one update for four deltas");

        // The provider moves on before the subscriber reads: it gets the
        // text of every delta it was sent, and the next delta comes as
        // an update of its own.
        stream.delta(&listener, "e");
        stream.delta(&listener, "f");
        stream.append("g");
        assert_eq!(
            text_and_delta(events.try_recv()),
            ("abcdef".to_owned(), "ef".to_owned())
        );
        stream.delta(&listener, "h");
        assert_eq!(
            text_and_delta(events.try_recv()),
            ("abcdefgh".to_owned(), "h".to_owned())
        );
    }

    #[test]
    fn token_counts_are_grouped_in_threes_as_pi_shows_them() {
        let shown: Vec<String> = [0, 999, 1000, 3508, 114_625, 1_234_567].map(grouped).into();
        assert_eq!(
            shown,
            ["0", "999", "1,000", "3,508", "114,625", "1,234,567"]
        );
    }

    /// Pi's TUI says which compaction was cancelled: the user's own, or
    /// one the session started.
    #[test]
    fn a_cancelled_compaction_says_whether_it_was_automatic() {
        let cancelled = |reason| {
            SessionEvent::CompactionEnd {
                reason,
                result: None,
                aborted: true,
                will_retry: false,
                error_message: None,
            }
            .describe()
        };
        assert_eq!(
            [
                CompactionReason::Manual,
                CompactionReason::Threshold,
                CompactionReason::Overflow
            ]
            .map(cancelled),
            [
                Some("Compaction cancelled".to_owned()),
                Some("Auto-compaction cancelled".to_owned()),
                Some("Auto-compaction cancelled".to_owned())
            ]
        );
    }

    /// The wait was rounded up to whole seconds: with `retry.baseDelayMs`
    /// 100, waits of 100, 200 and 400 ms all read "in 1s", beside the
    /// provider's own retry line saying "in 0.1s".
    #[test]
    fn a_retry_line_says_the_wait_as_the_providers_line_does() {
        let line = |delay_ms| {
            SessionEvent::AutoRetryStart {
                attempt: 1,
                max_attempts: 3,
                delay_ms,
                error_message: "503 busy".into(),
            }
            .describe()
        };
        assert_eq!(
            line(200).as_deref(),
            Some("Retrying (1/3) in 0.2s: 503 busy")
        );
        assert_eq!(
            line(1500).as_deref(),
            Some("Retrying (1/3) in 1.5s: 503 busy")
        );
        assert_eq!(
            line(4000).as_deref(),
            Some("Retrying (1/3) in 4s: 503 busy")
        );
        assert_eq!(
            line(40).as_deref(),
            Some("Retrying (1/3) in 40ms: 503 busy")
        );
    }

    #[test]
    fn session_events_have_pis_json_shapes() {
        let start = SessionEvent::AutoRetryStart {
            attempt: 1,
            max_attempts: 3,
            delay_ms: 2000,
            error_message: "503 busy".into(),
        };
        assert_eq!(
            start.to_json(),
            json!({"type":"auto_retry_start","attempt":1,"maxAttempts":3,"delayMs":2000,"errorMessage":"503 busy"})
        );
        let end = SessionEvent::AutoRetryEnd {
            success: true,
            attempt: 2,
            final_error: None,
            failed: None,
        };
        assert_eq!(
            end.to_json(),
            json!({"type":"auto_retry_end","success":true,"attempt":2})
        );
        let failed = SessionEvent::CompactionEnd {
            reason: CompactionReason::Overflow,
            result: None,
            aborted: false,
            will_retry: false,
            error_message: Some("E".into()),
        };
        assert_eq!(
            failed.to_json(),
            json!({"type":"compaction_end","reason":"overflow","aborted":false,"willRetry":false,"errorMessage":"E"})
        );
        let thinking = SessionEvent::ThinkingLevelChanged {
            level: ThinkingLevel::High,
        };
        assert_eq!(
            thinking.to_json(),
            json!({"type":"thinking_level_changed","level":"high"})
        );
        let queue = SessionEvent::QueueUpdate {
            steering: vec!["s".into()],
            follow_up: Vec::new(),
        };
        assert_eq!(
            queue.to_json(),
            json!({"type":"queue_update","steering":["s"],"followUp":[]})
        );
    }

    #[test]
    fn retries_are_exhausted_only_when_they_end_failed_and_not_cancelled() {
        let end = |success: bool, final_error: Option<&str>| SessionEvent::AutoRetryEnd {
            success,
            attempt: 3,
            final_error: final_error.map(str::to_owned),
            failed: None,
        };
        assert!(end(false, Some("503 busy")).retries_exhausted());
        assert!(!end(false, Some(crate::recovery::RETRY_CANCELLED)).retries_exhausted());
        assert!(!end(true, None).retries_exhausted());
        let start = SessionEvent::AutoRetryStart {
            attempt: 1,
            max_attempts: 3,
            delay_ms: 2000,
            error_message: "503 busy".into(),
        };
        assert!(!start.retries_exhausted());
    }

    #[test]
    fn a_permission_decision_is_its_record_tagged_as_the_session_file_tags_it() {
        let decision = CallDecision {
            tool_call_id: "c1".into(),
            tool_name: "bash".into(),
            decision: Decision::Deny,
            by: DecidedBy::Policy,
            reason: "no".into(),
            rule: None,
            answer: None,
            updated_input: None,
        };
        let mut expected = serde_json::to_value(&decision).unwrap_or_default();
        expected["type"] = DECISION_TYPE.into();
        assert_eq!(
            SessionEvent::PermissionDecision(decision).to_json(),
            expected
        );
    }
}
