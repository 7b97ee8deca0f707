//! A seeded number sequence for the tests that throw thousands of random
//! inputs at the editor, the transcript and `edit`'s diff: the same sequence
//! on every run, so a failure names a step that fails again.

/// Numbers below the bound asked for, from a small xorshift.
pub fn xorshift() -> impl FnMut(usize) -> usize {
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    move |below: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        usize::try_from(state % below as u64).unwrap_or(0)
    }
}
