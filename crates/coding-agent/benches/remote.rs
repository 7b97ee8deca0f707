//! `--remote` figures against a real sshd on 127.0.0.1 (run by `cargo xtask
//! bench`, or `cargo bench -p coding-agent --bench remote`), each a ratio
//! against a baseline measured in the same run:
//! - a small read through the remote tool against a bare `ssh -S <control
//!   socket> host true` on the same connection (the cheapest thing ssh can
//!   do per call; no login script runs, see `main`);
//! - 10 reads in parallel (one batch) against one read, and the same for
//!   the local tool (how a batch scales on this machine without ssh);
//! - grep over a tree of real source against the same grep run locally;
//! - read of the last lines of a large file against the same read locally.
//!
//! Latencies are medians over repeated calls in one process, so they measure
//! the call, not connecting. `BENCH_QUICK=1` uses smaller inputs; `BENCH_CORPUS`
//! names the source tree to grep (default: a copy of the cargo registry's
//! sources made under the target directory).

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

#[path = "../tests/remote_support/mod.rs"]
mod remote_support;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_ai::Content;
use agent_core::AgentToolResult;
use coding_agent::remote::protocol::Call;
use coding_agent::remote::{RemoteOperations, remote_tool};
use coding_agent::tools::builtin_tool;
use coding_agent::{ToolContext, ToolDefinition};
use remote_support::{HOST, Sshd};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

/// One call to `tool`; a failed call fails the bench.
async fn call(tool: &Arc<dyn ToolDefinition>, cwd: &Path, args: &Value) -> AgentToolResult {
    let result = tool.execute(args.clone(), ToolContext::new(cwd)).await;
    result.unwrap_or_else(|error| panic!("{error:?}"))
}

/// The text a call returns.
async fn output(tool: &Arc<dyn ToolDefinition>, cwd: &Path, args: &Value) -> String {
    call(tool, cwd, args)
        .await
        .content
        .iter()
        .map(|c| match c {
            Content::Text(t) => t.text.clone(),
            other => format!("{other:?}"),
        })
        .collect()
}

async fn timed(tool: &Arc<dyn ToolDefinition>, cwd: &Path, args: &Value) -> Duration {
    let started = Instant::now();
    call(tool, cwd, args).await;
    started.elapsed()
}

fn row(what: &str, ours: Duration, baseline_name: &str, baseline: Duration) {
    println!(
        "| {what} | {:.2} ms | {baseline_name} | {:.2} ms | {:.2}x |",
        ours.as_secs_f64() * 1e3,
        baseline.as_secs_f64() * 1e3,
        ours.as_secs_f64() / baseline.as_secs_f64().max(1e-6)
    );
}

/// A tree of real source of about `bytes`: copies of the cargo registry.
fn corpus(bytes: u64) -> PathBuf {
    if let Some(dir) = std::env::var_os("BENCH_CORPUS") {
        return PathBuf::from(dir);
    }
    let corpus =
        PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("remote-corpus-{}", bytes >> 20));
    if corpus.exists() {
        return corpus;
    }
    let registry = PathBuf::from(std::env::var_os("HOME").unwrap()).join(".cargo/registry/src");
    let size = du(&registry).max(1);
    std::fs::create_dir_all(&corpus).unwrap();
    for copy in 0..bytes.div_ceil(size) {
        let status = Command::new("cp")
            .arg("-r")
            .arg(&registry)
            .arg(corpus.join(format!("copy{copy}")))
            .status()
            .unwrap();
        assert!(status.success());
    }
    corpus
}

