//! Syntax colours for fenced code blocks, with syntect's bundled grammars
//! (pure-Rust regexes). Scopes map to the semantic styles of
//! [`crate::render`] (keyword -> accent, string -> success, comment -> dim,
//! number -> warning, ...), so the colours stay in [`super::theme`] and work
//! in 16-colour terminals; syntect's themes are not used.
//!
//! The transcript is re-rendered on every redraw, so finished blocks are
//! remembered (a bounded cache) and one block is highlighted for at most
//! [`MAX_HIGHLIGHTED_LINES`] lines; the rest is plain.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};

use syntect::easy::ScopeRangeIterator;
use syntect::parsing::{ParseState, Scope, ScopeStack, SyntaxReference, SyntaxSet};

use crate::render::{Span, Style};

/// Lines of one block highlighted; past them the block is plain, so a huge
/// block stays cheap.
pub const MAX_HIGHLIGHTED_LINES: usize = 500;

/// A longer line (minified code) ends highlighting for the rest of the block:
/// regex grammars can be slow on it.
const MAX_HIGHLIGHTED_LINE_BYTES: usize = 4096;

/// The style of code that is not highlighted (unknown language, past the
/// bounds): the flat code style.
pub const PLAIN_CODE: Style = Style::Accent;

/// Remembered blocks before the cache is emptied.
const CACHE_ENTRIES: usize = 256;

/// The bundled grammars, loaded once (the first code block pays for it).
static SYNTAXES: LazyLock<SyntaxSet> = LazyLock::new(SyntaxSet::load_defaults_newlines);

/// Scope prefixes and their styles; for each token the innermost scope with a
/// matching prefix decides, so `constant.character.escape` inside a string
/// is a warning while the rest of the string is a success.
static SCOPE_STYLES: LazyLock<Vec<(Scope, Style)>> = LazyLock::new(|| {
    [
        ("comment", Style::Dim),
        ("string", Style::Success),
        ("constant.character.escape", Style::Warning),
        ("constant", Style::Warning),
        // Operators (`=`, `+`) would make code noisy in the keyword colour.
        ("keyword.operator", Style::Normal),
        ("keyword", Style::Accent),
        ("storage", Style::Accent),
        ("entity.name.tag", Style::Accent),
        ("entity.name", Style::Bold),
        ("markup.inserted", Style::Success),
        ("markup.deleted", Style::Error),
        ("markup.heading", Style::Bold),
        ("invalid", Style::Error),
    ]
    .into_iter()
    .filter_map(|(name, style)| Scope::new(name).ok().map(|scope| (scope, style)))
    .collect()
});

type Highlighted = Arc<Vec<Vec<Span>>>;

/// Highlighted blocks by (language, code).
static CACHE: LazyLock<Mutex<HashMap<(String, String), Highlighted>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

/// The lines of `code` (a fenced block's text, each line ending in `\n`
/// except perhaps the last) as spans, coloured for the fence's info string
/// `info` (`rust`, `py`, `ts`, `sh`, `rust,ignore`, ...). An unknown
/// language gives one [`PLAIN_CODE`] span a line. A block still streaming
/// (no closing fence yet) highlights the same way: the grammar's state runs
/// line by line.
pub fn highlight_block(info: &str, code: &str) -> Highlighted {
    let key = (info.to_owned(), code.to_owned());
    if let Some(hit) = CACHE.lock().ok().and_then(|cache| cache.get(&key).cloned()) {
        return hit;
    }
    let lines = Arc::new(highlight_uncached(info, code));
    if let Ok(mut cache) = CACHE.lock() {
        if cache.len() >= CACHE_ENTRIES {
            cache.clear();
        }
        cache.insert(key, Arc::clone(&lines));
    }
    lines
}

fn highlight_uncached(info: &str, code: &str) -> Vec<Vec<Span>> {
    let syntax = syntax_for(info);
    let mut state = syntax.map(|s| (ParseState::new(s), ScopeStack::new()));
    code.split_inclusive('\n')
        .enumerate()
        .map(|(index, line)| {
            if index >= MAX_HIGHLIGHTED_LINES || line.len() > MAX_HIGHLIGHTED_LINE_BYTES {
                state = None;
            }
            let highlighted = state
                .as_mut()
                .and_then(|(parse, stack)| highlight_line(parse, stack, line));
            if highlighted.is_none() {
                // A grammar error leaves the state unknown: the rest is plain.
                state = None;
            }
            highlighted.unwrap_or_else(|| plain(line))
        })
        .collect()
}

