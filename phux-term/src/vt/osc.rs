//! OSC strings: the title (OSC 0 and 2).

use super::Vt;

impl Vt {
    pub(super) fn osc_end(&mut self) {
        // [SCREEN.JSON.4] OSC 0 and 2 set the title; the body after the first ';' is the
        // title, semicolons and all. An empty one clears it.
        let body = std::mem::take(&mut self.osc);
        if let Some(at) = body.iter().position(|&b| b == b';')
            && matches!(&body[..at], b"0" | b"2")
        {
            let title = &body[at + 1..];
            self.title = if title.is_empty() {
                None
            } else {
                Some(String::from_utf8_lossy(title).into_owned())
            };
        }
        self.osc = body;
        self.osc.clear();
    }
}
