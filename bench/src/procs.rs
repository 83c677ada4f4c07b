//! The processes under test: the phux server, and what /proc says about any process.

use std::io::{BufRead, BufReader};
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{OnceLock, mpsc};
use std::time::{Duration, Instant};

use crate::client::Client;
use crate::error::{Context, Error, Result};
use crate::ws::WsTarget;

/// How long a helper may take to say it is ready.
pub const START_DEADLINE: Duration = Duration::from_secs(30);
/// Processes are warmed up this long after spawn before anything is timed: the first
/// wake-ups after a fork run on cold caches and unsettled CPU placement.
pub const WARM: Duration = Duration::from_millis(300);

static HELPER_EXE: OnceLock<PathBuf> = OnceLock::new();

/// Names the `phux-bench` binary that plays the helper roles, for callers that are not that
/// binary themselves (integration tests). Only the first call counts.
pub fn set_helper_exe(path: PathBuf) {
    let _ = HELPER_EXE.set(path);
}

/// The binary that plays the helper roles: this one, unless [`set_helper_exe`] named another.
pub fn self_exe() -> Result<PathBuf> {
    if let Some(p) = HELPER_EXE.get() {
        return Ok(p.clone());
    }
    std::env::current_exe().context("locating the bench binary")
}

/// Which implementation a [`PhuxServer`] runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerKind {
    /// This workspace's server (`phux-mio-server`, or the bench's own copy of it).
    Ours,
    /// The phux reference (`phux server`, found by [`reference_bin`]).
    Reference,
}

/// The phux reference binary: `PHUX_REF_BIN`, or else the shared interop copy beside the
/// workspace (`../shared/interop/phux-0.22.0/phux` from its root) when it is there. `Err`
/// says why there is none, for the report's note.
pub fn reference_bin() -> std::result::Result<PathBuf, String> {
    if let Some(bin) = std::env::var_os("PHUX_REF_BIN") {
        let bin = PathBuf::from(bin);
        return if bin.is_file() {
            Ok(bin)
        } else {
            Err(format!("PHUX_REF_BIN={} is not a file", bin.display()))
        };
    }
    // The workspace root is the bench crate's parent.
    let default =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/interop/phux-0.22.0/phux");
    if default.is_file() {
        Ok(std::path::absolute(&default).unwrap_or(default))
    } else {
        Err("PHUX_REF_BIN is not set and ../shared/interop/phux-0.22.0/phux is not there".into())
    }
}

/// A phux server process on a socket in a private directory; killed on drop.
#[derive(Debug)]
pub struct PhuxServer {
    process: Child,
    /// The socket the server listens on.
    pub socket: PathBuf,
    /// Whose server it is.
    pub kind: ServerKind,
    /// Its WebSocket listener, when it was started with one ([`Self::start_ws`]).
    pub ws: Option<WsTarget>,
    _dir: tempfile::TempDir,
}

impl PhuxServer {
    /// Starts `server_bin --socket ...` (the real `phux-mio-server`) or, when `None`, this
    /// binary's `__serve` role (the same library, no log subscriber), and waits until it
    /// listens.
    pub fn start(server_bin: Option<&Path>) -> Result<Self> {
        Self::start_logged(server_bin, None)
    }

    /// Like [`Self::start`], with a WebSocket listener on a loopback port of its own too
    /// (`--listen-ws 127.0.0.1:0`).
    pub fn start_ws(server_bin: Option<&Path>) -> Result<Self> {
        Self::start_with(server_bin, None, true)
    }

    /// Like [`Self::start`], with the real server's log at `info` written to `log`.
    pub fn start_logged(server_bin: Option<&Path>, log: Option<&Path>) -> Result<Self> {
        Self::start_with(server_bin, log, false)
    }

    fn start_with(server_bin: Option<&Path>, log: Option<&Path>, ws: bool) -> Result<Self> {
        let dir = tempfile::tempdir().context("scratch directory")?;
        let socket = dir.path().join("phux.sock");
        let mut cmd = if let Some(bin) = server_bin {
            let mut c = Command::new(bin);
            let limit = crate::roles::SCALE_LIMIT.to_string();
            match log {
                Some(path) => c.args(["--log-level", "info", "--log-file"]).arg(path),
                None => c.args(["--log-level", "error"]),
            };
            c.args(["--max-connections", &limit])
                .args(["--max-terminals", &limit, "--socket"])
                .arg(&socket);
            c
        } else {
            let mut c = Command::new(self_exe()?);
            c.arg("__serve").arg("--socket").arg(&socket);
            c
        };
        if ws {
            cmd.args(["--listen-ws", "127.0.0.1:0"]);
        }
        let mut process = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .context("starting the phux server")?;
        let before = wait_ready_lines(&mut process, "phux-mio-server listening")?;
        let ws = if ws {
            let line = before
                .iter()
                .find(|l| l.starts_with("phux-mio-server websocket on"))
                .ok_or_else(|| Error::Protocol("the server named no WebSocket listener".into()))?;
            Some(WsTarget::from_line(line)?)
        } else {
            None
        };
        Ok(Self {
            process,
            socket,
            kind: ServerKind::Ours,
            ws,
            _dir: dir,
        })
    }

