//! A subscriber's queue of events, and what it keeps of a streaming
//! message's updates while its reader is behind.
//!
//! Every [`AgentEvent::MessageUpdate`] carries the message so far, shared
//! with the provider (the event's `partial`, an `Arc`). The provider
//! appends each delta in place while no one else holds its message; an
//! update waiting in a queue does hold it, so the next delta copies the
//! whole message. A queue of every update that is read only after the run
//! therefore holds a copy per delta: a 200,000-character answer in
//! 20-character deltas took 1 GB (12 MB without the subscriber). A
//! [`Listener`] queues an update only as its [`Updates`] say.

use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::task::{Context as TaskContext, Poll};

use agent_ai::{AssistantContent, AssistantMessage, AssistantMessageEvent};
use futures::Stream;
use tokio::sync::mpsc;

use crate::event::AgentEvent;
use crate::sync::lock;

/// Which updates of a streaming message a subscriber gets; every other
/// event it gets as it came, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Updates {
    /// Every one, as it came. Each one waiting to be read holds the
    /// message so far, which the provider then copies for its next
    /// delta: for a reader that keeps up, or a short answer.
    #[default]
    Every,
    /// Every one while the reader keeps up; once it is 32 events behind,
    /// consecutive deltas of one block wait merged into one
    /// update: the same text, fewer copies. For a reader that passes the
    /// deltas on (a JSON stream).
    Merged,
    /// Only the newest not yet received, with the text of every delta
    /// since the last one received: for a view that draws the message so
    /// far. Its memory stays bounded however far the stream outruns it.
    Newest,
    /// None: for a reader that takes each message at its `message_end`
    /// (or reads after the run). It holds no message the provider streams.
    None,
}

/// How far behind an [`Updates::Merged`] reader may fall, in events,
/// before the deltas of one block that wait are merged into one update.
const MERGE_BACKLOG: usize = 32;

/// An event that may be an update of a streaming message: what a
/// [`Listener`] merges or leaves out. An agent's own events are; an
/// embedder merging its own events with them into one stream implements
/// it for its event type.
pub trait StreamedEvent {
    /// The provider's event, when this is an update of a streaming message.
    fn message_update(&mut self) -> Option<&mut AssistantMessageEvent>;
}

impl StreamedEvent for AgentEvent {
    fn message_update(&mut self) -> Option<&mut AssistantMessageEvent> {
        match self {
            AgentEvent::MessageUpdate {
                assistant_message_event,
            } => Some(assistant_message_event),
            _ => None,
        }
    }
}

/// What a subscriber's queue holds.
#[derive(Debug)]
enum Queued<E> {
    Event(E),
    /// The update waiting in the subscriber's slot ([`Listener::slot`]), if
    /// the slot still holds the update this marker was queued for (a later
    /// event may have sent it on already).
    Latest(u64),
}

/// The message update a subscriber has not received yet, and the number
/// of the marker queued for it.
#[derive(Debug)]
struct Slot<E> {
    marker: u64,
    update: Option<E>,
    /// For a subscriber of the newest update: the deltas of `update`'s
    /// block that came after it, kept here rather than in an update of
    /// their own. Holding their message would make the provider copy the
    /// whole of it at its next delta (a 1.5 MB answer in 20-character
    /// deltas took 15.8 s of CPU in the terminal UI), so it is held weakly.
    later: Option<Later>,
}

