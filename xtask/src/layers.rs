//! The crate layering rules, checked against `cargo metadata`.
//!
//! The compiler already refuses cycles; these rules keep the layers honest in
//! the other direction: the model layer must not grow a dependency on tools,
//! processes or terminals, and the loop must not learn about the product.

use std::collections::{BTreeSet, HashMap};

use anyhow::{Context, Result, bail};
use serde_json::Value;

/// Crates `agent-ai` must never depend on directly: they would give the model
/// layer a file system walker, a process or a terminal.
const FORBIDDEN_IN_AGENT_AI: &[&str] = &[
    "agent-core",
    "coding-agent",
    "ignore",
    "grep-searcher",
    "grep-regex",
    "grep-matcher",
    "globset",
    "walkdir",
    "image",
    "similar",
    "crossterm",
    "ratatui",
    "termion",
    "termwiz",
    "nix",
    "rustix",
];

/// Terminal crates: only the product (its interactive mode) may draw on a terminal.
const TERMINAL_CRATES: &[&str] = &["ratatui", "crossterm", "termion", "termwiz"];

/// tokio features that would let `agent-ai` spawn processes or touch files.
const FORBIDDEN_TOKIO_FEATURES: &[&str] = &["process", "fs", "signal", "io-std", "full"];

/// One broken rule.
pub type Violation = String;

/// Checks the layering rules on the output of `cargo metadata --format-version 1`.
pub fn check(metadata: &Value) -> Result<Vec<Violation>> {
    let packages = metadata["packages"]
        .as_array()
        .context("cargo metadata has no packages")?;
    let id_of = |name: &str| -> Result<&str> {
        packages
            .iter()
            .find(|p| p["name"] == name && p["source"].is_null())
            .and_then(|p| p["id"].as_str())
            .with_context(|| format!("workspace package {name} not found"))
    };
    let mut violations = Vec::new();

    let agent_ai = packages
        .iter()
        .find(|p| p["name"] == "agent-ai" && p["source"].is_null())
        .context("agent-ai not found")?;
    for dep in agent_ai["dependencies"].as_array().into_iter().flatten() {
        let name = dep["name"].as_str().unwrap_or_default();
        let normal = dep["kind"].is_null();
        if normal && FORBIDDEN_IN_AGENT_AI.contains(&name) {
            violations.push(format!("agent-ai depends on {name}"));
        }
        if normal && name == "tokio" {
            for feature in dep["features"].as_array().into_iter().flatten() {
                let feature = feature.as_str().unwrap_or_default();
                if FORBIDDEN_TOKIO_FEATURES.contains(&feature) {
                    violations.push(format!("agent-ai enables tokio feature {feature}"));
                }
            }
        }
    }

    let graph = normal_dependency_graph(metadata)?;
    let rules = [
        ("agent-ai", "agent-core"),
        ("agent-ai", "coding-agent"),
        ("agent-core", "coding-agent"),
    ];
    for (from, to) in rules {
        let reachable = reachable_from(&graph, id_of(from)?);
        if reachable.contains(id_of(to)?) {
            violations.push(format!("{from} depends (directly or not) on {to}"));
        }
    }
    let name_of = |id: &str| {
        packages
            .iter()
            .find(|p| p["id"] == id)
            .and_then(|p| p["name"].as_str())
            .unwrap_or_default()
            .to_owned()
    };
    for layer in ["agent-ai", "agent-core"] {
        for id in reachable_from(&graph, id_of(layer)?) {
            let name = name_of(&id);
            if TERMINAL_CRATES.contains(&name.as_str()) {
                violations.push(format!(
                    "{layer} depends (directly or not) on terminal crate {name}"
                ));
            }
        }
    }
    for (from, to) in [("agent-core", "agent-ai"), ("coding-agent", "agent-core")] {
        let reachable = reachable_from(&graph, id_of(from)?);
        if !reachable.contains(id_of(to)?) {
            violations.push(format!(
                "{from} no longer depends on {to}: update the layering docs"
            ));
        }
    }
    Ok(violations)
}

/// Package id -> ids it depends on for building (normal and build deps, not dev).
fn normal_dependency_graph(metadata: &Value) -> Result<HashMap<String, Vec<String>>> {
    let nodes = metadata["resolve"]["nodes"]
        .as_array()
        .context("cargo metadata has no resolve graph (run without --no-deps)")?;
    let mut graph = HashMap::new();
    for node in nodes {
        let id = node["id"].as_str().context("node without id")?.to_owned();
        let deps = node["deps"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|dep| {
                dep["dep_kinds"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|k| k["kind"].as_str() != Some("dev"))
            })
            .filter_map(|dep| dep["pkg"].as_str().map(str::to_owned))
            .collect();
        graph.insert(id, deps);
    }
    Ok(graph)
}