    /// Starts the phux reference (`bin server --socket ...`) with a HOME and XDG directories
    /// of its own in the scratch directory, and waits until it answers HELLO.
    pub fn start_reference(bin: &Path) -> Result<Self> {
        let dir = tempfile::tempdir().context("scratch directory")?;
        let run = dir.path().join("run");
        for sub in [run.clone(), dir.path().join("home")] {
            std::fs::DirBuilder::new()
                .mode(0o700)
                .create(&sub)
                .context("the reference's runtime and home directories")?;
        }
        let socket = run.join("ref.sock");
        let mut cmd = Command::new(bin);
        cmd.arg("server").arg("--socket").arg(&socket);
        reference_env(&mut cmd, dir.path());
        let process = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .context("starting the phux reference")?;
        let server = Self {
            process,
            socket,
            kind: ServerKind::Reference,
            ws: None,
            _dir: dir,
        };
        // It refuses SPAWN_TERMINAL while it has no session ("no session to host the
        // spawned pane"); given a HOME, it starts its default one (a shell) by itself once it
        // listens, so it is ready when that shell runs.
        let end = Instant::now() + START_DEADLINE;
        loop {
            if has_children(server.pid()) && server.client().is_ok() {
                return Ok(server);
            }
            if Instant::now() >= end {
                return Err(Error::Timeout(
                    "the phux reference's default session".into(),
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Starts a server of `kind`: ours (see [`Self::start`]) or the reference at `reference`.
    pub fn start_kind(
        kind: ServerKind,
        server_bin: Option<&Path>,
        reference: &Path,
    ) -> Result<Self> {
        match kind {
            ServerKind::Ours => Self::start(server_bin),
            ServerKind::Reference => Self::start_reference(reference),
        }
    }

    /// A new WebSocket connection that has completed HELLO (a server started with
    /// [`Self::start_ws`]).
    pub fn ws_client(&self) -> Result<Client> {
        let target = self
            .ws
            .as_ref()
            .ok_or_else(|| Error::Protocol("the server has no WebSocket listener".into()))?;
        let mut c = Client::connect_ws(target)?;
        c.hello()?;
        Ok(c)
    }

    /// A new connection that has completed HELLO.
    pub fn client(&self) -> Result<Client> {
        let mut c = Client::connect(&self.socket)?;
        // The reference attaches the connection that spawns a terminal to it (ours does not,
        // [SPAWN.ATTACH.1]); the client detaches at once so that both serve the same viewers.
        c.detach_after_spawn = self.kind == ServerKind::Reference;
        c.hello()?;
        Ok(c)
    }

    /// The server's pid.
    pub fn pid(&self) -> u32 {
        self.process.id()
    }
}

impl Drop for PhuxServer {
    fn drop(&mut self) {
        // SIGTERM first, so the server kills and reaps its children; SIGKILL if it lingers.
        if let Some(pid) = i32::try_from(self.process.id())
            .ok()
            .and_then(rustix::process::Pid::from_raw)
        {
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
        }
        let end = Instant::now() + Duration::from_secs(10);
        while Instant::now() < end {
            if matches!(self.process.try_wait(), Ok(Some(_))) {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.process.kill();
        let _ = self.process.wait();
    }
}

/// Waits for a line starting with `prefix` on the child's stdout (on a thread, so a silent
/// child cannot hang us past the deadline).
pub fn wait_ready_line(process: &mut Child, prefix: &str) -> Result<()> {
    wait_ready_lines(process, prefix).map(drop)
}

/// Lines a server prints before its ready line (a WebSocket line's, for one).
const MAX_LINES_BEFORE_READY: usize = 4;

/// Like [`wait_ready_line`]; the lines printed before it (at most a few).
pub fn wait_ready_lines(process: &mut Child, prefix: &str) -> Result<Vec<String>> {
    let stdout = process
        .stdout
        .take()
        .ok_or_else(|| Error::Protocol("no stdout to wait on".into()))?;
    let (tx, rx) = mpsc::channel();
    let wanted = prefix.to_owned();
    std::thread::spawn(move || {
        let mut reader = BufReader::new(stdout);
        for _ in 0..=MAX_LINES_BEFORE_READY {
            let mut line = String::new();
            let _ = reader.read_line(&mut line);
            let last = line.is_empty() || line.starts_with(&wanted);
            if tx.send(line).is_err() || last {
                return;
            }
        }
    });
    let mut before = Vec::new();
    loop {
        let line = rx
            .recv_timeout(START_DEADLINE)
            .map_err(|_| Error::Timeout(format!("`{prefix}`")))?;
        if line.starts_with(prefix) {
            return Ok(before);
        }
        if line.is_empty() || before.len() == MAX_LINES_BEFORE_READY {
            return Err(Error::Protocol(format!(
                "expected `{prefix}`, got {line:?}"
            )));
        }
        before.push(line);
    }
}

/// The reference's own HOME and XDG directories under `dir` (never the caller's), and a plain
/// shell for its default session.
fn reference_env(cmd: &mut Command, dir: &Path) {
    for (var, sub) in [
        ("HOME", "home"),
        ("XDG_CONFIG_HOME", "config"),
        ("XDG_STATE_HOME", "state"),
        ("XDG_DATA_HOME", "data"),
        ("XDG_CACHE_HOME", "cache"),
        ("XDG_RUNTIME_DIR", "run"),
    ] {
        cmd.env(var, dir.join(sub));
    }
    cmd.env("SHELL", "/bin/sh");
}

/// Whether any thread of `pid` has a child process (/proc/<pid>/task/*/children).
fn has_children(pid: u32) -> bool {
    std::fs::read_dir(format!("/proc/{pid}/task")).is_ok_and(|tasks| {
        tasks.flatten().any(|task| {
            std::fs::read_to_string(task.path().join("children"))
                .is_ok_and(|c| !c.trim().is_empty())
        })
    })
}

/// A process's resident set (VmRSS) in KiB.
pub fn rss_kib(pid: u32) -> Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .context(format!("reading /proc/{pid}/status"))?;
    parse_vm_rss(&status).ok_or_else(|| Error::Protocol(format!("no VmRSS for {pid}")))
}

/// The `VmRSS:` value of a /proc/<pid>/status text, in KiB.
pub fn parse_vm_rss(status: &str) -> Option<u64> {
    status_kib(status, "VmRSS")
}

/// The value of `key` (`VmRSS`, `RssShmem`, ...) in a /proc/<pid>/status text, in KiB.
pub fn status_kib(status: &str, key: &str) -> Option<u64> {
    status
        .lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
}

/// A process's resident set in KiB as (all of it, the part that is not shared memory such
/// as a memfd it maps), or `None` once it is gone.
pub fn rss_split_kib(pid: u32) -> Option<(u64, u64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let all = status_kib(&status, "VmRSS")?;
    Some((
        all,
        all.saturating_sub(status_kib(&status, "RssShmem").unwrap_or(0)),
    ))
}

/// CPU seconds (user + system) a process has used so far, from /proc/<pid>/stat.
pub fn cpu_secs(pid: u32) -> Result<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .context(format!("reading /proc/{pid}/stat"))?;
    parse_cpu_ticks(&stat)
        .map(|ticks| ticks as f64 / USER_HZ)
        .ok_or_else(|| Error::Protocol(format!("no CPU times for {pid}")))
}

/// The unit of /proc's CPU times: fixed at 100 by the kernel's ABI, whatever the tick rate.
const USER_HZ: f64 = 100.0;

/// utime + stime (fields 14 and 15) of a /proc/<pid>/stat line. The command name (field 2)
/// may hold spaces and parentheses, so the fields are counted after its last `)`.
pub fn parse_cpu_ticks(stat: &str) -> Option<u64> {
    let rest = stat.get(stat.rfind(')')? + 1..)?;
    let mut fields = rest.split_whitespace().skip(11);
    let utime: u64 = fields.next()?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some(utime + stime)
}

/// What the scheduler has counted for a process so far (/proc/<pid>/sched): how often it slept
/// (each sleep a wake-up to come, on a CPU that may have gone idle meanwhile), how often it was
/// preempted, how often it changed CPU, and its CPU time in milliseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SchedCounts {
    /// `nr_voluntary_switches`.
    pub sleeps: u64,
    /// `nr_involuntary_switches`.
    pub preempted: u64,
    /// `se.nr_migrations`.
    pub migrations: u64,
    /// `se.sum_exec_runtime`, ms.
    pub cpu_ms: f64,
}

impl SchedCounts {
    /// `pid`'s counts now, or `None` where /proc does not have them.
    pub fn of(pid: u32) -> Option<Self> {
        Self::parse(&std::fs::read_to_string(format!("/proc/{pid}/sched")).ok()?)
    }

    /// The counts in a /proc/<pid>/sched text.
    pub fn parse(text: &str) -> Option<Self> {
        let value = |key: &str| {
            text.lines().find_map(|l| {
                let (name, v) = l.split_once(':')?;
                (name.trim() == key).then(|| v.trim().to_owned())
            })
        };
        Some(Self {
            sleeps: value("nr_voluntary_switches")?.parse().ok()?,
            preempted: value("nr_involuntary_switches")?.parse().ok()?,
            migrations: value("se.nr_migrations")?.parse().ok()?,
            cpu_ms: value("se.sum_exec_runtime")?.parse().ok()?,
        })
    }

    /// The counts from `earlier` to `self`, each divided by `ops`: (sleeps, preemptions,
    /// migrations, CPU µs) per operation.
    pub fn per_op(&self, earlier: &Self, ops: usize) -> (f64, f64, f64, f64) {
        let n = ops.max(1) as f64;
        (
            self.sleeps.saturating_sub(earlier.sleeps) as f64 / n,
            self.preempted.saturating_sub(earlier.preempted) as f64 / n,
            self.migrations.saturating_sub(earlier.migrations) as f64 / n,
            (self.cpu_ms - earlier.cpu_ms) * 1000.0 / n,
        )
    }
}

/// Samples `pid`'s RSS until it has not moved by more than 0.5% for `quiet`, or `limit`
/// passes; returns the last sample. For "the server has finished ingesting".
pub fn settled_rss(pid: u32, quiet: Duration, limit: Duration) -> Result<u64> {
    let end = Instant::now() + limit;
    let mut last = rss_kib(pid)?;
    let mut since = Instant::now();
    loop {
        std::thread::sleep(Duration::from_millis(100));
        let now = rss_kib(pid)?;
        if now.abs_diff(last) * 200 > last.max(1) {
            last = now;
            since = Instant::now();
        } else if since.elapsed() >= quiet || Instant::now() >= end {
            return Ok(now);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vm_rss_is_read_in_kib() {
        let status = "Name:\tx\nVmPeak:\t  9000 kB\nVmRSS:\t    1234 kB\nThreads:\t1\n";
        assert_eq!(parse_vm_rss(status), Some(1234));
        assert_eq!(parse_vm_rss("Name:\tx\n"), None);
    }

    #[test]
    fn cpu_ticks_are_counted_after_the_command_name() {
        let stat = "42 (a) b (c)) S 1 42 42 0 -1 4194560 100 0 0 0 7 3 0 0 20 0 1 0 5 1000 200";
        assert_eq!(parse_cpu_ticks(stat), Some(10));
        assert_eq!(parse_cpu_ticks("42 (x) S 1"), None);
        assert!(cpu_secs(std::process::id()).expect("cpu") >= 0.0);
    }

    #[test]
    fn sched_counts_are_read_by_name() {
        let text = "x (1, #threads: 1)\n---\nse.exec_start   :  5.5\n\
                    se.sum_exec_runtime                          :             16.968034\n\
                    se.nr_migrations                             :                    3\n\
                    nr_switches                                  :                   12\n\
                    nr_voluntary_switches                        :                    8\n\
                    nr_involuntary_switches                      :                    4\n";
        let counts = SchedCounts::parse(text).expect("counts");
        assert_eq!(
            (counts.sleeps, counts.preempted, counts.migrations),
            (8, 4, 3)
        );
        let later = SchedCounts {
            sleeps: 12,
            cpu_ms: counts.cpu_ms + 2.0,
            ..counts
        };
        let (sleeps, preempted, migrations, cpu_us) = later.per_op(&counts, 4);
        assert_eq!((sleeps, preempted, migrations), (1.0, 0.0, 0.0));
        assert!((cpu_us - 500.0).abs() < 1e-6);
        assert_eq!(SchedCounts::parse("nr_switches : 1\n"), None);
        // Where /proc has it, our own is there.
        assert!(SchedCounts::of(std::process::id()).is_none_or(|c| c.cpu_ms >= 0.0));
    }

    #[test]
    fn our_own_rss_is_positive() {
        assert!(rss_kib(std::process::id()).expect("rss") > 0);
    }
}
