//! The events a campaign sends: what a real keyboard, through a real layout and a client that
//! may or may not know the produced text, would put in a KEY atom.
//!
//! Each event is drawn from a seed alone (see [`Generator`]), so any difference a campaign
//! finds can be replayed from its seed and index.

use phux_proto::input::{KeyAction, KeyEvent, ModSet, PhysicalKey as K};

use crate::netfuzz::rng::Rng;

/// A keyboard layout: what each text key produces, unshifted and shifted.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Layout {
    /// US QWERTY.
    Us,
    /// German QWERTZ: ß, umlauts, Y and Z swapped.
    German,
    /// French AZERTY: accented letters on the digit row, digits shifted.
    French,
    /// Russian ЙЦУКЕН: Cyrillic letters, Latin nowhere.
    Russian,
}

impl Layout {
    /// Every layout a campaign draws from.
    pub const ALL: [Self; 4] = [Self::Us, Self::German, Self::French, Self::Russian];

    /// A short name for reports.
    pub fn name(self) -> &'static str {
        match self {
            Self::Us => "us",
            Self::German => "de",
            Self::French => "fr",
            Self::Russian => "ru",
        }
    }

    /// What `key` produces in this layout, unshifted and with Shift; `None` for a key that
    /// produces no text.
    pub fn chars(self, key: K) -> Option<(char, char)> {
        let us = us_chars(key)?;
        let own = match self {
            Self::Us => None,
            Self::German => german(key),
            Self::French => french(key),
            Self::Russian => russian(key),
        };
        Some(own.unwrap_or(us))
    }
}

/// The US layout, which is also what every other layout falls back to for keys it does not
/// change (Space, say).
fn us_chars(key: K) -> Option<(char, char)> {
    if (K::KEY_A.0..=K::KEY_Z.0).contains(&key.0) {
        let c = char::from(b'a' + (key.0 - K::KEY_A.0) as u8);
        return Some((c, c.to_ascii_uppercase()));
    }
    if (K::DIGIT0.0..=K::DIGIT9.0).contains(&key.0) {
        let d = (key.0 - K::DIGIT0.0) as usize;
        return Some((
            char::from(b'0' + d as u8),
            ")!@#$%^&*("[d..=d].chars().next()?,
        ));
    }
    Some(match key {
        K::BACKQUOTE => ('`', '~'),
        K::BACKSLASH => ('\\', '|'),
        K::BRACKET_LEFT => ('[', '{'),
        K::BRACKET_RIGHT => (']', '}'),
        K::COMMA => (',', '<'),
        K::EQUAL => ('=', '+'),
        K::MINUS => ('-', '_'),
        K::PERIOD => ('.', '>'),
        K::QUOTE => ('\'', '"'),
        K::SEMICOLON => (';', ':'),
        K::SLASH => ('/', '?'),
        K::SPACE => (' ', ' '),
        K::INTL_BACKSLASH => ('\\', '|'),
        _ => return None,
    })
}

fn german(key: K) -> Option<(char, char)> {
    Some(match key {
        K::KEY_Y => ('z', 'Z'),
        K::KEY_Z => ('y', 'Y'),
        K::MINUS => ('ß', '?'),
        K::BRACKET_LEFT => ('ü', 'Ü'),
        K::BRACKET_RIGHT => ('+', '*'),
        K::SEMICOLON => ('ö', 'Ö'),
        K::QUOTE => ('ä', 'Ä'),
        K::BACKSLASH => ('#', '\''),
        K::COMMA => (',', ';'),
        K::PERIOD => ('.', ':'),
        K::SLASH => ('-', '_'),
        K::INTL_BACKSLASH => ('<', '>'),
        K::DIGIT2 => ('2', '"'),
        K::DIGIT3 => ('3', '§'),
        K::DIGIT6 => ('6', '&'),
        K::DIGIT7 => ('7', '/'),
        K::DIGIT8 => ('8', '('),
        K::DIGIT9 => ('9', ')'),
        K::DIGIT0 => ('0', '='),
        _ => return None,
    })
}

fn french(key: K) -> Option<(char, char)> {
    Some(match key {
        K::KEY_Q => ('a', 'A'),
        K::KEY_A => ('q', 'Q'),
        K::KEY_W => ('z', 'Z'),
        K::KEY_Z => ('w', 'W'),
        K::SEMICOLON => ('m', 'M'),
        K::KEY_M => (',', '?'),
        K::COMMA => (';', '.'),
        K::PERIOD => (':', '/'),
        K::SLASH => ('!', '§'),
        K::QUOTE => ('ù', '%'),
        K::BRACKET_RIGHT => ('$', '£'),
        K::BACKSLASH => ('*', 'µ'),
        K::MINUS => (')', '°'),
        K::DIGIT1 => ('&', '1'),
        K::DIGIT2 => ('é', '2'),
        K::DIGIT3 => ('"', '3'),
        K::DIGIT4 => ('\'', '4'),
        K::DIGIT5 => ('(', '5'),
        K::DIGIT6 => ('-', '6'),
        K::DIGIT7 => ('è', '7'),
        K::DIGIT8 => ('_', '8'),
        K::DIGIT9 => ('ç', '9'),
        K::DIGIT0 => ('à', '0'),
        K::INTL_BACKSLASH => ('<', '>'),
        _ => return None,
    })
}

