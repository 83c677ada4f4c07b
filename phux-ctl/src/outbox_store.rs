//! The outbox journal on disk: one append-only file per server, synced before anything it
//! describes is sent, guarded by a lock file so two phuxctl processes never share it.
//!
//! Layout: `<dir>/<key>.journal` and `<dir>/<key>.lock`, where `<dir>` is
//! `$XDG_STATE_HOME/phux-mio/outbox` (or `~/.local/state/phux-mio/outbox`), created 0700.
//!
//! Every file is opened without following a symbolic link and without blocking (a FIFO
//! planted there cannot stall us), must be a regular file owned by us, and is read at most
//! [`MAX_JOURNAL_LEN`] bytes (CLIENT.JOURNAL.8, CLIENT.JOURNAL.9). Damage before the last
//! record is moved aside to `<key>.journal.damaged-<offset>` and the intact records are kept
//! (CLIENT.JOURNAL.7). [`peek`] reads without the lock and creates nothing (CLIENT.JOURNAL.10).

use std::fs::{self, DirBuilder, File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use std::os::unix::fs::MetadataExt;

use phux_core::client::journal::{JournalRecord, RecordError, TornTail, decode_journal};
use rustix::fs::{FlockOperation, OFlags};
use rustix::io::Errno;

/// The most of a journal file read (CLIENT.JOURNAL.9): a live journal holds a few runs'
/// operations (at most 1 MiB submitted per run, compacted as they resolve).
pub const MAX_JOURNAL_LEN: u64 = 16 * 1024 * 1024;

/// The journal's directory mode: owner only (it holds what the user typed).
const DIR_MODE: u32 = 0o700;
/// The journal's and the lock's file mode.
const FILE_MODE: u32 = 0o600;

/// Why the outbox cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// Neither `$XDG_STATE_HOME` nor `$HOME` is set to an absolute path.
    #[error("no state directory: set XDG_STATE_HOME or HOME")]
    NoStateDir,
    /// A file-system operation failed.
    #[error("{op} {path}: {source}")]
    Io {
        /// What we were doing.
        op: &'static str,
        /// On which path.
        path: PathBuf,
        /// What the OS said.
        #[source]
        source: io::Error,
    },
    /// A journal (or its lock, or its directory) that is a symbolic link or not a regular
    /// file (a directory for the directory).
    #[error("{path} is {what}; the outbox uses only a {expected} of its own: remove it")]
    NotAFile {
        /// The path.
        path: PathBuf,
        /// What it is.
        what: &'static str,
        /// What it must be.
        expected: &'static str,
    },
    /// A journal file (or directory) of another user.
    #[error("{path} is owned by uid {owner}, not by you (uid {uid}); remove it or fix its owner")]
    NotOurs {
        /// The path.
        path: PathBuf,
        /// Its owner.
        owner: u32,
        /// Our effective uid.
        uid: u32,
    },
    /// A journal larger than [`MAX_JOURNAL_LEN`].
    #[error(
        "outbox journal {path} is larger than {MAX_JOURNAL_LEN} bytes, so it is not one phuxctl \
         wrote; move it aside"
    )]
    TooLarge {
        /// The file.
        path: PathBuf,
    },
}

/// A damaged stretch of a journal (not a torn tail).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Damaged {
    /// Where it starts in the file as it was.
    pub offset: usize,
    /// How long it is.
    pub len: usize,
    /// What is wrong with the record there.
    pub error: RecordError,
    /// Where its bytes were moved ([`OutboxStore::open`] only; [`peek`] moves nothing).
    pub moved_to: Option<PathBuf>,
}

/// A journal as read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Journal {
    /// Its whole records, in file order (those after damage included).
    pub records: Vec<JournalRecord>,
    /// A torn last record, dropped.
    pub torn_tail: Option<TornTail>,
    /// Damage before the last record.
    pub damaged: Vec<Damaged>,
}

