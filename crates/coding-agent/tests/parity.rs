//! Data-driven parity with Pi: every fixture in `shared/parity/cases/*.json`
//! (format: `shared/parity/README.md`) is laid out in a fresh temp root, run
//! through the real binary (`coding-agent tool NAME ARGS --cwd work/`), and
//! compared with Pi's answer, or with ours where `parity/deviations.rs` names
//! a deviation from `DEVIATIONS.md`.
//!
//! Cases for built-in tools not in this build are listed as skipped, not
//! passed. Every mismatch of every case is reported before the test fails.
//! The fixtures are vendored in `tests/parity/shared/` (a copy of the project's
//! `shared/parity` and `shared/reference/DEVIATIONS.md`); set `PARITY_CASES_DIR`
//! to run another directory of fixtures.

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
    let shared = shared_dir();
    let cases = load_cases(&shared.join("parity/cases"));
    assert!(
        !cases.is_empty(),
        "no fixtures in {}",
        shared.join("parity/cases").display()
    );
    let table_problems = check_deviation_table(&shared, &cases);

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
    let shared = shared_dir();
    let cases = load_cases(&shared.join("parity/cases"));
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

/// The fixtures: `$PARITY_CASES_DIR/../..` when set, else the copy vendored
/// in `tests/parity/shared/` (same layout as the project's `shared/`), so the
/// harness runs from any clone. [`vendored_fixtures_match_the_shared_ones`]
/// keeps that copy in step with `shared/` wherever both are present.
fn shared_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("PARITY_CASES_DIR") {
        let cases = PathBuf::from(dir);
        return cases
            .parent()
            .and_then(Path::parent)
            .map(Path::to_path_buf)
            .unwrap_or_else(|| panic!("PARITY_CASES_DIR={} has no grandparent", cases.display()));
    }
    vendored_dir()
}

fn vendored_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/parity/shared")
}

/// The project's `shared/` beside an ancestor of this crate, if there is one.
fn project_shared_dir() -> Option<PathBuf> {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .skip(1)
        .map(|dir| dir.join("shared"))
        .find(|shared| shared.join("parity/cases").is_dir())
}

/// The vendored fixtures are the shared ones, byte for byte, when the shared
/// ones are reachable (always in the project's own checkouts).
#[test]
fn vendored_fixtures_match_the_shared_ones() {
    let Some(shared) = project_shared_dir() else {
        eprintln!("no shared/ beside this checkout: nothing to compare the vendored copy with");
        return;
    };
    let vendored = vendored_dir();
    let listing = |dir: &Path| -> BTreeMap<String, Vec<u8>> {
        std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .map(|p| {
                (
                    p.file_name().unwrap().to_string_lossy().into_owned(),
                    std::fs::read(&p).unwrap(),
                )
            })
            .collect()
    };
    for sub in ["parity/cases", "reference"] {
        let ours = listing(&vendored.join(sub));
        let theirs = listing(&shared.join(sub));
        for (name, bytes) in &ours {
            assert_eq!(
                Some(bytes),
                theirs.get(name),
                "{sub}/{name} differs from {}: copy it again",
                shared.display()
            );
        }
        if sub == "parity/cases" {
            assert_eq!(
                ours.keys().collect::<Vec<_>>(),
                theirs.keys().collect::<Vec<_>>(),
                "the vendored cases are not the shared set: copy them again"
            );
        }
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

/// Each deviation names a fixture that exists and a row of a DEVIATIONS.md:
/// the shared list (#1-#11) or ours in `docs/` (#12 on).
fn check_deviation_table(
    shared: &Path,
    cases: &BTreeMap<String, Result<Case, String>>,
) -> Vec<String> {
    let ours = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/DEVIATIONS.md");
    let table = [shared.join("reference/DEVIATIONS.md"), ours]
        .iter()
        .map(|path| {
            std::fs::read_to_string(path)
                .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
        })
        .collect::<String>();
    let mut problems = Vec::new();
    for deviation in deviations::DEVIATIONS {
        if !table.contains(&format!("\n| {} |", deviation.number)) {
            problems.push(format!(
                "deviation table: {} names deviation {}, which no DEVIATIONS.md lists",
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
