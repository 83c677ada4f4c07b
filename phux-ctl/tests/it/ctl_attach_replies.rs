//! `phuxctl attach` in a real terminal emulator (tmux) keeps the emulator's replies to a
//! program's queries out of its keys: a program that queries and reads its replies gets
//! no typed garbage, the replies the server answers itself are not doubled, a reply the server
//! does not answer arrives byte for byte, and the first keys typed after land intact. Also:
//! attach ends with the program's exit status and leaves its last screen in view, and vim
//! (`set showcmd`) starts with nothing pending. Skipped (phux_testkit records it) where
//! tmux, python3 or vim is not installed.

use std::path::Path;

use crate::ctl_attach_tmux::{Tmux, shell_quote};
use crate::support::{Ctl, Server, wait_until};

/// A tmux session whose pane runs `phuxctl attach ID`, then prints attach's exit status.
pub(crate) fn attach_in_tmux(ctl: &Ctl, id: &str, dir: &Path) -> Tmux {
    attach_in_tmux_sized(ctl, id, dir, (100, 30))
}

/// [`attach_in_tmux`] in a pane of `cols` x `rows`.
pub(crate) fn attach_in_tmux_sized(ctl: &Ctl, id: &str, dir: &Path, size: (u16, u16)) -> Tmux {
    let tmux = Tmux {
        socket: dir.join("tmux.sock"),
    };
    let script = format!(
        "XDG_STATE_HOME={} {} --socket {} attach {id}; echo \"attach-exit=$?\"; exec sleep 1000",
        shell_quote(ctl.state.path()),
        shell_quote(Path::new(env!("CARGO_BIN_EXE_phuxctl"))),
        shell_quote(&ctl.socket),
    );
    tmux.new_session(size.0, size.1, &script);
    tmux
}

/// The program under attach: waits for `g`, sends its queries (DA1, DA2, CPR, XTVERSION, and
/// XTWINOPS 18, which tmux answers and the server does not), collects what comes back until
/// the XTWINOPS reply and a second more, prints it as hex, then reads one line and exits
/// with status 7.
const QUERIER: &str = r#"
import os, sys, termios, tty, select, time
fd = sys.stdin.fileno()
tty.setraw(fd)
os.write(1, b"ready\r\n")
while os.read(fd, 1) != b"g":
    pass
os.write(1, b"\x1b[c\x1b[>c\x1b[6n\x1b[>q\x1b[18t")
got = b""
# Until tmux's XTWINOPS reply (the last query's) is in, then 1 s more for anything late.
end = time.time() + 15
while time.time() < end:
    r, _, _ = select.select([fd], [], [], 0.05)
    if r:
        got += os.read(fd, 4096)
        if got.endswith(b"t") and end - time.time() > 1:
            end = time.time() + 1
os.write(1, b"got=" + got.hex().encode() + b"\r\n")
line = b""
while not line.endswith(b"\r"):
    line += os.read(fd, 1)
os.write(1, b"line=" + line[:-1].hex().encode() + b" end\r\n")
sys.exit(7)
"#;

/// The escape sequences of `bytes` (CSI and DCS), and whatever else is left.
fn sequences(bytes: &[u8]) -> (Vec<Vec<u8>>, Vec<u8>) {
    let mut seqs = Vec::new();
    let mut rest = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        match (bytes[i], bytes.get(i + 1)) {
            (0x1b, Some(b'[')) => {
                let end = (i + 2..bytes.len())
                    .find(|&j| (0x40..=0x7e).contains(&bytes[j]))
                    .map_or(bytes.len(), |j| j + 1);
                seqs.push(bytes[i..end].to_vec());
                i = end;
            }
            (0x1b, Some(b'P')) => {
                let end = (i + 2..bytes.len().saturating_sub(1))
                    .find(|&j| bytes[j] == 0x1b && bytes[j + 1] == b'\\')
                    .map_or(bytes.len(), |j| j + 2);
                seqs.push(bytes[i..end].to_vec());
                i = end;
            }
            (b, _) => {
                rest.push(b);
                i += 1;
            }
        }
    }
    (seqs, rest)
}

fn unhex(hex: &str) -> Vec<u8> {
    (0..hex.len() / 2)
        .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).expect("hex"))
        .collect()
}

/// The hex after `key=` in `text`, up to the next space or line end.
fn field(text: &str, key: &str) -> Option<Vec<u8>> {
    let start = text.find(key)? + key.len();
    let hex: String = text[start..]
        .chars()
        .take_while(char::is_ascii_hexdigit)
        .collect();
    Some(unhex(&hex))
}

