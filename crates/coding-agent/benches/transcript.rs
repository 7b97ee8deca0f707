//! What drawing the interactive screen costs as a session grows: one frame
//! of a transcript of 300 turns against one of 30 turns (each turn a prompt,
//! a read call with a 4 KB result, and a Markdown answer with a Rust code
//! block): the first frame of a resumed session, an idle frame, and one
//! while an answer streams (a delta applied, then a frame, as the UI does
//! for every delta). A frame should cost what the screen shows, not what
//! the session holds: the ratios should stay near 1. Likewise for one long
//! answer: a delta to an answer of 300 KB against one of 3 KB, and a frame
//! with nothing new while it waits (the 100 ms tick of a stalled stream).
//!
//! Run with `cargo bench -p coding-agent --bench transcript` (or `cargo
//! xtask bench`); medians over repeated frames in one process, each figure a
//! ratio against the 30-turn baseline measured in the same run.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::time::{Duration, Instant};

use agent_ai::testing::ScriptedProvider;
use agent_ai::{
    AssistantContent, AssistantMessageEvent, Content, Message, StopReason, TextContent, ToolCall,
    ToolResultMessage, UserMessage,
};
use agent_core::AgentEvent;
use coding_agent::modes::interactive::App;
use coding_agent::session::ContextItem;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use serde_json::json;

const FRAMES: usize = 40;

fn text(t: &str) -> AssistantContent {
    AssistantContent::Text(TextContent {
        text: t.into(),
        text_signature: None,
    })
}

/// A Markdown answer of about 1 KB with a Rust code block.
fn answer_text(turn: usize) -> String {
    format!(
        "Turn {turn}: the file defines **`Parser`**, which reads tokens one at a time.\n\n\
         - `new` takes the source;\n- `next` returns the next token or `None`.\n\n\
         ```rust\nimpl Parser {{\n    pub fn new(source: &str) -> Self {{\n        \
         Parser {{ source: source.to_owned(), at: 0 }}\n    }}\n\n    \
         pub fn next(&mut self) -> Option<Token> {{\n        let c = self.source[self.at..].chars().next()?;\n        \
         self.at += c.len_utf8();\n        Some(Token::from(c))\n    }}\n}}\n```\n\n\
         Nothing else in it needs changing for turn {turn}; the tests cover both paths."
    )
}

/// 4 KB of source, as a read returns it.
fn file_text(turn: usize) -> String {
    (0..100)
        .map(|line| format!("    let value_{line} = compute({turn}, {line}); // line {line}\n"))
        .collect::<String>()
}

