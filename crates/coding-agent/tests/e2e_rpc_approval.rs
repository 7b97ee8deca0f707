//! Approvals in RPC mode through the built binary, with a client in the
//! style of Pi's RpcClient: a call that needs approval arrives as an
//! `extension_ui_request` (a `select`), the client answers with an
//! `extension_ui_response`: allow once, deny, no answer (the timeout denies),
//! allow for this session (the same command then runs unasked, until a new
//! session starts), and always allow for the project (the rule is written to
//! the project's settings, other keys kept, and outlives the session). Every
//! decision is a `permission_decision` event.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod e2e_support;

use std::process::ChildStdin;
use std::sync::mpsc::Receiver;

use e2e_support::*;
use serde_json::{Value, json};

/// The model's calls, one per prompt, each followed by a short answer.
const COMMANDS: [&str; 8] = [
    "touch once",
    "touch denied",
    "touch late",
    "touch session",
    "touch session",
    "touch kept",
    "touch session",
    "touch kept",
];

const OPTIONS: [&str; 5] = [
    "Allow once",
    "Allow for this session",
    "Always allow (project)",
    "Always allow (global)",
    "Deny",
];

/// The lines up to and including the first that `stop` accepts.
fn until(lines: &Receiver<String>, stop: impl Fn(&Value) -> bool) -> Vec<Value> {
    let mut seen = Vec::new();
    loop {
        let line = next_json(lines);
        let done = stop(&line);
        seen.push(line);
        if done {
            return seen;
        }
    }
}

fn is(kind: &'static str) -> impl Fn(&Value) -> bool {
    move |line| line["type"] == kind
}

struct Client {
    stdin: ChildStdin,
    lines: Receiver<String>,
}

/// A model that runs `commands[n]` with bash for prompt `n`, then says
/// `Noted.`.
fn runs_bash(wire: Wire, commands: &'static [&'static str]) -> ModelServer {
    ModelServer::start(move |request| {
        let answer = match request.index {
            n if n % 2 == 0 && n / 2 < commands.len() => Answer::call(
                &format!("call_{}", n / 2),
                "bash",
                json!({"command": commands[n / 2]}),
            ),
            _ => Answer::text(&["Noted."]),
        };
        Reply::Events(wire.events(&answer))
    })
}

impl Client {
    /// The binary of `world` in RPC mode, talking `wire` to `server`.
    fn start(world: &Sandbox, wire: Wire, server: &ModelServer) -> (Running, Client) {
        let mut command = world.command(wire, server);
        // Trusted: an untrusted project is not offered project rules (they
        // would be ignored at the next start).
        command.args(["--mode", "rpc", "--trust"]);
        let mut running = Running::spawn_piped(command);
        let client = Client {
            stdin: running.take_stdin(),
            lines: running.stdout_lines(),
        };
        (running, client)
    }

    /// Sends prompt `n`; returns the approval request it leads to (if
    /// `asked`) with the lines before it.
    fn prompt(&mut self, n: usize) {
        send(
            &mut self.stdin,
            &json!({"id": format!("p{n}"), "type": "prompt", "message": format!("Step {n}.")}),
        );
    }

    fn request(&mut self) -> Value {
        until(&self.lines, is("extension_ui_request"))
            .pop()
            .unwrap()
    }

    fn answer(&mut self, request: &Value, answer: Value) {
        let mut response = json!({"type": "extension_ui_response", "id": request["id"]});
        response
            .as_object_mut()
            .unwrap()
            .extend(answer.as_object().unwrap().clone());
        send(&mut self.stdin, &response);
    }

    /// The `permission_decision` events up to the end of the run.
    fn decisions(&mut self) -> Vec<Value> {
        until(&self.lines, is("agent_end"))
            .into_iter()
            .filter(|line| line["type"] == "permission_decision")
            .collect()
    }
}

fn expected_request(request: &Value, command: &str) -> Value {
    json!({
        "type": "extension_ui_request",
        "id": request["id"],
        "method": "select",
        "title": format!(
            "Allow bash `{command}`? `{command}` is not on the known-safe list; running it needs approval (rule: bash({command}))"
        ),
        "options": OPTIONS,
        "timeout": 1000,
    })
}

fn decision(id: &str, command: &str, outcome: &str, answer: &str, reason: &str) -> Value {
    let mut decision = json!({
        "type": "permission_decision", "toolCallId": id, "toolName": "bash",
        "decision": outcome, "by": "approval", "reason": reason, "answer": answer,
    });
    if answer.starts_with("allowSession") || answer.starts_with("allowAlways") {
        decision["rule"] = json!(format!("bash({command})"));
    }
    decision
}

fn asked(command: &str) -> String {
    format!("`{command}` is not on the known-safe list; running it needs approval")
}

