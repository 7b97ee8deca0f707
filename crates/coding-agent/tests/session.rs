//! Session files: Pi's version 3 JSONL, appended as messages complete,
//! reloaded (tolerating a truncated last line), resumed (`--continue`) and
//! made valid to send again (orphaned tool calls, failed answers).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use agent_ai::providers::transform::transform_messages;
use agent_ai::testing::ScriptedResponse;
use agent_ai::{
    AssistantContent, Content, Message, ScriptedProvider, StopReason, TextContent, ToolCall,
    ToolResultMessage, UserContent, UserMessage,
};
use coding_agent::app::tools_host::ToolsHost;
use coding_agent::app::{AgentSession, SessionOptions};
use coding_agent::session::{BashExecution, SessionManager, find_most_recent_session, session_dir};
use serde_json::{Value, json};

fn user(text: &str, timestamp: u64) -> Message {
    Message::User(UserMessage {
        content: UserContent::Text(text.into()),
        timestamp,
    })
}

fn assistant(content: Vec<AssistantContent>, stop_reason: StopReason) -> Message {
    let mut message = ScriptedProvider::reply(content);
    message.stop_reason = stop_reason;
    message.timestamp = 7;
    if matches!(stop_reason, StopReason::Error | StopReason::Aborted) {
        message.error_message = Some("Request was aborted".into());
    }
    Message::Assistant(message)
}

fn text(t: &str) -> AssistantContent {
    AssistantContent::Text(TextContent {
        text: t.into(),
        text_signature: None,
    })
}

fn call(id: &str, name: &str) -> AssistantContent {
    AssistantContent::ToolCall(ToolCall::new(id, name, json!({"path": "."})))
}

fn tool_result(id: &str, name: &str, text: &str, is_error: bool) -> Message {
    Message::ToolResult(ToolResultMessage {
        tool_call_id: id.into(),
        tool_name: name.into(),
        content: vec![Content::text(text)],
        details: None,
        is_error,
        timestamp: 9,
    })
}

fn lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

fn is_entry_id(value: &Value) -> bool {
    value
        .as_str()
        .is_some_and(|id| id.len() == 8 && id.chars().all(|c| c.is_ascii_hexdigit()))
}

#[test]
fn messages_are_appended_as_pi_v3_entries_and_reload_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = Path::new("/work/project");
    let mut session = SessionManager::create(cwd, dir.path());
    let path = session.file().unwrap().to_path_buf();
    let conversation = [
        user("list files", 1),
        assistant(vec![call("c1", "ls")], StopReason::ToolUse),
        tool_result("c1", "ls", "a.txt", false),
        assistant(vec![text("One file.")], StopReason::Stop),
    ];
    for message in &conversation {
        session.append_message(message).unwrap();
    }

    let written = lines(&path);
    assert_eq!(written.len(), 5);
    let header = &written[0];
    assert_eq!(
        header.as_object().unwrap().keys().collect::<Vec<_>>(),
        ["type", "version", "id", "timestamp", "cwd"]
    );
    assert_eq!(
        (&header["type"], &header["version"], &header["cwd"]),
        (&json!("session"), &json!(3), &json!("/work/project"))
    );
    let file_name = path.file_name().unwrap().to_str().unwrap();
    let expected_name = format!(
        "{}_{}.jsonl",
        header["timestamp"]
            .as_str()
            .unwrap()
            .replace([':', '.'], "-"),
        header["id"].as_str().unwrap()
    );
    assert_eq!(file_name, expected_name);
    let mut parent = Value::Null;
    for (entry, message) in written[1..].iter().zip(&conversation) {
        assert_eq!(
            entry.as_object().unwrap().keys().collect::<Vec<_>>(),
            ["type", "id", "parentId", "timestamp", "message"]
        );
        assert_eq!(entry["type"], "message");
        assert!(is_entry_id(&entry["id"]), "{entry}");
        assert_eq!(entry["parentId"], parent);
        assert_eq!(entry["message"], serde_json::to_value(message).unwrap());
        parent = entry["id"].clone();
    }

    let reloaded = SessionManager::open(&path, cwd).unwrap();
    assert_eq!(reloaded.messages(), conversation);
    assert_eq!(reloaded.id(), header["id"].as_str().unwrap());
}

