//! The outbox journal on disk: one append-only file per server, synced before anything it
//! describes is sent, guarded by a lock file so two phuxctl processes never share it.
//!
//! Layout: `<dir>/<key>.journal` and `<dir>/<key>.lock`, where `<dir>` is
//! `$XDG_STATE_HOME/phux-mio/outbox` (or `~/.local/state/phux-mio/outbox`), created 0700.

use std::fs::{self, DirBuilder, File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use phux_core::client::journal::{DecodedJournal, JournalError, JournalRecord, decode_journal};
use rustix::fs::FlockOperation;
use rustix::io::Errno;

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
    /// The journal is damaged before its last record (a torn last record is repaired).
    #[error("outbox journal {path} is corrupt ({error}); move it aside to continue")]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        error: JournalError,
    },
}

/// The outbox directory: `$XDG_STATE_HOME/phux-mio/outbox`, else
/// `$HOME/.local/state/phux-mio/outbox`. Relative values are ignored (XDG base-directory spec).
pub fn outbox_dir() -> Result<PathBuf, StoreError> {
    let absolute = |var: &str| {
        std::env::var_os(var)
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
    };
    if let Some(state) = absolute("XDG_STATE_HOME") {
        return Ok(state.join("phux-mio").join("outbox"));
    }
    absolute("HOME")
        .map(|home| home.join(".local/state/phux-mio/outbox"))
        .ok_or(StoreError::NoStateDir)
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
    Locked(OutboxStore, DecodedJournal),
    /// Another phuxctl holds the lock (only from [`OutboxStore::try_open`]).
    Busy,
}

impl OutboxStore {
    /// Opens (creating) `<dir>/<key>.journal`, waiting for the lock if another phuxctl holds
    /// it, and reads it. A torn last record (a crash mid-append) is cut off the file.
    pub fn open(dir: &Path, key: &str) -> Result<(Self, DecodedJournal), StoreError> {
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
        let lock_path = dir.join(format!("{key}.lock"));
        let lock = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(FILE_MODE)
            .open(&lock_path)
            .map_err(io("open", &lock_path))?;
        loop {
            match rustix::fs::flock(&lock, lock_op) {
                Ok(()) => break,
                Err(Errno::INTR) => {}
                Err(Errno::WOULDBLOCK) => return Ok(Opened::Busy),
                Err(e) => return Err(io("lock", &lock_path)(e.into())),
            }
        }
        let path = dir.join(format!("{key}.journal"));
        let mut file = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .mode(FILE_MODE)
            .open(&path)
            .map_err(io("open", &path))?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes).map_err(io("read", &path))?;
        let journal = decode_journal(&bytes).map_err(|error| StoreError::Corrupt {
            path: path.clone(),
            error,
        })?;
        let mut len = bytes.len() as u64;
        if let Some(torn) = &journal.torn_tail {
            // [CLIENT.JOURNAL.5] A torn tail is dropped; cut it off so appends follow whole
            // records.
            len = torn.offset as u64;
            file.set_len(len).map_err(io("truncate", &path))?;
            file.sync_all().map_err(io("sync", &path))?;
        }
        Ok(Opened::Locked(
            Self {
                path,
                file,
                _lock: lock,
                len,
                unsynced: false,
            },
            journal,
        ))
    }

    /// The journal file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether the file holds any record.
    pub fn is_empty(&self) -> bool {
        self.len == 0
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
        let mut out = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(FILE_MODE)
            .open(&tmp)
            .map_err(io("create", &tmp))?;
        out.write_all(&bytes).map_err(io("write", &tmp))?;
        out.sync_all().map_err(io("sync", &tmp))?;
        drop(out);
        fs::rename(&tmp, &self.path).map_err(io("rename", &tmp))?;
        if let Some(dir) = self.path.parent() {
            File::open(dir)
                .and_then(|d| d.sync_all())
                .map_err(io("sync", dir))?;
        }
        self.file = OpenOptions::new()
            .read(true)
            .append(true)
            .open(&self.path)
            .map_err(io("open", &self.path))?;
        self.len = bytes.len() as u64;
        self.unsynced = false;
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
