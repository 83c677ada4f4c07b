//! What the local terminal sends `phuxctl attach`, told apart: keys, pastes, focus reports,
//! and the terminal's replies to queries the program made through attach's output.
//!
//! A reply is never a key ([CLIENT.ATTACH.1]): `ESC [ > 8 4 ; 0 ; 0 c` read as keys would
//! type `84;0;0c` at the program. The decoder sorts each escape sequence by its shape: the
//! reply kinds the server answers itself ([CLIENT.ATTACH.2]) are named, any other reply is
//! kept as its exact bytes ([CLIENT.ATTACH.3]), and only the shapes of keys become keys.
//!
//! Bytes arrive in reads; a sequence cut by the end of a read is kept until more bytes come.
//! When none come in time ([`Decoder::incomplete`] says how long to wait), [`Decoder::flush`]
//! reads what is left as keys: a lone ESC is the Escape key, `ESC x` is Alt+x.
//!
//! Keys are decoded as an xterm-compatible terminal sends them ([CLIENT.KEY.2]; ctlseqs,
//! "PC-Style Function Keys" and "VT220-Style Function Keys"; `ESC` + key for Alt, as
//! metaSendsEscape; the SS3 keypad; modifyOtherKeys' `CSI 27 ; m ; k ~`; the `CSI k ; m u` of
//! fixterms and the kitty keyboard protocol) into events a server encodes back to those bytes
//! in the program's modes. Mouse and focus reports are told from keys only while the program
//! has asked for them ([`Decoder::set_reports`]): otherwise `ESC [ I` is Alt+[ then I, as
//! typed.

use phux_proto::input::KeyEvent;

use sequence::{Parsed, parse, string_end};

mod sequence;

/// A paste longer than this is handed on in pieces of this size (each its own INPUT_PASTE),
/// so a paste without its end marker cannot grow a buffer without bound.
pub const MAX_PASTE_CHUNK: usize = 1024 * 1024;

/// A DCS / OSC / APC string longer than this is not a reply anyone waits for: it is dropped
/// up to its terminator, bounding the buffer.
pub const MAX_STRING: usize = 64 * 1024;

/// The end of a bracketed paste.
const PASTE_END: &[u8] = b"\x1b[201~";

/// One thing the local terminal sent.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum TtyInput {
    /// A key press (or repeat).
    Key(KeyEvent),
    /// The text between the bracketed-paste markers (or one piece of it).
    Paste(Vec<u8>),
    /// A focus report (`CSI I` gained, `CSI O` lost).
    Focus(bool),
    /// A reply of a kind the server answers itself ([CLIENT.ATTACH.2]); its name.
    AnsweredReply(&'static str),
    /// `CSI row ; col R`: a cursor position report, which `CSI 1 ; m R` shares with F3 under
    /// modifiers; `f3` is that key when the shape allows it.
    CursorReport {
        /// F3 with the modifiers, when the report is `CSI 1 ; m R`.
        f3: Option<KeyEvent>,
    },
    /// A reply the server does not answer, byte for byte ([CLIENT.ATTACH.3]).
    OtherReply(Vec<u8>),
    /// Something neither a key nor a reply (mouse reports, a stray paste end, a string too
    /// long to be a reply): dropped.
    Ignored,
}

/// How long [`Decoder::flush`] should wait for the rest of a cut sequence.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Incomplete {
    /// Nothing is held.
    No,
    /// An escape sequence or character is cut: a terminal writes one whole, so a short wait.
    Short,
    /// A string (DCS, OSC, APC) or a paste is in progress: a longer wait.
    Long,
}

/// The decoder: bytes in, [`TtyInput`]s out.
#[derive(Debug, Default)]
pub struct Decoder {
    buf: Vec<u8>,
    /// Inside a bracketed paste: the text so far.
    paste: Option<Vec<u8>>,
    /// Dropping an over-long string up to its terminator.
    discarding: bool,
    /// Which reports the terminal is sending (the program asked for them).
    reports: Reports,
}

