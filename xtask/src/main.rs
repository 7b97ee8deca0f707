//! `cargo xtask`: project tasks.

fn main() -> anyhow::Result<()> {
    Ok(())
}
