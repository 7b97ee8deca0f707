//! The one ignore policy `grep` and `find` share, and the glob semantics of
//! their patterns.
//!
//! Pi runs `rg` and `fd`, which disagree: rg honours `.gitignore` only inside a
//! git repository and searches `.git/`, fd honours it everywhere and lists
//! `.git/config`. We walk the same way for both (DEVIATIONS #4):
//! - `.gitignore` (nested ones included, plus the global excludes file and
//!   `.git/info/exclude`) and `.ignore` files are honoured whether or not the
//!   tree is a git repository, like `fd --hidden --no-require-git`, and so is
//!   the ignore file of the program Pi runs for the tool ([`ToolIgnore`]:
//!   rg's `.rgignore` for grep, fd's `.fdignore` for find); in a
//!   repository, those of the folders above the root count up to the
//!   repository's root only, as rg and git count them, and so outside one
//!   the `.gitignore` files of the folders around a repository below do not
//!   count in it;
//! - hidden files and directories are included;
//! - `.git` is never entered or listed (unless it is the search root itself);
//! - symlinks are not followed, so a directory symlink cycle cannot trap a walk;
//! - each directory's entries come sorted by name (bytes), so output never
//!   depends on thread timing.
//!
//! [`LocalSearchOperations`] is the walk on this machine, in-process: both
//! tools' Operations (implemented in `tools/grep/ops.rs` and
//! `tools/find/ops.rs`).

use std::collections::VecDeque;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use agent_core::ToolError;
use globset::{GlobBuilder, GlobMatcher, GlobSet, GlobSetBuilder};
use ignore::{DirEntry, Walk, WalkBuilder, WalkState};

use crate::support::cancel::aborted;
use crate::support::notices::append_notices;
use crate::support::paths::{HomeDir, normalize_lexically};
use crate::support::sync::lock;

/// Why a `grep` or `find` search failed; their Operations return it (and the
/// remote helper sends it back as it is).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, serde::Serialize, serde::Deserialize)]
pub enum SearchError {
    /// Nothing exists at the search path.
    #[error("path not found")]
    PathNotFound,
    /// The search path is a file where a directory is needed (`find`).
    #[error("not a directory")]
    NotADirectory,
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

/// Fails when the search root itself cannot be read (a directory that
/// cannot be listed, a file that cannot be opened): the walk would skip it
/// as it skips an unreadable entry below, and the model would be told
/// nothing matched. An unreadable entry below the root is still skipped.
pub fn check_readable(root: &Path, is_dir: bool) -> Result<(), SearchError> {
    let (outcome, syscall) = if is_dir {
        (std::fs::read_dir(root).map(drop), "scandir")
    } else {
        (std::fs::File::open(root).map(drop), "open")
    };
    outcome.map_err(|error| {
        SearchError::Other(
            crate::support::fs_error::FsError::new(&error, syscall, root).to_string(),
        )
    })
}

impl SearchError {
    /// What the model reads when a search of `path` (the directory it asked
    /// for, resolved) failed this way.
    pub fn for_model(self, path: &Path) -> ToolError {
        match self {
            SearchError::PathNotFound => {
                ToolError::new(format!("Path not found: {}", path.display()))
            }
            SearchError::NotADirectory => {
                ToolError::new(format!("Not a directory: {}", path.display()))
            }
            SearchError::Cancelled => aborted(),
            SearchError::InvalidPattern(text) | SearchError::Other(text) => ToolError::new(text),
        }
    }
}

/// What a search below a directory found, and what it could not look into.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Searched<T> {
    /// The matches (grep) or paths (find), in path order.
    pub found: Vec<T>,
    /// The entries it could not read.
    pub unreadable: Skipped,
    /// The entries it left out because permission rules guard them
    /// ([`crate::tools::grep::ops::GrepRequest::exclude`]).
    pub left_out: Skipped,
    /// The files grep searched only up to a line longer than it holds
    /// ([`crate::tools::grep::ops::LINE_LIMIT`]); their matches before it
    /// are in `found`.
    #[serde(default)]
    pub cut_short: Skipped,
}

impl<T> Searched<T> {
    /// `found`, with everything read.
    pub fn all(found: Vec<T>) -> Self {
        Searched {
            found,
            unreadable: Skipped::default(),
            left_out: Skipped::default(),
            cut_short: Skipped::default(),
        }
    }

