//! RPC mode over in-memory stdin/stdout, with a scripted model: responses in
//! Pi's shape, events streamed after `prompt`, `abort` killing a slow bash
//! tool, user `bash`, queueing while streaming, framing, unknown commands.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod modes_support;

use agent_ai::AssistantContent;
use agent_ai::testing::ScriptedResponse;
use coding_agent::app::AgentSession;
use coding_agent::modes::{RpcEnd, run_rpc, run_rpc_until};
use modes_support::{
    Fixture, PATIENCE, call, normalized, process_alive, reply, text, wait_for_pid,
};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines};
use tokio::task::JoinHandle;

/// The client's side of an RPC session.
struct Client {
    stdin: Option<DuplexStream>,
    stdout: Lines<BufReader<DuplexStream>>,
    server: JoinHandle<std::io::Result<()>>,
}

impl Client {
    fn start(session: AgentSession) -> Self {
        Self::start_writing_to(session, |out| out)
    }

    /// [`Client::start`] with the server's output going through `wrap`.
    fn start_writing_to<W: tokio::io::AsyncWrite + Unpin + Send + 'static>(
        session: AgentSession,
        wrap: impl FnOnce(DuplexStream) -> W,
    ) -> Self {
        let (stdin, server_in) = tokio::io::duplex(1 << 20);
        let (server_out, stdout) = tokio::io::duplex(1 << 20);
        let server = tokio::spawn(run_rpc(session, server_in, wrap(server_out)));
        Client {
            stdin: Some(stdin),
            stdout: BufReader::new(stdout).lines(),
            server,
        }
    }

    async fn send_raw(&mut self, bytes: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(bytes.as_bytes()).await.unwrap();
        stdin.flush().await.unwrap();
    }

    async fn send(&mut self, command: Value) {
        self.send_raw(&format!("{command}\n")).await;
    }

    /// The next line; fails the test when none comes within [`PATIENCE`].
    async fn line(&mut self) -> String {
        tokio::time::timeout(PATIENCE, self.stdout.next_line())
            .await
            .unwrap_or_else(|_| panic!("no line from the RPC mode within {PATIENCE:?}"))
            .unwrap()
            .expect("stdout ended")
    }

    async fn next(&mut self) -> Value {
        serde_json::from_str(&self.line().await).unwrap()
    }

    /// Lines up to and including the first that `stop` accepts.
    async fn until(&mut self, stop: impl Fn(&Value) -> bool) -> Vec<Value> {
        let mut seen = Vec::new();
        loop {
            let value = self.next().await;
            let done = stop(&value);
            seen.push(value);
            if done {
                return seen;
            }
        }
    }

    /// Sends `command` and returns its response (events before it are skipped).
    async fn call(&mut self, command: Value) -> Value {
        let id = command["id"].clone();
        self.send(command).await;
        self.until(|v| v["type"] == "response" && v["id"] == id)
            .await
            .pop()
            .unwrap()
    }

    /// Closes stdin and waits for the server to finish; returns what it still wrote.
    /// Sends the prompt `sleep` to a [`sleeping_session`] and waits for its
    /// bash call to start; returns the call's pid.
    async fn prompt_sleeping(&mut self, fixture: &Fixture) -> i32 {
        self.send(json!({"id": 1, "type": "prompt", "message": "sleep"}))
            .await;
        wait_for_pid(&fixture.cwd.join("pid")).await
    }

    async fn finish(mut self) -> Vec<String> {
        drop(self.stdin.take());
        self.server.await.unwrap().unwrap();
        let mut rest = Vec::new();
        while let Some(line) = self.stdout.next_line().await.unwrap() {
            rest.push(line);
        }
        rest
    }
}

fn is_type(kind: &'static str) -> impl Fn(&Value) -> bool {
    move |v| v["type"] == kind
}

/// A session with bash whose model first calls it to write its pid to
/// `pid` and sleep 30 s (a run that goes on until it is stopped), then
/// answers `after`.
fn sleeping_session(
    fixture: &Fixture,
    after: Vec<ScriptedResponse>,
) -> (AgentSession, agent_ai::ScriptedProvider) {
    let sleep = reply(vec![call(
        "c1",
        "bash",
        json!({"command": "echo $$ > pid; exec sleep 30"}),
    )]);
    fixture.session(&["bash"], [vec![sleep], after].concat())
}

