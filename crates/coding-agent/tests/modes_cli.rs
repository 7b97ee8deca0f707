//! The agent command line as a real process, for what happens before any
//! model is reached: usage errors exit 2 with one line saying what to do.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::{Command, Stdio};

mod unprivileged;

const BIN: &str = env!("CARGO_BIN_EXE_coding-agent");

/// (exit status, stdout, stderr) of the binary with a clean environment and
/// an empty agent directory.
fn run(args: &[&str]) -> (Option<i32>, String, String) {
    run_with_settings(args, None)
}

/// [`run`] with `settings` as the agent directory's `settings.json`; the
/// temporary directory reads `<tmp>` in stderr.
fn run_with_settings(args: &[&str], settings: Option<&str>) -> (Option<i32>, String, String) {
    let dir = tempfile::tempdir().unwrap();
    if let Some(settings) = settings {
        std::fs::create_dir_all(dir.path().join("agent")).unwrap();
        std::fs::write(dir.path().join("agent/settings.json"), settings).unwrap();
    }
    run_in(dir.path(), args)
}

/// [`run`] in `dir`, which is also the home, holding the agent directory.
fn run_in(dir: &std::path::Path, args: &[&str]) -> (Option<i32>, String, String) {
    let output = Command::new(BIN)
        .args(args)
        .current_dir(dir)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", dir)
        .env("CODING_AGENT_DIR", dir.join("agent"))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8(output.stderr)
        .unwrap()
        .replace(dir.to_str().unwrap(), "<tmp>");
    (
        output.status.code(),
        String::from_utf8(output.stdout).unwrap(),
        stderr,
    )
}

#[test]
fn a_missing_api_key_says_how_to_set_one_and_exits_2() {
    assert_eq!(
        run(&["-p", "hello"]),
        (
            Some(2),
            String::new(),
            "coding-agent: no API key for provider \"openai\": set OPENAI_API_KEY or pass --api-key KEY (a provider in <tmp>/agent/settings.json may name another variable with \"apiKeyEnv\")\n".to_owned()
        )
    );
    assert_eq!(
        run(&["--provider", "anthropic", "--mode", "json", "hello"]).2,
        "coding-agent: no API key for provider \"anthropic\": set ANTHROPIC_API_KEY or pass --api-key KEY (a provider in <tmp>/agent/settings.json may name another variable with \"apiKeyEnv\")\n"
    );
}

#[test]
fn without_a_prompt_or_rpc_mode_there_is_nothing_to_do() {
    assert_eq!(
        run(&["--provider", "openai"]),
        (
            Some(2),
            String::new(),
            "coding-agent: nothing to do: pass a prompt with -p PROMPT or --mode json PROMPT, use --mode rpc, or run with no arguments in a terminal\n".to_owned()
        )
    );
}

#[test]
fn an_unknown_provider_without_a_url_exits_2() {
    assert_eq!(
        run(&["--provider", "nowhere", "-p", "hi"]),
        (
            Some(2),
            String::new(),
            "coding-agent: unknown provider \"nowhere\": use one of anthropic, openai (names are case-sensitive), pass --base-url URL for an OpenAI-compatible endpoint, or define it under \"providers\" in settings.json\n".to_owned()
        )
    );
}

#[test]
fn a_broken_settings_file_is_named_and_exits_2() {
    assert_eq!(
        run_with_settings(&["-p", "hi"], Some("{\"providers\": 3}")),
        (
            Some(2),
            String::new(),
            "coding-agent: <tmp>/agent/settings.json: invalid type: integer `3`, expected a map at line 1 column 15\n".to_owned()
        )
    );
}

#[test]
fn long_help_ends_with_the_environment_variables_read() {
    let (status, stdout, stderr) = run(&["--help"]);
    assert_eq!((status, stderr.as_str()), (Some(0), ""));
    let environment = stdout
        .split_once("\nEnvironment:\n")
        .map(|(_, rest)| rest)
        .unwrap_or_else(|| panic!("no Environment section in:\n{stdout}"));
    let names: Vec<&str> = environment
        .lines()
        .filter(|line| line.starts_with("  ") && !line.starts_with("   "))
        .map(str::trim)
        .collect();
    assert_eq!(
        names,
        [
            "OPENAI_API_KEY, ANTHROPIC_API_KEY",
            "CODING_AGENT_DIR",
            "CODING_AGENT_LOG",
            "CODING_AGENT_REMOTE_CACHE"
        ]
    );
}

