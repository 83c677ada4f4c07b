//! The server id: 16 bytes from the operating system's random number generator.

use std::io;

use rustix::io::Errno;
use rustix::rand::GetRandomFlags;

/// Length of HELLO_OK's `server_id`.
pub const SERVER_ID_LEN: usize = 16;

/// A fresh server id from `getrandom(2)`. Blocks only until the kernel's pool is first
/// initialised (at boot); retries EINTR and short reads.
pub fn server_id() -> io::Result<[u8; SERVER_ID_LEN]> {
    let mut id = [0u8; SERVER_ID_LEN];
    fill_random(&mut id)?;
    Ok(id)
}

pub(crate) fn fill_random(buf: &mut [u8]) -> io::Result<()> {
    let mut filled = 0;
    while let Some(rest) = buf.get_mut(filled..).filter(|r| !r.is_empty()) {
        match rustix::rand::getrandom(rest, GetRandomFlags::empty()) {
            Err(Errno::INTR) => {}
            Err(e) => return Err(e.into()),
            // A non-empty request never legitimately returns 0; do not spin on it.
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => filled += n,
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_ids_are_fresh() {
        let a = server_id().expect("getrandom");
        let b = server_id().expect("getrandom");
        // Equal 128-bit draws (or an all-zero one) mean the RNG is not being read.
        assert_ne!(a, b);
        assert_ne!(a, [0u8; SERVER_ID_LEN]);
    }
}
