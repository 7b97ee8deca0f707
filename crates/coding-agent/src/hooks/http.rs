//! `http` hooks: the event's JSON POSTed to a URL, the answer read as a
//! command hook's stdout, by Claude Code's rules. A 2xx answer with an
//! empty body or a JSON object is exit 0 with that body; any other body, a
//! status outside 2xx (its body is the failure's detail) or a URL that
//! cannot be reached is a failure, so a hook blocks only by saying so in
//! JSON (`decision`, `permissionDecision`, `continue`). Redirects are not
//! followed: the headers (tokens, often) go only where the settings say.

use std::collections::BTreeMap;
use std::sync::OnceLock;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::config::HttpHook;
use super::runner::{Capped, RunStatus, STDERR_LIMIT, STDOUT_LIMIT};

/// How an `http` hook's request ended: its status, and the body (of a 2xx
/// answer: its "stdout"; of another: its "stderr").
pub(super) struct Answer {
    pub status: RunStatus,
    pub body: String,
}

/// POSTs `input` to `hook`'s URL, giving up after `timeout` or on `cancel`.
pub(super) async fn post(
    hook: &HttpHook,
    input: &[u8],
    timeout: Duration,
    cancel: &CancellationToken,
) -> Answer {
    tokio::select! {
        answer = send(hook, input) => answer,
        () = tokio::time::sleep(timeout) => failed(RunStatus::no_answer_within(timeout)),
        () = cancel.cancelled() => failed(RunStatus::Aborted),
    }
}

async fn send(hook: &HttpHook, input: &[u8]) -> Answer {
    let mut request = client()
        .post(&hook.url)
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .body(input.to_vec());
    for (name, value) in filled_headers(&hook.headers, &hook.allowed_env_vars) {
        request = request.header(name, value);
    }
    let response = match request.send().await {
        Ok(response) => response,
        Err(error) => {
            let error = error_chain(&error);
            return failed(RunStatus::RequestFailed(format!(
                "could not be reached: {error}"
            )));
        }
    };
    let status = response.status();
    let limit = if status.is_success() {
        STDOUT_LIMIT
    } else {
        STDERR_LIMIT
    };
    let (body, cut) = read_capped(response, limit).await;
    if !status.is_success() {
        // The failure's detail: its start says enough.
        return Answer {
            status: RunStatus::RequestFailed(format!("answered HTTP {status}")),
            body,
        };
    }
    // Not read at all, as a command's stdout past the limit is: the start
    // of an answer is not the answer.
    if cut {
        return failed(RunStatus::RequestFailed(format!(
            "answered more than {} MiB: its answer was not read",
            STDOUT_LIMIT / (1024 * 1024)
        )));
    }
    let trimmed = body.trim();
    if !trimmed.is_empty() && !trimmed.starts_with('{') {
        return failed(RunStatus::RequestFailed(
            "answered with a body that is not a JSON object".to_owned(),
        ));
    }
    Answer {
        status: RunStatus::Exited(0),
        body,
    }
}

fn failed(status: RunStatus) -> Answer {
    Answer {
        status,
        body: String::new(),
    }
}

/// One client for every hook: its connections are reused.
fn client() -> &'static reqwest::Client {
    static CLIENT: OnceLock<reqwest::Client> = OnceLock::new();
    CLIENT.get_or_init(|| {
        reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap_or_default()
    })
}

/// The body's first `limit` bytes as lossy UTF-8, and whether there were more.
async fn read_capped(mut response: reqwest::Response, limit: usize) -> (String, bool) {
    let mut kept = Capped::new(limit);
    while let Ok(Some(chunk)) = response.chunk().await {
        kept.push(&chunk);
        if kept.is_cut() {
            break;
        }
    }
    kept.into_text()
}

/// reqwest's error and its causes ("error sending request: ... Connection
/// refused"): the top one alone rarely says what went wrong.
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// `headers` with `$VAR` and `${VAR}` filled: from the environment for the
/// variables `allowed` lists, empty for any other (Claude Code's rule, so a
/// settings file cannot send a secret it was not allowed to).
fn filled_headers<'a>(
    headers: &'a BTreeMap<String, String>,
    allowed: &'a [String],
) -> impl Iterator<Item = (&'a str, String)> {
    headers.iter().map(move |(name, value)| {
        let filled = fill(value, |var| {
            allowed
                .iter()
                .any(|a| a == var)
                .then(|| std::env::var(var).ok())
                .flatten()
                .unwrap_or_default()
        });
        (name.as_str(), filled)
    })
}

/// `text` with each `$NAME` and `${NAME}` replaced by `value(NAME)`; a `$`
/// that starts no name stays.
fn fill(text: &str, value: impl Fn(&str) -> String) -> String {
    let is_name = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let (name, consumed) = match after.strip_prefix('{') {
            Some(braced) => match braced.find('}') {
                Some(end) if braced[..end].chars().all(is_name) && end > 0 => {
                    (&braced[..end], end + 2)
                }
                _ => ("", 0),
            },
            None => {
                let end = after.find(|c: char| !is_name(c)).unwrap_or(after.len());
                (&after[..end], end)
            }
        };
        if name.is_empty() {
            out.push('$');
        } else {
            out.push_str(&value(name));
        }
        rest = &after[consumed..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_named_variables_are_filled_and_a_lone_dollar_stays() {
        let value = |name: &str| format!("<{name}>");
        assert_eq!(fill("Bearer $TOKEN", value), "Bearer <TOKEN>");
        assert_eq!(fill("${A}-${B_2}x", value), "<A>-<B_2>x");
        assert_eq!(fill("cost: 5$ or $", value), "cost: 5$ or $");
        assert_eq!(fill("${unclosed", value), "${unclosed");
        assert_eq!(fill("${} $-", value), "${} $-");
    }

    #[test]
    fn a_variable_the_hook_may_not_use_is_sent_empty() {
        let path = std::env::var("PATH").unwrap_or_default();
        let headers = BTreeMap::from([
            ("X-Path".to_owned(), "$PATH".to_owned()),
            ("X-Home".to_owned(), "[${HOME}]".to_owned()),
        ]);
        let allowed = ["PATH".to_owned()];
        let filled: Vec<(&str, String)> = filled_headers(&headers, &allowed).collect();
        assert_eq!(filled, [("X-Home", "[]".to_owned()), ("X-Path", path)]);
    }
}
