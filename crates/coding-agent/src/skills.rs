//! Skills (the Agent Skills standard, as Pi, Claude Code and Codex load
//! them): a folder with a `SKILL.md` whose front matter names the skill and
//! says when to use it, beside whatever scripts and references it needs.
//!
//! The system prompt lists each skill's name, description and file; the
//! model reads the file with the `read` tool when a task matches, so only
//! the descriptions are always in the context. `/skill:NAME [ARGS]` sends a
//! skill's instructions as the prompt, for the user who wants one used now.
//!
//! Found in, first found winning a name: the paths given (`--skill`, the
//! `skills` setting; a `SKILL.md`, a Markdown file, or a folder of skills),
//! a trusted project's `.coding-agent/skills/` and the `.agents/skills/` of
//! its folder and those above it up to the repository's root, then the
//! user's `$CODING_AGENT_DIR/skills/` and `~/.agents/skills/`. In a folder of
//! skills, each subfolder holding a `SKILL.md` is one (its other files are
//! not looked into), and so is each Markdown file directly inside it.
//!
//! As in Pi, a skill without a description is left out with a warning, and a
//! name that breaks the standard's rules (1 to 64 of `a-z`, `0-9` and single
//! hyphens, the folder's name) is warned about and used.
//!
//! The folders are read through `ls`'s and `read`'s Operations
//! ([`SkillFiles`]): this machine's, or with `--remote` the remote host's,
//! where the model's `read` then finds the files the prompt names.

use std::path::{Path, PathBuf};

use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use crate::settings::{PROJECT_CONFIG_DIR, project_config_dir};
use crate::support::front_matter;
use crate::templates::{PromptTemplate, TemplateKind, TemplateLocation};
use crate::tools::ls::ops::{LocalLsOperations, LsOperations};
use crate::tools::read::ops::{LocalReadOperations, ReadOperations};

/// Where skill folders are read: the file system the model's tools see.
#[derive(Clone, Copy)]
pub struct SkillFiles<'a> {
    /// Lists folders and tells folders from files.
    pub ls: &'a dyn LsOperations,
    /// Reads the skill files.
    pub read: &'a dyn ReadOperations,
}

impl SkillFiles<'static> {
    /// This machine's files.
    pub fn local() -> Self {
        SkillFiles {
            ls: &LocalLsOperations,
            read: &LocalReadOperations,
        }
    }
}

impl SkillFiles<'_> {
    /// Whether `path` is a folder (following links).
    async fn is_dir(&self, path: &Path) -> bool {
        self.ls.stat(path).await.is_ok_and(|stat| stat.is_directory)
    }

    /// Whether `path` is something other than a folder.
    async fn is_file(&self, path: &Path) -> bool {
        self.ls
            .stat(path)
            .await
            .is_ok_and(|stat| !stat.is_directory)
    }
}

/// One skill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skill {
    /// Its name (front matter `name:`, else its folder's or file's name).
    pub name: String,
    /// When to use it: what the model decides on.
    pub description: String,
    /// Its `SKILL.md` (or Markdown file).
    pub path: PathBuf,
    /// Where it was found.
    pub location: TemplateLocation,
    /// Listed for the model; `false` (`disable-model-invocation: true`)
    /// when only `/skill:NAME` uses it.
    pub model_invocable: bool,
    /// The instructions: the file after its front matter.
    pub instructions: String,
}

/// The folder skills are kept in, under the agent's and a project's
/// configuration folder.
pub const SKILLS_DIR: &str = "skills";

/// The folder other agents share skills in (`.agents/skills`).
const SHARED_DIR: &str = ".agents";

/// Longest description the standard allows, in characters.
const MAX_DESCRIPTION: usize = 1024;

/// Folders of skills to look at deeper than this are left alone.
const MAX_DEPTH: usize = 4;

