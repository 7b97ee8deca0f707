//! Data-driven parity with Pi: every fixture in `parity/fixtures/cases/*.json`
//! (format: `parity/fixtures/README.md`) is laid out in a fresh temp root, run
//! through the real binary (`coding-agent tool NAME ARGS --cwd work/`), and
//! compared with Pi's answer, or with ours where `parity/deviations.rs` names
//! a deviation from `docs/DEVIATIONS.md`.
//!
//! Cases for built-in tools not in this build are listed as skipped, not
//! passed. Every mismatch of every case is reported before the test fails.
//! Set `PARITY_CASES_DIR` to run another directory of fixtures.

// Harness code outside `#[test]` functions; a broken harness should panic loudly.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "parity/case.rs"]
mod case;
#[path = "parity/compare.rs"]
mod compare;
#[path = "parity/deviations.rs"]
mod deviations;
#[path = "parity/layout.rs"]
mod layout;
#[path = "remote_support/mod.rs"]
mod remote_support;
#[path = "parity/run.rs"]
mod run;

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use coding_agent::tools::{BUILTIN_TOOL_NAMES, builtin_tool};

use case::{Answer, Block, Case};
use compare::{Difference, Expected};

/// Cases run at once (each is a separate process; most finish in milliseconds).
const WORKERS: usize = 4;

/// Tools whose fixtures record `work/` after the call; the others cannot change files.
const FILE_CHANGING_TOOLS: [&str; 3] = ["bash", "edit", "write"];

enum Outcome {
    Passed,
    Skipped(String),
    Failed(Vec<Difference>),
}

#[test]
fn parity_fixtures_match_pi_or_a_named_deviation() {
    let dir = cases_dir();
    let cases = load_cases(&dir);
    assert!(!cases.is_empty(), "no fixtures in {}", dir.display());
    let table_problems = check_deviation_table(&cases);

    let results = run_all(&cases, None);
    let report = report(&results, &table_problems);
    let failed = results
        .values()
        .filter(|o| matches!(o, Outcome::Failed(_)))
        .count();
    assert!(
        failed == 0 && table_problems.is_empty(),
        "{failed} parity case(s) differ from the expected answer\n{report}"
    );
    // Written past the test harness's capture, so the skipped cases show on success too.
    let _ = std::io::stderr().write_all(report.as_bytes());
}

/// The same fixtures through `--remote` against a real sshd on 127.0.0.1:
/// the tools act through the helper on the "remote" and must give the
/// same answers, byte for byte (the case's environment reaches the helper
/// through ssh's `SetEnv`).
#[test]
fn parity_fixtures_match_through_remote() {
    let Some(sshd) = remote_support::Sshd::start() else {
        return;
    };
    let cases = load_cases(&cases_dir());
    let results = run_all(&cases, Some(&sshd));
    let report = report(&results, &[]);
    let failed = results
        .values()
        .filter(|o| matches!(o, Outcome::Failed(_)))
        .count();
    assert!(
        failed == 0,
        "{failed} parity case(s) differ through --remote\n{report}"
    );
    let _ = std::io::stderr().write_all(report.as_bytes());
}

/// The fixtures: `$PARITY_CASES_DIR` when set, else the ones in
/// `tests/parity/fixtures/cases`.
fn cases_dir() -> PathBuf {
    match std::env::var_os("PARITY_CASES_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/parity/fixtures/cases"),
    }
}

/// Every `*.json` in `dir` by file name; a fixture that does not parse is
/// kept as an error so it is reported with the rest.
fn load_cases(dir: &Path) -> BTreeMap<String, Result<Case, String>> {
    let entries =
        std::fs::read_dir(dir).unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()));
    entries
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
        .map(|path| {
            let name = path.file_stem().unwrap().to_string_lossy().into_owned();
            let case = std::fs::read_to_string(&path)
                .map_err(|e| e.to_string())
                .and_then(|text| serde_json::from_str::<Case>(&text).map_err(|e| e.to_string()));
            (name, case)
        })
        .collect()
}

/// Each deviation names a fixture that exists and a row of `docs/DEVIATIONS.md`.
fn check_deviation_table(cases: &BTreeMap<String, Result<Case, String>>) -> Vec<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/DEVIATIONS.md");
    let table = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let mut problems = Vec::new();
    for deviation in deviations::DEVIATIONS {
        if !table.contains(&format!("\n| {} |", deviation.number)) {
            problems.push(format!(
                "deviation table: {} names deviation {}, which docs/DEVIATIONS.md does not list",
                deviation.case, deviation.number
            ));
        }
        if !cases.contains_key(deviation.case) {
            problems.push(format!(
                "deviation table: no fixture named {}",
                deviation.case
            ));
        }
    }
    problems
}

