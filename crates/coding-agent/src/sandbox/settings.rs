//! The `sandbox` key of `settings.json`, and how a project's file may change
//! it: only to tighten it, so a cloned repository cannot switch the sandbox
//! off, open the network, or make more directories writable.

use std::path::PathBuf;

use serde::Deserialize;

use super::policy::SandboxMode;
use super::{AskedBy, SandboxRequest};

/// `"sandbox": {"mode": "workspace-write", "allowNetwork": false, "writableRoots": [...]}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SandboxSettings {
    /// `off`, `read-only` or `workspace-write`; unset = the default.
    pub mode: Option<SandboxMode>,
    /// Let sandboxed commands use TCP.
    pub allow_network: Option<bool>,
    /// Directories writable besides the workspace root and temp directories.
    #[serde(default)]
    pub writable_roots: Vec<PathBuf>,
    /// The file these settings were read from when it is a project's
    /// (`Settings::load` sets it); once merged, the project file whose
    /// stricter `mode` was taken. `None`: the user's own.
    #[serde(skip)]
    pub project_file: Option<PathBuf>,
}

impl SandboxSettings {
    /// Applies a project's settings on top of these (the global ones): a
    /// stricter mode and `allowNetwork: false` are taken, anything that
    /// would loosen the sandbox is ignored.
    pub fn tighten_with(&mut self, project: SandboxSettings) {
        if let Some(mode) = project.mode {
            let current = self.mode.unwrap_or_default();
            if mode.strictness() > current.strictness() {
                self.mode = Some(mode);
                self.project_file = project.project_file;
            }
        }
        if project.allow_network == Some(false) {
            self.allow_network = Some(false);
        }
    }

    /// The request these settings make, with the command line's
    /// `--sandbox` (which wins) and `--allow-network` (which adds).
    pub fn request(
        &self,
        mode_flag: Option<SandboxMode>,
        allow_network_flag: bool,
    ) -> SandboxRequest {
        let asked_by = match (mode_flag, &self.project_file) {
            (Some(_), _) => AskedBy::Flag,
            (None, Some(file)) => AskedBy::Project(file.clone()),
            (None, None) => AskedBy::Settings,
        };
        SandboxRequest {
            mode: mode_flag.or(self.mode),
            allow_network: allow_network_flag || self.allow_network.unwrap_or(false),
            extra_roots: self.writable_roots.clone(),
            asked_by,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(json: &str) -> SandboxSettings {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn a_project_can_tighten_but_never_loosen() {
        let mut global = settings(r#"{"mode": "workspace-write", "allowNetwork": true}"#);
        global.tighten_with(settings(
            r#"{"mode": "off", "allowNetwork": true, "writableRoots": ["/"]}"#,
        ));
        assert_eq!(
            global,
            settings(r#"{"mode": "workspace-write", "allowNetwork": true}"#)
        );
        global.tighten_with(settings(r#"{"mode": "read-only", "allowNetwork": false}"#));
        assert_eq!(
            global,
            settings(r#"{"mode": "read-only", "allowNetwork": false}"#)
        );
    }

    /// What the user is told names the project file whose mode it is.
    #[test]
    fn a_mode_taken_from_a_project_is_asked_by_its_file() {
        let file = PathBuf::from("/p/.coding-agent/settings.json");
        let mut global = settings(r#"{"mode": "off"}"#);
        assert_eq!(global.request(None, false).asked_by, AskedBy::Settings);
        let mut project = settings(r#"{"mode": "read-only"}"#);
        project.project_file = Some(file.clone());
        global.tighten_with(project);
        assert_eq!(global.request(None, false).asked_by, AskedBy::Project(file));
        assert_eq!(
            global.request(Some(SandboxMode::Off), false).asked_by,
            AskedBy::Flag
        );
    }

    #[test]
    fn a_project_cannot_turn_off_the_default_sandbox() {
        let mut global = SandboxSettings::default();
        global.tighten_with(settings(r#"{"mode": "off"}"#));
        assert_eq!(global.mode, None);
    }

    #[test]
    fn flags_win_over_settings() {
        let global = settings(r#"{"mode": "read-only", "writableRoots": ["/cache"]}"#);
        assert_eq!(
            global.request(Some(SandboxMode::Off), true),
            SandboxRequest {
                mode: Some(SandboxMode::Off),
                allow_network: true,
                extra_roots: vec![PathBuf::from("/cache")],
                asked_by: AskedBy::Flag,
            }
        );
        assert_eq!(
            global.request(None, false).mode,
            Some(SandboxMode::ReadOnly)
        );
    }

    #[test]
    fn unknown_keys_and_modes_are_errors() {
        assert!(serde_json::from_str::<SandboxSettings>(r#"{"mode": "strict"}"#).is_err());
        assert!(serde_json::from_str::<SandboxSettings>(r#"{"network": true}"#).is_err());
    }
}
