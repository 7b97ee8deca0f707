//! Replacing a file's contents atomically (DEVIATIONS #10).
//!
//! Pi writes in place, so a crash or a full disk halfway through leaves half a
//! file. Here the new contents go to a temporary file in the same directory,
//! are flushed to disk, and then renamed over the target: readers see the old
//! file or the new one, never a mix. The target keeps its permissions, its
//! extended attributes (ACLs, SELinux labels; but not file capabilities,
//! which a write in place loses too) and, where allowed, its owner; a symlink
//! keeps pointing where it pointed: the file it points to is replaced, not
//! the link.
//!
//! Three cases are written in place, as Pi writes every file: a file with more
//! than one hard link (a rename would leave the other names holding the old
//! contents), a file the user may write in a directory they may not
//! (no temporary file can be made there, or renamed over the target), and a
//! file whose owner or group the new file could not keep (a colleague's
//! group-writable file in a shared folder would become the user's alone).
//!
//! Blocking; call it from `spawn_blocking`.

use std::fs::{self, File, OpenOptions, Permissions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use super::fs_error::{FsError, SpecialFile};

/// Symlink hops followed before giving up, as Linux's `ELOOP` limit.
const MAX_SYMLINK_HOPS: usize = 40;

/// Writes `contents` to `path` atomically, following symlinks to the file
/// they point to. Errors read like Node's (`EACCES: permission denied, open
/// '/x'`).
pub fn write_atomic(path: &Path, contents: &[u8]) -> Result<(), FsError> {
    write_atomic_with_mode(path, contents, 0o666)
}

/// [`write_atomic`] for what only the user should read (a session's
/// export holds every prompt and every output, as its session file does):
/// a new file is made `0600`; an existing one keeps its mode.
pub fn write_atomic_private(path: &Path, contents: &[u8]) -> Result<(), FsError> {
    write_atomic_with_mode(path, contents, 0o600)
}

/// [`write_atomic`], a new file made with `new_mode` (which the umask
/// narrows).
fn write_atomic_with_mode(path: &Path, contents: &[u8], new_mode: u32) -> Result<(), FsError> {
    let target = resolve_symlinks(path)?;
    let existing = match fs::metadata(&target) {
        Ok(meta) if let Some(special) = SpecialFile::of(&meta) => {
            let waits = "writing it waits for a reader";
            return Err(FsError::other(special.refusal(path, waits, "tee")));
        }
        Ok(meta) => {
            // The same checks Node's in-place write makes: a directory cannot
            // be written, and neither can a file we lack write permission for
            // (the rename alone would happily replace a read-only file).
            OpenOptions::new()
                .write(true)
                .open(&target)
                .map_err(|e| FsError::new(&e, "open", path))?;
            Some(meta)
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(FsError::new(&e, "open", path)),
    };
    let dir = match target.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();

    if existing.as_ref().is_some_and(has_other_names) {
        return write_in_place(&target, path, contents);
    }
    // Only for a file that is there and writable (checked above): a new
    // file in a directory the user may not write fails as it would in Pi.
    let in_place_instead =
        |error: &io::Error| existing.is_some() && error.kind() == io::ErrorKind::PermissionDenied;

    let prefix = format!(".{}.", name_start(&name));
    let mut builder = tempfile::Builder::new();
    builder.prefix(&prefix).suffix(".tmp");
    if let Some(permissions) = new_file_permissions(existing.as_ref(), new_mode) {
        builder.permissions(permissions);
    }
    let mut temp = match builder.tempfile_in(&dir) {
        Ok(temp) => temp,
        Err(e) if in_place_instead(&e) => return write_in_place(&target, path, contents),
        Err(e) => return Err(FsError::new(&e, "open", path)),
    };
    let write_error = |e: io::Error| FsError::new(&e, "write", path);
    if let Some(meta) = &existing {
        if !keep_metadata(temp.as_file(), meta).map_err(write_error)? {
            drop(temp);
            return write_in_place(&target, path, contents);
        }
        keep_xattrs(&target, temp.as_file());
    }
    temp.write_all(contents).map_err(write_error)?;
    temp.as_file().sync_all().map_err(write_error)?;
    match temp.persist(&target) {
        Ok(_) => {}
        // A sticky directory (/tmp) lets only a file's owner replace it.
        Err(e) if in_place_instead(&e.error) => return write_in_place(&target, path, contents),
        Err(e) => return Err(FsError::new(&e.error, "rename", path)),
    }
    // Make the rename itself durable. Some platforms cannot open or sync a
    // directory; the file is already complete on disk there, so not being
    // able to do this is not an error.
    if let Ok(dir) = File::open(&dir) {
        let _ = dir.sync_all();
    }
    Ok(())
}

/// Follows symlinks at the last component of `path` to the path that is
/// finally written (which need not exist yet: writing through a dangling link
/// creates its target, as Node does).
fn resolve_symlinks(path: &Path) -> Result<PathBuf, FsError> {
    let mut current = path.to_path_buf();
    for _ in 0..MAX_SYMLINK_HOPS {
        match fs::symlink_metadata(&current) {
            Ok(meta) if meta.file_type().is_symlink() && is_descriptor_link(&current) => {
                return Err(FsError::other(format!(
                    "{} is a descriptor a process has open, not a file: writing through it would replace what that process has open (for /dev/stdout, the agent's own output). Name the file to write by its path",
                    path.display()
                )));
            }
            Ok(meta) if meta.file_type().is_symlink() => {
                let link = fs::read_link(&current).map_err(|e| FsError::new(&e, "open", path))?;
                current = match current.parent() {
                    Some(parent) => parent.join(link),
                    None => link,
                };
            }
            _ => return Ok(current),
        }
    }
    Err(FsError {
        code: Some("ELOOP"),
        message: format!(
            "ELOOP: too many symbolic links encountered, open '{}'",
            path.display()
        ),
    })
}

/// Whether `link` is one of `/proc`'s links to what a process has open
/// (`/proc/<pid>/fd/N`, met also as `/proc/self/fd/N`, `/dev/fd/N` and
/// `/dev/stdout`). They look like symlinks, but name an open descriptor:
/// followed, the write replaced the file the agent's own output went to,
/// or failed on a pipe's `pipe:[N]` as if nothing were there.
fn is_descriptor_link(link: &Path) -> bool {
    link.parent()
        .and_then(|dir| dir.canonicalize().ok())
        .is_some_and(|dir| dir.starts_with("/proc") && dir.file_name() == Some("fd".as_ref()))
}

/// At most [`TEMP_NAME_KEEPS`] bytes of `name` (on a character boundary),
/// so the temporary name (`.`, six random characters, `.tmp` around it)
/// stays within the 255 bytes a name may have: a 250-byte file name is
/// valid, and its write must not fail with ENAMETOOLONG.
fn name_start(name: &str) -> &str {
    let mut end = name.len().min(TEMP_NAME_KEEPS);
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    &name[..end]
}

/// How much of the target's name its temporary file's name repeats.
const TEMP_NAME_KEEPS: usize = 200;

/// Whether the file has other names (hard links) a rename would leave
/// behind.
#[cfg(unix)]
fn has_other_names(meta: &fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    meta.nlink() > 1
}

#[cfg(not(unix))]
fn has_other_names(_meta: &fs::Metadata) -> bool {
    false
}

/// Pi's write: the file truncated and written where it is (not atomic; see
/// the module docs for when).
fn write_in_place(target: &Path, path: &Path, contents: &[u8]) -> Result<(), FsError> {
    let mut file = OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(target)
        .map_err(|e| FsError::new(&e, "open", path))?;
    file.write_all(contents)
        .and_then(|()| file.sync_all())
        .map_err(|e| FsError::new(&e, "write", path))
}

/// Mode for the temporary file: the target's mode when it exists; otherwise
/// `new_mode` (0o666 for the tools), which the umask narrows exactly as it
/// would for a file Node creates.
#[cfg(unix)]
fn new_file_permissions(existing: Option<&fs::Metadata>, new_mode: u32) -> Option<Permissions> {
    use std::os::unix::fs::PermissionsExt;
    Some(match existing {
        Some(meta) => meta.permissions(),
        None => Permissions::from_mode(new_mode),
    })
}

/// Mode for the temporary file: the target's when it exists, else the default.
#[cfg(not(unix))]
fn new_file_permissions(existing: Option<&fs::Metadata>, _new_mode: u32) -> Option<Permissions> {
    existing.map(fs::Metadata::permissions)
}

/// Gives the temporary file the target's owner, group and exact mode (the
/// umask narrowed the one it was created with). False when the owner or the
/// group cannot be kept: only a privileged process may give a file away, and
/// only to a group it is in, so the file is to be written in place instead.
#[cfg(unix)]
fn keep_metadata(temp: &File, meta: &fs::Metadata) -> io::Result<bool> {
    use std::os::unix::fs::MetadataExt;
    // The owner first: changing it clears the setuid and setgid bits, which
    // the mode then puts back.
    if std::os::unix::fs::fchown(temp, Some(meta.uid()), Some(meta.gid())).is_err() {
        return Ok(false);
    }
    temp.set_permissions(meta.permissions())?;
    Ok(true)
}

#[cfg(not(unix))]
fn keep_metadata(temp: &File, meta: &fs::Metadata) -> io::Result<bool> {
    temp.set_permissions(meta.permissions())?;
    Ok(true)
}

/// The largest list of names, and the largest value, Linux keeps for a
/// file's extended attributes (`XATTR_LIST_MAX`, `XATTR_SIZE_MAX`).
#[cfg(target_os = "linux")]
const XATTR_MAX: usize = 64 * 1024;

/// Copies the extended attributes of `target` (an ACL, an SELinux label,
/// `user.*` ones) to `temp`, which replaces it. As with the owner, what the
/// file system or our privileges refuse is left out: the contents matter
/// more than their labels. `security.capability` is not copied: the kernel
/// drops a file's capabilities when its contents change in place, and new
/// contents must not inherit them.
#[cfg(target_os = "linux")]
fn keep_xattrs(target: &Path, temp: &File) {
    use rustix::fs::{XattrFlags, fgetxattr, flistxattr, fsetxattr};
    let Ok(source) = File::open(target) else {
        return;
    };
    let mut names = vec![0; XATTR_MAX];
    let Ok(len) = flistxattr(&source, &mut names[..]) else {
        return;
    };
    let mut value = vec![0; XATTR_MAX];
    for name in names[..len].split(|&b| b == 0).filter(|n| !n.is_empty()) {
        if name == b"security.capability" {
            continue;
        }
        let Ok(name) = std::ffi::CString::new(name) else {
            continue;
        };
        if let Ok(size) = fgetxattr(&source, name.as_c_str(), &mut value[..]) {
            let _ = fsetxattr(temp, name.as_c_str(), &value[..size], XattrFlags::empty());
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn keep_xattrs(_target: &Path, _temp: &File) {}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    /// An ACL is an extended attribute (`system.posix_acl_access`), so a
    /// user attribute stands for both (the temporary directory's file system,
    /// ext4 or a tmpfs of Linux 6.6 on, keeps `user.*` attributes).
    #[cfg(target_os = "linux")]
    #[test]
    fn replacing_a_file_keeps_its_extended_attributes() {
        use rustix::fs::{XattrFlags, fgetxattr, fsetxattr};
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("labelled.txt");
        fs::write(&path, "old").unwrap();
        let file = File::open(&path).unwrap();
        fsetxattr(&file, "user.origin", b"review-42", XattrFlags::empty())
            .expect("the file system keeps user.* attributes");
        write_atomic(&path, b"new").unwrap();
        let mut value = [0; 64];
        let size = fgetxattr(File::open(&path).unwrap(), "user.origin", &mut value[..]).unwrap();
        assert_eq!(
            (fs::read_to_string(&path).unwrap().as_str(), &value[..size]),
            ("new", &b"review-42"[..])
        );
    }

    /// `/dev/stdout`, `/dev/fd/N` and `/proc/<pid>/fd/N` name what a
    /// process has open, not files. Followed as links, the write replaced
    /// the file the agent's own output went to (`> out.txt`: the output
    /// then went to a file no longer there), and with output to a pipe it
    /// failed as `ENOENT` on `/proc/self/fd/pipe:[N]`.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_descriptor_of_a_process_is_refused_and_the_file_behind_it_kept() {
        use std::os::fd::AsRawFd;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.txt");
        fs::write(&path, "the agent's output").unwrap();
        let open = File::open(&path).unwrap();
        let inode = |path: &Path| std::os::unix::fs::MetadataExt::ino(&fs::metadata(path).unwrap());
        let before = inode(&path);
        for name in [
            format!("/proc/self/fd/{}", open.as_raw_fd()),
            format!("/dev/fd/{}", open.as_raw_fd()),
            format!("/proc/{}/fd/{}", std::process::id(), open.as_raw_fd()),
        ] {
            let refused = write_atomic(Path::new(&name), b"the model's text").unwrap_err();
            assert!(
                refused.message.starts_with(&format!(
                    "{name} is a descriptor a process has open, not a file"
                )),
                "{name}: {}",
                refused.message
            );
        }
        assert_eq!(fs::read_to_string(&path).unwrap(), "the agent's output");
        assert_eq!(inode(&path), before);
    }

    #[test]
    fn writes_a_new_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("new.txt");
        write_atomic(&path, b"hello").unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "hello");
    }

    /// Writes `new` over a file of mode `mode`; its mode after.
    fn mode_after_a_write(mode: u32, new: &str) -> u32 {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tool");
        fs::write(&path, "old contents that are longer").unwrap();
        fs::set_permissions(&path, Permissions::from_mode(mode)).unwrap();
        write_atomic(&path, new.as_bytes()).unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), new);
        fs::metadata(&path).unwrap().permissions().mode() & 0o7777
    }

    #[test]
    fn replaces_contents_and_keeps_the_mode() {
        assert_eq!(mode_after_a_write(0o751, "new"), 0o751);
    }

    #[test]
    fn setuid_and_setgid_bits_are_kept() {
        assert_eq!(mode_after_a_write(0o6751, "new"), 0o6751);
    }

    #[test]
    fn a_file_with_other_names_is_written_in_place_so_they_see_it() {
        use std::os::unix::fs::MetadataExt;
        let dir = tempfile::tempdir().unwrap();
        let (one, two) = (dir.path().join("one.txt"), dir.path().join("two.txt"));
        fs::write(&one, "old").unwrap();
        fs::hard_link(&one, &two).unwrap();
        write_atomic(&one, b"new").unwrap();
        assert_eq!(fs::read_to_string(&two).unwrap(), "new");
        assert_eq!(fs::metadata(&one).unwrap().nlink(), 2);
    }

    #[test]
    fn leaves_no_temporary_files_behind() {
        let dir = tempfile::tempdir().unwrap();
        write_atomic(&dir.path().join("a.txt"), b"1").unwrap();
        write_atomic(&dir.path().join("a.txt"), b"2").unwrap();
        let names: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(names, vec!["a.txt"]);
    }

    /// A name of up to 255 bytes is valid; its temporary file's must be too.
    #[test]
    fn the_longest_names_can_be_written_and_rewritten() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["c".repeat(255), "é".repeat(127) + "x"] {
            let path = dir.path().join(&name);
            write_atomic(&path, b"1").unwrap();
            write_atomic(&path, b"2").unwrap();
            assert_eq!(fs::read_to_string(&path).unwrap(), "2");
        }
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 2);
    }

    #[test]
    fn writing_through_a_symlink_replaces_the_target_not_the_link() {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir(dir.path().join("real")).unwrap();
        let target = dir.path().join("real/target.txt");
        fs::write(&target, "old").unwrap();
        let link = dir.path().join("link.txt");
        std::os::unix::fs::symlink("real/target.txt", &link).unwrap();
        write_atomic(&link, b"new").unwrap();
        assert!(
            fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(fs::read_to_string(&target).unwrap(), "new");
    }

    #[test]
    fn a_dangling_symlink_creates_its_target() {
        let dir = tempfile::tempdir().unwrap();
        let link = dir.path().join("link.txt");
        std::os::unix::fs::symlink("made.txt", &link).unwrap();
        write_atomic(&link, b"x").unwrap();
        assert_eq!(
            fs::read_to_string(dir.path().join("made.txt")).unwrap(),
            "x"
        );
    }

    #[test]
    fn a_directory_cannot_be_written() {
        let dir = tempfile::tempdir().unwrap();
        let err = write_atomic(dir.path(), b"x").unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "EISDIR: illegal operation on a directory, open '{}'",
                dir.path().display()
            )
        );
    }

    #[test]
    fn a_missing_directory_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("no/such/dir/f.txt");
        let err = write_atomic(&path, b"x").unwrap_err();
        assert_eq!(err.code, Some("ENOENT"));
        assert_eq!(
            err.to_string(),
            format!(
                "ENOENT: no such file or directory, open '{}'",
                path.display()
            )
        );
    }
}