/// `--model` names no model (`fake/`, `""`, `:high`: a request used to go out
/// with the model id `""`, `fake/` or `:high`), or gives a level in the
/// wrong case (`gpt-4o:HIGH` was sent as the id, while `--thinking HIGH` is
/// refused): a usage error, before any request.
#[test]
fn a_model_flag_naming_no_model_or_a_miscased_level_exits_2() {
    let flags = [
        "--api-key",
        "k",
        "--base-url",
        "http://127.0.0.1:9/v1",
        "-p",
        "hi",
    ];
    let with_model = |model: &str| run(&[&["--model", model][..], &flags[..]].concat());
    for model in ["fake/", "openai/", "", ":high", "/"] {
        assert_eq!(
            with_model(model),
            (
                Some(2),
                String::new(),
                format!(
                    "coding-agent: --model: no model id in \"{model}\": name a model as ID (gpt-4o) or PROVIDER/ID (openai/gpt-4o)\n"
                )
            ),
            "--model {model:?}"
        );
    }
    // The id after a provider is checked on its own.
    for (model, id) in [("openai//m", "/m"), ("openai/ m", " m")] {
        assert_eq!(
            with_model(model).2,
            format!(
                "coding-agent: no model id in \"{id}\": name a model as ID (gpt-4o) or PROVIDER/ID (openai/gpt-4o)\n"
            ),
            "--model {model:?}"
        );
    }
    assert_eq!(
        with_model("gpt-4o:HIGH"),
        (
            Some(2),
            String::new(),
            "coding-agent: --model: \"gpt-4o:HIGH\": Invalid thinking level \"HIGH\". Valid values: off, minimal, low, medium, high, xhigh\n".to_owned()
        )
    );
}

/// `--base-url notaurl` failed only at the first request ("builder error:
/// relative URL without a base", exit 1); a provider's `baseUrl` too.
#[test]
fn a_base_url_that_is_no_url_exits_2_naming_where_it_was_given() {
    assert_eq!(
        run(&["--api-key", "k", "--base-url", "notaurl", "-p", "hi"]),
        (
            Some(2),
            String::new(),
            "coding-agent: --base-url \"notaurl\" is not an http(s) URL (relative URL without a base): give the endpoint's whole URL, e.g. http://127.0.0.1:8080/v1\n".to_owned()
        )
    );
    assert_eq!(
        run_with_settings(
            &["--provider", "local", "--model", "m", "-p", "hi"],
            Some(r#"{"providers": {"local": {"baseUrl": "localhost:8080/v1"}}}"#),
        ),
        (
            Some(2),
            String::new(),
            "coding-agent: \"baseUrl\" of provider \"local\" in settings.json \"localhost:8080/v1\" is not an http(s) URL (it does not start with http:// or https://): give the endpoint's whole URL, e.g. http://127.0.0.1:8080/v1\n".to_owned()
        )
    );
}

/// A `--remote` naming no host, or a `--session`, `--fork` or
/// `--session-dir` naming what holds no session, is a mistake on the
/// command line: exit 2, as a bad `--export` or `--cwd` is (they exited 1,
/// as a failed run does). A `--session-dir` that is a file was found only
/// when the answer was saved: the run exited 0, its session lost.
#[test]
fn flags_naming_no_host_or_no_place_for_a_session_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "my notes\n").unwrap();
    std::fs::create_dir(dir.path().join("somedir")).unwrap();
    let not_a_session = "notes.txt is not a session file (its first line is not a session header); it was left as it is. Give the path of a session file (or, to start a session, a new path)";
    for (flags, error) in [
        (
            &["--remote", ""][..],
            "--remote \"\": no host (expected [ssh://][user@]host[:port][/abs/path])",
        ),
        (
            &["--ssh-option", "Port=2"],
            "--ssh-config and --ssh-option need --remote",
        ),
        (&["--session", "notes.txt"], not_a_session),
        (&["--fork", "notes.txt"], not_a_session),
        (
            &["--session", "somedir"],
            "session file somedir: Is a directory (os error 21)",
        ),
        (
            &["--session-dir", "notes.txt"],
            "--session-dir notes.txt: not a directory",
        ),
        (
            &["--session-dir", "/dev/null"],
            "--session-dir /dev/null: not a directory",
        ),
    ] {
        let model = ["--api-key", "k", "--base-url", "http://127.0.0.1:9/v1"];
        let args = [&model[..], flags, &["-p", "hi"]].concat();
        assert_eq!(
            run_in(dir.path(), &args),
            (Some(2), String::new(), format!("coding-agent: {error}\n")),
            "{flags:?}"
        );
    }
    assert_eq!(
        std::fs::read_to_string(dir.path().join("notes.txt")).unwrap(),
        "my notes\n"
    );
}