fn russian(key: K) -> Option<(char, char)> {
    const ROW: [(K, char); 33] = [
        (K::KEY_Q, 'й'),
        (K::KEY_W, 'ц'),
        (K::KEY_E, 'у'),
        (K::KEY_R, 'к'),
        (K::KEY_T, 'е'),
        (K::KEY_Y, 'н'),
        (K::KEY_U, 'г'),
        (K::KEY_I, 'ш'),
        (K::KEY_O, 'щ'),
        (K::KEY_P, 'з'),
        (K::BRACKET_LEFT, 'х'),
        (K::BRACKET_RIGHT, 'ъ'),
        (K::KEY_A, 'ф'),
        (K::KEY_S, 'ы'),
        (K::KEY_D, 'в'),
        (K::KEY_F, 'а'),
        (K::KEY_G, 'п'),
        (K::KEY_H, 'р'),
        (K::KEY_J, 'о'),
        (K::KEY_K, 'л'),
        (K::KEY_L, 'д'),
        (K::SEMICOLON, 'ж'),
        (K::QUOTE, 'э'),
        (K::KEY_Z, 'я'),
        (K::KEY_X, 'ч'),
        (K::KEY_C, 'с'),
        (K::KEY_V, 'м'),
        (K::KEY_B, 'и'),
        (K::KEY_N, 'т'),
        (K::KEY_M, 'ь'),
        (K::COMMA, 'б'),
        (K::PERIOD, 'ю'),
        (K::BACKQUOTE, 'ё'),
    ];
    if key == K::SLASH {
        return Some(('.', ','));
    }
    let (_, c) = ROW.iter().find(|(k, _)| *k == key)?;
    let upper = c.to_uppercase().next()?;
    Some((*c, upper))
}

/// The text a keypad key types with Num Lock on.
fn keypad_char(key: K) -> Option<char> {
    if (K::NUMPAD0.0..=K::NUMPAD9.0).contains(&key.0) {
        return Some(char::from(b'0' + (key.0 - K::NUMPAD0.0) as u8));
    }
    Some(match key {
        K::NUMPAD_ADD => '+',
        K::NUMPAD_SUBTRACT => '-',
        K::NUMPAD_MULTIPLY => '*',
        K::NUMPAD_DIVIDE => '/',
        K::NUMPAD_DECIMAL => '.',
        K::NUMPAD_COMMA => ',',
        K::NUMPAD_EQUAL => '=',
        K::NUMPAD_PAREN_LEFT => '(',
        K::NUMPAD_PAREN_RIGHT => ')',
        _ => return None,
    })
}

/// Draws key events from a seed.
#[derive(Debug)]
pub struct Generator {
    rng: Rng,
}

/// One generated event and what it was drawn as (for reports).
#[derive(Clone, Debug)]
pub struct Drawn {
    /// The event.
    pub event: KeyEvent,
    /// The layout it was typed on.
    pub layout: Layout,
}

impl Generator {
    /// A generator for `seed`.
    pub fn new(seed: u64) -> Self {
        Self {
            rng: Rng::new(seed),
        }
    }

