//! A real OpenSSH server on 127.0.0.1 for the remote tests: a free high
//! port, freshly generated host and user keys, a private `known_hosts`, and
//! an ssh config naming it `sshd-test`. Nothing of the system's ssh
//! configuration is read or touched (only `/run/sshd`, the privilege
//! separation directory sshd insists on, is created if missing).
//!
//! Without `sshd` the tests say so and pass as skipped, except under
//! `CI=true`, where they fail: CI installs `openssh-server`.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use coding_agent::remote::{RemoteHost, RemoteOptions, RemoteTarget};

/// The agent binary, uploaded as the helper.
pub const BIN: &str = env!("CARGO_BIN_EXE_coding-agent");

/// The alias of the test server in [`Sshd::ssh_config`].
pub const HOST: &str = "sshd-test";

const SSHD: &str = "/usr/sbin/sshd";

/// A running sshd; stopped (with every session it forked) when dropped.
pub struct Sshd {
    dir: tempfile::TempDir,
    child: Child,
    /// The port it listens on, on 127.0.0.1.
    pub port: u16,
}

impl Sshd {
    /// Starts a server, or `None` (after saying why) when this machine has
    /// no sshd and CI is not asking for it.
    pub fn start() -> Option<Self> {
        Self::start_with("")
    }

    /// [`Sshd::start`] with `extra` lines appended to the server's
    /// configuration (a `SetEnv` the sessions get, say).
    pub fn start_with(extra: &str) -> Option<Self> {
        match Self::try_start(extra) {
            Ok(sshd) => Some(sshd),
            Err(why) if std::env::var("CI").is_ok_and(|v| v == "true") => {
                panic!("CI=true and the test sshd cannot start: {why}")
            }
            Err(why) => {
                eprintln!("skipped: the test sshd cannot start: {why}");
                None
            }
        }
    }

