//! The host's half of the upgrade image ([`HostImage`]): the listener, connections,
//! terminals and launch settings that cross the exec, the same borrowed from the live host to
//! be written ([`HostImageRef`]), the check of an image against the engine's state, and the
//! layouts of versions 1 and 2, still read.

use std::ffi::OsString;
use std::net::SocketAddr;
use std::os::fd::RawFd;
use std::path::{Path, PathBuf};

use phux_core::server::ServerConfig;
use phux_core::upgrade::{ImageError, StateSummary};
use serde::{Deserialize, Serialize, Serializer};

use super::held::byte_strings;
pub use super::held::{Held, Length};
use crate::ws::WsState;

/// The host's half of the image: everything the driver holds that must cross the exec. The
/// engine's half is `phux_core::server::EngineState`; both travel in one envelope
/// (`phux_core::upgrade`). Descriptors are numbers: the descriptors themselves cross the
/// exec because `FD_CLOEXEC` is cleared on each. This is state version 3's layout, which
/// version 4 keeps (it changed the engine's half only; [`Self::decode`] reads versions 1 and 2
/// too). `B` holds the byte strings it carries: the bytes for an adoption, only their lengths
/// for the trial ([`Held`]).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(bound(deserialize = "B: Held"))]
pub struct HostImage<B = Vec<u8>> {
    /// The clock's epoch, an absolute `CLOCK_MONOTONIC` reading in nanoseconds: the engine's
    /// instants (deadlines, lease expiries) continue across the exec.
    pub clock_epoch_nanos: u64,
    /// The binary the new image runs: its own binary for the next upgrade.
    pub binary: PathBuf,
    /// The binary the previous image ran, for a fallback.
    pub previous_binary: PathBuf,
    /// What rebuilds the engine's configuration and the log.
    pub launch: Launch,
    /// The listening socket, when serving one.
    pub listener: Option<ListenerImage>,
    /// `--stdio`: stdin's and stdout's file status flags as the first image found them.
    pub stdio_flags: Option<(u32, u32)>,
    /// The next connection id the host hands out.
    pub next_conn: u64,
    /// The heads of output frames several connections are sent ([`Piece::Shared`]), each
    /// once: they stay shared in the new image.
    #[serde(deserialize_with = "byte_strings")]
    pub shared: Vec<B>,
    /// Every connection the host holds.
    pub conns: Vec<ConnImage<B>>,
    /// Every terminal the host holds.
    pub terminals: Vec<TermImage>,
    /// The new binary, open (it crossed the exec, for a script's interpreter to read): closed
    /// once the state is adopted.
    pub exec_fd: Option<RawFd>,
    /// The WebSocket listener, when serving one (`--listen-ws`, [WS.UPGRADE.2]). Added in
    /// version 3.
    pub ws: Option<WsListenerImage>,
}

/// The WebSocket listener ([WS.UPGRADE.2]). Its handshakes under way do not cross
/// ([WS.UPGRADE.3]); its origins come from the command line, as at start.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WsListenerImage {
    /// Its descriptor.
    pub fd: RawFd,
    /// The address it is bound to: the origins and hosts it answers for are made of it.
    pub addr: SocketAddr,
    /// Where its secret is kept: read again, with its checks, by the image that takes the
    /// listener over ([WS.UPGRADE.4]).
    pub secret_file: PathBuf,
}

/// What the server was started with that is not protocol state: the engine's configuration
/// that the command line chose, and where the log goes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Launch {
    /// The 16-byte server id, unchanged across upgrades ([SERVER.ID.1]).
    pub server_id: Vec<u8>,
    /// The default terminal command.
    pub default_command: Vec<String>,
    /// `--max-connections`.
    pub max_connections: usize,
    /// The terminal cap.
    pub max_terminals: usize,
    /// The log filter directive.
    pub log_directive: String,
    /// `--log-file`.
    pub log_file: Option<PathBuf>,
    /// The command-line arguments the first image was started with, after the program name:
    /// every image shows them after its own (`ps`, `pgrep -f` find the server as started).
    pub args: Vec<OsString>,
}

