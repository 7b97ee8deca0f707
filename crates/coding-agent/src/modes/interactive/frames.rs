//! How often a stream's events are drawn. The screen was drawn after every
//! batch of events received, so an answer arriving a delta a millisecond
//! drew a thousand frames a second, each walking the streaming answer: a
//! 300 KB answer cost 4.4 s of CPU though a terminal shows sixty. Events
//! that come sooner than a frame after the last one wait for it (a frame at
//! most later), and are drawn together.

use std::time::Duration;

use tokio::time::Instant;

/// The shortest time between two frames drawn for events: 60 a second.
const FRAME: Duration = Duration::from_millis(16);

/// When the last frame was drawn.
#[derive(Debug, Default)]
pub struct Frames {
    last: Option<Instant>,
}

impl Frames {
    /// A frame was drawn at `at`.
    pub fn drawn(&mut self, at: Instant) {
        self.last = Some(at);
    }

    /// How long events that came at `now` wait before they are drawn:
    /// until a frame has passed since the last one; `None` when it has.
    pub fn wait(&self, now: Instant) -> Option<Duration> {
        let due = self.last? + FRAME;
        (due > now).then(|| due - now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Events wait for the rest of the frame after the last one drawn, and
    /// not at all before the first or once a frame has passed.
    #[test]
    fn events_wait_for_the_rest_of_a_frame() {
        let start = Instant::now();
        let mut frames = Frames::default();
        assert_eq!(frames.wait(start), None);
        frames.drawn(start);
        assert_eq!(
            frames.wait(start + Duration::from_millis(5)),
            Some(Duration::from_millis(11))
        );
        assert_eq!(frames.wait(start + FRAME), None);
        assert_eq!(frames.wait(start + Duration::from_millis(40)), None);
    }
}
