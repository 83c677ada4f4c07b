//! Whom a client talks to, checked before it sends a byte (spec/client.md, CLIENT.PEER.N):
//! `phuxctl` and `phux-mio-server bridge` ([SERVER.BRIDGE.2]) both dial through it.
//!
//! The socket's directory must pass the server's own check for the directories it binds in
//! ([`socket::check_dir`]): private for the default path, owned by us or root
//! and not open to others' writes (unless sticky) for a path the user named. An existing
//! socket file must be ours. Once connected, the listening process must run as our uid
//! (SO_PEERCRED, the server's own `peer_allowed` rule).

use std::io;
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};

use crate::socket::{self, DirPolicy, SocketError};

/// Where to dial and how strictly to check the directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The socket, absolute.
    pub path: PathBuf,
    /// The directory rule: `Private` for the default path, `Explicit` for `--socket`.
    pub policy: DirPolicy,
}

/// Why a client refuses to talk to a socket.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TrustError {
    /// The directory (or the socket file) fails the check.
    #[error(
        "refusing to connect to {socket}: {problem}. Someone else may have set it up to receive \
         what you type. {remedy}"
    )]
    Place {
        /// The socket.
        socket: PathBuf,
        /// What is wrong, in the client's words.
        problem: String,
        /// What to do.
        remedy: String,
    },
    /// The listener runs as another user.
    #[error(
        "refusing to send anything to {socket}: the process listening there runs as uid {peer}, \
         not as you (uid {ours}), so it is not your server. Find out who created it; use a \
         socket in a directory of your own (--socket, or XDG_RUNTIME_DIR)"
    )]
    Peer {
        /// The socket.
        socket: PathBuf,
        /// The listener's uid.
        peer: u32,
        /// Ours.
        ours: u32,
    },
    /// SO_PEERCRED failed.
    #[error("cannot read the credentials of the process listening on {socket}: {source}")]
    Credentials {
        /// The socket.
        socket: PathBuf,
        /// What the OS said.
        #[source]
        source: io::Error,
    },
}

/// The socket to dial: `--socket` made absolute (so a relative path names the same socket
/// for the checks, the connection and the outbox key), else the server's default for `name`.
pub fn target(explicit: Option<&Path>, name: &str) -> Result<Target, SocketError> {
    match explicit {
        Some(path) => Ok(Target {
            path: std::path::absolute(path).map_err(|source| SocketError::Io {
                op: "resolve",
                path: path.to_owned(),
                source,
            })?,
            policy: DirPolicy::Explicit,
        }),
        None => Ok(Target {
            path: socket::socket_path(None, name)?,
            policy: DirPolicy::Private,
        }),
    }
}

/// [CLIENT.PEER.1] [CLIENT.PEER.2] Checks the socket's directory and, if it exists, the
/// socket file. A missing directory or socket passes: dialling then fails as "no server".
pub fn check_place(target: &Target) -> Result<(), TrustError> {
    let socket = &target.path;
    let dir = socket
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    // The directory is fine here: the socket itself is not as a phux server makes it.
    let refuse_socket = |problem: SocketError| {
        let remedy = if matches!(problem, SocketError::NotASocket(_)) {
            "No server listens there; if that file is yours and not needed, remove it, or \
             pass another --socket, for the client and the server"
                .to_owned()
        } else {
            format!(
                "A phux server makes its socket yours with mode 0600; whatever made {} did \
                 not. If it is yours (a proxy or a program you run), give it mode 0600 \
                 (`chmod 600 {}`); if not, do not use it",
                socket.display(),
                socket.display()
            )
        };
        TrustError::Place {
            socket: socket.clone(),
            problem: describe(&problem),
            remedy,
        }
    };
    let refuse = |problem: SocketError| {
        let remedy = match target.policy {
            DirPolicy::Private => format!(
                "phux clients use {} only if it is a directory of yours with mode 0700. If you made \
                 it, run `chmod 700 {}`; if not, do not use it: set XDG_RUNTIME_DIR to a \
                 private directory or pass --socket in a directory of your own, for the client \
                 and the server",
                dir.display(),
                dir.display()
            ),
            _ => format!(
                "Put the socket in a directory of your own that others cannot write to (or a \
                 sticky one such as /tmp), for the client and the server; check {} with `ls -ld`",
                dir.display()
            ),
        };
        TrustError::Place {
            socket: socket.clone(),
            problem: describe(&problem),
            remedy,
        }
    };
    match socket::check_dir(dir, target.policy) {
        Ok(()) => {}
        Err(SocketError::Io { source, .. }) if source.kind() == io::ErrorKind::NotFound => {
            return Ok(());
        }
        Err(e) => return Err(refuse(e)),
    }
    match socket::check_socket_file(socket) {
        Ok(()) => Ok(()),
        Err(SocketError::Io { source, .. }) if source.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(refuse_socket(e)),
    }
}

/// What is wrong with the place, from the client's side (the server's texts speak of binding).
fn describe(problem: &SocketError) -> String {
    match problem {
        SocketError::WrongOwner { path, owner, uid } => format!(
            "{} is owned by uid {owner}, not by you (uid {uid})",
            path.display()
        ),
        SocketError::TooOpen { path, mode } => format!(
            "{} has mode {mode:04o}, which lets other users in",
            path.display()
        ),
        SocketError::NotADirectory(path) => format!(
            "{} is not a directory (a symbolic link or a file)",
            path.display()
        ),
        SocketError::NotASocket(path) => format!(
            "{} is not a socket (a symbolic link or a file)",
            path.display()
        ),
        other => other.to_string(),
    }
}

