//! The session commands the interactive mode shares with RPC: `/session`,
//! `/name`, `/export`, `/fork` and `/copy` ([`SessionCommand`]). Each says
//! what happened in the transcript; a fork also shows the new session.

use std::io::Write;
use std::path::Path;

use base64::Engine as _;

use super::app::{App, SessionCommand, tokens};
use super::show_saved;
use crate::app::AgentSession;
use crate::render::{Style, StyledLine};
use crate::support::paths::{expand_path, home_dir};

/// Does `command`, saying what happened in the transcript.
pub(super) fn perform(session: &AgentSession, app: &mut App, command: SessionCommand) {
    match command {
        SessionCommand::Info => app.notice(info(session)),
        SessionCommand::Name(name) => app.notice(name_session(session, name.as_deref())),
        SessionCommand::Export(path) => app.notice(export(session, path.as_deref())),
        SessionCommand::Fork(None) => app.notice(fork_list(session)),
        SessionCommand::Fork(Some(n)) => match fork(session, n) {
            Ok(text) => {
                app.reset(&session.context_items());
                show_saved(session, app);
                app.editor.set_text(&text);
                let forked = format!(
                    "Forked into a new session before message {n}; its text is in the editor"
                );
                app.notice(vec![StyledLine::new(forked, Style::Dim)]);
            }
            Err(error) => app.notice(vec![error]),
        },
        SessionCommand::Copy => app.notice(copy(session, &mut std::io::stdout())),
    }
}

/// Longest a message is shown in `/fork`'s list, in characters.
const FORK_PREVIEW: usize = 70;

/// `/session`: where the session is saved, its id and name, the context's
/// counts, and what the whole session used (as the footer counts it).
fn info(session: &AgentSession) -> Vec<StyledLine> {
    let stats = session.stats();
    let file = stats.session_file.as_ref().map_or_else(
        || "not saved (--no-session)".to_owned(),
        |file| file.display().to_string(),
    );
    let used = session.usage_total();
    let context = &stats.context_usage;
    let about = if context.estimated { "~" } else { "" };
    let rows = [
        ("File", file),
        ("ID", stats.session_id.clone()),
        (
            "Name",
            session
                .session_name()
                .unwrap_or_else(|| "(none; /name NAME sets one)".to_owned()),
        ),
        (
            "Context",
            format!(
                "{} messages: {} user, {} assistant, {} tool calls, {} results; {about}{} of {} tokens ({:.0}%)",
                stats.total_messages,
                stats.user_messages,
                stats.assistant_messages,
                stats.tool_calls,
                stats.tool_results,
                tokens(context.tokens),
                tokens(context.context_window),
                context.percent,
            ),
        ),
        (
            "Used",
            format!(
                "{} in, {} out, {} cache read, {} cache write, ${:.3}",
                tokens(used.input),
                tokens(used.output),
                tokens(used.cache_read),
                tokens(used.cache_write),
                used.cost.total,
            ),
        ),
    ];
    rows.into_iter()
        .map(|(label, value)| {
            StyledLine::new(format!("{label:<9}"), Style::Accent).push(value, Style::Normal)
        })
        .collect()
}

/// `/name [NAME]`: names the session, or says its name.
fn name_session(session: &AgentSession, name: Option<&str>) -> Vec<StyledLine> {
    let line = match (name, session.session_name()) {
        (None, Some(current)) => StyledLine::new(format!("Session name: {current}"), Style::Dim),
        (None, None) => StyledLine::new("The session has no name; /name NAME sets one", Style::Dim),
        (Some(name), _) => match session.set_session_name(name) {
            Ok(()) => StyledLine::new(format!("Session named {name}"), Style::Dim),
            Err(error) => {
                StyledLine::new(format!("Cannot name the session: {error}"), Style::Error)
            }
        },
    };
    vec![line]
}

/// `/export [PATH]`: the conversation as one HTML page.
fn export(session: &AgentSession, path: Option<&str>) -> Vec<StyledLine> {
    // `~/x` is in the home folder, as the tools read it.
    let path = path.map(|path| expand_path(path, home_dir().as_deref()));
    if let Some(path) = &path
        && is_the_ui_terminal(&session.cwd().join(path))
    {
        let refused = format!(
            "Not exported: {path} is the terminal this UI draws on, and the page would be \
             written over the screen. Name a file, or from a shell run \
             `coding-agent --export SESSION {path}`"
        );
        return vec![StyledLine::new(refused, Style::Error)];
    }
    let line = match session.export_html(path.as_deref().map(Path::new)) {
        Ok(path) => StyledLine::new(format!("Exported to {}", path.display()), Style::Dim),
        Err(error) => StyledLine::new(format!("Cannot write the HTML file: {error}"), Style::Error),
    };
    vec![line]
}