impl Journal {
    /// One line per damaged stretch, naming the file and the offset (CLIENT.JOURNAL.6).
    pub fn damage_report(&self, path: &Path) -> Vec<String> {
        self.damaged
            .iter()
            .map(|d| {
                let moved = d.moved_to.as_ref().map_or_else(
                    || {
                        " (not yet moved aside: the next phuxctl send, paste or outbox \
                       resume/drop does that)"
                            .to_owned()
                    },
                    |p| format!("; its bytes were moved to {}", p.display()),
                );
                format!(
                    "outbox journal {} is damaged at byte {} ({} bytes: {}); the records after \
                     it were kept{moved}",
                    path.display(),
                    d.offset,
                    d.len,
                    d.error
                )
            })
            .collect()
    }
}

/// The options every outbox file is opened with: never through a symbolic link
/// ([CLIENT.JOURNAL.8]), never blocking on a FIFO.
fn safe_flags() -> i32 {
    (OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC)
        .bits()
        .cast_signed()
}

pub(crate) fn io_error(op: &'static str, path: &Path, source: io::Error) -> StoreError {
    if source.raw_os_error() == Some(Errno::LOOP.raw_os_error()) {
        return StoreError::NotAFile {
            path: path.to_owned(),
            what: "a symbolic link",
            expected: "regular file",
        };
    }
    StoreError::Io {
        op,
        path: path.to_owned(),
        source,
    }
}

/// [CLIENT.JOURNAL.8] A regular file (or, for `dir`, a directory) owned by us.
pub(crate) fn check_ours(path: &Path, meta: &fs::Metadata, dir: bool) -> Result<(), StoreError> {
    let file_type = meta.file_type();
    let (ok, expected) = if dir {
        (file_type.is_dir(), "directory")
    } else {
        (file_type.is_file(), "regular file")
    };
    if !ok {
        let what = if file_type.is_symlink() {
            "a symbolic link"
        } else if file_type.is_dir() {
            "a directory"
        } else {
            "not a regular file"
        };
        return Err(StoreError::NotAFile {
            path: path.to_owned(),
            what,
            expected,
        });
    }
    let uid = rustix::process::geteuid().as_raw();
    if meta.uid() != uid {
        return Err(StoreError::NotOurs {
            path: path.to_owned(),
            owner: meta.uid(),
            uid,
        });
    }
    Ok(())
}

/// Opens an outbox file safely and checks it is a regular file of ours.
pub(crate) fn open_checked(path: &Path, options: &mut OpenOptions) -> Result<File, StoreError> {
    let file = options
        .custom_flags(safe_flags())
        .mode(FILE_MODE)
        .open(path)
        .map_err(|e| io_error("open", path, e))?;
    let meta = file.metadata().map_err(|e| io_error("stat", path, e))?;
    check_ours(path, &meta, false)?;
    Ok(file)
}

/// Reads at most [`MAX_JOURNAL_LEN`] bytes ([CLIENT.JOURNAL.9]).
fn read_bounded(file: &mut File, path: &Path) -> Result<Vec<u8>, StoreError> {
    let mut bytes = Vec::new();
    file.take(MAX_JOURNAL_LEN + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| io_error("read", path, e))?;
    if bytes.len() as u64 > MAX_JOURNAL_LEN {
        return Err(StoreError::TooLarge {
            path: path.to_owned(),
        });
    }
    Ok(bytes)
}

fn decode(bytes: &[u8]) -> Journal {
    let decoded = decode_journal(bytes);
    Journal {
        records: decoded.records,
        torn_tail: decoded.torn_tail,
        damaged: decoded
            .damaged
            .into_iter()
            .map(|d| Damaged {
                offset: d.offset,
                len: d.len,
                error: d.error,
                moved_to: None,
            })
            .collect(),
    }
}

/// The journal's path for `key` in `dir`.
pub fn journal_path(dir: &Path, key: &str) -> PathBuf {
    dir.join(format!("{key}.journal"))
}

