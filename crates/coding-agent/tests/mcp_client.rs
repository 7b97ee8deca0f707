//! The MCP client against real servers from the registries
//! (`@modelcontextprotocol/server-everything` from npm, `mcp-server-time` from
//! PyPI): their tools go through the same pipeline as the built-ins.
#![cfg(feature = "mcp")]
#![allow(clippy::unwrap_used)]

mod image_support;
mod mcp_support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use agent_ai::{Content, ToolCall};
use agent_core::{NoHooks, ToolSet, UpdateSink, run_single_tool_call};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use coding_agent::mcp::config::{
    DEFAULT_STARTUP_TIMEOUT, DEFAULT_TOOL_TIMEOUT, ServerConfig, Source, Transport,
};
use coding_agent::mcp::{McpServers, ServerStatus};
use coding_agent::{ToolContext, ToolDefinition, wrap_tool_definition};
use image_support::{png_claiming, png_of};
use mcp_support::{
    HttpServer, everything_installed, python_mcp_installed, python3_installed, recording_stdin,
    time_installed, writing_pid,
};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// The test server `tests/mcp_support/FILE` (Python) as server `name`.
fn python_server(name: &str, file: &str) -> ServerConfig {
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/mcp_support")
        .join(file);
    shell_server(name, &format!("exec python3 -B {}", script.display()))
}

fn shell_server(name: &str, script: &str) -> ServerConfig {
    ServerConfig {
        name: name.into(),
        transport: Transport::Stdio {
            command: "sh".into(),
            args: vec!["-c".into(), script.into()],
            env: BTreeMap::new(),
            cwd: None,
        },
        disabled: false,
        // Generous: these tests start a dozen node and Python servers at
        // once on a busy machine; the timeout itself has its own test.
        startup_timeout: DEFAULT_STARTUP_TIMEOUT * 6,
        tool_timeout: DEFAULT_TOOL_TIMEOUT,
        source: Source::Global,
    }
}

fn everything() -> ServerConfig {
    shell_server("everything", "exec mcp-server-everything stdio")
}

/// The servers' tools as the loop sees them, running in `cwd`.
fn tool_set(servers: &McpServers, cwd: &Path) -> ToolSet {
    let (definitions, warnings) = servers.tool_definitions();
    assert_eq!(warnings, Vec::<String>::new());
    tools_of(definitions, cwd)
}

/// `definitions` through the pipeline's wrapper, run in `cwd`.
fn tools_of(definitions: Vec<Arc<dyn ToolDefinition>>, cwd: &Path) -> ToolSet {
    let cwd = cwd.to_path_buf();
    let factory: coding_agent::definition::ContextFactory = Arc::new(move |cancel| ToolContext {
        cancel,
        ..ToolContext::new(cwd.clone())
    });
    ToolSet::new(
        definitions
            .into_iter()
            .map(|definition| wrap_tool_definition(definition, factory.clone())),
    )
    .unwrap()
}

/// Starts `configs` in `dir`; every server must start.
async fn start(dir: &Path, configs: Vec<ServerConfig>) -> (McpServers, ToolSet) {
    let (servers, failures) = McpServers::start(configs, dir).await;
    assert_eq!(failures, Vec::<String>::new());
    let tools = tool_set(&servers, dir);
    (servers, tools)
}

async fn call(tools: &ToolSet, name: &str, arguments: Value) -> (bool, Vec<Content>) {
    let call = ToolCall {
        id: "call_1".into(),
        name: name.into(),
        arguments,
        thought_signature: None,
        recovered_from_text: None,
    };
    let message = run_single_tool_call(tools, &call, &NoHooks, &CancellationToken::new()).await;
    (message.is_error, message.content)
}

fn text(content: &[Content]) -> String {
    content
        .iter()
        .filter_map(Content::as_text)
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test]
async fn the_tools_of_real_servers_are_listed_with_their_schemas() {
    if !everything_installed() || !time_installed() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let configs = vec![everything(), shell_server("time", "exec mcp-server-time")];
    let (servers, tools) = start(dir.path(), configs).await;
    let names: Vec<&str> = tools
        .definitions()
        .iter()
        .map(|t| t.name.as_str())
        .collect();
    for expected in [
        "mcp__everything__echo",
        "mcp__everything__get-sum",
        "mcp__everything__trigger-long-running-operation",
        "mcp__time__get_current_time",
        "mcp__time__convert_time",
    ] {
        assert!(
            names.contains(&expected),
            "{expected} missing from {names:?}"
        );
    }
    let echo = tools.get("mcp__everything__echo").unwrap().tool();
    assert_eq!(echo.description, "Echoes back the input string");
    assert_eq!(
        echo.parameters,
        json!({
            "$schema": "http://json-schema.org/draft-07/schema#",
            "type": "object",
            "properties": {"message": {"type": "string", "description": "Message to echo"}},
            "required": ["message"]
        })
    );
    let status = servers.status();
    assert_eq!(status.len(), 2);
    assert_eq!(status[0].name, "everything");
    assert_eq!(status[0].status, "running");
    assert!(
        status[0]
            .tools
            .contains(&"mcp__everything__echo".to_owned())
    );
    assert_eq!(status[1].status, "running");
}

