//! tmux as a contender: a private tmux server (its own `-L` socket, no config file) and a
//! control-mode client (`tmux -C`) speaking its line protocol over pipes.

use std::io::{Read, Write};
use std::os::fd::AsFd;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};

use crate::client::READ_TIMEOUT;
use crate::error::{Context, Error, Result};
use crate::roles::wait_readable;

/// Whether `name` runs (`name -V` or `name --help` exits at all).
pub fn installed(name: &str, probe: &str) -> bool {
    Command::new(name)
        .arg(probe)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok()
}

/// One private tmux server; killed on drop.
#[derive(Debug)]
pub struct Tmux {
    name: String,
}

impl Tmux {
    /// A tmux server name unique to this process and call (nothing runs until a session is
    /// created).
    pub fn new() -> Self {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        Self {
            name: format!("phux-bench-{}-{n}", std::process::id()),
        }
    }

    /// What follows `tmux` in every command: our server, and no configuration file.
    fn server_args(&self) -> [&str; 4] {
        ["-L", &self.name, "-f", "/dev/null"]
    }

    /// `tmux -L <ours> -f /dev/null` with `args`.
    pub fn command(&self) -> Command {
        let mut c = Command::new("tmux");
        c.args(self.server_args());
        c.stdin(Stdio::null());
        c
    }

    /// The argv of `tmux -L <ours> -f /dev/null` with `args`, for running it on a PTY.
    pub fn argv(&self, args: &[&str]) -> Vec<String> {
        std::iter::once("tmux")
            .chain(self.server_args())
            .chain(args.iter().copied())
            .map(str::to_owned)
            .collect()
    }

    /// Runs a tmux command to completion; its stdout.
    pub fn run(&self, args: &[&str]) -> Result<String> {
        let out = self
            .command()
            .args(args)
            .stderr(Stdio::piped())
            .output()
            .context("running tmux")?;
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).into_owned())
        } else {
            Err(Error::Protocol(format!(
                "tmux {args:?}: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            )))
        }
    }

    /// A detached 80x24 session running `argv`, with `history` lines of scrollback.
    pub fn new_session(&self, session: &str, argv: &[String], history: u32) -> Result<()> {
        let mut c = self.command();
        c.args(["new-session", "-d", "-s", session, "-x", "80", "-y", "24"]);
        c.args(argv);
        let status = c
            .stdout(Stdio::null())
            .status()
            .context("tmux new-session")?;
        if !status.success() {
            return Err(Error::Protocol("tmux new-session failed".into()));
        }
        self.run(&["set-option", "-g", "history-limit", &history.to_string()])?;
        Ok(())
    }

    /// The tmux server's pid.
    pub fn server_pid(&self) -> Result<u32> {
        let out = self.run(&["display-message", "-p", "#{pid}"])?;
        out.trim()
            .parse()
            .map_err(|_| Error::Protocol(format!("tmux pid {out:?}")))
    }

    /// The first pane of `session`, as `%N`.
    pub fn pane(&self, session: &str) -> Result<String> {
        Ok(self
            .run(&["display-message", "-p", "-t", session, "#{pane_id}"])?
            .trim()
            .to_owned())
    }

    /// A control-mode client attached to `session`.
    pub fn control(&self, session: &str) -> Result<Control> {
        let mut child = self
            .command()
            .args(["-C", "attach-session", "-t", session])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .context("starting tmux -C")?;
        let stdin = child
            .stdin
            .take()
            .ok_or_else(|| Error::Protocol("no stdin".into()))?;
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| Error::Protocol("no stdout".into()))?;
        let mut c = Control {
            child,
            stdin,
            stdout,
            buf: vec![0; 256 * 1024],
            start: 0,
            end: 0,
        };
        // The attach itself is answered with one %begin/%end block.
        c.wait_end(|_| {})?;
        Ok(c)
    }
}

impl Default for Tmux {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self
            .command()
            .arg("kill-server")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        // kill-server leaves the socket file behind; it is ours, so tidy it away.
        let dir = std::env::var_os("TMUX_TMPDIR").unwrap_or_else(|| "/tmp".into());
        let uid = rustix::process::getuid().as_raw();
        let _ = std::fs::remove_file(
            std::path::Path::new(&dir)
                .join(format!("tmux-{uid}"))
                .join(&self.name),
        );
    }
}

/// One line of control-mode output, classified.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Line<'a> {
    /// `%output %N data`: the pane's bytes, still escaped.
    Output(&'a [u8]),
    /// `%end ...` or `%error ...`: a command's reply block is complete.
    End,
    /// `%exit`: the client is being detached.
    Exit,
    /// Anything else (`%begin`, reply text, other notifications).
    Other,
}

