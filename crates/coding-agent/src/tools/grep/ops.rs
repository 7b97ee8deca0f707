//! What `grep` needs from the machine it searches: one whole search.
//!
//! Pi's `GrepOperations` only stat and read files while `rg` runs locally. Ours
//! takes the whole search (walk, match, context) so that a remote
//! implementation can run it next to the files and send back only the matches.
//! On this machine [`LocalSearchOperations`] runs it in-process on ripgrep's crates
//! (DEVIATIONS #5), walking with the shared policy of [`crate::support::walk`].

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError};

use async_trait::async_trait;

use grep_regex::{ErrorKind, RegexMatcher, RegexMatcherBuilder};
use grep_searcher::sinks::Bytes;
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder};
use ignore::WalkState;
use ignore::overrides::{Override, OverrideBuilder};
use tokio_util::sync::CancellationToken;

use super::context::{shown_line, window_lines};
use crate::support::fs_error::{FsError, SpecialFile};
use crate::support::paths::HomeDir;
use crate::support::sync::lock;
use crate::support::walk::{
    LeftOut, LocalSearchOperations, SearchError, Searched, Skipped, ToolIgnore, WalkOptions,
    check_readable, gone, slash_path, walk_parallel,
};

/// One search, as the `grep` tool asks for it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct GrepRequest {
    /// The absolute file or directory to search.
    pub path: PathBuf,
    /// A regular expression (Rust `regex` syntax, as rg), or a literal string.
    pub pattern: String,
    /// Only search files this glob selects, as rg's `--glob` (directory
    /// searches only): gitignore syntax, `!` to exclude.
    pub glob: Option<String>,
    /// Match letters case-insensitively.
    pub ignore_case: bool,
    /// Take `pattern` literally.
    pub literal: bool,
    /// Lines of context before and after each match (0: the matching line only).
    pub context: usize,
    /// Stop after this many matches.
    pub limit: usize,
    /// Absolute path globs (`*` within a folder, `**` across) of files and
    /// folders to leave out, as permission rules guard them: skipped, and
    /// counted in [`Searched::left_out`].
    #[serde(default)]
    pub exclude: Vec<String>,
}

/// One matching line.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct GrepMatch {
    /// The file as shown to the model: relative to the searched directory with
    /// `/` separators, or the file's name when a single file was searched.
    pub path: String,
    /// 1-based line number of the match.
    pub line_number: u64,
    /// The text to show for it.
    pub lines: MatchLines,
}

/// The text shown for a match.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum MatchLines {
    /// Without context: the matching line, its line ending and every `\r` removed.
    Line(String),
    /// With context: the file's lines `first..=last` around the match. The
    /// file is split on `\n` only, as the search numbers lines and `read`
    /// counts them, each line shown as [`MatchLines::Line`] shows it, and a
    /// final newline adds an empty last line.
    Window {
        /// 1-based number of the first line.
        first: u64,
        /// Number of the last line.
        last: u64,
        /// The window's last lines, those no earlier window of the file
        /// held (all of them in the file's first window): `last + 1 -
        /// lines.len()..=last`. Overlapping windows share their lines, as
        /// a copy per window of a 5 MB log took 2.5 GB for 100 matches with
        /// a huge `context`.
        lines: Vec<String>,
    },
    /// With context, but the file could not be read again.
    Unreadable,
}

/// Searches file contents.
///
/// Paths arrive absolute but not normalised (`..` possible): see
/// [the paths Operations are given](crate::tools#the-paths-operations-are-given)
/// before checking one against a root.
#[async_trait]
pub trait GrepOperations: HomeDir + Send + Sync {
    /// Runs `request`: the first `request.limit` matches in path order (paths
    /// compared component by component), then line order; entries it could
    /// not read are skipped and counted. Returns promptly with
    /// [`SearchError::Cancelled`] once `cancel` fires.
    async fn search(
        &self,
        request: GrepRequest,
        cancel: CancellationToken,
    ) -> Result<Searched<GrepMatch>, SearchError>;
}

