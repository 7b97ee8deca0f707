//! The assistant's Markdown as styled lines: headings, lists, quotes, code
//! blocks, tables laid out in columns and inline emphasis. Text that is
//! still streaming (an unclosed code fence) renders sensibly too; while it
//! streams, [`MarkdownRows`] parses again only from the last block that may
//! still change. Fenced code gets syntax colours ([`super::highlight`]).

use pulldown_cmark::{
    Alignment, CodeBlockKind, Event, HeadingLevel, LinkType, Options, Parser, Tag, TagEnd,
};

use super::highlight::highlight_block;
use super::wrap::{text_width, wrap, wrap_all};
use crate::render::{Span, Style, StyledLine};

/// `text` rendered for a window `width` columns wide (tables are fitted to
/// it; other lines are the caller's to wrap); blocks are separated by one
/// empty line.
pub fn render_markdown(text: &str, width: usize) -> Vec<StyledLine> {
    let mut out = Renderer {
        width,
        ..Renderer::default()
    };
    for event in Parser::new_ext(text, OPTIONS) {
        out.event(event);
    }
    out.finish();
    out.lines
}

/// The Markdown extensions the answers are read with.
const OPTIONS: Options = Options::ENABLE_STRIKETHROUGH.union(Options::ENABLE_TABLES);

/// A text's Markdown rendered and wrapped to a width, kept between frames
/// while the text grows. Each frame rendered the whole streaming answer
/// again, so an answer cost the square of its length (a 300 KB answer
/// streamed in 20-character deltas burned 15 s of CPU, and a stalled one
/// 1.65 s per 10 s of spinner ticks); now a frame renders only from the last
/// block that may still change, and nothing when the text is unchanged.
///
/// What is final: everything before a top-level block that starts at the
/// beginning of a line, after a blank line. A blank line ends a paragraph
/// (so no later underline makes it a heading or a table's header), a list
/// or a quote (no lazy continuation after it); a fence, or an HTML block
/// that waits for its end marker, left open is still open there, so the
/// parser reports no new block (CommonMark reads blocks line by line and
/// never reopens a closed one). One thing reaches back: a link reference
/// definition gives its meaning to every `[label]` of the text, before it
/// too, so a text with one is rendered whole.
#[derive(Debug, Default)]
pub struct MarkdownRows {
    /// The text drawn last.
    text: String,
    /// The width it was drawn for.
    width: u16,
    /// Bytes of `text` whose rows are final: `rows[..done]`.
    stable: usize,
    /// The renderer as it stood after `text[..stable]`, holding only its
    /// last line (what the next block's spacing looks at).
    carry: Renderer,
    /// The rows of `text`: the final ones, then the rest's.
    rows: Vec<StyledLine>,
    /// How many of `rows` are final.
    done: usize,
    /// How many of the final rows are blank lines at their end: not shown
    /// while nothing follows them.
    done_blank: usize,
    /// How many of `rows` are shown.
    shown: usize,
    /// The text defines a link reference: rendered whole.
    whole: bool,
    /// Bytes parsed so far, for the tests.
    #[cfg(test)]
    parsed: usize,
}