    /// `none` (the tool's "nothing found") with [`Searched::notices`]
    /// after it.
    pub fn nothing_found(&self, none: &str) -> String {
        let notices: Vec<String> = self.notices().into_iter().flatten().collect();
        append_notices(none.to_owned(), &notices)
    }

    /// What the tool says after its results about what it did not search:
    /// the entries left out, the files searched only in part, then those
    /// that could not be read.
    pub fn notices(&self) -> [Option<String>; 3] {
        [
            self.left_out.notice(
                "the permission rules guard was left out",
                "the permission rules guard were left out",
            ),
            self.cut_short_notice(),
            self.unreadable.notice(
                "could not be read and was skipped",
                "could not be read and were skipped",
            ),
        ]
    }

    /// The files searched only up to a line too long to hold, and how to
    /// look at them instead (the first one named in the example).
    fn cut_short_notice(&self) -> Option<String> {
        let megabytes = crate::tools::grep::ops::LINE_LIMIT >> 20;
        let said = self.cut_short.notice(
            &format!(
                "was searched only up to a line longer than {megabytes} MB (a disk image or a device?)"
            ),
            &format!(
                "were searched only up to a line longer than {megabytes} MB (disk images or devices?)"
            ),
        )?;
        let file = self.cut_short.first.first()?;
        Some(format!(
            "{said}. Read parts of it with read's offset and limit, or inspect it with bash (e.g. head -c 4096 {file} | xxd)"
        ))
    }
}

/// What grep and find say after their results when they stopped at `limit`
/// `items` (`matches`, `results`): Pi's text.
pub fn limit_notice(limit: usize, items: &str) -> String {
    format!(
        "{limit} {items} limit reached. Use limit={} for more, or refine pattern",
        limit.saturating_mul(2)
    )
}

/// Entries below a searched directory the search did not look into,
/// counted and the first few named: those that could not be read (a folder
/// that cannot be listed, a file that cannot be opened), skipped where Pi's
/// rg and fd fail the whole call (DEVIATIONS #15), and those permission
/// rules guard. Said after the results, so that "No matches found" never
/// stands for "did not look".
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Skipped {
    /// How many.
    pub count: usize,
    /// The first few, relative to the searched directory, in order.
    pub first: Vec<String>,
}

/// Whether `error` says the entry is gone (removed while a search ran).
pub fn gone(error: &std::io::Error) -> bool {
    error.kind() == std::io::ErrorKind::NotFound
}

/// How many skipped entries a notice names.
const NAMED_SKIPPED: usize = 3;

impl Skipped {
    /// Counts the entry shown as `shown`; the first few (by name, whatever
    /// order parallel threads find them in) are kept to be named.
    pub fn add(&mut self, shown: String) {
        self.count += 1;
        let at = self.first.binary_search(&shown).unwrap_or_else(|at| at);
        if at < NAMED_SKIPPED {
            self.first.insert(at, shown);
            self.first.truncate(NAMED_SKIPPED);
        }
    }

    /// Counts what the walk of `root` could not read, when `error` is that:
    /// an I/O error on an entry (not a broken ignore file's pattern, nor an
    /// entry removed while the walk ran: it is not there to be found).
    pub fn add_walk_error(&mut self, root: &Path, error: &ignore::Error) {
        if error.io_error().is_none_or(gone) {
            return;
        }
        let mut inner = error;
        loop {
            match inner {
                ignore::Error::WithDepth { err, .. }
                | ignore::Error::WithLineNumber { err, .. } => {
                    inner = err;
                }
                ignore::Error::WithPath { path, .. } => {
                    let relative = path.strip_prefix(root).unwrap_or(path);
                    return self.add(slash_path(relative));
                }
                _ => return self.add(String::from("(an entry)")),
            }
        }
    }

    /// The notice after the results, `one` or `many` saying what befell
    /// them: `2 paths could not be read and were skipped: logs, secret.txt`.
    pub fn notice(&self, one: &str, many: &str) -> Option<String> {
        let (noun, said) = match self.count {
            0 => return None,
            1 => ("path", one),
            _ => ("paths", many),
        };
        let mut named = self.first.join(", ");
        if self.count > self.first.len() {
            named.push_str(&format!(" and {} more", self.count - self.first.len()));
        }
        Some(format!("{} {noun} {said}: {named}", self.count))
    }
}

