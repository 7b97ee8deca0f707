//! [`Guard`]: the loop's `before_tool_call` and `after_tool_call` in a
//! session with a permission policy. For each call, in this order:
//!
//! 1. The policy's verdict ([`Policy::check`]). A deny is final: no hook,
//!    approval or mode overturns it.
//! 2. The PreToolUse command hooks ([`CommandHooks::pre_tool_use`]). A hook
//!    may deny (final), ask, allow, or replace the arguments; replaced
//!    arguments are judged by the policy again, so a hook cannot make the
//!    call into one the policy denies. As in Claude Code, a hook's `allow`
//!    does not override an ask rule: it skips only an ask the mode made
//!    (`bash` not on the known-safe list), never one from an ask rule, the
//!    always-ask list, or a command that cannot be judged.
//! 3. On ask, the PermissionRequest hooks ([`CommandHooks::permission_request`]):
//!    one that allows or denies answers in the user's place (arguments it
//!    gives are judged by the deny rules again). When none answers, the
//!    session's [`Approver`]; "allow for this session" adds the
//!    suggested rule to the policy in memory, "always" also writes it to the
//!    project's or the global settings.
//!
//! Every decision goes to the session ([`CallDecision`]). `after_tool_call`
//! is the PostToolUse hooks'.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_core::{
    AfterToolCallContext, BeforeToolCall, ToolCallContext, ToolCallHooks, ToolError,
    ToolResultOverride,
};
use async_trait::async_trait;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::approval::{ApprovalAnswer, ApprovalRequest, Approver, RuleScope, denial_text};
use super::config::{DEFAULT_APPROVAL_TIMEOUT, remember_rule};
use super::policy::{Decision, Policy, Verdict};
use super::record::{Answer, CallDecision, DecidedBy, DecisionSink};
use super::updates::rule_updates;
use crate::hooks::io::ToolCallInput;
use crate::hooks::{
    CommandHooks, HookEvent, PreToolUseDecision, RequestAnswer, no_one_to_ask, proceed,
    stop_the_agent,
};
use crate::support::sync::lock;
use crate::tools::grep::EXCLUDE_ARG;

/// Why a call needs approval when a PreToolUse hook asked without a reason.
const HOOK_ASKS: &str = "a PreToolUse hook asks for approval";

/// The settings files "always allow" writes to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleFiles {
    /// The project's `.coding-agent/settings.json`; `None` while the project
    /// is not trusted: its allow rules would be ignored, so "always allow in
    /// this project" is not offered.
    pub project: Option<PathBuf>,
    /// `$CODING_AGENT_DIR/settings.json`.
    pub global: PathBuf,
}

/// The permission guard of a session (see the module docs).
pub struct Guard {
    /// Shared with the hooks' [`PolicyCheck`].
    policy: Arc<Mutex<Policy>>,
    hooks: Option<Arc<CommandHooks>>,
    approver: Mutex<Arc<dyn Approver>>,
    rule_files: RuleFiles,
    sink: Mutex<Option<Arc<DecisionSink>>>,
    approval_timeout: Duration,
}

impl std::fmt::Debug for Guard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Guard")
            .field("policy", &*lock(&self.policy))
            .field("hooks", &self.hooks)
            .field("rule_files", &self.rule_files)
            .finish_non_exhaustive()
    }
}

/// The policy alone, for the tool calls of an `agent` hook's model: a deny
/// refuses, as for the session's own calls, and so does an ask, since no one
/// is asked about a hook's reads. No hooks run (a hook's model cannot start
/// another hook) and nothing is recorded: the calls are the hook's.
struct PolicyCheck(Arc<Mutex<Policy>>);

#[async_trait]
impl ToolCallHooks for PolicyCheck {
    async fn before_tool_call(
        &self,
        call: &ToolCallContext<'_>,
        _cancel: &CancellationToken,
    ) -> Result<BeforeToolCall, ToolError> {
        let verdict = lock(&self.0).check(&call.tool_call.name, call.args);
        Ok(match verdict.decision {
            Decision::Allow if !verdict.left_out.is_empty() => {
                proceed(Some(leaving_out(call.args.clone(), verdict.left_out)))
            }
            Decision::Allow => BeforeToolCall::Proceed,
            Decision::Deny | Decision::Ask => BeforeToolCall::Block {
                reason: Some(policy_denied_text(&verdict.reason)),
            },
        })
    }
}

/// What the model reads when the policy refuses a call.
pub fn policy_denied_text(reason: &str) -> String {
    format!("Blocked by the permission policy: {reason}")
}

impl Guard {
    /// A guard judging calls by `policy`, then `hooks`, then asking `approver`.
    pub fn new(
        policy: Policy,
        hooks: Option<Arc<CommandHooks>>,
        approver: Arc<dyn Approver>,
        rule_files: RuleFiles,
    ) -> Self {
        let policy = Arc::new(Mutex::new(policy));
        if let Some(hooks) = &hooks {
            hooks.set_tool_check(Arc::new(PolicyCheck(policy.clone())));
        }
        Guard {
            policy,
            hooks,
            approver: Mutex::new(approver),
            rule_files,
            sink: Mutex::new(None),
            approval_timeout: DEFAULT_APPROVAL_TIMEOUT,
        }
    }

    /// The same guard with `timeout` for approvers that wait on a client
    /// (RPC), from `permissions.approvalTimeoutSecs`.
    pub fn with_approval_timeout(mut self, timeout: Duration) -> Self {
        self.approval_timeout = timeout;
        self
    }