impl Launch {
    /// The engine's configuration from what the command line chose (the same on every image).
    pub(crate) fn engine_config(&self) -> ServerConfig {
        let mut engine_config = ServerConfig::new(self.server_id.clone());
        engine_config
            .default_command
            .clone_from(&self.default_command);
        engine_config.max_connections = self.max_connections;
        engine_config.max_terminals = self.max_terminals;
        (engine_config.remain_on_exit, engine_config.remain_for) =
            crate::config::Config::remains_of(&self.args);
        engine_config
    }
}

/// The listening socket.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListenerImage {
    /// Its descriptor.
    pub fd: RawFd,
    /// Its path, removed at shutdown.
    pub path: PathBuf,
    /// The socket file's device and inode, so that only our own file is removed.
    pub dev_ino: (u64, u64),
}

/// One connection.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(bound(deserialize = "B: Held"))]
pub struct ConnImage<B = Vec<u8>> {
    /// The engine's id for it.
    pub id: u64,
    /// What carries it.
    pub transport: ConnTransport,
    /// What the engine queued and was not written yet, in order: written first after the exec.
    pub pending: Vec<Piece<B>>,
    /// Reads ended (EOF or error).
    pub read_done: bool,
    /// The engine was told it disconnected.
    pub reported: bool,
    /// Closing: dropped unflushed at this instant (micros on the clock's epoch).
    pub closing: Option<u64>,
}

/// A piece of what a connection is still to be sent.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(bound(deserialize = "B: Held"))]
pub enum Piece<B = Vec<u8>> {
    /// Bytes for this connection alone.
    Bytes(#[serde(deserialize_with = "Held::read")] B),
    /// A whole frame head of [`HostImage::shared`], by its index there.
    Shared(u32),
}

/// What carries a connection across the exec.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum ConnTransport {
    /// A peer on the Unix socket. `may_hand_off` while its first read, which may be a
    /// bridge's offer ([SERVER.BRIDGE.9]), has not happened yet.
    Unix {
        /// The socket.
        fd: RawFd,
        /// The first read is still to come.
        may_hand_off: bool,
    },
    /// The `--stdio` client: stdin and stdout.
    Stdio,
    /// What a bridge handed over ([SERVER.BRIDGE.9]): read from `input`, written to
    /// `output`, the bridge's socket watched; the flags are the ones to put back
    /// ([SERVER.BRIDGE.12]).
    Handoff {
        /// The bridge's stdin.
        input: RawFd,
        /// The bridge's stdout.
        output: RawFd,
        /// The bridge's socket.
        control: RawFd,
        /// `input`'s file status flags when it was handed over.
        input_flags: u32,
        /// `output`'s file status flags when it was handed over.
        output_flags: u32,
    },
    /// A WebSocket peer past its handshake ([WS.UPGRADE.2]): its TCP socket and the state of
    /// the framing in both directions. Added in version 3.
    Ws {
        /// The socket.
        fd: RawFd,
        /// Everything of the connection but the socket (boxed: it is far larger than the
        /// other transports).
        state: Box<WsState>,
    },
}

impl ConnTransport {
    /// Its descriptors, in the order the image lists them.
    pub fn fds(&self) -> Vec<RawFd> {
        match *self {
            Self::Unix { fd, .. } | Self::Ws { fd, .. } => vec![fd],
            Self::Stdio => Vec::new(),
            Self::Handoff {
                input,
                output,
                control,
                ..
            } => vec![input, output, control],
        }
    }
}

/// One terminal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TermImage {
    /// The engine's id for it (`local:N`).
    pub id: u32,
    /// The master's descriptor, while open.
    pub master: Option<RawFd>,
    /// The child's pidfd.
    pub pidfd: RawFd,
    /// The child's pid.
    pub pid: i32,
    /// The child's exit, once reaped: `(is_signal, number)`.
    pub exit: Option<(bool, i32)>,
    /// The master reported end of file.
    pub eof: bool,
    /// Being killed (SIGHUP sent).
    pub killing: bool,
    /// The exit drain's deadline, after a reaped exit.
    pub exit_drain: Option<u64>,
    /// The SIGKILL deadline of a kill.
    pub kill_grace: Option<u64>,
}