/// An absolute path glob as permission rules read them (`*` stays within a
/// folder, `**` crosses folders): the rules compile theirs with it, and a
/// search matches what it leaves out ([`LeftOut`]) the same way.
pub fn absolute_glob(pattern: &str) -> Result<globset::Glob, globset::Error> {
    GlobBuilder::new(pattern).literal_separator(true).build()
}

/// What a search of `root` leaves out: entries matching the request's
/// `exclude` globs ([`absolute_glob`]), matched by their path below the
/// search root written plainly (no `.`, `..` or `//`: `/w/./.env` is
/// `/w/.env`) and below the real root, since rules name the real folders
/// and a search may reach them through a link. Globs compare text: an
/// entry matched as walked would slip past a rule by a spelling.
pub struct LeftOut {
    globs: GlobSet,
    /// The root as walked: what the entries' paths start with.
    root: PathBuf,
    /// The same root written plainly, and resolved.
    plain_root: PathBuf,
    real_root: Option<PathBuf>,
}

impl LeftOut {
    /// `None` when nothing is to be left out.
    pub fn new(root: &Path, exclude: &[String]) -> Result<Option<Self>, SearchError> {
        if exclude.is_empty() {
            return Ok(None);
        }
        let mut builder = GlobSetBuilder::new();
        for pattern in exclude {
            let glob = absolute_glob(pattern)
                .map_err(|e| SearchError::Other(format!("a left-out path `{pattern}`: {e}")))?;
            builder.add(glob);
        }
        let globs = builder
            .build()
            .map_err(|e| SearchError::Other(e.to_string()))?;
        Ok(Some(LeftOut {
            globs,
            root: root.to_path_buf(),
            plain_root: normalize_lexically(root),
            real_root: std::fs::canonicalize(root).ok(),
        }))
    }

    /// Whether the search leaves `path` (its root or below) out.
    pub fn covers(&self, path: &Path) -> bool {
        let Ok(relative) = path.strip_prefix(&self.root) else {
            return self.globs.is_match(normalize_lexically(path));
        };
        let under = |root: &Path| match relative.as_os_str().is_empty() {
            true => root.to_path_buf(),
            false => root.join(relative),
        };
        self.globs.is_match(under(&self.plain_root))
            || self
                .real_root
                .as_deref()
                .is_some_and(|real| self.globs.is_match(under(real)))
    }
}

/// What a walk honours besides the tree's own ignore files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WalkOptions {
    /// The user's global git excludes file (`core.excludesFile`, else
    /// `$XDG_CONFIG_HOME/git/ignore` or `~/.config/git/ignore`), as rg and fd
    /// honour it; on by default. Tests, and embedders who want the same
    /// answer on every machine, turn it off.
    pub global_gitignore: bool,
}

impl Default for WalkOptions {
    fn default() -> Self {
        WalkOptions {
            global_gitignore: true,
        }
    }
}

impl WalkOptions {
    /// Only the tree's own ignore files: the answer does not depend on the
    /// user's configuration.
    pub fn tree_only() -> Self {
        WalkOptions {
            global_gitignore: false,
        }
    }
}

/// Searches the local file system in-process, off the async runtime: the
/// Operations of `grep` and `find` on this machine.
#[derive(Debug, Clone, Copy, Default)]
pub struct LocalSearchOperations {
    /// What the walk honours besides the tree's ignore files.
    pub walk: WalkOptions,
}

/// `~` is this machine's `$HOME`.
impl HomeDir for LocalSearchOperations {}

impl LocalSearchOperations {
    /// Runs `search` with this walk's options on tokio's blocking pool; a
    /// lost task (the runtime shutting down) fails as `{what} failed: ...`.
    pub(crate) async fn blocking<T: Send + 'static>(
        &self,
        what: &'static str,
        search: impl FnOnce(WalkOptions) -> Result<T, SearchError> + Send + 'static,
    ) -> Result<T, SearchError> {
        let options = self.walk;
        tokio::task::spawn_blocking(move || search(options))
            .await
            .map_err(|e| SearchError::Other(format!("{what} failed: {e}")))?
    }
}

/// The ignore file only one tool honours, as the program Pi runs for it
/// does: a user who keeps `.rgignore` or `.fdignore` files for their own rg
/// and fd gets the same answers from our grep and find. It takes precedence
/// over `.ignore` and `.gitignore`, as it does there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolIgnore {
    /// `.rgignore`, for grep.
    Rg,
    /// `.fdignore`, for find.
    Fd,
}

