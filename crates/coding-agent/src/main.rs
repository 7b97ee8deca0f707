//! The `coding-agent` binary; the command line lives in [`cli`].

mod cli;
mod logging;

fn main() -> std::process::ExitCode {
    // Started as the sandbox helper for a bash command: restrict, then exec
    // the shell, before any thread or runtime exists.
    if let Some(failed) = coding_agent::sandbox::run_if_invoked() {
        return failed;
    }
    cli::main()
}
