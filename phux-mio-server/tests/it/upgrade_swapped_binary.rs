//! The binary an upgrade checks is the binary it execs: a file installed over the path after
//! the check (a concurrent `install`, a `mv`) is never run as the server, and one written in
//! place after its check is refused.

use std::path::{Path, PathBuf};

use phux_proto::command::{Command, CommandResult};

use crate::support::client::Client;
use crate::upgrade_chaos::{LoggedServer, ping};
use crate::upgrade_failures::{all_served, refusal, script, upgrade_to};

/// A program that must never run as the server: it leaves a mark and exits.
fn intruder(dir: &Path, mark: &Path) -> PathBuf {
    script(
        dir,
        "intruder",
        &format!("touch {}; exit 1", mark.display()),
    )
}

/// A wrapper around the real binary that, asked `--check-upgrade`, first puts `with` over its
/// own path by `how` (`mv` replaces the file, `cp` writes into it).
fn swapping(dir: &Path, how: &str, with: &Path) -> PathBuf {
    let path = dir.join("next");
    script(
        dir,
        "next",
        &format!(
            "case \"$1\" in --check-upgrade) {how} {} {};; esac\nexec {} \"$@\"",
            with.display(),
            path.display(),
            env!("CARGO_BIN_EXE_phux-mio-server")
        ),
    )
}

#[test]
fn a_binary_replaced_after_its_check_is_not_what_runs() {
    // [SERVER.UPGRADE.EXEC.11]
    let fixture = LoggedServer::start();
    let dir = tempfile::tempdir().expect("tempdir");
    let mark = dir.path().join("the-intruder-ran");
    let intruder = intruder(dir.path(), &mark);
    let next = swapping(dir.path(), "mv", &intruder);
    let mut a = fixture.server.connect();
    let hello = a.hello();
    let echo = a.spawn(&["cat"]);
    assert_eq!(upgrade_to(&mut a, &next), CommandResult::Ok);
    // The path now names the intruder, which never ran: the file checked was exec'd.
    assert!(
        std::fs::read_to_string(&next)
            .expect("read")
            .contains("touch")
    );
    assert!(!mark.exists(), "the binary swapped in after the check ran");
    assert_eq!(fixture.adoptions(), 1);
    all_served(&mut [&mut a], &echo, 1);
    let mut b: Client = fixture.server.connect();
    assert_eq!(b.hello().server_id, hello.server_id);
}

#[test]
fn a_binary_written_in_place_after_its_check_is_refused() {
    // [SERVER.UPGRADE.EXEC.11] The open file is the same file, but not the same bytes: it never
    // runs as the server, and the old image serves on.
    let fixture = LoggedServer::start();
    let dir = tempfile::tempdir().expect("tempdir");
    let mark = dir.path().join("the-intruder-ran-as-the-server");
    // Run as a throwaway check, it may leave its mark elsewhere; as the server it leaves this.
    let intruder = script(
        dir.path(),
        "intruder",
        &format!(
            "case \"$1\" in --adopt-image) touch {0};; esac\n\
             [ -n \"$PHUX_MIO_SERVER_ADOPT\" ] && touch {0}; exit 1",
            mark.display()
        ),
    );
    let next = swapping(dir.path(), "cp", &intruder);
    let mut a = fixture.server.connect();
    a.hello();
    let echo = a.spawn(&["cat"]);
    let text = refusal(upgrade_to(&mut a, &next));
    assert!(
        text.contains("cannot adopt") || text.contains("changed after it was checked"),
        "{text}"
    );
    assert!(
        !mark.exists(),
        "the binary written after its check ran as the server"
    );
    assert_eq!(fixture.adoptions(), 0);
    all_served(&mut [&mut a], &echo, 1);
    ping(&mut a, 2);
    assert_eq!(
        a.command(Command::Upgrade { binary: None }),
        CommandResult::Ok
    );
}
