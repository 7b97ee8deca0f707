//! Skills end to end: the built binary finds the user's, `~/.agents`' and a
//! trusted project's skills, lists those for the model in the system prompt,
//! sends a skill's instructions for `/skill:name args`, lists the skill
//! commands in RPC `get_commands`, and leaves an untrusted project's out
//! with a warning.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod e2e_support;

use std::path::Path;

use e2e_support::*;
use serde_json::{Value, json};

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// `pdf-tools` (the user's), `notes` (in `~/.agents`, for `/skill:` only)
/// and `deploy` (the project's).
fn sandbox_with_skills() -> Sandbox {
    let sandbox = Sandbox::new();
    write(
        &sandbox.agent_dir.join("skills/pdf-tools/SKILL.md"),
        "---\nname: pdf-tools\ndescription: Fill PDF forms. Use for any PDF.\n---\n# PDF\nRun ./fill.sh FILE\n",
    );
    write(
        &sandbox.home.join(".agents/skills/notes/SKILL.md"),
        "---\nname: notes\ndescription: Keep notes.\ndisable-model-invocation: true\n---\nWrite NOTES.md\n",
    );
    write(
        &sandbox.work.join(".agents/skills/deploy/SKILL.md"),
        "---\nname: deploy\ndescription: Deploy the site.\n---\nmake deploy\n",
    );
    sandbox
}

/// The names in the request's `<available_skills>`.
fn listed(body: &Value) -> Vec<String> {
    let system = body["messages"][0]["content"].as_str().unwrap_or_default();
    system
        .split("<name>")
        .skip(1)
        .filter_map(|rest| rest.split_once("</name>"))
        .map(|(name, _)| name.to_owned())
        .collect()
}

#[test]
fn skills_are_listed_for_the_model_and_a_skill_command_sends_its_instructions() {
    let wire = Wire::OpenAi;
    let sandbox = sandbox_with_skills();
    let server = ModelServer::answering(wire, vec![Answer::text(&["ok"])]);
    let mut command = sandbox.command(wire, &server);
    command.args(["--trust", "-p", "/skill:pdf-tools form.pdf"]);
    assert_eq!(Running::spawn(command).finish_quietly(), "ok\n");
    let request = &server.requests()[0].body;
    assert_eq!(listed(request), ["deploy", "pdf-tools"]);
    let dir = sandbox.agent_dir.join("skills/pdf-tools");
    assert_eq!(
        wire.transcript(request),
        [format!(
            "user: <skill name=\"pdf-tools\" location=\"{}\">\nReferences are relative to {}.\n\n# PDF\nRun ./fill.sh FILE\n</skill>\n\nform.pdf",
            dir.join("SKILL.md").display(),
            dir.display()
        )]
    );

    // --no-skills finds none, but a skill given by path still loads.
    let extra = sandbox.home.join("elsewhere/lint");
    write(
        &extra.join("SKILL.md"),
        "---\nname: lint\ndescription: Lint.\n---\ncargo clippy\n",
    );
    let mut command = sandbox.command(wire, &server);
    command.args(["--trust", "--no-session", "--no-skills", "--skill"]);
    command.arg(&extra).args(["-p", "hi"]);
    Running::spawn(command).finish_quietly();
    assert_eq!(listed(&server.requests()[1].body), ["lint"]);
}

#[test]
fn an_untrusted_projects_skills_are_left_out_with_a_warning() {
    let wire = Wire::OpenAi;
    let sandbox = sandbox_with_skills();
    let server = ModelServer::answering(wire, vec![Answer::text(&["ok"])]);
    let mut command = sandbox.command(wire, &server);
    command.args(["--no-session", "-p", "/skill:deploy"]);
    let (status, _, stderr) = Running::spawn(command).finish();
    assert_eq!(status.code(), Some(0), "{stderr}");
    let request = &server.requests()[0].body;
    assert_eq!(listed(request), ["pdf-tools"]);
    assert_eq!(wire.transcript(request), ["user: /skill:deploy"]);
    let skills = sandbox.work.join(".agents/skills");
    assert!(
        stderr.contains(&format!(
            "Warning: the project's skills in {} are not loaded: the project is not trusted (trust it with --trust)",
            skills.display()
        )),
        "{stderr}"
    );
}

#[test]
fn rpc_lists_the_skill_commands() {
    let wire = Wire::OpenAi;
    let sandbox = sandbox_with_skills();
    let server = ModelServer::answering(wire, vec![Answer::text(&["ok"])]);
    let mut rpc = Rpc::start_with(&sandbox, wire, &server, &["--trust"]);
    let (_, commands) = rpc.ask(json!({"id": "c", "type": "get_commands"}));
    let shown: Vec<(&str, &str, &str)> = commands["data"]["commands"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let field = |key: &str| c[key].as_str().unwrap();
            (field("name"), field("source"), field("location"))
        })
        .collect();
    assert_eq!(
        shown,
        [
            ("skill:deploy", "skill", "project"),
            ("skill:notes", "skill", "user"),
            ("skill:pdf-tools", "skill", "user"),
        ]
    );
    rpc.finish();
}

/// A relative path in the global `skills` setting is under the agent
/// directory, whatever directory the agent runs in.
#[test]
fn the_skills_settings_relative_paths_are_under_the_agent_directory() {
    let wire = Wire::OpenAi;
    let sandbox = Sandbox::new();
    write(
        &sandbox.agent_dir.join("more/lint/SKILL.md"),
        "---\nname: lint\ndescription: Lint the code.\n---\nRun the linter\n",
    );
    sandbox.write_global_settings(&json!({"skills": ["more"]}));
    let server = ModelServer::answering(wire, vec![Answer::text(&["ok"])]);
    let mut command = sandbox.command(wire, &server);
    command.args(["-p", "hi"]);
    let (status, stdout, stderr) = Running::spawn(command).finish();
    assert_eq!(
        (status.code(), stdout.as_str(), stderr.as_str()),
        (Some(0), "ok\n", "")
    );
    assert_eq!(listed(&server.requests()[0].body), ["lint"]);
}
