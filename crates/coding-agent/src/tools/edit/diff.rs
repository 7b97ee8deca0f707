//! The numbered line diff `edit` reports in its details (Pi's
//! `generateDiffString`, `docs/tool-behaviour.md` §4.3).
//!
//! Removed lines read `-<old number> <line>`, added lines `+<new number>
//! <line>`, context lines ` <old number> <line>`, numbers right-aligned to the
//! width of the longer file's line count. Up to four context lines show on
//! each side of a change; longer unchanged runs are cut with a `...` line.

use std::time::Duration;

use similar::{Algorithm, DiffOp, TextDiff};

/// Context lines shown on each side of a change.
pub const CONTEXT_LINES: usize = 4;

/// How long the search for the smallest diff may take. Myers is quadratic
/// in the lines changed: replacing a block of 100,000 lines took 101 s
/// before the file was written (20,000: 3.4 s). Past this the diff is
/// still right, only less tight (larger removed and added runs).
const DIFF_DEADLINE: Duration = Duration::from_secs(1);

/// A rendered diff and where the change starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineDiff {
    /// The numbered diff text.
    pub diff: String,
    /// The new file's line number at the first change; `None` when the texts
    /// are equal.
    pub first_changed_line: Option<usize>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Equal,
    Removed,
    Added,
}

/// Diffs two texts line by line (a line includes its `\n`, so a last line
/// without one differs from the same line with one, as in jsdiff).
pub fn generate_diff_string(old: &str, new: &str, context_lines: usize) -> LineDiff {
    let parts = runs(old, new, DIFF_DEADLINE);

    let width = old
        .split('\n')
        .count()
        .max(new.split('\n').count())
        .to_string()
        .len();
    let marker = format!(" {} ...", " ".repeat(width));
    let mut out: Vec<String> = Vec::new();
    let mut old_line = 1;
    let mut new_line = 1;
    let mut first_changed_line = None;
    let mut last_was_change = false;

    for (i, (kind, lines)) in parts.iter().enumerate() {
        if *kind != Kind::Equal {
            first_changed_line.get_or_insert(new_line);
            for line in lines {
                if *kind == Kind::Added {
                    out.push(format!("+{new_line:>width$} {line}"));
                    new_line += 1;
                } else {
                    out.push(format!("-{old_line:>width$} {line}"));
                    old_line += 1;
                }
            }
            last_was_change = true;
            continue;
        }
        let next_is_change = parts.get(i + 1).is_some_and(|(k, _)| *k != Kind::Equal);
        let (shown_before, shown_after) = match (last_was_change, next_is_change) {
            (true, true) if lines.len() <= context_lines * 2 => (lines.len(), 0),
            (true, true) => (context_lines, context_lines),
            (true, false) => (context_lines.min(lines.len()), 0),
            (false, true) => (0, context_lines.min(lines.len())),
            (false, false) => (0, 0),
        };
        let skipped = lines.len() - shown_before - shown_after;
        for line in &lines[..shown_before] {
            out.push(format!(" {old_line:>width$} {line}"));
            old_line += 1;
            new_line += 1;
        }
        if skipped > 0 {
            if last_was_change || next_is_change {
                out.push(marker.clone());
            }
            old_line += skipped;
            new_line += skipped;
        }
        for line in &lines[lines.len() - shown_after..] {
            out.push(format!(" {old_line:>width$} {line}"));
            old_line += 1;
            new_line += 1;
        }
        last_was_change = false;
    }

    LineDiff {
        diff: out.join("\n"),
        first_changed_line,
    }
}