impl ToolIgnore {
    fn file_name(self) -> &'static str {
        match self {
            ToolIgnore::Rg => ".rgignore",
            ToolIgnore::Fd => ".fdignore",
        }
    }
}

/// The shared ignore policy for a walk of `root` (see the module docs).
/// `nested` is given when `root` is outside any repository: the
/// repositories below it are then left out, and kept there to be walked on
/// their own ([`Repositories`]).
fn policy(
    root: &Path,
    options: WalkOptions,
    tool: ToolIgnore,
    nested: Option<&Repositories>,
) -> WalkBuilder {
    let mut builder = WalkBuilder::new(root);
    builder
        .add_custom_ignore_filename(tool.file_name())
        .hidden(false)
        .require_git(nested.is_none())
        .git_global(options.global_gitignore)
        .follow_links(false);
    match nested.cloned() {
        None => builder.filter_entry(|entry| entry.file_name() != ".git"),
        Some(nested) => builder
            .filter_entry(move |entry| entry.file_name() != ".git" && !nested.take_over(entry)),
    };
    builder
}

/// Whether `root` is in a git repository (it or a folder above it has a
/// `.git`). Then ignore files count as git counts them: those of the folders
/// above apply up to the repository's root and no further (a dotfiles
/// repository in `$HOME` ignoring `*` would hide every file of the projects
/// below it, which `ignore` does when told git is not required). Outside a
/// repository they apply anyway (DEVIATIONS #4).
fn in_a_repository(root: &Path) -> bool {
    let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    root.ancestors().any(is_repository)
}

/// Whether `dir` is a repository's root: it holds a `.git` (a folder, or
/// the file of a submodule or worktree).
fn is_repository(dir: &Path) -> bool {
    std::fs::symlink_metadata(dir.join(".git")).is_ok()
}

/// The repositories below a folder outside any repository, which its walk
/// leaves to walks of their own.
///
/// Outside a repository `.gitignore` files are honoured without git, and
/// then `ignore` never looks for `.git`: the `*.txt` of `~/src/.gitignore`
/// hid `~/src/app/src/a.txt` in the repository `app`, which git (and rg)
/// judge by `app`'s own ignore files, and which a search from `app` found.
/// A walk rooted at the repository counts them as git does.
#[derive(Debug, Clone, Default)]
struct Repositories(Arc<Mutex<VecDeque<PathBuf>>>);

impl Repositories {
    /// Whether `entry`, which the walk would go into, is a repository;
    /// it is kept to be walked on its own.
    fn take_over(&self, entry: &DirEntry) -> bool {
        let repository =
            entry.file_type().is_some_and(|t| t.is_dir()) && is_repository(entry.path());
        if repository {
            lock(&self.0).push_back(entry.path().to_path_buf());
        }
        repository
    }

    /// The first repository kept and not yet walked.
    fn next(&self) -> Option<PathBuf> {
        lock(&self.0).pop_front()
    }
}

/// `root`'s walk under the shared policy, with the repositories below it
/// kept in `nested` when it is outside any.
fn walk_builder(
    root: &Path,
    options: WalkOptions,
    tool: ToolIgnore,
) -> (WalkBuilder, Option<Repositories>) {
    let nested = (!in_a_repository(root)).then(Repositories::default);
    (policy(root, options, tool, nested.as_ref()), nested)
}

fn sorted(mut builder: WalkBuilder) -> Walk {
    builder.sort_by_file_name(|a, b| a.cmp(b)).build()
}

/// A sorted, sequential walk of `root` under the shared ignore policy.
///
/// The first entry is `root` itself; errors (unreadable directories, broken
/// ignore files) come as `Err` items the caller may skip. Entries come in
/// [`Path`] order (component by component), the order the tools' output
/// uses. A repository below a root outside any is walked on its own (its
/// folder first), so [`DirEntry::depth`] counts from it there: tell the
/// root by its path.
pub fn walk(root: &Path, options: WalkOptions, tool: ToolIgnore) -> SortedWalk {
    let (builder, nested) = walk_builder(root, options, tool);
    SortedWalk {
        outer: sorted(builder),
        nested,
        repository: None,
        held: None,
        options,
        tool,
    }
}

