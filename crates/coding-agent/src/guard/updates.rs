//! Rules a PermissionRequest hook adds along with its allow: Claude Code's
//! `updatedPermissions`, e.g.
//! `[{"type": "addRules", "rules": [{"toolName": "Bash", "ruleContent":
//! "npm test"}], "behavior": "allow", "destination": "session"}]`, so a
//! hook can answer "yes, and from now on" as the user's "allow for this
//! session" or "always allow" does.
//!
//! Only `addRules` has a meaning here; Claude Code's other kinds (modes,
//! directories, replacing or removing rules) are warned about and left.

use serde_json::Value;

use super::approval::RuleScope;
use super::policy::Decision;

/// One rule to add.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleUpdate {
    /// The rule in the policy's syntax (`Bash(npm test)`, `read`).
    pub rule: String,
    /// The list it joins: allow, ask or deny.
    pub list: Decision,
    /// The settings file it is also written to; `None`: this session only.
    pub scope: Option<RuleScope>,
}

/// The rules `updated_permissions` (one hook answer's list each) add, in
/// order. An entry that cannot be used is a warning naming it, and the rest
/// still apply.
pub fn rule_updates(updated_permissions: &[Value]) -> Vec<RuleUpdate> {
    let mut updates = Vec::new();
    for entry in updated_permissions.iter().flat_map(entries) {
        match read_entry(entry) {
            Ok(rules) => updates.extend(rules),
            Err(reason) => tracing::warn!("updatedPermissions entry {entry} is left out: {reason}"),
        }
    }
    updates
}

/// A list's entries (a lone object is read as a list of one).
fn entries(value: &Value) -> Vec<&Value> {
    match value {
        Value::Array(entries) => entries.iter().collect(),
        other => vec![other],
    }
}

fn read_entry(entry: &Value) -> Result<Vec<RuleUpdate>, String> {
    let text = |key: &str| entry.get(key).and_then(Value::as_str);
    match text("type") {
        Some("addRules") => {}
        Some(kind) => {
            return Err(format!(
                "\"{kind}\" is not supported here, only \"addRules\""
            ));
        }
        None => return Err("it has no \"type\"".to_owned()),
    }
    let list = match text("behavior") {
        Some("allow") => Decision::Allow,
        Some("ask") => Decision::Ask,
        Some("deny") => Decision::Deny,
        _ => return Err("\"behavior\" is not \"allow\", \"ask\" or \"deny\"".to_owned()),
    };
    let scope = match text("destination") {
        Some("session") => None,
        Some("projectSettings" | "localSettings") => Some(RuleScope::Project),
        Some("userSettings") => Some(RuleScope::Global),
        _ => {
            return Err("\"destination\" is not \"session\", \"projectSettings\", \
                 \"localSettings\" or \"userSettings\""
                .to_owned());
        }
    };
    let rules = entry
        .get("rules")
        .and_then(Value::as_array)
        .ok_or("it has no \"rules\" list")?;
    rules
        .iter()
        .map(|rule| {
            let tool = rule
                .get("toolName")
                .and_then(Value::as_str)
                .ok_or("a rule has no \"toolName\"")?;
            let rule = match rule.get("ruleContent").and_then(Value::as_str) {
                Some(content) if !content.is_empty() => format!("{tool}({content})"),
                _ => tool.to_owned(),
            };
            Ok(RuleUpdate { rule, list, scope })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn add_rules_entries_become_rules_of_their_list_and_destination() {
        let answers = [
            json!([{"type": "addRules", "behavior": "allow", "destination": "session",
                    "rules": [{"toolName": "Bash", "ruleContent": "npm test"}, {"toolName": "Read"}]}]),
            json!({"type": "addRules", "behavior": "deny", "destination": "userSettings",
                   "rules": [{"toolName": "Bash", "ruleContent": "git push:*"}]}),
            json!([{"type": "addRules", "behavior": "ask", "destination": "localSettings",
                    "rules": [{"toolName": "mcp__github__create_issue", "ruleContent": ""}]}]),
        ];
        let update = |rule: &str, list, scope| RuleUpdate {
            rule: rule.to_owned(),
            list,
            scope,
        };
        assert_eq!(
            rule_updates(&answers),
            [
                update("Bash(npm test)", Decision::Allow, None),
                update("Read", Decision::Allow, None),
                update("Bash(git push:*)", Decision::Deny, Some(RuleScope::Global)),
                update(
                    "mcp__github__create_issue",
                    Decision::Ask,
                    Some(RuleScope::Project)
                ),
            ]
        );
    }

    #[test]
    fn entries_that_cannot_be_used_are_left_and_the_rest_apply() {
        let answers = [json!([
            {"type": "setMode", "mode": "acceptEdits", "destination": "session"},
            {"type": "addRules", "behavior": "sometimes", "destination": "session", "rules": []},
            {"type": "addRules", "behavior": "allow", "destination": "cliArg", "rules": []},
            {"type": "addRules", "behavior": "allow", "destination": "session"},
            {"type": "addRules", "behavior": "allow", "destination": "session", "rules": [{}]},
            {"behavior": "allow"},
            {"type": "addRules", "behavior": "allow", "destination": "session",
             "rules": [{"toolName": "grep"}]},
        ])];
        assert_eq!(
            rule_updates(&answers),
            [RuleUpdate {
                rule: "grep".into(),
                list: Decision::Allow,
                scope: None
            }]
        );
        assert_eq!(
            read_entry(&answers[0][0]).unwrap_err(),
            "\"setMode\" is not supported here, only \"addRules\""
        );
    }
}
