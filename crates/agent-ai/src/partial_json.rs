//! Lenient parsing of tool-call arguments, as they stream and once complete.
//!
//! Providers stream a tool call's arguments as fragments of JSON text. While the
//! text is incomplete, a UI still wants to show what the model is asking for
//! (the path it is about to read), and once complete, models sometimes produce
//! JSON that is *almost* valid (a raw newline inside a string, `\d` from a
//! regex, `C:\temp` from a Windows path). [`parse_streaming_json`] does what
//! Pi's `parseStreamingJson` does, in one order for every provider:
//!
//! 1. the text repaired ([`repair_json`]): raw control characters inside
//!    strings escaped, a lone backslash before a character that cannot follow
//!    it doubled, and so is one before `b f n r t` inside a Windows path;
//! 2. strict JSON of the repaired text;
//! 3. the repaired text completed as a prefix of a JSON value
//!    ([`parse_partial_json`]): open strings, arrays and objects closed, a
//!    key without a value dropped;
//! 4. otherwise `{}`; anything but an object is `{}` too, since tool
//!    arguments are an object in every API, except a string holding an
//!    object's JSON (arguments encoded twice, as some models send them):
//!    that object.
//!
//! Unlike Pi, repairing comes before the strict parse: `"C:\temp"` is valid
//! JSON holding a tab, but a model writing it meant a path, and this way the
//! arguments look the same while they stream as once complete.
//! [`StreamingJson`] holds the text of one call while it streams and decides
//! when parsing it again is worth it.
//!
//! Nothing here panics or recurses without bound on what a model sends.

use serde_json::{Map, Number, Value};

/// Deepest nesting the partial parser follows before giving up (to `{}`).
const MAX_DEPTH: usize = 128;

/// Below this many bytes streaming arguments are parsed again on every
/// fragment; above it, whenever they grew by an eighth since the last parse,
/// so a long `write` costs linear time overall instead of quadratic.
const EAGER_PARSE_LIMIT: usize = 4096;

/// The longest string read as a Windows path (Windows' `MAX_PATH`).
const MAX_PATH_CHARS: usize = 260;

/// Parses possibly incomplete or slightly broken JSON tool arguments; never
/// fails (see the module docs for the steps). Empty or blank text, and
/// anything that is not an object, is `{}`.
pub fn parse_streaming_json(text: &str) -> Value {
    if text.trim().is_empty() {
        return Value::Object(Map::new());
    }
    let repaired = repair_json(text);
    let parsed = serde_json::from_str::<Value>(&repaired)
        .ok()
        .or_else(|| parse_partial_json(&repaired));
    match parsed {
        Some(Value::Object(map)) => Value::Object(map),
        // Encoded twice: the string is the arguments' JSON. Read strictly,
        // once: what it holds was meant as it is.
        Some(Value::String(inner)) => match serde_json::from_str::<Value>(&inner) {
            Ok(Value::Object(map)) => Value::Object(map),
            _ => Value::Object(Map::new()),
        },
        _ => Value::Object(Map::new()),
    }
}

/// The JSON text of one tool call's arguments while it streams in.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StreamingJson {
    text: String,
    /// Length of the text at the last parse.
    parsed_len: usize,
    /// The text that came since the last [`Progress`].
    unsaid: String,
}

/// What the fragments since the last report changed: the text they added
/// (the delta to report), and the arguments parsed anew (`None` when they
/// added nothing).
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    /// The text added since the last report.
    pub delta: String,
    /// The arguments from all the text so far.
    pub arguments: Option<Value>,
}

impl StreamingJson {
    /// No text yet.
    pub fn new() -> Self {
        StreamingJson::default()
    }