/// Several files at a time.
#[async_trait]
impl GrepOperations for LocalSearchOperations {
    async fn search(
        &self,
        request: GrepRequest,
        cancel: CancellationToken,
    ) -> Result<Searched<GrepMatch>, SearchError> {
        self.blocking("search", move |options| {
            search_blocking(&request, options, &cancel)
        })
        .await
    }
}

/// Upper bound on search threads: beyond this, the disk is the bottleneck.
const MAX_WORKERS: usize = 8;

fn search_blocking(
    request: &GrepRequest,
    options: WalkOptions,
    cancel: &CancellationToken,
) -> Result<Searched<GrepMatch>, SearchError> {
    let metadata = std::fs::metadata(&request.path).map_err(|_| SearchError::PathNotFound)?;
    let matcher = build_matcher(request)?;
    let limit = request.limit.max(1);
    if !metadata.is_dir() {
        if let Some(special) = SpecialFile::of(&metadata).filter(|kind| kind.waits()) {
            let waits = "searching it waits for a writer";
            let refused = special.refusal(&request.path, waits, "grep PATTERN");
            return Err(SearchError::Other(refused));
        }
        check_readable(&request.path, false)?;
        let name = request
            .path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if let Some(left) = LeftOut::new(&request.path, &request.exclude)?
            && left.covers(&request.path)
        {
            let mut searched = Searched::all(Vec::new());
            searched.left_out.add(name);
            return Ok(searched);
        }
        let mut searcher = named_file_searcher();
        let found = search_file(
            &mut searcher,
            &matcher,
            &request.path,
            &name,
            request.context,
            limit,
        )
        // Opened a moment ago: an error now is one reading it.
        .map_err(|error| {
            SearchError::Other(FsError::new(&error, "read", &request.path).to_string())
        })?;
        let mut searched = Searched::all(found.matches);
        if found.cut_short {
            // Named in full: the notice's example command is run from the
            // working directory, not from the file's.
            searched.cut_short.add(request.path.display().to_string());
        }
        return Ok(searched);
    }
    check_readable(&request.path, true)?;
    let glob = request
        .glob
        .as_deref()
        .map(|glob| file_glob(&request.path, glob))
        .transpose()
        .map_err(SearchError::InvalidPattern)?;
    let left = LeftOut::new(&request.path, &request.exclude)?;
    let searched = search_tree(
        request,
        &matcher,
        glob.as_ref(),
        left.as_ref(),
        limit,
        options,
        cancel,
    );
    if cancel.is_cancelled() {
        return Err(SearchError::Cancelled);
    }
    Ok(searched)
}

/// `glob` as rg's `--glob` reads it, under the search directory `root`:
/// gitignore syntax, so a glob without `/` matches a name at any depth
/// (`*.ts`), one with a `/` before its end is anchored at `root`
/// (`src/*.rs`, `/a.txt`), and a leading `!` excludes what it matches
/// (`!*.test.ts`, `!node_modules`), every other file then searched. The
/// error is the glob parser's (`error parsing glob '*.{rs': ...`).
fn file_glob(root: &Path, glob: &str) -> Result<Override, String> {
    let mut builder = OverrideBuilder::new(root);
    builder.add(glob).map_err(|error| error.to_string())?;
    builder.build().map_err(|error| error.to_string())
}

/// Compiles the pattern as rg does: one pattern, `\n` as line terminator.
/// Error texts follow rg's (`rg: ` prefix and, for a newline, its hint), since
/// that is what models have seen from Pi.
fn build_matcher(request: &GrepRequest) -> Result<RegexMatcher, SearchError> {
    RegexMatcherBuilder::new()
        .case_insensitive(request.ignore_case)
        .fixed_strings(request.literal)
        .line_terminator(Some(b'\n'))
        .build_many(&[request.pattern.as_str()])
        .map_err(|error| {
            let hint = if matches!(error.kind(), ErrorKind::NotAllowed(_)) {
                "\n\nConsider enabling multiline mode with the --multiline flag (or -U for short).\n\
                 When multiline mode is enabled, new line characters can be matched."
            } else {
                ""
            };
            SearchError::InvalidPattern(format!("rg: {error}{hint}"))
        })
}