/// Reads the journal without its lock and without creating anything ([CLIENT.JOURNAL.10]):
/// `None` when there is none. For commands that send nothing: they only say what is pending
/// or damaged. What another phuxctl appends meanwhile may show as a torn tail.
pub fn peek(dir: &Path, key: &str) -> Result<Option<Journal>, StoreError> {
    match fs::symlink_metadata(dir) {
        Ok(meta) => check_ours(dir, &meta, true)?,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io_error("stat", dir, e)),
    }
    let path = journal_path(dir, key);
    let mut file = match open_checked(&path, OpenOptions::new().read(true)) {
        Ok(file) => file,
        Err(StoreError::Io { source, .. }) if source.kind() == io::ErrorKind::NotFound => {
            return Ok(None);
        }
        Err(e) => return Err(e),
    };
    let bytes = read_bounded(&mut file, &path)?;
    Ok(Some(decode(&bytes)))
}

/// The outbox directory: `$XDG_STATE_HOME/phux-mio/outbox`, else
/// `$HOME/.local/state/phux-mio/outbox`. Relative values are ignored (XDG base-directory spec).
pub fn outbox_dir() -> Result<PathBuf, StoreError> {
    state_dir().map(|dir| dir.join("outbox"))
}

/// phuxctl's state directory: `$XDG_STATE_HOME/phux-mio` (or `~/.local/state/phux-mio`),
/// which holds the outbox, the terminal names and the logs of the servers phuxctl started.
pub fn state_dir() -> Result<PathBuf, StoreError> {
    let absolute = |var: &str| {
        std::env::var_os(var)
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
    };
    if let Some(state) = absolute("XDG_STATE_HOME") {
        return Ok(state.join("phux-mio"));
    }
    absolute("HOME")
        .map(|home| home.join(".local/state/phux-mio"))
        .ok_or(StoreError::NoStateDir)
}

/// Creates `dir` (0700, with its parents) and checks it is a directory of ours.
pub(crate) fn private_dir(dir: &Path) -> Result<(), StoreError> {
    DirBuilder::new()
        .recursive(true)
        .mode(DIR_MODE)
        .create(dir)
        .map_err(|e| io_error("create", dir, e))?;
    let meta = fs::symlink_metadata(dir).map_err(|e| io_error("stat", dir, e))?;
    check_ours(dir, &meta, true)
}

/// Takes `lock`'s flock (waiting for it), on a lock file opened as the outbox's are.
pub(crate) fn lock_file(path: &Path) -> Result<File, StoreError> {
    flock_file(path, FlockOperation::LockExclusive)?
        .ok_or_else(|| io_error("lock", path, io::ErrorKind::WouldBlock.into()))
}

/// Opens the lock file at `path` and takes its flock with `op`; `None` when a non-blocking
/// `op` finds it held.
fn flock_file(path: &Path, op: FlockOperation) -> Result<Option<File>, StoreError> {
    let lock = open_checked(
        path,
        OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false),
    )?;
    loop {
        match rustix::fs::flock(&lock, op) {
            Ok(()) => return Ok(Some(lock)),
            Err(Errno::INTR) => {}
            Err(Errno::WOULDBLOCK) => return Ok(None),
            Err(e) => return Err(io_error("lock", path, e.into())),
        }
    }
}

/// The journal's name for a server: its `--name`, or for an explicit `--socket` a name
/// derived from the path (so two servers on two sockets never share a journal).
pub fn journal_key(socket: Option<&Path>, name: &str) -> String {
    let Some(path) = socket else {
        return sanitize(name);
    };
    let text = path.to_string_lossy();
    // FNV-1a: a short, stable tag for the full path; the readable part may be truncated.
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.as_bytes() {
        hash = (hash ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3);
    }
    let readable: String = sanitize(&text).chars().rev().take(48).collect();
    let readable: String = readable.chars().rev().collect();
    format!("socket-{readable}-{hash:016x}")
}

fn sanitize(text: &str) -> String {
    let s: String = text
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if s.is_empty() || s.starts_with('.') {
        format!("_{s}")
    } else {
        s
    }
}

