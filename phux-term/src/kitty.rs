//! The kitty keyboard protocol's per-screen stack of progressive-enhancement flags.

use crate::modes::KittyFlags;

/// How many pushed entries a stack keeps. The protocol asks for a bound and says to evict the
/// oldest entry when it is reached, so a program that pushes without popping cannot grow memory.
pub(crate) const KITTY_STACK_DEPTH: usize = 16;

/// One screen's flag stack: the flags in force plus up to [`KITTY_STACK_DEPTH`] saved entries.
#[derive(Clone, Copy, Debug, Default, serde::Serialize, serde::Deserialize)]
pub(crate) struct KittyStack {
    current: u8,
    /// Saved entries, oldest first; only `saved[..len]` is meaningful.
    saved: [u8; KITTY_STACK_DEPTH],
    len: u8,
}

impl KittyStack {
    /// Whether the saved count is within the stack (for a stack read back as data).
    pub(crate) fn is_valid(&self) -> bool {
        usize::from(self.len) <= KITTY_STACK_DEPTH
    }

    /// The flags in force.
    pub(crate) fn current(&self) -> KittyFlags {
        KittyFlags(self.current)
    }

    /// The saved entries, oldest first (for the synthesized bootstrap).
    pub(crate) fn saved(&self) -> &[u8] {
        &self.saved[..usize::from(self.len)]
    }

    /// `CSI > flags u`: save the current flags and make `flags` current.
    pub(crate) fn push(&mut self, flags: u8) {
        if usize::from(self.len) == KITTY_STACK_DEPTH {
            // Full: evict the oldest entry.
            self.saved.copy_within(1.., 0);
            self.len -= 1;
        }
        self.saved[usize::from(self.len)] = self.current;
        self.len += 1;
        self.current = flags & KittyFlags::ALL;
    }

    /// `CSI < n u`: pop `n` entries. Popping more than were pushed empties the stack and
    /// resets the flags to 0.
    pub(crate) fn pop(&mut self, n: u16) {
        for _ in 0..n {
            if self.len == 0 {
                self.current = 0;
                return;
            }
            self.len -= 1;
            self.current = self.saved[usize::from(self.len)];
        }
    }

    /// `CSI = flags ; mode u`: 1 replaces, 2 sets the given bits, 3 clears them; other modes
    /// are ignored.
    pub(crate) fn set(&mut self, flags: u8, mode: u16) {
        let flags = flags & KittyFlags::ALL;
        match mode {
            1 => self.current = flags,
            2 => self.current |= flags,
            3 => self.current &= !flags,
            _ => {}
        }
    }
}

impl PartialEq for KittyStack {
    /// Entries past `len` are stale and do not count.
    fn eq(&self, other: &Self) -> bool {
        self.current == other.current && self.saved() == other.saved()
    }
}

impl Eq for KittyStack {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn push_pop_set() {
        let mut s = KittyStack::default();
        s.push(1);
        s.push(3);
        assert_eq!(s.current().0, 3);
        s.set(4, 2);
        assert_eq!(s.current().0, 7);
        s.set(1, 3);
        assert_eq!(s.current().0, 6);
        s.set(8, 1);
        assert_eq!(s.current().0, 8);
        s.pop(1);
        assert_eq!(s.current().0, 1);
        s.pop(1);
        assert_eq!(s.current().0, 0);
        s.set(5, 1);
        s.pop(1);
        assert_eq!(s.current().0, 0, "popping an empty stack resets the flags");
    }

    #[test]
    fn bounded_depth_evicts_oldest() {
        let mut s = KittyStack::default();
        for f in 1..=20u8 {
            s.push(f & KittyFlags::ALL);
        }
        assert_eq!(s.saved().len(), KITTY_STACK_DEPTH);
        // The 16 newest saved entries are the flags pushed 4..=19 (the current one is 20).
        assert_eq!(s.saved()[0], 4);
        s.pop(u16::MAX);
        assert_eq!(s, KittyStack::default());
    }

    #[test]
    fn unknown_bits_and_modes_are_ignored() {
        let mut s = KittyStack::default();
        s.push(0xff);
        assert_eq!(s.current().0, KittyFlags::ALL);
        s.set(1, 9);
        assert_eq!(s.current().0, KittyFlags::ALL);
    }
}
