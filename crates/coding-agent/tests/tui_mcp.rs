//! MCP servers in the real terminal UI (tmux): the startup notice and
//! `/mcp`, with a real server from the registry (`.ci/run` installs it)
//! and one that fails to start; the screen is up while a server starts,
//! and a prompt sent meanwhile waits for it (or, on Esc, goes without it).
#![cfg(all(feature = "mcp", feature = "tui"))]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod mcp_support;
#[allow(dead_code)]
#[path = "tui_support/sse_server.rs"]
mod sse_server;
#[allow(dead_code)]
#[path = "tui_support/tmux.rs"]
mod tmux;

use mcp_support::{everything_installed, time_installed};
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
    // The screen is up before the servers; the notices come once both
    // have started or failed.
    let screen = tmux.wait_for("the startup notices", |s| {
        s.contains("openai/test-model") && s.contains("did not start")
    });
    // Below a new session's first line (and the blank after it).
    let top: Vec<&str> = screen.lines().skip(2).take(3).map(str::trim_end).collect();
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

/// The time server (PyPI), held back until the file `go` exists in the
/// working directory, so the test decides when it has started.
fn held_time_server(tmux_cwd: &std::path::Path) -> serde_json::Value {
    let go = tmux_cwd.join("go");
    serde_json::json!({"mcpServers": {"late": {
        "command": "sh",
        "args": ["-c", format!(
            "while [ ! -e '{}' ]; do sleep 0.05; done; exec mcp-server-time --local-timezone UTC",
            go.display()
        )],
        "startupTimeoutSec": 60,
    }}})
}

/// The names of the tools a request offered.
fn offered(request: &serde_json::Value) -> Vec<String> {
    request["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .map(|tool| tool["function"]["name"].as_str().unwrap().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// The UI with the held time server still starting (the screen says so),
/// and `prompt` sent, waiting for it.
fn prompt_while_a_server_starts(prompt: &str) -> Option<(SseServer, Tmux)> {
    if !time_installed() {
        return None;
    }
    let server = SseServer::with_calls(Vec::new());
    let tmux = Tmux::start_in(&server, &["--mcp-config", "servers.json"], |cwd| {
        std::fs::write(cwd.join("servers.json"), held_time_server(cwd).to_string()).unwrap();
    })?;
    tmux.wait_for("the footer and the server starting", |s| {
        s.contains("openai/test-model") && s.contains("Starting MCP servers: late")
    });
    tmux.type_text(prompt);
    tmux.key("Enter");
    tmux.wait_for("the prompt waiting", |s| {
        s.contains(&format!("Waiting to send: {prompt}"))
    });
    Some((server, tmux))
}

const TIME_TOOL: &str = "mcp__late__get_current_time";

#[test]
fn the_screen_is_up_while_a_server_starts_and_a_prompt_waits_for_its_tools() {
    let Some((server, tmux)) = prompt_while_a_server_starts("what time is it") else {
        return;
    };
    tmux.wait_for("the status line", |s| {
        s.contains("Waiting for MCP servers to start: late (Esc sends without them)")
    });
    assert!(server.requests().is_empty(), "{:?}", server.requests());

    std::fs::write(tmux.cwd.join("go"), "").unwrap();
    // The start's summary and the answer, in either order: the waiting
    // prompt goes out as soon as the server is up, and a loaded machine
    // may draw the summary after a quick answer.
    let screen = tmux.wait_for("the answer and the start's summary", |s| {
        s.contains("Done. Last user message: what time is it")
            && s.contains("MCP: 1 server, 2 tools")
    });
    assert!(!screen.contains("Waiting to send"), "{screen}");
    let requests = server.requests();
    assert_eq!(requests.len(), 1, "{requests:?}");
    assert!(
        offered(&requests[0]).contains(&TIME_TOOL.to_owned()),
        "{requests:?}"
    );
    tmux.quit();
}

#[test]
fn esc_sends_a_waiting_prompt_without_the_server_and_its_tools_come_later() {
    let Some((server, tmux)) = prompt_while_a_server_starts("now") else {
        return;
    };
    tmux.key("Escape");
    // Once the run has ended (the answer can show a moment before), the
    // status line says the server still starts.
    tmux.wait_for("the answer, the server still starting", |s| {
        s.contains("Done. Last user message: now") && s.contains("Starting MCP servers: late")
    });
    let requests = server.requests();
    assert_eq!(requests.len(), 1, "{requests:?}");
    let first = offered(&requests[0]);
    assert!(first.contains(&"read".to_owned()), "{first:?}");
    assert!(
        !first.iter().any(|name| name.starts_with("mcp__")),
        "{first:?}"
    );

    std::fs::write(tmux.cwd.join("go"), "").unwrap();
    tmux.wait_for("the startup notice", |s| {
        s.contains("MCP: 1 server, 2 tools")
    });
    tmux.type_text("/tools");
    tmux.key("Enter");
    tmux.wait_for("the server's tools in /tools", |s| {
        s.contains(&format!(
            "Active tools: read, bash, edit, write, grep, find, ls, {TIME_TOOL}"
        ))
    });
    tmux.type_text("again");
    tmux.key("Enter");
    tmux.wait_for("the second answer", |s| {
        s.contains("Done. Last user message: again")
    });
    let requests = server.requests();
    assert!(
        offered(&requests[1]).contains(&TIME_TOOL.to_owned()),
        "{requests:?}"
    );
    tmux.quit();
}

#[test]
fn quitting_while_a_prompt_waits_for_a_server_never_sends_it() {
    let Some((server, tmux)) = prompt_while_a_server_starts("never") else {
        return;
    };
    tmux.key("C-c");
    tmux.key("C-c");
    // The server comes up as the app quits (a run still going gets a few
    // seconds to end): the prompt must not go out then.
    std::fs::write(tmux.cwd.join("go"), "").unwrap();
    tmux.wait_for("the app to quit", |s| !s.contains("openai/test-model"));
    std::thread::sleep(std::time::Duration::from_millis(500));
    assert!(server.requests().is_empty(), "{:?}", server.requests());
}
