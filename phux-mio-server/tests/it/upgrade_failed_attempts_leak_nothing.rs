//! No descriptor survives a failed upgrade: fifty attempts that fail at every step there is
//! (the version check, the trial adoption, and a new image that cannot adopt after the exec
//! and goes back to the previous binary) leave the server holding what it held before, and a
//! program started after them inherits what one started before did.

use std::path::PathBuf;

use crate::support::client::pid_of_terminal;
use crate::upgrade_chaos::{LoggedServer, fds_of, settled_fds_of};
use crate::upgrade_failures::{all_served, refusal, script, upgrade_to};

const ATTEMPTS: usize = 50;

#[test]
fn fifty_failed_upgrades_leave_no_descriptor_behind() {
    // [SERVER.UPGRADE.EXEC.7] [SERVER.UPGRADE.EXEC.6] [SERVER.UPGRADE.EXEC.10]
    let fixture = LoggedServer::start();
    let dir = tempfile::tempdir().expect("tempdir");
    let real = env!("CARGO_BIN_EXE_phux-mio-server");
    let refuses = script(dir.path(), "refuses", "exit 1");
    let cannot_adopt = script(
        dir.path(),
        "cannot-adopt",
        &format!("case \"$1\" in --check-upgrade) exec {real} \"$@\";; esac\nexit 2"),
    );
    // Passes both checks, then fails to adopt for real, after the exec.
    let fails_after_exec = script(
        dir.path(),
        "fails-after-exec",
        &format!(
            "{}=1 exec {real} \"$@\"",
            "PHUX_MIO_SERVER_TEST_FAIL_ADOPTION"
        ),
    );
    let kinds: [(&PathBuf, &str); 3] = [
        (&refuses, "refused state version"),
        (&cannot_adopt, "cannot adopt"),
        (&fails_after_exec, "is set"),
    ];
    let mut a = fixture.server.connect();
    a.hello();
    let echo = a.spawn(&["cat"]);
    all_served(&mut [&mut a], &echo, 0);
    let server = u32::try_from(fixture.server.pid()).expect("pid");
    let sleeper = a.spawn(&["sleep", "100000"]);
    let inherited_before = settled_fds_of(pid_of_terminal(&mut a, &sleeper));
    let held_before = fds_of(server).len();
    for attempt in 0..ATTEMPTS {
        let (binary, why) = kinds[attempt % kinds.len()];
        let text = refusal(upgrade_to(&mut a, binary));
        assert!(text.contains(why), "attempt {attempt}: {text}");
    }
    all_served(&mut [&mut a], &echo, 1);
    // Each way back is an exec into the previous binary, which logs its adoption.
    let after_exec = (0..ATTEMPTS).filter(|i| i % kinds.len() == 2).count();
    assert_eq!(fixture.adoptions(), after_exec);
    let held_after = fds_of(server);
    assert_eq!(
        held_after.len(),
        held_before,
        "the server holds more descriptors after {ATTEMPTS} failed upgrades: {held_after:?}"
    );
    let late = a.spawn(&["sleep", "100000"]);
    assert_eq!(
        settled_fds_of(pid_of_terminal(&mut a, &late)),
        inherited_before,
        "a program started after the failed upgrades inherited more"
    );
}
