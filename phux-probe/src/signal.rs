//! The signals the probe knows: a word of its command language, a fact its machine handles,
//! what its driver catches.

/// The signals the probe can catch and name. SIGKILL and SIGSTOP cannot be caught, so they
/// never reach the machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProbeSignal {
    /// SIGINT: a server's INTERRUPT.
    Int,
    /// SIGTERM: a server's TERMINATE.
    Term,
    /// SIGHUP: the terminal hung up.
    Hup,
    /// SIGUSR1: ends a stall (for local tests; a server cannot send it).
    Usr1,
    /// SIGUSR2.
    Usr2,
    /// SIGCONT: a server's RESUME; ends a stall.
    Cont,
    /// SIGWINCH: the window size changed.
    Winch,
}

impl ProbeSignal {
    /// Every signal the probe knows, in report-name order.
    pub const ALL: [Self; 7] = [
        Self::Int,
        Self::Term,
        Self::Hup,
        Self::Usr1,
        Self::Usr2,
        Self::Cont,
        Self::Winch,
    ];

    /// The name used in commands and reports (`INT`, `TERM`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Self::Int => "INT",
            Self::Term => "TERM",
            Self::Hup => "HUP",
            Self::Usr1 => "USR1",
            Self::Usr2 => "USR2",
            Self::Cont => "CONT",
            Self::Winch => "WINCH",
        }
    }

    /// The signal with this report name; case-sensitive, without a `SIG` prefix.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.name() == name)
    }

    /// Whether the OS default disposition ends the process (CONT and WINCH are ignored).
    pub fn is_fatal_by_default(self) -> bool {
        !matches!(self, Self::Cont | Self::Winch)
    }

    pub(crate) fn index(self) -> usize {
        self as usize
    }
}
