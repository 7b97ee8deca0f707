//! Chat-completions chunks in, Pi's assistant-message events out: the
//! [`Decoder`] the shared driver reads this API's events with.
//!
//! Text and reasoning (`reasoning_content`, `reasoning`, `reasoning_text`)
//! blocks come one after another, tool calls by their `index` so fragments of
//! parallel calls may interleave, usage from the final chunk. A completed
//! answer with no tool calls whose text is a tool call written out is turned
//! into one ([`crate::providers::text_tool_calls`]) unless the config turns
//! that off. A pure state machine (no I/O).

use std::collections::VecDeque;
use std::mem::discriminant;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{Map, Value};

use super::think_tags::{Piece, ThinkTags};
use super::wire::{
    REASONING_FIELDS, content_texts, map_finish_reason, non_empty_str, parse_usage, stream_error,
};
use crate::message::{
    AssistantContent, AssistantMessage, StopReason, TextContent, ThinkingContent, ToolCall,
    now_millis,
};
use crate::partial_json::StreamingJson;
use crate::providers::driver::{Decoder, Flow};
use crate::providers::http::HttpError;
use crate::providers::sse::SseEvent;
use crate::providers::text_tool_calls::recover_text_tool_calls;
use crate::stream::{AssistantMessageEvent, Model};
use crate::tool::Tool;

/// A tool call still receiving argument fragments.
#[derive(Clone)]
struct OpenCall {
    /// The call's `index` in the response's `tool_calls`.
    wire_index: u64,
    /// Its place in the message content.
    content_index: usize,
    /// The JSON arguments so far.
    arguments: StreamingJson,
}

/// Builds the assistant message from chunks and says what changed, as events.
#[derive(Clone)]
pub struct Assembler {
    /// The message so far, shared with the events that carry it: changed
    /// through [`Assembler::output`], which copies it only while a consumer
    /// still holds the last event's.
    output: Arc<AssistantMessage>,
    /// The tools sent with the request, for text tool-call recovery (empty
    /// when recovery is off).
    tools: Arc<[Tool]>,
    /// The text or thinking block still receiving deltas (its place in the
    /// content, whose kind says which).
    open: Option<usize>,
    calls: Vec<OpenCall>,
    finish_reason_seen: bool,
    /// A finish reason that means the provider refused (`content_filter`).
    failed_finish_reason: Option<String>,
    /// Reasoning written into `content` between `<think>` tags.
    think_tags: ThinkTags,
}

impl Assembler {
    pub(super) fn new(model: &Model, tools: Arc<[Tool]>) -> Self {
        Assembler {
            output: Arc::new(AssistantMessage::empty(model)),
            tools,
            open: None,
            calls: Vec::new(),
            finish_reason_seen: false,
            failed_finish_reason: None,
            think_tags: ThinkTags::default(),
        }
    }

    /// The message, to change: copied first only if an event still holds it.
    fn output(&mut self) -> &mut AssistantMessage {
        Arc::make_mut(&mut self.output)
    }

