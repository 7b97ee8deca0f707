//! Running the binary as a user without root's rights, for tests of what a
//! permission error does: root passes every permission check.

use std::process::Command;

/// A command running `bin`: as root through `setpriv` as nobody, as anyone
/// else as themselves.
pub fn command(bin: &str) -> Command {
    let uid = Command::new("id").arg("-u").output().unwrap().stdout;
    if String::from_utf8_lossy(&uid).trim() == "0" {
        let mut setpriv = Command::new("setpriv");
        setpriv.args(["--reuid=65534", "--regid=65534", "--clear-groups", bin]);
        setpriv
    } else {
        Command::new(bin)
    }
}