#[test]
fn nothing_is_written_before_the_first_assistant_message() {
    let dir = tempfile::tempdir().unwrap();
    let mut session = SessionManager::create(Path::new("/w"), dir.path());
    session.append_message(&user("hello", 1)).unwrap();
    let path = session.file().unwrap().to_path_buf();
    assert!(!path.exists());
    session
        .append_message(&assistant(vec![text("hi")], StopReason::Stop))
        .unwrap();
    assert_eq!(lines(&path).len(), 3);
}

#[test]
fn no_session_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut session = SessionManager::in_memory(dir.path());
    session.append_message(&user("hello", 1)).unwrap();
    session
        .append_message(&assistant(vec![text("hi")], StopReason::Stop))
        .unwrap();
    assert_eq!(session.file(), None);
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    assert_eq!(session.messages().len(), 2);
}

#[test]
fn a_truncated_last_line_is_skipped_and_the_next_entry_starts_a_new_line() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = Path::new("/w");
    let mut session = SessionManager::create(cwd, dir.path());
    session.append_message(&user("first", 1)).unwrap();
    let answer = assistant(vec![text("one")], StopReason::Stop);
    session.append_message(&answer).unwrap();
    let path = session.file().unwrap().to_path_buf();
    // A process killed mid-write leaves half a line.
    let mut content = std::fs::read_to_string(&path).unwrap();
    content.push_str(r#"{"type":"message","id":"deadbeef","parentId":"#);
    std::fs::write(&path, &content).unwrap();

    let mut resumed = SessionManager::open(&path, cwd).unwrap();
    assert_eq!(resumed.messages(), [user("first", 1), answer.clone()]);
    resumed.append_message(&user("second", 2)).unwrap();

    let reloaded = SessionManager::open(&path, cwd).unwrap();
    assert_eq!(
        reloaded.messages(),
        [user("first", 1), answer, user("second", 2)]
    );
    let raw = std::fs::read_to_string(&path).unwrap();
    assert!(raw.ends_with("}\n"), "{raw}");
    assert_eq!(raw.lines().count(), 5, "{raw}");
}

#[test]
fn a_file_without_a_header_is_an_error_and_left_as_it_is() {
    // DEVIATIONS M10: Pi overwrites it with a new session.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("data.jsonl");
    std::fs::write(&path, "{\"a\": 1}\nnot json\n").unwrap();
    let error = SessionManager::open(&path, Path::new("/w")).unwrap_err();
    assert_eq!(
        error.to_string(),
        format!(
            "{} is not a session file (its first line is not a session header); it was left as it is. Give the path of a session file (or, to start a session, a new path)",
            path.display()
        )
    );
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "{\"a\": 1}\nnot json\n"
    );
    // An empty (or blank) file starts a session in place.
    std::fs::write(&path, "\n").unwrap();
    let mut session = SessionManager::open(&path, Path::new("/w")).unwrap();
    assert!(session.messages().is_empty());
    session.append_message(&user("hi", 1)).unwrap();
    session
        .append_message(&assistant(vec![text("yo")], StopReason::Stop))
        .unwrap();
    let written = lines(&path);
    assert_eq!(written.len(), 3);
    assert_eq!(written[0]["type"], "session");
}

#[test]
fn a_folder_given_as_the_session_file_says_so_once() {
    let dir = tempfile::tempdir().unwrap();
    let error = SessionManager::open(dir.path(), Path::new("/w")).unwrap_err();
    assert_eq!(
        error.to_string(),
        format!(
            "session file {}: Is a directory (os error 21)",
            dir.path().display()
        )
    );
    // The cause is in the message, not chained again after it (anyhow's
    // `{:#}` would print it twice).
    assert!(std::error::Error::source(&error).is_none());
}

