//! The full-output file of a command whose output went over the limits:
//! `<dir>/<prefix>-<16 hex>.log` on the machine the command ran on, which
//! the truncation notice names.
//!
//! The tools reach files only through their Operations, so the file comes
//! from [`BashOperations::output_log`](super::ops::BashOperations::output_log):
//! here a local file, on a remote host a file there (the notice then names a
//! path the next `read` or `bash` call on that host can open), and none
//! ([`NoOutputLog`]) for operations that do not say where.

use std::collections::hash_map::RandomState;
use std::fs::{File, OpenOptions};
use std::hash::{BuildHasher, Hasher};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

/// One full-output file, created on first need. Its methods do blocking
/// I/O: the accumulator calls them on a blocking thread.
pub trait OutputLog: Send {
    /// Creates the file, once; returns its path where the command ran.
    /// [`io::ErrorKind::Unsupported`] means there is no file to have (see
    /// [`NoOutputLog`]): the output is cut without one, and nothing is
    /// logged.
    fn create(&mut self) -> io::Result<PathBuf>;

    /// Appends `bytes` (after [`OutputLog::create`]).
    fn write_all(&mut self, bytes: &[u8]) -> io::Result<()>;

    /// Makes everything written so far reach the file.
    fn flush(&mut self) -> io::Result<()>;

    /// Removes the file (the output stayed within the limits after all).
    fn remove(&mut self) -> io::Result<()>;
}

/// No full-output file: what [`BashOperations::output_log`](super::ops::BashOperations::output_log)
/// gives unless the operations keep one where their commands run.
/// [`OutputLog::create`] fails with [`io::ErrorKind::Unsupported`], and the
/// output is then cut with a notice that names no file.
#[derive(Debug, Default)]
pub struct NoOutputLog;

impl OutputLog for NoOutputLog {
    fn create(&mut self) -> io::Result<PathBuf> {
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "these operations keep no full-output file",
        ))
    }

    fn write_all(&mut self, _bytes: &[u8]) -> io::Result<()> {
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }

    fn remove(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The directory full-output files go to: `dir`, else the temp directory
/// of this machine (`$TMPDIR`, else `/tmp`).
pub fn log_dir(dir: Option<&Path>) -> PathBuf {
    dir.map_or_else(std::env::temp_dir, Path::to_path_buf)
}

/// Creates `dir/<prefix>-<16 hex>.log`, a name nobody else holds, readable
/// by its owner only: a command's output (tokens, keys, private files it
/// printed) must not be open to every user of a shared `/tmp`.
pub fn create_log_file(dir: &Path, prefix: &str) -> io::Result<(PathBuf, File)> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::create_dir_all(dir)?;
    let mut attempt = 0;
    loop {
        let path = dir.join(format!("{prefix}-{:016x}.log", random_u64()));
        match OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
        {
            Ok(file) => return Ok((path, file)),
            Err(error) if error.kind() == io::ErrorKind::AlreadyExists && attempt < 16 => {
                attempt += 1;
            }
            Err(error) => return Err(error),
        }
    }
}

/// 64 random bits from the standard library's randomly seeded hasher (no
/// cryptographic need: the file is created with `create_new`).
fn random_u64() -> u64 {
    let mut hasher = RandomState::new().build_hasher();
    hasher.write_u32(std::process::id());
    if let Ok(elapsed) = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
        hasher.write_u128(elapsed.as_nanos());
    }
    hasher.finish()
}

/// A full-output file on this machine.
#[derive(Debug)]
pub struct LocalOutputLog {
    dir: PathBuf,
    prefix: String,
    file: Option<(PathBuf, BufWriter<File>)>,
}

impl LocalOutputLog {
    /// A log to be created in `dir` (default: the temp directory).
    pub fn new(dir: Option<&Path>, prefix: &str) -> Self {
        LocalOutputLog {
            dir: log_dir(dir),
            prefix: prefix.to_owned(),
            file: None,
        }
    }

    fn file(&mut self) -> io::Result<&mut BufWriter<File>> {
        match &mut self.file {
            Some((_, file)) => Ok(file),
            None => Err(io::Error::other("the full-output file was not created")),
        }
    }
}

impl OutputLog for LocalOutputLog {
    fn create(&mut self) -> io::Result<PathBuf> {
        if let Some((path, _)) = &self.file {
            return Ok(path.clone());
        }
        let (path, file) = create_log_file(&self.dir, &self.prefix)?;
        self.file = Some((path.clone(), BufWriter::with_capacity(64 * 1024, file)));
        Ok(path)
    }

    fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.file()?.write_all(bytes)
    }

    fn flush(&mut self) -> io::Result<()> {
        match &mut self.file {
            Some((_, file)) => file.flush(),
            None => Ok(()),
        }
    }

    fn remove(&mut self) -> io::Result<()> {
        match self.file.take() {
            Some((path, _)) => std::fs::remove_file(path),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_log_is_readable_by_its_owner_only() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let (path, _) = create_log_file(dir.path(), "pi-bash").unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
}
