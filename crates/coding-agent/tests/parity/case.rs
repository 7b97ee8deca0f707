//! One parity fixture (`fixtures/cases/*.json`) and the answer our binary
//! prints, as typed values. The format is described in `fixtures/README.md`.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

/// One tool call and what Pi answered.
#[derive(Debug, Deserialize)]
pub struct Case {
    pub name: String,
    pub tool: String,
    pub args: Value,
    #[serde(default)]
    pub setup: Setup,
    #[serde(default)]
    pub compare: Option<CompareMode>,
    pub pi: Answer,
    #[serde(default)]
    pub fs_after: BTreeMap<String, FileAfter>,
}

/// The files and environment a case needs. Unknown keys fail the case: a
/// fixture the harness cannot lay out must not pass by accident.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Setup {
    #[serde(default)]
    pub files: BTreeMap<String, String>,
    #[serde(default)]
    pub binary_files: BTreeMap<String, String>,
    #[serde(default)]
    pub dirs: Vec<String>,
    #[serde(default)]
    pub generated: BTreeMap<String, Generated>,
    #[serde(default)]
    pub home_files: BTreeMap<String, String>,
    #[serde(default)]
    pub symlinks: BTreeMap<String, String>,
    #[serde(default)]
    pub modes: BTreeMap<String, String>,
    #[serde(default)]
    pub git_init: bool,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
}

/// A file made of a repeated pattern: `prefix`, then `pattern` for n = 1..=count
/// with `{n}` replaced by n, then `suffix`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Generated {
    pub pattern: String,
    pub count: usize,
    #[serde(default)]
    pub prefix: String,
    #[serde(default)]
    pub suffix: String,
}

impl Generated {
    pub fn content(&self) -> String {
        let body: String = (1..=self.count)
            .map(|n| self.pattern.replace("{n}", &n.to_string()))
            .collect();
        format!("{}{body}{}", self.prefix, self.suffix)
    }
}

/// How to compare text blocks (absent: exactly).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CompareMode {
    /// The lines as a sorted list (order depends on thread timing).
    SortedLines,
    /// Only the number of lines.
    LineCount,
}

/// A tool result: Pi's in a fixture, or ours as `coding-agent tool` prints it.
#[derive(Debug, Clone, Deserialize)]
pub struct Answer {
    #[serde(rename = "isError")]
    pub is_error: bool,
    pub content: Vec<Block>,
}

/// One content block. Pi's large images are abbreviated in fixtures: the
/// data is cut and `data_sha256` (of the full base64 text) stands for it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum Block {
    Text {
        text: String,
    },
    Image {
        data: String,
        #[serde(rename = "mimeType")]
        mime_type: String,
        #[serde(default)]
        data_sha256: Option<String>,
        #[serde(default)]
        data_abbreviated: bool,
    },
}

/// A file of `work/` after the call.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct FileAfter {
    pub bytes: u64,
    pub sha256: String,
    #[serde(default)]
    pub text: Option<String>,
}

impl FileAfter {
    /// The record of a file with this exact text.
    pub fn of_text(text: &str) -> Self {
        FileAfter {
            bytes: text.len() as u64,
            sha256: super::compare::sha256_hex(text.as_bytes()),
            text: Some(text.to_owned()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_files_repeat_the_pattern_between_prefix_and_suffix() {
        let numbered = Generated {
            pattern: "line {n}\n".into(),
            count: 3,
            prefix: "P".into(),
            suffix: "S".into(),
        };
        assert_eq!(numbered.content(), "Pline 1\nline 2\nline 3\nS");
        let repeated = Generated {
            pattern: "ab".into(),
            count: 2,
            prefix: String::new(),
            suffix: String::new(),
        };
        assert_eq!(repeated.content(), "abab");
    }
}
