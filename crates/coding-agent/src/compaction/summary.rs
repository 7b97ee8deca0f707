//! The summary request: the conversation written out as text, the
//! instructions the summariser reads, and the summary's structure (the
//! sections Pi asks for, so a model continuing from it finds goal, progress,
//! decisions and next steps where it expects them).

use agent_ai::{AssistantContent, Message};

use crate::session::{blocks_text, user_text};

/// Longest tool result quoted to the summariser.
const MAX_TOOL_RESULT_CHARS: usize = 2000;

/// The summariser's system prompt.
pub const SUMMARY_SYSTEM_PROMPT: &str = "You summarise conversations between a user and an AI coding assistant so that another model can continue the work. Read the conversation and write the structured summary you are asked for.

Do not continue the conversation and do not answer questions asked in it: write only the summary.";

/// The structure every summary follows.
const SUMMARY_FORMAT: &str = "## Goal
[What the user wants done; several items if the session covers several tasks.]

## Constraints & Preferences
- [Constraints, preferences and requirements the user stated, or \"(none)\"]

## Progress
### Done
- [x] [Finished tasks and changes]

### In Progress
- [ ] [Work under way]

### Blocked
- [What stops progress, if anything]

## Key Decisions
- **[Decision]**: [Why, briefly]

## Next Steps
1. [What should happen next, in order]

## Critical Context
- [Data, examples and references needed to go on, or \"(none)\"]

Keep every section short. Keep file paths, function names and error messages exactly as written.";

/// Asked when there is no earlier summary.
fn initial_instructions() -> String {
    format!(
        "The conversation above is to be summarised. Write a structured checkpoint that another model will use to continue the work.\n\nFollow this format exactly:\n\n{SUMMARY_FORMAT}"
    )
}

/// Asked when an earlier summary exists: merge, do not start over.
fn update_instructions() -> String {
    format!(
        "The conversation above holds NEW messages. Merge them into the earlier summary given in <previous-summary>.\n\nRules:\n- Keep everything the earlier summary says that still holds\n- Add the new progress, decisions and context\n- Move items from \"In Progress\" to \"Done\" when they were finished\n- Rewrite \"Next Steps\" for the current state\n- Keep file paths, function names and error messages exactly as written\n- Drop what no longer matters\n\nFollow this format exactly:\n\n{SUMMARY_FORMAT}"
    )
}

/// Asked for the beginning of a turn too large to keep whole.
const TURN_PREFIX_INSTRUCTIONS: &str = "The conversation above is the BEGINNING of a turn too large to keep; its end (the recent work) is kept as it is.

Summarise the beginning so the kept end makes sense:

## Original Request
[What the user asked for in this turn]

## Early Progress
- [Decisions made and work done in this beginning]

## Context for Suffix
- [What is needed to understand the kept recent work]

Be brief: only what the kept end needs.";

/// Asked for a branch `/tree` left: what it did, for the work that goes on
/// from an earlier point.
fn branch_instructions() -> String {
    format!(
        "The conversation above is a branch the user has left, to go on from an earlier point. Summarise what was tried and found on it, so the work that goes on from there knows.\n\nFollow this format exactly:\n\n{SUMMARY_FORMAT}"
    )
}

/// The branch summary request's user message: the branch, the
/// instructions, and the user's focus (`/tree N summarize TEXT`).
pub fn branch_request(messages: &[Message], focus: Option<&str>) -> String {
    let mut text = conversation_block(&serialize_conversation(messages));
    text.push_str(&branch_instructions());
    push_focus(&mut text, focus);
    text
}

/// What the model reads where a branch was left (Pi's `branchSummary`
/// message).
pub fn branch_summary_message_text(summary: &str) -> String {
    wrap_summary(BRANCH_INTRO, summary)
}

/// Which summary the session put in the conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SummaryKind {
    /// A compaction's: it stands for the turns before it.
    Compaction,
    /// A branch's, from `/tree`: it says what a branch left did.
    Branch,
}

/// Pi's words (its `messages.js`): a model tuned on Pi reads the same.
const COMPACTION_INTRO: &str =
    "The conversation history before this point was compacted into the following summary:";
const BRANCH_INTRO: &str = "The user went down another branch of this conversation and came back to this point; the summary below says what that branch did.";
const SUMMARY_OPEN: &str = "\n\n<summary>\n";
const SUMMARY_CLOSE: &str = "\n</summary>";

fn wrap_summary(intro: &str, summary: &str) -> String {
    format!("{intro}{SUMMARY_OPEN}{summary}{SUMMARY_CLOSE}")
}

/// The text the model reads in place of the summarised messages.
pub fn summary_message_text(summary: &str) -> String {
    wrap_summary(COMPACTION_INTRO, summary)
}

/// Whether `message` is a summary the session put in the conversation
/// ([`summary_message_text`], [`branch_summary_message_text`]): the model
/// reads it as a user message, but the user did not write it (Pi gives it a
/// role of its own).
pub fn is_summary_message(message: &Message) -> bool {
    let Message::User(user) = message else {
        return false;
    };
    let text = user_text(&user.content);
    [COMPACTION_INTRO, BRANCH_INTRO].iter().any(|intro| {
        text.strip_prefix(intro)
            .is_some_and(|rest| rest.starts_with(SUMMARY_OPEN) && rest.ends_with(SUMMARY_CLOSE))
    })
}

/// The history request's user message: the conversation (written out by
/// [`serialize_conversation`]), the previous summary when there is one,
/// the instructions, and the user's focus (`/compact TEXT`).
pub fn history_request(conversation: &str, previous: Option<&str>, focus: Option<&str>) -> String {
    let mut text = conversation_block(conversation);
    if let Some(previous) = previous {
        text.push_str(&format!(
            "<previous-summary>\n{previous}\n</previous-summary>\n\n"
        ));
    }
    text.push_str(&match previous {
        Some(_) => update_instructions(),
        None => initial_instructions(),
    });
    push_focus(&mut text, focus);
    text
}

/// Adds what the user asked the summary to focus on, if anything.
fn push_focus(text: &mut String, focus: Option<&str>) {
    if let Some(focus) = focus.map(str::trim).filter(|f| !f.is_empty()) {
        text.push_str(&format!("\n\nAdditional focus: {focus}"));
    }
}

/// The turn-prefix request's user message, for the turn's beginning
/// written out by [`serialize_conversation`].
pub fn turn_prefix_request(conversation: &str) -> String {
    format!(
        "{}{TURN_PREFIX_INSTRUCTIONS}",
        conversation_block(conversation)
    )
}

/// The summary of a split turn: the history's, then the turn's beginning.
pub fn join_split_turn(history: &str, prefix: &str) -> String {
    format!("{history}\n\n---\n\n**Turn Context (split turn):**\n\n{prefix}")
}

fn conversation_block(conversation: &str) -> String {
    format!("<conversation>\n{conversation}\n</conversation>\n\n")
}

/// The conversation as labelled paragraphs: `[User]: ...`, `[Assistant
/// thinking]: ...`, `[Assistant]: ...`, `[Assistant tool calls]: name(k=v,
/// ...); ...`, `[Tool result]: ...` (long results cut).
pub fn serialize_conversation(messages: &[Message]) -> String {
    super::pieces::written(messages).join("\n\n")
}

/// One message's paragraphs in [`serialize_conversation`]; empty for a
/// message without text.
pub fn message_paragraphs(message: &Message) -> String {
    let mut parts = Vec::new();
    match message {
        Message::User(user) => {
            let text = user_text(&user.content);
            if !text.is_empty() {
                parts.push(format!("[User]: {text}"));
            }
        }
        Message::Assistant(assistant) => {
            let mut thinking = Vec::new();
            let mut text = Vec::new();
            let mut calls = Vec::new();
            for block in &assistant.content {
                match block {
                    AssistantContent::Thinking(t) => thinking.push(t.thinking.as_str()),
                    AssistantContent::Text(t) => text.push(t.text.as_str()),
                    AssistantContent::ToolCall(call) => {
                        let arguments = match &call.arguments {
                            serde_json::Value::Object(map) => map
                                .iter()
                                .map(|(key, value)| format!("{key}={value}"))
                                .collect::<Vec<_>>()
                                .join(", "),
                            other => other.to_string(),
                        };
                        calls.push(format!("{}({arguments})", call.name));
                    }
                }
            }
            if !thinking.is_empty() {
                parts.push(format!("[Assistant thinking]: {}", thinking.join("\n")));
            }
            if !text.is_empty() {
                parts.push(format!("[Assistant]: {}", text.join("\n")));
            }
            if !calls.is_empty() {
                parts.push(format!("[Assistant tool calls]: {}", calls.join("; ")));
            }
        }
        Message::ToolResult(result) => {
            let text = blocks_text(&result.content);
            if !text.is_empty() {
                parts.push(format!(
                    "[Tool result]: {}",
                    shorten(&text, MAX_TOOL_RESULT_CHARS)
                ));
            }
        }
    }
    parts.join("\n\n")
}

/// `text` cut after `max_chars` characters, saying how many followed.
pub fn shorten(text: &str, max_chars: usize) -> String {
    match text.char_indices().nth(max_chars) {
        Some((cut, _)) => {
            let rest = text[cut..].chars().count();
            format!("{}\n\n[... {rest} more characters truncated]", &text[..cut])
        }
        None => text.to_owned(),
    }
}

/// `text` cut to about `max_chars` characters by taking out its middle,
/// saying how many characters were taken: a message's end is often what it
/// asks (the question after piped input or an `@file`), so it is kept with
/// the beginning, not cut off with the rest.
pub fn shorten_middle(text: &str, max_chars: usize) -> String {
    let chars = text.chars().count();
    if chars <= max_chars {
        return text.to_owned();
    }
    let head = max_chars / 2;
    let tail = max_chars - head;
    let byte_at = |n: usize| text.char_indices().nth(n).map_or(text.len(), |(at, _)| at);
    let (head_end, tail_start) = (byte_at(head), byte_at(chars - tail));
    format!(
        "{}\n\n[... {} characters truncated]\n\n{}",
        &text[..head_end],
        chars - max_chars,
        &text[tail_start..]
    )
}

/// The summary with the files the summarised work read and changed:
/// `<read-files>` (read and not changed) and `<modified-files>`, each left
/// out when empty.
pub fn with_file_lists(summary: &str, read: &[String], modified: &[String]) -> String {
    let mut text = summary.to_owned();
    if !read.is_empty() {
        text.push_str(&format!(
            "\n\n<read-files>\n{}\n</read-files>",
            read.join("\n")
        ));
    }
    if !modified.is_empty() {
        text.push_str(&format!(
            "\n\n<modified-files>\n{}\n</modified-files>",
            modified.join("\n")
        ));
    }
    text
}

/// `summary` without the file lists [`with_file_lists`] put at its end: an
/// earlier summary carried on into a new one gets the lists anew, of the
/// earlier files and the new ones, and would hold them twice.
pub fn without_file_lists(summary: &str) -> &str {
    let mut text = summary;
    for tag in ["modified-files", "read-files"] {
        if text.ends_with(&format!("\n</{tag}>"))
            && let Some(at) = text.rfind(&format!("\n\n<{tag}>\n"))
        {
            text = &text[..at];
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use agent_ai::{AssistantMessage, Content, Model, ToolCall, ToolResultMessage, UserMessage};
    use serde_json::json;

    use super::*;

    #[test]
    fn the_conversation_is_written_as_labelled_paragraphs() {
        let mut answer = AssistantMessage::empty(&Model::new("m", "p", "a"));
        answer.content = vec![
            AssistantContent::Text(agent_ai::TextContent {
                text: "Reading it.".into(),
                text_signature: None,
            }),
            AssistantContent::ToolCall(ToolCall::new("c1", "read", json!({"path": "a.rs"}))),
        ];
        let result = ToolResultMessage {
            tool_call_id: "c1".into(),
            tool_name: "read".into(),
            content: vec![Content::text(format!("{}tail", "x".repeat(2000)))],
            details: None,
            is_error: false,
            timestamp: 0,
        };
        let text = serialize_conversation(&[
            UserMessage::text("Fix a.rs").into(),
            Message::Assistant(answer),
            result.into(),
        ]);
        assert_eq!(
            text,
            format!(
                "[User]: Fix a.rs\n\n[Assistant]: Reading it.\n\n[Assistant tool calls]: read(path=\"a.rs\")\n\n[Tool result]: {}\n\n[... 4 more characters truncated]",
                "x".repeat(2000)
            )
        );
    }

    #[test]
    fn a_first_summary_asks_for_the_structure_with_the_users_focus() {
        let request = history_request("[User]: hi", None, Some("the parser"));
        assert_eq!(
            request,
            format!(
                "<conversation>\n[User]: hi\n</conversation>\n\n{}\n\nAdditional focus: the parser",
                initial_instructions()
            )
        );
    }

    #[test]
    fn a_later_summary_merges_into_the_previous_one() {
        let request = history_request("[User]: hi", Some("## Goal\nX"), None);
        assert_eq!(
            request,
            format!(
                "<conversation>\n[User]: hi\n</conversation>\n\n<previous-summary>\n## Goal\nX\n</previous-summary>\n\n{}",
                update_instructions()
            )
        );
    }

    #[test]
    fn file_lists_follow_the_summary_when_not_empty() {
        assert_eq!(
            with_file_lists("S", &["a.rs".into()], &[]),
            "S\n\n<read-files>\na.rs\n</read-files>"
        );
        assert_eq!(
            with_file_lists("S", &[], &["b.rs".into()]),
            "S\n\n<modified-files>\nb.rs\n</modified-files>"
        );
        assert_eq!(with_file_lists("S", &[], &[]), "S");
        let both = with_file_lists("S", &["a.rs".into()], &["b.rs".into()]);
        assert_eq!(without_file_lists(&both), "S");
        assert_eq!(
            without_file_lists("S\n\n<read-files>\na.rs"),
            "S\n\n<read-files>\na.rs"
        );
    }

    #[test]
    fn summaries_are_told_from_what_the_user_wrote() {
        let said = |text: String| Message::from(UserMessage::text(text));
        assert!(is_summary_message(&said(summary_message_text("S"))));
        assert!(is_summary_message(&said(branch_summary_message_text("B"))));
        assert!(!is_summary_message(&said("S".into())));
        assert!(!is_summary_message(&said(format!(
            "{COMPACTION_INTRO} and more"
        ))));
    }

    #[test]
    fn the_model_reads_the_summary_in_tags() {
        assert_eq!(
            summary_message_text("S"),
            "The conversation history before this point was compacted into the following summary:\n\n<summary>\nS\n</summary>"
        );
        assert_eq!(
            join_split_turn("H", "P"),
            "H\n\n---\n\n**Turn Context (split turn):**\n\nP"
        );
    }
}
