//! `phux-conformance probe`: the [`ProbeMachine`] on a real tty.
//!
//! One thread polls stdin (only while the machine wants input), a pipe fed by a signal thread,
//! and the grandchild's output, with the stall timer as the poll timeout. It decides nothing:
//! it performs the machine's actions and reports what the OS says.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::io::Write as _;
use std::os::fd::BorrowedFd;
use std::os::unix::ffi::OsStringExt as _;
use std::os::unix::net::UnixStream;
use std::process::{Child, ChildStdout, ExitCode, Stdio};
use std::time::Instant;

use rustix::event::{PollFd, PollFlags, Timespec};
use rustix::io::Errno;
use rustix::process::Pid;
use rustix::termios::{InputModes, LocalModes, OptionalActions, OutputModes, Termios};
use signal_hook::iterator::Signals;

use super::grandchild::{self, LineSplitter, from_raw_signal, raw_signal};
use super::machine::{
    Answer, GrandchildEvent, ProbeAction, ProbeEvent, ProbeMachine, ProcessReport, Query,
    TermiosReport,
};
use super::signal::ProbeSignal;

/// One read's worth: a canonical line (4,096 bytes at most on Linux) fits.
const READ_BUF: usize = 4096;

/// Arguments of `phux-conformance probe`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ProbeArgs {
    /// Run as the probe's grandchild (started by the `:grandchild` command, not by hand).
    #[arg(long, hide = true)]
    pub grandchild: bool,
    /// Arguments the probe ignores, so a spawner can give any argument vector and read it
    /// back with `:report args` (after `--` they may start with `-`).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub ignored: Vec<OsString>,
}

/// Runs the probe on this process's stdin and stdout (a tty, normally) until it exits.
///
/// The grandchild is this same executable run as `<exe> probe --grandchild`, so a program
/// that embeds `run` must route that command line here too.
pub fn run(args: &ProbeArgs) -> ExitCode {
    if args.grandchild {
        return grandchild::run();
    }
    match Driver::new() {
        Ok(driver) => driver.run(),
        Err(e) => {
            eprintln!("phux-conformance probe: cannot catch signals: {e}");
            ExitCode::FAILURE
        }
    }
}

struct RunningGrandchild {
    /// Holds the grandchild's stdin open: it exits when this end closes.
    child: Child,
    stdout: ChildStdout,
    lines: LineSplitter,
}

struct Driver {
    machine: ProbeMachine,
    stdin: BorrowedFd<'static>,
    /// The tty's termios at start, `None` when stdin is no tty: modes are derived from it.
    original: Option<Termios>,
    raw: bool,
    echo: bool,
    /// Signal numbers, one byte each, from the signal thread.
    signals: UnixStream,
    grandchild: Option<RunningGrandchild>,
    stall_until: Option<Instant>,
}

impl Driver {
    fn new() -> std::io::Result<Self> {
        let (signals, mut tx) = UnixStream::pair()?;
        // Catch every probe signal: the machine decides what each does, defaults included, so
        // the in-process host and this driver behave alike.
        let mut caught = Signals::new(ProbeSignal::ALL.map(raw_signal))?;
        std::thread::spawn(move || {
            for raw in caught.forever() {
                let Ok(byte) = u8::try_from(raw) else {
                    continue;
                };
                if tx.write_all(&[byte]).is_err() {
                    break;
                }
            }
        });
        let stdin = rustix::stdio::stdin();
        let original = rustix::termios::tcgetattr(stdin).ok();
        let echo = original
            .as_ref()
            .is_some_and(|t| t.local_modes.contains(LocalModes::ECHO));
        Ok(Self {
            machine: ProbeMachine::new(),
            stdin,
            original,
            raw: false,
            echo,
            signals,
            grandchild: None,
            stall_until: None,
        })
    }

    fn run(mut self) -> ExitCode {
        let start = self.machine.start();
        self.perform(start);
        let mut buf = vec![0u8; READ_BUF];
        loop {
            let reading = self.machine.wants_input();
            let (signalled, from_grandchild, readable) = self.wait(reading);

            if self.stall_until.is_some_and(|t| Instant::now() >= t) {
                self.stall_until = None;
                let actions = self.machine.handle(ProbeEvent::StallElapsed);
                self.perform(actions);
            }
            if signalled {
                self.drain_signals();
            }
            if from_grandchild {
                self.drain_grandchild();
            }
            // A signal may have changed the machine's mind since the poll.
            if readable && self.machine.wants_input() {
                match rustix::io::read(self.stdin, &mut buf) {
                    Ok(0) => {
                        let actions = self.machine.handle(ProbeEvent::Eof);
                        self.perform(actions);
                    }
                    Ok(n) => {
                        let actions = self.machine.feed(buf.get(..n).unwrap_or_default());
                        self.perform(actions);
                    }
                    Err(Errno::INTR | Errno::AGAIN) => {}
                    // The terminal is gone: nobody can read a report any more.
                    Err(_) => self.exit(1),
                }
            }
        }
    }

