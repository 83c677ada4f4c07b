//! Exit statuses and the words of the small verbs, as a shell user checks them: a usage error
//! is 2 (`outbox drop` with nothing named, an empty `paste`, a signal the protocol cannot
//! carry), a lease that stays another's is 4, `signal` takes the names `kill -l` prints in any
//! case and either order, and a spawn size the server clamps is reported.

use std::io::{BufRead, BufReader};
use std::process::Stdio;

use crate::support::{Ctl, Server, proc_state, wait_until};

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn usage_errors_exit_2() {
    let server = Server::start();
    let ctl = Ctl::new(&server);
    let id = ctl.spawn(&["sleep", "1000"]);
    let out = ctl.run(&["outbox", "drop"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(stderr(&out).contains("--all"), "{out:?}");
    // stdin is null: nothing to paste.
    let out = ctl.run(&["paste", &id]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(stderr(&out).contains("nothing to paste"), "{out:?}");
    for args in [
        &["signal", "hup", &id][..],
        &["signal", &id, "SIGUSR1"],
        &["signal", "INT", "TERM"],
        &["signal", "3", "4"],
        &["signal", "bogus", &id],
    ] {
        let out = ctl.run(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {out:?}");
    }
    let out = ctl.run(&["signal", "usr1", &id]);
    assert!(stderr(&out).contains("SIGUSR1"), "{out:?}");
}

#[test]
fn signal_takes_kill_style_names_in_either_order() {
    let server = Server::start();
    let ctl = Ctl::new(&server);
    let id = ctl.spawn(&["sleep", "1000"]);
    let pid: u32 = ctl
        .ok(&["list"])
        .lines()
        .find(|l| l.starts_with(&format!("{id}\t")))
        .and_then(|l| l.split('\t').nth(3)?.parse().ok())
        .expect("the pid in list");
    ctl.ok(&["signal", "STOP", &id]);
    assert!(wait_until(|| proc_state(pid) == Some('T')), "not stopped");
    ctl.ok(&["signal", &id, "sigcont"]);
    assert!(wait_until(|| proc_state(pid) == Some('S')), "not resumed");
    ctl.ok(&["signal", "freeze", &id]);
    assert!(wait_until(|| proc_state(pid) == Some('T')), "not frozen");
    ctl.ok(&["signal", &id, "SIGKILL"]);
    assert!(
        wait_until(|| proc_state(pid).is_none_or(|s| s == 'Z')),
        "not killed"
    );
}

#[test]
fn releasing_another_clients_lease_exits_4() {
    let server = Server::start();
    let ctl = Ctl::new(&server);
    let id = ctl.spawn(&["sleep", "1000"]);
    let mut holder = ctl
        .command(&["lease", "acquire", &id, "--hold"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("lease --hold");
    let mut held = String::new();
    BufReader::new(holder.stdout.take().expect("stdout"))
        .read_line(&mut held)
        .expect("read");
    assert_eq!(held.trim(), "held");
    let out = ctl.run(&["lease", "release", &id]);
    assert_eq!(out.status.code(), Some(4), "{out:?}");
    assert!(stderr(&out).contains("released nothing"), "{out:?}");
    drop(holder.stdin.take());
    let _ = holder.wait();
}

#[test]
fn a_spawn_size_the_server_clamps_is_reported() {
    let server = Server::start();
    let ctl = Ctl::new(&server);
    let out = ctl.run(&["spawn", "--cols", "5000", "--", "sleep", "1000"]);
    assert!(out.status.success(), "{out:?}");
    let id = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    assert!(
        stderr(&out).contains(&format!("{id} is 1024x24, not the 5000x24 asked for")),
        "{out:?}"
    );
    let out = ctl.run(&["spawn", "--cols", "100", "--", "sleep", "1000"]);
    assert!(out.status.success() && stderr(&out).is_empty(), "{out:?}");
}
