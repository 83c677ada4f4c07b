//! The handover, the driver's half of an in-place upgrade: the steps of `crate::upgrade` in
//! the loop's order, and on the new image's side the adoption. An upgrade begins with the
//! engine's `Upgrade` action (an UPGRADE command, or SIGUSR2 fed as `UpgradeRequested`), runs
//! its check while the loop serves on, waits for the engine to be quiet, and ends in one of
//! two ways: this process becomes the new image (which answers the requester), or the engine
//! is fed `UpgradeFailed` and nothing changed.

use std::collections::HashMap;
use std::ffi::OsString;
use std::io;
use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};
use std::path::PathBuf;

use mio::Interest;
use mio::unix::SourceFd;
use phux_core::server::{ServerEngine, ServerEvent};
use phux_core::time::Instant;
use phux_core::upgrade::{ExportError, STATE_VERSION, decode_parts};
use tracing::{error, info, warn};

use super::{Driver, LISTENER, SIGNALS, UPGRADE_CHECK};
use crate::conn::{READ_CHUNK, StdioFlags};
use crate::host::{Host, Recycle};
use crate::signals::{self, Signals};
use crate::socket::ServerSocket;
use crate::upgrade::{
    ADOPT_ENV, ADOPT_ENV_LINE, ADOPT_FAILED_ENV, CHECK_TIMEOUT, Checker, Exe, HostImage,
    HostImageRef, Inherit, Launch, ListenerImage, QUIESCE_BOUND, Summary, UpgradeError,
    WsListenerImage, adopt_fds, exec, fd_path, image_file, load_image, open_own_exe, seal,
    set_cloexec, trial_timeout,
};
use crate::ws::Door;
use crate::ws::http::Policy;

/// What a server needs to know to upgrade itself: its own binary and how it was started.
#[derive(Debug, Clone)]
pub struct UpgradeContext {
    /// The binary this image runs, resolved when it started (an UPGRADE without a binary and
    /// SIGUSR2 exec it).
    pub binary: PathBuf,
    /// The engine configuration and log settings the next image rebuilds.
    pub launch: Launch,
}

/// Where the upgrade stands.
#[derive(Debug, Default)]
pub(super) enum Phase {
    /// None under way.
    #[default]
    Idle,
    /// `--check-upgrade` runs; killed at `until`.
    Checking {
        exe: Exe,
        checker: Checker,
        until: Instant,
    },
    /// The check passed; waiting for the engine to be quiet until `until`. `by_env`: the
    /// binary takes its descriptors from [`ADOPT_ENV`] ([SERVER.UPGRADE.EXEC.14]).
    Quiescing {
        exe: Exe,
        until: Instant,
        by_env: bool,
    },
}

/// The driver's upgrade state.
#[derive(Debug, Default)]
pub(super) struct Upgrade {
    context: Option<UpgradeContext>,
    phase: Phase,
}

impl Upgrade {
    /// The deadline of the step under way, for the poll timeout.
    pub(super) fn deadline(&self) -> Option<Instant> {
        match &self.phase {
            Phase::Idle => None,
            Phase::Checking { until, .. } | Phase::Quiescing { until, .. } => Some(*until),
        }
    }

    /// Whether the image is about to be taken: no master goes to the reader thread.
    pub(super) fn quiescing(&self) -> bool {
        matches!(self.phase, Phase::Quiescing { .. })
    }
}

/// How an adoption went wrong, and whether the previous image can take the state back.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct AdoptError(pub String);

impl Driver {
    /// Lets this driver upgrade in place (without it, an upgrade is refused with a reason).
    pub fn enable_upgrade(&mut self, context: UpgradeContext) {
        self.upgrade.context = Some(context);
    }

    /// Once per turn: starts what the engine asked for, and moves the one under way on, as
    /// far as it goes without waiting (a check that passed is followed by the quiet test at
    /// once, not at the next wake-up).
    pub(super) fn upgrade_step(&mut self) {
        while let Some(binary) = self.host.upgrades.pop_front() {
            self.begin_upgrade(binary);
        }
        loop {
            let before = std::mem::discriminant(&self.upgrade.phase);
            self.upgrade_advance();
            if std::mem::discriminant(&self.upgrade.phase) == before {
                return;
            }
        }
    }

