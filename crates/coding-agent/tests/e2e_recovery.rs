//! Sessions that survive failures (issue 16), end to end: the built binary
//! against a loopback model server in both wire formats. A stream cut
//! mid-tool-call is retried and its partial call never runs; 503s are
//! retried with backoff; `abort_retry` ends the wait; a context past the
//! threshold is compacted (the summary request, the later requests, the
//! session entry, `--continue`); every server's overflow spelling is
//! compacted and retried once, and a second overflow ends the run with a
//! clear message.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod e2e_support;

use std::process::Stdio;

use e2e_support::*;
use serde_json::{Value, json};

const WIRES: [Wire; 2] = [Wire::OpenAi, Wire::Anthropic];

/// Retries after 10 ms (20, 40), and no retries inside the provider, so
/// each failure the server scripts reaches the session.
const FAST_RETRY: &str = r#""retry":{"baseDelayMs":10,"provider":{"maxRetries":0}}"#;

fn write_settings(sandbox: &Sandbox, json_body: &str) {
    std::fs::write(
        sandbox.agent_dir.join("settings.json"),
        format!("{{{json_body}}}"),
    )
    .unwrap();
}

/// Settings with fast retries and a `window`-token context for both wires.
fn settings_with_window(sandbox: &Sandbox, window: u64) {
    write_settings(
        sandbox,
        &format!(
            r#"{FAST_RETRY},"providers":{{"openai":{{"contextWindow":{window}}},"anthropic":{{"contextWindow":{window}}}}}"#
        ),
    );
}

/// The events of `answer`, reporting `input` tokens of input.
fn with_input_tokens(events: Vec<String>, input: u64) -> Vec<String> {
    events
        .into_iter()
        .map(|event| {
            event
                .replace(
                    "\"prompt_tokens\":120",
                    &format!("\"prompt_tokens\":{input}"),
                )
                .replace(
                    "\"total_tokens\":128",
                    &format!("\"total_tokens\":{}", input + 8),
                )
                .replace("\"input_tokens\":120", &format!("\"input_tokens\":{input}"))
        })
        .collect()
}

/// Some text, then a bash call cut after the first fragment of its
/// arguments, then the connection closes.
fn cut_mid_call(wire: Wire) -> Reply {
    let text = wire.events(&Answer::text(&["Let me create it."]));
    let call = wire.events(&Answer::call(
        "call_cut",
        "bash",
        json!({"command": "touch ran-partial-call"}),
    ));
    let events = match wire {
        // role+text chunks, then the call's start and first fragment
        Wire::OpenAi => [&text[..2], &call[1..3]].concat(),
        // message_start, ping, the text block, then the call block (index 1)
        // with its first fragments
        Wire::Anthropic => {
            let call: Vec<String> = call[2..5]
                .iter()
                .map(|e| e.replace("\"index\":0", "\"index\":1"))
                .collect();
            [&text[..5], &call[..]].concat()
        }
    };
    Reply::Cut(events)
}

