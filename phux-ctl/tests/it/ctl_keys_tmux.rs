//! Keys through a real outer terminal, checked against that terminal itself. tmux plays the
//! user's terminal: a raw-mode recording program (the `key-recorder` example) runs straight in
//! one tmux pane, and the same program runs under phux, reached either through `phuxctl
//! attach` in another tmux pane or through `phuxctl send --key`. The same tmux keys go to both
//! (`tmux send-keys`, with tmux's key names, which `send --key` shares), and the program must
//! read the same bytes on both sides.
//!
//! Where tmux does not send what xterm sends, the phux side reads what xterm sends (a phux
//! server is an xterm-compatible terminal to its program): those rows are decided below, each
//! with its source ([CLIENT.KEY.1] [CLIENT.KEY.2]) — xterm's ctlseqs (<https://invisible-island.net/xterm/ctlseqs/ctlseqs.html>)
//! or xterm's `input.c` (`Input()`). Keys are separated by a fence character (U+2603) typed
//! after each, so each key's bytes are told apart without any timing; every wait polls with a
//! generous deadline. Skipped (printed on stderr and counted by `.ci/run`) where tmux is not
//! installed.

use std::path::{Path, PathBuf};

use crate::ctl_attach_tmux::{Tmux, shell_quote};
use crate::support::{Ctl, Server, wait_until};

/// Typed after every key: no key under test types it, and after any key (an Escape, a cut
/// `ESC [`, `ESC O` or `ESC P` included) it is read as itself.
const FENCE: &str = "\u{2603}";

/// A decided row: tmux's key name, what tmux 3.3a sends, what xterm sends (and so what the
/// program must read under phux), and why.
struct Decided {
    key: String,
    tmux: Vec<u8>,
    xterm: Vec<u8>,
    source: &'static str,
}

fn row(key: &str, tmux: &[u8], xterm: &[u8], source: &'static str) -> Decided {
    Decided {
        key: key.to_owned(),
        tmux: tmux.to_vec(),
        xterm: xterm.to_vec(),
        source,
    }
}

/// Home and End: tmux sends the VT220 editing-keypad codes of its own terminfo entries
/// (khome `\E[1~`, kend `\E[4~`); xterm sends the PC-style cursor keys, SS3 under DECCKM.
fn home_end(application: bool) -> Vec<Decided> {
    let source = "ctlseqs, PC-Style Function Keys: Home is CSI H, End CSI F, SS3 H / SS3 F with \
                  DECCKM; input.c Input(): IsCursorKey, curfinal, SS3 under MODE_DECCKM";
    let (home, end): (&[u8], &[u8]) = if application {
        (b"\x1bOH", b"\x1bOF")
    } else {
        (b"\x1b[H", b"\x1b[F")
    };
    vec![
        row("Home", b"\x1b[1~", home, source),
        row("End", b"\x1b[4~", end, source),
    ]
}