    fn upgrade_advance(&mut self) {
        let now = self.host.clock.now();
        match std::mem::take(&mut self.upgrade.phase) {
            Phase::Idle => {}
            Phase::Checking {
                exe,
                mut checker,
                until,
            } => match checker.verdict() {
                Some(verdict) => self.checked(exe, &checker, verdict),
                None if now >= until => {
                    self.forget_checker(&checker);
                    self.upgrade_failed(&checker.kill(CHECK_TIMEOUT));
                }
                None => {
                    self.upgrade.phase = Phase::Checking {
                        exe,
                        checker,
                        until,
                    };
                }
            },
            Phase::Quiescing { exe, until, by_env } => {
                // [SERVER.UPGRADE.EXEC.3] No job in progress anywhere: the state is whole.
                // Terminals waiting to start start first (the turns go on meanwhile).
                // [OUTPUT.READER.3] The reader thread gives every master back and its bytes are
                // fed first: they may ask for writes (replies to queries) the quiet test sees.
                let recalled = self.recall_reader();
                if recalled && self.engine.upgrade_quiet() && self.host.spawns.is_empty() {
                    self.commit(&exe, by_env);
                } else if now >= until {
                    let busy = self
                        .host
                        .not_ready_for_upgrade()
                        .unwrap_or_else(|| "a terminal has input in progress".to_owned());
                    self.upgrade_failed(&UpgradeError::NotQuiet(format!(
                        "{busy} after {} ms",
                        QUIESCE_BOUND.as_millis()
                    )));
                } else {
                    self.upgrade.phase = Phase::Quiescing { exe, until, by_env };
                }
            }
        }
    }

    /// The server is stopping: a check still running is killed and reaped, not left behind.
    pub(super) fn abandon_upgrade(&mut self) {
        if let Phase::Checking { checker, .. } = std::mem::take(&mut self.upgrade.phase) {
            self.forget_checker(&checker);
            let _ = checker.kill(CHECK_TIMEOUT);
        }
    }

    /// The check's pidfd became readable.
    pub(super) fn on_check_exit(&mut self) {
        if let Phase::Checking {
            exe,
            mut checker,
            until,
        } = std::mem::take(&mut self.upgrade.phase)
        {
            match checker.verdict() {
                Some(verdict) => self.checked(exe, &checker, verdict),
                None => {
                    self.upgrade.phase = Phase::Checking {
                        exe,
                        checker,
                        until,
                    };
                }
            }
        }
    }

    fn begin_upgrade(&mut self, binary: Option<String>) {
        if !matches!(self.upgrade.phase, Phase::Idle) {
            // The engine asks for one upgrade at a time ([SERVER.UPGRADE.4]) and hears how it
            // ended before it can ask again: a second one now would be a driver bug. The one
            // under way goes on; answering this one would answer its requester.
            return error!(error = %UpgradeError::Busy, "an Upgrade action during an upgrade; ignored");
        }
        let Some(context) = &self.upgrade.context else {
            return self.upgrade_failed(&UpgradeError::Unavailable);
        };
        let binary = binary.map_or_else(|| context.binary.clone(), PathBuf::from);
        info!(binary = %binary.display(), version = STATE_VERSION, "upgrade: checking the new binary");
        // [SERVER.UPGRADE.EXEC.11] Opened once: what is checked is what is exec'd.
        let exe = match Exe::open(&binary) {
            Ok(exe) => exe,
            Err(e) => return self.upgrade_failed(&e),
        };
        // [SERVER.UPGRADE.EXEC.2] The new binary must say it reads our state version.
        let checker = match Checker::version(&exe, STATE_VERSION) {
            Ok(checker) => checker,
            Err(e) => return self.upgrade_failed(&e),
        };
        let fd = checker.pidfd().as_raw_fd();
        if let Err(e) = self.host.poll.registry().register(
            &mut SourceFd(&fd),
            UPGRADE_CHECK,
            Interest::READABLE,
        ) {
            // Without the pidfd's readiness the deadline still ends the wait: poll the verdict.
            warn!(error = %e, "cannot watch the upgrade check; polling it");
        }
        let until = self.host.clock.now() + CHECK_TIMEOUT;
        self.upgrade.phase = Phase::Checking {
            exe,
            checker,
            until,
        };
    }

