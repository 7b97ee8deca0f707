//! A tool result far larger than what is left of the window is cut before
//! it is sent, so one huge output cannot overflow every request after it
//! (beyond Pi, `docs/DEVIATIONS.md` S8). Its beginning and end are kept, the
//! middle is replaced by a notice, and the whole text is saved to a file the
//! model can read in parts.
//!
//! "Far larger": bigger than what the rest of the context leaves free and
//! bigger than half of the usable window, so that even a compaction could not
//! make room for it. It is cut to half of the usable window.

use std::path::{Path, PathBuf};

use agent_ai::{Content, Message, ToolResultMessage};

use super::tokens::{estimate_tokens, scaled};
use crate::session::blocks_text;
use crate::support::safe_name::{fnv1a, underscore_unsafe};

/// What a request's messages take and what the window leaves them, in
/// tokens.
#[derive(Debug, Clone, Copy)]
pub struct Room {
    /// What the messages take.
    pub total: u64,
    /// What the window less the reserve, the system prompt and the tools
    /// leaves them.
    pub usable: u64,
    /// How many tokens an estimated one is
    /// ([`EstimateScale`](super::tokens::EstimateScale)).
    pub scale: f64,
}

/// `messages` with every oversized tool result cut (see the module docs).
/// Full outputs go to `spill_dir`.
pub fn fit_tool_results(messages: Vec<Message>, room: Room, spill_dir: &Path) -> Vec<Message> {
    let cap = room.usable / 2;
    messages
        .into_iter()
        .map(|message| {
            let tokens = scaled(estimate_tokens(&message), room.scale);
            let left = room
                .usable
                .saturating_sub(room.total.saturating_sub(tokens));
            match message {
                Message::ToolResult(result) if tokens > cap && tokens > left => {
                    let keep = (cap as f64 / room.scale) as u64;
                    Message::ToolResult(cut(result, keep, spill_dir))
                }
                other => other,
            }
        })
        .collect()
}

/// Where the full `text` of the result of `tool_call_id` is saved: named
/// by its content too, since call ids repeat across sessions (many local
/// servers number their calls from 1), and a file of another session's
/// result must never be named as this one's.
pub fn spill_path(spill_dir: &Path, tool_call_id: &str, text: &str) -> PathBuf {
    let safe = underscore_unsafe(tool_call_id);
    let hash = fnv1a(text.as_bytes());
    spill_dir.join(format!("coding-agent-result-{safe}-{hash:016x}.txt"))
}

/// Saves `text` at `path`, readable by this user only (the spill folder is
/// the shared temp directory and the output may hold secrets). The file is
/// made anew, never opened through a link someone left there; one that is
/// already there holds the same text (every request of the session cuts
/// the same result again) when its size agrees.
fn save(path: &Path, text: &str) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let created = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path);
    match created {
        Ok(mut file) => file.write_all(text.as_bytes()),
        Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {
            let there = std::fs::symlink_metadata(path)?;
            if there.is_file() && there.len() == text.len() as u64 {
                Ok(())
            } else {
                Err(std::io::Error::other(format!(
                    "{} is already there and holds something else",
                    path.display()
                )))
            }
        }
        Err(error) => Err(error),
    }
}

/// The result's text cut to about `keep_tokens`: its head and tail with the
/// notice between them; images are kept.
fn cut(mut result: ToolResultMessage, keep_tokens: u64, spill_dir: &Path) -> ToolResultMessage {
    let text = blocks_text(&result.content);
    let chars: Vec<char> = text.chars().collect();
    let keep = usize::try_from(keep_tokens.saturating_mul(4)).unwrap_or(usize::MAX);
    if chars.len() <= keep {
        return result;
    }
    let half = keep / 2;
    let head: String = chars[..half].iter().collect();
    let tail: String = chars[chars.len() - half..].iter().collect();
    let path = spill_path(spill_dir, &result.tool_call_id, &text);
    let saved = save(&path, &text);
    let notice = cut_notice(chars.len() - 2 * half, &path, saved.err());
    let mut content = vec![Content::text(format!("{head}{notice}{tail}"))];
    content.extend(
        result
            .content
            .into_iter()
            .filter(|block| matches!(block, Content::Image(_))),
    );
    result.content = content;
    result
}