/// The skill folders of a session in `cwd`, the first found winning a name:
/// the project's when it is trusted, then the user's (`agent_dir`'s, when
/// the files are this machine's; `home`: the user's home folder, for
/// `~/.agents/skills`). When the project is not trusted, the second value
/// is the notice saying its skills are left out (`None` when it has none).
pub async fn dirs(
    files: SkillFiles<'_>,
    agent_dir: Option<&Path>,
    home: Option<&Path>,
    cwd: &Path,
    project_trusted: bool,
) -> (Vec<(PathBuf, TemplateLocation)>, Option<String>) {
    let user = user_dirs(agent_dir, home);
    let project = project_dirs(files, agent_dir, home, cwd).await;
    if project_trusted {
        let project = project
            .into_iter()
            .map(|dir| (dir, TemplateLocation::Project));
        return (project.chain(user).collect(), None);
    }
    let mut notice = None;
    for dir in &project {
        if files.is_dir(dir).await {
            notice = Some(format!(
                "the project's skills in {} are not loaded: the project is not trusted (trust it with --trust)",
                dir.display()
            ));
            break;
        }
    }
    (user, notice)
}

/// The user's own skill folders: `agent_dir`'s and `~/.agents/skills`.
fn user_dirs(agent_dir: Option<&Path>, home: Option<&Path>) -> Vec<(PathBuf, TemplateLocation)> {
    [
        agent_dir.map(|dir| dir.join(SKILLS_DIR)),
        home.map(|home| home.join(SHARED_DIR).join(SKILLS_DIR)),
    ]
    .into_iter()
    .flatten()
    .map(|dir| (dir, TemplateLocation::User))
    .collect()
}

/// The project's skill folders, whether they exist or not: its
/// configuration folder's, then the `.agents/skills` of `cwd` and of each
/// folder above it up to the repository's root. What trusting the project
/// loads, so the trust question names their skills too.
pub async fn project_dirs(
    files: SkillFiles<'_>,
    agent_dir: Option<&Path>,
    home: Option<&Path>,
    cwd: &Path,
) -> Vec<PathBuf> {
    // This machine's agent directory is no project's (started in home).
    let own = match agent_dir {
        Some(agent_dir) => project_config_dir(agent_dir, cwd),
        None => Some(cwd.join(PROJECT_CONFIG_DIR)),
    };
    let mut project: Vec<PathBuf> = own.map(|dir| dir.join(SKILLS_DIR)).into_iter().collect();
    for dir in cwd.ancestors() {
        project.push(dir.join(SHARED_DIR).join(SKILLS_DIR));
        if files.ls.exists(&dir.join(".git")).await {
            break;
        }
    }
    // A walk from a folder under home (not in a repository) reaches home:
    // its `~/.agents/skills` is the user's own, not the project's.
    let user = user_dirs(agent_dir, home);
    project.retain(|dir| !user.iter().any(|(own, _)| own == dir));
    project
}

/// The skills of `given` (paths named by the user) and of `dirs`, in that
/// order, the first of a name winning; with the warnings to show about
/// those left out and those that break the standard's rules.
pub async fn load(
    files: SkillFiles<'_>,
    given: &[PathBuf],
    dirs: &[(PathBuf, TemplateLocation)],
) -> (Vec<Skill>, Vec<String>) {
    let mut found = Found {
        files,
        skills: Vec::new(),
        warnings: Vec::new(),
    };
    for path in given {
        let skill_file = path.join("SKILL.md");
        if files.is_file(&skill_file).await {
            found.file(&skill_file, TemplateLocation::Path).await;
        } else if files.is_dir(path).await {
            found.folder(path.clone(), TemplateLocation::Path, 0).await;
        } else if files.is_file(path).await {
            found.file(path, TemplateLocation::Path).await;
        } else {
            found
                .warnings
                .push(format!("skill {}: no such file or folder", path.display()));
        }
    }
    for (dir, location) in dirs {
        found.folder(dir.clone(), *location, 0).await;
    }
    let Found {
        mut skills,
        warnings,
        ..
    } = found;
    skills.sort_by(|a, b| a.name.cmp(&b.name));
    (skills, warnings)
}

struct Found<'a> {
    files: SkillFiles<'a>,
    skills: Vec<Skill>,
    warnings: Vec<String>,
}

