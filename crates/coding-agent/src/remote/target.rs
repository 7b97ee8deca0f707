//! Where `--remote` points: `[ssh://][user@]host[:port][/abs/path]`, or
//! scp's `[user@]host:/abs/path`, as Pi's documentation writes it.
//!
//! The host part is handed to `ssh` as it is (so a `Host` alias from
//! `~/.ssh/config` works); the user and port become `-l` and `-p`. The path,
//! when given, is the remote working directory; without one the tools act in
//! the remote user's home directory.

use std::fmt;
use std::path::PathBuf;

/// A parsed `--remote` value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteTarget {
    /// The login name, when given (`user@`).
    pub user: Option<String>,
    /// A host name, address or `~/.ssh/config` alias.
    pub host: String,
    /// The SSH port, when given (`:port`).
    pub port: Option<u16>,
    /// The remote working directory, when given (absolute).
    pub dir: Option<PathBuf>,
}

/// Why a `--remote` value was refused; the text says what a valid one looks like.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TargetError {
    /// No host name.
    #[error("--remote {0:?}: no host (expected [ssh://][user@]host[:port][/abs/path])")]
    NoHost(String),
    /// The port is not a number from 1 to 65535.
    #[error(
        "--remote {value:?}: port {port:?} is not a number from 1 to 65535 (a directory is absolute and goes after a slash: host/abs/path or host:/abs/path)"
    )]
    BadPort {
        /// The whole value.
        value: String,
        /// The port as written.
        port: String,
    },
    /// The host starts with `-`, which ssh would read as an option.
    #[error("--remote {0:?}: a host cannot start with '-'")]
    OptionLikeHost(String),
}

impl RemoteTarget {
    /// Parses `[ssh://][user@]host[:port][/abs/path]`. An IPv6 address goes in
    /// brackets (`[::1]:2222`). A `:` right before the path is scp's
    /// `host:/abs/path`, not an empty port: a port is digits, so the two
    /// cannot be confused.
    pub fn parse(value: &str) -> Result<Self, TargetError> {
        let rest = value.strip_prefix("ssh://").unwrap_or(value);
        let (authority, dir) = match rest.find('/') {
            Some(slash) => (
                rest[..slash].strip_suffix(':').unwrap_or(&rest[..slash]),
                Some(PathBuf::from(&rest[slash..])),
            ),
            None => (rest, None),
        };
        let (user, host_port) = match authority.rsplit_once('@') {
            Some((user, host_port)) => (Some(user.to_owned()), host_port),
            None => (None, authority),
        };
        let (host, port) = split_port(host_port);
        if host.is_empty() {
            return Err(TargetError::NoHost(value.to_owned()));
        }
        if host.starts_with('-') {
            return Err(TargetError::OptionLikeHost(value.to_owned()));
        }
        let port = port
            .map(|port| {
                port.parse::<u16>()
                    .ok()
                    .filter(|p| *p != 0)
                    .ok_or_else(|| TargetError::BadPort {
                        value: value.to_owned(),
                        port: port.to_owned(),
                    })
            })
            .transpose()?;
        Ok(RemoteTarget {
            user: user.filter(|u| !u.is_empty()),
            host: host.to_owned(),
            port,
            dir,
        })
    }

    /// `[user@]host[:port]`, as the prompt and the footer name it.
    pub fn authority(&self) -> String {
        let mut shown = String::new();
        if let Some(user) = &self.user {
            shown.push_str(user);
            shown.push('@');
        }
        if self.host.contains(':') {
            shown.push_str(&format!("[{}]", self.host));
        } else {
            shown.push_str(&self.host);
        }
        if let Some(port) = self.port {
            shown.push_str(&format!(":{port}"));
        }
        shown
    }
}

impl fmt::Display for RemoteTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ssh://{}", self.authority())?;
        if let Some(dir) = &self.dir {
            write!(f, "{}", dir.display())?;
        }
        Ok(())
    }
}

/// `host:port` → (`host`, `port`); `[v6]:port` → (`v6`, `port`).
fn split_port(host_port: &str) -> (&str, Option<&str>) {
    if let Some(bracketed) = host_port.strip_prefix('[')
        && let Some((host, after)) = bracketed.split_once(']')
    {
        return (host, after.strip_prefix(':'));
    }
    match host_port.rsplit_once(':') {
        Some((host, port)) => (host, Some(port)),
        None => (host_port, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(
        user: Option<&str>,
        host: &str,
        port: Option<u16>,
        dir: Option<&str>,
    ) -> RemoteTarget {
        RemoteTarget {
            user: user.map(str::to_owned),
            host: host.to_owned(),
            port,
            dir: dir.map(PathBuf::from),
        }
    }

    #[test]
    fn every_part_is_optional_but_the_host() {
        let parse = |v| RemoteTarget::parse(v).unwrap();
        assert_eq!(parse("box"), target(None, "box", None, None));
        assert_eq!(
            parse("ssh://dev@box:2222/srv/app"),
            target(Some("dev"), "box", Some(2222), Some("/srv/app"))
        );
        assert_eq!(
            parse("dev@box/srv"),
            target(Some("dev"), "box", None, Some("/srv"))
        );
        assert_eq!(
            parse("[::1]:22/x"),
            target(None, "::1", Some(22), Some("/x"))
        );
    }

    #[test]
    fn scp_style_host_colon_path_is_the_host_and_the_path() {
        let parse = |v| RemoteTarget::parse(v).unwrap();
        assert_eq!(
            parse("dev@box:/srv/app"),
            target(Some("dev"), "box", None, Some("/srv/app"))
        );
        assert_eq!(parse("box:/"), target(None, "box", None, Some("/")));
        assert_eq!(parse("[::1]:/x"), target(None, "::1", None, Some("/x")));
        assert_eq!(
            parse("box:2222/srv"),
            target(None, "box", Some(2222), Some("/srv"))
        );
    }

    #[test]
    fn bad_values_say_what_is_expected() {
        assert_eq!(
            RemoteTarget::parse("ssh:///srv").unwrap_err().to_string(),
            "--remote \"ssh:///srv\": no host (expected [ssh://][user@]host[:port][/abs/path])"
        );
        assert_eq!(
            RemoteTarget::parse("box:ssh").unwrap_err().to_string(),
            "--remote \"box:ssh\": port \"ssh\" is not a number from 1 to 65535 (a directory is absolute and goes after a slash: host/abs/path or host:/abs/path)"
        );
        // scp's relative `host:dir` reads as a port: the hint says how to
        // name the directory.
        assert!(
            RemoteTarget::parse("box:src")
                .unwrap_err()
                .to_string()
                .ends_with("host/abs/path or host:/abs/path)")
        );
        assert_eq!(
            RemoteTarget::parse("-oProxyCommand=x")
                .unwrap_err()
                .to_string(),
            "--remote \"-oProxyCommand=x\": a host cannot start with '-'"
        );
    }

    #[test]
    fn the_shown_form_round_trips() {
        let value = "ssh://dev@[::1]:2222/srv/app";
        let parsed = RemoteTarget::parse(value).unwrap();
        assert_eq!(parsed.to_string(), value);
        assert_eq!(parsed.authority(), "dev@[::1]:2222");
    }
}