/// An open, locked journal.
#[derive(Debug)]
pub struct OutboxStore {
    path: PathBuf,
    file: File,
    /// Held for the store's life: the flock is released when it closes.
    _lock: File,
    /// Bytes in the file.
    len: u64,
    /// Records appended since the last sync.
    unsynced: bool,
}

/// What [`OutboxStore::open`] found.
#[derive(Debug)]
pub enum Opened {
    /// The store is ours; these records rebuild the outbox.
    Locked(OutboxStore, Journal),
    /// Another phuxctl holds the lock (only from [`OutboxStore::try_open`]).
    Busy,
}

impl OutboxStore {
    /// Opens (creating) `<dir>/<key>.journal`, waiting for the lock if another phuxctl holds
    /// it, and reads it. A torn last record (a crash mid-append) is cut off the file.
    pub fn open(dir: &Path, key: &str) -> Result<(Self, Journal), StoreError> {
        match Self::open_with(dir, key, FlockOperation::LockExclusive)? {
            Opened::Locked(store, journal) => Ok((store, journal)),
            Opened::Busy => unreachable!("a blocking flock does not report busy"),
        }
    }

    /// As [`OutboxStore::open`], but returns [`Opened::Busy`] instead of waiting.
    pub fn try_open(dir: &Path, key: &str) -> Result<Opened, StoreError> {
        Self::open_with(dir, key, FlockOperation::NonBlockingLockExclusive)
    }