    /// How long an approver that waits on a client may wait.
    pub fn approval_timeout(&self) -> Duration {
        self.approval_timeout
    }

    /// Asks `approver` from now on: the seam where a mode that can ask a
    /// person (the interactive UI, an RPC client) puts its own.
    pub fn set_approver(&self, approver: Arc<dyn Approver>) {
        *lock(&self.approver) = approver;
    }

    /// Sends every decision to `sink` from now on (the session does this).
    pub fn set_decision_sink(&self, sink: Arc<DecisionSink>) {
        *lock(&self.sink) = Some(sink);
    }

    /// The command hooks the guard runs.
    pub fn hooks(&self) -> Option<&Arc<CommandHooks>> {
        self.hooks.as_ref()
    }

    /// The policy as it stands now (with the rules allowed for the session).
    pub fn policy(&self) -> Policy {
        lock(&self.policy).clone()
    }

    fn verdict(&self, tool: &str, args: &Value) -> Verdict {
        lock(&self.policy).check(tool, args)
    }

    fn report(&self, decision: CallDecision) {
        let sink = lock(&self.sink).clone();
        if let Some(sink) = sink {
            sink(decision);
        }
    }

    /// Steps 1-3 of the module docs for one call.
    async fn decide(
        &self,
        call: &ToolCallContext<'_>,
        cancel: &CancellationToken,
    ) -> BeforeToolCall {
        let tool = call.tool_call.name.as_str();
        let decided =
            |decision: Decision, by: DecidedBy, reason: &str, rule: Option<&String>| CallDecision {
                tool_call_id: call.tool_call.id.clone(),
                tool_name: tool.to_owned(),
                decision,
                by,
                reason: reason.to_owned(),
                rule: rule.cloned(),
                answer: None,
                updated_input: None,
            };
        // The policy's deny is final; `reason` is what the model reads.
        let policy_denies = |reason: &str, rule: Option<&String>| {
            let text = policy_denied_text(reason);
            self.report(decided(Decision::Deny, DecidedBy::Policy, &text, rule));
            BeforeToolCall::Block { reason: Some(text) }
        };
        let mut verdict = self.verdict(tool, call.args);
        if verdict.decision == Decision::Deny {
            return policy_denies(&verdict.reason, verdict.rule.as_ref());
        }
        let hook = match &self.hooks {
            Some(hooks) => hooks.pre_tool_use(call, cancel).await,
            None => PreToolUseDecision::Proceed {
                updated_input: None,
            },
        };
        let (updated_input, hook_allows, hook_asks) = match hook {
            PreToolUseDecision::Deny { reason } => {
                self.report(decided(Decision::Deny, DecidedBy::Hook, &reason, None));
                return BeforeToolCall::Block {
                    reason: Some(reason),
                };
            }
            PreToolUseDecision::Proceed { updated_input } => (updated_input, false, None),
            PreToolUseDecision::Allow { updated_input } => (updated_input, true, None),
            PreToolUseDecision::Ask {
                reason,
                updated_input,
            } => (
                updated_input,
                false,
                Some(reason.unwrap_or_else(|| HOOK_ASKS.to_owned())),
            ),
        };
        if let Some(args) = &updated_input {
            verdict = match self.judge_again(&call.tool_call.id, tool, args, "PreToolUse") {
                Ok(verdict) => verdict,
                Err(refused) => return refused,
            };
        }
        let mode_asks = verdict.decision == Decision::Ask && !verdict.is_firm();
        let policy_asks = verdict.decision == Decision::Ask && !(hook_allows && mode_asks);
        let by_hook = hook_asks.is_some();
        let request = match hook_asks {
            Some(reason) => ApprovalRequest {
                tool_call_id: call.tool_call.id.clone(),
                tool_name: tool.to_owned(),
                args: updated_input.clone().unwrap_or_else(|| call.args.clone()),
                reason,
                // An allow rule would not skip the hook's ask.
                suggested_rules: Vec::new(),
                project_rules: false,
            },
            None if policy_asks => ApprovalRequest {
                tool_call_id: call.tool_call.id.clone(),
                tool_name: tool.to_owned(),
                args: updated_input.clone().unwrap_or_else(|| call.args.clone()),
                reason: verdict.reason.clone(),
                suggested_rules: verdict.suggestions.clone(),
                project_rules: self.rule_files.project.is_some(),
            },
            None => {
                let by = if hook_allows && verdict.decision == Decision::Ask {
                    DecidedBy::Hook
                } else {
                    DecidedBy::Policy
                };
                let reason = match by {
                    DecidedBy::Hook => "a PreToolUse hook allowed it",
                    _ => verdict.reason.as_str(),
                };
                return self.allow(
                    decided(Decision::Allow, by, reason, verdict.rule.as_ref()),
                    updated_input,
                    call.args,
                    verdict.left_out,
                );
            }
        };
        self.ask(request, updated_input, verdict.left_out, by_hook, cancel)
            .await
    }