#[tokio::test]
async fn a_call_returns_the_servers_answer_through_the_pipeline() {
    if !everything_installed() || !time_installed() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let configs = vec![everything(), shell_server("time", "exec mcp-server-time")];
    let (_servers, tools) = start(dir.path(), configs).await;

    let (is_error, content) = call(&tools, "mcp__everything__echo", json!({"message": "hi"})).await;
    assert!(!is_error);
    assert_eq!(content, vec![Content::text("Echo: hi")]);

    // Pi's coercion: a number sent as a string is accepted by the validator.
    let (is_error, content) = call(
        &tools,
        "mcp__everything__get-sum",
        json!({"a": "2", "b": 3}),
    )
    .await;
    assert!(!is_error, "{content:?}");
    assert_eq!(text(&content), "The sum of 2 and 3 is 5.");

    let (is_error, content) = call(
        &tools,
        "mcp__time__get_current_time",
        json!({"timezone": "Etc/UTC"}),
    )
    .await;
    assert!(!is_error, "{content:?}");
    let answer: Value = serde_json::from_str(&text(&content)).unwrap();
    assert_eq!(answer["timezone"], "Etc/UTC");

    // The server's own isError stays an error, with its text.
    let (is_error, content) = call(
        &tools,
        "mcp__time__get_current_time",
        json!({"timezone": "Mars/Olympus"}),
    )
    .await;
    assert!(is_error);
    assert!(text(&content).contains("Mars/Olympus"), "{content:?}");
}

#[tokio::test]
async fn images_and_resources_become_content_the_model_reads() {
    if !everything_installed() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (_servers, tools) = start(dir.path(), vec![everything()]).await;

    let (is_error, content) = call(&tools, "mcp__everything__get-tiny-image", json!({})).await;
    assert!(!is_error);
    assert!(
        content
            .iter()
            .any(|c| matches!(c, Content::Image(image) if image.mime_type == "image/png")),
        "{content:?}"
    );

    let (_, content) = call(
        &tools,
        "mcp__everything__get-resource-links",
        json!({"count": 1}),
    )
    .await;
    assert!(text(&content).contains("[resource link: "), "{content:?}");

    let (_, content) = call(
        &tools,
        "mcp__everything__get-resource-reference",
        json!({"resourceType": "Text", "resourceId": 1}),
    )
    .await;
    assert!(text(&content).contains("[resource: "), "{content:?}");

    let (is_error, content) = call(
        &tools,
        "mcp__everything__get-structured-content",
        json!({"location": "Chicago"}),
    )
    .await;
    assert!(!is_error);
    assert!(text(&content).contains("temperature"), "{content:?}");
}

/// A server's answer is cut to the 50 KB every tool keeps to, with a notice
/// saying how much there was and what to ask for instead: one large answer
/// would otherwise fill the context window of every later turn.
#[tokio::test]
async fn a_large_answer_is_cut_to_the_tools_limit_and_says_so() {
    if !everything_installed() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (_servers, tools) = start(dir.path(), vec![everything()]).await;

    let lines: Vec<String> = (0..40_000).map(|i| format!("line {i}")).collect();
    let message = lines.join("\n");
    let (is_error, content) = call(
        &tools,
        "mcp__everything__echo",
        json!({ "message": message }),
    )
    .await;
    assert!(!is_error, "{content:?}");
    let text = text(&content);
    assert!(
        text.starts_with("Echo: line 0\nline 1\n"),
        "{}",
        &text[..100]
    );
    let (shown, notice) = text.rsplit_once("\n\n[").unwrap();
    assert!(shown.len() <= 50 * 1024, "{} bytes shown", shown.len());
    assert!(
        shown.ends_with("line 1999"),
        "{}",
        &shown[shown.len() - 40..]
    );
    assert_eq!(
        notice,
        "MCP output truncated: showing 2000 of 40000 lines (18.5KB of 418.8KB). \
         Ask the tool for less (a narrower query, a page or a limit, if it takes one)]"
    );
}

#[tokio::test]
async fn an_answer_over_the_transports_limit_fails_its_call_at_once_and_the_server_stays() {
    if !python3_installed() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (_servers, tools) = start(dir.path(), vec![python_server("big", "big_server.py")]).await;

    // One line of 17 MiB and more: over the 16 MiB a message may have.
    let (is_error, content) = call(&tools, "mcp__big__big", json!({"size": 17 << 20})).await;
    assert!(is_error);
    assert_eq!(
        text(&content),
        "MCP server \"big\" failed the call to \"big\": its answer was 17.0MB, \
         more than the 16.0MB one message may hold. Ask the tool for less (a narrower query, \
         a page or a limit, if it takes one)"
    );

    let (is_error, content) = call(&tools, "mcp__big__big", json!({"size": 3})).await;
    assert!(!is_error, "{content:?}");
    assert_eq!(text(&content), "xxx");
}

