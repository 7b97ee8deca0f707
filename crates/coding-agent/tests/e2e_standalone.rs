//! `--list-models` and `--export` of the built binary: they answer from the
//! settings, a local server's `/models` and the session files, then exit,
//! without asking a model anything.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod e2e_support;

use e2e_support::*;
use serde_json::json;

#[test]
fn list_models_names_a_local_servers_models_and_the_providers_without_a_key() {
    let sandbox = Sandbox::new();
    let server = ModelServer::start(|request| {
        assert_eq!(
            (request.method.as_str(), request.path.as_str()),
            ("GET", "/v1/models")
        );
        Reply::Status(
            200,
            json!({"data": [{"id": "qwen-7b"}, {"id": "llama-3b"}]}).to_string(),
        )
    });
    sandbox.write_global_settings(&json!({
        "defaultProvider": "local",
        "providers": {"local": {
            "baseUrl": format!("http://{}/v1", server.addr()),
            "defaultModel": "qwen-7b",
            "contextWindow": 32768,
        }},
    }));
    let mut command = sandbox.bare_command();
    command.arg("--list-models");
    let (status, stdout, stderr) = Running::spawn(command).finish();
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert_eq!(
        stdout,
        "local/qwen-7b  32k context\nlocal/llama-3b  32k context\n\
         anthropic (no key: set ANTHROPIC_API_KEY)\nopenai (no key: set OPENAI_API_KEY)\n"
    );

    let mut command = sandbox.bare_command();
    command.args(["--list-models", "LLAMA"]);
    let (status, stdout, _) = Running::spawn(command).finish();
    assert_eq!(
        (status.code(), stdout.as_str()),
        (Some(0), "local/llama-3b  32k context\n")
    );

    // Nothing matching is said, in Pi's words: an empty list read as a
    // failure to list.
    let mut command = sandbox.bare_command();
    command.args(["--list-models", "zzz"]);
    let (status, stdout, _) = Running::spawn(command).finish();
    assert_eq!(
        (status.code(), stdout.as_str()),
        (Some(0), "No models matching \"zzz\"\n")
    );
}

#[test]
fn export_writes_a_saved_session_as_html_by_id() {
    let wire = Wire::OpenAi;
    let sandbox = Sandbox::new();
    let server = ModelServer::answering(wire, vec![Answer::text(&["The answer & more"])]);
    let mut command = sandbox.command(wire, &server);
    command.args(["-p", "What is <b>here</b>?"]);
    Running::spawn(command).finish_quietly();
    let file = Sandbox::session_files(&sandbox.default_session_dir()).remove(0);
    let stem = file.file_stem().unwrap().to_str().unwrap().to_owned();
    let id = stem.rsplit_once('_').unwrap().1;

    let mut command = sandbox.bare_command();
    command.args(["--export", &id[..8], "chat.html"]);
    let (status, stdout, stderr) = Running::spawn(command).finish();
    assert_eq!(status.code(), Some(0), "{stderr}");
    let out = sandbox.work.join("chat.html");
    assert_eq!(stdout, format!("Exported to {}\n", out.display()));
    let html = std::fs::read_to_string(&out).unwrap();
    assert!(html.contains("What is &lt;b&gt;here&lt;/b&gt;?"), "{html}");
    assert!(html.contains("The answer &amp; more"), "{html}");
    assert_eq!(server.requests().len(), 1, "the export asked no model");

    let mut command = sandbox.bare_command();
    command.args(["--export", "missing.jsonl"]);
    let (status, _, stderr) = Running::spawn(command).finish();
    assert_eq!(status.code(), Some(2));
    assert_eq!(
        stderr,
        "coding-agent: --export missing.jsonl: No such file or directory (os error 2)\n"
    );

    // Writing the page over the session itself would lose it.
    let before = std::fs::read(&file).unwrap();
    let mut command = sandbox.bare_command();
    command.args(["--export"]).arg(&file).arg(&file);
    let (status, _, stderr) = Running::spawn(command).finish();
    assert_eq!(status.code(), Some(2));
    assert_eq!(
        stderr,
        format!(
            "coding-agent: --export {}: the output is the session file itself; name another file for the HTML\n",
            file.display()
        )
    );
    assert_eq!(std::fs::read(&file).unwrap(), before);

    // A file that is no session is said to be none (the text offered a new
    // path, which would start a session, not an export).
    std::fs::write(sandbox.work.join("notes.jsonl"), "{\"foo\": 1}\n").unwrap();
    let mut command = sandbox.bare_command();
    command.args(["--export", "notes.jsonl"]);
    let (status, _, stderr) = Running::spawn(command).finish();
    assert_eq!(status.code(), Some(2));
    assert_eq!(
        stderr,
        "coding-agent: --export notes.jsonl: it is not a session file (its first line is not a session header)\n"
    );

    // What reading the session warns of is said: a cut line (the page lacks
    // what it held), a newer format. Both were dropped without a word.
    let text = String::from_utf8(before).unwrap();
    let cut =
        text.replacen("\"version\":3", "\"version\":4", 1) + "{\"type\":\"message\",\"id\":\"cu";
    std::fs::write(sandbox.work.join("damaged.jsonl"), cut).unwrap();
    let mut command = sandbox.bare_command();
    command.args(["--export", "damaged.jsonl", "damaged.html"]);
    let (status, _, stderr) = Running::spawn(command).finish();
    assert_eq!(status.code(), Some(0), "{stderr}");
    let lines = text.lines().count() + 1;
    assert_eq!(
        stderr,
        format!(
            "Warning: {path}: line {lines} is not a session entry and is left out (edited, or cut off mid-write); what it held is missing from the conversation\n\
             Warning: {path}: the session was written in format version 4, newer than this build reads (3): what it does not know (entries, roles, content blocks) is left out of the conversation; update coding-agent to go on with all of it\n",
            path = "damaged.jsonl"
        )
    );
}

