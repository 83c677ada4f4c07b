//! OSC strings: the title (OSC 0 and 2) and the dynamic colours (OSC 10-12, 110-112).

use super::Vt;
use super::report::OscEnd;

impl Vt {
    pub(super) fn osc_end(&mut self, end: OscEnd) {
        let body = std::mem::take(&mut self.osc);
        let (command, rest) = match body.iter().position(|&b| b == b';') {
            Some(at) => (&body[..at], Some(&body[at + 1..])),
            None => (&body[..], None),
        };
        match (command, rest) {
            // [SCREEN.JSON.4] OSC 0 and 2 set the title; the body after the first ';' is the
            // title, semicolons and all. An empty one clears it.
            (b"0" | b"2", Some(title)) => {
                self.title = if title.is_empty() {
                    None
                } else {
                    Some(String::from_utf8_lossy(title).into_owned())
                };
            }
            (b"10", Some(specs)) => self.dynamic_colors(0, specs, end),
            (b"11", Some(specs)) => self.dynamic_colors(1, specs, end),
            (b"12", Some(specs)) => self.dynamic_colors(2, specs, end),
            (b"110", _) => self.reset_dynamic_color(0),
            (b"111", _) => self.reset_dynamic_color(1),
            (b"112", _) => self.reset_dynamic_color(2),
            _ => {}
        }
        self.osc = body;
        self.osc.clear();
    }
}
