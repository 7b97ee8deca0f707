//! Whether a failed response means "the context is too long for the model"
//! (Pi's `isContextOverflow`), so the session can compact and try again
//! instead of dying on the provider's 400.
//!
//! Servers say it in their own words; the patterns below are Pi's list plus
//! two spellings Pi misses (vLLM's "decoder prompt ... is longer than the
//! maximum model length" and newer LM Studio's "loaded with context length
//! of only N tokens"). A pattern is lower-case text where `{n}` stands for
//! digits and `*` for any text. Rate limits and throttling that mention
//! tokens are not overflows. A successful answer can overflow silently too:
//! its reported input is larger than the window.

use crate::failure::ErrorKind;
use crate::message::{AssistantMessage, StopReason};

/// Error texts that mean the request did not fit the context window.
const OVERFLOW_PATTERNS: &[&str] = &[
    // Anthropic
    "prompt is too long",
    "request_too_large",
    // Anthropic, when the input and `max_tokens` together do not fit
    // (beyond Pi: with thinking's budget added to `max_tokens`, this is
    // the refusal a long session meets first)
    "exceed context limit",
    // Bedrock
    "input is too long for requested model",
    // OpenAI
    "exceeds the context window",
    // Gemini
    "input token count*exceeds the maximum",
    // xAI
    "maximum prompt length is {n}",
    // Groq, older vLLM
    "reduce the length of the messages",
    // OpenRouter, vLLM ("This model's maximum context length is N tokens")
    "maximum context length is {n} tokens",
    // GitHub Copilot
    "exceeds the limit of {n}",
    // llama.cpp
    "exceeds the available context size",
    // LM Studio
    "greater than the context length",
    // MiniMax
    "context window exceeds limit",
    // Kimi
    "exceeded model token limit",
    // Mistral
    "too large for model with {n} maximum context length",
    // z.ai
    "model_context_window_exceeded",
    // Ollama
    "prompt too long; exceeded context length",
    "prompt too long; exceeded max context length",
    // generic
    "context_length_exceeded",
    "context length exceeded",
    "context_length exceeded",
    "context length_exceeded",
    "too many tokens",
    "token limit exceeded",
    // vLLM (beyond Pi)
    "decoder prompt*is longer than the maximum model length",
    // LM Studio, newer (beyond Pi)
    "loaded with context length of only {n} tokens",
];

/// Texts that mention limits but mean "not now", never an overflow.
const NOT_OVERFLOW_PATTERNS: &[&str] = &["rate limit", "too many requests"];

/// Prefixes of throttling errors (Bedrock) that are not overflows.
const NOT_OVERFLOW_PREFIXES: &[&str] = &["throttling error:", "service unavailable:"];

/// Whether `message` failed, or silently overflowed, because its request was
/// longer than the model's context window (`context_window` in tokens, when
/// known).
pub fn is_context_overflow(message: &AssistantMessage, context_window: Option<u64>) -> bool {
    match message.stop_reason {
        StopReason::Error => message
            .error_message
            .as_deref()
            .is_some_and(|text| is_overflow_error(text, message.error_kind.as_ref())),
        StopReason::Stop => context_window.is_some_and(|window| input_tokens(message) > window),
        StopReason::Length => context_window.is_some_and(|window| {
            message.usage.output == 0 && input_tokens(message) as f64 >= 0.99 * window as f64
        }),
        StopReason::ToolUse | StopReason::Aborted => false,
    }
}

/// Whether an error text (with its kind, when known) says the context is too long.
pub fn is_overflow_error(text: &str, kind: Option<&ErrorKind>) -> bool {
    let lower = text.to_lowercase();
    if NOT_OVERFLOW_PREFIXES.iter().any(|p| lower.starts_with(p))
        || NOT_OVERFLOW_PATTERNS.iter().any(|p| lower.contains(p))
    {
        return false;
    }
    // Cerebras refuses an overlong request with a bare 400 or 413.
    let bodiless_refusal = matches!(
        kind,
        Some(ErrorKind::Status {
            status: 400 | 413,
            ..
        })
    ) && lower.ends_with("status code (no body)");
    bodiless_refusal || OVERFLOW_PATTERNS.iter().any(|p| matches_pattern(&lower, p))
}