fn types(lines: &[Value]) -> Vec<String> {
    lines
        .iter()
        .map(|v| v["type"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn prompt_answers_at_once_then_streams_events_and_the_state_follows() {
    let fixture = Fixture::new();
    let (session, _provider) = fixture.session(
        &["ls"],
        vec![
            reply(vec![call("c1", "ls", json!({}))]),
            reply(vec![text("  Only a.txt.  ")]),
        ],
    );
    let mut client = Client::start(session);
    client
        .send(json!({"id": "p1", "type": "prompt", "message": "list"}))
        .await;
    assert_eq!(
        client.line().await,
        r#"{"id":"p1","type":"response","command":"prompt","success":true}"#
    );
    let events = client.until(is_type("agent_end")).await;
    assert_eq!(
        types(&events),
        [
            "agent_start",
            "turn_start",
            "message_start",
            "message_end",
            "message_start",
            "message_update",
            "message_update",
            "message_update",
            "message_end",
            "tool_execution_start",
            "tool_execution_end",
            "message_start",
            "message_end",
            "turn_end",
            "turn_start",
            "message_start",
            "message_update",
            "message_update",
            "message_update",
            "message_end",
            "turn_end",
            "agent_end",
        ]
    );
    assert!(events.iter().all(|e| e.get("id").is_none()));

    let messages = client.call(json!({"id": 2, "type": "get_messages"})).await;
    let summary: Vec<Value> = messages["data"]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            json!([
                m["role"],
                m["content"][0]["type"],
                m["content"][0].get("text")
            ])
        })
        .collect();
    assert_eq!(
        (&messages["command"], &messages["success"], summary),
        (
            &json!("get_messages"),
            &json!(true),
            vec![
                json!(["user", "text", "list"]),
                json!(["assistant", "toolCall", null]),
                json!(["toolResult", "text", "a.txt"]),
                json!(["assistant", "text", "  Only a.txt.  "]),
            ]
        )
    );

    assert_eq!(
        client
            .call(json!({"id": "t", "type": "get_last_assistant_text"}))
            .await,
        json!({"id": "t", "type": "response", "command": "get_last_assistant_text", "success": true,
               "data": {"text": "Only a.txt."}})
    );

    let state = client.call(json!({"id": "s", "type": "get_state"})).await;
    let data = &state["data"];
    assert_eq!(
        data.as_object().unwrap().keys().collect::<Vec<_>>(),
        [
            "model",
            "thinkingLevel",
            "isStreaming",
            "isCompacting",
            "steeringMode",
            "followUpMode",
            "sessionFile",
            "sessionId",
            "autoCompactionEnabled",
            "messageCount",
            "pendingMessageCount"
        ]
    );
    assert_eq!(
        (
            &data["model"],
            &data["isStreaming"],
            &data["steeringMode"],
            &data["messageCount"],
            &data["pendingMessageCount"]
        ),
        (
            &json!({"id": "scripted", "provider": "scripted", "api": "scripted", "supportsImages": false, "reasoning": false}),
            &json!(false),
            &json!("one-at-a-time"),
            &json!(4),
            &json!(0)
        )
    );
    let session_file = data["sessionFile"].as_str().unwrap();
    assert!(
        session_file.starts_with(fixture.sessions.to_str().unwrap())
            && session_file.ends_with(&format!("_{}.jsonl", data["sessionId"].as_str().unwrap())),
        "{session_file}"
    );
    assert_eq!(client.finish().await, Vec::<String>::new());
    // Every message was saved as it completed (after the header and the
    // thinking level).
    assert_eq!(fixture.session_lines().len(), 6);
}

#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn abort_during_a_slow_bash_tool_ends_the_run_and_leaves_no_process() {
    let fixture = Fixture::new();
    let (session, _provider) = sleeping_session(
        &fixture,
        vec![reply(vec![text("never sent: the run is aborted")])],
    );
    let mut client = Client::start(session);
    let pid = client.prompt_sleeping(&fixture).await;
    client.send(json!({"id": 2, "type": "abort"})).await;
    let lines = client
        .until(|v| v["type"] == "response" && v["id"] == 2)
        .await;
    assert!(!process_alive(pid), "the tool's process {pid} survived");

    let tool_end = lines
        .iter()
        .find(|v| v["type"] == "tool_execution_end")
        .unwrap();
    assert_eq!(
        tool_end,
        &json!({"type": "tool_execution_end", "toolCallId": "c1", "toolName": "bash",
                "result": {"content": [{"type": "text", "text": "Command aborted"}],
                           "details": {"ended": "aborted"}},
                "isError": true})
    );
    let tail: Vec<String> = types(&lines).into_iter().rev().take(4).collect();
    assert_eq!(tail, ["response", "agent_end", "turn_end", "message_end"]);
    let last_answer = &lines[lines.len() - 3]["message"];
    assert_eq!(
        (&last_answer["stopReason"], &last_answer["errorMessage"]),
        (&json!("aborted"), &json!("Request was aborted"))
    );
    assert_eq!(
        lines.last().unwrap(),
        &json!({"id": 2, "type": "response", "command": "abort", "success": true})
    );
    let state = client.call(json!({"id": 3, "type": "get_state"})).await;
    assert_eq!(state["data"]["isStreaming"], false);
    client.finish().await;
}

