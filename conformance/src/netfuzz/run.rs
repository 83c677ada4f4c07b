//! Running one session against a server, with the oracles, and recording what was sent so a
//! finding can be written as a transcript.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use phux_core::framing::FrameDecoder;
use phux_proto::command::{ApplyInput, Command};
use phux_proto::frame::{CommandFrame, DetachReason, Ping};
use phux_proto::input::{InputEvent, PasteEvent, PasteTrust};
use phux_proto::{Frame, OperationId, TerminalId};

use super::session::{Action, spawn_frame};
use super::shadow::{Shadow, terminals_mut};
use crate::transport::{ConnKey, Connector, Recv, Transport};

/// Bounds the oracles use.
#[derive(Clone, Debug)]
pub struct Bounds {
    /// An honest connection's PING must be answered within this.
    pub liveness: Duration,
    /// How long replies still owed may take at the end of a session.
    pub grace: Duration,
    /// The most bytes a client that stopped reading may find waiting when it reads again.
    pub queue_bound: usize,
    /// Actions between two liveness checks.
    pub batch: usize,
    /// Clamp the sizes sessions ask for to the spec's bound (1024 x 512, [TERMINAL.RESIZE.3]):
    /// for fuzzing on past a server known not to clamp, which a huge size takes gigabytes.
    pub clamp_sizes: bool,
}

impl Default for Bounds {
    fn default() -> Self {
        Self {
            liveness: Duration::from_secs(2),
            grace: Duration::from_secs(10),
            queue_bound: 8 * 1024 * 1024,
            batch: 8,
            clamp_sizes: false,
        }
    }
}

/// What kind of misbehaviour a finding is; two findings of one kind are the same bug as far
/// as minimisation is concerned.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    /// The server stopped accepting connections or closed an honest one.
    ServerDown,
    /// An honest PING was not answered in time.
    Liveness,
    /// The fuzzing connection's own PING was not answered in time (the server stalls it).
    Stalled,
    /// A reply does not decode under our strict decoder.
    Undecodable,
    /// A reply for a request id with nothing owed.
    Unsolicited,
    /// A COMMAND_RESULT where the only thing owed was the ERROR of a COMMAND our decoder
    /// refuses: the server accepted bytes the spec makes a decode error.
    AcceptedMalformed,
    /// A COMMAND (of this name) or SPAWN_TERMINAL never answered.
    MissingReply(String),
    /// A frame over the limits HELLO_OK negotiated.
    OverLimit,
    /// The server closed without DETACHED.
    ClosedWithoutDetached,
    /// The server ended a connection that broke no rule (the reason given).
    UnexpectedClose(String),
    /// The server answered a frame sent after one the spec makes fatal (DETACH included).
    ActedAfterFatal {
        /// Whether the fatal frame was DETACH.
        detach: bool,
    },
    /// More bytes held for a client that stopped reading than the queue bound.
    QueueBound,
}

impl Kind {
    /// A short name for file names and the progress line.
    pub fn slug(&self) -> String {
        match self {
            Self::ServerDown => "server-down".into(),
            Self::Liveness => "liveness".into(),
            Self::Stalled => "stalled-connection".into(),
            Self::Undecodable => "undecodable-reply".into(),
            Self::Unsolicited => "unsolicited-reply".into(),
            Self::AcceptedMalformed => "accepted-malformed-command".into(),
            Self::MissingReply(c) => format!("missing-reply-{}", c.to_lowercase()),
            Self::OverLimit => "over-limit".into(),
            Self::ClosedWithoutDetached => "closed-without-detached".into(),
            Self::UnexpectedClose(r) => format!("unexpected-close-{}", r.to_lowercase()),
            Self::ActedAfterFatal { detach: true } => "acted-after-detach".into(),
            Self::ActedAfterFatal { detach: false } => "acted-after-fatal-error".into(),
            Self::QueueBound => "queue-bound".into(),
        }
    }