#[test]
fn the_conversation_is_the_path_from_the_last_entry_to_the_root() {
    // A Pi file that branched: entry 3 replaced entry 2's answer.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("pi.jsonl");
    let header = r#"{"type":"session","version":3,"id":"11111111-2222-4333-8444-555555555555","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/w"}"#;
    let entry = |id: &str, parent: Value, message: Message| {
        json!({"type": "message", "id": id, "parentId": parent, "timestamp": "2025-01-01T00:00:01.000Z",
               "message": message})
        .to_string()
    };
    let first = user("q", 1);
    let dropped = assistant(vec![text("old answer")], StopReason::Stop);
    let kept = assistant(vec![text("new answer")], StopReason::Stop);
    let content = [
        header.to_owned(),
        entry("aaaaaaaa", Value::Null, first.clone()),
        entry("bbbbbbbb", json!("aaaaaaaa"), dropped),
        r#"{"type":"model_change","id":"cccccccc","parentId":"aaaaaaaa","timestamp":"2025-01-01T00:00:02.000Z","provider":"openai","modelId":"gpt-4o"}"#.to_owned(),
        entry("dddddddd", json!("cccccccc"), kept.clone()),
    ]
    .join("\n");
    std::fs::write(&path, content + "\n").unwrap();
    let session = SessionManager::open(&path, Path::new("/w")).unwrap();
    assert_eq!(session.messages(), [first, kept]);
}

#[test]
fn a_user_bash_run_is_stored_as_pi_does_and_read_back_as_a_user_message() {
    let dir = tempfile::tempdir().unwrap();
    let mut session = SessionManager::create(Path::new("/w"), dir.path());
    session
        .append_message(&assistant(vec![text("hi")], StopReason::Stop))
        .unwrap();
    let run = BashExecution {
        role: "bashExecution".into(),
        command: "false".into(),
        output: "oops".into(),
        exit_code: Some(1),
        cancelled: false,
        truncated: false,
        full_output_path: None,
        timestamp: 5,
        exclude_from_context: None,
    };
    session.append_bash_execution(&run).unwrap();
    let written = lines(session.file().unwrap());
    assert_eq!(
        written[2]["message"],
        json!({"role": "bashExecution", "command": "false", "output": "oops", "exitCode": 1,
               "cancelled": false, "truncated": false, "timestamp": 5})
    );
    let reloaded = SessionManager::open(session.file().unwrap(), Path::new("/w")).unwrap();
    assert_eq!(
        reloaded.messages()[1],
        Message::User(UserMessage {
            content: UserContent::Blocks(vec![Content::text(
                "Ran `false`\n```\noops\n```\n\nCommand exited with code 1"
            )]),
            timestamp: 5,
        })
    );
}

#[test]
fn replay_drops_failed_answers_and_gives_orphaned_calls_a_result() {
    let conversation = [
        user("go", 1),
        assistant(
            vec![call("c1", "ls"), call("c2", "read")],
            StopReason::ToolUse,
        ),
        tool_result("c1", "ls", "a.txt", false),
        // c2 never got a result: the process was killed.
        assistant(vec![text("partial")], StopReason::Aborted),
        user("again", 2),
    ];
    // The one replay repair, as every provider applies it to what it sends.
    let replay = transform_messages(&conversation, &ScriptedProvider::model(), None);
    let synthetic_timestamp = match &replay[3] {
        Message::ToolResult(result) => result.timestamp,
        other => panic!("expected a tool result, got {other:?}"),
    };
    assert_eq!(
        replay,
        [
            user("go", 1),
            conversation[1].clone(),
            tool_result("c1", "ls", "a.txt", false),
            Message::ToolResult(ToolResultMessage {
                tool_call_id: "c2".into(),
                tool_name: "read".into(),
                content: vec![Content::text("No result provided")],
                details: None,
                is_error: true,
                timestamp: synthetic_timestamp,
            }),
            user("again", 2),
        ]
    );
}