/// The iterator of [`walk`].
pub struct SortedWalk {
    /// The walk of the root.
    outer: Walk,
    /// The repositories below the root the outer walk passed and left to
    /// walks of their own (the root outside any), in order.
    nested: Option<Repositories>,
    /// The walk of the repository being walked.
    repository: Option<Walk>,
    /// The outer walk's next item, which comes after the repositories it
    /// passed on the way to it.
    held: Option<Option<Result<DirEntry, ignore::Error>>>,
    options: WalkOptions,
    tool: ToolIgnore,
}

impl Iterator for SortedWalk {
    type Item = Result<DirEntry, ignore::Error>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(item) = self.repository.as_mut().and_then(Iterator::next) {
                return Some(item);
            }
            if let Some(repository) = self.nested.as_ref().and_then(Repositories::next) {
                let builder = policy(&repository, self.options, self.tool, None);
                self.repository = Some(sorted(builder));
                continue;
            }
            if let Some(item) = self.held.take() {
                return item;
            }
            self.held = Some(self.outer.next());
        }
    }
}

/// A walk of `root` on `threads` threads under the same policy, in no
/// order, for work (like searching file contents) that costs more than the
/// walk; callers that need the sorted order sort what they keep by [`Path`].
pub fn walk_parallel(
    root: &Path,
    threads: usize,
    options: WalkOptions,
    tool: ToolIgnore,
) -> ParallelWalk {
    ParallelWalk {
        root: root.to_path_buf(),
        threads,
        options,
        tool,
    }
}

/// What a [`ParallelWalk`] calls with each entry, on one of its threads.
pub type Visitor<'s> = Box<dyn FnMut(Result<DirEntry, ignore::Error>) -> WalkState + Send + 's>;

/// The walk of [`walk_parallel`].
#[derive(Debug)]
pub struct ParallelWalk {
    root: PathBuf,
    threads: usize,
    options: WalkOptions,
    tool: ToolIgnore,
}

impl ParallelWalk {
    /// Visits every entry as [`ignore::WalkParallel::run`] does, each thread
    /// with a visitor of its own from `visitor`. A repository below a root
    /// outside any is walked on its own after the rest (its folder first),
    /// so [`DirEntry::depth`] counts from it there: tell the root by its
    /// path. [`WalkState::Quit`] ends the whole walk.
    pub fn run<'s>(self, mut visitor: impl FnMut() -> Visitor<'s>) {
        let (mut builder, nested) = walk_builder(&self.root, self.options, self.tool);
        let Some(nested) = nested else {
            builder.threads(self.threads).build_parallel().run(visitor);
            return;
        };
        let quit = AtomicBool::new(false);
        let mut watched = || {
            let mut inner = visitor();
            let quit = &quit;
            Box::new(move |item| {
                let state = inner(item);
                if matches!(state, WalkState::Quit) {
                    quit.store(true, Ordering::Relaxed);
                }
                state
            }) as Visitor<'_>
        };
        builder
            .threads(self.threads)
            .build_parallel()
            .run(&mut watched);
        if quit.load(Ordering::Relaxed) {
            return;
        }
        let Some(first) = nested.next() else {
            return;
        };
        let mut repositories = policy(&first, self.options, self.tool, None);
        while let Some(repository) = nested.next() {
            repositories.add(repository);
        }
        repositories
            .threads(self.threads)
            .build_parallel()
            .run(visitor);
    }
}

/// Where a [`PathGlob`] looks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Target {
    /// The entry's own name.
    Name,
    /// The absolute path.
    Absolute,
}

/// A glob as `find`'s `pattern` means it, following Pi's use of `fd --glob`
/// (`grep`'s `glob` is rg's: `tools::grep::ops`):
/// - without `/`, it matches an entry's name at any depth (`*.ts`, `*.{rs,ts}`);
/// - with `/`, it matches the entry's absolute path, at any depth (Pi passes
///   `--full-path` and prefixes `**/`: `src/**/*.rs` acts as
///   `**/src/**/*.rs`, so it also finds `a.rs` when searching in `src`);
/// - starting with `/` (or `**/`), it matches the absolute path as written;
/// - letters match either case unless the pattern has a capital, as fd's
///   smart case (`*.md` finds `README.MD`; `Makefile*` only `Makefile`).
///
/// `*` and `?` never cross a `/`; `**` does.
#[derive(Debug, Clone)]
pub struct PathGlob {
    matcher: GlobMatcher,
    target: Target,
}