    fn checked(&mut self, exe: Exe, checker: &Checker, verdict: Result<(), UpgradeError>) {
        self.forget_checker(checker);
        match verdict {
            Ok(()) => {
                info!(binary = %exe.path().display(), "upgrade: the new binary reads our state; quiescing");
                let until = self.host.clock.now() + QUIESCE_BOUND;
                let by_env = checker.said(ADOPT_ENV_LINE);
                self.upgrade.phase = Phase::Quiescing { exe, until, by_env };
            }
            Err(e) => self.upgrade_failed(&e),
        }
    }

    fn forget_checker(&self, checker: &Checker) {
        let fd = checker.pidfd().as_raw_fd();
        let _ = self.host.poll.registry().deregister(&mut SourceFd(&fd));
    }

    /// [SERVER.UPGRADE.EXEC.4] Nothing changed: the engine answers the requester and resumes.
    fn upgrade_failed(&mut self, e: &UpgradeError) {
        self.upgrade.phase = Phase::Idle;
        warn!(reason = %e, "upgrade failed; serving on");
        self.feed(ServerEvent::UpgradeFailed {
            reason: e.to_string(),
        });
        self.flush();
    }

    /// The engine is quiet: hand everything over and exec `exe`. Returns only if the upgrade
    /// failed, the engine then told so.
    fn commit(&mut self, exe: &Exe, by_env: bool) {
        match self.hand_over(exe, by_env) {
            Ok(never) => match never {},
            Err(e) => self.upgrade_failed(&e),
        }
    }