impl Found<'_> {
    /// The skills in the folder `dir`: its subfolders with a `SKILL.md`, and
    /// at the top, its Markdown files.
    fn folder(
        &mut self,
        dir: PathBuf,
        location: TemplateLocation,
        depth: usize,
    ) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let skill_file = dir.join("SKILL.md");
            if depth > 0 && self.files.is_file(&skill_file).await {
                self.file(&skill_file, location).await;
                return;
            }
            let Ok(names) = self.files.ls.read_dir(&dir).await else {
                return;
            };
            let mut paths: Vec<PathBuf> = names.iter().map(|name| dir.join(name)).collect();
            paths.sort();
            for path in paths {
                let hidden = path
                    .file_name()
                    .is_some_and(|name| name.to_string_lossy().starts_with('.'));
                if hidden || path.file_name().is_some_and(|name| name == "node_modules") {
                    continue;
                }
                if self.files.is_dir(&path).await {
                    if depth < MAX_DEPTH {
                        self.folder(path, location, depth + 1).await;
                    }
                } else if depth == 0 && path.extension().is_some_and(|ext| ext == "md") {
                    self.file(&path, location).await;
                }
            }
        })
    }

    /// The skill in the file `path`, unless it has no description or its
    /// name is taken.
    async fn file(&mut self, path: &Path, location: TemplateLocation) {
        let shown = path.display();
        let read = self
            .files
            .read
            .read_all(path, &CancellationToken::new())
            .await;
        let text = match read.map(String::from_utf8) {
            Ok(Ok(text)) => text,
            Ok(Err(_)) => {
                self.warnings
                    .push(format!("skill {shown} is left out: it is not UTF-8 text"));
                return;
            }
            Err(error) => {
                self.warnings
                    .push(format!("skill {shown} is left out: {error}"));
                return;
            }
        };
        let front = front_matter::split(&text);
        let Some(description) = front.get("description").filter(|d| !d.trim().is_empty()) else {
            self.warnings.push(format!(
                "skill {shown} is left out: its front matter has no description"
            ));
            return;
        };
        let folder = match path.file_name().is_some_and(|name| name == "SKILL.md") {
            true => path.parent().and_then(Path::file_name),
            false => path.file_stem(),
        }
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
        let name = front.get("name").unwrap_or(&folder).to_owned();
        if let Some(problem) = name_problem(&name, &folder) {
            self.warnings.push(format!("skill {shown}: {problem}"));
        }
        if description.chars().count() > MAX_DESCRIPTION {
            self.warnings.push(format!(
                "skill {shown}: its description is longer than {MAX_DESCRIPTION} characters"
            ));
        }
        if let Some(first) = self.skills.iter().find(|skill| skill.name == name) {
            self.warnings.push(format!(
                "skill {shown} is left out: {} has the name {name} already",
                first.path.display()
            ));
            return;
        }
        self.skills.push(Skill {
            name,
            description: description.trim().to_owned(),
            path: path.to_path_buf(),
            location,
            model_invocable: !front.is_true("disable-model-invocation"),
            instructions: front.body.trim().to_owned(),
        });
    }
}

/// What is wrong with a skill's name by the standard, if anything.
fn name_problem(name: &str, folder: &str) -> Option<String> {
    let allowed = name
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    if name.is_empty() || name.len() > 64 {
        Some(format!("the name {name:?} is not 1 to 64 characters long"))
    } else if !allowed || name.starts_with('-') || name.ends_with('-') || name.contains("--") {
        Some(format!(
            "the name {name} is not lowercase letters, digits and single hyphens"
        ))
    } else if name != folder {
        Some(format!(
            "the name {name} is not its folder's name ({folder})"
        ))
    } else {
        None
    }
}

impl Skill {
    /// The folder its relative paths start from.
    pub fn base_dir(&self) -> &Path {
        self.path.parent().unwrap_or(Path::new("/"))
    }