    /// The random source, for the caller's other draws (modes, ids).
    pub fn rng(&mut self) -> &mut Rng {
        &mut self.rng
    }

    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.rng.below(items.len() as u64) as usize]
    }

    /// The next event.
    pub fn event(&mut self) -> Drawn {
        let layout = self.pick(&Layout::ALL);
        let key = self.key();
        let mods = self.mods();
        let action = match self.rng.below(20) {
            0..=15 => KeyAction::Press,
            16 | 17 => KeyAction::Repeat,
            _ => KeyAction::Release,
        };
        let composing = self.rng.chance(0.02);
        let mut event = KeyEvent {
            action,
            key,
            mods,
            consumed_mods: ModSet::NONE,
            composing,
            text: None,
            unshifted_codepoint: None,
        };
        self.produce(&mut event, layout);
        Drawn { event, layout }
    }

    /// Any known key, text keys about half the time (they have the most cases).
    fn key(&mut self) -> K {
        if self.rng.chance(0.5) {
            // The text keys: 1..=50 (punctuation, digits, letters) and Space.
            return if self.rng.chance(0.05) {
                K::SPACE
            } else {
                K(1 + self.rng.below(50) as u32)
            };
        }
        K(self.rng.below(u64::from(K::MAX_KNOWN) + 1) as u32)
    }

    /// Each of Shift, Ctrl, Alt, Super often; the locks and the side bits now and then.
    fn mods(&mut self) -> ModSet {
        let mut bits = 0u16;
        for (bit, p) in [
            (ModSet::SHIFT, 0.3),
            (ModSet::CTRL, 0.25),
            (ModSet::ALT, 0.25),
            (ModSet::SUPER, 0.08),
            (ModSet::CAPS_LOCK, 0.08),
            (ModSet::NUM_LOCK, 0.15),
        ] {
            if self.rng.chance(p) {
                bits |= bit.0;
            }
        }
        for (side, of) in [
            (ModSet::SHIFT_SIDE, ModSet::SHIFT),
            (ModSet::CTRL_SIDE, ModSet::CTRL),
            (ModSet::ALT_SIDE, ModSet::ALT),
            (ModSet::SUPER_SIDE, ModSet::SUPER),
        ] {
            if bits & of.0 != 0 && self.rng.chance(0.1) {
                bits |= side.0;
            }
        }
        ModSet(bits)
    }

    /// Fills `text`, `unshifted_codepoint` and `consumed_mods` the way a client might: the
    /// layout's character (shifted by Shift and, for letters, Caps Lock), or nothing when the
    /// client does not know it or the platform gave a control character; sometimes no
    /// unshifted code point; Shift consumed when it changed the character, if the client
    /// knows that.
    fn produce(&mut self, event: &mut KeyEvent, layout: Layout) {
        let mods = event.mods;
        let shift = mods.contains(ModSet::SHIFT);
        if let Some((base, shifted)) = layout.chars(event.key) {
            let caps = mods.contains(ModSet::CAPS_LOCK) && base.is_alphabetic();
            let c = if shift == caps { base } else { shifted };
            // A platform that turns Ctrl+letter into a control character hands the client
            // no printable text (phux: text never holds C0 controls).
            let ctrl_eats = mods.contains(ModSet::CTRL) && self.rng.chance(0.5);
            let knows_text = !ctrl_eats && self.rng.chance(0.75);
            if knows_text && event.action != KeyAction::Release {
                event.text = Some(c.to_string());
            }
            if self.rng.chance(0.85) {
                event.unshifted_codepoint = Some(u32::from(base));
            }
            if shift && c != base && self.rng.chance(0.7) {
                event.consumed_mods = ModSet::SHIFT;
            }
            return;
        }
        if let Some(c) = keypad_char(event.key)
            && mods.contains(ModSet::NUM_LOCK)
        {
            if event.action != KeyAction::Release && self.rng.chance(0.75) {
                event.text = Some(c.to_string());
            }
            if self.rng.chance(0.5) {
                event.unshifted_codepoint = Some(u32::from(c));
            }
            return;
        }
        // Keys without text: now and then a client reports text from somewhere else (an
        // IME commit on an unidentified key, say).
        if event.key == K::UNIDENTIFIED && self.rng.chance(0.5) {
            let commit = self.pick(&["é", "ü", "日本", "ß", "ą", "ж", "€", "x"]);
            event.text = Some(commit.to_owned());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_draws_the_same_events() {
        let a: Vec<_> = {
            let mut g = Generator::new(7);
            (0..200).map(|_| g.event().event).collect()
        };
        let b: Vec<_> = {
            let mut g = Generator::new(7);
            (0..200).map(|_| g.event().event).collect()
        };
        assert_eq!(a, b);
    }

    #[test]
    fn text_never_holds_a_control_character() {
        let mut g = Generator::new(1);
        for _ in 0..20_000 {
            let e = g.event().event;
            if let Some(t) = &e.text {
                assert!(!t.is_empty() && !t.chars().any(char::is_control), "{e:?}");
            }
            assert!(e.key.0 <= K::MAX_KNOWN);
            assert_eq!(e.mods.0 & !ModSet::KNOWN_BITS, 0);
        }
    }

    #[test]
    fn layouts_shift_as_their_keyboards_do() {
        assert_eq!(Layout::Us.chars(K::SEMICOLON), Some((';', ':')));
        assert_eq!(Layout::German.chars(K::MINUS), Some(('ß', '?')));
        assert_eq!(Layout::French.chars(K::DIGIT2), Some(('é', '2')));
        assert_eq!(Layout::Russian.chars(K::KEY_C), Some(('с', 'С')));
        assert_eq!(Layout::Russian.chars(K::SPACE), Some((' ', ' ')));
        assert_eq!(Layout::Us.chars(K::ENTER), None);
    }
}
