//! The in-place upgrade's operating-system side: the new binary opened once and asked whether
//! it reads our state, the image written into a sealed memfd and adopted there on trial, the
//! descriptors that cross the exec, the exec itself, and taking the descriptors back on the
//! other side.
//!
//! The protocol side (what UPGRADE means, the engine's whole state as data) is phux-core's;
//! the driver (`driver/handover.rs`) sequences the steps:
//!
//! 1. **check**: the binary is opened once ([`Exe`]): everything below runs that file, however
//!    its path changes meanwhile. `BIN --check-upgrade VERSION` runs as a child ([`Checker`])
//!    while the loop serves on; it must exit 0 and print [`check_line`] within
//!    [`CHECK_TIMEOUT`] ([SERVER.UPGRADE.EXEC.2]);
//! 2. **quiesce**: the engine starts no new PTY write; once no job is in progress
//!    (bounded by [`QUIESCE_BOUND`]) ...
//! 3. **trial**: the engine's state and the [`HostImage`] are written once, straight into a
//!    memfd, which is then sealed ([`image_file`], [`seal`]); a child of the new binary,
//!    `BIN --check-adopt` with the image on its stdin, reads and validates all of it as an
//!    adoption does and prints [`adopt_line`] ([SERVER.UPGRADE.EXEC.10]);
//! 4. **commit**: the shutdown and upgrade signals are blocked (`Signals::hold`), every
//!    descriptor to keep loses `FD_CLOEXEC` ([`Inherit`]), and the process execs the new
//!    binary in place ([`exec()`]): the same pid, so the PTY children stay our children;
//! 5. **adopt**: the new image maps the image ([`load_image`]), takes the descriptors back
//!    ([`adopt_fds`]), rebuilds the engine and the host, answers the requester and only then
//!    unblocks the signals; if it cannot, it execs the previous binary (kept open as a
//!    descriptor, [`open_own_exe`]) with the same image and the reason.
//!
//! By file: `check.rs` (the binary opened once and its two checks), `host_image.rs` (what the
//! host's half of the image holds, and its check against the engine's), `memfd.rs` (the
//! image's sealed file, mapped), `exec.rs` (the descriptors that cross the exec, the exec, and
//! taking them back), `error.rs` (why an upgrade did not happen).

use std::time::Duration;

/// How long the engine may take to become quiet (no PTY write job in progress) once the
/// check passed. A job in progress is a write a child is not reading; 2 s is long enough for
/// any child that reads its input, and short enough that one that does not fails the upgrade
/// quickly ([SERVER.UPGRADE.EXEC.3]).
pub const QUIESCE_BOUND: Duration = Duration::from_secs(2);

/// The environment variable that makes a new image (not one taking its state back) fail its
/// adoption after reading the image, as a binary that cannot adopt would: the way the tests
/// reach the way back of [SERVER.UPGRADE.EXEC.6] with a real binary. It is removed from the
/// environment of the previous binary exec'd then.
pub const TEST_FAIL_ADOPTION: &str = "PHUX_MIO_SERVER_TEST_FAIL_ADOPTION";

/// The variable an upgrade names the descriptors it hands over in, `IMAGE PREVIOUS` (the
/// image's memfd and the previous binary's descriptor), so that the new image runs under the
/// command line the server was started with, as `ps` and `pgrep -f` know it
/// ([SERVER.UPGRADE.EXEC.14]). Used only with a binary whose `--check-upgrade` printed
/// [`ADOPT_ENV_LINE`]; an older one is exec'd as `BIN --adopt-image IMAGE --previous-exe
/// PREVIOUS -- ARGS`. The new image removes it from its environment first thing.
pub const ADOPT_ENV: &str = "PHUX_MIO_SERVER_ADOPT";

/// With [`ADOPT_ENV`], on the way back ([SERVER.UPGRADE.EXEC.6]): why the image the state went
/// to could not adopt it, for the image taking it back to tell the requester.
pub const ADOPT_FAILED_ENV: &str = "PHUX_MIO_SERVER_ADOPT_FAILED";

/// The line `--check-upgrade` prints after [`check_line`]'s when the binary takes its
/// descriptors from [`ADOPT_ENV`] ([SERVER.UPGRADE.EXEC.14]).
pub const ADOPT_ENV_LINE: &str = "phux-mio-server adopts through PHUX_MIO_SERVER_ADOPT";

mod check;
mod error;
mod exec;
mod held;
mod host_image;
mod memfd;

pub use check::{CHECK_TIMEOUT, Checker, Exe, Summary, adopt_line, check_line, trial_timeout};
pub use error::UpgradeError;
pub use exec::{Inherit, adopt_fds, exec, fd_path, open_own_exe, set_cloexec};
pub(crate) use host_image::{Bytes, ConnImageRef, HostImageRef, PieceRef};
pub use host_image::{
    ConnImage, ConnTransport, Held, HostImage, Launch, Length, ListenerImage, Piece, TermImage,
    WsListenerImage,
};
pub use memfd::{ImageBytes, Map, image_file, load_image, seal};