fn du(path: &Path) -> u64 {
    let out = Command::new("du").arg("-sb").arg(path).output().unwrap();
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

fn big_file(path: &Path, lines: u64) {
    if path.exists() {
        return;
    }
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    let filler = "x".repeat(88);
    for n in 1..=lines {
        writeln!(out, "{n:010} {filler}").unwrap();
    }
    out.flush().unwrap();
}

#[tokio::main]
async fn main() {
    let quick = std::env::var("BENCH_QUICK").is_ok_and(|v| v == "1");
    // The baseline is ssh's own round trip: sessions get `SHLVL=1`, so the
    // remote bash skips `~/.bashrc` (it sources it only as the first shell
    // sshd starts). A login script is what a shell command per call would
    // also pay, every call: root's `.bashrc` on a machine with pyenv made
    // the same `true` take about 300 ms. The helper is started once, so it
    // never pays it per call.
    let Some(sshd) = Sshd::start_with("SetEnv SHLVL=1\n") else {
        eprintln!("remote bench: no sshd, nothing measured");
        return;
    };
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("remote-bench");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("small.txt"), "one line\n").unwrap();
    let host = Arc::new(sshd.connect(&dir).await);
    let ops = RemoteOperations::new(Arc::clone(&host));
    let remote = |name| remote_tool(name, &ops).unwrap();
    let local = |name| builtin_tool(name).unwrap();
    let rounds = if quick { 50 } else { 200 };

    println!("\n| remote benchmark | ours | baseline | baseline time | ratio |");
    println!("|---|---|---|---|---|");

    // A bare command on the same connection.
    let control = host.connection().await.unwrap().control_path();
    let mut bare = Vec::new();
    for _ in 0..rounds {
        let started = Instant::now();
        let status = Command::new("ssh")
            .arg("-F")
            .arg(sshd.ssh_config())
            .arg("-S")
            .arg(&control)
            .args([HOST, "true"])
            .stdin(Stdio::null())
            .status()
            .unwrap();
        assert!(status.success());
        bare.push(started.elapsed());
    }
    let read = remote("read");
    let small = json!({"path": "small.txt"});
    call(&read, &dir, &small).await;
    let mut reads = Vec::new();
    for _ in 0..rounds {
        reads.push(timed(&read, &dir, &small).await);
    }
    let one_read = median(reads);
    row(
        "small read (median)",
        one_read,
        "ssh -S <control> host true",
        median(bare.clone()),
    );

    // 10 reads at once, as a parallel batch runs them. The first batch of a
    // connection also starts the helper's threads for ten calls at once (the
    // single reads above needed one); it gets a row of its own, and the
    // median is taken, like the single read's, over as many warm rounds.
    let ten_reads = || futures::future::join_all((0..10).map(|_| call(&read, &dir, &small)));
    let started = Instant::now();
    ten_reads().await;
    let first_batch = started.elapsed();
    let mut batches = Vec::new();
    for _ in 0..rounds {
        let started = Instant::now();
        ten_reads().await;
        batches.push(started.elapsed());
    }
    row(
        "10 reads in parallel (median)",
        median(batches),
        "one read",
        one_read,
    );
    row(
        "the connection's first 10 reads in parallel",
        first_batch,
        "one read",
        one_read,
    );

    // The same two figures for the local tool: how ten reads at once scale
    // on this machine with no ssh at all.
    let local_read = local("read");
    let mut local_reads = Vec::new();
    let mut local_batches = Vec::new();
    let ten_local_reads =
        || futures::future::join_all((0..10).map(|_| call(&local_read, &dir, &small)));
    ten_local_reads().await;
    for _ in 0..rounds {
        local_reads.push(timed(&local_read, &dir, &small).await);
    }
    for _ in 0..rounds {
        let started = Instant::now();
        ten_local_reads().await;
        local_batches.push(started.elapsed());
    }
    let one_local_read = median(local_reads);
    row(
        "10 local reads in parallel (median)",
        median(local_batches),
        "one local read",
        one_local_read,
    );

    // The same for bare helper calls (no tool pipeline): what the channel,
    // ssh and the helper cost a batch, apart from the tools.
    let channel = host.connection().await.unwrap();
    let never = CancellationToken::new();
    let exists = || Call::LsExists(dir.join("small.txt"));
    let mut singles = Vec::new();
    let mut raw_batches = Vec::new();
    for _ in 0..rounds {
        let started = Instant::now();
        channel.channel().call(exists(), &never).await.unwrap();
        singles.push(started.elapsed());
    }
    for _ in 0..rounds {
        let started = Instant::now();
        futures::future::join_all((0..10).map(|_| channel.channel().call(exists(), &never))).await;
        raw_batches.push(started.elapsed());
    }
    let one_call = median(singles);
    row(
        "one helper call (median)",
        one_call,
        "ssh -S <control> host true",
        median(bare.clone()),
    );
    row(
        "10 helper calls in parallel (median)",
        median(raw_batches),
        "one helper call",
        one_call,
    );

    // grep over a tree of real source, remote against local.
    let tree = corpus(if quick { 25 << 20 } else { 250 << 20 });
    eprintln!("corpus: {} ({} MB)", tree.display(), du(&tree) >> 20);
    let grep_args = json!({"pattern": "PhantomPinned", "path": tree, "limit": 1_000_000});
    let runs = if quick { 1 } else { 3 };
    // Both must find the same (the same tree, the same ignore rules), and
    // neither may be timed on a cold page cache the other warmed.
    let local_text = output(&local("grep"), &dir, &grep_args).await;
    let remote_text = output(&remote("grep"), &dir, &grep_args).await;
    assert_eq!(local_text, remote_text, "remote and local grep differ");
    eprintln!(
        "grep: {} matching lines, the same locally and remotely",
        local_text.lines().filter(|l| !l.is_empty()).count()
    );
    let mut remote_grep = Vec::new();
    let mut local_grep = Vec::new();
    for _ in 0..runs {
        local_grep.push(timed(&local("grep"), &dir, &grep_args).await);
        remote_grep.push(timed(&remote("grep"), &dir, &grep_args).await);
    }
    row(
        &format!("grep over {} MB", du(&tree) >> 20),
        median(remote_grep),
        "the same grep, local",
        median(local_grep),
    );

    // The last lines of a large file, remote against local.
    let lines: u64 = if quick { 1_000_000 } else { 10_000_000 };
    let big = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("big-{lines}.txt"));
    big_file(&big, lines);
    let tail = json!({"path": big, "offset": lines + 1 - 49});
    assert_eq!(
        output(&local("read"), &dir, &tail).await,
        output(&read, &dir, &tail).await,
        "remote and local read differ"
    );
    let moved_before = host.connection().await.unwrap().channel().bytes_received();
    let mut remote_tail = Vec::new();
    let mut local_tail = Vec::new();
    for _ in 0..runs {
        local_tail.push(timed(&local("read"), &dir, &tail).await);
        remote_tail.push(timed(&read, &dir, &tail).await);
    }
    let moved = host.connection().await.unwrap().channel().bytes_received() - moved_before;
    row(
        &format!(
            "read last 50 lines of {} MB ({} KB moved per read)",
            (lines * 100) >> 20,
            moved / runs as u64 / 1024
        ),
        median(remote_tail),
        "the same read, local",
        median(local_tail),
    );
}