/// Keys `tmux send-keys` names differently from what xterm sends for them.
fn named_differently() -> Vec<Decided> {
    let mut rows = home_end(false);
    // The numeric keypad: tmux sends LF for KPEnter and prefixes ESC to keypad keys under
    // Alt; xterm sends CR and never prefixes the numeric keypad.
    rows.push(row(
        "KPEnter",
        b"\n",
        b"\r",
        "ctlseqs, VT220 keypad: Enter is CR (SS3 M in application mode); input.c kypd_num \
         maps KP_Enter to \\r",
    ));
    rows.push(row(
        "M-KPEnter",
        b"\x1b\n",
        b"\r",
        "input.c Input(): IsKeypadKey in numeric mode writes kypd_num[] with no ESC prefix",
    ));
    for c in ["0", "1", "5", "9", "/", "*", "-", "+", "."] {
        rows.push(row(
            &format!("M-KP{c}"),
            &[b"\x1b", c.as_bytes()].concat(),
            c.as_bytes(),
            "input.c Input(): IsKeypadKey in numeric mode writes kypd_num[] with no ESC prefix",
        ));
    }
    // Chords tmux sends nothing for without extended keys; xterm sends what X's key lookup
    // gives: Ctrl maps 3-7 to ESC..US and 8 to DEL, leaves 0, 1 and 9, and leaves Enter,
    // Tab and Escape their own byte; Ctrl+Backspace is BS (the DEL toggle applies without
    // Ctrl); Ctrl+Shift+Tab is ISO_Left_Tab, CSI Z.
    let lookup = "libX11 XLookupString's Control mapping (KeyBind.c), written as looked up by \
                  xterm's input.c Input() (kd.nbytes > 0); tmux 3.3a sends nothing";
    for (key, xterm) in [
        ("C-0", &b"0"[..]),
        ("C-1", b"1"),
        ("C-3", b"\x1b"),
        ("C-4", b"\x1c"),
        ("C-5", b"\x1d"),
        ("C-7", b"\x1f"),
        ("C-8", b"\x7f"),
        ("C-9", b"9"),
        ("C-Enter", b"\r"),
        ("C-Tab", b"\t"),
        ("C-Escape", b"\x1b"),
        ("C-BSpace", b"\x08"),
    ] {
        rows.push(row(key, b"", xterm, lookup));
    }
    rows.push(row(
        "C-BTab",
        b"",
        b"\x1b[Z",
        "input.c Input(): XK_ISO_Left_Tab is CSI Z; tmux 3.3a sends nothing",
    ));
    rows.push(row(
        "M-BTab",
        b"\x1b\x1b[Z",
        b"\x1b[Z",
        "input.c Input(): XK_ISO_Left_Tab is CSI Z, sent as a sequence; metaSendsEscape \
         prefixes ESC only to the text a key types",
    ));
    rows
}

/// tmux with `extended-keys always` sends fixterms' `CSI k ; m u` for chords that have no
/// legacy byte of their own, though the program never asked for it; xterm without
/// modifyOtherKeys (its default, and the program's) sends the key's own bytes.
fn extended() -> Vec<Decided> {
    let off = "ctlseqs, modifyOtherKeys: off unless the program sets it (CSI > 4 ; Pv m); \
               input.c Input(): the key's XLookupString bytes";
    vec![
        row("C-Tab", b"\x1b[9;5u", b"\t", off),
        row("C-Enter", b"\x1b[13;5u", b"\r", off),
        row("C-Escape", b"\x1b[27;5u", b"\x1b", off),
        row("C-S-a", b"\x1b[65;6u", b"\x01", off),
        row("C-1", b"\x1b[49;5u", b"1", off),
        row(
            "C-S-Tab",
            b"\x1b[9;6u",
            b"\x1b[Z",
            "input.c Input(): XK_ISO_Left_Tab is CSI Z",
        ),
        row(
            "C-KPEnter",
            b"\x1b[1106361;5u",
            b"",
            "tmux 3.3a sends its internal key number as the code, which names no key: nothing \
             is typed",
        ),
    ]
}

