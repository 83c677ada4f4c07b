//! Starting the real server from a test: where cargo put a test-only example binary, and a
//! server on a socket, waited for until it says it listens. Shared by the integration tests of
//! phux-mio-server, phux-ctl and phux-conformance (the latter two include this file by path),
//! so that none of them invokes cargo.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// Generous on purpose: a loaded 2-core machine can take seconds to schedule anything.
pub(crate) const DEADLINE: Duration = Duration::from_secs(30);

/// `<target>/<profile>/examples/<name>`, derived from this test binary's path
/// (`<target>/<profile>/deps/it-<hash>`): cargo builds a package's examples before it runs
/// its tests. Panics, saying how to build it, when it is missing.
pub(crate) fn example(name: &str, package: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("the test binary sits in <target>/<profile>/deps/");
    let path = profile_dir.join("examples").join(name);
    assert!(
        path.is_file(),
        "no {name} at {}: these tests run the `{name}` example of {package}, which cargo \
         builds with the tests; build it with `cargo test -p {package}`",
        path.display()
    );
    path
}

/// Starts the server binary `exe` on `socket` and waits for its ready line. With `nofile`, the
/// descriptor limit is set first (through `sh -c 'ulimit -n N; exec server ...'`, so the tests
/// need no unsafe `pre_exec`).
pub(crate) fn launch_server(
    exe: &Path,
    socket: &Path,
    nofile: Option<u64>,
    log_level: &str,
) -> Child {
    let limits = nofile.map(|n| Nofile { soft: n, hard: n });
    launch_server_with(exe, socket, limits, log_level, &[])
}

/// A descriptor limit to start the server under. `ulimit -n` sets both: the server raises its
/// soft limit to the hard one at start, so a test that wants it to run out sets the hard one.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Nofile {
    pub(crate) soft: u64,
    pub(crate) hard: u64,
}

/// [`launch_server`] with the soft and hard descriptor limits apart, and `args` after the
/// usual ones.
#[allow(dead_code)] // phux-ctl and phux-conformance include this file and do not call it.
pub(crate) fn launch_server_with(
    exe: &Path,
    socket: &Path,
    nofile: Option<Nofile>,
    log_level: &str,
    args: &[&str],
) -> Child {
    let mut command = match nofile {
        Some(Nofile { soft, hard }) => {
            let mut c = Command::new("/bin/sh");
            c.arg("-c")
                .arg(format!(
                    "ulimit -Sn {soft} && ulimit -Hn {hard} && exec \"$0\" \"$@\""
                ))
                .arg(exe);
            c
        }
        None => Command::new(exe),
    };
    let mut process = command
        .arg("--socket")
        .arg(socket)
        .args(["--log-level", log_level, "--shell", "/bin/sh"])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start server");
    let stdout = process.stdout.take().expect("stdout");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    let line = rx
        .recv_timeout(DEADLINE)
        .expect("server never printed its ready line");
    assert_eq!(
        line.trim_end(),
        format!("phux-mio-server listening on {}", socket.display())
    );
    process
}
