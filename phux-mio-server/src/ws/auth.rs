//! Who may open a WebSocket: the secret a browser presents, and the origins and hosts the
//! listener answers for (spec/websocket.md, WS.AUTH and WS.ORIGIN).
//!
//! A loopback TCP port is open to every local user and to every page the user's browser
//! loads (cross-site WebSocket hijacking: a browser sends any page's WebSocket to any
//! address, cookies included, and tells the server only the page's `Origin`). So two checks,
//! both required: the page's origin must be exactly one of ours, and the client must present
//! a secret only the server's owner can read (a file 0600 in the socket's private directory).

use std::fs::{self, OpenOptions};
use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use phux_proto::hex::to_hex as hex;
use sha2::{Digest, Sha256};

/// The subprotocol a client offers and the server selects: phux frames, one per binary message.
pub const PROTOCOL: &str = "phux";

/// The prefix of the subprotocol value that carries the secret (`phux-secret.<hex>`): the one
/// header a browser's `new WebSocket(url, protocols)` lets a page set.
pub const SECRET_PREFIX: &str = "phux-secret.";

/// The secret's bytes (hex-encoded on disk and on the wire).
const SECRET_LEN: usize = 32;

/// The listener's secret, read from or created in its file.
#[derive(Clone)]
pub struct Secret {
    hex: String,
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // [WS.AUTH.4] Never in logs.
        f.write_str("Secret(..)")
    }
}

impl Secret {
    /// The secret in `path`, created (owner-only, 0600, from the OS RNG) when missing. An
    /// existing file must be a regular file of ours, readable by nobody else.
    pub fn load_or_create(path: &Path) -> io::Result<Self> {
        match OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path)
        {
            Ok(mut file) => {
                let mut raw = [0u8; SECRET_LEN];
                crate::rand::fill_random(&mut raw)?;
                let hex = hex(&raw);
                file.write_all(hex.as_bytes())?;
                file.write_all(b"\n")?;
                file.sync_all()?;
                Ok(Self { hex })
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Self::load(path),
            Err(e) => Err(e),
        }
    }

    fn load(path: &Path) -> io::Result<Self> {
        let meta = fs::symlink_metadata(path)?;
        // [WS.AUTH.2]
        if !meta.file_type().is_file() || meta.permissions().mode() & 0o077 != 0 {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!(
                    "{}: the WebSocket secret must be a regular file readable by its owner only \
                     (mode 0600)",
                    path.display()
                ),
            ));
        }
        if std::os::unix::fs::MetadataExt::uid(&meta) != rustix::process::geteuid().as_raw() {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!("{}: the WebSocket secret is not ours", path.display()),
            ));
        }
        let mut text = String::new();
        fs::File::open(path)?
            .take(4 * SECRET_LEN as u64)
            .read_to_string(&mut text)?;
        let hex = text.trim().to_owned();
        if hex.len() != 2 * SECRET_LEN || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{}: not a WebSocket secret (64 hex digits)", path.display()),
            ));
        }
        Ok(Self {
            hex: hex.to_ascii_lowercase(),
        })
    }

    /// The secret as a client presents it (hex).
    pub fn hex(&self) -> &str {
        &self.hex
    }

    /// Whether `presented` is the secret, in time that does not depend on where they differ
    /// ([WS.AUTH.3]): both are hashed to 32 bytes first, so not even the length leaks.
    pub fn matches(&self, presented: &[u8]) -> bool {
        let a = Sha256::digest(self.hex.as_bytes());
        let b = Sha256::digest(presented);
        let diff = a
            .iter()
            .zip(b.iter())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y));
        std::hint::black_box(diff) == 0
    }
}

/// Where the secret of the server on `socket` lives: beside the socket, in its private
/// directory (0700, checked at bind).
pub fn secret_path(socket: &Path) -> PathBuf {
    let mut name = socket.file_name().unwrap_or_default().to_os_string();
    name.push(".ws-secret");
    socket.with_file_name(name)
}