/// A model that streams a long answer ([`CHATTY_DELTAS`] deltas of ten
/// characters, one a millisecond), and stops when cancelled.
struct Chatty;

const CHATTY_DELTAS: usize = 2_000;

impl agent_ai::Provider for Chatty {
    fn stream(
        &self,
        model: &agent_ai::Model,
        _context: &agent_ai::Context,
        cancel: tokio_util::sync::CancellationToken,
    ) -> agent_ai::AssistantStream {
        use agent_ai::{AssistantMessageEvent as Event, StopReason};
        use futures::StreamExt;
        let mut partial = std::sync::Arc::new(agent_ai::AssistantMessage::empty(model));
        std::sync::Arc::make_mut(&mut partial)
            .content
            .push(text(""));
        let start = [
            Event::Start {
                partial: partial.clone(),
            },
            Event::TextStart {
                content_index: 0,
                partial: partial.clone(),
            },
        ];
        let deltas = futures::stream::unfold(Some((partial, 0)), move |state| {
            let cancel = cancel.clone();
            async move {
                let (mut partial, sent) = state?;
                tokio::time::sleep(std::time::Duration::from_millis(1)).await;
                let message = std::sync::Arc::make_mut(&mut partial);
                if cancel.is_cancelled() {
                    message.stop_reason = StopReason::Aborted;
                    let error = message.clone();
                    return Some((
                        Event::Error {
                            reason: error.stop_reason,
                            error,
                        },
                        None,
                    ));
                }
                if sent == CHATTY_DELTAS {
                    let message = message.clone();
                    return Some((
                        Event::Done {
                            reason: message.stop_reason,
                            message,
                        },
                        None,
                    ));
                }
                if let Some(AssistantContent::Text(block)) = message.content.first_mut() {
                    block.text.push_str("0123456789");
                }
                let delta = Event::TextDelta {
                    content_index: 0,
                    delta: "0123456789".into(),
                    partial: partial.clone(),
                };
                Some((delta, Some((partial, sent + 1))))
            }
        });
        futures::stream::iter(start).chain(deltas).boxed()
    }
}

/// Output that takes [`SLOW_WRITE`] for each write: a client reading slower
/// than the model writes.
struct SlowWriter {
    inner: DuplexStream,
    wait: Option<std::pin::Pin<Box<tokio::time::Sleep>>>,
}

const SLOW_WRITE: std::time::Duration = std::time::Duration::from_millis(2);

impl tokio::io::AsyncWrite for SlowWriter {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        let wait = self
            .wait
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(SLOW_WRITE)));
        std::task::ready!(wait.as_mut().poll(cx));
        self.wait = None;
        std::pin::Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// A client that reads slower than a long answer streams always finds an
/// update waiting to be written: its `abort` was read only once the whole
/// answer had been sent (a 1 MB answer, 2.45 GB of output, "stop").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_is_read_while_a_long_answer_streams() {
    let fixture = Fixture::new();
    let session = fixture.session_answered_by(std::sync::Arc::new(Chatty));
    let mut client = Client::start_writing_to(session, |inner| SlowWriter { inner, wait: None });
    client
        .send(json!({"id": 1, "type": "prompt", "message": "talk"}))
        .await;
    client
        .until(|v| v["assistantMessageEvent"]["type"] == "text_delta")
        .await;
    client.send(json!({"id": 2, "type": "abort"})).await;
    let lines = client.until(|v| v["type"] == "message_end").await;
    let answer = &lines.last().unwrap()["message"];
    assert_eq!(answer["stopReason"], "aborted");
    assert!(
        answer["content"][0]["text"].as_str().unwrap().len() < CHATTY_DELTAS * 10,
        "the whole answer was streamed before the abort was read"
    );
    client.until(|v| v["id"] == 2).await;
    client.finish().await;
}