/// The reports a terminal sends unasked-for by keys: only while a program asked for them is
/// a sequence of their shape a report rather than keys.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct Reports {
    /// Mouse tracking is on (`CSI M ...`, `CSI < ... M` are mouse reports).
    pub mouse: bool,
    /// Focus reporting is on (`CSI I`, `CSI O` are focus reports).
    pub focus: bool,
}

impl Decoder {
    /// A decoder with nothing held.
    pub fn new() -> Self {
        Self::default()
    }

    /// Which reports the terminal now sends: set before feeding bytes read after the program
    /// turned them on or off.
    pub fn set_reports(&mut self, reports: Reports) {
        self.reports = reports;
    }

    /// Decodes `bytes` (following what came before); the inputs now complete.
    pub fn feed(&mut self, bytes: &[u8]) -> Vec<TtyInput> {
        self.buf.extend_from_slice(bytes);
        self.drain(false)
    }

    /// No more bytes came in time: what is held is read as keys (a cut paste is handed on).
    pub fn flush(&mut self) -> Vec<TtyInput> {
        self.drain(true)
    }

    /// Whether bytes are held, and how long to wait for the rest.
    pub fn incomplete(&self) -> Incomplete {
        if self.paste.is_some() || self.discarding {
            return Incomplete::Long;
        }
        match self.buf.as_slice() {
            [] => Incomplete::No,
            [0x1b, b'P' | b']' | b'_' | b'^' | b'X', _, ..] => Incomplete::Long,
            _ => Incomplete::Short,
        }
    }

