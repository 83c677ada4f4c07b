//! How a turn of the loop is planned ([SERVER.FAIR.4]): what one readiness event says about
//! its source, and the order in which the ready and the busy sources are served.

use std::collections::HashMap;
use std::time::Duration;

use mio::Token;

/// The most time one turn of the loop spends on sources cut short at their own bound in an
/// earlier turn ([SERVER.FAIR.4]); those it does not reach are served first among them in the
/// next. Each source's share is bounded (the engine's
/// [`FRAMES_PER_RECEIVE`](phux_core::server::FRAMES_PER_RECEIVE), [`SOURCE_SLICE`](super::SOURCE_SLICE)), but with
/// many busy sources a turn would grow with their number.
pub const TURN_SLICE: Duration = Duration::from_millis(10);

/// What one readiness event says about its source.
#[derive(Debug, Clone, Copy)]
pub(super) struct Wake {
    pub(super) readable: bool,
    pub(super) writable: bool,
    /// The peer hung up or the source failed (no further event will come), or a socket holds an
    /// out-of-band byte (a read ends before it): a connection is read to its end. Until then a
    /// read shorter than the buffer took everything there was (see
    /// [`Got::drained`](crate::conn::Got::drained)) and whatever arrives later raises a new
    /// edge-triggered event, so the read that would find the socket empty is skipped: it cost a
    /// syscall between a reply and the next wait. A terminal's master is always read until it
    /// is empty: whether more is behind a short read decides whether it ends a chunk
    /// ([OUTPUT.GATHER.1]).
    pub(super) ended: bool,
}

/// Plans a turn ([SERVER.FAIR.4]): `busy` holds the busy sources a turn did not reach, in
/// order; the sources `again` names (cut short at their own bound) join it at the end, and a
/// ready source that is busy leaves `ready` for its place there, its wakes merged. So each
/// source has one turn a loop at most: listed once more for each turn it was cut short, a
/// REP flood took that many slices in a row and held the loop 160 ms where its slice is 4.
pub(super) fn plan_turn(
    ready: &mut Vec<(Token, Wake)>,
    busy: &mut Vec<(Token, Wake)>,
    again: impl Iterator<Item = Token>,
    busy_at: &mut HashMap<Token, usize>,
) {
    busy_at.clear();
    // Listed once each, as every plan leaves them.
    for (at, &(token, _)) in busy.iter().enumerate() {
        busy_at.insert(token, at);
    }
    for token in again {
        // Stopped at the cap, not at a short read: read on, to the end this time.
        let wake = Wake {
            readable: true,
            writable: false,
            ended: true,
        };
        if let Some(&at) = busy_at.get(&token) {
            busy[at].1.merge(wake);
        } else {
            busy_at.insert(token, busy.len());
            busy.push((token, wake));
        }
    }
    ready.retain(|&(token, wake)| match busy_at.get(&token) {
        Some(&at) => {
            busy[at].1.merge(wake);
            false
        }
        None => true,
    });
}

impl Wake {
    fn merge(&mut self, other: Self) {
        self.readable |= other.readable;
        self.writable |= other.writable;
        self.ended |= other.ended;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wake(readable: bool, writable: bool, ended: bool) -> Wake {
        Wake {
            readable,
            writable,
            ended,
        }
    }

    fn turns(list: &[(Token, Wake)]) -> Vec<(usize, bool, bool, bool)> {
        list.iter()
            .map(|(t, w)| (t.0, w.readable, w.writable, w.ended))
            .collect()
    }

    // [SERVER.FAIR.4]
    #[test]
    fn a_busy_source_keeps_its_place_and_gets_one_turn_with_every_wake() {
        // Last turn did not reach 7 and 5; 9 and 7 were cut short at their bound.
        let mut busy = vec![
            (Token(7), wake(false, true, false)),
            (Token(5), wake(true, false, false)),
        ];
        // The poll: 3 (an honest client), 5 and 8.
        let mut ready = vec![
            (Token(3), wake(true, false, false)),
            (Token(5), wake(true, true, true)),
            (Token(8), wake(false, true, false)),
        ];
        let mut at = HashMap::new();
        plan_turn(
            &mut ready,
            &mut busy,
            [9, 7].map(Token).into_iter(),
            &mut at,
        );
        assert_eq!(
            turns(&ready),
            [(3, true, false, false), (8, false, true, false)]
        );
        assert_eq!(
            turns(&busy),
            [
                (7, true, true, true),
                (5, true, true, true),
                (9, true, false, true)
            ]
        );
    }
}