/// An editor that crashed closes the output: the run it started went on
/// unseen (a 40 s tool to its end), was noticed at the next write, and the
/// process then exited with the session left at the tool call. Now the run
/// is aborted and saved, its tool killed, and the mode ends.
#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reader_gone_aborts_the_run_and_ends_the_mode() {
    let fixture = Fixture::new();
    let (session, _provider) = sleeping_session(
        &fixture,
        vec![reply(vec![text("never sent: the run is aborted")])],
    );
    let (mut stdin, server_in) = tokio::io::duplex(1 << 20);
    let (server_out, stdout) = tokio::io::duplex(1 << 20);
    let server = tokio::spawn(async move {
        let stop = tokio_util::sync::CancellationToken::new();
        run_rpc_until(session, server_in, server_out, &stop).await
    });
    stdin
        .write_all(b"{\"id\":1,\"type\":\"prompt\",\"message\":\"sleep\"}\n")
        .await
        .unwrap();
    let pid = wait_for_pid(&fixture.cwd.join("pid")).await;
    drop(stdout);
    stdin
        .write_all(b"{\"id\":2,\"type\":\"get_state\"}\n")
        .await
        .unwrap();
    let end = tokio::time::timeout(PATIENCE, server)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(end.unwrap(), RpcEnd::ReaderGone);
    assert!(!process_alive(pid), "the tool's process {pid} survived");
    let saved = fixture.session_lines();
    let result = saved
        .iter()
        .find(|line| line["message"]["role"] == "toolResult")
        .expect("the tool's result is saved");
    assert_eq!(result["message"]["content"][0]["text"], "Command aborted");
}

/// `compact` aborts the prompt that runs; what was queued for that prompt
/// stays queued, as after an `abort`. It went out on its own once the
/// compaction ended, even one that failed.
#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_compaction_that_aborts_a_prompt_leaves_its_queue_as_an_abort_does() {
    let fixture = Fixture::new();
    let (session, provider) = sleeping_session(
        &fixture,
        vec![reply(vec![text("never sent: nothing runs the queue")])],
    );
    let mut client = Client::start(session);
    client.prompt_sleeping(&fixture).await;
    client
        .call(json!({"id": 2, "type": "follow_up", "message": "for the prompt"}))
        .await;
    let compacted = client.call(json!({"id": 3, "type": "compact"})).await;
    assert_eq!(compacted["success"], false, "{compacted}");
    let state = client.call(json!({"id": 4, "type": "get_state"})).await;
    assert_eq!(
        (
            &state["data"]["isStreaming"],
            &state["data"]["pendingMessageCount"]
        ),
        (&json!(false), &json!(1))
    );
    let rest = client.finish().await;
    assert!(
        rest.iter().all(|line| !line.contains("agent_start")),
        "{rest:?}"
    );
    // The compaction's summary request may follow the prompt's; none
    // carries the queued message.
    let sent = format!("{:?}", provider.requests());
    assert!(
        !sent.contains("for the prompt"),
        "the queued message was sent"
    );
}

/// A move in the tree to an entry there is not is refused before the run
/// is stopped for it, as a fork to one is: it aborted the prompt first.
#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_move_to_no_entry_leaves_the_run_going() {
    let fixture = Fixture::new();
    let (session, _provider) = sleeping_session(&fixture, Vec::new());
    let mut client = Client::start(session);
    let pid = client.prompt_sleeping(&fixture).await;
    let moved = client
        .call(json!({"id": 2, "type": "navigate_tree", "targetId": "nope"}))
        .await;
    assert_eq!(moved["error"], "no entry with the id nope in this session");
    let state = client.call(json!({"id": 3, "type": "get_state"})).await;
    assert_eq!(state["data"]["isStreaming"], true);
    assert!(process_alive(pid), "the tool was stopped");
    client.call(json!({"id": 4, "type": "abort"})).await;
    client.finish().await;
}