/// An answer the client could not read was dropped without a word: its
/// call waited out `toolTimeoutSec` (60 s by default), then read "timed out
/// ... Try a smaller request". Bytes that are not UTF-8 are now replaced,
/// and an answer that is no JSON-RPC message fails its call at once, saying
/// what was wrong; log lines on stdout are still passed over.
#[tokio::test]
async fn an_answer_the_client_cannot_read_fails_its_call_at_once_saying_why() {
    if !python3_installed() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut config = python_server("odd", "unreadable_server.py");
    // Only so that a wrong run ends sooner; nothing here waits on it.
    config.tool_timeout = Duration::from_secs(20);
    let (_servers, tools) = start(dir.path(), vec![config]).await;

    let (is_error, content) = call(&tools, "mcp__odd__latin1", json!({})).await;
    assert!(!is_error, "{content:?}");
    assert_eq!(text(&content), "caf\u{FFFD}");

    let (is_error, content) = call(&tools, "mcp__odd__no_message", json!({})).await;
    assert!(is_error);
    // rmcp numbers requests from 0: initialize, tools/list, latin1, this.
    assert_eq!(
        text(&content),
        "MCP server \"odd\" failed the call to \"no_message\": its answer is not a JSON-RPC \
         message the client can read (missing field `message`): \
         {\"jsonrpc\":\"2.0\",\"id\":3,\"error\":{\"code\":-32000}}. \
         The server is at fault, not the call: the same call will likely fail again"
    );

    for tool in ["noisy", "echo"] {
        let (is_error, content) = call(&tools, &format!("mcp__odd__{tool}"), json!({})).await;
        assert!(!is_error, "{content:?}");
        assert_eq!(text(&content), tool);
    }
}

#[tokio::test]
async fn tools_whose_schemas_providers_would_refuse_are_mended_or_left_out() {
    if !python3_installed() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let config = python_server("schemas", "schemas_server.py");
    let (servers, failures) = McpServers::start(vec![config], dir.path()).await;
    assert_eq!(failures, Vec::<String>::new());
    let (definitions, warnings) = servers.tool_definitions();
    let offered: Vec<(&str, &Value)> = definitions
        .iter()
        .map(|definition| {
            (
                definition.tool().name.as_str(),
                &definition.tool().parameters,
            )
        })
        .collect();
    // Without `inputSchema` a tool takes nothing; one whose name is no
    // string is left out. Either made the whole listing unreadable, and the
    // server failed to start (`Unexpected response type`).
    let names: Vec<&str> = offered.iter().map(|(name, _)| *name).collect();
    assert_eq!(
        names[4..],
        ["mcp__schemas__bare", "mcp__schemas__schemaless"]
    );
    assert_eq!(offered[5].1, &json!({"type": "object", "properties": {}}));
    let offered = &offered[..4];
    let text_object = json!({"type": "object", "properties": {"text": {"type": "string"}}});
    assert_eq!(
        offered,
        [
            ("mcp__schemas__sound", &text_object),
            (
                "mcp__schemas__untyped",
                &json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]})
            ),
            // Offered without the dialect the validator does not know
            // (models ignore it), and as an object.
            ("mcp__schemas__dialect", &text_object),
            ("mcp__schemas__nullable", &text_object),
        ]
    );
    // Returned with the others (not logged at each listing), so that the
    // session gives each once however often the server lists again.
    assert_eq!(warnings.len(), 3, "{warnings:?}");
    assert_eq!(
        warnings[0],
        "MCP tool 7 of server \"schemas\" left out: its listing cannot be read: invalid type: integer `7`, expected a string"
    );
    assert_eq!(
        warnings[1],
        "MCP tool \"listed\" of server \"schemas\" left out: its input schema is of type \"array\", and models are given only tools that take an object"
    );
    assert!(
        warnings[2].starts_with(
            "MCP tool \"broken\" of server \"schemas\" left out: its input schema does not compile: "
        ),
        "{}",
        warnings[2]
    );
    // An answer that is no tool result reads as the server's JSON.
    let tools = tools_of(definitions, dir.path());
    let (is_error, content) = call(&tools, "mcp__schemas__bare", json!({})).await;
    assert!(is_error);
    assert_eq!(
        text(&content),
        "MCP server \"schemas\" failed the call to \"bare\": its answer is not a tool result: 42"
    );
}

/// A Python SDK server as its users write one: a nested model's schema sits
/// behind a `$ref`, whose values were not coerced (`"x": "2"` failed
/// `point.x: must be integer`), and a list was read twice (its items, then
/// `{"result":["a","b"]}`).
#[tokio::test]
async fn a_python_sdk_servers_models_are_coerced_and_its_lists_read_once() {
    if !python_mcp_installed() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (_servers, tools) = start(dir.path(), vec![python_server("sdk", "sdk_server.py")]).await;
    let (is_error, content) = call(
        &tools,
        "mcp__sdk__moved",
        json!({"point": {"x": "2", "y": 3}, "by": {"x": 10, "y": "20"}}),
    )
    .await;
    assert!(!is_error, "{content:?}");
    assert_eq!(text(&content), "12,23");
    let (is_error, content) = call(&tools, "mcp__sdk__letters", json!({})).await;
    assert!(!is_error, "{content:?}");
    assert_eq!(text(&content), "a\nb");
}

