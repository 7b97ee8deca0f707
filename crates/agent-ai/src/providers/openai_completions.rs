//! The `openai-completions` API: `POST {base_url}/chat/completions` with
//! `stream: true`, as OpenAI and most OpenAI-compatible servers (vLLM,
//! llama.cpp, Ollama, LM Studio, OpenRouter, Groq, ...) speak it.
//!
//! Sending, retrying (429, 5xx, and an in-stream `error` with such a code
//! before any content), the read timeout and cancellation are the shared
//! [`driver`](super::driver)'s; this API adds its request and its decoder.
//!
//! Module map: `request` builds the body (Pi's `openai-completions.ts`,
//! through the shared [`transform_messages`](super::transform::transform_messages)),
//! `wire` reads the chunks' fields (reasoning, errors, finish reasons,
//! usage), `assemble` turns chunks into Pi's events (the
//! [`Decoder`](super::driver::Decoder)), recovering tool calls written as text.

mod assemble;
mod request;
mod think_tags;
mod wire;

use std::sync::Arc;

use self::assemble::Assembler;
use super::ProviderConfig;
use super::driver::{HttpProvider, WireApi};
use super::http::{Endpoint, HttpError, JsonPost};
use crate::stream::{Context, Model};

/// The wire API name this provider implements.
pub const API: &str = "openai-completions";

/// A provider for `openai-completions` endpoints, sending to
/// `config.base_url` (e.g. `https://api.openai.com/v1` or
/// `http://127.0.0.1:8080/v1`).
pub type OpenAiCompletions = HttpProvider<OpenAiCompletionsApi>;

/// The chat completions API's request and decoder.
pub struct OpenAiCompletionsApi;

impl WireApi for OpenAiCompletionsApi {
    const PROVIDER: &'static str = "OpenAiCompletions";
    type Decoder = Assembler;

    /// `{base_url}/chat/completions` with the key as a bearer token.
    fn post(endpoint: &Endpoint, model: &Model, context: &Context) -> Result<JsonPost, HttpError> {
        let config = &endpoint.config;
        let authorization = config.api_key.as_ref().map(|key| format!("Bearer {key}"));
        let headers = authorization
            .as_deref()
            .map(|value| ("authorization", value));
        let body = request::request_body(model, context, config);
        endpoint.post("chat/completions", headers, &body)
    }

    /// Tool calls written as text are recovered only when the config asks.
    fn decoder(config: &ProviderConfig, model: &Model, context: &Context) -> Assembler {
        let tools = if config.recover_text_tool_calls {
            context.tools.clone()
        } else {
            Arc::from([])
        };
        Assembler::new(model, tools)
    }
}