/// A searcher for the files of a walk: a binary file (a NUL byte) is
/// skipped, as rg skips it while walking.
fn new_searcher() -> Searcher {
    searcher(BinaryDetection::quit(b'\x00'))
}

/// A searcher for a file named as the path: searched even when it holds a
/// NUL byte, as rg searches a file it is given (it was skipped, and "No
/// matches found" said of text that is there). rg reads the NUL as a line
/// end, which shifts the line numbers after it; here it is a byte of its
/// line, so the numbers are those `read` counts.
fn named_file_searcher() -> Searcher {
    searcher(BinaryDetection::none())
}

/// The longest line a search holds in memory. A named file is searched
/// with its NULs as bytes of their line, so a disk image, a swap file or
/// `/dev/zero` is one endless line: without a cap it took gigabytes.
pub const LINE_LIMIT: usize = 64 << 20;

fn searcher(binary: BinaryDetection) -> Searcher {
    SearcherBuilder::new()
        .line_number(true)
        .binary_detection(binary)
        .heap_limit(Some(LINE_LIMIT))
        .build()
}

/// True when `error` is the searcher's refusal to hold a line longer
/// than [`LINE_LIMIT`] (grep-searcher words it so, as an `Other` error):
/// the search of the file stopped there.
fn over_line_limit(error: &std::io::Error) -> bool {
    error.to_string().contains("allocation limit")
}

/// A file to search, numbered in walk order.
/// The first `limit` matches in path order among the files searched so far.
///
/// Files are searched in parallel and finish in any order; this keeps the
/// matches that sort first and drops the rest, so memory stays bounded by
/// the limit. Once it holds `limit` matches, any path that sorts after its
/// last file can be skipped unsearched, and so can a whole directory (its
/// entries all sort after it).
struct FirstMatches {
    limit: usize,
    total: usize,
    by_path: BTreeMap<PathBuf, Vec<GrepMatch>>,
}

impl FirstMatches {
    /// Whether nothing at `path` (or below it) can make the first `limit`.
    fn excludes(&self, path: &Path) -> bool {
        self.total >= self.limit
            && self
                .by_path
                .last_key_value()
                .is_some_and(|(last, _)| path > last.as_path())
    }

    fn offer(&mut self, path: PathBuf, matches: Vec<GrepMatch>) {
        self.total += matches.len();
        self.by_path.insert(path, matches);
        while self.total > self.limit {
            let Some(mut last) = self.by_path.last_entry() else {
                break;
            };
            let excess = self.total - self.limit;
            if last.get().len() <= excess {
                self.total -= last.remove().len();
            } else {
                let keep = last.get().len() - excess;
                last.get_mut().truncate(keep);
                self.total = self.limit;
            }
        }
    }

    fn into_sorted(self) -> Vec<GrepMatch> {
        self.by_path.into_values().flatten().collect()
    }
}

