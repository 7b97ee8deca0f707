//! Comparing our answer with the expected one: `isError`, each content block
//! (text by the case's `compare` mode, images by MIME type and data), and the
//! files of `work/` after the call.

use std::collections::BTreeMap;
use std::path::Path;

use sha2::{Digest as _, Sha256};

use super::case::{Answer, Block, CompareMode, FileAfter};

/// What a case must produce: Pi's answer, or ours where we deviate on purpose.
#[derive(Debug)]
pub struct Expected {
    pub is_error: bool,
    pub content: Vec<Block>,
    /// Every file of `work/` after the call; `None` when the fixture does not
    /// record them (the tools that cannot change files).
    pub fs_after: Option<BTreeMap<String, FileAfter>>,
}

/// One way our answer differs from the expected one.
#[derive(Debug)]
pub struct Difference {
    pub what: String,
    pub expected: String,
    pub got: String,
}

impl Difference {
    fn new(
        what: impl Into<String>,
        expected: impl std::fmt::Debug,
        got: impl std::fmt::Debug,
    ) -> Self {
        Difference {
            what: what.into(),
            expected: format!("{expected:?}"),
            got: format!("{got:?}"),
        }
    }
}

/// All differences between `got` and `expected`; `tmp` is the case's `$TMPDIR`.
pub fn differences(
    expected: &Expected,
    got: &Answer,
    mode: Option<CompareMode>,
    tmp: &Path,
) -> Vec<Difference> {
    let mut found = Vec::new();
    if expected.is_error != got.is_error {
        found.push(Difference::new("isError", expected.is_error, got.is_error));
    }
    if expected.content.len() != got.content.len() {
        found.push(Difference::new(
            "number of content blocks",
            &expected.content,
            &got.content,
        ));
        return found;
    }
    for (index, (want, have)) in expected.content.iter().zip(&got.content).enumerate() {
        match (want, have) {
            (Block::Text { text: want }, Block::Text { text: have }) => {
                let have = normalise_bash_log_names(have, tmp);
                if let Some(difference) = compare_text(index, want, &have, mode) {
                    found.push(difference);
                }
            }
            (
                Block::Image {
                    data: want_data,
                    mime_type: want_mime,
                    data_sha256,
                    data_abbreviated,
                },
                Block::Image {
                    data: have_data,
                    mime_type: have_mime,
                    ..
                },
            ) => {
                if want_mime != have_mime {
                    found.push(Difference::new(
                        format!("content[{index}] mimeType"),
                        want_mime,
                        have_mime,
                    ));
                }
                let same_data = match (data_abbreviated, data_sha256) {
                    (true, Some(sha)) => *sha == sha256_hex(have_data.as_bytes()),
                    _ => want_data == have_data,
                };
                if !same_data {
                    found.push(Difference::new(
                        format!("content[{index}] image data"),
                        data_sha256.as_deref().unwrap_or(want_data),
                        sha256_hex(have_data.as_bytes()),
                    ));
                }
            }
            _ => found.push(Difference::new(
                format!("content[{index}] type"),
                want,
                have,
            )),
        }
    }
    found
}

fn compare_text(
    index: usize,
    want: &str,
    have: &str,
    mode: Option<CompareMode>,
) -> Option<Difference> {
    let what = format!("content[{index}] text");
    match mode {
        None => (want != have).then(|| Difference::new(what, want, have)),
        Some(CompareMode::SortedLines) => {
            let sorted = |text: &str| {
                let mut lines: Vec<String> = text.split('\n').map(str::to_owned).collect();
                lines.sort();
                lines
            };
            let (want, have) = (sorted(want), sorted(have));
            (want != have).then(|| Difference::new(format!("{what} (sorted lines)"), want, have))
        }
        Some(CompareMode::LineCount) => {
            let (want, have) = (want.split('\n').count(), have.split('\n').count());
            (want != have).then(|| Difference::new(format!("{what} (line count)"), want, have))
        }
    }
}

/// Differences between the files of `work` and `expected`.
pub fn file_differences(work: &Path, expected: &BTreeMap<String, FileAfter>) -> Vec<Difference> {
    let mut actual = BTreeMap::new();
    if let Err(e) = collect_files(work, "", &mut actual) {
        return vec![Difference::new("files of work/", "readable", e)];
    }
    let mut found = Vec::new();
    let (want_names, have_names): (Vec<&String>, Vec<&String>) =
        (expected.keys().collect(), actual.keys().collect());
    if want_names != have_names {
        found.push(Difference::new("files of work/", want_names, have_names));
    }
    for (name, want) in expected {
        let Some(have) = actual.get(name) else {
            continue;
        };
        let same = match &want.text {
            Some(text) => have.text.as_ref() == Some(text),
            None => (want.bytes, &want.sha256) == (have.bytes, &have.sha256),
        };
        if !same {
            found.push(Difference::new(format!("file {name}"), want, have));
        }
    }
    found
}

/// Regular files under `dir` by POSIX relative path; `.git/` and symlinks are skipped.
fn collect_files(
    dir: &Path,
    prefix: &str,
    into: &mut BTreeMap<String, FileAfter>,
) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let rel = format!("{prefix}{name}");
        let kind = entry.file_type()?;
        if kind.is_dir() && name != ".git" {
            collect_files(&entry.path(), &format!("{rel}/"), into)?;
        } else if kind.is_file() {
            let bytes = std::fs::read(entry.path())?;
            let record = FileAfter {
                bytes: bytes.len() as u64,
                sha256: sha256_hex(&bytes),
                text: String::from_utf8(bytes).ok(),
            };
            into.insert(rel, record);
        }
    }
    Ok(())
}

