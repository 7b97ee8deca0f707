//! `coding-agent mcp serve` driven by a real MCP client: the Python SDK's
//! stdio client (`tests/mcp_support/client.py`).
#![cfg(feature = "mcp")]
#![allow(clippy::unwrap_used)]

mod mcp_support;

use std::path::Path;
use std::process::Command;

use coding_agent::tools::{BUILTIN_TOOL_NAMES, builtin_tool};
use mcp_support::python_mcp_installed;
use serde_json::{Value, json};

const BINARY: &str = env!("CARGO_BIN_EXE_coding-agent");

/// Runs the Python client against `coding-agent mcp serve EXTRA...` in `cwd`
/// with `calls`; returns what it printed.
fn drive(cwd: &Path, extra: &[&str], calls: Value) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp_support/client.py");
    let calls_file = cwd.join(".mcp-calls.json");
    std::fs::write(&calls_file, calls.to_string()).unwrap();
    let output = Command::new("python3")
        .arg(script)
        .arg(BINARY)
        .args(["mcp", "serve", "--cwd"])
        .arg(cwd)
        .args(extra)
        .stdin(std::fs::File::open(&calls_file).unwrap())
        .output()
        .unwrap();
    std::fs::remove_file(&calls_file).unwrap();
    assert!(
        output.status.success(),
        "client failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

/// `coding-agent tool NAME ARGS --cwd DIR`'s result.
fn tool_command(cwd: &Path, name: &str, arguments: &Value) -> Value {
    let output = Command::new(BINARY)
        .args(["tool", name, &arguments.to_string(), "--cwd"])
        .arg(cwd)
        .output()
        .unwrap();
    serde_json::from_slice(&output.stdout).unwrap()
}

fn texts(content: &Value) -> Vec<String> {
    content
        .as_array()
        .unwrap()
        .iter()
        .map(|block| block["text"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// `coding-agent mcp serve --cwd DIR` spoken to in raw JSON-RPC over its
/// stdio (no SDK needed), past the `initialize` handshake.
struct RawServer {
    process: std::process::Child,
    stdin: std::process::ChildStdin,
    stdout: std::io::BufReader<std::process::ChildStdout>,
}

impl RawServer {
    fn start(cwd: &Path) -> Self {
        use std::process::Stdio;
        let mut process = Command::new(BINARY)
            .args(["mcp", "serve", "--cwd"])
            .arg(cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut server = RawServer {
            stdin: process.stdin.take().unwrap(),
            stdout: std::io::BufReader::new(process.stdout.take().unwrap()),
            process,
        };
        server.send_line(
            &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "raw", "version": "1"}}})
            .to_string(),
        );
        let answer = server.receive();
        assert_eq!(answer["id"], 0, "{answer}");
        server.send_line(
            &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string(),
        );
        server
    }

    fn send_line(&mut self, line: &str) {
        use std::io::Write;
        writeln!(self.stdin, "{line}").unwrap();
        self.stdin.flush().unwrap();
    }

    /// Sends a `tools/call` request without waiting for its answer.
    fn call(&mut self, id: u64, name: &str, arguments: Value) {
        self.send_line(
            &json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": {"name": name, "arguments": arguments}})
            .to_string(),
        );
    }

    /// The next message the server writes.
    fn receive(&mut self) -> Value {
        use std::io::BufRead;
        let mut line = String::new();
        assert!(
            self.stdout.read_line(&mut line).unwrap() > 0,
            "stdout ended"
        );
        serde_json::from_str(&line).unwrap()
    }

    /// Closes the server's stdin (the client is gone) and waits for it to exit.
    fn finish(mut self) -> std::process::ExitStatus {
        drop(self.stdin);
        self.process.wait().unwrap()
    }

    /// Closes the server's stdin (the client is done sending) and reads
    /// everything it writes until it exits.
    fn close_and_read_all(mut self) -> Vec<Value> {
        use std::io::BufRead;
        drop(self.stdin);
        let messages = self
            .stdout
            .lines()
            .map(|line| serde_json::from_str(&line.unwrap()).unwrap())
            .collect();
        assert!(self.process.wait().unwrap().success());
        messages
    }

    /// The next `count` answers, by id.
    fn answers(&mut self, count: usize) -> std::collections::HashMap<u64, Value> {
        let mut answers = std::collections::HashMap::new();
        while answers.len() < count {
            let message = self.receive();
            if let Some(id) = message["id"].as_u64() {
                answers.insert(id, message);
            }
        }
        answers
    }
}

#[test]
fn the_tools_are_listed_with_the_names_descriptions_and_schemas_the_model_sees() {
    if !python_mcp_installed() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = drive(dir.path(), &[], json!([]));
    let expected: Vec<Value> = BUILTIN_TOOL_NAMES
        .iter()
        .map(|name| {
            let tool = builtin_tool(name).unwrap().tool().clone();
            json!({"name": tool.name, "description": tool.description, "inputSchema": tool.parameters})
        })
        .collect();
    assert_eq!(out["tools"], Value::Array(expected));

    let out = drive(dir.path(), &["--tools", "ls,read"], json!([]));
    let names: Vec<&str> = out["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["ls", "read"]);
}

#[test]
fn read_edit_and_bash_give_the_same_text_as_the_tool_command() {
    if !python_mcp_installed() {
        return;
    }
    let calls = [
        ("read", json!({"path": "a.txt"})),
        (
            "edit",
            json!({"path": "a.txt", "edits": [{"oldText": "two", "newText": "2"}]}),
        ),
        ("read", json!({"path": "a.txt", "offset": 2})),
        ("bash", json!({"command": "echo out; echo more; exit 3"})),
        ("read", json!({"offset": 1})),
        (
            "edit",
            json!({"path": "a.txt", "edits": [{"oldText": "absent", "newText": "x"}]}),
        ),
    ];
    let over_mcp = tempfile::tempdir().unwrap();
    let by_command = tempfile::tempdir().unwrap();
    for dir in [&over_mcp, &by_command] {
        std::fs::write(dir.path().join("a.txt"), "one\ntwo\nthree\n").unwrap();
    }
    let out = drive(
        over_mcp.path(),
        &[],
        Value::Array(
            calls
                .iter()
                .map(|(name, arguments)| json!({"name": name, "arguments": arguments}))
                .collect(),
        ),
    );
    let results = out["results"].as_array().unwrap();
    assert_eq!(results.len(), calls.len());
    for ((name, arguments), result) in calls.iter().zip(results) {
        let expected = tool_command(by_command.path(), name, arguments);
        assert_eq!(
            (texts(&result["content"]), &result["isError"]),
            (texts(&expected["content"]), &expected["isError"]),
            "{name} {arguments}"
        );
    }
    assert_eq!(
        std::fs::read_to_string(over_mcp.path().join("a.txt")).unwrap(),
        "one\n2\nthree\n"
    );
}

/// Served calls run in the sandbox `coding-agent tool` runs them in: a
/// write outside the workspace (and outside the temporary directory) is
/// refused, and `--sandbox off` is the client's to choose.
#[test]
fn served_calls_are_sandboxed_as_the_tool_command_is() {
    if !python_mcp_installed() {
        return;
    }
    let workspace = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let target = outside.path().join("made");
    let command = format!("touch {} && echo made", target.display());
    let call = json!([{"name": "bash", "arguments": {"command": command}}]);

    let out = drive(workspace.path(), &[], call.clone());
    let result = &out["results"][0];
    let text = texts(&result["content"]).concat();
    assert_eq!(result["isError"], true, "{text}");
    assert!(text.contains("(sandbox: writes are limited to"), "{text}");
    assert!(!target.exists());

    let out = drive(workspace.path(), &["--sandbox", "off"], call);
    assert_eq!(texts(&out["results"][0]["content"]), ["made\n"]);
    assert!(target.exists());
}

#[test]
fn a_cancelled_bash_call_kills_its_process_group() {
    if !python_mcp_installed() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let calls = json!([
        // The client gives up after 2 s and sends notifications/cancelled.
        {"name": "bash", "arguments": {"command": "sleep 60 & echo $! > sleep.pid; echo started; wait"}, "timeout": 2},
        // Still in the same server: is the background sleep gone?
        {"name": "bash", "arguments": {"command": "for i in $(seq 50); do kill -0 $(cat sleep.pid) 2>/dev/null || { echo gone; exit 0; }; sleep 0.1; done; echo alive"}}
    ]);
    let out = drive(dir.path(), &[], calls);
    let results = out["results"].as_array().unwrap();
    assert!(
        results[0]["exception"].as_str().is_some(),
        "the first call should time out on the client: {results:?}"
    );
    assert_eq!(results[0]["progress"], json!(["started"]));
    assert_eq!(texts(&results[1]["content"]), ["gone\n"]);
}

#[test]
fn permission_mode_judges_each_call_and_an_ask_is_refused() {
    if !python_mcp_installed() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = drive(
        dir.path(),
        &["--permission-mode", "plan"],
        json!([
            {"name": "write", "arguments": {"path": "new.txt", "content": "x"}},
            {"name": "ls", "arguments": {}},
        ]),
    );
    let results = out["results"].as_array().unwrap();
    assert_eq!(results[0]["isError"], true);
    assert!(
        texts(&results[0]["content"])[0].starts_with("Blocked by the permission policy: "),
        "{results:?}"
    );
    assert_eq!(results[1]["isError"], false);
    assert!(!dir.path().join("new.txt").exists());

    let out = drive(
        dir.path(),
        &["--permission-mode", "default"],
        json!([{"name": "bash", "arguments": {"command": "touch made.txt"}}]),
    );
    let result = &out["results"][0];
    assert_eq!(result["isError"], true);
    let refusal = &texts(&result["content"])[0];
    assert!(
        refusal.starts_with("Blocked: needs approval ("),
        "{result:?}"
    );
    // `mcp serve` takes no --allow and reads no settings: the way out it
    // names is one it has.
    assert!(
        refusal.ends_with(
            "This command reads no rules: to allow it, run with a looser --permission-mode (bypass allows every call that is not denied)"
        ),
        "{refusal}"
    );
    assert!(!dir.path().join("made.txt").exists());
}

/// A client ending its server sends SIGTERM after a short wait (the Python
/// SDK 2 s, rmcp 3 s); the server then cancels its calls in flight, so a
/// running command is killed with it. (It died at once and the command ran
/// on, reparented to init.) Spoken in raw JSON-RPC: no SDK needed.
#[test]
fn a_server_stopped_by_sigterm_kills_the_commands_of_its_calls_in_flight() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = RawServer::start(dir.path());
    server.call(
        2,
        "bash",
        json!({"command": "echo $$ > shell.pid; exec sleep 60"}),
    );
    let pid_file = dir.path().join("shell.pid");
    let started = std::time::Instant::now();
    let pid = loop {
        if let Some(pid) = std::fs::read_to_string(&pid_file)
            .ok()
            .filter(|text| text.ends_with('\n'))
        {
            break pid.trim().to_owned();
        }
        assert!(
            started.elapsed().as_secs() < 20,
            "the command never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let alive = || Path::new(&format!("/proc/{pid}")).exists();
    assert!(alive());
    let term = Command::new("kill")
        .args(["-TERM", &server.process.id().to_string()])
        .status()
        .unwrap();
    assert!(term.success());
    let exited = std::time::Instant::now();
    while server.process.try_wait().unwrap().is_none() {
        assert!(exited.elapsed().as_secs() < 20, "the server did not stop");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let gone = std::time::Instant::now();
    while alive() {
        assert!(
            gone.elapsed().as_secs() < 5,
            "the command outlived its server"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// JSON-RPC's own errors for what a client gets wrong: a line that is not
/// JSON is answered `-32700` (it was dropped, and the client waited), and
/// a `tools/call` whose params name no tool or give arguments that are not
/// an object `-32602` (it was `-32601`, "method not found"). The server
/// goes on serving.
#[test]
fn a_line_that_is_not_json_and_bad_call_params_get_json_rpc_errors() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = RawServer::start(dir.path());
    let lines = [
        "{not json".to_owned(),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "read", "arguments": "str"}})
        .to_string(),
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"arguments": {}}})
            .to_string(),
        json!({"jsonrpc": "2.0", "id": 4, "method": "ping"}).to_string(),
    ];
    for line in lines {
        server.send_line(&line);
    }
    let answers: Vec<Value> = (0..4).map(|_| server.receive()).collect();
    assert!(server.finish().success());
    let by_id = |id: Value| {
        answers
            .iter()
            .find(|answer| answer["id"] == id)
            .unwrap_or_else(|| panic!("no answer to {id}: {answers:?}"))
    };
    assert_eq!(by_id(Value::Null)["error"]["code"], -32700);
    assert!(
        by_id(Value::Null)["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("Parse error: ")
    );
    for id in [2, 3] {
        assert_eq!(
            by_id(json!(id))["error"],
            json!({"code": -32602, "message": "Invalid params: tools/call takes {\"name\": string, \"arguments\": object}"})
        );
    }
    assert_eq!(by_id(json!(4))["result"], json!({}));
}

/// A method the server does not have is answered with JSON-RPC's text,
/// "Method not found", and the method: rmcp's message was the method's
/// name alone.
#[test]
fn an_unknown_method_is_answered_method_not_found() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = RawServer::start(dir.path());
    server.send_line(&json!({"jsonrpc": "2.0", "id": 5, "method": "resources/list"}).to_string());
    server.send_line(&json!({"jsonrpc": "2.0", "id": 6, "method": "no/such"}).to_string());
    let answers = server.answers(2);
    assert!(server.finish().success());
    for (id, method) in [(5, "resources/list"), (6, "no/such")] {
        assert_eq!(
            answers[&id]["error"],
            json!({"code": -32601, "message": format!("Method not found: {method}")})
        );
    }
}

