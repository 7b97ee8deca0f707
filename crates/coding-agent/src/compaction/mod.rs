//! Compaction: when the context fills the model's window, the older part of
//! the conversation is replaced by a structured summary the model writes,
//! and the newest messages are kept as they are (Pi's design).
//!
//! - [`tokens`]: how full the context is (provider usage, estimates for the rest);
//! - [`cut`]: what is summarised and what is kept (never a tool call without its result);
//! - [`summary`]: the request the summariser reads and the summary's structure;
//! - [`pieces`]: a history too long for one summary request, cut into pieces that fit;
//! - [`oversize`]: a tool result too large for any window left is cut before it is sent;
//! - [`branch`]: the summary of a branch `/tree` leaves, from the same summariser;
//! - this module: the settings, the plan taken from the session's branch, and
//!   the summariser's calls. [`crate::app::AgentSession::compact`] runs it and
//!   writes the entry ([`crate::session::compacted`]).
//!
//! Beyond Pi (`docs/DEVIATIONS.md`): reserve and keep are scaled to the window
//! (at most a quarter of it each), so a small local window does not compact
//! after every turn; keep also leaves room under the threshold once the
//! system prompt, the tools and a summary are in, so a due compaction always
//! frees something; no summary request is sent when there is nothing to
//! summarise; and a history larger than the window is summarised piece by
//! piece instead of overflowing the summary request. Summaries are capped
//! as Pi caps them (0.8 and 0.5 of reserve).

pub mod branch;
pub mod cut;
pub mod oversize;
pub mod pieces;
pub mod summary;
pub mod tokens;

use std::collections::BTreeSet;
use std::sync::Arc;

use agent_ai::{Message, Model, Provider, ThinkingLevel};
use serde::Deserialize;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::session::Entry;
use crate::session::SessionError;
use crate::session::compacted::{CompactionDetails, CompactionResult, entry_message};
use crate::support::one_shot::{Question, Unanswered, ask_once};
use cut::{EntryKind, Sized, find_cut};
use pieces::Piece;
use summary::{
    SUMMARY_SYSTEM_PROMPT, history_request, join_split_turn, turn_prefix_request, with_file_lists,
    without_file_lists,
};
pub use summary::{
    SummaryKind, branch_summary_message_text, is_summary_message, summary_message_text,
};

/// The window assumed for a model nobody told us about (Pi's default for
/// custom models).
pub const DEFAULT_CONTEXT_WINDOW: u64 = 128_000;

/// `compaction.*` in settings.json, with Pi's defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct CompactionSettings {
    /// Compact automatically when the context passes the threshold.
    pub enabled: bool,
    /// Tokens kept free for the next answer: compaction starts when the
    /// context passes `contextWindow - reserveTokens`.
    pub reserve_tokens: u64,
    /// Tokens of the newest messages kept as they are.
    pub keep_recent_tokens: u64,
}

impl Default for CompactionSettings {
    fn default() -> Self {
        CompactionSettings {
            enabled: true,
            reserve_tokens: 16_384,
            keep_recent_tokens: 20_000,
        }
    }
}

impl CompactionSettings {
    /// Reserve and keep for a window of `window` tokens: the settings, but
    /// at most a quarter of the window each.
    pub fn scaled(&self, window: u64) -> (u64, u64) {
        let quarter = window / 4;
        (
            self.reserve_tokens.min(quarter),
            self.keep_recent_tokens.min(quarter),
        )
    }

    /// What a compaction in `window` keeps and may write, when `fixed` tokens
    /// of every request are the system prompt and the tool definitions.
    /// Keep is the scaled setting, but at most half the room a conversation
    /// has under the threshold once those and a summary of the longest
    /// allowed size are in: a compaction always leaves room for new work.
    /// In a small window a long system prompt is a large share (1,700 of
    /// 4,096 tokens with the seven tools), and a keep of a quarter of the
    /// window kept everything there was to cut.
    pub fn budget(&self, window: u64, fixed: u64) -> Budget {
        let (reserve, keep) = self.scaled(window);
        let summary = Budget::share(reserve, Budget::HISTORY_SUMMARY_TENTHS);
        let room = window
            .saturating_sub(reserve)
            .saturating_sub(fixed)
            .saturating_sub(summary);
        Budget {
            keep: keep.min(room / 2),
            reserve,
            window,
            chars_per_token: pieces::CHARS_PER_TOKEN,
        }
    }

    /// Whether a context of `tokens` should be compacted in `window`.
    pub fn should_compact(&self, tokens: u64, window: u64) -> bool {
        let (reserve, _) = self.scaled(window);
        self.enabled && tokens > window.saturating_sub(reserve)
    }
}