/// Runs every case, locally or through `remote`.
fn run_all(
    cases: &BTreeMap<String, Result<Case, String>>,
    remote: Option<&remote_support::Sshd>,
) -> BTreeMap<String, Outcome> {
    let queue: Vec<(&String, &Result<Case, String>)> = cases.iter().collect();
    let next = AtomicUsize::new(0);
    let results = Mutex::new(BTreeMap::new());
    std::thread::scope(|scope| {
        for _ in 0..WORKERS {
            scope.spawn(|| {
                while let Some((name, case)) = queue.get(next.fetch_add(1, Ordering::SeqCst)) {
                    let outcome = match case {
                        Ok(case) => run_case(case, remote),
                        Err(e) => Outcome::Failed(vec![difference("fixture", "valid JSON", e)]),
                    };
                    results.lock().unwrap().insert((*name).clone(), outcome);
                }
            });
        }
    });
    results.into_inner().unwrap()
}

fn difference(what: &str, expected: &str, got: &str) -> Difference {
    Difference {
        what: what.to_owned(),
        expected: expected.to_owned(),
        got: got.to_owned(),
    }
}

fn run_case(case: &Case, remote: Option<&remote_support::Sshd>) -> Outcome {
    if BUILTIN_TOOL_NAMES.contains(&case.tool.as_str()) && builtin_tool(&case.tool).is_none() {
        return Outcome::Skipped(format!("tool {} not registered", case.tool));
    }
    let layout = match layout::lay_out(&case.setup) {
        Ok(layout) => layout,
        Err(e) => return Outcome::Failed(vec![difference("setup", "laid out", &e)]),
    };
    let args = layout.substitute_json(&case.args).to_string();
    let env: Vec<(String, String)> = case
        .setup
        .env
        .iter()
        .map(|(k, v)| (k.clone(), layout.substitute(v)))
        .collect();
    let run = match remote {
        None => run::run_tool(&case.tool, &args, &layout, &env),
        Some(sshd) => run::run_tool_remotely(&case.tool, &args, &layout, &env, sshd),
    };
    let run = match run {
        Ok(run) => run,
        Err(e) => return Outcome::Failed(vec![difference("run", "an answer", &e)]),
    };
    if run.status != Some(0) {
        return Outcome::Failed(vec![difference(
            "exit status",
            "0",
            &format!("{:?}, stderr: {}", run.status, run.stderr),
        )]);
    }
    let got: Answer = match serde_json::from_str(&run.stdout) {
        Ok(answer) => answer,
        Err(e) => {
            return Outcome::Failed(vec![difference(
                "stdout",
                "one tool-result JSON object",
                &format!("{e}: {}", run.stdout),
            )]);
        }
    };
    let expected = expected_answer(case, &layout);
    let mut found = compare::differences(&expected, &got, case.compare, &layout.tmp);
    if let Some(files) = &expected.fs_after {
        found.extend(compare::file_differences(&layout.work, files));
    }
    if found.is_empty() {
        Outcome::Passed
    } else {
        Outcome::Failed(found)
    }
}

/// Pi's answer with the placeholders filled in, or ours where we deviate.
fn expected_answer(case: &Case, layout: &layout::Layout) -> Expected {
    let pi_content = case.pi.content.iter().map(|block| match block {
        Block::Text { text } => Block::Text {
            text: layout.substitute(text),
        },
        image => image.clone(),
    });
    let pi_files = FILE_CHANGING_TOOLS
        .contains(&case.tool.as_str())
        .then(|| case.fs_after.clone());
    match deviations::find(&case.name) {
        None => Expected {
            is_error: case.pi.is_error,
            content: pi_content.collect(),
            fs_after: pi_files,
        },
        Some(deviation) => Expected {
            is_error: deviation.is_error,
            content: std::iter::once(Block::Text {
                text: layout.substitute(deviation.text),
            })
            .chain(pi_content.filter(|block| matches!(block, Block::Image { .. })))
            .collect(),
            fs_after: match deviation.files {
                Some(files) => Some(
                    files
                        .iter()
                        .map(|(path, text)| ((*path).to_owned(), case::FileAfter::of_text(text)))
                        .collect(),
                ),
                None => pi_files,
            },
        },
    }
}

fn report(results: &BTreeMap<String, Outcome>, table_problems: &[String]) -> String {
    let count = |f: fn(&Outcome) -> bool| results.values().filter(|o| f(o)).count();
    let mut out = format!(
        "parity: {} passed, {} failed, {} skipped\n",
        count(|o| matches!(o, Outcome::Passed)),
        count(|o| matches!(o, Outcome::Failed(_))),
        count(|o| matches!(o, Outcome::Skipped(_))),
    );
    for (name, outcome) in results {
        if let Outcome::Skipped(reason) = outcome {
            out.push_str(&format!("  skipped {name}: {reason}\n"));
        }
    }
    for (name, outcome) in results {
        if let Outcome::Failed(differences) = outcome {
            for d in differences {
                out.push_str(&format!(
                    "  MISMATCH {name}: {}\n    expected: {}\n    got:      {}\n",
                    d.what, d.expected, d.got
                ));
            }
        }
    }
    for problem in table_problems {
        out.push_str(&format!("  {problem}\n"));
    }
    out
}