/// A content block of a kind newer than the protocol this client speaks is
/// said in its place; the rest of the answer is kept (the whole answer was
/// refused as "not a tool result").
#[tokio::test]
async fn a_block_of_an_unknown_kind_is_said_and_the_rest_kept() {
    if !python3_installed() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let config = python_server("blocks", "blocks_server.py");
    let (_servers, tools) = start(dir.path(), vec![config]).await;
    let blocks = json!([{"type": "text", "text": "kept"}, {"type": "futurekind", "foo": 1}]);
    let (is_error, content) = call(&tools, "mcp__blocks__blocks", json!({"blocks": blocks})).await;
    assert_eq!(
        (is_error, content),
        (
            false,
            vec![
                Content::text("kept"),
                Content::text(r#"[unsupported MCP content: {"type":"futurekind","foo":1}]"#)
            ]
        )
    );
}

/// A server's image is fitted as `read` fits one: sent when within the
/// limits, scaled down with a note when larger, and described when it cannot
/// be sent (a provider would refuse it in every later request).
#[tokio::test]
async fn images_are_fitted_as_reads_are_or_described() {
    if !python3_installed() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let config = python_server("image", "image_server.py");
    let (servers, tools) = start(dir.path(), vec![config]).await;
    let show = |png: Vec<u8>, mime_type: &str| {
        let arguments = json!({"data": STANDARD.encode(png), "mimeType": mime_type});
        call(&tools, "mcp__image__show", arguments)
    };

    let small = png_of(&image::RgbImage::new(3, 2));
    let (is_error, content) = show(small.clone(), "image/png").await;
    assert!(!is_error);
    assert_eq!(
        content,
        vec![Content::image(STANDARD.encode(small), "image/png")]
    );

    let (_, content) = show(png_of(&image::RgbImage::new(3000, 1500)), "image/png").await;
    assert!(matches!(&content[0], Content::Image(image) if image.mime_type == "image/png"));
    assert_eq!(
        text(&content),
        "[Image: original 3000x1500, displayed at 2000x1000. Multiply coordinates by 1.50 to \
         map to original image.]"
    );

    let (is_error, content) = show(png_claiming(20_000, 20_000), "image/png").await;
    assert!(!is_error);
    assert_eq!(
        content,
        vec![Content::text(
            "[image: image/png, 20000x20000 pixels, not shown: more than the 100 megapixels an \
             image may have to be scaled down]"
        )]
    );

    let (_, content) = show(b"<svg/>".to_vec(), "image/svg+xml").await;
    assert_eq!(
        text(&content),
        "[image: image/svg+xml, 6 bytes, not shown: not a PNG, JPEG, GIF or WebP image]"
    );

    // A model that takes no images is told one was there, as read tells
    // it: the request leaves the image out.
    let (definitions, _) = servers.tool_definitions();
    let mut ctx = ToolContext::new(dir.path());
    ctx.model = Some(agent_ai::Model::new(
        "text-only",
        "test",
        "openai-completions",
    ));
    let small = png_of(&image::RgbImage::new(3, 2));
    let arguments = json!({"data": STANDARD.encode(small), "mimeType": "image/png"});
    let result = definitions[0].execute(arguments, ctx).await.unwrap();
    assert_eq!(
        (result.content[0].as_text(), result.content.len()),
        (
            Some(
                "[Current model does not support images. The image will be omitted from this request.]"
            ),
            2
        )
    );
}

#[tokio::test]
async fn invalid_arguments_fail_validation_with_the_schemas_error_text() {
    if !everything_installed() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (_servers, tools) = start(dir.path(), vec![everything()]).await;
    let (is_error, content) = call(
        &tools,
        "mcp__everything__get-sum",
        json!({"a": "two", "b": 3}),
    )
    .await;
    assert!(is_error);
    assert_eq!(
        text(&content),
        "Validation failed for tool \"mcp__everything__get-sum\":\n  - a: must be number\n\nReceived arguments:\n{\n  \"a\": \"two\",\n  \"b\": 3\n}"
    );
}

#[tokio::test]
async fn progress_notifications_become_tool_updates() {
    if !everything_installed() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (_servers, tools) = start(dir.path(), vec![everything()]).await;
    let tool = tools
        .get("mcp__everything__trigger-long-running-operation")
        .unwrap();
    let (sink, mut updates) = UpdateSink::channel();
    let result = tool
        .execute(
            "call_1",
            json!({"duration": 1.5, "steps": 3}),
            CancellationToken::new(),
            sink,
        )
        .await
        .unwrap();
    assert!(text(&result.content).contains("completed"), "{result:?}");
    let mut seen = Vec::new();
    while let Ok(update) = updates.try_recv() {
        seen.push(text(&update.content));
    }
    // The last notification may race the result; the ones before may not.
    assert_eq!(seen[..2], ["progress 1/3", "progress 2/3"]);
}

#[tokio::test]
async fn a_slow_call_times_out_and_the_server_is_told_to_cancel() {
    if !everything_installed() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("stdin.log");
    let mut config = shell_server(
        "everything",
        &recording_stdin("mcp-server-everything stdio", &log),
    );
    config.tool_timeout = Duration::from_millis(1500);
    let (_servers, tools) = start(dir.path(), vec![config]).await;
    let (is_error, content) = call(
        &tools,
        "mcp__everything__trigger-long-running-operation",
        json!({"duration": 30, "steps": 30}),
    )
    .await;
    assert!(is_error);
    assert_eq!(
        text(&content),
        "MCP tool \"trigger-long-running-operation\" of server \"everything\" timed out after 1.5 s and was cancelled. Try a smaller request, or ask the user to raise \"toolTimeoutSec\" for this server."
    );
    let cancelled = wait_for_line(&log, "notifications/cancelled").await;
    let cancelled: Value = serde_json::from_str(&cancelled).unwrap();
    let call_id = request_id_of(&log, "tools/call");
    assert_eq!(cancelled["params"]["requestId"], call_id);
    assert_eq!(cancelled["params"]["reason"], "timed out after 1.5 s");

    // The server is still usable after a cancelled call.
    let (is_error, content) = call(&tools, "mcp__everything__echo", json!({"message": "ok"})).await;
    assert!(!is_error, "{content:?}");
}

#[tokio::test]
async fn an_abort_cancels_the_call_on_the_server() {
    if !everything_installed() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("stdin.log");
    let config = shell_server(
        "everything",
        &recording_stdin("mcp-server-everything stdio", &log),
    );
    let (_servers, tools) = start(dir.path(), vec![config]).await;
    let tool = tools
        .get("mcp__everything__trigger-long-running-operation")
        .unwrap();
    let cancel = CancellationToken::new();
    let abort = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(500)).await;
        abort.cancel();
    });
    let error = tool
        .execute(
            "call_1",
            json!({"duration": 30, "steps": 30}),
            cancel,
            UpdateSink::discard(),
        )
        .await
        .unwrap_err();
    assert_eq!(error.message(), "Operation aborted");
    let cancelled: Value =
        serde_json::from_str(&wait_for_line(&log, "notifications/cancelled").await).unwrap();
    assert_eq!(cancelled["params"]["reason"], "aborted");
}

