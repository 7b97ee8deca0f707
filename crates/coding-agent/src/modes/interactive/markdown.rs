//! The assistant's Markdown as styled lines: headings, lists, quotes, code
//! blocks, tables laid out in columns and inline emphasis. Re-parsed whole
//! on each update, so text that is still streaming (an unclosed code fence)
//! renders sensibly too. Fenced code gets syntax colours
//! ([`super::highlight`]).

use pulldown_cmark::{
    Alignment, CodeBlockKind, Event, HeadingLevel, LinkType, Options, Parser, Tag, TagEnd,
};

use super::highlight::highlight_block;
use super::wrap::{text_width, wrap};
use crate::render::{Span, Style, StyledLine};

/// `text` rendered for a window `width` columns wide (tables are fitted to
/// it; other lines are the caller's to wrap); blocks are separated by one
/// empty line.
pub fn render_markdown(text: &str, width: usize) -> Vec<StyledLine> {
    let mut out = Renderer {
        width,
        ..Renderer::default()
    };
    for event in Parser::new_ext(text, Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TABLES) {
        out.event(event);
    }
    out.flush();
    while out.lines.last().is_some_and(|l| l.plain().is_empty()) {
        out.lines.pop();
    }
    out.lines
}

#[derive(Default)]
struct Renderer {
    lines: Vec<StyledLine>,
    current: StyledLine,
    /// Bold or accent spans open (strong, emphasis, headings).
    styles: Vec<Style>,
    /// Open lists: the next number of ordered ones.
    lists: Vec<Option<u64>>,
    /// Prefix of the lines of the current item or quote.
    indent: String,
    /// What the first line of a list item starts with, until it is written.
    bullet: Option<String>,
    /// Inside a code block: its info string and the text so far.
    code: Option<(String, String)>,
    /// The open link's target, shown after its text unless the text is it
    /// (an autolink).
    link: Option<String>,
    /// Quotes open around the current line (`> >` is two).
    quotes: usize,
    /// Inside a table: its cells so far, laid out when it ends.
    table: Option<Table>,
    /// The window's width, which tables fit in.
    width: usize,
}

/// A table being read: each column's alignment, the rows done (the header
/// first) and the cells of the row being read.
#[derive(Default)]
struct Table {
    alignments: Vec<Alignment>,
    rows: Vec<Vec<StyledLine>>,
    row: Vec<StyledLine>,
}

impl Table {
    /// The rows laid out in columns as wide as their widest cell, aligned as
    /// the separator row says, the header bold and ruled off; each line
    /// starts with `indent` (a table inside a list or quote). A table wider
    /// than `width` gets narrower columns, their cells wrapped inside them
    /// and the rows ruled apart, rather than lines the transcript would
    /// wrap across the columns.
    fn lines(self, indent: &str, width: usize) -> Vec<StyledLine> {
        let columns = self.rows.iter().map(Vec::len).max().unwrap_or(0);
        let natural: Vec<usize> = (0..columns)
            .map(|column| {
                let cell_width =
                    |row: &Vec<StyledLine>| row.get(column).map_or(0, |c| text_width(&c.plain()));
                self.rows.iter().map(cell_width).max().unwrap_or(0)
            })
            .collect();
        let separators = 3 * columns.saturating_sub(1);
        let room = width.saturating_sub(text_width(indent) + separators);
        let widths = fit_columns(&natural, room);
        let rows: Vec<Vec<Vec<StyledLine>>> = self
            .rows
            .into_iter()
            .map(|row| {
                let cells = widths.iter().enumerate();
                cells
                    .map(|(column, &width)| {
                        let cell = row.get(column).cloned().unwrap_or_default();
                        wrap(&cell, u16::try_from(width).unwrap_or(u16::MAX))
                    })
                    .collect()
            })
            .collect();
        let rule = || {
            let rule: Vec<String> = widths.iter().map(|&w| "─".repeat(w)).collect();
            StyledLine::new(format!("{indent}{}", rule.join("─┼─")), Style::Dim)
        };
        let ruled_apart = rows
            .iter()
            .any(|row| row.iter().any(|cell_rows| cell_rows.len() > 1));
        let mut lines = Vec::new();
        let count = rows.len();
        for (index, row) in rows.into_iter().enumerate() {
            let height = row.iter().map(Vec::len).max().unwrap_or(1);
            for line in 0..height {
                let mut spans = vec![(indent.to_owned(), Style::Dim)];
                for (column, &width) in widths.iter().enumerate() {
                    if column > 0 {
                        spans.push((" │ ".to_owned(), Style::Dim));
                    }
                    let cell = row[column].get(line).cloned().unwrap_or_default();
                    let room = width.saturating_sub(text_width(&cell.plain()));
                    let (before, after) = match self.alignments.get(column) {
                        Some(Alignment::Right) => (room, 0),
                        Some(Alignment::Center) => (room / 2, room - room / 2),
                        _ => (0, room),
                    };
                    spans.push((" ".repeat(before), Style::Normal));
                    for span in cell.spans {
                        let style = if index == 0 { Style::Bold } else { span.style };
                        spans.push((span.text, style));
                    }
                    spans.push((" ".repeat(after), Style::Normal));
                }
                let line = spans
                    .into_iter()
                    .filter(|(text, _)| !text.is_empty())
                    .fold(StyledLine::default(), |line, (text, style)| {
                        line.push(text, style)
                    });
                lines.push(line);
            }
            // Under the header, and between rows when one of them wraps.
            if index == 0 || (ruled_apart && index + 1 < count) {
                lines.push(rule());
            }
        }
        lines
    }
}

