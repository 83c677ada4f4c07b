//! Where phuxctl's bytes go: a local Unix socket, checked before the first byte, or the
//! stdin and stdout of a command (`--exec`, `--ssh`) that carries them to a server elsewhere,
//! typically `ssh HOST phux-mio-server bridge`. The session above does not know which.

use std::io::{self, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

use phux_local::verify::{self, Target};

use super::CtlError;

/// A blocked write to a server that stopped reading fails after this (a socket only: pipes
/// have no write timeout, and there the command, ssh say, has its own keep-alives).
const WRITE_TIMEOUT: Duration = Duration::from_secs(30);

/// How long a finished `--exec` command gets to exit by itself after its stdin closes before
/// it is killed.
const EXEC_GRACE: Duration = Duration::from_secs(2);

/// Where the server is reached: its socket on this host, or a command that carries the bytes
/// to it. (Not an endpoint in quinn's sense, a local socket serving many connections: one
/// phuxctl run dials one server address.)
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerAddress {
    /// A Unix socket on this host.
    Socket(Target),
    /// A shell command whose stdin and stdout are a connection to a server (run once per
    /// connection: a redial runs it again).
    Exec(String),
}

impl ServerAddress {
    /// The address `--exec CMD` or `--ssh HOST` describe, with `--socket` and `--name` saying
    /// which server the far side's bridge joins; `None` for a local socket.
    pub fn remote(
        exec: Option<&str>,
        ssh: Option<&str>,
        socket: Option<&Path>,
        name: &str,
    ) -> Option<Self> {
        if let Some(command) = exec {
            return Some(Self::Exec(command.to_owned()));
        }
        let host = ssh?;
        let server = match socket {
            Some(path) => format!("--socket {}", shell_quote(&path.to_string_lossy())),
            None => format!("--name {}", shell_quote(name)),
        };
        // Quoted twice: once for the local shell, once for the remote one ssh hands the
        // command line to.
        let remote = format!("phux-mio-server bridge {server}");
        Some(Self::Exec(format!(
            "ssh -- {} {}",
            shell_quote(host),
            shell_quote(&remote)
        )))
    }

    /// What a message calls it.
    pub fn describe(&self) -> String {
        match self {
            Self::Socket(target) => target.path.display().to_string(),
            Self::Exec(command) => format!("`{command}`"),
        }
    }

    /// The path the outbox journal's key is made from: the socket, or for a command the
    /// command line itself (its host and server name are in it).
    pub fn key_path(&self) -> PathBuf {
        match self {
            Self::Socket(target) => target.path.clone(),
            Self::Exec(command) => PathBuf::from(format!("exec:{command}")),
        }
    }
}

/// `text` as one word for `sh`.
fn shell_quote(text: &str) -> String {
    if !text.is_empty()
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./:@=+,".contains(&b))
    {
        return text.to_owned();
    }
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// One open connection's sending side.
#[derive(Debug)]
pub enum Link {
    /// A Unix socket.
    Socket(UnixStream),
    /// A command's stdin (`None` once closed), and the command.
    Exec {
        /// The command's stdin.
        stdin: Option<ChildStdin>,
        /// The command.
        child: Child,
    },
}

impl Link {
    /// Opens a connection to `address`: for a socket, only after checking the place before
    /// dialling and the listener before the first byte (CLIENT.PEER.N); for a command, by
    /// starting it (its stderr is ours, so ssh's own messages reach the user). Returns the
    /// sending side and the receiving side.
    pub fn open(address: &ServerAddress) -> Result<(Self, Box<dyn Read + Send>), CtlError> {
        match address {
            ServerAddress::Socket(target) => {
                // [CLIENT.PEER.1] [CLIENT.PEER.2] Before dialling: the place is the user's own.
                verify::check_place(target).map_err(|e| CtlError::Untrusted(Box::new(e)))?;
                let stream =
                    UnixStream::connect(&target.path).map_err(|source| CtlError::Connect {
                        path: target.path.clone(),
                        source,
                    })?;
                // [CLIENT.PEER.3] Before the first byte (HELLO): the listener is the user's own.
                verify::check_listener(&stream, &target.path)
                    .map_err(|e| CtlError::Untrusted(Box::new(e)))?;
                stream
                    .set_write_timeout(Some(WRITE_TIMEOUT))
                    .map_err(|e| CtlError::Local(format!("socket option: {e}")))?;
                let reader = stream
                    .try_clone()
                    .map_err(|e| CtlError::Local(format!("socket clone: {e}")))?;
                Ok((Self::Socket(stream), Box::new(reader)))
            }
            ServerAddress::Exec(command) => {
                let mut child = Command::new("/bin/sh")
                    .arg("-c")
                    .arg(command)
                    .stdin(Stdio::piped())
                    .stdout(Stdio::piped())
                    .stderr(Stdio::inherit())
                    .spawn()
                    .map_err(|source| CtlError::Exec {
                        command: command.clone(),
                        source,
                    })?;
                let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
                    return Err(CtlError::Local(
                        "the command's pipes are missing".to_owned(),
                    ));
                };
                Ok((
                    Self::Exec {
                        stdin: Some(stdin),
                        child,
                    },
                    Box::new(stdout),
                ))
            }
        }
    }

    /// Writes all of `bytes`.
    pub fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        match self {
            Self::Socket(stream) => stream.write_all(bytes),
            Self::Exec {
                stdin: Some(stdin), ..
            } => stdin.write_all(bytes),
            Self::Exec { stdin: None, .. } => Err(io::ErrorKind::BrokenPipe.into()),
        }
    }

    /// Ends the connection both ways, so the reader sees its end too.
    pub fn close(&mut self) {
        match self {
            Self::Socket(stream) => {
                let _ = stream.shutdown(std::net::Shutdown::Both);
            }
            Self::Exec { stdin, child } => {
                // Closing stdin lets a bridge half-close and finish; a command that does not
                // end by itself is killed.
                *stdin = None;
                let end = Instant::now() + EXEC_GRACE;
                while Instant::now() < end {
                    if !matches!(child.try_wait(), Ok(None)) {
                        return;
                    }
                    std::thread::sleep(Duration::from_millis(10));
                }
                let _ = child.kill();
                let _ = child.wait();
            }
        }
    }

    /// For a command that has exited, how (for the message when a connection ends early).
    pub fn exit_note(&mut self) -> Option<String> {
        match self {
            Self::Socket(_) => None,
            Self::Exec { child, .. } => match child.try_wait() {
                Ok(Some(status)) => Some(format!("the command exited ({status})")),
                _ => None,
            },
        }
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        if let Self::Exec { .. } = self {
            // Never leave the command (an ssh session) behind the run.
            self.close();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ssh_builds_a_bridge_command_quoted_for_both_shells() {
        let e = ServerAddress::remote(None, Some("build-1"), None, "default").expect("remote");
        assert_eq!(
            e,
            ServerAddress::Exec(
                "ssh -- build-1 'phux-mio-server bridge --name default'".to_owned()
            )
        );
        let e = ServerAddress::remote(None, Some("me@h"), Some(Path::new("/run/a b.sock")), "x")
            .expect("remote");
        assert_eq!(
            e,
            ServerAddress::Exec(
                r"ssh -- me@h 'phux-mio-server bridge --socket '\''/run/a b.sock'\'''".to_owned()
            )
        );
        // The command line survives the local shell as the two words ssh gets.
        let ServerAddress::Exec(line) = e else {
            panic!()
        };
        let out = Command::new("/bin/sh")
            .arg("-c")
            .arg(line.replacen("ssh --", "printf '%s\\n'", 1))
            .output()
            .expect("sh");
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            "me@h\nphux-mio-server bridge --socket '/run/a b.sock'\n"
        );
    }

    #[test]
    fn exec_wins_and_no_flag_means_a_local_socket() {
        assert_eq!(
            ServerAddress::remote(Some("nc -U s"), Some("h"), None, "n"),
            Some(ServerAddress::Exec("nc -U s".to_owned()))
        );
        assert_eq!(ServerAddress::remote(None, None, None, "n"), None);
    }

    #[test]
    fn an_exec_link_carries_bytes_both_ways_and_closes() {
        let (mut link, mut reader) =
            Link::open(&ServerAddress::Exec("cat".to_owned())).expect("open");
        link.write_all(b"ping").expect("write");
        let mut buf = [0; 4];
        reader.read_exact(&mut buf).expect("read");
        assert_eq!(&buf, b"ping");
        link.close();
        let mut rest = Vec::new();
        reader.read_to_end(&mut rest).expect("eof");
        assert!(rest.is_empty());
        assert!(
            link.exit_note().is_some(),
            "cat exited once its stdin closed"
        );
    }
}