fn session(turns: usize) -> Vec<ContextItem> {
    let mut messages = Vec::new();
    for turn in 0..turns {
        messages.push(Message::User(UserMessage::text(format!(
            "Read src/file_{turn}.rs and explain it"
        ))));
        let id = format!("call_{turn}");
        let mut call = ScriptedProvider::reply(vec![AssistantContent::ToolCall(ToolCall::new(
            &id,
            "read",
            json!({"path": format!("src/file_{turn}.rs")}),
        ))]);
        call.stop_reason = StopReason::ToolUse;
        messages.push(Message::Assistant(call));
        messages.push(Message::ToolResult(ToolResultMessage {
            tool_call_id: id,
            tool_name: "read".into(),
            content: vec![Content::text(file_text(turn))],
            details: None,
            is_error: false,
            timestamp: 0,
        }));
        messages.push(Message::Assistant(ScriptedProvider::reply(vec![text(
            &answer_text(turn),
        )])));
    }
    messages.into_iter().map(ContextItem::from).collect()
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

/// The median time of building the app for a resumed session and drawing
/// its first frame.
fn first_frame(turns: usize) -> Duration {
    let cwd = std::env::temp_dir();
    let items = session(turns);
    median(
        (0..FRAMES / 4)
            .map(|_| {
                let mut terminal = Terminal::new(TestBackend::new(100, 40)).unwrap();
                let start = Instant::now();
                let mut app = App::new("m".into(), &cwd, Vec::new(), &items);
                terminal
                    .draw(|frame| app.draw(frame, Instant::now()))
                    .unwrap();
                start.elapsed()
            })
            .collect(),
    )
}

/// The median time of one idle frame.
fn idle_frame(turns: usize) -> Duration {
    let cwd = std::env::temp_dir();
    let mut app = App::new("m".into(), &cwd, Vec::new(), &session(turns));
    let mut terminal = Terminal::new(TestBackend::new(100, 40)).unwrap();
    terminal
        .draw(|frame| app.draw(frame, Instant::now()))
        .unwrap();
    idle_frames(&mut app, &mut terminal)
}

/// The median time of a frame with nothing new since the one before.
fn idle_frames(app: &mut App, terminal: &mut Terminal<TestBackend>) -> Duration {
    median(
        (0..FRAMES)
            .map(|_| {
                let start = Instant::now();
                terminal
                    .draw(|frame| app.draw(frame, Instant::now()))
                    .unwrap();
                start.elapsed()
            })
            .collect(),
    )
}

/// The median time of applying one streamed delta and drawing the frame.
fn streaming_frame(turns: usize) -> Duration {
    let cwd = std::env::temp_dir();
    let mut app = App::new("m".into(), &cwd, Vec::new(), &session(turns));
    let mut terminal = Terminal::new(TestBackend::new(100, 40)).unwrap();
    let now = Instant::now();
    app.apply_event(
        &AgentEvent::MessageStart {
            message: Message::Assistant(ScriptedProvider::reply(Vec::new())),
        },
        now,
    );
    let full = answer_text(turns);
    let mut samples = Vec::new();
    for (i, (end, _)) in full.char_indices().step_by(full.len() / FRAMES).enumerate() {
        let took = update_and_draw(&mut app, &mut terminal, &full[..end]);
        if i > 0 {
            samples.push(took);
        }
    }
    median(samples)
}

/// The time to take an update whose answer so far is `answer` and draw
/// the frame after it.
fn update_and_draw(app: &mut App, terminal: &mut Terminal<TestBackend>, answer: &str) -> Duration {
    let partial = ScriptedProvider::reply(vec![text(answer)]);
    let event = AgentEvent::MessageUpdate {
        assistant_message_event: Box::new(AssistantMessageEvent::TextDelta {
            content_index: 0,
            delta: String::new(),
            partial: partial.into(),
        }),
    };
    let start = Instant::now();
    app.apply_event(&event, Instant::now());
    terminal
        .draw(|frame| app.draw(frame, Instant::now()))
        .unwrap();
    start.elapsed()
}

/// An answer of `size` bytes: paragraphs, lists and code blocks.
fn long_answer(size: usize) -> String {
    let mut text = String::new();
    for turn in 0.. {
        if text.len() >= size {
            break;
        }
        text.push_str(&answer_text(turn));
        text.push_str("\n\n");
    }
    text.truncate(size);
    text
}

/// The median times of a frame after a 20-character delta to an answer of
/// `size` bytes, and of a frame with nothing new after it.
fn long_answer_frames(size: usize) -> (Duration, Duration) {
    let cwd = std::env::temp_dir();
    let mut app = App::new("m".into(), &cwd, Vec::new(), &session(3));
    let mut terminal = Terminal::new(TestBackend::new(100, 40)).unwrap();
    let full = long_answer(size);
    let deltas = (0..=FRAMES).map(|i| full.len() - (FRAMES - i) * 20);
    let mut streamed = Vec::new();
    for end in deltas {
        streamed.push(update_and_draw(&mut app, &mut terminal, &full[..end]));
    }
    // The first frame drew the answer whole.
    streamed.remove(0);
    (median(streamed), idle_frames(&mut app, &mut terminal))
}

/// One line of figures: a frame at 300 (turns, KB) against one at 30 or 3.
fn report(what: &str, at_30: Duration, at_300: Duration) {
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "transcript: {what}: {:.2}x ({:.3} ms against {:.3} ms)",
        at_300.as_secs_f64() / at_30.as_secs_f64(),
        ms(at_300),
        ms(at_30)
    );
}

fn main() {
    report(
        "resumed: app built + first frame, 300 turns / 30 turns",
        first_frame(30),
        first_frame(300),
    );
    report(
        "idle frame, 300 turns / 30 turns",
        idle_frame(30),
        idle_frame(300),
    );
    report(
        "streamed delta + frame, 300 turns / 30 turns",
        streaming_frame(30),
        streaming_frame(300),
    );
    let (delta_3, idle_3) = long_answer_frames(3_000);
    let (delta_300, idle_300) = long_answer_frames(300_000);
    report(
        "delta to a long answer + frame, 300 KB / 3 KB",
        delta_3,
        delta_300,
    );
    report(
        "frame with nothing new after a long answer, 300 KB / 3 KB",
        idle_3,
        idle_300,
    );
}