/// `tests/mcp_support/relist_server.py` listing its tools as `mode` says.
fn relist_server(mode: &str) -> ServerConfig {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp_support/relist_server.py");
    shell_server(
        "relist",
        &format!("MODE={mode} exec python3 -B {}", script.display()),
    )
}

/// `call` of `tools`, failing the test if it does not end within a minute
/// (these calls hung forever).
async fn call_ending(tools: &ToolSet, name: &str) -> (bool, Vec<Content>) {
    tokio::time::timeout(Duration::from_secs(60), call(tools, name, json!({})))
        .await
        .unwrap_or_else(|_| panic!("the call of {name} did not end"))
}

/// A server answering every page with the cursor it was asked for kept its
/// start spinning until the startup timeout (which then advised raising
/// it), and a call that made it re-list never returned while it was sent
/// ~15,000 `tools/list` a second.
#[tokio::test]
async fn a_listing_that_repeats_its_cursor_ends_with_a_warning() {
    if !python3_installed() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (servers, failures) = McpServers::start(vec![relist_server("loop")], dir.path()).await;
    assert_eq!(failures, Vec::<String>::new());
    let (definitions, warnings) = servers.tool_definitions();
    let warning = "MCP server \"relist\" answered tools/list with the cursor \"same\" a second time; its listing was ended there, with the tools read so far";
    assert_eq!(warnings, [warning]);
    let tools = tools_of(definitions, dir.path());
    let (is_error, content) = call_ending(&tools, "mcp__relist__relist").await;
    assert_eq!((is_error, text(&content).as_str()), (false, "relisted"));
    let (_, warnings) = servers.tool_definitions();
    assert_eq!(warnings, [warning]);
    assert_eq!(servers.status()[0].tools, ["mcp__relist__relist"]);
}

/// A server that answered its re-list after 25 s held the call that made
/// it re-list those 25 s, past its 3 s `toolTimeoutSec`, and its later calls
/// queued behind: the re-list now has the tool timeout, and the earlier
/// tools stay offered.
#[tokio::test]
async fn a_slow_relisting_does_not_hold_up_the_call_or_the_next_ones() {
    if !python3_installed() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut config = relist_server("slow");
    config.tool_timeout = Duration::from_secs(2);
    let (servers, tools) = start(dir.path(), vec![config]).await;
    for _ in 0..2 {
        let (is_error, content) = call_ending(&tools, "mcp__relist__relist").await;
        assert_eq!((is_error, text(&content).as_str()), (false, "relisted"));
    }
    assert_eq!(servers.status()[0].tools, ["mcp__relist__relist"]);
}