    fn hand_over(
        &mut self,
        exe: &Exe,
        by_env: bool,
    ) -> Result<std::convert::Infallible, UpgradeError> {
        // What the engine queued goes out now, as far as the peers take it; the rest crosses
        // in the image and is written first by the new image.
        self.flush();
        let ids: Vec<_> = self.host.conns.keys().copied().collect();
        for id in ids {
            self.host.write_conn(id, &mut Recycle(&mut self.engine));
        }
        self.feed_observed();
        if let Some(why) = self.host.not_ready_for_upgrade() {
            return Err(UpgradeError::NotQuiet(why));
        }
        // [OUTPUT.READER.3] Nothing read and not yet fed stays behind in the thread.
        if self.host.reader.holds_any() {
            return Err(UpgradeError::NotQuiet(
                "the PTY reader thread holds output".to_owned(),
            ));
        }
        if !self.host.events.is_empty() || !self.host.upgrades.is_empty() {
            return Err(UpgradeError::NotQuiet(
                "events are waiting to be handled".to_owned(),
            ));
        }
        let Some(context) = &self.upgrade.context else {
            return Err(UpgradeError::NotQuiet("no upgrade context".to_owned()));
        };
        let clock = self.host.clock;
        let started = clock.now();
        let file = image_file().map_err(UpgradeError::Handover)?;
        let own = open_own_exe().map_err(UpgradeError::Handover)?;
        let (shared, conns, terminals, next_conn) = self.host.image_parts();
        let (conn_count, terminal_count) = (conns.len(), terminals.len());
        let image = HostImageRef {
            clock_epoch_nanos: clock.epoch_nanos(),
            binary: exe.path(),
            previous_binary: &context.binary,
            launch: &context.launch,
            listener: self.host.listener.as_ref().map(|l| ListenerImage {
                fd: l.listener().as_raw_fd(),
                path: l.path().to_owned(),
                dev_ino: l.dev_ino(),
            }),
            stdio_flags: self.stdio_flags.as_ref().map(StdioFlags::bits),
            next_conn,
            shared,
            conns,
            terminals,
            exec_fd: Some(exe.fd().as_raw_fd()),
            // [WS.UPGRADE.2]
            ws: self.host.ws.as_ref().map(|door| WsListenerImage {
                fd: door.listener_fd().as_raw_fd(),
                addr: door.addr(),
                secret_file: door.secret_file().to_owned(),
            }),
        };
        // [SERVER.UPGRADE.STATE.1] Written once, straight from the engine and the queues into
        // the memfd: no copy of the state, or of the image, on our heap.
        let bytes = self
            .engine
            .export_image_to(
                &image,
                std::fs::File::from(file.try_clone().map_err(UpgradeError::Handover)?),
            )
            .map_err(|e| match e {
                ExportError::NotQuiet(e) => UpgradeError::NotQuiet(e.to_string()),
                ExportError::Write(e) => UpgradeError::Handover(e),
                other => UpgradeError::NotQuiet(other.to_string()),
            })?;
        drop(image);
        seal(file.as_fd()).map_err(UpgradeError::Handover)?;
        let written = clock.now();
        // [SERVER.UPGRADE.EXEC.10] A child of the new binary adopts this very image on trial
        // (nothing is served meanwhile, so nothing changes it), and must say what it found.
        let expect = Summary {
            bytes,
            // The image holds the exited terminals kept for their screen too.
            terminals: self.engine.terminal_count() + self.engine.remains_count(),
            connections: self.engine.connection_count(),
            ledger: self.engine.ledger_len(),
        };
        Checker::adoption(exe, file.as_fd(), expect)?.wait(trial_timeout(bytes))?;
        let tried = clock.now();
        // [SERVER.UPGRADE.EXEC.11] A file written in place since its check is not exec'd.
        exe.unchanged()?;
        // [SERVER.UPGRADE.EXEC.9] From here the shutdown and upgrade signals wait, pending,
        // for the image that runs next: this one if the exec fails (dropping `held`), else
        // the new one once it serves.
        let held = self.host.signals.hold().map_err(UpgradeError::Handover)?;
        let mut fds = self.host.inherited_fds();
        fds.extend([file.as_fd(), own.as_fd(), exe.fd()]);
        // [SERVER.UPGRADE.EXEC.7] Only now do the descriptors cross an exec; if it fails,
        // dropping `inherit` makes them close-on-exec again.
        let inherit = Inherit::clear(&fds).map_err(UpgradeError::Handover)?;
        let named = format!("{} {}", file.as_raw_fd(), own.as_raw_fd());
        // [SERVER.UPGRADE.EXEC.14] The command line the server was started with, exactly (our
        // own program name is the started one's, unless an older binary exec'd us), and the
        // descriptors in the environment; a binary that did not say it reads them there gets
        // them as arguments, the started command line after `--`.
        let (args, env) = if by_env {
            let program = std::env::args_os()
                .next()
                .unwrap_or_else(|| exe.path().as_os_str().to_owned());
            let mut args = vec![program];
            args.extend(context.launch.args.iter().cloned());
            (args, vec![(ADOPT_ENV, OsString::from(named))])
        } else {
            let mut args: Vec<OsString> = vec![
                exe.path().as_os_str().to_owned(),
                "--adopt-image".into(),
                file.as_raw_fd().to_string().into(),
                "--previous-exe".into(),
                own.as_raw_fd().to_string().into(),
                "--".into(),
            ];
            args.extend(context.launch.args.iter().cloned());
            (args, Vec::new())
        };
        let micros = |a: Instant, b: Instant| b.saturating_duration_since(a).as_micros();
        info!(
            binary = %exe.path().display(),
            image_bytes = bytes,
            conns = conn_count,
            terminals = terminal_count,
            export_us = micros(started, written),
            trial_us = micros(written, tried),
            "upgrade: exec"
        );
        let source = exec(
            &fd_path(exe.fd().as_raw_fd()),
            &args,
            &[ADOPT_ENV, ADOPT_FAILED_ENV],
            &env,
        );
        drop(fds);
        drop(inherit);
        drop(held);
        error!(error = %source, "upgrade: exec failed");
        Err(UpgradeError::Exec {
            binary: exe.path().to_owned(),
            source,
        })
    }
}

/// What `phux-mio-server --adopt-image` was handed on its command line.
#[derive(Debug, Clone, Copy)]
pub struct AdoptArgs {
    /// The image's memfd.
    pub image: RawFd,
    /// The previous image's binary, open; absent when this *is* the previous image taking
    /// the state back.
    pub previous_exe: Option<RawFd>,
    /// They came in [`ADOPT_ENV`], not as arguments ([SERVER.UPGRADE.EXEC.14]): the way back
    /// goes the same way, to the binary that said it reads them there.
    pub by_env: bool,
}