#[tokio::test]
async fn a_resumed_session_sends_the_model_a_valid_conversation() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path();
    let mut session = SessionManager::create(cwd, dir.path());
    let orphan_call = assistant(vec![call("c1", "ls")], StopReason::ToolUse);
    let failed = assistant(vec![], StopReason::Error);
    for message in [&user("first", 1), &orphan_call, &failed] {
        session.append_message(message).unwrap();
    }
    let path = session.file().unwrap().to_path_buf();

    let provider =
        ScriptedProvider::new([ScriptedResponse::Message(ScriptedProvider::reply(vec![
            text("resumed"),
        ]))]);
    let agent = scripted_session(&provider, cwd, SessionManager::open(&path, cwd).unwrap());
    agent
        .prompt(AgentSession::user_message("second", Vec::new()))
        .await
        .unwrap();

    // The session hands over the conversation as it happened; the provider
    // repairs it (the one replay repair) before it goes out.
    let sent = transform_messages(
        &provider.requests()[0].messages,
        &ScriptedProvider::model(),
        None,
    );
    let roles: Vec<(&str, String)> = sent
        .iter()
        .map(|m| match m {
            Message::User(u) => ("user", format!("{:?}", u.content)),
            Message::Assistant(a) => ("assistant", format!("{:?}", a.stop_reason)),
            Message::ToolResult(r) => ("toolResult", r.content[0].as_text().unwrap().to_owned()),
        })
        .collect();
    assert_eq!(
        roles,
        [
            ("user", format!("{:?}", UserContent::Text("first".into()))),
            ("assistant", "ToolUse".to_owned()),
            ("toolResult", "No result provided".to_owned()),
            (
                "user",
                format!("{:?}", UserContent::Blocks(vec![Content::text("second")]))
            ),
        ]
    );
    // The failed answer stays in the file; the new exchange follows it.
    let reloaded = SessionManager::open(&path, cwd).unwrap().messages();
    assert_eq!(reloaded.len(), 5);
    assert_eq!(reloaded[2], failed);
}

/// A session in `cwd` without tools, hooks or guard, answered by `provider`,
/// saving to `session`.
fn scripted_session(
    provider: &ScriptedProvider,
    cwd: &Path,
    session: SessionManager,
) -> AgentSession {
    session_with_tools_on(provider, cwd, session, None)
}

/// [`scripted_session`] with its tools said to run on `tools_host`.
fn session_with_tools_on(
    provider: &ScriptedProvider,
    cwd: &Path,
    session: SessionManager,
    tools_host: Option<&str>,
) -> AgentSession {
    AgentSession::new(SessionOptions {
        provider: Arc::new(provider.clone()),
        model: ScriptedProvider::model(),
        cwd: cwd.to_path_buf(),
        tools: Vec::new(),
        system_prompt: "sys".into(),
        session,
        hooks: None,
        guard: None,
        thinking: Default::default(),
        prompt_templates: Vec::new(),
        tools_host: tools_host.map(|target| ToolsHost {
            target: target.to_owned(),
            flags: format!("--remote {target}"),
        }),
    })
    .unwrap()
}

/// Where the session file at `path` says its tools ran, in order.
fn tools_hosts(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .filter(|entry| entry["customType"] == "tools_host")
        .map(|entry| entry["data"]["remote"].clone())
        .collect()
}

/// A session records where its tools run whenever it is taken up with its
/// tools somewhere else (at start, by `switch_session` as RPC and `/resume`
/// do, in a new session as `/new` makes), so that a remote session going on
/// here is warned about however it was reached.
#[tokio::test]
async fn where_the_tools_run_is_recorded_however_a_session_is_taken_up() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path();
    let mut manager = SessionManager::create(cwd, dir.path());
    manager.append_message(&user("first", 1)).unwrap();
    let answer = assistant(vec![text("ok")], StopReason::Stop);
    manager.append_message(&answer).unwrap();
    let path = manager.file().unwrap().to_path_buf();
    let provider =
        ScriptedProvider::new([ScriptedResponse::Message(ScriptedProvider::reply(vec![
            text("fresh"),
        ]))]);

    let there = "ssh://box/w";
    let remote = session_with_tools_on(
        &provider,
        cwd,
        SessionManager::open(&path, cwd).unwrap(),
        Some(there),
    );
    assert_eq!(tools_hosts(&path), [json!(there)]);

    let local = scripted_session(&provider, cwd, SessionManager::in_memory(cwd));
    local.switch_session(&path).unwrap();
    assert_eq!(tools_hosts(&path), [json!(there), Value::Null]);

    remote.new_session(None);
    remote
        .prompt(AgentSession::user_message("new", Vec::new()))
        .await
        .unwrap();
    let fresh = remote.session_file().unwrap();
    assert_ne!(fresh, path);
    assert_eq!(tools_hosts(&fresh), [json!(there)]);
}

