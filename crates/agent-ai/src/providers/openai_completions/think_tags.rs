//! Reasoning a server leaves in the answer's text as `<think>…</think>`.
//!
//! Reasoning models (Qwen3, DeepSeek-R1, QwQ) write their thoughts between
//! these tags; a server with a reasoning parser moves them to
//! `reasoning_content`, but llama.cpp with `--reasoning-format none`, vLLM
//! without `--reasoning-parser` and some LM Studio setups leave them in
//! `content`. Shown as answer text they bury the answer, and sent back they
//! cost context. [`ThinkTags`] splits such a stream as it arrives: a
//! `<think>` at the very start of the answer (after whitespace) opens a
//! thinking block, `</think>` closes it, and the rest is text (deviation P8
//! in `docs/DEVIATIONS.md`). A tag may arrive split across chunks; text that
//! might be the start of one is held back until the next chunk says.

const OPEN: &str = "<think>";
const CLOSE: &str = "</think>";

/// One piece of the answer, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Piece {
    Text(String),
    Thinking(String),
}

/// Where the stream is.
#[derive(Debug, Clone, PartialEq, Eq)]
enum State {
    /// Nothing but whitespace and perhaps part of `<think>` yet (held).
    Opening(String),
    /// Inside the thoughts; holds what may be the start of `</think>`, and
    /// while nothing but whitespace came (`<think>\n\n</think>` from a model
    /// told not to think), all of it: no empty thinking block is shown.
    Thinking { held: String, started: bool },
    /// Just after `</think>`: the whitespace before the answer is dropped.
    Closed,
    /// Plain text from here on.
    Text,
}

/// The splitter for one answer's `content` deltas.
#[derive(Debug, Clone)]
pub(super) struct ThinkTags {
    state: State,
}

impl Default for ThinkTags {
    fn default() -> Self {
        ThinkTags {
            state: State::Opening(String::new()),
        }
    }
}

impl ThinkTags {
    /// The pieces `delta` completes (none while a tag may still be forming).
    pub(super) fn split(&mut self, delta: &str) -> Vec<Piece> {
        let mut pieces = Vec::new();
        let mut rest = delta.to_owned();
        loop {
            match &mut self.state {
                State::Text => {
                    push(&mut pieces, Piece::Text(rest));
                    return pieces;
                }
                State::Closed => {
                    let answer = rest.trim_start();
                    if answer.is_empty() {
                        return pieces;
                    }
                    rest = answer.to_owned();
                    self.state = State::Text;
                }
                State::Opening(held) => {
                    held.push_str(&rest);
                    let start = held.trim_start();
                    if let Some(after) = start.strip_prefix(OPEN) {
                        rest = after.to_owned();
                        self.state = State::Thinking {
                            held: String::new(),
                            started: false,
                        };
                    } else if OPEN.starts_with(start) {
                        return pieces;
                    } else {
                        rest = std::mem::take(held);
                        self.state = State::Text;
                    }
                }
                State::Thinking { held, started } => {
                    held.push_str(&rest);
                    if let Some(end) = held.find(CLOSE) {
                        rest = held[end + CLOSE.len()..].to_owned();
                        let thought = &held[..end];
                        if *started || !thought.trim().is_empty() {
                            push(&mut pieces, Piece::Thinking(thought.to_owned()));
                        }
                        self.state = State::Closed;
                    } else {
                        let ready = held.len() - partial_tag_len(held, CLOSE);
                        if *started || !held[..ready].trim().is_empty() {
                            *started = true;
                            let thought: String = held.drain(..ready).collect();
                            push(&mut pieces, Piece::Thinking(thought));
                        }
                        return pieces;
                    }
                }
            }
        }
    }

    /// What is still held when the answer ends: text that only looked like
    /// the start of a tag, or the end of thoughts that were never closed (a
    /// length limit reached while thinking).
    pub(super) fn finish(&mut self) -> Option<Piece> {
        match std::mem::replace(&mut self.state, State::Text) {
            State::Opening(held) if !held.is_empty() => Some(Piece::Text(held)),
            State::Thinking { held, started }
                if !held.is_empty() && (started || !held.trim().is_empty()) =>
            {
                Some(Piece::Thinking(held))
            }
            _ => None,
        }
    }
}

