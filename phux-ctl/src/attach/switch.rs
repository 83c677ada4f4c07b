//! Keeps the program's screen switches off the local terminal ([CLIENT.ATTACH.13]): attach
//! draws on its local terminal's alternate screen, where a program's `CSI ? 1049 l` would take
//! the local terminal back to the user's shell screen and `CSI ? 1049 h` is ignored or clears.
//! The switch parameters (47, 1047, 1049) are taken out of every DECSET / DECRST on the way to
//! the local terminal, everything else in the output (modes, queries, text) passes unchanged,
//! and attach draws the screen switched to from its model.

/// The DECSET / DECRST parameters that switch between the main and alternate screens.
const SWITCHES: [&[u8]; 3] = [b"47", b"1047", b"1049"];

/// The longest `CSI ?` sequence held back when a chunk ends inside one: far longer than any
/// mode list a program writes; a longer run is passed on as it is.
const MAX_HELD: usize = 64;

/// The output on its way to the local terminal, with screen switches taken out; a DECSET or
/// DECRST cut by the end of a chunk waits for its rest.
#[derive(Debug, Default)]
pub(super) struct SwitchFilter {
    held: Vec<u8>,
}

impl SwitchFilter {
    /// What to write to the local terminal for `bytes`: the bytes held from the chunk before
    /// and these, without screen switches, less a `CSI ?` sequence cut at the end (held).
    pub(super) fn pass(&mut self, bytes: &[u8]) -> Vec<u8> {
        let mut input = std::mem::take(&mut self.held);
        input.extend_from_slice(bytes);
        let mut out = Vec::with_capacity(input.len());
        let mut at = 0;
        while let Some(esc) = input[at..].iter().position(|&b| b == 0x1b) {
            let start = at + esc;
            out.extend_from_slice(&input[at..start]);
            match decset(&input[start..]) {
                Sequence::Cut if input.len() - start <= MAX_HELD => {
                    self.held = input[start..].to_vec();
                    return out;
                }
                Sequence::Cut | Sequence::Other => {
                    out.push(0x1b);
                    at = start + 1;
                }
                Sequence::Mode { len, params, set } => {
                    let kept: Vec<&[u8]> = params
                        .split(|&b| b == b';')
                        .filter(|p| !SWITCHES.contains(p))
                        .collect();
                    if kept.len() == params.split(|&b| b == b';').count() {
                        out.extend_from_slice(&input[start..start + len]);
                    } else if !kept.is_empty() {
                        out.extend_from_slice(b"\x1b[?");
                        out.extend_from_slice(&kept.join(&b';'));
                        out.push(if set { b'h' } else { b'l' });
                    }
                    at = start + len;
                }
            }
        }
        out.extend_from_slice(&input[at..]);
        out
    }

    /// Forgets a sequence held back: the local terminal is drawn again from the model, and
    /// never sees its start.
    pub(super) fn reset(&mut self) {
        self.held.clear();
    }
}

/// What starts at an ESC.
enum Sequence<'a> {
    /// `CSI ? Pm h` or `CSI ? Pm l`, `len` bytes.
    Mode {
        len: usize,
        params: &'a [u8],
        set: bool,
    },
    /// The bytes end before it is known.
    Cut,
    /// Anything else.
    Other,
}

fn decset(bytes: &[u8]) -> Sequence<'_> {
    match bytes.get(1..3) {
        Some(b"[?") => {}
        Some(_) => return Sequence::Other,
        None if b"\x1b[?".starts_with(bytes) => return Sequence::Cut,
        None => return Sequence::Other,
    }
    let params_len = bytes[3..]
        .iter()
        .take_while(|b| b.is_ascii_digit() || **b == b';')
        .count();
    let params = &bytes[3..3 + params_len];
    match bytes.get(3 + params_len) {
        None => Sequence::Cut,
        Some(&final_byte @ (b'h' | b'l')) => Sequence::Mode {
            len: 4 + params_len,
            params,
            set: final_byte == b'h',
        },
        Some(_) => Sequence::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pass_all(chunks: &[&[u8]]) -> Vec<u8> {
        let mut filter = SwitchFilter::default();
        chunks.iter().flat_map(|c| filter.pass(c)).collect()
    }

    #[test]
    fn switches_are_taken_out_and_everything_else_passes() {
        // [CLIENT.ATTACH.13]
        let out = pass_all(&[b"a\x1b[?1049h\x1b[?2004h\x1b[6nb\x1b[?1049l\x1b[?47hc"]);
        assert_eq!(out, b"a\x1b[?2004h\x1b[6nbc");
        // Mixed with other modes: those stay, in their order.
        assert_eq!(
            pass_all(&[b"\x1b[?1;1049;1000h\x1b[?1047;25l"]),
            b"\x1b[?1;1000h\x1b[?25l"
        );
        // Not a switch: unchanged, byte for byte.
        let other = b"\x1b[?10490h\x1b[?1048h\x1b[1049h\x1b]0;t\x07\x1b[>1u\x1b[?u";
        assert_eq!(pass_all(&[other]), other);
    }

    #[test]
    fn a_switch_cut_between_chunks_is_still_taken_out() {
        let whole = b"x\x1b[?1049hy\x1b[?25lz";
        for cut in 0..=whole.len() {
            let (a, b) = whole.split_at(cut);
            assert_eq!(pass_all(&[a, b]), b"xy\x1b[?25lz", "cut at {cut}");
        }
    }

    #[test]
    fn a_long_unfinished_sequence_is_not_held() {
        let mut filter = SwitchFilter::default();
        let mut long = b"\x1b[?".to_vec();
        long.extend(std::iter::repeat_n(b'1', 100));
        assert_eq!(filter.pass(&long), long);
    }
}
