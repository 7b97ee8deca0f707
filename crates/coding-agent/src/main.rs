//! The `coding-agent` binary.

fn main() -> anyhow::Result<()> {
    Ok(())
}