/// The grammar for a fence's info string: its first word, by extension or
/// name (`rs`, `rust`, `Rust`), with aliases for languages the bundled set
/// lacks or names differently.
fn syntax_for(info: &str) -> Option<&'static SyntaxReference> {
    let token = info
        .split(|c: char| c.is_whitespace() || c == ',' || c == '{' || c == '}')
        .find(|t| !t.is_empty())?
        .trim_start_matches('.')
        .to_ascii_lowercase();
    let token = match token.as_str() {
        // No TypeScript grammar is bundled; JavaScript's is close.
        "ts" | "typescript" | "tsx" | "jsx" | "mjs" | "cjs" => "js",
        "shell" | "bash" | "zsh" | "console" | "shellscript" => "sh",
        "py3" | "python3" => "py",
        "golang" => "go",
        "c++" => "cpp",
        "c#" | "csharp" => "cs",
        "yml" => "yaml",
        other => other,
    };
    SYNTAXES.find_syntax_by_token(token)
}

fn plain(line: &str) -> Vec<Span> {
    vec![Span {
        text: line.trim_end_matches(['\n', '\r']).to_owned(),
        style: PLAIN_CODE,
    }]
}

/// One line's spans (without its line ending), or `None` when the grammar
/// fails on it.
fn highlight_line(parse: &mut ParseState, stack: &mut ScopeStack, line: &str) -> Option<Vec<Span>> {
    let ops = parse.parse_line(line, &SYNTAXES).ok()?;
    let text = line.trim_end_matches(['\n', '\r']);
    let mut spans: Vec<Span> = Vec::new();
    for (range, op) in ScopeRangeIterator::new(&ops, line) {
        stack.apply(op).ok()?;
        let end = range.end.min(text.len());
        if range.start >= end {
            continue;
        }
        let piece = text.get(range.start..end)?;
        let style = style_of(stack);
        match spans.last_mut() {
            Some(last) if last.style == style => last.text.push_str(piece),
            _ => spans.push(Span {
                text: piece.to_owned(),
                style,
            }),
        }
    }
    if spans.is_empty() {
        spans.push(Span::default());
    }
    Some(spans)
}

/// The style of the innermost scope that [`SCOPE_STYLES`] names.
fn style_of(stack: &ScopeStack) -> Style {
    stack
        .as_slice()
        .iter()
        .rev()
        .find_map(|scope| {
            SCOPE_STYLES
                .iter()
                .find(|(prefix, _)| prefix.is_prefix_of(*scope))
                .map(|(_, style)| *style)
        })
        .unwrap_or(Style::Normal)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::{StyledLine, to_markup};

    fn markup(info: &str, code: &str) -> String {
        let lines: Vec<StyledLine> = highlight_block(info, code)
            .iter()
            .map(|spans| StyledLine {
                spans: spans.clone(),
            })
            .collect();
        to_markup(&lines)
    }

    #[test]
    fn highlight_colours_rust_keywords_strings_and_comments() {
        assert_eq!(
            markup("rust", "fn main() { let x = \"s\\n\"; } // c\n"),
            "[accent]fn[/] [bold]main[/]() { [accent]let[/] x = [success]\"s[/][warning]\\n[/][success]\"[/]; } [dim]// c[/]"
        );
    }

    #[test]
    fn highlight_takes_the_first_word_of_the_info_string_and_aliases() {
        assert_eq!(
            markup("rust,ignore", "let a = 1;"),
            markup("rs", "let a = 1;")
        );
        assert_eq!(
            markup("ts", "const a = 'x'; // c"),
            "[accent]const[/] a = [success]'x'[/]; [dim]// c[/]"
        );
        assert_eq!(markup("", "let a = 1;"), "[accent]let a = 1;[/]");
    }

    #[test]
    fn highlight_leaves_lines_past_the_bound_plain() {
        let code = "// c\n".repeat(MAX_HIGHLIGHTED_LINES + 2);
        let lines = highlight_block("rust", &code);
        assert_eq!(lines.len(), MAX_HIGHLIGHTED_LINES + 2);
        let style = |i: usize| lines[i].iter().map(|s| s.style).collect::<Vec<_>>();
        assert_eq!(style(MAX_HIGHLIGHTED_LINES - 1), vec![Style::Dim]);
        assert_eq!(style(MAX_HIGHLIGHTED_LINES), vec![PLAIN_CODE]);
        assert_eq!(style(MAX_HIGHLIGHTED_LINES + 1), vec![PLAIN_CODE]);
    }

    #[test]
    fn highlight_leaves_a_very_long_line_and_the_rest_plain() {
        let long = format!("let s = \"{}\";\n", "a".repeat(MAX_HIGHLIGHTED_LINE_BYTES));
        let code = format!("// c\n{long}// d\n");
        let lines = highlight_block("rust", &code);
        let styles: Vec<Vec<Style>> = lines
            .iter()
            .map(|l| l.iter().map(|s| s.style).collect())
            .collect();
        assert_eq!(
            styles,
            vec![vec![Style::Dim], vec![PLAIN_CODE], vec![PLAIN_CODE]]
        );
    }

    #[test]
    fn highlight_colours_diff_additions_and_removals() {
        assert_eq!(
            markup("diff", "-old\n+new\n"),
            "[error]-old[/]\n[success]+new[/]"
        );
    }
}