/// An empty or blank file was exported as a new, empty session under a
/// made-up id; a missing one was refused already.
#[test]
fn export_of_an_empty_file_is_refused() {
    let sandbox = Sandbox::new();
    for text in ["", "\n  \n"] {
        std::fs::write(sandbox.work.join("empty.jsonl"), text).unwrap();
        let mut command = sandbox.bare_command();
        command.args(["--export", "empty.jsonl"]);
        let (status, stdout, stderr) = Running::spawn(command).finish();
        assert_eq!(
            (status.code(), stdout.as_str(), stderr.as_str()),
            (
                Some(2),
                "",
                "coding-agent: --export empty.jsonl: it is empty: not a session file\n"
            ),
            "{text:?}"
        );
    }
    let written: Vec<_> = std::fs::read_dir(&sandbox.work)
        .unwrap()
        .map(|entry| entry.unwrap().file_name())
        .collect();
    assert_eq!(written, ["empty.jsonl"]);
}

/// `--export s.jsonl /dev/stdout | cat` failed (ENOENT: the atomic write
/// followed /dev/stdout to `pipe:[N]`), and `/dev/null` was refused with
/// the file tools' advice. The page is written to them as it is; stdout
/// holding the page, the line saying where goes to stderr.
#[test]
fn export_writes_to_stdout_or_a_device() {
    let sandbox = Sandbox::new();
    let file = sandbox.work.join("s.jsonl");
    let lines = [
        json!({"type": "session", "version": 3, "id": "s1",
               "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/w"}),
        json!({"type": "message", "id": "u1", "parentId": null,
               "timestamp": "2026-01-01T00:00:00.000Z",
               "message": {"role": "user", "content": "What is here?", "timestamp": 0}}),
    ];
    std::fs::write(&file, format!("{}\n{}\n", lines[0], lines[1])).unwrap();

    let mut command = sandbox.bare_command();
    command.arg("--export").arg(&file).arg("/dev/stdout");
    let (status, stdout, stderr) = Running::spawn(command).finish();
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert!(stdout.starts_with("<!DOCTYPE html>"), "{stdout}");
    assert!(stdout.ends_with("</html>\n"), "{stdout}");
    assert!(stdout.contains("What is here?"), "{stdout}");
    assert_eq!(stderr, "Exported to /dev/stdout\n");

    let mut command = sandbox.bare_command();
    command.arg("--export").arg(&file).arg("/dev/null");
    let (status, stdout, stderr) = Running::spawn(command).finish();
    assert_eq!(
        (status.code(), stdout.as_str(), stderr.as_str()),
        (Some(0), "", "Exported to /dev/null\n")
    );

    // A named pipe no one reads would hold the export (and, over RPC or in
    // the terminal, the session) until a reader came.
    let pipe = sandbox.work.join("page.fifo");
    let made = std::process::Command::new("mkfifo").arg(&pipe).status();
    assert!(made.is_ok_and(|status| status.success()), "mkfifo failed");
    let mut command = sandbox.bare_command();
    command.arg("--export").arg(&file).arg(&pipe);
    let (status, _, stderr) = Running::spawn(command).finish();
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("no one is reading the pipe") && stderr.contains("page.fifo"),
        "{stderr}"
    );
}

/// A reader that went away before the list (`--list-models | head -0`)
/// ends it with 141, as print mode does; the failed write panicked (101).
#[test]
fn list_models_to_a_closed_reader_exits_141() {
    let sandbox = Sandbox::new();
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let output = sandbox
        .bare_command()
        .arg("--list-models")
        .stdin(std::process::Stdio::null())
        .stdout(writer)
        .output()
        .unwrap();
    assert_eq!(
        (
            output.status.code(),
            String::from_utf8(output.stderr).unwrap().as_str()
        ),
        (Some(141), "")
    );
}