/// Where servers that refuse an overlong request say how long it was: the
/// text just before the count and just after it (lower-case).
const REQUEST_SIZE_SPELLINGS: &[(&str, &str)] = &[
    // llama.cpp: "request (4335 tokens) exceeds the available context size"
    ("request (", " tokens)"),
    // Anthropic: "prompt is too long: 213462 tokens > 200000 maximum"
    ("prompt is too long: ", " tokens"),
    // Anthropic: "input length and `max_tokens` exceed context limit: 197000 + 8192 > 200000"
    ("exceed context limit: ", " + "),
    // OpenAI: "However, your messages resulted in 10000 tokens."
    ("resulted in ", " tokens"),
    // OpenAI, vLLM: "you requested 5000 tokens (4000 in the messages, ..."
    ("(", " in the messages"),
    // xAI: "but the request contains 537812 tokens"
    ("request contains ", " tokens"),
    // Gemini: "The input token count (1196265) exceeds the maximum"
    ("input token count (", ")"),
    // GitHub Copilot: "prompt token count of 60000 exceeds the limit"
    ("prompt token count of ", " exceeds"),
    // Mistral: "Prompt contains 40000 tokens, too large for model"
    ("prompt contains ", " tokens"),
    // vLLM: "The decoder prompt (length 9000) is longer than"
    ("decoder prompt (length ", ")"),
];

/// The tokens an overflow error says the refused request held, when it says
/// (llama.cpp, Anthropic, OpenAI, vLLM, xAI, Gemini, Copilot and Mistral
/// do). The session learns from it how far its estimate of a request fell
/// short.
pub fn overflow_request_tokens(text: &str) -> Option<u64> {
    count_between(text, REQUEST_SIZE_SPELLINGS)
}

/// Where servers that refuse an overlong request say how large their
/// context window is: the text just before the count and just after it
/// (lower-case).
const WINDOW_SPELLINGS: &[(&str, &str)] = &[
    // llama.cpp: "request (9554 tokens) exceeds the available context size (8000 tokens)"
    ("available context size (", " tokens)"),
    // OpenAI, vLLM, OpenRouter: "This model's maximum context length is 8192 tokens"
    ("maximum context length is ", " tokens"),
    // Anthropic: "prompt is too long: 213462 tokens > 200000 maximum"
    (" tokens > ", " maximum"),
    // Anthropic: "exceed context limit: 197000 + 8192 > 200000, decrease input length"
    (" > ", ", decrease"),
    // xAI: "This model's maximum prompt length is 131072 but the request contains"
    ("maximum prompt length is ", " but"),
    // Gemini: "exceeds the maximum number of tokens allowed (1048575)"
    ("maximum number of tokens allowed (", ")"),
    // GitHub Copilot: "prompt token count of 60000 exceeds the limit of 32768"
    ("exceeds the limit of ", ""),
    // Mistral: "too large for model with 32768 maximum context length"
    ("too large for model with ", " maximum context length"),
    // vLLM: "is longer than the maximum model length of 8192."
    ("maximum model length of ", ""),
    // LM Studio: "loaded with context length of only 4096 tokens"
    ("context length of only ", " tokens"),
];

/// The context window, in tokens, an overflow error says the server has,
/// when it says (llama.cpp, OpenAI, vLLM, Anthropic, xAI, Gemini, Copilot,
/// Mistral and LM Studio do). A server started with a smaller window than
/// the client assumes refuses every request past it: the session compacts
/// for the window stated instead.
pub fn overflow_context_window(text: &str) -> Option<u64> {
    count_between(text, WINDOW_SPELLINGS)
}

/// The first count in `text` (compared in lower case) found between one of
/// the `(before, after)` spellings.
fn count_between(text: &str, spellings: &[(&str, &str)]) -> Option<u64> {
    let lower = text.to_lowercase();
    spellings.iter().find_map(|(before, after)| {
        lower.match_indices(before).find_map(|(at, _)| {
            let rest = &lower[at + before.len()..];
            let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
            let count = rest[..digits].parse().ok()?;
            rest[digits..].starts_with(after).then_some(count)
        })
    })
}

fn input_tokens(message: &AssistantMessage) -> u64 {
    message.usage.input + message.usage.cache_read
}

