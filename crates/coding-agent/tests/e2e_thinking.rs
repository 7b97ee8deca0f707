//! Thinking levels end to end (issue 16): the built binary in RPC mode
//! against a loopback model server in both wire formats. `--thinking`,
//! `defaultThinkingLevel`, RPC `set_thinking_level` / `cycle_thinking_level`
//! / `get_state` / `set_model` in Pi's shapes, the level on the wire
//! (`reasoning_effort`, Anthropic's budget), the `thinking_level_change`
//! entries, and the level restored by `--continue`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod e2e_support;

use e2e_support::*;
use serde_json::{Value, json};

/// A server that answers every request with `ok`.
fn ok_server(wire: Wire) -> ModelServer {
    ModelServer::start(move |_| Reply::Events(wire.events(&Answer::text(&["ok"]))))
}

/// What the last model request said about thinking: OpenAI's
/// `reasoning_effort`, or Anthropic's `thinking` with its `max_tokens`.
fn last_thinking(wire: Wire, server: &ModelServer) -> Value {
    let request = server
        .requests()
        .into_iter()
        .rev()
        .find(|r| r.method == "POST")
        .unwrap();
    let body = &request.body;
    match wire {
        Wire::OpenAi => body.get("reasoning_effort").cloned().unwrap_or(Value::Null),
        Wire::Anthropic => json!({
            "thinking": body.get("thinking"),
            "max_tokens": body["max_tokens"],
        }),
    }
}

/// What [`last_thinking`] reads for `effort` on OpenAI, or Anthropic's
/// `budget` on top of the default 8192 output tokens.
fn thinking_on(wire: Wire, effort: &str, budget: u64) -> Value {
    match wire {
        Wire::OpenAi => json!(effort),
        Wire::Anthropic => json!({
            "thinking": {"type": "enabled", "budget_tokens": budget},
            "max_tokens": 8192 + budget,
        }),
    }
}

fn state_level(rpc: &mut Rpc) -> Value {
    let (_, state) = rpc.ask(json!({"id": "s", "type": "get_state"}));
    state["data"]["thinkingLevel"].clone()
}

/// Sets `level`; returns the response and the `thinking_level_changed`
/// events that came before the response.
fn set_level(rpc: &mut Rpc, level: &str) -> (Value, Vec<Value>) {
    let (before, response) =
        rpc.ask(json!({"id": "t", "type": "set_thinking_level", "level": level}));
    // The change comes before the response, as in Pi (it came after).
    let changes = before
        .into_iter()
        .filter(|line| line["type"] == "thinking_level_changed")
        .collect();
    (response, changes)
}

#[test]
fn levels_reach_the_wire_change_over_rpc_and_come_back_with_continue() {
    for wire in [Wire::OpenAi, Wire::Anthropic] {
        let sandbox = Sandbox::new();
        sandbox
            .write_global_settings(&json!({"providers": {wire.provider(): {"reasoning": true}}}));
        let server = ok_server(wire);
        let mut rpc = Rpc::start_with(&sandbox, wire, &server, &["--thinking", "low"]);
        assert_eq!(state_level(&mut rpc), "low", "{wire:?}");
        rpc.prompt("one");
        assert_eq!(
            last_thinking(wire, &server),
            thinking_on(wire, "low", 2048),
            "{wire:?}"
        );

        let (response, changes) = set_level(&mut rpc, "high");
        assert_eq!(
            response,
            json!({"id":"t","type":"response","command":"set_thinking_level","success":true})
        );
        assert_eq!(
            changes,
            [json!({"type":"thinking_level_changed","level":"high"})]
        );
        let (_, again) = set_level(&mut rpc, "high");
        assert_eq!(again, Vec::<Value>::new(), "no change, no event");

        // high -> off (xhigh is not supported without the model's map) -> minimal
        let (_, cycled) = rpc.ask(json!({"id": "c", "type": "cycle_thinking_level"}));
        assert_eq!(
            cycled,
            json!({"id":"c","type":"response","command":"cycle_thinking_level","success":true,
                   "data":{"level":"off"}})
        );
        rpc.prompt("two");
        let off = match wire {
            Wire::OpenAi => Value::Null,
            Wire::Anthropic => json!({"thinking": {"type": "disabled"}, "max_tokens": 8192}),
        };
        assert_eq!(last_thinking(wire, &server), off, "{wire:?}");
        let (_, cycled) = rpc.ask(json!({"id": "c", "type": "cycle_thinking_level"}));
        assert_eq!(cycled["data"], json!({"level": "minimal"}));

        // An unknown name changes nothing (DEVIATIONS M25); xhigh is clamped.
        let (refused, _) = set_level(&mut rpc, "ludicrous");
        assert_eq!(refused["success"], false, "{refused}");
        assert_eq!(state_level(&mut rpc), "minimal");
        set_level(&mut rpc, "xhigh");
        assert_eq!(state_level(&mut rpc), "high");
        rpc.prompt("three");
        let (_, state) = rpc.ask(json!({"id": "s", "type": "get_state"}));
        let file = state["data"]["sessionFile"].as_str().unwrap().to_owned();
        rpc.finish();

        let entries: Vec<Value> = session_lines(std::path::Path::new(&file))
            .into_iter()
            .filter(|line| line["type"] == "thinking_level_change")
            .collect();
        let levels: Vec<&str> = entries
            .iter()
            .map(|e| e["thinkingLevel"].as_str().unwrap())
            .collect();
        assert_eq!(
            levels,
            ["low", "high", "off", "minimal", "high"],
            "{wire:?}"
        );
        let keys: Vec<&String> = entries[0].as_object().unwrap().keys().collect();
        assert_eq!(
            keys,
            ["type", "id", "parentId", "timestamp", "thinkingLevel"]
        );

        // Resumed without --thinking: the session's last level.
        let mut rpc = Rpc::start_with(&sandbox, wire, &server, &["--continue"]);
        assert_eq!(state_level(&mut rpc), "high", "{wire:?}");
        rpc.prompt("four");
        assert_eq!(
            last_thinking(wire, &server),
            thinking_on(wire, "high", 16384),
            "{wire:?}"
        );
        rpc.finish();
    }
}