    /// Step 3: the approver's answer, acted on; `left_out` is what the
    /// policy leaves out of the call if it runs ([`Guard::allow`]).
    async fn ask(
        &self,
        request: ApprovalRequest,
        updated_input: Option<Value>,
        left_out: Vec<String>,
        by_hook: bool,
        cancel: &CancellationToken,
    ) -> BeforeToolCall {
        if let Some(hooks) = &self.hooks {
            let call = ToolCallInput {
                tool_name: request.tool_name.clone(),
                tool_input: request.args.clone(),
                tool_use_id: request.tool_call_id.clone(),
            };
            if let Some(answer) = hooks
                .permission_request(call, &request.reason, cancel)
                .await
            {
                return self.hook_answered(&request, answer, updated_input, left_out, cancel);
            }
        }
        let approver = lock(&self.approver).clone();
        if by_hook && !approver.asks_someone() {
            // No rule or mode skips a hook's ask: the approver's advice
            // (add an allow rule, run in bypass) would not help.
            let own = Some(request.reason.as_str()).filter(|reason| *reason != HOOK_ASKS);
            let reason = no_one_to_ask(own);
            tracing::warn!("{reason}");
            self.report(CallDecision {
                tool_call_id: request.tool_call_id,
                tool_name: request.tool_name,
                decision: Decision::Deny,
                by: DecidedBy::Hook,
                reason: reason.clone(),
                rule: None,
                answer: None,
                updated_input: None,
            });
            return BeforeToolCall::Block {
                reason: Some(reason),
            };
        }
        if approver.asks_someone()
            && let Some(hooks) = &self.hooks
        {
            // The user is told while the prompt waits, not before it shows.
            let (hooks, tool) = (hooks.clone(), request.tool_name.clone());
            tokio::spawn(async move { hooks.permission_prompt(&tool).await });
        }
        let asked = request.clone();
        // Cancellation wins over an answer given at the same moment.
        let answer = tokio::select! {
            biased;
            () = cancel.cancelled() => ApprovalAnswer::unanswered(),
            answer = approver.approve(request, cancel) => answer,
        };
        let mut record = CallDecision {
            tool_call_id: asked.tool_call_id.clone(),
            tool_name: asked.tool_name.clone(),
            decision: Decision::Allow,
            by: DecidedBy::Approval,
            reason: asked.reason.clone(),
            rule: None,
            answer: Some(Answer::from(&answer)),
            updated_input: None,
        };
        let remember = match &answer {
            ApprovalAnswer::AllowOnce => None,
            ApprovalAnswer::AllowSession => Some(None),
            ApprovalAnswer::AllowAlways { scope } => Some(Some(*scope)),
            ApprovalAnswer::Deny { reason } => {
                let text = denial_text(reason.as_deref());
                record.decision = Decision::Deny;
                record.reason = text.clone();
                self.report(record);
                return BeforeToolCall::Block { reason: Some(text) };
            }
        };
        if let Some(scope) = remember
            && !asked.suggested_rules.is_empty()
        {
            for rule in &asked.suggested_rules {
                self.remember(Decision::Allow, rule, scope);
            }
            record.rule = Some(asked.suggested_rules.join(", "));
        }
        self.allow(record, updated_input, &asked.args, left_out)
    }

    /// Step 3 settled by a PermissionRequest hook in the user's place:
    /// arguments it gives are judged by the policy's deny rules again, as a
    /// PreToolUse hook's are; a deny that interrupts cancels the run.
    fn hook_answered(
        &self,
        request: &ApprovalRequest,
        answer: RequestAnswer,
        updated_input: Option<Value>,
        left_out: Vec<String>,
        cancel: &CancellationToken,
    ) -> BeforeToolCall {
        let mut record = CallDecision {
            tool_call_id: request.tool_call_id.clone(),
            tool_name: request.tool_name.clone(),
            decision: Decision::Allow,
            by: DecidedBy::Hook,
            reason: "a PermissionRequest hook allowed it".to_owned(),
            rule: None,
            answer: None,
            updated_input: None,
        };
        let (args, updated_permissions) = match answer {
            RequestAnswer::Deny { reason, interrupt } => {
                record.decision = Decision::Deny;
                record.reason = reason.clone();
                self.report(record);
                if interrupt {
                    stop_the_agent(HookEvent::PermissionRequest, &reason, cancel);
                }
                return BeforeToolCall::Block {
                    reason: Some(reason),
                };
            }
            RequestAnswer::Allow {
                updated_input: new,
                updated_permissions,
            } => (new.or(updated_input), updated_permissions),
        };
        let left_out = match &args {
            Some(args) => match self.judge_again(
                &request.tool_call_id,
                &request.tool_name,
                args,
                "PermissionRequest",
            ) {
                Ok(verdict) => verdict.left_out,
                Err(refused) => return refused,
            },
            None => left_out,
        };
        // "Yes, and from now on": the rules the hook adds, as an approval's.
        for update in rule_updates(&updated_permissions) {
            self.remember(update.list, &update.rule, update.scope);
            if update.list == Decision::Allow {
                record.rule.get_or_insert(update.rule);
            }
        }
        self.allow(record, args, &request.args, left_out)
    }

    /// The call runs, with `args` in place of the model's (`asked`) when a
    /// hook gave them: reported as `record`, which names them. A search
    /// also gets `left_out`, what the policy's verdict on those arguments
    /// leaves out of it (the files deny and ask rules guard below the
    /// folder searched), whoever allowed it.
    fn allow(
        &self,
        mut record: CallDecision,
        args: Option<Value>,
        asked: &Value,
        left_out: Vec<String>,
    ) -> BeforeToolCall {
        record.updated_input.clone_from(&args);
        self.report(record);
        if left_out.is_empty() {
            return proceed(args);
        }
        proceed(Some(leaving_out(
            args.unwrap_or_else(|| asked.clone()),
            left_out,
        )))
    }

