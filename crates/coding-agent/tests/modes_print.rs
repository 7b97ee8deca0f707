//! Print mode (`-p`) through the library: the final answer on stdout, errors
//! on stderr with exit 1, Ctrl-C aborting the run (tool processes killed,
//! session saved) with exit 130.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod modes_support;

use agent_ai::testing::ScriptedResponse;
use coding_agent::modes::print::EXIT_INTERRUPTED;
use coding_agent::modes::{PrintFormat, run_print};
use modes_support::{Fixture, call, process_alive, reply, text, wait_for_pid};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// (exit status, stdout, stderr)
async fn print(
    session: &coding_agent::app::AgentSession,
    prompts: &[&str],
    interrupt: &CancellationToken,
) -> (u8, String, String) {
    let prompts: Vec<_> = prompts
        .iter()
        .map(|&p| coding_agent::app::AgentSession::user_message(p, Vec::new()))
        .collect();
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let status = run_print(
        session,
        &prompts,
        PrintFormat::Text,
        &mut out,
        &mut err,
        interrupt,
    )
    .await
    .unwrap();
    (
        status,
        String::from_utf8(out).unwrap(),
        String::from_utf8(err).unwrap(),
    )
}

#[tokio::test]
async fn print_runs_the_tools_and_prints_the_final_text_blocks() {
    let fixture = Fixture::new();
    let (session, provider) = fixture.session(
        &["ls"],
        vec![
            reply(vec![text("Looking."), call("c1", "ls", json!({}))]),
            reply(vec![text("There is a.txt."), text("Nothing else.")]),
        ],
    );
    assert_eq!(
        print(&session, &["what is here?"], &CancellationToken::new()).await,
        (
            0,
            "There is a.txt.\nNothing else.\n".to_owned(),
            String::new()
        )
    );
    // The model saw the tool's result.
    let second = &provider.requests()[1];
    assert_eq!(
        serde_json::to_value(&second.messages[2]).unwrap()["content"],
        json!([{"type": "text", "text": "a.txt"}])
    );
    let roles: Vec<Value> = fixture
        .session_lines()
        .iter()
        .filter(|entry| entry["type"] == "message")
        .map(|entry| entry["message"]["role"].clone())
        .collect();
    assert_eq!(roles, ["user", "assistant", "toolResult", "assistant"]);
}

#[tokio::test]
async fn several_prompts_run_in_order_and_the_last_answer_is_printed() {
    let fixture = Fixture::new();
    let (session, provider) = fixture.session(
        &[],
        vec![reply(vec![text("first")]), reply(vec![text("second")])],
    );
    assert_eq!(
        print(&session, &["one", "two"], &CancellationToken::new()).await,
        (0, "second\n".to_owned(), String::new())
    );
    assert_eq!(provider.requests()[1].messages.len(), 3);
}

/// The prompts of a command line are made at start; each is stamped when
/// it is sent, after the runs before it (the session file and an export
/// show when it was asked).
#[tokio::test]
async fn each_prompt_is_stamped_when_it_is_sent() {
    let fixture = Fixture::new();
    let (session, _) = fixture.session(
        &[],
        vec![reply(vec![text("first")]), reply(vec![text("second")])],
    );
    let prompts: Vec<_> = ["one", "two"]
        .map(|p| coding_agent::app::AgentSession::user_message(p, Vec::new()))
        .to_vec();
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    let started = agent_ai::message::now_millis();
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let interrupt = CancellationToken::new();
    let status = run_print(
        &session,
        &prompts,
        PrintFormat::Text,
        &mut out,
        &mut err,
        &interrupt,
    );
    assert_eq!(status.await.unwrap(), 0);
    let stamps: Vec<u64> = fixture
        .session_lines()
        .iter()
        .filter(|entry| entry["type"] == "message" && entry["message"]["role"] == "user")
        .map(|entry| entry["message"]["timestamp"].as_u64().unwrap())
        .collect();
    assert_eq!(stamps.len(), 2);
    assert!(
        stamps.iter().all(|&stamp| stamp >= started),
        "{stamps:?} before {started}"
    );
}

#[tokio::test]
async fn a_run_that_ends_in_error_prints_the_error_and_exits_1() {
    let fixture = Fixture::new();
    let (session, _provider) = fixture.session(&[], Vec::new());
    assert_eq!(
        print(&session, &["hello"], &CancellationToken::new()).await,
        (
            1,
            String::new(),
            "Scripted provider has no more responses\n".to_owned()
        )
    );
}

#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_aborts_the_run_kills_the_tool_saves_the_session_and_exits_130() {
    let fixture = Fixture::new();
    let pid_file = fixture.cwd.join("pid");
    let (session, _provider) = fixture.session(
        &["bash"],
        vec![
            reply(vec![call(
                "c1",
                "bash",
                json!({"command": "echo $$ > pid; exec sleep 30"}),
            )]),
            ScriptedResponse::Hang,
        ],
    );
    let interrupt = CancellationToken::new();
    let pressed = tokio::spawn({
        let interrupt = interrupt.clone();
        let pid_file = pid_file.clone();
        async move {
            let pid = wait_for_pid(&pid_file).await;
            interrupt.cancel();
            pid
        }
    });
    let outcome = print(&session, &["sleep please"], &interrupt).await;
    let pid = pressed.await.unwrap();
    assert_eq!(
        outcome,
        (
            EXIT_INTERRUPTED,
            String::new(),
            "Request was aborted\n".to_owned()
        )
    );
    assert!(!process_alive(pid), "the tool's process {pid} survived");

    let messages: Vec<Value> = fixture
        .session_lines()
        .iter()
        .filter(|entry| entry["type"] == "message")
        .map(|entry| {
            let m = &entry["message"];
            json!([m["role"], m.get("stopReason"), m["content"][0].get("text")])
        })
        .collect();
    assert_eq!(
        messages,
        [
            json!(["user", null, "sleep please"]),
            json!(["assistant", "toolUse", null]),
            json!(["toolResult", null, "Command aborted"]),
            json!(["assistant", "aborted", null]),
        ]
    );
}
