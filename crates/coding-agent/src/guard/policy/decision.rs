//! What the policy answers, and the inputs it takes from outside: the mode
//! and what the sandbox contains.

use serde::Serialize;

/// The three answers, ordered from loosest to strictest so the strictest of
/// several parts is their `max`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Decision {
    /// Run it.
    Allow,
    /// Ask the user (print and json modes: refuse).
    Ask,
    /// Refuse, whatever the user or a hook says.
    Deny,
}

/// A decision with the reason the model and the user read, and the rule
/// that made it (`None` when a built-in list or the mode decided).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Verdict {
    /// The answer.
    pub decision: Decision,
    /// Why, in one sentence written for the model.
    pub reason: String,
    /// The settings or flag rule that decided, as written (`bash(git push:*)`).
    pub rule: Option<String>,
    /// For an `ask`: the allow rules that would let this call run unasked
    /// (one for each part of a command line that asks); empty when no rule
    /// can.
    #[serde(skip)]
    pub suggestions: Vec<String>,
    /// Decided by a rule or a built-in list rather than by the mode: of two
    /// equally strict verdicts, the firm one's reason is the one to read.
    #[serde(skip)]
    pub(super) firm: bool,
    /// For a search (grep) of a folder holding files deny or ask rules
    /// guard: their absolute globs, which the search is to leave out.
    #[serde(rename = "leftOut", skip_serializing_if = "Vec::is_empty")]
    pub left_out: Vec<String>,
}

impl Verdict {
    /// A verdict without a rule.
    pub fn new(decision: Decision, reason: impl Into<String>) -> Self {
        Self {
            decision,
            reason: reason.into(),
            rule: None,
            suggestions: Vec::new(),
            firm: false,
            left_out: Vec::new(),
        }
    }

    /// The same verdict, marked as decided by a rule or a built-in list.
    pub fn firm(mut self) -> Self {
        self.firm = true;
        self
    }

    /// Decided by a rule or a built-in list (or a command that cannot be
    /// judged), not by the mode: a PreToolUse hook's `allow` skips only an
    /// ask the mode made (Claude Code: a hook's allow does not override ask
    /// rules).
    pub fn is_firm(&self) -> bool {
        self.firm
    }

    /// The same verdict naming the rule that decided.
    pub fn by_rule(mut self, rule: &str) -> Self {
        self.rule = Some(rule.to_owned());
        self.firm = true;
        self
    }

    /// The same verdict with the allow rule that would let the call run.
    pub fn suggesting(mut self, rule: String) -> Self {
        self.suggestions = vec![rule];
        self
    }

    /// The same verdict suggesting the bash rule that allows exactly the
    /// command `line`, when a rule can say it. A `*` in a rule is a
    /// wildcard, so a command holding one (`rm *.o`) gets none: the rule
    /// `bash(rm *.o)` would allow `rm -rf victim zz.o` too. Allowing such a
    /// call "for this session" then allows this call only. Nor does a
    /// command whose line starts or ends in white space (`touch "t "`): a
    /// rule is read trimmed and would never match it, asking again forever.
    /// Quotes and `\` in it are escaped: a rule reads them as bash does.
    pub fn suggesting_command(self, line: &str) -> Self {
        if line.contains('*') || line.trim() != line {
            return self;
        }
        self.suggesting(format!("bash({})", super::rules::command_pattern(line)))
    }

    /// The stricter of two verdicts; on a tie the firm one, else the first.
    /// Of two asks, the rules of both: allowing a command line for the
    /// session must cover each part that asked (`cargo build && cargo
    /// test`), and none when one of them cannot be named by a rule.
    pub fn stricter(self, other: Self) -> Self {
        let replace = other.decision > self.decision
            || (other.decision == self.decision && other.firm && !self.firm);
        let both_ask = self.decision == Decision::Ask && other.decision == Decision::Ask;
        let (mut kept, dropped) = if replace {
            (other, self)
        } else {
            (self, other)
        };
        if both_ask {
            if dropped.suggestions.is_empty() {
                kept.suggestions.clear();
            } else if !kept.suggestions.is_empty() {
                for rule in dropped.suggestions {
                    if !kept.suggestions.contains(&rule) {
                        kept.suggestions.push(rule);
                    }
                }
            }
        }
        // What either leaves out of a search stays out (a folder reached
        // by a link is judged by both of its names).
        for glob in dropped.left_out {
            if !kept.left_out.contains(&glob) {
                kept.left_out.push(glob);
            }
        }
        kept
    }

    /// The strictest of `verdicts`; `None` when there are none.
    pub fn strictest(verdicts: impl IntoIterator<Item = Self>) -> Option<Self> {
        verdicts.into_iter().reduce(Self::stricter)
    }
}

/// How much runs without asking (`--permission-mode`, `defaultMode`).
/// Read by [`Mode::parse`], so Claude Code's names work in settings too.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase", try_from = "String")]
pub enum Mode {
    /// Read-only tools and writes inside the workspace run; bash asks unless
    /// a rule or the known-safe list allows it.
    #[default]
    Default,
    /// As default, and bash runs unasked while the sandbox contains it.
    Auto,
    /// Read-only: no write, edit or mutating bash.
    Plan,
    /// Nothing is asked and nothing is sandboxed; deny rules and the
    /// always-deny list still hold.
    Bypass,
}

impl Mode {
    /// Every mode's name, as flags and settings spell it.
    pub const NAMES: [&'static str; 4] = ["default", "auto", "plan", "bypass"];

    /// The mode called `name`, ours or Claude Code's (`bypassPermissions`;
    /// `acceptEdits`, which is our default: edits in the workspace run
    /// unasked), so its settings carry over.
    pub fn parse(name: &str) -> Result<Self, String> {
        match name {
            "default" | "acceptEdits" => Ok(Self::Default),
            "auto" => Ok(Self::Auto),
            "plan" => Ok(Self::Plan),
            "bypass" | "bypassPermissions" => Ok(Self::Bypass),
            other => Err(format!(
                "unknown permission mode `{other}` (expected one of: {})",
                Self::NAMES.join(", ")
            )),
        }
    }

    /// The mode's name.
    pub fn name(self) -> &'static str {
        match self {
            Self::Default => "default",
            Self::Auto => "auto",
            Self::Plan => "plan",
            Self::Bypass => "bypass",
        }
    }

    /// The mode's name as Claude Code's hooks read it in
    /// `permission_mode`: `bypassPermissions` for bypass, ours otherwise.
    pub fn hook_name(self) -> &'static str {
        match self {
            Self::Bypass => "bypassPermissions",
            other => other.name(),
        }
    }

    /// How strict the mode is (plan strictest): an untrusted project may only
    /// move the mode up this scale.
    pub fn strictness(self) -> u8 {
        match self {
            Self::Bypass => 0,
            Self::Auto => 1,
            Self::Default => 2,
            Self::Plan => 3,
        }
    }
}

impl TryFrom<String> for Mode {
    type Error = String;
    fn try_from(name: String) -> Result<Self, Self::Error> {
        Self::parse(&name)
    }
}

impl std::str::FromStr for Mode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

/// What the policy needs to know of the sandbox, as plain facts (so it does
/// not depend on how the sandbox is built).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SandboxFacts {
    /// bash runs contained: writes limited to the workspace roots.
    pub active: bool,
    /// Network is allowed inside the sandbox (or there is no sandbox).
    pub network_allowed: bool,
}