    /// Its `/skill:NAME` command: the instructions, marked as the skill's.
    pub fn command(&self) -> PromptTemplate {
        let body = format!(
            "<skill name=\"{}\" location=\"{}\">\nReferences are relative to {}.\n\n{}\n</skill>",
            self.name,
            self.path.display(),
            self.base_dir().display(),
            self.instructions
        );
        PromptTemplate {
            name: format!("skill:{}", self.name),
            description: self.description.clone(),
            body,
            location: self.location,
            path: self.path.clone(),
            kind: TemplateKind::Skill,
        }
    }
}

/// The skill's name and the arguments of a prompt [`Skill::command`]
/// wrote, so the transcript can show the command instead of the whole
/// instructions; `None` for any other text.
pub fn parse_invocation(text: &str) -> Option<(&str, &str)> {
    let rest = text.strip_prefix("<skill name=\"")?;
    let (name, rest) = rest.split_once('"')?;
    rest.strip_prefix(" location=\"")?;
    let at = rest.rfind("\n</skill>")?;
    let args = rest[at + "\n</skill>".len()..].strip_prefix("\n\n");
    let ended = rest.len() == at + "\n</skill>".len();
    (ended || args.is_some()).then_some((name, args.unwrap_or_default()))
}

/// What the system prompt says of `skills` (Pi's wording, in the XML of the
/// standard), empty when none is for the model. Listed only when the `read`
/// tool is there to load them.
pub fn prompt_section(skills: &[Skill]) -> String {
    let listed: Vec<&Skill> = skills.iter().filter(|s| s.model_invocable).collect();
    if listed.is_empty() {
        return String::new();
    }
    let mut text = String::from(
        "\n\nThe following skills provide specialized instructions for specific tasks.\n\
         Use the read tool to load a skill's file when the task matches its description.\n\
         When a skill file references a relative path, resolve it against the skill directory (parent of SKILL.md / dirname of the path) and use that absolute path in tool commands.\n\n\
         <available_skills>",
    );
    for skill in listed {
        text.push_str(&format!(
            "\n  <skill>\n    <name>{}</name>\n    <description>{}</description>\n    <location>{}</location>\n  </skill>",
            escape_xml(&skill.name),
            escape_xml(&skill.description),
            escape_xml(&skill.path.display().to_string()),
        ));
    }
    text.push_str("\n</available_skills>");
    text
}

