//! The prompts of a print or JSON run, as Pi's command line makes them: the
//! first one also carries the text piped on standard input (`git diff |
//! coding-agent -p "review this"`) and the files named `@path` (a text file
//! inside `<file name="/abs/path">`, an image attached with a
//! `<file name="/abs/path"></file>` line naming it). With no prompt given,
//! what was piped is the prompt.
//!
//! Unlike Pi, the parts are set apart by a blank line (Pi joins them with
//! nothing between), an argument with white space in it is a prompt even when
//! it starts with `@`, and a pipe that stays open without sending anything
//! (a parent process that never closes the child's stdin) is not waited on
//! forever when a prompt was given: after [`STDIN_GRACE`] the run goes on
//! without it and says so; a socket on stdin (node's default for a child) is
//! not read at all; an `@` named pipe that no program opens for writing
//! within that time is a usage error, and so is a blank prompt after the
//! first. See `docs/DEVIATIONS.md` (M9).

use std::fs::File;
use std::io::{IsTerminal, Read};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use agent_ai::Message;
use agent_ai::message::ImageContent;
use coding_agent::app::AgentSession;
use coding_agent::support::paths::expand_own_home;
use coding_agent::tools::read::image::{Fit, SNIFF_LEN, fit_image, sniff};
use tokio_util::sync::CancellationToken;

use super::UsageError;

/// How long a run with a prompt waits for the first bytes on a piped stdin
/// before it goes on without it.
pub(super) const STDIN_GRACE: Duration = Duration::from_secs(3);

/// The most a run takes from stdin, or from an `@file` of text: more is
/// beyond any model's window (a larger input belongs in a file the agent
/// reads in parts).
const MAX_STDIN: u64 = 16 * 1024 * 1024;

/// The most an `@file` image may hold: it is scaled down to what a model
/// is sent, but read whole first.
const MAX_IMAGE_FILE: u64 = 256 * 1024 * 1024;

/// The prompts for `args` (the command line's positional arguments): empty
/// when there is nothing to run. Reads stdin when it is not a terminal.
pub(super) fn prompts(args: &[String], cwd: &Path) -> Result<Vec<Message>, UsageError> {
    let (files, mut texts): (Vec<&String>, Vec<&String>) =
        args.iter().partition(|arg| file_argument(arg).is_some());
    // The first prompt joins stdin and the files, and alone may be blank
    // (`git diff | coding-agent -p "$QUESTION"`); each later one is a
    // message of its own, and a blank one was sent as an empty message.
    if let Some(blank) = texts.iter().skip(1).position(|text| text.trim().is_empty()) {
        return Err(UsageError::BlankPrompt {
            position: blank + 2,
        });
    }
    let files: Vec<&str> = files.iter().filter_map(|arg| file_argument(arg)).collect();
    // The files first: a missing one fails before any wait on stdin.
    let (file_text, images) = read_files(&files, cwd)?;
    let stdin = if is_piped_input() {
        piped_stdin(!texts.is_empty() || !files.is_empty())?
    } else {
        None
    };
    let first = [
        stdin.as_deref(),
        Some(file_text.trim_end()),
        texts.first().map(|t| t.as_str()),
    ]
    .into_iter()
    .flatten()
    .filter(|part| !part.trim().is_empty())
    .collect::<Vec<_>>()
    .join("\n\n");
    if !texts.is_empty() {
        texts.remove(0);
    }
    let mut prompts = Vec::new();
    if !first.is_empty() || !images.is_empty() {
        prompts.push(AgentSession::user_message(&first, images));
    }
    prompts.extend(
        texts
            .into_iter()
            .map(|text| AgentSession::user_message(text, Vec::new())),
    );
    Ok(prompts)
}

/// The bytes of an `@file`, or why they are not taken: a text over
/// [`MAX_STDIN`] or an image over [`MAX_IMAGE_FILE`] is refused after reading
/// that much (read whole, a device such as `/dev/zero` never ends).
fn read_bounded(path: &Path) -> Result<Vec<u8>, String> {
    let mut file = open_file(path)?;
    let mut bytes = Vec::new();
    (&mut file)
        .take(SNIFF_LEN as u64)
        .read_to_end(&mut bytes)
        .map_err(read_failed)?;
    let limit = if sniff(&bytes).is_some() {
        MAX_IMAGE_FILE
    } else {
        MAX_STDIN
    };
    file.take(limit + 1 - bytes.len() as u64)
        .read_to_end(&mut bytes)
        .map_err(read_failed)?;
    if bytes.len() as u64 > limit {
        return Err(format!(
            "it is larger than {} MiB; name it in the prompt without the @, and the agent reads \
             the parts it needs",
            limit >> 20
        ));
    }
    Ok(bytes)
}

/// Why an `@file` could not be opened or read.
fn read_failed(error: std::io::Error) -> String {
    if error.kind() == std::io::ErrorKind::NotFound {
        "no such file".to_owned()
    } else {
        error.to_string()
    }
}

/// Opens the file of an `@path`. Opening a named pipe waits until a program
/// opens it for writing: `@fifo` with no writer hung the run, silent,
/// forever. A pipe's open is waited for [`STDIN_GRACE`], on a thread (one
/// left blocked ends with the process); a pipe that has a writer (`@<(git
/// diff)`) opens at once.
fn open_file(path: &Path) -> Result<File, String> {
    use std::os::unix::fs::FileTypeExt;
    if !std::fs::metadata(path).is_ok_and(|meta| meta.file_type().is_fifo()) {
        return File::open(path).map_err(read_failed);
    }
    let (sender, receiver) = mpsc::channel();
    let pipe = path.to_owned();
    std::thread::spawn(move || sender.send(File::open(pipe)));
    match receiver.recv_timeout(STDIN_GRACE) {
        Ok(opened) => opened.map_err(read_failed),
        Err(_) => Err(format!(
            "it is a named pipe that no program opened for writing within {} s; start the \
             program that writes to it first, or save what it writes to a file and name that",
            STDIN_GRACE.as_secs()
        )),
    }
}

