//! Approvals in RPC mode, over Pi's extension UI sub-protocol: a call that
//! needs approval becomes an `extension_ui_request` (method `select`) on
//! stdout, and the client's `extension_ui_response` with the same id is the
//! answer. No answer within the timeout (`permissions.approvalTimeoutSecs`),
//! a `cancelled` response, an answer that is none of the options, or an
//! aborted run: the call is denied. A late or unknown response is ignored,
//! as in Pi.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::guard::approval::{ApprovalAnswer, ApprovalRequest, Approver, RuleScope};
use crate::session::uuid_v4;
use crate::support::sync::lock;

/// The options of the select, in the order the client shows them.
pub const ALLOW_ONCE: &str = "Allow once";
/// Adds the suggested rule for the session.
pub const ALLOW_SESSION: &str = "Allow for this session";
/// Writes the rule to the project's settings.
pub const ALWAYS_PROJECT: &str = "Always allow (project)";
/// Writes the rule to the global settings.
pub const ALWAYS_GLOBAL: &str = "Always allow (global)";
/// Refuses the call.
pub const DENY: &str = "Deny";

/// The calls waiting for an answer, by request id.
type Pending = Arc<Mutex<HashMap<String, oneshot::Sender<Value>>>>;

/// Asks the RPC client. Requests go to the server loop through a channel
/// (it owns stdout); [`RpcApprovals::answer`] routes responses back.
pub struct RpcApprover {
    requests: mpsc::UnboundedSender<Value>,
    pending: Pending,
    timeout: Duration,
    /// The client's input ended: no answer can come.
    input_ended: Arc<AtomicBool>,
}

/// The server loop's side: where requests come out, and where responses go in.
pub struct RpcApprovals {
    /// The requests to write on stdout.
    pub requests: mpsc::UnboundedReceiver<Value>,
    pending: Pending,
    input_ended: Arc<AtomicBool>,
}

/// An approver for the client and the server loop's side of it.
pub fn rpc_approver(timeout: Duration) -> (RpcApprover, RpcApprovals) {
    let (sender, receiver) = mpsc::unbounded_channel();
    let pending = Pending::default();
    let input_ended = Arc::new(AtomicBool::new(false));
    (
        RpcApprover {
            requests: sender,
            pending: pending.clone(),
            timeout,
            input_ended: input_ended.clone(),
        },
        RpcApprovals {
            requests: receiver,
            pending,
            input_ended,
        },
    )
}

impl RpcApprovals {
    /// Hands an `extension_ui_response` to the call waiting for it; an
    /// unknown or late id is ignored.
    pub fn answer(&self, response: &Value) {
        let Some(id) = response.get("id").and_then(Value::as_str) else {
            return;
        };
        if let Some(waiting) = lock(&self.pending).remove(id) {
            let _ = waiting.send(response.clone());
        }
    }

    /// The client's input ended: the calls waiting for an answer, and every
    /// later one, are refused at once rather than after the timeout each.
    pub fn input_ended(&self) {
        self.input_ended.store(true, Ordering::SeqCst);
        // Their receivers see the senders go.
        lock(&self.pending).clear();
    }
}

/// The request's title: the call as the user would recognise it, why it
/// asks, and the rule "allow for this session" or "always" would add.
pub fn title(request: &ApprovalRequest) -> String {
    let args = &request.args;
    let subject = ["command", "path"]
        .iter()
        .find_map(|key| args.get(*key).and_then(Value::as_str))
        .map_or_else(|| args.to_string(), str::to_owned);
    let mut title = format!(
        "Allow {} `{subject}`? {}",
        request.tool_name, request.reason
    );
    match request.suggested_rules.as_slice() {
        [] => {}
        [rule] => title.push_str(&format!(" (rule: {rule})")),
        rules => title.push_str(&format!(" (rules: {})", rules.join(", "))),
    }
    title
}

/// The options offered: allowing for longer needs a rule to remember.
pub fn options(request: &ApprovalRequest) -> Vec<&'static str> {
    match request.suggested_rules.first() {
        Some(_) if request.project_rules => vec![
            ALLOW_ONCE,
            ALLOW_SESSION,
            ALWAYS_PROJECT,
            ALWAYS_GLOBAL,
            DENY,
        ],
        Some(_) => vec![ALLOW_ONCE, ALLOW_SESSION, ALWAYS_GLOBAL, DENY],
        None => vec![ALLOW_ONCE, DENY],
    }
}

/// What the model reads when the client did not answer in time.
pub fn timed_out_text(request: &ApprovalRequest, timeout: Duration) -> String {
    format!(
        "Blocked: no answer to the approval request within {}s ({})",
        timeout.as_secs(),
        request.reason
    )
}

/// What the model reads when no one is left to answer.
pub fn input_ended_text(request: &ApprovalRequest) -> String {
    format!(
        "Blocked: needs approval ({}), and the RPC client's input has ended, so no one can answer",
        request.reason
    )
}