fn json_lines(stdout: &str) -> Vec<Value> {
    stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

/// The session's own events (retry and compaction), in order.
fn session_events(events: &[Value]) -> Vec<Value> {
    events
        .iter()
        .filter(|e| {
            let kind = e["type"].as_str().unwrap_or_default();
            kind.starts_with("auto_retry") || kind.starts_with("compaction")
        })
        .cloned()
        .collect()
}

fn only_session_file(sandbox: &Sandbox) -> Vec<Value> {
    let files = Sandbox::session_files(&sandbox.default_session_dir());
    assert_eq!(files.len(), 1, "{files:?}");
    session_lines(&files[0])
}

fn stream_cut_mid_tool_call_is_retried(wire: Wire) {
    let sandbox = Sandbox::new();
    write_settings(&sandbox, FAST_RETRY);
    let server = ModelServer::start(move |request| match request.index {
        0 => cut_mid_call(wire),
        _ => Reply::Events(wire.events(&Answer::text(&["Recovered."]))),
    });
    let mut command = sandbox.command(wire, &server);
    command.args(["--mode", "json", "make the file"]);
    let (status, stdout, stderr) = Running::spawn(command).finish();
    assert!(status.success(), "{stderr}");
    let events = json_lines(&stdout);
    let retry = session_events(&events);
    assert_eq!(retry.len(), 2, "{retry:?}");
    assert_eq!(
        (
            &retry[0]["type"],
            &retry[0]["attempt"],
            &retry[0]["maxAttempts"],
            &retry[0]["delayMs"]
        ),
        (&json!("auto_retry_start"), &json!(1), &json!(3), &json!(10))
    );
    assert!(
        retry[0]["errorMessage"]
            .as_str()
            .unwrap()
            .starts_with("Connection"),
        "{}",
        retry[0]
    );
    assert_eq!(
        retry[1],
        json!({"type":"auto_retry_end","success":true,"attempt":1})
    );
    assert!(
        !events.iter().any(|e| e["type"] == "tool_execution_start"),
        "the cut call ran"
    );
    assert!(!sandbox.work.join("ran-partial-call").exists());
    assert!(
        stderr.contains("Warning: Retrying (1/3) in 10ms: Connection"),
        "{stderr}"
    );
    // The retry did not send the failed answer.
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(wire.transcript(&requests[1].body), ["user: make the file"]);
    // The file holds the prompt and the answer that completed: no half message.
    let lines = only_session_file(&sandbox);
    assert_eq!(session_roles(&lines), ["user", "assistant"]);
    let answer = &lines.last().unwrap()["message"];
    assert_eq!(answer["stopReason"], "stop");
    assert_eq!(answer["content"][0]["text"], "Recovered.");
}

#[test]
fn a_stream_cut_mid_tool_call_is_retried_its_call_never_runs_openai() {
    stream_cut_mid_tool_call_is_retried(Wire::OpenAi);
}

#[test]
fn a_stream_cut_mid_tool_call_is_retried_its_call_never_runs_anthropic() {
    stream_cut_mid_tool_call_is_retried(Wire::Anthropic);
}

const BUSY: &str = r#"{"error":{"type":"overloaded_error","message":"busy"}}"#;

#[test]
fn three_503s_then_success_are_retried_with_backoff_in_both_wire_formats() {
    for wire in WIRES {
        let sandbox = Sandbox::new();
        write_settings(&sandbox, FAST_RETRY);
        let server = ModelServer::start(move |request| match request.index {
            0..=2 => Reply::Status(503, BUSY.to_owned()),
            _ => Reply::Events(wire.events(&Answer::text(&["Finally."]))),
        });
        let mut command = sandbox.command(wire, &server);
        command.args(["--mode", "json", "hello"]);
        let (status, stdout, stderr) = Running::spawn(command).finish();
        assert!(status.success(), "{wire:?}: {stderr}");
        let retry = session_events(&json_lines(&stdout));
        let starts: Vec<(u64, u64)> = retry
            .iter()
            .filter(|e| e["type"] == "auto_retry_start")
            .map(|e| {
                (
                    e["attempt"].as_u64().unwrap(),
                    e["delayMs"].as_u64().unwrap(),
                )
            })
            .collect();
        assert_eq!(starts, [(1, 10), (2, 20), (3, 40)], "{wire:?}");
        assert_eq!(
            retry[0]["errorMessage"], "503 overloaded_error: busy",
            "{wire:?}"
        );
        assert_eq!(
            retry.last().unwrap(),
            &json!({"type":"auto_retry_end","success":true,"attempt":3})
        );
        assert_eq!(server.requests().len(), 4);
        assert_eq!(
            session_roles(&only_session_file(&sandbox)),
            ["user", "assistant"]
        );
    }
}

/// A failure fixed by one retry is attempt 1 however many came before it
/// in the run: Pi ends the retries at each good answer (`message_end`).
/// They added up over a run of tool calls, so the fourth brief failure of a
/// long run ended it, and `auto_retry_end` came only after all the tools.
#[test]
fn retries_count_again_after_each_good_answer_of_a_run() {
    let wire = Wire::OpenAi;
    let sandbox = Sandbox::new();
    write_settings(&sandbox, FAST_RETRY);
    let server = ModelServer::start(move |request| match request.index {
        index if index % 2 == 0 => Reply::Status(503, BUSY.to_owned()),
        index if index < 9 => {
            Reply::Events(wire.events(&Answer::call(&format!("call_{index}"), "ls", json!({}))))
        }
        _ => Reply::Events(wire.events(&Answer::text(&["Done."]))),
    });
    let mut command = sandbox.command(wire, &server);
    command.args(["--mode", "json", "hello"]);
    let (status, stdout, stderr) = Running::spawn(command).finish();
    assert!(status.success(), "{stderr}");
    let events = json_lines(&stdout);
    let retries = session_events(&events);
    let attempts: Vec<(&str, u64)> = retries
        .iter()
        .map(|e| (e["type"].as_str().unwrap(), e["attempt"].as_u64().unwrap()))
        .collect();
    assert_eq!(
        attempts,
        [("auto_retry_start", 1), ("auto_retry_end", 1)].repeat(5),
        "{retries:#?}"
    );
    assert!(
        retries
            .iter()
            .all(|e| e["type"] == "auto_retry_start" || e["success"] == true)
    );
    // Each retry ends when its answer does, before that answer's tool runs.
    let position = |kind: &str| events.iter().position(|e| e["type"] == kind).unwrap();
    assert!(position("auto_retry_end") < position("tool_execution_start"));
    assert_eq!(server.requests().len(), 10);
}

/// Retries that end with a failure not retried (a 400 after a 503) end
/// with `auto_retry_end` saying so: a client showed "retrying" for ever.
#[test]
fn retries_ended_by_a_failure_not_retried_say_so() {
    let wire = Wire::OpenAi;
    let sandbox = Sandbox::new();
    write_settings(&sandbox, FAST_RETRY);
    let server = ModelServer::start(move |request| match request.index {
        0 => Reply::Status(503, BUSY.to_owned()),
        _ => Reply::Status(400, r#"{"error":{"message":"bad request"}}"#.to_owned()),
    });
    let mut command = sandbox.command(wire, &server);
    command.args(["--mode", "json", "hello"]);
    let (status, stdout, _) = Running::spawn(command).finish();
    assert_eq!(status.code(), Some(1));
    let retries = session_events(&json_lines(&stdout));
    assert_eq!(retries.len(), 2, "{retries:#?}");
    assert_eq!(
        (
            &retries[1]["type"],
            &retries[1]["success"],
            &retries[1]["attempt"]
        ),
        (&json!("auto_retry_end"), &json!(false), &json!(1)),
        "{retries:#?}"
    );
    assert!(
        retries[1]["finalError"]
            .as_str()
            .is_some_and(|error| error.contains("bad request")),
        "{retries:#?}"
    );
}

#[test]
fn a_400_with_500_in_its_text_is_not_retried() {
    let sandbox = Sandbox::new();
    write_settings(&sandbox, FAST_RETRY);
    let body =
        r#"{"error":{"type":"invalid_request_error","message":"max_tokens 5000 too large"}}"#;
    let server = ModelServer::start(move |_| Reply::Status(400, body.to_owned()));
    let mut command = sandbox.command(Wire::OpenAi, &server);
    command.args(["-p", "hello"]);
    let (status, _, stderr) = Running::spawn(command).finish();
    assert_eq!(status.code(), Some(1));
    assert_eq!(server.requests().len(), 1);
    assert_eq!(
        stderr,
        "400 invalid_request_error: max_tokens 5000 too large\n"
    );
}

/// Refusals no retry passes are not sent again by the provider either,
/// and go straight to what they need: an account out of credit (a 429
/// `insufficient_quota`) to its error, an overflow said with a 5xx to its
/// compaction. The provider re-sent each twice first, with the session's
/// default backoff (`Retrying the request (1/2) in 2s: 429
/// insufficient_quota: You exceeded your current quota ...`).
#[test]
fn refusals_no_retry_passes_are_not_sent_again_by_the_provider() {
    let wire = Wire::OpenAi;
    let sandbox = Sandbox::new();
    // The provider's retries are its defaults.
    write_settings(&sandbox, r#""retry":{"baseDelayMs":10}"#);
    let quota = r#"{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}"#;
    let server = ModelServer::start(move |_| Reply::Status(429, quota.to_owned()));
    let mut command = sandbox.command(wire, &server);
    command.args(["-p", "hello"]);
    let (status, _, stderr) = Running::spawn(command).finish();
    assert_eq!(status.code(), Some(1));
    assert_eq!(
        stderr,
        "429 insufficient_quota: You exceeded your current quota, please check your plan and billing details.\n"
    );
    assert_eq!(server.requests().len(), 1);

    let sandbox = Sandbox::new();
    write_settings(
        &sandbox,
        r#""retry":{"baseDelayMs":10},"providers":{"openai":{"contextWindow":4000}}"#,
    );
    let overflow = r#"{"error":{"type":"api_error","message":"prompt is too long: 9000 tokens > 4000 maximum"}}"#;
    let (_sandbox, server, events, status, stderr) =
        overflow_run_in(sandbox, wire, 500, overflow, 1);
    assert!(status.success(), "{stderr}");
    assert!(!stderr.contains("Retrying"), "{stderr}");
    assert_eq!(events[0]["reason"], "overflow", "{events:?}");
    assert_eq!(events[1]["willRetry"], true, "{events:?}");
    let requests = server.requests();
    // The answer, the refusal, the summary, the answer after it.
    assert_eq!(requests.len(), 4);
    assert!(is_summary_request(wire, &requests[2]));
}

#[test]
fn retries_used_up_end_the_run_and_save_the_last_failure() {
    let sandbox = Sandbox::new();
    write_settings(&sandbox, FAST_RETRY);
    let server = ModelServer::start(move |_| Reply::Status(503, BUSY.to_owned()));
    let mut command = sandbox.command(Wire::OpenAi, &server);
    command.args(["-p", "hello"]);
    let (status, _, stderr) = Running::spawn(command).finish();
    assert_eq!(status.code(), Some(1));
    assert_eq!(server.requests().len(), 4);
    assert!(
        stderr.ends_with("Error: Retry failed after 3 attempts\n503 overloaded_error: busy\n"),
        "{stderr}"
    );
    let lines = only_session_file(&sandbox);
    assert_eq!(session_roles(&lines), ["user", "assistant"]);
    assert_eq!(lines.last().unwrap()["message"]["stopReason"], "error");
}

/// A prompt refused with a longer `retry-after` than a retry may wait is
/// not retried, and it stays in the session with its failed answer, as a
/// 400's does: it was lost (no session file at all for a first prompt), so
/// `--continue` went on without it.
#[test]
fn a_prompt_refused_for_longer_than_a_retry_waits_is_saved_with_its_error() {
    let sandbox = Sandbox::new();
    let server = ModelServer::start(move |request| match request.index {
        0 => Reply::RateLimitedFor(120),
        _ => Reply::Events(Wire::OpenAi.events(&Answer::text(&["ok"]))),
    });
    let mut command = sandbox.command(Wire::OpenAi, &server);
    command.args(["-p", "P1"]);
    let (status, _, stderr) = Running::spawn(command).finish();
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("retry after 120s"), "{stderr}");
    let lines = only_session_file(&sandbox);
    assert_eq!(session_roles(&lines), ["user", "assistant"]);
    assert_eq!(lines.last().unwrap()["message"]["stopReason"], "error");

    let mut command = sandbox.command(Wire::OpenAi, &server);
    command.args(["-c", "-p", "P2"]);
    let (status, stdout, stderr) = Running::spawn(command).finish();
    assert_eq!(
        (status.code(), stdout.as_str()),
        (Some(0), "ok\n"),
        "{stderr}"
    );
    let lines = only_session_file(&sandbox);
    assert_eq!(
        session_roles(&lines),
        ["user", "assistant", "user", "assistant"]
    );
    assert_eq!(server.requests().len(), 2);
}

#[test]
fn the_provider_retries_twice_inside_each_of_the_sessions_four_attempts() {
    let sandbox = Sandbox::new();
    // The session's retries are fast; the provider's are its defaults.
    write_settings(&sandbox, r#""retry":{"baseDelayMs":10}"#);
    // Each refusal asks for a retry at once, so the provider does not wait.
    let server = ModelServer::start(move |_| Reply::RateLimited);
    let mut command = sandbox.command(Wire::OpenAi, &server);
    command.args(["-p", "hello"]);
    let (status, _, stderr) = Running::spawn(command).finish();
    assert_eq!(status.code(), Some(1));
    // 4 turns (the first and 3 retries), each sent 3 times (2 retries).
    assert_eq!(server.requests().len(), 12);
    let count = |text: &str| stderr.matches(text).count();
    assert_eq!(
        (
            count("Warning: Retrying the request (1/2)"),
            count("Warning: Retrying the request (2/2)"),
            count("Warning: Retrying ("),
            count("Error: Retry failed after 3 attempts"),
        ),
        (4, 4, 3, 1),
        "{stderr}"
    );
}

#[test]
fn abort_retry_during_the_wait_ends_the_run_cleanly() {
    for wire in WIRES {
        let sandbox = Sandbox::new();
        write_settings(
            &sandbox,
            r#""retry":{"baseDelayMs":60000,"provider":{"maxRetries":0}}"#,
        );
        let server = ModelServer::start(move |_| Reply::Status(503, BUSY.to_owned()));
        let mut command = sandbox.command(wire, &server);
        command.args(["--mode", "rpc"]).stdin(Stdio::piped());
        let mut running = Running::spawn_piped(command);
        let mut stdin = running.take_stdin();
        let lines = running.stdout_lines();
        send(
            &mut stdin,
            &json!({"id": "p", "type": "prompt", "message": "hi"}),
        );
        let mut seen: Vec<Value> = Vec::new();
        let answered = json!({"id":"r","type":"response","command":"abort_retry","success":true});
        while !(seen.contains(&answered) && seen.iter().any(|e| e["type"] == "auto_retry_end")) {
            let line = next_json(&lines);
            if line["type"] == "auto_retry_start" {
                assert_eq!(line["delayMs"], 60000);
                // The prompt is on disk while the wait lasts: a process
                // killed outright then (OOM, SIGKILL) loses nothing.
                assert_eq!(session_roles(&only_session_file(&sandbox)), ["user"]);
                send(&mut stdin, &json!({"id": "r", "type": "abort_retry"}));
            }
            seen.push(line);
        }
        let end = seen.iter().find(|e| e["type"] == "auto_retry_end").unwrap();
        assert_eq!(
            end,
            &json!({"type":"auto_retry_end","success":false,"attempt":1,"finalError":"Retry cancelled"})
        );
        send(&mut stdin, &json!({"id": "s", "type": "get_state"}));
        let state = loop {
            let line = next_json(&lines);
            if line["id"] == "s" {
                break line;
            }
        };
        assert_eq!(state["data"]["isStreaming"], false);
        drop(stdin);
        let (status, _, _) = running.finish();
        assert!(status.success());
        assert_eq!(
            server.requests().len(),
            1,
            "{wire:?}: no request after the abort"
        );
        let lines = only_session_file(&sandbox);
        assert_eq!(session_roles(&lines), ["user", "assistant"]);
        assert_eq!(lines.last().unwrap()["message"]["stopReason"], "error");
    }
}

/// The wait before a retry is part of the run, as in Pi: `get_state` says
/// `isStreaming: true` then, as a prompt without `streamingBehavior` is
/// refused. It said `false`, and a client could not know the prompt would
/// be refused.
#[test]
fn get_state_says_streaming_during_the_wait_before_a_retry() {
    let wire = Wire::OpenAi;
    let sandbox = Sandbox::new();
    write_settings(
        &sandbox,
        r#""retry":{"baseDelayMs":60000,"provider":{"maxRetries":0}}"#,
    );
    let server = ModelServer::start(move |_| Reply::Status(503, BUSY.to_owned()));
    let mut rpc = Rpc::start(&sandbox, wire, &server);
    send(
        &mut rpc.stdin,
        &json!({"id": "p", "type": "prompt", "message": "hi"}),
    );
    rpc.until(|line| line["type"] == "auto_retry_start");
    let (_, state) = rpc.ask(json!({"id": "s", "type": "get_state"}));
    assert_eq!(state["data"]["isStreaming"], true, "{state}");
    let (_, refused) = rpc.ask(json!({"id": "p2", "type": "prompt", "message": "again"}));
    assert!(
        refused["error"]
            .as_str()
            .is_some_and(|error| error.starts_with("Agent is already processing")),
        "{refused}"
    );
    send(&mut rpc.stdin, &json!({"id": "r", "type": "abort_retry"}));
    rpc.until(|line| line["type"] == "auto_retry_end");
    rpc.finish();
}

#[test]
fn an_abort_while_the_retried_request_runs_ends_the_retries_cancelled_not_succeeded() {
    let wire = Wire::OpenAi;
    let sandbox = Sandbox::new();
    write_settings(
        &sandbox,
        r#""retry":{"baseDelayMs":10,"provider":{"maxRetries":0}}"#,
    );
    let server = ModelServer::start(move |request| match request.index {
        0 => Reply::Status(503, BUSY.to_owned()),
        _ => Reply::Stall,
    });
    let mut rpc = Rpc::start(&sandbox, wire, &server);
    send(
        &mut rpc.stdin,
        &json!({"id": "p", "type": "prompt", "message": "hi"}),
    );
    let mut retrying = false;
    let end = loop {
        let line = next_json(&rpc.lines);
        retrying |= line["type"] == "auto_retry_start";
        // The retried request has started: its answer begins, and once the
        // server holds the request (the answer starts before it is sent),
        // the abort goes.
        if retrying && line["type"] == "message_start" && line["message"]["role"] == "assistant" {
            server.wait_for_requests(2, std::time::Duration::from_secs(10));
            send(&mut rpc.stdin, &json!({"id": "a", "type": "abort"}));
        }
        if line["type"] == "auto_retry_end" {
            break line;
        }
    };
    assert_eq!(
        end,
        json!({"type":"auto_retry_end","success":false,"attempt":1,"finalError":"Retry cancelled"})
    );
    rpc.finish();
    assert_eq!(server.requests().len(), 2);
}

/// A prompt of about `tokens` tokens (4 characters each).
fn big_prompt(label: &str, tokens: usize) -> String {
    format!("{label} {}", "word ".repeat(tokens * 4 / 5))
}

/// A text answer whose usage reports `input` tokens of context.
fn answer_with_input(wire: Wire, text: &str, input: u64) -> Reply {
    Reply::Events(with_input_tokens(
        wire.events(&Answer::text(&[text])),
        input,
    ))
}

fn summary_wrapper(summary: &str) -> String {
    format!(
        "user: The conversation history before this point was compacted into the following summary:\n\n<summary>\n{summary}\n</summary>"
    )
}

fn compaction_past_the_threshold(wire: Wire) {
    let sandbox = Sandbox::new();
    // reserve and keep scale to 1000 tokens each: compaction above 3000.
    settings_with_window(&sandbox, 4000);
    let p1 = big_prompt("first", 1200);
    let p2 = big_prompt("second", 1200);
    let server = ModelServer::start(move |request| {
        if is_summary_request(wire, request) {
            return summary_reply(wire, "SUMMARY-1");
        }
        let (text, input) = match request.index {
            0 => ("ok1", 1500),
            1 => ("ok2", 3500),
            _ => ("ok-later", 2000),
        };
        answer_with_input(wire, text, input)
    });
    let mut command = sandbox.command(wire, &server);
    command.args(["--mode", "json", &p1, &p2, "third"]);
    let (status, stdout, stderr) = Running::spawn(command).finish();
    assert!(status.success(), "{stderr}");
    let compaction = session_events(&json_lines(&stdout));
    assert_eq!(compaction.len(), 2, "{compaction:?}");
    assert_eq!(
        compaction[0],
        json!({"type":"compaction_start","reason":"threshold"})
    );
    let lines = only_session_file(&sandbox);
    let entry = lines.iter().find(|l| l["type"] == "compaction").unwrap();
    let second_prompt_id = lines
        .iter()
        .find(|l| l["message"]["content"][0]["text"] == p2.as_str())
        .unwrap()["id"]
        .clone();
    assert_eq!(
        compaction[1],
        json!({"type":"compaction_end","reason":"threshold","result":{
            "summary": summary_text("SUMMARY-1"),
            "firstKeptEntryId": second_prompt_id,
            "tokensBefore": 3508,
            "details": {"readFiles": [], "modifiedFiles": []},
        },"aborted":false,"willRetry":false})
    );
    assert_eq!(entry["summary"], summary_text("SUMMARY-1"));
    assert_eq!(entry["firstKeptEntryId"], second_prompt_id);
    assert_eq!(entry["tokensBefore"], 3508);
    assert_eq!(entry["fromHook"], false);
    // The summary request is what the model received right after the answer
    // that filled the context, and it summarised the first turn only.
    let requests = server.requests();
    assert_eq!(requests.len(), 4);
    assert!(is_summary_request(wire, &requests[2]));
    // Pi's cap on a summary's length, 0.8 x the (scaled) reserve; the
    // model's own answers keep the provider's limit.
    let limit = "max_tokens";
    assert_eq!(requests[2].body[limit], 800);
    assert_eq!(requests[3].body[limit], requests[0].body[limit]);
    assert_ne!(requests[0].body[limit], 800);
    let asked = wire.transcript(&requests[2].body);
    assert_eq!(asked.len(), 1);
    assert!(
        asked[0].starts_with(&format!(
            "user: <conversation>\n[User]: {p1}\n\n[Assistant]: ok1\n</conversation>\n\n"
        )),
        "{}",
        asked[0]
    );
    // The next request carries the summary and the kept turn, not the first.
    let after = vec![
        summary_wrapper(&summary_text("SUMMARY-1")),
        format!("user: {p2}"),
        "assistant: ok2".to_owned(),
        "user: third".to_owned(),
    ];
    assert_eq!(wire.transcript(&requests[3].body), after);

    // --continue rebuilds the same context.
    let mut command = sandbox.command(wire, &server);
    command.args(["--mode", "json", "-c", "fourth"]);
    let (status, _, stderr) = Running::spawn(command).finish();
    assert!(status.success(), "{stderr}");
    let resumed = wire.transcript(&server.requests()[4].body);
    let expected: Vec<String> = after
        .into_iter()
        .chain(["assistant: ok-later".to_owned(), "user: fourth".to_owned()])
        .collect();
    assert_eq!(resumed, expected);
}

/// Turn `turn` of a run that fills a 4000-token window: a bash call whose
/// result is about 1,200 tokens, the context reported growing by as much.
fn filling_call(wire: Wire, turn: u64) -> Reply {
    let call = Answer::call(
        &format!("call{turn}"),
        "bash",
        json!({"command": format!("printf '%4800s' r{turn}")}),
    );
    Reply::Events(with_input_tokens(wire.events(&call), 100 + 1200 * turn))
}

/// A run of tool calls that fills the context stops for a compaction
/// before the model reads the results, then goes on from the compacted
/// context. It went on to the end of the run first, each request larger,
/// until the server refused one (or, cutting it silently, lost its
/// beginning).
#[test]
fn a_run_of_tool_calls_past_the_threshold_is_compacted_before_its_next_request() {
    let wire = Wire::OpenAi;
    let sandbox = Sandbox::new();
    // Compaction above 3000 tokens; each result is about 1,200.
    settings_with_window(&sandbox, 4000);
    let asked = std::sync::atomic::AtomicU64::new(0);
    let server = ModelServer::start(move |request| {
        if is_summary_request(wire, request) {
            return summary_reply(wire, "MID-RUN");
        }
        let turn = asked.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        if turn < 3 {
            return filling_call(wire, turn);
        }
        answer_with_input(wire, "done", 1500)
    });
    let mut command = sandbox.command(wire, &server);
    command.args(["--mode", "json", "go"]);
    let (status, stdout, stderr) = Running::spawn(command).finish();
    assert!(status.success(), "{stderr}");
    let requests = server.requests();
    let summaries: Vec<usize> = (0..requests.len())
        .filter(|&i| is_summary_request(wire, &requests[i]))
        .collect();
    assert_eq!(summaries, [3], "after the third result, before the answer");
    let last = wire.transcript(&requests[4].body);
    // The run's own beginning is the split turn's summarised part; the
    // third call and its result are kept, and the run goes on from them.
    assert_eq!(last.len(), 3, "{last:?}");
    assert_eq!(
        last[0],
        summary_wrapper(&format!(
            "No prior history.\n\n---\n\n**Turn Context (split turn):**\n\n{}",
            summary_text("MID-RUN")
        ))
    );
    assert!(
        last[1].starts_with("assistant: call call2 bash"),
        "{last:?}"
    );
    assert!(
        last[2].starts_with("tool call2:") && last[2].ends_with("r2"),
        "{last:?}"
    );
    let events = json_lines(&stdout);
    assert_eq!(
        session_events(&events)[0],
        json!({"type":"compaction_start","reason":"threshold"})
    );
    let answer = events
        .iter()
        .rev()
        .find(|event| event["type"] == "message_end")
        .unwrap();
    assert_eq!(answer["message"]["content"][0]["text"], "done", "{answer}");
}

/// A run of tool calls past the threshold ends its first part with
/// `agent_end`, is compacted and goes on with `agent_start` (S21). A Pi
/// client sends its next prompt at `agent_end`: sent once the run had gone
/// on, it was refused as "already processing", and the client lost it. It
/// is now a follow-up of the run.
#[test]
fn a_prompt_sent_once_a_compacted_run_went_on_waits_for_it() {
    let wire = Wire::OpenAi;
    let sandbox = Sandbox::new();
    settings_with_window(&sandbox, 4000);
    // The run's answer after the compaction waits for the prompt.
    let release = std::sync::Arc::new(std::sync::Barrier::new(2));
    let held = std::sync::Arc::clone(&release);
    let asked = std::sync::atomic::AtomicU64::new(0);
    let server = ModelServer::start(move |request| {
        if is_summary_request(wire, request) {
            return summary_reply(wire, "MID-RUN");
        }
        let transcript = wire.transcript(&request.body);
        if transcript.last().is_some_and(|line| line == "user: next") {
            return answer_with_input(wire, "next answered", 1500);
        }
        let turn = asked.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        if turn < 3 {
            return filling_call(wire, turn);
        }
        held.wait();
        answer_with_input(wire, "done", 1500)
    });
    let mut rpc = Rpc::start(&sandbox, wire, &server);
    send(
        &mut rpc.stdin,
        &json!({"id": "go", "type": "prompt", "message": "go"}),
    );
    rpc.until(|line| line["type"] == "compaction_end");
    rpc.until(|line| line["type"] == "agent_start");
    let (_, accepted) = rpc.ask(json!({"id": "n", "type": "prompt", "message": "next"}));
    assert_eq!(accepted["success"], true, "{accepted}");
    release.wait();
    rpc.until(|line| {
        line["type"] == "message_end" && line["message"]["content"][0]["text"] == "next answered"
    });
    rpc.finish();
}

/// A threshold compaction that fails is not tried again until the next
/// prompt (an overflow still would be), and the session says so once. A
/// summariser that always failed was asked again after every later turn of
/// the run: six `Auto-compacting...` / `Auto-compaction failed` pairs in a
/// run of eight reads, each a wasted summary request.
#[test]
fn a_failed_threshold_compaction_is_not_tried_again_until_the_next_prompt() {
    let wire = Wire::OpenAi;
    let sandbox = Sandbox::new();
    // Compaction above 3000 tokens; each result is about 1,200.
    settings_with_window(&sandbox, 4000);
    let asked = std::sync::atomic::AtomicU64::new(0);
    let server = ModelServer::start(move |request| {
        if is_summary_request(wire, request) {
            let body = r#"{"error":{"type":"server_error","message":"summariser down"}}"#;
            return Reply::Status(500, body.to_owned());
        }
        let turn = asked.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        if turn < 6 {
            let call = Answer::call(
                &format!("call{turn}"),
                "bash",
                json!({"command": format!("printf '%4800s' r{turn}")}),
            );
            return Reply::Events(with_input_tokens(wire.events(&call), 100 + 1200 * turn));
        }
        answer_with_input(wire, &format!("done{turn}"), 3500)
    });
    let mut command = sandbox.command(wire, &server);
    command.args(["-p", "go", "again"]);
    let (status, stdout, stderr) = Running::spawn(command).finish();
    assert_eq!(
        (status.code(), stdout.as_str()),
        (Some(0), "done7\n"),
        "{stderr}"
    );
    let requests = server.requests();
    let summaries: Vec<usize> = (0..requests.len())
        .filter(|&i| is_summary_request(wire, &requests[i]))
        .collect();
    // One in the run of tool calls; one before the second prompt.
    assert_eq!(summaries.len(), 2, "{summaries:?}\n{stderr}");
    assert!(summaries[1] == requests.len() - 2, "{summaries:?}");
    let count = |text: &str| stderr.matches(text).count();
    assert_eq!(
        (
            count("Auto-compacting..."),
            count("Auto-compaction failed: "),
            count("not tried again until the next prompt"),
        ),
        (2, 2, 2),
        "{stderr}"
    );
}

/// A compaction after the last run may summarise that run's answer away
/// (a prompt larger than what is kept): print mode still prints it. It
/// printed nothing, and exited 0.
#[test]
fn print_mode_prints_the_answer_a_compaction_after_the_run_summarised() {
    let wire = Wire::OpenAi;
    let sandbox = Sandbox::new();
    write_settings(
        &sandbox,
        &format!(
            r#"{FAST_RETRY},"providers":{{"openai":{{"contextWindow":4000}}}},"compaction":{{"reserveTokens":1000,"keepRecentTokens":300}}"#
        ),
    );
    let server = ModelServer::start(move |request| {
        if is_summary_request(wire, request) {
            return summary_reply(wire, "SUMMARY-1");
        }
        answer_with_input(wire, "The answer.", 3500)
    });
    let mut command = sandbox.command(wire, &server);
    command.args(["-p", &big_prompt("first", 1200)]);
    let (status, stdout, stderr) = Running::spawn(command).finish();
    assert_eq!(
        (status.code(), stdout.as_str()),
        (Some(0), "The answer.\n"),
        "{stderr}"
    );
    assert!(stderr.contains("Compacted from 3,508 tokens"), "{stderr}");
    let lines = only_session_file(&sandbox);
    let entry = lines.iter().find(|l| l["type"] == "compaction").unwrap();
    assert_eq!(entry["summary"], summary_text("SUMMARY-1"));
}

/// A context past the threshold with nothing to compact (a few short
/// messages, whose answers report a large usage: the system prompt and
/// tools) is not announced as compacting (`docs/DEVIATIONS.md` S20). Print
/// mode wrote `Auto-compacting...` after each run and before each prompt
/// (three times in one run) and never an outcome; the terminal UI's line
/// stayed for good.
#[test]
fn a_context_past_the_threshold_with_nothing_to_compact_is_not_announced() {
    let wire = Wire::OpenAi;
    let sandbox = Sandbox::new();
    settings_with_window(&sandbox, 8000);
    let server = ModelServer::start(move |_| answer_with_input(wire, "ok", 6500));
    let mut command = sandbox.command(wire, &server);
    command.args(["--mode", "json", "first", "second"]);
    let (status, stdout, stderr) = Running::spawn(command).finish();
    assert!(status.success(), "{stderr}");
    assert_eq!(session_events(&json_lines(&stdout)), [] as [Value; 0]);
    let mut command = sandbox.command(wire, &server);
    command.args(["--continue", "-p", "third"]);
    let (status, stdout, stderr) = Running::spawn(command).finish();
    assert_eq!((status.code(), stdout.as_str()), (Some(0), "ok\n"));
    assert_eq!(stderr, "");
    assert_eq!(server.requests().len(), 3);
}

/// An answer that came back whole though its usage says the context was
/// past the window (a server that cut the context silently, or a window set
/// too small in the settings) stands: the context is compacted for the next
/// prompt. It used to be taken for a failed request, and the run ended with
/// `Cannot continue from message role: assistant`, again at every prompt.
#[test]
fn a_whole_answer_from_a_context_past_the_window_stands_and_the_context_is_compacted() {
    let wire = Wire::OpenAi;
    let sandbox = Sandbox::new();
    settings_with_window(&sandbox, 4000);
    let server = ModelServer::start(move |request| {
        if is_summary_request(wire, request) {
            return summary_reply(wire, "PAST");
        }
        let (text, input) = match request.index {
            0 => ("ok1", 1500),
            1 => ("ok2", 5000),
            _ => ("ok3", 1500),
        };
        answer_with_input(wire, text, input)
    });
    let mut command = sandbox.command(wire, &server);
    let (first, second) = (big_prompt("first", 1200), big_prompt("second", 1200));
    command.args(["--mode", "json", &first, &second, "third"]);
    let (status, stdout, stderr) = Running::spawn(command).finish();
    assert!(status.success(), "{stderr}");
    assert!(!stderr.contains("Cannot continue"), "{stderr}");
    let events = json_lines(&stdout);
    let compaction = session_events(&events);
    assert_eq!(
        compaction[0],
        json!({"type":"compaction_start","reason":"threshold"})
    );
    assert_eq!(compaction.len(), 2, "{compaction:?}");
    assert_eq!(compaction[1]["willRetry"], false);
    let answers: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "message_end" && e["message"]["role"] == "assistant")
        .map(|e| &e["message"]["content"][0]["text"])
        .collect();
    assert_eq!(answers, ["ok1", "ok2", "ok3"]);
    let requests = server.requests();
    assert_eq!(requests.len(), 4);
    assert!(is_summary_request(wire, &requests[2]));
    let third = wire.transcript(&requests[3].body);
    assert_eq!(third[0], summary_wrapper(&summary_text("PAST")));
    assert_eq!(third.last().unwrap(), "user: third");
}

/// A turn whose tool result is larger than the keep budget (a small window)
/// leaves only its final answer to keep. Kept alone after the summary, that
/// answer made a small local model answer every later prompt without a tool;
/// the whole turn is summarised instead, the compaction entry names itself
/// as the first kept entry (nothing before it is kept, as Pi reads it), and
/// `--continue` rebuilds the same context (`docs/DEVIATIONS.md` S12).
#[test]
fn a_turns_final_answer_is_not_kept_without_its_tool_calls() {
    let wire = Wire::OpenAi;
    let sandbox = Sandbox::new();
    settings_with_window(&sandbox, 4000);
    let text: String = (1..=100)
        .map(|n| format!("line {n:03} of the data file\n"))
        .collect();
    std::fs::write(sandbox.work.join("data.txt"), &text).unwrap();
    let server = ModelServer::start(move |request| {
        if is_summary_request(wire, request) {
            return summary_reply(wire, "SUMMARY-1");
        }
        match request.index {
            0 => Reply::Events(wire.events(&Answer::call(
                "call_data",
                "read",
                json!({"path": "data.txt"}),
            ))),
            // The answer that fills the context.
            1 => answer_with_input(wire, "the data has 100 lines", 3500),
            _ => answer_with_input(wire, "ok-later", 2000),
        }
    });
    let mut command = sandbox.command(wire, &server);
    command.args(["--mode", "json", "read data.txt", "second"]);
    let (status, _, stderr) = Running::spawn(command).finish();
    assert!(status.success(), "{stderr}");
    let lines = only_session_file(&sandbox);
    let entry = lines.iter().find(|l| l["type"] == "compaction").unwrap();
    assert_eq!(entry["firstKeptEntryId"], entry["id"], "nothing is kept");
    let requests = server.requests();
    assert_eq!(requests.len(), 4);
    let asked = wire.transcript(&requests[2].body).join("\n");
    assert!(
        asked.contains("[Assistant]: the data has 100 lines"),
        "one summary request for the whole turn, its answer included: {asked}"
    );
    // The summary and the next prompt: no answer without its request.
    let summary = format!(
        "{}\n\n<read-files>\ndata.txt\n</read-files>",
        summary_text("SUMMARY-1")
    );
    let after = vec![summary_wrapper(&summary), "user: second".to_owned()];
    assert_eq!(wire.transcript(&requests[3].body), after);

    let mut command = sandbox.command(wire, &server);
    command.args(["--mode", "json", "-c", "third"]);
    let (status, _, stderr) = Running::spawn(command).finish();
    assert!(status.success(), "{stderr}");
    let resumed = wire.transcript(&server.requests()[4].body);
    let expected: Vec<String> = after
        .into_iter()
        .chain(["assistant: ok-later".to_owned(), "user: third".to_owned()])
        .collect();
    assert_eq!(resumed, expected);
}

/// A long prompt that one compaction kept (the budget was reached at it) is
/// summarised by the next compaction instead of being kept again and again
/// until the context overflows (`docs/DEVIATIONS.md` S9).
#[test]
fn a_long_prompt_an_earlier_compaction_kept_is_summarised_by_the_next_one() {
    let wire = Wire::OpenAi;
    let sandbox = Sandbox::new();
    // reserve and keep scale to 1000 tokens each: compaction above 3000.
    settings_with_window(&sandbox, 4000);
    let long_prompt = format!("LONG-PROMPT {}", "lorem ".repeat(1500));
    let summaries = std::sync::atomic::AtomicUsize::new(0);
    let server = ModelServer::start(move |request| {
        if is_summary_request(wire, request) {
            let n = summaries.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
            return summary_reply(wire, &format!("SUMMARY-{n}"));
        }
        // Every answer reports a context past the threshold.
        answer_with_input(wire, "ok", 3500)
    });
    let mut command = sandbox.command(wire, &server);
    command.args(["--mode", "json", "first", &long_prompt, "third", "fourth"]);
    let (status, stdout, stderr) = Running::spawn(command).finish();
    assert!(status.success(), "{stderr}");
    let ends: Vec<Value> = session_events(&json_lines(&stdout))
        .into_iter()
        .filter(|e| e["result"].is_object())
        .collect();
    assert!(ends.len() >= 2, "{ends:?}");
    // The first compaction kept the long prompt (the budget was reached at
    // it) and summarised the turn before; a later one summarised it.
    let requests = server.requests();
    let summarised: Vec<bool> = requests
        .iter()
        .filter(|r| is_summary_request(wire, r))
        .map(|r| wire.transcript(&r.body).join("\n").contains("LONG-PROMPT"))
        .collect();
    assert_eq!(summarised.first(), Some(&false), "{summarised:?}");
    assert!(
        summarised.iter().skip(1).any(|&long| long),
        "a later summary request summarised the long prompt: {summarised:?}"
    );
    let last = wire.transcript(&requests.last().unwrap().body);
    assert!(
        last.iter().all(|line| !line.contains("LONG-PROMPT")),
        "the long prompt left the context: {last:?}"
    );
}

/// In a small window the system prompt and the seven tools' definitions are
/// a large fixed share of every request. Keep budget a quarter of the
/// window (1000 here) and two turns of 450 tokens each were all "kept":
/// past the threshold, every compaction found nothing to cut, and the
/// context grew until the server refused it (seen with llama.cpp at 4096
/// tokens). The budget now leaves room under the threshold once the fixed
/// part and a summary are in, so the first turn is summarised.
#[test]
fn a_long_system_prompt_in_a_small_window_still_leaves_something_to_compact() {
    let wire = Wire::OpenAi;
    let sandbox = Sandbox::new();
    settings_with_window(&sandbox, 4000);
    let p1 = big_prompt("first", 450);
    let p2 = big_prompt("second", 450);
    let server = ModelServer::start(move |request| {
        if is_summary_request(wire, request) {
            return summary_reply(wire, "SUMMARY-1");
        }
        let input = if request.index == 0 { 2500 } else { 3100 };
        answer_with_input(wire, "ok", input)
    });
    let mut command = sandbox.command(wire, &server);
    command.args(["--mode", "json", &p1, &p2, "third"]);
    let (status, stdout, stderr) = Running::spawn(command).finish();
    assert!(status.success(), "{stderr}");
    let end = session_events(&json_lines(&stdout))
        .into_iter()
        .find(|e| e["type"] == "compaction_end")
        .expect("the context passed the threshold");
    assert!(end["result"].is_object(), "nothing was compacted: {end}");
    let requests = server.requests();
    let third = requests
        .iter()
        .find(|r| {
            wire.transcript(&r.body)
                .last()
                .is_some_and(|l| l == "user: third")
        })
        .expect("the third prompt was sent");
    let last = wire.transcript(&third.body);
    assert_eq!(last[0], summary_wrapper(&summary_text("SUMMARY-1")));
    assert!(
        last.iter().all(|line| !line.contains("first word")),
        "the first turn left the context: {last:?}"
    );
}

#[test]
fn a_context_past_the_threshold_is_compacted_and_resumes_the_same_openai() {
    compaction_past_the_threshold(Wire::OpenAi);
}

#[test]
fn a_context_past_the_threshold_is_compacted_and_resumes_the_same_anthropic() {
    compaction_past_the_threshold(Wire::Anthropic);
}

/// Each server's way of saying the context is too long.
const OVERFLOWS: [&str; 7] = [
    r#"{"error":{"type":"exceed_context_size_error","message":"the request exceeds the available context size, try increasing it"}}"#,
    r#"{"error":{"type":"invalid_request_error","code":"context_length_exceeded","message":"This model's maximum context length is 4000 tokens. However, your messages resulted in 9000 tokens."}}"#,
    r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 9000 tokens > 4000 maximum"}}"#,
    r#"{"error":"prompt too long; exceeded max context length by 5000 tokens"}"#,
    r#"{"object":"error","message":"The decoder prompt (length 9000) is longer than the maximum model length of 4000.","type":"BadRequestError"}"#,
    r#"{"error":"The model is loaded with context length of only 4000 tokens, which is not enough for this request."}"#,
    r#"{"error":{"message":"Trying to keep the first 9000 tokens when context the overflows. However, the model is loaded with context length of only 4000 tokens","type":"invalid_request_error"}}"#,
];

/// What [`overflow_run`] leaves: the sandbox, the server, the session's
/// events, the exit status and stderr.
type OverflowRun = (
    Sandbox,
    ModelServer,
    Vec<Value>,
    std::process::ExitStatus,
    String,
);

/// Two prompts; the second overflows `overflows` times before an answer.
fn overflow_run(wire: Wire, body: &'static str, overflows: usize) -> OverflowRun {
    let sandbox = Sandbox::new();
    settings_with_window(&sandbox, 4000);
    overflow_run_in(sandbox, wire, 400, body, overflows)
}

/// [`overflow_run`] with the settings `sandbox` has, the overflows
/// refused with `status`.
fn overflow_run_in(
    sandbox: Sandbox,
    wire: Wire,
    status: u16,
    body: &'static str,
    overflows: usize,
) -> OverflowRun {
    let failures = std::sync::atomic::AtomicUsize::new(0);
    let server = ModelServer::start(move |request| {
        if is_summary_request(wire, request) {
            return summary_reply(wire, "OVERFLOW");
        }
        if request.index == 0 {
            return Reply::Events(wire.events(&Answer::text(&["ok1"])));
        }
        if failures.fetch_add(1, std::sync::atomic::Ordering::SeqCst) < overflows {
            return Reply::Status(status, body.to_owned());
        }
        Reply::Events(wire.events(&Answer::text(&["ok2"])))
    });
    let mut command = sandbox.command(wire, &server);
    command.args([
        "--mode",
        "json",
        &big_prompt("first", 1200),
        &big_prompt("second", 1200),
    ]);
    let (status, stdout, stderr) = Running::spawn(command).finish();
    let events = session_events(&json_lines(&stdout));
    (sandbox, server, events, status, stderr)
}

#[test]
fn every_overflow_spelling_is_compacted_and_retried_once() {
    for wire in WIRES {
        for body in OVERFLOWS {
            let (_sandbox, server, events, status, stderr) = overflow_run(wire, body, 1);
            assert!(status.success(), "{wire:?} {body}: {stderr}");
            let kinds: Vec<(&str, bool)> = events
                .iter()
                .map(|e| {
                    (
                        e["type"].as_str().unwrap(),
                        e["willRetry"].as_bool().unwrap_or(false),
                    )
                })
                .collect();
            assert_eq!(
                kinds,
                [("compaction_start", false), ("compaction_end", true)],
                "{wire:?} {body}"
            );
            assert_eq!(events[0]["reason"], "overflow");
            let requests = server.requests();
            assert_eq!(requests.len(), 4, "{wire:?} {body}");
            assert!(is_summary_request(wire, &requests[2]));
            let retried = wire.transcript(&requests[3].body);
            assert_eq!(retried[0], summary_wrapper(&summary_text("OVERFLOW")));
            assert_eq!(
                retried.len(),
                2,
                "the summary and the second prompt: {retried:?}"
            );
        }
    }
}

#[test]
fn a_second_overflow_ends_the_run_with_a_clear_message() {
    for wire in WIRES {
        let (_sandbox, server, events, status, stderr) = overflow_run(wire, OVERFLOWS[0], 2);
        assert_eq!(status.code(), Some(1), "{wire:?}");
        assert_eq!(server.requests().len(), 4);
        let last = events.last().unwrap();
        let message = last["errorMessage"].as_str().unwrap();
        assert_eq!(
            last,
            &json!({"type":"compaction_end","reason":"overflow","aborted":false,"willRetry":false,"errorMessage":message})
        );
        // Pi's text, then what fills the window, in numbers.
        assert!(
            message.starts_with("Context overflow recovery failed after one compact-and-retry attempt. Try reducing context or switching to a larger-context model. The model's context window is 4000 tokens; the system prompt and tool definitions take about "),
            "{message}"
        );
        assert!(stderr.contains(&format!("Error: {message}\n")), "{stderr}");
    }
}

/// With auto-compaction off in the settings an overflow is not compacted
/// either, as in Pi: the run ends with the server's refusal (exit status
/// 1). It was compacted and asked again as if auto-compaction were on.
#[test]
fn with_auto_compaction_off_in_the_settings_an_overflow_ends_the_run() {
    let wire = Wire::OpenAi;
    let sandbox = Sandbox::new();
    write_settings(
        &sandbox,
        &format!(
            r#"{FAST_RETRY},"compaction":{{"enabled":false}},"providers":{{"openai":{{"contextWindow":4000}}}}"#
        ),
    );
    let (_sandbox, server, events, status, stderr) =
        overflow_run_in(sandbox, wire, 400, OVERFLOWS[1], 1);
    assert_eq!(events, [] as [Value; 0]);
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert_eq!(server.requests().len(), 2);
}

/// The same after RPC `set_auto_compaction` turned it off; `compact` still
/// compacts when asked, as in Pi.
#[test]
fn with_auto_compaction_off_by_rpc_an_overflow_ends_the_run_and_compact_still_works() {
    let wire = Wire::OpenAi;
    let sandbox = Sandbox::new();
    settings_with_window(&sandbox, 4000);
    let server = ModelServer::start(move |request| {
        if is_summary_request(wire, request) {
            return summary_reply(wire, "MANUAL");
        }
        match request.index {
            0 | 1 => answer_with_input(wire, "ok", 1000),
            _ => Reply::Status(400, OVERFLOWS[1].to_owned()),
        }
    });
    let mut rpc = Rpc::start(&sandbox, wire, &server);
    rpc.prompt(&big_prompt("first", 1200));
    rpc.prompt(&big_prompt("second", 1200));
    let (_, off) = rpc.ask(json!({"id": "a", "type": "set_auto_compaction", "enabled": false}));
    assert_eq!(off["success"], true, "{off}");
    let (_, compacted) = rpc.ask(json!({"id": "c", "type": "compact"}));
    assert_eq!(compacted["success"], true, "{compacted}");
    let events = rpc.prompt("third");
    let end = events.last().unwrap()["messages"].as_array().unwrap();
    assert_eq!(end.last().unwrap()["stopReason"], "error", "{end:?}");
    // Whatever the run did after its `agent_end`, up to the end of output.
    let Rpc {
        running,
        stdin,
        lines,
    } = rpc;
    drop(stdin);
    let (status, _, _) = running.finish();
    assert!(status.success());
    let after: Vec<Value> = lines
        .iter()
        .map(|line| serde_json::from_str(&line).unwrap())
        .collect();
    assert_eq!(session_events(&after), [] as [Value; 0]);
    // Two answers, the summary and the refused request.
    assert_eq!(server.requests().len(), 4);
}

/// A request's size as the test servers count it: 4 characters a token.
fn request_tokens(request: &Request) -> u64 {
    request.body.to_string().len() as u64 / 4
}

/// A server whose context is `window` tokens: it refuses a longer request
/// (as llama.cpp words it), answers a summary request with the summary
/// `label` names, and anything else with "answered".
fn small_window_server(wire: Wire, window: u64, label: fn(&Request) -> String) -> ModelServer {
    ModelServer::start(move |request| {
        if request_tokens(request) > window {
            return Reply::Status(400, OVERFLOWS[0].to_owned());
        }
        if is_summary_request(wire, request) {
            return summary_reply(wire, &label(request));
        }
        Reply::Events(wire.events(&Answer::text(&["answered"])))
    })
}

/// A short first prompt is refused as too long (the server's window is
/// smaller than the one configured): there is nothing to compact, the
/// message says what fills the window and what to change, and the run ends
/// with the server's error (exit status 1), not as if it had an answer.
/// A session that outgrew its window (here: written with a 100k window,
/// resumed with 4000, against a server that refuses any request larger
/// than that, summary requests included) overflows; its history is too long
/// for one summary request, so the compaction summarises it in pieces, each
/// merged into the summary of those before, and the prompt is answered
/// (`docs/DEVIATIONS.md` S16). Sent whole, the summary request overflowed
/// too and the run ended.
#[test]
fn a_history_larger_than_the_window_is_summarised_in_pieces_that_fit() {
    let wire = Wire::OpenAi;
    let sandbox = Sandbox::new();
    settings_with_window(&sandbox, 100_000);
    let prompts: Vec<String> = (1..=6)
        .map(|n| big_prompt(&format!("prompt-{n}"), 1200))
        .collect();
    let roomy = ModelServer::start(move |_| Reply::Events(wire.events(&Answer::text(&["ok"]))));
    let args: Vec<&str> = prompts.iter().map(String::as_str).collect();
    run_json_ok(wire, &sandbox, &roomy, &args);

    settings_with_window(&sandbox, 4000);
    let server = small_window_server(wire, 4000, |request| format!("PART-{}", request.index));
    let mut command = sandbox.command(wire, &server);
    command.args(["--mode", "json", "-c", "fifth"]);
    let (status, stdout, stderr) = Running::spawn(command).finish();
    assert!(status.success(), "{stderr}");
    let requests = server.requests();
    let summaries: Vec<&Request> = requests
        .iter()
        .filter(|request| is_summary_request(wire, request))
        .collect();
    // The last prompt is kept; the five before it (about 6,000 tokens) are
    // a piece each.
    assert_eq!(summaries.len(), 5, "{stderr}");
    assert!(
        stderr.contains(
            "Warning: the history is too long for one summary request: summarising it in 5 requests, one after another\n"
        ),
        "{stderr}"
    );
    for (n, request) in summaries.iter().enumerate() {
        let asked = &wire.transcript(&request.body)[0];
        assert!(
            asked.starts_with(&format!("user: <conversation>\n[User]: prompt-{} ", n + 1)),
            "{asked}"
        );
        if n > 0 {
            let before = summary_text(&format!("PART-{}", summaries[n - 1].index));
            assert!(
                asked.contains(&format!(
                    "<previous-summary>\n{before}\n</previous-summary>"
                )),
                "{asked}"
            );
        }
    }
    let last = requests.last().unwrap();
    assert!(!is_summary_request(wire, last));
    let sent = wire.transcript(&last.body);
    assert_eq!(
        sent[0],
        summary_wrapper(&summary_text(&format!("PART-{}", summaries[4].index)))
    );
    assert_eq!(sent[1], format!("user: {}", prompts[5]));
    assert_eq!(sent.last().unwrap(), "user: fifth");
    let events = session_events(&json_lines(&stdout));
    assert_eq!(events.last().unwrap()["willRetry"], true, "{events:?}");
    // Each request answered is counted as it ends.
    let progress: Vec<&Value> = events
        .iter()
        .filter(|event| event["type"] == "compaction_progress")
        .collect();
    let expected: Vec<Value> = (1..=5)
        .map(|done| json!({"type": "compaction_progress", "done": done, "of": 5}))
        .collect();
    assert_eq!(progress, expected.iter().collect::<Vec<_>>());
}

/// Pi's check before a prompt: a context already past the threshold of the
/// model now in use (a session continued with a smaller window, or after
/// `/model`) is compacted before the prompt is sent. Without it the prompt
/// went out whole, to be refused (or, by a server that cuts what does not
/// fit, such as Ollama, silently cut) before the overflow recovery ran.
#[test]
fn a_context_already_past_the_threshold_is_compacted_before_the_prompt_is_sent() {
    let wire = Wire::OpenAi;
    let sandbox = Sandbox::new();
    settings_with_window(&sandbox, 100_000);
    let prompts: Vec<String> = (1..=3)
        .map(|n| big_prompt(&format!("prompt-{n}"), 1500))
        .collect();
    // The answers report the context they were given, as servers do.
    let roomy =
        ModelServer::start(move |request| answer_with_input(wire, "ok", request_tokens(request)));
    let args: Vec<&str> = prompts.iter().map(String::as_str).collect();
    run_json_ok(wire, &sandbox, &roomy, &args);

    settings_with_window(&sandbox, 4000);
    let server = small_window_server(wire, 4000, |_| "EARLIER".to_owned());
    let mut command = sandbox.command(wire, &server);
    command.args(["--mode", "json", "-c", "next"]);
    let (status, stdout, stderr) = Running::spawn(command).finish();
    assert!(status.success(), "{stderr}");
    let requests = server.requests();
    assert!(is_summary_request(wire, &requests[0]), "{stderr}");
    assert!(
        requests
            .iter()
            .all(|request| request_tokens(request) <= 4000),
        "a request was refused: {stderr}"
    );
    let last = wire.transcript(&requests.last().unwrap().body);
    assert_eq!(last[0], summary_wrapper(&summary_text("EARLIER")));
    assert_eq!(last.last().unwrap(), "user: next");
    let events: Vec<Value> = session_events(&json_lines(&stdout))
        .into_iter()
        .filter(|event| event["type"] != "compaction_progress")
        .collect();
    assert_eq!(
        events[0],
        json!({"type":"compaction_start","reason":"threshold"})
    );
    assert_eq!(events.len(), 2, "{events:?}");
    assert_eq!(events[1]["type"], "compaction_end");
    assert_eq!(events[1]["willRetry"], false);
}

#[test]
fn an_overflow_with_nothing_to_compact_says_what_fills_the_window() {
    let wire = Wire::OpenAi;
    let sandbox = Sandbox::new();
    settings_with_window(&sandbox, 4000);
    let server = ModelServer::start(move |_| Reply::Status(400, OVERFLOWS[0].to_owned()));
    let mut command = sandbox.command(wire, &server);
    command.args(["--mode", "json", "hello"]);
    let (status, stdout, stderr) = Running::spawn(command).finish();
    assert_eq!(status.code(), Some(1), "{stderr}");
    let events = session_events(&json_lines(&stdout));
    let message = events.last().unwrap()["errorMessage"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        message.starts_with(
            "Context overflow recovery failed: Nothing to compact (session too small). The model's context window is 4000 tokens; the system prompt and tool definitions take about "
        ),
        "{message}"
    );
    let numbers: Vec<u64> = message
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|n| n.parse().ok())
        .collect();
    let [window, fixed, messages] = numbers[..] else {
        panic!("three figures: {message}");
    };
    assert_eq!(window, 4000);
    assert!(fixed > 1000, "seven tools and the prompt: {message}");
    assert!(messages < 100, "one short prompt: {message}");
    assert!(message.ends_with("(--tools)."), "{message}");
    assert!(stderr.contains(&message), "{stderr}");
}

/// A server started with a smaller window than the one assumed (no
/// `contextWindow` setting: 128,000 tokens for an unknown model) refuses a
/// request and says its context size, as llama.cpp does. The session
/// compacts for the window the server stated from then on, and says so
/// once. Compacting for 128,000 found nothing to compact, the advice asked
/// for a larger window, and every later prompt failed the same way.
#[test]
fn an_overflow_stating_a_smaller_server_window_is_compacted_for_that_window() {
    let wire = Wire::OpenAi;
    let sandbox = Sandbox::new();
    write_settings(&sandbox, FAST_RETRY);
    let server = ModelServer::start(move |request| {
        let tokens = request_tokens(request);
        if tokens > 8000 {
            return Reply::Status(
                400,
                format!(
                    r#"{{"error":{{"code":400,"type":"exceed_context_size_error","message":"request ({tokens} tokens) exceeds the available context size (8000 tokens), try increasing it"}}}}"#
                ),
            );
        }
        if is_summary_request(wire, request) {
            return summary_reply(wire, "SUMMARY");
        }
        Reply::Events(wire.events(&Answer::text(&["answered"])))
    });
    let prompts: Vec<String> = (1..=6)
        .map(|n| big_prompt(&format!("prompt-{n}"), 1500))
        .collect();
    let mut command = sandbox.command(wire, &server);
    command.arg("-p").args(&prompts);
    let (status, _, stderr) = Running::spawn(command).finish();
    assert!(status.success(), "{stderr}");
    let said = "the server's context size is 8000 tokens, less than the 128000 assumed";
    assert_eq!(stderr.matches(said).count(), 1, "{stderr}");
    assert!(stderr.contains("contextWindow"), "{stderr}");
    let requests = server.requests();
    assert!(requests.iter().any(|r| is_summary_request(wire, r)));
    let last = requests.last().unwrap();
    assert!(request_tokens(last) <= 8000);
    assert_eq!(
        wire.transcript(&last.body).last().unwrap(),
        &format!("user: {}", prompts[5])
    );
}

/// A vLLM server started with 8192 tokens (no `contextWindow` setting)
/// counts the answer's room against its window: it refused every request
/// asking for the default 8192 tokens ("8192 in the completion"). The
/// session learnt the window from the refusal but kept asking for 8192, so
/// even a short prompt (nothing to compact) failed, and every later one.
/// Learnt, the window gives the answer a quarter of it, as a configured
/// one does, and the refused request is asked again at once.
#[test]
fn a_window_learnt_from_a_refusal_leaves_the_prompt_room_and_the_request_is_asked_again() {
    let wire = Wire::OpenAi;
    let sandbox = Sandbox::new();
    write_settings(&sandbox, FAST_RETRY);
    let server = ModelServer::start(move |request| {
        let completion = request.body["max_tokens"].as_u64().unwrap_or(0);
        let messages = request_tokens(request);
        if messages + completion > 8192 {
            return Reply::Status(
                400,
                json!({"object": "error", "type": "BadRequestError", "code": 400,
                    "message": format!("This model's maximum context length is 8192 tokens. However, you requested {} tokens ({messages} in the messages, {completion} in the completion). Please reduce the length of the messages or completion.", messages + completion)})
                .to_string(),
            );
        }
        Reply::Events(wire.events(&Answer::text(&["answered"])))
    });
    let mut command = sandbox.command(wire, &server);
    command.args(["-p", "hello", "hello again"]);
    let (status, stdout, stderr) = Running::spawn(command).finish();
    assert!(status.success(), "{stderr}");
    assert_eq!(stdout, "answered\n", "{stderr}");
    let said = "the server's context size is 8192 tokens, less than the 128000 assumed";
    assert_eq!(stderr.matches(said).count(), 1, "{stderr}");
    let asked: Vec<Value> = server
        .requests()
        .into_iter()
        .map(|request| request.body["max_tokens"].clone())
        .collect();
    assert_eq!(asked, [json!(8192), json!(2048), json!(2048)]);
}

/// Queues "queued msg" while something runs: as a follow-up, or as a
/// prompt without `streamingBehavior` (which waits for a compaction).
fn queue_follow_up(rpc: &mut Rpc, behavior: Option<&str>) {
    let mut prompt = json!({"id": "q", "type": "prompt", "message": "queued msg"});
    if let Some(behavior) = behavior {
        prompt["streamingBehavior"] = json!(behavior);
    }
    let (_, queued) = rpc.ask(prompt);
    assert_eq!(queued["success"], true, "{queued}");
}

/// After a run that followed a compaction: its request ended with the
/// message queued during the compaction ("queued msg"), and none is left.
fn the_queued_message_went_out(mut rpc: Rpc, server: &ModelServer, wire: Wire) {
    let last = server
        .requests()
        .into_iter()
        .rev()
        .find(|r| r.method == "POST" && !is_summary_request(wire, r))
        .unwrap();
    let transcript = wire.transcript(&last.body);
    assert_eq!(
        transcript.last().map(String::as_str),
        Some("user: queued msg"),
        "{transcript:?}"
    );
    let (_, state) = rpc.ask(json!({"id": "s", "type": "get_state"}));
    assert_eq!(state["data"]["pendingMessageCount"], 0, "{state}");
    rpc.finish();
}

/// A message queued while the compaction after a run is out (an RPC
/// `prompt` with `streamingBehavior`) is sent once it ends, as Pi continues
/// after a compaction: it waited for the next prompt, then went out after
/// that prompt's answer.
#[test]
fn a_message_queued_during_a_threshold_compaction_is_sent_when_it_ends() {
    queued_during_a_threshold_compaction(Some("followUp"));
}

/// A prompt without `streamingBehavior` sent then waits for the compaction
/// the same way (`docs/DEVIATIONS.md` M18). It was refused as "already processing" while `get_state`
/// said `isStreaming: false`.
#[test]
fn a_prompt_sent_during_a_threshold_compaction_runs_when_it_ends() {
    queued_during_a_threshold_compaction(None);
}

fn queued_during_a_threshold_compaction(behavior: Option<&str>) {
    let wire = Wire::OpenAi;
    let sandbox = Sandbox::new();
    settings_with_window(&sandbox, 4000);
    let server = ModelServer::start(move |request| {
        if is_summary_request(wire, request) {
            std::thread::sleep(std::time::Duration::from_millis(500));
            return summary_reply(wire, "SUMMARY-1");
        }
        match request.index {
            0 => answer_with_input(wire, "ok1", 3500),
            _ => answer_with_input(wire, "ok-later", 1000),
        }
    });
    let mut rpc = Rpc::start(&sandbox, wire, &server);
    send(
        &mut rpc.stdin,
        &json!({"id": "p", "type": "prompt", "message": big_prompt("first", 1200)}),
    );
    rpc.until(|line| line["type"] == "compaction_start");
    queue_follow_up(&mut rpc, behavior);
    rpc.until(|line| line["type"] == "compaction_end");
    rpc.until(|line| line["type"] == "agent_end");
    the_queued_message_went_out(rpc, &server, wire);
}

/// The same for an RPC `compact`: a message queued while it runs goes out
/// when it ends, after its response (it waited for the next prompt, or was
/// lost when the input closed).
#[test]
fn a_message_queued_during_a_manual_compaction_is_sent_when_it_ends() {
    queued_during_a_manual_compaction(Some("followUp"));
}

/// A prompt without `streamingBehavior` right after `compact` waits for it
/// the same way (`docs/DEVIATIONS.md` M18). It was refused as "already processing".
#[test]
fn a_prompt_sent_during_a_manual_compaction_runs_when_it_ends() {
    queued_during_a_manual_compaction(None);
}

fn queued_during_a_manual_compaction(behavior: Option<&str>) {
    let wire = Wire::OpenAi;
    let sandbox = Sandbox::new();
    settings_with_window(&sandbox, 4000);
    let server = ModelServer::start(move |request| {
        if is_summary_request(wire, request) {
            std::thread::sleep(std::time::Duration::from_millis(500));
            return summary_reply(wire, "SUMMARY-1");
        }
        match request.index {
            0 | 1 => answer_with_input(wire, "ok", 1000),
            _ => answer_with_input(wire, "ok-later", 1000),
        }
    });
    let mut rpc = Rpc::start(&sandbox, wire, &server);
    rpc.prompt(&big_prompt("first", 1200));
    rpc.prompt(&big_prompt("second", 1200));
    // Sent at once, before the compaction has begun.
    send(&mut rpc.stdin, &json!({"id": "c", "type": "compact"}));
    queue_follow_up(&mut rpc, behavior);
    let compacted = rpc.until(|line| line["id"] == "c");
    assert_eq!(compacted["success"], true, "{compacted}");
    rpc.until(|line| line["type"] == "agent_end");
    the_queued_message_went_out(rpc, &server, wire);
}

/// An RPC session of two long exchanges whose `compact` (id `c`) has
/// started and waits on a summary request that never ends.
fn a_compaction_under_way() -> (Sandbox, ModelServer, Rpc) {
    let wire = Wire::OpenAi;
    let sandbox = Sandbox::new();
    settings_with_window(&sandbox, 4000);
    let server = ModelServer::start(move |request| {
        if is_summary_request(wire, request) {
            return Reply::Stall;
        }
        answer_with_input(wire, "ok", 1000)
    });
    let mut rpc = Rpc::start(&sandbox, wire, &server);
    rpc.prompt(&big_prompt("first", 1200));
    rpc.prompt(&big_prompt("second", 1200));
    send(&mut rpc.stdin, &json!({"id": "c", "type": "compact"}));
    assert_eq!(
        next_json(&rpc.lines),
        json!({"type":"compaction_start","reason":"manual"})
    );
    (sandbox, server, rpc)
}

/// A manual compaction runs as a run does: commands are answered while its
/// summary request is out (it blocked every command until the request
/// ended, a hung server for its whole timeout), `get_state` says it is
/// compacting, and `abort` cancels it.
#[test]
fn rpc_commands_are_answered_during_a_compaction_and_abort_cancels_it() {
    let (_sandbox, _server, mut rpc) = a_compaction_under_way();
    let (_, state) = rpc.ask(json!({"id": "s", "type": "get_state"}));
    assert_eq!(state["data"]["isCompacting"], true, "{state}");
    let (before_abort, aborted) = rpc.ask(json!({"id": "a", "type": "abort"}));
    assert_eq!(aborted["success"], true);
    let kinds: Vec<&str> = before_abort
        .iter()
        .map(|line| line["type"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(kinds, ["compaction_end", "response"], "{before_abort:?}");
    assert_eq!(before_abort[0]["aborted"], true, "{before_abort:?}");
    assert_eq!(
        (&before_abort[1]["id"], &before_abort[1]["success"]),
        (&json!("c"), &json!(false)),
        "{before_abort:?}"
    );
    let (_, state) = rpc.ask(json!({"id": "s2", "type": "get_state"}));
    assert_eq!(state["data"]["isCompacting"], false, "{state}");
    rpc.finish();
}

/// A prompt accepted while a manual compaction is out waits for it; the
/// compaction aborted (to be answered sooner, most likely), the prompt
/// goes out. It stayed queued, unreported, and went out after the next
/// prompt, or never.
#[test]
fn a_prompt_queued_during_a_compaction_goes_out_when_the_compaction_is_aborted() {
    let (_sandbox, server, mut rpc) = a_compaction_under_way();
    queue_follow_up(&mut rpc, None);
    let (_, aborted) = rpc.ask(json!({"id": "a", "type": "abort"}));
    assert_eq!(aborted["success"], true, "{aborted}");
    rpc.until(|line| line["type"] == "agent_end");
    the_queued_message_went_out(rpc, &server, Wire::OpenAi);
}

#[test]
fn rpc_compact_toggles_and_stats_answer_in_pis_shapes() {
    for wire in WIRES {
        let sandbox = Sandbox::new();
        settings_with_window(&sandbox, 4000);
        let server = ModelServer::start(move |request| {
            if is_summary_request(wire, request) {
                return summary_reply(wire, "MANUAL");
            }
            answer_with_input(wire, "ok", 1000)
        });
        let mut rpc = Rpc::start(&sandbox, wire, &server);
        rpc.prompt(&big_prompt("first", 1200));
        rpc.prompt(&big_prompt("second", 1200));
        let mut ask = |command: Value| rpc.ask(command);
        let (_, state) = ask(json!({"id": "s", "type": "get_state"}));
        assert_eq!(state["data"]["autoCompactionEnabled"], true);
        let (_, off) = ask(json!({"id": "a", "type": "set_auto_compaction", "enabled": false}));
        assert_eq!(
            off,
            json!({"id":"a","type":"response","command":"set_auto_compaction","success":true})
        );
        let (_, state) = ask(json!({"id": "s", "type": "get_state"}));
        assert_eq!(state["data"]["autoCompactionEnabled"], false);
        let (_, retry) = ask(json!({"id": "r", "type": "set_auto_retry", "enabled": false}));
        assert_eq!(
            retry,
            json!({"id":"r","type":"response","command":"set_auto_retry","success":true})
        );
        let (_, bad) = ask(json!({"id": "b", "type": "set_auto_retry"}));
        assert_eq!(bad["success"], false);

        let (_, stats) = ask(json!({"id": "st", "type": "get_session_stats"}));
        let data = &stats["data"];
        assert_eq!(
            (
                &data["userMessages"],
                &data["assistantMessages"],
                &data["toolCalls"],
                &data["toolResults"],
                &data["totalMessages"]
            ),
            (&json!(2), &json!(2), &json!(0), &json!(0), &json!(4))
        );
        assert_eq!(data["tokens"]["input"], 2000);
        assert_eq!(data["tokens"]["output"], 16);
        assert_eq!(data["contextUsage"]["contextWindow"], 4000);
        assert_eq!(data["contextUsage"]["tokens"], 1008);
        assert_eq!(data["contextUsage"]["estimated"], false);
        assert!(data["sessionFile"].is_string());

        let (events, compacted) =
            ask(json!({"id": "c", "type": "compact", "customInstructions": "focus on X"}));
        assert_eq!(
            session_events(&events),
            [
                json!({"type":"compaction_start","reason":"manual"}),
                json!({"type":"compaction_end","reason":"manual","result":compacted["data"].clone(),"aborted":false,"willRetry":false}),
            ]
        );
        assert_eq!(compacted["success"], true, "{compacted}");
        assert_eq!(compacted["data"]["summary"], summary_text("MANUAL"));
        assert_eq!(compacted["data"]["tokensBefore"], 1008);
        // Until an answer reports its usage, the context is the next
        // request's estimate, the system prompt and seven tools included.
        let (_, stats) = ask(json!({"id": "st2", "type": "get_session_stats"}));
        // The summary, the kept second prompt and its answer: the summary
        // is not the user's (it was counted as one).
        assert_eq!(
            (
                &stats["data"]["userMessages"],
                &stats["data"]["totalMessages"]
            ),
            (&json!(1), &json!(3))
        );
        let usage = &stats["data"]["contextUsage"];
        assert_eq!(usage["estimated"], true, "{usage}");
        let tokens = usage["tokens"].as_u64().unwrap();
        // The tools and prompt take over 1000, the kept second prompt 1200.
        assert!((2200..4000).contains(&tokens), "{usage}");
        let summary_request = server
            .requests()
            .into_iter()
            .find(|r| is_summary_request(wire, r))
            .unwrap();
        let asked = wire.transcript(&summary_request.body);
        assert!(
            asked[0].ends_with("\n\nAdditional focus: focus on X"),
            "{}",
            asked[0]
        );
        let (_, again) = ask(json!({"id": "c2", "type": "compact"}));
        assert_eq!(
            again,
            json!({"id":"c2","type":"response","command":"compact","success":false,"error":"Already compacted"})
        );
        let (_, aborted) = ask(json!({"id": "x", "type": "abort_retry"}));
        assert_eq!(
            aborted,
            json!({"id":"x","type":"response","command":"abort_retry","success":true})
        );
        rpc.finish();
        let lines = only_session_file(&sandbox);
        assert_eq!(
            lines.iter().filter(|l| l["type"] == "compaction").count(),
            1
        );
    }
}

#[test]
fn rpc_fork_clone_switch_and_export_work_on_the_session_files() {
    let wire = Wire::OpenAi;
    let sandbox = Sandbox::new();
    let server = ModelServer::start(move |request| {
        let n = request.index;
        Reply::Events(wire.events(&Answer::text(&[&format!("answer {n}")])))
    });
    let mut rpc = Rpc::start(&sandbox, wire, &server);
    rpc.prompt("one");
    rpc.prompt("two <b>bold</b>");
    let (_, state) = rpc.ask(json!({"id": "s", "type": "get_state"}));
    let original = state["data"]["sessionFile"].as_str().unwrap().to_owned();

    let (_, forks) = rpc.ask(json!({"id": "f", "type": "get_fork_messages"}));
    let messages = forks["data"]["messages"].as_array().unwrap().clone();
    let texts: Vec<&str> = messages
        .iter()
        .map(|m| m["text"].as_str().unwrap())
        .collect();
    assert_eq!(texts, ["one", "two <b>bold</b>"]);
    let second = messages[1]["entryId"].clone();

    let (_, forked) = rpc.ask(json!({"id": "k", "type": "fork", "entryId": second}));
    assert_eq!(
        forked,
        json!({"id":"k","type":"response","command":"fork","success":true,"data":{"text":"two <b>bold</b>","cancelled":false}})
    );
    let (_, now) = rpc.ask(json!({"id": "m", "type": "get_messages"}));
    assert_eq!(
        now["data"]["messages"].as_array().unwrap().len(),
        2,
        "one and its answer"
    );
    let (_, state) = rpc.ask(json!({"id": "s", "type": "get_state"}));
    let fork_file = state["data"]["sessionFile"].as_str().unwrap().to_owned();
    assert_ne!(fork_file, original);
    let fork_lines = session_lines(std::path::Path::new(&fork_file));
    assert_eq!(fork_lines[0]["parentSession"], original.as_str());
    assert_eq!(session_roles(&fork_lines), ["user", "assistant"]);

    let (_, bad) = rpc.ask(json!({"id": "b", "type": "fork", "entryId": "nope"}));
    assert_eq!(
        bad,
        json!({"id":"b","type":"response","command":"fork","success":false,"error":"Invalid entry ID for forking: nope"})
    );

    let (_, cloned) = rpc.ask(json!({"id": "c", "type": "clone"}));
    assert_eq!(
        cloned,
        json!({"id":"c","type":"response","command":"clone","success":true,"data":{"cancelled":false}})
    );
    let (_, state) = rpc.ask(json!({"id": "s", "type": "get_state"}));
    let clone_file = state["data"]["sessionFile"].as_str().unwrap().to_owned();
    assert_ne!(clone_file, fork_file);
    assert_eq!(
        session_roles(&session_lines(std::path::Path::new(&clone_file))),
        ["user", "assistant"]
    );

    let (_, switched) =
        rpc.ask(json!({"id": "w", "type": "switch_session", "sessionPath": original}));
    assert_eq!(
        switched,
        json!({"id":"w","type":"response","command":"switch_session","success":true,"data":{"cancelled":false}})
    );
    let (_, now) = rpc.ask(json!({"id": "m", "type": "get_messages"}));
    assert_eq!(now["data"]["messages"].as_array().unwrap().len(), 4);

    let (_, exported) =
        rpc.ask(json!({"id": "e", "type": "export_html", "outputPath": "out.html"}));
    let path = sandbox.work.join("out.html");
    assert_eq!(
        exported,
        json!({"id":"e","type":"response","command":"export_html","success":true,"data":{"path":path}})
    );
    let html = std::fs::read_to_string(&path).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(
        html.contains("<pre>two &lt;b&gt;bold&lt;/b&gt;</pre>"),
        "the text is escaped"
    );
    assert!(html.contains("<pre>answer 1</pre>"));
    // Self-contained: nothing to fetch, nothing to run.
    for outside in ["<script", "<link", "src=\"http", "href=\"http", "@import"] {
        assert!(!html.contains(outside), "{outside}");
    }
    rpc.finish();
}

#[test]
fn rpc_get_tree_and_navigate_tree_branch_in_the_same_file_with_a_summary_of_the_branch_left() {
    let wire = Wire::OpenAi;
    let sandbox = Sandbox::new();
    let server = ModelServer::start(move |request| {
        if is_summary_request(wire, request) {
            return summary_reply(wire, "LEFT");
        }
        let n = request.index;
        Reply::Events(wire.events(&Answer::text(&[&format!("answer {n}")])))
    });
    let mut rpc = Rpc::start(&sandbox, wire, &server);
    rpc.prompt("one");
    rpc.prompt("two");
    let mut ask = |command: Value| rpc.ask(command).1;
    let tree = ask(json!({"id": "t", "type": "get_tree"}));
    let rows = tree["data"]["rows"].as_array().unwrap().clone();
    let shape: Vec<(&str, &str, bool)> = rows
        .iter()
        .map(|r| {
            let current = r["current"].as_bool().unwrap();
            (
                r["item"].as_str().unwrap(),
                r["text"].as_str().unwrap(),
                current,
            )
        })
        .collect();
    assert_eq!(
        shape,
        [
            ("user", "one", false),
            ("answer", "answer 0", false),
            ("user", "two", false),
            ("answer", "answer 1", true)
        ]
    );
    assert_eq!(rows[1]["parentId"], rows[0]["id"]);
    assert_eq!(rows[0]["parentId"], Value::Null);

    // A user message: the conversation goes on from before it.
    let moved = ask(json!({"id": "n", "type": "navigate_tree", "targetId": rows[2]["id"]}));
    assert_eq!(
        moved,
        json!({"id":"n","type":"response","command":"navigate_tree","success":true,
            "data":{"editorText":"two","summarized":false,"cancelled":false}})
    );
    let now = ask(json!({"id": "m", "type": "get_messages"}));
    assert_eq!(now["data"]["messages"].as_array().unwrap().len(), 2);
    rpc.prompt("two, again");
    let mut ask = |command: Value| rpc.ask(command).1;
    let rows = ask(json!({"id": "t", "type": "get_tree"}))["data"]["rows"]
        .as_array()
        .unwrap()
        .clone();
    let leads: Vec<&str> = rows.iter().map(|r| r["lead"].as_str().unwrap()).collect();
    assert_eq!(leads, ["", "", "├─ ", "│  ", "└─ ", "   "]);
    assert_eq!(
        rows[2]["parentId"], rows[4]["parentId"],
        "a fork after answer 0"
    );

    // Back to answer 1, the branch left summarised first.
    let requests = server.requests().len();
    let moved = ask(
        json!({"id": "s", "type": "navigate_tree", "targetId": rows[3]["id"],
        "summarize": true, "customInstructions": "the comma"}),
    );
    assert_eq!(moved["data"]["summarized"], true, "{moved}");
    assert_eq!(moved["data"]["editorText"], Value::Null, "{moved}");
    let asked = &server.requests()[requests];
    assert!(is_summary_request(wire, asked));
    let asked = wire.transcript(&asked.body).join("\n");
    assert!(
        asked.contains("[User]: two, again") && !asked.contains("[User]: one"),
        "only the branch left is summarised: {asked}"
    );
    assert!(asked.ends_with("Additional focus: the comma"), "{asked}");

    let again = ask(json!({"id": "a", "type": "navigate_tree", "targetId": rows[3]["id"]}));
    assert_eq!(
        again["success"], true,
        "a summary entry now follows answer 1: {again}"
    );
    let here = ask(json!({"id": "h", "type": "navigate_tree", "targetId": rows[3]["id"]}));
    assert_eq!(here["error"], "The conversation is at that point already");
    let unknown = ask(json!({"id": "u", "type": "navigate_tree", "targetId": "nope"}));
    assert_eq!(
        unknown["error"],
        "no entry with the id nope in this session"
    );
    let missing = ask(json!({"id": "x", "type": "navigate_tree"}));
    assert_eq!(missing["success"], false);

    // Another summarised move: its summary is where the conversation goes on.
    ask(json!({"id": "s2", "type": "navigate_tree", "targetId": rows[4]["id"], "summarize": true}));
    let requests = server.requests().len();
    rpc.prompt("three");
    let sent = wire.transcript(&server.requests()[requests].body);
    assert_eq!(sent.first().map(String::as_str), Some("user: one"));
    assert_eq!(sent.last().map(String::as_str), Some("user: three"));
    assert!(
        sent.iter().any(
            |line| line.starts_with("user: The user went down another branch")
                && line.contains(&summary_text("LEFT"))
        ),
        "{sent:#?}"
    );
    rpc.finish();
    let lines = only_session_file(&sandbox);
    assert_eq!(
        lines
            .iter()
            .filter(|l| l["type"] == "branch_summary")
            .count(),
        2
    );
}

#[test]
fn queue_update_reports_what_waits_and_when_it_was_delivered() {
    let wire = Wire::Anthropic;
    let sandbox = Sandbox::new();
    let server = ModelServer::start(move |request| {
        if request.index == 0 {
            // Time for the client to queue a message during the turn.
            std::thread::sleep(std::time::Duration::from_millis(700));
        }
        Reply::Events(wire.events(&Answer::text(&["ok"])))
    });
    let mut rpc = Rpc::start(&sandbox, wire, &server);
    let (_, response) = rpc.ask(json!({"id": "p", "type": "prompt", "message": "first"}));
    assert_eq!(response["success"], true);
    let (before, steered) = rpc.ask(json!({"id": "q", "type": "steer", "message": "more"}));
    assert_eq!(steered["success"], true);
    let mut seen = before;
    loop {
        let line = next_json(&rpc.lines);
        let done = line["type"] == "agent_end";
        seen.push(line);
        if done {
            break;
        }
    }
    let updates: Vec<&Value> = seen
        .iter()
        .filter(|e| e["type"] == "queue_update")
        .collect();
    assert_eq!(
        updates,
        [
            &json!({"type":"queue_update","steering":["more"],"followUp":[]}),
            &json!({"type":"queue_update","steering":[],"followUp":[]}),
        ]
    );
    rpc.finish();
}

/// A server that reports an `n_ctx`-token window at `/props`, as
/// llama.cpp does, and answers the rest with `script`.
fn llama_cpp_server(
    n_ctx: u64,
    script: impl Fn(&Request) -> Reply + Send + Sync + 'static,
) -> ModelServer {
    ModelServer::start(move |request| {
        if request.path == "/props" {
            let props = json!({"default_generation_settings": {"n_ctx": n_ctx}, "total_slots": 1});
            return Reply::Status(200, props.to_string());
        }
        script(request)
    })
}

#[test]
fn without_a_configured_window_the_servers_props_say_when_to_compact() {
    let wire = Wire::OpenAi;
    let sandbox = Sandbox::new();
    let server = llama_cpp_server(4000, move |request| {
        if is_summary_request(wire, request) {
            return summary_reply(wire, "PROPS");
        }
        answer_with_input(wire, "ok", 3500)
    });
    let settings = json!({
        "defaultProvider": "local",
        "defaultModel": "e2e-model",
        "providers": {"local": {"api": "openai-completions", "baseUrl": wire.base_url(server.addr())}},
    });
    std::fs::write(
        sandbox.agent_dir.join("settings.json"),
        settings.to_string(),
    )
    .unwrap();
    let mut command = sandbox.bare_command();
    command.args([
        "--mode",
        "json",
        &big_prompt("first", 1200),
        &big_prompt("second", 1200),
    ]);
    let (status, stdout, stderr) = Running::spawn(command).finish();
    assert!(status.success(), "{stderr}");
    let requests = server.requests();
    assert_eq!(
        (requests[0].method.as_str(), requests[0].path.as_str()),
        ("GET", "/props")
    );
    // 3508 tokens in a 4000-token window (reserve 1000): compacted after the
    // first answer already, which the default 128000 would never do.
    let events = session_events(&json_lines(&stdout));
    assert_eq!(
        events[0],
        json!({"type":"compaction_start","reason":"threshold"})
    );
}

/// The context window is the model's: a model switch brings the new
/// model's window (it kept the first one's): configured, else asked of its
/// server, else the known table's (gpt-5's 400k, not the built-in
/// provider's fixed 128k of before).
#[test]
fn the_context_window_follows_the_model_and_its_server() {
    let wire = Wire::OpenAi;
    let sandbox = Sandbox::new();
    let server = llama_cpp_server(8192, move |_| {
        Reply::Events(wire.events(&Answer::text(&["ok"])))
    });
    sandbox.write_global_settings(&json!({"providers": {
        "big": {"baseUrl": wire.base_url(server.addr()), "contextWindow": 50000, "apiKey": "k"},
        "llama": {"baseUrl": wire.base_url(server.addr())},
    }}));
    let mut rpc = Rpc::start(&sandbox, wire, &server);
    let switch = |rpc: &mut Rpc, provider: &str, id: &str| {
        let (_, set) =
            rpc.ask(json!({"id": "s", "type": "set_model", "provider": provider, "modelId": id}));
        assert_eq!(set["success"], true, "{set}");
    };
    let window = |rpc: &mut Rpc| {
        let (_, stats) = rpc.ask(json!({"id": "st", "type": "get_session_stats"}));
        stats["data"]["contextUsage"]["contextWindow"].as_u64()
    };
    switch(&mut rpc, "big", "x");
    assert_eq!(window(&mut rpc), Some(50000), "configured");
    switch(&mut rpc, "openai", "gpt-5");
    assert_eq!(window(&mut rpc), Some(400_000), "the known table's");
    switch(&mut rpc, "llama", "y");
    wait_until("the window its server reports", || {
        window(&mut rpc) == Some(8192)
    });
    rpc.finish();
}

#[test]
fn rpc_lists_sets_and_cycles_models_from_settings_and_the_servers_list() {
    let wire = Wire::OpenAi;
    let sandbox = Sandbox::new();
    let server = ModelServer::start(move |request| {
        if request.method == "GET" && request.path == "/v1/models" {
            return Reply::Status(
                200,
                r#"{"object":"list","data":[{"id":"m1"},{"id":"qwen3:8b"}]}"#.to_owned(),
            );
        }
        Reply::Events(wire.events(&Answer::text(&["ok"])))
    });
    // `single` has no default model (a llama.cpp server serves one): its
    // server's list still names it.
    let settings = json!({"providers": {
        "local": {
            "api": "openai-completions",
            "baseUrl": wire.base_url(server.addr()),
            "defaultModel": "o3-mini",
        },
        "single": {"baseUrl": wire.base_url(server.addr())},
    }});
    std::fs::write(
        sandbox.agent_dir.join("settings.json"),
        settings.to_string(),
    )
    .unwrap();
    let mut rpc = Rpc::start(&sandbox, wire, &server);
    // Each model reasons as its own id is known to, not as its provider's
    // default model does.
    let model = |provider: &str, id: &str| json!({"id": id, "provider": provider, "api": "openai-completions", "supportsImages": provider == "openai", "reasoning": id == "o3-mini" || id == "qwen3:8b"});
    let (_, listed) = rpc.ask(json!({"id": "l", "type": "get_available_models"}));
    assert_eq!(
        listed["data"]["models"],
        json!([
            model("openai", MODEL),
            model("local", "m1"),
            model("local", "qwen3:8b"),
            model("local", "o3-mini"),
            model("openai", "gpt-4o"),
            model("single", "m1"),
            model("single", "qwen3:8b"),
        ]),
        "the current model, then each provider with a key (anthropic has none here)"
    );
    let (_, set) =
        rpc.ask(json!({"id": "s", "type": "set_model", "provider": "local", "modelId": "m1"}));
    assert_eq!(
        set,
        json!({"id":"s","type":"response","command":"set_model","success":true,"data":model("local","m1")})
    );
    rpc.prompt("hello");
    let sent = server
        .requests()
        .into_iter()
        .rev()
        .find(|r| r.method == "POST")
        .unwrap();
    assert_eq!(sent.body["model"], "m1");
    let (_, unknown) =
        rpc.ask(json!({"id": "u", "type": "set_model", "provider": "nope", "modelId": "x"}));
    assert_eq!(
        unknown,
        json!({"id":"u","type":"response","command":"set_model","success":false,"error":"Model not found: nope/x"})
    );
    // The local server lists its models: one it does not serve is refused
    // now, not by the server at the next prompt.
    let (_, unserved) =
        rpc.ask(json!({"id": "t", "type": "set_model", "provider": "local", "modelId": "m2"}));
    assert_eq!(
        unserved,
        json!({"id":"t","type":"response","command":"set_model","success":false,
            "error":"Model not found: local/m2 (local offers: m1, qwen3:8b, o3-mini)"})
    );
    let (_, cycled) = rpc.ask(json!({"id": "c", "type": "cycle_model"}));
    assert_eq!(
        cycled,
        json!({"id":"c","type":"response","command":"cycle_model","success":true,
            "data":{"model":model("local","qwen3:8b"),"thinkingLevel":"medium","isScoped":false}})
    );
    let (_, state) = rpc.ask(json!({"id": "g", "type": "get_state"}));
    assert_eq!(state["data"]["model"], model("local", "qwen3:8b"));
    rpc.finish();
}

/// While the agent works the model stays (`docs/DEVIATIONS.md` M20): a
/// change is refused with why, and taken once the run is over.
#[test]
fn the_model_is_not_switched_while_the_agent_works() {
    let wire = Wire::OpenAi;
    let sandbox = Sandbox::new();
    let server = ModelServer::start(move |request| match request.index {
        0 => Reply::Stall,
        _ => Reply::Events(wire.events(&Answer::text(&["ok"]))),
    });
    sandbox.write_global_settings(&json!({
        "providers": {"local": {"baseUrl": wire.base_url(server.addr()), "apiKey": "k"}},
    }));
    let mut rpc = Rpc::start(&sandbox, wire, &server);
    send(
        &mut rpc.stdin,
        &json!({"id": "p", "type": "prompt", "message": "hello"}),
    );
    rpc.until(|line| line["type"] == "agent_start");
    // Its request stalls at the server: aborted before it was sent, the
    // next prompt's would be the one that stalls.
    server.wait_for_requests(1, std::time::Duration::from_secs(10));
    let refused = "cannot switch models while the agent is working";
    // Refused before the endpoint is asked for its models: the listing
    // held every event, response and abort up to its timeout, for this.
    let (_, listed) =
        rpc.ask(json!({"id": "l", "type": "set_model", "provider": "local", "modelId": "m1"}));
    assert_eq!(listed["error"], refused, "{listed}");
    assert!(
        server
            .requests()
            .iter()
            .all(|request| request.method != "GET"),
        "the endpoint was asked for its models"
    );
    let (_, set) =
        rpc.ask(json!({"id": "s", "type": "set_model", "provider": "openai", "modelId": "gpt-4o"}));
    assert_eq!(
        set,
        json!({"id":"s","type":"response","command":"set_model","success":false,"error":refused})
    );
    let (_, cycled) = rpc.ask(json!({"id": "c", "type": "cycle_model"}));
    assert_eq!(cycled["error"], refused, "{cycled}");
    rpc.ask(json!({"id": "a", "type": "abort"}));
    let (_, set) = rpc
        .ask(json!({"id": "s2", "type": "set_model", "provider": "openai", "modelId": "gpt-4o"}));
    assert_eq!(set["success"], true, "{set}");
    rpc.prompt("again");
    let last = server.requests().last().unwrap().body.clone();
    assert_eq!(last["model"], "gpt-4o");
    rpc.finish();
}

#[test]
fn cycle_model_goes_through_the_models_named_by_flag_or_settings() {
    let wire = Wire::OpenAi;
    let sandbox = Sandbox::new();
    let server = ModelServer::start(move |_| Reply::Events(wire.events(&Answer::text(&["ok"]))));
    sandbox.write_global_settings(&json!({
        "enabledModels": ["openai/from-settings"],
        "providers": {"local": {"baseUrl": wire.base_url(server.addr()), "apiKey": "k"}},
    }));
    let cycled = |rpc: &mut Rpc| {
        let (_, cycled) = rpc.ask(json!({"id": "c", "type": "cycle_model"}));
        let data = &cycled["data"];
        assert_eq!(data["isScoped"], true, "{cycled}");
        format!(
            "{}/{}",
            data["model"]["provider"].as_str().unwrap(),
            data["model"]["id"].as_str().unwrap()
        )
    };
    // `--models` wins over the settings; the model started with is not in
    // the cycle, so it starts at the first name.
    let mut rpc = Rpc::start_with(&sandbox, wire, &server, &["--models", "local/a,openai/b"]);
    let names: Vec<String> = (0..3).map(|_| cycled(&mut rpc)).collect();
    assert_eq!(names, ["local/a", "openai/b", "local/a"]);
    rpc.finish();
    // A name's `:LEVEL` is the level cycling to it sets, as `--model`'s.
    let mut rpc = Rpc::start_with(
        &sandbox,
        wire,
        &server,
        &["--models", "openai/o3-mini:high,local/a:off"],
    );
    let levels: Vec<(String, Value)> = (0..2)
        .map(|_| {
            let (_, cycled) = rpc.ask(json!({"id": "c", "type": "cycle_model"}));
            let data = &cycled["data"];
            (
                format!(
                    "{}/{}",
                    data["model"]["provider"].as_str().unwrap(),
                    data["model"]["id"].as_str().unwrap()
                ),
                data["thinkingLevel"].clone(),
            )
        })
        .collect();
    assert_eq!(
        levels,
        [
            ("openai/o3-mini".to_owned(), json!("high")),
            ("local/a".to_owned(), json!("off")),
        ]
    );
    rpc.finish();

    // Without the flag, `enabledModels`: one model, reached once.
    let mut rpc = Rpc::start(&sandbox, wire, &server);
    assert_eq!(cycled(&mut rpc), "openai/from-settings");
    let (_, again) = rpc.ask(json!({"id": "c", "type": "cycle_model"}));
    assert_eq!(again["data"], Value::Null, "no other model to go to");
    rpc.finish();
}

/// The transcript line of the result of `call_id` as `request` sent it.
fn sent_result(wire: Wire, request: &Request, call_id: &str) -> String {
    let prefix = format!("tool {call_id}: ");
    wire.transcript(&request.body)
        .into_iter()
        .find(|line| line.starts_with(&prefix))
        .unwrap_or_else(|| panic!("no result of {call_id} was sent"))
}

/// What the model reads where a result was cut to fit its window.
const CUT_NOTICE: &str = "characters cut here to fit the model's context window";

/// Asserts that `result` was cut to fit its window, keeping the `first`
/// and `last` lines of the file it read.
fn assert_cut_keeping_ends(wire: Wire, result: &str, first: &str, last: &str) {
    assert!(
        result.contains(CUT_NOTICE),
        "{wire:?}: {} chars sent whole",
        result.len()
    );
    assert!(result.contains(first), "{wire:?}: the head is kept");
    assert!(result.contains(last), "{wire:?}: the tail is kept");
}

/// `count` numbered lines: `line 0001 of the NAME file`, ...
fn numbered_lines(count: usize, name: &str) -> String {
    (1..=count)
        .map(|n| format!("line {n:04} of the {name} file\n"))
        .collect()
}

/// A sandbox whose model has a 4000-token window (3000 usable), with `text`
/// in the work directory's `file`.
fn small_window_with(file: &str, text: &str) -> Sandbox {
    let sandbox = Sandbox::new();
    settings_with_window(&sandbox, 4000);
    std::fs::write(sandbox.work.join(file), text).unwrap();
    sandbox
}

/// Runs `coding-agent --mode json ARGS` in `sandbox` against `server`,
/// expects it to succeed, and returns the requests the server received.
fn run_json_ok(wire: Wire, sandbox: &Sandbox, server: &ModelServer, args: &[&str]) -> Vec<Request> {
    let mut command = sandbox.command(wire, server);
    command.args(["--mode", "json"]).args(args);
    let (status, _, stderr) = Running::spawn(command).finish();
    assert!(status.success(), "{wire:?}: {stderr}");
    server.requests()
}

/// A tool result far larger than the window is cut on its way to the model
/// (head, notice, tail; the full text in the file the notice names), while
/// the session keeps it whole (`docs/DEVIATIONS.md` S8).
#[test]
fn a_tool_result_far_larger_than_the_window_is_cut_before_it_is_sent() {
    for wire in WIRES {
        // Usable window 3000 tokens: a result is cut to 1500 (6000 chars).
        let sandbox = small_window_with("big.txt", &numbered_lines(1500, "big"));
        let server = ModelServer::only(
            wire,
            vec![
                Answer::call("call_big", "read", json!({"path": "big.txt"})),
                Answer::text(&["ok"]),
            ],
        );
        let requests = run_json_ok(wire, &sandbox, &server, &["read big.txt"]);
        let result = sent_result(wire, &requests[1], "call_big");
        assert!(result.len() < 7000, "{wire:?}: {} chars sent", result.len());
        assert_cut_keeping_ends(
            wire,
            &result,
            "line 0001 of the big file",
            "line 1500 of the big file",
        );
        let notice = format!("{CUT_NOTICE}. Full output: ");
        let at = result.find(&notice).expect("the cut notice") + notice.len();
        let path = &result[at..result[at..].find(". Read parts").unwrap() + at];
        let saved = std::fs::read_to_string(path).unwrap();
        assert!(saved.starts_with("line 0001 of the big file\n"), "{wire:?}");
        assert!(saved.contains("line 1500 of the big file"), "{wire:?}");
        // The session keeps the whole result.
        let lines = only_session_file(&sandbox);
        let kept = lines
            .iter()
            .find(|l| l["message"]["role"] == "toolResult")
            .unwrap();
        assert!(
            kept["message"]["content"][0]["text"]
                .as_str()
                .unwrap()
                .contains("line 0750 of the big file"),
            "{wire:?}"
        );
    }
}

/// A result that fits by the estimate (four characters a token) but not
/// beside what the server counted of the request before it is cut: the
/// server's count wins where it is larger (a tokenizer that splits digits
/// finely counts half as much again as the estimate). Here the read call's
/// answer reports 2,000 tokens of input, where the estimate of that request
/// is about 600; a result of 2,000 estimated tokens fits 3,000 usable tokens
/// beside the estimate, not beside the count.
#[test]
fn a_result_that_fits_by_the_estimate_but_not_by_the_servers_count_is_cut() {
    for wire in WIRES {
        let text = numbered_lines(250, "dense");
        assert!((7000..9000).contains(&text.len()), "{}", text.len());
        let sandbox = small_window_with("dense.txt", &text);
        let server = ModelServer::start(move |request| match request.index {
            0 => Reply::Events(with_input_tokens(
                wire.events(&Answer::call(
                    "call_dense",
                    "read",
                    json!({"path": "dense.txt"}),
                )),
                2000,
            )),
            _ => Reply::Events(wire.events(&Answer::text(&["ok"]))),
        });
        let requests = run_json_ok(
            wire,
            &sandbox,
            &server,
            &["--tools", "read", "read dense.txt"],
        );
        let estimate = requests[0].body.to_string().len() / 4;
        assert!(
            estimate + text.len() / 4 < 3000,
            "{wire:?}: the estimate alone ({estimate} + {}) must fit",
            text.len() / 4
        );
        let result = sent_result(wire, &requests[1], "call_dense");
        assert_cut_keeping_ends(
            wire,
            &result,
            "line 0001 of the dense file",
            "line 0250 of the dense file",
        );
    }
}

/// A result in Chinese fits by the estimate (four characters a token) but
/// holds about two and a half times the tokens: the server refuses the
/// request and says how long it was. The overflow's compaction summarises the turn and
/// the model reads the file again; this time the estimate is scaled by what
/// the refusal showed and the result is cut to fit, where before the same
/// request overflowed again and the run ended.
#[test]
fn a_result_that_overflowed_is_cut_to_fit_when_the_model_reads_it_again() {
    for wire in WIRES {
        let text: String = (1..=250)
            .map(|n| format!("第{n:04}行：这是一个用来测试上下文窗口的中文句子。\n"))
            .collect();
        let sandbox = small_window_with("wide.txt", &text);
        let refusal = match wire {
            Wire::OpenAi => {
                r#"{"error":{"code":400,"type":"exceed_context_size_error","message":"request (6800 tokens) exceeds the available context size (4000 tokens), try increasing it"}}"#
            }
            Wire::Anthropic => {
                r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 6800 tokens > 4000 maximum"}}"#
            }
        };
        let read =
            move |id: &str| wire.events(&Answer::call(id, "read", json!({"path": "wide.txt"})));
        let server = ModelServer::start(move |request| {
            if is_summary_request(wire, request) {
                return summary_reply(wire, "WIDE");
            }
            let sent = request.body.to_string();
            match request.index {
                0 => Reply::Events(read("call_wide_1")),
                3 => Reply::Events(read("call_wide_2")),
                _ if sent.contains("第0125行") && !sent.contains(CUT_NOTICE) => {
                    Reply::Status(400, refusal.to_owned())
                }
                _ => Reply::Events(wire.events(&Answer::text(&["ok"]))),
            }
        });
        let requests = run_json_ok(
            wire,
            &sandbox,
            &server,
            &["--tools", "read", "read wide.txt"],
        );
        assert_eq!(requests.len(), 5, "{wire:?}");
        let first = sent_result(wire, &requests[1], "call_wide_1");
        assert!(
            !first.contains(CUT_NOTICE),
            "{wire:?}: it fits by the estimate"
        );
        assert!(is_summary_request(wire, &requests[2]), "{wire:?}");
        let again = sent_result(wire, &requests[4], "call_wide_2");
        assert_cut_keeping_ends(wire, &again, "第0001行", "第0250行");
    }
}

/// The system prompt and the seven tools' definitions (about 1,700 tokens)
/// go with every request. A result of about 2,700 tokens fits a 4000 window
/// less its reserve (3000) beside the messages alone, but not beside them:
/// sent whole, the request would pass the window. It is cut.
#[test]
fn a_result_that_fits_only_without_the_system_prompt_and_tools_is_cut() {
    let wire = Wire::OpenAi;
    let sandbox = small_window_with("mid.txt", &numbered_lines(400, "mid"));
    let server = ModelServer::only(
        wire,
        vec![
            Answer::call("call_mid", "read", json!({"path": "mid.txt"})),
            Answer::text(&["ok"]),
        ],
    );
    let requests = run_json_ok(wire, &sandbox, &server, &["read mid.txt"]);
    let body = requests[1].body.to_string();
    assert!(
        body.len() / 4 < 4000,
        "the request is about {} tokens, past the window",
        body.len() / 4
    );
    let result = sent_result(wire, &requests[1], "call_mid");
    assert_cut_keeping_ends(
        wire,
        &result,
        "line 0001 of the mid file",
        "line 0400 of the mid file",
    );
}

/// `ca < huge.txt "summarise the text above"` overflows: the compaction
/// summarises the one message, far longer than a summary request holds,
/// and the request must still hold the question at its end. The message
/// was cut keeping only its beginning, so neither the summariser nor the
/// model answering after it ever saw what the user asked.
#[test]
fn an_overflow_on_one_huge_message_summarises_it_with_the_question_at_its_end() {
    use std::io::Write;
    let wire = Wire::OpenAi;
    let sandbox = Sandbox::new();
    settings_with_window(&sandbox, 4000);
    let server = ModelServer::start(move |request| {
        if is_summary_request(wire, request) {
            return summary_reply(wire, "HUGE");
        }
        match request.index {
            0 => Reply::Status(400, OVERFLOWS[2].to_owned()),
            _ => Reply::Events(wire.events(&Answer::text(&["answered"]))),
        }
    });
    let mut command = sandbox.command(wire, &server);
    command.args(["--mode", "json", "summarise the text above"]);
    let mut running = Running::spawn_piped(command);
    let mut stdin = running.take_stdin();
    stdin
        .write_all(big_prompt("piped", 20_000).as_bytes())
        .unwrap();
    drop(stdin);
    let (status, _, stderr) = running.finish();
    assert!(status.success(), "{stderr}");
    let requests = server.requests();
    let asked = &wire.transcript(&requests[1].body)[0];
    assert!(is_summary_request(wire, &requests[1]), "{stderr}");
    assert!(asked.contains("[User]: piped word"), "{asked}");
    assert!(asked.contains(" characters truncated]"), "{asked}");
    assert!(
        asked.contains("summarise the text above\n</conversation>"),
        "{asked}"
    );
}

/// An empty answer cut at the output limit from a full window: how some
/// OpenAI-compatible servers say the context overflowed.
fn length_overflow(input: u64) -> Reply {
    let events = with_input_tokens(Wire::OpenAi.events(&Answer::text(&[])), input);
    Reply::Events(
        events
            .into_iter()
            .map(|event| {
                event
                    .replace("\"finish_reason\":\"stop\"", "\"finish_reason\":\"length\"")
                    .replace("\"completion_tokens\":8", "\"completion_tokens\":0")
            })
            .collect(),
    )
}

/// A context overflow said by an empty `length` answer, with nothing to
/// compact: the run fails as after a 400 "prompt is too long" (exit status
/// 1, in print and JSON modes), and nothing blames a thinking level that is
/// off. It exited 0 and said the answer "was all thinking".
#[test]
fn an_overflow_said_by_a_length_answer_that_cannot_be_compacted_fails_the_run() {
    for mode in [["-p"].as_slice(), ["--mode", "json"].as_slice()] {
        let sandbox = Sandbox::new();
        settings_with_window(&sandbox, 4000);
        let server = ModelServer::start(|_| length_overflow(3990));
        let mut command = sandbox.command(Wire::OpenAi, &server);
        command.args(mode).args(["hello", "second"]);
        let (status, _, stderr) = Running::spawn(command).finish();
        assert_eq!(status.code(), Some(1), "{mode:?}: {stderr}");
        assert!(
            stderr.contains("Context overflow recovery failed: Nothing to compact"),
            "{stderr}"
        );
        assert!(!stderr.contains("thinking"), "{stderr}");
        assert_eq!(server.requests().len(), 1, "the second prompt is not sent");
    }
}
