//! MCP servers end to end: the built binary starts the servers its settings,
//! the project's files and `--mcp-config` name (real servers from the
//! registries, `.ci/run` installs them), and a loopback model calls their
//! tools; what the tools answered is checked where the model reads it, the
//! requests the server received.
#![cfg(feature = "mcp")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod e2e_support;
mod mcp_support;

use std::path::Path;

use e2e_support::*;
use mcp_support::{HttpServer, everything_installed, python_mcp_installed, python3_installed};
use serde_json::{Value, json};

/// The grow server, which adds a tool when asked.
const GROW_SERVER: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/mcp_support/grow_server.py"
);

/// An `"mcpServers"` entry running [`GROW_SERVER`]; `-B`: no `__pycache__`
/// left beside the scripts.
fn grow_entry() -> Value {
    json!({"command": "python3", "args": ["-B", GROW_SERVER]})
}

/// An `"mcpServers"` entry running `script` with `sh -c`.
fn shell_entry(script: &str) -> Value {
    json!({"command": "sh", "args": ["-c", script], "startupTimeoutSec": 60})
}

fn everything_entry() -> Value {
    json!({"command": "mcp-server-everything", "args": ["stdio"], "startupTimeoutSec": 60})
}

fn write_json(path: &Path, value: &Value) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, value.to_string()).unwrap();
}

fn calls(calls: &[(&str, &str, Value)]) -> Answer {
    Answer::Calls(
        calls
            .iter()
            .map(|(id, name, args)| Call {
                id: (*id).into(),
                name: (*name).into(),
                args: args.clone(),
            })
            .collect(),
    )
}

#[test]
fn an_mcp_tool_and_a_builtin_run_in_one_batch_and_both_results_reach_the_model() {
    if !everything_installed() {
        return;
    }
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.work.join("notes.txt"), "hello\n").unwrap();
    sandbox.write_global_settings(&json!({"mcpServers": {"everything": everything_entry()}}));
    let wire = Wire::OpenAi;
    let server = ModelServer::answering(
        wire,
        vec![
            calls(&[
                (
                    "call_echo",
                    "mcp__everything__echo",
                    json!({"message": "hi"}),
                ),
                ("call_read", "read", json!({"path": "notes.txt"})),
            ]),
            Answer::text(&["Both answered."]),
        ],
    );
    let mut command = sandbox.command(wire, &server);
    // MCP tools need approval by default: a rule allows the server's tools.
    command.args(["--allow", "mcp__everything"]);
    command.args(["-p", "Echo hi and read notes.txt."]);
    let stdout = Running::spawn(command).finish_quietly();
    assert_eq!(stdout, "Both answered.\n");
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let offered = wire.tool_names(&requests[0].body);
    assert_eq!(
        offered[..7],
        ["read", "bash", "edit", "write", "grep", "find", "ls"]
    );
    assert!(
        offered.contains(&"mcp__everything__echo".to_owned())
            && offered.contains(&"mcp__everything__get-sum".to_owned()),
        "{offered:?}"
    );
    assert_eq!(
        wire.transcript(&requests[1].body)[1..],
        [
            format!(
                "assistant: call call_echo mcp__everything__echo {}",
                json!({"message": "hi"})
            ),
            format!(
                "assistant: call call_read read {}",
                json!({"path": "notes.txt"})
            ),
            "tool call_echo: Echo: hi".to_owned(),
            "tool call_read: hello\n".to_owned(),
        ]
    );
    // The session file holds both results, in call order.
    let session = &Sandbox::session_files(&sandbox.default_session_dir())[0];
    let results: Vec<(String, String)> = session_lines(session)
        .iter()
        .filter(|line| line["message"]["role"] == "toolResult")
        .map(|line| {
            (
                line["message"]["toolName"].as_str().unwrap().to_owned(),
                line["message"]["content"][0]["text"]
                    .as_str()
                    .unwrap()
                    .to_owned(),
            )
        })
        .collect();
    assert_eq!(
        results,
        [
            ("mcp__everything__echo".to_owned(), "Echo: hi".to_owned()),
            ("read".to_owned(), "hello\n".to_owned()),
        ]
    );
}