/// Calls a client sends without waiting for their answers are applied to a
/// file in the order they arrived, as the agent applies the calls of one
/// answer: rmcp runs each request on a task of its own, and a write and
/// four chained edits of one file ended `B`, `C` or `D` about half the time
/// (the edits that found no text answered errors), ten writes with another
/// than the last.
#[test]
fn pipelined_calls_on_one_file_apply_in_the_order_they_arrived() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = RawServer::start(dir.path());
    let mut id = 0;
    for round in 0..8 {
        let path = format!("chain{round}.txt");
        id += 1;
        server.call(id, "write", json!({"path": path, "content": "A"}));
        for (old, new) in [("A", "B"), ("B", "C"), ("C", "D"), ("D", "E")] {
            id += 1;
            let edit = json!({"oldText": old, "newText": new});
            server.call(id, "edit", json!({"path": path, "edits": [edit]}));
        }
    }
    for digit in 0..10 {
        id += 1;
        server.call(
            id,
            "write",
            json!({"path": "last.txt", "content": digit.to_string()}),
        );
    }
    for (id, answer) in server.answers(usize::try_from(id).unwrap()) {
        assert_eq!(answer["result"]["isError"], false, "call {id}: {answer}");
    }
    for round in 0..8 {
        let path = dir.path().join(format!("chain{round}.txt"));
        assert_eq!(std::fs::read_to_string(path).unwrap(), "E", "chain {round}");
    }
    assert_eq!(
        std::fs::read_to_string(dir.path().join("last.txt")).unwrap(),
        "9"
    );
    assert!(server.finish().success());
}