impl<E> Default for Slot<E> {
    fn default() -> Self {
        Slot {
            marker: 0,
            update: None,
            later: None,
        }
    }
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

impl<E: StreamedEvent> Slot<E> {
    /// The waiting update, brought up to date: with the message of the
    /// deltas merged into it when the provider still has that message, else
    /// with their text appended to its own, older one (a tool call's
    /// arguments, parsed by the provider, then stay as they were until the
    /// next update).
    fn take_update(&mut self) -> Option<E> {
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

/// Where one subscriber's events go: the sending half of a queue made by
/// [`Listener::new`], whose [`Events`] the subscriber reads. Clones send
/// to the same queue.
#[derive(Debug, Clone)]
pub struct Listener<E> {
    sender: mpsc::UnboundedSender<Queued<E>>,
    /// Updates wait here while the subscriber is behind (unless it gets
    /// [`Updates::Every`] one), so that of a fast stream (a proxy
    /// delivering 64 KB at once, a tool call's arguments in 30-character
    /// pieces) it holds one message, not thousands: memory grew with the
    /// square of the message (1 GB for 80 KB of text in 10,000 deltas;
    /// 2.8 GB for a 300 KB `write` in `--mode json`). A subscriber of the
    /// newest update holds only the first of a run of deltas; see
    /// [`Slot::later`].
    slot: Arc<Mutex<Slot<E>>>,
    updates: Updates,
    /// Events queued and not yet received.
    backlog: Arc<AtomicUsize>,
}

impl<E: StreamedEvent> Listener<E> {
    /// An unbounded queue whose reader gets `updates`.
    pub fn new(updates: Updates) -> (Listener<E>, Events<E>) {
        let (sender, receiver) = mpsc::unbounded_channel();
        let slot = Arc::default();
        let backlog = Arc::default();
        let events = Events {
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

    /// Queues `event`; false once the reader is gone.
    pub fn send(&self, mut event: E) -> bool {
        let update = event.message_update().is_some();
        if update && self.updates == Updates::None {
            return !self.sender.is_closed();
        }
        let mut slot = lock(&self.slot);
        let slot = &mut *slot;
        let waits = update
            && (self.updates == Updates::Newest
                || (self.updates == Updates::Merged
                    && self.backlog.load(Ordering::Relaxed) >= MERGE_BACKLOG));
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

    fn queue(&self, queued: Queued<E>) -> bool {
        self.backlog.fetch_add(1, Ordering::Relaxed);
        self.sender.send(queued).is_ok()
    }
}

/// Puts the delta of `waiting` before the delta of `event` when both add
/// to the same block (`event` then stands for both: it carries the newer
/// message); false, and nothing changed, when they do not.
fn prepend_delta<E: StreamedEvent>(waiting: &mut E, event: &mut E) -> bool {
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
fn block_delta<E: StreamedEvent>(event: &mut E) -> Option<BlockDelta<'_>> {
    match event.message_update()? {
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

/// The events a [`Listener`] queued, in order, as a [`Stream`].
#[derive(Debug)]
pub struct Events<E> {
    receiver: mpsc::UnboundedReceiver<Queued<E>>,
    slot: Arc<Mutex<Slot<E>>>,
    backlog: Arc<AtomicUsize>,
}

/// The events of an agent's runs; see [`crate::Agent::subscribe`].
pub type AgentEvents = Events<AgentEvent>;

impl<E: StreamedEvent> Events<E> {
    /// The next event; `None` once every [`Listener`] is gone (the agent is).
    pub async fn recv(&mut self) -> Option<E> {
        std::future::poll_fn(|cx| self.poll_event(cx)).await
    }

    /// The next event if one is waiting, without waiting.
    pub fn try_recv(&mut self) -> Option<E> {
        loop {
            let queued = self.receiver.try_recv().ok()?;
            if let Some(event) = self.take(queued) {
                return Some(event);
            }
        }
    }

    fn poll_event(&mut self, cx: &mut TaskContext<'_>) -> Poll<Option<E>> {
        loop {
            let Some(queued) = std::task::ready!(self.receiver.poll_recv(cx)) else {
                return Poll::Ready(None);
            };
            if let Some(event) = self.take(queued) {
                return Poll::Ready(Some(event));
            }
        }
    }

    /// The event `queued` stands for; `None` for an update a later event
    /// already delivered.
    fn take(&self, queued: Queued<E>) -> Option<E> {
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

impl<E: StreamedEvent> Stream for Events<E> {
    type Item = E;

    fn poll_next(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Option<E>> {
        self.get_mut().poll_event(cx)
    }
}

#[cfg(test)]
mod tests {
    use agent_ai::testing::ScriptedProvider;
    use agent_ai::{AssistantMessageEvent, TextContent};

    use super::*;

    fn update(event: AssistantMessageEvent) -> AgentEvent {
        AgentEvent::MessageUpdate {
            assistant_message_event: Box::new(event),
        }
    }

    /// A provider streaming text the way the HTTP ones do: it keeps its
    /// message and appends each delta in place (`Arc::make_mut`), so it
    /// copies the whole message whenever a subscriber still holds it.
    struct Streamer {
        message: Arc<AssistantMessage>,
    }

    impl Streamer {
        fn new() -> Streamer {
            let text = AssistantContent::Text(TextContent {
                text: String::new(),
                text_signature: None,
            });
            Streamer {
                message: Arc::new(ScriptedProvider::reply(vec![text])),
            }
        }

        /// Appends `piece` to the text, as the provider's next delta does.
        fn append(&mut self, piece: &str) {
            match &mut Arc::make_mut(&mut self.message).content[0] {
                AssistantContent::Text(text) => text.text.push_str(piece),
                _ => unreachable!(),
            }
        }

        /// Appends `piece` and sends its delta.
        fn delta(&mut self, listener: &Listener<AgentEvent>, piece: &str) {
            self.append(piece);
            assert!(listener.send(update(AssistantMessageEvent::TextDelta {
                content_index: 0,
                delta: piece.into(),
                partial: Arc::clone(&self.message),
            })));
        }
    }

    /// The text and delta of a received update.
    fn text_and_delta(event: Option<AgentEvent>) -> (String, String) {
        let mut event = event.expect("an update");
        let text = match &event {
            AgentEvent::MessageUpdate {
                assistant_message_event,
            } => assistant_message_event.message().text(),
            other => panic!("not an update: {other:?}"),
        };
        let delta = block_delta(&mut event).expect("a delta").text.clone();
        (text, delta)
    }

    /// A coalescing subscriber gets of a run of updates only the newest
    /// waiting, and every other event in order; one of every update gets
    /// all; one of none, none.
    #[test]
    fn a_subscriber_gets_the_updates_it_asked_for_and_every_other_event() {
        let seen = |updates: Updates| {
            let (listener, mut events) = Listener::new(updates);
            let mut stream = Streamer::new();
            for piece in ["a", "b", "c"] {
                stream.delta(&listener, piece);
            }
            assert!(listener.send(AgentEvent::AgentStart));
            stream.delta(&listener, "d");
            let mut seen = Vec::new();
            while let Some(event) = events.try_recv() {
                seen.push(match event {
                    AgentEvent::MessageUpdate {
                        assistant_message_event,
                    } => assistant_message_event.message().text(),
                    _ => "other".to_owned(),
                });
            }
            seen
        };
        assert_eq!(seen(Updates::Newest), ["abc", "other", "abcd"]);
        let every = ["a", "ab", "abc", "other", "abcd"];
        assert_eq!(seen(Updates::Every), every);
        assert_eq!(seen(Updates::Merged), every, "not behind: every one");
        assert_eq!(seen(Updates::None), ["other"]);
    }

    /// A subscriber of every delta that falls behind gets the deltas of a
    /// block merged, not dropped: the text is whole, the copies of the
    /// message fewer. (A 300 KB `write` in coding-agent's `--mode json`
    /// held 2.8 GB.)
    #[test]
    fn a_subscriber_far_behind_gets_every_delta_merged_by_block() {
        let delta = |index: usize, text: &str| {
            let partial = Arc::new(ScriptedProvider::reply(Vec::new()));
            update(if index == 0 {
                AssistantMessageEvent::TextDelta {
                    content_index: 0,
                    delta: text.into(),
                    partial,
                }
            } else {
                AssistantMessageEvent::ToolCallDelta {
                    content_index: index,
                    delta: text.into(),
                    partial,
                }
            })
        };
        let (listener, mut events) = Listener::new(Updates::Merged);
        let pieces: Vec<String> = (0..200).map(|n| format!("{n},")).collect();
        for piece in &pieces {
            assert!(listener.send(delta(0, piece)));
        }
        for piece in ["{\"a\"", ":1}"] {
            assert!(listener.send(delta(1, piece)));
        }
        assert!(listener.send(AgentEvent::AgentEnd {
            messages: Vec::new()
        }));
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

    /// A subscriber that draws the message and is behind the stream must
    /// not hold the provider's message: while it did, every delta made the
    /// provider copy the whole message to append to it (a 1.5 MB answer in
    /// 20-character deltas took 15.8 s of CPU in coding-agent's terminal
    /// UI). What it receives is still the newest message, with every delta
    /// since the last update it received.
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

    /// The reader waits for the next event, an update in the slot included,
    /// and sees the end once the listener is gone.
    #[tokio::test]
    async fn recv_waits_for_the_waiting_update_and_ends_with_the_listener() {
        let (listener, mut events) = Listener::new(Updates::Newest);
        let mut stream = Streamer::new();
        stream.delta(&listener, "a");
        stream.delta(&listener, "b");
        let first = events.recv().await;
        assert_eq!(text_and_delta(first), ("ab".to_owned(), "ab".to_owned()));
        drop(listener);
        assert!(events.recv().await.is_none());
    }
}