    fn apply(
        &mut self,
        chunk: &Value,
        events: &mut VecDeque<AssistantMessageEvent>,
    ) -> Result<(), HttpError> {
        // Some servers (Foundry Local) write `"error": null` in every chunk.
        if let Some(error) = chunk.get("error").filter(|error| !error.is_null()) {
            return Err(stream_error(error));
        }
        if self.output.response_id.is_none()
            && let Some(id) = chunk.get("id").and_then(Value::as_str)
        {
            self.output().response_id = Some(id.to_owned());
        }
        if let Some(reported) = chunk.get("model").and_then(Value::as_str)
            && reported != self.output.model
            && self.output.response_model.as_deref() != Some(reported)
        {
            self.output().response_model = Some(reported.to_owned());
        }
        let choice = chunk.pointer("/choices/0");
        // Some servers (Moonshot) put usage in the choice instead.
        if let Some(usage) = chunk.get("usage").filter(|u| u.is_object()).or_else(|| {
            choice
                .and_then(|c| c.get("usage"))
                .filter(|u| u.is_object())
        }) {
            let usage = parse_usage(usage);
            if usage != self.output.usage {
                self.output().usage = usage;
            }
        }
        let Some(choice) = choice else {
            return Ok(());
        };
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
            self.finish_reason_seen = true;
            self.output().stop_reason = map_finish_reason(reason);
            if self.output.stop_reason == StopReason::Error {
                self.failed_finish_reason = Some(reason.to_owned());
            }
        }
        let Some(delta) = choice.get("delta") else {
            return Ok(());
        };
        for text in content_texts(delta.get("content")) {
            for piece in self.think_tags.split(text) {
                self.piece_delta(piece, events);
            }
        }
        if let Some((field, text)) = REASONING_FIELDS
            .iter()
            .find_map(|field| non_empty_str(delta.get(*field)).map(|text| (*field, text)))
        {
            let empty = AssistantContent::Thinking(ThinkingContent {
                thinking: String::new(),
                thinking_signature: Some(field.to_owned()),
                redacted: None,
            });
            self.block_delta(empty, text, events);
        }
        if let Some(fragments) = delta.get("tool_calls").and_then(Value::as_array) {
            for fragment in fragments {
                self.tool_call_fragment(fragment, events);
            }
        }
        Ok(())
    }

    /// A piece of `content`: answer text, or thoughts it held in tags (no
    /// signature: they are not sent back, as a chat template drops them).
    fn piece_delta(&mut self, piece: Piece, events: &mut VecDeque<AssistantMessageEvent>) {
        let (empty, text) = match piece {
            Piece::Text(text) => (
                AssistantContent::Text(TextContent {
                    text: String::new(),
                    text_signature: None,
                }),
                text,
            ),
            Piece::Thinking(text) => (
                AssistantContent::Thinking(ThinkingContent {
                    thinking: String::new(),
                    thinking_signature: None,
                    redacted: None,
                }),
                text,
            ),
        };
        self.block_delta(empty, &text, events);
    }

    /// Appends `text` to the open block when it is of `empty`'s kind (text
    /// or thinking); else closes whatever is open and starts `empty`.
    fn block_delta(
        &mut self,
        empty: AssistantContent,
        text: &str,
        events: &mut VecDeque<AssistantMessageEvent>,
    ) {
        let content = &self.output.content;
        let same_kind = |&index: &usize| {
            content
                .get(index)
                .is_some_and(|open| discriminant(open) == discriminant(&empty))
        };
        let index = match self.open.filter(same_kind) {
            Some(index) => index,
            None => {
                self.close_all(events);
                self.output().content.push(empty);
                let index = self.output.content.len() - 1;
                self.open = Some(index);
                events.extend(AssistantMessageEvent::block_start(
                    self.output.clone(),
                    index,
                ));
                index
            }
        };
        match self.output().content.get_mut(index) {
            Some(AssistantContent::Text(block)) => block.text.push_str(text),
            Some(AssistantContent::Thinking(block)) => block.thinking.push_str(text),
            _ => {}
        }
        events.extend(AssistantMessageEvent::block_delta(
            self.output.clone(),
            index,
            text.to_owned(),
        ));
    }

    /// One entry of `delta.tool_calls`. Fragments belong to the open call
    /// with the same `index`; a fragment bringing a new `id` under an index
    /// already in use (servers that number every call 0) starts a new call.
    fn tool_call_fragment(
        &mut self,
        fragment: &Value,
        events: &mut VecDeque<AssistantMessageEvent>,
    ) {
        if let Some(open) = self.open.take() {
            self.close_block(open, events);
        }
        let id = non_empty_str(fragment.get("id"));
        let name = non_empty_str(fragment.pointer("/function/name"));
        let wire_index = match fragment.get("index").and_then(Value::as_u64) {
            Some(index) => index,
            // No index: the same (or no) id continues the last call, a new id
            // starts another.
            None => match self.calls.last() {
                Some(last) if id.is_none() || id == Some(self.call_id(last)) => last.wire_index,
                _ => self
                    .calls
                    .iter()
                    .map(|c| c.wire_index + 1)
                    .max()
                    .unwrap_or(0),
            },
        };
        let existing = self.calls.iter().position(|c| c.wire_index == wire_index);
        let existing = match existing {
            Some(position) => {
                let current_id = self.call_id(&self.calls[position]);
                if id.is_some_and(|id| !current_id.is_empty() && id != current_id) {
                    let call = self.calls.remove(position);
                    self.close_call(call, events);
                    None
                } else {
                    Some(position)
                }
            }
            None => None,
        };
        let position = match existing {
            Some(position) => position,
            None => {
                self.output()
                    .content
                    .push(AssistantContent::ToolCall(ToolCall::new(
                        id.unwrap_or_default(),
                        name.unwrap_or_default(),
                        Value::Object(Map::new()),
                    )));
                let content_index = self.output.content.len() - 1;
                self.calls.push(OpenCall {
                    wire_index,
                    content_index,
                    arguments: StreamingJson::new(),
                });
                events.push_back(AssistantMessageEvent::ToolCallStart {
                    content_index,
                    partial: self.output.clone(),
                });
                self.calls.len() - 1
            }
        };
        let open = &mut self.calls[position];
        // A string of JSON text, as the API sends it; some servers send the
        // arguments as an object, whole.
        let whole;
        let delta = match fragment.pointer("/function/arguments") {
            Some(Value::String(text)) => text.as_str(),
            Some(object @ Value::Object(_)) => {
                whole = object.to_string();
                whole.as_str()
            }
            _ => "",
        };
        let mut progress = open.arguments.push(delta);
        let content_index = open.content_index;
        let arguments = progress.as_mut().and_then(|p| p.arguments.take());
        // The message changes only with what is new in it: a fragment that
        // says nothing yet (parsed every eighth of growth) leaves it alone
        // (see `driver::assert_silent_data_leaves_the_message`).
        if (id.is_some() || name.is_some() || arguments.is_some())
            && let Some(AssistantContent::ToolCall(call)) =
                self.output().content.get_mut(content_index)
        {
            if let Some(id) = id {
                id.clone_into(&mut call.id);
            }
            if let Some(name) = name {
                name.clone_into(&mut call.name);
            }
            if let Some(arguments) = arguments {
                call.arguments = arguments;
            }
        }
        if let Some(progress) = progress {
            events.push_back(AssistantMessageEvent::ToolCallDelta {
                content_index,
                delta: progress.delta,
                partial: self.output.clone(),
            });
        }
    }

    /// The id an open call has so far (empty until the server sends one).
    fn call_id(&self, open: &OpenCall) -> &str {
        match self.output.content.get(open.content_index) {
            Some(AssistantContent::ToolCall(call)) => &call.id,
            _ => "",
        }
    }

    /// Ends the open text or thinking block and every open tool call.
    fn close_all(&mut self, events: &mut VecDeque<AssistantMessageEvent>) {
        if let Some(open) = self.open.take() {
            self.close_block(open, events);
        }
        for call in std::mem::take(&mut self.calls) {
            self.close_call(call, events);
        }
    }

    fn close_block(&mut self, open: usize, events: &mut VecDeque<AssistantMessageEvent>) {
        events.extend(AssistantMessageEvent::block_end(self.output.clone(), open));
    }

    /// Ends a tool call: its arguments are parsed once more, repaired.
    fn close_call(&mut self, mut open: OpenCall, events: &mut VecDeque<AssistantMessageEvent>) {
        let Some(tool_call) = self.settle_call(&mut open, events).cloned() else {
            return;
        };
        events.push_back(AssistantMessageEvent::ToolCallEnd {
            content_index: open.content_index,
            tool_call,
            partial: self.output.clone(),
        });
    }

    /// Parses a call's arguments from all their text, and says on `events`
    /// what no delta has said yet (before the call's end, or the answer's
    /// failure: the deltas add up to the arguments); the call, when `open`
    /// is one.
    fn settle_call(
        &mut self,
        open: &mut OpenCall,
        events: &mut VecDeque<AssistantMessageEvent>,
    ) -> Option<&ToolCall> {
        let Some(AssistantContent::ToolCall(call)) =
            self.output().content.get_mut(open.content_index)
        else {
            return None;
        };
        call.arguments = open.arguments.finish();
        if call.id.is_empty() {
            // Some OpenAI-compatible servers send no id: one is made, so the
            // result goes back matched to its call and parallel calls are
            // not all `""` in the next request (which strict servers refuse).
            call.id = fresh_call_id("call");
        }
        if let Some(delta) = open.arguments.take_unsaid() {
            events.push_back(AssistantMessageEvent::ToolCallDelta {
                content_index: open.content_index,
                delta,
                partial: self.output.clone(),
            });
        }
        match self.output.content.get(open.content_index) {
            Some(AssistantContent::ToolCall(call)) => Some(call),
            _ => None,
        }
    }

    /// Turns a text-only answer that spells out tool calls into real calls
    /// (when recovery is on and the answer completed normally), with the
    /// tool-call events a streamed call would have had.
    fn recover_text_tool_calls(&mut self, events: &mut VecDeque<AssistantMessageEvent>) {
        if self.tools.is_empty() || self.output.stop_reason != StopReason::Stop {
            return;
        }
        let indexes = recover_text_tool_calls(
            Arc::make_mut(&mut self.output),
            &self.tools,
            &mut new_call_id,
        );
        for content_index in indexes {
            events.extend(
                AssistantMessageEvent::whole_block(&self.output, content_index)
                    .into_iter()
                    .flatten(),
            );
        }
    }
}