    /// The policy's verdict on arguments a hook of `event` gave in place of
    /// the model's: a hook cannot turn a call into one the policy denies, so
    /// a deny is reported and is the call's refusal (`Err`).
    fn judge_again(
        &self,
        call_id: &str,
        tool: &str,
        args: &Value,
        event: &str,
    ) -> Result<Verdict, BeforeToolCall> {
        let mut verdict = self.verdict(tool, args);
        if verdict.decision == Decision::Ask {
            // The model (and the user asked) must learn the call it reads
            // about is not the one the model sent.
            verdict.reason = format!("{} (the arguments a {event} hook gave)", verdict.reason);
        }
        if verdict.decision != Decision::Deny {
            return Ok(verdict);
        }
        let text = policy_denied_text(&format!(
            "{} (the arguments a {event} hook gave)",
            verdict.reason
        ));
        self.report(CallDecision {
            tool_call_id: call_id.to_owned(),
            tool_name: tool.to_owned(),
            decision: Decision::Deny,
            by: DecidedBy::Policy,
            reason: text.clone(),
            rule: verdict.rule,
            answer: None,
            updated_input: None,
        });
        Err(BeforeToolCall::Block { reason: Some(text) })
    }

    /// The session ended: the rules the user allowed for it alone go
    /// ([`Policy::end_session`]); a new session asks again.
    pub fn end_session(&self) {
        lock(&self.policy).end_session();
    }

    /// Adds `rule` to `list` for the session and, with a scope, to that
    /// settings file; a rule that cannot be added or saved is a warning (the
    /// call still runs: the user, or a hook in their place, allowed it).
    fn remember(&self, list: Decision, rule: &str, scope: Option<RuleScope>) {
        let added = lock(&self.policy).add_rule(list, rule, scope.is_none());
        if let Err(error) = added {
            tracing::warn!("{error}");
            return;
        }
        let path = match scope {
            None => return,
            Some(RuleScope::Project) => match &self.rule_files.project {
                Some(path) => path,
                // Not offered; kept for the session, as the answer's
                // weakest reading.
                None => return,
            },
            Some(RuleScope::Global) => &self.rule_files.global,
        };
        if let Err(error) = remember_rule(path, list, rule) {
            tracing::warn!("cannot save the rule `{rule}`: {error}");
        }
    }
}

#[async_trait]
impl ToolCallHooks for Guard {
    async fn before_tool_call(
        &self,
        call: &ToolCallContext<'_>,
        cancel: &CancellationToken,
    ) -> Result<BeforeToolCall, ToolError> {
        let verdict = self.decide(call, cancel).await;
        // A refusal after a hook's ask (no one to approve, the user says
        // no, the hook's new arguments denied) carries the hook's context.
        Ok(match &self.hooks {
            Some(hooks) => hooks.settle(call, verdict),
            None => verdict,
        })
    }

    async fn after_tool_call(
        &self,
        call: &AfterToolCallContext<'_>,
        cancel: &CancellationToken,
    ) -> Result<Option<ToolResultOverride>, ToolError> {
        Ok(match &self.hooks {
            Some(hooks) => hooks.post_tool_use(call, cancel).await,
            None => None,
        })
    }
}

/// `args` of a search with `exclude` holding the absolute globs of what it
/// is to leave out, besides any the call named.
fn leaving_out(mut args: Value, left_out: Vec<String>) -> Value {
    if let Some(object) = args.as_object_mut() {
        let mut exclude: Vec<Value> = object
            .get(EXCLUDE_ARG)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        exclude.extend(left_out.into_iter().map(Value::String));
        object.insert(EXCLUDE_ARG.to_owned(), Value::Array(exclude));
    }
    args
}

#[cfg(test)]
mod tests {
    use agent_ai::ToolCall;
    use serde_json::json;

    use super::*;
    use crate::guard::approval::user_denied_text;
    use crate::guard::policy::{Mode, Places, RuleTexts, SandboxFacts};
    use crate::hooks::HooksSettings;

    /// Answers every request with `answer`, counting the requests.
    struct Scripted {
        answer: ApprovalAnswer,
        asked: Mutex<Vec<ApprovalRequest>>,
    }

    #[async_trait]
    impl Approver for Scripted {
        async fn approve(
            &self,
            request: ApprovalRequest,
            _cancel: &CancellationToken,
        ) -> ApprovalAnswer {
            lock(&self.asked).push(request);
            self.answer.clone()
        }
    }

    /// Never answers: only cancellation ends the wait.
    struct Silent;

    #[async_trait]
    impl Approver for Silent {
        async fn approve(
            &self,
            _request: ApprovalRequest,
            cancel: &CancellationToken,
        ) -> ApprovalAnswer {
            cancel.cancelled().await;
            ApprovalAnswer::AllowOnce
        }
    }

    struct Fixture {
        guard: Guard,
        approver: Arc<Scripted>,
        decisions: Arc<Mutex<Vec<CallDecision>>>,
        dir: tempfile::TempDir,
    }