    fn drain(&mut self, at_end: bool) -> Vec<TtyInput> {
        let mut out = Vec::new();
        loop {
            if self.discarding {
                if let Some(end) = string_end(&self.buf, 0, true) {
                    self.buf.drain(..end);
                    self.discarding = false;
                } else {
                    // Keep a trailing ESC: it may be the first byte of the terminator.
                    let keep = usize::from(self.buf.last() == Some(&0x1b));
                    self.buf.drain(..self.buf.len() - keep);
                    if at_end {
                        self.buf.clear();
                        self.discarding = false;
                    }
                    break;
                }
            }
            if let Some(paste) = &mut self.paste {
                if let Some(at) = find(&self.buf, PASTE_END) {
                    paste.extend_from_slice(&self.buf[..at]);
                    self.buf.drain(..at + PASTE_END.len());
                    out.push(TtyInput::Paste(self.paste.take().unwrap_or_default()));
                    continue;
                }
                // All but a possible start of the end marker is paste text.
                let keep = partial_suffix(&self.buf, PASTE_END);
                let take = self.buf.len() - keep;
                paste.extend(self.buf.drain(..take));
                while paste.len() >= MAX_PASTE_CHUNK {
                    let rest = paste.split_off(MAX_PASTE_CHUNK);
                    out.push(TtyInput::Paste(std::mem::replace(paste, rest)));
                }
                if at_end && !paste.is_empty() {
                    // [CLIENT.ATTACH.4] A paste that pauses is handed on so far, and what
                    // follows is still paste (never keys) until the end marker.
                    out.push(TtyInput::Paste(std::mem::take(paste)));
                }
                break;
            }
            if self.buf.is_empty() {
                break;
            }
            match parse(&self.buf, at_end, self.reports) {
                Parsed::Item(len, item) => {
                    self.buf.drain(..len);
                    match item {
                        // [CLIENT.ATTACH.4] What follows the paste start is paste text.
                        TtyInput::Paste(_) => self.paste = Some(Vec::new()),
                        TtyInput::Ignored if len == 0 => {
                            // An over-long string: drop it up to its terminator.
                            self.discarding = true;
                        }
                        item => out.push(item),
                    }
                }
                Parsed::Incomplete => break,
            }
        }
        out
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// How many bytes at the end of `buf` are a proper prefix of `marker`.
fn partial_suffix(buf: &[u8], marker: &[u8]) -> usize {
    (1..marker.len().min(buf.len() + 1))
        .rev()
        .find(|&n| buf.ends_with(&marker[..n]))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use phux_proto::input::ModSet;

    use super::super::keys::{char_key, legacy_bytes};
    use super::*;

    fn decode(bytes: &[u8]) -> Vec<TtyInput> {
        let mut d = Decoder::new();
        let mut out = d.feed(bytes);
        out.extend(d.flush());
        out
    }

    /// The bytes the keys among `inputs` send in a freshly reset terminal.
    fn typed(inputs: &[TtyInput]) -> Vec<u8> {
        inputs
            .iter()
            .flat_map(|i| match i {
                TtyInput::Key(k) => legacy_bytes(k),
                _ => Vec::new(),
            })
            .collect()
    }

    #[test]
    fn replies_are_never_keys() {
        // [CLIENT.ATTACH.1] [CLIENT.ATTACH.2] What the issue saw typed at bash: none of it.
        let cases: &[(&[u8], &str)] = &[
            (b"\x1b[?1;2c", "DA1"),
            (b"\x1b[?62;22c", "DA1"),
            (b"\x1b[>84;0;0c", "DA2"),
            (b"\x1b[>0;276;0c", "DA2"),
            (b"\x1b[?12;40;1R", "DECXCPR"),
            (b"\x1b[?2004;1$y", "DECRPM"),
            (b"\x1b[4;2$y", "DECRPM"),
            (b"\x1bP>|tmux 3.3a\x1b\\", "XTVERSION"),
            (b"\x1b]11;rgb:0000/0000/0000\x1b\\", "OSC 10/11/12"),
            (b"\x1b]10;rgb:ffff/ffff/ffff\x07", "OSC 10/11/12"),
            (b"\x1b[?1u", "kitty keyboard flags"),
            (b"\x1b[0n", "DSR status"),
        ];
        for (bytes, kind) in cases {
            assert_eq!(
                decode(bytes),
                [TtyInput::AnsweredReply(kind)],
                "{:?}",
                String::from_utf8_lossy(bytes)
            );
        }
    }

    #[test]
    fn a_cursor_report_is_told_from_modified_f3_only_by_its_shape() {
        assert_eq!(
            decode(b"\x1b[12;40R"),
            [TtyInput::CursorReport { f3: None }]
        );
        let report = decode(b"\x1b[1;5R");
        let [TtyInput::CursorReport { f3: Some(f3) }] = report.as_slice() else {
            panic!("CSI 1;5R is a report or Ctrl+F3");
        };
        assert_eq!(legacy_bytes(f3), b"\x1b[1;5R");
        // Unmodified F3 is SS3 R, never a report.
        assert_eq!(typed(&decode(b"\x1bOR")), b"\x1bOR");
    }

    #[test]
    fn other_replies_keep_their_exact_bytes() {
        // [CLIENT.ATTACH.3]
        for bytes in [
            &b"\x1bP1+r544e=787465726d\x1b\\"[..],
            b"\x1b]52;c;aGVsbG8=\x07",
            b"\x1b]4;1;rgb:cdcd/0000/0000\x1b\\",
            b"\x1b[8;24;80t",
            b"\x1b_Gi=1;OK\x1b\\",
            b"\x1bP1$r0m\x1b\\",
        ] {
            assert_eq!(decode(bytes), [TtyInput::OtherReply(bytes.to_vec())]);
        }
    }

    #[test]
    fn a_reply_between_keys_leaves_the_keys_alone() {
        let out = decode(b"ab\x1b[>84;0;0c\x1b[Acd");
        assert_eq!(typed(&out), b"ab\x1b[Acd");
        assert!(out.contains(&TtyInput::AnsweredReply("DA2")));
    }

    #[test]
    fn keys_decode_to_the_bytes_the_terminal_sent() {
        // Every C0 byte, printable ASCII, UTF-8, Alt, and the usual CSI / SS3 keys read back
        // to the same bytes through the server's own encoder.
        let mut singles: Vec<Vec<u8>> = (0u8..0x20)
            .filter(|&b| b != 0x1b)
            .chain([0x7f])
            .chain(0x20..0x7f)
            .map(|b| vec![b])
            .collect();
        singles.extend(
            [
                &b"\x1b"[..],
                "\u{e9}".as_bytes(),
                "\u{1f600}".as_bytes(),
                b"\x1bx",
                b"\x1b\x01",
                b"\x1b[A",
                b"\x1b[1;5C",
                b"\x1b[H",
                b"\x1b[F",
                b"\x1b[3~",
                b"\x1b[5;2~",
                b"\x1b[15~",
                b"\x1b[24~",
                b"\x1b[Z",
                b"\x1bOP",
                b"\x1bOS",
                b"\x1b[1;2P",
            ]
            .iter()
            .map(|b| b.to_vec()),
        );
        for bytes in singles {
            let out = decode(&bytes);
            assert_eq!(out.len(), 1, "{bytes:?}: {out:?}");
            assert_eq!(typed(&out), bytes, "{out:?}");
        }
    }

    #[test]
    fn every_key_an_xterm_sends_reads_back_as_itself() {
        // [CLIENT.KEY.2]
        // What xterm sends for each key and chord in its reset modes (ctlseqs, "PC-Style
        // Function Keys"; metaSendsEscape), and tmux 3.3a as well: each decodes to one key
        // that the server's encoder turns back into the same bytes.
        let mut sent: Vec<Vec<u8>> = Vec::new();
        for m in 2..=8u8 {
            for fin in [b'A', b'B', b'C', b'D', b'H', b'F', b'P', b'Q', b'S'] {
                sent.push(format!("\x1b[1;{m}{}", char::from(fin)).into_bytes());
            }
            for n in [2, 3, 5, 6, 15, 17, 18, 19, 20, 21, 23, 24] {
                sent.push(format!("\x1b[{n};{m}~").into_bytes());
            }
        }
        for n in [2, 3, 5, 6, 15, 17, 18, 19, 20, 21, 23, 24] {
            sent.push(format!("\x1b[{n}~").into_bytes());
        }
        for c in (0x20u8..0x7f).chain(0..0x20).chain([0x7f]) {
            // ESC ESC is Escape then Escape; `ESC [` and `ESC O` alone are Alt+[ and Alt+O.
            if c != 0x1b {
                sent.push(vec![0x1b, c]);
            }
        }
        for text in ["\u{e9}", "\u{df}", "\u{20ac}", "\u{1f600}", "\u{44f}"] {
            sent.push(text.as_bytes().to_vec());
            sent.push([b"\x1b", text.as_bytes()].concat());
        }
        for bytes in sent {
            let out = decode(&bytes);
            assert_eq!(out.len(), 1, "{bytes:?}: {out:?}");
            assert_eq!(typed(&out), bytes, "{out:?}");
        }
    }

    #[test]
    fn alt_with_shifted_punctuation_and_non_ascii_keeps_its_character() {
        // The issue's cases, in one read (a burst) and split across two reads.
        for bytes in [
            &b"\x1b:"[..],
            b"\x1b<",
            b"\x1b>",
            b"\x1b{",
            b"\x1b%",
            b"\x1b!",
            "\x1b\u{e9}".as_bytes(),
            "\x1b\u{df}".as_bytes(),
        ] {
            assert_eq!(typed(&decode(bytes)), bytes);
            for split in 1..bytes.len() {
                let mut d = Decoder::new();
                let mut out = d.feed(&bytes[..split]);
                out.extend(d.feed(&bytes[split..]));
                out.extend(d.flush());
                assert_eq!(typed(&out), bytes, "split at {split}");
            }
        }
        // Escape then `:wq` typed fast: one read, the same bytes.
        assert_eq!(typed(&decode(b"\x1b:wq\r")), b"\x1b:wq\r");
    }

    #[test]
    fn where_tmux_is_not_xterm_the_program_reads_what_xterm_sends() {
        // tmux sends Home and End as `CSI 1 ~` and `CSI 4 ~` (its own terminfo's khome and
        // kend); xterm sends `CSI H` and `CSI F` (ctlseqs, "PC-Style Function Keys"). With
        // `extended-keys always`, tmux sends chords without a legacy byte as fixterms'
        // `CSI k ; m u`; xterm without modifyOtherKeys sends the key's own byte. tmux's
        // KPEnter with Ctrl is its internal key number, which no key is.
        let rows: &[(&[u8], &[u8])] = &[
            (b"\x1b[1~", b"\x1b[H"),
            (b"\x1b[4~", b"\x1b[F"),
            (b"\x1b[9;5u", b"\t"),
            (b"\x1b[13;5u", b"\r"),
            (b"\x1b[13;2u", b"\r"),
            (b"\x1b[27;5u", b"\x1b"),
            (b"\x1b[65;6u", b"\x01"),
            (b"\x1b[49;5u", b"1"),
            (b"\x1b[27;5;13~", b"\r"),
            (b"\x1b[27;3;58~", b"\x1b:"),
            (b"\x1b[1106361;5u", b""),
        ];
        for (sent, read) in rows {
            assert_eq!(
                typed(&decode(sent)),
                *read,
                "{:?}",
                String::from_utf8_lossy(sent)
            );
        }
    }

    #[test]
    fn the_keypad_in_application_mode_reads_back_as_the_keypad() {
        let app = phux_core::modes::TerminalModes {
            application_keypad: true,
            application_cursor_keys: true,
            ..phux_core::modes::TerminalModes::default()
        };
        for last in b"pqrstuvwxyMkmjonXlABCDHFE".iter().copied() {
            let bytes = [0x1b, b'O', last];
            let out = decode(&bytes);
            let [TtyInput::Key(key)] = out.as_slice() else {
                panic!("{bytes:?}: {out:?}");
            };
            let mut again = Vec::new();
            phux_core::encoder::encode_key(key, &app, &mut again);
            assert_eq!(again, bytes, "{key:?}");
        }
        // In numeric mode the same keys type their characters.
        assert_eq!(typed(&decode(b"\x1bOp\x1bOk\x1bOn")), b"0+.");
        // The kitty protocol's keypad numbers are keypad keys, not private-use characters.
        assert_eq!(typed(&decode(b"\x1b[57399u\x1b[57413u")), b"0+");
    }

    #[test]
    fn report_shapes_are_keys_unless_the_terminal_sends_reports() {
        // Nothing asked for focus or mouse reports: `ESC [ I` typed fast is Alt+[ then I.
        for bytes in [&b"\x1b[I"[..], b"\x1b[O", b"\x1b[M", b"\x1b[<0;1;2M"] {
            assert_eq!(typed(&decode(bytes)), bytes);
        }
        let mut d = Decoder::new();
        d.set_reports(Reports {
            mouse: true,
            focus: true,
        });
        assert_eq!(d.feed(b"\x1b[I"), [TtyInput::Focus(true)]);
        assert_eq!(d.feed(b"\x1b[O"), [TtyInput::Focus(false)]);
        assert_eq!(d.feed(b"\x1b[M !!"), [TtyInput::Ignored]);
        assert_eq!(d.feed(b"\x1b[<0;1;2M"), [TtyInput::Ignored]);
    }

    #[test]
    fn kitty_keys_are_keys() {
        let out = decode(b"\x1b[97;5u");
        assert_eq!(typed(&out), b"\x01");
        let out = decode(b"\x1b[27u");
        assert_eq!(typed(&out), b"\x1b");
        assert_eq!(decode(b"\x1b[97;1:3u"), [TtyInput::Ignored]);
    }

    #[test]
    fn a_paste_stays_a_paste_even_across_reads() {
        // [CLIENT.ATTACH.4]
        let mut d = Decoder::new();
        let mut out = d.feed(b"x\x1b[200~hello \x1b[>c");
        assert_eq!(d.incomplete(), Incomplete::Long);
        out.extend(d.feed(b"world\x1b[20"));
        out.extend(d.feed(b"1~y"));
        assert_eq!(typed(&out[..1]), b"x");
        assert_eq!(out[1], TtyInput::Paste(b"hello \x1b[>cworld".to_vec()));
        assert_eq!(typed(&out[2..]), b"y");
    }

    #[test]
    fn a_paste_that_pauses_is_handed_on_and_stays_a_paste() {
        // [CLIENT.ATTACH.4] A pause never turns the rest of a paste into keys.
        let mut d = Decoder::new();
        assert!(d.feed(b"\x1b[200~rm -rf").is_empty());
        assert_eq!(d.flush(), [TtyInput::Paste(b"rm -rf".to_vec())]);
        assert_eq!(d.incomplete(), Incomplete::Long);
        assert!(d.flush().is_empty());
        assert_eq!(
            d.feed(b" /\r\x1b[201~ok"),
            [
                TtyInput::Paste(b" /\r".to_vec()),
                TtyInput::Key(char_key('o', ModSet::NONE)),
                TtyInput::Key(char_key('k', ModSet::NONE)),
            ]
        );
        assert_eq!(d.incomplete(), Incomplete::No);
    }

    #[test]
    fn a_sequence_cut_by_a_read_waits_and_a_lone_escape_is_a_key() {
        let mut d = Decoder::new();
        assert!(d.feed(b"\x1b[>84;").is_empty());
        assert_eq!(d.incomplete(), Incomplete::Short);
        assert_eq!(d.feed(b"0;0c"), [TtyInput::AnsweredReply("DA2")]);
        assert!(d.feed(b"\x1bP+r").is_empty());
        assert_eq!(d.incomplete(), Incomplete::Long);
        assert_eq!(
            d.feed(b"54\x1b\\"),
            [TtyInput::OtherReply(b"\x1bP+r54\x1b\\".to_vec())]
        );
        // Nothing more came: ESC is Escape, `ESC [` is Alt+[.
        assert!(d.feed(b"\x1b").is_empty());
        assert_eq!(typed(&d.flush()), b"\x1b");
        assert!(d.feed(b"\x1b[").is_empty());
        assert_eq!(typed(&d.flush()), b"\x1b[");
        assert_eq!(d.incomplete(), Incomplete::No);
    }

    #[test]
    fn an_over_long_string_is_dropped_whole_and_bounded() {
        let mut d = Decoder::new();
        let mut long = b"\x1b]99;".to_vec();
        long.resize(MAX_STRING + 10, b'a');
        assert!(d.feed(&long).is_empty());
        assert!(d.feed(&vec![b'a'; 100_000]).is_empty());
        assert!(d.buf.len() <= 1);
        let out = d.feed(b"\x07ok");
        assert_eq!(typed(&out), b"ok");
    }

    #[test]
    fn arbitrary_bytes_never_panic() {
        // A sweep of short sequences over the interesting bytes, fed in every split.
        let alphabet = [
            0x1b, b'[', b'P', b']', b'?', b'>', b'1', b';', b'c', b'R', b'~', 0x07,
        ];
        for a in alphabet {
            for b in alphabet {
                for c in alphabet {
                    for d in alphabet {
                        let bytes = [a, b, c, d];
                        for split in 0..=bytes.len() {
                            let mut dec = Decoder::new();
                            dec.feed(&bytes[..split]);
                            dec.feed(&bytes[split..]);
                            dec.flush();
                            assert_eq!(dec.incomplete(), Incomplete::No);
                        }
                    }
                }
            }
        }
    }
}
