//! File-system errors in the words Node uses, because Pi lets Node's errors
//! reach the model raw (`ENOENT: no such file or directory, open '/x'`) and
//! quotes their code in its own texts (`Error code: ENOENT.`).

use std::io;
use std::path::Path;

/// A file that is not a regular file or a directory, which the file tools
/// do not open (Pi opens it; docs/DEVIATIONS.md #23): reading a pipe or a
/// socket waits for the other end, maybe forever; reading a device may
/// never end (`/dev/zero`) or wait for input (a terminal); and writing
/// would put a regular file in the place of any of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum SpecialFile {
    /// A named pipe (FIFO).
    Pipe,
    /// A Unix socket.
    Socket,
    /// A terminal (`/dev/tty`, `/dev/pts/3`, a console, `/dev/ptmx`).
    Terminal,
    /// Any other character device (`/dev/zero`, `/dev/urandom`).
    CharDevice,
    /// A block device (a disk).
    BlockDevice,
}

impl SpecialFile {
    /// What kind of special file `metadata` describes; `None` for a regular
    /// file or a directory.
    pub fn of(metadata: &std::fs::Metadata) -> Option<SpecialFile> {
        use std::os::unix::fs::FileTypeExt;
        let kind = metadata.file_type();
        if kind.is_fifo() {
            Some(SpecialFile::Pipe)
        } else if kind.is_socket() {
            Some(SpecialFile::Socket)
        } else if kind.is_char_device() && is_terminal(metadata) {
            Some(SpecialFile::Terminal)
        } else if kind.is_char_device() {
            Some(SpecialFile::CharDevice)
        } else if kind.is_block_device() {
            Some(SpecialFile::BlockDevice)
        } else {
            None
        }
    }

    /// A pipe, a socket or a terminal: opening or reading it waits for the
    /// other end, or for someone to type (and a read left blocked on our own
    /// terminal after an abort kept eating the keys meant for the editor).
    /// Another device can be read, and `read` and `grep` read one as far as
    /// their limits; `edit` and `write` refuse every special file.
    pub fn waits(self) -> bool {
        matches!(
            self,
            SpecialFile::Pipe | SpecialFile::Socket | SpecialFile::Terminal
        )
    }

    /// "a named pipe", "a character device", ...
    pub fn name(self) -> &'static str {
        match self {
            SpecialFile::Pipe => "a named pipe",
            SpecialFile::Socket => "a socket",
            SpecialFile::Terminal => "a terminal",
            SpecialFile::CharDevice => "a character device",
            SpecialFile::BlockDevice => "a block device",
        }
    }

    /// What a tool says instead of opening the file at `path`: `waits`
    /// says what a pipe would wait for ("reading it waits for
    /// a writer"), `command` is the bash command that would do the tool's
    /// work (`head -c 4096`, `grep PATTERN`, `tee`).
    pub fn refusal(self, path: &Path, waits: &str, command: &str) -> String {
        let shown = path.display();
        let name = self.name();
        let why = match self {
            // A Unix socket is not opened at all (ENXIO): a program listens
            // on it, and only a client of its protocol can talk to it.
            SpecialFile::Socket => {
                return format!(
                    "{shown} is a socket, not a file: it cannot be opened as one; a program \
                     listens on it. To talk to that program, use a client with bash and a \
                     timeout (e.g. timeout 5 curl --unix-socket {shown} http://localhost/)"
                );
            }
            SpecialFile::Pipe => format!("{waits}, maybe forever"),
            SpecialFile::Terminal => "the file tools only read and change regular files \
                 (reading a terminal waits for someone to type, maybe forever)"
                .to_owned(),
            SpecialFile::CharDevice | SpecialFile::BlockDevice => {
                "the file tools only read and change regular files (reading a device may never \
                 end, and writing would put a regular file in its place)"
                    .to_owned()
            }
        };
        format!(
            "{shown} is {name}, not a file: {why}. If you mean to use it, do it with bash and a \
             timeout (e.g. timeout 5 {command} {shown})"
        )
    }
}

