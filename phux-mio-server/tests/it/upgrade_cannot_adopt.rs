//! Adopt before committing: a binary that says it reads our state version but cannot take the
//! state over (exits, says something else, hangs) is found out by a throwaway child that
//! adopts the real image on trial, and refused while the old image still holds everything.

use std::path::{Path, PathBuf};

use phux_proto::command::CommandResult;

use crate::upgrade_chaos::{LoggedServer, ping};
use crate::upgrade_failures::{all_served, refusal, script, upgrade_to};

/// A wrapper that answers `--check-upgrade` as the real binary does and does `adopt` when
/// asked anything else.
fn versioned_only(dir: &Path, name: &str, adopt: &str) -> PathBuf {
    script(
        dir,
        name,
        &format!(
            "case \"$1\" in --check-upgrade) exec {} \"$@\";; esac\n{adopt}",
            env!("CARGO_BIN_EXE_phux-mio-server")
        ),
    )
}

#[test]
fn a_binary_that_reads_our_version_but_cannot_adopt_is_refused_and_the_old_image_serves_on() {
    // [SERVER.UPGRADE.EXEC.10] [SERVER.UPGRADE.EXEC.12] [SERVER.UPGRADE.EXEC.4]
    let fixture = LoggedServer::start();
    let dir = tempfile::tempdir().expect("tempdir");
    let mut a = fixture.server.connect();
    let hello = a.hello();
    let mut b = fixture.server.connect();
    b.hello();
    let echo = a.spawn(&["cat"]);
    all_served(&mut [&mut a, &mut b], &echo, 1);

    let exits = versioned_only(dir.path(), "exits", "echo 'no such option' >&2; exit 3");
    let text = refusal(upgrade_to(&mut a, &exits));
    assert!(
        text.contains("cannot adopt") && text.contains("exit status: 3"),
        "{text}"
    );
    all_served(&mut [&mut a, &mut b], &echo, 2);

    // A line like the confirmation, about another image: it did not read this one.
    let lies = versioned_only(
        dir.path(),
        "lies",
        "echo 'phux-mio-server adopts this image: 1 bytes, 0 terminals, 0 connections, 0 \
         ledger entries'",
    );
    let text = refusal(upgrade_to(&mut b, &lies));
    assert!(text.contains("without confirming"), "{text}");
    all_served(&mut [&mut a, &mut b], &echo, 3);

    let hangs = versioned_only(dir.path(), "hangs", "exec sleep 100000");
    let text = refusal(upgrade_to(&mut a, &hangs));
    assert!(text.contains("did not answer --check-adopt"), "{text}");
    all_served(&mut [&mut a, &mut b], &echo, 4);
    assert_eq!(
        fixture.adoptions(),
        0,
        "a binary that cannot adopt was exec'd"
    );

    // The real binary still upgrades, and it is the same server.
    let good = PathBuf::from(env!("CARGO_BIN_EXE_phux-mio-server"));
    assert_eq!(upgrade_to(&mut b, &good), CommandResult::Ok);
    assert_eq!(fixture.adoptions(), 1);
    all_served(&mut [&mut a, &mut b], &echo, 5);
    ping(&mut a, 6);
    let mut c = fixture.server.connect();
    assert_eq!(c.hello().server_id, hello.server_id);
}