#[tokio::test]
async fn prompt_while_streaming_needs_a_streaming_behavior() {
    let fixture = Fixture::new();
    let (session, provider) = fixture.session(
        &[],
        vec![ScriptedResponse::Hang, reply(vec![text("after steering")])],
    );
    let mut client = Client::start(session);
    client
        .send(json!({"id": 1, "type": "prompt", "message": "wait"}))
        .await;
    client.until(is_type("message_start")).await; // the prompt's
    assert_eq!(
        client
            .call(json!({"id": 2, "type": "prompt", "message": "more"}))
            .await,
        json!({"id": 2, "type": "response", "command": "prompt", "success": false,
               "error": "Agent is already processing. Specify streamingBehavior ('steer' or 'followUp') to queue the message."})
    );
    assert_eq!(
        client
            .call(
                json!({"id": 2, "type": "prompt", "message": "more", "streamingBehavior": "later"})
            )
            .await,
        json!({"id": 2, "type": "response", "command": "prompt", "success": false,
               "error": "Invalid streamingBehavior \"later\": expected \"steer\" or \"followUp\""})
    );
    assert_eq!(
        client
            .call(json!({"id": 3, "type": "prompt", "message": "more", "streamingBehavior": "followUp"}))
            .await,
        json!({"id": 3, "type": "response", "command": "prompt", "success": true})
    );
    let state = client.call(json!({"id": 4, "type": "get_state"})).await;
    assert_eq!(
        (
            &state["data"]["isStreaming"],
            &state["data"]["pendingMessageCount"]
        ),
        (&json!(true), &json!(1))
    );
    client.call(json!({"id": 5, "type": "abort"})).await;
    // The aborted run did not take the follow-up; it is still queued.
    let state = client.call(json!({"id": 6, "type": "get_state"})).await;
    assert_eq!(state["data"]["pendingMessageCount"], 1);
    assert_eq!(provider.requests().len(), 1);
    client.finish().await;
}

/// A 1x1 PNG, base64.
fn png_base64() -> String {
    use base64::Engine;
    let mut png = Vec::new();
    image::RgbImage::new(1, 1)
        .write_to(&mut std::io::Cursor::new(&mut png), image::ImageFormat::Png)
        .unwrap();
    base64::engine::general_purpose::STANDARD.encode(png)
}