#[test]
fn mcp_config_files_start_and_an_untrusted_projects_servers_do_not() {
    if !everything_installed() {
        return;
    }
    let sandbox = Sandbox::new();
    let started = sandbox.root.join("project-server-started");
    let project_server = shell_entry(&format!(
        "touch '{}'; exec mcp-server-everything stdio",
        started.display()
    ));
    write_json(
        &sandbox.work.join(".mcp.json"),
        &json!({"mcpServers": {"fromMcpJson": project_server}}),
    );
    sandbox.write_project_settings(&json!({"mcpServers": {"fromProjectSettings": project_server}}));
    let config = sandbox.root.join("servers.json");
    write_json(
        &config,
        &json!({"mcpServers": {
            "cfg": everything_entry(),
            "web": {"type": "http", "url": "http://127.0.0.1:9/mcp"},
        }}),
    );
    let wire = Wire::OpenAi;
    let server = ModelServer::answering(wire, vec![Answer::text(&["ok"])]);
    let mut command = sandbox.command(wire, &server);
    command
        .args(["--mcp-config", config.to_str().unwrap()])
        .args(["-p", "hi"]);
    let (status, stdout, stderr) = Running::spawn(command).finish();

    assert_eq!((status.code(), stdout.as_str()), (Some(0), "ok\n"));
    let offered = wire.tool_names(&server.requests()[0].body);
    assert!(
        offered.contains(&"mcp__cfg__echo".to_owned()),
        "{offered:?}"
    );
    assert!(
        !offered.iter().any(|name| name.starts_with("mcp__from")),
        "{offered:?}"
    );
    assert!(!started.exists(), "an untrusted project's server ran");
    assert_eq!(
        stderr.lines().collect::<Vec<_>>(),
        [
            "Warning: MCP: the project's servers \"fromMcpJson\", \"fromProjectSettings\" are not started: the project is not trusted (trust it with --trust)",
            "Warning: MCP server \"web\" did not start: http://127.0.0.1:9/mcp: the MCP handshake failed: Connection refused (os error 111)",
        ]
    );

    // Trusted (`--trust`), the project's servers start.
    let mut command = sandbox.command(wire, &server);
    command.args(["--trust", "-p", "hi"]);
    let (status, _, stderr) = Running::spawn(command).finish();
    assert_eq!((status.code(), stderr.as_str()), (Some(0), ""));
    let offered = wire.tool_names(&server.requests()[1].body);
    for name in ["mcp__fromMcpJson__echo", "mcp__fromProjectSettings__echo"] {
        assert!(offered.contains(&name.to_owned()), "{offered:?}");
    }
    assert!(started.exists());
}

/// `--tools` is an allowlist for the servers' tools too, named as
/// permission rules name them, and `--no-tools` leaves every tool out: both
/// offered every MCP tool, and `--tools mcp__a__add_tool` was an unknown
/// tool. A name that matches no server or no tool of its server is warned
/// about, as an unknown built-in name is (it offered nothing, silently).
#[test]
fn tools_and_no_tools_hold_for_mcp_tools() {
    if !python3_installed() {
        return;
    }
    let sandbox = Sandbox::new();
    let config = sandbox.root.join("servers.json");
    write_json(
        &config,
        &json!({"mcpServers": {"a": grow_entry(), "b": grow_entry(), "c": grow_entry()}}),
    );
    let wire = Wire::OpenAi;
    let server = ModelServer::answering(wire, vec![Answer::text(&["ok"]); 5]);
    let run = |tools: &[&str]| {
        let mut command = sandbox.command(wire, &server);
        command
            .args(["--mcp-config", config.to_str().unwrap()])
            .args(tools)
            .args(["-p", "hi"]);
        let (status, _, stderr) = Running::spawn(command).finish();
        assert_eq!(status.code(), Some(0), "{stderr}");
        let offered = wire.tool_names(&server.requests().last().unwrap().body);
        (offered, stderr)
    };
    let (offered, stderr) = run(&[]);
    assert_eq!(offered.len(), 7 + 3, "{offered:?}");
    assert_eq!(stderr, "");

    let (offered, stderr) = run(&["--tools", "read,MCP__a,mcp__b__add_tool"]);
    assert_eq!(
        offered,
        ["read", "mcp__a__add_tool", "mcp__b__add_tool"],
        "{stderr}"
    );
    assert_eq!(
        stderr,
        "Warning: MCP: the server \"c\" is not started: the tools enabled (--tools, --no-tools) include none of its tools (name mcp__SERVER, or mcp__SERVER__TOOL, in --tools)\n"
    );

    let (offered, stderr) = run(&["--tools", "read,mcp__a__nosuch,mcp__nosrv"]);
    assert_eq!(offered, ["read"], "{stderr}");
    assert_eq!(
        stderr,
        "Warning: Unknown tool \"mcp__nosrv\" in --tools: it names none of the MCP servers configured (\"a\", \"b\", \"c\")\n\
         Warning: MCP: the servers \"b\", \"c\" are not started: the tools enabled (--tools, --no-tools) include none of theirs (name mcp__SERVER, or mcp__SERVER__TOOL, in --tools)\n\
         Warning: Unknown tool \"mcp__a__nosuch\" in --tools: MCP server \"a\" has no tool by that name. Its tools: mcp__a__add_tool\n"
    );

    let (offered, stderr) = run(&["--no-tools"]);
    assert_eq!(offered, Vec::<String>::new());
    assert!(
        stderr.contains("\"a\", \"b\", \"c\" are not started"),
        "{stderr}"
    );

    let mut command = sandbox.command(wire, &server);
    command
        .args(["--mcp-config", config.to_str().unwrap()])
        .args(["--tools", "read,mcp__a__x*", "-p", "hi"]);
    let (status, _, stderr) = Running::spawn(command).finish();
    assert_eq!(status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("coding-agent: --tools: invalid permission rule `mcp__a__x*`"),
        "{stderr}"
    );
}