/// The diff of `old` and `new` as runs of equal, removed and added lines.
/// The whole lines both texts begin with are an equal run as they are, and
/// only the rest is diffed: Myers takes them as equal first too, but would
/// hash every line of a large file to get there. (Not the lines they end
/// with: Myers may align a change inside those differently.)
/// The search stops at `deadline` ([`DIFF_DEADLINE`]).
fn runs<'a>(old: &'a str, new: &'a str, deadline: Duration) -> Vec<(Kind, Vec<&'a str>)> {
    let head = common_head(old, new);
    let diff = TextDiff::configure()
        .algorithm(Algorithm::Myers)
        .timeout(deadline)
        .diff_lines(&old[head..], &new[head..]);
    let mut runs = Vec::new();
    push_part(&mut runs, Kind::Equal, lines_of(&old[..head]));
    for (kind, lines) in parts(&diff) {
        push_part(&mut runs, kind, lines);
    }
    runs
}

/// The bytes of the whole lines (each ending in `\n`) `old` and `new` both
/// begin with.
fn common_head(old: &str, new: &str) -> usize {
    old.split_inclusive('\n')
        .zip(new.split_inclusive('\n'))
        .take_while(|(a, b)| a == b && a.ends_with('\n'))
        .map(|(a, _)| a.len())
        .sum()
}

/// The lines of `text` without their `\n`.
fn lines_of(text: &str) -> Vec<&str> {
    text.split_inclusive('\n')
        .map(|line| line.strip_suffix('\n').unwrap_or(line))
        .collect()
}

/// Adds a run, joining it to an equal run before it.
fn push_part<'a>(parts: &mut Vec<(Kind, Vec<&'a str>)>, kind: Kind, lines: Vec<&'a str>) {
    if lines.is_empty() {
        return;
    }
    match parts.last_mut() {
        Some((Kind::Equal, before)) if kind == Kind::Equal => before.extend(lines),
        _ => parts.push((kind, lines)),
    }
}

