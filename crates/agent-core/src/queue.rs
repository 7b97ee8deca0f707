//! Steering and follow-up queues: messages waiting for the running loop.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};

use agent_ai::Message;

/// How many queued messages the loop takes at each poll.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum QueueMode {
    /// One per poll, so the model answers each in turn (Pi's default).
    #[default]
    OneAtATime,
    /// Everything queued, in one turn.
    All,
}

/// Messages queued for a running loop, shared between the loop and whoever
/// queues (cloning shares the queue).
///
/// The loop polls the steering queue after each turn (and once at the start of
/// a run), and the follow-up queue when it would otherwise stop. Steering never
/// interrupts a batch of tool calls (Pi 0.73.1).
#[derive(Debug, Clone, Default)]
pub struct MessageQueue {
    inner: Arc<Mutex<QueueState>>,
}

#[derive(Debug, Default)]
struct QueueState {
    mode: QueueMode,
    messages: VecDeque<Message>,
}

impl MessageQueue {
    /// An empty queue taking messages as `mode` says.
    pub fn new(mode: QueueMode) -> Self {
        MessageQueue {
            inner: Arc::new(Mutex::new(QueueState {
                mode,
                messages: VecDeque::new(),
            })),
        }
    }

    /// Queues a message.
    pub fn push(&self, message: impl Into<Message>) {
        self.lock().messages.push_back(message.into());
    }

    /// Takes what the next poll gets: the oldest message, or all of them.
    pub fn take(&self) -> Vec<Message> {
        let mut state = self.lock();
        match state.mode {
            QueueMode::OneAtATime => state.messages.pop_front().into_iter().collect(),
            QueueMode::All => state.messages.drain(..).collect(),
        }
    }

    /// The waiting messages, oldest first (a copy).
    pub fn messages(&self) -> Vec<Message> {
        self.lock().messages.iter().cloned().collect()
    }

    /// How many messages wait.
    pub fn len(&self) -> usize {
        self.lock().messages.len()
    }

    /// True when nothing waits.
    pub fn is_empty(&self) -> bool {
        self.lock().messages.is_empty()
    }

    /// Takes every waiting message, oldest first, whatever the mode (a
    /// user taking back what they queued).
    pub fn drain(&self) -> Vec<Message> {
        self.lock().messages.drain(..).collect()
    }

    /// Drops every waiting message.
    pub fn clear(&self) {
        self.lock().messages.clear();
    }

    /// Drops the `count` oldest waiting messages (all, when fewer wait),
    /// keeping those queued after them: what was queued before some point
    /// goes, what came since stays, in one step that no message queued
    /// meanwhile can slip into.
    pub fn drop_oldest(&self, count: usize) {
        let mut state = self.lock();
        let count = count.min(state.messages.len());
        state.messages.drain(..count);
    }

    /// Changes how many messages a poll takes.
    pub fn set_mode(&self, mode: QueueMode) {
        self.lock().mode = mode;
    }

    fn lock(&self) -> MutexGuard<'_, QueueState> {
        crate::sync::lock(&self.inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_ai::{UserContent, UserMessage};

    fn texts(queue: &MessageQueue) -> Vec<String> {
        queue
            .messages()
            .into_iter()
            .map(|message| match message {
                Message::User(UserMessage {
                    content: UserContent::Text(text),
                    ..
                }) => text,
                other => panic!("{other:?}"),
            })
            .collect()
    }

    #[test]
    fn drop_oldest_keeps_what_came_after() {
        let queue = MessageQueue::new(QueueMode::OneAtATime);
        for text in ["before 1", "before 2", "after"] {
            queue.push(UserMessage::text(text));
        }
        queue.drop_oldest(2);
        assert_eq!(texts(&queue), ["after"]);
        queue.drop_oldest(5);
        assert!(queue.is_empty());
    }
}
