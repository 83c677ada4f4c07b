//! Pastes against the phux reference: the same APPLY_INPUT to our server and to phux 0.22.0,
//! and the bytes a raw-mode program reads in each, with bracketed paste on and off.
//!
//! - what `phuxctl paste` sends by default (the data through `neutralize_paste`, TRUSTED)
//!   reaches the program byte for byte the same under both servers: the client's sanitizer is
//!   the reference's own encoding, so nothing depends on which server answers;
//! - the raw data sent TRUSTED is a decided difference: the reference blanks the controls of
//!   [INPUT.ENCODE.PASTE.3] in every paste (libghostty's encoder), we write a trusted paste as
//!   sent ([INPUT.ENCODE.PASTE.4]) but for its markers under bracketing
//!   ([INPUT.ENCODE.PASTE.5]); either way nothing in it ends the paste;
//! - an UNTRUSTED multi-line paste under bracketing is a decided difference (R23,
//!   [INPUT.PASTE.SAFE.5]): we write it whole, the reference refuses it with UNSAFE_PASTE.
//!
//! Skipped, saying so, when the reference binary is not there (`PHUX_REF_BIN`).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use phux_conformance::peer::{Client, DEADLINE, Server};
use phux_core::encoder::neutralize_paste;
use phux_proto::command::{ApplyInput, Command, CommandResult, CommandValue};
use phux_proto::frame::TerminalSize;
use phux_proto::input::{InputEvent, PasteEvent, PasteTrust};
use phux_proto::{ErrorCode, OperationId, TerminalId};

use crate::launch;

/// Issue 35's file (`text ESC[201~ ^U echo PWNED`), then a control of each kind, the 8-bit end
/// marker, a start marker, and a character whose UTF-8 holds a 9b byte.
const PAYLOAD: &[u8] =
    b"text \x1b[201~ \x15 echo PWNED\nA\x03B\x1bC\x7fD\x9b201~E\x1b[200~F\x00G\x08H\xc3\x9bI\tJ\r";

/// What a program under the reference reads for `PAYLOAD` sent TRUSTED: libghostty's encoder
/// blanks its sixteen controls (ESC among them) whatever the trust.
const REFERENCE_TRUSTED: &[u8] =
    b"text  [201~   echo PWNED\nA B C D\x9b201~E [200~F G H\xc3\x9bI\tJ\r";

/// What a program under ours reads for `PAYLOAD` sent TRUSTED with bracketed paste on: the
/// data as sent, but for the first byte of each marker.
const OURS_TRUSTED: &[u8] =
    b"text  [201~ \x15 echo PWNED\nA\x03B\x1bC\x7fD 201~E [200~F\x00G\x08H\xc3\x9bI\tJ\r";

struct Recorder {
    client: Client,
    terminal: TerminalId,
    file: PathBuf,
    next_op: u128,
}