/// True for a terminal, by Linux's device numbers: virtual consoles and
/// serial lines (4), `/dev/tty`, `/dev/console` and `/dev/ptmx` (5:0 to
/// 5:2) and pseudo-terminals (136-143). Opening `/dev/ptmx` makes a new
/// terminal whose other end nobody holds: read and grep waited on it until
/// aborted. Told from the device number, since opening a terminal to ask
/// may block or make it ours.
fn is_terminal(metadata: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    let device = metadata.rdev();
    match rustix::fs::major(device) {
        4 | 136..=143 => true,
        5 => matches!(rustix::fs::minor(device), 0..=2),
        _ => false,
    }
}

/// A failed file-system call, with Node's error code when the failure has one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct FsError {
    /// Node's code (`ENOENT`, `EACCES`, ...), if the failure maps to one.
    pub code: Option<&'static str>,
    /// The whole text, Node style: `<CODE>: <description>, <syscall> '<path>'`.
    pub message: String,
}

impl FsError {
    /// Describes `err`, raised by `syscall` (`open`, `mkdir`, `read`, ...) on
    /// `path`, the way Node would.
    pub fn new(err: &io::Error, syscall: &str, path: &Path) -> Self {
        match node_code(err) {
            Some((code, description)) => FsError {
                code: Some(code),
                message: format!("{code}: {description}, {syscall} '{}'", path.display()),
            },
            None => FsError {
                code: None,
                message: err.to_string(),
            },
        }
    }

    /// An error without a path, for calls Node reports without one (reading a
    /// directory: `EISDIR: illegal operation on a directory, read`).
    pub fn without_path(err: &io::Error, syscall: &str) -> Self {
        match node_code(err) {
            Some((code, description)) => FsError {
                code: Some(code),
                message: format!("{code}: {description}, {syscall}"),
            },
            None => FsError {
                code: None,
                message: err.to_string(),
            },
        }
    }

    /// An error that is not the file system's (a worker that panicked, ...).
    pub fn other(message: impl Into<String>) -> Self {
        FsError {
            code: None,
            message: message.into(),
        }
    }
}

/// Pi lets file-system errors reach the model as they are.
impl From<FsError> for agent_core::ToolError {
    fn from(err: FsError) -> Self {
        agent_core::ToolError::new(err.message)
    }
}

/// Node's code and libuv's description for the error kinds a tool meets.
const NODE_CODES: [(io::ErrorKind, &str, &str); 10] = {
    use io::ErrorKind::*;
    [
        (NotFound, "ENOENT", "no such file or directory"),
        (PermissionDenied, "EACCES", "permission denied"),
        (AlreadyExists, "EEXIST", "file already exists"),
        (IsADirectory, "EISDIR", "illegal operation on a directory"),
        (NotADirectory, "ENOTDIR", "not a directory"),
        (ReadOnlyFilesystem, "EROFS", "read-only file system"),
        (InvalidFilename, "ENAMETOOLONG", "name too long"),
        (StorageFull, "ENOSPC", "no space left on device"),
        (QuotaExceeded, "EDQUOT", "disk quota exceeded"),
        (ResourceBusy, "EBUSY", "resource busy or locked"),
    ]
};

/// Node's code and libuv's description for errors Rust gives no kind of
/// their own: a symlink loop is `Other` to it, EPERM shares EACCES's
/// `PermissionDenied`, and EINVAL's `InvalidInput` is also Rust's for what
/// it refuses before asking the system (a path holding a NUL), so EINVAL is
/// told by its number (`/dev/kmsg` gives it to a read too short for its
/// next record: the model read `Invalid argument (os error 22)`).
const NODE_ERRNOS: [(i32, &str, &str); 7] = [
    (
        nix::libc::ELOOP,
        "ELOOP",
        "too many symbolic links encountered",
    ),
    (nix::libc::EPERM, "EPERM", "operation not permitted"),
    (nix::libc::EIO, "EIO", "i/o error"),
    (nix::libc::EFBIG, "EFBIG", "file too large"),
    (nix::libc::EMFILE, "EMFILE", "too many open files"),
    (nix::libc::ETXTBSY, "ETXTBSY", "text file is busy"),
    (nix::libc::EINVAL, "EINVAL", "invalid argument"),
];