/// A context window for well-known models, when neither settings nor the
/// server say.
pub fn known_context_window(model_id: &str) -> Option<u64> {
    let id = model_id.to_ascii_lowercase();
    let table: &[(&str, u64)] = &[
        ("claude", 200_000),
        ("gpt-4.1", 1_047_576),
        ("gpt-4o", 128_000),
        ("gpt-5", 400_000),
        ("o3", 200_000),
        ("o4", 200_000),
        ("gemini", 1_048_576),
        ("qwen2.5-coder", 32_768),
        ("llama-3", 131_072),
    ];
    table
        .iter()
        .find(|(prefix, _)| id.starts_with(prefix) || id.contains(&format!("/{prefix}")))
        .map(|&(_, window)| window)
}

/// Why a compaction did not happen (Pi's texts).
#[derive(Debug, thiserror::Error)]
pub enum CompactionError {
    /// The newest entry is a compaction already.
    #[error("Already compacted")]
    AlreadyCompacted,
    /// The kept part would be everything.
    #[error("Nothing to compact (session too small)")]
    NothingToCompact,
    /// Aborted while the summariser worked.
    #[error("Compaction cancelled")]
    Cancelled,
    /// The summariser failed.
    #[error("Summarization failed: {0}")]
    Summary(String),
    /// The summariser failed on the split turn's beginning.
    #[error("Turn prefix summarization failed: {0}")]
    TurnPrefix(String),
    /// The entry could not be saved.
    #[error(transparent)]
    Session(#[from] SessionError),
    /// A PreCompact hook refused (its reason).
    #[error("{0}")]
    Blocked(String),
}

/// What one compaction keeps, and how long its summaries may be
/// ([`CompactionSettings::budget`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Budget {
    /// Tokens of the newest messages kept as they are.
    pub keep: u64,
    /// Tokens kept free for the next answer (`reserveTokens`, scaled).
    pub reserve: u64,
    /// The model's window, which a summary request must fit.
    pub window: u64,
    /// Characters of conversation a token of it holds, as far as known
    /// ([`Budget::with_estimate_scale`]).
    pub chars_per_token: f64,
}

impl Budget {
    /// The longest summary of the history, in tenths of reserve (Pi's 0.8).
    const HISTORY_SUMMARY_TENTHS: u64 = 8;
    /// The longest summary of a split turn's beginning (Pi's 0.5).
    const TURN_PREFIX_SUMMARY_TENTHS: u64 = 5;

    /// `tenths` tenths of `reserve`, rounded down, as a request's limit.
    fn share(reserve: u64, tenths: u64) -> u64 {
        reserve * tenths / 10
    }

    /// The longest summary of the history: Pi's `0.8 * reserveTokens`.
    pub fn history_summary_tokens(&self) -> u32 {
        Self::limit(Self::share(self.reserve, Self::HISTORY_SUMMARY_TENTHS))
    }

    /// The longest summary of a split turn's beginning: Pi's
    /// `0.5 * reserveTokens`.
    pub fn turn_prefix_summary_tokens(&self) -> u32 {
        Self::limit(Self::share(self.reserve, Self::TURN_PREFIX_SUMMARY_TENTHS))
    }

    /// The budget for a server known to count `scale` tokens per estimated
    /// one ([`tokens::EstimateScale`], learned from a refused request): the
    /// summary requests hold fewer characters.
    #[must_use]
    pub fn with_estimate_scale(self, scale: f64) -> Budget {
        #[allow(clippy::cast_precision_loss)]
        let learned = tokens::CHARS_PER_TOKEN as f64 / scale.max(1.0);
        Budget {
            chars_per_token: self.chars_per_token.min(learned),
            ..self
        }
    }

    /// Characters of conversation a summary request asking for
    /// `summary_tokens` may hold, when `fixed_chars` of it are the
    /// instructions and an earlier summary.
    fn conversation_chars(&self, summary_tokens: u32, fixed_chars: usize) -> usize {
        let tokens = self.window.saturating_sub(u64::from(summary_tokens));
        self.chars(tokens).saturating_sub(fixed_chars)
    }

    /// The characters `tokens` tokens hold, rounded down.
    fn chars(&self, tokens: u64) -> usize {
        // A window is far below f64's exact integers.
        #[allow(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            clippy::cast_precision_loss
        )]
        let chars = (tokens as f64 * self.chars_per_token) as usize;
        chars
    }

    /// `tokens` as a request's limit (which is a `u32`).
    fn limit(tokens: u64) -> u32 {
        u32::try_from(tokens).unwrap_or(u32::MAX)
    }
}

