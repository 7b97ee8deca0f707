//! Prompt templates (Pi's): Markdown files that a prompt names as a command.
//! `$CODING_AGENT_DIR/prompts/review.md` makes `/review src/main.rs` send the
//! file's text with `$1` replaced by `src/main.rs`; a trusted project's
//! `.coding-agent/prompts/` adds its own (and wins on a name both have).
//!
//! A file may start with a front matter block whose `description:` line is
//! what `/help` and RPC `get_commands` show (else its first line):
//!
//! ```markdown
//! ---
//! description: Review a file
//! ---
//! Review $1 for bugs. Focus on: ${@:2}
//! ```
//!
//! Arguments are split at white space, with `"..."` and `'...'` keeping
//! spaces. `$1`, `$2`, ...: one argument (empty when missing); `$@` and
//! `$ARGUMENTS`: all, joined by spaces; `${@:N}`: from the N-th on;
//! `${@:N:L}`: L of them from the N-th.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::settings::project_config_dir;
use crate::support::front_matter;

/// Where a template (or a skill) was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TemplateLocation {
    /// The user's own (`$CODING_AGENT_DIR/prompts/`).
    User,
    /// The project's (`.coding-agent/prompts/`).
    Project,
    /// A path given by `--skill` or the `skills` setting.
    Path,
}

/// How a command's arguments reach its text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TemplateKind {
    /// A prompt template: `$1`, `$@` ... in its body are replaced.
    Prompt,
    /// A skill's `/skill:name`: its body is the skill's instructions, sent
    /// as they are, and the arguments follow after a blank line (Pi's).
    Skill,
}

/// One template: `/name` in a prompt sends `body`, its arguments put in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PromptTemplate {
    /// The command, without the slash: the file's name without `.md`.
    pub name: String,
    /// What it is for (front matter `description:`, else the first line).
    pub description: String,
    /// The text sent, before the arguments are put in.
    pub body: String,
    /// Where it was found.
    pub location: TemplateLocation,
    /// Its file.
    pub path: PathBuf,
    /// A template or a skill's command.
    pub kind: TemplateKind,
}

/// The template directories of a session in `cwd`: the user's, then the
/// project's when it is trusted. When it is not, the second value is the
/// notice saying its templates are left out (`None` when it has none).
pub fn dirs(
    agent_dir: &Path,
    cwd: &Path,
    project_trusted: bool,
) -> (Vec<(PathBuf, TemplateLocation)>, Option<String>) {
    let user = (agent_dir.join(PROMPTS_DIR), TemplateLocation::User);
    let Some(project) = project_config_dir(agent_dir, cwd).map(|dir| dir.join(PROMPTS_DIR)) else {
        return (vec![user], None);
    };
    if project_trusted {
        return (vec![user, (project, TemplateLocation::Project)], None);
    }
    let notice = project.is_dir().then(|| {
        format!(
            "the project's prompt templates in {} are not loaded: the project is not trusted (trust it with --trust)",
            project.display()
        )
    });
    (vec![user], notice)
}

/// The directory templates are in, under the agent's and a project's
/// configuration directory.
pub const PROMPTS_DIR: &str = "prompts";

/// Longest description taken from a template's first line, in characters.
const DESCRIPTION_CHARS: usize = 80;

/// The templates in `dirs`, each `*.md` file directly inside one, by name;
/// a later directory's template replaces an earlier one of the same name.
/// A directory that does not exist has none; a file that cannot be read is
/// left out and named in the returned warnings.
pub fn load(dirs: &[(PathBuf, TemplateLocation)]) -> (Vec<PromptTemplate>, Vec<String>) {
    let mut templates: Vec<PromptTemplate> = Vec::new();
    let mut warnings = Vec::new();
    for (dir, location) in dirs {
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        let mut paths: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|entry| entry.path())
            .filter(|path| path.extension().is_some_and(|ext| ext == "md") && path.is_file())
            .collect();
        paths.sort();
        for path in paths {
            match read_template(&path, *location) {
                Ok(template) => {
                    templates.retain(|old| old.name != template.name);
                    templates.push(template);
                }
                Err(error) => warnings.push(format!(
                    "prompt template {} is left out: {error}",
                    path.display()
                )),
            }
        }
    }
    templates.sort_by(|a, b| a.name.cmp(&b.name));
    (templates, warnings)
}