#[test]
fn an_rpc_client_answers_approval_requests() {
    let wire = Wire::OpenAi;
    let world = Sandbox::new();
    world.write_global_settings(&json!({"permissions": {"approvalTimeoutSecs": 1}}));
    let project = world.write_project_settings(
        &json!({"permissions": {"deny": ["bash(shutdown:*)"]}, "retry": {"enabled": true}}),
    );
    let server = runs_bash(wire, &COMMANDS);
    let (running, mut client) = Client::start(&world, wire, &server);

    // Allow once: the command runs.
    client.prompt(0);
    let request = client.request();
    assert_eq!(request, expected_request(&request, "touch once"));
    client.answer(&request, json!({"value": "Allow once"}));
    assert_eq!(
        client.decisions(),
        [decision(
            "call_0",
            "touch once",
            "allow",
            "allowOnce",
            &asked("touch once")
        )]
    );
    assert!(world.work.join("once").exists());

    // Deny: the model reads that the user said no.
    client.prompt(1);
    let request = client.request();
    client.answer(&request, json!({"value": "Deny"}));
    let denied = "Blocked: the user denied this call";
    assert_eq!(
        client.decisions(),
        [decision("call_1", "touch denied", "deny", "deny", denied)]
    );
    assert!(!world.work.join("denied").exists());

    // No answer: after the timeout the call is denied; a late answer is ignored.
    client.prompt(2);
    let request = client.request();
    let late = format!(
        "Blocked: no answer to the approval request within 1s ({})",
        asked("touch late")
    );
    assert_eq!(
        client.decisions(),
        [decision("call_2", "touch late", "deny", "deny", &late)]
    );
    client.answer(&request, json!({"value": "Allow once"}));
    assert!(!world.work.join("late").exists());

    // Allow for this session: the same command runs unasked the second time.
    client.prompt(3);
    let request = client.request();
    client.answer(&request, json!({"value": "Allow for this session"}));
    assert_eq!(
        client.decisions(),
        [decision(
            "call_3",
            "touch session",
            "allow",
            "allowSession",
            &asked("touch session")
        )]
    );
    client.prompt(4);
    let run = until(&client.lines, is("agent_end"));
    assert!(!run.iter().any(is("extension_ui_request")), "{run:?}");
    let decisions: Vec<&Value> = run
        .iter()
        .filter(|l| is("permission_decision")(l))
        .collect();
    assert_eq!(
        decisions,
        [&json!({
            "type": "permission_decision", "toolCallId": "call_4", "toolName": "bash",
            "decision": "allow", "by": "policy",
            "reason": "`touch session` is allowed by the rule `bash(touch session)`",
            "rule": "bash(touch session)",
        })]
    );

    // Always allow (project): the rule is written, other keys kept.
    client.prompt(5);
    let request = client.request();
    client.answer(&request, json!({"value": "Always allow (project)"}));
    assert_eq!(
        client.decisions(),
        [decision(
            "call_5",
            "touch kept",
            "allow",
            "allowAlwaysProject",
            &asked("touch kept")
        )]
    );
    assert!(world.work.join("kept").exists());
    let saved: Value = serde_json::from_str(&std::fs::read_to_string(&project).unwrap()).unwrap();
    assert_eq!(
        saved,
        json!({
            "permissions": {"deny": ["bash(shutdown:*)"], "allow": ["bash(touch kept)"]},
            "retry": {"enabled": true},
        })
    );

    // A new session: the rule allowed for the last one alone asks again,
    // the rule always allowed does not.
    send(
        &mut client.stdin,
        &json!({"id": "n", "type": "new_session"}),
    );
    let started = until(&client.lines, |line| line["id"] == "n");
    assert_eq!(started.last().unwrap()["success"], true, "{started:?}");
    client.prompt(6);
    let request = client.request();
    assert_eq!(request, expected_request(&request, "touch session"));
    client.answer(&request, json!({"value": "Allow once"}));
    client.decisions();
    client.prompt(7);
    let run = until(&client.lines, is("agent_end"));
    assert!(!run.iter().any(is("extension_ui_request")), "{run:?}");

    // What the model read of each refusal.
    let requests = server.requests();
    let result = |n: usize| {
        wire.transcript(&requests[2 * n + 1].body)
            .last()
            .cloned()
            .unwrap()
    };
    assert_eq!(result(1), format!("tool call_1: {denied}"));
    assert_eq!(result(2), format!("tool call_2: {late}"));

    drop(client);
    let (status, _, stderr) = running.finish();
    assert_eq!((status.code(), stderr.as_str()), (Some(0), ""));
}

#[test]
fn a_call_waiting_for_approval_runs_the_permission_prompt_notification_hooks() {
    let wire = Wire::OpenAi;
    let world = Sandbox::new();
    let told = world.root.join("told.json");
    let notify = |matcher: &str, file: &std::path::Path| json!({"matcher": matcher, "hooks": [{"type": "command", "command": format!("cat > {}", file.display())}]});
    let never = world.root.join("never.json");
    world.write_global_settings(&json!({"hooks": {"Notification": [
        notify("permission_prompt", &told),
        notify("idle_prompt", &never),
    ]}}));
    let server = runs_bash(wire, &["touch once"]);
    let (running, mut client) = Client::start(&world, wire, &server);
    client.prompt(0);
    let request = client.request();
    // The hook runs while the request waits for its answer.
    let mut input = Value::Null;
    wait_until("the notification hook", || {
        let read = std::fs::read_to_string(&told).ok();
        input = read
            .and_then(|text| serde_json::from_str(&text).ok())
            .unwrap_or_default();
        !input.is_null()
    });
    assert_eq!(
        (
            &input["hook_event_name"],
            &input["notification_type"],
            &input["message"]
        ),
        (
            &json!("Notification"),
            &json!("permission_prompt"),
            &json!("coding-agent needs your permission to use bash")
        )
    );
    client.answer(&request, json!({"value": "Allow once"}));
    assert_eq!(client.decisions()[0]["decision"], "allow");
    assert!(world.work.join("once").exists());
    drop(client);
    running.finish();
    assert!(!never.exists(), "the other type's hook did not run");
}
