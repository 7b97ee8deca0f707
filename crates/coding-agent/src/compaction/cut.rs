//! Where to cut a conversation for compaction: what is summarised, what is
//! kept. The cut never separates a tool call from its result (a tool result
//! is never the first kept entry), keeps about `keep_tokens` of the newest
//! messages, never keeps a turn's final answer without what it answers, and
//! when it falls inside a turn, that turn's beginning is summarised on its
//! own (a "split turn", as Pi).

use std::ops::Range;

/// What an entry of the session's branch is, as far as cutting goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    /// A user message: a turn starts here.
    User,
    /// A user's own shell command (`bashExecution`): a turn starts here too.
    Bash,
    /// The model's answer.
    Assistant,
    /// A tool's result: never the first kept entry.
    ToolResult,
    /// Another message the model reads (`custom`).
    OtherMessage,
    /// A message put into the conversation by an entry of its own (Pi's
    /// `custom_message`, and the `branch_summary` `/tree` writes): a turn
    /// starts here too, as in Pi.
    Inserted,
    /// An earlier compaction.
    Compaction,
    /// Not a message (model or thinking change, name, label).
    Meta,
}

impl EntryKind {
    fn is_message(self) -> bool {
        !matches!(self, EntryKind::Compaction | EntryKind::Meta)
    }

    fn starts_turn(self) -> bool {
        matches!(
            self,
            EntryKind::User | EntryKind::Bash | EntryKind::Inserted
        )
    }

    fn is_valid_cut(self) -> bool {
        self.is_message() && self != EntryKind::ToolResult
    }
}

/// One entry with its estimated size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sized {
    /// What it is.
    pub kind: EntryKind,
    /// Its estimated tokens (0 for non-messages).
    pub tokens: u64,
}

/// The result of [`find_cut`]: indexes into the entries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cut {
    /// The first kept entry.
    pub first_kept: usize,
    /// Summarised as history: whole turns before the cut.
    pub history: Range<usize>,
    /// The start of the turn the cut falls into, summarised apart; empty
    /// unless the cut splits a turn.
    pub turn_prefix: Range<usize>,
}

impl Cut {
    /// Whether any message of `entries` (those the cut was found in) would
    /// be summarised. A span of entries without one is nothing to summarise:
    /// after a compaction that kept nothing, the span starts at the
    /// compaction entry itself.
    pub fn summarises_anything(&self, entries: &[Sized]) -> bool {
        self.history
            .clone()
            .chain(self.turn_prefix.clone())
            .any(|i| entries[i].kind.is_message())
    }
}

/// Cuts `entries[start..]` so that about `keep_tokens` of the newest
/// messages are kept. Walking from the newest message back, the cut goes at
/// the first valid cut at or after the entry where the kept size reaches
/// `keep_tokens`; if it never does, nothing is summarised. When it is
/// reached only at the oldest message of the span, that message is
/// summarised anyway (the cut goes to the next valid cut after it): a single
/// long message an earlier compaction kept would otherwise make every later
/// compaction keep everything, and the context would grow until the
/// provider refuses it (Pi stops there; `docs/DEVIATIONS.md`). The cut then
/// moves back over non-message entries directly before it.
pub fn find_cut(entries: &[Sized], start: usize, keep_tokens: u64) -> Cut {
    let end = entries.len();
    let valid_from = |from: usize| (from..end).find(|&j| entries[j].kind.is_valid_cut());
    let oldest_message = (start..end).find(|&i| entries[i].kind.is_message());
    let mut kept = 0;
    let mut cut = valid_from(start).unwrap_or(end);
    for i in (start..end).rev() {
        if !entries[i].kind.is_message() {
            continue;
        }
        kept += entries[i].tokens;
        if kept >= keep_tokens {
            let from = if Some(i) == oldest_message { i + 1 } else { i };
            // No valid cut after it: the span ends in a turn's tool results
            // (a run stopped to compact before the model reads them). The
            // cut goes before the call they answer, the newest valid one.
            let newest_before = || {
                let after_oldest = oldest_message.map_or(start, |oldest| oldest + 1);
                (after_oldest..from)
                    .rev()
                    .find(|&j| entries[j].kind.is_valid_cut())
            };
            cut = valid_from(from)
                .or_else(newest_before)
                .map_or(cut, |cut| past_a_bare_answer(entries, cut));
            break;
        }
    }
    while cut > start && entries[cut - 1].kind == EntryKind::Meta {
        cut -= 1;
    }
    // The first message kept decides whether a turn is split (Pi looks at a
    // model change before a user message and splits the turn before it).
    let cut_kind = entries[cut..]
        .iter()
        .map(|e| e.kind)
        .find(|k| k.is_message());
    let turn_start = (start..cut).rev().find(|&i| entries[i].kind.starts_turn());
    match (cut_kind, turn_start) {
        (Some(kind), Some(turn_start)) if !kind.starts_turn() => Cut {
            first_kept: cut,
            history: start..turn_start,
            turn_prefix: turn_start..cut,
        },
        _ => Cut {
            first_kept: cut,
            history: start..cut,
            turn_prefix: cut..cut,
        },
    }
}