/// Column widths that fit `room` columns in all: the `natural` ones when
/// they fit; else a column narrower than an even share keeps its width and
/// the wider ones share what is left evenly (at least one column each).
fn fit_columns(natural: &[usize], room: usize) -> Vec<usize> {
    if natural.iter().sum::<usize>() <= room {
        return natural.to_vec();
    }
    let mut widths = natural.to_vec();
    let mut open: Vec<usize> = (0..natural.len()).collect();
    let mut left = room;
    while !open.is_empty() {
        let share = left / open.len();
        let (fits, wide): (Vec<usize>, Vec<usize>) =
            open.iter().partition(|&&column| natural[column] <= share);
        if fits.is_empty() {
            let extra = left % wide.len();
            for (rank, &column) in wide.iter().enumerate() {
                widths[column] = (share + usize::from(rank < extra)).max(1);
            }
            break;
        }
        left -= fits.iter().map(|&column| natural[column]).sum::<usize>();
        open = wide;
    }
    widths
}

impl Renderer {
    fn style(&self) -> Style {
        self.styles.last().copied().unwrap_or(Style::Normal)
    }

    fn push_text(&mut self, text: &str, style: Style) {
        // A table cell gets its prefix when the table is laid out.
        if self.current.spans.is_empty() && self.table.is_none() {
            let prefix = self.bullet.take().unwrap_or_else(|| self.indent.clone());
            if !prefix.is_empty() {
                self.current.spans.push(Span {
                    text: prefix,
                    style: Style::Dim,
                });
            }
        }
        self.current = std::mem::take(&mut self.current).push(text, style);
    }

    fn flush(&mut self) {
        if !self.current.spans.is_empty() {
            self.lines.push(std::mem::take(&mut self.current));
        }
    }

    fn blank(&mut self) {
        self.flush();
        if self.lists.is_empty() && self.lines.last().is_some_and(|l| !l.plain().is_empty()) {
            self.lines.push(StyledLine::default());
        }
    }

    fn event(&mut self, event: Event<'_>) {
        match event {
            Event::Start(tag) => self.start(tag),
            Event::End(tag) => self.end(tag),
            Event::Text(text) if self.code.is_some() => {
                if let Some((_, code)) = &mut self.code {
                    code.push_str(&text);
                }
            }
            Event::Text(text) => self.push_text(&text, self.style()),
            Event::Code(code) => self.push_text(&code, Style::Accent),
            // A line break in a paragraph stays one, as Pi draws it: a list
            // of files or steps without markers is not run together.
            Event::SoftBreak | Event::HardBreak => self.flush(),
            Event::Rule => {
                self.blank();
                self.lines.push(StyledLine::new("─".repeat(40), Style::Dim));
                self.lines.push(StyledLine::default());
            }
            Event::Html(html) | Event::InlineHtml(html) => {
                self.push_text(html.trim_end(), Style::Dim);
            }
            Event::TaskListMarker(done) => {
                self.push_text(if done { "[x] " } else { "[ ] " }, Style::Dim);
            }
            _ => {}
        }
    }