impl Decoder for Assembler {
    fn message(&self) -> &Arc<AssistantMessage> {
        &self.output
    }

    fn decode(
        &mut self,
        event: &SseEvent,
        out: &mut VecDeque<AssistantMessageEvent>,
    ) -> Result<Flow, HttpError> {
        if event.data.trim() == "[DONE]" {
            return Ok(Flow::End);
        }
        self.apply(&event.json()?, out)?;
        Ok(Flow::More)
    }

    /// Servers that omit `[DONE]` still send a finish reason; without either
    /// the connection was cut short (deviation P2).
    fn body_ended(&self) -> Result<(), HttpError> {
        if self.finish_reason_seen {
            Ok(())
        } else {
            Err(HttpError::Incomplete)
        }
    }

    fn finish(&mut self, out: &mut VecDeque<AssistantMessageEvent>) -> Result<(), HttpError> {
        if let Some(piece) = self.think_tags.finish() {
            self.piece_delta(piece, out);
        }
        self.close_all(out);
        if let Some(reason) = self.failed_finish_reason.take() {
            // OpenRouter's word for an upstream provider that failed mid-answer:
            // worth another try, unlike a refusal.
            if reason == "error" {
                return Err(HttpError::ProviderBusy(
                    "The provider failed during the response (finish_reason \"error\")".to_owned(),
                ));
            }
            return Err(HttpError::Stopped(reason));
        }
        self.recover_text_tool_calls(out);
        Ok(())
    }

