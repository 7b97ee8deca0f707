//! Front matter: the `---` block a Markdown file may start with, holding
//! `key: value` lines (prompt templates and skills). Read as the subset of
//! YAML those files use: plain scalars (over indented continuation lines,
//! joined by spaces; a ` #` comment left out), quoted ones (`"..."` with its
//! escapes, `'...'` with `''`), and `>` or `|` block scalars over indented
//! lines; nested maps and lists are skipped, so a skill's `metadata:` does
//! not stop its `description:` from being read. A byte order mark before
//! the block (a Windows editor's) is skipped.

/// A file's front matter fields and the text after them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrontMatter<'a> {
    fields: Vec<(String, String)>,
    /// The text after the block (all of it when there is none).
    pub body: &'a str,
}

impl FrontMatter<'_> {
    /// The value of the top-level key `key`, if the block sets it.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// Whether the key is set to YAML's true (`true`, `True`, `TRUE`).
    pub fn is_true(&self, key: &str) -> bool {
        matches!(self.get(key), Some("true" | "True" | "TRUE"))
    }
}

/// Splits `text` into its front matter (a first line `---` up to the next
/// such line) and the rest; a block never closed is no front matter.
pub fn split(text: &str) -> FrontMatter<'_> {
    let none = FrontMatter {
        fields: Vec::new(),
        body: text,
    };
    let bom = if text.starts_with('\u{feff}') {
        '\u{feff}'.len_utf8()
    } else {
        0
    };
    let mut lines = text[bom..].split_inclusive('\n');
    let Some(first) = lines.next().filter(|line| line.trim_end() == "---") else {
        return none;
    };
    let mut offset = bom + first.len();
    let mut block = Vec::new();
    for line in lines {
        offset += line.len();
        if line.trim_end() == "---" {
            return FrontMatter {
                fields: fields(&block),
                body: &text[offset..],
            };
        }
        block.push(line.trim_end_matches(['\n', '\r']));
    }
    none
}

/// The top-level fields of the block's lines.
fn fields(lines: &[&str]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < lines.len() {
        let line = lines[at];
        at += 1;
        if line.starts_with([' ', '\t', '#', '-']) {
            continue; // nested, a comment, or a list item
        }
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        let value = match value.chars().next() {
            Some(style @ ('>' | '|')) => {
                let start = at;
                while at < lines.len()
                    && (lines[at].trim().is_empty() || lines[at].starts_with([' ', '\t']))
                {
                    at += 1;
                }
                block_scalar(&lines[start..at], style == '>')
            }
            Some(quote @ ('"' | '\'')) => quoted(value, quote),
            _ if value.is_empty() => String::new(),
            _ => {
                // A plain scalar goes on over the indented lines after it.
                let mut text = without_comment(value).to_owned();
                while at < lines.len()
                    && lines[at].starts_with([' ', '\t'])
                    && !lines[at].trim().is_empty()
                {
                    text.push(' ');
                    text.push_str(without_comment(lines[at].trim()));
                    at += 1;
                }
                text
            }
        };
        out.push((key.trim().to_owned(), value));
    }
    out
}

/// A plain scalar without its comment (` # ...`).
fn without_comment(value: &str) -> &str {
    value
        .split_once(" #")
        .map_or(value, |(kept, _)| kept)
        .trim_end()
}

/// A `>` (folded: lines joined by spaces) or `|` (literal) block's text.
fn block_scalar(lines: &[&str], folded: bool) -> String {
    let trimmed: Vec<&str> = lines.iter().map(|line| line.trim()).collect();
    let text = if folded {
        trimmed.join(" ")
    } else {
        trimmed.join("\n")
    };
    text.trim().to_owned()
}

/// A quoted scalar's text: `"..."` with its escapes (`\"`, `\\`, `\n`,
/// `\t`), `'...'` with `''` for a quote; an unclosed one as written.
fn quoted(value: &str, quote: char) -> String {
    let Some(inner) = value[1..].strip_suffix(quote) else {
        return value.to_owned();
    };
    if quote == '\'' {
        return inner.replace("''", "'");
    }
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some(other) => out.push(other),
            None => out.push('\\'),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scalars_quoted_or_not_are_read_and_the_body_follows_the_block() {
        let text = "---\nname: pdf-tools\ndescription: \"Fill: forms\"\nflag: true\n---\n# Body\n";
        let front = split(text);
        assert_eq!(front.get("name"), Some("pdf-tools"));
        assert_eq!(front.get("description"), Some("Fill: forms"));
        assert_eq!(front.get("flag"), Some("true"));
        assert_eq!(front.get("missing"), None);
        assert_eq!(front.body, "# Body\n");
    }

    #[test]
    fn block_scalars_fold_or_keep_lines_and_nested_maps_are_skipped() {
        let text = "---\nmetadata:\n  author: me\n  version: 2\ndescription: >\n  Extracts text\n  from PDFs.\nnotes: |\n  one\n  two\nname: x\n---\n";
        let front = split(text);
        assert_eq!(front.get("description"), Some("Extracts text from PDFs."));
        assert_eq!(front.get("notes"), Some("one\ntwo"));
        assert_eq!(front.get("name"), Some("x"));
        assert_eq!(front.get("author"), None);
    }

    /// Pi reads front matter with a YAML parser: a description wrapped
    /// over two lines was cut at the first, a byte order mark made a skill
    /// "have no description", escapes and comments were kept as text.
    #[test]
    fn wrapped_quoted_commented_and_bom_led_scalars_read_as_yaml_reads_them() {
        let text = "\u{feff}---\ndescription: Use this skill when working with PDF files,\n  forms, and anything else\nname: bad # a comment\nsaid: \"a \\\"quoted\\\" word\"\nits: 'it''s'\nhidden: True\n---\nBody\n";
        let front = split(text);
        assert_eq!(
            front.get("description"),
            Some("Use this skill when working with PDF files, forms, and anything else")
        );
        assert_eq!(front.get("name"), Some("bad"));
        assert_eq!(front.get("said"), Some("a \"quoted\" word"));
        assert_eq!(front.get("its"), Some("it's"));
        assert!(front.is_true("hidden") && !front.is_true("name"));
        assert_eq!(front.body, "Body\n");
    }

    #[test]
    fn text_without_a_closed_block_is_all_body() {
        for text in ["no front matter", "---\nname: x\nnever closed\n"] {
            let front = split(text);
            assert_eq!(front.get("name"), None);
            assert_eq!(front.body, text);
        }
    }
}
