//! MCP servers in the real terminal UI (tmux): the startup notice and
//! `/mcp`, with a real server from the registry (`.ci/run` installs it)
//! and one that fails to start.
#![cfg(all(feature = "mcp", feature = "tui"))]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod mcp_support;
#[allow(dead_code)]
#[path = "tui_support/sse_server.rs"]
mod sse_server;
#[allow(dead_code)]
#[path = "tui_support/tmux.rs"]
mod tmux;

use mcp_support::everything_installed;
use sse_server::SseServer;
use tmux::Tmux;

#[test]
fn the_startup_notice_and_slash_mcp_show_each_servers_state_and_tools() {
    if !everything_installed() {
        return;
    }
    let server = SseServer::with_calls(Vec::new());
    let config = serde_json::json!({"mcpServers": {
        "everything": {"command": "mcp-server-everything", "args": ["stdio"], "startupTimeoutSec": 60},
        "broken": {"command": "sh", "args": ["-c", "echo 'no token' >&2; exit 3"]},
    }});
    let Some(tmux) = Tmux::start_in(&server, &["--mcp-config", "servers.json"], |cwd| {
        std::fs::write(cwd.join("servers.json"), config.to_string()).unwrap();
    }) else {
        return;
    };
    let screen = tmux.wait_for("the footer", |s| s.contains("openai/test-model"));
    let top: Vec<&str> = screen.lines().take(3).map(str::trim_end).collect();
    assert_eq!(
        top,
        [
            "MCP: 1 server, 13 tools (1 failed, /mcp for details)",
            "",
            "Warning: MCP server \"broken\" did not start: it exited during the MCP handshake (stderr: no token)",
        ],
        "{screen}"
    );
    tmux.type_text("/mcp");
    tmux.key("Enter");
    let screen = tmux.wait_for("the server list", |s| s.contains("  everything running"));
    assert!(
        screen.contains(
            "MCP: 1 server, 13 tools (1 failed, /mcp for details)\n  broken failed\n    it exited during the MCP handshake (stderr: no token)\n  everything running · 13 tools\n    mcp__everything__echo, "
        ),
        "{screen}"
    );
    tmux.quit();
}
