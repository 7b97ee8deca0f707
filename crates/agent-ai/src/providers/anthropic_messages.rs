//! The `anthropic-messages` API: `POST {base_url}/v1/messages` with
//! `stream: true`, read as server-sent events.
//!
//! Sending, retrying (429, 5xx, 529, and an `overloaded_error` event before
//! any content), the read timeout and cancellation are the shared
//! [`driver`](super::driver)'s; this API adds its request and its decoder.
//!
//! Module map: `request` builds the body (through the shared
//! [`transform_messages`](super::transform::transform_messages), with tool
//! call ids made safe for Anthropic), `wire` types the events, `assemble`
//! turns them into Pi's events (the [`Decoder`](super::driver::Decoder)).

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
pub const API: &str = "anthropic-messages";

/// The `anthropic-version` header this code speaks.
const ANTHROPIC_VERSION: &str = "2023-06-01";

/// A provider for Anthropic's Messages API (and compatible endpoints).
#[derive(Clone)]
pub struct AnthropicMessagesProvider {
    endpoint: Endpoint,
}

impl AnthropicMessagesProvider {
    /// A provider for `config.base_url` (e.g. `https://api.anthropic.com`).
    /// The HTTP client (connection pool) is built once here and shared by
    /// all requests.
    pub fn new(config: ProviderConfig) -> Self {
        AnthropicMessagesProvider {
            endpoint: Endpoint::new(config),
        }
    }

    /// The POST of one request, with the key as `x-api-key` when there is one.
    fn post(&self, model: &Model, context: &Context) -> Result<JsonPost, HttpError> {
        let config = &self.endpoint.config;
        let mut headers = vec![("anthropic-version", ANTHROPIC_VERSION)];
        if let Some(key) = &config.api_key {
            headers.push(("x-api-key", key));
        }
        let body = request::request_body(model, context, config);
        self.endpoint.post("v1/messages", headers, &body)
    }
}

/// Shows where it sends requests, never the API key.
impl std::fmt::Debug for AnthropicMessagesProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AnthropicMessagesProvider")
            .field("base_url", &self.endpoint.config.base_url)
            .finish_non_exhaustive()
    }
}

impl Provider for AnthropicMessagesProvider {
    fn stream(
        &self,
        model: &Model,
        context: &Context,
        cancel: CancellationToken,
    ) -> AssistantStream {
        drive(
            Arc::clone(&self.endpoint.config),
            self.post(model, context),
            Assembler::new(model),
            cancel,
        )
    }
}
