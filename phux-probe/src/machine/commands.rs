//! Commands, signals and the grandchild's news: what each does to the machine and reports.

use sha2::{Digest, Sha256};

use super::GrandchildEvent;
use super::report::{flood_text, hex, sanitize, styled_text};
use super::{Disposition, Grandchild, ProbeAction, ProbeMachine, ProbeSignal, Query, State};
use crate::command::Command;

impl ProbeMachine {
    pub(super) fn command(&mut self, line: &[u8], out: &mut Vec<ProbeAction>) {
        let Some(command) = line.get(1..).and_then(Command::parse) else {
            self.report(out, &format!("BADCMD {}", hex(line)));
            return;
        };
        match command {
            Command::Raw | Command::Canon => {
                self.raw = command == Command::Raw;
                out.push(ProbeAction::SetRaw(self.raw));
                self.query(Query::Termios, out);
            }
            Command::Echo(on) => {
                self.echo = on;
                out.push(ProbeAction::SetEcho(on));
                self.query(Query::Termios, out);
            }
            Command::ReportTermios => self.query(Query::Termios, out),
            Command::ReportPgrp => self.query(Query::Process, out),
            Command::ReportSize => self.query(Query::Size, out),
            Command::ReportArgs => self.query(Query::Args, out),
            Command::ReportCwd => self.query(Query::Cwd, out),
            Command::ReportEnviron => {
                self.env_wanted = None;
                self.query(Query::Environ, out);
            }
            Command::ReportEnv(name) => {
                self.env_wanted = Some(name);
                self.query(Query::Environ, out);
            }
            Command::Stall(duration) => {
                let how =
                    duration.map_or_else(|| "forever".to_owned(), |d| d.as_millis().to_string());
                self.report(out, &format!("STALLING {how}"));
                out.push(ProbeAction::Stall(duration));
                self.state = State::Stalled {
                    timed: duration.is_some(),
                };
            }
            Command::Exit(code) => {
                self.report(out, &format!("EXITING {code}"));
                self.exit(code, out);
            }
            Command::Ignore(sig) => self.dispose(sig, Disposition::Ignore, "IGNORING", out),
            Command::Handle(sig) => self.dispose(sig, Disposition::Handle, "HANDLING", out),
            Command::Default(sig) => self.dispose(sig, Disposition::Default, "DEFAULT", out),
            Command::Grandchild => {
                if self.grandchild == Grandchild::None {
                    self.grandchild = Grandchild::Starting;
                    out.push(ProbeAction::SpawnGrandchild);
                    self.state = State::AwaitingGrandchild;
                } else {
                    self.report(out, "FAILED grandchild already running");
                }
            }
            Command::Count => {
                let body = format!("COUNT {} {}", self.payload_bytes, self.payload_lines);
                self.report(out, &body);
            }
            Command::Checksum => {
                let digest = self.hasher.clone().finalize();
                let body = format!("CHECKSUM {} {}", hex(&digest), self.hashed);
                self.report(out, &body);
            }
            Command::ChecksumReset => {
                self.hasher = Sha256::new();
                self.hashed = 0;
                self.report(out, "CHECKSUM-RESET");
            }
            Command::Print(bytes) => {
                let body = format!("PRINTED {}", bytes.len());
                out.push(ProbeAction::Write(bytes));
                self.report(out, &body);
            }
            Command::Flood(n) => {
                out.push(ProbeAction::Write(flood_text(n)));
                self.report(out, &format!("FLOODED {n}"));
            }
            Command::FloodStyled(n) => {
                out.push(ProbeAction::Write(styled_text(n)));
                self.report(out, &format!("STYLED {n}"));
            }
            Command::Mark(word) => self.report(out, &format!("MARK {word}")),
        }
    }

    fn query(&mut self, query: Query, out: &mut Vec<ProbeAction>) {
        out.push(ProbeAction::Query(query));
        self.state = State::AwaitingAnswer(query);
    }

    fn dispose(
        &mut self,
        sig: ProbeSignal,
        disposition: Disposition,
        verb: &str,
        out: &mut Vec<ProbeAction>,
    ) {
        self.dispositions[sig.index()] = disposition;
        self.report(out, &format!("{verb} {}", sig.name()));
    }

    pub(super) fn signal(&mut self, sig: ProbeSignal, out: &mut Vec<ProbeAction>) {
        let ends_stall = matches!(self.state, State::Stalled { .. })
            && matches!(sig, ProbeSignal::Cont | ProbeSignal::Usr1);
        match self.dispositions[sig.index()] {
            Disposition::Handle => self.report(out, &format!("SIGNAL {}", sig.name())),
            Disposition::Ignore => {}
            Disposition::Default => {
                if sig.is_fatal_by_default() && !ends_stall {
                    self.state = State::Exited;
                    out.push(ProbeAction::DieBySignal(sig));
                    return;
                }
            }
        }
        if ends_stall {
            self.report(out, &format!("RESUMED {}", sig.name()));
            self.resume(out);
        }
    }

    pub(super) fn grandchild_news(&mut self, news: GrandchildEvent, out: &mut Vec<ProbeAction>) {
        let waiting = self.state == State::AwaitingGrandchild;
        match news {
            GrandchildEvent::Ready => {
                if self.grandchild == Grandchild::Starting {
                    self.grandchild = Grandchild::Ready;
                    self.report(out, "GRANDCHILD READY");
                }
            }
            GrandchildEvent::Signal(sig) => {
                if self.grandchild == Grandchild::Ready {
                    self.report(out, &format!("GRANDCHILD SIGNAL {}", sig.name()));
                }
            }
            GrandchildEvent::Gone => {
                if self.grandchild != Grandchild::None {
                    self.grandchild = Grandchild::None;
                    self.report(out, "GRANDCHILD GONE");
                }
            }
            GrandchildEvent::SpawnFailed(why) => {
                if self.grandchild == Grandchild::Starting {
                    self.grandchild = Grandchild::None;
                    self.report(out, &format!("FAILED grandchild {}", sanitize(&why)));
                }
            }
        }
        if waiting && self.grandchild != Grandchild::Starting {
            self.state = State::Running;
            self.process(out);
        }
    }

    pub(super) fn resume(&mut self, out: &mut Vec<ProbeAction>) {
        out.push(ProbeAction::Resume);
        self.state = State::Running;
        self.process(out);
    }

    pub(super) fn exit(&mut self, code: u8, out: &mut Vec<ProbeAction>) {
        self.state = State::Exited;
        self.pending.clear();
        out.push(ProbeAction::Exit(code));
    }
}