    /// Polls; returns which of (signal pipe, grandchild, stdin) is ready.
    fn wait(&self, reading: bool) -> (bool, bool, bool) {
        let timeout = self.stall_until.map(|t| {
            let left = t.saturating_duration_since(Instant::now());
            Timespec::try_from(left).unwrap_or(Timespec {
                tv_sec: i64::MAX,
                tv_nsec: 0,
            })
        });
        let ready = PollFlags::IN | PollFlags::HUP | PollFlags::ERR;
        let mut fds = vec![PollFd::new(&self.signals, PollFlags::IN)];
        let grandchild = self.grandchild.as_ref().map(|g| {
            fds.push(PollFd::new(&g.stdout, PollFlags::IN));
            fds.len() - 1
        });
        let stdin = reading.then(|| {
            fds.push(PollFd::new(&self.stdin, PollFlags::IN));
            fds.len() - 1
        });
        match rustix::event::poll(&mut fds, timeout.as_ref()) {
            Ok(_) => {}
            Err(Errno::INTR) => return (false, false, false),
            // Cannot poll at all: there is no way to go on observing anything.
            Err(_) => self.exit(1),
        }
        let is_ready = |i: Option<usize>| {
            i.and_then(|i| fds.get(i))
                .is_some_and(|fd| fd.revents().intersects(ready))
        };
        (is_ready(Some(0)), is_ready(grandchild), is_ready(stdin))
    }

    fn drain_signals(&mut self) {
        let mut buf = [0u8; 64];
        let Ok(n) = rustix::io::read(&self.signals, &mut buf) else {
            return;
        };
        for &raw in buf.get(..n).unwrap_or_default() {
            if let Some(sig) = from_raw_signal(i32::from(raw)) {
                let actions = self.machine.handle(ProbeEvent::Signal(sig));
                self.perform(actions);
            }
        }
    }

    fn drain_grandchild(&mut self) {
        let Some(g) = &mut self.grandchild else {
            return;
        };
        let mut buf = [0u8; 256];
        let news = match rustix::io::read(&g.stdout, &mut buf) {
            Err(Errno::INTR | Errno::AGAIN) => return,
            Ok(n) if n > 0 => g.lines.push(buf.get(..n).unwrap_or_default()),
            // End of its output (or a broken pipe): it is gone.
            Ok(_) | Err(_) => {
                if let Some(mut g) = self.grandchild.take() {
                    // It closed its output by exiting; reap it so no zombie stays.
                    let _ = g.child.wait();
                }
                vec![GrandchildEvent::Gone]
            }
        };
        for event in news {
            let actions = self.machine.handle(ProbeEvent::Grandchild(event));
            self.perform(actions);
        }
    }

    fn perform(&mut self, actions: Vec<ProbeAction>) {
        let mut queue = VecDeque::from(actions);
        while let Some(action) = queue.pop_front() {
            match action {
                ProbeAction::Write(bytes) => {
                    let mut out = std::io::stdout().lock();
                    // A write error means the terminal hung up; SIGHUP follows.
                    let _ = out.write_all(&bytes).and_then(|()| out.flush());
                }
                ProbeAction::SetRaw(raw) => {
                    self.raw = raw;
                    self.apply_termios();
                }
                ProbeAction::SetEcho(echo) => {
                    self.echo = echo;
                    self.apply_termios();
                }
                ProbeAction::Query(query) => {
                    let answer = self.answer(query);
                    queue.extend(self.machine.handle(ProbeEvent::Answer(answer)));
                }
                ProbeAction::Stall(duration) => {
                    // An overflowing deadline is as good as forever.
                    self.stall_until = duration.and_then(|d| Instant::now().checked_add(d));
                }
                ProbeAction::Resume => self.stall_until = None,
                ProbeAction::SpawnGrandchild => {
                    if let Err(e) = self.spawn_grandchild() {
                        let failed = GrandchildEvent::SpawnFailed(e.to_string());
                        queue.extend(self.machine.handle(ProbeEvent::Grandchild(failed)));
                    }
                }
                ProbeAction::Exit(code) => self.exit(i32::from(code)),
                ProbeAction::DieBySignal(sig) => self.die(sig),
            }
        }
    }