    /// The clause the finding breaks.
    pub fn clause(&self) -> &'static str {
        match self {
            Self::ServerDown | Self::Liveness | Self::Stalled | Self::UnexpectedClose(_) => {
                "PING.ECHO.1"
            }
            Self::Undecodable => "FRAME.HEADER.1",
            Self::Unsolicited | Self::MissingReply(_) => "COMMAND.ENVELOPE.2",
            Self::AcceptedMalformed => "ERROR.COMMAND.1",
            Self::OverLimit => "HELLO.LIMITS.1",
            Self::ClosedWithoutDetached => "ERROR.FATAL.1",
            Self::ActedAfterFatal { detach: true } => "DETACH.REQUEST.2",
            Self::ActedAfterFatal { detach: false } => "ERROR.FATAL.2",
            Self::QueueBound => "QUEUE.BOUND.1",
        }
    }
}

/// One misbehaviour, and what showed it.
#[derive(Clone, Debug)]
pub struct Finding {
    /// Its kind.
    pub kind: Kind,
    /// What was seen.
    pub detail: String,
}

/// A step of the record a transcript is written from.
#[derive(Clone, Debug)]
pub enum Recorded {
    /// Bytes sent on the main connection; `text` when they are one frame in the notation
    /// (terminal ids as `$tK`).
    Send {
        /// The notation, if a clean frame.
        text: Option<String>,
        /// The bytes.
        bytes: Vec<u8>,
    },
    /// A TERMINAL_SPAWNED that named the session's terminal `k`.
    Spawned {
        /// Its request id.
        request_id: u32,
        /// The terminal's index.
        k: usize,
    },
    /// The client stopped reading.
    Pause,
    /// `count` copies of one frame, sent while paused.
    Repeat {
        /// How many.
        count: u16,
        /// The frame's notation.
        text: String,
    },
    /// Time passed.
    Wait(Duration),
    /// The client read again.
    Resume,
}

/// What a session did.
#[derive(Clone, Debug, Default)]
pub struct Outcome {
    /// The first misbehaviour seen, if any.
    pub finding: Option<Finding>,
    /// Frames sent (the main connection's, as the server frames them).
    pub frames: usize,
    /// What was sent, for a transcript.
    pub record: Vec<Recorded>,
    /// Decoded COMMAND request ids in the order sent, and what each was.
    pub commands: Vec<(u32, String)>,
    /// Whether the transport carries one connection only (then no side connection).
    pub single_connection: bool,
    /// The bytes each action put on the wire (byte-level minimisation starts from these).
    pub per_action: Vec<Vec<u8>>,
    /// Replies that settled something owed (COMMAND_RESULT, ERROR, TERMINAL_SPAWNED).
    pub replies: usize,
    /// Terminals the server gave the session.
    pub terminals: usize,
    /// How many actions had been run when the finding showed (the rest played no part).
    pub acted: usize,
}

/// The terminal-id base of the notation a transcript captures (`$tK`).
const SYMBOL_BASE: u32 = 0xf000_0000;

/// Request ids of the cleanup KILL_TERMINALs (never generated by a session).
const CLEANUP_REQUEST: u32 = 0xfff0_0000;

/// One connection's reading side.
struct Conn {
    key: ConnKey,
    decoder: FrameDecoder,
    closed: bool,
    detached: Option<DetachReason>,
    pongs: Vec<u64>,
    max_chunk: Option<u32>,
    /// Bytes received since the last resume.
    since_resume: usize,
}

impl Conn {
    fn new(key: ConnKey) -> Self {
        Self {
            key,
            decoder: FrameDecoder::default(),
            closed: false,
            detached: None,
            pongs: Vec::new(),
            max_chunk: None,
            since_resume: 0,
        }
    }
}