/// `cut`, or the start of the next turn (the end, keeping nothing, when
/// there is none) when the first message `cut` keeps is a turn's bare
/// answer: an assistant message no tool result follows. That happens when
/// the keep budget is smaller than the turn's tool results, as in a small
/// window. Kept alone after the summary, such an answer reads as the reply
/// to it, with the request and the tool calls it answers summarised away;
/// a small model then answers the next request the same way, without
/// calling a tool (Qwen2.5-Coder 1.5B on llama.cpp did in every run). The
/// turn is summarised whole instead, which also takes one summary request,
/// not two (`docs/DEVIATIONS.md` S12).
fn past_a_bare_answer(entries: &[Sized], cut: usize) -> usize {
    let mut messages = (cut..entries.len()).filter(|&j| entries[j].kind.is_message());
    let Some(first) = messages.next() else {
        return cut;
    };
    let bare_answer = entries[first].kind == EntryKind::Assistant
        && messages
            .next()
            .is_none_or(|next| entries[next].kind != EntryKind::ToolResult);
    if !bare_answer {
        return cut;
    }
    (first + 1..entries.len())
        .find(|&j| entries[j].kind.starts_turn())
        .unwrap_or(entries.len())
}

#[cfg(test)]
mod tests {
    use super::EntryKind::*;
    use super::*;

    fn sized(entries: &[(EntryKind, u64)]) -> Vec<Sized> {
        entries
            .iter()
            .map(|&(kind, tokens)| Sized { kind, tokens })
            .collect()
    }

    #[test]
    fn whole_turns_before_the_kept_budget_are_summarised() {
        let entries = sized(&[(User, 100), (Assistant, 100), (User, 100), (Assistant, 100)]);
        let cut = find_cut(&entries, 0, 200);
        assert_eq!(
            cut,
            Cut {
                first_kept: 2,
                history: 0..2,
                turn_prefix: 2..2
            }
        );
    }

    #[test]
    fn a_tool_result_is_never_the_first_kept_entry() {
        // The budget is reached at the first tool result (index 2): the cut
        // moves forward to the next valid cut, the call after it.
        let entries = sized(&[
            (User, 10),
            (Assistant, 10),
            (ToolResult, 500),
            (Assistant, 10),
            (ToolResult, 10),
            (Assistant, 10),
        ]);
        let cut = find_cut(&entries, 0, 300);
        assert_eq!(cut.first_kept, 3);
        assert_eq!(cut.history, 0..0);
        assert_eq!(cut.turn_prefix, 0..3, "the call and its result go together");
    }

