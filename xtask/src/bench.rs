//! `cargo xtask bench`: end-to-end figures for the built-in tools.
//!
//! Every figure is a ratio against a baseline measured in the same run on the
//! same machine, so the numbers mean something on any hardware:
//! - grep over a tree of real source (copies of `~/.cargo/registry/src`, at least
//!   200 MB) against the `rg` binary with the same options, when installed;
//! - find over the same tree against `fd`/`fdfind`, when installed;
//! - read of the last 50 lines of a 1 GB file (time and peak RSS) against
//!   `wc -l`: reading by line number must count every line before the window
//!   (and Pi reports the total), so one pass over the file is the floor;
//! - edit of one line near the end of a 100 MB file (time and peak RSS)
//!   against `sed -i`: both read the whole file and write it anew;
//! - bash producing 200 MB of output (time and peak RSS) against bash piping
//!   the same output through `cat` into a file: the same pipe and the same
//!   full-output file our tool writes, without the tool.
//!
//! - the tools through `--remote` against a real sshd on 127.0.0.1
//!   (`crates/coding-agent/benches/remote.rs`): a small read against a bare
//!   `ssh -S <control socket> host true`, a 10-call parallel batch against
//!   one call, grep over a 250 MB tree and a read near the end of a 1 GB file
//!   against the same calls run locally;
//! - a frame of the interactive screen at turn 300 of a session against one at
//!   turn 30 (`crates/coding-agent/benches/transcript.rs`).
//!
//! Each tool run goes through the release binary's `tool` command, so the
//! figures include process start-up and the full five-step pipeline. Time and
//! peak RSS come from GNU `time` (`/usr/bin/time -f "%e %M"`).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};

use crate::{cargo, workspace_root};

/// One measured command: best wall time over the runs and the largest peak RSS.
#[derive(Debug, Clone, Copy)]
struct Sample {
    seconds: f64,
    max_rss_kb: u64,
}

/// Runs `program args` `runs` times under GNU time; stdout is discarded.
fn measure(program: &Path, args: &[&str], cwd: &Path, runs: usize) -> Result<Sample> {
    let mut best = Sample {
        seconds: f64::INFINITY,
        max_rss_kb: 0,
    };
    let report = workspace_root().join("target/bench/time.out");
    for _ in 0..runs {
        let status = Command::new("/usr/bin/time")
            .arg("-f")
            .arg("%e %M")
            .arg("-o")
            .arg(&report)
            .arg(program)
            .args(args)
            .current_dir(cwd)
            // The bash tool keeps full output files in TMPDIR; keep them in the bench dir.
            .env("TMPDIR", cwd.join("tmp"))
            .stdout(Stdio::null())
            .status()
            .with_context(|| format!("running {}", program.display()))?;
        if !status.success() && status.code() != Some(1) {
            bail!("{} {:?} failed: {status}", program.display(), args);
        }
        let text = std::fs::read_to_string(&report)?;
        let last = text.lines().last().unwrap_or_default();
        let mut fields = last.split_whitespace();
        let seconds: f64 = fields.next().unwrap_or("0").parse()?;
        let rss: u64 = fields.next().unwrap_or("0").parse()?;
        best.seconds = best.seconds.min(seconds);
        best.max_rss_kb = best.max_rss_kb.max(rss);
    }
    Ok(best)
}

fn which(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join(name))
            .find(|candidate| candidate.is_file())
    })
}

fn dir_size(path: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(path) else {
        return 0;
    };
    entries
        .flatten()
        .map(|entry| match entry.file_type() {
            Ok(t) if t.is_dir() => dir_size(&entry.path()),
            Ok(t) if t.is_file() => entry.metadata().map(|m| m.len()).unwrap_or(0),
            _ => 0,
        })
        .sum()
}

/// A tree of real source of at least `min_bytes`, made of copies of the cargo
/// registry's sources (the only large body of real code on every dev machine).
fn source_corpus(root: &Path, min_bytes: u64) -> Result<PathBuf> {
    let corpus = root.join("corpus");
    if corpus.exists() && dir_size(&corpus) >= min_bytes {
        return Ok(corpus);
    }
    let home = std::env::var_os("HOME").context("HOME is not set")?;
    let registry = PathBuf::from(home).join(".cargo/registry/src");
    let source_size = dir_size(&registry);
    if source_size == 0 {
        bail!("no sources under {}", registry.display());
    }
    let _ = std::fs::remove_dir_all(&corpus);
    std::fs::create_dir_all(&corpus)?;
    let mut copies: u64 = 0;
    while copies * source_size < min_bytes {
        let status = Command::new("cp")
            .arg("-r")
            .arg(&registry)
            .arg(corpus.join(format!("copy{copies}")))
            .status()?;
        if !status.success() {
            bail!("copying {} failed", registry.display());
        }
        copies += 1;
    }
    Ok(corpus)
}

