//! The trust question, asked once at start when the project's own settings
//! (`.coding-agent/settings.json`) or folder hold what an untrusted project
//! may not use (allow rules, a looser mode, command hooks or
//! `disableAllHooks`, MCP servers, its choice of model and endpoint, its
//! `SYSTEM.md`, `APPEND_SYSTEM.md`, prompt templates and skills). Yes is remembered
//! ([`Trust::trust`]) and the session is then built with the project's
//! rules; no keeps them ignored for this run, and the question comes again
//! at the next start (nothing is stored, as Claude Code asks per folder until
//! trusted). It is asked before the session is built, so the policy, the
//! project's hooks and MCP servers all see the answer.

use std::cell::Cell;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use crossterm::event::{Event, EventStream, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use futures::StreamExt;
use ratatui::Frame;
use ratatui::widgets::Paragraph;
use serde_json::Value;

use super::{APPROVAL_GRACE, ModalView, Subject, fit, scrolled};
use crate::guard::config::{GuardFlags, PermissionSettings, load};
use crate::guard::{SandboxFacts, Trust, project_trusted};
use crate::modes::interactive::TerminalGuard;
use crate::modes::interactive::theme::to_line;
use crate::render::{Style, StyledLine};
use crate::settings::{project_config_dir, project_settings_file};
use crate::skills::{self, SkillFiles};
use crate::support::paths::home_dir;
use crate::templates::{PROMPTS_DIR, TemplateLocation};

/// The question: the project's settings file and what it would loosen.
#[derive(Debug, Clone)]
pub struct TrustPrompt {
    cwd: PathBuf,
    settings: PathBuf,
    loosens: Vec<String>,
    /// The project sets what only trust enables besides its rules: commands
    /// that start (hooks, MCP servers), or the model and the endpoint the
    /// conversation and the key go to.
    beyond_rules: bool,
    yes_selected: bool,
    /// When the question was first drawn: the keys that pick an answer wait
    /// out `grace` from then, so the first prompt typed ahead as the agent
    /// starts (its `y`, `n`, Enter) does not answer it.
    drawn_at: Cell<Option<Instant>>,
    /// [`APPROVAL_GRACE`] in the terminal; none by default (tests drive
    /// the keys).
    grace: Duration,
    /// The first row shown of what trust would add, when the question is
    /// taller than the screen (PgUp/PgDn).
    scroll: usize,
    /// What the last draw showed and allows ([`TrustPrompt::draw`]).
    shown: Cell<Shown>,
}

/// What the question's draws have shown: a yes is taken only once every
/// row of it has been on the screen, and the choices are on it now (as an
/// approval prompt takes an allow), so a project cannot hide its riskier
/// settings below a long list of allow rules or the bottom of a small
/// window. Until it is first drawn nothing has been shown.
#[derive(Debug, Clone, Copy, Default)]
struct Shown {
    /// How far down the question has been shown, in rows.
    seen: usize,
    /// Every row has been shown and the choices are on the screen.
    all: bool,
    /// Rows of the question one draw shows (a page for PgUp/PgDn).
    page: usize,
    /// The last first row it can be scrolled to.
    last_scroll: usize,
}

impl TrustPrompt {
    /// The question for the project in `cwd`, naming what its settings
    /// would allow once trusted (none when its settings file is the global
    /// one of `agent_dir`: the user's own settings need no trust).
    pub async fn new(agent_dir: &Path, cwd: &Path) -> Self {
        let project_file = project_settings_file(agent_dir, cwd);
        let (mut loosens, mut beyond_rules) =
            project_file.as_deref().map(loosened).unwrap_or_default();
        let config_dir = project_config_dir(agent_dir, cwd);
        let mut instructions = config_dir.as_deref().map(instructions).unwrap_or_default();
        // The skills trusting would load, as they would load: one the
        // loader leaves out (no description) is not named.
        let skill_dirs: Vec<(PathBuf, TemplateLocation)> = skills::project_dirs(
            SkillFiles::local(),
            Some(agent_dir),
            home_dir().as_deref(),
            cwd,
        )
        .await
        .into_iter()
        .map(|dir| (dir, TemplateLocation::Project))
        .collect();
        let (skills, _) = skills::load(SkillFiles::local(), &[], &skill_dirs).await;
        let mut names: Vec<&str> = skills.iter().map(|skill| skill.name.as_str()).collect();
        names.sort_unstable();
        if !names.is_empty() {
            instructions.push(format!("skills {}", names.join(", ")));
        }
        beyond_rules |= !instructions.is_empty();
        loosens.extend(instructions);
        // The question names the file there is, else the folder, else the
        // first folder of skills there is.
        #[cfg_attr(not(feature = "mcp"), allow(unused_mut))]
        let mut settings = project_file
            .filter(|file| file.is_file())
            .or(config_dir.filter(|dir| dir.is_dir()))
            .or_else(|| {
                let mut dirs = skill_dirs.into_iter().map(|(dir, _)| dir);
                dirs.find(|dir| skills.iter().any(|skill| skill.path.starts_with(dir)))
            })
            .unwrap_or_default();
        // Servers in Claude Code's `.mcp.json` start only once trusted too:
        // a project with nothing else was never asked about.
        #[cfg(feature = "mcp")]
        {
            use crate::mcp::config::{PROJECT_MCP_FILE, server_names};
            let servers = server_names(&cwd.join(PROJECT_MCP_FILE));
            if !servers.is_empty() {
                loosens.push(format!(
                    "MCP servers {} ({PROJECT_MCP_FILE})",
                    servers.join(", ")
                ));
                beyond_rules = true;
                if settings.as_os_str().is_empty() {
                    settings = cwd.join(PROJECT_MCP_FILE);
                }
            }
        }
        TrustPrompt {
            cwd: cwd.to_path_buf(),
            loosens,
            beyond_rules,
            settings,
            yes_selected: true,
            drawn_at: Cell::new(None),
            grace: Duration::ZERO,
            scroll: 0,
            shown: Cell::default(),
        }
    }

    /// Keys that pick an answer are ignored for `grace` after the question
    /// is first drawn ([`APPROVAL_GRACE`] in the terminal).
    pub fn set_grace(&mut self, grace: Duration) {
        self.grace = grace;
    }

    /// A key press; `Some(true)` trusts, `Some(false)` does not. Up/Down
    /// move, Enter picks, `1`/`y` and `2`/`n` pick at once (once the grace
    /// is over, and a yes once all of the question was shown), Esc and
    /// Ctrl+C say no, PgUp/PgDn/Home/End scroll a question taller than the
    /// screen.
    pub fn handle_key(&mut self, key: KeyEvent) -> Option<bool> {
        match self.answer(key) {
            Some(true) if !self.shown.get().all => None,
            answer => answer,
        }
    }

    fn answer(&mut self, key: KeyEvent) -> Option<bool> {
        if key.kind == KeyEventKind::Release {
            return None;
        }
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let picks = matches!(
            key.code,
            KeyCode::Enter | KeyCode::Char('1' | '2' | 'y' | 'Y' | 'n' | 'N')
        ) && !ctrl;
        let too_soon = self
            .drawn_at
            .get()
            .is_none_or(|drawn| drawn.elapsed() < self.grace);
        if picks && !self.grace.is_zero() && too_soon {
            return None;
        }
        match key.code {
            KeyCode::Char('c') if ctrl => Some(false),
            KeyCode::Esc | KeyCode::Char('2' | 'n' | 'N') => Some(false),
            KeyCode::Char('1' | 'y' | 'Y') => Some(true),
            KeyCode::Enter => Some(self.yes_selected),
            KeyCode::Up => {
                self.yes_selected = true;
                None
            }
            KeyCode::Down => {
                self.yes_selected = false;
                None
            }
            code => {
                let shown = self.shown.get();
                if let Some(to) = scrolled(code, self.scroll, shown.page, shown.last_scroll) {
                    self.scroll = to;
                }
                None
            }
        }
    }

    /// The question's lines (not yet wrapped), and where its choices
    /// start.
    fn view(&self) -> ModalView {
        let lines = self.lines();
        let choices = lines.len() - 4;
        ModalView {
            input: None,
            call: choices,
            answers: choices..lines.len(),
            lines,
        }
    }

    /// The question's lines (not yet wrapped).
    pub fn lines(&self) -> Vec<StyledLine> {
        let mark = |selected: bool| {
            if selected {
                ("› ", Style::Accent)
            } else {
                ("  ", Style::Normal)
            }
        };
        let (yes_mark, yes_style) = mark(self.yes_selected);
        let (no_mark, no_style) = mark(!self.yes_selected);
        let mut lines = vec![
            StyledLine::new("This project has its own settings: ", Style::Bold)
                .push(self.settings.display().to_string(), Style::Accent),
            StyledLine::default(),
            StyledLine::new(
                "Until you trust the project, only its deny and ask rules apply, so a repository \
                 you did not write cannot let commands run without asking. Trusting it also starts \
                 its own command hooks and MCP servers, lets it choose the model and where your \
                 requests and keys go, and gives the model its instructions.",
                Style::Normal,
            ),
        ];
        if !self.loosens.is_empty() {
            lines.push(StyledLine::default());
            lines.push(StyledLine::new("Trusted, it would add:", Style::Normal));
            lines.extend(
                self.loosens
                    .iter()
                    .map(|what| StyledLine::new(format!("  {what}"), Style::Warning)),
            );
        }
        lines.extend([
            StyledLine::default(),
            // The last four lines are the choices ([`TrustPrompt::view`]).
            StyledLine::new("Trust this project?", Style::Bold),
            StyledLine::new(format!("{yes_mark}1. "), yes_style)
                .push("Yes, trust it", Style::Normal)
                .push(
                    format!(" (remembered for {})", self.cwd.display()),
                    Style::Dim,
                ),
            StyledLine::new(format!("{no_mark}2. "), no_style)
                .push("No, keep its allow rules ignored", Style::Normal)
                .push(" (asked again next time)", Style::Dim),
            StyledLine::new("↑↓ Enter or 1-2 to choose · Esc: no", Style::Dim),
        ]);
        lines
    }

    /// Draws the question on the whole screen: when it is taller, the
    /// choices under as many rows of the rest as fit, scrolled by
    /// PgUp/PgDn/Home/End (a yes waits until all of it was shown).
    pub fn draw(&self, frame: &mut Frame<'_>) {
        if self.drawn_at.get().is_none() {
            self.drawn_at.set(Some(Instant::now()));
        }
        let area = frame.area();
        let fitted = fit(
            &self.view(),
            area.width,
            usize::from(area.height),
            self.scroll,
            &QUESTION,
        );
        let seen = self.shown.get().seen.max(fitted.call.shown.end);
        self.shown.set(Shown {
            seen,
            all: fitted.choices_shown && seen >= fitted.call.rows,
            page: fitted.call.shown.len(),
            last_scroll: fitted.call.rows.saturating_sub(fitted.call.shown.len()),
        });
        let rows: Vec<_> = fitted.rows.iter().map(to_line).collect();
        frame.render_widget(Paragraph::new(rows), area);
    }
}

/// The trust question, as [`fit`] names it.
const QUESTION: Subject = Subject {
    name: "question",
    accepted: "trusted",
    refusal: "Esc says no",
};

/// What the project's settings would add once trusted: its allow rules,
/// its `defaultMode`, its command hooks' events, its MCP servers, its
/// providers and default model. Unreadable settings add nothing here (the
/// session's start reports them). True besides when some of it is more
/// than rules (hooks, servers, the model's choice).
fn loosened(settings: &Path) -> (Vec<String>, bool) {
    let value = std::fs::read_to_string(settings)
        .ok()
        .and_then(|text| serde_json::from_str::<Value>(&text).ok())
        .unwrap_or_default();
    let permissions = value
        .get("permissions")
        .and_then(|p| serde_json::from_value::<PermissionSettings>(p.clone()).ok())
        .unwrap_or_default();
    let names = |key: &str| -> Vec<String> {
        value
            .get(key)
            .and_then(Value::as_object)
            .map(|entries| entries.keys().cloned().collect())
            .unwrap_or_default()
    };
    // The weightiest first: a long list of allow rules goes last.
    let mut loosens = Vec::new();
    // Above all: it would silence the user's own hooks, guards included.
    if value.get("disableAllHooks").and_then(Value::as_bool) == Some(true) {
        loosens.push("disableAllHooks: turn off all hooks, yours included".to_owned());
    }
    let hooks = names("hooks");
    if !hooks.is_empty() {
        loosens.push(format!("command hooks on {}", hooks.join(", ")));
    }
    let servers = names("mcpServers");
    if !servers.is_empty() {
        loosens.push(format!("MCP servers {}", servers.join(", ")));
    }
    let providers = names("providers");
    if !providers.is_empty() {
        loosens.push(format!(
            "providers {} (where requests go, with which key)",
            providers.join(", ")
        ));
    }
    for key in ["defaultProvider", "defaultModel"] {
        if let Some(name) = value.get(key).and_then(Value::as_str) {
            loosens.push(format!("{key} {name}"));
        }
    }
    let beyond_rules = !loosens.is_empty();
    if let Some(mode) = permissions.default_mode {
        let at = usize::from(
            loosens
                .first()
                .is_some_and(|first| first.starts_with("disable")),
        );
        loosens.insert(at, format!("defaultMode {}", mode.name()));
    }
    loosens.extend(permissions.allow.iter().map(|rule| format!("allow {rule}")));
    (loosens, beyond_rules)
}

/// What the project's configuration folder `dir` would give the model once
/// trusted: `SYSTEM.md` (which replaces the system prompt),
/// `APPEND_SYSTEM.md` and prompt templates, each named (its skills are
/// among [`skills::project_dirs`]).
fn instructions(dir: &Path) -> Vec<String> {
    let mut found = Vec::new();
    for (file, what) in [
        ("SYSTEM.md", "replaces the system prompt"),
        ("APPEND_SYSTEM.md", "is added to the system prompt"),
    ] {
        if dir.join(file).is_file() {
            found.push(format!("{file} ({what})"));
        }
    }
    let templates = entry_names(&dir.join(PROMPTS_DIR), |path| {
        path.extension().is_some_and(|ext| ext == "md") && path.is_file()
    });
    if !templates.is_empty() {
        let commands: Vec<String> = templates.iter().map(|name| format!("/{name}")).collect();
        found.push(format!("prompt templates {}", commands.join(", ")));
    }
    found
}

/// The names (without `.md`) of the entries of `dir` that `keep` takes,
/// sorted; none when `dir` cannot be read.
fn entry_names(dir: &Path, keep: impl Fn(&Path) -> bool) -> Vec<String> {
    let entries = std::fs::read_dir(dir).into_iter().flatten().flatten();
    let mut names: Vec<String> = entries
        .map(|entry| entry.path())
        .filter(|path| keep(path))
        .filter_map(|path| {
            let name = path.file_name()?.to_string_lossy().into_owned();
            Some(name.strip_suffix(".md").map(str::to_owned).unwrap_or(name))
        })
        .collect();
    names.sort();
    names
}

/// Asks whether to trust the project in `cwd` when its settings are ignored
/// in part because it is not trusted (see the module docs); stores a yes.
/// Does nothing when there is nothing to ask; settings that cannot be read
/// are left to the session's start to report. Asked before the settings
/// are read, so they are read once, as the answer leaves them.
pub async fn ask_to_trust(agent_dir: &Path, cwd: &Path, flags: &GuardFlags) -> anyhow::Result<()> {
    if project_trusted(agent_dir, cwd, flags) {
        return Ok(());
    }
    let mut prompt = TrustPrompt::new(agent_dir, cwd).await;
    prompt.set_grace(APPROVAL_GRACE);
    // The policy says whether the project's permissions are ignored (a
    // stricter defaultMode applies untrusted too); hooks and servers of an
    // untrusted project never start.
    let ignored_permissions = load(agent_dir, cwd, flags, SandboxFacts::default())
        .is_ok_and(|setup| setup.untrusted_project_settings);
    if !ignored_permissions && !prompt.beyond_rules {
        return Ok(());
    }
    let trusted = {
        let mut terminal = TerminalGuard::enter()?;
        let mut input = EventStream::new();
        loop {
            terminal.terminal.draw(|frame| prompt.draw(frame))?;
            match input.next().await {
                Some(Ok(Event::Key(key))) => {
                    if let Some(answer) = prompt.handle_key(key) {
                        break answer;
                    }
                }
                Some(Ok(_)) => {}
                Some(Err(error)) => return Err(error.into()),
                None => break false,
            }
        }
    };
    if trusted {
        Trust::load(agent_dir, false)
            .and_then(|mut trust| trust.trust(cwd))
            .context("cannot remember that the project is trusted")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    /// The screen after `prompt` is drawn `width` by `height`.
    fn drawn(prompt: &TrustPrompt, width: u16, height: u16) -> String {
        let backend = ratatui::backend::TestBackend::new(width, height);
        let mut terminal = ratatui::Terminal::new(backend).unwrap();
        terminal.draw(|frame| prompt.draw(frame)).unwrap();
        let buffer = terminal.backend().buffer();
        (0..height)
            .map(|y| {
                (0..width)
                    .map(|x| buffer[(x, y)].symbol())
                    .collect::<String>()
                    .trim_end()
                    .to_owned()
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[tokio::test]
    async fn keys_answer_yes_or_no() {
        let fresh = TrustPrompt::new(Path::new("/nowhere/agent"), Path::new("/nowhere")).await;
        drawn(&fresh, 100, 30);
        let answer = |codes: &[KeyCode]| {
            let mut prompt = fresh.clone();
            codes
                .iter()
                .map(|&c| prompt.handle_key(key(c)))
                .last()
                .flatten()
        };
        assert_eq!(answer(&[KeyCode::Enter]), Some(true));
        assert_eq!(answer(&[KeyCode::Down, KeyCode::Enter]), Some(false));
        assert_eq!(
            answer(&[KeyCode::Down, KeyCode::Up, KeyCode::Enter]),
            Some(true)
        );
        assert_eq!(answer(&[KeyCode::Char('1')]), Some(true));
        assert_eq!(answer(&[KeyCode::Char('y')]), Some(true));
        assert_eq!(answer(&[KeyCode::Char('2')]), Some(false));
        assert_eq!(answer(&[KeyCode::Char('n')]), Some(false));
        assert_eq!(answer(&[KeyCode::Esc]), Some(false));
        assert_eq!(answer(&[KeyCode::Char('x'), KeyCode::Down]), None);
        let mut prompt = fresh.clone();
        assert_eq!(
            prompt.handle_key(KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL)),
            Some(false)
        );
    }

    /// A prompt typed ahead as the agent starts must not answer the
    /// question: its `y`, `n`, digits and Enter wait out the grace; Esc and
    /// Ctrl+C (no) and the arrows are taken at once.
    #[tokio::test]
    async fn keys_that_pick_wait_out_the_grace() {
        let mut prompt = TrustPrompt::new(Path::new("/nowhere/agent"), Path::new("/nowhere")).await;
        prompt.set_grace(Duration::from_secs(3600));
        prompt.shown.set(Shown {
            all: true,
            ..Shown::default()
        });
        let picks = [
            KeyCode::Char('y'),
            KeyCode::Char('n'),
            KeyCode::Char('1'),
            KeyCode::Char('2'),
            KeyCode::Enter,
        ];
        for code in picks {
            assert_eq!(prompt.handle_key(key(code)), None, "{code:?} before a draw");
        }
        prompt.drawn_at.set(Some(Instant::now()));
        for code in picks {
            assert_eq!(
                prompt.handle_key(key(code)),
                None,
                "{code:?} within the grace"
            );
        }
        assert_eq!(prompt.handle_key(key(KeyCode::Down)), None);
        assert!(!prompt.yes_selected, "the arrow moved");
        assert_eq!(prompt.clone().handle_key(key(KeyCode::Esc)), Some(false));
        let ctrl_c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
        assert_eq!(prompt.clone().handle_key(ctrl_c), Some(false));
        prompt
            .drawn_at
            .set(Instant::now().checked_sub(Duration::from_secs(3601)));
        assert_eq!(prompt.handle_key(key(KeyCode::Char('y'))), Some(true));
    }

    #[tokio::test]
    async fn the_question_names_the_file_and_what_trust_would_add() -> std::io::Result<()> {
        let dir = tempfile::tempdir()?;
        let settings = dir.path().join(".coding-agent/settings.json");
        std::fs::create_dir_all(dir.path().join(".coding-agent"))?;
        std::fs::write(
            &settings,
            json!({
                "permissions": {"allow": ["bash(make:*)"], "deny": ["read(.env)"], "defaultMode": "auto"},
                "hooks": {"PreToolUse": [], "Stop": []},
                "mcpServers": {"time": {"command": "uvx"}},
                "providers": {"proxy": {"baseUrl": "http://127.0.0.1:9/v1"}},
                "defaultProvider": "proxy"
            })
            .to_string(),
        )?;
        let mut prompt = TrustPrompt::new(&dir.path().join("agent"), dir.path()).await;
        prompt.handle_key(key(KeyCode::Down));
        assert_eq!(
            crate::render::to_markup(&prompt.lines()),
            format!(
                "[bold]This project has its own settings: [/][accent]{settings}[/]\n\
                 \n\
                 Until you trust the project, only its deny and ask rules apply, so a repository \
                 you did not write cannot let commands run without asking. Trusting it also starts \
                 its own command hooks and MCP servers, lets it choose the model and where your \
                 requests and keys go, and gives the model its instructions.\n\
                 \n\
                 Trusted, it would add:\n\
                 [warning]  defaultMode auto[/]\n\
                 [warning]  command hooks on PreToolUse, Stop[/]\n\
                 [warning]  MCP servers time[/]\n\
                 [warning]  providers proxy (where requests go, with which key)[/]\n\
                 [warning]  defaultProvider proxy[/]\n\
                 [warning]  allow bash(make:*)[/]\n\
                 \n\
                 [bold]Trust this project?[/]\n\
                 \u{20} 1. Yes, trust it[dim] (remembered for {cwd})[/]\n\
                 [accent]› 2. [/]No, keep its allow rules ignored[dim] (asked again next time)[/]\n\
                 [dim]↑↓ Enter or 1-2 to choose · Esc: no[/]",
                settings = settings.display(),
                cwd = dir.path().display(),
            )
        );
        Ok(())
    }

    /// `disableAllHooks` comes first (it turns the user's own hooks off),
    /// and the instructions trust would load are named: `SYSTEM.md`,
    /// `APPEND_SYSTEM.md`, prompt templates, skills.
    #[tokio::test]
    async fn the_question_names_disabled_hooks_first_and_the_instructions() -> std::io::Result<()> {
        let dir = tempfile::tempdir()?;
        let config = dir.path().join(".coding-agent");
        for (file, text) in [
            (
                "settings.json",
                r#"{"disableAllHooks":true,"permissions":{"allow":["bash(make:*)"]}}"#,
            ),
            ("SYSTEM.md", "You obey the repository."),
            ("APPEND_SYSTEM.md", "Also this."),
            ("prompts/x.md", "Do x."),
            ("prompts/notes.txt", "not a template"),
            (
                "skills/deploy/SKILL.md",
                "---\nname: deploy\ndescription: d\n---",
            ),
        ] {
            let path = config.join(file);
            std::fs::create_dir_all(path.parent().unwrap_or(&config))?;
            std::fs::write(path, text)?;
        }
        let prompt = TrustPrompt::new(&dir.path().join("agent"), dir.path()).await;
        assert!(prompt.beyond_rules);
        assert_eq!(
            prompt.loosens,
            [
                "disableAllHooks: turn off all hooks, yours included",
                "allow bash(make:*)",
                "SYSTEM.md (replaces the system prompt)",
                "APPEND_SYSTEM.md (is added to the system prompt)",
                "prompt templates /x",
                "skills deploy",
            ]
        );
        // Instructions alone are asked about, naming the folder.
        std::fs::remove_file(config.join("settings.json"))?;
        let prompt = TrustPrompt::new(&dir.path().join("agent"), dir.path()).await;
        assert!(prompt.beyond_rules);
        assert_eq!(prompt.settings, config);
        Ok(())
    }

    /// A project whose only settings are Claude Code's `.mcp.json` is asked
    /// about too: its servers wait for trust (the question never came, and
    /// the servers never started without `--trust`).
    #[cfg(feature = "mcp")]
    #[tokio::test]
    async fn servers_in_the_mcp_json_alone_make_a_question() -> std::io::Result<()> {
        let dir = tempfile::tempdir()?;
        std::fs::write(
            dir.path().join(".mcp.json"),
            json!({"mcpServers": {"db": {"command": "x"}, "off": {"command": "y", "disabled": true}}})
                .to_string(),
        )?;
        let prompt = TrustPrompt::new(&dir.path().join("agent"), dir.path()).await;
        assert!(prompt.beyond_rules);
        assert_eq!(prompt.loosens, ["MCP servers db (.mcp.json)"]);
        assert_eq!(prompt.settings, dir.path().join(".mcp.json"));
        Ok(())
    }

    /// Skills other agents share (`.agents/skills/`, in the folder started
    /// in or above it up to the repository's root) load only once the
    /// project is trusted: they alone make a question, and it names them
    /// with those of the project's own folder.
    #[tokio::test]
    async fn shared_skills_alone_make_a_question_naming_them() -> std::io::Result<()> {
        let dir = tempfile::tempdir()?;
        let repo = dir.path().join("repo");
        let cwd = repo.join("crates/app");
        std::fs::create_dir_all(repo.join(".git"))?;
        for (file, text) in [
            (
                repo.join(".agents/skills/release/SKILL.md"),
                "---\nname: release\ndescription: r\n---",
            ),
            // Left out by the loader (no description): not named.
            (cwd.join(".agents/skills/bad/SKILL.md"), "no front matter"),
            (
                cwd.join(".agents/skills/notes.md"),
                "---\ndescription: n\n---",
            ),
            (cwd.join(".agents/skills/empty/README"), ""),
            // Above the repository's root: not the project's.
            (
                dir.path().join(".agents/skills/outside.md"),
                "---\ndescription: o\n---",
            ),
        ] {
            std::fs::create_dir_all(file.parent().unwrap_or(dir.path()))?;
            std::fs::write(file, text)?;
        }
        let prompt = TrustPrompt::new(&dir.path().join("agent"), &cwd).await;
        assert!(prompt.beyond_rules);
        assert_eq!(prompt.loosens, ["skills notes, release"]);
        assert_eq!(prompt.settings, cwd.join(".agents/skills"));

        std::fs::create_dir_all(cwd.join(".coding-agent/skills/deploy"))?;
        std::fs::write(
            cwd.join(".coding-agent/skills/deploy/SKILL.md"),
            "---\ndescription: d\n---",
        )?;
        let prompt = TrustPrompt::new(&dir.path().join("agent"), &cwd).await;
        assert_eq!(prompt.loosens, ["skills deploy, notes, release"]);
        assert_eq!(prompt.settings, cwd.join(".coding-agent"));
        Ok(())
    }

    /// A question taller than the window (sixty allow rules over the
    /// project's `defaultMode bypass`, or a small window) keeps its choices
    /// on the screen, scrolls the rest, and takes a yes only once all of it
    /// was shown: Enter trusted a project whose riskier settings and the
    /// question itself were below the bottom of the screen.
    #[tokio::test]
    async fn a_question_taller_than_the_window_is_trusted_only_once_read_to_the_end()
    -> std::io::Result<()> {
        let dir = tempfile::tempdir()?;
        std::fs::create_dir_all(dir.path().join(".coding-agent"))?;
        let allow: Vec<String> = (0..60).map(|i| format!("bash(tool{i}:*)")).collect();
        std::fs::write(
            dir.path().join(".coding-agent/settings.json"),
            json!({"permissions": {"allow": allow, "defaultMode": "bypass"}}).to_string(),
        )?;
        let mut prompt = TrustPrompt::new(&dir.path().join("agent"), dir.path()).await;
        let screen = drawn(&prompt, 100, 30);
        assert!(screen.contains("defaultMode bypass"), "{screen}");
        assert!(
            screen.contains(
                "· PgUp/PgDn/Home/End scroll; the question can be trusted once every row was shown"
            ),
            "{screen}"
        );
        assert!(
            screen.ends_with("↑↓ Enter or 1-2 to choose · Esc: no"),
            "{screen}"
        );
        assert_eq!(prompt.handle_key(key(KeyCode::Enter)), None);
        assert_eq!(prompt.handle_key(key(KeyCode::Char('y'))), None);
        for _ in 0..10 {
            prompt.handle_key(key(KeyCode::PageDown));
            drawn(&prompt, 100, 30);
        }
        assert!(drawn(&prompt, 100, 30).contains("allow bash(tool59:*)"));
        assert_eq!(
            prompt.clone().handle_key(key(KeyCode::Char('y'))),
            Some(true)
        );
        // No is taken at any time.
        let mut fresh = TrustPrompt::new(&dir.path().join("agent"), dir.path()).await;
        drawn(&fresh, 100, 30);
        assert_eq!(fresh.handle_key(key(KeyCode::Char('n'))), Some(false));

        // Too small for the choices: only no is taken, and it says so.
        let mut tiny = TrustPrompt::new(&dir.path().join("agent"), dir.path()).await;
        let screen = drawn(&tiny, 40, 6);
        assert!(screen.contains("The question does not fit"), "{screen}");
        assert_eq!(tiny.handle_key(key(KeyCode::Enter)), None);
        assert_eq!(tiny.handle_key(key(KeyCode::Esc)), Some(false));
        Ok(())
    }

    /// Never drawn, never shown: a yes waits for the question's first draw.
    #[tokio::test]
    async fn a_yes_before_the_question_was_drawn_is_not_taken() {
        let mut prompt = TrustPrompt::new(Path::new("/nowhere/agent"), Path::new("/nowhere")).await;
        assert_eq!(prompt.handle_key(key(KeyCode::Enter)), None);
        drawn(&prompt, 100, 30);
        assert_eq!(prompt.handle_key(key(KeyCode::Enter)), Some(true));
    }
}