impl<B: Held> HostImage<B> {
    /// The host's half of an image of state version `version`.
    pub fn decode(version: u32, bytes: &[u8]) -> Result<Self, ImageError> {
        match version {
            1 => phux_core::upgrade::decode_host::<v1::HostImage<B>>(bytes).map(Into::into),
            2 => phux_core::upgrade::decode_host::<v2::HostImage<B>>(bytes).map(Into::into),
            _ => phux_core::upgrade::decode_host(bytes),
        }
    }
}

impl<B> HostImage<B> {
    /// Every descriptor the image names: the listener first, then the WebSocket listener, the
    /// connections' and the terminals'.
    pub fn fds(&self) -> Vec<RawFd> {
        let mut fds: Vec<RawFd> = self.listener.iter().map(|l| l.fd).collect();
        fds.extend(self.ws.iter().map(|w| w.fd));
        fds.extend(self.conns.iter().flat_map(|c| c.transport.fds()));
        for t in &self.terminals {
            fds.extend(t.master);
            fds.push(t.pidfd);
        }
        fds
    }

    /// Checks what the image says against itself and the engine's state, as an adoption relies
    /// on it ([SERVER.UPGRADE.EXEC.10]): every descriptor named once, none a standard stream
    /// or one of `reserved` (the image's own, the previous binary's); every connection and
    /// terminal once, each known to the engine (a terminal with the same child), and every
    /// connection the engine still serves held here; every shared frame named in range; every
    /// WebSocket connection's state one a live connection can be in.
    pub fn check(&self, state: &StateSummary, reserved: &[RawFd]) -> Result<(), String> {
        let mut seen = std::collections::BTreeSet::new();
        for fd in self.fds().into_iter().chain(self.exec_fd) {
            if fd <= 2 || reserved.contains(&fd) || !seen.insert(fd) {
                return Err(format!(
                    "descriptor {fd} is named twice, or is a standard stream or the image's"
                ));
            }
        }
        let engine_conns: std::collections::BTreeSet<u64> =
            state.connections().map(|c| c.0).collect();
        let mut conns = std::collections::BTreeSet::new();
        for c in &self.conns {
            if !conns.insert(c.id) {
                return Err(format!("connection {} appears twice", c.id));
            }
            if !c.reported && !engine_conns.contains(&c.id) {
                return Err(format!("connection {} is unknown to the engine", c.id));
            }
            if let Some(Piece::Shared(i)) = c
                .pending
                .iter()
                .find(|p| matches!(p, Piece::Shared(i) if *i as usize >= self.shared.len()))
            {
                return Err(format!("connection {} names shared frame {i}", c.id));
            }
            if c.id >= self.next_conn {
                return Err(format!("connection {} is past the next id", c.id));
            }
            // [WS.UPGRADE.2] Its buffers within the bounds a live connection keeps.
            if let ConnTransport::Ws { state, .. } = &c.transport {
                state
                    .check()
                    .map_err(|e| format!("WebSocket connection {}: {e}", c.id))?;
            }
        }
        if let Some(missing) = engine_conns.difference(&conns).next() {
            return Err(format!(
                "the engine's connection {missing} has no transport"
            ));
        }
        let engine_terms: std::collections::BTreeMap<u32, Option<u32>> =
            state.terminals().map(|(t, pid)| (t.0, pid)).collect();
        let mut terms = std::collections::BTreeSet::new();
        for t in &self.terminals {
            if !terms.insert(t.id) {
                return Err(format!("terminal {} appears twice", t.id));
            }
            let pid = u32::try_from(t.pid).ok().filter(|&p| p > 0);
            match (pid, engine_terms.get(&t.id)) {
                (None, _) => return Err(format!("terminal {}: invalid pid {}", t.id, t.pid)),
                (Some(_), None) => {
                    return Err(format!("terminal {} is unknown to the engine", t.id));
                }
                (Some(p), Some(Some(q))) if p != *q => {
                    return Err(format!(
                        "terminal {}: the engine knows pid {q}, not {p}",
                        t.id
                    ));
                }
                _ => {}
            }
        }
        Ok(())
    }
}

