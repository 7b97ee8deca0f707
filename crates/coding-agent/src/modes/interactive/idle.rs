//! The wait for the user's next prompt after an answer: past a threshold,
//! the Notification hooks are told once (`idle_prompt`), so a user who
//! switched windows hears the agent is done.

use std::time::Duration;

use tokio::time::Instant;

/// When the wait for the next prompt is long enough to notify.
#[derive(Debug, Default)]
pub struct IdleTimer {
    /// `None`: never notify (the setting is 0).
    threshold: Option<Duration>,
    /// When the current wait passes the threshold; `None`: no wait under way.
    due: Option<Instant>,
}

impl IdleTimer {
    /// A timer that fires `threshold` after [`IdleTimer::start`].
    pub fn new(threshold: Option<Duration>) -> Self {
        IdleTimer {
            threshold,
            due: None,
        }
    }

    /// An answer is in: the wait for the next prompt starts now.
    pub fn start(&mut self) {
        self.due = self.threshold.map(|threshold| Instant::now() + threshold);
    }

    /// The user is at the keyboard (or a run started): no wait under way.
    pub fn stop(&mut self) {
        self.due = None;
    }

    /// Whether a wait is under way.
    pub fn is_waiting(&self) -> bool {
        self.due.is_some()
    }

    /// Resolves when the wait under way passes the threshold, and ends it
    /// (one notification per wait); never without one.
    pub async fn passed(&mut self) {
        match self.due {
            Some(due) => {
                tokio::time::sleep_until(due).await;
                self.due = None;
            }
            None => std::future::pending().await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn it_fires_once_per_wait_and_not_once_stopped() {
        let mut timer = IdleTimer::new(Some(Duration::from_secs(60)));
        assert!(!timer.is_waiting());
        timer.start();
        let started = Instant::now();
        timer.passed().await;
        assert_eq!(started.elapsed(), Duration::from_secs(60));
        assert!(!timer.is_waiting(), "one notification per wait");
        timer.start();
        timer.stop();
        assert!(!timer.is_waiting());
        let never = tokio::time::timeout(Duration::from_secs(3600), timer.passed()).await;
        assert!(never.is_err());
    }

    #[tokio::test]
    async fn a_threshold_of_none_never_waits() {
        let mut timer = IdleTimer::new(None);
        timer.start();
        assert!(!timer.is_waiting());
    }
}