/// The keys of each class, by tmux name.
fn classes() -> Vec<(&'static str, Vec<String>)> {
    let with = |mods: &[&str], names: &[&str]| -> Vec<String> {
        names
            .iter()
            .flat_map(|n| mods.iter().map(move |m| format!("{m}{n}")))
            .collect()
    };
    let all_mods = ["", "C-", "M-", "S-", "C-M-", "C-S-", "M-S-", "C-M-S-"];
    let letters: Vec<String> = ('a'..='z').map(String::from).collect();
    let letters: Vec<&str> = letters.iter().map(String::as_str).collect();
    let digits: Vec<String> = ('0'..='9').map(String::from).collect();
    let digits: Vec<&str> = digits.iter().map(String::as_str).collect();
    let mut letter_keys = with(&["", "C-", "M-", "C-M-"], &letters);
    letter_keys.extend(with(&["", "M-"], &["A", "Q", "Z"]));
    letter_keys.extend(with(&["", "M-", "C-"], &digits));
    let punctuation = [
        "`", "-", "=", "[", "]", "\\", ";", "'", ",", ".", "/", "~", "!", "@", "#", "$", "%", "^",
        "&", "*", "(", ")", "_", "+", "{", "}", "|", ":", "\"", "<", ">", "?",
    ];
    let mut punct_keys = with(&["", "M-"], &punctuation);
    // Ctrl with the punctuation that has a C0 byte (C-\ is attach's detach key: send only).
    // (tmux has no name for Ctrl+Alt+/.)
    punct_keys.extend(with(&["C-", "C-M-"], &["@", "[", "]", "^", "_", "?", " "]));
    punct_keys.push("C-/".to_owned());
    let non_ascii = [
        "\u{e9}",
        "\u{df}",
        "\u{fc}",
        "\u{20ac}",
        "\u{f1}",
        "\u{44f}",
        "\u{3b1}",
        "\u{1f600}",
    ];
    let non_ascii_keys = with(&["", "M-"], &non_ascii);
    let cursor = [
        "Up", "Down", "Left", "Right", "Home", "End", "PPage", "NPage", "IC", "DC",
    ];
    let f_keys: Vec<String> = (1..=12).map(|n| format!("F{n}")).collect();
    let f_keys: Vec<&str> = f_keys.iter().map(String::as_str).collect();
    let keypad = [
        "KP0", "KP1", "KP5", "KP9", "KP/", "KP*", "KP-", "KP+", "KP.", "KPEnter",
    ];
    let mut specials = with(
        &["", "M-", "C-"],
        &["Enter", "Tab", "BSpace", "Escape", "Space", "BTab"],
    );
    specials.push("C-M-Space".to_owned());
    vec![
        ("letters and digits with Ctrl, Alt, Ctrl+Alt", letter_keys),
        (
            "punctuation, shifted and not, with Alt and Ctrl",
            punct_keys,
        ),
        ("non-ASCII characters with Alt", non_ascii_keys),
        (
            "cursor and editing keys with every modifier",
            with(&all_mods, &cursor),
        ),
        ("F1-F12 with every modifier", with(&all_mods, &f_keys)),
        ("keypad, with Alt", with(&["", "M-"], &keypad)),
        (
            "Enter, Tab, Backspace, Escape, Space with modifiers",
            specials,
        ),
    ]
}

/// A recording program's log, read from where the last check left off.
struct Log {
    path: PathBuf,
    offset: usize,
}

impl Log {
    /// The bytes of the next `n` fenced keys, once all have arrived.
    fn next(&mut self, n: usize, side: &str) -> Vec<Vec<u8>> {
        let mut segments = Vec::new();
        let mut data = Vec::new();
        let found = wait_until(|| {
            data = std::fs::read(&self.path).unwrap_or_default();
            segments = split_fenced(data.get(self.offset..).unwrap_or_default());
            segments.len() >= n
        });
        let seen = String::from_utf8_lossy(data.get(self.offset..).unwrap_or_default());
        assert!(
            found,
            "the program {side} read {} of {n} keys: {seen:?}",
            segments.len()
        );
        segments.truncate(n);
        self.offset += segments
            .iter()
            .map(|s| s.len() + FENCE.len())
            .sum::<usize>();
        segments
    }
}

/// The segments before each fence (what follows the last fence is not a whole key yet).
fn split_fenced(bytes: &[u8]) -> Vec<Vec<u8>> {
    let fence = FENCE.as_bytes();
    let mut out = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i + fence.len() <= bytes.len() {
        if &bytes[i..i + fence.len()] == fence {
            out.push(bytes[start..i].to_vec());
            i += fence.len();
            start = i;
        } else {
            i += 1;
        }
    }
    out
}

/// tmux escapes an argument ending in `;` (a command separator otherwise).
fn tmux_arg(key: &str) -> String {
    match key.strip_suffix(';') {
        Some(head) => format!("{head}\\;"),
        None => key.to_owned(),
    }
}

/// The outer terminal (tmux) with the program straight in pane `direct`, and phux with the
/// same program; `attached` runs `phuxctl attach` to it when asked for.
struct Rig {
    // Dropped first: the tmux server (and with it attach) before the phux server.
    tmux: Tmux,
    ctl: Ctl,
    id: String,
    direct: Log,
    phux: Log,
    _server: Server,
    _dir: tempfile::TempDir,
}