impl PathGlob {
    /// Compiles `pattern`; the error text is globset's (`error parsing glob '{': ...`).
    pub fn new(pattern: &str) -> Result<Self, globset::Error> {
        let smart_case = !pattern.chars().any(char::is_uppercase);
        let (target, pattern) = if !pattern.contains('/') {
            (Target::Name, pattern.to_owned())
        } else if pattern.starts_with('/') || pattern.starts_with("**/") {
            (Target::Absolute, pattern.to_owned())
        } else {
            (Target::Absolute, format!("**/{pattern}"))
        };
        let glob = GlobBuilder::new(&pattern)
            .literal_separator(true)
            .case_insensitive(smart_case)
            .build()?;
        Ok(PathGlob {
            matcher: glob.compile_matcher(),
            target,
        })
    }

    /// Whether the entry at `absolute`, which is `relative` below the search
    /// directory, matches.
    pub fn is_match(&self, relative: &Path, absolute: &Path) -> bool {
        match self.target {
            Target::Name => relative
                .file_name()
                .is_some_and(|name| self.matcher.is_match(name)),
            Target::Absolute => self.matcher.is_match(absolute),
        }
    }
}

/// `path` with `/` between its components on every platform, as the tools
/// show paths to the model.
pub fn slash_path(path: &Path) -> String {
    path.components()
        .filter_map(|component| match component {
            Component::Normal(part) => Some(part.to_string_lossy()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("/")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matches(pattern: &str, relative: &str) -> bool {
        let glob = PathGlob::new(pattern).unwrap();
        let absolute = Path::new("/root").join(relative);
        glob.is_match(Path::new(relative), &absolute)
    }

    #[test]
    fn glob_without_slash_matches_names_at_any_depth() {
        assert!(matches("*.ts", "a.ts"));
        assert!(matches("*.ts", "src/deep/a.ts"));
        assert!(!matches("*.ts", "src.ts/a.rs"));
        assert!(matches("*.{rs,ts}", "x/y.rs"));
        assert!(matches("*.{rs,ts}", "y.ts"));
        assert!(!matches("*.{rs,ts}", "y.py"));
    }

    #[test]
    fn glob_with_slash_matches_paths_at_any_depth() {
        assert!(matches("src/**/*.rs", "src/main.rs"));
        assert!(matches("src/**/*.rs", "src/a/b/c.rs"));
        assert!(matches("src/**/*.rs", "crates/x/src/lib.rs"));
        assert!(!matches("src/**/*.rs", "srcx/lib.rs"));
        assert!(matches("**/util/*", "src/util/helpers.rs"));
        assert!(!matches("**/util/*", "src/util/deep/helpers.rs"));
        assert!(!matches("src/*.rs", "src/a/b.rs"), "* does not cross /");
    }

    /// Pi's `--full-path`: the directory searched is part of the path, so a
    /// model repeating it in the pattern still finds its files.
    #[test]
    fn glob_with_slash_matches_the_directory_searched_too() {
        let glob = PathGlob::new("src/**/*.ts").unwrap();
        assert!(glob.is_match(Path::new("a.ts"), Path::new("/w/src/a.ts")));
        assert!(glob.is_match(Path::new("u/b.ts"), Path::new("/w/src/u/b.ts")));
        assert!(!glob.is_match(Path::new("a.ts"), Path::new("/w/lib/a.ts")));
    }

    /// fd's smart case: either case unless the pattern has a capital.
    #[test]
    fn letters_match_either_case_unless_the_pattern_has_a_capital() {
        assert!(matches("*.md", "README.MD"));
        assert!(matches("makefile*", "Makefile"));
        assert!(matches("docs/*.md", "DOCS/A.MD"));
        assert!(!matches("Makefile*", "makefile.bak"));
        assert!(matches("Makefile*", "Makefile"));
    }

    #[test]
    fn glob_starting_with_slash_matches_the_absolute_path() {
        assert!(matches("/root/src/*.rs", "src/main.rs"));
        assert!(!matches("/other/src/*.rs", "src/main.rs"));
    }

    #[test]
    fn bad_glob_reports_globsets_text() {
        let error = PathGlob::new("a{b").unwrap_err();
        assert_eq!(
            error.to_string(),
            "error parsing glob 'a{b': unclosed alternate group; missing '}' (maybe escape '{' with '[{]'?)"
        );
    }

    #[test]
    fn slash_path_joins_components_with_slashes() {
        assert_eq!(slash_path(Path::new("a/b/c.txt")), "a/b/c.txt");
        assert_eq!(slash_path(Path::new("")), "");
    }
}