/// One session's run.
struct Runner<'a> {
    t: Box<dyn Transport>,
    bounds: &'a Bounds,
    main: Conn,
    side: Option<Conn>,
    shadow: Shadow,
    /// The session's terminals, in the order the server named them.
    own: Vec<TerminalId>,
    out: Outcome,
    nonce: u64,
    paused_ever: bool,
    names: BTreeMap<u32, String>,
    /// The action being run.
    current: usize,
}

type Step = Result<(), Finding>;

fn finding(kind: Kind, detail: impl Into<String>) -> Finding {
    Finding {
        kind,
        detail: detail.into(),
    }
}

/// The HELLO every fuzzing connection starts with (the prelude's `Hello`).
pub fn hello() -> Frame {
    "HELLO{client_name=\"phux-netfuzz\" version={major=0 minor=8 patch=0} \
     capabilities={color=true_color layers=l1 images=none kbd_protocols=none hyperlinks=false \
     output_mode=raw bootstrap_profiles=synthesized_vt_raw native_codecs=none \
     native_features=none max_chunk_bytes=262144 max_history_page_bytes=1048576}}"
        .parse()
        .unwrap_or_else(|e| unreachable!("the fixed HELLO parses: {e}"))
}

/// Runs `actions` against a fresh transport of `connector`.
pub fn run_session(connector: &dyn Connector, actions: &[Action], bounds: &Bounds) -> Outcome {
    let t = match connector.open() {
        Ok(t) => t,
        Err(e) => {
            return Outcome {
                finding: Some(finding(Kind::ServerDown, format!("open: {e}"))),
                ..Outcome::default()
            };
        }
    };
    let single = t.max_connections() == Some(1);
    let mut r = Runner {
        t,
        bounds,
        main: Conn::new(0),
        side: None,
        shadow: Shadow::default(),
        own: Vec::new(),
        out: Outcome {
            single_connection: single,
            ..Outcome::default()
        },
        nonce: 0x6e66_0000_0000_0000,
        paused_ever: false,
        names: BTreeMap::new(),
        current: 0,
    };
    let result = r.session(actions, single);
    if let Err(f) = result {
        r.out.finding = Some(f);
    }
    r.cleanup();
    r.out.terminals = r.own.len();
    r.out.commands = r
        .shadow
        .commands_sent
        .iter()
        .map(|id| (*id, r.names.get(id).cloned().unwrap_or_default()))
        .collect();
    r.out
}

