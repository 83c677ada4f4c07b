//! Where the server's Unix socket lives and who may reach it: the rules the server binds by
//! and a client dials by (the server's bind and stale-socket recovery are
//! `phux_mio_server::socket`).
//!
//! Access control is layered: the directory is 0700 and ours, the socket 0600 and ours, and
//! every accepted peer's uid (SO_PEERCRED) must equal the server's effective uid.

use std::ffi::OsStr;
use std::fs;
use std::io;
use std::os::fd::AsFd;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

/// Mode of the socket's directory: owner only.
pub const DIR_MODE: u32 = 0o700;
/// Mode of the socket: owner read/write only.
pub const SOCKET_MODE: u32 = 0o600;
/// Permission bits that must be clear on the directory and on an existing socket.
const GROUP_OTHER_BITS: u32 = 0o077;
/// Write permission for group or others.
const GROUP_OTHER_WRITE: u32 = 0o022;

/// Why the server refuses to listen.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SocketError {
    /// The server name would escape the socket directory or is empty.
    #[error("invalid server name {0:?}: it must be non-empty and contain no '/'")]
    InvalidName(String),
    /// The socket path has no parent directory or no file name.
    #[error("invalid socket path {0}")]
    InvalidPath(PathBuf),
    /// The directory (or an existing socket) belongs to another user.
    #[error("{path} is owned by uid {owner}, not by us (uid {uid})")]
    WrongOwner {
        /// The offending path.
        path: PathBuf,
        /// Its owner.
        owner: u32,
        /// Our effective uid.
        uid: u32,
    },
    /// The directory (or an existing socket) grants access to group or others.
    #[error("{path} has mode {mode:04o}; it must grant nothing to group or others")]
    TooOpen {
        /// The offending path.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// The directory path names something that is not a directory (a symlink included).
    #[error("{0} is not a directory")]
    NotADirectory(PathBuf),
    /// Something that is not a socket sits at the socket path; it is never removed.
    #[error("{0} exists and is not a socket; refusing to remove it")]
    NotASocket(PathBuf),
    /// A server answers on the socket path.
    #[error("a server is already listening on {0}")]
    AddressInUse(PathBuf),
    /// Any other OS failure while preparing, probing or binding.
    #[error("{op} {path}: {source}")]
    Io {
        /// What we were doing.
        op: &'static str,
        /// On which path.
        path: PathBuf,
        /// What the OS said.
        #[source]
        source: io::Error,
    },
}

/// An accepted peer whose credentials do not match ours.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PeerError {
    /// The peer runs as another user.
    #[error("peer uid {uid} is not the server's uid {expected}")]
    Refused {
        /// The peer's uid.
        uid: u32,
        /// Ours.
        expected: u32,
    },
    /// SO_PEERCRED could not be read.
    #[error("cannot read peer credentials: {0}")]
    Io(#[from] io::Error),
}

/// Where the server listens: `explicit` (from `--socket`) if given, else
/// `$XDG_RUNTIME_DIR/phux-mio/<name>.sock`, else `/tmp/phux-mio-<euid>/<name>.sock`.
///
/// Bind the default path with [`DirPolicy::Private`] and an explicit one with
/// [`DirPolicy::Explicit`] (see `phux_mio_server::socket::ServerSocket::bind_with`).
pub fn socket_path(explicit: Option<PathBuf>, name: &str) -> Result<PathBuf, SocketError> {
    if let Some(path) = explicit {
        // A relative path is taken from the current directory, as every Unix tool takes one,
        // and made absolute once: the socket's directory is then known to everyone who is
        // told the path (the ready line, an upgraded image).
        return std::path::absolute(&path).map_err(|e| SocketError::io("resolve", &path, e));
    }
    let xdg = std::env::var_os("XDG_RUNTIME_DIR");
    default_socket_path(xdg.as_deref(), euid(), name)
}

/// The default path for `name`, given `$XDG_RUNTIME_DIR` (ignored unless absolute) and the uid.
pub fn default_socket_path(
    xdg_runtime_dir: Option<&OsStr>,
    uid: u32,
    name: &str,
) -> Result<PathBuf, SocketError> {
    if name.is_empty() || name.contains('/') || name == "." || name == ".." {
        return Err(SocketError::InvalidName(name.to_owned()));
    }
    let file = format!("{name}.sock");
    // The XDG base-directory spec says relative values are invalid and must be ignored.
    match xdg_runtime_dir.map(Path::new).filter(|p| p.is_absolute()) {
        Some(dir) => Ok(dir.join("phux-mio").join(file)),
        None => Ok(PathBuf::from(format!("/tmp/phux-mio-{uid}")).join(file)),
    }
}

/// How strict to be about the socket's parent directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum DirPolicy {
    /// The default directory: ours, and granting nothing to group or others.
    Private,
    /// A directory the user named with `--socket`: owned by us or root, and either not
    /// writable by group or others, or sticky (like `/tmp`, where others can create files
    /// but cannot remove or replace ours). The socket itself is still 0600.
    Explicit,
}

/// The uid of the process at the other end of a connected Unix socket (SO_PEERCRED: the
/// credentials at `connect` time, which the peer cannot forge).
pub fn peer_uid(stream: impl AsFd) -> io::Result<u32> {
    let cred = rustix::net::sockopt::socket_peercred(stream)?;
    Ok(cred.uid.as_raw())
}