/// Lower-case hex SHA-256, as fixtures record it.
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The name fixtures use for bash's full-output file.
const PI_BASH_LOG: &str = "pi-bash-XXXXXXXXXXXXXXXX.log";

/// Renames bash's full-output file in `text` to the fixtures' fixed name:
/// any `<tmp>/<name>.log` (whatever our bash calls it) and any
/// `pi-bash-<16 hex>.log`.
pub fn normalise_bash_log_names(text: &str, tmp: &Path) -> String {
    let dir = format!("{}/", tmp.display());
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find(&dir) {
        let after = &rest[start + dir.len()..];
        let name_len = after
            .find(|c: char| c.is_whitespace() || c == ']')
            .unwrap_or(after.len());
        let name = &after[..name_len];
        out.push_str(&rest[..start + dir.len()]);
        if name.ends_with(".log") && !name.contains('/') {
            out.push_str(PI_BASH_LOG);
        } else {
            out.push_str(name);
        }
        rest = &after[name_len..];
    }
    out.push_str(rest);
    rename_pi_bash_logs(&out)
}

fn rename_pi_bash_logs(text: &str) -> String {
    const PREFIX: &str = "pi-bash-";
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find(PREFIX) {
        let after = &rest[start + PREFIX.len()..];
        let is_log = after.len() >= 20
            && after.as_bytes()[..16].iter().all(u8::is_ascii_hexdigit)
            && after[16..].starts_with(".log");
        out.push_str(&rest[..start]);
        if is_log {
            out.push_str(PI_BASH_LOG);
            rest = &after[20..];
        } else {
            out.push_str(PREFIX);
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::case::FileAfter;

    #[test]
    fn bash_log_names_are_normalised_wherever_our_bash_puts_them() {
        let tmp = Path::new("/r/tmp");
        assert_eq!(
            normalise_bash_log_names(
                "1\n\n[Showing lines 2-3 of 3. Full output: /r/tmp/coding-agent-bash-7f.log]",
                tmp
            ),
            "1\n\n[Showing lines 2-3 of 3. Full output: /r/tmp/pi-bash-XXXXXXXXXXXXXXXX.log]"
        );
        assert_eq!(
            normalise_bash_log_names(
                "see /x/pi-bash-0123456789abcdef.log and pi-bash-zz.log",
                tmp
            ),
            "see /x/pi-bash-XXXXXXXXXXXXXXXX.log and pi-bash-zz.log"
        );
        assert_eq!(
            normalise_bash_log_names("/r/tmp/notes.txt stays", tmp),
            "/r/tmp/notes.txt stays"
        );
    }

    fn text_answer(is_error: bool, text: &str) -> Answer {
        Answer {
            is_error,
            content: vec![Block::Text { text: text.into() }],
        }
    }

    fn expected_text(text: &str) -> Expected {
        Expected {
            is_error: false,
            content: vec![Block::Text { text: text.into() }],
            fs_after: None,
        }
    }

    fn whats(found: Vec<Difference>) -> Vec<String> {
        found.into_iter().map(|d| d.what).collect()
    }

    #[test]
    fn texts_compare_by_the_case_mode() {
        let tmp = Path::new("/t");
        let want = expected_text("b\na");
        let got = text_answer(false, "a\nb");
        assert_eq!(
            whats(differences(&want, &got, None, tmp)),
            ["content[0] text"]
        );
        assert!(differences(&want, &got, Some(CompareMode::SortedLines), tmp).is_empty());
        assert!(
            differences(
                &want,
                &text_answer(false, "x\ny"),
                Some(CompareMode::LineCount),
                tmp
            )
            .is_empty()
        );
        assert_eq!(
            whats(differences(
                &want,
                &text_answer(true, "a"),
                Some(CompareMode::LineCount),
                tmp
            )),
            ["isError", "content[0] text (line count)"]
        );
    }

    #[test]
    fn abbreviated_images_compare_by_sha256() {
        let image = |data: &str, sha: Option<String>, abbreviated: bool| Block::Image {
            data: data.into(),
            mime_type: "image/png".into(),
            data_sha256: sha,
            data_abbreviated: abbreviated,
        };
        let want = Expected {
            is_error: false,
            content: vec![image(
                "iVBO...[abbreviated]",
                Some(sha256_hex(b"iVBORw0K")),
                true,
            )],
            fs_after: None,
        };
        let got = |data: &str| Answer {
            is_error: false,
            content: vec![image(data, None, false)],
        };
        assert!(differences(&want, &got("iVBORw0K"), None, Path::new("/t")).is_empty());
        assert_eq!(
            whats(differences(&want, &got("iVBORw0L"), None, Path::new("/t"))),
            ["content[0] image data"]
        );
    }

    #[test]
    fn files_after_the_call_must_match_exactly_without_git() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "x").unwrap();
        std::fs::create_dir_all(dir.path().join(".git")).unwrap();
        std::fs::write(dir.path().join(".git/config"), "").unwrap();
        let expect = |files: &[(&str, &str)]| -> BTreeMap<String, FileAfter> {
            files
                .iter()
                .map(|(name, text)| ((*name).to_owned(), FileAfter::of_text(text)))
                .collect()
        };
        assert!(file_differences(dir.path(), &expect(&[("a.txt", "x")])).is_empty());
        assert_eq!(
            whats(file_differences(dir.path(), &expect(&[("a.txt", "y")]))),
            ["file a.txt"]
        );
        assert_eq!(
            whats(file_differences(
                dir.path(),
                &expect(&[("a.txt", "x"), ("b.txt", "")])
            )),
            ["files of work/"]
        );
    }
}
