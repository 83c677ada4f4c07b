//! The server's listening socket: binding it by the rules of [`phux_local::socket`] (which
//! this module re-exports, so the server's API keeps them in one place), stale-socket
//! recovery, and removing only our own socket file at the end.

use std::fs::{self, DirBuilder, Permissions};
use std::io;
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use mio::net::{UnixListener, UnixStream};
use rustix::io::Errno;

pub use phux_local::socket::{
    DIR_MODE, DirPolicy, PeerError, SOCKET_MODE, SocketError, check_dir, check_peer, check_private,
    check_socket_file, default_socket_path, euid, peer_allowed, peer_uid, socket_path,
};

/// A bound, non-blocking listening socket. Dropping it removes the socket file, but only if
/// the file at the path is still the one we bound.
#[derive(Debug)]
pub struct ServerSocket {
    listener: UnixListener,
    path: PathBuf,
    dev_ino: (u64, u64),
}

impl ServerSocket {
    /// Prepares the directory, recovers a stale socket, binds `path` and sets it to 0600.
    ///
    /// The parent directory is created 0700 if missing (with its missing parents), and must
    /// be a real directory owned by us that grants nothing to group or others. An existing
    /// socket must be ours, 0600 or stricter, and dead (connecting is refused) before it is
    /// removed; anything else at the path is left alone and refused.
    pub fn bind(path: &Path) -> Result<Self, SocketError> {
        Self::bind_with(path, DirPolicy::Private)
    }

    /// [`ServerSocket::bind`] with the parent directory checked by `policy`.
    pub fn bind_with(path: &Path, policy: DirPolicy) -> Result<Self, SocketError> {
        let dir = path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .ok_or_else(|| SocketError::InvalidPath(path.to_owned()))?;
        if path.file_name().is_none() {
            return Err(SocketError::InvalidPath(path.to_owned()));
        }
        prepare_dir(dir, policy)?;
        clear_stale(path)?;
        let listener = UnixListener::bind(path).map_err(|source| {
            if source.kind() == io::ErrorKind::AddrInUse {
                // Someone bound it between our probe and our bind.
                SocketError::AddressInUse(path.to_owned())
            } else {
                SocketError::io("bind", path, source)
            }
        })?;
        // The 0700 directory already keeps others out; this is the second wall.
        fs::set_permissions(path, Permissions::from_mode(SOCKET_MODE))
            .map_err(|e| SocketError::io("chmod", path, e))?;
        let meta = fs::symlink_metadata(path).map_err(|e| SocketError::io("stat", path, e))?;
        Ok(Self {
            listener,
            path: path.to_owned(),
            dev_ino: (meta.dev(), meta.ino()),
        })
    }

    /// The socket the previous server image bound (an upgrade), with the device and inode of
    /// its file, so that only that file is removed at shutdown.
    pub fn adopt(listener: UnixListener, path: PathBuf, dev_ino: (u64, u64)) -> Self {
        Self {
            listener,
            path,
            dev_ino,
        }
    }

    /// The socket file's device and inode.
    pub fn dev_ino(&self) -> (u64, u64) {
        self.dev_ino
    }

    /// The listener, to register with mio and to `accept` from.
    pub fn listener(&self) -> &UnixListener {
        &self.listener
    }

    /// The listener, mutably (mio's `Registry::register` wants `&mut`).
    pub fn listener_mut(&mut self) -> &mut UnixListener {
        &mut self.listener
    }

    /// The socket's path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for ServerSocket {
    fn drop(&mut self) {
        // Only unlink our own socket: a successor may have replaced it.
        if let Ok(meta) = fs::symlink_metadata(&self.path)
            && meta.file_type().is_socket()
            && (meta.dev(), meta.ino()) == self.dev_ino
        {
            let _ = fs::remove_file(&self.path);
        }
    }
}

fn prepare_dir(dir: &Path, policy: DirPolicy) -> Result<(), SocketError> {
    match fs::symlink_metadata(dir) {
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            // Missing parents too (`mkdir -p`), each created owner-only. A directory that
            // appeared meanwhile is fine: `check_dir` judges whatever is there.
            DirBuilder::new()
                .recursive(true)
                .mode(DIR_MODE)
                .create(dir)
                .map_err(|e| SocketError::io("mkdir", dir, e))?;
            // We made it: make sure a restrictive umask did not leave us without access.
            fs::set_permissions(dir, Permissions::from_mode(DIR_MODE))
                .map_err(|e| SocketError::io("chmod", dir, e))?;
        }
        Err(e) => return Err(SocketError::io("stat", dir, e)),
    }
    check_dir(dir, policy)
}

/// Removes a dead socket at `path`; refuses a live one or a non-socket.
fn clear_stale(path: &Path) -> Result<(), SocketError> {
    let meta = match fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(SocketError::io("stat", path, e)),
    };
    if !meta.file_type().is_socket() {
        return Err(SocketError::NotASocket(path.to_owned()));
    }
    check_private(path, &meta)?;
    // mio's connect is non-blocking: a live server with a full backlog answers EAGAIN
    // instead of stalling our start-up.
    match UnixStream::connect(path) {
        Ok(_) => Err(SocketError::AddressInUse(path.to_owned())),
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
            Err(SocketError::AddressInUse(path.to_owned()))
        }
        Err(e) if e.raw_os_error() == Some(Errno::CONNREFUSED.raw_os_error()) => {
            match fs::remove_file(path) {
                Ok(()) => Ok(()),
                Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
                Err(e) => Err(SocketError::io("remove stale socket", path, e)),
            }
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(SocketError::io("probe", path, e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir_with_mode(mode: u32) -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("tempdir");
        fs::set_permissions(dir.path(), Permissions::from_mode(mode)).expect("chmod");
        dir
    }

    #[test]
    fn explicit_path_accepts_a_sticky_shared_dir_like_tmp_but_the_default_does_not() {
        let dir = dir_with_mode(0o1777);
        let path = dir.path().join("s.sock");
        assert!(matches!(
            ServerSocket::bind(&path),
            Err(SocketError::TooOpen { .. })
        ));
        let sock = ServerSocket::bind_with(&path, DirPolicy::Explicit).expect("bind");
        let mode = fs::symlink_metadata(&path).expect("stat").mode() & 0o777;
        assert_eq!(mode, SOCKET_MODE);
        drop(sock);
        assert!(!path.exists(), "the socket is removed on drop");
    }

    #[test]
    fn explicit_path_accepts_a_readable_dir_and_refuses_a_writable_one() {
        let dir = dir_with_mode(0o755);
        let path = dir.path().join("s.sock");
        ServerSocket::bind_with(&path, DirPolicy::Explicit).expect("0755 is fine");
        for mode in [0o777, 0o775, 0o757] {
            let dir = dir_with_mode(mode);
            let path = dir.path().join("s.sock");
            assert!(
                matches!(
                    ServerSocket::bind_with(&path, DirPolicy::Explicit),
                    Err(SocketError::TooOpen { .. })
                ),
                "mode {mode:o}"
            );
        }
    }
}