/// Calls that touch different files still run at once: the first waits for
/// a file only the second makes (one after the other, the first would time
/// out).
#[test]
fn pipelined_calls_on_different_things_run_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = RawServer::start(dir.path());
    let waits = "until [ -e made.txt ]; do sleep 0.05; done; echo seen";
    server.call(1, "bash", json!({"command": waits, "timeout": 30}));
    server.call(2, "write", json!({"path": "made.txt", "content": "x"}));
    let answers = server.answers(2);
    assert_eq!(
        texts(&answers[&1]["result"]["content"]),
        ["seen\n"],
        "{answers:?}"
    );
    assert_eq!(answers[&2]["result"]["isError"], false, "{answers:?}");
    assert!(server.finish().success());
}

/// Requests JSON-RPC 2.0 or MCP does not allow are answered with their id,
/// or `null` where it is of a type JSON-RPC does not allow: rmcp answered
/// them without any id, which a client matching answers by id never saw.
#[test]
fn requests_json_rpc_does_not_allow_are_answered_with_their_ids() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = RawServer::start(dir.path());
    for line in [
        json!({"jsonrpc": "1.0", "id": 9, "method": "ping"}),
        json!({"jsonrpc": "2.0", "id": 12, "method": "ping", "result": {}}),
        json!({"jsonrpc": "2.0", "id": 32, "method": "ping", "params": []}),
        json!({"jsonrpc": "2.0", "id": 40, "method": "tools/call",
            "params": {"name": "ls", "arguments": {}, "_meta": "str"}}),
        json!({"jsonrpc": "2.0", "id": true, "method": "ping"}),
    ] {
        server.send_line(&line.to_string());
    }
    let answers = server.close_and_read_all();
    let mut codes: Vec<(Value, Value)> = answers
        .iter()
        .map(|answer| (answer["id"].clone(), answer["error"]["code"].clone()))
        .collect();
    codes.sort_by_key(|(id, _)| id.as_u64());
    assert_eq!(
        codes,
        [
            (Value::Null, json!(-32600)),
            (json!(9), json!(-32600)),
            (json!(12), json!(-32600)),
            (json!(32), json!(-32602)),
            (json!(40), json!(-32602)),
        ],
        "{answers:?}"
    );
}