fn escape_xml(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&apos;")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    /// Writes each `(path below dir, text)`.
    fn write_all(dir: &Path, files: &[(&str, &str)]) {
        for (path, text) in files {
            write(&dir.join(path), text);
        }
    }

    #[tokio::test]
    async fn folders_with_a_skill_md_and_top_level_markdown_files_are_skills() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("skills");
        write_all(
            &dir,
            &[
                (
                    "pdf-tools/SKILL.md",
                    "---\nname: pdf-tools\ndescription: Fill PDF forms & more.\n---\n# PDF\nRun ./fill.sh\n",
                ),
                // Not a skill: below a skill's own folder.
                (
                    "pdf-tools/references/SKILL.md",
                    "---\ndescription: inner\n---\n",
                ),
                (
                    "group/deploy/SKILL.md",
                    "---\ndescription: Deploy.\ndisable-model-invocation: true\n---\nSteps\n",
                ),
                ("notes.md", "---\ndescription: Notes.\n---\nN\n"),
                ("plain.md", "no front matter\n"),
            ],
        );
        let (skills, warnings) = load(
            SkillFiles::local(),
            &[],
            &[(dir.clone(), TemplateLocation::User)],
        )
        .await;
        let names: Vec<&str> = skills.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["deploy", "notes", "pdf-tools"]);
        assert_eq!(skills[2].instructions, "# PDF\nRun ./fill.sh");
        assert!(!skills[0].model_invocable);
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(warnings[0].contains("plain.md is left out: its front matter has no description"));

        let section = prompt_section(&skills);
        assert!(section.contains(
            "<name>pdf-tools</name>\n    <description>Fill PDF forms &amp; more.</description>"
        ));
        assert!(
            !section.contains("deploy"),
            "hidden from the model: {section}"
        );
        let command = skills[2].command();
        assert_eq!(command.name, "skill:pdf-tools");
        let expanded =
            crate::templates::expand("/skill:pdf-tools form.pdf $1", &[command]).unwrap();
        let skill_dir = dir.join("pdf-tools");
        assert_eq!(
            expanded,
            format!(
                "<skill name=\"pdf-tools\" location=\"{}\">\nReferences are relative to {}.\n\n# PDF\nRun ./fill.sh\n</skill>\n\nform.pdf $1",
                skill_dir.join("SKILL.md").display(),
                skill_dir.display()
            )
        );
    }

    #[tokio::test]
    async fn the_first_of_a_name_wins_and_broken_names_are_warned_about_but_used() {
        let root = tempfile::tempdir().unwrap();
        let given = root.path().join("mine/review/SKILL.md");
        write(&given, "---\nname: review\ndescription: Mine.\n---\n");
        let dir = root.path().join("skills");
        write_all(
            &dir,
            &[
                ("review/SKILL.md", "---\ndescription: Theirs.\n---\n"),
                ("Bad_Name/SKILL.md", "---\ndescription: B.\n---\n"),
                (
                    "other/SKILL.md",
                    "---\nname: renamed\ndescription: R.\n---\n",
                ),
            ],
        );
        let missing = root.path().join("nowhere");
        let (skills, warnings) = load(
            SkillFiles::local(),
            &[given.clone(), missing],
            &[(dir.clone(), TemplateLocation::Project)],
        )
        .await;
        let found: Vec<(&str, &str)> = skills
            .iter()
            .map(|s| (s.name.as_str(), s.description.as_str()))
            .collect();
        assert_eq!(
            found,
            [("Bad_Name", "B."), ("renamed", "R."), ("review", "Mine.")]
        );
        assert_eq!(skills[2].location, TemplateLocation::Path);
        let warned = warnings.join("\n");
        for part in [
            "nowhere: no such file or folder",
            "the name Bad_Name is not lowercase letters, digits and single hyphens",
            "the name renamed is not its folder's name (other)",
            "has the name review already",
        ] {
            assert!(warned.contains(part), "{part}:\n{warned}");
        }
    }

    #[tokio::test]
    async fn an_untrusted_project_s_skills_are_named_and_left_out() {
        let root = tempfile::tempdir().unwrap();
        let cwd = root.path().join("repo/sub");
        std::fs::create_dir_all(root.path().join("repo/.git")).unwrap();
        std::fs::create_dir_all(cwd.join(".agents/skills")).unwrap();
        let agent = root.path().join("agent");
        let (trusted, _) = dirs(SkillFiles::local(), Some(&agent), None, &cwd, true).await;
        let trusted: Vec<PathBuf> = trusted.into_iter().map(|(dir, _)| dir).collect();
        assert_eq!(
            trusted,
            [
                cwd.join(".coding-agent/skills"),
                cwd.join(".agents/skills"),
                root.path().join("repo/.agents/skills"),
                agent.join("skills"),
            ]
        );
        let (untrusted, notice) = dirs(SkillFiles::local(), Some(&agent), None, &cwd, false).await;
        assert_eq!(untrusted, [(agent.join("skills"), TemplateLocation::User)]);
        assert!(
            notice
                .unwrap()
                .contains("are not loaded: the project is not trusted")
        );
    }

    /// From a folder under home that is in no repository, the walk up
    /// reaches home: its `.agents/skills` is the user's, loaded as such,
    /// and no notice calls it the project's.
    #[tokio::test]
    async fn the_users_own_skills_are_not_taken_for_the_projects() {
        let root = tempfile::tempdir().unwrap();
        let home = root.path().join("home");
        let cwd = home.join("work");
        write(
            &home.join(".agents/skills/mine/SKILL.md"),
            "---\ndescription: M.\n---\n",
        );
        std::fs::create_dir_all(&cwd).unwrap();
        let (found, notice) = dirs(SkillFiles::local(), None, Some(&home), &cwd, false).await;
        assert_eq!(
            found,
            [(home.join(".agents/skills"), TemplateLocation::User)]
        );
        assert_eq!(notice, None);
    }
}
