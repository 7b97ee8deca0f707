//! The interactive mode's [`Approver`]: each request goes to the UI's event
//! loop with a one-shot reply, and the tool call waits for the answer.

use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::{ApprovalAnswer, ApprovalRequest, Approver};

/// A request on its way to the UI, with where the answer goes.
#[derive(Debug)]
pub struct ApprovalPrompt {
    /// The call asked about.
    pub request: ApprovalRequest,
    /// Where the user's answer goes; closed when the call stopped waiting
    /// (its run was cancelled), so the UI drops the prompt.
    pub reply: oneshot::Sender<ApprovalAnswer>,
}

/// Where the UI receives the requests (see [`InteractiveApprover::channel`]).
pub type ApprovalInbox = mpsc::UnboundedReceiver<ApprovalPrompt>;

/// Asks the user at the interactive prompt.
#[derive(Debug, Clone)]
pub struct InteractiveApprover {
    prompts: mpsc::UnboundedSender<ApprovalPrompt>,
}

impl InteractiveApprover {
    /// An approver and the inbox the UI's event loop reads its requests
    /// from. The channel is unbounded because each waiting call holds one
    /// request at most: a batch's calls queue in the UI, answered in turn.
    pub fn channel() -> (Self, ApprovalInbox) {
        let (prompts, inbox) = mpsc::unbounded_channel();
        (InteractiveApprover { prompts }, inbox)
    }
}

#[async_trait::async_trait]
impl Approver for InteractiveApprover {
    async fn approve(
        &self,
        request: ApprovalRequest,
        cancel: &CancellationToken,
    ) -> ApprovalAnswer {
        let (reply, answer) = oneshot::channel();
        if self
            .prompts
            .send(ApprovalPrompt { request, reply })
            .is_err()
        {
            return ApprovalAnswer::unanswered();
        }
        tokio::select! {
            biased;
            () = cancel.cancelled() => ApprovalAnswer::unanswered(),
            answer = answer => answer.unwrap_or_else(|_| ApprovalAnswer::unanswered()),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn request() -> ApprovalRequest {
        ApprovalRequest {
            tool_call_id: "call_1".into(),
            tool_name: "bash".into(),
            args: json!({"command": "touch a.txt"}),
            reason: "asks".into(),
            suggested_rules: Vec::new(),
            project_rules: true,
        }
    }

    #[tokio::test]
    async fn the_ui_answer_is_the_calls_answer() {
        let (approver, mut inbox) = InteractiveApprover::channel();
        let cancel = CancellationToken::new();
        let ui = tokio::spawn(async move {
            let prompt = inbox.recv().await.map(|p| {
                assert_eq!(p.request.tool_call_id, "call_1");
                p.reply.send(ApprovalAnswer::AllowSession)
            });
            assert!(matches!(prompt, Some(Ok(()))));
        });
        assert_eq!(
            approver.approve(request(), &cancel).await,
            ApprovalAnswer::AllowSession
        );
        assert!(ui.await.is_ok());
    }

    #[tokio::test]
    async fn a_cancelled_run_denies_and_closes_the_prompt() {
        let (approver, mut inbox) = InteractiveApprover::channel();
        let cancel = CancellationToken::new();
        let waiting = {
            let cancel = cancel.clone();
            tokio::spawn(async move { approver.approve(request(), &cancel).await })
        };
        let Some(prompt) = inbox.recv().await else {
            panic!("no prompt")
        };
        assert!(!prompt.reply.is_closed());
        cancel.cancel();
        assert_eq!(waiting.await.ok(), Some(ApprovalAnswer::unanswered()));
        assert!(prompt.reply.is_closed(), "the UI can see it is abandoned");
    }

    #[tokio::test]
    async fn without_a_ui_or_an_answer_the_call_is_denied() {
        let (approver, inbox) = InteractiveApprover::channel();
        drop(inbox);
        let cancel = CancellationToken::new();
        assert_eq!(
            approver.approve(request(), &cancel).await,
            ApprovalAnswer::unanswered()
        );

        let (approver, mut inbox) = InteractiveApprover::channel();
        let dropped = tokio::spawn(async move { drop(inbox.recv().await) });
        assert_eq!(
            approver.approve(request(), &cancel).await,
            ApprovalAnswer::unanswered()
        );
        assert!(dropped.await.is_ok());
    }
}