/// A session file of `cwd` modified `age` ago.
fn touch(path: &Path, header_id: &str, cwd: &str, age: Duration) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let header = json!({"type": "session", "version": 3, "id": header_id,
                        "timestamp": "2025-01-01T00:00:00.000Z", "cwd": cwd});
    std::fs::write(path, format!("{header}\n")).unwrap();
    let file = std::fs::File::options().write(true).open(path).unwrap();
    file.set_modified(SystemTime::now() - age).unwrap();
}

#[test]
fn continue_picks_the_most_recently_modified_session_of_the_cwd() {
    let dir = tempfile::tempdir().unwrap();
    let agent_dir = dir.path();
    let here = session_dir(agent_dir, Path::new("/work/here"));
    let elsewhere = session_dir(agent_dir, Path::new("/work/elsewhere"));
    let cwd = "/work/here";
    touch(
        &here.join("old.jsonl"),
        "old",
        cwd,
        Duration::from_secs(300),
    );
    touch(&here.join("new.jsonl"), "new", cwd, Duration::from_secs(60));
    touch(
        &elsewhere.join("newest.jsonl"),
        "newest",
        "/work/elsewhere",
        Duration::ZERO,
    );
    std::fs::write(here.join("junk.jsonl"), "no header\n").unwrap();
    std::fs::write(here.join("notes.txt"), "").unwrap();

    assert_eq!(
        find_most_recent_session(&here, Path::new(cwd)).unwrap(),
        Some(here.join("new.jsonl"))
    );
    let resumed = SessionManager::continue_recent(Path::new("/work/here"), &here).unwrap();
    assert_eq!(
        (resumed.id(), resumed.file()),
        ("new", Some(here.join("new.jsonl").as_path()))
    );
}

/// `/x/p-q` and `/x/p/q` share a session folder (Pi's naming); going on
/// in one resumed the other's conversation.
#[test]
fn continue_passes_over_sessions_of_another_directory_with_the_same_folder() {
    let dir = tempfile::tempdir().unwrap();
    let folder = session_dir(dir.path(), Path::new("/x/p/q"));
    assert_eq!(folder, session_dir(dir.path(), Path::new("/x/p-q")));
    touch(
        &folder.join("mine.jsonl"),
        "mine",
        "/x/p/q",
        Duration::from_secs(60),
    );
    touch(
        &folder.join("theirs.jsonl"),
        "theirs",
        "/x/p-q",
        Duration::ZERO,
    );

    assert_eq!(
        find_most_recent_session(&folder, Path::new("/x/p/q")).unwrap(),
        Some(folder.join("mine.jsonl"))
    );
    assert_eq!(
        find_most_recent_session(&folder, Path::new("/x/p-q")).unwrap(),
        Some(folder.join("theirs.jsonl"))
    );
    assert_eq!(
        find_most_recent_session(&folder, Path::new("/x/other")).unwrap(),
        None
    );
}

#[test]
fn continue_without_a_previous_session_starts_one_in_the_cwd_dir() {
    let dir = tempfile::tempdir().unwrap();
    let sessions = session_dir(dir.path(), Path::new("/work/here"));
    let session = SessionManager::continue_recent(Path::new("/work/here"), &sessions).unwrap();
    assert!(session.messages().is_empty());
    assert_eq!(
        session.file().and_then(Path::parent),
        Some(sessions.as_path())
    );
    assert_eq!(
        sessions,
        PathBuf::from(dir.path()).join("sessions/--work-here--")
    );
}

/// Counts the approvals asked and allows each for the session.
#[derive(Default)]
struct AllowForSession {
    asked: std::sync::atomic::AtomicUsize,
}

#[async_trait::async_trait]
impl coding_agent::guard::Approver for AllowForSession {
    async fn approve(
        &self,
        _request: coding_agent::guard::ApprovalRequest,
        _cancel: &tokio_util::sync::CancellationToken,
    ) -> coding_agent::guard::ApprovalAnswer {
        self.asked.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        coding_agent::guard::ApprovalAnswer::AllowSession
    }
}