/// A tree move or a fork goes on at the level in force, and the file says
/// so where the branch goes on: resumed, the session went on at the level
/// the branch had recorded before (`medium`, while the run before the
/// interruption sent `high`).
#[test]
fn after_a_tree_move_or_a_fork_a_resumed_session_keeps_the_level_in_force() {
    let wire = Wire::OpenAi;
    for how in ["navigate_tree", "fork"] {
        let sandbox = Sandbox::new();
        sandbox.write_global_settings(&json!({"providers": {"openai": {"reasoning": true}}}));
        let server = ok_server(wire);
        let mut rpc = Rpc::start(&sandbox, wire, &server);
        rpc.prompt("one");
        rpc.prompt("two");
        set_level(&mut rpc, "high");
        let (_, forks) = rpc.ask(json!({"id": "f", "type": "get_fork_messages"}));
        let second = forks["data"]["messages"][1]["entryId"].clone();
        let (_, moved) = match how {
            "fork" => rpc.ask(json!({"id": "m", "type": "fork", "entryId": second})),
            _ => rpc.ask(json!({"id": "m", "type": "navigate_tree", "targetId": second})),
        };
        assert_eq!(moved["success"], true, "{moved}");
        rpc.prompt("three");
        assert_eq!(last_thinking(wire, &server), "high", "{how}");
        rpc.finish();

        let mut rpc = Rpc::start_with(&sandbox, wire, &server, &["--continue"]);
        assert_eq!(state_level(&mut rpc), "high", "{how}");
        rpc.prompt("four");
        assert_eq!(last_thinking(wire, &server), "high", "{how}");
        rpc.finish();
    }
}

#[test]
fn a_model_without_reasoning_stays_off_and_does_not_cycle() {
    let wire = Wire::OpenAi;
    let sandbox = Sandbox::new();
    let server = ok_server(wire);
    // e2e-model is no known reasoning model and settings do not say.
    let mut rpc = Rpc::start_with(&sandbox, wire, &server, &["--thinking", "high"]);
    assert_eq!(state_level(&mut rpc), "off");
    let (_, cycled) = rpc.ask(json!({"id": "c", "type": "cycle_thinking_level"}));
    assert_eq!(
        cycled,
        json!({"id":"c","type":"response","command":"cycle_thinking_level","success":true,
               "data":null})
    );
    let (response, changes) = set_level(&mut rpc, "medium");
    assert_eq!(response["success"], true);
    assert_eq!(changes, Vec::<Value>::new(), "clamped to off: no change");
    rpc.prompt("hi");
    assert_eq!(last_thinking(wire, &server), Value::Null);
    let (_, missing) = rpc.ask(json!({"id": "m", "type": "set_thinking_level"}));
    assert_eq!(
        missing,
        json!({"id":"m","type":"response","command":"set_thinking_level","success":false,
               "error":"Invalid command: \"level\" must be a string"})
    );
    // A name that is no level is refused: Pi takes the model's first
    // level, so a typo (`ultra`) switched thinking off and said success.
    let (response, changes) = set_level(&mut rpc, "ultra");
    assert_eq!(
        response,
        json!({"id":"t","type":"response","command":"set_thinking_level","success":false,
               "error":"Invalid thinking level \"ultra\": one of off, minimal, low, medium, high, xhigh"})
    );
    assert_eq!(changes, Vec::<Value>::new());
    rpc.finish();
}