fn reachable_from(graph: &HashMap<String, Vec<String>>, start: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut stack = vec![start.to_owned()];
    while let Some(id) = stack.pop() {
        for dep in graph.get(&id).into_iter().flatten() {
            if seen.insert(dep.clone()) {
                stack.push(dep.clone());
            }
        }
    }
    seen
}

/// Runs `cargo metadata` for this workspace and fails on any violation.
pub fn run() -> Result<()> {
    let output =
        std::process::Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
            .args(["metadata", "--format-version", "1", "--locked"])
            .current_dir(crate::workspace_root())
            .output()
            .context("running cargo metadata")?;
    if !output.status.success() {
        bail!(
            "cargo metadata failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let metadata: Value =
        serde_json::from_slice(&output.stdout).context("parsing cargo metadata")?;
    let violations = check(&metadata)?;
    if violations.is_empty() {
        println!("layers ok: agent-ai <- agent-core <- coding-agent");
        Ok(())
    } else {
        bail!("layering violated:\n  {}", violations.join("\n  "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn workspace_metadata() -> Value {
        let output = std::process::Command::new(env!("CARGO"))
            .args(["metadata", "--format-version", "1"])
            .current_dir(crate::workspace_root())
            .output()
            .unwrap();
        assert!(output.status.success());
        serde_json::from_slice(&output.stdout).unwrap()
    }

    #[test]
    fn this_workspace_keeps_its_layers() {
        assert_eq!(check(&workspace_metadata()).unwrap(), Vec::<String>::new());
    }

    #[test]
    fn a_forbidden_dependency_of_agent_ai_is_reported() {
        let mut metadata = workspace_metadata();
        let packages = metadata["packages"].as_array_mut().unwrap();
        let agent_ai = packages
            .iter_mut()
            .find(|p| p["name"] == "agent-ai")
            .unwrap();
        agent_ai["dependencies"]
            .as_array_mut()
            .unwrap()
            .push(json!({"name": "ignore", "kind": null, "features": []}));
        assert_eq!(
            check(&metadata).unwrap(),
            vec!["agent-ai depends on ignore".to_owned()]
        );
    }

    #[test]
    fn a_terminal_crate_under_agent_core_is_reported() {
        let mut metadata = workspace_metadata();
        let id = |name: &str| {
            metadata["packages"]
                .as_array()
                .unwrap()
                .iter()
                .find(|p| p["name"] == name)
                .unwrap()["id"]
                .clone()
        };
        let (core, terminal) = (id("agent-core"), id("crossterm"));
        let nodes = metadata["resolve"]["nodes"].as_array_mut().unwrap();
        let node = nodes.iter_mut().find(|n| n["id"] == core).unwrap();
        node["deps"]
            .as_array_mut()
            .unwrap()
            .push(json!({"pkg": terminal, "dep_kinds": [{"kind": null}]}));
        assert_eq!(
            check(&metadata).unwrap(),
            vec!["agent-core depends (directly or not) on terminal crate crossterm".to_owned()]
        );
    }

    #[test]
    fn agent_core_reaching_coding_agent_is_reported() {
        let mut metadata = workspace_metadata();
        let id = |name: &str| {
            metadata["packages"]
                .as_array()
                .unwrap()
                .iter()
                .find(|p| p["name"] == name)
                .unwrap()["id"]
                .clone()
        };
        let (core, product) = (id("agent-core"), id("coding-agent"));
        let nodes = metadata["resolve"]["nodes"].as_array_mut().unwrap();
        let node = nodes.iter_mut().find(|n| n["id"] == core).unwrap();
        node["deps"]
            .as_array_mut()
            .unwrap()
            .push(json!({"pkg": product, "dep_kinds": [{"kind": null}]}));
        // Through the product it also reaches the interactive mode's terminal crates.
        assert_eq!(
            check(&metadata).unwrap(),
            [
                "agent-core depends (directly or not) on coding-agent",
                "agent-core depends (directly or not) on terminal crate crossterm",
                "agent-core depends (directly or not) on terminal crate ratatui",
            ]
        );
    }
}