#[test]
fn a_server_that_dies_during_a_call_fails_that_call_and_is_restarted_for_the_next() {
    if !everything_installed() {
        return;
    }
    let sandbox = Sandbox::new();
    let pid = sandbox.root.join("server.pid");
    sandbox.write_global_settings(&json!({"mcpServers": {"everything": shell_entry(&format!(
        "echo $$ > '{}'; exec mcp-server-everything stdio",
        pid.display()
    ))}}));
    let wire = Wire::OpenAi;
    let server = ModelServer::answering(
        wire,
        vec![
            Answer::call(
                "call_long",
                "mcp__everything__trigger-long-running-operation",
                json!({"duration": 30, "steps": 30}),
            ),
            Answer::call(
                "call_echo",
                "mcp__everything__echo",
                json!({"message": "again"}),
            ),
            Answer::text(&["Recovered."]),
        ],
    );
    let mut command = sandbox.command(wire, &server);
    command.args(["--allow", "mcp__everything"]);
    command.args(["--mode", "json", "Run the long operation."]);
    let mut running = Running::spawn(command);
    let lines = running.stdout_lines();
    // The call is running on the server once its first progress arrives.
    loop {
        let event = next_json(&lines);
        if event["type"] == "tool_execution_update" {
            break;
        }
    }
    let server_pid = std::fs::read_to_string(&pid).unwrap();
    std::process::Command::new("kill")
        .args(["-9", server_pid.trim()])
        .status()
        .unwrap();
    while lines.recv_timeout(PATIENCE).is_ok() {}
    let (status, _, stderr) = running.finish();

    assert_eq!(status.code(), Some(0), "{stderr}");
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    let transcript = wire.transcript(&requests[2].body);
    assert_eq!(
        transcript[2],
        "tool call_long: MCP server \"everything\" stopped during the call (stderr: Starting default (STDIO) server...). It is restarted once on the next call."
    );
    assert_eq!(transcript[4], "tool call_echo: Echo: again");
    assert!(
        stderr.contains("MCP server \"everything\" exited (stderr: Starting default (STDIO) server...); restarted it"),
        "{stderr}"
    );
}

#[test]
fn a_tool_added_during_a_call_is_offered_at_the_next_request() {
    if !python3_installed() {
        return;
    }
    let sandbox = Sandbox::new();
    sandbox.write_global_settings(&json!({"mcpServers": {"grow": grow_entry()}}));
    let wire = Wire::OpenAi;
    let server = ModelServer::answering(
        wire,
        vec![
            Answer::call("call_add", "mcp__grow__add_tool", json!({})),
            Answer::call("call_shout", "mcp__grow__shout", json!({"text": "hi"})),
            Answer::text(&["Shouted."]),
        ],
    );
    let mut command = sandbox.command(wire, &server);
    command.args(["--allow", "mcp__grow"]);
    command.args(["-p", "Add a tool, then shout hi."]);
    let stdout = Running::spawn(command).finish_quietly();
    assert_eq!(stdout, "Shouted.\n");
    let requests = server.requests();
    let mcp_tools = |index: usize| -> Vec<String> {
        wire.tool_names(&requests[index].body)
            .into_iter()
            .filter(|name| name.starts_with("mcp__"))
            .collect()
    };
    assert_eq!(mcp_tools(0), ["mcp__grow__add_tool"]);
    assert_eq!(mcp_tools(1), ["mcp__grow__add_tool", "mcp__grow__shout"]);
    assert_eq!(
        wire.transcript(&requests[2].body)[2..],
        [
            "tool call_add: added shout".to_owned(),
            format!(
                "assistant: call call_shout mcp__grow__shout {}",
                json!({"text": "hi"})
            ),
            "tool call_shout: HI!".to_owned(),
        ]
    );
}