impl Runner<'_> {
    fn session(&mut self, actions: &[Action], single: bool) -> Step {
        if !single {
            let key = self
                .t
                .connect()
                .map_err(|e| finding(Kind::ServerDown, format!("connect: {e}")))?;
            let mut side = Conn::new(key);
            let _ = self.t.send(key, &hello().to_bytes());
            side.pongs.clear();
            self.side = Some(side);
        }
        self.main = Conn::new(
            self.t
                .connect()
                .map_err(|e| finding(Kind::ServerDown, format!("connect: {e}")))?,
        );
        self.out.per_action = vec![Vec::new(); actions.len()];
        for (i, a) in actions.iter().enumerate() {
            self.current = i;
            self.out.acted = i + 1;
            self.act(a)?;
            self.current = usize::MAX;
            if (i + 1) % self.bounds.batch == 0 {
                self.checkpoint()?;
            }
        }
        self.checkpoint()?;
        self.finish()
    }

    /// Sync the main connection, then the side connection's liveness.
    fn checkpoint(&mut self) -> Step {
        self.sync()?;
        self.liveness()
    }

    fn next_nonce(&mut self) -> u64 {
        self.nonce += 1;
        self.nonce
    }

    /// Aims a frame's terminal slots at the session's terminals: the real frame and its
    /// notation with `$tK`. `None` when it names a terminal and the session has none.
    fn aim(&self, frame: &Frame) -> Option<(Frame, String)> {
        let mut symbolic = frame.clone();
        if self.bounds.clamp_sizes {
            let size = match &mut symbolic {
                Frame::TerminalResize(r) => Some(&mut r.size),
                Frame::SpawnTerminal(s) => s.initial_size.as_mut(),
                _ => None,
            };
            if let Some(size) = size {
                size.cols = size.cols.min(1024);
                size.rows = size.rows.min(512);
            }
        }
        for t in terminals_mut(&mut symbolic) {
            if let TerminalId::Local(id) = t {
                if self.own.is_empty() {
                    return None;
                }
                *id = SYMBOL_BASE + (*id % self.own.len() as u32);
            }
        }
        let mut text = symbolic.to_string();
        for k in (0..self.own.len()).rev() {
            text = text.replace(
                &format!("local:{}", SYMBOL_BASE + k as u32),
                &format!("$t{k}"),
            );
        }
        let mut real = symbolic;
        for t in terminals_mut(&mut real) {
            if let TerminalId::Local(id) = t {
                *t = self.own[(*id - SYMBOL_BASE) as usize].clone();
            }
        }
        Some((real, text))
    }

    /// Sends bytes on the main connection if the shadow allows them; records them.
    fn send(&mut self, bytes: Vec<u8>, text: Option<String>) -> Step {
        // Bytes that end the connection (a fatal frame, DETACH) wait for the answers to the
        // spawns still owed: a terminal whose id the session never learns is never killed.
        if self.shadow.fatal.is_none() && self.shadow.owed_spawns.values().any(|n| *n > 0) {
            let mut probe = self.shadow.clone();
            if probe.admit(&bytes, &self.own).is_some() && probe.fatal.is_some() {
                self.settle_spawns()?;
            }
        }
        let Some(framed) = self.shadow.admit(&bytes, &self.own) else {
            return Ok(());
        };
        self.out.frames += framed.len();
        for f in &framed {
            if let Some(Frame::Command(c)) = &f.frame {
                self.names.insert(c.request_id, c.command.name().to_owned());
            }
        }
        if let Some(b) = self.out.per_action.get_mut(self.current) {
            b.extend_from_slice(&bytes);
        }
        let _ = self.t.send(self.main.key, &bytes);
        self.out.record.push(Recorded::Send { text, bytes });
        Ok(())
    }

    /// Reads until every spawn sent has its TERMINAL_SPAWNED (or the grace runs out).
    fn settle_spawns(&mut self) -> Step {
        let until = Instant::now() + self.bounds.grace;
        while !self.main.closed && self.shadow.owed_spawns.values().any(|n| *n > 0) {
            self.pump(false, Duration::from_millis(20))?;
            if self.t.virtual_time() || Instant::now() >= until {
                break;
            }
        }
        Ok(())
    }

    /// Before a frame that names terminals: read the answers to spawns still owed, so the
    /// slots can be aimed at every terminal spawned before it.
    fn learn_terminals(&mut self, frame: &Frame) -> Step {
        let mut f = frame.clone();
        let names_local = terminals_mut(&mut f)
            .iter()
            .any(|t| matches!(t, TerminalId::Local(_)));
        let owed = self.shadow.owed_spawns.values().any(|n| *n > 0);
        if names_local && owed && self.shadow.fatal.is_none() {
            self.sync()?;
        }
        Ok(())
    }

    fn send_frame(&mut self, frame: &Frame) -> Step {
        self.learn_terminals(frame)?;
        if let Some((real, text)) = self.aim(frame) {
            self.send(real.to_bytes(), Some(text))?;
        }
        Ok(())
    }

    fn act(&mut self, a: &Action) -> Step {
        match a {
            Action::Hello => self.send_frame(&hello()),
            Action::Ping(nonce) => self.send_frame(&Frame::Ping(Ping { nonce: *nonce })),
            Action::Detach => self.send_frame(&Frame::Detach),
            Action::Spawn { request_id, size } => self.send_frame(&spawn_frame(*request_id, *size)),
            Action::Frame(f) => self.send_frame(f),
            Action::Mutated(f, m) => {
                self.learn_terminals(f)?;
                if let Some((real, _)) = self.aim(f) {
                    self.send(m.apply(&real.to_bytes()), None)?;
                }
                Ok(())
            }
            Action::Raw(bytes) => self.send(bytes.clone(), None),
            Action::Flood {
                operation,
                request_id,
                count,
            } => self.flood(*operation, *request_id, *count),
        }
    }

    /// Reads what the connection has, for at most `wait`; feeds the oracles.
    fn pump(&mut self, side: bool, wait: Duration) -> Step {
        let conn = if side {
            match &self.side {
                Some(c) => c.key,
                None => return Ok(()),
            }
        } else {
            self.main.key
        };
        let got = self
            .t
            .recv(conn, wait)
            .map_err(|e| finding(Kind::ServerDown, format!("recv: {e}")))?;
        let c = if side {
            self.side.as_mut().unwrap_or_else(|| unreachable!())
        } else {
            &mut self.main
        };
        match got {
            Recv::Nothing => Ok(()),
            Recv::Closed => {
                c.closed = true;
                Ok(())
            }
            Recv::Bytes(b) => {
                c.since_resume += b.len();
                c.decoder.push(&b);
                let mut frames = Vec::new();
                loop {
                    match c.decoder.poll_frame() {
                        Ok(Some(f)) => frames.push(f),
                        Ok(None) => break,
                        Err(e) => {
                            return Err(finding(
                                Kind::Undecodable,
                                format!("a reply does not decode: {e}"),
                            ));
                        }
                    }
                }
                for f in frames {
                    self.on_frame(side, f)?;
                }
                Ok(())
            }
        }
    }

    fn on_frame(&mut self, side: bool, frame: Frame) -> Step {
        let c = if side {
            self.side.as_mut().unwrap_or_else(|| unreachable!())
        } else {
            &mut self.main
        };
        match &frame {
            Frame::Pong(p) => c.pongs.push(p.nonce),
            Frame::HelloOk(h) => c.max_chunk = Some(h.max_chunk_bytes.get()),
            Frame::Detached(d) => {
                let reason = d.reason.unwrap_or(DetachReason::REQUESTED);
                c.detached = Some(reason);
                if reason == DetachReason::SERVER_SHUTDOWN {
                    return Err(finding(
                        Kind::UnexpectedClose("SERVER_SHUTDOWN".into()),
                        "DETACHED{SERVER_SHUTDOWN}: the server is stopping",
                    ));
                }
            }
            Frame::BootstrapChunk(b) => {
                if let Some(max) = c.max_chunk
                    && b.payload.len() > max as usize
                {
                    return Err(finding(
                        Kind::OverLimit,
                        format!(
                            "a {} byte chunk over max_chunk_bytes {max}",
                            b.payload.len()
                        ),
                    ));
                }
            }
            _ => {}
        }
        if side {
            return Ok(());
        }
        match frame {
            Frame::CommandResult(r) => self.answered(r.request_id, "COMMAND_RESULT", false),
            Frame::Error(e) => match e.request_id {
                Some(id) => self.answered(id, "ERROR", true),
                None => Ok(()),
            },
            Frame::TerminalSpawned(s) => {
                if let Some(n) = self.shadow.owed_spawns.get_mut(&s.request_id)
                    && *n > 0
                {
                    *n -= 1;
                    self.out.replies += 1;
                } else if s.request_id < CLEANUP_REQUEST {
                    return Err(
                        self.unowed(&format!("TERMINAL_SPAWNED for request {}", s.request_id))
                    );
                }
                if let phux_proto::frame::SpawnResult::Ok(id) = s.result
                    && !self.own.contains(&id)
                {
                    self.own.push(id);
                    self.out.record.push(Recorded::Spawned {
                        request_id: s.request_id,
                        k: self.own.len() - 1,
                    });
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    fn answered(&mut self, id: u32, what: &str, error: bool) -> Step {
        if id >= CLEANUP_REQUEST {
            return Ok(());
        }
        if let Some(n) = self.shadow.owed.get_mut(&id)
            && *n > 0
        {
            *n -= 1;
            self.out.replies += 1;
            return Ok(());
        }
        if self.shadow.bad_commands > 0 {
            self.shadow.bad_commands -= 1;
            self.out.replies += 1;
            if error {
                return Ok(());
            }
            return Err(finding(
                Kind::AcceptedMalformed,
                format!(
                    "{what} for request {id}, where only the ERROR of a COMMAND that does not \
                     decode was owed"
                ),
            ));
        }
        Err(self.unowed(&format!("{what} for request {id}")))
    }

    /// A reply nothing owed: after a fatal frame, the server acted on what it must ignore.
    fn unowed(&self, what: &str) -> Finding {
        match &self.shadow.fatal {
            Some(why) => finding(
                Kind::ActedAfterFatal {
                    detach: why == "DETACH",
                },
                format!("{what}, sent after {why}"),
            ),
            None => finding(Kind::Unsolicited, format!("{what}, which nothing owed")),
        }
    }

    /// Completes a frame under way (with zero bytes) so a PING can be read, then PINGs the
    /// main connection and reads until its PONG (or the close, or the wait runs out).
    fn sync(&mut self) -> Step {
        let current = std::mem::replace(&mut self.current, usize::MAX);
        let result = self.sync_inner();
        self.current = current;
        result
    }

    fn sync_inner(&mut self) -> Step {
        if self.main.closed {
            return Ok(());
        }
        let missing = self.shadow.missing();
        if missing > 0 {
            if missing > 64 * 1024 {
                return self.pump(false, Duration::ZERO);
            }
            self.send(vec![0; missing], None)?;
        }
        if self.shadow.fatal.is_some() {
            // Nothing after a fatal frame is answered; read what comes.
            let until = Instant::now() + self.wait_unit();
            while !self.main.closed && Instant::now() < until {
                self.pump(false, Duration::from_millis(20))?;
                if self.t.virtual_time() {
                    break;
                }
            }
            return Ok(());
        }
        let nonce = self.next_nonce();
        self.send_frame(&Frame::Ping(Ping { nonce }))?;
        let until = Instant::now() + self.bounds.grace;
        loop {
            self.pump(false, Duration::from_millis(20))?;
            if self.main.pongs.contains(&nonce) || self.main.closed {
                return Ok(());
            }
            if self.t.virtual_time() {
                // Everything the engine will say has been said.
                return Err(finding(
                    Kind::Stalled,
                    "the main connection's PING went unanswered",
                ));
            }
            if Instant::now() >= until {
                return Err(finding(
                    Kind::Stalled,
                    format!(
                        "no PONG on the main connection within {:?}",
                        self.bounds.grace
                    ),
                ));
            }
        }
    }

    fn wait_unit(&self) -> Duration {
        if self.t.virtual_time() {
            Duration::ZERO
        } else {
            Duration::from_millis(200)
        }
    }

    /// An honest connection must get PONG within the liveness bound.
    fn liveness(&mut self) -> Step {
        let Some(side) = &self.side else {
            return Ok(());
        };
        if side.closed {
            return Err(finding(
                Kind::ServerDown,
                "the honest side connection was closed",
            ));
        }
        let key = side.key;
        let nonce = self.next_nonce();
        let _ = self.t.send(key, &Frame::Ping(Ping { nonce }).to_bytes());
        let until = Instant::now() + self.bounds.liveness;
        loop {
            self.pump(true, Duration::from_millis(20))?;
            let side = self.side.as_ref().unwrap_or_else(|| unreachable!());
            if side.pongs.contains(&nonce) {
                return Ok(());
            }
            if side.closed {
                return Err(finding(
                    Kind::ServerDown,
                    "the honest side connection was closed",
                ));
            }
            if self.t.virtual_time() || Instant::now() >= until {
                return Err(finding(
                    Kind::Liveness,
                    format!("an honest PING unanswered after {:?}", self.bounds.liveness),
                ));
            }
        }
    }

    fn flood(&mut self, operation: u128, request_id: u32, count: u16) -> Step {
        // Learn the terminals spawned so far.
        self.sync()?;
        if self.own.is_empty() || self.main.closed {
            return Ok(());
        }
        let terminal = TerminalId::Local(0);
        // A paste's newlines reach the terminal as CR: a cooked tty echoes it as a new line,
        // and the VT that follows (an LF to a terminal) scrolls where nothing translates CR.
        let lines: Vec<u8> = (0..3000)
            .flat_map(|i: u32| format!("netfuzz history line {i:05}\r\x0b").into_bytes())
            .take(60_000)
            .collect();
        let Some(operation_id) = OperationId::from_u128(operation) else {
            return Ok(());
        };
        let paste = Frame::Command(CommandFrame {
            request_id,
            command: Command::ApplyInput(ApplyInput {
                operation_id,
                terminal: terminal.clone(),
                events: vec![InputEvent::Paste(PasteEvent {
                    trust: PasteTrust::Trusted,
                    data: lines,
                })],
            }),
        });
        self.send_frame(&paste)?;
        self.sync()?;
        let screen = Frame::Command(CommandFrame {
            request_id,
            command: Command::GetScreen {
                terminal,
                request_scrollback: Some(0),
                cells: true,
            },
        });
        let Some((real, text)) = self.aim(&screen) else {
            return Ok(());
        };
        let bytes = real.to_bytes();
        let _ = self.t.set_reading(self.main.key, false);
        self.paused_ever = true;
        self.out.record.push(Recorded::Pause);
        // Writes of ten requests: a server that stops reading while its replies cannot be
        // written must not leave this client blocked in a write of its own (each small write
        // costs a socket buffer's worth of overhead, so 300 of them could fill it), and a
        // server must get the chance to write between reads.
        for chunk in 0..count.div_ceil(10) {
            let n = (count - chunk * 10).min(10);
            let some = bytes.repeat(usize::from(n));
            if let Some(framed) = self.shadow.admit(&some, &self.own) {
                self.out.frames += framed.len();
                let _ = self.t.send(self.main.key, &some);
            }
        }
        self.out.record.push(Recorded::Repeat { count, text });
        let settle = Duration::from_secs(2);
        self.t.advance(settle);
        self.out.record.push(Recorded::Wait(settle));
        let _ = self.t.set_reading(self.main.key, true);
        self.out.record.push(Recorded::Resume);
        self.main.since_resume = 0;
        // Read until quiet.
        let mut quiet = 0;
        while quiet < 3 && !self.main.closed {
            let before = self.main.since_resume;
            self.pump(false, Duration::from_millis(100))?;
            if self.main.since_resume == before {
                quiet += 1;
            } else {
                quiet = 0;
            }
            if self.t.virtual_time() {
                break;
            }
        }
        if self.main.since_resume > self.bounds.queue_bound {
            return Err(finding(
                Kind::QueueBound,
                format!(
                    "{} bytes held for a client that stopped reading (bound {})",
                    self.main.since_resume, self.bounds.queue_bound
                ),
            ));
        }
        // The GET_SCREENs of a connection detached for overflow are forgiven at the close.
        Ok(())
    }

    /// End of session: owed replies within the grace, then the close's legitimacy.
    fn finish(&mut self) -> Step {
        let until = Instant::now() + self.bounds.grace;
        let mut virtual_seconds = 0;
        while !self.main.closed && self.shadow.fatal.is_none() && !self.shadow.settled() {
            if self.t.virtual_time() {
                // Virtual time: the grace passes in one-second steps, instantly.
                if virtual_seconds >= self.bounds.grace.as_secs() {
                    break;
                }
                virtual_seconds += 1;
                self.t.advance(Duration::from_secs(1));
                self.pump(false, Duration::ZERO)?;
            } else {
                self.pump(false, Duration::from_millis(50))?;
                if Instant::now() >= until {
                    break;
                }
            }
        }
        if self.main.closed {
            self.pump(false, Duration::ZERO)?;
            if self.main.detached.is_none() && !self.paused_ever {
                return Err(finding(
                    Kind::ClosedWithoutDetached,
                    match &self.shadow.fatal {
                        Some(why) => format!("closed after {why} without DETACHED"),
                        None => "closed without DETACHED".to_owned(),
                    },
                ));
            }
            if self.shadow.fatal.is_none() && !self.paused_ever {
                let mut reason = format!(
                    "{:?}",
                    self.main.detached.unwrap_or(DetachReason::REQUESTED)
                );
                let why = if self.shadow.bad_commands > 0 {
                    "after a COMMAND that does not decode"
                } else {
                    "with no rule broken"
                };
                let kind = if self.shadow.bad_commands > 0 {
                    Kind::UnexpectedClose(format!("{reason}-after-bad-command"))
                } else {
                    Kind::UnexpectedClose(reason.clone())
                };
                reason.make_ascii_uppercase();
                return Err(finding(
                    kind,
                    format!("the server detached ({reason}) {why}"),
                ));
            }
            return Ok(());
        }
        if self.shadow.fatal.is_none()
            && let Some((id, _)) = self.shadow.owed.iter().find(|(_, n)| **n > 0)
        {
            let name = self.names.get(id).cloned().unwrap_or_default();
            return Err(finding(
                Kind::MissingReply(name.clone()),
                format!("{name} request {id} never answered"),
            ));
        }
        if self.shadow.fatal.is_none()
            && let Some((id, _)) = self.shadow.owed_spawns.iter().find(|(_, n)| **n > 0)
        {
            return Err(finding(
                Kind::MissingReply("SPAWN_TERMINAL".into()),
                format!("SPAWN_TERMINAL request {id} never answered"),
            ));
        }
        Ok(())
    }

    /// Kills the session's terminals (not judged: the session is over).
    fn cleanup(&mut self) {
        if self.own.is_empty() {
            return;
        }
        let key = match (&self.side, self.main.closed || self.shadow.fatal.is_some()) {
            (Some(s), _) if !s.closed => s.key,
            (_, false) => self.main.key,
            _ => match self.t.connect() {
                Ok(k) => {
                    let _ = self.t.send(k, &hello().to_bytes());
                    k
                }
                Err(_) => return,
            },
        };
        let mut bytes = Vec::new();
        for (k, terminal) in self.own.iter().enumerate() {
            Frame::Command(CommandFrame {
                request_id: CLEANUP_REQUEST + k as u32,
                command: Command::KillTerminal {
                    terminal: terminal.clone(),
                },
            })
            .encode(&mut bytes);
        }
        let nonce = self.next_nonce();
        Frame::Ping(Ping { nonce }).encode(&mut bytes);
        let _ = self.t.send(key, &bytes);
        // Wait for the PONG behind the kills, so the kills were read before the close.
        let mut seen = Vec::new();
        let until = Instant::now() + Duration::from_secs(2);
        while Instant::now() < until {
            match self.t.recv(key, Duration::from_millis(20)) {
                Ok(Recv::Bytes(b)) => {
                    seen.extend_from_slice(&b);
                    if seen.windows(8).any(|w| w == nonce.to_be_bytes()) {
                        break;
                    }
                }
                Ok(Recv::Nothing) if !self.t.virtual_time() => {}
                _ => break,
            }
        }
    }
}
