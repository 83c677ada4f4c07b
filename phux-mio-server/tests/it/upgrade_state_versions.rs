//! The state versions a binary reads ([SERVER.UPGRADE.STATE.3]): an image written by the
//! binary of the release before (state version 2, before WebSocket connections crossed an
//! upgrade) is adopted by this one, and the version check answers for every version read.
//!
//! `tests/fixtures/state-v2.image` is the image a version 2 server really handed over: the
//! trial child's standard input, captured while that server upgraded with one terminal (`cat`,
//! 20x5), one acknowledged paste in its ledger and two connections (a `phuxctl watch` and the
//! `phuxctl upgrade` asking). It is never written again: it pins what that release wrote.

use std::process::Command as Process;

use phux_mio_server::driver::{check_image, validate};
use proptest::prelude::*;

const PINNED_V2: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/state-v2.image");

/// `phux-mio-server --check-adopt` with `image` on its stdin, a file (as the server's memfd is:
/// the image is mapped, not read from a pipe).
fn check_adopt(image: &[u8]) -> std::process::Output {
    let mut file = tempfile::tempfile().expect("tempfile");
    std::io::Write::write_all(&mut file, image).expect("write the image");
    std::io::Seek::rewind(&mut file).expect("rewind");
    Process::new(env!("CARGO_BIN_EXE_phux-mio-server"))
        .arg("--check-adopt")
        .stdin(file)
        .output()
        .expect("run --check-adopt")
}

#[test]
fn an_image_of_the_release_before_is_adopted() {
    // [SERVER.UPGRADE.STATE.3] [SERVER.UPGRADE.EXEC.12]
    let image = std::fs::read(PINNED_V2).expect("the committed fixture");
    assert_eq!(phux_core::upgrade::image_version(&image), Ok(2));
    let out = check_adopt(&image);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!(
            "phux-mio-server adopts this image: {} bytes, 1 terminals, 2 connections, 1 ledger \
             entries\n",
            image.len()
        )
    );
    // One byte cut from its body: refused, nothing on stdout.
    let cut = check_adopt(&image[..image.len() - 1]);
    assert!(!cut.status.success());
    assert!(cut.stdout.is_empty());
}

#[test]
fn the_version_check_answers_for_every_version_read_and_no_other() {
    // [SERVER.UPGRADE.EXEC.8] [SERVER.UPGRADE.EXEC.14] The version's line, then the line that
    // says the descriptors may be named in the environment.
    for version in phux_core::upgrade::READS_VERSIONS {
        let out = Process::new(env!("CARGO_BIN_EXE_phux-mio-server"))
            .args(["--check-upgrade", &version.to_string()])
            .output()
            .expect("run");
        assert!(out.status.success(), "version {version}");
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            format!(
                "phux-mio-server reads upgrade state version {version}\n\
                 phux-mio-server adopts through PHUX_MIO_SERVER_ADOPT\n"
            )
        );
    }
    let next = phux_core::upgrade::STATE_VERSION + 1;
    let out = Process::new(env!("CARGO_BIN_EXE_phux-mio-server"))
        .args(["--check-upgrade", &next.to_string()])
        .output()
        .expect("run");
    assert!(!out.status.success());
    assert!(out.stdout.is_empty());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn the_trial_reader_gives_the_whole_decodes_verdict(
        edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..4),
        cut in proptest::option::of(any::<prop::sample::Index>()),
    ) {
        // [SERVER.UPGRADE.EXEC.12] `--check-adopt` reads an image one element at a time
        // (`check_image`); an adoption decodes it whole (`validate`). On a real image and on
        // its corruptions (bytes changed, the end cut) both say the same, and the same counts.
        let mut bytes = std::fs::read(PINNED_V2).expect("the committed fixture");
        for (at, value) in edits {
            let i = at.index(bytes.len());
            bytes[i] = value;
        }
        if let Some(at) = cut {
            bytes.truncate(at.index(bytes.len()));
        }
        let whole = validate(&bytes, &[]);
        let streamed = check_image(&bytes, &[]);
        match (whole, streamed) {
            (Ok(v), Ok(s)) => prop_assert_eq!(v.summary, s),
            (Err(_), Err(_)) => {}
            (whole, streamed) => prop_assert!(
                false,
                "whole: {:?}, streamed: {:?}",
                whole.map(|v| v.summary),
                streamed
            ),
        }
    }
}
