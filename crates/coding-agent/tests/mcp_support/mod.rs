//! Real MCP servers and clients from the package registries (`.ci/run`
//! installs them): `mcp-server-everything` (npm), `mcp-server-time` and the
//! Python `mcp` SDK (PyPI).

#![allow(dead_code)]

use std::path::Path;
use std::process::Command;

/// Whether `program` runs. Missing, a test is skipped with a note, except
/// under `CI=true`, where a missing tool fails the test: CI must run them.
pub fn installed(program: &str, version_args: &[&str]) -> bool {
    let found = Command::new(program)
        .args(version_args)
        .output()
        .is_ok_and(|output| output.status.success());
    if !found {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "{program} is not installed (CI=true): run .ci/run's installs"
        );
        eprintln!("{program} is not installed: skipping");
    }
    found
}

/// Whether `python3` runs (the servers written for the tests need nothing
/// else).
pub fn python3_installed() -> bool {
    installed("python3", &["--version"])
}

/// Whether the Python `mcp` SDK can be imported.
pub fn python_mcp_installed() -> bool {
    installed("python3", &["-c", "import mcp.client.stdio"])
}

/// Whether `mcp-server-everything` is on PATH (it has no `--version`; `node`
/// must run and the package must be there).
pub fn everything_installed() -> bool {
    installed("sh", &["-c", "command -v mcp-server-everything"])
}

/// Whether `mcp-server-time` is on PATH.
pub fn time_installed() -> bool {
    installed("sh", &["-c", "command -v mcp-server-time"])
}

/// A shell command that runs `server` with its stdin copied to `log`: what
/// the client sent, to check cancellations.
pub fn recording_stdin(server: &str, log: &Path) -> String {
    format!("tee -a '{}' | {server}", log.display())
}

/// A shell command that runs `server` in its own process, whose pid it
/// writes to `pid` first (so a test can kill it).
pub fn writing_pid(server: &str, pid: &Path) -> String {
    format!("echo $$ > '{}'; exec {server}", pid.display())
}

/// A streamable HTTP MCP server the test started on a free loopback port;
/// dropped, it is killed.
pub struct HttpServer {
    child: std::process::Child,
    port: u16,
    program: Vec<String>,
}

impl HttpServer {
    /// `mcp-server-everything streamableHttp` (it takes its port from
    /// `PORT`), waited for until it accepts connections.
    pub fn everything() -> Self {
        let program = ["mcp-server-everything", "streamableHttp"].map(String::from);
        Self::start(program.to_vec(), free_port())
    }

    /// `tests/mcp_support/http_server.py` (the Python SDK's `MCPServer`
    /// over streamable HTTP, with a tool that shows the request's headers).
    pub fn python() -> Self {
        let script = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/mcp_support/http_server.py"
        );
        Self::start(vec!["python3".into(), script.into()], free_port())
    }

    /// `tests/mcp_support/failing_http_server.py` (tools answered HTTP 500
    /// and with an HTML page, the way proxies fail).
    pub fn failing() -> Self {
        let script = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/mcp_support/failing_http_server.py"
        );
        Self::start(
            vec!["python3".into(), "-B".into(), script.into()],
            free_port(),
        )
    }

    fn start(program: Vec<String>, port: u16) -> Self {
        let child = Command::new(&program[0])
            .args(&program[1..])
            .env("PORT", port.to_string())
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run {program:?}: {e}"));
        let server = HttpServer {
            child,
            port,
            program,
        };
        server.wait_until_listening();
        server
    }

    fn wait_until_listening(&self) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(
                std::time::Instant::now() < deadline,
                "{:?} did not listen on port {} within 60 s",
                self.program,
                self.port
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }

    /// The MCP endpoint.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }

    /// Kills the server and waits until it is gone (its port refuses).
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// The same program again on the same port (after [`HttpServer::kill`]).
    pub fn restart(&mut self) {
        self.kill();
        *self = Self::start(self.program.clone(), self.port);
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A port nothing listens on now (the kernel's pick for a throwaway socket).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}