/// Version 1's layout of the host's half, read so that a server of the release before can
/// upgrade to this one: each connection's unwritten bytes in one piece (shared frames came
/// over as private copies), and no binary descriptor crossed.
mod v1 {
    use super::{ConnTransport, Held, Launch, ListenerImage, PathBuf, Piece, TermImage};

    #[derive(serde::Deserialize)]
    #[serde(bound(deserialize = "B: Held"))]
    pub(super) struct HostImage<B> {
        clock_epoch_nanos: u64,
        binary: PathBuf,
        previous_binary: PathBuf,
        launch: Launch,
        listener: Option<ListenerImage>,
        stdio_flags: Option<(u32, u32)>,
        next_conn: u64,
        conns: Vec<ConnImage<B>>,
        terminals: Vec<TermImage>,
    }

    #[derive(serde::Deserialize)]
    #[serde(bound(deserialize = "B: Held"))]
    struct ConnImage<B> {
        id: u64,
        transport: ConnTransport,
        #[serde(deserialize_with = "Held::read")]
        pending: B,
        read_done: bool,
        reported: bool,
        closing: Option<u64>,
    }

    impl<B> From<HostImage<B>> for super::HostImage<B> {
        fn from(v1: HostImage<B>) -> Self {
            Self {
                clock_epoch_nanos: v1.clock_epoch_nanos,
                binary: v1.binary,
                previous_binary: v1.previous_binary,
                launch: v1.launch,
                listener: v1.listener,
                stdio_flags: v1.stdio_flags,
                next_conn: v1.next_conn,
                shared: Vec::new(),
                conns: v1
                    .conns
                    .into_iter()
                    .map(|c| super::ConnImage {
                        id: c.id,
                        transport: c.transport,
                        pending: vec![Piece::Bytes(c.pending)],
                        read_done: c.read_done,
                        reported: c.reported,
                        closing: c.closing,
                    })
                    .collect(),
                terminals: v1.terminals,
                exec_fd: None,
                ws: None,
            }
        }
    }
}

/// Version 2's layout of the host's half: version 3's without the WebSocket listener (a
/// version 2 server refused to upgrade with one, so none of its connections is a WebSocket).
mod v2 {
    use super::{ConnImage, Held, Launch, ListenerImage, PathBuf, RawFd, TermImage};

    #[derive(serde::Deserialize)]
    #[serde(bound(deserialize = "B: Held"))]
    pub(super) struct HostImage<B> {
        clock_epoch_nanos: u64,
        binary: PathBuf,
        previous_binary: PathBuf,
        launch: Launch,
        listener: Option<ListenerImage>,
        stdio_flags: Option<(u32, u32)>,
        next_conn: u64,
        #[serde(deserialize_with = "super::byte_strings")]
        shared: Vec<B>,
        conns: Vec<ConnImage<B>>,
        terminals: Vec<TermImage>,
        exec_fd: Option<RawFd>,
    }

    impl<B> From<HostImage<B>> for super::HostImage<B> {
        fn from(v2: HostImage<B>) -> Self {
            Self {
                clock_epoch_nanos: v2.clock_epoch_nanos,
                binary: v2.binary,
                previous_binary: v2.previous_binary,
                launch: v2.launch,
                listener: v2.listener,
                stdio_flags: v2.stdio_flags,
                next_conn: v2.next_conn,
                shared: v2.shared,
                conns: v2.conns,
                terminals: v2.terminals,
                exec_fd: v2.exec_fd,
                ws: None,
            }
        }
    }
}

