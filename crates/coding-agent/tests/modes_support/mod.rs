//! What the mode tests share: a scripted model, an agent session over a temp
//! directory, and normalisation of the values that change from run to run.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use agent_ai::testing::ScriptedResponse;
use agent_ai::{
    AssistantContent, AssistantMessage, Provider, ScriptedProvider, TextContent, ToolCall,
};
use coding_agent::app::select_tools;
use coding_agent::app::{AgentSession, SessionOptions};
use coding_agent::guard::Guard;
use coding_agent::hooks::CommandHooks;
use coding_agent::session::SessionManager;
use serde_json::Value;

/// A temp directory holding `work/` (the cwd, with `a.txt`) and `sessions/`.
pub struct Fixture {
    _dir: tempfile::TempDir,
    pub cwd: PathBuf,
    pub sessions: PathBuf,
}

impl Fixture {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let cwd = root.join("work");
        std::fs::create_dir_all(&cwd).unwrap();
        std::fs::write(cwd.join("a.txt"), "x").unwrap();
        Fixture {
            _dir: dir,
            cwd,
            sessions: root.join("sessions"),
        }
    }

    /// An agent session with `tools`, answering with `script`, saved under `sessions/`.
    pub fn session(
        &self,
        tools: &[&str],
        script: Vec<ScriptedResponse>,
    ) -> (AgentSession, ScriptedProvider) {
        self.session_with_hooks(tools, script, None)
    }

    /// [`Fixture::session`] with command hooks.
    pub fn session_with_hooks(
        &self,
        tools: &[&str],
        script: Vec<ScriptedResponse>,
        hooks: Option<Arc<CommandHooks>>,
    ) -> (AgentSession, ScriptedProvider) {
        self.session_with_guard(tools, script, hooks, None)
    }

    /// [`Fixture::session`] with command hooks and a permission guard.
    pub fn session_with_guard(
        &self,
        tools: &[&str],
        script: Vec<ScriptedResponse>,
        hooks: Option<Arc<CommandHooks>>,
        guard: Option<Arc<Guard>>,
    ) -> (AgentSession, ScriptedProvider) {
        let provider = ScriptedProvider::new(script);
        let session = self.build(Arc::new(provider.clone()), tools, hooks, guard);
        (session, provider)
    }

    /// An agent session without tools, answered by `provider`.
    pub fn session_answered_by(&self, provider: Arc<dyn Provider>) -> AgentSession {
        self.build(provider, &[], None, None)
    }

    fn build(
        &self,
        provider: Arc<dyn Provider>,
        tools: &[&str],
        hooks: Option<Arc<CommandHooks>>,
        guard: Option<Arc<Guard>>,
    ) -> AgentSession {
        let names: Vec<String> = tools.iter().map(|&n| n.to_owned()).collect();
        AgentSession::new(SessionOptions {
            provider,
            model: ScriptedProvider::model(),
            cwd: self.cwd.clone(),
            tools: select_tools(&names).0,
            system_prompt: "You are a test.".into(),
            session: SessionManager::create(&self.cwd, &self.sessions),
            hooks,
            guard,
            thinking: Default::default(),
            prompt_templates: Vec::new(),
            tools_host: None,
        })
        .unwrap()
    }

    /// The one session file written, as JSON lines.
    pub fn session_lines(&self) -> Vec<Value> {
        let files: Vec<PathBuf> = std::fs::read_dir(&self.sessions)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        assert_eq!(files.len(), 1, "{files:?}");
        read_lines(&files[0])
    }
}

pub fn read_lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

pub fn text(t: &str) -> AssistantContent {
    AssistantContent::Text(TextContent {
        text: t.into(),
        text_signature: None,
    })
}

pub fn call(id: &str, name: &str, arguments: Value) -> AssistantContent {
    AssistantContent::ToolCall(ToolCall::new(id, name, arguments))
}

pub fn reply(content: Vec<AssistantContent>) -> ScriptedResponse {
    ScriptedResponse::Message(ScriptedProvider::reply(content))
}

pub fn reply_message(content: Vec<AssistantContent>) -> AssistantMessage {
    ScriptedProvider::reply(content)
}

/// `value` with every `timestamp` set to 0 and the session header's `id` to
/// `"<id>"`, so whole lines compare across runs.
pub fn normalized(mut value: Value) -> Value {
    fn walk(value: &mut Value) {
        match value {
            Value::Object(object) => {
                for (key, member) in object.iter_mut() {
                    if key == "timestamp" {
                        *member = Value::from(0);
                    } else {
                        walk(member);
                    }
                }
            }
            Value::Array(items) => items.iter_mut().for_each(walk),
            _ => {}
        }
    }
    walk(&mut value);
    if value["type"] == "session" {
        value["id"] = Value::from("<id>");
    }
    value
}

/// Whether a process with this id still exists (a zombie counts as gone).
pub fn process_alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

/// How long a helper waits for something that should happen at once before
/// it fails the test (generous: a loaded CI machine is slow, never this slow).
pub const PATIENCE: std::time::Duration = std::time::Duration::from_secs(60);

/// Waits until `path` holds a pid; fails the test after [`PATIENCE`] (the
/// command never started).
pub async fn wait_for_pid(path: &Path) -> i32 {
    let deadline = std::time::Instant::now() + PATIENCE;
    loop {
        if let Ok(text) = std::fs::read_to_string(path)
            && let Ok(pid) = text.trim().parse()
        {
            return pid;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no pid in {} after {PATIENCE:?}",
            path.display()
        );
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
}
