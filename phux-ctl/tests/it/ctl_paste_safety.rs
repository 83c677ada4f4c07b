//! Pasting a file is safe by default, at the far end: real bash with bracketed paste on runs
//! nothing a pasted file says until Enter, an embedded end marker cannot end the paste, a
//! multi-line paste arrives as one paste; `--untrusted` refuses lines where they would run;
//! `--verbatim` sends the bytes as they are.

use std::path::{Path, PathBuf};

use crate::support::server::key_recorder;
use crate::support::{Ctl, Server, wait_until};

/// Issue 35's file: text, the end-of-paste marker, C-u, then a command on its own line.
const ISSUE_35: &[u8] = b"text \x1b[201~ \x15 echo PWNED\n";

/// An interactive bash with bracketed paste on, in a home of its own.
struct Bash {
    id: String,
    dir: tempfile::TempDir,
}

impl Bash {
    fn start(ctl: &Ctl) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let inputrc = dir.path().join("inputrc");
        std::fs::write(&inputrc, "set enable-bracketed-paste on\n").expect("inputrc");
        let home = format!("HOME={}", dir.path().display());
        let inputrc = format!("INPUTRC={}", inputrc.display());
        let id = ctl
            .ok(&[
                "spawn",
                "--env",
                &home,
                "--env",
                &inputrc,
                "--env",
                "PS1=bash$ ",
                "--cwd",
                dir.path().to_str().expect("utf-8 path"),
                "--",
                "bash",
                "--norc",
                "--noprofile",
                "-i",
            ])
            .trim()
            .to_owned();
        ctl.wait_screen(&id, "the prompt", |s| s.contains("bash$"));
        Self { id, dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn file(&self, name: &str, content: &[u8]) -> String {
        let path = self.path(name);
        std::fs::write(&path, content).expect("write");
        path.to_str().expect("utf-8 path").to_owned()
    }

    /// Types `mark` (a comment, so harmless whenever it runs) and waits for it on screen:
    /// bash has then read everything sent before it, and run whatever it was going to.
    fn sync(&self, ctl: &Ctl, mark: &str) -> String {
        ctl.ok(&["send", &self.id, mark]);
        ctl.wait_screen(&self.id, mark, |s| s.contains(mark))
    }
}

/// Whether `screen` shows a prompt line that starts with `mark`: bash ran what came before
/// and then read `mark` at a fresh prompt.
fn at_a_fresh_prompt(screen: &str, mark: &str) -> bool {
    screen
        .lines()
        .any(|l| l.trim_start().starts_with(&format!("bash$ {mark}")))
}

// [CLIENT.PASTE.4] [INPUT.ENCODE.PASTE.5]
#[test]
fn an_embedded_end_marker_cannot_escape() {
    let server = Server::start();
    let ctl = Ctl::new(&server);
    let bash = Bash::start(&ctl);
    let pwned = bash.path("PWNED");
    let touch = format!("text \x1b[201~ \x15 touch {}\n", pwned.display());
    // The default paste, then the same bytes --verbatim: the client blanks the marker in the
    // first, our server in the second ([INPUT.ENCODE.PASTE.5]).
    for (n, (content, flags)) in [
        (ISSUE_35, &[][..]),
        (touch.as_bytes(), &[][..]),
        (ISSUE_35, &["--verbatim"][..]),
        (touch.as_bytes(), &["--verbatim"][..]),
    ]
    .into_iter()
    .enumerate()
    {
        let file = bash.file(&format!("paste{n}"), content);
        let mut args = vec!["paste", bash.id.as_str(), "--file", file.as_str()];
        args.extend_from_slice(flags);
        assert_eq!(ctl.ok(&args), "delivered\n", "{flags:?}");
        let mark = format!("#sync{n}");
        let screen = bash.sync(&ctl, &mark);
        assert!(
            !at_a_fresh_prompt(&screen, &mark),
            "bash ran a line of the paste ({flags:?}):\n{screen}"
        );
        assert!(
            !pwned.exists(),
            "the paste ran a command ({flags:?}):\n{screen}"
        );
        assert!(
            !screen.lines().any(|l| l.trim() == "PWNED"),
            "echo PWNED ran ({flags:?}):\n{screen}"
        );
        // The paste sits in the line as text; clear it for the next round.
        assert!(screen.contains("[201~"), "{screen}");
        ctl.ok(&["send", &bash.id, "--key", "C-u"]);
    }
    ctl.ok(&["send", &bash.id, "echo done", "--key", "Enter"]);
    ctl.wait_screen(&bash.id, "done", |s| s.lines().any(|l| l.trim() == "done"));
    assert!(!pwned.exists());
}

// [CLIENT.PASTE.4] [INPUT.PASTE.SAFE.5] [INPUT.ENCODE.PASTE.1]
#[test]
fn a_multi_line_paste_into_bash_arrives_as_one_paste() {
    let server = Server::start();
    let ctl = Ctl::new(&server);
    let bash = Bash::start(&ctl);
    for (round, flags) in [&[][..], &["--untrusted"][..]].into_iter().enumerate() {
        let (one, two) = (
            bash.path(&format!("one{round}")),
            bash.path(&format!("two{round}")),
        );
        let lines = format!(
            "echo one > {}\necho two > {}\n",
            one.display(),
            two.display()
        );
        let file = bash.file(&format!("lines{round}"), lines.as_bytes());
        let mut args = vec!["paste", bash.id.as_str(), "--file", file.as_str()];
        args.extend_from_slice(flags);
        assert_eq!(ctl.ok(&args), "delivered\n", "{flags:?}");
        // Bash has read the whole paste and run none of it: the lines wait in its buffer.
        let mark = format!("#sync{round}");
        let screen = bash.sync(&ctl, &mark);
        assert!(!at_a_fresh_prompt(&screen, &mark), "{flags:?}:\n{screen}");
        assert!(
            !one.exists() && !two.exists(),
            "{flags:?} ran a line:\n{screen}"
        );
        // One Enter runs the paste, both lines.
        ctl.ok(&["send", &bash.id, "--key", "Enter"]);
        assert!(
            wait_until(|| one.exists() && two.exists()),
            "{flags:?}: Enter did not run the pasted lines:\n{}",
            ctl.screen(&bash.id)
        );
    }
}

/// A raw-mode program that appends what it reads to a file, with bracketed paste on or off.
fn recorder(ctl: &Ctl, dir: &Path, name: &str, bracketed: bool) -> (String, PathBuf) {
    let log = dir.join(name);
    let recorder = key_recorder();
    let mut argv = vec![
        recorder.to_str().expect("utf-8 path"),
        log.to_str().expect("utf-8 path"),
    ];
    if bracketed {
        argv.push("1b5b3f3230303468");
    }
    let id = ctl.spawn(&argv);
    ctl.wait_screen(&id, "ready", |s| s.contains("ready"));
    (id, log)
}

/// What the recorder has read once it ends with `tail`.
fn read_until(log: &Path, tail: &[u8]) -> Vec<u8> {
    let mut got = Vec::new();
    assert!(
        wait_until(|| {
            got = std::fs::read(log).unwrap_or_default();
            got.ends_with(tail)
        }),
        "the program never read {tail:?}; it read {got:?}"
    );
    got
}

// [CLIENT.PASTE.5] [CLIENT.PASTE.4] [INPUT.ENCODE.PASTE.4] [INPUT.ENCODE.PASTE.5]
#[test]
fn verbatim_sends_the_bytes_and_the_default_blanks_controls() {
    let server = Server::start();
    let ctl = Ctl::new(&server);
    let dir = tempfile::tempdir().expect("tempdir");
    let data = b"a\x1b[31mb\x03c\x15d\te\rf\x1b[201~g\n";
    let source = dir.path().join("data");
    std::fs::write(&source, data).expect("write");
    let source = source.to_str().expect("utf-8 path");
    let (plain, plain_log) = recorder(&ctl, dir.path(), "plain", false);
    let (bracketed, bracketed_log) = recorder(&ctl, dir.path(), "bracketed", true);

    ctl.ok(&["paste", &plain, "--file", source]);
    ctl.ok(&["paste", &plain, "--verbatim", "--file", source]);
    ctl.ok(&["send", &plain, "x\x1by\x15z", "--key", "Enter"]);
    ctl.ok(&[
        "send",
        &plain,
        "--verbatim",
        "x\x1by\x15z",
        "--key",
        "Enter",
    ]);
    let got = read_until(&plain_log, b"x\x1by\x15z\r");
    assert_eq!(
        got,
        [
            &b"a [31mb c d\te\rf [201~g\r"[..],
            b"a\x1b[31mb\x03c\x15d\te\rf\x1b[201~g\r",
            b"x y z\r",
            b"x\x1by\x15z\r",
        ]
        .concat()
    );

    // Under bracketing the verbatim paste keeps everything but its own marker's ESC.
    ctl.ok(&["paste", &bracketed, "--verbatim", "--file", source]);
    ctl.ok(&["send", &bracketed, "END"]);
    let got = read_until(&bracketed_log, b"\x1b[200~END\x1b[201~");
    assert_eq!(
        got,
        [
            &b"\x1b[200~a\x1b[31mb\x03c\x15d\te\rf [201~g\n\x1b[201~"[..],
            b"\x1b[200~END\x1b[201~",
        ]
        .concat()
    );
}

// [INPUT.PASTE.SAFE.5] [CLIENT.PASTE.4] `--untrusted` lines where a line end is Enter: refused,
// nothing written. Under bracketing they go in (above, in bash).
#[test]
fn untrusted_lines_are_refused_where_they_would_run() {
    let server = Server::start();
    let ctl = Ctl::new(&server);
    let dir = tempfile::tempdir().expect("tempdir");
    let (id, log) = recorder(&ctl, dir.path(), "plain", false);
    let source = dir.path().join("lines");
    std::fs::write(&source, b"rm -rf x\nsecond\n").expect("write");
    let out = ctl.run(&[
        "paste",
        &id,
        "--untrusted",
        "--file",
        source.to_str().expect("utf-8 path"),
    ]);
    assert_eq!(out.status.code(), Some(4), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stdout).starts_with("refused: UNSAFE_PASTE"),
        "{out:?}"
    );
    ctl.ok(&["send", &id, "after"]);
    assert_eq!(read_until(&log, b"after"), b"after");
}
