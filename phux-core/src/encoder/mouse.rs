//! Mouse reports: tracking modes 9 / 1000 / 1002 / 1003 and encodings X10 / 1005 / 1006 /
//! 1015 / 1016, per xterm's ctlseqs "Mouse Tracking".
//!
//! Choices made here:
//! - Positions are surface pixels; the cell is `floor(px / cell_px)`, 0-based, sent 1-based.
//!   A negative position is clamped to 0. A non-finite position (NaN, ±inf) has no cell:
//!   the event is dropped (no bytes), because any cell we picked would be a lie.
//! - SGR-pixels (1016) reports `floor(px) + 1`, 1-based like xterm's other decimal forms.
//! - "A button is held" for 1002 is the motion event's own `button`; Unknown (or a wheel) means
//!   none, reported as button 3 under 1003.
//! - Wheel buttons have no release report (xterm sends none). A press or release of Unknown
//!   identifies nothing and is dropped, except that a non-SGR release never names its button.

use phux_proto::input::{ModSet, MouseAction, MouseButton, MouseEvent};

use super::CellGeometry;
use super::key::push_decimal;
use crate::modes::{MouseEncoding, MouseTracking, TerminalModes};

/// The largest 1-based coordinate the one-byte X10 form can carry (255 - 32).
const X10_MAX_COORD: u32 = 223;
/// The largest 1-based coordinate the UTF-8 (1005) form can carry (2047 - 32).
const UTF8_MAX_COORD: u32 = 2015;

/// Appends the mouse report for `ev` to `out`, or nothing when the terminal's tracking mode
/// does not report this event or the position cannot be encoded.
pub fn encode_mouse(
    ev: &MouseEvent,
    modes: &TerminalModes,
    cells: CellGeometry,
    out: &mut Vec<u8>,
) {
    let tracking = modes.mouse_tracking;
    // [INPUT.ENCODE.MOUSE.1] Tracking off: no bytes.
    if tracking == MouseTracking::Off {
        return;
    }
    let held = button_code(ev.button);
    let wheel = matches!(
        ev.button,
        MouseButton::Four | MouseButton::Five | MouseButton::Six | MouseButton::Seven
    );
    let sgr = matches!(
        modes.mouse_encoding,
        MouseEncoding::Sgr | MouseEncoding::SgrPixels
    );
    // [INPUT.ENCODE.MOUSE.2] Which events each tracking mode reports: 9 presses only (no
    // wheel, no modifiers), 1000 presses and releases, 1002 also motion with a button held,
    // 1003 all motion.
    let mut code = match ev.action {
        MouseAction::Press => match held {
            Some(b) if tracking != MouseTracking::X10 || !wheel => b,
            _ => return,
        },
        MouseAction::Release => {
            if tracking == MouseTracking::X10 || wheel {
                return;
            }
            if sgr {
                // SGR names the released button; with none known, 3 as in the other forms.
                held.unwrap_or(3)
            } else {
                // [INPUT.ENCODE.MOUSE.3] The one-byte forms cannot name the released
                // button: code 3.
                3
            }
        }
        MouseAction::Motion => {
            let button = held.filter(|_| !wheel);
            match (tracking, button) {
                (MouseTracking::AnyEvent, None) => 3 + 32,
                (MouseTracking::AnyEvent | MouseTracking::ButtonEvent, Some(b)) => b + 32,
                _ => return,
            }
        }
    };
    // [INPUT.ENCODE.MOUSE.4] Modifiers: +4 Shift, +8 Alt (Meta), +16 Ctrl; X10 has none.
    if tracking != MouseTracking::X10 {
        code += modifier_bits(ev.mods);
    }
    let pixels = modes.mouse_encoding == MouseEncoding::SgrPixels;
    let (Some(x), Some(y)) = (
        position(ev.x, if pixels { 1 } else { cells.cell_width_px }),
        position(ev.y, if pixels { 1 } else { cells.cell_height_px }),
    ) else {
        return;
    };
    // 1-based from here on.
    let (x, y) = (x.saturating_add(1), y.saturating_add(1));
    let fin = if sgr && ev.action == MouseAction::Release {
        b'm'
    } else {
        b'M'
    };
    match modes.mouse_encoding {
        // [INPUT.ENCODE.MOUSE.5] X10 form: CSI M, then 32 + b, 32 + x, 32 + y as bytes;
        // a coordinate past 223 cannot be sent.
        MouseEncoding::X10 => {
            if x > X10_MAX_COORD || y > X10_MAX_COORD {
                return;
            }
            out.extend_from_slice(b"\x1b[M");
            for v in [32 + code, 32 + x, 32 + y] {
                out.push(v as u8);
            }
        }
        // [INPUT.ENCODE.MOUSE.6] UTF-8 (1005): the same values, each as a UTF-8 character.
        MouseEncoding::Utf8 => {
            if x > UTF8_MAX_COORD || y > UTF8_MAX_COORD {
                return;
            }
            out.extend_from_slice(b"\x1b[M");
            for v in [32 + code, 32 + x, 32 + y] {
                push_utf8_value(out, v);
            }
        }
        // [INPUT.ENCODE.MOUSE.7] SGR (1006) / SGR-pixels (1016): CSI < b ; x ; y M, or m
        // for a release.
        MouseEncoding::Sgr | MouseEncoding::SgrPixels => {
            out.extend_from_slice(b"\x1b[<");
            push_decimal(out, code);
            out.push(b';');
            push_decimal(out, x);
            out.push(b';');
            push_decimal(out, y);
            out.push(fin);
        }
        // [INPUT.ENCODE.MOUSE.8] URXVT (1015): CSI 32+b ; x ; y M.
        MouseEncoding::Urxvt => {
            out.extend_from_slice(b"\x1b[");
            push_decimal(out, 32 + code);
            out.push(b';');
            push_decimal(out, x);
            out.push(b';');
            push_decimal(out, y);
            out.push(b'M');
        }
    }
}

