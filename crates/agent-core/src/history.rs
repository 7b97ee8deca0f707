//! The conversation: one owner, shared by the loop, the [`crate::Agent`]
//! handle and every request to the model.
//!
//! Every request sends the whole history, so copying it per request (and once
//! more per reader) would make a long session cost more per turn as it grows,
//! beyond the request body itself. Here the messages sit behind one `Arc`: a
//! request or a reader takes a [`History::snapshot`] (a pointer copy), and a
//! push copies the vector only while an older snapshot is still held
//! (copy-on-write), which the loop avoids by dropping each request's stream
//! before it appends the answer.

use std::sync::{Arc, Mutex, MutexGuard};

use agent_ai::Message;

/// A handle to the conversation; clones share it.
#[derive(Debug, Clone, Default)]
pub struct History {
    messages: Arc<Mutex<Arc<Vec<Message>>>>,
}

impl History {
    /// A conversation holding `messages`.
    pub fn new(messages: Vec<Message>) -> Self {
        History {
            messages: Arc::new(Mutex::new(Arc::new(messages))),
        }
    }

    /// The messages as they are now; later pushes do not change it.
    pub fn snapshot(&self) -> Arc<Vec<Message>> {
        Arc::clone(&self.lock())
    }

    /// Appends a message.
    pub fn push(&self, message: Message) {
        Arc::make_mut(&mut self.lock()).push(message);
    }

    /// Replaces the whole conversation.
    pub fn replace(&self, messages: Vec<Message>) {
        *self.lock() = Arc::new(messages);
    }

    /// How many messages it holds.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// True when it holds no message.
    pub fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }

    fn lock(&self) -> MutexGuard<'_, Arc<Vec<Message>>> {
        crate::sync::lock(&self.messages)
    }
}

impl From<Vec<Message>> for History {
    fn from(messages: Vec<Message>) -> Self {
        History::new(messages)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_ai::UserMessage;

    fn user(text: &str) -> Message {
        UserMessage::text(text).into()
    }

    #[test]
    fn a_snapshot_keeps_what_it_saw_and_clones_share_the_rest() {
        // Made once: two `user("a")` made in different milliseconds differ.
        let (a, b) = (user("a"), user("b"));
        let history = History::new(vec![a.clone()]);
        let shared = history.clone();
        let before = history.snapshot();
        shared.push(b.clone());
        assert_eq!(before.len(), 1);
        assert_eq!(history.len(), 2);
        assert_eq!(*history.snapshot(), vec![a, b]);
    }

    #[test]
    fn a_push_with_no_snapshot_out_does_not_copy_the_messages() {
        let history = History::new(vec![user("a")]);
        let first = Arc::as_ptr(&history.snapshot());
        history.push(user("b"));
        assert_eq!(Arc::as_ptr(&history.snapshot()), first);
    }
}