/// A working directory that does not exist is named as such: the spawn's
/// "No such file or directory" read as if the command were missing.
#[tokio::test]
async fn a_server_whose_working_directory_is_missing_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let mut lost = shell_server("lost", "exit 0");
    let missing = dir.path().join("gone");
    if let Transport::Stdio { cwd, .. } = &mut lost.transport {
        *cwd = Some(missing.clone());
    }
    let (_servers, failures) = McpServers::start(vec![lost], dir.path()).await;
    assert_eq!(
        failures,
        [format!(
            "MCP server \"lost\" did not start: its working directory \"{}\" is not a directory that exists",
            missing.display()
        )]
    );
}

#[tokio::test]
async fn a_server_that_exits_at_start_does_not_stop_the_others() {
    if !everything_installed() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let broken = shell_server("broken", "echo 'no config found' >&2; exit 3");
    let mut slow = shell_server("slow", "sleep 30");
    slow.startup_timeout = Duration::from_millis(300);
    let mut off = shell_server("off", "exit 1");
    off.disabled = true;
    let (servers, failures) =
        McpServers::start(vec![broken, everything(), slow, off], dir.path()).await;
    assert_eq!(failures.len(), 2, "{failures:?}");
    assert!(
        failures[0].starts_with("MCP server \"broken\" did not start: ")
            && failures[0].ends_with("(stderr: no config found)"),
        "{failures:?}"
    );
    assert_eq!(
        failures[1],
        "MCP server \"slow\" did not start: timed out after 0.3 s (raise \"startupTimeoutSec\" in its entry in settings.json)"
    );
    let tools = tool_set(&servers, dir.path());
    let (is_error, _) = call(&tools, "mcp__everything__echo", json!({"message": "x"})).await;
    assert!(!is_error);
    let states: Vec<(String, &str)> = servers
        .status()
        .into_iter()
        .map(|ServerStatus { name, status, .. }| (name, status))
        .collect();
    assert_eq!(
        states,
        [
            ("broken".to_owned(), "failed"),
            ("everything".to_owned(), "running"),
            ("slow".to_owned(), "failed"),
            ("off".to_owned(), "disabled"),
        ]
    );
}

/// A server that exits right after the handshake, before its tools are
/// listed, says why as one that exits during it does: it read only
/// "did not start: Transport closed".
#[tokio::test]
async fn a_server_that_exits_before_listing_its_tools_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let initialized = r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"early","version":"1"}}}"#;
    let early = shell_server(
        "early",
        &format!(
            "read -r _; echo '{initialized}'; read -r _; echo 'database is locked' >&2; exit 3"
        ),
    );
    let (_servers, failures) = McpServers::start(vec![early], dir.path()).await;
    assert_eq!(
        failures,
        [
            "MCP server \"early\" did not start: it exited before listing its tools (stderr: database is locked)"
        ]
    );
}