/// `measure_once` `runs` times, each on a fresh copy of `source` at `target`
/// (a command that changes its file): the best time and the largest RSS.
fn measure_fresh(
    source: &Path,
    target: &Path,
    runs: usize,
    measure_once: impl Fn() -> Result<Sample>,
) -> Result<Sample> {
    let mut best = Sample {
        seconds: f64::INFINITY,
        max_rss_kb: 0,
    };
    for _ in 0..runs {
        std::fs::copy(source, target)?;
        let sample = measure_once()?;
        best.seconds = best.seconds.min(sample.seconds);
        best.max_rss_kb = best.max_rss_kb.max(sample.max_rss_kb);
    }
    let edited = std::fs::read_to_string(target)?;
    if !edited.contains(" EDITED ") {
        bail!("the edit left {} unchanged", target.display());
    }
    Ok(best)
}

/// A file of exactly `lines` numbered lines of about 100 bytes each.
fn big_file(path: &Path, lines: u64) -> Result<()> {
    if path.exists() {
        return Ok(());
    }
    let mut out = std::io::BufWriter::new(std::fs::File::create(path)?);
    let filler = "x".repeat(88);
    for n in 1..=lines {
        writeln!(out, "{n:010} {filler}")?;
    }
    out.flush()?;
    Ok(())
}

struct Row {
    what: String,
    ours: Sample,
    baseline_name: String,
    baseline: Option<Sample>,
}

fn print_rows(rows: &[Row]) {
    println!();
    println!(
        "| benchmark | ours (s) | ours peak RSS (MB) | baseline | baseline (s) | baseline RSS (MB) | time ratio |"
    );
    println!("|---|---|---|---|---|---|---|");
    for row in rows {
        let mb = |kb: u64| kb as f64 / 1024.0;
        match row.baseline {
            Some(b) => println!(
                "| {} | {:.2} | {:.1} | {} | {:.2} | {:.1} | {:.2}x |",
                row.what,
                row.ours.seconds,
                mb(row.ours.max_rss_kb),
                row.baseline_name,
                b.seconds,
                mb(b.max_rss_kb),
                row.ours.seconds / b.seconds.max(0.005)
            ),
            None => println!(
                "| {} | {:.2} | {:.1} | {} (not installed) | - | - | - |",
                row.what,
                row.ours.seconds,
                mb(row.ours.max_rss_kb),
                row.baseline_name
            ),
        }
    }
}

