//! Anthropic's stream events in, Pi's assistant-message events out: the
//! [`Decoder`] the shared driver reads this API's events with.
//!
//! A pure state machine (no I/O), so every event sequence can be tested
//! without a server. Anthropic numbers blocks itself; blocks of unknown kinds
//! (server tools) are skipped, so its index maps to ours through `open`.

use std::collections::VecDeque;
use std::sync::Arc;

use serde_json::{Value, json};

use super::wire::{BlockDelta, BlockStart, StreamEvent, WireUsage, is_busy};
use crate::message::{
    AssistantContent, AssistantMessage, StopReason, TextContent, ThinkingContent, ToolCall, Usage,
};
use crate::partial_json::StreamingJson;
use crate::providers::driver::{Decoder, Flow};
use crate::providers::http::{HttpError, server_message};
use crate::providers::sse::SseEvent;
use crate::stream::{AssistantMessageEvent, Model};

/// What Pi shows for reasoning the safety system redacted.
const REDACTED_THINKING: &str = "[Reasoning redacted]";

/// The message under construction.
#[derive(Clone)]
pub struct Assembler {
    /// Shared with the events that carry it: changed through
    /// [`Assembler::message_mut`], which copies it only while a consumer
    /// still holds the last event's.
    message: Arc<AssistantMessage>,
    open: Vec<OpenBlock>,
    stop_reason: Option<String>,
}

#[derive(Clone)]
struct OpenBlock {
    wire_index: usize,
    content_index: usize,
    /// Tool input so far, for tool calls.
    json: Option<StreamingJson>,
}

type Events = VecDeque<AssistantMessageEvent>;

impl Assembler {
    /// An empty message for `model`.
    pub(super) fn new(model: &Model) -> Self {
        Assembler {
            message: Arc::new(AssistantMessage::empty(model)),
            open: Vec::new(),
            stop_reason: None,
        }
    }

    /// The message, to change: copied first only if an event still holds it.
    fn message_mut(&mut self) -> &mut AssistantMessage {
        Arc::make_mut(&mut self.message)
    }

    /// Applies `event`, pushing the events it produces onto `out`. An
    /// `error` event ends the response; one that says "not now"
    /// (`overloaded_error`, ...) is retried when nothing was shown yet.
    fn apply(&mut self, event: StreamEvent, out: &mut Events) -> Result<Flow, HttpError> {
        match event {
            StreamEvent::MessageStart { message } => {
                let response_model = message.model.filter(|m| *m != self.message.model);
                let edit = self.message_mut();
                edit.response_id = message.id;
                edit.response_model = response_model;
                if let Some(usage) = message.usage {
                    self.set_usage(&usage);
                }
            }
            StreamEvent::ContentBlockStart {
                index,
                content_block,
            } => self.start_block(index, content_block, out),
            StreamEvent::ContentBlockDelta { index, delta } => self.delta(index, delta, out),
            StreamEvent::ContentBlockStop { index } => self.stop_block(index, out),
            StreamEvent::MessageDelta { delta, usage } => {
                if let Some(reason) = delta.stop_reason {
                    self.stop_reason = Some(reason);
                }
                if let Some(usage) = usage {
                    self.set_usage(&usage);
                }
            }
            StreamEvent::MessageStop => return Ok(Flow::End),
            StreamEvent::Error { error } => {
                let text = error.describe().unwrap_or_else(|| "unknown error".into());
                return Err(if is_busy(&error) {
                    HttpError::ProviderBusy(text)
                } else {
                    HttpError::Provider(text)
                });
            }
            StreamEvent::Ping | StreamEvent::Unknown => {}
        }
        Ok(Flow::More)
    }

    /// Ends every open block without end events; tool calls get their input
    /// parsed from all of it, and what no delta has said yet is said on
    /// `out` (the deltas add up to the message).
    fn close_open_blocks(&mut self, out: &mut Events) {
        for block in std::mem::take(&mut self.open) {
            let Some(mut input) = block.json else {
                continue;
            };
            if let Some(AssistantContent::ToolCall(call)) =
                self.message_mut().content.get_mut(block.content_index)
            {
                call.arguments = input.finish();
            }
            if let Some(delta) = input.take_unsaid() {
                out.extend(AssistantMessageEvent::block_delta(
                    self.message.clone(),
                    block.content_index,
                    delta,
                ));
            }
        }
    }

    fn set_usage(&mut self, wire: &WireUsage) {
        let usage: &mut Usage = &mut self.message_mut().usage;
        // Absent or null keeps the earlier count: proxies omit input_tokens
        // from message_delta.
        if let Some(n) = wire.input_tokens {
            usage.input = n;
        }
        if let Some(n) = wire.output_tokens {
            usage.output = n;
        }
        if let Some(n) = wire.cache_read_input_tokens {
            usage.cache_read = n;
        }
        if let Some(n) = wire.cache_creation_input_tokens {
            usage.cache_write = n;
        }
        usage.total_tokens = usage.input + usage.output + usage.cache_read + usage.cache_write;
    }

