//! Replacing a file's contents atomically (DEVIATIONS #10).
//!
//! Pi writes in place, so a crash or a full disk halfway through leaves half a
//! file. Here the new contents go to a temporary file in the same directory,
//! are flushed to disk, and then renamed over the target: readers see the old
//! file or the new one, never a mix. The target keeps its permissions (and,
//! where allowed, its owner), and a symlink keeps pointing where it pointed:
//! the file it points to is replaced, not the link.
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

    let prefix = format!(".{name}.");
    let mut builder = tempfile::Builder::new();
    builder.prefix(&prefix).suffix(".tmp");
    if let Some(permissions) = new_file_permissions(existing.as_ref()) {
        builder.permissions(permissions);
    }
    let mut temp = builder
        .tempfile_in(&dir)
        .map_err(|e| FsError::new(&e, "open", path))?;
    let write_error = |e: io::Error| FsError::new(&e, "write", path);
    if let Some(meta) = &existing {
        keep_metadata(temp.as_file(), meta).map_err(write_error)?;
    }
    temp.write_all(contents).map_err(write_error)?;
    temp.as_file().sync_all().map_err(write_error)?;
    temp.persist(&target)
        .map_err(|e| FsError::new(&e.error, "rename", path))?;
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

/// Mode for the temporary file: the target's mode when it exists; otherwise
/// 0o666, which the umask narrows exactly as it would for a file Node creates.
#[cfg(unix)]
fn new_file_permissions(existing: Option<&fs::Metadata>) -> Option<Permissions> {
    use std::os::unix::fs::PermissionsExt;
    Some(match existing {
        Some(meta) => meta.permissions(),
        None => Permissions::from_mode(0o666),
    })
}

/// Mode for the temporary file: the target's when it exists, else the default.
#[cfg(not(unix))]
fn new_file_permissions(existing: Option<&fs::Metadata>) -> Option<Permissions> {
    existing.map(fs::Metadata::permissions)
}

/// Gives the temporary file the target's exact mode (the umask narrowed the
/// one it was created with) and, where the process may, its owner.
#[cfg(unix)]
fn keep_metadata(temp: &File, meta: &fs::Metadata) -> io::Result<()> {
    use std::os::unix::fs::MetadataExt;
    temp.set_permissions(meta.permissions())?;
    // Only a privileged process may give a file away; for anyone else the new
    // file simply belongs to them, as an in-place write by them would not.
    let _ = std::os::unix::fs::fchown(temp, Some(meta.uid()), Some(meta.gid()));
    Ok(())
}

#[cfg(not(unix))]
fn keep_metadata(temp: &File, meta: &fs::Metadata) -> io::Result<()> {
    temp.set_permissions(meta.permissions())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn writes_a_new_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("new.txt");
        write_atomic(&path, b"hello").unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "hello");
    }

    #[test]
    fn replaces_contents_and_keeps_the_mode() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("script.sh");
        fs::write(&path, "old contents that are longer").unwrap();
        fs::set_permissions(&path, Permissions::from_mode(0o751)).unwrap();
        write_atomic(&path, b"new").unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "new");
        assert_eq!(
            fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o751
        );
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
