//! How many tokens a context holds: the provider's own count where there is
//! one, a cheap estimate (four characters a token, as Pi) for what came
//! after it.

use std::sync::atomic::{AtomicU64, Ordering};

use agent_ai::{AssistantContent, Content, Message, StopReason, Tool, Usage, UserContent};

/// Characters an image counts as (Pi's estimate).
const IMAGE_CHARS: usize = 4800;

/// Characters per token in every estimate here (Pi's).
pub const CHARS_PER_TOKEN: u64 = 4;

/// A message's estimated tokens: `ceil(chars / 4)` over what the model reads
/// of it (text, thinking, tool names and arguments, images as 4800 chars).
pub fn estimate_tokens(message: &Message) -> u64 {
    let chars = match message {
        Message::User(user) => match &user.content {
            UserContent::Text(text) => text.chars().count(),
            UserContent::Blocks(blocks) => blocks.iter().map(content_chars).sum(),
        },
        Message::Assistant(assistant) => assistant
            .content
            .iter()
            .map(|block| match block {
                AssistantContent::Text(text) => text.text.chars().count(),
                AssistantContent::Thinking(thinking) => thinking.thinking.chars().count(),
                AssistantContent::ToolCall(call) => {
                    call.name.chars().count() + call.arguments.to_string().chars().count()
                }
            })
            .sum(),
        Message::ToolResult(result) => result.content.iter().map(content_chars).sum(),
    };
    (chars as u64).div_ceil(CHARS_PER_TOKEN)
}

/// The estimated tokens every request carries besides the conversation:
/// the system prompt and the tools' definitions (as the JSON they are sent
/// in).
pub fn fixed_tokens(system_prompt: Option<&str>, tools: &[Tool]) -> u64 {
    let prompt = system_prompt.map_or(0, |prompt| prompt.chars().count());
    let tools = serde_json::to_string(tools).map_or(0, |json| json.chars().count());
    ((prompt + tools) as u64).div_ceil(CHARS_PER_TOKEN)
}

fn content_chars(content: &Content) -> usize {
    match content {
        Content::Text(text) => text.text.chars().count(),
        Content::Image(_) => IMAGE_CHARS,
    }
}

/// The tokens a response's usage accounts for (`totalTokens`, else the sum
/// of its parts).
pub fn usage_tokens(usage: &Usage) -> u64 {
    if usage.total_tokens > 0 {
        usage.total_tokens
    } else {
        usage.input + usage.output + usage.cache_read + usage.cache_write
    }
}

/// The context's size in tokens: the last usage a successful answer reported
/// (not older than `not_before`, the last compaction: usage from before it
/// counted the context it replaced) plus estimates of every message after
/// it; estimates of all messages when there is no such usage.
///
/// An answer stamped in the compaction's own millisecond counts: answers
/// are stamped when their request starts, and the one that follows a
/// compaction at once (the retry after an overflow, a prompt queued during
/// it) starts in that millisecond more often than not. Its usage left out,
/// the context was estimated short and the next request overflowed. An
/// answer the compaction kept is older than it by a summary request.
pub fn context_tokens(messages: &[Message], not_before: u64) -> u64 {
    counted_tokens(messages, not_before).map_or_else(
        || messages.iter().map(estimate_tokens).sum(),
        |(base, after)| base + after,
    )
}

/// A request's size in tokens: what the server counted of it (the usage of
/// its last answer, system prompt and tools included) and what is only
/// estimated (everything after that answer, or all of it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestSize {
    /// Counted by the server.
    pub counted: u64,
    /// Estimated at four characters a token.
    pub estimated: u64,
}

impl RequestSize {
    /// The tokens, with the estimated part times `scale` (see
    /// [`EstimateScale`]).
    pub fn tokens(self, scale: f64) -> u64 {
        self.counted + scaled(self.estimated, scale)
    }
}

/// `tokens` times `scale`, rounded up.
pub fn scaled(tokens: u64, scale: f64) -> u64 {
    (tokens as f64 * scale).ceil() as u64
}