    /// Appends `fragment`; says what changed when that is due (every
    /// fragment up to 4 KiB, then each time the text grew by an eighth),
    /// else `None`: the fragment waits in the next report. Each report is
    /// an update carrying the whole message so far; one per fragment made
    /// a long call quadratic (1 MB of arguments in 30-character pieces
    /// copied 16 GB, 2 s), and between parses it said nothing new of the
    /// arguments anyway.
    pub fn push(&mut self, fragment: &str) -> Option<Progress> {
        self.text.push_str(fragment);
        self.unsaid.push_str(fragment);
        let len = self.text.len();
        if len > EAGER_PARSE_LIMIT && len < self.parsed_len + self.parsed_len / 8 {
            return None;
        }
        let arguments = (!fragment.is_empty()).then(|| {
            self.parsed_len = len;
            parse_streaming_json(&self.text)
        });
        Some(Progress {
            delta: std::mem::take(&mut self.unsaid),
            arguments,
        })
    }

    /// The text no report has said yet (said at the call's end).
    pub fn take_unsaid(&mut self) -> Option<String> {
        (!self.unsaid.is_empty()).then(|| std::mem::take(&mut self.unsaid))
    }

    /// Whether no text came at all.
    pub fn is_empty(&self) -> bool {
        self.text.is_empty()
    }

    /// The arguments from all the text so far (for the call's end).
    pub fn finish(&self) -> Value {
        parse_streaming_json(&self.text)
    }
}

/// Fixes the mistakes models make inside JSON strings: raw control characters
/// (a literal newline or tab) are escaped; a backslash that does not start a
/// valid escape (`\d`, `\.`, `\u` without four hex digits) is doubled so it
/// stays a backslash, and so is one before `b f n r t` in a string that is a
/// Windows path as a whole (`C:\temp`, `D:/work\table`), where it is a
/// separator. Only a whole path: in a string that merely mentions one (a
/// file's text, a command), `\n` and `\t` are the newlines and tabs JSON says
/// they are, and reading them as separators corrupted what was written.
/// Text outside strings is left alone, and a backslash at the very end is
/// kept (the next fragment may complete it).
pub fn repair_json(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    // Whether the string the scan is in is a Windows path (`None`: outside
    // any string).
    let mut in_string: Option<bool> = None;
    let mut chars = text.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        let Some(windows_path) = in_string else {
            if c == '"' {
                let content = &text[at + 1..];
                in_string = Some(is_windows_path(&content[..raw_string_len(content)]));
            }
            out.push(c);
            continue;
        };
        match c {
            '"' => {
                in_string = None;
                out.push(c);
            }
            '\\' => match chars.peek().map(|&(_, next)| next) {
                None => out.push(c),
                Some('b' | 'f' | 'n' | 'r' | 't') if windows_path => {
                    out.push_str("\\\\");
                }
                Some('"' | '\\' | '/' | 'b' | 'f' | 'n' | 'r' | 't') => {
                    out.push(c);
                    if let Some((_, next)) = chars.next() {
                        out.push(next);
                    }
                }
                Some('u') => {
                    let hex = &text[at + 2..];
                    let digits = hex.chars().take(4).take_while(char::is_ascii_hexdigit);
                    let count = digits.count();
                    if count == 4 || (count == hex.len() && count < 4) {
                        // A complete escape, or one the next fragment may complete.
                        out.push(c);
                    } else {
                        out.push_str("\\\\");
                    }
                }
                Some(_) => out.push_str("\\\\"),
            },
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if u32::from(c) < 0x20 => out.push_str(&format!("\\u{:04x}", u32::from(c))),
            c => out.push(c),
        }
    }
    out
}

/// The length of the raw content of a JSON string that starts `content`
/// (its closing quote not included; all of it when the string is not closed
/// yet).
fn raw_string_len(content: &str) -> usize {
    let mut escaped = false;
    for (at, c) in content.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            '"' => return at,
            _ => {}
        }
    }
    content.len()
}

/// Whether a string's raw content is a Windows path and nothing else: a
/// drive letter, a colon, a separator, then file-name characters (spaces
/// included), within `MAX_PATH`. There the `\t` of `C:\temp` is a separator
/// and a directory name, not a tab.
fn is_windows_path(raw: &str) -> bool {
    let mut chars = raw.chars();
    let drive = matches!(
        (chars.next(), chars.next(), chars.next()),
        (Some(letter), Some(':'), Some('\\' | '/')) if letter.is_ascii_alphabetic()
    );
    drive
        && raw.chars().count() <= MAX_PATH_CHARS
        && !raw
            .chars()
            .any(|c| c.is_control() || matches!(c, '*' | '?' | '<' | '>' | '|'))
}

