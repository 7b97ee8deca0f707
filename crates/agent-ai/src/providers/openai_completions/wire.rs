//! The fields of the `data:` chunks of a chat-completions stream that are
//! read as they are: reasoning fields, in-stream errors, finish reasons and
//! usage.
//!
//! Servers differ in the details (the reasoning field's name, where usage
//! sits, finish reasons of their own); each reading here says which it
//! accepts. The chunks themselves stay `serde_json::Value`s: the assembler
//! looks fields up by pointer, so an unexpected extra field or a missing one
//! never fails the stream.

use serde::Deserialize;
use serde_json::Value;

use crate::failure::{transient_status, transient_type};
use crate::message::{StopReason, Usage};
use crate::providers::http::{ApiError, HttpError};

/// Delta fields that carry reasoning, in the order they are looked for
/// (llama.cpp and DeepSeek use `reasoning_content`, others `reasoning`).
pub(super) const REASONING_FIELDS: [&str; 3] = ["reasoning_content", "reasoning", "reasoning_text"];

/// A string field that is present and not empty.
pub(super) fn non_empty_str(value: Option<&Value>) -> Option<&str> {
    value.and_then(Value::as_str).filter(|s| !s.is_empty())
}

/// The text of a delta's `content`: a string, as the API sends it, or the
/// `text` parts of an array of parts, as Mistral's reasoning models stream
/// it (their answer was dropped: "The answer has no text").
pub(super) fn content_texts(content: Option<&Value>) -> Vec<&str> {
    match content {
        Some(Value::Array(parts)) => parts
            .iter()
            .filter(|part| part.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|part| non_empty_str(part.get("text")))
            .collect(),
        other => non_empty_str(other).into_iter().collect(),
    }
}

/// An `error` member sent inside the stream (OpenRouter and others report
/// failures after the 200 this way), quoted as `type: message`; one whose
/// `code` (429, 5xx, or a name such as `server_error`) or `type` (OpenAI's
/// `server_error`, with a `null` code) says "not now" is retried when it
/// comes before any content. A name as `code` with no `type`
/// (`{"code": "server_error", "message": "Internal error mid-stream"}`)
/// ended the answer as final, while a bare `finish_reason: "error"` was
/// retried.
pub(super) fn stream_error(error: &Value) -> HttpError {
    let api_error = ApiError::deserialize(error).ok();
    let text = api_error
        .as_ref()
        .and_then(ApiError::describe)
        .or_else(|| error.as_str().map(str::to_owned))
        .unwrap_or_else(|| error.to_string());
    let busy_code = match error.get("code") {
        Some(Value::Number(code)) => code
            .as_u64()
            .and_then(|c| u16::try_from(c).ok())
            .is_some_and(transient_status),
        Some(Value::String(code)) => transient_type(Some(code)),
        _ => false,
    };
    let busy_type = transient_type(api_error.and_then(|e| e.kind).as_deref());
    if busy_code || busy_type {
        HttpError::ProviderBusy(text)
    } else {
        HttpError::Provider(text)
    }
}

/// `finish_reason` as a stop reason (Pi's mapping; unknown reasons such as
/// Ollama's `end` mean the answer is complete).
pub(super) fn map_finish_reason(reason: &str) -> StopReason {
    match reason {
        "length" => StopReason::Length,
        "tool_calls" | "function_call" => StopReason::ToolUse,
        "content_filter" | "error" => StopReason::Error,
        _ => StopReason::Stop,
    }
}

/// Pi's usage accounting: cached prompt tokens are reported apart from
/// input, reasoning tokens are added to output, and the total is recomputed
/// (some servers leave reasoning out of theirs).
pub(super) fn parse_usage(usage: &Value) -> Usage {
    let count = |pointer: &str| usage.pointer(pointer).and_then(Value::as_u64).unwrap_or(0);
    let cached = count("/prompt_tokens_details/cached_tokens");
    let reasoning = count("/completion_tokens_details/reasoning_tokens");
    let input = count("/prompt_tokens").saturating_sub(cached);
    let output = count("/completion_tokens").saturating_add(reasoning);
    Usage {
        input,
        output,
        cache_read: cached,
        cache_write: 0,
        total_tokens: input.saturating_add(output).saturating_add(cached),
        cost: Default::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn finish_reasons_map_to_pis_stop_reasons() {
        let mapped: Vec<StopReason> = [
            "stop",
            "end",
            "length",
            "tool_calls",
            "function_call",
            "content_filter",
        ]
        .into_iter()
        .map(map_finish_reason)
        .collect();
        assert_eq!(
            mapped,
            [
                StopReason::Stop,
                StopReason::Stop,
                StopReason::Length,
                StopReason::ToolUse,
                StopReason::ToolUse,
                StopReason::Error,
            ]
        );
    }

    #[test]
    fn usage_separates_cached_input_and_adds_reasoning_to_output() {
        let usage = parse_usage(&json!({
            "prompt_tokens": 100,
            "completion_tokens": 20,
            "total_tokens": 120,
            "prompt_tokens_details": {"cached_tokens": 30},
            "completion_tokens_details": {"reasoning_tokens": 5}
        }));
        assert_eq!(
            usage,
            Usage {
                input: 70,
                output: 25,
                cache_read: 30,
                cache_write: 0,
                total_tokens: 125,
                cost: Default::default(),
            }
        );
    }
}
