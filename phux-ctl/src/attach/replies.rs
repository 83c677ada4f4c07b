//! The local terminal's replies to the program's queries, as attach passes them on: which
//! cursor reports answer a query the program made ([CLIENT.ATTACH.1]), and the input events
//! that make the program read a reply the server does not answer exactly ([CLIENT.ATTACH.3]).

use phux_core::encoder::{encode_key, encode_paste};
use phux_core::modes::TerminalModes;
use phux_proto::input::{KeyEvent, PasteEvent, PasteTrust};

use crate::tty_input::{Decoder, TtyInput};

/// Counts the cursor position queries (`CSI 6 n`, `CSI ? 6 n`) in the program's output, so
/// that a report `CSI 1 ; m R` is known to answer one rather than to be F3 with modifiers.
#[derive(Debug, Default)]
pub(super) struct CursorQueries {
    /// The last bytes of the output, in case a query is cut between two chunks.
    tail: Vec<u8>,
    outstanding: u32,
}

impl CursorQueries {
    const QUERIES: [&'static [u8]; 2] = [b"\x1b[6n", b"\x1b[?6n"];
    /// Shorter than the shortest query, so no query lies wholly inside it.
    const TAIL: usize = 4;

    pub(super) fn scan(&mut self, bytes: &[u8]) {
        let mut window = std::mem::take(&mut self.tail);
        let old = window.len();
        window.extend_from_slice(bytes);
        for query in Self::QUERIES {
            let found = window
                .windows(query.len())
                .enumerate()
                // A match ending in the old tail was counted with the chunk before.
                .filter(|(at, w)| *w == query && at + query.len() > old)
                .count();
            self.outstanding = self
                .outstanding
                .saturating_add(u32::try_from(found).unwrap_or(u32::MAX));
        }
        self.tail = window[window.len().saturating_sub(Self::TAIL)..].to_vec();
    }

    /// A report arrived: whether it answers a query (and is then counted off).
    pub(super) fn answered(&mut self) -> bool {
        if self.outstanding > 0 {
            self.outstanding -= 1;
            true
        } else {
            false
        }
    }
}

/// The input events that make the program read exactly `reply` under `modes`, if any: a
/// trusted paste when that is written unchanged (bracketed paste off), else the keys that
/// type it byte for byte (legacy key encoding). `None` when neither is exact.
pub(super) fn reply_events(reply: &[u8], modes: &TerminalModes) -> Option<ReplyInput> {
    let paste = PasteEvent {
        trust: PasteTrust::Trusted,
        data: reply.to_vec(),
    };
    let mut out = Vec::new();
    if encode_paste(&paste, modes, &mut out).is_ok() && out == reply {
        return Some(ReplyInput::Paste(paste));
    }
    // Each byte as the key that types it, with no reading of sequences.
    let mut keys = Vec::new();
    let mut decoder = Decoder::new();
    for &byte in reply {
        match decoder
            .feed(&[byte])
            .into_iter()
            .chain(decoder.flush())
            .next()
        {
            Some(TtyInput::Key(key)) => keys.push(key),
            _ => return None,
        }
    }
    out.clear();
    for key in &keys {
        encode_key(key, modes, &mut out);
    }
    (out == reply).then_some(ReplyInput::Keys(keys))
}

/// How a reply the server does not answer reaches the program.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum ReplyInput {
    Paste(PasteEvent),
    Keys(Vec<KeyEvent>),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursor_queries_are_counted_across_chunks_once() {
        let mut q = CursorQueries::default();
        q.scan(b"abc\x1b[6nxyz\x1b[?6");
        q.scan(b"n\x1b[6n");
        q.scan(b"\x1b[");
        q.scan(b"6n");
        assert_eq!(q.outstanding, 4);
        assert!((0..4).all(|_| q.answered()));
        assert!(!q.answered());
    }

    #[test]
    fn an_unanswered_reply_is_passed_exactly_or_not_at_all() {
        // [CLIENT.ATTACH.3]
        let reply = b"\x1bP1+r544e=787465726d\x1b\\";
        let plain = TerminalModes::default();
        assert!(matches!(
            reply_events(reply, &plain),
            Some(ReplyInput::Paste(p)) if p.data == reply
        ));
        // Under bracketed paste a paste would be wrapped: the keys that type it instead.
        let bracketed = TerminalModes {
            bracketed_paste: true,
            ..TerminalModes::default()
        };
        let Some(ReplyInput::Keys(keys)) = reply_events(reply, &bracketed) else {
            panic!("not sent as keys");
        };
        let mut typed = Vec::new();
        for key in &keys {
            encode_key(key, &bracketed, &mut typed);
        }
        assert_eq!(typed, reply);
        // Under the kitty keyboard protocol ESC is not one byte any more: nothing is sent.
        let kitty = TerminalModes {
            bracketed_paste: true,
            kitty_flags: phux_core::modes::KittyFlags(phux_core::modes::KittyFlags::DISAMBIGUATE),
            ..TerminalModes::default()
        };
        assert_eq!(reply_events(reply, &kitty), None);
        // A reply with a line feed is not written unchanged by a paste without bracketing.
        assert!(!matches!(
            reply_events(b"\x1b]99;a\nb\x07", &plain),
            Some(ReplyInput::Paste(_))
        ));
    }
}
