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
mod wire;

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use self::assemble::Assembler;
use super::ProviderConfig;
use super::driver::drive;
use super::http::{Endpoint, HttpError, JsonPost};
use crate::stream::{AssistantStream, Context, Model, Provider};

/// The wire API name this provider implements.
pub const API: &str = "openai-completions";
/// A provider for `openai-completions` endpoints.
pub struct OpenAiCompletions {
    endpoint: Endpoint,
}

impl OpenAiCompletions {
    /// A provider sending to `config.base_url` (e.g. `https://api.openai.com/v1`
    /// or `http://127.0.0.1:8080/v1`). The HTTP client (connection pool) is
    /// built once here and shared by all requests.
    pub fn new(config: ProviderConfig) -> Self {
        OpenAiCompletions {
            endpoint: Endpoint::new(config),
        }
    }

    /// The POST of one request: `{base_url}/chat/completions` with the key
    /// as a bearer token.
    fn post(&self, model: &Model, context: &Context) -> Result<JsonPost, HttpError> {
        let config = &self.endpoint.config;
        let authorization = config.api_key.as_ref().map(|key| format!("Bearer {key}"));
        let headers = authorization
            .as_deref()
            .map(|value| ("authorization", value));
        let body = request::request_body(model, context, config);
        self.endpoint.post("chat/completions", headers, &body)
    }
}

impl Provider for OpenAiCompletions {
    fn stream(
        &self,
        model: &Model,
        context: &Context,
        cancel: CancellationToken,
    ) -> AssistantStream {
        let config = &self.endpoint.config;
        let tools = if config.recover_text_tool_calls {
            context.tools.clone()
        } else {
            Arc::from([])
        };
        drive(
            Arc::clone(config),
            self.post(model, context),
            Assembler::new(model, tools),
            cancel,
        )
    }
}