/// xterm's button number: left 0, middle 1, right 2, wheel 64..=67, buttons 8-11 128..=131.
fn button_code(button: MouseButton) -> Option<u32> {
    Some(match button {
        MouseButton::Unknown => return None,
        MouseButton::Left => 0,
        MouseButton::Middle => 1,
        MouseButton::Right => 2,
        MouseButton::Four => 64,
        MouseButton::Five => 65,
        MouseButton::Six => 66,
        MouseButton::Seven => 67,
        MouseButton::Eight => 128,
        MouseButton::Nine => 129,
        MouseButton::Ten => 130,
        MouseButton::Eleven => 131,
    })
}

fn modifier_bits(mods: ModSet) -> u32 {
    let mut bits = 0;
    if mods.contains(ModSet::SHIFT) {
        bits += 4;
    }
    if mods.contains(ModSet::ALT) {
        bits += 8;
    }
    if mods.contains(ModSet::CTRL) {
        bits += 16;
    }
    bits
}

/// `floor(px / per)` as a 0-based index: negative clamps to 0, non-finite has none.
fn position(px: f64, per: u16) -> Option<u32> {
    if !px.is_finite() {
        return None;
    }
    let cell = (px.max(0.0) / f64::from(per.max(1))).floor();
    // Non-negative by construction; `as` saturates past u32::MAX, which no encoding can use.
    #[allow(clippy::cast_sign_loss)]
    Some(cell as u32)
}

