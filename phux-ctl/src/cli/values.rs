//! Parsers of single values on the command line: ids, names, sizes, timeouts.

use std::time::Duration;

use phux_proto::{OperationId, TerminalId};

use crate::names::{Target, check_name};

pub(super) fn parse_operation(text: &str) -> Result<OperationId, String> {
    let digits = text.strip_prefix("0x").unwrap_or(text);
    u128::from_str_radix(digits, 16)
        .ok()
        .and_then(OperationId::from_u128)
        .ok_or_else(|| format!("{text:?} is not an operation id (0x and 32 hex digits)"))
}

/// Parses a terminal id (as [`parse_terminal`]) or a name ([`check_name`]).
pub fn parse_target(text: &str) -> Result<Target, String> {
    match parse_terminal(text) {
        Ok(id) => Ok(Target::Id(id)),
        Err(not_id) => match check_name(text) {
            Ok(()) => Ok(Target::Name(text.to_owned())),
            Err(_) if text.contains(':') => Err(not_id),
            Err(not_name) => Err(format!(
                "{not_name}; nor is it a terminal id (local:3 or 3)"
            )),
        },
    }
}

pub(super) fn parse_name(text: &str) -> Result<String, String> {
    check_name(text).map(|()| text.to_owned())
}

/// Parses `local:3`, `3` or `satellite:HOST:3`.
pub fn parse_terminal(text: &str) -> Result<TerminalId, String> {
    let bad = || format!("{text:?} is not a terminal id (write local:3 or 3)");
    if let Ok(n) = text.parse::<u32>() {
        return Ok(TerminalId::Local(n));
    }
    if let Some(n) = text.strip_prefix("local:") {
        return n.parse().map(TerminalId::Local).map_err(|_| bad());
    }
    if let Some(rest) = text.strip_prefix("satellite:") {
        let (host, id) = rest.rsplit_once(':').ok_or_else(bad)?;
        let host = host
            .strip_prefix('"')
            .and_then(|h| h.strip_suffix('"'))
            .unwrap_or(host);
        if host.is_empty() {
            return Err(bad());
        }
        let id = id.parse().map_err(|_| bad())?;
        return Ok(TerminalId::Satellite {
            host: host.to_owned(),
            id,
        });
    }
    Err(bad())
}

/// Parses `COLSxROWS` (each 1..=65535).
pub fn parse_size(text: &str) -> Result<(u16, u16), String> {
    let bad = || format!("{text:?} is not a size (write COLSxROWS, for example 120x40)");
    let (cols, rows) = text.split_once(['x', 'X']).ok_or_else(bad)?;
    let cols: u16 = cols.trim().parse().map_err(|_| bad())?;
    let rows: u16 = rows.trim().parse().map_err(|_| bad())?;
    if cols == 0 || rows == 0 {
        return Err(format!(
            "{text:?}: a size needs at least one column and one row"
        ));
    }
    Ok((cols, rows))
}

/// Parses a timeout in seconds (`5`, `0.5`).
pub(super) fn parse_timeout(text: &str) -> Result<Duration, String> {
    text.parse::<f64>()
        .ok()
        .filter(|s| *s > 0.0)
        .and_then(|s| Duration::try_from_secs_f64(s).ok())
        .ok_or_else(|| format!("{text:?} is not a number of seconds above 0"))
}

pub(super) fn parse_env(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((k, v)) if !k.is_empty() => Ok((k.to_owned(), v.to_owned())),
        _ => Err(format!("{text:?} is not K=V")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terminal_ids_in_both_forms() {
        assert_eq!(parse_terminal("3"), Ok(TerminalId::Local(3)));
        assert_eq!(parse_terminal("local:3"), Ok(TerminalId::Local(3)));
        assert_eq!(
            parse_terminal("satellite:\"h\":4"),
            Ok(TerminalId::Satellite {
                host: "h".into(),
                id: 4
            })
        );
        for bad in ["", "local:", "local:x", "-1", "satellite::3", "foo:3"] {
            assert!(parse_terminal(bad).is_err(), "{bad:?}");
        }
        // What spawn prints parses back.
        let id = TerminalId::Local(17);
        assert_eq!(parse_terminal(&id.to_string()), Ok(id));
    }

    #[test]
    fn sizes_and_timeouts_parse() {
        assert_eq!(parse_size("120x40"), Ok((120, 40)));
        for bad in ["120", "x40", "0x5", "5x0", "ax3", "70000x3"] {
            assert!(parse_size(bad).is_err(), "{bad}");
        }
        assert_eq!(parse_timeout("0.5"), Ok(Duration::from_millis(500)));
        for bad in ["0", "-1", "x", "inf", "NaN"] {
            assert!(parse_timeout(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn operation_ids_parse_as_printed() {
        let id = OperationId::from_u128(0xabc).expect("id");
        assert_eq!(parse_operation(&id.to_string()), Ok(id));
        assert!(parse_operation("0x0").is_err());
        assert!(parse_operation("zz").is_err());
    }
}