/// What the model reads in place of the cut middle.
fn cut_notice(omitted: usize, path: &Path, error: Option<std::io::Error>) -> String {
    match error {
        None => format!(
            "\n\n[... {omitted} characters cut here to fit the model's context window. Full output: {}. Read parts of it with offset and limit.]\n\n",
            path.display()
        ),
        Some(error) => format!(
            "\n\n[... {omitted} characters cut here to fit the model's context window. The full output could not be saved: {error}]\n\n"
        ),
    }
}

#[cfg(test)]
mod tests {
    use agent_ai::UserMessage;

    use super::*;

    fn result(id: &str, text: String) -> Message {
        Message::ToolResult(ToolResultMessage {
            tool_call_id: id.into(),
            tool_name: "bash".into(),
            content: vec![Content::text(text)],
            details: None,
            is_error: false,
            timestamp: 0,
        })
    }

    /// The room of `messages` in a window leaving them `usable` tokens,
    /// estimates unscaled.
    fn room(messages: &[Message], usable: u64) -> Room {
        Room {
            total: messages.iter().map(estimate_tokens).sum(),
            usable,
            scale: 1.0,
        }
    }

    fn text_of(message: &Message) -> String {
        match message {
            Message::ToolResult(result) => blocks_text(&result.content),
            _ => String::new(),
        }
    }

    #[test]
    fn a_result_far_larger_than_the_window_is_cut_to_head_notice_and_tail() {
        let dir = tempfile::tempdir().unwrap();
        let huge = format!("HEAD{}TAIL", "x".repeat(40_000));
        let messages = vec![
            UserMessage::text("run it").into(),
            result("call/1", huge.clone()),
        ];
        let room = room(&messages, 2000);
        let fitted = fit_tool_results(messages, room, dir.path());
        let path = spill_path(dir.path(), "call/1", &huge);
        let text = text_of(&fitted[1]);
        let expected = format!(
            "HEAD{}\n\n[... {} characters cut here to fit the model's context window. Full output: {}. Read parts of it with offset and limit.]\n\n{}TAIL",
            "x".repeat(1996),
            huge.chars().count() - 4000,
            path.display(),
            "x".repeat(1996),
        );
        assert_eq!(text, expected);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), huge);
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "the output may hold secrets");
    }

    /// Call ids repeat across sessions: another run's result under the same
    /// id is not named as this one's, and a file someone left at this one's
    /// name is not taken for it.
    #[test]
    fn another_results_file_is_never_named_for_this_one() {
        let dir = tempfile::tempdir().unwrap();
        let first = vec![result("call_1", format!("FIRST{}", "a".repeat(40_000)))];
        let second = vec![result("call_1", format!("SECOND{}", "b".repeat(40_000)))];
        fit_tool_results(first.clone(), room(&first, 2000), dir.path());
        let fitted = fit_tool_results(second.clone(), room(&second, 2000), dir.path());
        let named = text_of(&fitted[0]);
        let path = named
            .split("Full output: ")
            .nth(1)
            .and_then(|rest| rest.split(". Read parts").next())
            .unwrap();
        assert!(std::fs::read_to_string(path).unwrap().starts_with("SECOND"));

        let third = format!("THIRD{}", "c".repeat(40_000));
        std::fs::write(spill_path(dir.path(), "call_2", &third), "planted").unwrap();
        let messages = vec![result("call_2", third)];
        let fitted = fit_tool_results(messages.clone(), room(&messages, 2000), dir.path());
        assert!(
            text_of(&fitted[0]).contains("The full output could not be saved"),
            "{}",
            text_of(&fitted[0])
        );
    }

    #[test]
    fn results_that_fit_or_are_not_far_larger_are_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        // 1200 tokens: more than is left, but less than half the usable window.
        let big = "y".repeat(4800);
        let messages = vec![
            UserMessage::text("z".repeat(10_000)).into(),
            result("c1", big.clone()),
        ];
        let room = room(&messages, 3000);
        let fitted = fit_tool_results(messages, room, dir.path());
        assert_eq!(text_of(&fitted[1]), big);
        assert!(std::fs::read_dir(dir.path()).unwrap().next().is_none());
    }
}