fn push_utf8_value(out: &mut Vec<u8>, v: u32) {
    // Values are at most 2047 here, so this is always a one- or two-byte character.
    if let Some(c) = char::from_u32(v) {
        let mut buf = [0u8; 4];
        out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn modes(tracking: MouseTracking, encoding: MouseEncoding) -> TerminalModes {
        TerminalModes {
            mouse_tracking: tracking,
            mouse_encoding: encoding,
            ..TerminalModes::default()
        }
    }

    fn ev(action: MouseAction, button: MouseButton, mods: ModSet, x: f64, y: f64) -> MouseEvent {
        MouseEvent {
            action,
            button,
            mods,
            x,
            y,
        }
    }

    fn enc(e: &MouseEvent, m: &TerminalModes, cells: CellGeometry) -> Vec<u8> {
        let mut out = Vec::new();
        encode_mouse(e, m, cells, &mut out);
        out
    }

    use MouseAction::{Motion, Press, Release};
    use MouseButton::{Eight, Eleven, Five, Four, Left, Middle, Right, Seven, Six, Unknown};
    use MouseEncoding::{Sgr, SgrPixels, Urxvt, Utf8, X10 as X10Enc};
    use MouseTracking::{AnyEvent, ButtonEvent, Normal, Off, X10};

    // xterm ctlseqs "Mouse Tracking": "Normal tracking mode" button codes (0 MB1, 1 MB2,
    // 2 MB3, 3 release; +4 shift, +8 meta, +16 control; wheel 64/65 (+66/67); buttons 8-11
    // 128-131; +32 motion), "Extended coordinates" for 1005 / 1006 / 1015 / 1016.
    // Positions are cells with a 1x1 geometry; 0-based in, 1-based out.
    #[test]
    fn xterm_mouse_tracking_table() {
        let one = CellGeometry::ONE_BY_ONE;
        let n = ModSet::NONE;
        #[rustfmt::skip]
        let table: &[(MouseTracking, MouseEncoding, MouseEvent, &[u8])] = &[
            // [INPUT.ENCODE.MOUSE.1] Off: nothing.
            (Off, Sgr, ev(Press, Left, n, 0.0, 0.0), b""),
            // [INPUT.ENCODE.MOUSE.5] X10 form: CSI M Cb Cx Cy, each 32 + value.
            (Normal, X10Enc, ev(Press, Left, n, 0.0, 0.0), b"\x1b[M\x20\x21\x21"),
            (Normal, X10Enc, ev(Press, Middle, n, 9.0, 4.0), b"\x1b[M\x21\x2a\x25"),
            (Normal, X10Enc, ev(Press, Right, n, 0.0, 0.0), b"\x1b[M\x22\x21\x21"),
            // [INPUT.ENCODE.MOUSE.3] release is 3 in the one-byte forms.
            (Normal, X10Enc, ev(Release, Right, n, 0.0, 0.0), b"\x1b[M\x23\x21\x21"),
            // [INPUT.ENCODE.MOUSE.4] +4 shift, +8 meta, +16 control.
            (Normal, X10Enc, ev(Press, Left, ModSet::SHIFT, 0.0, 0.0), b"\x1b[M\x24\x21\x21"),
            (Normal, X10Enc, ev(Press, Left, ModSet::ALT, 0.0, 0.0), b"\x1b[M\x28\x21\x21"),
            (Normal, X10Enc, ev(Press, Left, ModSet::CTRL, 0.0, 0.0), b"\x1b[M\x30\x21\x21"),
            (Normal, X10Enc, ev(Press, Left, ModSet::SUPER, 0.0, 0.0), b"\x1b[M\x20\x21\x21"),
            // Wheel: 64 / 65 / 66 / 67; buttons 8-11: 128-131. No wheel releases.
            (Normal, Sgr, ev(Press, Four, n, 0.0, 0.0), b"\x1b[<64;1;1M"),
            (Normal, Sgr, ev(Press, Five, n, 0.0, 0.0), b"\x1b[<65;1;1M"),
            (Normal, Sgr, ev(Press, Six, n, 0.0, 0.0), b"\x1b[<66;1;1M"),
            (Normal, Sgr, ev(Press, Seven, n, 0.0, 0.0), b"\x1b[<67;1;1M"),
            (Normal, Sgr, ev(Release, Four, n, 0.0, 0.0), b""),
            (Normal, Sgr, ev(Press, Eight, n, 0.0, 0.0), b"\x1b[<128;1;1M"),
            (Normal, Sgr, ev(Press, Eleven, n, 0.0, 0.0), b"\x1b[<131;1;1M"),
            (Normal, X10Enc, ev(Press, Eleven, n, 0.0, 0.0), b"\x1b[M\xa3\x21\x21"),
            // [INPUT.ENCODE.MOUSE.2] 9: presses only, no wheel, no modifiers.
            (X10, X10Enc, ev(Press, Left, ModSet::CTRL, 2.0, 3.0), b"\x1b[M\x20\x23\x24"),
            (X10, X10Enc, ev(Release, Left, n, 2.0, 3.0), b""),
            (X10, X10Enc, ev(Press, Four, n, 2.0, 3.0), b""),
            (X10, X10Enc, ev(Motion, Left, n, 2.0, 3.0), b""),
            // 1000: no motion.
            (Normal, Sgr, ev(Motion, Left, n, 2.0, 3.0), b""),
            // 1002: motion only with a button held (+32).
            (ButtonEvent, Sgr, ev(Motion, Left, n, 2.0, 3.0), b"\x1b[<32;3;4M"),
            (ButtonEvent, Sgr, ev(Motion, Unknown, n, 2.0, 3.0), b""),
            // 1003: any motion; no button is 3 + 32 = 35.
            (AnyEvent, Sgr, ev(Motion, Unknown, n, 2.0, 3.0), b"\x1b[<35;3;4M"),
            (AnyEvent, Sgr, ev(Motion, Right, ModSet::SHIFT, 2.0, 3.0), b"\x1b[<38;3;4M"),
            (AnyEvent, X10Enc, ev(Motion, Unknown, n, 2.0, 3.0), b"\x1b[M\x43\x23\x24"),
            // [INPUT.ENCODE.MOUSE.7] SGR: press M, release m naming the button.
            (Normal, Sgr, ev(Press, Left, n, 9.0, 19.0), b"\x1b[<0;10;20M"),
            (Normal, Sgr, ev(Release, Left, n, 9.0, 19.0), b"\x1b[<0;10;20m"),
            (Normal, Sgr, ev(Release, Right, ModSet::CTRL, 9.0, 19.0), b"\x1b[<18;10;20m"),
            (Normal, Sgr, ev(Press, Left, n, 499.0, 299.0), b"\x1b[<0;500;300M"),
            // [INPUT.ENCODE.MOUSE.8] URXVT: CSI 32+b ; x ; y M, release 3 and M.
            (Normal, Urxvt, ev(Press, Left, n, 9.0, 19.0), b"\x1b[32;10;20M"),
            (Normal, Urxvt, ev(Release, Left, n, 9.0, 19.0), b"\x1b[35;10;20M"),
            (Normal, Urxvt, ev(Press, Left, n, 499.0, 0.0), b"\x1b[32;500;1M"),
            // [INPUT.ENCODE.MOUSE.6] UTF-8: values of 128 and more are two-byte characters.
            (Normal, Utf8, ev(Press, Left, n, 0.0, 0.0), b"\x1b[M\x20\x21\x21"),
            // x = 300 -> 32 + 301 = 333 = U+014D = c5 8d
            (Normal, Utf8, ev(Press, Left, n, 300.0, 0.0), b"\x1b[M\x20\xc5\x8d\x21"),
            // button 8: 32 + 128 = 160 = U+00A0 = c2 a0
            (Normal, Utf8, ev(Press, Eight, n, 0.0, 0.0), b"\x1b[M\xc2\xa0\x21\x21"),
        ];
        for (tracking, encoding, e, want) in table {
            let got = enc(e, &modes(*tracking, *encoding), one);
            assert_eq!(got, *want, "{tracking:?} {encoding:?} {e:?}: got {got:x?}");
        }
    }

    // [INPUT.ENCODE.MOUSE.5] [INPUT.ENCODE.MOUSE.6] The coordinate limits of the byte forms.
    #[test]
    fn byte_forms_drop_unencodable_coordinates() {
        let one = CellGeometry::ONE_BY_ONE;
        let x10 = modes(Normal, X10Enc);
        let press = |x| ev(Press, Left, ModSet::NONE, x, 0.0);
        // 1-based 223 is the last encodable column: byte 255.
        assert_eq!(enc(&press(222.0), &x10, one), b"\x1b[M\x20\xff\x21");
        assert_eq!(enc(&press(223.0), &x10, one), b"");
        let utf8 = modes(Normal, Utf8);
        assert_eq!(
            enc(&press(2014.0), &utf8, one),
            "\x1b[M \u{7ff}!".as_bytes()
        );
        assert_eq!(enc(&press(2015.0), &utf8, one), b"");
        // SGR has no limit.
        assert_eq!(
            enc(&press(5000.0), &modes(Normal, Sgr), one),
            b"\x1b[<0;5001;1M"
        );
    }

    // R16: pixels become cells with floor(px / cell_px).
    #[test]
    fn pixels_to_cells_and_sgr_pixels() {
        let cells = CellGeometry::from_viewport(80, 24, Some(800), Some(480)); // 10 x 20
        let sgr = modes(Normal, Sgr);
        let e = ev(Press, Left, ModSet::NONE, 19.9, 40.0);
        assert_eq!(enc(&e, &sgr, cells), b"\x1b[<0;2;3M");
        let e = ev(Press, Left, ModSet::NONE, 9.99, 19.99);
        assert_eq!(enc(&e, &sgr, cells), b"\x1b[<0;1;1M");
        // 1016 ignores the cell size and reports pixels, 1-based.
        let px = modes(Normal, SgrPixels);
        let e = ev(Press, Left, ModSet::NONE, 19.9, 40.0);
        assert_eq!(enc(&e, &px, cells), b"\x1b[<0;20;41M");
        let e = ev(Release, Left, ModSet::NONE, 0.0, 0.0);
        assert_eq!(enc(&e, &px, cells), b"\x1b[<0;1;1m");
    }

    // Negative positions clamp to the first cell; NaN and infinities drop the event.
    #[test]
    fn hostile_floats() {
        let one = CellGeometry::ONE_BY_ONE;
        let sgr = modes(AnyEvent, Sgr);
        let e = ev(Press, Left, ModSet::NONE, -5.0, -0.0);
        assert_eq!(enc(&e, &sgr, one), b"\x1b[<0;1;1M");
        for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            assert_eq!(
                enc(&ev(Press, Left, ModSet::NONE, bad, 1.0), &sgr, one),
                b""
            );
            assert_eq!(
                enc(&ev(Press, Left, ModSet::NONE, 1.0, bad), &sgr, one),
                b""
            );
        }
        let huge = ev(Press, Left, ModSet::NONE, 1e300, 0.0);
        assert_eq!(
            enc(&huge, &sgr, one),
            format!("\x1b[<0;{};1M", u32::MAX).as_bytes()
        );
        assert_eq!(enc(&huge, &modes(AnyEvent, X10Enc), one), b"");
    }

    #[test]
    fn unknown_button_press_is_dropped() {
        let one = CellGeometry::ONE_BY_ONE;
        for encoding in [X10Enc, Utf8, Sgr, Urxvt, SgrPixels] {
            let e = ev(Press, Unknown, ModSet::NONE, 1.0, 1.0);
            assert_eq!(enc(&e, &modes(AnyEvent, encoding), one), b"");
        }
    }
}