    #[test]
    fn a_turns_final_answer_is_never_kept_without_what_it_answers() {
        // The budget is reached at the tool result; the next valid cut is
        // the turn's final answer. The cut moves on to the next turn.
        let entries = sized(&[
            (User, 10),
            (Assistant, 10),
            (ToolResult, 500),
            (Assistant, 10),
            (User, 10),
            (Assistant, 10),
        ]);
        // When that turn is the last one (the first four entries), nothing
        // is kept: the whole branch is summarised.
        for entries in [&entries[..], &entries[..4]] {
            let cut = find_cut(entries, 0, 300);
            assert_eq!(
                cut,
                Cut {
                    first_kept: 4,
                    history: 0..4,
                    turn_prefix: 4..4
                },
                "{} entries",
                entries.len()
            );
        }
    }

    #[test]
    fn a_cut_inside_a_turn_summarises_its_beginning_apart() {
        let entries = sized(&[
            (User, 50),
            (Assistant, 50),
            (User, 10),
            (Assistant, 10),
            (ToolResult, 400),
            (Assistant, 10),
            (ToolResult, 400),
            (Assistant, 10),
        ]);
        let cut = find_cut(&entries, 0, 420);
        assert_eq!(
            cut,
            Cut {
                first_kept: 5,
                history: 0..2,
                turn_prefix: 2..5
            }
        );
    }

    #[test]
    fn a_budget_reached_only_at_the_oldest_message_summarises_that_message() {
        // An earlier compaction kept one long answer (index 1, from the
        // span's start): keeping it again would leave nothing to summarise
        // however long the session grows.
        let entries = sized(&[
            (Compaction, 0),
            (Assistant, 900),
            (User, 10),
            (Assistant, 10),
            (User, 10),
            (Assistant, 10),
        ]);
        let cut = find_cut(&entries, 1, 500);
        assert_eq!(
            cut,
            Cut {
                first_kept: 2,
                history: 1..2,
                turn_prefix: 2..2
            }
        );
        assert!(cut.summarises_anything(&entries));
    }

    /// A run stopped to compact before the model reads its tool results:
    /// the newest results pass the budget, and no valid cut follows them.
    /// The cut went nowhere and nothing was compacted.
    #[test]
    fn results_past_the_budget_at_the_end_are_kept_with_the_call_they_answer() {
        let entries = sized(&[
            (User, 10),
            (Assistant, 10),
            (ToolResult, 900),
            (Assistant, 10),
            (ToolResult, 900),
        ]);
        let cut = find_cut(&entries, 0, 500);
        assert_eq!(
            cut,
            Cut {
                first_kept: 3,
                history: 0..0,
                turn_prefix: 0..3
            }
        );
        assert!(cut.summarises_anything(&entries));
    }

    #[test]
    fn a_span_of_one_message_is_kept_whole() {
        let entries = sized(&[(User, 900)]);
        let cut = find_cut(&entries, 0, 500);
        assert!(!cut.summarises_anything(&entries));
    }

    #[test]
    fn a_budget_never_reached_summarises_nothing() {
        let entries = sized(&[(User, 10), (Assistant, 10)]);
        let cut = find_cut(&entries, 0, 1000);
        assert_eq!(cut.first_kept, 0);
        assert!(!cut.summarises_anything(&entries));
    }

    #[test]
    fn the_cut_moves_back_over_model_changes_before_it() {
        let entries = sized(&[
            (User, 100),
            (Assistant, 100),
            (Meta, 0),
            (User, 100),
            (Assistant, 100),
        ]);
        let cut = find_cut(&entries, 0, 200);
        assert_eq!(cut.first_kept, 2);
        assert_eq!(cut.history, 0..2);
    }

    #[test]
    fn the_span_starts_at_the_previous_compactions_first_kept_entry() {
        let entries = sized(&[
            (User, 100),
            (Assistant, 100),
            (User, 100),
            (Compaction, 0),
            (Assistant, 100),
            (User, 100),
            (Assistant, 100),
        ]);
        let cut = find_cut(&entries, 2, 200);
        assert_eq!(cut.first_kept, 5);
        assert_eq!(cut.history, 2..5);
    }
}
