//! EVENT payloads: the agent events and the `terminal_control` record.

use crate::ids::ClientId;

/// A terminal's process lifecycle as `terminal_control` reports it (u8; others are errors).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum Lifecycle {
    /// The child runs (wire 0).
    Running,
    /// The process group is stopped by FREEZE (wire 1).
    Frozen,
    /// The child has exited (wire 2).
    Exited,
}

/// What changed, in a `terminal_control` event (u8; others are errors).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum ControlAction {
    /// A cooperative acquire, or a seize of an open lease (wire 0).
    Acquired,
    /// A seize that preempted another holder (wire 1).
    Seized,
    /// The lease was released, by its holder, a disconnect or expiry (wire 2).
    Released,
    /// SIGINT was sent to the process group (wire 3).
    Interrupted,
    /// SIGSTOP was sent (wire 4).
    Frozen,
    /// SIGCONT was sent (wire 5).
    Resumed,
    /// SIGTERM was sent (wire 6).
    Terminated,
    /// SIGKILL was sent (wire 7).
    Killed,
    /// The child exited (wire 8).
    Exited,
}

/// The `terminal_control` event body (AgentEvent tag 0x08).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct TerminalControl {
    /// The lifecycle after the change.
    pub lifecycle: Lifecycle,
    /// The exit status, once the child has exited with one.
    pub exit_status: Option<i32>,
    /// The input lease holder after the change.
    pub input_holder: Option<ClientId>,
    /// What changed.
    pub action: ControlAction,
    /// Who caused it; absent when the server did (lease expiry, child exit).
    pub actor: Option<ClientId>,
}

/// An EVENT payload: `tag u8 ‖ body_len u32 ‖ body`. Unknown tags are kept byte-exact.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub enum AgentEvent {
    /// 0x00.
    CommandStarted,
    /// 0x01.
    CommandFinished {
        /// The command's exit code, if known.
        exit_code: Option<i32>,
    },
    /// 0x02.
    TitleChanged {
        /// The new title.
        title: String,
    },
    /// 0x03.
    Bell,
    /// 0x04; the terminal is the EVENT's field 1.
    PaneSpawned,
    /// 0x05.
    PaneClosed {
        /// The child's exit status, if it exited with one.
        exit_status: Option<i32>,
    },
    /// 0x06.
    Dirty,
    /// 0x07.
    Idle,
    /// 0x08.
    TerminalControl(TerminalControl),
    /// 0x09: an agent asks the user something.
    Asked(Asked),
    /// 0x0a.
    CwdChanged {
        /// The new working directory.
        cwd: String,
    },
    /// Any other tag, kept exactly so a relay re-encodes it byte-identically.
    Unknown {
        /// The tag byte.
        tag: u8,
        /// The body bytes.
        body: Vec<u8>,
    },
}

impl AgentEvent {
    /// The largest tag phux 0.8 names (`cwd_changed`); `Unknown` holds only larger tags.
    pub const MAX_KNOWN_TAG: u8 = 0x0a;
}

/// By hand so `Unknown` never carries a known tag (which would re-decode as that event).
#[cfg(feature = "arbitrary")]
impl<'a> arbitrary::Arbitrary<'a> for AgentEvent {
    fn arbitrary(u: &mut arbitrary::Unstructured<'a>) -> arbitrary::Result<Self> {
        Ok(match u.int_in_range(0u8..=11)? {
            0 => Self::CommandStarted,
            1 => Self::CommandFinished {
                exit_code: u.arbitrary()?,
            },
            2 => Self::TitleChanged {
                title: u.arbitrary()?,
            },
            3 => Self::Bell,
            4 => Self::PaneSpawned,
            5 => Self::PaneClosed {
                exit_status: u.arbitrary()?,
            },
            6 => Self::Dirty,
            7 => Self::Idle,
            8 => Self::TerminalControl(u.arbitrary()?),
            9 => Self::Asked(u.arbitrary()?),
            10 => Self::CwdChanged {
                cwd: u.arbitrary()?,
            },
            _ => Self::Unknown {
                tag: u.int_in_range(Self::MAX_KNOWN_TAG + 1..=u8::MAX)?,
                body: u.arbitrary()?,
            },
        })
    }
}

/// The `asked` event body: TLV fields inside the event body.
#[derive(Clone, PartialEq, Eq, Hash, Debug, Default)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct Asked {
    /// Field 1: the question's id ("" when absent).
    pub id: String,
    /// Field 2: the question ("" when absent).
    pub question: String,
    /// Field 3, repeated in order: suggested answers.
    pub suggestions: Vec<String>,
    /// Field 4: seconds since the question was asked.
    pub elapsed_seconds: Option<u64>,
}
