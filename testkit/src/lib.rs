//! What the workspace's tests share about their surroundings: which programs are installed,
//! where the phux reference peer is, and what a test does when something it needs is missing.
//!
//! # Skipping
//!
//! A test that cannot run here (a program is not installed, the reference peer is absent, it
//! needs root) calls [`skip!`] with the reason and returns. libtest shows such a test as `ok`
//! and hides what it printed, so a skip is also *recorded*: when `PHUX_SKIP_LOG` names a file,
//! one line per skip is appended to it (`package test: reason`), and `.ci/run` prints the
//! count and every line at the end of the run. Under `CI` a skip that cannot be recorded
//! (no `PHUX_SKIP_LOG`) fails the test instead, so no CI run passes a test by skipping it
//! unseen. This is the one mechanism; every test that can skip goes through it.
//!
//! ```no_run
//! #[test]
//! fn vim_sees_the_keys() {
//!     phux_testkit::require_programs!("tmux", "vim");
//!     // ... the test proper
//! }
//! ```

#![forbid(unsafe_code)]

use std::fs::OpenOptions;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// The environment variable naming the file skips are appended to.
pub const SKIP_LOG_VAR: &str = "PHUX_SKIP_LOG";

/// Record that the calling test skips, and why (use [`skip!`], which names the package).
///
/// # Panics
///
/// Under `CI` without `PHUX_SKIP_LOG`, or when the log cannot be written: a skip nobody
/// would see is a failure there.
pub fn record_skip(package: &str, reason: &str) {
    let thread = std::thread::current();
    let test = thread.name().unwrap_or("?");
    let line = format!("{package} {test}: {reason}");
    // Straight to the process's stderr, past libtest's capture of `eprintln!`, so a local run
    // shows it too.
    let _ = writeln!(std::io::stderr(), "SKIP: {line}");
    match std::env::var_os(SKIP_LOG_VAR) {
        Some(path) => {
            let written = OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)
                // One write per line: appends of a few hundred bytes do not interleave.
                .and_then(|mut f| f.write_all(format!("{line}\n").as_bytes()));
            if let Err(error) = written {
                panic!(
                    "{line}: and the skip could not be recorded in {}: {error}",
                    Path::new(&path).display()
                );
            }
        }
        None if under_ci() => panic!(
            "{line}: a test skipped under CI, and {SKIP_LOG_VAR} names no file to record it in \
             (.ci/run sets it)"
        ),
        None => {}
    }
}

/// Whether this run is CI's (`CI` set to anything but empty, `0` or `false`).
pub fn under_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "0" && v != "false")
}

/// Skip the calling test with a reason, recorded as [`record_skip`] says. Does not return
/// from the test by itself: write `return` after it, or use [`require_programs!`].
#[macro_export]
macro_rules! skip {
    ($($reason:tt)+) => {
        $crate::record_skip(env!("CARGO_PKG_NAME"), &format!($($reason)+))
    };
}

/// Return from the calling test, recording a skip, unless every program named is on `PATH`.
#[macro_export]
macro_rules! require_programs {
    ($($program:expr),+ $(,)?) => {
        if let Err(reason) = $crate::programs(&[$($program),+]) {
            $crate::skip!("{reason}");
            return;
        }
    };
}

/// `Ok` when every program is on `PATH`; otherwise which are not, and the install command.
pub fn programs(names: &[&str]) -> Result<(), String> {
    let missing: Vec<&str> = names
        .iter()
        .copied()
        .filter(|p| program(p).is_none())
        .collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "not installed: {} (apt-get install {})",
            missing.join(", "),
            missing
                .iter()
                .map(|p| package_of(p))
                .collect::<Vec<_>>()
                .join(" ")
        ))
    }
}

/// The Debian package that installs `program`, where its name differs.
fn package_of(program: &str) -> &str {
    match program.rsplit('/').next().unwrap_or(program) {
        "sshd" | "ssh-keygen" => "openssh-server",
        "ssh" => "openssh-client",
        "flock" | "setpriv" | "runuser" => "util-linux",
        "script" => "bsdutils",
        other => other,
    }
}

/// The path of `name` on `PATH` (or `name` itself when it is a path to an executable file).
pub fn program(name: &str) -> Option<PathBuf> {
    if name.contains('/') {
        return executable(Path::new(name)).then(|| PathBuf::from(name));
    }
    let path = std::env::var_os("PATH")?;
    // sshd lives in sbin, which a user's PATH may leave out.
    let sbin = [PathBuf::from("/usr/sbin"), PathBuf::from("/sbin")];
    std::env::split_paths(&path)
        .chain(sbin)
        .map(|dir| dir.join(name))
        .find(|p| executable(p))
}

fn executable(path: &Path) -> bool {
    path.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The environment variable naming the phux reference binary.
pub const REF_BIN_VAR: &str = "PHUX_REF_BIN";

/// Where the reference is when `PHUX_REF_BIN` is unset, relative to the repository root: the
/// shared interop directory beside a checkout (never inside it).
pub const REF_BIN_DEFAULT: &str = "../shared/interop/phux-0.22.0/phux";

/// The repository's root directory (this crate lives one level below it).
pub fn repo_root() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().unwrap_or(manifest).to_path_buf()
}

/// The phux reference binary: `PHUX_REF_BIN` when set (even if it names nothing there, so a
/// typo fails the test that starts it rather than skipping it), else [`REF_BIN_DEFAULT`]
/// beside the repository when it is there. `Err` says why there is none, for [`skip!`].
pub fn reference_bin() -> Result<PathBuf, String> {
    if let Some(bin) = std::env::var_os(REF_BIN_VAR).filter(|v| !v.is_empty()) {
        return Ok(PathBuf::from(bin));
    }
    let default = repo_root().join(REF_BIN_DEFAULT);
    if executable(&default) {
        Ok(default)
    } else {
        Err(format!(
            "no phux reference: {REF_BIN_VAR} is unset and {} is not there",
            default.display()
        ))
    }
}

/// Whether the tests run as root (some need to create files of another user).
pub fn is_root() -> bool {
    // /proc/self belongs to the process's effective uid.
    std::fs::metadata("/proc/self").is_ok_and(|m| std::os::unix::fs::MetadataExt::uid(&m) == 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_program_is_named_with_its_package() {
        let err = programs(&["sh", "phux-testkit-no-such-program", "sshd"]);
        let err = err.expect_err("a program that does not exist");
        assert!(err.contains("phux-testkit-no-such-program"), "{err}");
        assert!(!err.contains(" sh,"), "{err}");
    }

    #[test]
    fn sh_is_found() {
        assert!(program("sh").is_some());
        assert!(programs(&["sh"]).is_ok());
    }
}