/// `--export` writes a page and exits: a prompt, `-p` or a session to run
/// beside it were ignored without a word.
#[test]
fn export_with_a_prompt_or_a_session_to_run_is_a_usage_error() {
    for args in [
        &["--export", "s.jsonl", "out.html", "extra"][..],
        &["--export", "s.jsonl", "-p", "hi"],
        &["--export", "s.jsonl", "--mode", "rpc"],
        &["--export", "s.jsonl", "--continue"],
    ] {
        let (status, stdout, stderr) = run(args);
        assert_eq!((status, stdout.as_str()), (Some(2), ""), "{args:?}");
        assert!(
            stderr
                .starts_with("error: the argument '--export <FILE|ID> [OUT]' cannot be used with"),
            "{args:?}: {stderr}"
        );
    }
}

/// `--continue` went on with an older session when the newest could not
/// be read (it was passed over as no session): the newest is named, and
/// why, as `--session FILE` names it.
#[test]
fn continue_names_the_newest_session_when_it_cannot_be_read() {
    use std::os::unix::fs::PermissionsExt;
    let mode = |path: &std::path::Path, mode: u32| {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    };
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path().canonicalize().unwrap();
    // Root reads every file: the binary runs as nobody then, who must get
    // through the folders.
    mode(&cwd, 0o755);
    let sessions = cwd.join("sessions");
    std::fs::create_dir(&sessions).unwrap();
    mode(&sessions, 0o777);
    let header = |id: &str| {
        format!(
            "{{\"type\":\"session\",\"version\":3,\"id\":\"{id}\",\"timestamp\":\"2025-01-01T00:00:00.000Z\",\"cwd\":\"{}\"}}\n",
            cwd.display()
        )
    };
    let old = sessions.join("old.jsonl");
    std::fs::write(&old, header("old")).unwrap();
    let hour_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    std::fs::File::options()
        .write(true)
        .open(&old)
        .unwrap()
        .set_modified(hour_ago)
        .unwrap();
    mode(&old, 0o666);
    let new = sessions.join("new.jsonl");
    std::fs::write(&new, header("new")).unwrap();
    mode(&new, 0o000);

    let mut command = unprivileged::command(BIN);
    let output = command
        .args(["--continue", "--api-key", "k", "--session-dir"])
        .arg(&sessions)
        .args(["--base-url", "http://127.0.0.1:9/v1", "-p", "hi"])
        .current_dir(&cwd)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", &cwd)
        .env("CODING_AGENT_DIR", cwd.join("agent"))
        .stdin(Stdio::null())
        .output()
        .expect("setpriv (util-linux) runs");
    assert_eq!(
        (
            output.status.code(),
            String::from_utf8_lossy(&output.stderr).into_owned()
        ),
        (
            Some(1),
            format!(
                "coding-agent: session file {}: Permission denied (os error 13)\n",
                new.display()
            )
        )
    );
}
