//! The session's counts and token totals, in Pi's `SessionStats` shape:
//! what RPC `get_session_stats` answers and `/session` shows.

use std::path::PathBuf;

use agent_ai::Message;
use serde::Serialize;

use super::AgentSession;
use crate::session::ContextItem;

/// Counts and totals over the current context (after a compaction, the
/// summary and what was kept), and how full the window is.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionStats {
    /// Where the session is saved (absent with `--no-session`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_file: Option<PathBuf>,
    /// The session's id.
    pub session_id: String,
    /// The user's messages (not the summaries that reach the model as user
    /// messages, as Pi counts).
    pub user_messages: usize,
    /// The model's answers.
    pub assistant_messages: usize,
    /// The tool calls in those answers.
    pub tool_calls: usize,
    /// The tools' results.
    pub tool_results: usize,
    /// Every message of the context.
    pub total_messages: usize,
    /// What the answers reported using.
    pub tokens: TokenTotals,
    /// What the answers cost, in dollars.
    pub cost: f64,
    /// How full the context window is.
    pub context_usage: ContextUsage,
}

/// Tokens the answers reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenTotals {
    /// Read from the request, not from a cache.
    pub input: u64,
    /// Written by the model.
    pub output: u64,
    /// Read from the provider's cache.
    pub cache_read: u64,
    /// Written to the provider's cache.
    pub cache_write: u64,
    /// All four.
    pub total: u64,
}

/// How full the context window is.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ContextUsage {
    /// The context's size in tokens.
    pub tokens: u64,
    /// The model's window in tokens.
    pub context_window: u64,
    /// `tokens` as a percentage of the window.
    pub percent: f64,
    /// After a compaction, until an answer reports its usage, `tokens` is
    /// the estimate of the next request, system prompt and tools included
    /// (Pi: `null`; `docs/DEVIATIONS.md` M8).
    pub estimated: bool,
}

impl AgentSession {
    /// The user's own messages in the context: not the summaries nor the
    /// user's `!command` runs, which reach the model as user messages too
    /// (Pi counts role `user`, and has a role for each of those).
    fn typed_messages(&self) -> usize {
        self.context_items()
            .iter()
            .filter(|item| matches!(item, ContextItem::Message(Message::User(_))))
            .count()
    }

    /// The counts and totals of the current context.
    pub fn stats(&self) -> SessionStats {
        let messages = self.agent().history().snapshot();
        let count = |role: fn(&Message) -> bool| messages.iter().filter(|m| role(m)).count();
        let answers = || {
            messages.iter().filter_map(|m| match m {
                Message::Assistant(a) => Some(a),
                _ => None,
            })
        };
        let sum = |part: fn(&agent_ai::Usage) -> u64| answers().map(|a| part(&a.usage)).sum();
        let (input, output) = (sum(|u| u.input), sum(|u| u.output));
        let (cache_read, cache_write) = (sum(|u| u.cache_read), sum(|u| u.cache_write));
        let window = self.context_window();
        let estimated = self.context_is_estimated();
        let tokens = if estimated {
            self.next_request_tokens()
        } else {
            self.context_tokens()
        };
        SessionStats {
            session_file: self.session_file(),
            session_id: self.header().id,
            user_messages: self.typed_messages(),
            assistant_messages: count(|m| matches!(m, Message::Assistant(_))),
            tool_calls: answers().map(|a| a.tool_calls().count()).sum(),
            tool_results: count(|m| matches!(m, Message::ToolResult(_))),
            total_messages: messages.len(),
            tokens: TokenTotals {
                input,
                output,
                cache_read,
                cache_write,
                total: input + output + cache_read + cache_write,
            },
            // From +0.0: `sum` of no costs is -0.0, written `-0.0`.
            cost: answers().fold(0.0, |cost, a| cost + a.usage.cost.total),
            context_usage: ContextUsage {
                tokens,
                context_window: window,
                percent: tokens as f64 * 100.0 / window.max(1) as f64,
                estimated,
            },
        }
    }
}