/// The new image, first thing: takes the state the previous image left, and either returns
/// a driver ready to run (the requester answered) or, when it cannot, execs the previous
/// binary to take it back. `init_logging` sets the log up from the image's settings.
pub fn adopt(
    args: AdoptArgs,
    failed: Option<&str>,
    init_logging: impl FnOnce(&Launch),
) -> Result<Driver, AdoptError> {
    // First of all: the exec reset SIGTERM, SIGINT, SIGHUP and SIGUSR2 to their default, which
    // ends the process, and every child with it. The previous image blocked them for the exec
    // ([SERVER.UPGRADE.EXEC.9]); caught from here on, they stay blocked, pending, until this
    // image serves, or across its exec back to the previous binary.
    let signals = Signals::install().map_err(|e| AdoptError(format!("signals: {e}")))?;
    let mut owned = adopt_fds(&[args.image])
        .map_err(|e| AdoptError(format!("cannot take the image's descriptor: {e}")))?;
    let memfd = owned
        .pop()
        .ok_or_else(|| AdoptError("no image".to_owned()))?;
    // Not close-on-exec until the state is adopted: the way back execs it, and a script's
    // interpreter opens it after the exec; the image taking the state back then closes it.
    let previous = match args.previous_exe {
        Some(raw) => Some(
            adopt_fds(&[raw])
                .ok()
                .and_then(|mut v| v.pop())
                .ok_or_else(|| AdoptError("cannot take the previous binary".to_owned()))?,
        ),
        None => None,
    };
    let reserved: Vec<RawFd> = [Some(args.image), args.previous_exe]
        .into_iter()
        .flatten()
        .collect();
    let built = match load_image(memfd.as_fd()) {
        Ok(bytes) => std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            adopt_image(&bytes, failed, &reserved, signals, init_logging)
        }))
        .unwrap_or_else(|_| {
            Err(AdoptError(
                "the new image panicked while adopting the state".to_owned(),
            ))
        }),
        Err(e) => Err(AdoptError(format!("cannot read the image: {e}"))),
    };
    let reason = match built {
        Ok(driver) => {
            // [SERVER.UPGRADE.EXEC.7] Adopted: nothing of the handover is inherited further.
            drop(previous);
            drop(memfd);
            // [SERVER.UPGRADE.EXEC.9] This image serves: a signal sent since the previous
            // image blocked them is acted on now, once.
            signals::unblock().map_err(|e| AdoptError(format!("signals: {e}")))?;
            return Ok(driver);
        }
        Err(e) => e.0,
    };
    // [SERVER.UPGRADE.EXEC.6] Nothing is owned yet but the image and the previous binary: the
    // previous image takes the state back, and tells the requester why. An image taking its
    // state back has nowhere to go back to.
    let (None, Some(previous)) = (failed, previous) else {
        return Err(AdoptError(format!(
            "the previous image could not take its state back either: {reason}"
        )));
    };
    error!(reason = %reason, "cannot adopt the state; going back to the previous binary");
    // [SERVER.UPGRADE.EXEC.7] The previous binary's descriptor goes with it, named, for the
    // image taking the state back to close: no descriptor outlives a failed attempt.
    let (argv, env) = if args.by_env {
        // [SERVER.UPGRADE.EXEC.14] Our command line is the one the server was started with:
        // the previous image runs under it again.
        let named = format!("{} {}", memfd.as_raw_fd(), previous.as_raw_fd());
        let env = vec![
            (ADOPT_ENV, OsString::from(named)),
            (ADOPT_FAILED_ENV, OsString::from(reason.clone())),
        ];
        (std::env::args_os().collect(), env)
    } else {
        let argv: Vec<OsString> = vec![
            "phux-mio-server".into(),
            "--adopt-image".into(),
            memfd.as_raw_fd().to_string().into(),
            "--previous-exe".into(),
            previous.as_raw_fd().to_string().into(),
            "--adopt-failed".into(),
            reason.clone().into(),
        ];
        (argv, Vec::new())
    };
    // The signals are still blocked, as the previous image left them: they wait for it.
    let e = exec(
        &fd_path(previous.as_raw_fd()),
        &argv,
        &[
            crate::upgrade::TEST_FAIL_ADOPTION,
            ADOPT_ENV,
            ADOPT_FAILED_ENV,
        ],
        &env,
    );
    Err(AdoptError(format!(
        "{reason}; and exec of the previous binary failed: {e}"
    )))
}

