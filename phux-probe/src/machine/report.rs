//! Reports: the `PROBE <seq> <body>` lines, and how their words are spelt.

use std::fmt::Write as _;

use super::{MAX_MESSAGE, ProbeAction, ProbeMachine};

impl ProbeMachine {
    pub(super) fn report(&mut self, out: &mut Vec<ProbeAction>, body: &str) {
        let line = format!("\r\nPROBE {} {body}\r\n", self.seq);
        self.seq += 1;
        out.push(ProbeAction::Write(line.into_bytes()));
    }
}

/// A byte string as one report word: lowercase hex, or `-` when it is empty.
pub(super) fn byte_word(bytes: &[u8]) -> String {
    if bytes.is_empty() {
        "-".to_owned()
    } else {
        hex(bytes)
    }
}

/// `KIND` followed by one word per byte string.
pub(super) fn words<'a>(kind: &str, items: impl Iterator<Item = &'a [u8]>) -> String {
    items.fold(kind.to_owned(), |mut body, item| {
        body.push(' ');
        body.push_str(&byte_word(item));
        body
    })
}

/// `ENV <name> <value word>`, or `ENV <name> UNSET`: the first entry named so, as getenv(3)
/// finds it.
pub(super) fn env_report(name: &str, entries: &[Vec<u8>]) -> String {
    let value = entries.iter().find_map(|entry| {
        let eq = entry.iter().position(|&b| b == b'=')?;
        (entry.get(..eq) == Some(name.as_bytes())).then(|| entry.get(eq + 1..).unwrap_or_default())
    });
    match value {
        Some(value) => format!("ENV {name} {}", byte_word(value)),
        None => format!("ENV {name} UNSET"),
    }
}

/// `n` bytes of `:flood` text: the letters a to z over and over, no control characters, so a
/// terminal only prints (and wraps) them.
pub(super) fn flood_text(n: usize) -> Vec<u8> {
    (b'a'..=b'z').cycle().take(n).collect()
}

/// `n` cells of `:flood-styled` text: each a letter (`a` to `z` repeated) behind an SGR that
/// sets the whole pen anew, and no two neighbours alike: an attribute of four, a truecolour
/// foreground whose red counts the cells and whose green counts every 256, a truecolour
/// background from the same numbers. A screen of them is as costly to rebuild as one gets.
pub(super) fn styled_text(n: usize) -> Vec<u8> {
    const ATTRS: [u8; 4] = [1, 3, 4, 7];
    let mut out = String::with_capacity(n.saturating_mul(44));
    for (i, letter) in (0..n).zip(('a'..='z').cycle()) {
        let [red, green, ..] = i.to_le_bytes();
        let attr = ATTRS[i % ATTRS.len()];
        let _ = write!(
            out,
            "\x1b[0;{attr};38;2;{red};{green};{};48;2;{};{};{}m{letter}",
            red ^ green,
            255 - red,
            255 - green,
            red.wrapping_add(green)
        );
    }
    out.into_bytes()
}

pub(super) fn flag(on: bool) -> &'static str {
    if on { "" } else { "-" }
}

pub(super) fn hex(bytes: &[u8]) -> String {
    bytes
        .iter()
        .fold(String::with_capacity(bytes.len() * 2), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
}

/// One line of printable ASCII, bounded, never empty: it ends a report line.
pub(super) fn sanitize(message: &str) -> String {
    let clean: String = message
        .chars()
        .take(MAX_MESSAGE)
        .map(|c| {
            if c == ' ' || c.is_ascii_graphic() {
                c
            } else {
                '?'
            }
        })
        .collect();
    if clean.trim().is_empty() {
        "-".to_owned()
    } else {
        clean
    }
}