fn node_code(err: &io::Error) -> Option<(&'static str, &'static str)> {
    let by_errno = NODE_ERRNOS
        .iter()
        .find(|(errno, _, _)| err.raw_os_error() == Some(*errno))
        .map(|&(_, code, description)| (code, description));
    by_errno.or_else(|| {
        NODE_CODES
            .iter()
            .find(|(kind, _, _)| *kind == err.kind())
            .map(|&(_, code, description)| (code, description))
    })
}

impl FsError {
    /// The error with `code` (as [`FsError::code`] spells it) and `message`,
    /// as another process reported it (the remote helper); an unknown code
    /// is dropped, the message kept.
    pub fn reported(code: Option<&str>, message: String) -> Self {
        let code = code.and_then(|code| {
            let codes = NODE_CODES.iter().map(|&(_, known, _)| known);
            let errnos = NODE_ERRNOS.iter().map(|&(_, known, _)| known);
            codes.chain(errnos).find(|known| *known == code)
        });
        FsError { code, message }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Errors Rust has no kind of its own for read as Node's do, not as
    /// `Input/output error (os error 5)`.
    #[test]
    fn errors_without_a_kind_of_their_own_read_like_node() {
        let said = |errno: i32| {
            let err = io::Error::from_raw_os_error(errno);
            FsError::new(&err, "read", Path::new("/proc/self/mem")).to_string()
        };
        assert_eq!(
            said(nix::libc::EIO),
            "EIO: i/o error, read '/proc/self/mem'"
        );
        assert_eq!(
            said(nix::libc::EFBIG),
            "EFBIG: file too large, read '/proc/self/mem'"
        );
        // `/dev/kmsg` refuses a read too short for its next record.
        assert_eq!(
            said(nix::libc::EINVAL),
            "EINVAL: invalid argument, read '/proc/self/mem'"
        );
    }

    #[test]
    fn missing_file_reads_like_node() {
        let err = io::Error::from(io::ErrorKind::NotFound);
        let fs = FsError::new(&err, "access", Path::new("/w/nofile.txt"));
        assert_eq!(fs.code, Some("ENOENT"));
        assert_eq!(
            fs.to_string(),
            "ENOENT: no such file or directory, access '/w/nofile.txt'"
        );
    }

    #[test]
    fn reading_a_directory_names_no_path() {
        let err = io::Error::from(io::ErrorKind::IsADirectory);
        assert_eq!(
            FsError::without_path(&err, "read").to_string(),
            "EISDIR: illegal operation on a directory, read"
        );
    }

    #[test]
    fn reported_errors_keep_known_codes_only() {
        let reported = FsError::reported(
            Some("EACCES"),
            "EACCES: permission denied, open '/x'".into(),
        );
        assert_eq!(reported.code, Some("EACCES"));
        assert_eq!(FsError::reported(Some("EWHAT"), "odd".into()).code, None);
    }

    #[test]
    fn a_symlink_loop_and_eperm_read_like_node() {
        let looped = io::Error::from_raw_os_error(nix::libc::ELOOP);
        let fs = FsError::new(&looped, "access", Path::new("/w/loop"));
        assert_eq!(
            (fs.code, fs.to_string().as_str()),
            (
                Some("ELOOP"),
                "ELOOP: too many symbolic links encountered, access '/w/loop'"
            )
        );
        let denied = io::Error::from_raw_os_error(nix::libc::EPERM);
        assert_eq!(
            FsError::new(&denied, "open", Path::new("/x")).to_string(),
            "EPERM: operation not permitted, open '/x'"
        );
        assert_eq!(
            FsError::reported(Some("ELOOP"), "x".into()).code,
            Some("ELOOP")
        );
    }

    #[test]
    fn unknown_kinds_keep_the_os_text() {
        let err = io::Error::other("disk on fire");
        let fs = FsError::new(&err, "open", Path::new("/x"));
        assert_eq!(fs.code, None);
        assert_eq!(fs.to_string(), "disk on fire");
    }
}
