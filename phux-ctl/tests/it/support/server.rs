//! The server under test: the `ctl-test-server` example (see the parent module), started on a
//! socket in a private directory and killed when dropped.

use std::path::{Path, PathBuf};
use std::process::Child;

#[path = "../../../../phux-mio-server/tests/it/support/launch.rs"]
mod launch;

pub(crate) use launch::DEADLINE;

/// The server binary under test (the `ctl-test-server` example: `phux-mio-server` itself,
/// its `bridge` command included).
pub(crate) fn server_exe() -> PathBuf {
    launch::example("ctl-test-server", "phux-ctl")
}

/// The raw-mode program that records what it reads (the `key-recorder` example).
pub(crate) fn key_recorder() -> PathBuf {
    launch::example("key-recorder", "phux-ctl")
}

/// Starts the `ctl-test-server` example on `socket` and waits until it listens.
pub(crate) fn launch_at(socket: &Path) -> Child {
    launch::launch_server(&server_exe(), socket, None, "warn")
}

/// The server binary under test, running until dropped (then killed).
pub(crate) struct Server {
    pub(crate) process: Child,
    pub(crate) socket: PathBuf,
    _dir: tempfile::TempDir,
}

impl Server {
    /// Starts `ctl-test-server --socket <tempdir>/s.sock` and waits for its ready line.
    pub(crate) fn start() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let socket = dir.path().join("s.sock");
        let process = launch_at(&socket);
        Self {
            process,
            socket,
            _dir: dir,
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.process.kill();
        let _ = self.process.wait();
    }
}