/// The size of a request of `messages` with the `fixed` tokens of its
/// system prompt and tools: the server's count of it as far as the last
/// answer goes plus estimates of what came after, or the estimate of all of
/// it, whichever is larger (estimates times `scale`). The count corrects an
/// estimate that is short (by Qwen2.5's tokenizer, text full of numbers is
/// 1.5 times the estimate); the estimate stands in for a server that counts
/// nothing, or less than it reads.
///
/// A request's context starts with the latest compaction's summary, stamped
/// with the compaction's time, or else with the session's first prompt:
/// usage older than its first message counted another context and is left
/// out.
pub fn request_size(messages: &[Message], fixed: u64, scale: f64) -> RequestSize {
    let all = RequestSize {
        counted: 0,
        estimated: fixed + messages.iter().map(estimate_tokens).sum::<u64>(),
    };
    let since = messages.first().map_or(0, timestamp);
    match counted_tokens(messages, since) {
        Some((counted, estimated)) => {
            let size = RequestSize { counted, estimated };
            if size.tokens(scale) > all.tokens(scale) {
                size
            } else {
                all
            }
        }
        None => all,
    }
}

/// How many times its estimate the server counted a request, as learned
/// from the errors of refused requests that say their size (1 until one
/// does). By Qwen2.5's tokenizer, text full of numbers is 1.5 times the
/// estimate of four characters a token and Chinese text 2.5 times (English
/// prose 1.04, Rust 0.9): a result that fits by it can overflow the window,
/// and after the overflow's compaction the model reads it again. With the
/// scale learned, the next request cuts it to fit. It only grows: a request
/// that was refused once would be again.
#[derive(Debug, Default)]
pub struct EstimateScale(AtomicU64);

impl EstimateScale {
    /// The largest scale learned; a larger error ratio means a broken count.
    const MAX: f64 = 8.0;

    /// The scale now (at least 1).
    pub fn get(&self) -> f64 {
        f64::from_bits(self.0.load(Ordering::Relaxed)).max(1.0)
    }

    /// Learns from a refused request of `size` (as estimated when it was
    /// sent) that the server counted `said` tokens.
    pub fn learn(&self, said: u64, size: RequestSize) {
        if size.estimated > 0 && said > size.counted {
            let ratio = ((said - size.counted) as f64 / size.estimated as f64).min(Self::MAX);
            if ratio > self.get() {
                self.0.store(ratio.to_bits(), Ordering::Relaxed);
            }
        }
    }

    /// Back to 1, for another model (another tokenizer).
    pub fn reset(&self) {
        self.0.store(0, Ordering::Relaxed);
    }
}

/// Whether an answer since `not_before` (the last compaction) reported the
/// usage of its request: until one does, the context's size is estimated.
pub fn counted_since(messages: &[Message], not_before: u64) -> bool {
    counted_tokens(messages, not_before).is_some()
}

/// The last usage reported since `not_before` and the estimates of every
/// message after it; `None` without such usage.
fn counted_tokens(messages: &[Message], not_before: u64) -> Option<(u64, u64)> {
    let (at, base) = messages.iter().enumerate().rev().find_map(|(i, message)| {
        let Message::Assistant(assistant) = message else {
            return None;
        };
        let counted = !matches!(
            assistant.stop_reason,
            StopReason::Error | StopReason::Aborted
        ) && assistant.timestamp >= not_before;
        let tokens = usage_tokens(&assistant.usage);
        (counted && tokens > 0).then_some((i, tokens))
    })?;
    Some((base, messages[at + 1..].iter().map(estimate_tokens).sum()))
}

fn timestamp(message: &Message) -> u64 {
    match message {
        Message::User(user) => user.timestamp,
        Message::Assistant(assistant) => assistant.timestamp,
        Message::ToolResult(result) => result.timestamp,
    }
}

#[cfg(test)]
mod tests {
    use agent_ai::{AssistantMessage, Model, ToolCall, ToolResultMessage, UserMessage};
    use serde_json::json;

    use super::*;

    fn answer(text: &str, usage: u64, timestamp: u64) -> Message {
        let mut message = AssistantMessage::empty(&Model::new("m", "p", "openai-completions"));
        message.content = vec![AssistantContent::Text(agent_ai::TextContent {
            text: text.to_owned(),
            text_signature: None,
        })];
        message.usage.total_tokens = usage;
        message.timestamp = timestamp;
        Message::Assistant(message)
    }