    fn fixture(rules: RuleTexts, hooks: Option<Value>, answer: ApprovalAnswer) -> Fixture {
        let Ok(dir) = tempfile::tempdir() else {
            panic!("tempdir")
        };
        let policy = match Policy::new(
            Mode::Default,
            SandboxFacts::default(),
            Places::for_cwd(dir.path()),
            &rules,
        ) {
            Ok(policy) => policy,
            Err(e) => panic!("{e}"),
        };
        let hooks = hooks.map(|settings| {
            let settings: HooksSettings = serde_json::from_value(settings).unwrap_or_default();
            let Ok((config, _)) = settings.compile(&Places::for_cwd(dir.path())) else {
                panic!("hooks")
            };
            Arc::new(CommandHooks::new(config, dir.path().to_path_buf()))
        });
        let approver = Arc::new(Scripted {
            answer,
            asked: Mutex::default(),
        });
        let guard = Guard::new(
            policy,
            hooks,
            approver.clone(),
            RuleFiles {
                project: Some(dir.path().join("project.json")),
                global: dir.path().join("global.json"),
            },
        );
        let decisions: Arc<Mutex<Vec<CallDecision>>> = Arc::default();
        let sink = decisions.clone();
        guard.set_decision_sink(Arc::new(move |d| lock(&sink).push(d)));
        Fixture {
            guard,
            approver,
            decisions,
            dir,
        }
    }

    /// Rules that deny `deny` and ask about `ask`.
    fn rules(deny: &[&str], ask: &[&str]) -> RuleTexts {
        let texts = |rules: &[&str]| rules.iter().map(|rule| (*rule).to_owned()).collect();
        RuleTexts {
            deny: texts(deny),
            ask: texts(ask),
            ..RuleTexts::default()
        }
    }

    /// The verdict that refuses a call, telling the model `reason`.
    fn blocked(reason: &str) -> BeforeToolCall {
        BeforeToolCall::Block {
            reason: Some(reason.into()),
        }
    }

    async fn call(guard: &Guard, id: &str, tool: &str, args: Value) -> BeforeToolCall {
        call_with(guard, id, tool, args, &CancellationToken::new()).await
    }

    async fn call_with(
        guard: &Guard,
        id: &str,
        tool: &str,
        args: Value,
        cancel: &CancellationToken,
    ) -> BeforeToolCall {
        let tool_call = ToolCall {
            id: id.into(),
            name: tool.into(),
            arguments: args.clone(),
            thought_signature: None,
            recovered_from_text: None,
        };
        let context = ToolCallContext {
            tool_call: &tool_call,
            args: &args,
            assistant_message: None,
            messages: &[],
        };
        match guard.before_tool_call(&context, cancel).await {
            Ok(verdict) => verdict,
            Err(e) => panic!("{}", e.message()),
        }
    }

    fn bash(command: &str) -> Value {
        json!({ "command": command })
    }

    fn pre_tool_use(answer: &Value) -> Value {
        json!({"PreToolUse": [{"matcher": "bash", "hooks": [
            {"type": "command", "command": format!("echo '{answer}'")}
        ]}]})
    }

    fn hook_decision(decision: &str) -> Value {
        pre_tool_use(&json!({"hookSpecificOutput": {
            "hookEventName": "PreToolUse", "permissionDecision": decision,
            "permissionDecisionReason": "the hook says so"}}))
    }

    /// Where no one can approve (print mode), a hook's ask is refused with
    /// the hook named; the approver's advice (an allow rule, bypass) would
    /// not skip a hook's ask.
    #[tokio::test]
    async fn a_hooks_ask_where_no_one_can_approve_names_the_hook_not_a_rule() {
        let f = fixture(
            RuleTexts::default(),
            Some(hook_decision("ask")),
            ApprovalAnswer::AllowOnce,
        );
        f.guard
            .set_approver(Arc::new(crate::guard::approval::NoApprover::new()));
        let verdict = call(&f.guard, "c1", "bash", bash("ls")).await;
        assert_eq!(
            verdict,
            blocked(
                "Blocked: a PreToolUse hook asks for approval of this call, and no one can approve it here: the hook says so (to let such calls run here, approve them with a PermissionRequest hook; or run in interactive or RPC mode, where the user is asked)"
            )
        );
    }

    /// A grep of a folder holding a denied file runs leaving it out, not
    /// asked about, or asked about (an ask rule on the grep itself) and
    /// approved.
    #[tokio::test]
    async fn a_grep_gets_what_the_policy_leaves_out_however_it_is_allowed() {
        for (ask, asked) in [(&[][..], 0), (&["grep(.)"][..], 1)] {
            let f = fixture(rules(&["read(.env)"], ask), None, ApprovalAnswer::AllowOnce);
            let env = f.dir.path().join(".env").display().to_string();
            let verdict = call(&f.guard, "c1", "grep", json!({"pattern": "KEY"})).await;
            let leaving = json!({"pattern": "KEY", "exclude": [env.clone(), format!("{env}/**")]});
            assert_eq!(verdict, proceed(Some(leaving)), "{ask:?}");
            assert_eq!(lock(&f.approver.asked).len(), asked, "{ask:?}");
        }
    }