#[tokio::test]
async fn configured_servers_start_in_the_background_each_offering_its_tools_when_up() {
    if !everything_installed() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let gate = dir.path().join("go");
    let held = shell_server(
        "held",
        &format!(
            "while [ ! -e '{}' ]; do sleep 0.05; done; exec mcp-server-everything stdio",
            gate.display()
        ),
    );
    let mut off = shell_server("off", "exit 1");
    off.disabled = true;
    let servers = McpServers::configure(vec![everything(), held, off], dir.path());
    assert_eq!(servers.starting(), ["everything", "held"]);
    assert!(servers.tool_definitions().0.is_empty());
    let told = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&told);
    servers.set_listener(move || {
        counter.fetch_add(1, Ordering::SeqCst);
    });

    let starting = servers.clone();
    let start = tokio::spawn(async move { starting.start_all().await });
    // The first server's tools are offered while the held one still starts.
    tokio::time::timeout(Duration::from_secs(60), async {
        while servers.starting() != ["held"] {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .unwrap();
    assert_eq!(told.load(Ordering::SeqCst), 1);
    assert!(!servers.tool_definitions().0.is_empty());
    let waiting = tokio::time::timeout(Duration::from_millis(300), servers.started()).await;
    assert!(waiting.is_err(), "started() resolved while \"held\" starts");

    std::fs::write(&gate, "").unwrap();
    tokio::time::timeout(Duration::from_secs(60), servers.started())
        .await
        .unwrap();
    // Told before `started` resolved: a prompt that waited has every tool.
    assert_eq!(told.load(Ordering::SeqCst), 2);
    assert!(start.await.unwrap().is_empty());
    let states: Vec<&str> = servers.status().iter().map(|s| s.status).collect();
    assert_eq!(states, ["running", "running", "disabled"]);
}

#[tokio::test]
async fn a_server_killed_mid_session_is_restarted_once() {
    if !everything_installed() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (pid, servers, tools) = start_everything_writing_pid(dir.path()).await;
    let echo = |message: &'static str| {
        let tools = &tools;
        async move { call(tools, "mcp__everything__echo", json!({"message": message})).await }
    };
    assert_eq!(echo("one").await, (false, vec![Content::text("Echo: one")]));

    kill(&pid).await;
    assert_eq!(echo("two").await, (false, vec![Content::text("Echo: two")]));

    kill(&pid).await;
    let (is_error, content) = echo("three").await;
    assert!(is_error);
    assert_eq!(
        text(&content),
        "MCP server \"everything\" is not running: it exited again after being restarted once (stderr: Starting default (STDIO) server...). Its tools cannot be used in this session; do the task another way."
    );
    assert_eq!(servers.status()[0].status, "failed");
}

#[tokio::test]
async fn a_server_that_dies_during_a_call_after_its_restart_says_it_stays_down() {
    if !everything_installed() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (pid, _servers, tools) = start_everything_writing_pid(dir.path()).await;
    // A 30 s operation, its server killed a second into it.
    let dies_during_a_call = || async {
        let killing = async {
            tokio::time::sleep(Duration::from_secs(1)).await;
            kill(&pid).await;
        };
        let operation = json!({"duration": 30, "steps": 30});
        let name = "mcp__everything__trigger-long-running-operation";
        let ((is_error, content), ()) = tokio::join!(call(&tools, name, operation), killing);
        assert!(is_error);
        text(&content)
    };
    let stopped = "MCP server \"everything\" stopped during the call (stderr: Starting default (STDIO) server...).";
    assert_eq!(
        dies_during_a_call().await,
        format!("{stopped} It is restarted once on the next call.")
    );
    let echo = call(&tools, "mcp__everything__echo", json!({"message": "back"})).await;
    assert_eq!(echo, (false, vec![Content::text("Echo: back")]));
    assert_eq!(
        dies_during_a_call().await,
        format!(
            "{stopped} It was restarted once already and is not restarted again: its tools cannot be used in this session; do the task another way."
        )
    );
}

/// The everything server started in `dir`, writing its pid to the file
/// returned (for [`kill`]).
async fn start_everything_writing_pid(dir: &Path) -> (PathBuf, McpServers, ToolSet) {
    let pid = dir.join("pid");
    let config = shell_server(
        "everything",
        &writing_pid("mcp-server-everything stdio", &pid),
    );
    let (servers, tools) = start(dir, vec![config]).await;
    (pid, servers, tools)
}

/// Kills the process whose pid is in `file` and waits until it is gone.
async fn kill(file: &Path) {
    let pid = std::fs::read_to_string(file).unwrap().trim().to_owned();
    std::process::Command::new("kill")
        .args(["-9", &pid])
        .status()
        .unwrap();
    for _ in 0..100 {
        if !Path::new(&format!("/proc/{pid}")).exists()
            || std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .is_ok_and(|stat| stat.contains(") Z "))
        {
            // Give the client a moment to see the closed pipe.
            tokio::time::sleep(Duration::from_millis(200)).await;
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("process {pid} did not die");
}

/// The first line of `log` containing `needle`, waiting up to 5 s for it.
async fn wait_for_line(log: &Path, needle: &str) -> String {
    for _ in 0..250 {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        if let Some(line) = text.lines().find(|line| line.contains(needle)) {
            return line.to_owned();
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!(
        "no {needle} in {}",
        std::fs::read_to_string(log).unwrap_or_default()
    );
}

/// The id of the first request with `method` in `log`.
fn request_id_of(log: &Path, method: &str) -> Value {
    let text = std::fs::read_to_string(log).unwrap();
    text.lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .find(|message| message["method"] == method)
        .map(|message| message["id"].clone())
        .unwrap()
}

fn http_server(name: &str, url: String, headers: &[(&str, &str)]) -> ServerConfig {
    ServerConfig {
        transport: Transport::Http {
            url,
            headers: headers
                .iter()
                .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
                .collect(),
        },
        ..shell_server(name, "")
    }
}

#[tokio::test]
async fn an_http_server_that_goes_away_fails_one_call_and_is_reconnected_once() {
    if !everything_installed() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut web = HttpServer::everything();
    let (servers, tools) = start(dir.path(), vec![http_server("web", web.url(), &[])]).await;
    let status = || {
        let status = &servers.status()[0];
        (status.status, status.error.clone())
    };
    assert!(
        servers.status()[0]
            .tools
            .contains(&"mcp__web__get-sum".to_owned())
    );
    let echo = |message: &'static str| {
        let tools = &tools;
        async move { call(tools, "mcp__web__echo", json!({"message": message})).await }
    };
    assert_eq!(echo("one").await, (false, vec![Content::text("Echo: one")]));
    assert_eq!(status(), ("running", None));

    // Down: the call fails at once with the reason (refused, or the pooled
    // connection closed, whichever the request met), and the server counts
    // as stopped until its next call connects again.
    web.kill();
    let (is_error, content) = echo("two").await;
    assert!(is_error);
    let message = text(&content);
    let why = between(
        &message,
        "MCP server \"web\" could not be reached (",
        "). It is reconnected once on the next call.",
    );
    assert!(
        ["Connection refused", "connection closed"]
            .iter()
            .any(|cause| why.starts_with(cause)),
        "{why}"
    );
    assert_eq!(
        status(),
        (
            "stopped",
            Some(format!("the server could not be reached ({why})"))
        )
    );

    // Back (a new process, so a new session): the next call reconnects.
    web.restart();
    assert_eq!(
        echo("three").await,
        (false, vec![Content::text("Echo: three")])
    );

    // Down again after its one reconnection: its tools say so for good.
    web.kill();
    assert!(echo("four").await.0);
    let (is_error, content) = echo("five").await;
    assert!(is_error);
    between(
        &text(&content),
        "MCP server \"web\" is not running: it could not be reached again after being reconnected once (",
        "). Its tools cannot be used in this session; do the task another way.",
    );
    assert_eq!(status().0, "failed");
}

#[tokio::test]
async fn an_http_server_that_fails_calls_fails_those_calls_and_stays_connected() {
    if !python3_installed() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let web = HttpServer::failing();
    let (servers, tools) = start(dir.path(), vec![http_server("web", web.url(), &[])]).await;
    let failed = [
        (
            "mcp__web__overloaded",
            "MCP server \"web\" failed the call to \"overloaded\": HTTP 500 Internal Server Error: upstream timed out",
        ),
        (
            "mcp__web__portal",
            "MCP server \"web\" failed the call to \"portal\": it answered with text/html where JSON or an event stream was expected",
        ),
    ];
    // Each failure is that call's; a server that answers is not reconnected,
    // so failures do not use up its one reconnection.
    for round in 0..3 {
        for (tool, expected) in failed {
            let (is_error, content) = call(&tools, tool, json!({"text": "x"})).await;
            assert!(is_error, "{round}: {tool}");
            assert_eq!(text(&content), expected, "{round}");
            assert_eq!(servers.status()[0].status, "running", "{round}: {tool}");
        }
        // rmcp dropped an event it could not read: the call read as the
        // server gone ("stopped during the call"), with the last failure's
        // words.
        let (is_error, content) = call(&tools, "mcp__web__unreadable", json!({"text": "x"})).await;
        assert!(is_error, "{round}");
        assert!(
            text(&content).starts_with(
                "MCP server \"web\" failed the call to \"unreadable\": its answer is not a \
                 JSON-RPC message the client can read (missing field `message`): "
            ),
            "{round}: {content:?}"
        );
        let echoed = call(&tools, "mcp__web__echo", json!({"text": "still here"})).await;
        assert_eq!(
            echoed,
            (false, vec![Content::text("still here")]),
            "{round}"
        );
    }
}

/// What `text` holds between `prefix` and `suffix`; it must have both.
fn between<'a>(text: &'a str, prefix: &str, suffix: &str) -> &'a str {
    text.strip_prefix(prefix)
        .and_then(|rest| rest.strip_suffix(suffix))
        .unwrap_or_else(|| panic!("{text:?} is not {prefix:?}...{suffix:?}"))
}

#[tokio::test]
async fn an_http_server_that_is_down_at_start_is_reported_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    // A port nothing listens on: taken from the kernel, then released.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let configs = vec![
        http_server("down", url.clone(), &[]),
        http_server("bad", url.clone(), &[("Accept", "text/plain")]),
    ];
    let (servers, failures) = McpServers::start(configs, dir.path()).await;
    assert_eq!(
        failures,
        [
            format!(
                "MCP server \"down\" did not start: {url}: the MCP handshake failed: Connection refused (os error 111)"
            ),
            format!(
                "MCP server \"bad\" did not start: {url}: header \"Accept\" is set by the MCP transport itself; remove it from \"headers\""
            ),
        ]
    );
    assert!(servers.tool_definitions().0.is_empty());
}

