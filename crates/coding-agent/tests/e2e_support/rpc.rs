//! An RPC client of the built binary (`--mode rpc`), for the tests that
//! drive Pi's JSON commands end to end.

use std::process::Stdio;

use serde_json::{Value, json};

use super::sandbox::{Running, Sandbox, next_json, send};
use super::server::ModelServer;
use super::wire::Wire;

/// An RPC client of the binary: commands in, their responses (and the
/// events before each) out.
pub struct Rpc {
    pub running: Running,
    pub stdin: std::process::ChildStdin,
    /// Every stdout line, in order.
    pub lines: std::sync::mpsc::Receiver<String>,
}

impl Rpc {
    /// The binary in RPC mode talking `wire` to `server`.
    pub fn start(sandbox: &Sandbox, wire: Wire, server: &ModelServer) -> Self {
        Self::start_with(sandbox, wire, server, &[])
    }

    /// [`Rpc::start`] with more flags (`--thinking high`, `--continue`).
    pub fn start_with(sandbox: &Sandbox, wire: Wire, server: &ModelServer, args: &[&str]) -> Self {
        let mut command = sandbox.command(wire, server);
        command
            .args(["--mode", "rpc"])
            .args(args)
            .stdin(Stdio::piped());
        let mut running = Running::spawn_piped(command);
        let stdin = running.take_stdin();
        let lines = running.stdout_lines();
        Rpc {
            running,
            stdin,
            lines,
        }
    }

    /// Sends `command`; returns the lines before its response, and the response.
    pub fn ask(&mut self, command: Value) -> (Vec<Value>, Value) {
        let id = command["id"].clone();
        send(&mut self.stdin, &command);
        let mut before = Vec::new();
        loop {
            let line = next_json(&self.lines);
            if line["id"] == id && line["type"] == "response" {
                return (before, line);
            }
            before.push(line);
        }
    }

    /// Runs `message` as a prompt and waits until the agent is idle again;
    /// returns what was written meanwhile.
    pub fn prompt(&mut self, message: &str) -> Vec<Value> {
        // A prompt during the previous run's tail or compaction waits for
        // it; one during a retry wait after its `agent_end` is refused as
        // "already processing" (as in Pi), so it is sent again.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let mut response;
        loop {
            (_, response) = self.ask(json!({"id": "p", "type": "prompt", "message": message}));
            let busy = response["error"]
                .as_str()
                .is_some_and(|error| error.starts_with("Agent is already processing"));
            if !busy || std::time::Instant::now() > deadline {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        assert_eq!(response["success"], true, "{response}");
        let mut seen = Vec::new();
        loop {
            let line = next_json(&self.lines);
            let done = line["type"] == "agent_end";
            seen.push(line);
            if done {
                return seen;
            }
        }
    }

    /// Reads lines until one `wanted` takes; returns it.
    pub fn until(&mut self, wanted: impl Fn(&Value) -> bool) -> Value {
        loop {
            let line = next_json(&self.lines);
            if wanted(&line) {
                return line;
            }
        }
    }

    pub fn finish(self) {
        drop(self.stdin);
        let (status, _, _) = self.running.finish();
        assert!(status.success());
    }
}
