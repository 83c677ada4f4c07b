//! `phux-conformance record`: a proxy between a client and a live server that writes what
//! passed through as a transcript draft.
//!
//! The client connects to the recorder's listen socket; the recorder connects to the server
//! and relays bytes both ways unchanged. [`Draft`] decodes each direction into frames and
//! writes `cN > FRAME` / `cN < FRAME` lines in the notation. Values the server chooses (terminal,
//! stream and bootstrap ids, the server id, client ids, output sequence numbers) become
//! captures: `$t1` where the server first names a terminal, and `$t1` again wherever either
//! side names it later, so the draft replays against a server that picks other ids. Nonces,
//! request ids and operation ids are the client's own and stay as they are.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use phux_core::framing::FrameDecoder;
use phux_proto::notation::Value;

/// Which way bytes went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// From the client to the server (`>`).
    ToServer,
    /// From the server to the client (`<`).
    ToClient,
}

/// The capture name prefix for a field the server fills with a value of its choosing.
fn capture_kind(field: &str) -> Option<&'static str> {
    Some(match field {
        "terminal" | "owner_terminal" => "t",
        "stream" => "s",
        "bootstrap" => "b",
        "server_id" => "sid",
        "actor" | "input_holder" => "c",
        "seq" | "base_seq" | "last_valid_seq" => "q",
        _ => return None,
    })
}

/// A transcript draft being recorded: per connection a decoder each way, and the captures.
#[derive(Debug, Default)]
pub struct Draft {
    conns: BTreeMap<usize, [FrameDecoder; 2]>,
    /// (kind, value as notation) → capture name.
    captures: BTreeMap<(&'static str, String), String>,
    counters: BTreeMap<&'static str, usize>,
    lines: Vec<String>,
}

impl Draft {
    /// An empty draft.
    pub fn new() -> Self {
        Self::default()
    }

    /// Bytes that went one way on connection `conn` (numbered from 1: `c1`, `c2`, …).
    pub fn push(&mut self, conn: usize, direction: Direction, bytes: &[u8]) {
        let decoders = self
            .conns
            .entry(conn)
            .or_insert_with(|| [FrameDecoder::new(), FrameDecoder::new()]);
        let decoder = &mut decoders[usize::from(direction == Direction::ToClient)];
        decoder.push(bytes);
        let mut frames = Vec::new();
        loop {
            match decoder.poll_frame() {
                Ok(Some(frame)) => frames.push(Ok(frame.to_value())),
                Ok(None) => break,
                Err(e) => {
                    let fatal = e.is_framing();
                    frames.push(Err(e.to_string()));
                    if fatal {
                        break;
                    }
                }
            }
        }
        for frame in frames {
            let arrow = if direction == Direction::ToClient {
                '<'
            } else {
                '>'
            };
            match frame {
                Ok(value) => {
                    let value = self.capture(value, direction == Direction::ToClient, None);
                    self.lines.push(format!("c{conn} {arrow} {value}"));
                }
                Err(e) => self
                    .lines
                    .push(format!("# c{conn} {arrow} bytes that do not decode: {e}")),
            }
        }
    }

    /// The client closed connection `conn`.
    pub fn client_closed(&mut self, conn: usize) {
        self.lines.push(format!("c{conn} disconnect"));
    }

    /// The server closed connection `conn`.
    pub fn server_closed(&mut self, conn: usize) {
        self.lines.push(format!("c{conn} closed"));
    }

    /// Replaces server-chosen values with captures. From the server, a value seen for the
    /// first time gets a new name; from the client, only known values are replaced.
    fn capture(&mut self, value: Value, from_server: bool, field: Option<&str>) -> Value {
        match value {
            Value::Record { name, fields } => Value::Record {
                name,
                fields: fields
                    .into_iter()
                    .map(|(k, v)| {
                        let v = self.capture(v, from_server, Some(&k));
                        (k, v)
                    })
                    .collect(),
            },
            Value::List(items) => Value::List(
                items
                    .into_iter()
                    .map(|v| self.capture(v, from_server, field))
                    .collect(),
            ),
            leaf => {
                let Some(kind) = field.and_then(capture_kind) else {
                    return leaf;
                };
                let key = (kind, leaf.to_string());
                if let Some(name) = self.captures.get(&key) {
                    return Value::Capture(name.clone());
                }
                if !from_server {
                    return leaf;
                }
                let n = self.counters.entry(kind).or_insert(0);
                *n += 1;
                let name = format!("{kind}{n}");
                self.captures.insert(key, name.clone());
                Value::Capture(name)
            }
        }
    }