/// Classifies one line (without its newline).
pub fn classify(line: &[u8]) -> Line<'_> {
    if let Some(rest) = line.strip_prefix(b"%output ") {
        // Skip the pane id and the one space after it.
        let data = rest
            .iter()
            .position(|&c| c == b' ')
            .and_then(|i| rest.get(i + 1..))
            .unwrap_or_default();
        Line::Output(data)
    } else if line.starts_with(b"%end ") || line.starts_with(b"%error ") {
        Line::End
    } else if line == b"%exit" || line.starts_with(b"%exit ") {
        Line::Exit
    } else {
        Line::Other
    }
}

/// Decodes `%output` data: tmux writes bytes below 32 and `\` as a backslash and three octal
/// digits. Calls `out` for each decoded byte.
pub fn unescape(data: &[u8], mut out: impl FnMut(u8)) {
    let mut i = 0;
    while let Some(&c) = data.get(i) {
        if c == b'\\'
            && let Some(&[a, b, d]) = data
                .get(i + 1..i + 4)
                .and_then(|s| <&[u8; 3]>::try_from(s).ok())
            && [a, b, d].iter().all(|x| (b'0'..=b'7').contains(x))
        {
            out(((a - b'0') << 6) | ((b - b'0') << 3) | (d - b'0'));
            i += 4;
        } else {
            out(c);
            i += 1;
        }
    }
}

/// The number of bytes `%output` data stands for.
pub fn unescaped_len(data: &[u8]) -> u64 {
    let mut n = 0;
    unescape(data, |_| n += 1);
    n
}

/// A `tmux -C` client over pipes; detached and reaped on drop.
#[derive(Debug)]
pub struct Control {
    child: Child,
    stdin: ChildStdin,
    stdout: ChildStdout,
    buf: Vec<u8>,
    start: usize,
    end: usize,
}

impl Control {
    /// Sends one command line.
    pub fn send(&mut self, command: &str) -> Result<()> {
        self.stdin
            .write_all(format!("{command}\n").as_bytes())
            .context("writing to tmux -C")
    }

    /// The next line (without its newline); `None` at end of stream.
    pub fn next_line(&mut self) -> Result<Option<&[u8]>> {
        loop {
            let avail = self.buf.get(self.start..self.end).unwrap_or_default();
            if let Some(nl) = avail.iter().position(|&c| c == b'\n') {
                let line_start = self.start;
                self.start += nl + 1;
                return Ok(self.buf.get(line_start..line_start + nl));
            }
            if self.start > 0 {
                self.buf.copy_within(self.start..self.end, 0);
                self.end -= self.start;
                self.start = 0;
            }
            if self.end == self.buf.len() {
                self.buf.resize(self.buf.len() * 2, 0);
            }
            if !wait_readable(self.stdout.as_fd(), READ_TIMEOUT)? {
                return Err(Error::Timeout("tmux control-mode output".into()));
            }
            let room = self.buf.get_mut(self.end..).unwrap_or_default();
            let n = self.stdout.read(room).context("reading tmux -C")?;
            if n == 0 {
                return Ok(None);
            }
            self.end += n;
        }
    }

    /// Reads until a command's `%end`/`%error`, passing `%output` data to `on_output`.
    pub fn wait_end(&mut self, mut on_output: impl FnMut(&[u8])) -> Result<()> {
        loop {
            match self.next_line()?.map(classify) {
                Some(Line::End) => return Ok(()),
                Some(Line::Output(d)) => on_output(d),
                Some(Line::Exit) | None => {
                    return Err(Error::Protocol("tmux -C exited before %end".into()));
                }
                Some(Line::Other) => {}
            }
        }
    }
}

impl Drop for Control {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_lines_are_split_from_the_pane_id() {
        assert_eq!(classify(b"%output %12 hi there"), Line::Output(b"hi there"));
        assert_eq!(classify(b"%end 1 2 0"), Line::End);
        assert_eq!(classify(b"%error 1 2 0"), Line::End);
        assert_eq!(classify(b"%exit"), Line::Exit);
        assert_eq!(classify(b"%exit detached"), Line::Exit);
        assert_eq!(classify(b"%begin 1 2 0"), Line::Other);
        assert_eq!(classify(b"%output %1 "), Line::Output(b""));
    }

    #[test]
    fn octal_escapes_decode_to_single_bytes() {
        let mut got = Vec::new();
        unescape(br"ab\015\012\134x", |b| got.push(b));
        assert_eq!(got, b"ab\r\n\\x");
        assert_eq!(unescaped_len(br"y\015\012"), 3);
        // A backslash not followed by three octal digits is kept literally.
        let mut got = Vec::new();
        unescape(br"\9\01", |b| got.push(b));
        assert_eq!(got, br"\9\01");
    }
}