fn read_template(path: &Path, location: TemplateLocation) -> std::io::Result<PromptTemplate> {
    let text = std::fs::read_to_string(path)?;
    let front = front_matter::split(&text);
    let body = front.body;
    let description = front.get("description").map(str::to_owned);
    let description = description.unwrap_or_else(|| {
        let first = body.lines().find(|line| !line.trim().is_empty());
        first
            .unwrap_or_default()
            .trim()
            .chars()
            .take(DESCRIPTION_CHARS)
            .collect()
    });
    let name = path
        .file_stem()
        .map(|stem| stem.to_string_lossy().into_owned())
        .unwrap_or_default();
    Ok(PromptTemplate {
        name,
        description,
        body: body.to_owned(),
        location,
        path: path.to_path_buf(),
        kind: TemplateKind::Prompt,
    })
}

/// `text` with its template put in, when it starts with `/name` and a
/// template has that name; `None` otherwise (it is sent as it is).
pub fn expand(text: &str, templates: &[PromptTemplate]) -> Option<String> {
    let command = text.strip_prefix('/')?;
    let (name, rest) = command
        .split_once(char::is_whitespace)
        .unwrap_or((command, ""));
    let template = templates.iter().find(|template| template.name == name)?;
    Some(match template.kind {
        TemplateKind::Prompt => substitute(&template.body, &split_args(rest)),
        TemplateKind::Skill => match rest.trim() {
            "" => template.body.clone(),
            args => format!("{}\n\n{args}", template.body),
        },
    })
}

/// The arguments of a command: split at white space, with quotes keeping
/// spaces (the quotes themselves are dropped).
fn split_args(text: &str) -> Vec<String> {
    let mut args = Vec::new();
    let mut current = String::new();
    let mut quote = None;
    let mut started = false;
    for c in text.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => current.push(c),
            (None, '"' | '\'') => {
                quote = Some(c);
                started = true;
            }
            (None, c) if c.is_whitespace() => {
                if started {
                    args.push(std::mem::take(&mut current));
                    started = false;
                }
            }
            (None, c) => {
                current.push(c);
                started = true;
            }
        }
    }
    if started {
        args.push(current);
    }
    args
}

/// `body` with `$1`, `$@`, `$ARGUMENTS`, `${@:N}` and `${@:N:L}` put in.
fn substitute(body: &str, args: &[String]) -> String {
    let mut out = String::with_capacity(body.len());
    let mut rest = body;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let (replacement, used) = placeholder(after, args);
        match replacement {
            Some(text) => out.push_str(&text),
            None => out.push('$'),
        }
        rest = &after[used..];
    }
    out.push_str(rest);
    out
}