/// Searches the tree under `request.path` on all cores (as rg does) and
/// returns the first `limit` matches in path order, then line order: the same
/// answer a sorted sequential search would give, whatever the thread timing.
fn search_tree(
    request: &GrepRequest,
    matcher: &RegexMatcher,
    glob: Option<&Override>,
    left: Option<&LeftOut>,
    limit: usize,
    options: WalkOptions,
    cancel: &CancellationToken,
) -> Searched<GrepMatch> {
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(MAX_WORKERS);
    let first = Mutex::new(FirstMatches {
        limit,
        total: 0,
        by_path: BTreeMap::new(),
    });
    // Set once `first` holds `limit` matches, so the lock is only taken to
    // prune when pruning is possible.
    let full = AtomicBool::new(false);
    let unreadable = Mutex::new(Skipped::default());
    let left_out = Mutex::new(Skipped::default());
    let cut_short = Mutex::new(Skipped::default());
    let root = request.path.as_path();
    walk_parallel(root, threads, options, ToolIgnore::Rg).run(|| {
        let mut searcher = new_searcher();
        let (first, full, unreadable, left_out, cut_short) =
            (&first, &full, &unreadable, &left_out, &cut_short);
        Box::new(move |entry| {
            if cancel.is_cancelled() {
                return WalkState::Quit;
            }
            let entry = match entry {
                Ok(entry) => entry,
                Err(error) => {
                    lock(unreadable).add_walk_error(root, &error);
                    return WalkState::Continue;
                }
            };
            let Ok(relative) = entry.path().strip_prefix(root) else {
                return WalkState::Continue;
            };
            if full.load(Ordering::Relaxed) && lock(first).excludes(relative) {
                return WalkState::Skip;
            }
            // Told by its path: a repository's entries count their depth
            // from it (`walk_parallel`).
            let below_root = !relative.as_os_str().is_empty();
            let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
            // What permission rules guard is not searched (a folder not
            // gone into), and said.
            if below_root && left.is_some_and(|left| left.covers(entry.path())) {
                lock(left_out).add(slash_path(relative));
                return if is_dir {
                    WalkState::Skip
                } else {
                    WalkState::Continue
                };
            }
            let excluded =
                below_root && glob.is_some_and(|g| g.matched(entry.path(), is_dir).is_ignore());
            if is_dir && excluded {
                // `!node_modules`: rg does not go in.
                return WalkState::Skip;
            }
            if !entry.file_type().is_some_and(|t| t.is_file()) || excluded {
                return WalkState::Continue;
            }
            let display = slash_path(relative);
            let found = match search_file(
                &mut searcher,
                matcher,
                entry.path(),
                &display,
                request.context,
                limit,
            ) {
                Ok(found) => found,
                Err(error) => {
                    if !gone(&error) {
                        lock(unreadable).add(display);
                    }
                    return WalkState::Continue;
                }
            };
            if found.cut_short {
                lock(cut_short).add(display);
            }
            if !found.matches.is_empty() {
                let mut first = lock(first);
                first.offer(relative.to_path_buf(), found.matches);
                full.store(first.total >= first.limit, Ordering::Relaxed);
            }
            WalkState::Continue
        })
    });
    Searched {
        found: first
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner)
            .into_sorted(),
        unreadable: unreadable
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner),
        left_out: left_out
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner),
        cut_short: cut_short
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner),
    }
}

/// What the search of one file found.
struct FileMatches {
    /// The first `limit` matching lines, in line order.
    matches: Vec<GrepMatch>,
    /// The search stopped at a line longer than [`LINE_LIMIT`]: `matches`
    /// are those before it. They were dropped with the error, and a disk
    /// image whose first lines matched said only that it was too long.
    cut_short: bool,
}