/// The origins and hosts the listener answers for.
#[derive(Debug, Clone)]
pub struct Origins {
    /// Exact serialized origins (`scheme://host[:port]`) a page may connect from.
    pages: Vec<String>,
    /// Exact `Host` header values a request may name (DNS rebinding: a hostile name that
    /// resolves to us is refused by name).
    hosts: Vec<String>,
    /// Whether a request without `Origin` (not a browser) may connect (it still needs the
    /// secret).
    allow_no_origin: bool,
}

impl Origins {
    /// Our own origins for a listener on `addr` (loopback names when it is loopback), plus
    /// `extra` (a reverse proxy's public origin, say `https://term.example`).
    pub fn new(addr: SocketAddr, extra: &[String], allow_no_origin: bool) -> Self {
        let port = addr.port();
        let mut authorities = Vec::new();
        if addr.ip().is_loopback() {
            authorities.push(format!("127.0.0.1:{port}"));
            authorities.push(format!("localhost:{port}"));
            authorities.push(format!("[::1]:{port}"));
        } else {
            authorities.push(addr.to_string());
        }
        let mut origins: Vec<String> = authorities.iter().map(|a| format!("http://{a}")).collect();
        let mut hosts = authorities;
        for origin in extra {
            let origin = origin.trim_end_matches('/').to_owned();
            if let Some((_, authority)) = origin.split_once("://") {
                hosts.push(authority.to_owned());
            }
            origins.push(origin);
        }
        Self {
            pages: origins,
            hosts,
            allow_no_origin,
        }
    }

    /// [WS.ORIGIN.1] Exactly one of ours, byte for byte: never a prefix, suffix or substring
    /// (`http://127.0.0.1:8787.evil.example` is not `http://127.0.0.1:8787`).
    pub fn origin_ok(&self, origin: Option<&[u8]>) -> bool {
        match origin {
            // [WS.ORIGIN.2]
            None => self.allow_no_origin,
            Some(o) => self.pages.iter().any(|ours| ours.as_bytes() == o),
        }
    }

    /// [WS.ORIGIN.3] The `Host` the request names is one of ours.
    pub fn host_ok(&self, host: Option<&[u8]>) -> bool {
        host.is_some_and(|h| self.hosts.iter().any(|ours| ours.as_bytes() == h))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_match_exactly_and_nothing_else() {
        let o = Origins::new("127.0.0.1:8787".parse().expect("addr"), &[], false);
        assert!(o.origin_ok(Some(b"http://127.0.0.1:8787")));
        assert!(o.origin_ok(Some(b"http://localhost:8787")));
        for bad in [
            &b"http://127.0.0.1:8787.evil.example"[..],
            b"http://127.0.0.1:87870",
            b"http://127.0.0.1:878",
            b"https://127.0.0.1:8787",
            b"http://evil.example",
            b"null",
            b"http://127.0.0.1:8787/",
            b"HTTP://127.0.0.1:8787",
            b"",
        ] {
            assert!(!o.origin_ok(Some(bad)), "{}", String::from_utf8_lossy(bad));
        }
        assert!(!o.origin_ok(None));
        assert!(Origins::new("127.0.0.1:1".parse().expect("addr"), &[], true).origin_ok(None));
        assert!(o.host_ok(Some(b"localhost:8787")));
        assert!(!o.host_ok(Some(b"evil.example:8787")));
        assert!(!o.host_ok(None));
        let proxied = Origins::new(
            "127.0.0.1:8787".parse().expect("addr"),
            &["https://term.example/".to_owned()],
            false,
        );
        assert!(proxied.origin_ok(Some(b"https://term.example")));
        assert!(proxied.host_ok(Some(b"term.example")));
    }

    #[test]
    fn the_secret_file_is_owner_only_and_stable() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("s.sock.ws-secret");
        let a = Secret::load_or_create(&path).expect("create");
        let mode = fs::metadata(&path).expect("meta").permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let b = Secret::load_or_create(&path).expect("load");
        assert_eq!(a.hex(), b.hex());
        assert_eq!(a.hex().len(), 64);
        assert!(a.matches(a.hex().as_bytes()));
        assert!(!a.matches(b""));
        assert!(!a.matches(&a.hex().as_bytes()[..63]));
        assert!(!format!("{a:?}").contains(a.hex()));
        fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).expect("chmod");
        assert!(Secret::load_or_create(&path).is_err());
    }
}