/// A server that does not exit when its stdin closes (a shell that goes on
/// after it) and has started a process of its own is stopped with what it
/// started when the agent exits; it was left running before.
#[test]
fn a_server_that_ignores_its_closed_stdin_is_stopped_with_its_children_at_exit() {
    if !python3_installed() {
        return;
    }
    let sandbox = Sandbox::new();
    let pids = sandbox.root.join("pids");
    sandbox.write_global_settings(&json!({"mcpServers": {"lingering": shell_entry(&format!(
        "sleep 300 & echo $$ $! > '{}'; python3 -B {GROW_SERVER}; sleep 301",
        pids.display()
    ))}}));
    let wire = Wire::OpenAi;
    let server = ModelServer::answering(wire, vec![Answer::text(&["Done."])]);
    let mut command = sandbox.command(wire, &server);
    command.args(["-p", "Nothing to do."]);
    let stdout = Running::spawn(command).finish_quietly();
    assert_eq!(stdout, "Done.\n");
    let pids = std::fs::read_to_string(&pids).unwrap();
    for pid in pids.split_whitespace() {
        wait_until(&format!("the end of the server's process {pid}"), || {
            gone(pid)
        });
    }
    let group = pids.split_whitespace().next().unwrap();
    let left = std::process::Command::new("pgrep")
        .args(["-g", group])
        .output()
        .unwrap();
    for pid in String::from_utf8_lossy(&left.stdout).split_whitespace() {
        wait_until(&format!("the end of process {pid} of its group"), || {
            gone(pid)
        });
    }
}

/// Whether process `pid` is gone (a zombie counts: it is only not reaped
/// yet).
fn gone(pid: &str) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |stat| stat.contains(") Z "))
}

#[test]
fn rpc_get_state_lists_each_server_with_its_status_and_tools() {
    if !python3_installed() {
        return;
    }
    let sandbox = Sandbox::new();
    sandbox.write_global_settings(&json!({"mcpServers": {
        "grow": grow_entry(),
        "broken": shell_entry("echo 'no token' >&2; exit 3"),
        "off": {"command": "never-run", "disabled": true},
    }}));
    let wire = Wire::OpenAi;
    let server = ModelServer::answering(wire, vec![Answer::text(&["ok"])]);
    let mut rpc = Rpc::start(&sandbox, wire, &server);
    // The servers start while commands are served: asked until none is
    // `starting`.
    let state = servers_once_started(&mut rpc);
    drop(rpc.stdin);
    let (status, _, stderr) = rpc.running.finish();
    assert_eq!(status.code(), Some(0));
    assert_eq!(
        state,
        json!([
            {"name": "broken", "status": "failed",
             "error": "it exited during the MCP handshake (stderr: no token)", "tools": []},
            {"name": "grow", "status": "running", "tools": ["mcp__grow__add_tool"]},
            {"name": "off", "status": "disabled", "tools": []},
        ])
    );
    assert_eq!(
        stderr,
        "Warning: MCP server \"broken\" did not start: it exited during the MCP handshake (stderr: no token)\n"
    );
}

/// `get_state`'s `mcpServers`.
fn mcp_servers(rpc: &mut Rpc) -> Value {
    let (_, state) = rpc.ask(json!({"id": "s", "type": "get_state"}));
    state["data"]["mcpServers"].clone()
}

/// `get_state`'s `mcpServers`, asked until no server is `starting`.
fn servers_once_started(rpc: &mut Rpc) -> Value {
    let mut servers = Value::Null;
    wait_until("the MCP servers to start", || {
        servers = mcp_servers(rpc);
        servers
            .as_array()
            .unwrap()
            .iter()
            .all(|server| server["status"] != "starting")
    });
    servers
}

