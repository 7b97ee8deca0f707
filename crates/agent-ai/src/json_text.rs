//! JSON text read as JavaScript's `JSON.parse` reads it, where serde_json is
//! stricter: a UTF-16 surrogate escape with no partner (`"\ud83d"`, half
//! an emoji) is taken, as U+FFFD (a Rust string cannot hold the half). A
//! model server may send one, and so may a client: JavaScript's
//! `JSON.stringify` and Python's `json.dumps` write one for editor text cut
//! in the middle of an emoji. Either failed whole ("unexpected end of hex
//! escape"): the answer, or the RPC command.

use serde::de::DeserializeOwned;

/// `text` parsed as JSON; a lone surrogate escape reads as U+FFFD. Strict
/// first, so text without one costs nothing more.
pub fn from_str<T: DeserializeOwned>(text: &str) -> serde_json::Result<T> {
    serde_json::from_str(text).or_else(|error| {
        let lone = lone_surrogates(text);
        if lone.is_empty() {
            return Err(error);
        }
        let mut replaced = text.to_owned();
        for escape in lone.iter().rev() {
            replaced.replace_range(escape.at..escape.at + ESCAPE_LEN, "\\ufffd");
        }
        serde_json::from_str(&replaced)
    })
}

/// The length of a `\uXXXX` escape.
pub(crate) const ESCAPE_LEN: usize = 6;

/// A `\uXXXX` escape in a string of JSON text naming a UTF-16 surrogate
/// that no partner completes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LoneSurrogate {
    /// Where its backslash is.
    pub(crate) at: usize,
    /// A high (leading) half, else a low one.
    pub(crate) high: bool,
    /// It opens its string (right after the quote).
    pub(crate) opens: bool,
    /// It closes its string (right before the quote).
    pub(crate) closes: bool,
}

/// The lone surrogate escapes in the strings of `json`, in order.
pub(crate) fn lone_surrogates(json: &str) -> Vec<LoneSurrogate> {
    let bytes = json.as_bytes();
    let unit = |at: usize| {
        let hex = json.get(at + 2..at + ESCAPE_LEN)?;
        let unit = u16::from_str_radix(hex, 16).ok()?;
        (bytes[at + 1] == b'u' && (0xD800..0xE000).contains(&unit)).then_some(unit)
    };
    let mut lone: Vec<LoneSurrogate> = Vec::new();
    let (mut at, mut string_start) = (0, None);
    while at < bytes.len() {
        match (string_start, bytes[at]) {
            (None, b'"') => string_start = Some(at + 1),
            (Some(_), b'"') => {
                if let Some(last) = lone.last_mut()
                    && last.at + ESCAPE_LEN == at
                {
                    last.closes = true;
                }
                string_start = None;
            }
            (Some(start), b'\\') => {
                let Some(first) = unit(at) else {
                    at += 2;
                    continue;
                };
                let high = first < 0xDC00;
                let paired = high && unit(at + ESCAPE_LEN).is_some_and(|second| second >= 0xDC00);
                if paired {
                    at += 2 * ESCAPE_LEN;
                } else {
                    lone.push(LoneSurrogate {
                        at,
                        high,
                        opens: at == start,
                        closes: false,
                    });
                    at += ESCAPE_LEN;
                }
                continue;
            }
            _ => {}
        }
        at += 1;
    }
    lone
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    #[test]
    fn a_lone_surrogate_reads_as_a_replacement_and_other_errors_stay() {
        let value: Value =
            from_str(r#"{"message": "cut \ud83d", "x": "\ude00 and \ud83d\ude00"}"#).unwrap();
        assert_eq!(
            value,
            json!({"message": "cut \u{fffd}", "x": "\u{fffd} and 😀"})
        );
        let error = from_str::<Value>(r#"{"message": "no end"#).unwrap_err();
        assert!(error.is_eof(), "{error}");
    }
}