/// What a compaction summarises and keeps, taken from the session's branch.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// The id of the first entry kept; `None` when nothing is kept (the
    /// compaction entry then names itself, see
    /// [`SessionManager::append_compaction`](crate::session::SessionManager::append_compaction)).
    pub first_kept_entry_id: Option<String>,
    /// Whole turns to summarise.
    pub history: Vec<Message>,
    /// The beginning of a split turn, summarised apart.
    pub turn_prefix: Vec<Message>,
    /// The previous compaction's summary, merged into the new one.
    pub previous_summary: Option<String>,
    /// The files the summarised work read and changed.
    pub details: CompactionDetails,
    /// The context's size now.
    pub tokens_before: u64,
    /// What the compaction keeps and how long its summaries may be.
    pub budget: Budget,
}

impl Plan {
    /// The estimated tokens of what would be summarised.
    pub fn summarised_tokens(&self) -> u64 {
        self.history
            .iter()
            .chain(&self.turn_prefix)
            .map(tokens::estimate_tokens)
            .sum()
    }
}

/// Plans a compaction of `branch` keeping about `budget.keep` tokens.
pub fn plan(
    branch: &[&Entry],
    budget: Budget,
    tokens_before: u64,
) -> Result<Plan, CompactionError> {
    if branch.last().and_then(|e| e.kind()) == Some("compaction") {
        return Err(CompactionError::AlreadyCompacted);
    }
    let previous = branch.iter().rposition(|e| e.kind() == Some("compaction"));
    let previous_compaction = previous.map(|at| branch[at].value());
    let start = previous.map_or(0, |at| {
        let first_kept = previous_compaction
            .as_ref()
            .and_then(|c| c.get("firstKeptEntryId"))
            .and_then(Value::as_str);
        branch[..at]
            .iter()
            .position(|e| e.id() == first_kept)
            .unwrap_or(at)
    });
    let messages: Vec<Option<Message>> = branch.iter().map(|e| entry_message(e)).collect();
    let sized: Vec<Sized> = branch
        .iter()
        .zip(&messages)
        .map(|(entry, message)| Sized {
            kind: entry_kind(entry),
            tokens: message.as_ref().map_or(0, tokens::estimate_tokens),
        })
        .collect();
    let cut = find_cut(&sized, start, budget.keep);
    if !cut.summarises_anything(&sized) {
        return Err(CompactionError::NothingToCompact);
    }
    let first_kept_entry_id = branch
        .get(cut.first_kept)
        .and_then(|entry| entry.id())
        .map(str::to_owned);
    let take = |range: std::ops::Range<usize>| -> Vec<Message> {
        messages[range].iter().flatten().cloned().collect()
    };
    let history = take(cut.history.clone());
    let turn_prefix = take(cut.turn_prefix.clone());
    let previous_summary = previous_compaction
        .as_ref()
        .and_then(|e| e.get("summary"))
        .and_then(Value::as_str)
        .map(str::to_owned);
    let previous_details = previous_compaction
        .as_ref()
        .and_then(|e| e.get("details"))
        .and_then(|d| serde_json::from_value(d.clone()).ok());
    let details = file_details(
        history.iter().chain(&turn_prefix),
        previous_details.as_ref(),
    );
    Ok(Plan {
        first_kept_entry_id,
        history,
        turn_prefix,
        previous_summary,
        details,
        tokens_before,
        budget,
    })
}

fn entry_kind(entry: &Entry) -> EntryKind {
    match entry.kind() {
        Some("message") => match entry.role() {
            Some("user") => EntryKind::User,
            Some("bashExecution") => EntryKind::Bash,
            Some("assistant") => EntryKind::Assistant,
            Some("toolResult") => EntryKind::ToolResult,
            _ => EntryKind::OtherMessage,
        },
        Some("compaction") => EntryKind::Compaction,
        Some("custom_message" | "branch_summary") => EntryKind::Inserted,
        _ => EntryKind::Meta,
    }
}

/// The paths `read`, `write` and `edit` calls named, with an earlier
/// compaction's lists: read-only files and changed files, each sorted.
fn file_details<'a>(
    messages: impl Iterator<Item = &'a Message>,
    previous: Option<&CompactionDetails>,
) -> CompactionDetails {
    let mut read: BTreeSet<String> = BTreeSet::new();
    let mut modified: BTreeSet<String> = BTreeSet::new();
    if let Some(previous) = previous {
        read.extend(previous.read_files.iter().cloned());
        modified.extend(previous.modified_files.iter().cloned());
    }
    for message in messages {
        let Message::Assistant(assistant) = message else {
            continue;
        };
        for call in assistant.tool_calls() {
            let Some(path) = call.arguments.get("path").and_then(Value::as_str) else {
                continue;
            };
            match call.name.as_str() {
                "read" => {
                    read.insert(path.to_owned());
                }
                "write" | "edit" => {
                    modified.insert(path.to_owned());
                }
                _ => {}
            }
        }
    }
    CompactionDetails {
        read_files: read.difference(&modified).cloned().collect(),
        modified_files: modified.into_iter().collect(),
    }
}

