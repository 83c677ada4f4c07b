//! The WebSocket door (spec/websocket.md): phux over WebSocket for browsers, on the same
//! loop and the same engine as the Unix socket, one binary message per phux frame (as the
//! phux reference's `--listen` does), and the web client's page on the same listener.
//!
//! - [`codec`]: RFC 6455 framing as pure state machines (both directions).
//! - [`stream`]: an upgraded connection as a driver transport (bytes in, bytes out).
//! - [`http`]: the one HTTP request per connection, decided as a pure function.
//! - [`auth`]: the secret and the origin and host checks.
//! - [`site`]: the web client's files, built into the binary.
//! - [`door`]: the listener and the handshakes under way, bounded.

use std::io;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use tracing::warn;

pub mod auth;
pub mod codec;
pub mod door;
pub mod http;
pub mod site;
pub mod stream;

pub use door::Door;
pub use stream::{WsState, WsStateError, WsStream};

/// What `--listen-ws` and its companions ask for.
#[derive(Debug, Clone)]
pub struct WsOptions {
    /// The address to listen on.
    pub addr: SocketAddr,
    /// A non-loopback address was allowed explicitly.
    pub allow_remote: bool,
    /// More origins a page may connect from (a reverse proxy's public origin).
    pub origins: Vec<String>,
    /// Requests without `Origin` (not a browser) may connect, with the secret.
    pub allow_no_origin: bool,
    /// Where the secret is kept (default: beside the socket).
    pub secret_file: Option<PathBuf>,
}

/// Why the WebSocket listener cannot start.
#[derive(Debug, thiserror::Error)]
pub enum WsSetupError {
    /// [WS.LISTEN.2]
    #[error(
        "--listen-ws {0} is not a loopback address: phux over WebSocket is plaintext; put a \
         TLS reverse proxy in front (spec/websocket.md, \"Beyond loopback\") and pass \
         --ws-allow-remote to listen there anyway"
    )]
    NotLoopback(SocketAddr),
    /// The secret file could not be read or made.
    #[error("the WebSocket secret {path}: {source}")]
    Secret { path: PathBuf, source: io::Error },
    /// The address could not be bound.
    #[error("cannot listen for WebSocket clients on {addr}: {source}")]
    Bind { addr: SocketAddr, source: io::Error },
}

impl WsOptions {
    /// Binds the listener and loads (or makes) the secret; `socket` is the server's Unix
    /// socket, beside which the secret lives by default.
    pub fn open(&self, socket: &Path) -> Result<(Door, PathBuf), WsSetupError> {
        // [WS.LISTEN.2]
        if !self.addr.ip().is_loopback() {
            if !self.allow_remote {
                return Err(WsSetupError::NotLoopback(self.addr));
            }
            warn!(
                addr = %self.addr,
                "WebSocket listener on a non-loopback address: plaintext; put a TLS reverse \
                 proxy in front (spec/websocket.md, \"Beyond loopback\")"
            );
        }
        let path = self
            .secret_file
            .clone()
            .unwrap_or_else(|| auth::secret_path(socket));
        let listener =
            mio::net::TcpListener::bind(self.addr).map_err(|source| WsSetupError::Bind {
                addr: self.addr,
                source,
            })?;
        let bound = listener.local_addr().map_err(|source| WsSetupError::Bind {
            addr: self.addr,
            source,
        })?;
        let policy = self.policy(bound, &path)?;
        Ok((Door::new(listener, bound, policy, path.clone()), path))
    }

    /// The listener's checks for a listener bound at `bound` whose secret is kept in
    /// `secret_file` (loaded, or made when missing, with the checks of [WS.AUTH.2]): at start,
    /// and again by the image an upgrade hands the listener to ([WS.UPGRADE.4]).
    pub fn policy(
        &self,
        bound: SocketAddr,
        secret_file: &Path,
    ) -> Result<http::Policy, WsSetupError> {
        let secret =
            auth::Secret::load_or_create(secret_file).map_err(|source| WsSetupError::Secret {
                path: secret_file.to_owned(),
                source,
            })?;
        let origins = auth::Origins::new(bound, &self.origins, self.allow_no_origin);
        Ok(http::Policy { origins, secret })
    }
}
