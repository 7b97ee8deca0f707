//! Tool arguments that are still streaming in, or that a model malformed.
//!
//! Interim home: the shared `crate::partial_json` module replaces this file
//! when the providers are merged; only [`parse_streaming_json`] is used from
//! outside it.
//!
//! Order, as Pi's `parseStreamingJson` (spec §2.2): strict JSON of the
//! repaired text (raw control characters inside strings escaped, a lone
//! backslash before an invalid escape doubled, and so is one before `b f n r t`
//! right after a Windows drive path like `C:\temp`); then a tolerant parse of
//! the repaired text that closes what is still open; otherwise `{}`. Anything
//! but an object is `{}`, because tool arguments are an object.
//!
//! Unlike Pi, the tolerant parse reads the repaired text, so a Windows path
//! looks the same while streaming as at the end.

use serde_json::{Map, Value};

/// The arguments `text` describes so far; never fails.
pub(super) fn parse_streaming_json(text: &str) -> Value {
    if text.trim().is_empty() {
        return empty();
    }
    // Repair first even when the text parses: `"C:\temp"` is valid JSON
    // with a tab in it, but a model writing it meant a path.
    let repaired = repair(text);
    let parsed = serde_json::from_str::<Value>(&repaired)
        .ok()
        .or_else(|| Tolerant::new(&repaired).document());
    match parsed {
        Some(Value::Object(map)) => Value::Object(map),
        _ => empty(),
    }
}

fn empty() -> Value {
    Value::Object(Map::new())
}

/// Escapes raw control characters inside strings and doubles a backslash that
/// does not start a valid JSON escape (Windows paths written by a model).
fn repair(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    let mut in_string = false;
    // The string's text so far, escapes kept as written (as Pi keeps them).
    let mut prefix = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if !in_string {
            out.push(c);
            in_string = c == '"';
            prefix.clear();
            continue;
        }
        match c {
            '"' => {
                out.push(c);
                in_string = false;
            }
            '\\' => match chars.peek().copied() {
                // Cut off by the end of what arrived so far: the next delta
                // completes the escape; the tolerant parse drops it meanwhile.
                None => out.push('\\'),
                Some('u') => {
                    let digits: String = chars.clone().skip(1).take(4).collect();
                    let hex = digits.chars().all(|d| d.is_ascii_hexdigit());
                    if hex {
                        out.push('\\');
                    } else {
                        out.push_str("\\\\");
                        prefix.push('\\');
                    }
                }
                Some('b' | 'f' | 'n' | 'r' | 't') if ends_in_windows_path(&prefix) => {
                    out.push_str("\\\\");
                    prefix.push('\\');
                }
                Some(next) if matches!(next, '"' | '\\' | '/' | 'b' | 'f' | 'n' | 'r' | 't') => {
                    out.push('\\');
                    out.push(next);
                    prefix.push('\\');
                    if next != '\\' {
                        prefix.push(next);
                    }
                    chars.next();
                }
                _ => {
                    out.push_str("\\\\");
                    prefix.push('\\');
                }
            },
            c if u32::from(c) < 0x20 => {
                out.push_str(&escape_control(c));
                prefix.push(c);
            }
            c => {
                out.push(c);
                prefix.push(c);
            }
        }
    }
    out
}

/// Whether `prefix` ends in a Windows path (`C:\dir\na`): a drive letter
/// not glued to a word, a colon, then separators and file-name characters.
/// There `\t` in `C:\temp` is a directory name, not a tab.
fn ends_in_windows_path(prefix: &str) -> bool {
    let mut tail: Vec<char> = prefix.chars().rev().take(160).collect();
    tail.reverse();
    let Some(colon) = tail.iter().rposition(|&c| c == ':') else {
        return false;
    };
    let drive_ok = colon >= 1
        && tail[colon - 1].is_ascii_alphabetic()
        && (colon < 2 || !tail[colon - 2].is_ascii_alphanumeric());
    let rest = &tail[colon + 1..];
    drive_ok
        && rest.first().is_none_or(|&c| c == '\\' || c == '/')
        && !rest
            .iter()
            .any(|c| matches!(c, '"' | '*' | '?' | '<' | '>' | '|' | '\r' | '\n'))
}

fn escape_control(c: char) -> String {
    match c {
        '\u{8}' => "\\b".to_owned(),
        '\u{c}' => "\\f".to_owned(),
        '\n' => "\\n".to_owned(),
        '\r' => "\\r".to_owned(),
        '\t' => "\\t".to_owned(),
        other => format!("\\u{:04x}", u32::from(other)),
    }
}

/// A lenient recursive-descent parser: at the end of input it closes open
/// strings, arrays and objects and drops a key whose value has not begun.
/// Raw control characters and invalid escapes inside strings are kept as text.
struct Tolerant<'a> {
    text: &'a [u8],
    pos: usize,
}

/// Nesting beyond this is not tool arguments; give up rather than recurse.
const MAX_DEPTH: usize = 128;