/// What the placeholder at the start of `text` (after its `$`) stands for,
/// and how many bytes of `text` it takes; `None` when it is no placeholder.
fn placeholder(text: &str, args: &[String]) -> (Option<String>, usize) {
    let from = |start: usize, len: Option<usize>| {
        let skip = start.saturating_sub(1);
        let take = len.unwrap_or(usize::MAX);
        args.iter()
            .skip(skip)
            .take(take)
            .cloned()
            .collect::<Vec<_>>()
            .join(" ")
    };
    if text.starts_with("ARGUMENTS") {
        return (Some(args.join(" ")), "ARGUMENTS".len());
    }
    if text.starts_with('@') {
        return (Some(args.join(" ")), 1);
    }
    if let Some(inner) = text.strip_prefix("{@:")
        && let Some(close) = inner.find('}')
    {
        let mut numbers = inner[..close].split(':').map(str::parse::<usize>);
        let parsed = match (numbers.next(), numbers.next(), numbers.next()) {
            (Some(Ok(start)), None, None) => Some(from(start, None)),
            (Some(Ok(start)), Some(Ok(len)), None) => Some(from(start, Some(len))),
            _ => None,
        };
        if parsed.is_some() {
            return (parsed, "{@:".len() + close + 1);
        }
    }
    let digits = text.chars().take_while(char::is_ascii_digit).count();
    match text[..digits].parse::<usize>() {
        Ok(n) if n > 0 => (Some(from(n, Some(1))), digits),
        _ => (None, 0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn template(name: &str, body: &str) -> PromptTemplate {
        PromptTemplate {
            name: name.into(),
            description: String::new(),
            body: body.into(),
            location: TemplateLocation::User,
            path: PathBuf::from(format!("/prompts/{name}.md")),
            kind: TemplateKind::Prompt,
        }
    }

    #[test]
    fn arguments_are_put_in_by_position_all_and_range() {
        let templates = [template(
            "component",
            "Make $1 with: $@ | rest: ${@:2} | one: ${@:2:1} | $ARGUMENTS | $9. Costs $5 each? No: $x",
        )];
        assert_eq!(
            expand(
                r#"/component Button "onClick handler" 'disabled support'"#,
                &templates
            )
            .unwrap(),
            "Make Button with: Button onClick handler disabled support | rest: onClick handler \
             disabled support | one: onClick handler | Button onClick handler disabled support | . \
             Costs  each? No: $x"
        );
    }

    #[test]
    fn only_a_known_name_at_the_start_expands() {
        let templates = [template("review", "Review $1.")];
        assert_eq!(expand("/review a.rs", &templates).unwrap(), "Review a.rs.");
        assert_eq!(expand("/review", &templates).unwrap(), "Review .");
        assert_eq!(expand("/reviewer a.rs", &templates), None);
        assert_eq!(expand("please /review a.rs", &templates), None);
        assert_eq!(expand("/other", &templates), None);
    }

    #[test]
    fn front_matter_gives_the_description_and_a_project_template_wins() {
        let root = tempfile::tempdir().unwrap();
        let user = root.path().join("user");
        let project = root.path().join("project");
        std::fs::create_dir_all(&user).unwrap();
        std::fs::create_dir_all(&project).unwrap();
        std::fs::write(
            user.join("review.md"),
            "---\ndescription: \"Review a file\"\n---\nReview $1.\n",
        )
        .unwrap();
        std::fs::write(
            user.join("plain.md"),
            "\nSummarise the repository.\nThen stop.\n",
        )
        .unwrap();
        std::fs::write(user.join("notes.txt"), "not a template").unwrap();
        std::fs::write(project.join("review.md"), "Review $1 the project's way.\n").unwrap();
        let (templates, warnings) = load(&[
            (user.clone(), TemplateLocation::User),
            (project.clone(), TemplateLocation::Project),
            (root.path().join("missing"), TemplateLocation::Project),
        ]);
        assert!(warnings.is_empty(), "{warnings:?}");
        let shown: Vec<(&str, &str, &str, TemplateLocation)> = templates
            .iter()
            .map(|t| {
                (
                    t.name.as_str(),
                    t.description.as_str(),
                    t.body.as_str(),
                    t.location,
                )
            })
            .collect();
        assert_eq!(
            shown,
            [
                (
                    "plain",
                    "Summarise the repository.",
                    "\nSummarise the repository.\nThen stop.\n",
                    TemplateLocation::User
                ),
                (
                    "review",
                    "Review $1 the project's way.",
                    "Review $1 the project's way.\n",
                    TemplateLocation::Project
                ),
            ]
        );
        let (user_only, _) = load(&[(user, TemplateLocation::User)]);
        assert_eq!(user_only[1].description, "Review a file");
        assert_eq!(user_only[1].body, "Review $1.\n");
    }
}