/// Whether stdin holds input for the prompt: a shell pipe or a redirected
/// file, not a terminal and not a socket. A socket is how node (and other
/// runtimes) hand a child process its stdin by default, left open and never
/// written: a harness running `coding-agent -p PROMPT` that way is not made
/// to wait.
fn is_piped_input() -> bool {
    use std::os::fd::AsFd;
    use std::os::unix::fs::FileTypeExt;
    let stdin = std::io::stdin();
    if stdin.is_terminal() {
        return false;
    }
    let socket = stdin
        .as_fd()
        .try_clone_to_owned()
        .map(std::fs::File::from)
        .and_then(|file| file.metadata())
        .is_ok_and(|meta| meta.file_type().is_socket());
    !socket
}

/// The path of an `@path` argument; `None` for a prompt (one with white
/// space in it is a prompt, as is a lone `@`).
fn file_argument(arg: &str) -> Option<&str> {
    arg.strip_prefix('@')
        .filter(|path| !path.is_empty() && !path.contains(char::is_whitespace))
}

/// What is piped on stdin, trimmed; `None` when nothing is. With a prompt
/// (`optional`), a pipe that sends nothing for [`STDIN_GRACE`] is left
/// alone, with a warning; without one, stdin is the prompt and is waited
/// for.
fn piped_stdin(optional: bool) -> Result<Option<String>, UsageError> {
    let (sender, receiver) = mpsc::channel();
    // A thread, so the wait for the first bytes can end; one left blocked on
    // a silent pipe ends with the process.
    std::thread::spawn(move || {
        let mut stdin = std::io::stdin().lock();
        let mut first = [0u8; 1];
        let read = stdin.read(&mut first);
        let started = match read {
            Ok(0) => Ok(Vec::new()),
            Ok(_) => {
                let _ = sender.send(None);
                let mut bytes = first.to_vec();
                stdin.take(MAX_STDIN).read_to_end(&mut bytes).map(|_| bytes)
            }
            Err(error) => Err(error),
        };
        let _ = sender.send(Some(started));
    });
    let first = if optional {
        match receiver.recv_timeout(STDIN_GRACE) {
            Ok(event) => event,
            Err(_) => {
                tracing::warn!(
                    "nothing arrived on stdin within {} s; going on without it (run with `< /dev/null` to skip the wait)",
                    STDIN_GRACE.as_secs()
                );
                return Ok(None);
            }
        }
    } else {
        receiver.recv().ok().flatten()
    };
    let read = match first {
        Some(read) => read,
        // Bytes are coming: wait for the rest.
        None => receiver
            .recv()
            .ok()
            .flatten()
            .unwrap_or_else(|| Ok(Vec::new())),
    };
    let bytes = read.map_err(UsageError::Stdin)?;
    if bytes.len() as u64 > MAX_STDIN {
        return Err(UsageError::StdinTooLarge);
    }
    let text = String::from_utf8(bytes).map_err(|_| UsageError::StdinNotText)?;
    let text = text.trim();
    Ok((!text.is_empty()).then(|| text.to_owned()))
}

/// The text of the files of the `@path` arguments and the images among them.
fn read_files(files: &[&str], cwd: &Path) -> Result<(String, Vec<ImageContent>), UsageError> {
    let mut text = String::new();
    let mut images = Vec::new();
    for path in files {
        let path = absolute(path, cwd);
        let bytes = read_bounded(&path).map_err(|reason| UsageError::File {
            path: path.clone(),
            reason,
        })?;
        if bytes.is_empty() {
            continue;
        }
        let shown = path.display();
        if let Some(kind) = sniff(&bytes) {
            let fitted = match fit_image(&bytes, kind, &CancellationToken::new()) {
                Ok(Fit::Image(fitted)) => fitted,
                omitted => {
                    let reason = omitted.ok().and_then(|fit| fit.too_large_reason());
                    return Err(UsageError::File {
                        path: path.clone(),
                        reason: reason.unwrap_or_else(|| {
                            "the image cannot be decoded, or made small enough to send".to_owned()
                        }),
                    });
                }
            };
            let note = fitted.dimension_note().unwrap_or_default();
            text.push_str(&format!("<file name=\"{shown}\">{note}</file>\n"));
            images.push(ImageContent {
                data: fitted.data.into(),
                mime_type: fitted.mime_type.to_owned(),
            });
            continue;
        }
        let content = String::from_utf8(bytes).map_err(|_| UsageError::File {
            path: path.clone(),
            reason: "it is neither text (UTF-8) nor an image".to_owned(),
        })?;
        text.push_str(&format!("<file name=\"{shown}\">\n{content}\n</file>\n"));
    }
    Ok((text, images))
}

/// `path` against `cwd`, with a leading `~` as the user's home
/// ([`expand_own_home`]). `$HOME` as such was joined: an empty or relative
/// one left the path relative to the process's directory, so `@~/notes.txt`
/// under `HOME=` read the repository's `notes.txt`.
pub(super) fn absolute(path: &str, cwd: &Path) -> PathBuf {
    cwd.join(expand_own_home(Path::new(path)))
}