    fn try_start(extra: &str) -> Result<Self, String> {
        if !Path::new(SSHD).exists() {
            return Err(format!(
                "{SSHD} is missing (apt-get install openssh-server)"
            ));
        }
        let dir = tempfile::Builder::new()
            .prefix("sshd-test-")
            .tempdir()
            .map_err(|e| e.to_string())?;
        let d = dir.path();
        std::fs::create_dir_all("/run/sshd").map_err(|e| format!("/run/sshd: {e}"))?;
        for key in ["host", "user"] {
            let status = Command::new("ssh-keygen")
                .args(["-q", "-t", "ed25519", "-N", "", "-f"])
                .arg(d.join(key))
                .stdin(Stdio::null())
                .status()
                .map_err(|e| format!("ssh-keygen: {e}"))?;
            if !status.success() {
                return Err(format!("ssh-keygen failed: {status}"));
            }
        }
        std::fs::copy(d.join("user.pub"), d.join("authorized_keys")).map_err(|e| e.to_string())?;
        let port = free_port();
        std::fs::write(
            d.join("sshd_config"),
            format!(
                "Port {port}\nListenAddress 127.0.0.1\nHostKey {d}/host\nAuthorizedKeysFile {d}/authorized_keys\n\
                 PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\n\
                 PidFile {d}/pid\nAcceptEnv *\nSubsystem sftp internal-sftp\n{extra}",
                d = d.display()
            ),
        )
        .map_err(|e| e.to_string())?;
        let host_key = std::fs::read_to_string(d.join("host.pub")).map_err(|e| e.to_string())?;
        let host_key: Vec<&str> = host_key.split_whitespace().take(2).collect();
        std::fs::write(
            d.join("known_hosts"),
            format!("[127.0.0.1]:{port} {}\n", host_key.join(" ")),
        )
        .map_err(|e| e.to_string())?;
        std::fs::write(
            d.join("ssh_config"),
            format!(
                "Host {HOST}\n  HostName 127.0.0.1\n  Port {port}\n  User {user}\n  IdentityFile {d}/user\n  IdentitiesOnly yes\n\
                 \x20 UserKnownHostsFile {d}/known_hosts\n  GlobalKnownHostsFile /dev/null\n  StrictHostKeyChecking yes\n  LogLevel ERROR\n",
                user = user_name(),
                d = d.display()
            ),
        )
        .map_err(|e| e.to_string())?;
        let log = std::fs::File::create(d.join("log")).map_err(|e| e.to_string())?;
        let mut child = Command::new(SSHD)
            .args(["-D", "-e", "-f"])
            .arg(d.join("sshd_config"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .map_err(|e| format!("{SSHD}: {e}"))?;
        let started = Instant::now();
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            if let Ok(Some(status)) = child.try_wait() {
                let log = std::fs::read_to_string(d.join("log")).unwrap_or_default();
                return Err(format!("sshd exited ({status}): {log}"));
            }
            if started.elapsed() > Duration::from_secs(20) {
                let _ = child.kill();
                return Err("sshd did not listen within 20 s".into());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(Sshd { dir, child, port })
    }

    /// The ssh config file defining [`HOST`].
    pub fn ssh_config(&self) -> PathBuf {
        self.dir.path().join("ssh_config")
    }

    /// The server's directory (keys, config, log).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The process id of the listening sshd.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Kills every session process the server forked (each connection's
    /// sshd), as a dropped network would: the listener stays up.
    pub fn kill_sessions(&self) -> usize {
        let children = children_of(self.pid());
        for pid in &children {
            let _ = Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .stderr(Stdio::null())
                .status();
        }
        children.len()
    }

    /// Options for a library-level connection to `dir` on this server.
    pub fn options(&self, dir: &Path) -> RemoteOptions {
        let mut target = RemoteTarget::parse(HOST).unwrap();
        target.dir = Some(dir.to_path_buf());
        RemoteOptions {
            ssh_config: Some(self.ssh_config()),
            helper_binary: Some(PathBuf::from(BIN)),
            cache_dir: Some(cache_dir()),
            ..RemoteOptions::new(target)
        }
    }

    /// A connected host with `dir` as its working directory.
    pub async fn connect(&self, dir: &Path) -> RemoteHost {
        RemoteHost::connect(self.options(dir)).await.unwrap()
    }

    /// `coding-agent <args> --remote <this server><dir> ...`, finding the
    /// helper cache, with no standard input.
    pub fn command(&self, args: &[&str], dir: &Path) -> Command {
        let (cache_var, cache) = cache_env();
        let mut command = Command::new(BIN);
        command
            .args(args)
            .args(self.flags(dir))
            .env(cache_var, cache)
            .stdin(Stdio::null());
        command
    }

    /// The flags that send `coding-agent` to `dir` on this server.
    pub fn flags(&self, dir: &Path) -> Vec<String> {
        vec![
            "--remote".into(),
            format!("{HOST}{}", dir.display()),
            "--ssh-config".into(),
            self.ssh_config().display().to_string(),
        ]
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        self.kill_sessions();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Where the helper is cached on the "remote" (this machine): one directory
/// for every test, so the binary is uploaded once per build, not per test.
pub fn cache_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("remote-helper-cache")
}

/// The environment the binary needs to find the helper cache.
pub fn cache_env() -> (&'static str, PathBuf) {
    ("CODING_AGENT_REMOTE_CACHE", cache_dir())
}

fn free_port() -> u16 {
    TcpListener::bind(("127.0.0.1", 0))
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

fn user_name() -> String {
    let out = Command::new("id").arg("-un").output().expect("id -un");
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// Direct children of `pid`, from `/proc`.
pub fn children_of(pid: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|p| parent_of(*p) == Some(pid))
        .collect()
}

/// The parent of `pid` from `/proc/<pid>/stat`.
pub fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after_name = &stat[stat.rfind(')')? + 2..];
    after_name.split_whitespace().nth(1)?.parse().ok()
}

/// Every process below `pid`, from `/proc`.
pub fn descendants(pid: u32) -> Vec<u32> {
    let mut all = Vec::new();
    let mut queue = vec![pid];
    while let Some(next) = queue.pop() {
        for child in children_of(next) {
            all.push(child);
            queue.push(child);
        }
    }
    all
}

/// The command line of `pid`, its arguments joined by spaces.
pub fn command_line(pid: u32) -> String {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|b| String::from_utf8_lossy(&b).replace('\0', " "))
        .unwrap_or_default()
}

/// The one remote helper running below the sshd.
pub fn the_helper(sshd: &Sshd) -> u32 {
    let helpers: Vec<u32> = descendants(sshd.pid())
        .into_iter()
        .filter(|pid| command_line(*pid).contains("remote-helper"))
        .collect();
    assert_eq!(helpers.len(), 1, "one helper runs on the remote");
    helpers[0]
}

/// Whether `pid` is alive (a zombie counts as dead: nothing reaps orphans
/// in some containers).
pub fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            let after_name = stat[stat.rfind(')')? + 2..].to_owned();
            after_name.split_whitespace().next().map(|s| s != "Z")
        })
        .unwrap_or(false)
}

