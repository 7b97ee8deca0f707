//! A conversation too long for one summary request, cut into pieces that
//! each fit the summariser's window. [`super::summarise`] sends them in
//! turn, each merged into the summary of those before it (the request that
//! merges new messages into an earlier compaction's summary), so a session
//! that outgrew its model's window (switched to a smaller model, resumed
//! after a long day) still compacts. Pi sends it whole, and a request larger
//! than the window fails (`docs/DEVIATIONS.md` S16).

use agent_ai::Message;

use super::summary::{message_paragraphs, shorten_middle};

/// Characters per token assumed when cutting, until a refused request
/// shows how the server counts ([`super::Budget::with_estimate_scale`]):
/// fewer than the estimate's four, since code and most languages other
/// than English take more tokens per character. A piece too small costs a
/// request; one too large fails the compaction.
pub const CHARS_PER_TOKEN: f64 = 3.0;

/// Pieces summarised at the most in one compaction: each is a request of up
/// to a whole window, and they run one after another. Older ones are left
/// out, and the summary says how many messages that was.
pub const MAX_PIECES: usize = 8;

/// The smallest room a piece gets, in characters, however small the window:
/// a request that cannot hold a message's first lines is not worth sending.
const MIN_PIECE_CHARS: usize = 2_000;

/// Characters kept free when one message is cut to fit, for the note that
/// says how much was cut.
const CUT_NOTE_CHARS: usize = 60;

/// Part of the conversation, written out for the summariser.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Piece {
    /// Its messages' paragraphs ([`super::summary::serialize_conversation`]).
    pub text: String,
    /// How many messages it holds.
    pub messages: usize,
}

/// Each of `messages` written out for the summariser, those without text
/// left out: what [`cut`] divides (once, however often it is cut).
pub fn written(messages: &[Message]) -> Vec<String> {
    messages
        .iter()
        .map(message_paragraphs)
        .filter(|text| !text.is_empty())
        .collect()
}

/// The messages `written` out in pieces of at most `room` characters each,
/// in order, split between messages; a message longer than `room` by itself
/// loses its middle to fit ([`shorten_middle`]).
pub fn cut(written: &[String], room: usize) -> Vec<Piece> {
    let room = room.max(MIN_PIECE_CHARS);
    let mut pieces = Vec::new();
    let mut piece = Piece::default();
    let mut chars = 0;
    for text in written {
        let mut len = text.chars().count();
        let shortened;
        let text = if len > room {
            shortened = shorten_middle(text, room - CUT_NOTE_CHARS);
            len = shortened.chars().count();
            &shortened
        } else {
            text
        };
        if piece.messages > 0 && chars + 2 + len > room {
            pieces.push(std::mem::take(&mut piece));
            chars = 0;
        }
        if piece.messages > 0 {
            piece.text.push_str("\n\n");
            chars += 2;
        }
        piece.text.push_str(text);
        piece.messages += 1;
        chars += len;
    }
    if piece.messages > 0 {
        pieces.push(piece);
    }
    pieces
}

/// Keeps the newest [`MAX_PIECES`] of `pieces`; the number of messages the
/// ones dropped held.
pub fn keep_newest(pieces: &mut Vec<Piece>) -> usize {
    let over = pieces.len().saturating_sub(MAX_PIECES);
    pieces.drain(..over).map(|piece| piece.messages).sum()
}

/// What the user is told of a compaction in `pieces` requests that left
/// `left_out` messages out.
pub fn notice(pieces: usize, left_out: usize) -> String {
    let mut text = format!(
        "the history is too long for one summary request: summarising it in {pieces} requests, one after another"
    );
    if left_out > 0 {
        text.push_str(&format!(
            " (the oldest {left_out} messages are more than that and are left out)"
        ));
    }
    text
}

/// What the summary says of messages [`keep_newest`] dropped.
pub fn left_out_note(messages: usize) -> String {
    format!(
        "(The oldest {messages} messages of this conversation were more than one compaction \
         summarises and are not in this summary; the session file keeps them.)"
    )
}

#[cfg(test)]
mod tests {
    use agent_ai::UserMessage;

    use super::*;
    use crate::compaction::summary::serialize_conversation;

    fn said(text: String) -> Message {
        UserMessage::text(text).into()
    }

    #[test]
    fn messages_are_cut_between_into_pieces_that_fit_the_room() {
        let messages: Vec<Message> = (0..10)
            .map(|n| said(format!("{n}{}", "x".repeat(989))))
            .collect();
        // "[User]: " and 990 characters: 998 each, 2 between.
        let pieces = cut(&written(&messages), 3_000);
        assert_eq!(
            pieces.iter().map(|p| p.messages).collect::<Vec<_>>(),
            [3, 3, 3, 1]
        );
        assert!(pieces.iter().all(|p| p.text.chars().count() <= 3_000));
        assert_eq!(pieces[0].text.chars().count(), 3 * 998 + 2 * 2);
        assert!(pieces[1].text.starts_with("[User]: 3x"));
        // Together they are the conversation written out whole.
        let joined: Vec<&str> = pieces.iter().map(|p| p.text.as_str()).collect();
        assert_eq!(joined.join("\n\n"), serialize_conversation(&messages));
        // All of it fits: one piece, the whole conversation.
        let whole = cut(&written(&messages), 20_000);
        assert_eq!(whole.len(), 1);
        assert_eq!(whole[0].text, serialize_conversation(&messages));
    }

    #[test]
    fn a_message_larger_than_the_room_loses_its_middle_to_fit_and_says_so() {
        let huge = format!("{}the question?", "a".repeat(10_000));
        let messages = [said(huge), said("b".repeat(100))];
        let pieces = cut(&written(&messages), 2_500);
        assert_eq!(pieces.len(), 2);
        let first = &pieces[0].text;
        assert!(first.chars().count() <= 2_500, "{}", first.len());
        // "[User]: " and 10,013 characters, 2,440 of them kept: the
        // beginning and the end, where a question after pasted text is.
        assert_eq!(
            *first,
            format!(
                "[User]: {}\n\n[... 7581 characters truncated]\n\n{}the question?",
                "a".repeat(1212),
                "a".repeat(1207)
            )
        );
        assert_eq!(pieces[1].text, format!("[User]: {}", "b".repeat(100)));
        // However small the window, a piece holds a message's beginning and end.
        assert!(cut(&written(&messages), 10)[0].text.chars().count() > 1_000);
    }

    #[test]
    fn only_the_newest_pieces_are_kept_and_the_messages_left_out_are_counted() {
        let mut pieces: Vec<Piece> = (1..=MAX_PIECES + 2)
            .map(|n| Piece {
                text: n.to_string(),
                messages: n,
            })
            .collect();
        assert_eq!(keep_newest(&mut pieces), 1 + 2);
        assert_eq!(pieces.len(), MAX_PIECES);
        assert_eq!(pieces[0].text, "3");
        assert_eq!(keep_newest(&mut pieces), 0);
        assert!(left_out_note(3).starts_with("(The oldest 3 messages"));
        assert!(notice(MAX_PIECES, 3).ends_with(
            "in 8 requests, one after another (the oldest 3 messages are more than that and are left out)"
        ));
        assert!(notice(2, 0).ends_with("in 2 requests, one after another"));
    }
}