/// The answer a response carries. Only `cancelled: true` (the user
/// dismissed the dialog) is the user's deny; a response that is neither that
/// nor one of the options offered is refused with what is wrong with it,
/// rather than read as the user's word, and never as an approval.
fn read_answer(response: &Value, offered: &[&str]) -> ApprovalAnswer {
    let refused = |why: String| ApprovalAnswer::Deny {
        reason: Some(format!(
            "Blocked: the RPC client's approval answer {why}, so the call did not run"
        )),
    };
    match response.get("cancelled") {
        None | Some(Value::Bool(false)) => {}
        Some(Value::Bool(true)) => return ApprovalAnswer::Deny { reason: None },
        Some(other) => return refused(format!("has `cancelled: {other}`, not true or false")),
    }
    let Some(value) = response.get("value").and_then(Value::as_str) else {
        return refused("has no `value` string".to_owned());
    };
    match value {
        v if !offered.contains(&v) => refused(format!(
            "`{v}` is not one of the options offered ({})",
            offered.join(", ")
        )),
        ALLOW_ONCE => ApprovalAnswer::AllowOnce,
        ALLOW_SESSION => ApprovalAnswer::AllowSession,
        ALWAYS_PROJECT => ApprovalAnswer::AllowAlways {
            scope: RuleScope::Project,
        },
        ALWAYS_GLOBAL => ApprovalAnswer::AllowAlways {
            scope: RuleScope::Global,
        },
        _ => ApprovalAnswer::Deny { reason: None },
    }
}

#[async_trait::async_trait]
impl Approver for RpcApprover {
    async fn approve(
        &self,
        request: ApprovalRequest,
        cancel: &CancellationToken,
    ) -> ApprovalAnswer {
        let ended = || ApprovalAnswer::Deny {
            reason: Some(input_ended_text(&request)),
        };
        let id = uuid_v4();
        let offered = options(&request);
        let (sender, receiver) = oneshot::channel();
        lock(&self.pending).insert(id.clone(), sender);
        // Looked at once the call waits: an end of input from now on drops
        // its sender.
        if self.input_ended.load(Ordering::SeqCst) {
            lock(&self.pending).remove(&id);
            return ended();
        }
        let message = json!({
            "type": "extension_ui_request",
            "id": id,
            "method": "select",
            "title": title(&request),
            "options": offered,
            "timeout": u64::try_from(self.timeout.as_millis()).unwrap_or(u64::MAX),
        });
        if self.requests.send(message).is_err() {
            lock(&self.pending).remove(&id);
            return ApprovalAnswer::unanswered();
        }
        let answer = tokio::select! {
            biased;
            () = cancel.cancelled() => ApprovalAnswer::unanswered(),
            response = tokio::time::timeout(self.timeout, receiver) => match response {
                Ok(Ok(response)) => read_answer(&response, &offered),
                Ok(Err(_)) if self.input_ended.load(Ordering::SeqCst) => ended(),
                Ok(Err(_)) => ApprovalAnswer::unanswered(),
                Err(_) => ApprovalAnswer::Deny {
                    reason: Some(timed_out_text(&request, self.timeout)),
                },
            },
        };
        lock(&self.pending).remove(&id);
        answer
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(rule: Option<&str>) -> ApprovalRequest {
        ApprovalRequest::cargo_build("it needs approval", rule)
    }

    #[test]
    fn the_title_names_the_call_the_reason_and_the_rule() {
        assert_eq!(
            title(&request(Some("bash(cargo build)"))),
            "Allow bash `cargo build`? it needs approval (rule: bash(cargo build))"
        );
        assert_eq!(options(&request(None)), [ALLOW_ONCE, DENY]);
    }

    #[test]
    fn responses_read_as_answers_and_anything_else_denies() {
        let offered = options(&request(Some("bash(cargo build)")));
        let answer = |response: Value| read_answer(&response, &offered);
        assert_eq!(
            answer(json!({"value": ALWAYS_GLOBAL})),
            ApprovalAnswer::AllowAlways {
                scope: RuleScope::Global
            }
        );
        assert_eq!(
            answer(json!({"value": ALLOW_SESSION})),
            ApprovalAnswer::AllowSession
        );
        let deny = ApprovalAnswer::Deny { reason: None };
        assert_eq!(answer(json!({"cancelled": true})), deny);
        let refused = |why: &str| ApprovalAnswer::Deny {
            reason: Some(format!(
                "Blocked: the RPC client's approval answer {why}, so the call did not run"
            )),
        };
        assert_eq!(
            answer(json!({"value": "Yes please"})),
            refused(
                "`Yes please` is not one of the options offered (Allow once, Allow for this session, Always allow (project), Always allow (global), Deny)"
            )
        );
        assert_eq!(answer(json!({})), refused("has no `value` string"));
        // Not a cancel the client meant, nor an approval it gave.
        assert_eq!(
            answer(json!({"value": ALLOW_ONCE, "cancelled": "yes"})),
            refused("has `cancelled: \"yes\"`, not true or false")
        );
        let only_once = options(&request(None));
        assert_eq!(
            read_answer(&json!({"value": ALLOW_SESSION}), &only_once),
            refused(
                "`Allow for this session` is not one of the options offered (Allow once, Deny)"
            )
        );
        // An untrusted project's allow rules are ignored: not offered.
        let untrusted = ApprovalRequest {
            project_rules: false,
            ..request(Some("bash(cargo build)"))
        };
        assert!(!options(&untrusted).contains(&ALWAYS_PROJECT));
    }

    #[tokio::test]
    async fn once_the_clients_input_ends_approvals_are_refused_at_once() {
        let (approver, mut approvals) = rpc_approver(Duration::from_secs(600));
        let never = CancellationToken::new();
        let waiting = approver.approve(request(None), &never);
        let ending = async {
            approvals.requests.recv().await.unwrap();
            approvals.input_ended();
        };
        let (answer, ()) = tokio::join!(waiting, ending);
        let refused = ApprovalAnswer::Deny {
            reason: Some(input_ended_text(&request(None))),
        };
        assert_eq!(answer, refused);
        assert_eq!(approver.approve(request(None), &never).await, refused);
        assert!(
            approvals.requests.try_recv().is_err(),
            "nothing asked after the end"
        );
    }
}
