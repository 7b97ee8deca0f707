//! The sandbox end to end, through the built binary: in print mode (both wire
//! formats) the model's bash command and write outside the workspace, which
//! allow rules let past the permission policy, are refused by the sandbox, it reads why, and the run goes on to its answer; RPC's user
//! `bash` runs sandboxed; `coding-agent tool` honours `--sandbox` and
//! `--allow-network` with `--cwd` as the workspace root.
//!
//! The default sandbox (`workspace-write`) is on in all of them: no flag
//! turns it on. Needs Landlock, like `tests/sandbox.rs`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod e2e_support;

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;

use coding_agent::sandbox::{SandboxMode, SandboxPolicy};
use e2e_support::*;
use serde_json::{Value, json};

/// The policy the binary runs under in `world`, to word the expected denials.
fn policy_of(world: &Sandbox, allow_network: bool) -> SandboxPolicy {
    SandboxPolicy {
        mode: SandboxMode::WorkspaceWrite,
        writable_roots: vec![
            world.work.clone(),
            world.tmp.clone(),
            PathBuf::from("/tmp"),
            PathBuf::from("/dev/shm"),
        ],
        allow_network,
    }
}

fn print_mode_reads_both_denials_and_answers(wire: Wire) {
    let world = Sandbox::outside_temp();
    let canary = world.home.join("canary");
    std::fs::write(&canary, "alive\n").unwrap();
    let outside = world.home.join("outside.txt");
    let server = escaping_model(
        wire,
        "rm -f \"$HOME/canary\"",
        &outside,
        "Both were refused by the sandbox.",
    );
    let mut command = world.command(wire, &server);
    // The policy lets both through: the sandbox is what refuses them here.
    let allow_write = format!("write({})", outside.display());
    command.args(["--allow", "bash(rm:*)", "--allow", &allow_write]);
    command.args(["-p", "Clean up."]);
    let stdout = Running::spawn(command).finish_quietly();
    assert_eq!(stdout, "Both were refused by the sandbox.\n");
    assert_eq!(std::fs::read_to_string(&canary).unwrap(), "alive\n");
    assert!(!outside.exists());

    let policy = policy_of(&world, false);
    let requests = server.requests();
    let last = wire.transcript(&requests[2].body);
    assert_eq!(
        last[2],
        format!(
            "tool call_rm: rm: cannot remove '{}': Permission denied\n\n{}\n\n\nCommand exited with code 1",
            canary.display(),
            policy.bash_denial_notice()
        )
    );
    assert_eq!(
        last[4],
        format!(
            "tool call_write: {}",
            policy.check_write(&outside, "open").unwrap_err().message
        )
    );
}

#[test]
fn print_mode_openai_the_model_reads_the_sandbox_denials_and_the_run_goes_on() {
    print_mode_reads_both_denials_and_answers(Wire::OpenAi);
}

#[test]
fn print_mode_anthropic_the_model_reads_the_sandbox_denials_and_the_run_goes_on() {
    print_mode_reads_both_denials_and_answers(Wire::Anthropic);
}

#[test]
fn rpc_user_bash_runs_in_the_sandbox() {
    let wire = Wire::OpenAi;
    let world = Sandbox::outside_temp();
    let server = ModelServer::only(wire, vec![]);
    let Rpc {
        running,
        mut stdin,
        lines,
    } = Rpc::start_with(&world, wire, &server, &[]);
    send(
        &mut stdin,
        &json!({"id": "b1", "type": "bash", "command": "touch \"$HOME/x\" inside"}),
    );
    let response = next_json(&lines);
    let notice = policy_of(&world, false).bash_denial_notice();
    assert_eq!(
        response,
        json!({"id": "b1", "type": "response", "command": "bash", "success": true,
            "data": {
                "output": format!(
                    "touch: cannot touch '{}': Permission denied\n\n{notice}\n",
                    world.home.join("x").display()
                ),
                "exitCode": 1, "cancelled": false, "truncated": false}})
    );
    assert!(!world.home.join("x").exists());
    assert!(world.work.join("inside").exists());
    drop(stdin);
    let (status, _, _) = running.finish();
    assert_eq!(status.code(), Some(0));
}

/// `coding-agent tool bash` in `world.work` with `flags`; the printed result.
fn tool_bash(world: &Sandbox, command: &str, flags: &[&str]) -> Value {
    let output = Command::new(BIN)
        .env("HOME", &world.home)
        .env("TMPDIR", &world.tmp)
        .args(["tool", "bash", &json!({ "command": command }).to_string()])
        .args(["--cwd", world.work.to_str().unwrap()])
        .args(flags)
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&output.stderr), "");
    assert_eq!(output.status.code(), Some(0));
    serde_json::from_slice(&output.stdout).unwrap()
}

#[test]
fn the_tool_command_sandboxes_bash_with_cwd_as_the_root_unless_sandbox_off() {
    let world = Sandbox::outside_temp();
    let command = "touch inside && touch \"$HOME/x\"";
    let denied = tool_bash(&world, command, &[]);
    assert_eq!(denied["isError"], true);
    assert!(world.work.join("inside").exists());
    assert!(!world.home.join("x").exists());

    let read_only = tool_bash(&world, "touch again", &["--sandbox", "read-only"]);
    assert_eq!(read_only["isError"], true);
    assert!(!world.work.join("again").exists());

    let unsandboxed = tool_bash(&world, command, &["--sandbox", "off"]);
    assert_eq!(
        unsandboxed,
        json!({"isError": false, "content": [{"type": "text", "text": "(no output)"}], "details": null})
    );
    assert!(world.home.join("x").exists());
}