#[test]
fn rpc_serves_commands_while_a_server_starts_and_a_prompt_waits_for_its_tools() {
    if !python3_installed() {
        return;
    }
    let sandbox = Sandbox::new();
    // The grow server, held back until the file `go` exists.
    let go = sandbox.work.join("go");
    let held = format!(
        "while [ ! -e '{}' ]; do sleep 0.05; done; exec python3 -B '{GROW_SERVER}'",
        go.display(),
    );
    sandbox.write_global_settings(&json!({"mcpServers": {"late": shell_entry(&held)}}));
    let wire = Wire::OpenAi;
    let server = ModelServer::answering(wire, vec![Answer::text(&["ok"])]);
    let mut rpc = Rpc::start(&sandbox, wire, &server);

    // Commands are answered while the server has not started.
    let starting = json!([{"name": "late", "status": "starting", "tools": []}]);
    assert_eq!(mcp_servers(&mut rpc), starting);

    // A prompt aborted while it waits ends its run without a request.
    let (_, accepted) = rpc.ask(json!({"id": "p1", "type": "prompt", "message": "first"}));
    assert_eq!(accepted["success"], true, "{accepted}");
    let (events, aborted) = rpc.ask(json!({"id": "a", "type": "abort"}));
    assert_eq!(aborted["success"], true, "{aborted}");
    assert!(
        events.iter().any(|event| event["type"] == "agent_end"),
        "{events:?}"
    );
    assert_eq!(mcp_servers(&mut rpc), starting);

    // The next prompt waits, and its request offers the server's tool.
    let (_, accepted) = rpc.ask(json!({"id": "p2", "type": "prompt", "message": "second"}));
    assert_eq!(accepted["success"], true, "{accepted}");
    assert_eq!(mcp_servers(&mut rpc), starting);
    let early: Vec<(String, String)> = server
        .requests()
        .iter()
        .map(|r| (r.path.clone(), wire.transcript(&r.body).join(" | ")))
        .collect();
    assert!(early.is_empty(), "{early:?}");
    std::fs::write(&go, "").unwrap();
    loop {
        if next_json(&rpc.lines)["type"] == "agent_end" {
            break;
        }
    }
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    // The aborted prompt stays in the conversation, as in Pi.
    assert_eq!(
        wire.transcript(&requests[0].body),
        ["user: first", "user: second"]
    );
    assert!(
        wire.tool_names(&requests[0].body)
            .contains(&"mcp__late__add_tool".to_owned()),
        "{:?}",
        wire.tool_names(&requests[0].body)
    );
    rpc.finish();
}

#[test]
fn a_pre_tool_use_hook_matches_an_mcp_tool_by_its_name() {
    if !everything_installed() {
        return;
    }
    let sandbox = Sandbox::new();
    sandbox.write_global_settings(&json!({
        "mcpServers": {"everything": everything_entry()},
        "hooks": {"PreToolUse": [{"matcher": "mcp__everything__get-.*", "hooks": [
            {"type": "command", "command": "echo 'sums are done by hand here' >&2; exit 2"}
        ]}]},
    }));
    let wire = Wire::OpenAi;
    let server = ModelServer::answering(
        wire,
        vec![
            calls(&[
                (
                    "call_sum",
                    "mcp__everything__get-sum",
                    json!({"a": 1, "b": 2}),
                ),
                (
                    "call_echo",
                    "mcp__everything__echo",
                    json!({"message": "allowed"}),
                ),
            ]),
            Answer::text(&["done"]),
        ],
    );
    let mut command = sandbox.command(wire, &server);
    command.args(["--allow", "mcp__everything", "-p", "Try them."]);
    let stdout = Running::spawn(command).finish_quietly();
    assert_eq!(stdout, "done\n");
    let transcript = wire.transcript(&server.requests()[1].body);
    assert_eq!(
        transcript[3..],
        [
            "tool call_sum: Blocked by PreToolUse hook: sums are done by hand here",
            "tool call_echo: Echo: allowed",
        ]
    );
}

#[test]
fn a_deny_rule_for_a_whole_server_blocks_its_tools() {
    if !everything_installed() {
        return;
    }
    let sandbox = Sandbox::new();
    sandbox.write_global_settings(&json!({"mcpServers": {"everything": everything_entry()}}));
    let wire = Wire::OpenAi;
    let server = ModelServer::answering(
        wire,
        vec![
            Answer::call("call_env", "mcp__everything__get-env", json!({})),
            Answer::text(&["done"]),
        ],
    );
    let mut command = sandbox.command(wire, &server);
    command.args([
        "--deny",
        "mcp__everything__*",
        "-p",
        "Show the environment.",
    ]);
    let (status, stdout, _) = Running::spawn(command).finish();

    assert_eq!((status.code(), stdout.as_str()), (Some(0), "done\n"));
    let transcript = wire.transcript(&server.requests()[1].body);
    assert!(
        transcript[2].starts_with("tool call_env: Blocked by the permission policy: "),
        "{transcript:?}"
    );
    assert!(!transcript[2].contains("OPENAI_API_KEY"), "{transcript:?}");
}