impl Rig {
    /// `extended_keys` is tmux's option; `setup` the modes the program asks for, as hex.
    fn start(extended_keys: &str, setup: &str, attach: bool) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let recorder = crate::support::key_recorder();
        let server = Server::start();
        let ctl = Ctl::new(&server);
        let direct_log = dir.path().join("direct.log");
        let phux_log = dir.path().join("phux.log");
        let phux_log_arg = phux_log.display().to_string();
        let recorder_arg = recorder.display().to_string();
        let id = ctl.spawn(&[&recorder_arg, &phux_log_arg, setup]);
        ctl.wait_screen(&id, "the recorder's start", |s| s.contains("ready"));

        let tmux = Tmux {
            socket: dir.path().join("tmux.sock"),
        };
        let direct = format!(
            "exec {} {} {setup}",
            shell_quote(&recorder),
            shell_quote(&direct_log)
        );
        tmux.run(&[
            "start-server",
            ";",
            "set",
            "-s",
            "extended-keys",
            extended_keys,
            ";",
            "new-session",
            "-d",
            "-s",
            "direct",
            "-x",
            "100",
            "-y",
            "30",
            &direct,
        ]);
        let capture = |target: &str| tmux.run(&["capture-pane", "-p", "-t", target]);
        assert!(
            wait_until(|| capture("direct").contains("ready")),
            "the direct recorder never started: {}",
            capture("direct")
        );
        if attach {
            let script = format!(
                "XDG_STATE_HOME={} {} --socket {} attach {id}; echo \"attach-exit=$?\"; exec \
                 sleep 1000",
                shell_quote(ctl.state.path()),
                shell_quote(Path::new(env!("CARGO_BIN_EXE_phuxctl"))),
                shell_quote(&ctl.socket),
            );
            tmux.run(&[
                "new-session",
                "-d",
                "-s",
                "attached",
                "-x",
                "100",
                "-y",
                "30",
                &script,
            ]);
            assert!(
                wait_until(|| capture("attached").contains("ready")),
                "attach never drew the recorder: {}",
                capture("attached")
            );
        }
        Self {
            tmux,
            ctl,
            id,
            direct: Log {
                path: direct_log,
                offset: 0,
            },
            phux: Log {
                path: phux_log,
                offset: 0,
            },
            _server: server,
            _dir: dir,
        }
    }

    /// `tmux send-keys` of each key, a fence after each, to `target`.
    fn tmux_keys(&self, target: &str, keys: &[String]) {
        let mut args = vec!["send-keys".to_owned(), "-t".to_owned(), target.to_owned()];
        for key in keys {
            args.push(tmux_arg(key));
            args.push(FENCE.to_owned());
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        self.tmux.run(&args);
    }

    /// `phuxctl send ID --key K ☃ --key K ☃ ...`.
    fn send_keys(&self, keys: &[String]) {
        let mut args = vec!["send".to_owned(), self.id.clone()];
        for key in keys {
            args.push("--key".to_owned());
            args.push(key.clone());
            args.push(FENCE.to_owned());
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = self.ctl.ok(&args);
        // A long class is sent as several operations, each reported, then `delivered`.
        assert_eq!(out.lines().last(), Some("delivered"), "{args:?}");
    }

    /// Sends each class of keys to the program straight and through phux (`how`), and
    /// returns every row where the program read something else than it should.
    fn compare(
        &mut self,
        classes: &[(&str, Vec<String>)],
        decided: &[Decided],
        how: How,
    ) -> Vec<String> {
        let mut failures = Vec::new();
        let mut rows = 0;
        for (class, keys) in classes {
            self.tmux_keys("direct", keys);
            match how {
                How::Attach => self.tmux_keys("attached", keys),
                How::SendKey => self.send_keys(keys),
            }
            let direct = self.direct.next(keys.len(), "under tmux");
            let phux = self.phux.next(keys.len(), "under phux");
            for ((key, straight), through) in keys.iter().zip(&direct).zip(&phux) {
                rows += 1;
                if key.chars().count() > 1 && straight.as_slice() == key.as_bytes() {
                    failures.push(format!("{class}: tmux has no key named {key:?}"));
                    continue;
                }
                let row = decided.iter().find(|d| d.key == *key);
                let want = match row {
                    Some(d) => {
                        if *straight != d.tmux {
                            // The oracle moved: say so, the row still checks phux.
                            note(&format!(
                                "note: tmux now sends {:?} for {key} (the decided row says {:?})",
                                String::from_utf8_lossy(straight),
                                String::from_utf8_lossy(&d.tmux)
                            ));
                        }
                        d.xterm.as_slice()
                    }
                    None => straight.as_slice(),
                };
                if through.as_slice() != want {
                    failures.push(format!(
                        "{class}: {key:?}: tmux straight {:?}, under phux {:?}, want {:?}{}",
                        String::from_utf8_lossy(straight),
                        String::from_utf8_lossy(through),
                        String::from_utf8_lossy(want),
                        row.map(|d| format!(" (decided: {})", d.source))
                            .unwrap_or_default(),
                    ));
                }
            }
        }
        assert!(rows > 0);
        failures
    }
}

#[derive(Clone, Copy)]
enum How {
    Attach,
    SendKey,
}

/// A line on stderr past the test harness's capture, so a passing run shows it.
fn note(line: &str) {
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr(), "NOTE: {line}");
}