impl Recorder {
    /// A raw-mode `cat` into `file`, with bracketed paste on when `bracketed`, once the
    /// server's screen shows it is ready (so the server has read the mode).
    fn start(server: &Server, dir: &Path, name: &str, bracketed: bool, ops_from: u128) -> Self {
        let file = dir.join(name);
        let script = format!(
            "stty raw -echo; {} echo READY; exec cat > '{}'",
            if bracketed {
                "printf '\\033[?2004h';"
            } else {
                ""
            },
            file.display()
        );
        let mut client = server.client().expect("HELLO");
        let terminal = client
            .spawn(
                &["/bin/sh".to_owned(), "-c".to_owned(), script],
                TerminalSize { cols: 80, rows: 24 },
            )
            .expect("spawn the recorder");
        let end = Instant::now() + DEADLINE;
        loop {
            let screen = client
                .command(Command::GetScreen {
                    terminal: terminal.clone(),
                    request_scrollback: None,
                    cells: false,
                })
                .expect("GET_SCREEN");
            let ready = matches!(&screen, CommandResult::OkWith(CommandValue::Json(j)) if j.contains("READY"));
            if ready && file.exists() {
                break;
            }
            assert!(
                Instant::now() < end,
                "{}: the recorder never started",
                server.name()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        Self {
            client,
            terminal,
            file,
            next_op: ops_from,
        }
    }

    fn paste(&mut self, trust: PasteTrust, data: &[u8]) -> CommandResult {
        self.next_op += 1;
        self.client
            .command(Command::ApplyInput(ApplyInput {
                operation_id: OperationId::from_u128(self.next_op).expect("nonzero"),
                terminal: self.terminal.clone(),
                events: vec![InputEvent::Paste(PasteEvent {
                    trust,
                    data: data.to_vec(),
                })],
            }))
            .expect("APPLY_INPUT")
    }

    /// What the program has read once it holds `len` bytes.
    fn read(&self, len: usize) -> Vec<u8> {
        let end = Instant::now() + DEADLINE;
        loop {
            let got = std::fs::read(&self.file).unwrap_or_default();
            if got.len() >= len {
                return got;
            }
            assert!(
                Instant::now() < end,
                "the program read {} of {len} bytes: {got:?}",
                got.len()
            );
            std::thread::sleep(Duration::from_millis(25));
        }
    }
}

fn bracket(body: &[u8]) -> Vec<u8> {
    [&b"\x1b[200~"[..], body, b"\x1b[201~"].concat()
}

fn unbracketed(body: &[u8]) -> Vec<u8> {
    body.iter()
        .map(|&b| if b == b'\n' { b'\r' } else { b })
        .collect()
}

/// Each paste to a fresh recorder under `server`; what the programs read.
fn run(server: &Server, dir: &Path) -> Vec<(String, CommandResult, Vec<u8>)> {
    let mut neutralized = PAYLOAD.to_vec();
    neutralize_paste(&mut neutralized);
    let cases: [(&str, bool, PasteTrust, &[u8]); 5] = [
        ("default-bracketed", true, PasteTrust::Trusted, &neutralized),
        (
            "default-unbracketed",
            false,
            PasteTrust::Trusted,
            &neutralized,
        ),
        ("trusted-bracketed", true, PasteTrust::Trusted, PAYLOAD),
        (
            "untrusted-lines-bracketed",
            true,
            PasteTrust::Untrusted,
            b"one\ntwo\n",
        ),
        (
            "untrusted-lines-unbracketed",
            false,
            PasteTrust::Untrusted,
            b"one\ntwo\n",
        ),
    ];
    cases
        .iter()
        .zip(1u128..)
        .map(|((name, bracketed, trust, data), case)| {
            // Operation ids are server-wide: each recorder its own range.
            let mut recorder = Recorder::start(server, dir, name, *bracketed, case << 8);
            let result = recorder.paste(*trust, data);
            // A closing paste that every server writes as sent: the program has read all
            // before it once it has read this.
            let tail = recorder.paste(PasteTrust::Trusted, b"END");
            assert_eq!(tail, CommandResult::Ok, "{}: {name}", server.name());
            let markers = if *bracketed { 12 } else { 0 };
            let written = if result == CommandResult::Ok {
                data.len() + markers
            } else {
                0
            };
            let got = recorder.read(written + 3 + markers);
            let end = if *bracketed {
                bracket(b"END")
            } else {
                b"END".to_vec()
            };
            let body = got
                .strip_suffix(&end[..])
                .unwrap_or_else(|| panic!("{}: {name}: {got:?}", server.name()))
                .to_vec();
            ((*name).to_owned(), result, body)
        })
        .collect()
}

fn is_unsafe_paste(result: &CommandResult) -> bool {
    matches!(result, CommandResult::Error { code, .. } if *code == ErrorCode::UNSAFE_PASTE)
}

// [INPUT.ENCODE.PASTE.5] [INPUT.PASTE.SAFE.5] [CLIENT.PASTE.4]
#[test]
fn the_reference_reads_what_we_write() {
    let Some(reference) = Server::reference_or_skip() else {
        return;
    };
    let bin = launch::example("conformance-test-server", "phux-conformance");
    let ours = Server::start_ours(&bin).expect("start phux-mio-server");
    let dir = tempfile::tempdir().expect("tempdir");
    let theirs = run(&reference, &subdir(dir.path(), "reference"));
    let mine = run(&ours, &subdir(dir.path(), "ours"));
    let mut neutralized = PAYLOAD.to_vec();
    neutralize_paste(&mut neutralized);
    for ((name, ref_result, ref_read), (_, our_result, our_read)) in theirs.iter().zip(&mine) {
        let say = |what: &str| {
            format!(
                "{name}: {what}\n  reference {ref_result:?} {ref_read:?}\n  ours      {our_result:?} {our_read:?}"
            )
        };
        match name.as_str() {
            // What phuxctl sends by default reads the same under both.
            "default-bracketed" => {
                assert_eq!(ref_read, our_read, "{}", say("differs"));
                assert_eq!(our_read, &bracket(&neutralized), "{}", say("not the data"));
            }
            "default-unbracketed" => {
                assert_eq!(ref_read, our_read, "{}", say("differs"));
                assert_eq!(
                    our_read,
                    &unbracketed(&neutralized),
                    "{}",
                    say("not the data")
                );
            }
            // Decided: the reference blanks controls in trusted data; we keep all but the
            // markers' first bytes. Neither lets the data end the paste.
            "trusted-bracketed" => {
                assert_eq!(
                    ref_read,
                    &bracket(REFERENCE_TRUSTED),
                    "{}",
                    say("reference")
                );
                assert_eq!(our_read, &bracket(OURS_TRUSTED), "{}", say("ours"));
            }
            // Decided (R23): a multi-line untrusted paste goes in whole under bracketing here,
            // and is refused there; outside bracketing both refuse it.
            "untrusted-lines-bracketed" => {
                assert!(is_unsafe_paste(ref_result), "{}", say("reference"));
                assert!(ref_read.is_empty(), "{}", say("reference wrote"));
                assert_eq!(our_result, &CommandResult::Ok, "{}", say("ours"));
                assert_eq!(our_read, &bracket(b"one\ntwo\n"), "{}", say("ours"));
            }
            "untrusted-lines-unbracketed" => {
                assert!(is_unsafe_paste(ref_result), "{}", say("reference"));
                assert!(is_unsafe_paste(our_result), "{}", say("ours"));
                assert!(
                    ref_read.is_empty() && our_read.is_empty(),
                    "{}",
                    say("written")
                );
            }
            other => unreachable!("{other}"),
        }
    }
}

fn subdir(dir: &Path, name: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::create_dir(&path).expect("mkdir");
    path
}