#[tokio::test]
async fn a_call_after_the_http_server_restarted_reaches_the_new_process() {
    if !everything_installed() || !python_mcp_installed() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // The Python SDK answers a session it does not know 404, and rmcp opens
    // a new one; the reference server answers 400 with a JSON-RPC error
    // for no request, which fails that call with the server's text (rather
    // than leaving it to its timeout) and the next call reconnects.
    let everything_refusal = "MCP server \"web\" refused this connection (HTTP 400 Bad Request: {\"jsonrpc\":\"2.0\",\"error\":{\"code\":-32000,\"message\":\"Bad Request: No valid session ID provided\"}}). It is reconnected once on the next call.";
    for (web, tool, first_after) in [
        (HttpServer::python(), "mcp__web__headers", None),
        (
            HttpServer::everything(),
            "mcp__web__echo",
            Some(everything_refusal),
        ),
    ] {
        let mut config = http_server("web", web.url(), &[]);
        // A call that hangs fails the test sooner than the default 60 s.
        config.tool_timeout = Duration::from_secs(20);
        let (_servers, tools) = start(dir.path(), vec![config]).await;
        assert!(!call(&tools, tool, json!({"message": "before"})).await.0);
        // Restarted off the runtime's thread, so the client sees its old
        // connections close as it would in the binary.
        let _web = tokio::task::spawn_blocking(move || {
            let mut web = web;
            web.restart();
            web
        })
        .await
        .unwrap();
        let (is_error, content) = call(&tools, tool, json!({"message": "after"})).await;
        assert_eq!(
            is_error.then(|| text(&content)).as_deref(),
            first_after,
            "{}",
            text(&content)
        );
        let (is_error, content) = call(&tools, tool, json!({"message": "again"})).await;
        assert!(!is_error, "{}", text(&content));
    }
}