/// What an image holds, decoded and checked as an adoption relies on it ([`validate`]).
#[derive(Debug)]
pub struct Validated {
    /// The engine, rebuilt.
    pub engine: ServerEngine,
    /// The host's half.
    pub image: HostImage,
    /// What `--check-adopt` reports.
    pub summary: Summary,
    /// The WebSocket listener's checks, its secret read again ([WS.UPGRADE.4]), when the
    /// image has the listener.
    pub ws: Option<Policy>,
}

/// What an image holds, decoded and checked as an adoption relies on it: the engine rebuilt,
/// the host's half, the WebSocket listener's checks, and the summary `--check-adopt` reports
/// ([SERVER.UPGRADE.EXEC.10]). `reserved` are the descriptors the image itself came in, which
/// it must not name.
pub fn validate(bytes: &[u8], reserved: &[RawFd]) -> Result<Validated, AdoptError> {
    let parts =
        decode_parts(bytes).map_err(|e| AdoptError(format!("cannot read the state: {e}")))?;
    let image = HostImage::decode(parts.version, parts.host)
        .map_err(|e| AdoptError(format!("cannot read the state: {e}")))?;
    image
        .check(&parts.engine.summary(), reserved)
        .map_err(|e| AdoptError(format!("cannot read the state: {e}")))?;
    let ws = ws_policy(&image)?;
    let summary = Summary {
        bytes: bytes.len() as u64,
        terminals: parts.engine.terminals().count(),
        connections: parts.engine.connections().count(),
        ledger: parts.engine.ledger_len(),
    };
    let config = image.launch.engine_config();
    let mut engine = ServerEngine::from_state(config, parts.engine)
        .map_err(|e| AdoptError(format!("cannot rebuild the engine: {e}")))?;
    // [SERVER.LIMIT.6] Not in the image: from the command line the server was started with.
    engine.set_models_budget(crate::config::Config::models_budget_of(&image.launch.args));
    Ok(Validated {
        engine,
        image,
        summary,
        ws,
    })
}

/// [WS.UPGRADE.4] The WebSocket listener's checks in the image taking it over: the origins
/// from the command line the server was started with, the secret read again from its file
/// with the checks of [WS.AUTH.2] (by the trial adoption too, so a secret file that no longer
/// passes fails the upgrade before it commits).
pub(super) fn ws_policy<B>(image: &HostImage<B>) -> Result<Option<Policy>, AdoptError> {
    let Some(ws) = &image.ws else {
        return Ok(None);
    };
    let options = crate::config::Config::ws_options_of(&image.launch.args).ok_or_else(|| {
        AdoptError(
            "the image has a WebSocket listener, but its command line has no --listen-ws"
                .to_owned(),
        )
    })?;
    options
        .policy(ws.addr, &ws.secret_file)
        .map(Some)
        .map_err(|e| AdoptError(e.to_string()))
}

