//! Lays out a fixture's temp root (`work/` = the tool's cwd, `home/` = `$HOME`,
//! `tmp/` = `$TMPDIR`) and replaces the `$CWD`, `$HOME`, `$TMPDIR` and `$ROOT`
//! placeholders fixtures use for those paths.

use std::path::{Path, PathBuf};

use base64::Engine as _;
use serde_json::Value;

use super::case::Setup;

/// A laid-out root; removed when dropped.
pub struct Layout {
    _temp: tempfile::TempDir,
    pub root: PathBuf,
    pub work: PathBuf,
    pub home: PathBuf,
    pub tmp: PathBuf,
}

impl Layout {
    /// `text` with the placeholders replaced by this root's paths.
    pub fn substitute(&self, text: &str) -> String {
        [
            ("$CWD", &self.work),
            ("$HOME", &self.home),
            ("$TMPDIR", &self.tmp),
            ("$ROOT", &self.root),
        ]
        .iter()
        .fold(text.to_owned(), |text, (placeholder, path)| {
            text.replace(placeholder, &path.to_string_lossy())
        })
    }

    /// Every string in `value` substituted.
    pub fn substitute_json(&self, value: &Value) -> Value {
        match value {
            Value::String(s) => Value::String(self.substitute(s)),
            Value::Array(items) => {
                Value::Array(items.iter().map(|v| self.substitute_json(v)).collect())
            }
            Value::Object(map) => Value::Object(
                map.iter()
                    .map(|(k, v)| (k.clone(), self.substitute_json(v)))
                    .collect(),
            ),
            other => other.clone(),
        }
    }
}

/// A fresh root with `setup` applied.
pub fn lay_out(setup: &Setup) -> Result<Layout, String> {
    let temp = tempfile::tempdir().map_err(|e| format!("temp dir: {e}"))?;
    // Canonical, so the paths the tool prints (from a cwd without symlinks)
    // match the placeholders.
    let root = temp
        .path()
        .canonicalize()
        .map_err(|e| format!("temp dir: {e}"))?;
    let layout = Layout {
        work: root.join("work"),
        home: root.join("home"),
        tmp: root.join("tmp"),
        root,
        _temp: temp,
    };
    for dir in [&layout.work, &layout.home, &layout.tmp] {
        create_dir(dir)?;
    }
    for (rel, text) in &setup.files {
        write(&layout.work.join(rel), text.as_bytes())?;
    }
    for (rel, data) in &setup.binary_files {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(data)
            .map_err(|e| format!("binary_files {rel}: {e}"))?;
        write(&layout.work.join(rel), &bytes)?;
    }
    for rel in &setup.dirs {
        create_dir(&layout.work.join(rel))?;
    }
    for (rel, generated) in &setup.generated {
        write(&layout.work.join(rel), generated.content().as_bytes())?;
    }
    for (rel, text) in &setup.home_files {
        write(&layout.home.join(rel), text.as_bytes())?;
    }
    for (rel, target) in &setup.symlinks {
        let link = layout.work.join(rel);
        if let Some(parent) = link.parent() {
            create_dir(parent)?;
        }
        std::os::unix::fs::symlink(layout.substitute(target), &link)
            .map_err(|e| format!("symlink {rel}: {e}"))?;
    }
    for (rel, mode) in &setup.modes {
        use std::os::unix::fs::PermissionsExt as _;
        let mode =
            u32::from_str_radix(mode, 8).map_err(|e| format!("mode {mode} of {rel}: {e}"))?;
        std::fs::set_permissions(layout.work.join(rel), std::fs::Permissions::from_mode(mode))
            .map_err(|e| format!("chmod {rel}: {e}"))?;
    }
    if setup.git_init {
        let status = std::process::Command::new("git")
            .args(["init", "-q"])
            .current_dir(&layout.work)
            .status()
            .map_err(|e| format!("git init (is git installed?): {e}"))?;
        if !status.success() {
            return Err(format!("git init failed: {status}"));
        }
    }
    Ok(layout)
}

fn create_dir(path: &Path) -> Result<(), String> {
    std::fs::create_dir_all(path).map_err(|e| format!("mkdir {}: {e}", path.display()))
}

fn write(path: &Path, bytes: &[u8]) -> Result<(), String> {
    if let Some(parent) = path.parent() {
        create_dir(parent)?;
    }
    std::fs::write(path, bytes).map_err(|e| format!("write {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::case::Generated;

    #[test]
    fn every_setup_key_is_laid_out_under_the_root() {
        let setup = Setup {
            files: [("d/a.txt".to_owned(), "A".to_owned())].into(),
            binary_files: [("b.bin".to_owned(), "AP8=".to_owned())].into(),
            dirs: vec!["empty/inner".to_owned()],
            generated: [(
                "g.txt".to_owned(),
                Generated {
                    pattern: "{n},".into(),
                    count: 3,
                    prefix: String::new(),
                    suffix: String::new(),
                },
            )]
            .into(),
            home_files: [(".config".to_owned(), "h".to_owned())].into(),
            symlinks: [("link".to_owned(), "$CWD/d".to_owned())].into(),
            modes: [("d/a.txt".to_owned(), "0600".to_owned())].into(),
            git_init: true,
            env: BTreeMap::new(),
        };
        let layout = lay_out(&setup).unwrap();
        let read = |path: PathBuf| std::fs::read(path).unwrap();
        assert_eq!(read(layout.work.join("d/a.txt")), b"A");
        assert_eq!(read(layout.work.join("b.bin")), [0x00, 0xff]);
        assert!(layout.work.join("empty/inner").is_dir());
        assert_eq!(read(layout.work.join("g.txt")), b"1,2,3,");
        assert_eq!(read(layout.home.join(".config")), b"h");
        assert_eq!(
            std::fs::read_link(layout.work.join("link")).unwrap(),
            layout.work.join("d")
        );
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(layout.work.join("d/a.txt"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        assert!(layout.work.join(".git").is_dir());
        assert!(layout.tmp.is_dir());
        assert_eq!(
            layout.substitute("$ROOT|$CWD|$HOME|$TMPDIR"),
            format!(
                "{}|{}|{}|{}",
                layout.root.display(),
                layout.work.display(),
                layout.home.display(),
                layout.tmp.display()
            )
        );
    }
}