    fn start_block(&mut self, wire_index: usize, start: BlockStart, out: &mut Events) {
        let content_index = self.message.content.len();
        let (content, json) = match start {
            BlockStart::Text { text } => (
                AssistantContent::Text(TextContent {
                    text,
                    text_signature: None,
                }),
                None,
            ),
            BlockStart::Thinking { thinking } => (
                AssistantContent::Thinking(ThinkingContent {
                    thinking,
                    thinking_signature: None,
                    redacted: None,
                }),
                None,
            ),
            BlockStart::RedactedThinking { data } => (
                AssistantContent::Thinking(ThinkingContent {
                    thinking: REDACTED_THINKING.to_owned(),
                    thinking_signature: Some(data),
                    redacted: Some(true),
                }),
                None,
            ),
            BlockStart::ToolUse { id, name, input } => {
                let input = if input.is_object() { input } else { json!({}) };
                (
                    AssistantContent::ToolCall(ToolCall::new(id, name, input)),
                    Some(StreamingJson::new()),
                )
            }
            BlockStart::Unknown => return,
        };
        self.message_mut().content.push(content);
        self.open.push(OpenBlock {
            wire_index,
            content_index,
            json,
        });
        out.extend(AssistantMessageEvent::block_start(
            self.message.clone(),
            content_index,
        ));
    }

    fn delta(&mut self, wire_index: usize, delta: BlockDelta, out: &mut Events) {
        let Some(block) = self.open.iter_mut().find(|b| b.wire_index == wire_index) else {
            return;
        };
        let content_index = block.content_index;
        // A call's input is parsed every eighth of growth: a piece that
        // says nothing yet leaves the message alone (see
        // `driver::assert_silent_data_leaves_the_message`).
        let (delta, parsed) = match (delta, block.json.as_mut()) {
            (BlockDelta::InputJsonDelta { partial_json }, Some(input)) => {
                let Some(progress) = input.push(&partial_json) else {
                    return;
                };
                (
                    BlockDelta::InputJsonDelta {
                        partial_json: progress.delta,
                    },
                    progress.arguments,
                )
            }
            (delta, _) => (delta, None),
        };
        // The field, not `message_mut`: `block` borrows `open`.
        let Some(content) = Arc::make_mut(&mut self.message)
            .content
            .get_mut(content_index)
        else {
            return;
        };
        // A delta that does not fit its block is ignored, as Pi does.
        let delta = match (content, delta, block.json.is_some()) {
            (AssistantContent::Text(text), BlockDelta::TextDelta { text: delta }, _) => {
                text.text.push_str(&delta);
                Some(delta)
            }
            (
                AssistantContent::Thinking(thinking),
                BlockDelta::ThinkingDelta { thinking: delta },
                _,
            ) => {
                thinking.thinking.push_str(&delta);
                Some(delta)
            }
            (AssistantContent::Thinking(thinking), BlockDelta::SignatureDelta { signature }, _) => {
                thinking
                    .thinking_signature
                    .get_or_insert_with(String::new)
                    .push_str(&signature);
                None
            }
            (
                AssistantContent::ToolCall(call),
                BlockDelta::InputJsonDelta { partial_json },
                true,
            ) => {
                if let Some(arguments) = parsed {
                    call.arguments = arguments;
                }
                Some(partial_json)
            }
            _ => None,
        };
        if let Some(delta) = delta {
            out.extend(AssistantMessageEvent::block_delta(
                self.message.clone(),
                content_index,
                delta,
            ));
        }
    }

    fn stop_block(&mut self, wire_index: usize, out: &mut Events) {
        let Some(position) = self.open.iter().position(|b| b.wire_index == wire_index) else {
            return;
        };
        let mut block = self.open.remove(position);
        let content_index = block.content_index;
        let Some(content) = self.message_mut().content.get_mut(content_index) else {
            return;
        };
        // Without deltas, the input the block started with stands.
        if let (AssistantContent::ToolCall(call), Some(input)) = (content, &mut block.json)
            && !input.is_empty()
        {
            call.arguments = input.finish();
            // The text no delta has said yet goes before the end.
            if let Some(delta) = input.take_unsaid() {
                out.extend(AssistantMessageEvent::block_delta(
                    self.message.clone(),
                    content_index,
                    delta,
                ));
            }
        }
        out.extend(AssistantMessageEvent::block_end(
            self.message.clone(),
            content_index,
        ));
    }
}

impl Decoder for Assembler {
    fn message(&self) -> &Arc<AssistantMessage> {
        &self.message
    }

    fn decode(&mut self, event: &SseEvent, out: &mut Events) -> Result<Flow, HttpError> {
        if event.event == "error" {
            // A proxy's own words (Envoy's `upstream connect error or
            // disconnect/reset before headers`) are no JSON: they are the
            // server's message, and a failed upstream is "not now", as an
            // `overloaded_error` is. It read `Malformed stream event:
            // expected value at line 1 column 1` and was never retried.
            let Ok(mut data) = event.json::<Value>() else {
                return Err(HttpError::ProviderBusy(server_message(&event.data)));
            };
            // Some proxies leave `"type": "error"` out of the data; the
            // event's name says it (as Anthropic's SDK reads it).
            if let Some(fields) = data.as_object_mut() {
                fields.entry("type").or_insert_with(|| json!("error"));
            }
            let error = serde_json::from_value(data)
                .map_err(|error| HttpError::Malformed(format!("{error} in {:?}", event.data)))?;
            return self.apply(error, out);
        }
        self.apply(event.json()?, out)
    }