/// Asks `provider` for the summary of `plan` (and of the split turn's
/// beginning, when there is one); the result for the entry. A history too
/// long for one request is summarised in [`pieces`], each merged into the
/// summary of those before it; `progress(done, of)` is told after each of
/// those requests (minutes apiece on a local model).
///
/// A summary request the server refuses as too long, saying how long it
/// was, teaches `scale` how the server counts (as a refused prompt does),
/// and the summary is asked again in pieces cut by it: the same request
/// sent again was refused again, at every compaction, until a prompt
/// overflowed the window.
#[allow(clippy::too_many_arguments)]
pub async fn summarise(
    mut plan: Plan,
    focus: Option<&str>,
    model: &Model,
    provider: &Arc<dyn Provider>,
    reasoning: Option<ThinkingLevel>,
    scale: &tokens::EstimateScale,
    cancel: &CancellationToken,
    progress: &(dyn Fn(usize, usize) + Send + Sync),
) -> Result<CompactionResult, CompactionError> {
    let summariser = Summariser {
        model,
        provider,
        reasoning,
        cancel,
    };
    loop {
        match summarise_once(&plan, focus, &summariser, progress).await {
            Ok(result) => return Ok(result),
            Err(Refusal::Final(error)) => return Err(error),
            Err(Refusal::TooLong { error, size, said }) => {
                scale.learn(said, size);
                let smaller = plan.budget.with_estimate_scale(scale.get());
                if smaller.chars_per_token >= plan.budget.chars_per_token {
                    return Err(error);
                }
                tracing::warn!(
                    "The summary request was refused as too long ({said} tokens): asking again in smaller pieces"
                );
                plan.budget = smaller;
            }
        }
    }
}

/// The model and provider a compaction's summary requests go to.
struct Summariser<'a> {
    model: &'a Model,
    provider: &'a Arc<dyn Provider>,
    reasoning: Option<ThinkingLevel>,
    cancel: &'a CancellationToken,
}

impl Summariser<'_> {
    /// One summary request of at most `max_tokens`: its text, or its error
    /// message. It thinks at the session's level (Pi: only a level other
    /// than `off`). A refusal that says the request was too long, and how
    /// long, is a [`Refusal::TooLong`].
    async fn ask(
        &self,
        request: String,
        max_tokens: u32,
    ) -> Result<Result<String, String>, Refusal> {
        let chars = SUMMARY_SYSTEM_PROMPT.chars().count() + request.chars().count();
        let question = Question {
            system_prompt: SUMMARY_SYSTEM_PROMPT,
            request,
            max_tokens,
            reasoning: self.reasoning,
        };
        match ask_once(self.model, self.provider, question, self.cancel).await {
            Ok(text) => Ok(Ok(text)),
            Err(Unanswered::Failed(error)) => {
                match agent_ai::overflow::overflow_request_tokens(&error) {
                    Some(said) if agent_ai::overflow::is_overflow_error(&error, None) => {
                        Err(Refusal::TooLong {
                            error: CompactionError::Summary(error),
                            size: tokens::RequestSize {
                                counted: 0,
                                estimated: (chars as u64).div_ceil(tokens::CHARS_PER_TOKEN),
                            },
                            said,
                        })
                    }
                    _ => Ok(Err(error)),
                }
            }
            Err(Unanswered::Cancelled) => Err(Refusal::Final(CompactionError::Cancelled)),
        }
    }
}

/// Why [`summarise_once`] got no summary.
enum Refusal {
    /// The server refused a request as too long: it held `said` tokens
    /// where `size` was estimated.
    TooLong {
        error: CompactionError,
        size: tokens::RequestSize,
        said: u64,
    },
    /// Any other end.
    Final(CompactionError),
}

impl Refusal {
    /// The error, whatever the server said of the request's size.
    fn into_error(self) -> CompactionError {
        match self {
            Refusal::TooLong { error, .. } | Refusal::Final(error) => error,
        }
    }
}

impl From<CompactionError> for Refusal {
    fn from(error: CompactionError) -> Self {
        Refusal::Final(error)
    }
}