fn check(failures: &[String]) {
    assert!(
        failures.is_empty(),
        "{} keys differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn attach_in_tmux_types_what_tmux_types_straight() {
    phux_testkit::require_programs!("tmux");
    let mut rig = Rig::start("off", "", true);
    let mut classes = classes();
    // Bursts: several keys in one write, read by attach in one read (ESC then a key is Alt
    // and that key, as the terminal meant).
    classes.push((
        "bursts",
        [
            "Escape", ":", "w", "q", "Enter", "Escape", "Escape", "[", "Escape", "O",
        ]
        .map(String::from)
        .to_vec(),
    ));
    check(&rig.compare(&classes, &home_end(false), How::Attach));
    // Escape then `:wq` in one write, as fast typing or an ssh link delivers it: the program
    // reads exactly that, never `ESC ;`.
    let keys = [String::from("Escape"), ":wq".into(), "Enter".into()];
    let mut args = vec!["send-keys", "-t", "attached"];
    args.extend(keys.iter().map(String::as_str));
    args.push(FENCE);
    rig.tmux.run(&args);
    assert_eq!(rig.phux.next(1, "under phux"), [b"\x1b:wq\r".to_vec()]);
}

#[test]
fn attach_in_application_cursor_and_keypad_modes_types_what_tmux_types() {
    phux_testkit::require_programs!("tmux");
    // DECCKM (CSI ? 1 h) and DECKPAM (ESC =), as vim and less ask for them.
    let mut rig = Rig::start("off", "1b5b3f31681b3d", true);
    let all = classes();
    let wanted: Vec<(&str, Vec<String>)> = all
        .into_iter()
        .filter(|(class, _)| class.starts_with("cursor") || class.starts_with("keypad"))
        .chain([(
            "F1-F4",
            ["F1", "F2", "F3", "F4", "S-F1", "C-F4"]
                .map(String::from)
                .to_vec(),
        )])
        .collect();
    check(&rig.compare(&wanted, &home_end(true), How::Attach));
}

#[test]
fn attach_under_tmux_extended_keys_types_what_xterm_types() {
    phux_testkit::require_programs!("tmux");
    let mut rig = Rig::start("always", "", true);
    let decided = extended();
    let mut keys: Vec<String> = decided.iter().map(|d| d.key.clone()).collect();
    // Chords tmux keeps legacy under extended keys: they must still arrive unchanged.
    keys.extend(["C-a", "M-:", "C-M-a", "M-\u{e9}", "C-Up", "S-F5"].map(String::from));
    check(&rig.compare(&[("extended keys", keys)], &decided, How::Attach));
}

#[test]
fn send_key_names_type_what_tmux_send_keys_types() {
    phux_testkit::require_programs!("tmux");
    let mut rig = Rig::start("off", "", false);
    let mut classes = classes();
    classes.push((
        "the detach key's chord",
        vec!["C-\\".to_owned(), "C-M-\\".into()],
    ));
    check(&rig.compare(&classes, &named_differently(), How::SendKey));
}
