//! Where the hooks come from: the `"hooks"` key of the global
//! `settings.json` and of the project's `.coding-agent/settings.json`, the
//! project's only once the project is trusted (a cloned repository must not
//! run its commands on the user's machine just by being opened).
//! `"disableAllHooks": true` in either file turns every hook off.

use std::path::Path;

use serde::Deserialize;
use serde_json::Value;

use super::config::{HookConfig, HooksSettings};
use crate::guard::policy::Places;
use crate::settings::{SETTINGS_FILE, SettingsError, project_settings_file, read_part, take_keys};

/// The part of a settings file hooks read.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct SettingsFile {
    #[serde(default)]
    hooks: HooksSettings,
    #[serde(default)]
    disable_all_hooks: bool,
}

/// The hooks of a session and what the user should be told about them.
#[derive(Debug, Clone, Default)]
pub struct LoadedHooks {
    /// The hooks to run.
    pub config: HookConfig,
    /// Entries skipped, project hooks not run for lack of trust.
    pub notices: Vec<String>,
}

/// The hooks of `agent_dir`'s settings, then of `cwd`'s project settings
/// when `project_trusted`; `places` resolve the paths of their `if` rules
/// (the permission policy's: with `--remote`, the remote host's). `Err`
/// names the settings file that cannot be read or parsed, or whose hooks
/// cannot be compiled.
pub fn load(
    agent_dir: &Path,
    cwd: &Path,
    project_trusted: bool,
    places: &Places,
) -> Result<LoadedHooks, SettingsError> {
    let global_path = agent_dir.join(SETTINGS_FILE);
    let global = read_part::<SettingsFile>(&global_path)?;
    let project_path = project_settings_file(agent_dir, cwd);
    let mut untrusted = Vec::new();
    let project = match &project_path {
        Some(path) if project_trusted => read_part::<SettingsFile>(path)?,
        // Neither its hooks nor its `disableAllHooks` (an untrusted project
        // cannot turn the user's own hooks off either) are used, so only
        // whether it has them is read, not their types: `{"hooks": 5}` in
        // a cloned repository stopped the agent over hooks it would never
        // have run. Both are said: a `disableAllHooks` ignored unsaid left
        // the user wondering why their hooks still ran.
        Some(path) => {
            let mut json: Value = read_part(path)?;
            if !take_keys(&mut json, &["hooks"]).is_empty() {
                untrusted.push(untrusted_notice(path));
            }
            if json.get("disableAllHooks") == Some(&Value::Bool(true)) {
                untrusted.push(format!(
                    "hooks: {} is not trusted, so its \"disableAllHooks\": true is ignored and your own hooks run; trust the project with --trust",
                    path.display()
                ));
            }
            SettingsFile::default()
        }
        None => SettingsFile::default(),
    };
    if global.disable_all_hooks || project.disable_all_hooks {
        return Ok(LoadedHooks::default());
    }
    let compile = |settings: &HooksSettings, path: &Path| {
        settings.compile(places).map_err(|error| SettingsError {
            path: path.to_path_buf(),
            reason: error.to_string(),
        })
    };
    let (mut config, mut notices) = compile(&global.hooks, &global_path)?;
    if let Some(path) = project_path.filter(|_| project_trusted) {
        let (project_config, warnings) = compile(&project.hooks, &path)?;
        config.extend(project_config);
        notices.extend(warnings);
    }
    notices.extend(untrusted);
    Ok(LoadedHooks { config, notices })
}