/// Whether `pattern` occurs anywhere in `text`.
fn matches_pattern(text: &str, pattern: &str) -> bool {
    let parts = split_pattern(pattern);
    text.char_indices()
        .map(|(i, _)| i)
        .any(|start| matches_at(&text[start..], &parts))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Part<'a> {
    Literal(&'a str),
    Digits,
    Anything,
}

fn split_pattern(pattern: &str) -> Vec<Part<'_>> {
    let mut parts = Vec::new();
    let mut rest = pattern;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix("{n}") {
            parts.push(Part::Digits);
            rest = after;
        } else if let Some(after) = rest.strip_prefix('*') {
            parts.push(Part::Anything);
            rest = after;
        } else {
            let end = rest.find(['{', '*']).unwrap_or(rest.len());
            parts.push(Part::Literal(&rest[..end]));
            rest = &rest[end..];
        }
    }
    parts
}

/// Whether `text` starts with a match of `parts`.
fn matches_at(text: &str, parts: &[Part<'_>]) -> bool {
    let Some((first, rest)) = parts.split_first() else {
        return true;
    };
    match first {
        Part::Literal(literal) => text
            .strip_prefix(literal)
            .is_some_and(|after| matches_at(after, rest)),
        Part::Digits => {
            let digits = text.len() - text.trim_start_matches(|c: char| c.is_ascii_digit()).len();
            digits > 0 && matches_at(&text[digits..], rest)
        }
        Part::Anything => text
            .char_indices()
            .map(|(i, _)| i)
            .chain([text.len()])
            .any(|i| matches_at(&text[i..], rest)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::Usage;

    fn failed(text: &str) -> AssistantMessage {
        AssistantMessage {
            stop_reason: StopReason::Error,
            error_message: Some(text.to_owned()),
            ..AssistantMessage::empty(&crate::Model::new("m", "openai-completions", "p"))
        }
    }

    #[test]
    fn every_servers_spelling_of_an_overflow_is_recognised() {
        let spellings = [
            "400 invalid_request_error: prompt is too long: 213462 tokens > 200000 maximum",
            "400 invalid_request_error: input length and `max_tokens` exceed context limit: 197000 + 8192 > 200000, decrease input length or `max_tokens` and try again",
            "413 request_too_large: Request exceeds the maximum size",
            "400 Input is too long for requested model.",
            "400 invalid_request_error: Your input exceeds the context window of this model.",
            "400 The input token count (1196265) exceeds the maximum number of tokens allowed (1048575).",
            "400 This model's maximum prompt length is 131072 but the request contains 537812 tokens.",
            "400 Please reduce the length of the messages or completion.",
            "400 This model's maximum context length is 4096 tokens. However, you requested 5000 tokens.",
            "400 prompt token count of 60000 exceeds the limit of 32768",
            "400 exceed_context_size_error: the request exceeds the available context size, try increasing it",
            "400 The number of tokens to keep from the initial prompt is greater than the context length.",
            "400 invalid params, context window exceeds limit (2013)",
            "400 Invalid request: Your request exceeded model token limit: 131072",
            "400 Prompt contains 40000 tokens, too large for model with 32768 maximum context length",
            "400 model_context_window_exceeded",
            "400 prompt too long; exceeded max context length by 1024 tokens",
            "400 prompt too long; exceeded context length by 12 tokens",
            "400 invalid_request_error: context_length_exceeded",
            "400 Too many tokens in the request",
            "400 token limit exceeded",
            "400 The decoder prompt (length 9000) is longer than the maximum model length of 8192. Make sure that `max_model_len` is no smaller than the number of text tokens.",
            "400 The model is loaded with context length of only 4096 tokens, which is not enough for this request.",
        ];
        let missed: Vec<&str> = spellings
            .into_iter()
            .filter(|text| !is_context_overflow(&failed(text), None))
            .collect();
        assert_eq!(missed, Vec::<&str>::new());
    }

    /// The size of the refused request and the server's window, each
    /// where the error states it (`None`: it does not, or not so that it
    /// can be told from the other number).
    #[test]
    fn the_sizes_an_overflow_states_are_read_where_it_gives_them() {
        let stated = [
            (
                "400 exceed_context_size_error: request (4335 tokens) exceeds the available context size (4096 tokens), try increasing it",
                Some(4335),
                Some(4096),
            ),
            (
                "400 invalid_request_error: prompt is too long: 213462 tokens > 200000 maximum",
                Some(213_462),
                Some(200_000),
            ),
            (
                "400 invalid_request_error: input length and `max_tokens` exceed context limit: 197000 + 8192 > 200000, decrease input length or `max_tokens` and try again",
                Some(197_000),
                Some(200_000),
            ),
            (
                "400 This model's maximum context length is 8192 tokens. However, your messages resulted in 10000 tokens. Please reduce the length of the messages.",
                Some(10_000),
                Some(8192),
            ),
            (
                "400 This model's maximum context length is 4096 tokens. However, you requested 5000 tokens (4000 in the messages, 1000 in the completion).",
                Some(4000),
                Some(4096),
            ),
            (
                "400 This model's maximum prompt length is 131072 but the request contains 537812 tokens.",
                Some(537_812),
                Some(131_072),
            ),
            (
                "400 The input token count (1196265) exceeds the maximum number of tokens allowed (1048575).",
                Some(1_196_265),
                Some(1_048_575),
            ),
            (
                "400 prompt token count of 60000 exceeds the limit of 32768",
                Some(60_000),
                Some(32_768),
            ),
            (
                "400 Prompt contains 40000 tokens, too large for model with 32768 maximum context length",
                Some(40_000),
                Some(32_768),
            ),
            (
                "400 The decoder prompt (length 9000) is longer than the maximum model length of 8192.",
                Some(9000),
                Some(8192),
            ),
            (
                "400 The model is loaded with context length of only 4096 tokens, which is not enough for this request.",
                None,
                Some(4096),
            ),
            (
                "400 This model's maximum context length is 4096 tokens. However, you requested 5000 tokens.",
                None,
                Some(4096),
            ),
            (
                "400 exceed_context_size_error: the request exceeds the available context size, try increasing it",
                None,
                None,
            ),
            (
                "400 prompt too long; exceeded max context length by 1024 tokens",
                None,
                None,
            ),
        ];
        for (text, request, window) in stated {
            assert_eq!(
                (overflow_request_tokens(text), overflow_context_window(text)),
                (request, window),
                "{text}"
            );
        }
    }

    #[test]
    fn rate_limits_and_other_errors_are_not_overflows() {
        let others = [
            "429 rate_limit_error: Rate limit reached: too many tokens per minute",
            "Throttling error: Too many tokens, please wait before trying again.",
            "Service unavailable: token limit exceeded for this hour",
            "400 max_tokens: 5000 too large",
            "Connection error: connection reset by peer",
            "400 The maximum context length is unknown tokens",
        ];
        let flagged: Vec<&str> = others
            .into_iter()
            .filter(|text| is_context_overflow(&failed(text), None))
            .collect();
        assert_eq!(flagged, Vec::<&str>::new());
    }

    #[test]
    fn a_bodiless_400_is_an_overflow_only_when_the_status_says_so() {
        let mut message = failed("400 status code (no body)");
        assert!(!is_context_overflow(&message, None));
        message.error_kind = Some(ErrorKind::Status {
            status: 400,
            error_type: None,
            retry_after: None,
        });
        assert!(is_context_overflow(&message, None));
    }

    #[test]
    fn an_answer_whose_input_exceeds_the_window_overflowed_silently() {
        let mut message = failed("");
        message.stop_reason = StopReason::Stop;
        message.error_message = None;
        message.usage = Usage {
            input: 7000,
            cache_read: 2000,
            ..Usage::default()
        };
        assert!(is_context_overflow(&message, Some(8192)));
        assert!(!is_context_overflow(&message, Some(9000)));
        assert!(!is_context_overflow(&message, None));
        message.stop_reason = StopReason::ToolUse;
        assert!(!is_context_overflow(&message, Some(8192)));
        message.stop_reason = StopReason::Length;
        message.usage.input = 6200;
        assert!(is_context_overflow(&message, Some(8192)));
        message.usage.output = 1;
        assert!(!is_context_overflow(&message, Some(8192)));
    }
}
