//! What the pipeline itself costs: one no-op tool call through all five steps,
//! and a parallel batch of 64 no-op calls (preflight, concurrent execute,
//! events, result messages), with hooks that do nothing but are called.
#![allow(missing_docs)]

use std::sync::Arc;

use agent_ai::{Tool, ToolCall};
use agent_core::{
    AfterToolCallContext, AgentTool, AgentToolResult, BeforeToolCall, ExecutionMode,
    ToolCallContext, ToolCallHooks, ToolCallScope, ToolError, ToolResultOverride, ToolSet,
    UpdateSink, execute_tool_calls, run_single_tool_call,
};
use async_trait::async_trait;
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

struct Noop {
    tool: Tool,
}

#[async_trait]
impl AgentTool for Noop {
    fn tool(&self) -> &Tool {
        &self.tool
    }

    fn label(&self) -> &str {
        "Noop"
    }

    async fn execute(
        &self,
        _id: &str,
        _params: Value,
        _cancel: CancellationToken,
        _updates: UpdateSink,
    ) -> Result<AgentToolResult, ToolError> {
        Ok(AgentToolResult::text("ok"))
    }
}

/// Hooks that are called but change nothing, so their cost is measured.
struct PassHooks;

#[async_trait]
impl ToolCallHooks for PassHooks {
    async fn before_tool_call(
        &self,
        _call: &ToolCallContext<'_>,
        _cancel: &CancellationToken,
    ) -> Result<BeforeToolCall, ToolError> {
        Ok(BeforeToolCall::Proceed)
    }

    async fn after_tool_call(
        &self,
        _call: &AfterToolCallContext<'_>,
        _cancel: &CancellationToken,
    ) -> Result<Option<ToolResultOverride>, ToolError> {
        Ok(None)
    }
}

fn tools() -> ToolSet {
    let noop = Noop {
        tool: Tool {
            name: "noop".into(),
            description: "Does nothing.".into(),
            parameters: json!({
                "type": "object",
                "properties": {"path": {"type": "string"}},
                "required": ["path"]
            }),
        },
    };
    match ToolSet::new(vec![Arc::new(noop) as Arc<dyn AgentTool>]) {
        Ok(tools) => tools,
        Err(error) => panic!("{error}"),
    }
}

fn call(id: usize) -> ToolCall {
    ToolCall {
        id: format!("call_{id}"),
        name: "noop".into(),
        arguments: json!({"path": "src/main.rs"}),
        thought_signature: None,
        recovered_from_text: None,
    }
}

fn pipeline(c: &mut Criterion) {
    let runtime = match tokio::runtime::Builder::new_current_thread().build() {
        Ok(runtime) => runtime,
        Err(error) => panic!("{error}"),
    };
    let tools = tools();
    let cancel = CancellationToken::new();
    let one = call(0);
    // The baseline: the same tool's execute called directly, with no pipeline
    // around it, so the pipeline's own cost reads as a ratio against it.
    let direct = tools
        .get("noop")
        .unwrap_or_else(|| panic!("the noop tool is in the set"))
        .clone();
    c.bench_function("baseline: direct execute of the no-op tool", |b| {
        b.to_async(&runtime).iter(|| {
            direct.execute(
                "call_0",
                json!({"path": "src/main.rs"}),
                cancel.clone(),
                UpdateSink::discard(),
            )
        });
    });
    c.bench_function("one no-op call, five steps", |b| {
        b.to_async(&runtime)
            .iter(|| run_single_tool_call(&tools, &one, &PassHooks, &cancel));
    });

    let batch: Vec<ToolCall> = (0..64).map(call).collect();
    c.bench_function("parallel batch of 64 no-op calls", |b| {
        b.to_async(&runtime).iter(|| async {
            let scope = ToolCallScope {
                tools: &tools,
                hooks: &PassHooks,
                execution: ExecutionMode::Parallel,
                assistant_message: None,
                messages: &[],
                cancel: &cancel,
            };
            execute_tool_calls(&scope, &batch, &|event| drop(event)).await
        });
    });
}

criterion_group!(benches, pipeline);
criterion_main!(benches);