/// [CLIENT.PEER.3] The listener's uid must be ours (root is not accepted).
pub fn check_listener(stream: impl AsFd, socket: &Path) -> Result<(), TrustError> {
    let peer = socket::peer_uid(stream).map_err(|source| TrustError::Credentials {
        socket: socket.to_owned(),
        source,
    })?;
    decide_peer(peer, socket::euid(), socket)
}

/// The uid decision on its own: `peer` may serve a client running as `ours`.
pub fn decide_peer(peer: u32, ours: u32, socket: &Path) -> Result<(), TrustError> {
    if socket::peer_allowed(peer, ours) {
        Ok(())
    } else {
        Err(TrustError::Peer {
            socket: socket.to_owned(),
            peer,
            ours,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::net::{UnixListener, UnixStream};

    // [CLIENT.PEER.3] Only our own uid; root is not our server, and we as root accept only
    // root.
    #[test]
    fn only_a_listener_of_our_uid_is_accepted() {
        let s = Path::new("/run/x.sock");
        assert!(decide_peer(1000, 1000, s).is_ok());
        assert!(decide_peer(0, 0, s).is_ok());
        let err = decide_peer(1001, 1000, s).unwrap_err().to_string();
        assert!(
            err.contains("uid 1001") && err.contains("uid 1000"),
            "{err}"
        );
        assert!(err.contains("not your server"), "{err}");
        assert!(decide_peer(0, 1000, s).is_err(), "root is refused");
        assert!(decide_peer(1000, 0, s).is_err());
    }

    // [CLIENT.PEER.3] A real listener of ours passes the SO_PEERCRED check.
    #[test]
    fn our_own_listener_passes() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("s.sock");
        let _listener = UnixListener::bind(&path).expect("bind");
        let stream = UnixStream::connect(&path).expect("connect");
        check_listener(&stream, &path).expect("our uid");
    }

    // [CLIENT.PEER.1] [CLIENT.PEER.2] The directory rules, for real on disk.
    #[test]
    fn directory_rules_follow_the_server() {
        let dir = tempfile::tempdir().expect("tempdir");
        let private = dir.path().join("p");
        fs::create_dir(&private).expect("mkdir");
        fs::set_permissions(&private, fs::Permissions::from_mode(0o700)).expect("chmod");
        let at = |d: &Path, policy| Target {
            path: d.join("s.sock"),
            policy,
        };
        check_place(&at(&private, DirPolicy::Private)).expect("0700 dir of ours");
        // Open to group: refused for the default path, named in the message with a remedy.
        fs::set_permissions(&private, fs::Permissions::from_mode(0o750)).expect("chmod");
        let err = check_place(&at(&private, DirPolicy::Private))
            .unwrap_err()
            .to_string();
        assert!(err.contains("0750") && err.contains("chmod 700"), "{err}");
        // An explicit path tolerates a readable directory, not a writable one unless sticky.
        check_place(&at(&private, DirPolicy::Explicit)).expect("0750 is fine when named");
        fs::set_permissions(&private, fs::Permissions::from_mode(0o777)).expect("chmod");
        assert!(check_place(&at(&private, DirPolicy::Explicit)).is_err());
        fs::set_permissions(&private, fs::Permissions::from_mode(0o1777)).expect("chmod");
        check_place(&at(&private, DirPolicy::Explicit)).expect("sticky");
        // A symlink to a good directory is not a directory.
        fs::set_permissions(&private, fs::Permissions::from_mode(0o700)).expect("chmod");
        let link = dir.path().join("l");
        std::os::unix::fs::symlink(&private, &link).expect("symlink");
        let err = check_place(&at(&link, DirPolicy::Private))
            .unwrap_err()
            .to_string();
        assert!(err.contains("not a directory"), "{err}");
        // Something that is not a socket at the socket path (a symlink to a socket included).
        fs::write(private.join("s.sock"), b"").expect("file");
        let err = check_place(&at(&private, DirPolicy::Private))
            .unwrap_err()
            .to_string();
        assert!(err.contains("is not a socket"), "{err}");
        fs::remove_file(private.join("s.sock")).expect("rm");
        let _real = UnixListener::bind(dir.path().join("real.sock")).expect("bind");
        std::os::unix::fs::symlink(dir.path().join("real.sock"), private.join("s.sock"))
            .expect("symlink");
        assert!(check_place(&at(&private, DirPolicy::Private)).is_err());
        // Root's directories (/) pass the explicit rule, and a missing directory passes (the
        // dial then fails as "no server").
        check_place(&at(Path::new("/"), DirPolicy::Explicit)).expect("root's /");
        check_place(&at(&dir.path().join("missing"), DirPolicy::Private)).expect("missing");
    }

    #[test]
    fn a_relative_socket_is_made_absolute() {
        let t = target(Some(Path::new("rel.sock")), "default").expect("target");
        assert!(t.path.is_absolute());
        assert!(t.path.ends_with("rel.sock"));
        assert_eq!(t.policy, DirPolicy::Explicit);
    }
}