#[test]
fn a_streamable_http_servers_tool_gets_the_configured_headers_in_a_batch_with_a_builtin() {
    if !python_mcp_installed() {
        return;
    }
    let web = HttpServer::python();
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.work.join("notes.txt"), "hello\n").unwrap();
    write_json(
        &sandbox.agent_dir.join("settings.json"),
        &json!({"mcpServers": {"py": {
            "type": "http",
            "url": web.url(),
            "headers": {"Authorization": "Bearer ${MCP_TEST_TOKEN}", "X-Team": "tools"},
        }}}),
    );
    let wire = Wire::OpenAi;
    let server = ModelServer::start(move |request| {
        let answer = match request.index {
            0 => calls(&[
                ("call_headers", "mcp__py__headers", json!({})),
                ("call_read", "read", json!({"path": "notes.txt"})),
            ]),
            _ => Answer::text(&["Both answered."]),
        };
        Reply::Events(wire.events(&answer))
    });
    let mut command = sandbox.command(wire, &server);
    command.env("MCP_TEST_TOKEN", "s3cret");
    command.args([
        "--allow",
        "mcp__py",
        "-p",
        "Show the headers and read notes.txt.",
    ]);
    let (status, stdout, stderr) = Running::spawn(command).finish();

    assert_eq!(
        (status.code(), stdout.as_str(), stderr.as_str()),
        (Some(0), "Both answered.\n", "")
    );
    let requests = server.requests();
    assert!(
        wire.tool_names(&requests[0].body)
            .contains(&"mcp__py__headers".to_owned())
    );
    assert_eq!(
        wire.transcript(&requests[1].body)[3..],
        [
            // The Python SDK sends a `str` result as structured content too
            // (`{"result": ...}`): the model reads it once.
            "tool call_headers: authorization=Bearer s3cret, x-team=tools",
            "tool call_read: hello\n",
        ]
    );
}

#[test]
fn an_http_server_killed_during_a_call_fails_that_call_and_the_next_says_why() {
    if !everything_installed() {
        return;
    }
    let mut web = HttpServer::everything();
    let sandbox = Sandbox::new();
    write_json(
        &sandbox.agent_dir.join("settings.json"),
        &json!({"mcpServers": {"web": {"url": web.url(), "startupTimeoutSec": 60}}}),
    );
    let wire = Wire::OpenAi;
    let server = ModelServer::start(move |request| {
        let answer = match request.index {
            0 => Answer::call(
                "call_long",
                "mcp__web__trigger-long-running-operation",
                json!({"duration": 30, "steps": 30}),
            ),
            1 => Answer::call("call_echo", "mcp__web__echo", json!({"message": "again"})),
            _ => Answer::text(&["Gave up."]),
        };
        Reply::Events(wire.events(&answer))
    });
    let mut command = sandbox.command(wire, &server);
    command.args(["--allow", "mcp__web"]);
    command.args(["--mode", "json", "Run the long operation."]);
    let mut running = Running::spawn(command);
    let lines = running.stdout_lines();
    // The call is running on the server once its first progress arrives.
    loop {
        let event = next_json(&lines);
        if event["type"] == "tool_execution_update" {
            break;
        }
    }
    web.kill();
    while lines.recv_timeout(PATIENCE).is_ok() {}
    let (status, _, stderr) = running.finish();

    assert_eq!(status.code(), Some(0), "{stderr}");
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    let transcript = wire.transcript(&requests[2].body);
    // The call ends once its event stream cannot be resumed; the next one
    // tries to connect again, once, and says why it could not.
    assert_eq!(
        transcript[2],
        "tool call_long: MCP server \"web\" stopped during the call (Connection refused (os error 111)). It is reconnected once on the next call."
    );
    let url = web.url();
    assert_eq!(
        transcript[4],
        format!(
            "tool call_echo: MCP server \"web\" is not running: it could not be reached (Connection refused (os error 111)) and could not be reconnected: {url}: the MCP handshake failed: Connection refused (os error 111). Its tools cannot be used in this session; do the task another way."
        )
    );
    // rmcp's own reports of each retry stay out of the user's way.
    assert_eq!(stderr, "");
}
