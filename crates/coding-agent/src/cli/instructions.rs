//! What the model is told besides the conversation, from the files that say
//! it: the system prompt (the base or custom text, appended text, context
//! files, skills) and the `/name` commands (prompt templates and skills).
//! Built when the run starts, and again by the interactive `/reload` after
//! the user edited them.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use coding_agent::ToolDefinition;
use coding_agent::app::Instructions;
use coding_agent::prompt::{
    PromptInputs, build_system_prompt, discover_prompt_file, load_context_files,
    resolve_prompt_input,
};
use coding_agent::remote::RemoteOperations;
use coding_agent::remote::context::load_remote_context_files;
use coding_agent::settings::{Settings, project_config_dir};
use coding_agent::skills::{self, Skill, SkillFiles};
use coding_agent::templates::{self, PromptTemplate};

use super::RunArgs;

/// Where a session's instructions come from: the flags, settings and
/// places that do not change while it runs.
#[derive(Clone)]
pub(super) struct InstructionSources {
    /// `--system-prompt`: replaces the base text.
    system_prompt: Option<String>,
    /// `--append-system-prompt`.
    append_system_prompt: Vec<String>,
    no_context_files: bool,
    no_prompt_templates: bool,
    /// `--skill` paths, then the `skills` setting's (absolute).
    given_skills: Vec<PathBuf>,
    no_skills: bool,
    agent_dir: PathBuf,
    cwd: PathBuf,
    tools: Vec<Arc<dyn ToolDefinition>>,
    /// With `--remote`: the context files and skills are the remote host's,
    /// since the tools there cannot read local files.
    remote: Option<RemoteOperations>,
    project_trusted: bool,
}

impl InstructionSources {
    pub(super) fn new(
        args: &RunArgs,
        settings: &Settings,
        agent_dir: &Path,
        cwd: &Path,
        tools: &[Arc<dyn ToolDefinition>],
        remote: Option<RemoteOperations>,
        project_trusted: bool,
    ) -> Self {
        let mut given_skills: Vec<PathBuf> = args
            .skills
            .iter()
            .map(|path| super::input::absolute(path, cwd))
            .collect();
        if !args.no_skills {
            // The global file's own folder is what its relative paths mean
            // (only the global file may name skills), as Pi reads them.
            let listed = settings.skills.iter().flatten();
            given_skills.extend(listed.map(|path| super::input::absolute(path, agent_dir)));
        }
        InstructionSources {
            system_prompt: args.system_prompt.clone(),
            append_system_prompt: args.append_system_prompt.clone(),
            no_context_files: args.no_context_files,
            no_prompt_templates: args.no_prompt_templates,
            given_skills,
            no_skills: args.no_skills,
            agent_dir: agent_dir.to_path_buf(),
            cwd: cwd.to_path_buf(),
            tools: tools.to_vec(),
            remote,
            project_trusted,
        }
    }

    /// The instructions as the files say them now; what is left out is
    /// logged (a notice in the interactive UI).
    pub(super) async fn load(&self) -> Instructions {
        let context_files = match &self.remote {
            _ if self.no_context_files => Vec::new(),
            Some(ops) => load_remote_context_files(&self.agent_dir, ops, ops.host().cwd()).await,
            None => load_context_files(&self.agent_dir, &self.cwd).await,
        };
        let skills = self.skills().await;
        let mut commands = match self.no_prompt_templates {
            true => Vec::new(),
            false => self.prompt_templates(),
        };
        commands.extend(skills.iter().map(Skill::command));
        let mut inputs = self.prompt_inputs().await;
        let counts = (context_files.len(), skills.len());
        inputs.context_files = context_files;
        inputs.skills = skills;
        if let Some(ops) = &self.remote {
            inputs.cwd = ops.host().cwd().to_path_buf();
            inputs.remote_host = Some(ops.host().authority());
        }
        Instructions {
            system_prompt: build_system_prompt(&inputs),
            prompt_templates: commands,
            context_files: counts.0,
            skills: counts.1,
        }
    }

