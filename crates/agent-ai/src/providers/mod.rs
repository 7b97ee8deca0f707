//! Streaming providers over HTTP: OpenAI-compatible chat completions and
//! Anthropic Messages.
//!
//! Both implement [`crate::Provider`]: whatever goes wrong (HTTP status,
//! dropped connection, malformed event, stall past the read timeout) ends the
//! stream with an `error` event carrying a clear `errorMessage`; 429, 5xx and
//! overloaded answers are retried with backoff first (honouring `retry-after`),
//! each retry logged with `tracing::warn!` and reported to
//! [`ProviderConfig::on_retry`].
//!
//! The building blocks are API-independent and shared by the providers, one
//! home per concern: [`driver`] (one response: `start`, attempts, events,
//! the last event), [`http`] (sending, the error texts), [`retry`] (the
//! policy, `retry-after`, the one retry counter), [`sse`] (server-sent events
//! with a read timeout and cancellation), [`transform`] (Pi's
//! transform-messages: failed turns dropped, orphaned tool calls closed,
//! other models' thinking and ids adapted) and [`crate::partial_json`]
//! (arguments while they stream). A provider is its request body and a
//! `driver::Decoder` for its events.
//!
//! Everything that speaks HTTP is behind the default `http` feature; the
//! replay repair ([`transform`]) and the recovery of tool calls written as
//! text ([`text_tool_calls`]) are pure and always present, for providers of
//! one's own.

#[cfg(feature = "http")]
pub mod anthropic_messages;
#[cfg(feature = "http")]
pub mod driver;
#[cfg(feature = "http")]
pub mod http;
#[cfg(feature = "http")]
pub mod openai_completions;
#[cfg(feature = "http")]
pub mod probe;
#[cfg(feature = "http")]
pub mod retry;
#[cfg(feature = "http")]
pub mod sse;
pub mod text_tool_calls;
pub mod transform;

#[cfg(feature = "http")]
mod config;

#[cfg(feature = "http")]
pub use anthropic_messages::AnthropicMessagesProvider;
#[cfg(feature = "http")]
pub use config::{ProviderConfig, SUPPORTED_APIS, for_api};
#[cfg(feature = "http")]
pub use openai_completions::OpenAiCompletions;
#[cfg(feature = "http")]
pub use retry::{RetryCallback, RetryNotice, RetryPolicy};