fn search_file(
    searcher: &mut Searcher,
    matcher: &RegexMatcher,
    path: &Path,
    display: &str,
    context: usize,
    limit: usize,
) -> std::io::Result<FileMatches> {
    let mut found: Vec<(u64, String)> = Vec::new();
    let sink = Bytes(|line_number, line: &[u8]| {
        found.push((line_number, shown_line(line)));
        Ok(found.len() < limit)
    });
    let cut_short = match searcher.search_path(matcher, path, sink) {
        Ok(()) => false,
        Err(error) if over_line_limit(&error) => true,
        Err(error) => return Err(error),
    };
    let context = context as u64;
    // With context, the file's lines around the matches (`None` inside:
    // it could not be read again).
    let mut windows = (context > 0 && !found.is_empty()).then(|| {
        let numbers: Vec<u64> = found.iter().map(|&(line_number, _)| line_number).collect();
        std::fs::File::open(path)
            .and_then(|file| window_lines(std::io::BufReader::new(file), &numbers, context))
            .ok()
    });
    let matches = found
        .into_iter()
        .map(|(line_number, text)| GrepMatch {
            path: display.to_owned(),
            line_number,
            lines: match &mut windows {
                None => MatchLines::Line(text),
                Some(Some(lines)) => lines.window(line_number, context),
                Some(None) => MatchLines::Unreadable,
            },
        })
        .collect();
    Ok(FileMatches { matches, cut_short })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hits(path: &str, lines: &[u64]) -> Vec<GrepMatch> {
        lines
            .iter()
            .map(|&line_number| GrepMatch {
                path: path.to_owned(),
                line_number,
                lines: MatchLines::Line(String::new()),
            })
            .collect()
    }

    fn found(first: FirstMatches) -> Vec<(String, u64)> {
        first
            .into_sorted()
            .into_iter()
            .map(|m| (m.path, m.line_number))
            .collect()
    }

    #[test]
    fn first_matches_keep_the_earliest_paths_whatever_order_files_finish_in() {
        let mut first = FirstMatches {
            limit: 3,
            total: 0,
            by_path: BTreeMap::new(),
        };
        first.offer("c.txt".into(), hits("c.txt", &[1, 2]));
        assert!(!first.excludes(Path::new("d.txt")), "not full yet");
        first.offer("a/z.txt".into(), hits("a/z.txt", &[7]));
        assert!(
            first.excludes(Path::new("d.txt")),
            "full: d.txt sorts after c.txt"
        );
        first.offer("b.txt".into(), hits("b.txt", &[4, 5]));
        // a/z.txt sorts before b.txt (component order), and c.txt is dropped.
        assert_eq!(first.total, 3);
        assert!(first.excludes(Path::new("c.txt")));
        assert!(first.excludes(Path::new("b.txt/x")), "below the last file");
        assert!(
            !first.excludes(Path::new("a")),
            "a directory before the last file"
        );
        first.offer("a.txt".into(), hits("a.txt", &[9]));
        assert_eq!(
            found(first),
            // Component order, as the sorted walk visits them: the directory
            // `a` (and all below it) before the file `a.txt`.
            [
                ("a/z.txt".to_owned(), 7),
                ("a.txt".to_owned(), 9),
                ("b.txt".to_owned(), 4)
            ]
        );
    }

    /// A window per match over the whole file held the file once per match:
    /// 100 matches in a 5 MB log with `context: 1e9` took 2.5 GB.
    #[test]
    fn overlapping_windows_hold_each_line_of_the_file_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        let text: String = (1..=50)
            .map(|n| format!("{} {n}\n", if n % 10 == 0 { "hit" } else { "line" }))
            .collect();
        std::fs::write(&path, text).unwrap();
        let matcher = RegexMatcherBuilder::new().build("hit").unwrap();
        let found = search_file(&mut new_searcher(), &matcher, &path, "log", 1 << 40, 100)
            .unwrap()
            .matches;
        assert_eq!(found.len(), 5);
        let held: usize = found
            .iter()
            .map(|m| match &m.lines {
                MatchLines::Window { lines, .. } => lines.len(),
                other => panic!("a window: {other:?}"),
            })
            .sum();
        assert_eq!(
            held, 51,
            "the 50 lines and the empty one after the last newline"
        );
    }

    #[test]
    fn long_lines_are_kept_only_as_far_as_the_output_shows_them() {
        use crate::support::truncate::{GREP_KEPT_LINE_BYTES, GREP_MAX_LINE_LENGTH, truncate_line};
        let long = format!("{}needle", "aé😀世".repeat(50_000));
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bundle.js");
        std::fs::write(&path, format!("before\n{long}\nafter\n")).unwrap();
        let matcher = RegexMatcherBuilder::new().build("needle").unwrap();
        let shown = |text: &str| truncate_line(text, GREP_MAX_LINE_LENGTH).0.into_owned();
        let short = |text: &str| {
            assert!(
                text.len() <= GREP_KEPT_LINE_BYTES,
                "kept {} bytes",
                text.len()
            );
            shown(text)
        };

        let found = search_file(&mut new_searcher(), &matcher, &path, "b", 0, 10)
            .unwrap()
            .matches;
        let [
            GrepMatch {
                lines: MatchLines::Line(text),
                ..
            },
        ] = found.as_slice()
        else {
            panic!("one line: {found:?}");
        };
        assert_eq!(short(text), shown(&long));

        let found = search_file(&mut new_searcher(), &matcher, &path, "b", 1, 10)
            .unwrap()
            .matches;
        let [
            GrepMatch {
                lines: MatchLines::Window { lines, .. },
                ..
            },
        ] = found.as_slice()
        else {
            panic!("one window: {found:?}");
        };
        let lines: Vec<String> = lines.iter().map(|line| short(line)).collect();
        assert_eq!(
            lines,
            ["before".to_owned(), shown(&long), "after".to_owned()]
        );
    }
}
