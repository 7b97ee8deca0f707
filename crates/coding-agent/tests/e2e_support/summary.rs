//! The summariser's side of compaction, for tests that compact: which
//! request is the summariser's, and what it answers.

use super::{Answer, Reply, Request, Wire};

/// Whether a request is the summariser's.
pub fn is_summary_request(wire: Wire, request: &Request) -> bool {
    let system = match wire {
        Wire::OpenAi => request.body["messages"][0]["content"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
        Wire::Anthropic => request.body["system"].to_string(),
    };
    system.contains("You summarise conversations")
}

/// The summariser's answer: [`summary_text`] of `label`.
pub fn summary_reply(wire: Wire, label: &str) -> Reply {
    Reply::Events(wire.events(&Answer::text(&[&summary_text(label)])))
}

/// The text the scripted summariser answers for `label`.
pub fn summary_text(label: &str) -> String {
    format!("## Goal\n{label}")
}
