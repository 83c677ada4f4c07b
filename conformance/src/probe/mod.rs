//! The probe child: a small deterministic program that conformance transcripts run inside a
//! terminal, so that what they assert on never depends on a shell prompt.
//!
//! The probe is driven through its own input (what a server writes to the PTY) and answers on
//! its output with one report per line. It is split in two:
//!
//! - [`ProbeMachine`]: the whole behaviour, with no I/O. It is fed the bytes the probe read
//!   ([`ProbeMachine::feed`]) and the things that happened to it ([`ProbeMachine::handle`]:
//!   signals, a stall timer, answers to its queries, its grandchild's reports) and returns
//!   [`ProbeAction`]s for a host to perform in order. Every byte a transcript can observe is
//!   produced by the machine, so the in-process conformance transport can host it as a
//!   simulated child and see exactly what a real PTY shows.
//! - [`run`]: the thin driver behind `phux-conformance probe [ARGS]...`, for a real tty
//!   (termios on stdin, signals, a grandchild process). Arguments after `probe` are ignored
//!   (only a leading `--grandchild` means something), so a spawner can pass any argument
//!   vector and read it back with `:report args`.
//!
//! # Host contract
//!
//! Call [`ProbeMachine::start`] once, then perform its actions. Afterwards, read input only
//! while [`ProbeMachine::wants_input`] is true (it is false while the probe is stalled, waiting
//! for a query's answer or for its grandchild, and after it exited): a host that stops reading
//! is what makes the terminal's input queue fill up. Perform the actions of each call in order
//! before making the next call. [`ProbeAction::Query`] is always the last action of a list;
//! answer it with [`ProbeEvent::Answer`] before anything else. Signals may be handed over at
//! any time, also while the probe is stalled. SIGKILL and SIGSTOP never reach the machine: the
//! host applies them itself (the child dies with signal 9, or stops being fed until SIGCONT).
//! A host simulating the grandchild hands every signal the group receives to the machine as
//! [`ProbeEvent::Signal`] and, while [`ProbeMachine::has_grandchild`], also as
//! `ProbeEvent::Grandchild(GrandchildEvent::Signal(..))`.
//!
//! # Output
//!
//! Every report is written as `\r\n` `PROBE <seq> <KIND> [<args>]` `\r\n`: the leading CR LF
//! puts it on a line of its own even after echoed input. `<seq>` is a decimal counter, 0 for
//! the first report and one more for each report after it, so reports can be matched in order
//! and none can be missed unnoticed. Arguments are single words separated by one space; byte
//! strings are lowercase hex with two digits per byte, and `-` when a string that may be empty
//! is (an argument, a value). The real driver turns output processing
//! (OPOST) off, so the terminal receives exactly these bytes.
//!
//! The probe starts in the terminal's own mode (canonical, as a fresh PTY is) with echo turned
//! off, so that a terminal's output holds reports only. Its first report is `PROBE 0 READY`.
//!
//! # Input: commands and payload
//!
//! A *command* is a line that starts with `:` at the start of a line (the first byte read,
//! or the byte after a CR or LF) and ends with CR, LF or CR LF; it works the same in canonical
//! and in raw mode. Everything else is *payload*. A line starting with `:` is held until its
//! terminator; if it is not a command (below) it is reported as `BADCMD`, and if it grows past
//! 256 bytes without a terminator it is released as payload.
//!
//! Payload is reported as `READ <hex>`, terminators included:
//! - in canonical mode one report per line: bytes are held until LF (the kernel's own line
//!   end), a command, end of input, or 4,096 bytes without LF;
//! - in raw mode one report per `feed` (per read(2)): what one read returned, up to a command.
//!   A server's single write can arrive in more than one read, so assert on exact payload in
//!   raw mode with `:count` / `:checksum`, or concatenate READs.
//!
//! Commands (`<SIG>` is one of `INT TERM HUP USR1 USR2 CONT WINCH`):
//!
//! | command | effect | report |
//! |---|---|---|
//! | `:raw` / `:canon` | raw mode (cfmakeraw: no ICANON, ISIG, ICRNL) / the terminal's original mode | `TERMIOS` |
//! | `:echo on` / `:echo off` | turn ECHO on / off | `TERMIOS` |
//! | `:report termios` | read termios now | `TERMIOS <canon\|raw> <[-]echo> <[-]isig> <[-]icrnl>` |
//! | `:report pgrp` | pid, process group, session, the tty's foreground group | `PGRP <pid> <pgrp> <sid> <fg\|->` |
//! | `:report size` | the tty's window size | `SIZE <cols> <rows>` |
//! | `:report args` | the argument vector, the program name first | `ARGS <str>...` |
//! | `:report cwd` | the working directory | `CWD <str>` |
//! | `:report environ` | every environment entry `NAME=VALUE`, sorted by bytes | `ENVIRON <str>...` |
//! | `:report env <NAME>` | one variable (the first entry named so, as getenv(3) finds it) | `ENV <NAME> <str>` or `ENV <NAME> UNSET` |
//! | `:stall <ms>` | stop reading for `<ms>` milliseconds | `STALLING <ms>`, later `RESUMED timer` |
//! | `:stall` | stop reading until SIGCONT or SIGUSR1 | `STALLING forever`, later `RESUMED <SIG>` |
//! | `:exit <code>` | exit with `<code>` (0-255; `:exit` alone is 0) | `EXITING <code>` |
//! | `:ignore <SIG>` / `:handle <SIG>` / `:default <SIG>` | set the signal's disposition | `IGNORING` / `HANDLING` / `DEFAULT <SIG>` |
//! | `:grandchild` | spawn a grandchild in the probe's process group | `GRANDCHILD READY` once it catches signals |
//! | `:count` | payload read so far | `COUNT <bytes> <lines>` |
//! | `:checksum` | SHA-256 of the payload since the last reset | `CHECKSUM <64 hex> <bytes>` |
//! | `:checksum-reset` | restart the checksum | `CHECKSUM-RESET` |
//! | `:print <hex>` | write these bytes to the terminal (mode changes, for instance) | the bytes, then `PRINTED <n>` |
//! | `:flood <n>` | write `n` bytes (at most 64 MiB) of text, `a` to `z` repeated, at once | the bytes, then `FLOODED <n>` |
//! | `:mark <word>` | nothing: a synchronisation point | `MARK <word>` |
//!
//! Stalls: a stalled probe reads nothing, including commands, so a stall ends by its timer or
//! by SIGCONT or SIGUSR1 (a server's RESUME sends SIGCONT). A stall-ending signal is never
//! fatal: SIGUSR1 with its default disposition ends the stall instead of killing the probe.
//! Input read before the stall began is kept and processed after it.
//!
//! Lines in `COUNT` are completed payload lines: each LF, and each CR not followed by LF.
//!
//! Signals: by default INT, TERM, HUP, USR1 and USR2 kill the probe (it dies by that signal, as
//! a program without handlers would) and CONT and WINCH do nothing. `:handle` reports each
//! arrival as `SIGNAL <SIG>` and keeps running; `:ignore` drops it silently. The grandchild
//! reports every signal of the list it receives as `GRANDCHILD SIGNAL <SIG>` (relayed by the
//! probe, so reports keep one sequence), `GRANDCHILD GONE` if it dies while the probe lives, and
//! exits when the probe does.
//!
//! `READY` is written only once every handler is in place, and `GRANDCHILD READY` once the
//! grandchild's are: a signal sent after either report is never lost. Like the kernel's own
//! pending set, two signals of one kind that arrive together may be reported once.
//!
//! Other reports: `EOF` then `EXITING 0` when a read returns end of input (Ctrl-D at the start
//! of a canonical line); `FAILED <what> <message>` when a query or the grandchild's spawn
//! fails; `BADCMD <hex>` for a line starting with `:` that is no command (hex of the whole
//! line without its terminator).
//!
//! # Report grammar
//!
//! ```text
//! report   = CRLF "PROBE" SP seq SP body CRLF
//! seq      = 1*DIGIT                      ; 0, 1, 2, ... in output order
//! body     = "READY"
//!          / "READ" SP hex
//!          / "TERMIOS" SP ("canon" / "raw") SP flag "echo" SP flag "isig" SP flag "icrnl"
//!          / "PGRP" SP num SP num SP num SP (num / "-")
//!          / "SIZE" SP num SP num
//!          / "ARGS" *(SP str)
//!          / "CWD" SP str
//!          / "ENVIRON" *(SP str)
//!          / "ENV" SP word SP (str / "UNSET")
//!          / "STALLING" SP (num / "forever")
//!          / "RESUMED" SP ("timer" / sig)
//!          / "EXITING" SP num
//!          / ("IGNORING" / "HANDLING" / "DEFAULT") SP sig
//!          / "SIGNAL" SP sig
//!          / "GRANDCHILD" SP ("READY" / "GONE" / "SIGNAL" SP sig)
//!          / "COUNT" SP num SP num
//!          / "CHECKSUM" SP 64HEXLC SP num
//!          / "CHECKSUM-RESET"
//!          / "PRINTED" SP num
//!          / "FLOODED" SP num
//!          / "MARK" SP word
//!          / "EOF"
//!          / "FAILED" SP ("termios" / "pgrp" / "size" / "args" / "cwd" / "environ"
//!                       / "grandchild") SP *VCHAR-or-SP
//!          / "BADCMD" SP hex
//! flag     = [ "-" ]
//! sig      = "INT" / "TERM" / "HUP" / "USR1" / "USR2" / "CONT" / "WINCH"
//! hex      = 1*(2HEXLC)
//! str      = hex / "-"                    ; "-": the empty string
//! word     = 1*64(ALPHA / DIGIT / "-" / "_" / ".")
//! ```

mod command;
mod driver;
mod grandchild;
mod machine;

pub use driver::{ProbeArgs, run};
pub use grandchild::GrandchildEvent;
pub use machine::{
    Answer, ProbeAction, ProbeEvent, ProbeMachine, ProbeSignal, ProcessReport, Query, TermiosReport,
};
