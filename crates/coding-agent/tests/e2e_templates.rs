//! Prompt templates end to end: the built binary loads the user's and a
//! trusted project's `prompts/*.md`, `/name args` in a print-mode prompt
//! or an RPC prompt reaches the loopback model expanded, RPC
//! `get_commands` lists them, and an untrusted project's are left out
//! with a warning.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod e2e_support;

use e2e_support::*;
use serde_json::json;

/// A user template `review` and a project template `fix` (which also
/// overrides nothing: the names differ).
fn sandbox_with_templates() -> Sandbox {
    let sandbox = Sandbox::new();
    let user = sandbox.agent_dir.join("prompts");
    std::fs::create_dir_all(&user).unwrap();
    std::fs::write(
        user.join("review.md"),
        "---\ndescription: Review a file\n---\nReview $1 for bugs. Focus: ${@:2}\n",
    )
    .unwrap();
    let project = sandbox.work.join(".coding-agent").join("prompts");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::write(project.join("fix.md"), "Fix the failing test $1.\n").unwrap();
    sandbox
}

#[test]
fn a_template_named_in_a_prompt_is_sent_expanded() {
    let wire = Wire::OpenAi;
    let sandbox = sandbox_with_templates();
    let server = ModelServer::answering(wire, vec![Answer::text(&["ok"])]);
    let mut command = sandbox.command(wire, &server);
    command.args([
        "--trust",
        "-p",
        r#"/review src/main.rs "error handling" tests"#,
    ]);
    let stdout = Running::spawn(command).finish_quietly();
    assert_eq!(stdout, "ok\n");
    assert_eq!(
        wire.transcript(&server.requests()[0].body),
        ["user: Review src/main.rs for bugs. Focus: error handling tests\n"]
    );

    // The project's template too, once the project is trusted.
    let mut command = sandbox.command(wire, &server);
    command.args(["--trust", "--no-session", "-p", "/fix parser_roundtrip"]);
    Running::spawn(command).finish_quietly();
    assert_eq!(
        wire.transcript(&server.requests()[1].body),
        ["user: Fix the failing test parser_roundtrip.\n"]
    );

    // An unknown name is sent as it is; --no-prompt-templates sends all so.
    let mut command = sandbox.command(wire, &server);
    command.args([
        "--trust",
        "--no-session",
        "--no-prompt-templates",
        "-p",
        "/review a.rs",
    ]);
    Running::spawn(command).finish_quietly();
    assert_eq!(
        wire.transcript(&server.requests()[2].body),
        ["user: /review a.rs"]
    );
}

#[test]
fn an_untrusted_projects_templates_are_left_out_with_a_warning() {
    let wire = Wire::OpenAi;
    let sandbox = sandbox_with_templates();
    let server = ModelServer::answering(wire, vec![Answer::text(&["ok"])]);
    let mut command = sandbox.command(wire, &server);
    command.args(["--no-session", "-p", "/fix parser_roundtrip"]);
    let (status, _, stderr) = Running::spawn(command).finish();
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert_eq!(
        wire.transcript(&server.requests()[0].body),
        ["user: /fix parser_roundtrip"]
    );
    let prompts = sandbox.work.join(".coding-agent/prompts");
    assert!(
        stderr.contains(&format!(
            "Warning: the project's prompt templates in {} are not loaded: the project is not trusted (trust it with --trust)",
            prompts.display()
        )),
        "{stderr}"
    );
}

#[test]
fn rpc_lists_the_templates_and_expands_a_prompt() {
    let wire = Wire::OpenAi;
    let sandbox = sandbox_with_templates();
    let server = ModelServer::answering(wire, vec![Answer::text(&["ok"])]);
    let mut rpc = Rpc::start_with(&sandbox, wire, &server, &["--trust"]);
    let (_, commands) = rpc.ask(json!({"id": "c", "type": "get_commands"}));
    assert_eq!(
        commands["data"]["commands"],
        json!([
            {"name": "fix", "description": "Fix the failing test $1.", "source": "prompt",
             "location": "project",
             "path": sandbox.work.join(".coding-agent/prompts/fix.md")},
            {"name": "review", "description": "Review a file", "source": "prompt",
             "location": "user", "path": sandbox.agent_dir.join("prompts/review.md")},
        ])
    );
    rpc.prompt("/review lib.rs");
    assert_eq!(
        wire.transcript(&server.requests()[0].body),
        ["user: Review lib.rs for bugs. Focus: \n"]
    );
    rpc.finish();
}
