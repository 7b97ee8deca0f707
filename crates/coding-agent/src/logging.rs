//! Where the binary's `tracing` events go: stderr in the print, JSON and RPC
//! modes and for `tool` (stdout carries their output), the transcript in the
//! interactive mode (stderr is the screen there). Without this, warnings such
//! as a request being retried or a session that cannot be saved were lost.
//!
//! `CODING_AGENT_LOG` filters them with `tracing`'s directive syntax
//! (`info`, `agent_ai=debug`); the default is `warn`.

use coding_agent::warnings::{LineLayer, WarningReceiver};
use tracing_subscriber::filter::LevelFilter;
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;
use tracing_subscriber::{EnvFilter, Layer as _};

/// The environment variable holding the filter.
const FILTER_ENV: &str = "CODING_AGENT_LOG";

fn install(layer: LineLayer) {
    let filter = EnvFilter::builder()
        .with_default_directive(LevelFilter::WARN.into())
        .with_env_var(FILTER_ENV)
        .from_env_lossy();
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
