//! Drawing the interactive app into a ratatui `TestBackend` and reading the
//! screen back as text, one line a row, trailing blanks trimmed.

use std::time::Instant;

use coding_agent::modes::interactive::App;
use ratatui::Terminal;
use ratatui::backend::TestBackend;

/// The app drawn on a `width` x `height` screen at `now`.
pub fn screen(app: &mut App, width: u16, height: u16, now: Instant) -> String {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    terminal.draw(|frame| app.draw(frame, now)).unwrap();
    let buffer = terminal.backend().buffer();
    let mut rows = Vec::new();
    for y in 0..height {
        let row: String = (0..width)
            .map(|x| buffer[(x, y)].symbol().to_owned())
            .collect();
        rows.push(row.trim_end().to_owned());
    }
    rows.join("\n")
}