/// What the user reads when a project's hooks do not run.
pub fn untrusted_notice(project_settings: &Path) -> String {
    format!(
        "hooks: the hooks in {} do not run: the project is not trusted",
        project_settings.display()
    )
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::path::PathBuf;

    use serde_json::json;

    use super::*;
    use crate::hooks::HookEvent;
    use crate::settings::PROJECT_CONFIG_DIR;

    struct Dirs {
        agent: tempfile::TempDir,
        project: tempfile::TempDir,
    }

    impl Dirs {
        fn new(global: serde_json::Value, project: serde_json::Value) -> Self {
            let dirs = Dirs {
                agent: tempfile::tempdir().unwrap(),
                project: tempfile::tempdir().unwrap(),
            };
            std::fs::write(dirs.agent.path().join(SETTINGS_FILE), global.to_string()).unwrap();
            let config = dirs.project.path().join(PROJECT_CONFIG_DIR);
            std::fs::create_dir(&config).unwrap();
            std::fs::write(config.join(SETTINGS_FILE), project.to_string()).unwrap();
            dirs
        }

        fn load(&self, trusted: bool) -> LoadedHooks {
            load(
                self.agent.path(),
                self.project.path(),
                trusted,
                &self.places(),
            )
            .unwrap()
        }

        fn places(&self) -> Places {
            Places::for_cwd(self.project.path())
        }

        fn project_settings(&self) -> PathBuf {
            self.project
                .path()
                .join(PROJECT_CONFIG_DIR)
                .join(SETTINGS_FILE)
        }
    }

    fn stop_hook(command: &str) -> serde_json::Value {
        json!({"hooks": {"Stop": [{"hooks": [{"type": "command", "command": command}]}]}})
    }

    fn stop_commands(loaded: &LoadedHooks) -> Vec<String> {
        let handlers = loaded.config.handlers(HookEvent::Stop, None, None);
        handlers.iter().map(|h| h.name().to_owned()).collect()
    }

    #[test]
    fn a_trusted_projects_hooks_run_after_the_global_ones() {
        let dirs = Dirs::new(stop_hook("global.sh"), stop_hook("project.sh"));
        let loaded = dirs.load(true);
        assert_eq!(stop_commands(&loaded), ["global.sh", "project.sh"]);
        assert!(loaded.notices.is_empty());
    }

    #[test]
    fn an_untrusted_projects_hooks_do_not_run_and_the_user_is_told() {
        let dirs = Dirs::new(stop_hook("global.sh"), stop_hook("project.sh"));
        let loaded = dirs.load(false);
        assert_eq!(stop_commands(&loaded), ["global.sh"]);
        assert_eq!(loaded.notices, [untrusted_notice(&dirs.project_settings())]);
    }

    /// An untrusted project's hooks never run, so what they hold is not
    /// checked: `{"hooks": 5}` in a cloned repository stopped the agent
    /// with a type error in hooks it would not have run.
    #[test]
    fn an_untrusted_projects_mistyped_hooks_are_only_a_notice() {
        let project = json!({"hooks": 5, "disableAllHooks": "yes"});
        let dirs = Dirs::new(stop_hook("global.sh"), project);
        let loaded = dirs.load(false);
        assert_eq!(stop_commands(&loaded), ["global.sh"]);
        assert_eq!(loaded.notices, [untrusted_notice(&dirs.project_settings())]);

        // Once trusted they would run: then the file is checked.
        let error = load(dirs.agent.path(), dirs.project.path(), true, &dirs.places()).unwrap_err();
        assert_eq!(error.path, dirs.project_settings());
    }

    /// `"hooks": {}` (or `null`) is no hooks: nothing to tell.
    #[test]
    fn an_untrusted_project_without_hooks_is_not_mentioned() {
        for hooks in [json!({}), json!(null)] {
            let dirs = Dirs::new(stop_hook("global.sh"), json!({"hooks": hooks}));
            assert!(dirs.load(false).notices.is_empty(), "{hooks}");
        }
    }

    #[test]
    fn disable_all_hooks_in_either_file_turns_every_hook_off() {
        let mut project = stop_hook("project.sh");
        project["disableAllHooks"] = json!(true);
        let dirs = Dirs::new(stop_hook("global.sh"), project);
        assert!(dirs.load(true).config.is_empty());
    }

    /// An untrusted project's `"disableAllHooks": true` was ignored
    /// unsaid: the user, who had set it there, is told why their hooks
    /// still run.
    #[test]
    fn an_untrusted_project_cannot_disable_the_users_hooks_and_the_user_is_told() {
        let disabled = |dirs: &Dirs| {
            format!(
                "hooks: {} is not trusted, so its \"disableAllHooks\": true is ignored and your own hooks run; trust the project with --trust",
                dirs.project_settings().display()
            )
        };
        let mut project = stop_hook("project.sh");
        project["disableAllHooks"] = json!(true);
        let dirs = Dirs::new(stop_hook("global.sh"), project);
        let loaded = dirs.load(false);
        assert_eq!(stop_commands(&loaded), ["global.sh"]);
        assert_eq!(
            loaded.notices,
            [untrusted_notice(&dirs.project_settings()), disabled(&dirs)]
        );
        let dirs = Dirs::new(stop_hook("global.sh"), json!({"disableAllHooks": true}));
        assert_eq!(dirs.load(false).notices, [disabled(&dirs)]);
    }

    #[test]
    fn a_bad_matcher_names_the_file_it_is_in() {
        let dirs = Dirs::new(
            json!({}),
            json!({"hooks": {"PreToolUse": [{"matcher": "(", "hooks": [{"type": "command", "command": "x"}]}]}}),
        );
        let error = load(dirs.agent.path(), dirs.project.path(), true, &dirs.places()).unwrap_err();
        assert_eq!(error.path, dirs.project_settings());
    }

    #[test]
    fn a_broken_settings_file_names_itself() {
        let dirs = Dirs::new(json!({"hooks": {"Stop": "not a list"}}), json!({}));
        let error = load(
            dirs.agent.path(),
            dirs.project.path(),
            false,
            &dirs.places(),
        )
        .unwrap_err();
        assert_eq!(error.path, dirs.agent.path().join(SETTINGS_FILE));
        assert!(error.reason.starts_with("invalid type: string"), "{error}");
    }
}