/// [`HostImage`] borrowed from the live host, serialized as it is: the queued bytes and the
/// shared frame heads go from the connections' queues into the image with no copy between.
#[derive(Debug, Serialize)]
pub(crate) struct HostImageRef<'a> {
    pub(crate) clock_epoch_nanos: u64,
    pub(crate) binary: &'a Path,
    pub(crate) previous_binary: &'a Path,
    pub(crate) launch: &'a Launch,
    pub(crate) listener: Option<ListenerImage>,
    pub(crate) stdio_flags: Option<(u32, u32)>,
    pub(crate) next_conn: u64,
    pub(crate) shared: Vec<Bytes<'a>>,
    pub(crate) conns: Vec<ConnImageRef<'a>>,
    pub(crate) terminals: Vec<TermImage>,
    pub(crate) exec_fd: Option<RawFd>,
    pub(crate) ws: Option<WsListenerImage>,
}

/// [`ConnImage`], borrowed.
#[derive(Debug, Serialize)]
pub(crate) struct ConnImageRef<'a> {
    pub(crate) id: u64,
    pub(crate) transport: ConnTransport,
    pub(crate) pending: Vec<PieceRef<'a>>,
    pub(crate) read_done: bool,
    pub(crate) reported: bool,
    pub(crate) closing: Option<u64>,
}

/// [`Piece`], borrowed: the same variants in the same order.
#[derive(Debug, Serialize)]
pub(crate) enum PieceRef<'a> {
    Bytes(Bytes<'a>),
    Shared(u32),
}

/// A byte string, serialized as one (as `phux_core::upgrade::bytes` reads it).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Bytes<'a>(pub(crate) &'a [u8]);