/// Parses `text` as the beginning of a JSON value and returns the value it
/// would have if it ended here: an open string keeps what it has, open arrays
/// and objects are closed, an object key without its value is dropped, and a
/// cut-off literal (`tr`) or number (`1.`) is completed. `None` when the text
/// is not the prefix of any JSON value (or nests deeper than 128 levels).
pub fn parse_partial_json(text: &str) -> Option<Value> {
    let mut parser = PartialParser {
        chars: text.chars().collect(),
        at: 0,
        depth: 0,
    };
    let value = parser.value().ok()??;
    parser.skip_whitespace();
    (parser.at == parser.chars.len()).then_some(value)
}

/// Why the partial parser stopped: the text cannot be a JSON prefix.
struct Invalid;

/// A recursive-descent parser that treats the end of input as "the value
/// stops here" rather than as an error.
struct PartialParser {
    chars: Vec<char>,
    at: usize,
    depth: usize,
}

impl PartialParser {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.at).copied()
    }

    fn at_end(&self) -> bool {
        self.at >= self.chars.len()
    }

    fn skip_whitespace(&mut self) {
        while self
            .peek()
            .is_some_and(|c| matches!(c, ' ' | '\t' | '\n' | '\r'))
        {
            self.at += 1;
        }
    }

    /// A value, or `None` when the input ends before one begins.
    fn value(&mut self) -> Result<Option<Value>, Invalid> {
        self.skip_whitespace();
        let Some(c) = self.peek() else {
            return Ok(None);
        };
        match c {
            '{' => self.nested(Self::object).map(Some),
            '[' => self.nested(Self::array).map(Some),
            '"' => self.string().map(|s| Some(Value::String(s))),
            't' => self.literal("true", Value::Bool(true)).map(Some),
            'f' => self.literal("false", Value::Bool(false)).map(Some),
            'n' => self.literal("null", Value::Null).map(Some),
            '-' | '0'..='9' => self.number(),
            _ => Err(Invalid),
        }
    }

    fn nested(&mut self, parse: fn(&mut Self) -> Result<Value, Invalid>) -> Result<Value, Invalid> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(Invalid);
        }
        let value = parse(self);
        self.depth -= 1;
        value
    }

    fn object(&mut self) -> Result<Value, Invalid> {
        self.at += 1; // '{'
        let mut map = Map::new();
        loop {
            self.skip_whitespace();
            match self.peek() {
                None => return Ok(Value::Object(map)),
                Some('}') => {
                    self.at += 1;
                    return Ok(Value::Object(map));
                }
                Some('"') => {}
                Some(_) => return Err(Invalid),
            }
            let key = self.string()?;
            self.skip_whitespace();
            match self.peek() {
                None => return Ok(Value::Object(map)),
                Some(':') => self.at += 1,
                Some(_) => return Err(Invalid),
            }
            let Some(value) = self.value()? else {
                return Ok(Value::Object(map));
            };
            map.insert(key, value);
            if !self.next_member('}')? {
                return Ok(Value::Object(map));
            }
        }
    }

    /// After a member of an object or an array: `true` when a `,` says
    /// another follows, `false` when the container ends here (at `close`,
    /// or where the input ends).
    fn next_member(&mut self, close: char) -> Result<bool, Invalid> {
        self.skip_whitespace();
        match self.peek() {
            None => Ok(false),
            Some(',') => {
                self.at += 1;
                Ok(true)
            }
            Some(c) if c == close => {
                self.at += 1;
                Ok(false)
            }
            Some(_) => Err(Invalid),
        }
    }

    fn array(&mut self) -> Result<Value, Invalid> {
        self.at += 1; // '['
        let mut items = Vec::new();
        loop {
            self.skip_whitespace();
            if self.peek() == Some(']') {
                self.at += 1;
                return Ok(Value::Array(items));
            }
            let Some(value) = self.value()? else {
                return Ok(Value::Array(items));
            };
            items.push(value);
            if !self.next_member(']')? {
                return Ok(Value::Array(items));
            }
        }
    }

    /// A string from its opening quote; at the end of input, what it has so
    /// far (a cut-off escape is dropped).
    fn string(&mut self) -> Result<String, Invalid> {
        self.at += 1; // '"'
        let mut out = String::new();
        while let Some(c) = self.peek() {
            self.at += 1;
            match c {
                '"' => return Ok(out),
                '\\' => {
                    let Some(escape) = self.peek() else {
                        return Ok(out);
                    };
                    self.at += 1;
                    match escape {
                        '"' => out.push('"'),
                        '\\' => out.push('\\'),
                        '/' => out.push('/'),
                        'b' => out.push('\u{8}'),
                        'f' => out.push('\u{c}'),
                        'n' => out.push('\n'),
                        'r' => out.push('\r'),
                        't' => out.push('\t'),
                        'u' => match self.unicode_escape()? {
                            Some(decoded) => out.push(decoded),
                            None => return Ok(out),
                        },
                        _ => return Err(Invalid),
                    }
                }
                c => out.push(c),
            }
        }
        Ok(out)
    }

    /// The character of a `\uXXXX` escape (joining a surrogate pair), or `None`
    /// when the input ends inside it.
    fn unicode_escape(&mut self) -> Result<Option<char>, Invalid> {
        let Some(high) = self.hex4()? else {
            return Ok(None);
        };
        if !(0xD800..0xDC00).contains(&high) {
            return Ok(Some(char::from_u32(high).unwrap_or('\u{FFFD}')));
        }
        // A high surrogate: a low one should follow as `\uXXXX`.
        if self.at_end() || (self.peek() == Some('\\') && self.at + 1 >= self.chars.len()) {
            return Ok(None);
        }
        if self.peek() != Some('\\') || self.chars.get(self.at + 1) != Some(&'u') {
            return Ok(Some('\u{FFFD}'));
        }
        self.at += 2;
        let Some(low) = self.hex4()? else {
            return Ok(None);
        };
        if (0xDC00..0xE000).contains(&low) {
            let code = 0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00);
            Ok(Some(char::from_u32(code).unwrap_or('\u{FFFD}')))
        } else {
            Ok(Some('\u{FFFD}'))
        }
    }

    fn hex4(&mut self) -> Result<Option<u32>, Invalid> {
        let mut code = 0;
        for _ in 0..4 {
            let Some(c) = self.peek() else {
                return Ok(None);
            };
            let digit = c.to_digit(16).ok_or(Invalid)?;
            code = code * 16 + digit;
            self.at += 1;
        }
        Ok(Some(code))
    }

    /// `true`, `false` or `null`, or a prefix of one the input ends in.
    fn literal(&mut self, word: &str, value: Value) -> Result<Value, Invalid> {
        for expected in word.chars() {
            match self.peek() {
                None => return Ok(value),
                Some(c) if c == expected => self.at += 1,
                Some(_) => return Err(Invalid),
            }
        }
        Ok(value)
    }

    /// A number; one the input cuts short (`1.`, `2e`, `-`) keeps its complete
    /// part, or is no value at all.
    fn number(&mut self) -> Result<Option<Value>, Invalid> {
        let start = self.at;
        while self
            .peek()
            .is_some_and(|c| matches!(c, '0'..='9' | '-' | '+' | '.' | 'e' | 'E'))
        {
            self.at += 1;
        }
        let text: String = self.chars[start..self.at].iter().collect();
        if let Ok(number) = serde_json::from_str::<Number>(&text) {
            return Ok(Some(Value::Number(number)));
        }
        if !self.at_end() {
            return Err(Invalid);
        }
        let complete = text.trim_end_matches(['-', '+', '.', 'e', 'E']);
        if complete.is_empty() {
            return Ok(None);
        }
        serde_json::from_str::<Number>(complete)
            .map(|n| Some(Value::Number(n)))
            .map_err(|_| Invalid)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn valid_json_parses_as_is() {
        assert_eq!(
            parse_streaming_json(r#"{"path": "a.txt", "limit": 5}"#),
            json!({"path": "a.txt", "limit": 5})
        );
    }

    #[test]
    fn blank_text_is_an_empty_object() {
        assert_eq!(parse_streaming_json(""), json!({}));
        assert_eq!(parse_streaming_json("  \n"), json!({}));
    }

    #[test]
    fn raw_newline_and_tab_inside_a_string_are_escaped() {
        assert_eq!(
            parse_streaming_json("{\"content\": \"line 1\nline\t2\"}"),
            json!({"content": "line 1\nline\t2"})
        );
    }

    #[test]
    fn lone_backslash_before_an_invalid_escape_stays_a_backslash() {
        assert_eq!(
            parse_streaming_json(r#"{"pattern": "\d+\.rs", "path": "C:\\x"}"#),
            json!({"pattern": "\\d+\\.rs", "path": "C:\\x"})
        );
    }

    #[test]
    fn unicode_escape_without_four_hex_digits_is_kept_literally() {
        assert_eq!(
            parse_streaming_json(r#"{"a": "\uZZ"}"#),
            json!({"a": "\\uZZ"})
        );
    }

    #[test]
    fn prefixes_of_an_object_parse_to_what_has_arrived() {
        let full = r#"{"path": "src/main.rs", "offset": 10, "flags": [true, null]}"#;
        let expected = [
            (r#"{"#, json!({})),
            (r#"{"pa"#, json!({})),
            (r#"{"path""#, json!({})),
            (r#"{"path": "#, json!({})),
            (r#"{"path": "src/ma"#, json!({"path": "src/ma"})),
            (
                r#"{"path": "src/main.rs", "offset": 1"#,
                json!({"path": "src/main.rs", "offset": 1}),
            ),
            (
                r#"{"path": "src/main.rs", "offset": 10, "flags": [tr"#,
                json!({"path": "src/main.rs", "offset": 10, "flags": [true]}),
            ),
            (
                r#"{"path": "src/main.rs", "offset": 10, "flags": [true, n"#,
                json!({"path": "src/main.rs", "offset": 10, "flags": [true, null]}),
            ),
        ];
        for (prefix, value) in expected {
            assert!(full.starts_with(prefix), "{prefix}");
            assert_eq!(parse_streaming_json(prefix), value, "{prefix}");
        }
    }

    #[test]
    fn cut_off_numbers_keep_their_complete_part() {
        assert_eq!(parse_streaming_json(r#"{"a": 1."#), json!({"a": 1}));
        assert_eq!(parse_streaming_json(r#"{"a": 2.5e"#), json!({"a": 2.5}));
        assert_eq!(parse_streaming_json(r#"{"a": -"#), json!({}));
    }

    #[test]
    fn cut_off_escapes_are_dropped() {
        assert_eq!(parse_streaming_json(r#"{"a": "x\"#), json!({"a": "x"}));
        assert_eq!(parse_streaming_json(r#"{"a": "x\u00"#), json!({"a": "x"}));
        assert_eq!(
            parse_streaming_json(r#"{"a": "x\u00e9"#),
            json!({"a": "x\u{e9}"})
        );
        assert_eq!(
            parse_streaming_json(r#"{"a": "\ud83d\ude00"#),
            json!({"a": "\u{1F600}"})
        );
    }

    #[test]
    fn text_that_cannot_be_json_is_an_empty_object() {
        assert_eq!(parse_streaming_json("not json"), json!({}));
        assert_eq!(parse_streaming_json(r#"{"a": 1} trailing"#), json!({}));
        assert_eq!(parse_streaming_json(r#"{"a" 1}"#), json!({}));
    }

    #[test]
    fn nesting_past_the_limit_is_an_empty_object_not_a_stack_overflow() {
        let deep = "[".repeat(100_000);
        assert_eq!(parse_streaming_json(&deep), json!({}));
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
    fn escapes_and_surrogate_pairs_decode_while_streaming() {
        assert_eq!(
            parse_streaming_json(r#"{"s": "\u00e9\ud83d\ude00 \"q\"\n"#),
            json!({"s": "é😀 \"q\"\n"})
        );
        assert_eq!(parse_streaming_json(r#"{"s": "ab\u00"#), json!({"s": "ab"}));
        assert_eq!(parse_streaming_json(r#"{"all": tr"#), json!({"all": true}));
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
        assert_eq!(
            parse_streaming_json("{\"path\": \"C:\\dir\\q.txt\", \"content\": \"a\nb\"}"),
            json!({"path": "C:\\dir\\q.txt", "content": "a\nb"})
        );
        // Not a path: a real tab and newline stay.
        assert_eq!(
            parse_streaming_json(r#"{"text": "note:\tb\nc"}"#),
            json!({"text": "note:\tb\nc"})
        );
        // A string that mentions a path (a file's text, a command) keeps its
        // newlines and tabs: they were written as such.
        assert_eq!(
            parse_streaming_json(
                r#"{"content": "@echo off\r\ncd C:\\tools\r\nrun.exe\r\n", "more": "Install to C:/Program Files/App\nThen run it\tnow\n"}"#
            ),
            json!({"content": "@echo off\r\ncd C:\\tools\r\nrun.exe\r\n", "more": "Install to C:/Program Files/App\nThen run it\tnow\n"})
        );
        assert_eq!(
            parse_streaming_json(r#"{"path": "C:\Program Files\new app\readme.txt"}"#),
            json!({"path": "C:\\Program Files\\new app\\readme.txt"})
        );
    }

    #[test]
    fn anything_but_an_object_is_an_empty_object() {
        assert_eq!(parse_streaming_json("[1, 2]"), json!({}));
        assert_eq!(parse_streaming_json("null"), json!({}));
        assert_eq!(parse_streaming_json(r#""text""#), json!({}));
        assert_eq!(parse_streaming_json(r#""[1, 2]""#), json!({}));
    }

    #[test]
    fn arguments_encoded_twice_are_read_as_the_object_they_hold() {
        let twice =
            serde_json::to_string(&json!({"path": "x.txt", "limit": 5}).to_string()).unwrap();
        assert_eq!(
            parse_streaming_json(&twice),
            json!({"path": "x.txt", "limit": 5})
        );
    }

    #[test]
    fn streaming_arguments_parse_every_fragment_while_small() {
        let mut arguments = StreamingJson::new();
        let parsed = |progress: Option<Progress>| progress.and_then(|p| p.arguments);
        assert_eq!(parsed(arguments.push("")), None);
        assert_eq!(
            parsed(arguments.push(r#"{"path": "a"#)),
            Some(json!({"path": "a"}))
        );
        assert_eq!(
            parsed(arguments.push(r#".txt"}"#)),
            Some(json!({"path": "a.txt"}))
        );
        assert_eq!(arguments.finish(), json!({"path": "a.txt"}));
        assert_eq!(arguments.take_unsaid(), None);
    }

    #[test]
    fn long_streaming_arguments_are_parsed_again_only_when_grown_by_an_eighth() {
        let mut arguments = StreamingJson::new();
        let head = format!(r#"{{"content": "{}"#, "x".repeat(EAGER_PARSE_LIMIT));
        assert!(arguments.push(&head).is_some());
        let reports: Vec<Option<Progress>> = (0..600).map(|_| arguments.push("y")).collect();
        // The next parse is due once an eighth of the parsed length was
        // added; the fragments before it come with it, as one delta.
        let due = reports.iter().position(Option::is_some).unwrap();
        assert_eq!(due + 1, head.len() / 8);
        assert_eq!(reports.iter().flatten().count(), 1);
        assert_eq!(reports[due].as_ref().unwrap().delta, "y".repeat(due + 1));
        assert_eq!(arguments.take_unsaid(), Some("y".repeat(600 - due - 1)));
        let content = format!("{}{}", "x".repeat(EAGER_PARSE_LIMIT), "y".repeat(600));
        assert_eq!(arguments.finish(), json!({ "content": content }));
    }
}