    /// What the system prompt is built from besides the context files and
    /// skills: `--system-prompt` (or a discovered `SYSTEM.md`) or the
    /// default text, `--append-system-prompt` (or `APPEND_SYSTEM.md`),
    /// today's date and the cwd. An untrusted project's `SYSTEM.md` and
    /// `APPEND_SYSTEM.md` are not read (they would replace the prompt and its
    /// guidelines), as its templates and skills are not.
    async fn prompt_inputs(&self) -> PromptInputs {
        let discovered = |name: &str| {
            let project = project_config_dir(&self.agent_dir, &self.cwd).map(|dir| dir.join(name));
            if let (false, Some(project)) = (self.project_trusted, project)
                && project.is_file()
            {
                tracing::warn!(
                    "the project's {} is not loaded: the project is not trusted (trust it with --trust)",
                    project.display()
                );
            }
            let trusted = self.project_trusted.then_some(self.cwd.as_path());
            discover_prompt_file(name, &self.agent_dir, trusted)
                .map(|path| path.to_string_lossy().into_owned())
        };
        let custom_prompt = match self
            .system_prompt
            .clone()
            .or_else(|| discovered("SYSTEM.md"))
        {
            Some(input) => Some(resolve_prompt_input(&input).await),
            None => None,
        };
        let append_inputs = if self.append_system_prompt.is_empty() {
            discovered("APPEND_SYSTEM.md").into_iter().collect()
        } else {
            self.append_system_prompt.clone()
        };
        let mut append = Vec::with_capacity(append_inputs.len());
        for input in &append_inputs {
            append.push(resolve_prompt_input(input).await);
        }
        PromptInputs {
            custom_prompt,
            append,
            tools: self.tools.clone(),
            date: chrono::Local::now().format("%Y-%m-%d").to_string(),
            cwd: self.cwd.clone(),
            ..PromptInputs::default()
        }
    }

    /// The prompt templates (`$CODING_AGENT_DIR/prompts`, and the
    /// project's when it is trusted).
    fn prompt_templates(&self) -> Vec<PromptTemplate> {
        let (dirs, untrusted) = templates::dirs(&self.agent_dir, &self.cwd, self.project_trusted);
        let (loaded, warnings) = templates::load(&dirs);
        for warning in untrusted.into_iter().chain(warnings) {
            tracing::warn!("{warning}");
        }
        loaded
    }

    /// The skills the model's tools can read: this machine's (`--skill`
    /// paths, the `skills` setting, the project's and the user's folders,
    /// [`skills::dirs`]), or with `--remote` the remote host's (the
    /// project's folders there and the remote user's `~/.agents/skills`;
    /// paths on this machine are left out, with a notice).
    async fn skills(&self) -> Vec<Skill> {
        let (files, given, agent_dir, cwd) = match &self.remote {
            Some(ops) => {
                if !self.given_skills.is_empty() {
                    tracing::warn!(
                        "--skill paths and the skills setting name this machine's files; with --remote only the remote host's skills are loaded"
                    );
                }
                let files = SkillFiles { ls: ops, read: ops };
                (files, &[][..], None, ops.host().cwd())
            }
            None => {
                let agent_dir = Some(self.agent_dir.as_path());
                let cwd = self.cwd.as_path();
                (SkillFiles::local(), &self.given_skills[..], agent_dir, cwd)
            }
        };
        // `~` of the machine the files are on.
        let home = files.ls.home_dir();
        let (dirs, untrusted) = match self.no_skills {
            true => (Vec::new(), None),
            false => {
                skills::dirs(files, agent_dir, home.as_deref(), cwd, self.project_trusted).await
            }
        };
        let (loaded, warnings) = skills::load(files, given, &dirs).await;
        for warning in untrusted.into_iter().chain(warnings) {
            tracing::warn!("{warning}");
        }
        loaded
    }
}
