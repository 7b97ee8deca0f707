//! Where the binary's `tracing` events go: stderr in the print, JSON and RPC
//! modes and for `tool` (stdout carries their output), the transcript in the
//! interactive mode (stderr is the screen there). Without this, warnings such
//! as a request being retried or a session that cannot be saved were lost.
//!
//! `CODING_AGENT_LOG` filters them with `tracing`'s directive syntax
//! (`info`, `agent_ai=debug`); the default is `warn`, with the MCP SDK
//! (`rmcp`) quiet: it reports each broken event stream and retry of an
//! HTTP server in its own words, and the MCP client already tells the user
//! once, naming the server (`rmcp=warn` brings them back).

use coding_agent::warnings::{LineLayer, WarningReceiver};
use tracing_subscriber::filter::LevelFilter;
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;
use tracing_subscriber::{EnvFilter, Layer as _};

/// The environment variable holding the filter.
const FILTER_ENV: &str = "CODING_AGENT_LOG";

/// The filter when `CODING_AGENT_LOG` is unset or empty.
const DEFAULT_FILTER: &str = "warn,rmcp=off";

fn install(layer: LineLayer) {
    let directives = std::env::var(FILTER_ENV)
        .ok()
        .filter(|value| !value.trim().is_empty())
        .unwrap_or_else(|| DEFAULT_FILTER.to_owned());
    let filter = EnvFilter::builder()
        .with_default_directive(LevelFilter::WARN.into())
        .parse_lossy(directives);
    // Only fails when a subscriber is installed already: keep that one.
    let _ = tracing_subscriber::registry()
        .with(layer.with_filter(filter))
        .try_init();
}

/// Events as lines on stderr.
pub fn to_stderr() {
    install(LineLayer::stderr());
}

/// Events as notices in the interactive transcript; the driver reads them
/// from the returned receiver.
pub fn to_transcript() -> WarningReceiver {
    let (layer, receiver) = LineLayer::channel();
    install(layer);
    receiver
}
