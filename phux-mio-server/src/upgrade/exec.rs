//! What crosses the exec: the descriptors kept open across it ([`Inherit`]), the exec itself
//! with the signal mask left as it is ([`exec`]), the previous binary kept to go back to, and
//! on the other side the descriptors taken back by number ([`adopt_fds`]).

use std::ffi::{CString, OsStr, OsString};
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use rustix::fs::{Mode, OFlags};
use rustix::io::FdFlags;

/// Opens the binary this process runs (`/proc/self/exe`, close-on-exec but for the exec that
/// carries it to the new image, [`Inherit`]), so that a new image that cannot adopt the state
/// can exec it again even if its file was replaced or removed since ([SERVER.UPGRADE.EXEC.6]).
pub fn open_own_exe() -> io::Result<OwnedFd> {
    Ok(rustix::fs::open(
        "/proc/self/exe",
        OFlags::PATH | OFlags::CLOEXEC,
        Mode::empty(),
    )?)
}

/// The path that execs an open descriptor's file.
pub fn fd_path(fd: RawFd) -> PathBuf {
    PathBuf::from(format!("/proc/self/fd/{fd}"))
}

/// The descriptors that cross the exec: `FD_CLOEXEC` cleared on each while this lives, set
/// again when it is dropped (the exec failed, and the old image serves on).
#[derive(Debug)]
pub struct Inherit {
    fds: Vec<RawFd>,
}

impl Inherit {
    /// Clears `FD_CLOEXEC` on every fd of `fds` (each borrowed from what owns it).
    pub fn clear(fds: &[BorrowedFd<'_>]) -> io::Result<Self> {
        let mut kept = Self { fds: Vec::new() };
        for fd in fds {
            rustix::io::fcntl_setfd(fd, FdFlags::empty())?;
            kept.fds.push(fd.as_raw_fd());
        }
        Ok(kept)
    }
}

impl Drop for Inherit {
    fn drop(&mut self) {
        for &raw in &self.fds {
            // Still open: `Inherit` is dropped only when the exec failed, while the owners of
            // these descriptors live on in the driver.
            let _ = set_cloexec_raw(raw);
        }
    }
}

/// Sets `FD_CLOEXEC` on a descriptor this process owns, so that no child inherits it.
pub fn set_cloexec(fd: impl AsFd) -> io::Result<()> {
    Ok(rustix::io::fcntl_setfd(fd, FdFlags::CLOEXEC)?)
}

fn set_cloexec_raw(raw: RawFd) -> io::Result<()> {
    // The descriptor belongs to the driver for as long as this runs (see `Inherit`); the
    // borrow ends with the call.
    let fd = borrow_raw(raw)?;
    set_cloexec(fd)
}

/// Replaces the process image with `path`, run as `argv` (its `argv[0]` first), with this
/// process's environment less `drop_env`, and `set_env` set. Returns only on failure. The
/// environment, the pid, the children, the signal mask and every descriptor without
/// `FD_CLOEXEC` stay.
///
/// Not std's `CommandExt::exec`: that empties the signal mask before `execve`, which would let
/// the shutdown and upgrade signals blocked for the exec in between the old image's handlers
/// and the new one's, where their default action ends the process ([SERVER.UPGRADE.EXEC.9]).
pub fn exec(
    path: &Path,
    argv: &[OsString],
    drop_env: &[&str],
    set_env: &[(&str, OsString)],
) -> io::Error {
    let c = |s: &OsStr| {
        CString::new(s.as_bytes()).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))
    };
    let path = match c(path.as_os_str()) {
        Ok(p) => p,
        Err(e) => return e,
    };
    let argv: Result<Vec<CString>, io::Error> = argv.iter().map(|a| c(a)).collect();
    let env: Result<Vec<CString>, io::Error> = std::env::vars_os()
        .filter(|(k, _)| {
            let set = set_env.iter().map(|(name, _)| name);
            !drop_env.iter().chain(set).any(|d| k == d)
        })
        .chain(set_env.iter().map(|(k, v)| (OsString::from(k), v.clone())))
        .map(|(k, v)| {
            let mut kv = k;
            kv.push("=");
            kv.push(v);
            c(&kv)
        })
        .collect();
    let (argv, env) = match (argv, env) {
        (Ok(a), Ok(e)) => (a, e),
        (Err(e), _) | (_, Err(e)) => return e,
    };
    let argv_ptrs: Vec<*const libc::c_char> = argv
        .iter()
        .map(|a| a.as_ptr())
        .chain(std::iter::once(std::ptr::null()))
        .collect();
    let env_ptrs: Vec<*const libc::c_char> = env
        .iter()
        .map(|e| e.as_ptr())
        .chain(std::iter::once(std::ptr::null()))
        .collect();
    // SAFETY: rustix's execve is for its libc-free runtime only, so libc's. `path` is a C
    // string, and both arrays hold pointers to C strings that outlive the call, each array
    // ending with a null pointer, as execve requires. It returns only on failure, leaving the
    // process as it was.
    #[allow(unsafe_code)]
    unsafe {
        libc::execve(path.as_ptr(), argv_ptrs.as_ptr(), env_ptrs.as_ptr());
    }
    io::Error::last_os_error()
}

