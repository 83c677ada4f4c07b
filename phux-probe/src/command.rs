//! Parsing one command line (the text after the leading `:`, without its terminator).

use std::time::Duration;

use crate::signal::ProbeSignal;

/// The longest `:mark` word: marks are labels, not payload.
const MAX_MARK: usize = 64;
/// The most a `:flood` writes: enough to overrun any outbound budget, little enough to hold
/// in memory at once.
pub(crate) const MAX_FLOOD: usize = 64 * 1024 * 1024;
/// The most cells a `:flood-styled` writes: a whole 1024 x 1024 screen, some 40 MiB of text.
pub(crate) const MAX_STYLED: usize = 1024 * 1024;

/// A parsed probe command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Command {
    Raw,
    Canon,
    Echo(bool),
    ReportTermios,
    ReportPgrp,
    ReportSize,
    ReportArgs,
    ReportCwd,
    ReportEnviron,
    /// One variable, by name.
    ReportEnv(String),
    /// `None`: until SIGCONT or SIGUSR1.
    Stall(Option<Duration>),
    Exit(u8),
    Ignore(ProbeSignal),
    Handle(ProbeSignal),
    Default(ProbeSignal),
    Grandchild,
    Count,
    Checksum,
    ChecksumReset,
    Print(Vec<u8>),
    /// `:flood <n>`: `n` bytes of printable text, as fast as the terminal takes them.
    Flood(usize),
    /// `:flood-styled <n>`: `n` cells, each with a style of its own.
    FloodStyled(usize),
    Mark(String),
}

impl Command {
    /// Parses the bytes after `:`. `None` when the line is no command.
    pub(crate) fn parse(line: &[u8]) -> Option<Self> {
        let text = std::str::from_utf8(line).ok()?;
        let mut words = text.split_ascii_whitespace();
        let name = words.next()?;
        let arg = words.next();
        let extra = words.next();
        if words.next().is_some() {
            return None;
        }
        // Only `report env NAME` takes a second argument.
        if let Some(var) = extra {
            return (name == "report" && arg == Some("env") && is_word(var))
                .then(|| Self::ReportEnv(var.to_owned()));
        }
        let command = match (name, arg) {
            ("raw", None) => Self::Raw,
            ("canon", None) => Self::Canon,
            ("echo", Some("on")) => Self::Echo(true),
            ("echo", Some("off")) => Self::Echo(false),
            ("report", Some("termios")) => Self::ReportTermios,
            ("report", Some("pgrp")) => Self::ReportPgrp,
            ("report", Some("size")) => Self::ReportSize,
            ("report", Some("args")) => Self::ReportArgs,
            ("report", Some("cwd")) => Self::ReportCwd,
            ("report", Some("environ")) => Self::ReportEnviron,
            ("stall", None) => Self::Stall(None),
            ("stall", Some(ms)) => Self::Stall(Some(Duration::from_millis(decimal(ms)?))),
            ("exit", None) => Self::Exit(0),
            ("exit", Some(code)) => Self::Exit(u8::try_from(decimal(code)?).ok()?),
            ("ignore", Some(sig)) => Self::Ignore(ProbeSignal::from_name(sig)?),
            ("handle", Some(sig)) => Self::Handle(ProbeSignal::from_name(sig)?),
            ("default", Some(sig)) => Self::Default(ProbeSignal::from_name(sig)?),
            ("grandchild", None) => Self::Grandchild,
            ("count", None) => Self::Count,
            ("checksum", None) => Self::Checksum,
            ("checksum-reset", None) => Self::ChecksumReset,
            ("print", Some(hex)) => Self::Print(parse_hex(hex)?),
            ("flood", Some(n)) => Self::Flood(
                usize::try_from(decimal(n)?)
                    .ok()
                    .filter(|&n| n <= MAX_FLOOD)?,
            ),
            ("flood-styled", Some(n)) => Self::FloodStyled(
                usize::try_from(decimal(n)?)
                    .ok()
                    .filter(|&n| n <= MAX_STYLED)?,
            ),
            ("mark", Some(word)) if is_word(word) => Self::Mark(word.to_owned()),
            _ => return None,
        };
        Some(command)
    }
}

/// Digits only: `+5` or `0x10` are not numbers here, so a typo is a BADCMD, not a surprise.
fn decimal(text: &str) -> Option<u64> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