/// A request longer than rmcp takes (16 MiB) was dropped unanswered, and
/// the client waited for ever.
#[test]
fn a_request_over_16_mib_is_answered_with_its_id() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = RawServer::start(dir.path());
    let content = "x".repeat(17 << 20);
    server.call(5, "write", json!({"path": "big.txt", "content": content}));
    server.send_line(&json!({"jsonrpc": "2.0", "id": 6, "method": "ping"}).to_string());
    let answers = server.close_and_read_all();
    assert_eq!(answers.len(), 2, "{answers:?}");
    let big = answers.iter().find(|answer| answer["id"] == 5).unwrap();
    assert_eq!(
        big["error"]["message"],
        "Invalid Request: the line is longer than 16 MiB; send large contents another way (e.g. write a file in parts)"
    );
    assert!(answers.iter().any(|answer| answer["id"] == 6));
    assert!(!dir.path().join("big.txt").exists());
}

/// A client that closes stdin right after its requests still gets every
/// answer: a write and a bash call that sleeps both ran, but the bash
/// answer was lost in 2 of 6 runs, and of pings 3 to 6 of 6 came back.
#[test]
fn answers_to_requests_sent_before_stdin_closed_all_arrive() {
    for round in 0..3 {
        let dir = tempfile::tempdir().unwrap();
        let mut server = RawServer::start(dir.path());
        server.call(1, "write", json!({"path": "a.txt", "content": "a"}));
        server.call(2, "bash", json!({"command": "sleep 0.2; echo slept"}));
        for id in 3..8 {
            server.send_line(&json!({"jsonrpc": "2.0", "id": id, "method": "ping"}).to_string());
        }
        let answers = server.close_and_read_all();
        let mut ids: Vec<u64> = answers.iter().filter_map(|a| a["id"].as_u64()).collect();
        ids.sort_unstable();
        assert_eq!(ids, [1, 2, 3, 4, 5, 6, 7], "round {round}: {answers:?}");
        let bash = answers.iter().find(|answer| answer["id"] == 2).unwrap();
        assert_eq!(texts(&bash["result"]["content"]), ["slept\n"], "{bash}");
    }
}

/// Progress notifications of a call all come before its result, as the
/// spec asks: they were sent by a task of their own, and some came after.
#[test]
fn progress_notifications_come_before_the_result() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = RawServer::start(dir.path());
    let command = "for i in $(seq 1 200); do echo line $i; done";
    for id in 1..=20 {
        server.send_line(
            &json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
                "name": "bash", "arguments": {"command": command},
                "_meta": {"progressToken": id}}})
            .to_string(),
        );
    }
    let mut messages = Vec::new();
    while messages
        .iter()
        .filter(|m: &&Value| m["result"].is_object())
        .count()
        < 20
    {
        messages.push(server.receive());
    }
    messages.extend(server.close_and_read_all());
    for id in 1..=20 {
        let answered = messages
            .iter()
            .position(|message| message["id"] == id)
            .unwrap_or_else(|| panic!("call {id} unanswered: {messages:?}"));
        let late = messages[answered..]
            .iter()
            .find(|message| message["params"]["progressToken"] == id);
        assert_eq!(late, None, "call {id}");
    }
}
