//! `spawn` runs the program where the user is, as dtach and abduco do: this shell's working
//! directory and environment, with the TERM of the terminal the server models; `--server-env`
//! keeps the server's (CLIENT.SPAWN.1).

use crate::support::server::server_exe;
use crate::support::{Ctl, Server};

/// Prints the directory, a variable only the caller has, and TERM, then waits.
const REPORT: &str = "echo \"<P=$(pwd) M=${PHUX_T_MARK-unset} T=$TERM>\"; exec sleep 1000";

#[test]
fn spawn_runs_in_the_callers_directory_and_environment() {
    let server = Server::start();
    let ctl = Ctl::new(&server);
    let here = tempfile::tempdir().expect("tempdir");
    let here_path = here.path().canonicalize().expect("canonical");
    let spawn = |extra: &[&str]| {
        let mut args = vec!["spawn"];
        args.extend_from_slice(extra);
        args.extend_from_slice(&["--", "/bin/sh", "-c", REPORT]);
        let out = ctl
            .command(&args)
            .current_dir(&here_path)
            .env("PHUX_T_MARK", "from-the-caller")
            // The caller's outer terminal: not what the program gets.
            .env("TERM", "dumb")
            .output()
            .expect("run phuxctl");
        assert!(out.status.success(), "{out:?}");
        String::from_utf8(out.stdout)
            .expect("utf-8")
            .trim()
            .to_owned()
    };

    // [CLIENT.SPAWN.1]
    let ours = spawn(&[]);
    let want = format!(
        "<P={} M=from-the-caller T=xterm-256color>",
        here_path.display()
    );
    ctl.wait_screen(&ours, &want, |s| s.contains(&want));

    // --server-env: the server's directory (the test's) and environment (no mark).
    let theirs = spawn(&["--server-env"]);
    let server_cwd = std::env::current_dir().expect("cwd");
    let want = format!("<P={} M=unset T=xterm-256color>", server_cwd.display());
    ctl.wait_screen(&theirs, &want, |s| s.contains(&want));

    // [CLIENT.SPAWN.2] Through a command (what --ssh runs), nothing of this shell is sent: the
    // far side's directory and environment.
    let bridge = format!(
        "'{}' bridge --socket '{}'",
        server_exe().display(),
        server.socket.display()
    );
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_phuxctl"))
        .args(["--exec", &bridge, "spawn", "--", "/bin/sh", "-c", REPORT])
        .current_dir(&here_path)
        .env("XDG_STATE_HOME", ctl.state.path())
        .env("PHUX_T_MARK", "from-the-caller")
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run phuxctl");
    assert!(out.status.success(), "{out:?}");
    let remote = String::from_utf8(out.stdout)
        .expect("utf-8")
        .trim()
        .to_owned();
    ctl.wait_screen(&remote, &want, |s| s.contains(&want));
}