fn is_word(text: &str) -> bool {
    !text.is_empty()
        && text.len() <= MAX_MARK
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

fn parse_hex(text: &str) -> Option<Vec<u8>> {
    let digits = text.as_bytes();
    if digits.is_empty() || !digits.len().is_multiple_of(2) {
        return None;
    }
    digits
        .chunks_exact(2)
        .map(|pair| {
            let hi = char::from(pair[0]).to_digit(16)?;
            let lo = char::from(pair[1]).to_digit(16)?;
            u8::try_from(hi << 4 | lo).ok()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Option<Command> {
        Command::parse(text.as_bytes())
    }

    #[test]
    fn every_command_parses() {
        assert_eq!(parse("raw"), Some(Command::Raw));
        assert_eq!(parse("canon"), Some(Command::Canon));
        assert_eq!(parse("echo on"), Some(Command::Echo(true)));
        assert_eq!(parse("echo off"), Some(Command::Echo(false)));
        assert_eq!(parse("report termios"), Some(Command::ReportTermios));
        assert_eq!(parse("report pgrp"), Some(Command::ReportPgrp));
        assert_eq!(parse("report size"), Some(Command::ReportSize));
        assert_eq!(parse("report args"), Some(Command::ReportArgs));
        assert_eq!(parse("report cwd"), Some(Command::ReportCwd));
        assert_eq!(parse("report environ"), Some(Command::ReportEnviron));
        assert_eq!(
            parse("report env TERM"),
            Some(Command::ReportEnv("TERM".into()))
        );
        assert_eq!(parse("stall"), Some(Command::Stall(None)));
        assert_eq!(
            parse("stall 250"),
            Some(Command::Stall(Some(Duration::from_millis(250))))
        );
        assert_eq!(parse("exit"), Some(Command::Exit(0)));
        assert_eq!(parse("exit 255"), Some(Command::Exit(255)));
        assert_eq!(parse("ignore INT"), Some(Command::Ignore(ProbeSignal::Int)));
        assert_eq!(
            parse("handle TERM"),
            Some(Command::Handle(ProbeSignal::Term))
        );
        assert_eq!(
            parse("default WINCH"),
            Some(Command::Default(ProbeSignal::Winch))
        );
        assert_eq!(parse("grandchild"), Some(Command::Grandchild));
        assert_eq!(parse("count"), Some(Command::Count));
        assert_eq!(parse("checksum"), Some(Command::Checksum));
        assert_eq!(parse("checksum-reset"), Some(Command::ChecksumReset));
        assert_eq!(
            parse("print 1b5B3f3168"),
            Some(Command::Print(vec![0x1b, 0x5b, 0x3f, 0x31, 0x68]))
        );
        assert_eq!(parse("mark a-1_b.c"), Some(Command::Mark("a-1_b.c".into())));
        assert_eq!(parse("flood 8000000"), Some(Command::Flood(8_000_000)));
        assert_eq!(parse("flood 0"), Some(Command::Flood(0)));
        assert_eq!(
            parse("flood-styled 1048576"),
            Some(Command::FloodStyled(1_048_576))
        );
        // Surrounding and repeated blanks are fine.
        assert_eq!(parse("  echo\t off "), Some(Command::Echo(false)));
    }

    #[test]
    fn near_misses_are_not_commands() {
        for bad in [
            "",
            "RAW",
            "raw now",
            "echo",
            "echo maybe",
            "report",
            "report pid",
            "report env",
            "report env A B",
            "report env a=b",
            "report size TERM",
            "mark env TERM",
            "stall -1",
            "stall +5",
            "stall 1.5",
            "stall 99999999999999999999999",
            "exit 256",
            "exit 0x1",
            "ignore SIGINT",
            "ignore KILL",
            "handle",
            "print",
            "print abc",
            "print zz",
            "mark",
            "mark a b",
            "mark a/b",
            "count 1",
            "flood",
            "flood 1k",
            "flood 67108865",
            "flood-styled",
            "flood-styled -1",
            "flood-styled 1048577",
        ] {
            assert_eq!(parse(bad), None, "{bad:?}");
        }
        assert_eq!(parse(&format!("mark {}", "m".repeat(65))), None);
        assert_eq!(Command::parse(b"raw\xff"), None);
    }
}