impl MarkdownRows {
    /// Renders `text` wrapped to `width` columns, from where its rows may
    /// still change: the rows of [`render_markdown`], each line wrapped.
    pub fn update(&mut self, text: &str, width: u16) {
        if width == self.width && text == self.text {
            return;
        }
        if width != self.width || !text.starts_with(&self.text[..self.stable]) {
            *self = MarkdownRows {
                width,
                carry: Renderer {
                    width: width.into(),
                    ..Renderer::default()
                },
                #[cfg(test)]
                parsed: self.parsed,
                ..MarkdownRows::default()
            };
        }
        self.text.truncate(self.stable);
        self.text.push_str(&text[self.stable..]);
        self.rows.truncate(self.done);
        let tail = &text[self.stable..];
        let parser = (!self.whole)
            .then(|| Parser::new_ext(tail, OPTIONS))
            .filter(|parser| parser.reference_definitions().iter().next().is_none());
        let Some(parser) = parser else {
            // The definition may name a link of a block kept final.
            self.whole = true;
            self.rows = wrap_all(&render_markdown(text, width.into()), width);
            self.shown = self.rows.len();
            (self.stable, self.done, self.done_blank) = (0, 0, 0);
            #[cfg(test)]
            {
                self.parsed += text.len();
            }
            return;
        };
        #[cfg(test)]
        {
            self.parsed += tail.len();
        }
        let mut out = self.carry.clone();
        let mut depth = 0_usize;
        let mut settled = 0;
        for (event, range) in parser.into_offset_iter() {
            if depth == 0
                && matches!(event, Event::Start(_))
                && range.start > settled
                && block_after_blank_line(&tail[settled..range.start], &tail[range.start..])
            {
                self.settle(&mut out);
                self.stable += range.start - settled;
                settled = range.start;
            }
            match event {
                Event::Start(_) => depth += 1,
                Event::End(_) => depth = depth.saturating_sub(1),
                _ => {}
            }
            out.event(event);
        }
        out.finish();
        self.rows.extend(wrap_all(&out.lines, width));
        // Blank lines end the final rows only until something follows.
        self.shown = if out.lines.is_empty() {
            self.done - self.done_blank
        } else {
            self.rows.len()
        };
    }

    /// The rows of the text last updated.
    pub fn rows(&self) -> &[StyledLine] {
        &self.rows[..self.shown]
    }

    /// Bytes parsed so far.
    #[cfg(test)]
    pub fn parsed(&self) -> usize {
        self.parsed
    }

    /// Makes `out`'s lines final but its last (what the spacing of the
    /// next block looks at), and keeps `out` as the renderer to go on from.
    fn settle(&mut self, out: &mut Renderer) {
        let last = out.lines.pop();
        for line in out.lines.drain(..) {
            if line.plain().is_empty() {
                self.done_blank += 1;
            } else {
                self.done_blank = 0;
            }
            self.rows.extend(wrap(&line, self.width));
        }
        out.lines.extend(last);
        self.done = self.rows.len();
        self.carry = out.clone();
    }
}

/// Whether a block starting where `after` begins, `before` (the text since
/// the last final block) ending just before it, begins at the start of a
/// line after a blank one: then no later text changes what is before it.
fn block_after_blank_line(before: &str, after: &str) -> bool {
    let blank = |line: &str| line.trim_matches([' ', '\t', '\r']).is_empty();
    !after.starts_with([' ', '\t'])
        && before
            .strip_suffix('\n')
            .is_some_and(|before| before.rsplit('\n').next().is_some_and(blank))
}

#[derive(Debug, Default, Clone)]
struct Renderer {
    lines: Vec<StyledLine>,
    current: StyledLine,
    /// Bold or accent spans open (strong, emphasis, headings).
    styles: Vec<Style>,
    /// Open lists: the next number of ordered ones.
    lists: Vec<Option<u64>>,
    /// The quotes and list items open around the current line, outermost
    /// first: each adds its part to the lines' prefix ([`Renderer::prefix`]).
    /// One prefix for the innermost alone lost the quote's bar on the
    /// lines of a list, and on a code block after it, inside a quote.
    blocks: Vec<Container>,
    /// Inside a code block: its info string and the text so far.
    code: Option<(String, String)>,
    /// The open link's target, shown after its text unless the text is it
    /// (an autolink).
    link: Option<String>,
    /// Inside a table: its cells so far, laid out when it ends.
    table: Option<Table>,
    /// The window's width, which tables fit in.
    width: usize,
}

/// A block that holds other blocks, as it prefixes their lines.
#[derive(Debug, Clone)]
enum Container {
    /// A block quote: `│ `.
    Quote,
    /// A list item: its marker (`- `, `2. `) on its first line, spaces as
    /// wide under it.
    Item {
        /// The marker is written.
        written: bool,
        /// `- `, `2. `.
        marker: String,
    },
}

/// A table being read: each column's alignment, the rows done (the header
/// first) and the cells of the row being read.
#[derive(Debug, Default, Clone)]
struct Table {
    alignments: Vec<Alignment>,
    rows: Vec<Vec<StyledLine>>,
    row: Vec<StyledLine>,
}