/// The diff as runs of equal, removed and added lines (without their `\n`).
/// Within a change, removed lines come before added ones, as jsdiff emits them.
fn parts<'a>(diff: &TextDiff<'a, 'a, 'a, str>) -> Vec<(Kind, Vec<&'a str>)> {
    let old = diff.old_slices();
    let new = diff.new_slices();
    let strip = |line: &'a str| line.strip_suffix('\n').unwrap_or(line);
    let mut parts: Vec<(Kind, Vec<&'a str>)> = Vec::new();
    let mut removed = Vec::new();
    let mut added = Vec::new();
    let flush = |parts: &mut Vec<(Kind, Vec<&'a str>)>,
                 removed: &mut Vec<&'a str>,
                 added: &mut Vec<&'a str>| {
        if !removed.is_empty() {
            parts.push((Kind::Removed, std::mem::take(removed)));
        }
        if !added.is_empty() {
            parts.push((Kind::Added, std::mem::take(added)));
        }
    };
    for op in diff.ops() {
        match *op {
            DiffOp::Equal { old_index, len, .. } => {
                flush(&mut parts, &mut removed, &mut added);
                parts.push((
                    Kind::Equal,
                    old[old_index..old_index + len]
                        .iter()
                        .map(|l| strip(l))
                        .collect(),
                ));
            }
            DiffOp::Delete {
                old_index, old_len, ..
            } => removed.extend(old[old_index..old_index + old_len].iter().map(|l| strip(l))),
            DiffOp::Insert {
                new_index, new_len, ..
            } => added.extend(new[new_index..new_index + new_len].iter().map(|l| strip(l))),
            DiffOp::Replace {
                old_index,
                old_len,
                new_index,
                new_len,
            } => {
                removed.extend(old[old_index..old_index + old_len].iter().map(|l| strip(l)));
                added.extend(new[new_index..new_index + new_len].iter().map(|l| strip(l)));
            }
        }
    }
    flush(&mut parts, &mut removed, &mut added);
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    fn diff(old: &str, new: &str) -> (String, Option<usize>) {
        let d = generate_diff_string(old, new, CONTEXT_LINES);
        (d.diff, d.first_changed_line)
    }

    #[test]
    fn one_changed_line_without_newline() {
        assert_eq!(
            diff("Hello, world!", "Hello, testing!"),
            ("-1 Hello, world!\n+1 Hello, testing!".to_owned(), Some(1))
        );
    }

    #[test]
    fn long_unchanged_runs_are_cut_with_markers() {
        let old: String = (1..=30).map(|i| format!("l{i}\n")).collect();
        let new = old.replace("l15\n", "L15\nnew\n");
        assert_eq!(
            diff(&old, &new),
            (
                "    ...\n 11 l11\n 12 l12\n 13 l13\n 14 l14\n-15 l15\n+15 L15\n+16 new\n 16 l16\n 17 l17\n 18 l18\n 19 l19\n    ..."
                    .to_owned(),
                Some(15)
            )
        );
    }

    #[test]
    fn two_changes_share_short_context() {
        assert_eq!(
            diff("alpha\nbeta\ngamma\ndelta\n", "A\nbeta\ngamma\nD\n"),
            (
                "-1 alpha\n+1 A\n 2 beta\n 3 gamma\n-4 delta\n+4 D".to_owned(),
                Some(1)
            )
        );
    }

    #[test]
    fn long_context_between_changes_keeps_four_each_side() {
        let old: String = (1..=20).map(|i| format!("l{i}\n")).collect();
        let new = old.replace("l2\n", "X\n").replace("l19\n", "Y\n");
        assert_eq!(
            diff(&old, &new).0,
            "  1 l1\n- 2 l2\n+ 2 X\n  3 l3\n  4 l4\n  5 l5\n  6 l6\n    ...\n 15 l15\n 16 l16\n 17 l17\n 18 l18\n-19 l19\n+19 Y\n 20 l20"
        );
    }

    #[test]
    fn diffing_only_after_the_common_lines_gives_the_whole_texts_diff() {
        let mut next = crate::support::seeded::xorshift();
        let words = ["a", "b", "c", ""];
        let text = |next: &mut dyn FnMut(usize) -> usize| -> String {
            let lines: Vec<&str> = (0..next(12)).map(|_| words[next(4)]).collect();
            let mut text = lines.join("\n");
            if next(2) == 0 {
                text.push('\n');
            }
            text
        };
        for step in 0..5_000 {
            let old = text(&mut next);
            // Often a small change of the old text, as an edit makes.
            let new = if next(3) == 0 {
                text(&mut next)
            } else {
                let at = next(old.len() + 1);
                let at = (0..=at)
                    .rev()
                    .find(|&i| old.is_char_boundary(i))
                    .unwrap_or(0);
                format!("{}{}{}", &old[..at], words[next(4)], &old[at..])
            };
            let whole = TextDiff::configure()
                .algorithm(Algorithm::Myers)
                .diff_lines(old.as_str(), new.as_str());
            let mut expected = Vec::new();
            for (kind, lines) in parts(&whole) {
                push_part(&mut expected, kind, lines);
            }
            assert_eq!(
                runs(&old, &new, DIFF_DEADLINE),
                expected,
                "step {step}: {old:?} -> {new:?}"
            );
        }
    }

    /// A search cut short by its deadline still gives a diff that takes
    /// the old text to the new one: only its runs are coarser.
    #[test]
    fn a_diff_past_its_deadline_still_turns_the_old_text_into_the_new() {
        let old: String = (0..3000).map(|i| format!("{}\n", i * 7 % 1000)).collect();
        let new: String = (0..3000).map(|i| format!("{}\n", i * 11 % 997)).collect();
        let runs = runs(&old, &new, Duration::ZERO);
        let side = |keep: Kind| -> String {
            runs.iter()
                .filter(|(kind, _)| *kind == Kind::Equal || *kind == keep)
                .flat_map(|(_, lines)| lines.iter().map(|line| format!("{line}\n")))
                .collect()
        };
        assert_eq!(side(Kind::Removed), old);
        assert_eq!(side(Kind::Added), new);
        assert!(runs.iter().any(|(kind, _)| *kind == Kind::Equal));
    }

    #[test]
    fn equal_texts_have_no_diff() {
        assert_eq!(diff("same\n", "same\n"), (String::new(), None));
    }
}