    fn open_with(dir: &Path, key: &str, lock_op: FlockOperation) -> Result<Opened, StoreError> {
        let io = |op: &'static str, path: &Path| {
            let path = path.to_owned();
            move |source| StoreError::Io { op, path, source }
        };
        DirBuilder::new()
            .recursive(true)
            .mode(DIR_MODE)
            .create(dir)
            .map_err(io("create", dir))?;
        let meta = fs::symlink_metadata(dir).map_err(|e| io_error("stat", dir, e))?;
        check_ours(dir, &meta, true)?;
        let Some(lock) = flock_file(&dir.join(format!("{key}.lock")), lock_op)? else {
            return Ok(Opened::Busy);
        };
        let path = journal_path(dir, key);
        let mut file = open_checked(
            &path,
            OpenOptions::new().read(true).append(true).create(true),
        )?;
        let bytes = read_bounded(&mut file, &path)?;
        let mut journal = decode(&bytes);
        let mut store = Self {
            path,
            file,
            _lock: lock,
            len: bytes.len() as u64,
            unsynced: false,
        };
        if !journal.damaged.is_empty() {
            // [CLIENT.JOURNAL.7] The damaged bytes go aside first, then the file is rewritten
            // with every intact record: nothing valid is ever cut off.
            for damage in &mut journal.damaged {
                let stretch = bytes
                    .get(damage.offset..damage.offset + damage.len)
                    .unwrap_or_default();
                damage.moved_to = Some(store.quarantine(damage.offset, stretch)?);
            }
            store.rewrite(&journal.records)?;
        } else if let Some(torn) = &journal.torn_tail {
            // [CLIENT.JOURNAL.5] A torn tail is dropped; cut it off so appends follow whole
            // records.
            store.len = torn.offset as u64;
            store
                .file
                .set_len(store.len)
                .map_err(io("truncate", &store.path))?;
            store.file.sync_all().map_err(io("sync", &store.path))?;
        }
        Ok(Opened::Locked(store, journal))
    }

    /// Copies a damaged stretch to a new file next to the journal; its path.
    fn quarantine(&self, offset: usize, bytes: &[u8]) -> Result<PathBuf, StoreError> {
        let base = format!("{}.damaged-{offset}", self.path.display());
        for n in 0..1000 {
            let path = PathBuf::from(if n == 0 {
                base.clone()
            } else {
                format!("{base}.{n}")
            });
            let mut options = OpenOptions::new();
            match options
                .write(true)
                .create_new(true)
                .custom_flags(safe_flags())
                .mode(FILE_MODE)
                .open(&path)
            {
                Ok(mut file) => {
                    file.write_all(bytes)
                        .and_then(|()| file.sync_all())
                        .map_err(|e| io_error("write", &path, e))?;
                    return Ok(path);
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(io_error("create", &path, e)),
            }
        }
        Err(StoreError::Io {
            op: "create",
            path: PathBuf::from(base),
            source: io::Error::from(io::ErrorKind::AlreadyExists),
        })
    }

    /// The journal file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether the file holds any record.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The file's length in bytes.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Appends one record (not yet durable: call [`OutboxStore::sync`]).
    pub fn append(&mut self, record: &JournalRecord) -> Result<(), StoreError> {
        let bytes = record.to_bytes();
        self.file
            .write_all(&bytes)
            .map_err(|source| StoreError::Io {
                op: "append to",
                path: self.path.clone(),
                source,
            })?;
        self.len += bytes.len() as u64;
        self.unsynced = true;
        Ok(())
    }

    /// Makes every appended record durable.
    pub fn sync(&mut self) -> Result<(), StoreError> {
        if self.unsynced {
            self.file.sync_data().map_err(|source| StoreError::Io {
                op: "sync",
                path: self.path.clone(),
                source,
            })?;
            self.unsynced = false;
        }
        Ok(())
    }

    /// Cuts the journal back to `len` bytes, its length at a point where every record in it was
    /// durable, and makes that durable: what was appended since, whole or in part, is gone.
    pub fn truncate_to(&mut self, len: u64) -> Result<(), StoreError> {
        self.file
            .set_len(len)
            .and_then(|()| self.file.sync_all())
            .map_err(|source| StoreError::Io {
                op: "cut back",
                path: self.path.clone(),
                source,
            })?;
        self.len = len;
        self.unsynced = false;
        Ok(())
    }

    /// Rewrites the journal as exactly `records` (the outbox's compaction): written to a
    /// temporary file, synced, renamed over the journal, so a crash leaves the old or the new
    /// file, never a mix. An empty outbox truncates the file instead.
    pub fn rewrite(&mut self, records: &[JournalRecord]) -> Result<(), StoreError> {
        let io = |op: &'static str, path: &Path| {
            let path = path.to_owned();
            move |source| StoreError::Io { op, path, source }
        };
        if records.is_empty() {
            self.file.set_len(0).map_err(io("truncate", &self.path))?;
            self.file.sync_all().map_err(io("sync", &self.path))?;
            self.len = 0;
            self.unsynced = false;
            return Ok(());
        }
        let mut bytes = Vec::new();
        for record in records {
            record.encode(&mut bytes);
        }
        let tmp = self.path.with_extension("journal.tmp");
        let mut out = open_checked(
            &tmp,
            OpenOptions::new().write(true).create(true).truncate(true),
        )?;
        out.write_all(&bytes).map_err(io("write", &tmp))?;
        out.sync_all().map_err(io("sync", &tmp))?;
        drop(out);
        fs::rename(&tmp, &self.path).map_err(io("rename", &tmp))?;
        // The new file is the journal from here on, whatever fails next: appends to the old
        // one, now unlinked, would be lost.
        self.file = open_checked(&self.path, OpenOptions::new().read(true).append(true))?;
        self.len = bytes.len() as u64;
        self.unsynced = false;
        if let Some(dir) = self.path.parent() {
            File::open(dir)
                .and_then(|d| d.sync_all())
                .map_err(io("sync", dir))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use phux_core::client::outbox::Resolution;
    use phux_core::time::Instant;
    use phux_proto::command::ApplyInput;
    use phux_proto::input::{InputEvent, PasteEvent, PasteTrust};
    use phux_proto::{OperationId, TerminalId};

    fn enqueued(n: u128) -> JournalRecord {
        JournalRecord::Enqueued {
            input: ApplyInput {
                operation_id: OperationId::from_u128(n).expect("id"),
                terminal: TerminalId::Local(1),
                events: vec![InputEvent::Paste(PasteEvent {
                    trust: PasteTrust::Trusted,
                    data: b"x".to_vec(),
                })],
            },
            enqueued_at: Instant::from_micros(5),
            addressed_to: phux_core::client::journal::Incarnation::of(b"s"),
            part: None,
        }
    }

    #[test]
    fn records_survive_a_reopen_and_a_torn_tail_is_cut_off() {
        // [CLIENT.JOURNAL.5]
        let dir = tempfile::tempdir().expect("tempdir");
        let (mut store, journal) = OutboxStore::open(dir.path(), "k").expect("open");
        assert!(journal.records.is_empty() && store.is_empty());
        store.append(&enqueued(1)).expect("append");
        store.sync().expect("sync");
        let path = store.path().to_owned();
        drop(store);
        // A crash mid-append: half of a second record.
        let half = enqueued(2).to_bytes();
        let mut f = OpenOptions::new().append(true).open(&path).expect("open");
        f.write_all(&half[..half.len() / 2]).expect("write");
        drop(f);
        let (mut store, journal) = OutboxStore::open(dir.path(), "k").expect("reopen");
        assert_eq!(journal.records, [enqueued(1)]);
        assert!(journal.torn_tail.is_some());
        assert_eq!(
            fs::metadata(&path).expect("meta").len(),
            enqueued(1).to_bytes().len() as u64
        );
        // Appends after the repair decode cleanly.
        store.append(&enqueued(3)).expect("append");
        store.sync().expect("sync");
        drop(store);
        let (_, journal) = OutboxStore::open(dir.path(), "k").expect("reopen");
        assert_eq!(journal.records, [enqueued(1), enqueued(3)]);
        assert!(journal.torn_tail.is_none());
    }

    // [CLIENT.JOURNAL.6] [CLIENT.JOURNAL.7] A damaged middle record: named with its offset,
    // its bytes moved aside, every record after it kept, and the file whole again.
    #[test]
    fn middle_damage_is_moved_aside_and_later_records_are_kept() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (mut store, _) = OutboxStore::open(dir.path(), "k").expect("open");
        for n in 1..=4 {
            store.append(&enqueued(n)).expect("append");
        }
        store.sync().expect("sync");
        let path = store.path().to_owned();
        drop(store);
        let one = enqueued(1).to_bytes().len();
        let mut bytes = fs::read(&path).expect("read");
        // A corrupted length in the second record: it claims more than the file holds.
        bytes[one..one + 4].copy_from_slice(&0x0001_0000u32.to_be_bytes());
        let damaged = bytes[one..2 * one].to_vec();
        fs::write(&path, &bytes).expect("write");
        // Read-only: reported, nothing moved, nothing written.
        let peeked = peek(dir.path(), "k").expect("peek").expect("journal");
        assert_eq!(peeked.records, [enqueued(1), enqueued(3), enqueued(4)]);
        assert_eq!(peeked.damaged[0].offset, one);
        assert_eq!(peeked.damaged[0].moved_to, None);
        assert_eq!(fs::read(&path).expect("read"), bytes);
        let (store, journal) = OutboxStore::open(dir.path(), "k").expect("open");
        assert_eq!(journal.records, [enqueued(1), enqueued(3), enqueued(4)]);
        assert!(journal.torn_tail.is_none());
        let report = journal.damage_report(store.path()).join("\n");
        assert!(
            report.contains(&path.display().to_string()) && report.contains(&format!("byte {one}")),
            "{report}"
        );
        let moved = journal.damaged[0].moved_to.clone().expect("moved");
        assert_eq!(fs::read(&moved).expect("quarantine"), damaged);
        drop(store);
        let (_, again) = OutboxStore::open(dir.path(), "k").expect("reopen");
        assert_eq!(again.records, [enqueued(1), enqueued(3), enqueued(4)]);
        assert!(again.damaged.is_empty());
    }

    // [CLIENT.JOURNAL.8] [CLIENT.JOURNAL.9] Not a regular file of ours: refused at once (a
    // symlink to /dev/zero, a FIFO), and a huge file is refused without being read whole.
    #[test]
    fn links_devices_fifos_and_huge_files_are_refused_at_once() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("k.journal");
        std::os::unix::fs::symlink("/dev/zero", &path).expect("symlink");
        for result in [
            peek(dir.path(), "k").map(|_| ()),
            OutboxStore::open(dir.path(), "k").map(|_| ()),
        ] {
            let err = result.expect_err("a symlink is refused").to_string();
            assert!(err.contains("symbolic link"), "{err}");
        }
        fs::remove_file(&path).expect("rm");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &path,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .expect("mkfifo");
        let err = peek(dir.path(), "k").expect_err("a fifo").to_string();
        assert!(err.contains("not a regular file"), "{err}");
        fs::remove_file(&path).expect("rm");
        let big = File::create(&path).expect("create");
        big.set_len(MAX_JOURNAL_LEN + 1).expect("sparse");
        assert!(matches!(
            OutboxStore::open(dir.path(), "k"),
            Err(StoreError::TooLarge { .. })
        ));
        // A directory that is a symlink is refused too.
        let real = dir.path().join("real");
        fs::create_dir(&real).expect("mkdir");
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&real, &link).expect("symlink");
        assert!(matches!(
            OutboxStore::open(&link, "k"),
            Err(StoreError::NotAFile { .. })
        ));
    }

    // [CLIENT.JOURNAL.10] Peeking creates nothing.
    #[test]
    fn peek_creates_nothing() {
        let dir = tempfile::tempdir().expect("tempdir");
        let state = dir.path().join("state/phux-mio/outbox");
        assert!(peek(&state, "k").expect("peek").is_none());
        assert!(!dir.path().join("state").exists());
    }

    #[test]
    fn a_second_opener_is_told_busy_until_the_first_closes() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (store, _) = OutboxStore::open(dir.path(), "k").expect("open");
        assert!(matches!(
            OutboxStore::try_open(dir.path(), "k").expect("try"),
            Opened::Busy
        ));
        // Another server's journal is independent.
        assert!(matches!(
            OutboxStore::try_open(dir.path(), "other").expect("try"),
            Opened::Locked(..)
        ));
        drop(store);
        assert!(matches!(
            OutboxStore::try_open(dir.path(), "k").expect("try"),
            Opened::Locked(..)
        ));
    }

    #[test]
    fn rewrite_compacts_and_empties() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (mut store, _) = OutboxStore::open(dir.path(), "k").expect("open");
        for n in 1..=3 {
            store.append(&enqueued(n)).expect("append");
        }
        let op = OperationId::from_u128(1).expect("id");
        store
            .append(&JournalRecord::Resolved {
                op,
                resolution: Resolution::Delivered,
            })
            .expect("append");
        store.rewrite(&[enqueued(2), enqueued(3)]).expect("rewrite");
        store.append(&enqueued(4)).expect("append");
        store.sync().expect("sync");
        drop(store);
        let (mut store, journal) = OutboxStore::open(dir.path(), "k").expect("reopen");
        assert_eq!(journal.records, [enqueued(2), enqueued(3), enqueued(4)]);
        store.rewrite(&[]).expect("empty");
        assert!(store.is_empty());
        assert_eq!(fs::metadata(store.path()).expect("meta").len(), 0);
    }

    #[test]
    fn journal_keys_are_file_names() {
        assert_eq!(journal_key(None, "default"), "default");
        assert_eq!(journal_key(None, "../x"), "_.._x");
        let a = journal_key(Some(Path::new("/tmp/a/s.sock")), "default");
        let b = journal_key(Some(Path::new("/tmp/b/s.sock")), "default");
        assert_ne!(a, b);
        assert!(!a.contains('/') && a.starts_with("socket-"));
        let long = "/x".repeat(500);
        assert!(journal_key(Some(Path::new(&long)), "d").len() < 100);
    }
}
