//! One entry of a session file as the manager keeps it: the line as
//! written, and the few fields a walk of the tree reads without parsing the
//! rest (id, parent, type, a message's role). The rest is parsed when the
//! entry is read, one entry at a time: a day's session file runs to many
//! megabytes, and holding every entry as a `serde_json::Value` took about
//! four times the file's size for as long as the session was open.

use std::borrow::Cow;
use std::sync::atomic::{AtomicBool, Ordering};

use serde::Deserialize;
use serde_json::Value;

/// One entry: its JSON text and what locates it in the tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    text: Box<str>,
    id: Option<Box<str>>,
    parent_id: Option<Box<str>>,
    kind: Option<Box<str>>,
    role: Option<Box<str>>,
}

/// The fields [`Entry`] keeps, read from a line; unknown ones are skipped
/// without being built.
#[derive(Deserialize)]
struct Head<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    id: Option<Cow<'a, str>>,
    #[serde(rename = "parentId", borrow, default)]
    parent_id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    message: Option<MessageHead<'a>>,
}

#[derive(Deserialize)]
struct MessageHead<'a> {
    #[serde(borrow, default)]
    role: Option<Cow<'a, str>>,
}

impl Entry {
    /// The entry a line of a session file holds; `None` for a line that is
    /// not a JSON object of an entry's shape (a truncated last line).
    pub fn parse(line: &str) -> Option<Entry> {
        let head: Head<'_> = serde_json::from_str(line).ok()?;
        Some(Entry::with_head(line.into(), head))
    }

    /// The entry `value` is, as it will be written.
    pub fn of(value: &Value) -> Entry {
        let head = Head::deserialize(value).unwrap_or(Head {
            kind: None,
            id: None,
            parent_id: None,
            message: None,
        });
        Entry::with_head(value.to_string().into(), head)
    }

    fn with_head(text: Box<str>, head: Head<'_>) -> Entry {
        let boxed = |field: Option<Cow<'_, str>>| field.map(|f| Box::from(f.as_ref()));
        Entry {
            id: boxed(head.id),
            parent_id: boxed(head.parent_id),
            kind: boxed(head.kind),
            role: boxed(head.message.and_then(|m| m.role)),
            text,
        }
    }

    /// The JSON text, as written to the file.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The whole entry, parsed; `null` for one that cannot be read whole,
    /// which the user is told of (once: it is read at every turn).
    ///
    /// Read as JavaScript reads it: Pi's `JSON.stringify` writes a lone
    /// surrogate escape for text cut in the middle of an emoji, which
    /// serde_json refuses. Its head was read ([`Entry::parse`] skips the
    /// rest unchecked), and the entry read as `null` without a word: a tool
    /// result gone, the model was told "No result provided".
    pub fn value(&self) -> Value {
        agent_ai::json_text::from_str(&self.text).unwrap_or_else(|error| {
            static TOLD: AtomicBool = AtomicBool::new(false);
            if !TOLD.swap(true, Ordering::Relaxed) {
                tracing::warn!(
                    "the session entry {} cannot be read and is left out of the conversation: {error}",
                    self.id().unwrap_or("(without an id)")
                );
            }
            Value::Null
        })
    }

    /// Its id (`None`: an entry without one, which nothing can hang under).
    pub fn id(&self) -> Option<&str> {
        self.id.as_deref()
    }

    /// The id of the entry it hangs under (`None`: a root).
    pub fn parent_id(&self) -> Option<&str> {
        self.parent_id.as_deref()
    }

    /// Its type: `message`, `compaction`, `branch_summary`, ...
    pub fn kind(&self) -> Option<&str> {
        self.kind.as_deref()
    }

    /// A `message` entry's role: `user`, `assistant`, `toolResult`,
    /// `bashExecution`, ...
    pub fn role(&self) -> Option<&str> {
        self.role.as_deref()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_line_keeps_its_text_and_the_fields_a_walk_reads() {
        let line = r#"{"type":"message","id":"a1","parentId":"b2","timestamp":"t","message":{"role":"assistant","content":[{"type":"text","text":"hi \"you\""}],"usage":{"input":3}}}"#;
        let entry = Entry::parse(line).unwrap_or_else(|| panic!("not an entry"));
        assert_eq!(entry.text(), line);
        assert_eq!(
            (entry.kind(), entry.id(), entry.parent_id(), entry.role()),
            (Some("message"), Some("a1"), Some("b2"), Some("assistant"))
        );
        assert_eq!(entry.value()["message"]["content"][0]["text"], "hi \"you\"");
        // Made from a value, the same entry.
        assert_eq!(Entry::of(&entry.value()), entry);
    }

    #[test]
    fn a_root_and_entries_of_other_types_have_no_parent_or_role() {
        let entry = Entry::of(&json!({"type": "compaction", "id": "c", "parentId": null}));
        assert_eq!(
            (entry.kind(), entry.parent_id(), entry.role()),
            (Some("compaction"), None, None)
        );
    }

    /// Pi's `JSON.stringify` writes a lone surrogate escape for a string
    /// cut in the middle of an emoji; serde_json refuses it. The line
    /// loaded, but read it was `null`: its message left the conversation,
    /// the export and the fork list without a word.
    #[test]
    fn a_lone_surrogate_escape_reads_as_a_replacement_character() {
        let line = r#"{"type":"message","id":"a1","parentId":null,"message":{"role":"user","content":"cut \ud83d","timestamp":0}}"#;
        let entry = Entry::parse(line).unwrap_or_else(|| panic!("not an entry"));
        assert_eq!(entry.value()["message"]["content"], "cut \u{fffd}");
    }

    /// A line whose head reads but whose whole does not (a number no
    /// `f64` holds) is said to be left out, not read as `null` silently.
    #[test]
    fn an_entry_that_cannot_be_read_whole_is_warned_of() {
        use tracing_subscriber::layer::SubscriberExt;
        let line = r#"{"type":"message","id":"a1","parentId":null,"message":{"role":"user","content":"hi","timestamp":1e400}}"#;
        let entry = Entry::parse(line).unwrap_or_else(|| panic!("not an entry"));
        let (layer, mut warnings) = crate::warnings::LineLayer::channel();
        let subscriber = tracing_subscriber::registry().with(layer);
        let value = tracing::subscriber::with_default(subscriber, || entry.value());
        assert_eq!(value, Value::Null);
        let warning = warnings.try_recv().unwrap_or_default();
        assert!(
            warning.starts_with("Warning: the session entry a1 cannot be read and is left out"),
            "{warning}"
        );
    }

    #[test]
    fn a_truncated_or_foreign_line_is_not_an_entry() {
        for line in [r#"{"type":"message","id":"a1","mess"#, "42", r#"{"id": 7}"#] {
            assert_eq!(Entry::parse(line), None, "{line}");
        }
    }
}