#[test]
fn the_tool_command_opens_tcp_only_with_allow_network() {
    let world = Sandbox::outside_temp();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || listener.incoming().take(2).for_each(drop));
    let command = format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected");

    let refused = tool_bash(&world, &command, &[]);
    assert_eq!(refused["isError"], true);
    let text = refused["content"][0]["text"].as_str().unwrap();
    assert!(
        text.starts_with("/bin/bash: connect: Permission denied\n"),
        "{text}"
    );

    let allowed = tool_bash(&world, &command, &["--allow-network"]);
    assert_eq!(allowed["content"][0]["text"], "connected\n");
}

/// Runs `program` (the binary, or a copy of it) in print mode in
/// `world.work` against `server`, every bash call allowed; its stdout.
fn run_allowing_bash(world: &Sandbox, program: &Path, server: &ModelServer) -> String {
    let mut command = world.command_of(program, Wire::OpenAi, server, MODEL);
    command.args(["--allow", "bash", "-p", "Go."]);
    Running::spawn(command).finish_quietly()
}

/// The sandbox helper is this process's own image, not the file at its
/// path: a binary in a writable root (the workspace of a developer running
/// `./target/release/coding-agent`, `/tmp`) replaced by a sandboxed
/// command had the next command started through the replacement,
/// unsandboxed.
#[test]
fn a_replaced_binary_does_not_become_the_sandbox_helper() {
    let world = Sandbox::outside_temp();
    let bin = world.work.join("bin");
    std::fs::create_dir(&bin).unwrap();
    let copy = bin.join("coding-agent");
    std::fs::copy(BIN, &copy).unwrap();
    let replace = "mv bin/coding-agent bin/real && \
        printf '#!/bin/sh\\ntouch planted-ran\\nshift 3\\nexec \"$@\"\\n' > bin/coding-agent && \
        chmod +x bin/coding-agent";
    let server = ModelServer::only(
        Wire::OpenAi,
        vec![
            Answer::call("replace", "bash", json!({"command": replace})),
            Answer::call(
                "next",
                "bash",
                json!({"command": "echo \"sandbox=$CODING_AGENT_SANDBOX\""}),
            ),
            Answer::text(&["Done."]),
        ],
    );
    assert_eq!(run_allowing_bash(&world, &copy, &server), "Done.\n");
    assert!(world.work.join("bin/real").exists(), "the first call ran");
    assert!(!world.work.join("planted-ran").exists());
    let transcript = Wire::OpenAi.transcript(&server.requests()[2].body);
    assert_eq!(
        transcript.last().unwrap(),
        "tool next: sandbox=workspace-write\n"
    );
}

/// A writable root a command replaced with a link (here the workspace,
/// under the writable `/tmp`) is not followed: the next command could write
/// where the link points (`/` in the attack).
#[test]
fn a_root_replaced_by_a_link_is_not_followed() {
    let world = Sandbox::new();
    let elsewhere = Sandbox::outside_temp();
    // Through Python: the policy itself refuses `mv` of a workspace root.
    let swap = format!(
        "python3 -c \"import os; os.chdir('..'); os.rename('work', 'work.real'); os.symlink('{}', 'work')\"",
        elsewhere.home.display()
    );
    let server = ModelServer::only(
        Wire::OpenAi,
        vec![
            Answer::call("swap", "bash", json!({"command": swap})),
            Answer::call("write", "bash", json!({"command": "touch pwned"})),
            Answer::text(&["Done."]),
        ],
    );
    assert_eq!(
        run_allowing_bash(&world, Path::new(BIN), &server),
        "Done.\n"
    );
    assert!(
        world.root.join("work.real").exists(),
        "the swap ran: {:?}",
        Wire::OpenAi.transcript(&server.requests()[1].body)
    );
    assert!(!elsewhere.home.join("pwned").exists());
    let transcript = Wire::OpenAi.transcript(&server.requests()[2].body);
    let last = transcript.last().unwrap();
    assert!(last.contains("Permission denied"), "{last}");
}

/// Making a device node is refused even where writing is allowed: root
/// could make an alias of `/dev/kmsg` or a disk in the workspace and write
/// it.
#[test]
fn device_nodes_cannot_be_made_in_the_workspace() {
    let world = Sandbox::outside_temp();
    let make = "mknod kmsg c 1 11 && echo made";
    let unsandboxed = tool_bash(&world, make, &["--sandbox", "off"]);
    if unsandboxed["isError"] == true {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "mknod needs root, which CI has: {unsandboxed}"
        );
        eprintln!("not root: mknod is refused anyway, skipping");
        return;
    }
    std::fs::remove_file(world.work.join("kmsg")).unwrap();
    let sandboxed = tool_bash(&world, make, &[]);
    assert_eq!(sandboxed["isError"], true, "{sandboxed}");
    assert!(!world.work.join("kmsg").exists());
}