#[tokio::test]
async fn a_rule_allowed_for_one_session_is_asked_again_in_the_next() {
    use coding_agent::guard::policy::{Places, RuleTexts};
    use coding_agent::guard::{Guard, Mode, Policy, RuleFiles, SandboxFacts};

    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path();
    let policy = Policy::new(
        Mode::Default,
        SandboxFacts::default(),
        Places::for_cwd(cwd),
        &RuleTexts::default(),
    )
    .unwrap();
    let approver = Arc::new(AllowForSession::default());
    let guard = Arc::new(Guard::new(
        policy,
        None,
        approver.clone(),
        RuleFiles {
            project: Some(cwd.join("project.json")),
            global: cwd.join("global.json"),
        },
    ));
    let touch = AssistantContent::ToolCall(ToolCall::new(
        "c1",
        "bash",
        json!({"command": "touch made"}),
    ));
    // Each session's prompt: the same call twice, then an answer.
    let provider = ScriptedProvider::new(
        [touch.clone(), touch.clone(), text("done")]
            .into_iter()
            .cycle()
            .take(6)
            .map(|content| ScriptedResponse::Message(ScriptedProvider::reply(vec![content]))),
    );
    // A new session built around the same guard, as /resume does.
    for (session, asked) in [(1, 1), (2, 2)] {
        let agent = AgentSession::new(SessionOptions {
            provider: Arc::new(provider.clone()),
            model: ScriptedProvider::model(),
            cwd: cwd.to_path_buf(),
            tools: coding_agent::app::select_tools(&["bash".to_owned()]).0,
            system_prompt: "sys".into(),
            session: SessionManager::in_memory(cwd),
            hooks: None,
            guard: Some(guard.clone()),
            thinking: Default::default(),
            prompt_templates: Vec::new(),
            tools_host: None,
        })
        .unwrap();
        agent
            .prompt(AgentSession::user_message("go", Vec::new()))
            .await
            .unwrap();
        assert_eq!(
            approver.asked.load(std::sync::atomic::Ordering::SeqCst),
            asked,
            "session {session}"
        );
    }
}

#[test]
fn an_export_replaces_the_file_whole_and_a_missing_directory_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path();
    let mut manager = SessionManager::in_memory(cwd);
    manager
        .append_message(&user("what is in main.rs?", 1))
        .unwrap();
    let session = scripted_session(&ScriptedProvider::new([]), cwd, manager);
    std::fs::write(cwd.join("chat.html"), "old export ".repeat(10_000)).unwrap();

    let path = session.export_html(Some(Path::new("chat.html"))).unwrap();
    assert_eq!(path, cwd.join("chat.html"));
    let html = std::fs::read_to_string(&path).unwrap();
    assert!(html.contains("what is in main.rs?") && !html.contains("old export"));
    assert!(html.trim_end().ends_with("</html>"), "{html}");

    let error = session
        .export_html(Some(Path::new("missing/chat.html")))
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        format!(
            "ENOENT: no such file or directory, open '{}'",
            cwd.join("missing/chat.html").display()
        )
    );
    let names: Vec<_> = std::fs::read_dir(cwd)
        .unwrap()
        .map(|entry| entry.unwrap().file_name())
        .collect();
    assert_eq!(names, ["chat.html"], "no temporary file is left");
}

/// `/export` and RPC `export_html` wrote the page over the session file
/// itself (`--export` refused it): the export said success, and every later
/// save failed, the file being no session any more.
#[test]
fn an_export_over_the_session_file_itself_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path();
    let path = cwd.join("mysession.jsonl");
    let mut manager = SessionManager::open(&path, cwd).unwrap();
    // Not written yet (no answer): the page there would be lost at the
    // first save, as the session there would be.
    manager.append_message(&user("hello", 1)).unwrap();
    let session = scripted_session(&ScriptedProvider::new([]), cwd, manager);
    let refused = "the output is the session file itself; name another file for the HTML";
    let error = session
        .export_html(Some(Path::new("mysession.jsonl")))
        .unwrap_err();
    assert_eq!(error.to_string(), refused);
    assert!(!path.exists());

    let mut manager = SessionManager::open(&path, cwd).unwrap();
    manager.append_message(&user("hello", 1)).unwrap();
    manager
        .append_message(&assistant(vec![text("hi")], StopReason::Stop))
        .unwrap();
    let session = scripted_session(&ScriptedProvider::new([]), cwd, manager);
    let before = std::fs::read(&path).unwrap();
    std::os::unix::fs::symlink(&path, cwd.join("link.jsonl")).unwrap();
    for given in ["mysession.jsonl", "./sub/../mysession.jsonl", "link.jsonl"] {
        std::fs::create_dir_all(cwd.join("sub")).unwrap();
        let error = session.export_html(Some(Path::new(given))).unwrap_err();
        assert_eq!(error.to_string(), refused, "{given}");
    }
    assert_eq!(std::fs::read(&path).unwrap(), before);
}