/// Takes ownership of a descriptor the previous image left us, checking that it is open.
/// Each number must be adopted once ([`adopt_fds`] checks).
fn adopt_fd(raw: RawFd) -> io::Result<OwnedFd> {
    // Checked open first: F_GETFD fails with EBADF on a closed number.
    let _ = borrow_raw(raw)?;
    #[allow(unsafe_code)]
    // SAFETY: `raw` is open (checked above) and was left to this image by the previous one,
    // which wrote its number into the image and owned it until the exec; nothing else in this
    // process has taken it (`adopt_fds` refuses a number named twice and the standard streams,
    // and the image's own numbers are checked against the image's names before), so the
    // OwnedFd is its one owner.
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    Ok(fd)
}

/// Takes ownership of every descriptor `raws` names, in order. Refuses a number named twice
/// or a standard stream (0-2, which the process holds already), so that no descriptor gets
/// two owners.
pub fn adopt_fds(raws: &[RawFd]) -> io::Result<Vec<OwnedFd>> {
    let mut seen = std::collections::BTreeSet::new();
    for &raw in raws {
        if raw <= 2 || !seen.insert(raw) {
            return Err(io::Error::other(format!(
                "the image names descriptor {raw} twice or as a standard stream"
            )));
        }
        let _ = borrow_raw(raw)?;
    }
    raws.iter().map(|&raw| adopt_fd(raw)).collect()
}

/// Borrows a descriptor number for the length of a call, checking that it is open.
fn borrow_raw<'a>(raw: RawFd) -> io::Result<BorrowedFd<'a>> {
    if raw < 0 {
        return Err(rustix::io::Errno::BADF.into());
    }
    #[allow(unsafe_code)]
    // SAFETY: the borrow is used only for fcntl calls on a number the caller owns or is about
    // to adopt; a closed number makes fcntl fail with EBADF, which is returned below, and no
    // other thread exists to close it meanwhile (the server is single-threaded).
    let fd = unsafe { BorrowedFd::borrow_raw(raw) };
    rustix::io::fcntl_getfd(fd)?;
    Ok(fd)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::upgrade::memfd::{load_image, written};

    fn cloexec(fd: impl AsFd) -> bool {
        rustix::io::fcntl_getfd(fd)
            .expect("getfd")
            .contains(FdFlags::CLOEXEC)
    }

    #[test]
    fn inherit_clears_cloexec_and_puts_it_back_when_dropped() {
        let (a, b) = std::os::unix::net::UnixStream::pair().expect("pair");
        assert!(cloexec(&a) && cloexec(&b));
        let kept = Inherit::clear(&[a.as_fd(), b.as_fd()]).expect("clear");
        assert!(!cloexec(&a) && !cloexec(&b));
        drop(kept);
        assert!(cloexec(&a) && cloexec(&b));
    }

    #[test]
    fn adopting_refuses_closed_repeated_and_standard_descriptors() {
        assert!(adopt_fds(&[1]).is_err());
        assert!(adopt_fds(&[-1]).is_err());
        // A number far above anything this test process has open.
        assert!(adopt_fds(&[1_000_000]).is_err());
        let fd = written(b"x", false);
        let raw = fd.as_raw_fd();
        assert!(adopt_fds(&[raw, raw]).is_err());
        // One owner: hand it over, then adopt it back.
        let raw = {
            use std::os::fd::IntoRawFd;
            fd.into_raw_fd()
        };
        let mut adopted = adopt_fds(&[raw]).expect("adopt");
        let fd = adopted.pop().expect("one");
        assert_eq!(&load_image(fd.as_fd()).expect("read")[..], b"x");
    }
}
