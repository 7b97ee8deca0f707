//! Ctrl+G: the prompt being written goes to `$VISUAL` (else `$EDITOR`, else
//! `vi`) in a temporary file, large pastes written out (not their markers,
//! which cannot be edited there), with the terminal handed over; what the
//! editor saved comes back into the input editor. An editor that fails
//! leaves the prompt as it was and says why.

use super::TerminalGuard;
use super::app::App;
use crate::render::{Style, StyledLine};

/// Edits the prompt in the user's editor; the prompt is replaced only when
/// the editor exits successfully. Fails only when the terminal cannot be
/// taken back.
pub(super) async fn edit_prompt(app: &mut App, guard: &mut TerminalGuard) -> anyhow::Result<()> {
    let draft = app.editor.expanded_text();
    guard.suspend();
    let edited = run_editor(&draft).await;
    guard.resume()?;
    match edited {
        Ok(text) => app.editor.set_text(&text),
        Err(error) => app.notice(vec![StyledLine::new(
            format!("{error}; the prompt is as it was"),
            Style::Error,
        )]),
    }
    Ok(())
}

/// The editor's command line: `$VISUAL`, else `$EDITOR`, else `vi`.
fn editor_command() -> String {
    ["VISUAL", "EDITOR"]
        .into_iter()
        .filter_map(|name| std::env::var(name).ok())
        .find(|value| !value.trim().is_empty())
        .unwrap_or_else(|| "vi".to_owned())
}

/// Runs the editor on a file holding `draft`; its text afterwards, without
/// the final newline editors add.
async fn run_editor(draft: &str) -> Result<String, String> {
    let file = tempfile::Builder::new()
        .prefix("coding-agent-prompt-")
        .suffix(".md")
        .tempfile()
        .map_err(|error| format!("Cannot make the file to edit: {error}"))?;
    std::fs::write(file.path(), draft)
        .map_err(|error| format!("Cannot write the file to edit: {error}"))?;
    let command = editor_command();
    // Through the shell, so `EDITOR="code --wait"` works as it does for git.
    let status = tokio::process::Command::new("/bin/sh")
        .arg("-c")
        .arg(format!("{command} \"$1\""))
        .arg("sh")
        .arg(file.path())
        .status()
        .await
        .map_err(|error| format!("Cannot start the editor ({command}): {error}"))?;
    if !status.success() {
        return Err(format!("The editor ({command}) exited with {status}"));
    }
    let text = std::fs::read_to_string(file.path())
        .map_err(|error| format!("Cannot read the edited file: {error}"))?;
    let text = text.strip_suffix('\n').unwrap_or(&text);
    Ok(text.strip_suffix('\r').unwrap_or(text).to_owned())
}
