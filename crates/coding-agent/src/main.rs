//! The `coding-agent` binary; the command line lives in [`cli`].

mod cli;
mod logging;

fn main() -> std::process::ExitCode {
    cli::main()
}