/// The default name was made of the header's id: a crafted one
/// (`z/../../PWNED`) wrote the page outside the folder. As Pi's, it is
/// made of the session file's name.
#[test]
fn the_default_export_name_is_the_session_files_name() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path().join("work");
    std::fs::create_dir(&cwd).unwrap();
    let header = json!({"type": "session", "version": 3, "id": "z/../../PWNED",
                        "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/w"});
    let path = cwd.join("2025-01-01T00-00-00-000Z_abc.jsonl");
    std::fs::write(&path, format!("{header}\n")).unwrap();
    let session = SessionManager::open(&path, &cwd).unwrap();
    let written = coding_agent::export::write_session_html(&cwd, &session, None).unwrap();
    assert_eq!(
        written,
        cwd.join("coding-agent-session-2025-01-01T00-00-00-000Z_abc.html")
    );
    assert!(written.exists());
    assert!(!dir.path().join("PWNED.html").exists());
}

#[test]
fn an_export_shows_the_whole_history_with_the_compaction_where_it_happened() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path();
    let mut session = SessionManager::create(cwd, dir.path());
    let answer = |t: &str| assistant(vec![text(t)], StopReason::Stop);
    session
        .append_message(&user("the first question", 1))
        .unwrap();
    session.append_message(&answer("the first answer")).unwrap();
    session
        .append_message(&user("the second question", 2))
        .unwrap();
    let kept = session.leaf_id().unwrap().to_owned();
    session
        .append_message(&answer("the second answer"))
        .unwrap();
    let mut compaction = coding_agent::session::CompactionResult {
        summary: "They asked two questions.".into(),
        first_kept_entry_id: kept,
        tokens_before: 1234,
        details: Default::default(),
    };
    session.append_compaction(&mut compaction).unwrap();
    session
        .append_message(&user("the third question", 3))
        .unwrap();
    // The model no longer reads the first exchange; the page shows it.
    let context = format!("{:?}", session.messages());
    assert!(!context.contains("the first answer"), "{context}");

    let path = coding_agent::export::write_session_html(cwd, &session, None).unwrap();
    // It holds what the session file holds: for the user's eyes only.
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&path).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "{mode:o}");
    let html = std::fs::read_to_string(path).unwrap();
    let at = |needle: &str| {
        html.find(needle)
            .unwrap_or_else(|| panic!("{needle}: {html}"))
    };
    let order = [
        at("the first question"),
        at("the first answer"),
        at("the second answer"),
        at("Compacted from 1,234 tokens"),
        at("They asked two questions."),
        at("the third question"),
    ];
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{order:?}");
}

/// A prompt aborted before its run began (RPC's `abort` while it waited
/// for the MCP servers) is recorded and ends aborted, and its run is
/// cancelled before the provider is called: an abort given once the run
/// ran raced its request, which then reached the model.
#[tokio::test]
async fn a_prompt_aborted_before_its_run_is_recorded_and_cancelled_before_its_request() {
    let dir = tempfile::tempdir().unwrap();
    let provider = ScriptedProvider::new([
        ScriptedResponse::Message(ScriptedProvider::reply(vec![text("never read")])),
        ScriptedResponse::Message(ScriptedProvider::reply(vec![text("answered")])),
    ]);
    let session = scripted_session(&provider, dir.path(), SessionManager::in_memory(dir.path()));
    session
        .prompt_aborted(AgentSession::user_message("first", Vec::new()))
        .await
        .unwrap();
    let stops: Vec<StopReason> = session
        .agent()
        .messages()
        .iter()
        .filter_map(|m| match m {
            Message::Assistant(a) => Some(a.stop_reason),
            _ => None,
        })
        .collect();
    assert_eq!(stops, [StopReason::Aborted], "cancelled as the run started");
    // The next prompt runs as usual.
    session
        .prompt(AgentSession::user_message("second", Vec::new()))
        .await
        .unwrap();
    let last = session.agent().messages().last().cloned();
    assert!(
        matches!(last, Some(Message::Assistant(a)) if a.stop_reason == StopReason::Stop),
        "the subscriber is gone"
    );
}

