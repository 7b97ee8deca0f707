//! `--list-models` and `--export`: answered from the settings and the
//! session files, without running the agent.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use coding_agent::app::ModelCatalog;
use coding_agent::export::{ExportError, write_session_html};
use coding_agent::modes::print::EXIT_READER_GONE;
use coding_agent::session::{SessionError, SessionManager};
use coding_agent::settings::{SETTINGS_FILE, Settings, agent_dir, resolve_model};

use super::build::{session_path, sessions_dir};
use super::resolve::model_flags;
use super::{RunArgs, UsageError};

/// Prints the models the flags and settings can use, `provider/id` with
/// the context window when known, those containing `search` (any case)
/// when given; then the providers that lack their key. A search that
/// matches nothing says so, in Pi's words (it printed nothing, exit 0,
/// which reads as a failure to list).
pub(super) async fn list_models(args: &RunArgs, search: Option<&str>) -> anyhow::Result<u8> {
    let cwd = std::env::current_dir()?;
    let agent_dir = agent_dir();
    let trusted = coding_agent::guard::project_trusted(&agent_dir, &cwd, &args.guard.flags());
    let settings = Settings::load(&agent_dir, &cwd, trusted).map_err(UsageError::from)?;
    let (flags, _) = model_flags(args)?;
    let settings_path = agent_dir.join(SETTINGS_FILE);
    let env = |name: &str| std::env::var(name).ok();
    let start = resolve_model(&flags, &settings, &settings_path, &env);
    let catalog = ModelCatalog {
        start_provider: start
            .as_ref()
            .map(|resolved| resolved.model.provider.clone())
            .unwrap_or_default(),
        settings,
        settings_path,
        flags,
        cycle: Vec::new(),
    };
    let models = match &start {
        Ok(resolved) => catalog.available(&resolved.model, &env).await,
        Err(_) => Vec::new(),
    };
    let lowercase = search.map(str::to_lowercase);
    let wanted = |name: &str| {
        lowercase
            .as_ref()
            .is_none_or(|s| name.to_lowercase().contains(s))
    };
    let mut listing = String::new();
    for model in models {
        let name = format!("{}/{}", model.provider, model.id);
        if !wanted(&name) {
            continue;
        }
        let _ = match catalog.context_window(&model) {
            Some(window) => writeln!(listing, "{name}  {}k context", window / 1000),
            None => writeln!(listing, "{name}"),
        };
    }
    for choice in catalog.choices(&env) {
        if let Some(var) = choice.missing_key.filter(|_| wanted(&choice.provider)) {
            let _ = writeln!(listing, "{} (no key: set {var})", choice.provider);
        }
    }
    if let Some(search) = search.filter(|_| listing.is_empty()) {
        let _ = writeln!(listing, "No models matching \"{search}\"");
    }
    print_out(&listing)
}

/// Writes `text` to stdout; returns the exit status: 0, or 141 when the
/// reader went away (`--list-models | head -0`), as print mode reports it.
/// `println!` panicked there (status 101).
fn print_out(text: &str) -> anyhow::Result<u8> {
    match std::io::stdout().lock().write_all(text.as_bytes()) {
        Ok(()) => Ok(0),
        Err(error) if error.kind() == std::io::ErrorKind::BrokenPipe => Ok(EXIT_READER_GONE),
        Err(error) => Err(error).context("cannot write to standard output"),
    }
}

/// Writes the session in `given` (a file, or an id as for `--session`) as
/// one HTML page, to `out` or the default name in the cwd. The line saying
/// where goes to stdout, unless the page went there (`/dev/stdout`, a
/// pipe): then to stderr, so stdout holds the page alone.
pub(super) fn export(args: &RunArgs, given: &Path, out: Option<&Path>) -> anyhow::Result<u8> {
    let cwd = std::env::current_dir()?;
    let dir = sessions_dir(args, &agent_dir(), &cwd)?;
    let path: PathBuf = session_path(given, &dir)?;
    let refused = |reason: String| UsageError::ExportSource {
        path: path.clone(),
        reason,
    };
    let session = SessionManager::open_saved(&path, &cwd).map_err(|error| match error {
        SessionError::Io { error, .. } => refused(error.to_string()).into(),
        // Its text offers a new path, which starts a session, not an export.
        SessionError::NotASession { .. } => {
            refused("it is not a session file (its first line is not a session header)".into())
                .into()
        }
        SessionError::Empty { .. } => refused("it is empty: not a session file".into()).into(),
        other => anyhow::Error::from(other),
    })?;
    let written = write_session_html(&cwd, &session, out).map_err(|error| match error {
        ExportError::IsTheSession => refused(error.to_string()).into(),
        ExportError::Write(error) => anyhow::Error::from(error),
    })?;
    let line = format!("Exported to {}", written.display());
    if std::fs::metadata(&written).is_ok_and(|meta| meta.is_file()) {
        print_out(&format!("{line}\n"))
    } else {
        super::tell(line);
        Ok(0)
    }
}
