//! After an in-place upgrade the server runs under the command line it was started with,
//! exactly ([SERVER.UPGRADE.EXEC.14]): `ps`, `pgrep -f 'phux-mio-server --socket S'` and
//! `/proc/PID/cmdline` find it as they did. The descriptors handed over are named in the
//! environment, which the new image clears before it starts anything; a binary that does not
//! say it reads them there (an older one) is handed them as arguments, as before.

use std::path::Path;

use phux_proto::command::{Command, CommandResult};

use crate::support::client::{Client, Server};
use crate::support::common::eventually;
use crate::upgrade_chaos::ping;
use crate::upgrade_failures::{script, upgrade_to};

/// A process's command line, argument by argument.
fn args_of(pid: i32) -> Vec<String> {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .expect("cmdline")
        .split(|&b| b == 0)
        .filter(|a| !a.is_empty())
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect()
}

/// The environment a program started in a terminal now sees.
fn child_environment(c: &mut Client, dir: &Path, name: &str) -> String {
    let file = dir.join(name);
    c.spawn(&[
        "sh",
        "-c",
        &format!("env > {}.tmp; mv {0}.tmp {0}", file.display()),
    ]);
    let mut environ = String::new();
    assert!(eventually(|| {
        environ = std::fs::read_to_string(&file).unwrap_or_default();
        !environ.is_empty()
    }));
    environ
}

/// The pids `pgrep -f PATTERN` finds; `None` when pgrep is not installed.
fn pgrep(pattern: &str) -> Option<Vec<i32>> {
    let out = std::process::Command::new("pgrep")
        .args(["-f", pattern])
        .output()
        .ok()?;
    Some(
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .collect(),
    )
}

#[test]
fn an_upgraded_server_runs_under_the_command_line_it_was_started_with() {
    // [SERVER.UPGRADE.EXEC.14]
    let dir = tempfile::tempdir().expect("tempdir");
    let server = Server::start_with(&["--shell".as_ref(), "/bin/sh".as_ref()]);
    let before = args_of(server.pid());
    let mut c = server.connect();
    let hello = c.hello();
    // Twice: the second from an image that was itself exec'd so.
    for round in 1..=2 {
        assert_eq!(
            c.command(Command::Upgrade { binary: None }),
            CommandResult::Ok,
            "upgrade {round}"
        );
        ping(&mut c, round);
        assert_eq!(args_of(server.pid()), before, "after upgrade {round}");
    }
    let pattern = format!("phux-mio-server --socket {}", server.socket.display());
    match pgrep(&pattern) {
        Some(pids) => assert_eq!(pids, [server.pid()], "pgrep -f '{pattern}'"),
        None => eprintln!("pgrep is not installed: skipped its check"),
    }
    let mut d = server.connect();
    assert_eq!(d.hello().server_id, hello.server_id);
    // [SERVER.UPGRADE.EXEC.15] No program the server starts sees the descriptors' names.
    let environ = child_environment(&mut d, dir.path(), "env");
    assert!(environ.contains("PATH="), "{environ}");
    assert!(!environ.contains("PHUX_MIO_SERVER_ADOPT"), "{environ}");
}

#[test]
fn a_binary_that_does_not_read_the_environment_is_handed_the_descriptors_as_arguments() {
    // [SERVER.UPGRADE.EXEC.14] An older binary's check prints only the version line: it is
    // exec'd as `BIN --adopt-image IMAGE --previous-exe PREVIOUS -- ARGS`, and adopts so. The
    // next upgrade, to a binary that reads the environment, runs under the started arguments
    // again.
    let dir = tempfile::tempdir().expect("tempdir");
    let exe = env!("CARGO_BIN_EXE_phux-mio-server");
    let older = script(
        dir.path(),
        "older",
        &format!(
            "if [ \"$1\" = --check-upgrade ]; then '{exe}' \"$@\" | grep -v PHUX_MIO_SERVER_ADOPT; \
             exit 0; fi\nexec '{exe}' \"$@\""
        ),
    );
    let server = Server::start_with(&["--shell".as_ref(), "/bin/sh".as_ref()]);
    let before = args_of(server.pid());
    let mut c = server.connect();
    c.hello();
    assert_eq!(upgrade_to(&mut c, &older), CommandResult::Ok);
    ping(&mut c, 1);
    let old_form = args_of(server.pid());
    assert_eq!(
        old_form.get(1).map(String::as_str),
        Some("--adopt-image"),
        "{old_form:?}"
    );
    assert_eq!(old_form[old_form.len() - before.len() + 1..], before[1..]);
    assert_eq!(upgrade_to(&mut c, Path::new(exe)), CommandResult::Ok);
    ping(&mut c, 2);
    assert_eq!(args_of(server.pid())[1..], before[1..]);
}

#[test]
fn a_new_image_handed_its_descriptors_in_the_environment_goes_back_the_same_way() {
    // [SERVER.UPGRADE.EXEC.14] [SERVER.UPGRADE.EXEC.6] Exec'd under the started command line
    // with the descriptors in the environment, an image that cannot adopt runs the previous
    // binary under that same command line, the descriptors and the reason in its environment.
    let dir = tempfile::tempdir().expect("tempdir");
    let record = dir.path().join("args");
    let previous = script(
        dir.path(),
        "previous",
        &format!(
            "{{ printf '%s\\n' \"$@\"; echo \"adopt=$PHUX_MIO_SERVER_ADOPT\"; \
             echo \"failed=$PHUX_MIO_SERVER_ADOPT_FAILED\"; }} > {}",
            record.display()
        ),
    );
    let garbage = dir.path().join("garbage");
    std::fs::write(&garbage, b"not an image at all").expect("write");
    let status = std::process::Command::new("/bin/sh")
        .arg("-c")
        .arg("exec 5<\"$1\" 6<\"$2\"; exec \"$0\" --socket /nowhere/s.sock --max-terminals 3")
        .arg(env!("CARGO_BIN_EXE_phux-mio-server"))
        .arg(&previous)
        .arg(&garbage)
        .env("PHUX_MIO_SERVER_ADOPT", "6 5")
        .status()
        .expect("run");
    assert!(status.success(), "{status:?}");
    let text = std::fs::read_to_string(&record).expect("the previous binary ran");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[..5],
        [
            "--socket",
            "/nowhere/s.sock",
            "--max-terminals",
            "3",
            "adopt=6 5"
        ],
        "{text}"
    );
    assert!(
        lines[5].starts_with("failed=") && lines[5].contains("cannot read the state"),
        "{text}"
    );
}

#[test]
fn a_malformed_adoption_variable_is_refused() {
    // [SERVER.UPGRADE.EXEC.14] Not two descriptors: the binary says so and starts nothing.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_phux-mio-server"))
        .args(["--socket", "/nowhere/s.sock"])
        .env("PHUX_MIO_SERVER_ADOPT", "6")
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("PHUX_MIO_SERVER_ADOPT"),
        "{out:?}"
    );
}