/// Adds `piece` unless it is empty.
fn push(pieces: &mut Vec<Piece>, piece: Piece) {
    let (Piece::Text(text) | Piece::Thinking(text)) = &piece;
    if !text.is_empty() {
        pieces.push(piece);
    }
}

/// How many bytes at the end of `text` could begin `tag`.
fn partial_tag_len(text: &str, tag: &str) -> usize {
    (1..tag.len())
        .rev()
        .find(|&n| text.ends_with(&tag[..n]))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `deltas` and the end, joining neighbouring pieces of one kind.
    fn run(deltas: &[&str]) -> Vec<Piece> {
        let mut tags = ThinkTags::default();
        let mut pieces: Vec<Piece> = Vec::new();
        let all = deltas
            .iter()
            .flat_map(|delta| tags.split(delta))
            .collect::<Vec<_>>();
        for piece in all.into_iter().chain(tags.finish()) {
            match (pieces.last_mut(), piece) {
                (Some(Piece::Text(a)), Piece::Text(b)) => a.push_str(&b),
                (Some(Piece::Thinking(a)), Piece::Thinking(b)) => a.push_str(&b),
                (_, piece) => pieces.push(piece),
            }
        }
        pieces
    }

    fn text(s: &str) -> Piece {
        Piece::Text(s.into())
    }

    fn thinking(s: &str) -> Piece {
        Piece::Thinking(s.into())
    }

    #[test]
    fn thoughts_in_tags_become_thinking_and_the_answer_text() {
        assert_eq!(
            run(&["<think>\nLet me see.\n</think>\n\nThe answer is 4."]),
            vec![thinking("\nLet me see.\n"), text("The answer is 4.")]
        );
    }

    #[test]
    fn tags_split_across_chunks_at_every_place_are_still_found() {
        let whole = "  <think>hmm, 2+2</think>\n4";
        for cut in 1..whole.len() {
            for second in cut..whole.len() {
                let deltas = [&whole[..cut], &whole[cut..second], &whole[second..]];
                assert_eq!(
                    run(&deltas),
                    vec![thinking("hmm, 2+2"), text("4")],
                    "cut at {cut} and {second}"
                );
            }
        }
    }

    #[test]
    fn text_that_does_not_start_with_the_tag_is_left_alone() {
        assert_eq!(
            run(&["Use <think>", " tags</think> like this"]),
            vec![text("Use <think> tags</think> like this")]
        );
        assert_eq!(run(&["  <thin", "g>"]), vec![text("  <thing>")]);
        assert_eq!(run(&["<", "b>bold</b>"]), vec![text("<b>bold</b>")]);
    }

    #[test]
    fn an_answer_that_only_looked_like_a_tag_is_kept_at_the_end() {
        assert_eq!(run(&["  <thi"]), vec![text("  <thi")]);
        assert_eq!(run(&["\n"]), vec![text("\n")]);
    }

    #[test]
    fn empty_thoughts_make_no_thinking_block() {
        assert_eq!(run(&["<think>\n", "\n</think>\n\nHi"]), vec![text("Hi")]);
        assert_eq!(run(&["<think>\n\n"]), vec![]);
        assert_eq!(
            run(&["<think>\n", "\nok</think>Hi"]),
            vec![thinking("\n\nok"), text("Hi")]
        );
    }

    #[test]
    fn thoughts_cut_off_by_the_length_limit_stay_thinking() {
        assert_eq!(
            run(&["<think>first, ", "the cas", "e </thi"]),
            vec![thinking("first, the case </thi")]
        );
    }

    #[test]
    fn thoughts_stream_as_they_come_holding_back_only_a_possible_tag() {
        let mut tags = ThinkTags::default();
        assert_eq!(tags.split("<think>one"), vec![thinking("one")]);
        assert_eq!(tags.split(" two </"), vec![thinking(" two ")]);
        assert_eq!(tags.split("nope"), vec![thinking("</nope")]);
        assert_eq!(tags.split("</think>"), vec![]);
        assert_eq!(tags.split("  "), vec![]);
        assert_eq!(tags.split(" done"), vec![text("done")]);
        assert_eq!(tags.split(" <think>again"), vec![text(" <think>again")]);
        assert_eq!(tags.finish(), None);
    }
}