/// Decodes the image, rebuilds the engine and the host, and answers the requester. Every
/// fallible step that does not need the descriptors comes before they are owned.
fn adopt_image(
    bytes: &[u8],
    failed: Option<&str>,
    reserved: &[RawFd],
    mut signals: Signals,
    init_logging: impl FnOnce(&Launch),
) -> Result<Driver, AdoptError> {
    let timer = crate::clock::Clock::new();
    let Validated {
        engine,
        image,
        ws: ws_policy,
        ..
    } = validate(bytes, reserved)?;
    let decode_us = timer.now().as_micros();
    let clock = crate::clock::Clock::with_epoch(image.clock_epoch_nanos);
    let restored = clock.now();
    init_logging(&image.launch);
    if failed.is_none() && std::env::var_os(crate::upgrade::TEST_FAIL_ADOPTION).is_some() {
        return Err(AdoptError(format!(
            "{} is set",
            crate::upgrade::TEST_FAIL_ADOPTION
        )));
    }
    let context = UpgradeContext {
        binary: if failed.is_some() {
            image.previous_binary.clone()
        } else {
            image.binary.clone()
        },
        launch: image.launch.clone(),
    };
    let poll = mio::Poll::new().map_err(|e| AdoptError(format!("poll: {e}")))?;
    signals
        .register(poll.registry(), SIGNALS)
        .map_err(|e| AdoptError(format!("signals: {e}")))?;
    if let Some(l) = &image.listener {
        poll.registry()
            .register(&mut SourceFd(&l.fd), LISTENER, Interest::READABLE)
            .map_err(|e| AdoptError(format!("listener: {e}")))?;
    }
    if let Some(w) = &image.ws {
        poll.registry()
            .register(
                &mut SourceFd(&w.fd),
                crate::ws::door::LISTENER,
                Interest::READABLE,
            )
            .map_err(|e| AdoptError(format!("WebSocket listener: {e}")))?;
    }
    let mut host = Host::new(poll, None, signals, super::FIRST_DYNAMIC);
    host.clock = clock;
    host.set_stdio(image.listener.is_none());
    let registered = host
        .register_image(&image)
        .map_err(|e| AdoptError(format!("cannot watch the descriptors: {e}")))?;
    // Past this point every descriptor is ours: nothing below may fail but the impossible.
    let fds = adopt_fds(&image.fds()).map_err(|e| AdoptError(format!("descriptors: {e}")))?;
    for fd in &fds {
        // [SERVER.UPGRADE.EXEC.7] No child of ours inherits them.
        let _ = set_cloexec(fd);
    }
    // [SERVER.UPGRADE.EXEC.7] The new binary's descriptor crossed for a script's interpreter
    // only; an image taking its state back received it too.
    if let Some(raw) = image.exec_fd {
        drop(adopt_fds(&[raw]));
    }
    let mut fds = fds.into_iter();
    if let Some(l) = &image.listener {
        let fd: OwnedFd = fds
            .next()
            .ok_or_else(|| AdoptError("no listener".to_owned()))?;
        let std = std::os::unix::net::UnixListener::from(fd);
        let listener = mio::net::UnixListener::from_std(std);
        host.listener = Some(ServerSocket::adopt(listener, l.path.clone(), l.dev_ino));
    }
    // [WS.UPGRADE.2] The same listening socket, answering for the same origins and secret.
    if let (Some(w), Some(policy)) = (&image.ws, ws_policy) {
        let fd: OwnedFd = fds
            .next()
            .ok_or_else(|| AdoptError("no WebSocket listener".to_owned()))?;
        let listener = mio::net::TcpListener::from_std(std::net::TcpListener::from(fd));
        host.ws = Some(Door::new(listener, w.addr, policy, w.secret_file.clone()));
    }
    let stdio_flags = image.stdio_flags.map(StdioFlags::from_bits);
    // [SERVER.LOOP.3] As the first image was started.
    let spin = super::spin::BusyPoll::new(crate::config::Config::busy_poll_of(&image.launch.args));
    let (conns, terminals) = (image.conns.len(), image.terminals.len());
    host.adopt_image(image, registered, &mut fds)
        .map_err(|e| AdoptError(format!("cannot adopt: {e}")))?;
    let mut driver = Driver {
        engine,
        host,
        buf: vec![0; READ_CHUNK],
        ready: Vec::new(),
        busy: Vec::new(),
        busy_at: HashMap::new(),
        upgrade: Upgrade {
            context: Some(context),
            phase: Phase::Idle,
        },
        paces: super::burst::Paces::default(),
        spin,
        stdio_flags,
    };
    info!(
        conns,
        terminals,
        decode_us,
        watch_us = driver
            .host
            .clock
            .now()
            .saturating_duration_since(restored)
            .as_micros(),
        "upgrade: adopted the state"
    );
    // [SERVER.UPGRADE.EXEC.5] The bytes queued before the exec leave first, then the answer.
    driver.flush();
    let event = match failed {
        None => ServerEvent::UpgradeDone,
        Some(reason) => ServerEvent::UpgradeFailed {
            reason: reason.to_owned(),
        },
    };
    driver.feed(event);
    driver.flush();
    Ok(driver)
}

impl From<AdoptError> for io::Error {
    fn from(e: AdoptError) -> Self {
        Self::other(e.0)
    }
}