#[test]
fn the_settings_default_applies_and_model_switches_clamp_the_level() {
    let wire = Wire::OpenAi;
    let sandbox = Sandbox::new();
    let server = ok_server(wire);
    let base_url = wire.base_url(server.addr());
    sandbox.write_global_settings(&json!({
        "defaultThinkingLevel": "minimal",
        "providers": {
            "openai": {"reasoning": true},
            "plain": {"api": "openai-completions", "baseUrl": base_url,
                      "defaultModel": "plain-model", "reasoning": false},
            "thinker": {"api": "openai-completions", "baseUrl": base_url,
                        "defaultModel": "thinker-model", "reasoning": true,
                        "thinkingLevelMap": {"xhigh": "max", "minimal": null}},
        },
    }));
    let mut rpc = Rpc::start(&sandbox, wire, &server);
    assert_eq!(state_level(&mut rpc), "minimal", "defaultThinkingLevel");

    let switch = |rpc: &mut Rpc, provider: &str, model: &str| {
        let (_, response) = rpc
            .ask(json!({"id": "m", "type": "set_model", "provider": provider, "modelId": model}));
        assert_eq!(response["success"], true, "{response}");
        response["data"].clone()
    };
    let plain = switch(&mut rpc, "plain", "plain-model");
    assert_eq!(plain["reasoning"], false);
    assert_eq!(state_level(&mut rpc), "off", "clamped to the model");
    // From a model without reasoning, the default applies again, clamped
    // to the map (minimal is not supported there: the next higher, low).
    let thinker = switch(&mut rpc, "thinker", "thinker-model");
    assert_eq!(
        (&thinker["reasoning"], &thinker["thinkingLevelMap"]),
        (&json!(true), &json!({"minimal": null, "xhigh": "max"}))
    );
    assert_eq!(state_level(&mut rpc), "low");
    set_level(&mut rpc, "xhigh");
    assert_eq!(state_level(&mut rpc), "xhigh", "the map names xhigh");
    rpc.prompt("hi");
    assert_eq!(last_thinking(wire, &server), "max", "the map's wire name");

    // cycle_model reports the level in force after the switch.
    let (_, cycled) = rpc.ask(json!({"id": "c", "type": "cycle_model"}));
    assert_eq!(cycled["success"], true, "{cycled}");
    let level = state_level(&mut rpc);
    assert_eq!(cycled["data"]["thinkingLevel"], level);
    rpc.finish();
}

#[test]
fn an_unknown_thinking_flag_is_a_usage_error_naming_the_levels() {
    let wire = Wire::OpenAi;
    let sandbox = Sandbox::new();
    let server = ok_server(wire);
    let mut command = sandbox.command(wire, &server);
    command.args(["--thinking", "max", "-p", "hi"]);
    let (status, stdout, stderr) = Running::spawn(command).finish();
    assert_eq!(
        (status.code(), stdout.as_str(), stderr.as_str()),
        (
            Some(2),
            "",
            "error: invalid value 'max' for '--thinking <LEVEL>': Invalid thinking level \"max\". \
             Valid values: off, minimal, low, medium, high, xhigh\n\nFor more information, try '--help'.\n"
        ),
        "DEVIATIONS T4"
    );
    assert_eq!(server.requests().len(), 0);
}

#[test]
fn a_level_after_the_model_name_sets_thinking_and_other_colons_stay_in_the_name() {
    let wire = Wire::OpenAi;
    let sandbox = Sandbox::new();
    sandbox.write_global_settings(&json!({"providers": {"openai": {"reasoning": true}}}));
    let server = ok_server(wire);
    let run = |model: &str| {
        let mut command = sandbox.command_for(wire, &server, model);
        command.args(["--no-session", "-p", "hi"]);
        Running::spawn(command).finish_quietly();
        let request = server.requests().pop().unwrap();
        (
            request.body["model"].as_str().unwrap().to_owned(),
            last_thinking(wire, &server),
        )
    };
    assert_eq!(
        run("e2e-model:high"),
        ("e2e-model".to_owned(), json!("high"))
    );
    // Not a level: the colon is the model's own (Ollama names models so).
    assert_eq!(
        run("qwen2.5-coder:7b"),
        ("qwen2.5-coder:7b".to_owned(), json!("medium"))
    );
}

/// Anthropic's budget counts against the window too: with a
/// `contextWindow` of 8192 and `high`, the request asked for
/// `max_tokens: 18432` (16384 of them thinking), more than the whole
/// window; a server enforcing it refused every request, and the overflow
/// recovery advised a smaller `maxTokens`, which no value could satisfy.
/// Now the request asks for a quarter of the window, as without thinking,
/// and the budget is cut below it (DEVIATIONS T2).
#[test]
fn thinking_in_a_small_window_asks_for_what_the_window_leaves() {
    let wire = Wire::Anthropic;
    let sandbox = Sandbox::new();
    sandbox.write_global_settings(
        &json!({"providers": {"anthropic": {"reasoning": true, "contextWindow": 8192}}}),
    );
    let server = ok_server(wire);
    let mut command = sandbox.command(wire, &server);
    command.args(["--no-session", "--thinking", "high", "-p", "hi"]);
    let (status, _, stderr) = Running::spawn(command).finish();
    assert!(status.success(), "{stderr}");
    assert_eq!(
        last_thinking(wire, &server),
        json!({"thinking": {"type": "enabled", "budget_tokens": 1024}, "max_tokens": 2048})
    );
}