impl<'a> Tolerant<'a> {
    fn new(text: &'a str) -> Self {
        Tolerant {
            text: text.as_bytes(),
            pos: 0,
        }
    }

    /// The whole input as one value, or `None` when it is not JSON-like.
    fn document(mut self) -> Option<Value> {
        let value = self.value(0)?;
        self.skip_ws();
        (self.pos == self.text.len()).then_some(value)
    }

    fn peek(&self) -> Option<u8> {
        self.text.get(self.pos).copied()
    }

    fn skip_ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.pos += 1;
        }
    }

    /// A value; `None` when input ends before it begins or it is invalid.
    fn value(&mut self, depth: usize) -> Option<Value> {
        if depth > MAX_DEPTH {
            return None;
        }
        self.skip_ws();
        match self.peek()? {
            b'{' => self.object(depth),
            b'[' => self.array(depth),
            b'"' => self.string().map(|(text, _)| Value::String(text)),
            b'-' | b'0'..=b'9' => self.number(),
            b't' => self.literal("true", Value::Bool(true)),
            b'f' => self.literal("false", Value::Bool(false)),
            b'n' => self.literal("null", Value::Null),
            _ => None,
        }
    }

    fn object(&mut self, depth: usize) -> Option<Value> {
        self.pos += 1;
        let mut map = Map::new();
        loop {
            self.skip_ws();
            match self.peek() {
                None => return Some(Value::Object(map)),
                Some(b'}') => {
                    self.pos += 1;
                    return Some(Value::Object(map));
                }
                Some(b',') => {
                    self.pos += 1;
                    continue;
                }
                Some(b'"') => {}
                Some(_) => return None,
            }
            let (key, closed) = self.string()?;
            if !closed {
                // The key itself is cut off.
                return Some(Value::Object(map));
            }
            self.skip_ws();
            match self.peek() {
                None => return Some(Value::Object(map)),
                Some(b':') => self.pos += 1,
                Some(_) => return None,
            }
            match self.value(depth + 1) {
                Some(value) => {
                    map.insert(key, value);
                }
                // The value has not begun, or is cut off where it cannot be
                // completed (a lone `-`).
                None if self.pos >= self.text.len() => return Some(Value::Object(map)),
                None => return None,
            }
        }
    }

    fn array(&mut self, depth: usize) -> Option<Value> {
        self.pos += 1;
        let mut items = Vec::new();
        loop {
            self.skip_ws();
            match self.peek() {
                None => return Some(Value::Array(items)),
                Some(b']') => {
                    self.pos += 1;
                    return Some(Value::Array(items));
                }
                Some(b',') => {
                    self.pos += 1;
                    continue;
                }
                Some(_) => {}
            }
            match self.value(depth + 1) {
                Some(value) => items.push(value),
                None if self.pos >= self.text.len() => return Some(Value::Array(items)),
                None => return None,
            }
        }
    }

    /// A string from its opening quote, and whether its closing quote came;
    /// at the end of input, what arrived.
    fn string(&mut self) -> Option<(String, bool)> {
        self.pos += 1;
        let mut bytes = Vec::new();
        while let Some(b) = self.peek() {
            self.pos += 1;
            match b {
                b'"' => return String::from_utf8(bytes).ok().map(|s| (s, true)),
                b'\\' => match self.peek() {
                    None => break,
                    Some(e) => {
                        self.pos += 1;
                        match e {
                            b'"' => bytes.push(b'"'),
                            b'\\' => bytes.push(b'\\'),
                            b'/' => bytes.push(b'/'),
                            b'b' => bytes.push(8),
                            b'f' => bytes.push(12),
                            b'n' => bytes.push(b'\n'),
                            b'r' => bytes.push(b'\r'),
                            b't' => bytes.push(b'\t'),
                            b'u' => self.unicode_escape(&mut bytes),
                            other => {
                                bytes.push(b'\\');
                                bytes.push(other);
                            }
                        }
                    }
                },
                other => bytes.push(other),
            }
        }
        String::from_utf8(bytes).ok().map(|s| (s, false))
    }

    /// After `\u`: four hex digits (and a low surrogate when this is a high
    /// one); a cut-off or invalid escape is kept as written, or dropped at the
    /// end of input.
    fn unicode_escape(&mut self, bytes: &mut Vec<u8>) {
        let Some(first) = self.hex4(self.pos) else {
            if self.text.len() - self.pos >= 4 {
                bytes.extend_from_slice(b"\\u");
            } else {
                self.pos = self.text.len();
            }
            return;
        };
        self.pos += 4;
        let code = if (0xD800..0xDC00).contains(&first)
            && self.text.get(self.pos..self.pos + 2) == Some(b"\\u")
        {
            match self.hex4(self.pos + 2) {
                Some(low) if (0xDC00..0xE000).contains(&low) => {
                    self.pos += 6;
                    0x10000 + ((first - 0xD800) << 10) + (low - 0xDC00)
                }
                _ => 0xFFFD,
            }
        } else {
            first
        };
        let c = char::from_u32(code).unwrap_or('\u{FFFD}');
        let mut buf = [0; 4];
        bytes.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
    }

    fn hex4(&self, at: usize) -> Option<u32> {
        let digits = self.text.get(at..at + 4)?;
        let digits = std::str::from_utf8(digits).ok()?;
        u32::from_str_radix(digits, 16).ok()
    }

    /// The longest number at the cursor; a lone `-` or `1.` cut off at the
    /// end of input keeps its digits.
    fn number(&mut self) -> Option<Value> {
        let start = self.pos;
        while matches!(
            self.peek(),
            Some(b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9')
        ) {
            self.pos += 1;
        }
        let mut text = std::str::from_utf8(&self.text[start..self.pos]).ok()?;
        loop {
            if let Ok(value) = serde_json::from_str::<Value>(text) {
                return Some(value);
            }
            if self.pos < self.text.len() || text.is_empty() {
                return None;
            }
            text = &text[..text.len() - 1];
        }
    }

    /// `true`, `false` or `null`, also when cut off at the end of input.
    fn literal(&mut self, word: &str, value: Value) -> Option<Value> {
        let rest = &self.text[self.pos..];
        let word = word.as_bytes();
        if rest.starts_with(word) {
            self.pos += word.len();
            return Some(value);
        }
        if word.starts_with(rest) {
            self.pos = self.text.len();
            return Some(value);
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn complete_json_parses_strictly() {
        assert_eq!(
            parse_streaming_json(r#"{"path": "a.txt", "limit": 3}"#),
            json!({"path": "a.txt", "limit": 3})
        );
    }

    #[test]
    fn empty_or_blank_input_is_an_empty_object() {
        assert_eq!(parse_streaming_json(""), json!({}));
        assert_eq!(parse_streaming_json("  \n"), json!({}));
    }

    #[test]
    fn cut_off_string_value_keeps_what_arrived() {
        assert_eq!(
            parse_streaming_json(r#"{"path": "src/ma"#),
            json!({"path": "src/ma"})
        );
    }

    #[test]
    fn key_without_value_yet_is_dropped() {
        assert_eq!(parse_streaming_json(r#"{"a": 1, "pa"#), json!({"a": 1}));
        assert_eq!(parse_streaming_json(r#"{"a": 1, "path":"#), json!({"a": 1}));
        assert_eq!(
            parse_streaming_json(r#"{"a": 1, "path": "#),
            json!({"a": 1})
        );
    }

    #[test]
    fn open_arrays_and_nested_objects_are_closed() {
        assert_eq!(
            parse_streaming_json(r#"{"edits": [{"old": "x", "new": "y"}, {"old": "z"#),
            json!({"edits": [{"old": "x", "new": "y"}, {"old": "z"}]})
        );
    }

    #[test]
    fn cut_off_numbers_and_literals_complete() {
        assert_eq!(
            parse_streaming_json(r#"{"limit": 12"#),
            json!({"limit": 12})
        );
        assert_eq!(parse_streaming_json(r#"{"limit": 1."#), json!({"limit": 1}));
        assert_eq!(parse_streaming_json(r#"{"all": tr"#), json!({"all": true}));
    }

    #[test]
    fn raw_newlines_and_windows_paths_are_repaired() {
        assert_eq!(
            parse_streaming_json("{\"path\": \"C:\\dir\\q.txt\", \"content\": \"a\nb\"}"),
            json!({"path": "C:\\dir\\q.txt", "content": "a\nb"})
        );
    }

    #[test]
    fn escapes_after_a_windows_drive_are_path_separators() {
        assert_eq!(
            parse_streaming_json(r#"{"path": "C:\temp\new\file.txt"}"#),
            json!({"path": "C:\\temp\\new\\file.txt"})
        );
        assert_eq!(
            parse_streaming_json(r#"{"path": "D:/work\table"#),
            json!({"path": "D:/work\\table"})
        );
        // Not a path: a real tab and newline stay.
        assert_eq!(
            parse_streaming_json(r#"{"text": "note:\tb\nc"}"#),
            json!({"text": "note:\tb\nc"})
        );
    }

    #[test]
    fn non_objects_and_garbage_become_an_empty_object() {
        assert_eq!(parse_streaming_json("[1, 2]"), json!({}));
        assert_eq!(parse_streaming_json("not json"), json!({}));
        assert_eq!(parse_streaming_json(r#"{"a": 1} trailing"#), json!({}));
    }

    #[test]
    fn escapes_and_surrogate_pairs_decode_while_streaming() {
        assert_eq!(
            parse_streaming_json(r#"{"s": "\u00e9\ud83d\ude00 \"q\"\n"#),
            json!({"s": "é😀 \"q\"\n"})
        );
        assert_eq!(parse_streaming_json(r#"{"s": "ab\u00"#), json!({"s": "ab"}));
    }
}
