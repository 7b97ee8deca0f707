//! Warnings logged with `tracing` (a request being retried, a session that
//! cannot be saved), as lines a person reads: `Warning: message (field=value,
//! ...)`.
//!
//! [`LineLayer`] formats each event it is given and hands the line to a
//! sink: stderr in the print, JSON and RPC modes, whose stdout is the output,
//! or a channel the interactive driver drains into the transcript, since
//! there stderr is the screen and a line written to it would tear the
//! drawing. The binary installs it with a filter (`CODING_AGENT_LOG`).

use std::fmt::{self, Write as _};
use std::io::Write as _;
use std::sync::Arc;

use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};
use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::Layer;
use tracing_subscriber::layer::Context;

/// Where the interactive driver receives the lines.
pub type WarningReceiver = UnboundedReceiver<String>;

type Sink = dyn Fn(String) + Send + Sync;

/// A `tracing` layer turning each event into one line for its sink; filter
/// it (e.g. with an `EnvFilter`) to choose which events.
#[derive(Clone)]
pub struct LineLayer {
    sink: Arc<Sink>,
}

impl fmt::Debug for LineLayer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LineLayer").finish_non_exhaustive()
    }
}

impl LineLayer {
    /// Lines written to stderr; a line stderr cannot take is dropped. A
    /// stderr that is gone (`2>/dev/full`, `2>&1 | head -1` once `head` has
    /// quit) made `eprintln!` panic: a warning ended the run half-way, its
    /// answer missing from the session.
    pub fn stderr() -> Self {
        LineLayer {
            sink: Arc::new(|line| {
                let _ = writeln!(std::io::stderr(), "{line}");
            }),
        }
    }

    /// Lines sent to the returned receiver (for
    /// `InteractiveOptions` of `modes::interactive`).
    pub fn channel() -> (Self, WarningReceiver) {
        let (sender, receiver) = unbounded_channel();
        let sink = move |line| {
            // The UI may have ended already; the line then has nowhere to go.
            let _ = sender.send(line);
        };
        (
            LineLayer {
                sink: Arc::new(sink),
            },
            receiver,
        )
    }
}

impl<S: Subscriber> Layer<S> for LineLayer {
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        (self.sink)(event_line(event));
    }
}

/// `Warning: message (field=value, ...)`, headed by the event's level.
fn event_line(event: &Event<'_>) -> String {
    let mut fields = Fields::default();
    event.record(&mut fields);
    let level = match *event.metadata().level() {
        Level::ERROR => "Error",
        Level::WARN => "Warning",
        Level::INFO => "Info",
        Level::DEBUG => "Debug",
        Level::TRACE => "Trace",
    };
    let mut line = format!("{level}: {}", fields.message);
    if !fields.rest.is_empty() {
        let _ = write!(line, " ({})", fields.rest.join(", "));
    }
    line
}

/// Whether two lines come from the same event (the same level and message,
/// whatever their fields say): `attempt=1` and `attempt=2` of one retry.
pub fn same_event(a: &str, b: &str) -> bool {
    let head = |line: &str| {
        line.split_once(" (")
            .map_or(line, |(head, _)| head)
            .to_owned()
    };
    head(a) == head(b)
}

/// An event's message and its other fields as `name=value`.
#[derive(Default)]
struct Fields {
    message: String,
    rest: Vec<String>,
}

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.message = value.to_owned();
        } else {
            self.rest.push(format!("{}={value}", field.name()));
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        if field.name() == "message" {
            self.message = format!("{value:?}");
        } else {
            self.rest.push(format!("{}={value:?}", field.name()));
        }
    }
}

#[cfg(test)]
mod tests {
    use tracing_subscriber::layer::SubscriberExt;

    use super::*;

    #[test]
    fn each_event_becomes_one_line_with_its_level_and_fields() {
        let (layer, mut receiver) = LineLayer::channel();
        let subscriber = tracing_subscriber::registry().with(layer);
        tracing::subscriber::with_default(subscriber, || {
            tracing::warn!(
                attempt = 1,
                error = %"429 Too Many Requests",
                "retrying the request"
            );
            tracing::error!("cannot save the session: disk full");
        });
        assert_eq!(
            receiver.try_recv().ok().as_deref(),
            Some("Warning: retrying the request (attempt=1, error=429 Too Many Requests)")
        );
        assert_eq!(
            receiver.try_recv().ok().as_deref(),
            Some("Error: cannot save the session: disk full")
        );
        assert!(receiver.try_recv().is_err());
    }

    #[test]
    fn lines_of_one_event_are_the_same_event_whatever_their_fields() {
        let first = "Warning: retrying the request (attempt=1, error=503)";
        assert!(same_event(
            first,
            "Warning: retrying the request (attempt=2, error=429)"
        ));
        assert!(same_event(first, first));
        assert!(!same_event(
            first,
            "Error: retrying the request (attempt=2)"
        ));
        assert!(!same_event(first, "Warning: cannot save the session"));
        assert!(!same_event("Warning: a", "Warning: ab"));
    }
}