impl Table {
    /// The rows laid out in columns as wide as their widest cell, aligned as
    /// the separator row says, the header bold and ruled off; each line
    /// starts with `indent` (a table inside a list or quote), the first with
    /// `first` (with a list item's marker, when the table is the item's
    /// first block). A table wider than `width` gets narrower columns, their
    /// cells wrapped inside them and the rows ruled apart, rather than lines
    /// the transcript would wrap across the columns.
    fn lines(self, first: &str, indent: &str, width: usize) -> Vec<StyledLine> {
        let columns = self.rows.iter().map(Vec::len).max().unwrap_or(0);
        let natural: Vec<usize> = (0..columns)
            .map(|column| {
                let cell_width =
                    |row: &Vec<StyledLine>| row.get(column).map_or(0, |c| text_width(&c.plain()));
                self.rows.iter().map(cell_width).max().unwrap_or(0)
            })
            .collect();
        let separators = 3 * columns.saturating_sub(1);
        let prefix_width = text_width(first).max(text_width(indent));
        let room = width.saturating_sub(prefix_width + separators);
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
                let prefix = if lines.is_empty() { first } else { indent };
                let mut spans = vec![(prefix.to_owned(), Style::Dim)];
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

    /// The prefix of a line written now: each open quote's bar and each
    /// open item's indent, outermost first. An item's marker goes on the
    /// first line written inside it (then it is written); an item holding
    /// the line directly indents it as wide as its marker, one around
    /// another block by two columns (nested lists step by two, as Pi's do).
    fn prefix(&mut self) -> String {
        let innermost = self.blocks.len().saturating_sub(1);
        let mut prefix = String::new();
        for (depth, block) in self.blocks.iter_mut().enumerate() {
            match block {
                Container::Quote => prefix.push_str("│ "),
                Container::Item { written, marker } if !*written => {
                    *written = true;
                    prefix.push_str(marker);
                }
                Container::Item { marker, .. } if depth == innermost => {
                    prefix.push_str(&" ".repeat(marker.chars().count()));
                }
                Container::Item { .. } => prefix.push_str("  "),
            }
        }
        prefix
    }

    /// Some list item's marker is not written yet: its first paragraph
    /// goes on the marker's line.
    fn marker_pending(&self) -> bool {
        self.blocks
            .iter()
            .any(|block| matches!(block, Container::Item { written: false, .. }))
    }

    fn push_text(&mut self, text: &str, style: Style) {
        // A table cell gets its prefix when the table is laid out.
        if self.current.spans.is_empty() && self.table.is_none() {
            let prefix = self.prefix();
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

    /// Ends the text: its last line written, the blank lines after it
    /// dropped.
    fn finish(&mut self) {
        self.flush();
        while self.lines.last().is_some_and(|l| l.plain().is_empty()) {
            self.lines.pop();
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
            Tag::Paragraph if !self.marker_pending() => self.blank(),
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
                let marker = match self.lists.last_mut() {
                    Some(Some(n)) => {
                        let marker = format!("{n}. ");
                        *n += 1;
                        marker
                    }
                    _ => "- ".to_owned(),
                };
                self.blocks.push(Container::Item {
                    written: false,
                    marker,
                });
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
                self.blocks.push(Container::Quote);
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
                    self.lines.push(StyledLine::default());
                }
            }
            TagEnd::Item => {
                self.flush();
                self.blocks.pop();
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
                self.blocks.pop();
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
                    let (first, indent) = (self.prefix(), self.prefix());
                    let lines = table.lines(&first, &indent, self.width);
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

    /// Lists and code blocks inside a quote lost its bar (`│ para`, then
    /// `- item one` and `code` bare): a list item set the lines' prefix to
    /// its own indent, and code lines got none. Every line inside a quote
    /// now starts with its bars, inside a list too; a blank line between
    /// blocks stays blank.
    #[test]
    fn every_line_inside_a_quote_carries_its_bars() {
        let text = "> para\n>\n> - item one\n> - item two\n>\n> ```\n> code\n> ```\n\nafter";
        assert_eq!(
            plain(text, 80),
            [
                "│ para",
                "",
                "│ - item one",
                "│ - item two",
                "",
                "│ ```",
                "│ code",
                "│ ```",
                "",
                "after",
            ]
        );
        let nested = "> > - a\n> >   more\n> >   - b\n> >\n> >   after b\n>\n> ```\n> x\n> ```";
        assert_eq!(
            plain(nested, 80),
            [
                "│ │ - a",
                "│ │   more",
                "│ │   - b",
                "│ │   after b",
                "",
                "│ ```",
                "│ x",
                "│ ```",
            ]
        );
        let table = "> - | a | b |\n>   |---|---|\n>   | 1 | 2 |";
        assert_eq!(plain(table, 80), ["│ - a │ b", "│   ──┼──", "│   1 │ 2"]);
        let in_a_list = "- item\n\n  > quoted\n  > - inner\n\n  back in item";
        assert_eq!(
            plain(in_a_list, 80),
            ["- item", "  │ quoted", "  │ - inner", "", "  back in item",]
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

    /// Answers with the blocks whose meaning reaches across blank lines or
    /// depends on the lines after them: fences with blank lines inside,
    /// lists and quotes that go on after one, setext headings, tables,
    /// HTML blocks, link reference definitions (used before and after),
    /// indented code, rules, CRLF lines.
    const STREAMED: &[&str] = &[
        "# Plan\n\nFirst **bold\nstill bold** and `code`.\n\n```rust\nfn main() {\n\n    let x = 1;\n}\n```\n\nAfter the fence.\n\n~~~\nopen tilde\n\n~~~\n\nTitle\n=====\n\nSub\n---\n\nText\n\n---\n\n| a | b |\n|---|--:|\n| 1 | 2 |\n\nnot a row\n\n    indented\n\n    code\n\nend",
        "- one\n- two\n\n- three (loose)\n\n  continued\n\n  ```sh\n  echo in item\n\n  echo after blank\n  ```\n\n1. first\n2. second\n\n3) other list\n\nafter lists\n- tight\n  - nested\n\n    deeper\n\ndone",
        "> quoted\nlazy line\n\n> again\n> > nested\n>\n> back\n\nout\n\n> ```\n> fenced in quote\n\n> next quote\n\nplain",
        "> para\n>\n> - item one\n> - item two\n>\n> ```\n> code\n>\n> ```\n\n> > - a\n> >\n> >   b\n\n- item\n\n  > quoted\n\n  > - inner\n\nafter",
        "<div>\nhtml\n\n</div>\n\n<!-- a comment\n\nthat goes on -->\n\n<pre>\nkept\n\nas is\n</pre>\n\n<span>inline</span> text\n\nafter html",
        "See [the docs] and [x][ref], and [inline](https://i.example).\n\nMore text.\n\n[the docs]: https://d.example\n\n[ref]: https://r.example \"T\"\n\nUsed after: [the docs].",
        "Windows\r\nlines\r\n\r\n- a\r\n- b\r\n\r\n```\r\ncode\r\n\r\n```\r\n\r\nend\r\n",
        "para\n| not | table |\n|---|---|\n| x | y |\n\n* * *\n\nA\n\n  B indented\n\n\tC tabbed\n\nD [broken] ref\n\n[broken]\n",
    ];

    /// `text` rendered whole, each line wrapped: what the transcript showed.
    fn whole(text: &str, width: u16) -> Vec<StyledLine> {
        wrap_all(&render_markdown(text, width.into()), width)
    }

    /// The core proof of `MarkdownRows`: streamed piece by piece, at every
    /// split point and in chunks of any size, it shows what rendering each
    /// prefix whole shows.
    #[test]
    fn a_streamed_text_shows_what_the_whole_text_shows_at_every_point() {
        let mut next = crate::support::seeded::xorshift();
        for text in STREAMED {
            let ends: Vec<usize> = (1..=text.len())
                .filter(|&end| text.is_char_boundary(end))
                .collect();
            for width in [80, 24, 7] {
                // Every character, every line, then chunks of random sizes.
                let lines: Vec<usize> = ends
                    .iter()
                    .copied()
                    .filter(|&end| text[..end].ends_with('\n') || end == text.len())
                    .collect();
                let mut chunks = Vec::new();
                let mut at = 0;
                while at < text.len() {
                    at = (at + 1 + next(60)).min(text.len());
                    while !text.is_char_boundary(at) {
                        at += 1;
                    }
                    chunks.push(at);
                }
                for schedule in [&ends, &lines, &chunks] {
                    let mut rows = MarkdownRows::default();
                    for &end in schedule {
                        let shown = &text[..end];
                        rows.update(shown, width);
                        assert_eq!(
                            rows.rows(),
                            whole(shown, width),
                            "width {width}, streamed up to {shown:?}"
                        );
                    }
                    // A frame with nothing new shows the same.
                    rows.update(text, width);
                    assert_eq!(rows.rows(), whole(text, width));
                    // Rows were kept, but where a definition is.
                    assert_eq!(rows.whole, text.contains("]: "), "{text:?}");
                    assert!(rows.whole || rows.done > 0, "{text:?}");
                }
            }
        }
    }

    /// Random texts of the pieces that make blocks, streamed in random
    /// chunks, show what each prefix shows whole.
    #[test]
    fn random_markdown_streamed_shows_what_the_whole_text_shows() {
        const PIECES: &[&str] = &[
            "\n",
            "\n\n",
            "\n\n",
            "text ",
            "more words ",
            "- ",
            "* ",
            "1. ",
            "2) ",
            "> ",
            "# ",
            "## ",
            "```\n",
            "~~~\n",
            "```rust\n",
            "    ",
            "  ",
            "\t",
            "===\n",
            "---\n",
            "***\n",
            "**",
            "*",
            "_",
            "`",
            "~~",
            "| a | b |\n",
            "|---|:-:|\n",
            "<div>\n",
            "</div>\n",
            "<!-- ",
            " -->",
            "<pre>\n",
            "</pre>\n",
            "[x]",
            "(url)",
            "<https://a.b>",
            "\r\n",
            "日本語 ",
            "a\u{301} ",
        ];
        let mut next = crate::support::seeded::xorshift();
        for _ in 0..300 {
            let text: String = (0..next(120)).map(|_| PIECES[next(PIECES.len())]).collect();
            let width = [80, 30, 9][next(3)];
            let mut rows = MarkdownRows::default();
            let mut at = 0;
            while at < text.len() {
                at = (at + 1 + next(40)).min(text.len());
                while !text.is_char_boundary(at) {
                    at += 1;
                }
                rows.update(&text[..at], width);
                assert_eq!(
                    rows.rows(),
                    whole(&text[..at], width),
                    "width {width}, streamed up to {:?}",
                    &text[..at]
                );
            }
        }
    }

    /// A delta to a long answer renders the answer from its last block only,
    /// and a frame with nothing new renders nothing (each frame rendered the
    /// whole answer: a long one cost the square of its length).
    #[test]
    fn a_delta_renders_only_the_last_block_and_no_delta_nothing() {
        let block = "Some text with **bold** words.\n\n```rust\nlet x = 1;\n```\n\n- a\n- b\n\n";
        let text = block.repeat(500);
        let mut rows = MarkdownRows::default();
        rows.update(&text, 80);
        let whole_once = rows.parsed;
        assert_eq!(whole_once, text.len());
        let longer = format!("{text}The end");
        rows.update(&longer, 80);
        assert!(
            rows.parsed - whole_once <= "- a\n- b\n\nThe end".len(),
            "parsed again: {} bytes",
            rows.parsed - whole_once
        );
        let parsed = rows.parsed;
        rows.update(&longer, 80);
        assert_eq!(rows.parsed, parsed, "nothing new, nothing parsed");
        assert_eq!(rows.rows(), whole(&longer, 80));

        // Another width, or a text that is not the last one grown, starts
        // over.
        rows.update(&longer, 60);
        assert_eq!(rows.rows(), whole(&longer, 60));
        rows.update("Other text", 60);
        assert_eq!(rows.rows(), whole("Other text", 60));
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