/// The kinds of the compaction events waiting in `events`, in order.
fn compaction_events(events: &mut coding_agent::session_event::SessionEvents) -> Vec<String> {
    std::iter::from_fn(|| events.try_recv())
        .map(|event| event.to_json()["type"].as_str().unwrap_or("").to_owned())
        .filter(|kind| kind.starts_with("compaction"))
        .collect()
}

/// `AgentSession::compact` ends what it starts, when the compaction works
/// and when it does not: a library user's event stream had the
/// `compaction_start` but not the end (only the CLI modes' wrapper sent
/// it), so a "Compacting..." shown at the start stayed up for good.
#[tokio::test]
async fn a_compaction_asked_for_ends_with_its_end_event_whatever_the_outcome() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path();
    let answer = || {
        ScriptedResponse::Message(ScriptedProvider::reply(vec![text(
            &"an answer ".repeat(400),
        )]))
    };
    let provider = ScriptedProvider::new([
        answer(),
        answer(),
        ScriptedResponse::Message(ScriptedProvider::reply(vec![text("the summary")])),
    ]);
    let agent = scripted_session(&provider, cwd, SessionManager::create(cwd, dir.path()));
    let mut events = agent.subscribe_all();

    let nothing = agent.compact(None).await;
    assert!(nothing.is_err(), "an empty session has nothing to compact");
    assert_eq!(
        compaction_events(&mut events),
        ["compaction_start", "compaction_end"]
    );

    agent.prompt(user("first question", 1)).await.unwrap();
    agent.prompt(user("second question", 2)).await.unwrap();
    let mut recovery = agent.recovery();
    recovery.compaction.keep_recent_tokens = 1;
    agent.set_recovery(recovery);
    let compacted = agent.compact(Some("the answers")).await.unwrap();
    assert_eq!(compacted.summary, "the summary");
    assert_eq!(
        compaction_events(&mut events),
        ["compaction_start", "compaction_end"]
    );
}

/// What was queued for the conversation left does not reach the one gone
/// on with: a fork, and a move in the tree, sent the old branch's steering
/// and follow-ups with the next prompt.
#[tokio::test]
async fn a_fork_or_a_move_in_the_tree_drops_what_was_queued() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path();
    let answer = || ScriptedResponse::Message(ScriptedProvider::reply(vec![text("ok")]));
    let provider = ScriptedProvider::new([answer(), answer()]);
    let agent = scripted_session(&provider, cwd, SessionManager::create(cwd, dir.path()));
    agent.prompt(user("first", 1)).await.unwrap();
    agent.prompt(user("second", 2)).await.unwrap();
    let entries = agent.fork_messages();
    async fn queue(agent: &AgentSession) {
        let left = user("queued for the branch left", 3);
        agent.follow_up(left.clone()).await.unwrap();
        agent.steer(left).await.unwrap();
        assert_eq!(agent.pending_message_count(), 2);
    }

    queue(&agent).await;
    let mut events = agent.subscribe_all();
    agent.fork(&entries[1].0).unwrap();
    assert_eq!(agent.pending_message_count(), 0);
    let update = std::iter::from_fn(|| events.try_recv())
        .map(|event| event.to_json())
        .find(|event| event["type"] == "queue_update");
    assert_eq!(
        update,
        Some(json!({"type": "queue_update", "steering": [], "followUp": []}))
    );

    queue(&agent).await;
    agent
        .navigate_tree(&entries[0].0, false, None)
        .await
        .unwrap();
    assert_eq!(agent.pending_message_count(), 0);
}
