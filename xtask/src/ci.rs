//! `cargo xtask ci`: everything CI checks, in one command a developer can run
//! before pushing. `.ci/run` installs what the tests need and calls this, so
//! the list below is the single definition of what CI checks.

use anyhow::{Context, Result};

use crate::{cargo_command, layers, workspace_root};

/// One CI step: what it checks, and how.
struct Step {
    what: &'static str,
    check: fn() -> Result<()>,
}

/// The steps, cheapest first so the common failures come back fast.
const STEPS: &[Step] = &[
    Step {
        what: "formatting (cargo fmt --check)",
        check: || crate::cargo(&["fmt", "--all", "--check"]),
    },
    Step {
        what: "lints (cargo clippy -D warnings, all targets)",
        check: || {
            crate::cargo(&[
                "clippy",
                "--workspace",
                "--all-targets",
                "--locked",
                "--",
                "-D",
                "warnings",
            ])
        },
    },
    Step {
        what: "the crate layering rules",
        check: layers::run,
    },
    Step {
        what: "docs without warnings (every public item documented, links resolve)",
        check: || {
            crate::run_command(
                cargo_command()
                    .args(["doc", "--workspace", "--no-deps", "--locked"])
                    .env("RUSTDOCFLAGS", "-D warnings")
                    .current_dir(workspace_root()),
            )
        },
    },
    Step {
        what: "the tests and doc tests (the README's `cargo test --workspace`)",
        check: || crate::cargo(&["test", "--workspace", "--locked"]),
    },
    Step {
        what: "the library examples run",
        check: run_examples,
    },
    Step {
        what: "agent-core without default features: no HTTP stack, tests pass",
        check: agent_core_without_http,
    },
    Step {
        what: "coding-agent without default features: no terminal UI or MCP stack, lints and lib tests pass",
        check: coding_agent_without_tui,
    },
    Step {
        what: "one TLS stack: rustls, no OpenSSL or aws-lc (MCP's HTTP client included)",
        check: one_tls_stack,
    },
];

/// Each library crate's examples, as a user would run them.
fn run_examples() -> Result<()> {
    for (package, example) in [
        ("agent-ai", "typed_tool"),
        ("agent-core", "agent_with_hooks"),
        ("coding-agent", "one_call"),
        ("coding-agent", "in_memory_tools"),
    ] {
        crate::cargo(&["run", "--locked", "-p", package, "--example", example])?;
    }
    Ok(())
}

/// `agent-core` with `default-features = false` pulls in no HTTP client, and
/// builds and passes its tests so.
fn agent_core_without_http() -> Result<()> {
    forbid_without_default_features("agent-core", &["reqwest"])?;
    crate::cargo(&[
        "test",
        "--locked",
        "-p",
        "agent-core",
        "--no-default-features",
    ])
}

/// `coding-agent` with `default-features = false` (the tools for a library
/// user) pulls in no terminal UI and no MCP SDK; it lints clean and its unit
/// tests pass (the integration tests need the binary's features).
fn coding_agent_without_tui() -> Result<()> {
    forbid_without_default_features(
        "coding-agent",
        &[
            "ratatui",
            "crossterm",
            "syntect",
            "pulldown-cmark",
            "rmcp",
            "sse-stream",
        ],
    )?;
    crate::cargo(&[
        "clippy",
        "--locked",
        "-p",
        "coding-agent",
        "--no-default-features",
        "--all-targets",
        "--",
        "-D",
        "warnings",
    ])?;
    crate::cargo(&[
        "test",
        "--locked",
        "-p",
        "coding-agent",
        "--no-default-features",
        "--lib",
    ])
}

/// The binary with its default features (the MCP client's HTTP transport
/// included: rmcp's own would bring reqwest 0.13 and aws-lc) links one TLS
/// stack, rustls, through one reqwest.
fn one_tls_stack() -> Result<()> {
    let lines = dependency_lines("coding-agent", &[])?;
    let forbidden = [
        "openssl",
        "openssl-sys",
        "native-tls",
        "aws-lc-rs",
        "aws-lc-sys",
    ];
    let mut reqwests = Vec::new();
    for line in &lines {
        let name = line.split(' ').next().unwrap_or_default();
        if forbidden.contains(&name) {
            anyhow::bail!("coding-agent depends on {line}");
        }
        if name == "reqwest" && !reqwests.contains(line) {
            reqwests.push(line.clone());
        }
    }
    if reqwests.len() > 1 {
        anyhow::bail!("coding-agent depends on several reqwests: {reqwests:?}");
    }
    Ok(())
}

/// Fails when `package` without its default features still depends
/// (normally, at any depth) on one of `crates`.
fn forbid_without_default_features(package: &str, crates: &[&str]) -> Result<()> {
    for line in dependency_lines(package, &["--no-default-features"])? {
        let name = line.split(' ').next().unwrap_or_default();
        if crates.contains(&name) {
            anyhow::bail!("{package} --no-default-features still depends on {line}");
        }
    }
    Ok(())
}

/// `package`'s normal dependencies at any depth, one `name vX.Y.Z` line
/// each, with `extra` arguments to `cargo tree`.
fn dependency_lines(package: &str, extra: &[&str]) -> Result<Vec<String>> {
    let tree = crate::command_output(
        cargo_command()
            .args(["tree", "--locked", "-p", package])
            .args(extra)
            .args(["-e", "normal", "--prefix", "none"])
            .current_dir(workspace_root()),
    )?;
    Ok(tree
        .lines()
        .map(|line| line.trim_end_matches(" (*)").to_owned())
        .collect())
}

/// Runs every step in order and stops at the first failure, naming it.
pub fn run() -> Result<()> {
    for (index, step) in STEPS.iter().enumerate() {
        println!("ci [{}/{}]: {}", index + 1, STEPS.len(), step.what);
        (step.check)().with_context(|| format!("ci failed at: {}", step.what))?;
    }
    println!("ci: all {} checks passed", STEPS.len());
    Ok(())
}
