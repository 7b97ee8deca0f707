//! What `grep` needs from the machine it searches: one whole search.
//!
//! Pi's `GrepOperations` only stat and read files while `rg` runs locally. Ours
//! takes the whole search (walk, match, context) so that a remote
//! implementation can run it next to the files and send back only the matches.
//! [`LocalGrepOperations`] runs it in-process on ripgrep's crates
//! (DEVIATIONS #5), walking with the shared policy of [`crate::support::walk`].

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, mpsc};

use async_trait::async_trait;
use grep_regex::{ErrorKind, RegexMatcher, RegexMatcherBuilder};
use grep_searcher::sinks::Lossy;
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder};
use tokio_util::sync::CancellationToken;

use crate::support::walk::{PathGlob, slash_path, walk};

/// One search, as the `grep` tool asks for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrepRequest {
    /// The absolute file or directory to search.
    pub path: PathBuf,
    /// A regular expression (Rust `regex` syntax, as rg), or a literal string.
    pub pattern: String,
    /// Only search files this [`PathGlob`] matches (directory searches only).
    pub glob: Option<String>,
    /// Match letters case-insensitively.
    pub ignore_case: bool,
    /// Take `pattern` literally.
    pub literal: bool,
    /// Lines of context before and after each match (0: the matching line only).
    pub context: usize,
    /// Stop after this many matches.
    pub limit: usize,
}

/// One matching line.
#[derive(Debug, Clone, PartialEq, Eq)]
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
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MatchLines {
    /// Without context: the matching line, its line ending and every `\r` removed.
    Line(String),
    /// With context: the file's lines `first..first + lines.len()` around the
    /// match. The file is split as Pi splits it (`\r\n` and lone `\r` count as
    /// line breaks, and a final newline adds an empty last line).
    Window {
        /// 1-based number of the first line.
        first: u64,
        /// The lines, match included.
        lines: Vec<String>,
    },
    /// With context, but the file could not be read again.
    Unreadable,
}

/// Why a search failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GrepError {
    /// Nothing exists at the search path.
    #[error("path not found")]
    PathNotFound,
    /// The pattern or glob does not compile; the text is for the model.
    #[error("{0}")]
    InvalidPattern(String),
    /// The search was cancelled.
    #[error("cancelled")]
    Cancelled,
    /// Anything else; the text is for the model.
    #[error("{0}")]
    Other(String),
}

/// Searches file contents.
#[async_trait]
pub trait GrepOperations: Send + Sync {
    /// Runs `request`: the first `request.limit` matches in path order (paths
    /// compared component by component), then line order. Returns promptly
    /// with [`GrepError::Cancelled`] once `cancel` fires.
    async fn search(
        &self,
        request: GrepRequest,
        cancel: CancellationToken,
    ) -> Result<Vec<GrepMatch>, GrepError>;
}

/// Searches the local file system in-process, several files at a time.
#[derive(Debug, Clone, Copy, Default)]
pub struct LocalGrepOperations;

#[async_trait]
impl GrepOperations for LocalGrepOperations {
    async fn search(
        &self,
        request: GrepRequest,
        cancel: CancellationToken,
    ) -> Result<Vec<GrepMatch>, GrepError> {
        tokio::task::spawn_blocking(move || search_blocking(&request, &cancel))
            .await
            .map_err(|e| GrepError::Other(format!("search failed: {e}")))?
    }
}

/// Upper bound on search threads: beyond this, the disk is the bottleneck.
const MAX_WORKERS: usize = 8;

fn search_blocking(
    request: &GrepRequest,
    cancel: &CancellationToken,
) -> Result<Vec<GrepMatch>, GrepError> {
    let metadata = std::fs::metadata(&request.path).map_err(|_| GrepError::PathNotFound)?;
    let matcher = build_matcher(request)?;
    let limit = request.limit.max(1);
    if !metadata.is_dir() {
        let name = request
            .path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let mut searcher = new_searcher();
        return Ok(search_file(
            &mut searcher,
            &matcher,
            &request.path,
            &name,
            request.context,
            limit,
        ));
    }
    let glob = request
        .glob
        .as_deref()
        .map(PathGlob::new)
        .transpose()
        .map_err(|e| GrepError::InvalidPattern(e.to_string()))?;
    let matches = search_tree(request, &matcher, glob.as_ref(), limit, cancel);
    if cancel.is_cancelled() {
        return Err(GrepError::Cancelled);
    }
    Ok(matches)
}

/// Compiles the pattern as rg does: one pattern, `\n` as line terminator.
/// Error texts follow rg's (`rg: ` prefix and, for a newline, its hint), since
/// that is what models have seen from Pi.
fn build_matcher(request: &GrepRequest) -> Result<RegexMatcher, GrepError> {
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
            GrepError::InvalidPattern(format!("rg: {error}{hint}"))
        })
}

fn new_searcher() -> Searcher {
    SearcherBuilder::new()
        .line_number(true)
        // Skip binary files, as rg does while walking.
        .binary_detection(BinaryDetection::quit(b'\x00'))
        .build()
}

/// A file to search, numbered in walk order.
struct Job {
    index: usize,
    path: PathBuf,
    display: String,
}