/// Waits until `check` holds, failing after 10 s.
pub async fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    for _ in 0..500 {
        if check() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("{what} did not happen within 10 s");
}

/// A file or directory in the remote user's home (the passwd entry's, which
/// is what sshd gives the session) with a name no other test uses; removed
/// when dropped.
pub struct HomeFile(pub PathBuf);

impl HomeFile {
    pub fn new(name: &str) -> Self {
        let out = Command::new("sh")
            .args(["-c", "getent passwd \"$(id -un)\" | cut -d: -f6"])
            .output()
            .unwrap();
        let home = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        HomeFile(Path::new(&home).join(format!("{name}-{}", std::process::id())))
    }

    pub fn name(&self) -> String {
        self.0.file_name().unwrap().to_string_lossy().into_owned()
    }
}

impl Drop for HomeFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0).or_else(|_| std::fs::remove_dir_all(&self.0));
    }
}

/// A FUSE file system that no daemon serves: every access below it waits in
/// the kernel, as on a hung network mount, until the mount is dropped (its
/// connection then ends and the waits fail with ENOTCONN). A terminal, a
/// FIFO or a socket cannot stand in: the file tools refuse those unopened.
pub struct HungMount {
    dir: std::path::PathBuf,
    device: Option<std::fs::File>,
}

impl HungMount {
    /// Mounts one at `dir` (made here), or `None` (after saying why) when
    /// this process may not and CI is not asking for it.
    pub fn new(dir: &Path) -> Option<Self> {
        use rustix::mount::{MountFlags, mount};
        use std::os::fd::AsRawFd;
        std::fs::create_dir_all(dir).unwrap();
        let mounted = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open("/dev/fuse")
            .map_err(|e| format!("/dev/fuse: {e}"))
            .and_then(|device| {
                let options = std::ffi::CString::new(format!(
                    "fd={},rootmode=40000,user_id=0,group_id=0",
                    device.as_raw_fd()
                ))
                .unwrap();
                mount("hung", dir, "fuse", MountFlags::empty(), options.as_c_str())
                    .map(|()| device)
                    .map_err(|e| format!("mount -t fuse: {e}"))
            });
        match mounted {
            Ok(device) => Some(HungMount {
                dir: dir.to_path_buf(),
                device: Some(device),
            }),
            Err(why) if std::env::var("CI").is_ok_and(|v| v == "true") => {
                panic!("CI=true and a hung FUSE mount cannot be made (run as root): {why}")
            }
            Err(why) => {
                eprintln!("skipped: a hung FUSE mount cannot be made (run as root): {why}");
                None
            }
        }
    }
}

impl Drop for HungMount {
    fn drop(&mut self) {
        use rustix::mount::{UnmountFlags, unmount};
        let _ = unmount(&self.dir, UnmountFlags::DETACH);
        drop(self.device.take());
    }
}

/// Threads of `pid` waiting for a FUSE request's answer.
pub fn threads_waiting_on_fuse(pid: u32) -> usize {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).unwrap();
    tasks
        .flatten()
        .filter(|task| {
            std::fs::read_to_string(task.path().join("wchan"))
                .is_ok_and(|wchan| wchan.starts_with("fuse") || wchan.contains("request_wait"))
        })
        .count()
}