#[test]
fn replies_reach_a_querying_program_intact_and_never_as_keys() {
    phux_testkit::require_programs!("tmux", "python3");
    let server = Server::start();
    let ctl = Ctl::new(&server);
    let dir = tempfile::tempdir().expect("tempdir");
    let script = dir.path().join("querier.py");
    std::fs::write(&script, QUERIER).expect("write the script");
    let script = script.display().to_string();
    let id = ctl.spawn(&["python3", &script]);
    ctl.wait_screen(&id, "the querier's start", |s| s.contains("ready"));

    let tmux = attach_in_tmux(&ctl, &id, dir.path());
    tmux.wait_pane("the bootstrap", |p| p.contains("ready"));
    tmux.run(&["send-keys", "-t", "t", "g"]);
    let screen = ctl.wait_screen(&id, "the replies", |s| s.contains("got="));
    // Joined: a long hex line wraps.
    let joined: String = screen.lines().collect();
    let got = field(&joined, "got=").expect("got=");
    let (seqs, loose) = sequences(&got);
    // [CLIENT.ATTACH.1] Nothing the emulator sent arrived as typed characters.
    assert!(
        loose.is_empty(),
        "typed garbage reached the program: {:?}",
        String::from_utf8_lossy(&got)
    );
    let text = String::from_utf8_lossy(&got).into_owned();
    // [CLIENT.ATTACH.2] tmux's own answers to what the server answers are dropped (tmux's
    // DA2 says 84 = 'T', its XTVERSION names it); at most one reply of each kind arrives.
    assert!(!text.contains(">84;"), "tmux's DA2 got through: {text:?}");
    assert!(
        !text.contains("tmux"),
        "tmux's XTVERSION got through: {text:?}"
    );
    let of_kind = |pred: &dyn Fn(&[u8]) -> bool| seqs.iter().filter(|s| pred(s)).count();
    assert!(
        of_kind(&|s| s.starts_with(b"\x1b[?") && s.ends_with(b"c")) <= 1,
        "{text:?}"
    );
    assert!(
        of_kind(&|s| s.starts_with(b"\x1b[>") && s.ends_with(b"c")) <= 1,
        "{text:?}"
    );
    assert!(of_kind(&|s| s.ends_with(b"R")) <= 1, "{text:?}");
    // [CLIENT.ATTACH.3] tmux's XTWINOPS reply, which the server does not give, arrives whole.
    let winops: Vec<&Vec<u8>> = seqs
        .iter()
        .filter(|s| s.starts_with(b"\x1b[8;") && s.ends_with(b"t"))
        .collect();
    assert_eq!(winops.len(), 1, "the XTWINOPS reply: {text:?}");

    // The first keys typed after the replies land, and nothing before them.
    tmux.run(&["send-keys", "-t", "t", "abc", "Enter"]);
    let pane = tmux.wait_pane("attach's exit", |p| p.contains("attach-exit="));
    let joined_pane: String = pane.lines().collect();
    assert_eq!(
        field(&joined_pane, "line=").as_deref(),
        Some(&b"abc"[..]),
        "{pane}"
    );
    // [CLIENT.ATTACH.5] attach exits with the program's status; [CLIENT.ATTACH.6] its last
    // screen stays in view.
    assert!(pane.contains("attach-exit=7"), "{pane}");
    assert!(pane.contains("got=") && pane.contains(" end"), "{pane}");
    assert!(
        pane.contains(&format!("[{id} exited with status 7]")),
        "{pane}"
    );
}

#[test]
fn vim_under_attach_starts_with_nothing_pending_and_the_first_keys_land() {
    phux_testkit::require_programs!("tmux", "vim");
    let server = Server::start();
    let ctl = Ctl::new(&server);
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("typed.txt");
    let file_arg = file.display().to_string();
    // vim queries the terminal at start (DA2, the cursor position, ...) under xterm TERMs.
    let id = ctl.spawn(&[
        "vim",
        "-u",
        "NONE",
        "-i",
        "NONE",
        "-N",
        "-c",
        "set showcmd",
        &file_arg,
    ]);
    let tmux = attach_in_tmux(&ctl, &id, dir.path());
    // vim's empty buffer: a column of `~`.
    let started = |p: &str| p.lines().filter(|l| l.trim_end() == "~").count() > 3;
    assert!(
        wait_until(|| started(&ctl.screen(&id))),
        "vim did not start"
    );
    let pane = tmux.wait_pane("vim", started);
    let last = pane
        .lines()
        .rfind(|l| !l.trim().is_empty())
        .unwrap_or_default();
    // showcmd shows a pending command at the right of the last line: only the file's name
    // and vim's own notes may be there.
    assert!(
        !last.trim_end().ends_with('c'),
        "a pending command in vim's showcmd area: {last:?}"
    );

    tmux.run(&["send-keys", "-t", "t", "ifirst-keys-land"]);
    tmux.wait_pane("the typed text", |p| p.contains("first-keys-land"));
    tmux.run(&["send-keys", "-t", "t", "Escape"]);
    tmux.wait_pane("normal mode", |p| !p.contains("-- INSERT --"));
    tmux.run(&["send-keys", "-t", "t", ":wq", "Enter"]);
    let pane = tmux.wait_pane("attach's exit", |p| p.contains("attach-exit="));
    assert!(pane.contains("attach-exit=0"), "{pane}");
    assert_eq!(
        std::fs::read_to_string(&file).expect("vim wrote the file"),
        "first-keys-land\n"
    );
}