    fn abandon(&mut self, out: &mut VecDeque<AssistantMessageEvent>) {
        // What a cut answer had said is kept, a possible tag included.
        if let Some(piece) = self.think_tags.finish() {
            self.piece_delta(piece, out);
        }
        self.open = None;
        for mut call in std::mem::take(&mut self.calls) {
            self.settle_call(&mut call, out);
        }
    }
}

/// A fresh id for a tool call recovered from text (`text_call_<ms>_<n>`).
fn new_call_id() -> String {
    fresh_call_id("text_call")
}

/// A tool-call id unique in this process and across runs
/// (`<prefix>_<ms>_<n>`).
fn fresh_call_id(prefix: &str) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    format!(
        "{prefix}_{}_{}",
        now_millis(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_long_answer_is_assembled_in_place_and_shared_with_its_events() {
        let model = Model::new("gpt-test", "openai", "openai-completions");
        let chunk = |delta: Value| {
            json!({"id": "c1", "model": "gpt-test", "choices": [{"index": 0, "delta": delta}],
                   "usage": {"prompt_tokens": 3, "completion_tokens": 1}})
            .to_string()
        };
        let mut data: Vec<String> = (0..100)
            .map(|n| chunk(json!({"reasoning_content": format!("{n} ")})))
            .collect();
        data.extend((0..100).map(|n| chunk(json!({"content": format!("{n} ")}))));
        data.push(chunk(json!({"tool_calls": [{"index": 0, "id": "call_1",
            "function": {"name": "write", "arguments": ""}}]})));
        data.extend((0..100).map(|n| {
            chunk(json!({"tool_calls": [{"index": 0,
                "function": {"arguments": format!("{{\"path\": \"{n}\"")}}]}))
        }));
        crate::providers::driver::assert_streams_in_place(
            Assembler::new(&model, Arc::from([])),
            &data,
        );
    }

    /// Fragments of a long call that say nothing yet leave the message as
    /// it was ([`crate::providers::driver::assert_silent_data_leaves_the_message`]).
    #[test]
    fn a_fragment_that_says_nothing_leaves_the_message_alone() {
        let model = Model::new("gpt-test", "openai", "openai-completions");
        let mut data = vec![
            json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "call_1",
                "function": {"name": "write", "arguments": "{\"content\": \""}}]}}]})
            .to_string(),
        ];
        data.extend((0..600).map(|n| {
            json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0,
                "function": {"arguments": format!("line {n} of the file\\n")}}]}}]})
            .to_string()
        }));
        crate::providers::driver::assert_silent_data_leaves_the_message(
            Assembler::new(&model, Arc::from([])),
            &data,
        );
    }

    /// Past 4 KiB a call's arguments are said in batches, as their parse
    /// comes due; an answer cut mid-call ended with arguments in its message
    /// that no delta had said, and a client that builds the call from the
    /// deltas had less than the session saved.
    #[test]
    fn a_cut_answer_says_the_arguments_no_delta_said_before_it_fails() {
        let model = Model::new("gpt-test", "openai", "openai-completions");
        let mut assembler = Assembler::new(&model, Arc::from([]));
        let mut events = VecDeque::new();
        let mut sent = String::new();
        let fragments = std::iter::once(r#"{"path": "w.txt", "content": ""#.to_owned())
            .chain((0..300).map(|n| format!("line {n} of the file\\n")));
        for (n, fragment) in fragments.enumerate() {
            sent.push_str(&fragment);
            let mut call = json!({"index": 0, "function": {"arguments": fragment}});
            if n == 0 {
                call["id"] = json!("call_1");
                call["function"]["name"] = json!("write");
            }
            let chunk = json!({"choices": [{"index": 0, "delta": {"tool_calls": [call]}}]});
            assembler.apply(&chunk, &mut events).unwrap();
        }
        assembler.abandon(&mut events);
        let said: String = events
            .iter()
            .filter_map(|event| match event {
                AssistantMessageEvent::ToolCallDelta { delta, .. } => Some(delta.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(said, sent);
        let AssistantContent::ToolCall(call) = &assembler.message().content[0] else {
            panic!("no call");
        };
        assert_eq!(call.arguments["path"], "w.txt");
    }
}