/// [`summarise`] with `plan`'s budget as it is.
async fn summarise_once(
    plan: &Plan,
    focus: Option<&str>,
    summariser: &Summariser<'_>,
    progress: &(dyn Fn(usize, usize) + Send + Sync),
) -> Result<CompactionResult, Refusal> {
    let (mut history_pieces, prefix_piece) = plan_pieces(plan, focus);
    let left_out = pieces::keep_newest(&mut history_pieces);
    if history_pieces.len() > 1 {
        // Requests one after another, each of up to a window: say why it
        // takes a while.
        tracing::warn!("{}", pieces::notice(history_pieces.len(), left_out));
    }
    let history_limit = plan.budget.history_summary_tokens();
    let mut summary = plan.previous_summary.clone();
    for (done, piece) in (1..).zip(&history_pieces) {
        let request = history_request(&piece.text, summary.as_deref(), focus);
        let answer = summariser.ask(request, history_limit).await?;
        summary = Some(answer.map_err(CompactionError::Summary)?);
        if history_pieces.len() > 1 {
            progress(done, history_pieces.len());
        }
    }
    // Nothing new before the split turn: the earlier summary stays as it
    // is, but for its file lists, appended anew below.
    let mut history = summary.map_or_else(
        || "No prior history.".to_owned(),
        |summary| without_file_lists(&summary).to_owned(),
    );
    if left_out > 0 {
        history = format!("{history}\n\n{}", pieces::left_out_note(left_out));
    }
    let summary = match prefix_piece {
        None => history,
        Some(piece) => {
            let prefix = summariser
                .ask(
                    turn_prefix_request(&piece.text),
                    plan.budget.turn_prefix_summary_tokens(),
                )
                .await?
                .map_err(CompactionError::TurnPrefix)?;
            join_split_turn(&history, &prefix)
        }
    };
    Ok(CompactionResult {
        summary: with_file_lists(
            &summary,
            &plan.details.read_files,
            &plan.details.modified_files,
        ),
        first_kept_entry_id: plan.first_kept_entry_id.clone().unwrap_or_default(),
        tokens_before: plan.tokens_before,
        details: plan.details.clone(),
    })
}

