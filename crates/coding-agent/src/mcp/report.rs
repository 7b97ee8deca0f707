//! What the user reads about the MCP servers: the one-line summary the
//! interactive mode shows at startup, and the list `/mcp` shows.

use super::ServerStatus;
use crate::render::preview::count;
use crate::render::{Style, StyledLine};

/// `MCP: 2 servers, 13 tools`, counting the running servers and their
/// tools; the starting, stopped and failed ones are named by count when
/// there are any.
pub fn summary(servers: &[ServerStatus]) -> String {
    let running: Vec<&ServerStatus> = servers.iter().filter(|s| s.status == "running").collect();
    let tools: usize = running.iter().map(|s| s.tools.len()).sum();
    let running = running.len();
    let mut text = format!(
        "MCP: {}, {}",
        count(running, "server", "servers"),
        count(tools, "tool", "tools")
    );
    let starting = servers.iter().filter(|s| s.status == "starting").count();
    if starting > 0 {
        text.push_str(&format!(" ({starting} starting)"));
    }
    for kind in ["stopped", "failed"] {
        let many = servers.iter().filter(|s| s.status == kind).count();
        if many > 0 {
            text.push_str(&format!(" ({many} {kind}, /mcp for details)"));
        }
    }
    text
}

/// `/mcp`: the summary, then each server with its status, its error and its
/// tools.
pub fn status_lines(servers: &[ServerStatus]) -> Vec<StyledLine> {
    if servers.is_empty() {
        return vec![StyledLine::new(
            "No MCP servers are configured (\"mcpServers\" in settings.json, .mcp.json, or --mcp-config)",
            Style::Dim,
        )];
    }
    let mut lines = vec![StyledLine::new(summary(servers), Style::Bold)];
    for server in servers {
        let style = match server.status {
            "running" => Style::Success,
            "failed" => Style::Error,
            _ => Style::Dim,
        };
        let mut line = StyledLine::new(format!("  {} ", server.name), Style::Accent)
            .push(server.status, style);
        if !server.tools.is_empty() {
            line = line.push(
                format!(" · {}", count(server.tools.len(), "tool", "tools")),
                Style::Normal,
            );
        }
        lines.push(line);
        if let Some(error) = &server.error {
            lines.push(StyledLine::new(format!("    {error}"), Style::Error));
        }
        if !server.tools.is_empty() {
            lines.push(StyledLine::new(
                format!("    {}", server.tools.join(", ")),
                Style::Dim,
            ));
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::to_markup;

    fn server(
        name: &str,
        status: &'static str,
        error: Option<&str>,
        tools: &[&str],
    ) -> ServerStatus {
        ServerStatus {
            name: name.into(),
            status,
            error: error.map(str::to_owned),
            tools: tools.iter().map(|&t| t.to_owned()).collect(),
        }
    }

    #[test]
    fn the_summary_counts_running_servers_and_tools_and_points_at_failures() {
        let servers = [
            server("time", "running", None, &["mcp__time__now"]),
            server("fs", "running", None, &["mcp__fs__read", "mcp__fs__write"]),
        ];
        assert_eq!(summary(&servers), "MCP: 2 servers, 3 tools");
        let servers = [
            server("time", "running", None, &["mcp__time__now"]),
            server("gh", "failed", Some("timed out after 10 s"), &[]),
        ];
        assert_eq!(
            summary(&servers),
            "MCP: 1 server, 1 tool (1 failed, /mcp for details)"
        );
        // A server that died keeps its tools on offer (it may be started
        // again), but they are not counted as up.
        let servers = [server(
            "fs",
            "stopped",
            Some("the server exited"),
            &["mcp__fs__read"],
        )];
        assert_eq!(
            summary(&servers),
            "MCP: 0 servers, 0 tools (1 stopped, /mcp for details)"
        );
    }

    #[test]
    fn the_list_shows_each_servers_status_error_and_tools() {
        let servers = [
            server(
                "time",
                "running",
                None,
                &["mcp__time__now", "mcp__time__convert"],
            ),
            server("gh", "failed", Some("timed out after 10 s"), &[]),
            server("old", "disabled", None, &[]),
        ];
        assert_eq!(
            to_markup(&status_lines(&servers)),
            "[bold]MCP: 1 server, 2 tools (1 failed, /mcp for details)[/]\n\
             [accent]  time [/][success]running[/] · 2 tools\n\
             [dim]    mcp__time__now, mcp__time__convert[/]\n\
             [accent]  gh [/][error]failed[/]\n\
             [error]    timed out after 10 s[/]\n\
             [accent]  old [/][dim]disabled[/]"
        );
        assert_eq!(
            to_markup(&status_lines(&[])),
            "[dim]No MCP servers are configured (\"mcpServers\" in settings.json, .mcp.json, or --mcp-config)[/]"
        );
    }
}
