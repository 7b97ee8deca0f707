//! Where we answer differently from Pi on purpose (`docs/DEVIATIONS.md`).
//! Each row names its case and deviation; the harness checks both exist, then
//! expects our answer instead of Pi's.

/// Our answer for one case where we deviate from Pi.
pub struct Deviation {
    /// The fixture's `name`.
    pub case: &'static str,
    /// The row of `docs/DEVIATIONS.md` that explains the difference.
    pub number: u32,
    /// Whether our result is an error.
    pub is_error: bool,
    /// Our text (placeholders such as `$CWD` allowed); Pi's images are kept.
    pub text: &'static str,
    /// Our files of `work/` after the call (path, text), when they differ from Pi's.
    pub files: Option<&'static [(&'static str, &'static str)]>,
}

/// Every case whose expected answer is ours, not Pi's.
pub const DEVIATIONS: &[Deviation] = &[
    Deviation {
        case: "edit_fuzzy_rewrites_whole_file",
        number: 2,
        is_error: false,
        text: "Successfully replaced 1 block(s) in t.txt.",
        // Only the matched line changes: the curly quotes, trailing spaces and
        // the no-break space elsewhere stay.
        files: Some(&[(
            "t.txt",
            "keep \u{201C}this\u{201D}   \ndone\nnbsp\u{A0}space\n",
        )]),
    },
    Deviation {
        case: "grep_gitignore_no_repo",
        number: 4,
        is_error: false,
        // .gitignore applies outside a git repository too.
        text: "kept.txt:1: secret too",
        files: None,
    },
    Deviation {
        case: "bash_killed_by_signal",
        number: 8,
        is_error: true,
        // The output before the kill, then the status as bash appends its others.
        text: "before\n\n\nCommand terminated by signal SIGKILL",
        files: None,
    },
    Deviation {
        case: "read_binary",
        number: 12,
        is_error: false,
        // A description instead of the bytes decoded as text.
        text: "Binary file bin.dat (256B) cannot be shown as text. Use bash (e.g. file, strings, xxd) to inspect it.",
        files: None,
    },
    Deviation {
        case: "find_missing_path",
        number: 13,
        is_error: true,
        // Pi's own wording for a missing path, not fd's stderr.
        text: "Path not found: $CWD/nope",
        files: None,
    },
];

/// This case's deviation, if any.
pub fn find(case: &str) -> Option<&'static Deviation> {
    DEVIATIONS.iter().find(|d| d.case == case)
}