/// Walks sequentially in sorted order and hands files to a pool of searchers;
/// their per-file results are merged back in walk order. Once the merged
/// matches reach `limit`, everything after is certain to be cut, so the walk
/// and the pending searches stop.
fn search_tree(
    request: &GrepRequest,
    matcher: &RegexMatcher,
    glob: Option<&PathGlob>,
    limit: usize,
    cancel: &CancellationToken,
) -> Vec<GrepMatch> {
    let workers = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(MAX_WORKERS);
    let stop = AtomicBool::new(false);
    let halted = || stop.load(Ordering::Relaxed) || cancel.is_cancelled();
    let (job_tx, job_rx) = mpsc::sync_channel::<Job>(workers * 4);
    let job_rx = Mutex::new(job_rx);
    let (result_tx, result_rx) = mpsc::channel::<(usize, Vec<GrepMatch>)>();
    let root = request.path.as_path();

    std::thread::scope(|scope| {
        scope.spawn(move || {
            let mut index = 0;
            for entry in walk(root).flatten() {
                if halted() {
                    break;
                }
                if !entry.file_type().is_some_and(|t| t.is_file()) {
                    continue;
                }
                let Ok(relative) = entry.path().strip_prefix(root) else {
                    continue;
                };
                if glob.is_some_and(|g| !g.is_match(relative, entry.path())) {
                    continue;
                }
                let job = Job {
                    index,
                    display: slash_path(relative),
                    path: entry.into_path(),
                };
                if job_tx.send(job).is_err() {
                    break;
                }
                index += 1;
            }
        });
        for _ in 0..workers {
            let result_tx = result_tx.clone();
            let job_rx = &job_rx;
            scope.spawn(move || {
                let mut searcher = new_searcher();
                // Keep draining until the walk ends, so it never blocks on a full queue.
                while let Some(job) = next_job(job_rx) {
                    let matches = if halted() {
                        Vec::new()
                    } else {
                        search_file(
                            &mut searcher,
                            matcher,
                            &job.path,
                            &job.display,
                            request.context,
                            limit,
                        )
                    };
                    // The merger may have finished; later results are not needed.
                    let _ = result_tx.send((job.index, matches));
                }
            });
        }
        drop(result_tx);

        let mut pending = BTreeMap::new();
        let mut next = 0;
        let mut merged = Vec::new();
        for (index, matches) in result_rx {
            pending.insert(index, matches);
            while let Some(matches) = pending.remove(&next) {
                next += 1;
                merged.extend(matches);
                if merged.len() >= limit {
                    merged.truncate(limit);
                    stop.store(true, Ordering::Relaxed);
                    return merged;
                }
            }
            if cancel.is_cancelled() {
                break;
            }
        }
        merged
    })
}

fn next_job(job_rx: &Mutex<mpsc::Receiver<Job>>) -> Option<Job> {
    job_rx.lock().ok()?.recv().ok()
}

/// Searches one file, returning at most `limit` matches. Unreadable files give
/// none (rg reports them on stderr and goes on).
fn search_file(
    searcher: &mut Searcher,
    matcher: &RegexMatcher,
    path: &Path,
    display: &str,
    context: usize,
    limit: usize,
) -> Vec<GrepMatch> {
    let mut found: Vec<(u64, String)> = Vec::new();
    let sink = Lossy(|line_number, line: &str| {
        found.push((line_number, clean_line(line)));
        Ok(found.len() < limit)
    });
    if searcher.search_path(matcher, path, sink).is_err() {
        return Vec::new();
    }
    if context == 0 || found.is_empty() {
        return found
            .into_iter()
            .map(|(line_number, text)| GrepMatch {
                path: display.to_owned(),
                line_number,
                lines: MatchLines::Line(text),
            })
            .collect();
    }
    let file_lines = std::fs::read(path).ok().map(|bytes| split_like_pi(&bytes));
    found
        .into_iter()
        .map(|(line_number, _)| GrepMatch {
            path: display.to_owned(),
            line_number,
            lines: match &file_lines {
                Some(lines) => window(lines, line_number, context),
                None => MatchLines::Unreadable,
            },
        })
        .collect()
}

/// A matching line as Pi shows it: without its line ending and without any `\r`.
fn clean_line(line: &str) -> String {
    line.strip_suffix('\n').unwrap_or(line).replace('\r', "")
}

/// Pi's context split: `\r\n` and lone `\r` become `\n`, then split on `\n`.
fn split_like_pi(bytes: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(bytes)
        .replace("\r\n", "\n")
        .replace('\r', "\n")
        .split('\n')
        .map(str::to_owned)
        .collect()
}

/// The lines `max(1, n - context)..=min(len, n + context)`; a match past the
/// end of the split file (rg and Pi count lines differently) shows as empty.
fn window(lines: &[String], line_number: u64, context: usize) -> MatchLines {
    let context = context as u64;
    let first = line_number.saturating_sub(context).max(1);
    let last = line_number.saturating_add(context).min(lines.len() as u64);
    let last = last.max(line_number);
    let lines = (first..=last)
        .map(|n| {
            usize::try_from(n - 1)
                .ok()
                .and_then(|i| lines.get(i))
                .cloned()
                .unwrap_or_default()
        })
        .collect();
    MatchLines::Window { first, lines }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(lines: &[&str]) -> Vec<String> {
        lines.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn context_split_treats_every_line_ending_as_a_break() {
        assert_eq!(split_like_pi(b"a\r\nb\rc\n"), strings(&["a", "b", "c", ""]));
    }

    #[test]
    fn window_is_clipped_at_both_ends() {
        let lines = strings(&["1", "2", "3", "4", "5"]);
        assert_eq!(
            window(&lines, 1, 2),
            MatchLines::Window {
                first: 1,
                lines: strings(&["1", "2", "3"])
            }
        );
        assert_eq!(
            window(&lines, 5, 1),
            MatchLines::Window {
                first: 4,
                lines: strings(&["4", "5"])
            }
        );
    }

    #[test]
    fn clean_line_drops_the_line_ending_and_carriage_returns() {
        assert_eq!(clean_line("a\rb\r\n"), "ab");
        assert_eq!(clean_line("plain"), "plain");
    }
}