/// The history's pieces and the split turn's beginning, each piece a
/// request that fits the window. A history that fits one request with the
/// earlier summary is one piece, as Pi sends it; a longer one is cut with
/// room for the summary of the pieces before (as long as a summary may be).
/// A turn beginning too long for one request is summarised with the history
/// but for its last piece.
fn plan_pieces(plan: &Plan, focus: Option<&str>) -> (Vec<Piece>, Option<Piece>) {
    let budget = plan.budget;
    let limit = budget.history_summary_tokens();
    let previous = plan.previous_summary.as_deref().unwrap_or_default();
    let instructions = SUMMARY_SYSTEM_PROMPT.chars().count()
        + history_request("", Some(""), focus).chars().count();
    let whole = budget.conversation_chars(limit, instructions + previous.chars().count());
    // A summary of the pieces before: at most `limit` tokens.
    let running = budget.chars(u64::from(limit)).max(previous.chars().count());
    let room = budget.conversation_chars(limit, instructions + running);
    let written = pieces::written(&plan.history);
    let mut history = pieces::cut(&written, whole);
    if history.len() > 1 {
        history = pieces::cut(&written, room);
    }
    let prefix_instructions =
        SUMMARY_SYSTEM_PROMPT.chars().count() + turn_prefix_request("").chars().count();
    let prefix_room =
        budget.conversation_chars(budget.turn_prefix_summary_tokens(), prefix_instructions);
    let written = pieces::written(&plan.turn_prefix);
    let mut prefix = pieces::cut(&written, prefix_room);
    if prefix.len() > 1 {
        prefix = pieces::cut(&written, room.min(prefix_room));
    }
    let last = prefix.pop();
    history.extend(prefix);
    (history, last)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn user(id: &str, text: &str) -> Entry {
        Entry::of(
            &json!({"type":"message","id":id,"message":{"role":"user","content":text,"timestamp":1}}),
        )
    }

    fn answer(id: &str, text: &str, calls: Value) -> Entry {
        let mut content = vec![json!({"type":"text","text":text})];
        if let Value::Array(calls) = calls {
            content.extend(calls);
        }
        Entry::of(
            &json!({"type":"message","id":id,"message":{"role":"assistant","content":content,
            "api":"a","provider":"p","model":"m","usage":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},
            "stopReason":"stop","timestamp":2}}),
        )
    }

    fn keep(tokens: u64) -> Budget {
        Budget {
            keep: tokens,
            reserve: 16_384,
            window: 200_000,
            chars_per_token: pieces::CHARS_PER_TOKEN,
        }
    }

    #[test]
    fn reserve_and_keep_are_at_most_a_quarter_of_the_window() {
        let settings = CompactionSettings::default();
        assert_eq!(settings.scaled(200_000), (16_384, 20_000));
        assert_eq!(settings.scaled(8192), (2048, 2048));
        // Pi would compact an 8k window after every turn (8192 - 16384 < 0).
        assert!(!settings.should_compact(5000, 8192));
        assert!(settings.should_compact(6200, 8192));
        let off = CompactionSettings {
            enabled: false,
            ..settings
        };
        assert!(!off.should_compact(1_000_000, 8192));
    }

    #[test]
    fn keep_leaves_room_under_the_threshold_once_the_fixed_part_and_a_summary_are_in() {
        let settings = CompactionSettings::default();
        // A large window: the fixed part is small, keep is the setting.
        let large = settings.budget(200_000, 3_000);
        assert_eq!((large.keep, large.reserve), (20_000, 16_384));
        assert_eq!(large.history_summary_tokens(), 13_107, "Pi's 0.8 x reserve");
        assert_eq!(
            large.turn_prefix_summary_tokens(),
            8_192,
            "Pi's 0.5 x reserve"
        );
        // 4096 tokens with the seven tools' prompt (about 1,700): of the
        // 3,072 under the threshold, 1,700 are fixed and 819 go to the
        // summary; keep is half of the 553 left, not a quarter of the window.
        let small = settings.budget(4096, 1_700);
        assert_eq!(small.reserve, 1024);
        assert_eq!(small.history_summary_tokens(), 819);
        assert_eq!(small.keep, (3072 - 1_700 - 819) / 2);
        // With a short prompt the quarter of the window is the bound again.
        assert_eq!(settings.budget(4096, 200).keep, 1024);
        // A prompt that fills the window leaves nothing to keep.
        assert_eq!(settings.budget(4096, 5_000).keep, 0);
    }

    #[test]
    fn a_plan_summarises_old_turns_keeps_new_ones_and_lists_files() {
        let calls = json!([
            {"type":"toolCall","id":"c1","name":"read","arguments":{"path":"a.rs"}},
            {"type":"toolCall","id":"c2","name":"edit","arguments":{"path":"b.rs"}},
            {"type":"toolCall","id":"c3","name":"read","arguments":{"path":"b.rs"}}
        ]);
        let entries = [
            user("u1", &"x".repeat(400)),
            answer("a1", "ok", calls),
            user("u2", &"y".repeat(400)),
            answer("a2", "done", Value::Null),
        ];
        let branch: Vec<&Entry> = entries.iter().collect();
        let plan = plan(&branch, keep(100), 500).unwrap();
        assert_eq!(plan.first_kept_entry_id.as_deref(), Some("u2"));
        assert_eq!(plan.history.len(), 2);
        assert!(plan.turn_prefix.is_empty());
        assert_eq!(
            plan.details,
            CompactionDetails {
                read_files: vec!["a.rs".into()],
                modified_files: vec!["b.rs".into()],
            }
        );
    }

    #[test]
    fn nothing_is_planned_when_everything_fits_or_the_last_entry_is_a_compaction() {
        let entries = [user("u1", "hi"), answer("a1", "hello", Value::Null)];
        let branch: Vec<&Entry> = entries.iter().collect();
        assert!(matches!(
            plan(&branch, keep(20_000), 10),
            Err(CompactionError::NothingToCompact)
        ));
        let compaction =
            Entry::of(&json!({"type":"compaction","id":"c","summary":"S","firstKeptEntryId":"a1"}));
        let branch: Vec<&Entry> = entries.iter().chain([&compaction]).collect();
        assert!(matches!(
            plan(&branch, keep(1), 10),
            Err(CompactionError::AlreadyCompacted)
        ));
    }

    /// A compaction that kept nothing names itself as the first kept entry;
    /// one exchange later there is nothing new to summarise before the
    /// kept part. It planned a "compaction" of the compaction entry alone:
    /// no request, the old summary saved again as a new entry, and success
    /// reported for freeing nothing.
    #[test]
    fn one_exchange_after_a_compaction_that_kept_nothing_is_nothing_to_compact() {
        let entries = [
            user("u1", &"x".repeat(400)),
            answer("a1", "ok", Value::Null),
            Entry::of(&json!({"type":"compaction","id":"c","summary":"S1","firstKeptEntryId":"c"})),
            user("u2", &"y".repeat(400)),
            answer("a2", "done", Value::Null),
        ];
        let branch: Vec<&Entry> = entries.iter().collect();
        assert!(matches!(
            plan(&branch, keep(20_000), 500),
            Err(CompactionError::NothingToCompact)
        ));
    }

    #[test]
    fn a_second_compaction_starts_at_the_first_kept_entry_and_merges_the_summary() {
        let entries = [
            user("u1", &"x".repeat(400)),
            answer("a1", "ok", Value::Null),
            user("u2", &"y".repeat(400)),
            Entry::of(
                &json!({"type":"compaction","id":"c","summary":"S1","firstKeptEntryId":"u2","details":{"readFiles":["old.rs"],"modifiedFiles":[]}}),
            ),
            answer("a2", "done", Value::Null),
            user("u3", &"z".repeat(400)),
            answer("a3", "fine", Value::Null),
        ];
        let branch: Vec<&Entry> = entries.iter().collect();
        let plan = plan(&branch, keep(100), 500).unwrap();
        assert_eq!(plan.first_kept_entry_id.as_deref(), Some("u3"));
        assert_eq!(plan.history.len(), 2, "u2 and a2; u1 and a1 are in S1");
        assert_eq!(plan.previous_summary.as_deref(), Some("S1"));
        assert_eq!(plan.details.read_files, ["old.rs"]);
    }

    /// A summariser's answer of `text`.
    fn summary_answer(text: String) -> agent_ai::AssistantMessage {
        agent_ai::testing::ScriptedProvider::reply(vec![agent_ai::AssistantContent::Text(
            agent_ai::TextContent {
                text,
                text_signature: None,
            },
        )])
    }

    /// A server's refusal of a request as too long: it held `said` tokens.
    fn refused_as_too_long(said: u64) -> agent_ai::AssistantMessage {
        let mut refused = agent_ai::testing::ScriptedProvider::reply(Vec::new());
        refused.stop_reason = agent_ai::StopReason::Error;
        refused.error_message = Some(format!(
            "This model's maximum context length is 4000 tokens. However, your messages resulted in {said} tokens."
        ));
        refused
    }

    /// What [`summarise_scripted`] saw: the outcome, the requests' texts,
    /// and the progress reported.
    type Summarised = (
        Result<CompactionResult, CompactionError>,
        Vec<String>,
        Vec<(usize, usize)>,
    );

    /// Summarises `plan` with a summariser that answers `answers` in turn,
    /// learning into `scale`.
    fn summarise_scripted(
        plan: Plan,
        answers: impl IntoIterator<Item = agent_ai::AssistantMessage>,
        scale: &tokens::EstimateScale,
    ) -> Summarised {
        use agent_ai::testing::ScriptedProvider;

        let provider = Arc::new(ScriptedProvider::from_messages(answers));
        let dyn_provider: Arc<dyn Provider> = provider.clone();
        let reported = std::sync::Mutex::new(Vec::new());
        let outcome = futures::executor::block_on(summarise(
            plan,
            None,
            &ScriptedProvider::model(),
            &dyn_provider,
            None,
            scale,
            &CancellationToken::new(),
            &|done, of| reported.lock().unwrap().push((done, of)),
        ));
        let asked = provider
            .requests()
            .iter()
            .map(|context| match context.messages.as_slice() {
                [Message::User(user)] => crate::session::user_text(&user.content),
                other => panic!("one user message, not {other:?}"),
            })
            .collect();
        (outcome, asked, reported.into_inner().unwrap())
    }

    /// Summarises `plan` with a summariser that answers `answers` in turn:
    /// the requests' texts, the summary, and the progress reported.
    fn summarise_with(
        plan: Plan,
        answers: impl IntoIterator<Item = String>,
    ) -> (Vec<String>, String, Vec<(usize, usize)>) {
        let answers = answers.into_iter().map(summary_answer);
        let (outcome, asked, reported) =
            summarise_scripted(plan, answers, &tokens::EstimateScale::default());
        (asked, outcome.unwrap().summary, reported)
    }

    /// A plan of `history`, with nothing kept and no files, in a
    /// 4,000-token window.
    fn small_plan(history: Vec<Message>, previous: Option<&str>) -> Plan {
        Plan {
            first_kept_entry_id: Some("kept".into()),
            history,
            turn_prefix: Vec::new(),
            previous_summary: previous.map(str::to_owned),
            details: CompactionDetails::default(),
            tokens_before: 0,
            budget: CompactionSettings::default().budget(4000, 0),
        }
    }

    /// Summarises a history of `count` user messages of 3,000 characters
    /// in a 4,000-token window (one message a request): the requests' texts,
    /// the summary, and the progress reported.
    fn summarise_long_history(
        count: usize,
        previous: Option<&str>,
    ) -> (Vec<String>, String, Vec<(usize, usize)>) {
        let history = (1..=count)
            .map(|n| agent_ai::UserMessage::text(format!("m{n}:{}", "x".repeat(3000))).into())
            .collect();
        summarise_with(
            small_plan(history, previous),
            (1..=count).map(|n| format!("S{n}")),
        )
    }

    /// A split turn with nothing new before it carries the earlier summary
    /// on as it is: its file lists must not come twice. They did, once from
    /// the earlier summary and once appended anew.
    #[test]
    fn an_earlier_summary_carried_on_whole_holds_its_file_lists_once() {
        let files = CompactionDetails {
            read_files: vec!["a.txt".into()],
            modified_files: vec!["b.txt".into()],
        };
        let lists = with_file_lists("", &files.read_files, &files.modified_files);
        let mut plan = small_plan(Vec::new(), Some(&format!("## Goal\nONE{lists}")));
        plan.turn_prefix = vec![agent_ai::UserMessage::text("go on").into()];
        plan.details = files;
        let (asked, summary, _) = summarise_with(plan, ["## Goal\nTWO".to_owned()]);
        assert_eq!(asked.len(), 1, "the turn's beginning only");
        assert_eq!(
            summary,
            format!("## Goal\nONE\n\n---\n\n**Turn Context (split turn):**\n\n## Goal\nTWO{lists}")
        );
    }

    #[test]
    fn a_history_longer_than_the_window_is_summarised_piece_by_piece() {
        let (asked, summary, progress) = summarise_long_history(3, Some("S0"));
        assert_eq!(asked.len(), 3, "one message a request");
        for (n, request) in asked.iter().enumerate() {
            assert!(
                request.starts_with(&format!("<conversation>\n[User]: m{}:x", n + 1)),
                "{request}"
            );
            // Each merges into the summary of all before it.
            assert!(
                request.contains(&format!("<previous-summary>\nS{n}\n</previous-summary>")),
                "{request}"
            );
            // 4,000 tokens less the 800 of the summary, at 3 characters each.
            assert!(request.chars().count() < 3200 * 3, "{}", request.len());
        }
        assert_eq!(summary, "S3");
        assert_eq!(progress, [(1, 3), (2, 3), (3, 3)]);
    }

    #[test]
    fn a_history_of_more_pieces_than_a_compaction_sends_keeps_the_newest_and_says_so() {
        let (asked, summary, _) = summarise_long_history(pieces::MAX_PIECES + 2, None);
        assert_eq!(asked.len(), pieces::MAX_PIECES);
        assert!(asked[0].starts_with("<conversation>\n[User]: m3:x"));
        assert!(!asked[0].contains("<previous-summary>"), "{}", asked[0]);
        assert_eq!(
            summary,
            format!("S{}\n\n{}", pieces::MAX_PIECES, pieces::left_out_note(2))
        );
    }

    /// A server whose tokenizer counts more than the estimate refuses the
    /// summary request as too long. The same request went again at every
    /// compaction, refused every time.
    #[test]
    fn a_summary_request_refused_as_too_long_is_asked_again_in_smaller_pieces() {
        let history = (1..=4)
            .map(|n| agent_ai::UserMessage::text(format!("m{n}:{}", "x".repeat(1500))).into())
            .collect();
        let answers = [refused_as_too_long(9000)]
            .into_iter()
            .chain((1..=8).map(|n| summary_answer(format!("S{n}"))));
        let scale = tokens::EstimateScale::default();
        let (outcome, asked, _) = summarise_scripted(small_plan(history, None), answers, &scale);
        let sizes: Vec<usize> = asked.iter().map(String::len).collect();
        assert!(sizes.len() > 2, "refused, then pieces: {sizes:?}");
        assert!(
            sizes[1..].iter().all(|&size| size < sizes[0] / 2),
            "each piece far smaller than the refused request: {sizes:?}"
        );
        assert_eq!(outcome.unwrap().summary, format!("S{}", sizes.len() - 1));
        assert!(
            scale.get() > 1.0,
            "the session learned how the server counts"
        );
    }

    /// A refusal that shows nothing smaller to try is the compaction's error.
    #[test]
    fn a_summary_request_refused_again_at_the_size_learned_fails() {
        let history = vec![agent_ai::UserMessage::text("m1").into()];
        let (outcome, asked, _) = summarise_scripted(
            small_plan(history, None),
            [refused_as_too_long(1)],
            &tokens::EstimateScale::default(),
        );
        let error = outcome.unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with("Summarization failed: This model's maximum"),
            "{error}"
        );
        assert_eq!(asked.len(), 1);
    }

    #[test]
    fn well_known_models_have_a_window() {
        assert_eq!(known_context_window("claude-sonnet-4-5"), Some(200_000));
        assert_eq!(known_context_window("gpt-4o-mini"), Some(128_000));
        assert_eq!(known_context_window("my-local-model"), None);
    }
}
