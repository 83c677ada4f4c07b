//! The canonical-line guard: refuse a write that would overflow the kernel's line buffer.
//!
//! In canonical (cooked) mode the line discipline buffers a line until a terminator. Linux's
//! N_TTY buffer holds 4095 content bytes plus the terminator; past that it silently discards
//! input, so a long unterminated paste would be cut without anyone knowing. The guard runs on
//! the final PTY bytes of a job (phux 0.8 section 6.6, with our Linux limit); the driver reads
//! ICANON / ICRNL / IGNCR with `tcgetattr` and passes them in.

use phux_proto::ErrorCode;

/// The longest unterminated run of content bytes Linux's N_TTY line buffer accepts: its 4096
/// bytes hold 4095 bytes of content plus the terminator.
pub const LINUX_CANONICAL_LIMIT: usize = 4095;

/// A job whose longest line is over the limit (wire 206 CANONICAL_LIMIT_EXCEEDED).
#[derive(Clone, Copy, PartialEq, Eq, Debug, thiserror::Error)]
#[error(
    "the terminal is in canonical (cooked) mode and these bytes contain a line of {longest} \
     bytes with no terminator, over the limit of {limit}; split it"
)]
#[non_exhaustive]
pub struct CanonicalLimitExceeded {
    /// The limit in force.
    pub limit: usize,
    /// The longest unterminated run found.
    pub longest: usize,
}

impl CanonicalLimitExceeded {
    /// The wire code: CANONICAL_LIMIT_EXCEEDED.
    pub fn code(&self) -> ErrorCode {
        ErrorCode::CANONICAL_LIMIT_EXCEEDED
    }
}

/// The canonical-line check, as associated functions (it keeps no state).
#[derive(Clone, Copy, Debug, Default)]
#[non_exhaustive]
pub struct CanonicalGuard;

impl CanonicalGuard {
    /// Jobs of at most this many bytes are never refused (phux 0.8 section 6.6 step 1): no
    /// line in them can be long enough, and the driver skips `tcgetattr`.
    pub const FAST_PATH_MAX: usize = 255;

    /// Whether the driver needs the terminal's termios at all for a job of `len` bytes.
    pub fn needs_check(len: usize) -> bool {
        len > Self::FAST_PATH_MAX
    }

    /// The longest run of bytes between line terminators (or before the first, or after the
    /// last). LF always terminates; CR only when `cr_terminates` (ICRNL set and IGNCR not).
    pub fn longest_line(bytes: &[u8], cr_terminates: bool) -> usize {
        let mut longest = 0;
        let mut run = 0usize;
        for &b in bytes {
            // [INPUT.CANON.2] LF always ends a line; CR only when the driver maps it to NL.
            if b == b'\n' || (cr_terminates && b == b'\r') {
                run = 0;
            } else {
                run += 1;
                longest = longest.max(run);
            }
        }
        longest
    }

    /// Refuses `bytes` when the terminal is `canonical` and a line is over
    /// [`LINUX_CANONICAL_LIMIT`]; the caller then writes nothing.
    pub fn check(
        bytes: &[u8],
        canonical: bool,
        cr_terminates: bool,
    ) -> Result<(), CanonicalLimitExceeded> {
        // [INPUT.CANON.1] Only canonical mode has a line buffer, and short jobs cannot
        // overflow it.
        if !canonical || !Self::needs_check(bytes.len()) {
            return Ok(());
        }
        let longest = Self::longest_line(bytes, cr_terminates);
        // [INPUT.CANON.3] A run of more than 4095 unterminated bytes is refused with 206 and
        // nothing is written; 4095 fits.
        if longest > LINUX_CANONICAL_LIMIT {
            return Err(CanonicalLimitExceeded {
                limit: LINUX_CANONICAL_LIMIT,
                longest,
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn line(n: usize) -> Vec<u8> {
        vec![b'x'; n]
    }

    // [INPUT.CANON.3] The boundary: 4095 content bytes pass, 4096 do not.
    #[test]
    fn limit_boundary() {
        assert_eq!(CanonicalGuard::check(&line(4095), true, true), Ok(()));
        assert_eq!(
            CanonicalGuard::check(&line(4096), true, true),
            Err(CanonicalLimitExceeded {
                limit: 4095,
                longest: 4096
            })
        );
        // 4095 bytes then the terminator is a full, legal line.
        let mut full = line(4095);
        full.push(b'\n');
        assert_eq!(CanonicalGuard::check(&full, true, false), Ok(()));
        let err = CanonicalGuard::check(&line(5000), true, false).unwrap_err();
        assert_eq!(err.code(), ErrorCode::CANONICAL_LIMIT_EXCEEDED);
    }

    // [INPUT.CANON.1]
    #[test]
    fn raw_mode_and_fast_path_never_refuse() {
        assert_eq!(CanonicalGuard::check(&line(100_000), false, true), Ok(()));
        assert_eq!(CanonicalGuard::check(&line(255), true, true), Ok(()));
        assert!(!CanonicalGuard::needs_check(255));
        assert!(CanonicalGuard::needs_check(256));
    }

    // [INPUT.CANON.2] Many short lines are fine however long the job; CR counts only with
    // ICRNL and without IGNCR.
    #[test]
    fn terminators() {
        let mut lf_lines = Vec::new();
        let mut cr_lines = Vec::new();
        for _ in 0..10 {
            lf_lines.extend(line(4000));
            lf_lines.push(b'\n');
            cr_lines.extend(line(4000));
            cr_lines.push(b'\r');
        }
        assert_eq!(CanonicalGuard::check(&lf_lines, true, false), Ok(()));
        assert_eq!(CanonicalGuard::check(&cr_lines, true, true), Ok(()));
        assert_eq!(
            CanonicalGuard::check(&cr_lines, true, false),
            Err(CanonicalLimitExceeded {
                limit: 4095,
                longest: 40_010
            })
        );
        // The longest run may be the tail after the last terminator.
        let mut tail = b"short\n".to_vec();
        tail.extend(line(4096));
        assert_eq!(CanonicalGuard::longest_line(&tail, false), 4096);
        assert_eq!(CanonicalGuard::longest_line(b"", true), 0);
        assert_eq!(CanonicalGuard::longest_line(b"\n\r\n", true), 0);
        assert_eq!(CanonicalGuard::longest_line(b"ab\rcde", true), 3);
        assert_eq!(CanonicalGuard::longest_line(b"ab\rcde", false), 6);
    }

    proptest! {
        // The guard agrees with splitting on terminators.
        #[test]
        fn longest_line_matches_split(
            bytes in proptest::collection::vec(prop_oneof![Just(b'\n'), Just(b'\r'), Just(b'a')], 0..300),
            cr in any::<bool>(),
        ) {
            let want = bytes
                .split(|b| *b == b'\n' || (cr && *b == b'\r'))
                .map(<[u8]>::len)
                .max()
                .unwrap_or(0);
            prop_assert_eq!(CanonicalGuard::longest_line(&bytes, cr), want);
        }
    }
}
