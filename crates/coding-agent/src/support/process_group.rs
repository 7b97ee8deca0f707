//! A child's process group, killed as a whole: commands started with
//! [`detached_command`] (bash's, hooks', MCP servers') lead their own
//! session and group, so a timeout or an abort also kills what they
//! started (a `sleep` under a script).

use std::ffi::OsStr;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use process_wrap::tokio::{CommandWrap, CommandWrapper, ProcessSession};
use tokio::process::Command;

/// A command that runs `program` as the leader of a new session and
/// process group, as Pi's `detached: true` does. Without a controlling
/// terminal, what prompts on `/dev/tty` (git's credentials, ssh's
/// password, sudo, an editor) fails at once; in a group of our session it
/// was stopped by SIGTTIN, and the call never ended.
pub fn detached_command(program: impl AsRef<OsStr>) -> Command {
    let mut command = Command::new(program);
    // process-wrap's session wrapper puts `setsid` between fork and exec
    // (which needs `unsafe`, kept out of this crate); its hook is used
    // alone, so the child stays a plain tokio `Child`. It never fails, and
    // the core it is given is not read.
    let unread = CommandWrap::from(Command::new(""));
    if ProcessSession.pre_spawn(&mut command, &unread).is_err() {
        command.process_group(0);
    }
    command
}

/// The group led by a child, killed with SIGKILL by [`ProcessGroup::kill`]
/// and when dropped before [`ProcessGroup::release`] (the run was dropped
/// before the child exited).
#[derive(Debug)]
pub struct ProcessGroup {
    /// `None` once the leader has been reaped: its id may then be reused.
    leader: Option<Pid>,
}

impl ProcessGroup {
    /// The group led by the child with id `pid` (`Child::id`).
    pub fn of(pid: Option<u32>) -> Self {
        let leader = pid
            .and_then(|pid| i32::try_from(pid).ok())
            .map(Pid::from_raw);
        ProcessGroup { leader }
    }

    /// Kills every process of the group.
    pub fn kill(&self) {
        if let Some(leader) = self.leader {
            // ESRCH (already gone) is the only expected failure; nothing to do then.
            let _ = killpg(leader, Signal::SIGKILL);
        }
    }

    /// The leader exited on its own and was reaped: leave its background
    /// children alone.
    pub fn release(&mut self) {
        self.leader = None;
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        self.kill();
    }
}

/// `SIGKILL` for 9; the number itself for signals without a name.
pub fn signal_name(signal: i32) -> String {
    Signal::try_from(signal).map_or_else(|_| signal.to_string(), |s| s.as_str().to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signals_are_named_like_the_c_constants() {
        assert_eq!(signal_name(9), "SIGKILL");
        assert_eq!(signal_name(15), "SIGTERM");
        assert_eq!(signal_name(1000), "1000");
    }
}
