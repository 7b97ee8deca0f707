//! The `coding-agent` binary; the command line lives in [`cli`].

mod cli;
mod logging;
mod remote_flags;

fn main() -> std::process::ExitCode {
    cli::main()
}