impl Serialize for Bytes<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> (HostImage, Vec<Vec<u8>>) {
        let heads = vec![b"head one".to_vec(), b"head two".to_vec()];
        let image = HostImage {
            clock_epoch_nanos: 42,
            binary: PathBuf::from("/new"),
            previous_binary: PathBuf::from("/old"),
            launch: Launch {
                server_id: vec![7; 16],
                default_command: vec!["sh".to_owned()],
                max_connections: 5,
                max_terminals: 6,
                log_directive: "info".to_owned(),
                log_file: None,
                args: vec!["--socket".into(), "/s".into()],
            },
            listener: Some(ListenerImage {
                fd: 3,
                path: PathBuf::from("/s"),
                dev_ino: (1, 2),
            }),
            stdio_flags: None,
            next_conn: 3,
            shared: heads.clone(),
            conns: vec![ConnImage {
                id: 2,
                transport: ConnTransport::Unix {
                    fd: 4,
                    may_hand_off: false,
                },
                pending: vec![
                    Piece::Bytes(b"own".to_vec()),
                    Piece::Shared(1),
                    Piece::Shared(0),
                ],
                read_done: false,
                reported: false,
                closing: Some(9),
            }],
            terminals: vec![TermImage {
                id: 1,
                master: Some(5),
                pidfd: 6,
                pid: 1234,
                exit: None,
                eof: false,
                killing: false,
                exit_drain: None,
                kill_grace: Some(11),
            }],
            exec_fd: Some(7),
            ws: Some(WsListenerImage {
                fd: 8,
                addr: SocketAddr::from(([127, 0, 0, 1], 8787)),
                secret_file: PathBuf::from("/s.ws-secret"),
            }),
        };
        (image, heads)
    }

    #[test]
    fn the_borrowed_image_reads_back_as_the_image() {
        // [SERVER.UPGRADE.STATE.1] What the host writes from its queues is what the next image
        // reads: shared heads once, each named where it is queued.
        let (image, heads) = sample();
        let borrowed = HostImageRef {
            clock_epoch_nanos: image.clock_epoch_nanos,
            binary: &image.binary,
            previous_binary: &image.previous_binary,
            launch: &image.launch,
            listener: image.listener.clone(),
            stdio_flags: image.stdio_flags,
            next_conn: image.next_conn,
            shared: heads.iter().map(|h| Bytes(h)).collect(),
            conns: vec![ConnImageRef {
                id: 2,
                transport: image.conns[0].transport.clone(),
                pending: vec![
                    PieceRef::Bytes(Bytes(b"own")),
                    PieceRef::Shared(1),
                    PieceRef::Shared(0),
                ],
                read_done: false,
                reported: false,
                closing: Some(9),
            }],
            terminals: image.terminals.clone(),
            exec_fd: image.exec_fd,
            ws: image.ws.clone(),
        };
        let bytes = postcard::to_stdvec(&borrowed).expect("serialize");
        assert_eq!(HostImage::decode(3, &bytes).expect("decode"), image);
        the_trial_reads_the_same_lengths(3, &bytes);
    }

    /// [SERVER.UPGRADE.EXEC.13] The trial child's reading of `bytes` (byte strings as lengths)
    /// is the adoption's reading with each byte string replaced by its length.
    fn the_trial_reads_the_same_lengths(version: u32, bytes: &[u8]) {
        let whole: HostImage = HostImage::decode(version, bytes).expect("decode");
        let lengths = HostImage::<Length>::decode(version, bytes).expect("decode lengths");
        let expected = HostImage {
            shared: whole.shared.iter().map(|h| Length(h.len())).collect(),
            conns: whole
                .conns
                .iter()
                .map(|c| ConnImage {
                    id: c.id,
                    transport: c.transport.clone(),
                    pending: c
                        .pending
                        .iter()
                        .map(|p| match p {
                            Piece::Bytes(b) => Piece::Bytes(Length(b.len())),
                            Piece::Shared(i) => Piece::Shared(*i),
                        })
                        .collect(),
                    read_done: c.read_done,
                    reported: c.reported,
                    closing: c.closing,
                })
                .collect(),
            clock_epoch_nanos: whole.clock_epoch_nanos,
            binary: whole.binary,
            previous_binary: whole.previous_binary,
            launch: whole.launch,
            listener: whole.listener,
            stdio_flags: whole.stdio_flags,
            next_conn: whole.next_conn,
            terminals: whole.terminals,
            exec_fd: whole.exec_fd,
            ws: whole.ws,
        };
        assert_eq!(lengths, expected);
        // A byte string cut short is refused by both readings.
        for cut in [bytes.len() - 1, bytes.len() / 2] {
            assert_eq!(
                HostImage::<Vec<u8>>::decode(version, &bytes[..cut]).is_err(),
                HostImage::<Length>::decode(version, &bytes[..cut]).is_err(),
            );
        }
    }

    #[test]
    fn a_websocket_connection_reads_back_with_its_state() {
        // [WS.UPGRADE.2]
        let (mut image, _) = sample();
        image.conns[0].transport = ConnTransport::Ws {
            fd: 4,
            state: Box::default(),
        };
        let bytes = postcard::to_stdvec(&image_ref(&image)).expect("serialize");
        let read = HostImage::decode(3, &bytes).expect("decode");
        assert_eq!(read, image);
        assert_eq!(read.fds(), [3, 8, 4, 5, 6]);
    }

    #[test]
    fn a_version_2_host_half_reads_without_a_websocket_listener() {
        // [SERVER.UPGRADE.STATE.3] What a server of the release before wrote: version 3's
        // layout but the last field.
        let (image, _) = sample();
        let v2 = (
            image.clock_epoch_nanos,
            &image.binary,
            &image.previous_binary,
            &image.launch,
            &image.listener,
            image.stdio_flags,
            image.next_conn,
            image.shared.iter().map(|h| Bytes(h)).collect::<Vec<_>>(),
            image_ref(&image).conns,
            &image.terminals,
            image.exec_fd,
        );
        let bytes = postcard::to_stdvec(&v2).expect("serialize");
        the_trial_reads_the_same_lengths(2, &bytes);
        let read = HostImage::decode(2, &bytes).expect("decode");
        assert_eq!(read.ws, None);
        assert_eq!(HostImage { ws: None, ..image }, read);
    }

    /// The borrowed form of `image`, as the host writes it.
    fn image_ref(image: &HostImage) -> HostImageRef<'_> {
        HostImageRef {
            clock_epoch_nanos: image.clock_epoch_nanos,
            binary: &image.binary,
            previous_binary: &image.previous_binary,
            launch: &image.launch,
            listener: image.listener.clone(),
            stdio_flags: image.stdio_flags,
            next_conn: image.next_conn,
            shared: image.shared.iter().map(|h| Bytes(h)).collect(),
            conns: image
                .conns
                .iter()
                .map(|c| ConnImageRef {
                    id: c.id,
                    transport: c.transport.clone(),
                    pending: c
                        .pending
                        .iter()
                        .map(|p| match p {
                            Piece::Bytes(b) => PieceRef::Bytes(Bytes(b)),
                            Piece::Shared(i) => PieceRef::Shared(*i),
                        })
                        .collect(),
                    read_done: c.read_done,
                    reported: c.reported,
                    closing: c.closing,
                })
                .collect(),
            terminals: image.terminals.clone(),
            exec_fd: image.exec_fd,
            ws: image.ws.clone(),
        }
    }

    #[test]
    fn a_version_1_host_half_reads_as_one_piece_per_connection() {
        // [SERVER.UPGRADE.STATE.3] What a server of the release before wrote.
        #[derive(Serialize)]
        struct V1Conn {
            id: u64,
            transport: ConnTransport,
            pending: Vec<u8>,
            read_done: bool,
            reported: bool,
            closing: Option<u64>,
        }
        let (image, _) = sample();
        let v1 = (
            image.clock_epoch_nanos,
            &image.binary,
            &image.previous_binary,
            &image.launch,
            &image.listener,
            image.stdio_flags,
            image.next_conn,
            vec![V1Conn {
                id: 2,
                transport: image.conns[0].transport.clone(),
                pending: b"everything".to_vec(),
                read_done: false,
                reported: true,
                closing: None,
            }],
            &image.terminals,
        );
        let bytes = postcard::to_stdvec(&v1).expect("serialize");
        the_trial_reads_the_same_lengths(1, &bytes);
        let read = HostImage::decode(1, &bytes).expect("decode");
        assert_eq!(
            read.conns[0].pending,
            [Piece::Bytes(b"everything".to_vec())]
        );
        assert!(read.shared.is_empty() && read.exec_fd.is_none());
        assert_eq!(read.terminals, image.terminals);
    }

    #[test]
    fn an_image_that_does_not_match_its_engine_or_itself_is_refused() {
        // [SERVER.UPGRADE.EXEC.10]
        use phux_core::server::{ConnId, PeerInfo, ServerConfig, ServerEngine, ServerEvent};
        let mut engine = ServerEngine::new(ServerConfig::new(vec![7; 16]));
        let now = phux_core::time::Instant::from_micros(0);
        engine.handle(
            now,
            ServerEvent::Connected {
                conn: ConnId(2),
                peer: PeerInfo::local(),
            },
        );
        while engine.poll_action().is_some() {}
        let state = engine.export_state().expect("quiet").summary();
        let (image, _) = sample();
        let mut no_terminal = image.clone();
        no_terminal.terminals.clear();
        no_terminal.check(&state, &[]).expect("consistent");
        let refused = |edit: &dyn Fn(&mut HostImage), reserved: &[RawFd], why: &str| {
            let mut bad = no_terminal.clone();
            edit(&mut bad);
            let text = bad.check(&state, reserved).expect_err(why);
            assert!(text.contains(why), "{text}");
        };
        refused(&|_| {}, &[4], "descriptor 4");
        refused(&|i| i.exec_fd = Some(3), &[], "descriptor 3");
        refused(
            &|i| i.conns[0].pending.push(Piece::Shared(2)),
            &[],
            "shared frame 2",
        );
        refused(&|i| i.conns[0].id = 1, &[], "unknown to the engine");
        refused(&|i| i.conns.clear(), &[], "has no transport");
        // The engine knows no terminal: one in the image is not its own.
        refused(
            &|i| i.terminals = image.terminals.clone(),
            &[],
            "terminal 1",
        );
    }
}
