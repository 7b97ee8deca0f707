//! Ordering names as Pi's `ls` does: `a.toLowerCase().localeCompare(b.toLowerCase())`
//! in Node's default (ICU root) collation, with ties left in `readdir` order,
//! which Node (libuv) returns sorted by bytes.
//!
//! A full ICU collator is a large dependency for one directory listing, so this
//! is a small model of the parts of the Unicode Collation Algorithm that decide
//! the order of real file names:
//! - primary level: whitespace < punctuation and symbols (ASCII punctuation in
//!   ICU's order) < currency < digits < letters; digits compare one by one
//!   (`10` < `9`); letters by their base letter after compatibility
//!   decomposition (`é` sorts with `e`, `ﬁ` as `fi`, `ß` as `ss`);
//! - secondary level: accents, in ICU's order (`e` < `é` < `è` < `ê` < `ë`);
//! - then the raw bytes, as Node's stable sort over a byte-sorted `readdir` does.
//!
//! Case never matters beyond that last tie-break: both sides are lower-cased first.
//! Checked against Node 20 on 5,000 random names mixing ASCII punctuation,
//! digits, accented Latin letters, ligatures and CJK: same order. Scripts other
//! than Latin sort by code point (ICU orders them by script and, for Han, by
//! radical and stroke), which only matters between names in different scripts.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::ffi::OsString;

use unicode_normalization::UnicodeNormalization;
use unicode_normalization::char::is_combining_mark;

/// ASCII punctuation and symbols in ICU root order (space, `$` and the
/// alphanumerics have their own classes).
const ASCII_PUNCTUATION_ORDER: &str = "_-,;:!?.'\"()[]{}@*/\\&#%`^+<=>|~";

/// Combining marks in ICU root's secondary order; unlisted marks sort after them.
/// U+0338 stands for the stroke of `ø`, `đ`, `ł` and `ħ`.
const MARK_ORDER: [char; 18] = [
    '\u{301}', '\u{300}', '\u{306}', '\u{302}', '\u{30C}', '\u{30A}', '\u{308}', '\u{30B}',
    '\u{303}', '\u{307}', '\u{338}', '\u{327}', '\u{328}', '\u{304}', '\u{309}', '\u{31B}',
    '\u{323}', '\u{331}',
];

const STROKE: char = '\u{338}';

/// ICU gives `ß`, `æ` and `œ` the letters they stand for plus a secondary
/// weight after every accent above (`ae` < `aé` < `æ`).
const LIGATURE_WEIGHT: u32 = MARK_ORDER.len() as u32 + 1;

/// Primary classes, in collation order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Class {
    Whitespace,
    Symbol,
    Currency,
    Digit,
    Letter,
}

/// The comparison key of one name; compare keys, then raw bytes.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct CollationKey {
    primary: Vec<(Class, u32)>,
    /// One weight per collation element: 0 for a base character, the mark's
    /// rank for an accent (so `resume` < `résumé`).
    secondary: Vec<u32>,
}

/// The collation key of `name`, case-insensitively (see the module docs).
pub fn collation_key(name: &str) -> CollationKey {
    let mut key = CollationKey {
        primary: Vec::new(),
        secondary: Vec::new(),
    };
    for c in name.to_lowercase().nfkd() {
        if is_combining_mark(c) {
            key.secondary.push(mark_weight(c));
        } else if let Some((first, rest, weight)) = expansion(c) {
            key.push_base(first);
            key.secondary.push(weight);
            rest.iter().for_each(|&base| key.push_base(base));
        } else {
            key.push_base(c);
        }
    }
    key
}

impl CollationKey {
    fn push_base(&mut self, c: char) {
        if let Some(weight) = primary_weight(c) {
            self.primary.push(weight);
            self.secondary.push(0);
        }
    }
}

/// Letters ICU sorts as other letters with a secondary difference after the
/// first one, which compatibility decomposition leaves alone.
fn expansion(c: char) -> Option<(char, &'static [char], u32)> {
    match c {
        'ß' => Some(('s', &['s'], LIGATURE_WEIGHT)),
        'æ' => Some(('a', &['e'], LIGATURE_WEIGHT)),
        'œ' => Some(('o', &['e'], LIGATURE_WEIGHT)),
        'ø' => Some(('o', &[], mark_weight(STROKE))),
        'đ' => Some(('d', &[], mark_weight(STROKE))),
        'ħ' => Some(('h', &[], mark_weight(STROKE))),
        'ł' => Some(('l', &[], mark_weight(STROKE))),
        _ => None,
    }
}

/// Compares two names as Pi's `ls` sorts them.
pub fn compare_names(a: &str, b: &str) -> Ordering {
    collation_key(a)
        .cmp(&collation_key(b))
        .then_with(|| a.as_bytes().cmp(b.as_bytes()))
}

/// The indices of the first `count` of `names` in Pi's order (the collation
/// key of the name made valid UTF-8, then the raw bytes), in that order.
/// Only `count` keys are held at a time, so a directory of millions of
/// entries is listed in little more than the memory of its names (all of
/// its keys at once took 500 bytes an entry).
pub fn first_in_order(names: &[OsString], count: usize) -> Vec<usize> {
    if count == 0 {
        return Vec::new();
    }
    let mut first = BinaryHeap::with_capacity(count.min(names.len()) + 1);
    for (index, raw) in names.iter().enumerate() {
        let key = collation_key(&raw.to_string_lossy());
        first.push((key, raw.as_encoded_bytes(), index));
        if first.len() > count {
            first.pop();
        }
    }
    first
        .into_sorted_vec()
        .into_iter()
        .map(|(_, _, index)| index)
        .collect()
}

