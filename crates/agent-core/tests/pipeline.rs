//! One tool call through the five steps (`docs/tool-behaviour.md` §2.2): every
//! failure, a panic included, becomes one error result; hooks see the raw call
//! and the validated arguments; `after_tool_call` overrides field by field.

#![allow(clippy::unwrap_used)]

mod common;

use std::sync::{Arc, Mutex};

use agent_ai::{Content, Tool, ToolCall, ToolResultMessage};
use agent_core::{
    AfterToolCallContext, AgentTool, AgentToolResult, BeforeToolCall, NoHooks, ToolCallContext,
    ToolCallHooks, ToolError, ToolResultOverride, ToolSet, UpdateSink, run_single_tool_call,
    run_single_tool_call_with_updates,
};
use async_trait::async_trait;
use common::tool_call;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// What [`Probe`] does when executed.
#[derive(Clone)]
enum Behaviour {
    Succeed,
    Fail(&'static str),
    PanicStr,
    PanicString,
    FailWithDetails(&'static str),
    /// Sends two progress updates, then succeeds.
    Progress,
}

/// A configurable tool: `prepare_arguments` wraps a bare string into
/// `{"value": s}` and fails on `{"fail": true}`; execute records the params it got.
struct Probe {
    tool: Tool,
    behaviour: Behaviour,
    seen: Arc<Mutex<Vec<(Value, bool)>>>,
}

impl Probe {
    fn new(behaviour: Behaviour) -> Self {
        Probe {
            tool: Tool {
                name: "probe".into(),
                description: "Probes.".into(),
                parameters: json!({"type": "object", "properties": {"value": {"type": "string"}}}),
            },
            behaviour,
            seen: Arc::default(),
        }
    }
}

#[async_trait]
impl AgentTool for Probe {
    fn tool(&self) -> &Tool {
        &self.tool
    }

    fn label(&self) -> &str {
        "Probe"
    }

    fn prepare_arguments(&self, arguments: Value) -> Result<Value, ToolError> {
        match arguments {
            Value::String(s) => Ok(json!({ "value": s })),
            Value::Object(ref map) if map.get("fail") == Some(&json!(true)) => {
                Err(ToolError::new("edits must be an array"))
            }
            Value::Object(ref map) if map.get("panic") == Some(&json!(true)) => {
                panic!("prepare exploded")
            }
            other => Ok(other),
        }
    }

    async fn execute(
        &self,
        _id: &str,
        params: Value,
        cancel: CancellationToken,
        updates: UpdateSink,
    ) -> Result<AgentToolResult, ToolError> {
        self.seen
            .lock()
            .unwrap()
            .push((params.clone(), cancel.is_cancelled()));
        match self.behaviour {
            Behaviour::Succeed => Ok(AgentToolResult::text("fine").with_details(json!({"n": 1}))),
            Behaviour::Fail(message) => Err(ToolError::new(message)),
            Behaviour::FailWithDetails(message) => {
                Err(ToolError::new(message).with_details(json!({"exitCode": 2})))
            }
            Behaviour::PanicStr => panic!("index out of bounds"),
            Behaviour::PanicString => panic!("{} is not a file", "a.txt"),
            Behaviour::Progress => {
                updates.send(AgentToolResult::text("half"));
                updates.send(AgentToolResult::text("almost"));
                Ok(AgentToolResult::text("fine"))
            }
        }
    }
}

fn set(tool: Probe) -> ToolSet {
    ToolSet::new(vec![Arc::new(tool) as Arc<dyn AgentTool>]).unwrap()
}

/// The result without its timestamp, for whole-value comparison.
fn strip(mut message: ToolResultMessage) -> ToolResultMessage {
    message.timestamp = 0;
    message
}

fn expected(id: &str, text: &str, details: Option<Value>, is_error: bool) -> ToolResultMessage {
    ToolResultMessage {
        tool_call_id: id.into(),
        tool_name: "probe".into(),
        content: vec![Content::text(text)],
        details,
        is_error,
        timestamp: 0,
    }
}

async fn run(tools: &ToolSet, call: &ToolCall, hooks: &dyn ToolCallHooks) -> ToolResultMessage {
    strip(run_single_tool_call(tools, call, hooks, &CancellationToken::new()).await)
}

#[tokio::test]
async fn successful_call_keeps_the_tools_content_and_details() {
    let tools = set(Probe::new(Behaviour::Succeed));
    let call = tool_call("1", "probe", json!({"value": "x"}));
    assert_eq!(
        run(&tools, &call, &NoHooks).await,
        expected("1", "fine", Some(json!({"n": 1})), false)
    );
}

#[tokio::test]
async fn unknown_tool_is_named_without_quotes() {
    let tools = set(Probe::new(Behaviour::Succeed));
    let call = tool_call("1", "nope", json!({}));
    assert_eq!(
        run(&tools, &call, &NoHooks).await,
        ToolResultMessage {
            tool_name: "nope".into(),
            ..expected("1", "Tool nope not found", Some(json!({})), true)
        }
    );
}

#[tokio::test]
async fn prepare_arguments_error_becomes_the_result_text() {
    let probe = Probe::new(Behaviour::Succeed);
    let seen = probe.seen.clone();
    let tools = set(probe);
    let call = tool_call("1", "probe", json!({"fail": true}));
    assert_eq!(
        run(&tools, &call, &NoHooks).await,
        expected("1", "edits must be an array", Some(json!({})), true)
    );
    assert!(seen.lock().unwrap().is_empty(), "execute must not run");
}

#[tokio::test]
async fn panic_in_prepare_arguments_becomes_the_result_text() {
    let tools = set(Probe::new(Behaviour::Succeed));
    let call = tool_call("1", "probe", json!({"panic": true}));
    assert_eq!(
        run(&tools, &call, &NoHooks).await,
        expected("1", "prepare exploded", Some(json!({})), true)
    );
}

#[tokio::test]
async fn execute_error_becomes_the_result_text_with_empty_details() {
    let tools = set(Probe::new(Behaviour::Fail(
        "Offset 100 is beyond end of file (3 lines total)",
    )));
    let call = tool_call("1", "probe", json!({"value": "x"}));
    assert_eq!(
        run(&tools, &call, &NoHooks).await,
        expected(
            "1",
            "Offset 100 is beyond end of file (3 lines total)",
            Some(json!({})),
            true
        )
    );
}

#[tokio::test]
async fn execute_error_with_details_keeps_them_in_the_result() {
    let tools = set(Probe::new(Behaviour::FailWithDetails(
        "Command exited with code 2",
    )));
    let call = tool_call("1", "probe", json!({"value": "x"}));
    assert_eq!(
        run(&tools, &call, &NoHooks).await,
        expected(
            "1",
            "Command exited with code 2",
            Some(json!({"exitCode": 2})),
            true
        )
    );
}

#[tokio::test]
async fn panic_in_execute_becomes_the_result_text() {
    let tools = set(Probe::new(Behaviour::PanicStr));
    let call = tool_call("1", "probe", json!({}));
    assert_eq!(
        run(&tools, &call, &NoHooks).await,
        expected("1", "index out of bounds", Some(json!({})), true)
    );
    let tools = set(Probe::new(Behaviour::PanicString));
    assert_eq!(
        run(&tools, &call, &NoHooks).await,
        expected("1", "a.txt is not a file", Some(json!({})), true)
    );
}

/// Records what the hooks saw and answers as configured.
#[derive(Default)]
struct Scripted {
    before: Option<Result<BeforeToolCall, ToolError>>,
    before_panics: bool,
    after: Option<Result<Option<ToolResultOverride>, ToolError>>,
    seen_before: Mutex<Vec<(ToolCall, Value, bool)>>,
    seen_after: Mutex<Vec<(AgentToolResult, bool)>>,
}

#[async_trait]
impl ToolCallHooks for Scripted {
    async fn before_tool_call(
        &self,
        call: &ToolCallContext<'_>,
        cancel: &CancellationToken,
    ) -> Result<BeforeToolCall, ToolError> {
        self.seen_before.lock().unwrap().push((
            call.tool_call.clone(),
            call.args.clone(),
            cancel.is_cancelled(),
        ));
        if self.before_panics {
            panic!("hook exploded");
        }
        self.before.clone().unwrap_or(Ok(BeforeToolCall::Proceed))
    }

    async fn after_tool_call(
        &self,
        call: &AfterToolCallContext<'_>,
        _cancel: &CancellationToken,
    ) -> Result<Option<ToolResultOverride>, ToolError> {
        self.seen_after
            .lock()
            .unwrap()
            .push((call.result.clone(), call.is_error));
        self.after.clone().unwrap_or(Ok(None))
    }
}

#[tokio::test]
async fn hooks_see_the_raw_call_and_the_prepared_validated_args() {
    let probe = Probe::new(Behaviour::Succeed);
    let seen = probe.seen.clone();
    let tools = set(probe);
    let hooks = Scripted::default();
    // The model sent a bare string; prepare_arguments wraps it.
    let call = tool_call("1", "probe", json!("hello"));
    run(&tools, &call, &hooks).await;
    assert_eq!(
        *hooks.seen_before.lock().unwrap(),
        [(call.clone(), json!({"value": "hello"}), false)]
    );
    assert_eq!(*seen.lock().unwrap(), [(json!({"value": "hello"}), false)]);
}

#[tokio::test]
async fn hooks_and_execute_get_the_callers_cancellation_token() {
    let probe = Probe::new(Behaviour::Succeed);
    let seen = probe.seen.clone();
    let tools = set(probe);
    let hooks = Scripted::default();
    let cancel = CancellationToken::new();
    cancel.cancel();
    let call = tool_call("1", "probe", json!({}));
    run_single_tool_call(&tools, &call, &hooks, &cancel).await;
    assert!(hooks.seen_before.lock().unwrap()[0].2);
    assert!(seen.lock().unwrap()[0].1);
}

#[tokio::test]
async fn before_hook_block_uses_its_reason() {
    let probe = Probe::new(Behaviour::Succeed);
    let seen = probe.seen.clone();
    let tools = set(probe);
    let hooks = Scripted {
        before: Some(Ok(BeforeToolCall::Block {
            reason: Some("Command is dangerous: rm -rf /".into()),
        })),
        ..Scripted::default()
    };
    let call = tool_call("1", "probe", json!({}));
    assert_eq!(
        run(&tools, &call, &hooks).await,
        expected("1", "Command is dangerous: rm -rf /", Some(json!({})), true)
    );
    assert!(seen.lock().unwrap().is_empty(), "execute must not run");
    assert!(
        hooks.seen_after.lock().unwrap().is_empty(),
        "after_tool_call must not run for a blocked call"
    );
}

#[tokio::test]
async fn before_hook_block_without_reason_says_blocked() {
    let tools = set(Probe::new(Behaviour::Succeed));
    for reason in [None, Some(String::new())] {
        let hooks = Scripted {
            before: Some(Ok(BeforeToolCall::Block { reason })),
            ..Scripted::default()
        };
        let call = tool_call("1", "probe", json!({}));
        assert_eq!(
            run(&tools, &call, &hooks).await,
            expected("1", "Tool execution was blocked", Some(json!({})), true)
        );
    }
}

#[tokio::test]
async fn before_hook_proceed_with_replaces_the_args_execute_sees_after_validation() {
    let probe = Probe::new(Behaviour::Succeed);
    let seen = probe.seen.clone();
    let tools = set(probe);
    let hooks = Scripted {
        // A number for a string property: the validator's coercion applies
        // to a hook's arguments as to the model's.
        before: Some(Ok(BeforeToolCall::ProceedWith {
            args: json!({"value": 42}),
        })),
        ..Scripted::default()
    };
    let call = tool_call("1", "probe", json!({"value": "rm -rf /"}));
    assert_eq!(
        run(&tools, &call, &hooks).await,
        expected("1", "fine", Some(json!({"n": 1})), false)
    );
    assert_eq!(*seen.lock().unwrap(), [(json!({"value": "42"}), false)]);
}

#[tokio::test]
async fn before_hook_proceed_with_invalid_args_fails_with_the_validators_text() {
    let probe = Probe::new(Behaviour::Succeed);
    let seen = probe.seen.clone();
    let tools = set(probe);
    let hooks = Scripted {
        before: Some(Ok(BeforeToolCall::ProceedWith {
            args: json!({"value": ["not", "a", "string"]}),
        })),
        ..Scripted::default()
    };
    let call = tool_call("1", "probe", json!({"value": "x"}));
    let model_sent_the_same = run(
        &tools,
        &tool_call("1", "probe", json!({"value": ["not", "a", "string"]})),
        &NoHooks,
    )
    .await;
    let result = run(&tools, &call, &hooks).await;
    assert!(result.is_error);
    assert_eq!(result, model_sent_the_same);
    assert!(seen.lock().unwrap().is_empty(), "execute must not run");
}

#[tokio::test]
async fn before_hook_error_or_panic_becomes_the_result_text() {
    let tools = set(Probe::new(Behaviour::Succeed));
    let call = tool_call("1", "probe", json!({}));
    let failing = Scripted {
        before: Some(Err(ToolError::new(
            "Extension failed, blocking execution: x",
        ))),
        ..Scripted::default()
    };
    assert_eq!(
        run(&tools, &call, &failing).await,
        expected(
            "1",
            "Extension failed, blocking execution: x",
            Some(json!({})),
            true
        )
    );
    let panicking = Scripted {
        before_panics: true,
        ..Scripted::default()
    };
    assert_eq!(
        run(&tools, &call, &panicking).await,
        expected("1", "hook exploded", Some(json!({})), true)
    );
}

#[tokio::test]
async fn after_hook_sees_the_error_result_of_a_failed_execute() {
    let tools = set(Probe::new(Behaviour::Fail("disk full")));
    let hooks = Scripted::default();
    let call = tool_call("1", "probe", json!({}));
    run(&tools, &call, &hooks).await;
    assert_eq!(
        *hooks.seen_after.lock().unwrap(),
        [(
            AgentToolResult::text("disk full").with_details(json!({})),
            true
        )]
    );
}

#[tokio::test]
async fn after_hook_overrides_only_the_fields_it_sets() {
    let tools = set(Probe::new(Behaviour::Succeed));
    let call = tool_call("1", "probe", json!({}));
    let content_only = Scripted {
        after: Some(Ok(Some(ToolResultOverride {
            content: Some(vec![Content::text("rewritten")]),
            ..ToolResultOverride::default()
        }))),
        ..Scripted::default()
    };
    assert_eq!(
        run(&tools, &call, &content_only).await,
        expected("1", "rewritten", Some(json!({"n": 1})), false)
    );
    let details_and_flag = Scripted {
        after: Some(Ok(Some(ToolResultOverride {
            details: Some(json!({"audited": true})),
            is_error: Some(true),
            ..ToolResultOverride::default()
        }))),
        ..Scripted::default()
    };
    assert_eq!(
        run(&tools, &call, &details_and_flag).await,
        expected("1", "fine", Some(json!({"audited": true})), true)
    );
}

#[tokio::test]
async fn after_hook_can_clear_the_error_flag_of_a_failed_call() {
    let tools = set(Probe::new(Behaviour::Fail("exit code 1")));
    let call = tool_call("1", "probe", json!({}));
    let hooks = Scripted {
        after: Some(Ok(Some(ToolResultOverride {
            is_error: Some(false),
            ..ToolResultOverride::default()
        }))),
        ..Scripted::default()
    };
    assert_eq!(
        run(&tools, &call, &hooks).await,
        expected("1", "exit code 1", Some(json!({})), false)
    );
}

#[tokio::test]
async fn after_hook_error_replaces_the_result() {
    let tools = set(Probe::new(Behaviour::Succeed));
    let call = tool_call("1", "probe", json!({}));
    let hooks = Scripted {
        after: Some(Err(ToolError::new("after failed"))),
        ..Scripted::default()
    };
    assert_eq!(
        run(&tools, &call, &hooks).await,
        expected("1", "after failed", Some(json!({})), true)
    );
}

#[tokio::test]
async fn a_single_call_hands_its_progress_updates_to_the_caller() {
    let tools = set(Probe::new(Behaviour::Progress));
    let seen = Mutex::new(Vec::new());
    let on_update = |update: &AgentToolResult| {
        seen.lock().unwrap().push(update.content.clone());
    };
    let call = tool_call("c1", "probe", json!({}));
    let message = run_single_tool_call_with_updates(
        &tools,
        &call,
        &NoHooks,
        &CancellationToken::new(),
        &on_update,
    )
    .await;
    assert_eq!(strip(message), expected("c1", "fine", None, false));
    assert_eq!(
        *seen.lock().unwrap(),
        vec![vec![Content::text("half")], vec![Content::text("almost")]]
    );
}

// Both tools of one name were sent to the model (which APIs refuse) while
// only the first could run (DEVIATIONS #30).
#[tokio::test]
async fn of_two_tools_with_one_name_only_the_first_is_offered_and_run() {
    let first = Probe::new(Behaviour::Succeed);
    let mut second = Probe::new(Behaviour::Fail("the second ran"));
    second.tool.description = "The second.".into();
    let tools = ToolSet::new(vec![
        Arc::new(first) as Arc<dyn AgentTool>,
        Arc::new(second) as Arc<dyn AgentTool>,
    ])
    .unwrap();
    assert_eq!(tools.len(), 1);
    let offered: Vec<_> = tools
        .definitions()
        .iter()
        .map(|tool| tool.description.as_str())
        .collect();
    assert_eq!(offered, ["Probes."]);
    let call = tool_call("1", "probe", json!({"value": "x"}));
    assert_eq!(
        run(&tools, &call, &NoHooks).await,
        expected("1", "fine", Some(json!({"n": 1})), false)
    );
}