    fn start(&mut self, tag: Tag<'_>) {
        match tag {
            Tag::Heading { level, .. } => {
                self.blank();
                let marks = match level {
                    HeadingLevel::H1 => "# ",
                    HeadingLevel::H2 => "## ",
                    _ => "### ",
                };
                self.push_text(marks, Style::Dim);
                self.styles.push(Style::Bold);
            }
            Tag::Paragraph if self.bullet.is_none() => self.blank(),
            Tag::List(first) => {
                if self.lists.is_empty() {
                    self.blank();
                } else {
                    self.flush();
                }
                self.lists.push(first);
            }
            Tag::Item => {
                self.flush();
                let depth = self.lists.len().saturating_sub(1);
                let marker = match self.lists.last_mut() {
                    Some(Some(n)) => {
                        let marker = format!("{n}. ");
                        *n += 1;
                        marker
                    }
                    _ => "- ".to_owned(),
                };
                let pad = "  ".repeat(depth);
                self.bullet = Some(format!("{pad}{marker}"));
                self.indent = format!("{pad}{}", " ".repeat(marker.chars().count()));
            }
            Tag::CodeBlock(kind) => {
                self.blank();
                let lang = match kind {
                    CodeBlockKind::Fenced(lang) => lang.to_string(),
                    CodeBlockKind::Indented => String::new(),
                };
                self.push_text(&format!("```{lang}"), Style::Dim);
                self.flush();
                self.code = Some((lang, String::new()));
            }
            Tag::BlockQuote(_) => {
                self.blank();
                self.quotes += 1;
                self.indent = "│ ".repeat(self.quotes);
            }
            Tag::Table(alignments) => {
                self.blank();
                self.table = Some(Table {
                    alignments,
                    ..Table::default()
                });
            }
            Tag::Emphasis | Tag::Strong => self.styles.push(Style::Bold),
            Tag::Strikethrough => self.styles.push(Style::Dim),
            Tag::Link {
                link_type,
                dest_url,
                ..
            } => {
                self.styles.push(Style::Accent);
                let shown_as_text = matches!(link_type, LinkType::Autolink | LinkType::Email);
                self.link = (!shown_as_text).then(|| dest_url.to_string());
            }
            _ => {}
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Heading(_) => {
                self.styles.pop();
                self.flush();
                self.lines.push(StyledLine::default());
            }
            TagEnd::Paragraph => {
                self.flush();
                if self.lists.is_empty() {
                    self.lines.push(StyledLine::default());
                }
            }
            TagEnd::List(_) => {
                self.lists.pop();
                self.flush();
                if self.lists.is_empty() {
                    self.indent.clear();
                    self.lines.push(StyledLine::default());
                }
            }
            TagEnd::Item => {
                self.flush();
                self.bullet = None;
            }
            TagEnd::CodeBlock => {
                if let Some((lang, code)) = self.code.take() {
                    for line in highlight_block(&lang, &code).iter() {
                        for span in line {
                            self.push_text(&span.text, span.style);
                        }
                        self.flush();
                    }
                }
                self.push_text("```", Style::Dim);
                self.flush();
                self.lines.push(StyledLine::default());
            }
            TagEnd::BlockQuote(_) => {
                self.flush();
                // The quote around it, if any, goes on.
                self.quotes = self.quotes.saturating_sub(1);
                self.indent = "│ ".repeat(self.quotes);
                if self.lines.last().is_some_and(|l| !l.plain().is_empty()) {
                    self.lines.push(StyledLine::default());
                }
            }
            TagEnd::Emphasis | TagEnd::Strong | TagEnd::Strikethrough => {
                self.styles.pop();
            }
            TagEnd::Link => {
                self.styles.pop();
                if let Some(url) = self.link.take() {
                    self.push_text(&format!(" ({url})"), Style::Dim);
                }
            }
            TagEnd::TableCell => {
                let cell = std::mem::take(&mut self.current);
                if let Some(table) = &mut self.table {
                    table.row.push(cell);
                }
            }
            TagEnd::TableRow | TagEnd::TableHead => {
                if let Some(table) = &mut self.table {
                    let row = std::mem::take(&mut table.row);
                    table.rows.push(row);
                }
            }
            TagEnd::Table => {
                if let Some(table) = self.table.take() {
                    let lines = table.lines(&self.indent, self.width);
                    self.lines.extend(lines);
                    self.lines.push(StyledLine::default());
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::to_markup;

    /// The markdown rendered 80 columns wide, as markup.
    fn markup(text: &str) -> String {
        to_markup(&render_markdown(text, 80))
    }

    /// The markdown rendered `width` columns wide, as plain lines.
    fn plain(text: &str, width: usize) -> Vec<String> {
        render_markdown(text, width)
            .iter()
            .map(StyledLine::plain)
            .collect()
    }

    #[test]
    fn markdown_renders_headings_lists_code_and_inline_styles() {
        let text = "# Title\n\nSome **bold** and `code`.\n\n- one\n- two\n  1. nested\n\n```rust\nfn main() {}\n```\nafter";
        assert_eq!(
            markup(text),
            "[dim]# [/][bold]Title[/]\n\nSome [bold]bold[/] and [accent]code[/].\n\n[dim]- [/]one\n[dim]- [/]two\n[dim]  1. [/]nested\n\n[dim]```rust[/]\n[accent]fn[/] [bold]main[/]() {}\n[dim]```[/]\n\nafter"
        );
    }

    /// Pi keeps a paragraph's line breaks; they were joined with spaces,
    /// running a list of files or a poem into one line.
    #[test]
    fn line_breaks_in_a_paragraph_stay() {
        let text =
            "Files changed:\nsrc/main.rs\nsrc/lib.rs\n\n- one\n  still one\n\n> quoted\n> twice";
        assert_eq!(
            plain(text, 80),
            [
                "Files changed:",
                "src/main.rs",
                "src/lib.rs",
                "",
                "- one",
                "  still one",
                "",
                "│ quoted",
                "│ twice",
            ]
        );
    }

    #[test]
    fn a_table_is_laid_out_in_aligned_columns_under_a_ruled_header() {
        let text = "| Name | Count | Note |\n|:--|--:|:-:|\n| alpha | 1 | ok |\n| beta-longer | 12345 | a **much** longer note |\n\nafter";
        let lines = render_markdown(text, 80);
        let plain: Vec<String> = lines.iter().map(StyledLine::plain).collect();
        assert_eq!(
            plain,
            [
                "Name        │ Count │        Note       ",
                "────────────┼───────┼───────────────────",
                "alpha       │     1 │         ok        ",
                "beta-longer │ 12345 │ a much longer note",
                "",
                "after",
            ]
        );
        assert!(
            to_markup(&lines[..1]).starts_with("[bold]Name[/]"),
            "the header is bold"
        );
        assert!(
            to_markup(&lines[3..4]).contains("[bold]much[/]"),
            "cells keep their styles"
        );
    }

    #[test]
    fn nested_quotes_keep_their_bars_and_an_autolink_shows_once() {
        let text = "> outer\n> > inner\n>\n> outer again\n\n<https://auto.link> and [docs](https://d.example)";
        assert_eq!(
            plain(text, 80),
            [
                "│ outer",
                "",
                "│ │ inner",
                "",
                "│ outer again",
                "",
                "https://auto.link and docs (https://d.example)",
            ]
        );
    }

    #[test]
    fn markdown_shows_an_unclosed_code_fence_while_it_streams() {
        assert_eq!(
            markup("Look:\n```\nlet x = 1;\n"),
            "Look:\n\n[dim]```[/]\n[accent]let x = 1;[/]\n[dim]```[/]"
        );
    }

    #[test]
    fn markdown_colours_a_rust_code_block_by_syntax() {
        let text = "```rust\nfn main() { let x = \"s\"; } // c\n\nlet n = 42;\n```";
        assert_eq!(
            markup(text),
            "[dim]```rust[/]\n[accent]fn[/] [bold]main[/]() { [accent]let[/] x = [success]\"s\"[/]; } [dim]// c[/]\n\n[accent]let[/] n = [warning]42[/];\n[dim]```[/]"
        );
    }

    #[test]
    fn markdown_keeps_a_block_of_an_unknown_language_plain() {
        assert_eq!(
            markup("```nosuchlang\nfn main() { \"s\" }\n```"),
            "[dim]```nosuchlang[/]\n[accent]fn main() { \"s\" }[/]\n[dim]```[/]"
        );
    }

    #[test]
    fn markdown_colours_an_unclosed_fence_while_it_streams() {
        // The string opened on the first line still colours the second: the
        // grammar's state runs across lines.
        assert_eq!(
            markup("Run:\n```py\nx = \"\"\"doc\nstill doc\n"),
            "Run:\n\n[dim]```py[/]\nx = [success]\"\"\"doc[/]\n[success]still doc[/]\n[dim]```[/]"
        );
    }

    #[test]
    fn markdown_colours_a_code_block_inside_a_list_item_after_its_indent() {
        assert_eq!(
            markup("- step:\n\n  ```sh\n  echo hi # say\n  ```"),
            "[dim]- [/]step:\n[dim]  [/][dim]```sh[/]\n[dim]  [/]echo hi [dim]# say[/]\n[dim]  [/][dim]```[/]"
        );
    }

    #[test]
    fn a_table_wider_than_the_window_wraps_its_cells_inside_their_columns() {
        let text =
            "| Key | Meaning |\n|--|--|\n| a | the first letter of the alphabet |\n| bb | short |";
        let lines = plain(text, 24);
        assert_eq!(
            lines,
            [
                "Key │ Meaning           ",
                "────┼───────────────────",
                "a   │ the first letter  ",
                "    │ of the alphabet   ",
                "────┼───────────────────",
                "bb  │ short             ",
            ]
        );
        assert!(lines.iter().all(|line| text_width(line) <= 24));
    }

    #[test]
    fn columns_narrower_than_an_even_share_keep_their_width() {
        assert_eq!(fit_columns(&[3, 40, 30], 33), [3, 15, 15]);
        assert_eq!(fit_columns(&[3, 40, 30], 34), [3, 16, 15]);
        assert_eq!(fit_columns(&[3, 4], 10), [3, 4], "fits as it is");
        assert_eq!(
            fit_columns(&[9, 9, 9], 2),
            [1, 1, 1],
            "one column each at least"
        );
    }
}