    #[test]
    fn the_fixed_part_is_the_prompt_and_the_tools_as_sent() {
        let tool = Tool {
            name: "read".into(),
            description: "Reads".into(),
            parameters: json!({"type": "object"}),
        };
        let json = serde_json::to_string(&[&tool]).unwrap();
        let expected = (8 + json.chars().count() as u64).div_ceil(4);
        assert_eq!(fixed_tokens(Some("You help"), &[tool]), expected);
        assert_eq!(fixed_tokens(None, &[]), 1, "an empty list is `[]`");
    }

    #[test]
    fn estimates_count_four_characters_a_token_rounding_up() {
        assert_eq!(estimate_tokens(&UserMessage::text("12345").into()), 2);
        let mut call = AssistantMessage::empty(&Model::new("m", "p", "a"));
        call.content = vec![AssistantContent::ToolCall(ToolCall::new(
            "c1",
            "read",
            json!({"path": "a"}),
        ))];
        // "read" + {"path":"a"} = 4 + 12 chars
        assert_eq!(estimate_tokens(&Message::Assistant(call)), 4);
        let result = ToolResultMessage {
            tool_call_id: "c1".into(),
            tool_name: "read".into(),
            content: vec![Content::text("x".repeat(400))],
            details: None,
            is_error: false,
            timestamp: 0,
        };
        assert_eq!(estimate_tokens(&result.into()), 100);
    }

    #[test]
    fn context_is_the_last_usage_plus_estimates_of_what_followed() {
        let messages = vec![
            UserMessage::text("x".repeat(40)).into(),
            answer("done", 1000, 10),
            UserMessage::text("y".repeat(80)).into(),
        ];
        assert_eq!(context_tokens(&messages, 0), 1000 + 20);
        // Usage from before the last compaction does not count.
        assert_eq!(context_tokens(&messages, 11), 10 + 1 + 20);
        // An answer whose request started in the compaction's millisecond
        // came after it.
        assert_eq!(context_tokens(&messages, 10), 1000 + 20);
        assert!(counted_since(&messages, 10));
    }

    #[test]
    fn a_request_counts_as_the_larger_of_the_servers_count_and_the_estimate() {
        let prompt = |text: &str, timestamp: u64| {
            let mut user = agent_ai::UserMessage::text(text);
            user.timestamp = timestamp;
            Message::User(user)
        };
        // The server counted 900 where the estimate of the same is 10 + 1.
        let counted = vec![prompt(&"x".repeat(40), 5), answer("ok", 900, 6)];
        assert_eq!(
            request_size(&counted, 50, 1.0),
            RequestSize {
                counted: 900,
                estimated: 0
            }
        );
        // A server that counts less than the estimate does not shrink it.
        let short = vec![prompt(&"x".repeat(4000), 5), answer("ok", 30, 6)];
        assert_eq!(request_size(&short, 50, 1.0).tokens(1.0), 50 + 1000 + 1);
        // An answer as old as the first message counts (same millisecond).
        let same = vec![prompt("x", 6), answer("ok", 900, 6)];
        assert_eq!(request_size(&same, 50, 1.0).counted, 900);
        // Usage older than the context's first message (a compaction's
        // summary) counted another context.
        let stale = vec![prompt(&"s".repeat(400), 9), answer("ok", 5000, 6)];
        assert_eq!(request_size(&stale, 50, 1.0).tokens(1.0), 50 + 100 + 1);
    }

    #[test]
    fn the_scale_is_learned_from_the_estimated_part_and_only_grows() {
        let scale = EstimateScale::default();
        assert_eq!(scale.get(), 1.0);
        let size = RequestSize {
            counted: 1000,
            estimated: 2000,
        };
        // The server said 4,000: the 2,000 estimated tokens were 3,000.
        scale.learn(4000, size);
        assert_eq!(scale.get(), 1.5);
        assert_eq!(size.tokens(scale.get()), 4000);
        scale.learn(3500, size);
        assert_eq!(scale.get(), 1.5, "a smaller ratio is not learned");
        scale.learn(1_000_000, size);
        assert_eq!(scale.get(), EstimateScale::MAX);
        scale.reset();
        assert_eq!(scale.get(), 1.0);
    }

    #[test]
    fn failed_answers_are_never_a_usage_source() {
        let mut failed = answer("", 5000, 20);
        if let Message::Assistant(a) = &mut failed {
            a.stop_reason = StopReason::Error;
        }
        let messages = vec![answer("ok", 300, 10), failed];
        assert_eq!(context_tokens(&messages, 0), 300);
    }
}