/// The pid of the process at the other end of a connected Unix socket (SO_PEERCRED, as
/// [`peer_uid`]): the process that listens there, for a client.
pub fn peer_pid(stream: impl AsFd) -> io::Result<u32> {
    let cred = rustix::net::sockopt::socket_peercred(stream)?;
    u32::try_from(cred.pid.as_raw_nonzero().get())
        .map_err(|_| io::Error::other("a negative peer pid"))
}

/// Whether a peer running as `peer` may talk to a process running as `ours`: only the same
/// uid (root included: a root peer of a user's process is refused). The server applies it to
/// its clients, phuxctl to the server it dials.
pub fn peer_allowed(peer: u32, ours: u32) -> bool {
    peer == ours
}

/// Accepts the peer only if it runs as our effective uid.
pub fn check_peer(stream: impl AsFd) -> Result<(), PeerError> {
    let uid = peer_uid(stream)?;
    let expected = euid();
    if peer_allowed(uid, expected) {
        Ok(())
    } else {
        Err(PeerError::Refused { uid, expected })
    }
}

/// The server's effective uid.
pub fn euid() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// Checks an existing socket directory by `policy` without changing anything: a real
/// directory (not a symlink) that is ours and grants nothing to group or others (`Private`),
/// or ours or root's and not writable by others unless sticky (`Explicit`). The server binds
/// only in such a directory; a client dials only into one.
pub fn check_dir(dir: &Path, policy: DirPolicy) -> Result<(), SocketError> {
    // symlink_metadata: a symlink planted in /tmp must not redirect us.
    let meta = fs::symlink_metadata(dir).map_err(|e| SocketError::io("stat", dir, e))?;
    if !meta.file_type().is_dir() {
        return Err(SocketError::NotADirectory(dir.to_owned()));
    }
    match policy {
        DirPolicy::Private => check_private(dir, &meta),
        DirPolicy::Explicit => check_shared_dir(dir, &meta),
    }
}

/// Checks an existing socket file: a socket (not a symlink), ours, granting nothing to group
/// or others, as the server leaves the one it binds.
pub fn check_socket_file(path: &Path) -> Result<(), SocketError> {
    let meta = fs::symlink_metadata(path).map_err(|e| SocketError::io("stat", path, e))?;
    if !meta.file_type().is_socket() {
        return Err(SocketError::NotASocket(path.to_owned()));
    }
    check_private(path, &meta)
}

/// An explicitly named directory: nobody but us (or root) may remove or replace our socket.
fn check_shared_dir(dir: &Path, meta: &fs::Metadata) -> Result<(), SocketError> {
    let uid = euid();
    if meta.uid() != uid && meta.uid() != 0 {
        return Err(SocketError::WrongOwner {
            path: dir.to_owned(),
            owner: meta.uid(),
            uid,
        });
    }
    let mode = meta.mode() & 0o7777;
    let sticky = mode & 0o1000 != 0;
    if mode & GROUP_OTHER_WRITE != 0 && !sticky {
        return Err(SocketError::TooOpen {
            path: dir.to_owned(),
            mode,
        });
    }
    Ok(())
}

/// Checks a path the server made or will replace, by its metadata (not following a symlink):
/// ours, and granting nothing to group or others.
pub fn check_private(path: &Path, meta: &fs::Metadata) -> Result<(), SocketError> {
    let uid = euid();
    if meta.uid() != uid {
        return Err(SocketError::WrongOwner {
            path: path.to_owned(),
            owner: meta.uid(),
            uid,
        });
    }
    let mode = meta.mode() & 0o7777;
    if mode & GROUP_OTHER_BITS != 0 {
        return Err(SocketError::TooOpen {
            path: path.to_owned(),
            mode,
        });
    }
    Ok(())
}

impl SocketError {
    /// An OS failure while doing `op` on `path`.
    pub fn io(op: &'static str, path: &Path, source: io::Error) -> Self {
        Self::Io {
            op,
            path: path.to_owned(),
            source,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_path_prefers_an_absolute_xdg_runtime_dir() {
        let p = default_socket_path(Some(OsStr::new("/run/user/1000")), 1000, "main").unwrap();
        assert_eq!(p, Path::new("/run/user/1000/phux-mio/main.sock"));
    }

    #[test]
    fn default_path_falls_back_to_tmp_per_uid() {
        let p = default_socket_path(None, 1000, "main").unwrap();
        assert_eq!(p, Path::new("/tmp/phux-mio-1000/main.sock"));
        // A relative XDG_RUNTIME_DIR is invalid by the XDG spec and ignored.
        let p = default_socket_path(Some(OsStr::new("run")), 7, "x").unwrap();
        assert_eq!(p, Path::new("/tmp/phux-mio-7/x.sock"));
    }

    #[test]
    fn names_cannot_escape_the_directory() {
        for bad in ["", "a/b", "..", "."] {
            assert!(matches!(
                default_socket_path(None, 0, bad),
                Err(SocketError::InvalidName(_))
            ));
        }
    }

    #[test]
    fn explicit_path_wins() {
        let p = socket_path(Some(PathBuf::from("/x/y.sock")), "ignored").unwrap();
        assert_eq!(p, Path::new("/x/y.sock"));
    }
}
