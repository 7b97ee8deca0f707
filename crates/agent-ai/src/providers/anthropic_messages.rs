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

use self::assemble::Assembler;
use super::ProviderConfig;
use super::driver::{HttpProvider, WireApi};
use super::http::{Endpoint, HttpError, JsonPost};
use crate::stream::{Context, Model};

/// The wire API name this provider implements.
pub const API: &str = "anthropic-messages";

/// The `anthropic-version` header this code speaks.
const ANTHROPIC_VERSION: &str = "2023-06-01";

/// A provider for Anthropic's Messages API (and compatible endpoints), for
/// `config.base_url` (e.g. `https://api.anthropic.com`).
pub type AnthropicMessagesProvider = HttpProvider<AnthropicMessages>;

/// The Messages API's request and decoder.
pub struct AnthropicMessages;

impl WireApi for AnthropicMessages {
    const PROVIDER: &'static str = "AnthropicMessagesProvider";
    type Decoder = Assembler;

    /// `{base_url}/v1/messages`, with the key as `x-api-key` when there is one.
    fn post(endpoint: &Endpoint, model: &Model, context: &Context) -> Result<JsonPost, HttpError> {
        let config = &endpoint.config;
        let mut headers = vec![("anthropic-version", ANTHROPIC_VERSION)];
        if let Some(key) = &config.api_key {
            headers.push(("x-api-key", key));
        }
        let body = request::request_body(model, context, config);
        endpoint.post("v1/messages", headers, &body)
    }

    fn decoder(_config: &ProviderConfig, model: &Model, _context: &Context) -> Assembler {
        Assembler::new(model)
    }
}
