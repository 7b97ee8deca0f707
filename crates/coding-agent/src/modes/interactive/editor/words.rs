//! Where a word starts and ends, for the word moves and kills. Whitespace
//! is passed over, then one run of word characters (letters, digits, `_`)
//! or one run of punctuation is the word, so `foo.bar` has three stops, as
//! in Pi's editor and in readline.

/// What a character is, for finding words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    Space,
    Word,
    Punctuation,
}

fn class(c: char) -> Class {
    if c.is_whitespace() {
        Class::Space
    } else if c.is_alphanumeric() || c == '_' {
        Class::Word
    } else {
        Class::Punctuation
    }
}

/// The column (in characters) where the word before column `col` of
/// `line` starts.
pub fn start_before(line: &str, col: usize) -> usize {
    let chars: Vec<Class> = line.chars().take(col).map(class).collect();
    let mut at = chars.len();
    while at > 0 && chars[at - 1] == Class::Space {
        at -= 1;
    }
    if let Some(&kind) = at.checked_sub(1).and_then(|i| chars.get(i)) {
        while at > 0 && chars[at - 1] == kind {
            at -= 1;
        }
    }
    at
}

/// The column (in characters) where the word after column `col` of
/// `line` ends.
pub fn end_after(line: &str, col: usize) -> usize {
    let chars: Vec<Class> = line.chars().skip(col).map(class).collect();
    let mut at = 0;
    while at < chars.len() && chars[at] == Class::Space {
        at += 1;
    }
    if let Some(&kind) = chars.get(at) {
        while at < chars.len() && chars[at] == kind {
            at += 1;
        }
    }
    col + at
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every stop a run of moves makes across `line`, backward from its end
    /// and forward from its start.
    fn stops(line: &str) -> (Vec<usize>, Vec<usize>) {
        let len = line.chars().count();
        let (mut back, mut at) = (Vec::new(), len);
        while at > 0 {
            at = start_before(line, at);
            back.push(at);
        }
        let (mut forward, mut at) = (Vec::new(), 0);
        while at < len {
            at = end_after(line, at);
            forward.push(at);
        }
        (back, forward)
    }

    #[test]
    fn words_and_punctuation_runs_are_stops_and_spaces_are_passed_over() {
        assert_eq!(
            stops("let  x = a.b_c;"),
            (vec![14, 11, 10, 9, 7, 5, 0], vec![3, 6, 8, 10, 11, 14, 15])
        );
        assert_eq!(
            stops("--flag=über 日本"),
            (vec![12, 7, 6, 2, 0], vec![2, 6, 7, 11, 14])
        );
        assert_eq!(stops("   "), (vec![0], vec![3]));
    }

    #[test]
    fn a_column_past_the_line_counts_as_its_end() {
        assert_eq!(start_before("ab cd", 99), 3);
        assert_eq!(end_after("ab cd", 99), 99);
    }
}
