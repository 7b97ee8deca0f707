//! The bracketed notices tools append to their output, in Pi's format:
//! `text` + `\n\n[` + notices joined with `. ` + `]`.

/// Appends `[notice]` after a blank line, even to empty text (as Pi does:
/// `read` with `limit: 0` answers `\n\n[3 more lines in file. ...]`).
pub fn append_notice(text: &str, notice: &str) -> String {
    format!("{text}\n\n[{notice}]")
}

/// Appends all `notices` as one bracket, joined with `. `; returns `text`
/// unchanged when there are none.
pub fn append_notices(text: String, notices: &[String]) -> String {
    if notices.is_empty() {
        text
    } else {
        format!("{text}\n\n[{}]", notices.join(". "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_notice_follows_a_blank_line() {
        assert_eq!(
            append_notice("a\nb", "50.0KB limit reached"),
            "a\nb\n\n[50.0KB limit reached]"
        );
    }

    #[test]
    fn several_notices_share_one_bracket() {
        let notices = vec![
            "100 matches limit reached. Use limit=200 for more, or refine pattern".to_owned(),
            "50.0KB limit reached".to_owned(),
        ];
        assert_eq!(
            append_notices("x".into(), &notices),
            "x\n\n[100 matches limit reached. Use limit=200 for more, or refine pattern. 50.0KB limit reached]"
        );
        assert_eq!(append_notices("x".into(), &[]), "x");
    }
}
