//! Bytes as lowercase hex, the one spelling logs, reports and secrets' fingerprints use.

use std::fmt::Write as _;

/// `bytes` as contiguous lowercase hex: `[0xde, 0xad]` is `dead`.
#[must_use]
pub fn to_hex(bytes: &[u8]) -> String {
    bytes
        .iter()
        .fold(String::with_capacity(bytes.len() * 2), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
}

/// `bytes` as lowercase hex pairs separated by spaces: `[0xde, 0xad]` is `de ad`.
#[must_use]
pub fn to_hex_spaced(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() * 3);
    for (i, b) in bytes.iter().enumerate() {
        if i > 0 {
            s.push(' ');
        }
        let _ = write!(s, "{b:02x}");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spellings() {
        assert_eq!(to_hex(&[]), "");
        assert_eq!(to_hex(&[0x00, 0xde, 0xad, 0x0f]), "00dead0f");
        assert_eq!(to_hex_spaced(&[]), "");
        assert_eq!(to_hex_spaced(&[0x1b, 0x5b, 0x41]), "1b 5b 41");
    }
}
