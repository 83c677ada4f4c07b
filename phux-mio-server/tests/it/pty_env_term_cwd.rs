//! The spawn spec's environment, TERM and working directory reach the child.

use phux_mio_server::{ChildExit, SpawnSpec, spawn};

use crate::support::common::{Output, wait_exit};

const REPORT: &str = "echo \"<T=$TERM F=${PHUX_FOO-unset} H=${HOME-unset} P=$(pwd)>\"";

#[test]
fn explicit_env_is_exact_plus_term() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cwd = dir.path().canonicalize().expect("canonical");
    let mut spec = SpawnSpec::new("/bin/sh").args(["-c", REPORT]);
    spec.env = Some(vec![
        ("PHUX_FOO".into(), "bar baz".into()),
        ("PATH".into(), "/usr/bin:/bin".into()),
        // The spec's term wins over a TERM in the list.
        ("TERM".into(), "dumb".into()),
    ]);
    spec.term = "screen-256color".into();
    spec.cwd = Some(cwd.clone());
    let mut child = spawn(&spec).expect("spawn");
    let mut out = Output::new(&child);
    let want = format!("<T=screen-256color F=bar baz H=unset P={}>", cwd.display());
    assert!(out.wait_for(&child, &want), "output: {:?}", out.text());
    assert_eq!(wait_exit(&mut child), ChildExit::Exited(0));
}

#[test]
fn no_env_inherits_ours_and_sets_default_term() {
    let home = std::env::var("HOME").unwrap_or_else(|_| "unset".into());
    let mut child = spawn(&SpawnSpec::new("/bin/sh").args(["-c", REPORT])).expect("spawn");
    let mut out = Output::new(&child);
    let cwd = std::env::current_dir().expect("cwd");
    let want = format!("<T=xterm-256color F=unset H={home} P={}>", cwd.display());
    assert!(out.wait_for(&child, &want), "output: {:?}", out.text());
    assert_eq!(wait_exit(&mut child), ChildExit::Exited(0));
}
