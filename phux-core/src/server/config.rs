//! Server-wide settings and what a spawn runs.

use std::time::Duration;

/// The units of work of one connection the engine handles per `Received` by default
/// ([SERVER.FAIR.1]; [`ServerConfig::frames_per_receive`]): a read of 64 KiB holds thousands
/// of small requests, each of which may cost a screen's reflow (a resize) or a reply; the
/// other sources wait no longer than this many of them.
pub const FRAMES_PER_RECEIVE: usize = 32;

/// Server-wide settings.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct ServerConfig {
    /// This incarnation's id (HELLO_OK field 5): 16 random bytes from the driver's OS RNG.
    pub server_id: Vec<u8>,
    /// Size for terminals spawned without one.
    pub default_size: (u16, u16),
    /// History rows each terminal retains for GET_SCREEN and scrollback.
    pub scrollback_lines: usize,
    /// Unsent output bytes (TERMINAL_OUTPUT, bootstrap) a connection may have queued; past
    /// it the stream is tombstoned, and bootstrapped again once below half of it.
    pub output_budget: usize,
    /// Unsent control bytes (results, events, ...) a connection may have queued; past it the
    /// connection is detached.
    pub control_budget: usize,
    /// Write jobs queued for one terminal's PTY and not yet completed.
    pub max_jobs_per_terminal: usize,
    /// The most terminals alive at once.
    pub max_terminals: usize,
    /// The program a SPAWN_TERMINAL without a command runs.
    pub default_command: Vec<String>,
    /// How long a connection may take to complete HELLO before it is closed
    /// ([SERVER.LIMIT.2]): a peer that connects and says nothing must not hold a slot forever.
    pub handshake_timeout: Duration,
    /// The most connections held at once, those being closed included ([SERVER.LIMIT.3]):
    /// each costs the driver a descriptor and buffers, so a flood is refused past it.
    pub max_connections: usize,
    /// The most frames of one connection handled per `Received` ([SERVER.FAIR.1]), a spawn,
    /// a resize, an attach or a screen read counting as 8 and every 64 KiB of replies a request
    /// queues as one more; the rest stay buffered until the driver asks again
    /// ([`ServerEngine::is_backlogged`]), so that one client's flood waits its turn.
    /// [`FRAMES_PER_RECEIVE`] by default; `usize::MAX` handles all at once.
    ///
    /// [`ServerEngine::is_backlogged`]: crate::server::ServerEngine::is_backlogged
    pub frames_per_receive: usize,
    /// The most bytes queued for all connections together ([SERVER.LIMIT.5]): past it the
    /// connection holding the most is detached, so that many slow readers, each within its
    /// own budgets, cannot together exhaust the server's memory.
    pub queued_budget: usize,
    /// How many exited terminals are kept with their last screen and exit status
    /// ([TERMINAL.REMAIN.1], [SERVER.REMAIN.1]); 0 forgets a terminal when its program exits,
    /// as phux 0.8's reference server does. Not in an upgrade's image: the new binary's own
    /// setting applies.
    #[serde(skip)]
    pub remain_on_exit: usize,
    /// How long an exited terminal is kept at most ([SERVER.REMAIN.2]).
    #[serde(skip)]
    pub remain_for: Duration,
}

impl ServerConfig {
    /// Defaults for everything but the incarnation id.
    pub fn new(server_id: Vec<u8>) -> Self {
        Self {
            server_id,
            default_size: (80, 24),
            scrollback_lines: 2000,
            output_budget: 4 * 1024 * 1024,
            control_budget: 1024 * 1024,
            max_jobs_per_terminal: 1024,
            max_terminals: 4096,
            default_command: vec!["/bin/sh".to_owned()],
            handshake_timeout: Duration::from_secs(10),
            max_connections: 256,
            frames_per_receive: FRAMES_PER_RECEIVE,
            queued_budget: 256 * 1024 * 1024,
            remain_on_exit: 0,
            remain_for: Duration::from_hours(24),
        }
    }
}

/// What a new terminal should run.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct SpawnSpec {
    /// Program and arguments (never empty).
    pub command: Vec<String>,
    /// Working directory; `None` = the server's.
    pub cwd: Option<String>,
    /// Environment; `None` = inherit the server's. `TERM` is set from `term` either way.
    pub env: Option<Vec<(String, String)>>,
    /// The `TERM` value: the `term` field, else the `TERM` in `env`, else `xterm-256color`.
    pub term: String,
    /// Initial columns.
    pub cols: u16,
    /// Initial rows.
    pub rows: u16,
}