/// Whether `path` is the terminal the UI draws on: stdout's file
/// (`/dev/stdout`, `/dev/fd/1`, `/dev/pts/N`) or the controlling terminal
/// (`/dev/tty`). `/export /dev/stdout` sprayed the HTML over the screen,
/// said "Exported to /dev/stdout", and left it garbled until a resize.
fn is_the_ui_terminal(path: &Path) -> bool {
    crate::export::is_one_of(
        path,
        [
            crate::export::stdout_metadata(),
            std::fs::metadata("/dev/tty"),
        ],
    )
}

/// `/fork`: the user messages of the branch, numbered for `/fork N`.
fn fork_list(session: &AgentSession) -> Vec<StyledLine> {
    let messages = session.fork_messages();
    if messages.is_empty() {
        return vec![StyledLine::new("No messages to fork from yet", Style::Dim)];
    }
    let mut lines = vec![StyledLine::new(
        "Your messages (/fork N starts a new session before message N, with its text to edit):",
        Style::Bold,
    )];
    lines.extend(messages.iter().enumerate().map(|(i, (_, text))| {
        StyledLine::new(format!("{:>2}. ", i + 1), Style::Accent).push(preview(text), Style::Normal)
    }));
    lines
}

/// The first line of `text`, cut to [`FORK_PREVIEW`] characters.
pub(super) fn preview(text: &str) -> String {
    let first = text.lines().next().unwrap_or_default();
    let more = first.chars().count() > FORK_PREVIEW || text.lines().nth(1).is_some();
    let cut: String = first.chars().take(FORK_PREVIEW).collect();
    if more { format!("{cut}…") } else { cut }
}

/// `/fork N`: continues in a new session holding the branch before user
/// message `n`; returns that message's text for the editor, or the error
/// to show.
fn fork(session: &AgentSession, n: usize) -> Result<String, StyledLine> {
    let messages = session.fork_messages();
    let Some((entry_id, _)) = n.checked_sub(1).and_then(|i| messages.get(i)) else {
        return Err(StyledLine::new(
            format!("No message number {n} (/fork lists them)"),
            Style::Error,
        ));
    };
    session
        .fork(entry_id)
        .map_err(|error| StyledLine::new(format!("Cannot fork: {error}"), Style::Error))
}

/// `/copy`: the model's last answer to the clipboard, through the terminal
/// (OSC 52, which works over SSH and in tmux with `set-clipboard on`).
fn copy(session: &AgentSession, terminal: &mut impl Write) -> Vec<StyledLine> {
    let Some(text) = session.last_assistant_text() else {
        return vec![StyledLine::new("No answer to copy yet", Style::Dim)];
    };
    let encoded = base64::engine::general_purpose::STANDARD.encode(&text);
    let sent = write!(terminal, "\x1b]52;c;{encoded}\x07").and_then(|()| terminal.flush());
    let line = match sent {
        Ok(()) => StyledLine::new(
            format!(
                "Copied the last answer ({} characters) to the clipboard",
                text.chars().count()
            ),
            Style::Dim,
        ),
        Err(error) => StyledLine::new(format!("Cannot copy: {error}"), Style::Error),
    };
    vec![line]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fork_preview_is_the_first_line_cut_with_a_mark_when_there_is_more() {
        assert_eq!(preview("fix the bug"), "fix the bug");
        assert_eq!(preview("fix the bug\nin main.rs"), "fix the bug…");
        let long = "x".repeat(FORK_PREVIEW + 5);
        assert_eq!(preview(&long), format!("{}…", "x".repeat(FORK_PREVIEW)));
    }

    /// The terminal the UI draws on, by any name, is refused by `/export`;
    /// files and other devices are not.
    #[test]
    fn the_ui_terminal_is_known_by_any_of_its_names() {
        for ui in ["/dev/stdout", "/dev/fd/1", "/proc/self/fd/1", "/dev/tty"] {
            assert!(is_the_ui_terminal(Path::new(ui)), "{ui}");
        }
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("page.html");
        std::fs::write(&file, "").unwrap();
        for other in [file.as_path(), &dir.path().join("new.html")] {
            assert!(!is_the_ui_terminal(other), "{}", other.display());
        }
    }
}
