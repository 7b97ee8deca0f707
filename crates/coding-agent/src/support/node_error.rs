//! File-system errors worded as Node words them.
//!
//! Pi passes Node's error messages straight to the model
//! (`EACCES: permission denied, scandir '/srv/x'`), so a tool that reports an
//! I/O error in Pi's words needs Node's code, libuv's description, the system
//! call and the path.

use std::io;
use std::path::Path;

/// `CODE: description, syscall 'path'`, as Node formats an fs error. Errors
/// that carry no OS error number (from a test double or a remote backend) keep
/// their own text.
pub fn node_error_message(err: &io::Error, syscall: &str, path: &Path) -> String {
    match err.raw_os_error().and_then(code_and_description) {
        Some((code, description)) => {
            format!("{code}: {description}, {syscall} '{}'", path.display())
        }
        None => err.to_string(),
    }
}

/// Node's code and libuv's description for an errno. The numbers are Linux's;
/// elsewhere only the ones all Unixes share are named.
fn code_and_description(errno: i32) -> Option<(&'static str, &'static str)> {
    Some(match errno {
        1 => ("EPERM", "operation not permitted"),
        2 => ("ENOENT", "no such file or directory"),
        5 => ("EIO", "i/o error"),
        12 => ("ENOMEM", "not enough memory"),
        13 => ("EACCES", "permission denied"),
        16 => ("EBUSY", "resource busy or locked"),
        17 => ("EEXIST", "file already exists"),
        20 => ("ENOTDIR", "not a directory"),
        21 => ("EISDIR", "illegal operation on a directory"),
        22 => ("EINVAL", "invalid argument"),
        23 => ("ENFILE", "file table overflow"),
        24 => ("EMFILE", "too many open files"),
        28 => ("ENOSPC", "no space left on device"),
        30 => ("EROFS", "read-only file system"),
        #[cfg(target_os = "linux")]
        36 => ("ENAMETOOLONG", "name too long"),
        #[cfg(target_os = "linux")]
        40 => ("ELOOP", "too many symbolic links encountered"),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn os_errors_read_like_node() {
        let err = io::Error::from_raw_os_error(13);
        assert_eq!(
            node_error_message(&err, "scandir", Path::new("/srv/locked")),
            "EACCES: permission denied, scandir '/srv/locked'"
        );
    }

    #[test]
    fn a_real_missing_file_reads_like_node() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("gone");
        let err = std::fs::read_dir(&missing).unwrap_err();
        assert_eq!(
            node_error_message(&err, "scandir", &missing),
            format!(
                "ENOENT: no such file or directory, scandir '{}'",
                missing.display()
            )
        );
    }

    #[test]
    fn errors_without_an_errno_keep_their_text() {
        let err = io::Error::other("connection to host lost");
        assert_eq!(
            node_error_message(&err, "scandir", Path::new("/x")),
            "connection to host lost"
        );
    }
}