    /// The draft: a header to fill in, then the steps.
    pub fn render(&self) -> String {
        let mut text = String::from(
            "# A recorded session: fill in the header, cite a clause on each step that checks\n\
             # one, and loosen what may differ between servers (`*`, `..`).\n\
             id: draft/001\n\
             clauses: TODO\n\
             level: MUST\n\
             description: TODO\n\
             requirement: TODO\n\
             ---\n",
        );
        for line in &self.lines {
            text.push_str(line);
            text.push('\n');
        }
        text
    }
}

/// Relays one client to the server until either side closes, feeding `draft`.
fn relay(client: UnixStream, server: UnixStream, conn: usize, draft: &Arc<Mutex<Draft>>) {
    let pump = |mut from: UnixStream, mut to: UnixStream, direction: Direction| {
        let draft = Arc::clone(draft);
        std::thread::spawn(move || {
            let mut buf = vec![0u8; 64 * 1024];
            loop {
                let n = match from.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => n,
                };
                if let Ok(mut d) = draft.lock() {
                    d.push(conn, direction, &buf[..n]);
                }
                if to.write_all(&buf[..n]).is_err() {
                    break;
                }
            }
            if let Ok(mut d) = draft.lock() {
                match direction {
                    Direction::ToServer => d.client_closed(conn),
                    Direction::ToClient => d.server_closed(conn),
                }
            }
            // Either side gone: end the other direction too.
            let _ = to.shutdown(std::net::Shutdown::Both);
            let _ = from.shutdown(std::net::Shutdown::Both);
        })
    };
    let (Ok(client2), Ok(server2)) = (client.try_clone(), server.try_clone()) else {
        return;
    };
    let up = pump(client, server, Direction::ToServer);
    let down = pump(server2, client2, Direction::ToClient);
    let _ = up.join();
    let _ = down.join();
}

/// Records `clients` client connections made to `listen`, relayed to the server at `socket`
/// one after another, and returns the draft.
pub fn record(socket: &Path, listen: &Path, clients: usize) -> std::io::Result<String> {
    Recording::bind(listen)?.run(socket, clients)
}

/// A recording: its listen socket, made as a phux server makes its own (mode 0600, so
/// phuxctl's checks take it, [CLIENT.PEER.2]) and removed when the recording ends, and the
/// draft so far.
pub struct Recording {
    listener: UnixListener,
    listen: PathBuf,
    draft: Arc<Mutex<Draft>>,
}

impl Recording {
    /// Binds `listen` with mode 0600 from the start: the socket is bound in a fresh 0700
    /// directory beside it, given its mode there and renamed into place, so nobody can
    /// connect while it is more open (a umask would change the mode of every file the
    /// process creates meanwhile).
    pub fn bind(listen: &Path) -> std::io::Result<Self> {
        let dir = listen
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        if std::fs::symlink_metadata(listen).is_ok() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::AddrInUse,
                format!("{} exists already", listen.display()),
            ));
        }
        let private = tempfile::Builder::new()
            .prefix(".phux-record-")
            .tempdir_in(dir)?;
        std::fs::set_permissions(private.path(), std::fs::Permissions::from_mode(0o700))?;
        let staged = private.path().join("s.sock");
        let listener = UnixListener::bind(&staged)?;
        std::fs::set_permissions(&staged, std::fs::Permissions::from_mode(0o600))?;
        std::fs::rename(&staged, listen)?;
        Ok(Self {
            listener,
            listen: listen.to_owned(),
            draft: Arc::new(Mutex::new(Draft::new())),
        })
    }

    /// The draft as it grows: what a recording stopped early (a signal) writes.
    pub fn draft(&self) -> Arc<Mutex<Draft>> {
        Arc::clone(&self.draft)
    }

    /// Relays `clients` client connections, one after another, to the server at `socket`;
    /// the draft.
    pub fn run(self, socket: &Path, clients: usize) -> std::io::Result<String> {
        for conn in 1..=clients {
            let (client, _) = self.listener.accept()?;
            let server = UnixStream::connect(socket)?;
            relay(client, server, conn, &self.draft);
        }
        let text = self.draft.lock().map(|d| d.render()).unwrap_or_default();
        Ok(text)
    }
}

impl Drop for Recording {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.listen);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use phux_proto::Frame;

    fn bytes(text: &str) -> Vec<u8> {
        Frame::from_value(&Value::parse(text).unwrap())
            .unwrap()
            .to_bytes()
    }

    #[test]
    fn server_chosen_ids_become_captures_reused_both_ways() {
        let mut d = Draft::new();
        d.push(
            1,
            Direction::ToServer,
            &bytes("SPAWN_TERMINAL{request_id=1 group=1 command=[\"/bin/cat\"]}"),
        );
        let spawned = bytes("TERMINAL_SPAWNED{request_id=1 result=ok{terminal=local:7}}");
        // Split across reads: the decoder joins them.
        d.push(1, Direction::ToClient, &spawned[..3]);
        d.push(1, Direction::ToClient, &spawned[3..]);
        d.push(
            1,
            Direction::ToServer,
            &bytes("COMMAND{request_id=2 command=KILL_TERMINAL{terminal=local:7}}"),
        );
        d.push(1, Direction::ToServer, &bytes("PING{nonce=5}"));
        d.client_closed(1);
        let text = d.render();
        assert!(
            text.contains("c1 < TERMINAL_SPAWNED{request_id=1 result=ok{terminal=$t1}}"),
            "{text}"
        );
        assert!(text.contains("KILL_TERMINAL{terminal=$t1}"), "{text}");
        assert!(
            text.contains("c1 > PING{nonce=0x0000000000000005}"),
            "{text}"
        );
        assert!(text.ends_with("c1 disconnect\n"));
    }
}