    #[tokio::test]
    async fn a_policy_deny_is_final_whatever_the_hooks_and_the_user_say() {
        let f = fixture(
            rules(&["bash(make:*)"], &[]),
            Some(hook_decision("allow")),
            ApprovalAnswer::AllowOnce,
        );
        let verdict = call(&f.guard, "c1", "bash", bash("make all")).await;
        let text =
            "Blocked by the permission policy: `make all` is denied by the rule `bash(make:*)`";
        assert_eq!(verdict, blocked(text));
        assert!(lock(&f.approver.asked).is_empty());
        assert_eq!(
            *lock(&f.decisions),
            [CallDecision {
                tool_call_id: "c1".into(),
                tool_name: "bash".into(),
                decision: Decision::Deny,
                by: DecidedBy::Policy,
                reason: text.into(),
                rule: Some("bash(make:*)".into()),
                answer: None,
                updated_input: None,
            }]
        );
    }

    #[tokio::test]
    async fn a_hooks_allow_skips_the_modes_ask_but_not_an_ask_rule() {
        let f = fixture(
            rules(&[], &["bash(git push:*)"]),
            Some(hook_decision("allow")),
            ApprovalAnswer::Deny { reason: None },
        );
        assert_eq!(
            call(&f.guard, "c1", "bash", bash("cargo build")).await,
            BeforeToolCall::Proceed
        );
        assert_eq!(
            call(&f.guard, "c2", "bash", bash("git push origin")).await,
            blocked(user_denied_text())
        );
        let asked = lock(&f.approver.asked).clone();
        assert_eq!(
            asked,
            [ApprovalRequest {
                tool_call_id: "c2".into(),
                tool_name: "bash".into(),
                args: bash("git push origin"),
                reason: "`git push origin` needs approval by the rule `bash(git push:*)`".into(),
                suggested_rules: Vec::new(),
                project_rules: true,
            }]
        );
        let by: Vec<(DecidedBy, Decision)> = lock(&f.decisions)
            .iter()
            .map(|d| (d.by, d.decision))
            .collect();
        assert_eq!(
            by,
            [
                (DecidedBy::Hook, Decision::Allow),
                (DecidedBy::Approval, Decision::Deny)
            ]
        );
    }

    #[tokio::test]
    async fn a_hooks_ask_asks_even_what_the_policy_allows() {
        let f = fixture(
            RuleTexts::default(),
            Some(hook_decision("ask")),
            ApprovalAnswer::Deny {
                reason: Some("not now".into()),
            },
        );
        assert_eq!(
            call(&f.guard, "c1", "bash", bash("ls")).await,
            blocked("Blocked: the user denied this call: not now")
        );
        assert_eq!(lock(&f.approver.asked)[0].reason, "the hook says so");
    }

    /// A PermissionRequest hook on bash that answers `decision` (and, in
    /// the working directory, leaves `asked.txt` behind).
    fn permission_request(decision: &Value) -> Value {
        let answer = json!({"hookSpecificOutput": {
            "hookEventName": "PermissionRequest", "decision": decision}});
        json!({"PermissionRequest": [{"matcher": "bash", "hooks": [
            {"type": "command", "command": format!("touch asked.txt; echo '{answer}'")}
        ]}]})
    }

    #[tokio::test]
    async fn a_permission_request_hook_answers_in_the_users_place() {
        let allows = fixture(
            RuleTexts::default(),
            Some(permission_request(&json!({"behavior": "allow"}))),
            ApprovalAnswer::Deny { reason: None },
        );
        assert_eq!(
            call(&allows.guard, "c1", "bash", bash("cargo build")).await,
            BeforeToolCall::Proceed
        );
        let denies = fixture(
            RuleTexts::default(),
            Some(permission_request(
                &json!({"behavior": "deny", "message": "no builds on the release branch"}),
            )),
            ApprovalAnswer::AllowOnce,
        );
        let text = "Blocked by PermissionRequest hook: no builds on the release branch";
        assert_eq!(
            call(&denies.guard, "c1", "bash", bash("cargo build")).await,
            blocked(text)
        );
        for (f, decision, reason) in [
            (
                &allows,
                Decision::Allow,
                "a PermissionRequest hook allowed it",
            ),
            (&denies, Decision::Deny, text),
        ] {
            assert!(lock(&f.approver.asked).is_empty(), "the user was asked");
            let decided: Vec<_> = lock(&f.decisions)
                .iter()
                .map(|d| (d.by, d.decision, d.reason.clone()))
                .collect();
            assert_eq!(decided, [(DecidedBy::Hook, decision, reason.to_owned())]);
        }
    }

    #[tokio::test]
    async fn a_permission_request_allow_adds_the_rules_its_updated_permissions_give() {
        let f = fixture(
            RuleTexts::default(),
            Some(permission_request(
                &json!({"behavior": "allow", "updatedPermissions": [
                    {"type": "addRules", "behavior": "allow", "destination": "session",
                     "rules": [{"toolName": "Bash", "ruleContent": "cargo build"}]},
                    {"type": "addRules", "behavior": "deny", "destination": "projectSettings",
                     "rules": [{"toolName": "Bash", "ruleContent": "rm:*"}]},
                    {"type": "setMode", "mode": "acceptEdits", "destination": "session"},
                ]}),
            )),
            ApprovalAnswer::Deny { reason: None },
        );
        let asked = f.dir.path().join("asked.txt");
        assert_eq!(
            call(&f.guard, "c1", "bash", bash("cargo build")).await,
            BeforeToolCall::Proceed
        );
        assert!(asked.exists());
        std::fs::remove_file(&asked).unwrap();
        // The session's allow rule: no one is asked, the hook included.
        assert_eq!(
            call(&f.guard, "c2", "bash", bash("cargo build")).await,
            BeforeToolCall::Proceed
        );
        assert!(!asked.exists(), "the hook ran again");
        // The deny rule holds whatever the hook would answer, and is saved.
        let BeforeToolCall::Block {
            reason: Some(reason),
        } = call(&f.guard, "c3", "bash", bash("rm build.log")).await
        else {
            panic!("rm was not refused")
        };
        assert!(
            reason.starts_with("Blocked by the permission policy"),
            "{reason}"
        );
        let project = std::fs::read_to_string(f.dir.path().join("project.json")).unwrap();
        let saved: Value = serde_json::from_str(&project).unwrap();
        assert_eq!(saved, json!({"permissions": {"deny": ["Bash(rm:*)"]}}));
        let first = lock(&f.decisions)[0].clone();
        assert_eq!(
            (first.by, first.rule.as_deref()),
            (DecidedBy::Hook, Some("Bash(cargo build)"))
        );
        // A new session drops the session's rule.
        f.guard.end_session();
        call(&f.guard, "c4", "bash", bash("cargo build")).await;
        assert!(asked.exists(), "asked again after the session ended");
    }