    /// A stream that ends after `message_delta` said why the answer
    /// stopped, without `message_stop`, holds the whole answer (as an
    /// OpenAI stream with a finish reason and no `[DONE]`; deviation P2).
    fn body_ended(&self) -> Result<(), HttpError> {
        if self.stop_reason.is_some() {
            Ok(())
        } else {
            Err(HttpError::Incomplete)
        }
    }

    /// `done` with Pi's stop reason; `refusal` (and `sensitive`) is an error.
    fn finish(&mut self, out: &mut Events) -> Result<(), HttpError> {
        let reason = self.stop_reason.clone().unwrap_or_default();
        self.close_open_blocks(out);
        match map_stop_reason(&reason) {
            StopReason::Error => Err(HttpError::Stopped(reason)),
            stop => {
                self.message_mut().stop_reason = stop;
                Ok(())
            }
        }
    }

    fn abandon(&mut self, out: &mut Events) {
        self.close_open_blocks(out);
    }
}

/// Anthropic's stop reasons in Pi's terms. `refusal` (and `sensitive`) end in
/// an error; an unknown reason is logged and treated as a normal stop.
fn map_stop_reason(reason: &str) -> StopReason {
    match reason {
        "end_turn" | "stop_sequence" | "pause_turn" | "" => StopReason::Stop,
        "max_tokens" | "model_context_window_exceeded" => StopReason::Length,
        "tool_use" => StopReason::ToolUse,
        "refusal" | "sensitive" => StopReason::Error,
        other => {
            tracing::warn!(
                stop_reason = other,
                "unknown Anthropic stop reason; treated as stop"
            );
            StopReason::Stop
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    #[test]
    fn stop_reasons_map_as_pi_maps_them() {
        let mapped: Vec<StopReason> = [
            "end_turn",
            "max_tokens",
            "tool_use",
            "stop_sequence",
            "refusal",
            "pause_turn",
        ]
        .into_iter()
        .map(map_stop_reason)
        .collect();
        assert_eq!(
            mapped,
            [
                StopReason::Stop,
                StopReason::Length,
                StopReason::ToolUse,
                StopReason::Stop,
                StopReason::Error,
                StopReason::Stop
            ]
        );
    }

    #[test]
    fn unknown_events_blocks_and_deltas_are_ignored() {
        let model = Model::new("claude", "anthropic", "anthropic-messages");
        let mut assembler = Assembler::new(&model);
        let mut out = VecDeque::new();
        for data in [
            r#"{"type":"brand_new_event"}"#,
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"server_tool_use","id":"x","name":"web_search"}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{}"}}"#,
            r#"{"type":"content_block_stop","index":0}"#,
            r#"{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}"#,
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"citations_delta","citation":{}}}"#,
        ] {
            let event: StreamEvent = serde_json::from_str(data).unwrap();
            assert_eq!(assembler.apply(event, &mut out), Ok(Flow::More));
        }
        let kinds: Vec<Value> = out
            .iter()
            .map(|e| serde_json::to_value(e).unwrap()["type"].clone())
            .collect();
        assert_eq!(kinds, [json!("text_start")]);
        assert_eq!(assembler.message().content.len(), 1);
    }

    #[test]
    fn a_long_answer_is_assembled_in_place_and_shared_with_its_events() {
        let model = Model::new("claude", "anthropic", "anthropic-messages");
        let mut data = vec![
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}"#.to_owned(),
            r#"{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}"#.to_owned(),
        ];
        for n in 0..200 {
            let index = n % 2;
            let delta = if index == 0 {
                json!({"type": "thinking_delta", "thinking": format!("{n} ")})
            } else {
                json!({"type": "text_delta", "text": format!("{n} ")})
            };
            data.push(
                json!({"type": "content_block_delta", "index": index, "delta": delta}).to_string(),
            );
        }
        crate::providers::driver::assert_streams_in_place(Assembler::new(&model), &data);
    }

    /// Pieces of a long call's input that say nothing yet leave the
    /// message as it was
    /// ([`crate::providers::driver::assert_silent_data_leaves_the_message`]).
    #[test]
    fn input_that_says_nothing_leaves_the_message_alone() {
        let model = Model::new("claude", "anthropic", "anthropic-messages");
        let mut data = vec![
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"write","input":{}}}"#.to_owned(),
        ];
        data.extend((0..600).map(|n| {
            let piece = if n == 0 {
                "{\"content\": \"".to_owned()
            } else {
                format!("line {n} of the file\\n")
            };
            json!({"type": "content_block_delta", "index": 0,
                   "delta": {"type": "input_json_delta", "partial_json": piece}})
            .to_string()
        }));
        crate::providers::driver::assert_silent_data_leaves_the_message(
            Assembler::new(&model),
            &data,
        );
    }
}
