//! The descriptor limit (RLIMIT_NOFILE): raised for the server, given back to its children.
//!
//! Every connection costs the server a descriptor, every terminal at least two (its master
//! and its pidfd), so the usual soft limit of 1,024 would let a local
//! program that opens connections in a loop starve the terminals ([SERVER.LIMIT.4]). The hard
//! limit is the ceiling the administrator set; the soft one is only a default, kept low for
//! programs that still use `select(2)`. The server uses epoll, so it raises its soft limit to
//! the hard one at start. Its children get the soft limit the server was started with, as if
//! the server were not there.

use std::sync::OnceLock;

use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};

/// The soft limit the server was started with, once [`raise`] has raised it.
static INHERITED: OnceLock<Option<u64>> = OnceLock::new();

/// Raises the soft descriptor limit to the hard one. Returns the limits before and after, or
/// `None` when there was nothing to raise (already equal, or an unlimited hard limit, which
/// the kernel would refuse as a soft one).
pub fn raise() -> rustix::io::Result<Option<(u64, u64)>> {
    let limit = getrlimit(Resource::Nofile);
    let (Some(soft), Some(hard)) = (limit.current, limit.maximum) else {
        return Ok(None);
    };
    if soft >= hard {
        return Ok(None);
    }
    setrlimit(
        Resource::Nofile,
        Rlimit {
            current: Some(hard),
            maximum: Some(hard),
        },
    )?;
    let _ = INHERITED.set(Some(soft));
    Ok(Some((soft, hard)))
}

/// The limit a child should get back before it execs, when the server raised its own.
pub fn for_children() -> Option<Rlimit> {
    let soft = (*INHERITED.get()?)?;
    let now = getrlimit(Resource::Nofile);
    Some(Rlimit {
        current: Some(soft),
        maximum: now.maximum,
    })
}