    #[tokio::test]
    async fn a_permission_request_deny_that_interrupts_cancels_the_run() {
        let cancel = CancellationToken::new();
        let plain = fixture(
            RuleTexts::default(),
            Some(permission_request(&json!({"behavior": "deny"}))),
            ApprovalAnswer::AllowOnce,
        );
        let verdict = call_with(&plain.guard, "c1", "bash", bash("cargo build"), &cancel).await;
        assert!(matches!(verdict, BeforeToolCall::Block { .. }));
        assert!(!cancel.is_cancelled(), "a plain deny lets the turn go on");

        let interrupts = fixture(
            RuleTexts::default(),
            Some(permission_request(
                &json!({"behavior": "deny", "message": "stop here", "interrupt": true}),
            )),
            ApprovalAnswer::AllowOnce,
        );
        let verdict = call_with(
            &interrupts.guard,
            "c1",
            "bash",
            bash("cargo build"),
            &cancel,
        )
        .await;
        assert_eq!(
            verdict,
            blocked("Blocked by PermissionRequest hook: stop here")
        );
        assert!(cancel.is_cancelled(), "the run is stopped");
        assert!(lock(&interrupts.approver.asked).is_empty());
    }

    #[tokio::test]
    async fn a_permission_request_hook_runs_only_where_someone_would_be_asked() {
        let f = fixture(
            rules(&["bash(make:*)"], &[]),
            Some(permission_request(&json!({"behavior": "allow"}))),
            ApprovalAnswer::AllowOnce,
        );
        // Known safe: nobody would be asked. Denied: nobody may overturn it.
        assert_eq!(
            call(&f.guard, "c1", "bash", bash("ls")).await,
            BeforeToolCall::Proceed
        );
        let verdict = call(&f.guard, "c2", "bash", bash("make all")).await;
        assert!(
            matches!(verdict, BeforeToolCall::Block { .. }),
            "{verdict:?}"
        );
        assert!(!f.dir.path().join("asked.txt").exists());
        // One that says nothing leaves the call to the user.
        let silent = fixture(
            RuleTexts::default(),
            Some(json!({"PermissionRequest": [{"hooks": [
                {"type": "command", "command": "touch asked.txt"}]}]})),
            ApprovalAnswer::AllowOnce,
        );
        assert_eq!(
            call(&silent.guard, "c1", "bash", bash("cargo build")).await,
            BeforeToolCall::Proceed
        );
        assert!(silent.dir.path().join("asked.txt").exists());
        assert_eq!(lock(&silent.approver.asked).len(), 1);
    }

    #[tokio::test]
    async fn arguments_a_permission_request_hook_gives_are_judged_by_the_deny_rules() {
        let f = fixture(
            rules(&["bash(make:*)"], &[]),
            Some(permission_request(
                &json!({"behavior": "allow", "updatedInput": {"command": "make all"}}),
            )),
            ApprovalAnswer::AllowOnce,
        );
        assert_eq!(
            call(&f.guard, "c1", "bash", bash("cargo build")).await,
            blocked(
                "Blocked by the permission policy: `make all` is denied by the rule `bash(make:*)` \
                 (the arguments a PermissionRequest hook gave)"
            )
        );
        let rewrites = fixture(
            RuleTexts::default(),
            Some(permission_request(
                &json!({"behavior": "allow", "updatedInput": {"command": "cargo build --offline"}}),
            )),
            ApprovalAnswer::AllowOnce,
        );
        assert_eq!(
            call(&rewrites.guard, "c1", "bash", bash("cargo build")).await,
            BeforeToolCall::ProceedWith {
                args: bash("cargo build --offline")
            }
        );
        // The decision says what runs: the hook's arguments, not the model's.
        let decided = lock(&rewrites.decisions).last().cloned().unwrap();
        assert_eq!(
            (decided.decision, decided.updated_input),
            (Decision::Allow, Some(bash("cargo build --offline")))
        );
    }

    #[tokio::test]
    async fn arguments_a_hook_rewrites_are_judged_again() {
        let f = fixture(
            RuleTexts::default(),
            Some(pre_tool_use(&json!({"hookSpecificOutput": {
                "hookEventName": "PreToolUse", "permissionDecision": "allow",
                "updatedInput": {"command": "rm -rf /"}}}))),
            ApprovalAnswer::AllowOnce,
        );
        let verdict = call(&f.guard, "c1", "bash", bash("ls")).await;
        let BeforeToolCall::Block { reason: Some(text) } = verdict else {
            panic!("not blocked: {verdict:?}")
        };
        assert!(
            text.starts_with("Blocked by the permission policy: ")
                && text.ends_with(" (the arguments a PreToolUse hook gave)"),
            "{text}"
        );
    }