/// A prompt's images are checked as `read` checks an image file: one a
/// provider would refuse gets an error naming it and why, and nothing is
/// sent. Bad base64 was sent with every later request (a real API answers
/// 400: the session was stuck), an image without its type was dropped
/// without a word, and `images` that were no list were ignored.
#[tokio::test]
async fn a_prompt_with_an_image_a_provider_would_refuse_is_refused_naming_it() {
    let fixture = Fixture::new();
    let (session, provider) = fixture.session(&[], vec![reply(vec![text("a dot")])]);
    let mut client = Client::start(session);
    let png = png_base64();
    let image = |data: &str, mime: &str| json!({"type": "image", "data": data, "mimeType": mime});
    let cases = [
        (
            json!([image("notbase64!!!", "image/png")]),
            "image 1 (image/png) cannot be sent: it is not valid base64",
        ),
        (
            json!([image(&png, "image/png"), image("aGVsbG8=", "image/png")]),
            "image 2 (image/png) cannot be sent: it is not a PNG, JPEG, GIF or WebP image",
        ),
        (
            json!([image("iVBORw0KGgo=", "image/png")]),
            "image 1 (image/png) cannot be sent: it cannot be decoded",
        ),
        (
            json!([{"type": "image", "mimeType": "image/png"}]),
            "image 1 (image/png) cannot be sent: it has no \"data\" (the image in base64)",
        ),
        (
            json!([{"type": "image", "data": 5, "mimeType": "image/png"}]),
            "image 1 (image/png) cannot be sent: its \"data\" must be a string (the image in base64)",
        ),
        (
            json!("notalist"),
            "Invalid command: \"images\" must be a list of images",
        ),
    ];
    for (id, (images, error)) in cases.into_iter().enumerate() {
        for kind in ["prompt", "steer", "follow_up"] {
            let response = client
                .call(json!({"id": id, "type": kind, "message": "see", "images": images}))
                .await;
            assert_eq!(response["success"], false, "{kind} {response}");
            let said = response["error"].as_str().unwrap();
            assert!(said.starts_with(error), "{kind}: {said}");
        }
    }
    let state = client.call(json!({"id": "s", "type": "get_state"})).await;
    assert_eq!(state["data"]["pendingMessageCount"], 0, "{state}");
    assert_eq!(provider.requests().len(), 0);

    // A PNG said to be a GIF, and one without its type, go as the PNGs
    // their bytes are.
    let images = json!([image(&png, "image/gif"), {"type": "image", "data": png}]);
    client
        .send(json!({"id": "p", "type": "prompt", "message": "see", "images": images}))
        .await;
    client.until(is_type("agent_end")).await;
    let messages = client
        .call(json!({"id": "m", "type": "get_messages"}))
        .await;
    let sent: Vec<&Value> = messages["data"]["messages"][0]["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|block| block["type"] == "image")
        .collect();
    assert_eq!(sent, [&image(&png, "image/png"), &image(&png, "image/png")]);
    assert_eq!(provider.requests().len(), 1);
    client.finish().await;
}

#[tokio::test]
async fn user_bash_returns_pi_bash_result_and_joins_the_conversation() {
    let fixture = Fixture::new();
    let (session, provider) = fixture.session(&[], vec![reply(vec![text("seen")])]);
    let mut client = Client::start(session);
    assert_eq!(
        client
            .call(json!({"id": "b", "type": "bash", "command": "echo hello; exit 3"}))
            .await,
        json!({"id": "b", "type": "response", "command": "bash", "success": true,
               "data": {"output": "hello\n", "exitCode": 3, "cancelled": false, "truncated": false}})
    );
    client
        .send(json!({"id": "p", "type": "prompt", "message": "what happened?"}))
        .await;
    client.until(is_type("agent_end")).await;
    let sent = serde_json::to_value(&provider.requests()[0].messages).unwrap();
    assert_eq!(
        normalized(sent),
        json!([
            {"role": "user", "content": [{"type": "text",
              "text": "Ran `echo hello; exit 3`\n```\nhello\n\n```\n\nCommand exited with code 3"}], "timestamp": 0},
            {"role": "user", "content": [{"type": "text", "text": "what happened?"}], "timestamp": 0},
        ])
    );
    // Pi counts the run as a message, not as one the user wrote.
    let stats = client
        .call(json!({"id": "s", "type": "get_session_stats"}))
        .await;
    assert_eq!(
        (
            &stats["data"]["userMessages"],
            &stats["data"]["totalMessages"]
        ),
        (&json!(1), &json!(3))
    );
    client.finish().await;
    let stored = &fixture.session_lines()[2]["message"];
    assert_eq!(
        normalized(stored.clone()),
        json!({"role": "bashExecution", "command": "echo hello; exit 3", "output": "hello\n",
               "exitCode": 3, "cancelled": false, "truncated": false, "timestamp": 0})
    );
}

/// A `bash` command of nothing is refused (`docs/DEVIATIONS.md` M19). It
/// ran and left an empty `bashExecution` in the session, which the model
/// was sent with the next prompt.
#[tokio::test]
async fn an_empty_user_bash_command_is_refused_and_not_recorded() {
    let fixture = Fixture::new();
    let (session, provider) = fixture.session(&[], vec![reply(vec![text("seen")])]);
    let mut client = Client::start(session);
    for command in ["", "  \t"] {
        assert_eq!(
            client
                .call(json!({"id": "b", "type": "bash", "command": command}))
                .await,
            json!({"id": "b", "type": "response", "command": "bash", "success": false,
                   "error": "Invalid bash command: command cannot be empty"})
        );
    }
    client
        .send(json!({"id": "p", "type": "prompt", "message": "hi"}))
        .await;
    client.until(is_type("agent_end")).await;
    client.finish().await;
    let sent = serde_json::to_value(&provider.requests()[0].messages).unwrap();
    assert_eq!(
        normalized(sent),
        json!([{"role": "user", "content": [{"type": "text", "text": "hi"}], "timestamp": 0}])
    );
    let roles: Vec<Value> = fixture
        .session_lines()
        .iter()
        .map(|line| line["message"]["role"].clone())
        .collect();
    assert!(!roles.contains(&json!("bashExecution")), "{roles:?}");
}

#[tokio::test]
async fn abort_bash_cancels_a_running_user_command() {
    let fixture = Fixture::new();
    let (session, _provider) = fixture.session(&[], Vec::new());
    let mut client = Client::start(session);
    client
        .send(json!({"id": 1, "type": "bash", "command": "echo $$ > pid; exec sleep 30"}))
        .await;
    let pid = wait_for_pid(&fixture.cwd.join("pid")).await;
    assert_eq!(
        client.call(json!({"id": 2, "type": "abort_bash"})).await,
        json!({"id": 2, "type": "response", "command": "abort_bash", "success": true})
    );
    assert_eq!(
        client.until(|v| v["id"] == 1).await.pop().unwrap(),
        json!({"id": 1, "type": "response", "command": "bash", "success": true,
               "data": {"output": "", "cancelled": true, "truncated": false}})
    );
    assert!(!process_alive(pid));
    client.finish().await;
}

#[tokio::test]
async fn unknown_and_unparsable_commands_get_pi_error_responses() {
    let fixture = Fixture::new();
    let (session, _provider) = fixture.session(&[], Vec::new());
    let mut client = Client::start(session);
    client.send(json!({"id": "x", "type": "frobnicate"})).await;
    assert_eq!(
        client.line().await,
        r#"{"type":"response","command":"frobnicate","success":false,"error":"Unknown command: frobnicate"}"#
    );
    client.send_raw("{oops\n").await;
    assert_eq!(
        client.line().await,
        r#"{"type":"response","command":"parse","success":false,"error":"Failed to parse command: key must be a string at line 1 column 2"}"#
    );
    // JSON that is not an object goes the same way.
    for line in ["null\n", "[1,2]\n", "\"str\"\n"] {
        client.send_raw(line).await;
        assert_eq!(
            client.line().await,
            r#"{"type":"response","command":"parse","success":false,"error":"Failed to parse command: a command must be a JSON object"}"#
        );
    }
    client.send(json!({"id": "y"})).await;
    assert_eq!(
        client.line().await,
        r#"{"type":"response","success":false,"error":"Unknown command: undefined"}"#
    );
    assert_eq!(client.finish().await, Vec::<String>::new());
}

/// A session name is shown on one line (`/resume`, `--resume`): one that
/// held a line break or a bell was stored as it was.
#[tokio::test]
async fn a_session_name_with_control_characters_is_refused() {
    let fixture = Fixture::new();
    let (session, _provider) = fixture.session(&[], Vec::new());
    let mut client = Client::start(session);
    let refused = client
        .call(json!({"id": 1, "type": "set_session_name", "name": "line1\nline2\u{7}"}))
        .await;
    assert_eq!(
        refused["error"],
        "Session name cannot hold control characters (a line break, a tab): give it on one line"
    );
    let state = client.call(json!({"id": 2, "type": "get_state"})).await;
    assert_eq!(state["data"].get("sessionName"), None, "{state}");
    client.finish().await;
}

/// A field of the wrong type is refused, naming it and the type it must
/// have, whether the command needs it or not: an optional one was ignored
/// (`export_html` wrote the default file for an `outputPath` of 5,
/// `navigate_tree` summarised nothing for `"summarize": "yes"`) or misread
/// (a `name` of 5 was "empty"). `null` is no value, as JavaScript's
/// `undefined`.
#[tokio::test]
async fn a_field_of_the_wrong_type_is_refused_naming_it() {
    let fixture = Fixture::new();
    let (session, provider) = fixture.session(&[], Vec::new());
    let mut client = Client::start(session);
    let before = client.call(json!({"id": 0, "type": "get_state"})).await;
    let string = |field: &str| format!("Invalid command: \"{field}\" must be a string");
    let boolean = |field: &str| format!("Invalid command: \"{field}\" must be a boolean");
    let cases = [
        (
            json!({"type": "export_html", "outputPath": 5}),
            string("outputPath"),
        ),
        (
            json!({"type": "set_session_name", "name": 5}),
            string("name"),
        ),
        (
            json!({"type": "set_session_name", "name": null}),
            "Session name cannot be empty".to_owned(),
        ),
        (
            json!({"type": "navigate_tree", "targetId": "nope", "summarize": "yes"}),
            boolean("summarize"),
        ),
        (
            json!({"type": "navigate_tree", "targetId": "nope", "customInstructions": 5}),
            string("customInstructions"),
        ),
        (
            json!({"type": "navigate_tree", "targetId": 5}),
            string("targetId"),
        ),
        (
            json!({"type": "compact", "customInstructions": 5}),
            string("customInstructions"),
        ),
        (
            json!({"type": "new_session", "parentSession": 5}),
            string("parentSession"),
        ),
        (
            json!({"type": "prompt", "message": "hi", "streamingBehavior": 5}),
            string("streamingBehavior"),
        ),
        (json!({"type": "prompt", "message": 5}), string("message")),
        (
            json!({"type": "follow_up", "message": true}),
            string("message"),
        ),
        (
            json!({"type": "set_auto_compaction", "enabled": "yes"}),
            boolean("enabled"),
        ),
        (json!({"type": "set_auto_retry"}), boolean("enabled")),
        (json!({"type": "fork", "entryId": 5}), string("entryId")),
        (
            json!({"type": "switch_session", "sessionPath": 5}),
            string("sessionPath"),
        ),
        (json!({"type": "bash", "command": 5}), string("command")),
        (
            json!({"type": "set_thinking_level", "level": 5}),
            string("level"),
        ),
    ];
    for (number, (mut command, error)) in cases.into_iter().enumerate() {
        command["id"] = json!(number + 1);
        let kind = command["type"].clone();
        assert_eq!(
            client.call(command.clone()).await,
            json!({"id": number + 1, "type": "response", "command": kind,
                   "success": false, "error": error}),
            "{command}"
        );
    }
    let after = client.call(json!({"id": 99, "type": "get_state"})).await;
    assert_eq!(after["data"], before["data"], "nothing was done");
    assert!(provider.requests().is_empty());
    client.finish().await;
}

/// Editor text cut in the middle of an emoji comes as a lone surrogate
/// escape (`JSON.stringify` and Python's `json.dumps` write one): the
/// command was refused as unparsable, without its id, and the prompt lost.
#[tokio::test]
async fn a_command_holding_half_an_emoji_is_read_with_a_replacement() {
    let fixture = Fixture::new();
    let (session, _provider) = fixture.session(&[], Vec::new());
    let mut client = Client::start(session);
    client
        .send_raw("{\"id\":1,\"type\":\"set_session_name\",\"name\":\"cut \\ud83d\"}\n")
        .await;
    assert_eq!(
        client.line().await,
        r#"{"id":1,"type":"response","command":"set_session_name","success":true}"#
    );
    let state = client.call(json!({"id": 2, "type": "get_state"})).await;
    assert_eq!(state["data"]["sessionName"], "cut \u{fffd}");
    client.finish().await;
}

#[tokio::test]
async fn crlf_lines_and_a_last_line_without_newline_are_commands() {
    let fixture = Fixture::new();
    let (session, _provider) = fixture.session(&[], Vec::new());
    let mut client = Client::start(session);
    client
        .send_raw("{\"id\":1,\"type\":\"get_last_assistant_text\"}\r\n{\"id\":2,\"type\":\"set_session_name\",\"name\":\"  \"}")
        .await;
    assert_eq!(
        client.line().await,
        r#"{"id":1,"type":"response","command":"get_last_assistant_text","success":true,"data":{"text":null}}"#
    );
    assert_eq!(
        client.finish().await,
        [
            r#"{"id":2,"type":"response","command":"set_session_name","success":false,"error":"Session name cannot be empty"}"#
        ]
    );
}

/// A session with no answers cost nothing: `0`, as Pi's JSON writes it
/// (Rust's sum of no floats is -0.0, which was written `-0.0`).
#[tokio::test]
async fn a_new_sessions_stats_cost_zero_not_minus_zero() {
    let fixture = Fixture::new();
    let (session, _provider) = fixture.session(&[], Vec::new());
    let mut client = Client::start(session);
    client
        .send(json!({"id": 1, "type": "get_session_stats"}))
        .await;
    let line = client.line().await;
    assert!(line.contains("\"cost\":0.0"), "{line}");
    client.finish().await;
}

#[tokio::test]
async fn new_session_starts_an_empty_conversation_in_a_new_file() {
    let fixture = Fixture::new();
    let (session, _provider) = fixture.session(&[], vec![reply(vec![text("hi")])]);
    let mut client = Client::start(session);
    client
        .send(json!({"id": 1, "type": "prompt", "message": "hello"}))
        .await;
    client.until(is_type("agent_end")).await;
    let before = client.call(json!({"id": 2, "type": "get_state"})).await;
    assert_eq!(
        client.call(json!({"id": 3, "type": "new_session"})).await,
        json!({"id": 3, "type": "response", "command": "new_session", "success": true,
               "data": {"cancelled": false}})
    );
    let after = client.call(json!({"id": 4, "type": "get_state"})).await;
    assert_eq!(after["data"]["messageCount"], 0);
    assert_ne!(after["data"]["sessionId"], before["data"]["sessionId"]);
    assert_eq!(
        client.call(json!({"id": 5, "type": "get_messages"})).await["data"],
        json!({"messages": []})
    );
    client.finish().await;
}