    /// Termios from the original: raw or not, echo as asked, and never output processing, so
    /// the terminal receives exactly the bytes the machine wrote (as the in-process host does).
    fn apply_termios(&self) {
        let Some(original) = &self.original else {
            return;
        };
        let mut t = original.clone();
        if self.raw {
            t.make_raw();
        }
        t.output_modes.remove(OutputModes::OPOST);
        let echo_bits = LocalModes::ECHO | LocalModes::ECHOE | LocalModes::ECHOK;
        if self.echo {
            t.local_modes
                .insert(LocalModes::ECHO | (original.local_modes & echo_bits));
        } else {
            t.local_modes.remove(echo_bits | LocalModes::ECHONL);
        }
        // Failure shows in the TERMIOS report that follows every change.
        let _ = rustix::termios::tcsetattr(self.stdin, OptionalActions::Now, &t);
    }

    fn answer(&self, query: Query) -> Answer {
        match query {
            Query::Termios => match rustix::termios::tcgetattr(self.stdin) {
                Ok(t) => Answer::Termios(TermiosReport {
                    canonical: t.local_modes.contains(LocalModes::ICANON),
                    echo: t.local_modes.contains(LocalModes::ECHO),
                    isig: t.local_modes.contains(LocalModes::ISIG),
                    icrnl: t.input_modes.contains(InputModes::ICRNL),
                }),
                Err(e) => Answer::Failed(e.to_string()),
            },
            Query::Process => match rustix::process::getsid(None) {
                Ok(sid) => Answer::Process(ProcessReport {
                    pid: pid_number(rustix::process::getpid()),
                    pgrp: pid_number(rustix::process::getpgrp()),
                    sid: pid_number(sid),
                    foreground: rustix::termios::tcgetpgrp(self.stdin).ok().map(pid_number),
                }),
                Err(e) => Answer::Failed(e.to_string()),
            },
            Query::Size => match rustix::termios::tcgetwinsize(self.stdin) {
                Ok(w) => Answer::Size {
                    cols: w.ws_col,
                    rows: w.ws_row,
                },
                Err(e) => Answer::Failed(e.to_string()),
            },
            Query::Args => Answer::Args(std::env::args_os().map(OsString::into_vec).collect()),
            Query::Cwd => match std::env::current_dir() {
                Ok(dir) => Answer::Cwd(dir.into_os_string().into_vec()),
                Err(e) => Answer::Failed(e.to_string()),
            },
            Query::Environ => Answer::Environ(
                std::env::vars_os()
                    .map(|(name, value)| {
                        let mut entry = name.into_vec();
                        entry.push(b'=');
                        entry.extend(value.into_vec());
                        entry
                    })
                    .collect(),
            ),
        }
    }

    fn spawn_grandchild(&mut self) -> std::io::Result<()> {
        let exe = std::env::current_exe()?;
        // Same process group as the probe (Command's default), so a signal to the terminal's
        // group reaches it; pipes rather than the tty, so it never holds the terminal open.
        let mut child = std::process::Command::new(exe)
            .args(["probe", "--grandchild"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()?;
        let Some(stdout) = child.stdout.take() else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(std::io::Error::other("no pipe from the grandchild"));
        };
        self.grandchild = Some(RunningGrandchild {
            child,
            stdout,
            lines: LineSplitter::default(),
        });
        Ok(())
    }

    fn restore_termios(&self) {
        if let Some(original) = &self.original {
            let _ = rustix::termios::tcsetattr(self.stdin, OptionalActions::Now, original);
        }
    }

    fn exit(&self, code: i32) -> ! {
        self.restore_termios();
        let _ = std::io::stdout().flush();
        std::process::exit(code)
    }

    /// Dies by `sig` with its default disposition, so the parent's wait sees that signal.
    fn die(&self, sig: ProbeSignal) -> ! {
        self.restore_termios();
        let _ = std::io::stdout().flush();
        let raw = raw_signal(sig);
        let _ = signal_hook::low_level::emulate_default_handler(raw);
        // Not reached for a fatal signal; the shell convention otherwise.
        std::process::exit(128 + raw)
    }
}

fn pid_number(pid: Pid) -> u32 {
    pid.as_raw_nonzero().get().unsigned_abs()
}