/// Entry point: `cargo xtask bench [--quick]`. `--quick` uses smaller inputs.
pub fn run(quick: bool) -> Result<()> {
    let runs = if quick { 1 } else { 3 };
    cargo(&["build", "--release", "-p", "coding-agent"])?;
    let root = workspace_root().join("target/bench");
    std::fs::create_dir_all(root.join("tmp"))?;
    let agent = workspace_root().join("target/release/coding-agent");
    let mut rows = Vec::new();

    let corpus_bytes = if quick { 20 << 20 } else { 200 << 20 };
    let corpus = source_corpus(&root, corpus_bytes)?;
    let corpus_str = corpus.to_string_lossy().into_owned();
    eprintln!(
        "corpus: {} ({} MB)",
        corpus.display(),
        dir_size(&corpus) >> 20
    );

    // grep: a moderately rare identifier, so the whole tree is searched and the
    // output stays small; limit high enough never to stop early.
    let pattern = "PhantomPinned";
    let grep_args = format!(r#"{{"pattern":"{pattern}","path":"{corpus_str}","limit":1000000}}"#);
    rows.push(Row {
        what: format!("grep `{pattern}` over the corpus"),
        ours: measure(&agent, &["tool", "grep", &grep_args], &root, runs)?,
        baseline_name: "rg --json --hidden".into(),
        baseline: match which("rg") {
            Some(rg) => Some(measure(
                &rg,
                &[
                    "--json",
                    "--line-number",
                    "--color=never",
                    "--hidden",
                    "--",
                    pattern,
                    &corpus_str,
                ],
                &root,
                runs,
            )?),
            None => None,
        },
    });

    // find: every Rust file.
    let find_args = format!(r#"{{"pattern":"*.rs","path":"{corpus_str}","limit":100000000}}"#);
    rows.push(Row {
        what: "find `*.rs` over the corpus".into(),
        ours: measure(&agent, &["tool", "find", &find_args], &root, runs)?,
        baseline_name: "fd --glob --hidden".into(),
        baseline: match which("fd").or_else(|| which("fdfind")) {
            Some(fd) => Some(measure(
                &fd,
                &[
                    "--glob",
                    "--color=never",
                    "--hidden",
                    "--",
                    "*.rs",
                    &corpus_str,
                ],
                &root,
                runs,
            )?),
            None => None,
        },
    });

    // read: the last 50 lines of a 1 GB file.
    let lines: u64 = if quick { 1_000_000 } else { 10_000_000 };
    let big = root.join(format!("big-{lines}.txt"));
    big_file(&big, lines)?;
    let big_str = big.to_string_lossy().into_owned();
    // A file ending in a newline has one more (empty) line, as Pi counts.
    let read_args = format!(r#"{{"path":"{big_str}","offset":{}}}"#, lines + 1 - 49);
    rows.push(Row {
        what: format!("read last 50 lines of a {} MB file", (lines * 100) >> 20),
        ours: measure(&agent, &["tool", "read", &read_args], &root, runs)?,
        baseline_name: "wc -l".into(),
        baseline: Some(measure(
            Path::new("/usr/bin/wc"),
            &["-l", &big_str],
            &root,
            runs,
        )?),
    });

    // edit: one line near the end of a 100 MB file, a fresh copy each run.
    let edit_lines: u64 = if quick { 100_000 } else { 1_000_000 };
    let source = root.join(format!("big-{edit_lines}.txt"));
    big_file(&source, edit_lines)?;
    let target = root.join("tmp/edited.txt");
    let target_str = target.to_string_lossy().into_owned();
    let line = format!("{:010} ", edit_lines - 10);
    let edit_args = serde_json::json!({
        "path": target_str,
        "edits": [{"oldText": line, "newText": format!("{line}EDITED ")}],
    })
    .to_string();
    let sed_script = format!("s/^{line}/{line}EDITED /");
    rows.push(Row {
        what: format!("edit one line of a {} MB file", (edit_lines * 100) >> 20),
        ours: measure_fresh(&source, &target, runs, || {
            measure(&agent, &["tool", "edit", &edit_args], &root, 1)
        })?,
        baseline_name: "sed -i".into(),
        baseline: Some(measure_fresh(&source, &target, runs, || {
            measure(
                Path::new("/bin/sed"),
                &["-i", &sed_script, &target_str],
                &root,
                1,
            )
        })?),
    });

    // bash: 200 MB of output.
    let bytes = if quick { 20_000_000 } else { 200_000_000 };
    let command = format!("yes 'a line of output from a noisy build step' | head -c {bytes}");
    let bash_args = serde_json::json!({ "command": command }).to_string();
    rows.push(Row {
        what: format!("bash printing {} MB", bytes / 1_000_000),
        ours: measure(&agent, &["tool", "bash", &bash_args], &root, runs)?,
        baseline_name: "bash -c, piped through cat to a file".into(),
        baseline: Some(measure(
            Path::new("/bin/bash"),
            &["-c", &format!("({command}) | cat > tmp/baseline.log")],
            &root,
            runs,
        )?),
    });
    let _ = std::fs::remove_dir_all(root.join("tmp"));

    print_rows(&rows);
    remote(quick, &corpus)?;
    transcript()
}

/// The interactive screen's frame as a session grows: the `transcript`
/// bench of coding-agent (it prints its own lines).
fn transcript() -> Result<()> {
    let mut bench = crate::cargo_command();
    bench
        .args(["bench", "-p", "coding-agent", "--bench", "transcript"])
        .current_dir(workspace_root());
    crate::run_command(&mut bench)
}

/// The `--remote` figures: the `remote` bench of coding-agent, on the same
/// corpus (it prints its own table).
fn remote(quick: bool, corpus: &Path) -> Result<()> {
    let mut bench = crate::cargo_command();
    bench
        .args(["bench", "-p", "coding-agent", "--bench", "remote"])
        .current_dir(workspace_root())
        .env("BENCH_QUICK", if quick { "1" } else { "0" })
        .env("BENCH_CORPUS", corpus);
    crate::run_command(&mut bench)
}
