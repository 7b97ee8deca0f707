//! Runs one command through the bash tool and prints what the model would
//! read, minus the bulk: a quick way to measure time and peak memory for huge
//! outputs (`/usr/bin/time -v`), e.g.
//! `cargo run --release --example bash_bulk_output -- 'yes | head -c 200000000'`.

use std::time::Instant;

use agent_core::UpdateSink;
use coding_agent::tools::bash::BashTool;
use coding_agent::{ToolContext, ToolDefinition};
use serde_json::json;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let command = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "yes | head -c 200000000".to_owned());
    let cwd = std::env::current_dir()?;
    let started = Instant::now();
    let result = BashTool::local()
        .execute(
            "bench",
            json!({ "command": command }),
            ToolContext::new(cwd),
            UpdateSink::discard(),
        )
        .await;
    let elapsed = started.elapsed();
    let text = match &result {
        Ok(result) => result
            .content
            .first()
            .and_then(|c| c.as_text())
            .unwrap_or(""),
        Err(error) => error.message(),
    };
    let tail_start = text.len().saturating_sub(200);
    println!(
        "ok={} chars={} elapsed={:.2?}\n...{}",
        result.is_ok(),
        text.len(),
        elapsed,
        text.get(tail_start..).unwrap_or("")
    );
    Ok(())
}
