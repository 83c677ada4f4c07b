//! The image's file: a memfd written once and sealed, then mapped by whoever reads it (the
//! trial child, the new image), or read whole when it is not sealed (version 1's).

use std::io;
use std::os::fd::{BorrowedFd, OwnedFd};

use rustix::fs::{MemfdFlags, SealFlags};

/// A new memfd for the image: close-on-exec until the exec itself
/// ([`Inherit`](crate::upgrade::Inherit)), and
/// sealable, so that once written nothing can change it under a reader's map ([`seal`]).
pub fn image_file() -> io::Result<OwnedFd> {
    Ok(rustix::fs::memfd_create(
        "phux-mio-upgrade",
        MemfdFlags::CLOEXEC | MemfdFlags::ALLOW_SEALING,
    )?)
}

/// The seals that make an image immutable: no write, no resize, no more seals changed.
const IMAGE_SEALS: SealFlags = SealFlags::WRITE
    .union(SealFlags::GROW)
    .union(SealFlags::SHRINK)
    .union(SealFlags::SEAL);

/// Seals a written image: from now on its bytes are fixed for every reader.
pub fn seal(fd: BorrowedFd<'_>) -> io::Result<()> {
    Ok(rustix::fs::fcntl_add_seals(fd, IMAGE_SEALS)?)
}

/// An image's bytes where a reader finds them: the sealed memfd mapped (no copy), or, for an
/// image that is not sealed (one a server of version 1 wrote), read into memory.
#[derive(Debug)]
pub enum ImageBytes {
    /// The sealed file, mapped read-only.
    Mapped(Map),
    /// A copy.
    Read(Vec<u8>),
}

impl std::ops::Deref for ImageBytes {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            Self::Mapped(map) => map.bytes(),
            Self::Read(bytes) => bytes,
        }
    }
}

/// A read-only map of a sealed memfd, unmapped when dropped.
#[derive(Debug)]
pub struct Map {
    addr: *mut std::ffi::c_void,
    len: usize,
}

impl Map {
    fn bytes(&self) -> &[u8] {
        if self.len == 0 {
            return &[];
        }
        // SAFETY: `addr` is the start of a live `len`-byte read-only map of a memfd sealed
        // against writes, growing and shrinking (checked in `load_image` before mapping):
        // its bytes never change and its pages never go away while the map lives, and the
        // borrow cannot outlive `self`, which unmaps it only when dropped.
        #[allow(unsafe_code)]
        unsafe {
            std::slice::from_raw_parts(self.addr.cast::<u8>(), self.len)
        }
    }
}

impl Drop for Map {
    fn drop(&mut self) {
        if self.len > 0 {
            // SAFETY: `addr`/`len` are the map `load_image` made, unmapped once, here; no
            // borrow of it is left (they borrow `self`).
            #[allow(unsafe_code)]
            let _ = unsafe { rustix::mm::munmap(self.addr, self.len) };
        }
    }
}

/// The image in `fd`, mapped if its file is sealed ([`seal`]), read otherwise.
pub fn load_image(fd: BorrowedFd<'_>) -> io::Result<ImageBytes> {
    let len = usize::try_from(rustix::fs::fstat(fd)?.st_size)
        .map_err(|_| io::Error::other("the image's size is negative"))?;
    let sealed = rustix::fs::fcntl_get_seals(fd).is_ok_and(|s| s.contains(IMAGE_SEALS));
    if !sealed {
        return read_image(fd).map(ImageBytes::Read);
    }
    if len == 0 {
        return Ok(ImageBytes::Mapped(Map {
            addr: std::ptr::null_mut(),
            len: 0,
        }));
    }
    // SAFETY: rustix maps only through this unsafe call. A fresh private read-only map at an
    // address the kernel picks aliases nothing of ours; the file is sealed, so the map's
    // bytes stay as they are (see `Map::bytes`).
    #[allow(unsafe_code)]
    let addr = unsafe {
        rustix::mm::mmap(
            std::ptr::null_mut(),
            len,
            rustix::mm::ProtFlags::READ,
            rustix::mm::MapFlags::PRIVATE,
            fd,
            0,
        )?
    };
    Ok(ImageBytes::Mapped(Map { addr, len }))
}

/// Reads a whole image from its file, from the start.
fn read_image(fd: BorrowedFd<'_>) -> io::Result<Vec<u8>> {
    // Sized once from the file, not grown by doubling; the size is only a hint, what the read
    // finds is what counts.
    let size = rustix::fs::fstat(fd).map_or(0, |st| usize::try_from(st.st_size).unwrap_or(0));
    let mut bytes = Vec::with_capacity(size);
    let mut offset = 0u64;
    let mut buf = vec![0u8; 256 << 10];
    loop {
        match rustix::io::pread(fd, &mut buf, offset) {
            Ok(0) => return Ok(bytes),
            Ok(n) => {
                bytes.extend_from_slice(buf.get(..n).unwrap_or_default());
                offset += n as u64;
            }
            Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
}

/// An image file holding `bytes`, sealed when asked: what the tests of every step read.
#[cfg(test)]
pub(crate) fn written(bytes: &[u8], sealed: bool) -> OwnedFd {
    use std::os::fd::AsFd;
    let fd = image_file().expect("memfd");
    rustix::io::write(&fd, bytes).expect("write");
    if sealed {
        seal(fd.as_fd()).expect("seal");
    }
    fd
}

#[cfg(test)]
mod tests {
    use std::os::fd::AsFd;

    use rustix::io::FdFlags;

    use super::*;

    #[test]
    fn a_sealed_image_is_mapped_and_reads_back_whole_and_twice() {
        let bytes: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
        let fd = written(&bytes, true);
        // Close-on-exec but for the exec itself ([`Inherit`](crate::upgrade::Inherit)).
        let flags = rustix::io::fcntl_getfd(&fd).expect("getfd");
        assert!(flags.contains(FdFlags::CLOEXEC));
        // Sealed: nothing changes it under a map.
        assert!(rustix::io::write(&fd, b"more").is_err());
        let first = load_image(fd.as_fd()).expect("load");
        assert!(matches!(first, ImageBytes::Mapped(_)));
        assert_eq!(&first[..], &bytes[..]);
        let second = load_image(fd.as_fd()).expect("load again");
        assert_eq!(&second[..], &bytes[..]);
        // Not sealed (an image of version 1): read, not mapped.
        let unsealed = written(&bytes, false);
        let read = load_image(unsealed.as_fd()).expect("read");
        assert!(matches!(read, ImageBytes::Read(_)));
        assert_eq!(&read[..], &bytes[..]);
    }
}