/// The primary weight of a base character; `None` for characters collation
/// ignores (controls and other invisible characters).
fn primary_weight(c: char) -> Option<(Class, u32)> {
    let code = u32::from(c);
    if c.is_whitespace() {
        Some((Class::Whitespace, code))
    } else if c.is_control() {
        None
    } else if let Some(digit) = c.to_digit(10) {
        Some((Class::Digit, digit))
    } else if c.is_numeric() {
        Some((Class::Digit, 10 + code))
    } else if c.is_alphabetic() {
        Some((Class::Letter, code))
    } else if is_currency(c) {
        Some((Class::Currency, code))
    } else if let Some(rank) = ASCII_PUNCTUATION_ORDER.find(c) {
        Some((Class::Symbol, u32::try_from(rank).unwrap_or(u32::MAX)))
    } else {
        Some((Class::Symbol, 0x100 + code))
    }
}

fn is_currency(c: char) -> bool {
    matches!(c, '$' | '\u{A2}'..='\u{A5}' | '\u{20A0}'..='\u{20CF}')
}

fn mark_weight(mark: char) -> u32 {
    match MARK_ORDER.iter().position(|&m| m == mark) {
        Some(rank) => 1 + u32::try_from(rank).unwrap_or(u32::MAX - 1),
        None => 0x100 + u32::from(mark),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Node's answer for `names` listed by `readdir` (byte order), then sorted
    /// by Pi's comparator (stable).
    fn pi_sorted(names: &[&str]) -> String {
        let mut names = names.to_vec();
        names.sort();
        names.sort_by(|a, b| compare_names(a, b));
        names.join(" ")
    }

    // Every expected order below is what Node 20 (ICU 78) prints for
    // `names.sort().sort((a, b) => a.toLowerCase().localeCompare(b.toLowerCase()))`:
    // `readdir` in Node returns names sorted by bytes, and ties keep that order.

    #[test]
    fn the_first_in_order_are_those_a_full_sort_puts_first() {
        let mut next = crate::support::seeded::xorshift();
        let alphabet = ["a", "B", "é", "_", "1", "10", "ß", " ", "Z", "e"];
        let names: Vec<OsString> = (0..300)
            .map(|_| {
                let len = 1 + next(4);
                let name: String = (0..len).map(|_| alphabet[next(alphabet.len())]).collect();
                name.into()
            })
            .collect();
        let mut sorted: Vec<usize> = (0..names.len()).collect();
        sorted.sort_by_cached_key(|&i| {
            (
                collation_key(&names[i].to_string_lossy()),
                names[i].as_encoded_bytes().to_vec(),
            )
        });
        let order = |indices: &[usize]| -> Vec<OsString> {
            indices.iter().map(|&i| names[i].clone()).collect()
        };
        for count in [0, 1, 7, 299, 300, 1000] {
            let end = count.min(names.len());
            assert_eq!(
                order(&first_in_order(&names, count)),
                order(&sorted[..end]),
                "first {count}"
            );
        }
    }

    #[test]
    fn parity_fixture_order() {
        assert_eq!(
            pi_sorted(&[
                "B.txt", "a.txt", "C", "_x", "10", "9", "-dash", "été", "Zed", "e.txt"
            ]),
            "_x -dash 10 9 a.txt B.txt C e.txt été Zed"
        );
    }

    #[test]
    fn ascii_punctuation_sorts_before_digits_and_letters_in_icu_order() {
        let ascii: Vec<String> = (0x20u8..0x7f).map(|b| char::from(b).to_string()).collect();
        let names: Vec<&str> = ascii.iter().map(String::as_str).collect();
        assert_eq!(
            pi_sorted(&names).replace(' ', ""),
            "_-,;:!?.'\"()[]{}@*/\\&#%`^+<=>|~$0123456789AaBbCcDdEeFfGgHhIiJjKkLlMmNnOoPpQqRrSsTtUuVvWwXxYyZz"
        );
    }

    #[test]
    fn case_ties_fall_back_to_byte_order() {
        assert_eq!(
            pi_sorted(&["readme", "README", "Readme"]),
            "README Readme readme"
        );
        assert_eq!(compare_names("readme", "README"), Ordering::Greater);
    }

    #[test]
    fn accents_differ_only_after_the_base_letters() {
        assert_eq!(
            pi_sorted(&[
                "résumé", "Résumé", "resume", "f", "ë", "ê", "è", "é", "e", "ē"
            ]),
            "e é è ê ë ē f resume Résumé résumé"
        );
    }

    #[test]
    fn word_separators_sort_before_letters() {
        assert_eq!(
            pi_sorted(&["ab", "aB", "a.b", "a-b", "a_b", "a b", "Ab"]),
            "a b a_b a-b a.b Ab aB ab"
        );
    }

    #[test]
    fn ligatures_and_special_letters_sort_with_their_spelling() {
        assert_eq!(
            pi_sorted(&[
                "ß", "ss", "æ", "ae", "aé", "b", "ø", "o", "oe", "œ", "ö", "p", "ﬁ", "fi", "sṣ"
            ]),
            "ae aé æ b fi ﬁ o ö ø oe œ p ss sṣ ß"
        );
    }

    #[test]
    fn digits_compare_one_by_one_and_superscripts_fold() {
        assert_eq!(
            pi_sorted(&["2", "10", "½", "1", "²", "9", "a"]),
            "1 ½ 10 2 ² 9 a"
        );
    }
}