    /// An ask about arguments a hook gave says so: the user asked (and the
    /// model refused where no one can be) read about a command the model
    /// never sent, with no word of the hook.
    #[tokio::test]
    async fn an_ask_about_a_hooks_arguments_says_they_are_the_hooks() {
        let f = fixture(
            RuleTexts::default(),
            Some(pre_tool_use(&json!({"hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "updatedInput": {"command": "touch changed"}}}))),
            ApprovalAnswer::AllowOnce,
        );
        call(&f.guard, "c1", "bash", bash("echo hi")).await;
        let asked = lock(&f.approver.asked).clone();
        assert_eq!(asked.len(), 1);
        assert!(
            asked[0]
                .reason
                .ends_with(" (the arguments a PreToolUse hook gave)"),
            "{}",
            asked[0].reason
        );
    }

    #[tokio::test]
    async fn allow_for_the_session_lets_the_same_command_run_unasked_next_time() {
        let f = fixture(RuleTexts::default(), None, ApprovalAnswer::AllowSession);
        // Both parts ask: the session's rules must cover both.
        let line = "cargo build && cargo test";
        for id in ["c1", "c2"] {
            assert_eq!(
                call(&f.guard, id, "bash", bash(line)).await,
                BeforeToolCall::Proceed
            );
        }
        assert_eq!(lock(&f.approver.asked).len(), 1);
        let decisions = lock(&f.decisions).clone();
        assert_eq!(
            decisions[0],
            CallDecision {
                tool_call_id: "c1".into(),
                tool_name: "bash".into(),
                decision: Decision::Allow,
                by: DecidedBy::Approval,
                reason: "`cargo build` is not on the known-safe list; running it needs approval"
                    .into(),
                rule: Some("bash(cargo build), bash(cargo test)".into()),
                answer: Some(Answer::AllowSession),
                updated_input: None,
            }
        );
        assert_eq!(
            (decisions[1].by, decisions[1].decision),
            (DecidedBy::Policy, Decision::Allow)
        );
        assert!(!f.dir.path().join("project.json").exists());
    }

    #[tokio::test]
    async fn a_rule_allowed_for_the_session_ends_with_it_and_an_always_rule_stays() {
        let session = fixture(RuleTexts::default(), None, ApprovalAnswer::AllowSession);
        let always = fixture(
            RuleTexts::default(),
            None,
            ApprovalAnswer::AllowAlways {
                scope: RuleScope::Global,
            },
        );
        for f in [&session, &always] {
            for id in ["c1", "c2"] {
                call(&f.guard, id, "bash", bash("cargo build")).await;
            }
            assert_eq!(lock(&f.approver.asked).len(), 1);
            f.guard.end_session();
            assert_eq!(
                call(&f.guard, "c3", "bash", bash("cargo build")).await,
                BeforeToolCall::Proceed
            );
        }
        // Asked again in the next session; the always rule still allows.
        assert_eq!(lock(&session.approver.asked).len(), 2);
        assert_eq!(lock(&always.approver.asked).len(), 1);
        let last = lock(&always.decisions).last().cloned();
        assert_eq!(
            last.map(|d| (d.by, d.rule)),
            Some((DecidedBy::Policy, Some("bash(cargo build)".into())))
        );
    }

    #[tokio::test]
    async fn always_allow_writes_the_rule_to_the_chosen_settings_file() {
        let f = fixture(
            RuleTexts::default(),
            None,
            ApprovalAnswer::AllowAlways {
                scope: RuleScope::Project,
            },
        );
        let project = f.dir.path().join("project.json");
        let _ = std::fs::write(
            &project,
            r#"{"defaultModel": "m", "permissions": {"deny": ["grep"]}}"#,
        );
        assert_eq!(
            call(&f.guard, "c1", "bash", bash("cargo build")).await,
            BeforeToolCall::Proceed
        );
        let saved: Value =
            serde_json::from_str(&std::fs::read_to_string(&project).unwrap_or_default())
                .unwrap_or_default();
        assert_eq!(
            saved,
            json!({"defaultModel": "m", "permissions": {"deny": ["grep"], "allow": ["bash(cargo build)"]}})
        );
        assert!(!f.dir.path().join("global.json").exists());
    }

    #[tokio::test]
    async fn an_approval_cut_short_by_cancellation_is_a_deny() {
        let f = fixture(RuleTexts::default(), None, ApprovalAnswer::AllowOnce);
        f.guard.set_approver(Arc::new(Silent));
        let cancel = CancellationToken::new();
        let verdict = tokio::join!(
            call_with(&f.guard, "c1", "bash", bash("cargo build"), &cancel),
            async { cancel.cancel() }
        )
        .0;
        // Not the user's word: a resumed session must not show the model a
        // denial no one gave.
        assert_eq!(
            verdict,
            blocked(
                "Blocked: the approval prompt closed before anyone answered (the run was cancelled, or the agent quit)"
            )
        );
        assert_eq!(lock(&f.decisions)[0].answer, Some(Answer::Deny));
    }
}
