//! Terminal names (`phuxctl new -s work`, `attach work`) and which terminal is the most
//! recent, kept by phuxctl on this host (spec/client.md, CLIENT.NAME.N).
//!
//! phux carries a terminal's name as L3 metadata (`phux.session.name/v1`); phux-mio-server
//! speaks L1 only, so the names live here instead: one small JSON file per server (the
//! outbox's key: `--name`, or the socket path, or the `--exec` command line) under
//! `$XDG_STATE_HOME/phux-mio/names/`, bound to the `server_id` of the server incarnation that
//! made the terminals. A name never outlives its terminal: a name whose terminal is gone, or
//! whose server restarted (another `server_id`; an upgrade keeps it), is dropped the next
//! time the book is read against the server. Every reader and writer holds the book's lock,
//! so two shells naming at once never both win (CLIENT.NAME.2).
//!
//! The file is `{"server_id": HEX, "names": {NAME: ID, ...}, "recent": ID}`: `recent` is the
//! terminal phuxctl last created or attached to on this host (CLIENT.NAME.4).

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use phux_proto::{ErrorCode, TerminalId};

use crate::conn::Session;
use crate::error::CtlError;
use crate::list;
use crate::outbox_store::{StoreError, io_error, lock_file, open_checked, private_dir, state_dir};
pub(crate) use phux_proto::hex::to_hex as hex;

/// The most bytes of a names file read: thousands of names; a larger file is not ours.
const MAX_BOOK_LEN: u64 = 1024 * 1024;

/// The longest name.
pub const MAX_NAME_LEN: usize = 64;

/// A terminal as the command line names it: by id (`local:3`, `3`) or by name (`work`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Target {
    /// A terminal id.
    Id(TerminalId),
    /// A name given with `new -s` or `spawn -s`.
    Name(String),
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Id(id) => write!(f, "{id}"),
            Self::Name(name) => write!(f, "{name}"),
        }
    }
}

/// Checks a name: 1 to 64 of `A-Z a-z 0-9 _ . -`, not all digits (that is an id), not
/// starting with `-` or `.` (an option, a hidden file).
// [CLIENT.NAME.1]
pub fn check_name(name: &str) -> Result<(), String> {
    let bad = |why: &str| format!("{name:?} is not a terminal name: {why}");
    if name.is_empty() || name.len() > MAX_NAME_LEN {
        return Err(bad("a name is 1 to 64 characters"));
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
    {
        return Err(bad("use letters, digits, _ . and -"));
    }
    if name.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad("all digits is a terminal id"));
    }
    if name.starts_with(['-', '.']) {
        return Err(bad("it may not start with - or ."));
    }
    Ok(())
}

/// How a verb uses the book.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Use {
    /// Reads names: creates nothing, and works without a state directory (a book that does
    /// not exist yet is empty; one that does is locked and kept tidy).
    Read,
    /// Records a name: creates the book.
    Write,
    /// Records the most recent terminal where a state directory can exist, else only reads.
    Note,
}

/// The names of one server's terminals, locked while it lives.
#[derive(Debug)]
pub struct Book {
    path: PathBuf,
    /// Held for the book's life: the flock is released when it closes. `None` for a book
    /// that does not exist and was only read: it is empty and saving it writes nothing.
    lock: Option<File>,
    server_id: Option<String>,
    names: BTreeMap<String, u32>,
    recent: Option<u32>,
    changed: bool,
}

impl Book {
    /// Opens and locks the book for the server `key`, creating it for [`Use::Write`] (and
    /// for [`Use::Note`] where there is a state directory).
    pub fn open(key: &str, usage: Use) -> Result<Self, CtlError> {
        let dir = match (state_dir(), usage) {
            (Ok(dir), _) => dir.join("names"),
            (Err(StoreError::NoStateDir), Use::Read | Use::Note) => {
                return Ok(Self::empty(PathBuf::new(), None));
            }
            (Err(e), _) => return Err(e.into()),
        };
        Self::open_in(&dir, key, usage != Use::Read)
    }

    fn empty(path: PathBuf, lock: Option<File>) -> Self {
        Self {
            path,
            lock,
            server_id: None,
            names: BTreeMap::new(),
            recent: None,
            changed: false,
        }
    }

    fn open_in(dir: &Path, key: &str, create: bool) -> Result<Self, CtlError> {
        let lock_path = dir.join(format!("{key}.lock"));
        let path = dir.join(format!("{key}.json"));
        if !create && !lock_path.exists() {
            // [CLIENT.JOURNAL.10] Reading names creates nothing.
            return Ok(Self::empty(path, None));
        }
        private_dir(dir)?;
        let lock = lock_file(&lock_path)?;
        let mut book = Self {
            path,
            lock: Some(lock),
            server_id: None,
            names: BTreeMap::new(),
            recent: None,
            changed: false,
        };
        let text = match open_checked(&book.path, OpenOptions::new().read(true)) {
            Ok(mut file) => {
                let mut text = String::new();
                (&mut file)
                    .take(MAX_BOOK_LEN)
                    .read_to_string(&mut text)
                    .map_err(|e| io_error("read", &book.path, e))?;
                text
            }
            Err(StoreError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
                return Ok(book);
            }
            Err(e) => return Err(e.into()),
        };
        // A damaged book loses names, never terminals: start afresh and say so.
        match serde_json::from_str::<Value>(&text) {
            Ok(doc) => book.load(&doc),
            Err(e) => {
                eprintln!(
                    "phuxctl: {} does not parse ({e}); its names are forgotten",
                    book.path.display()
                );
                book.changed = true;
            }
        }
        Ok(book)
    }

    fn load(&mut self, doc: &Value) {
        self.server_id = doc["server_id"].as_str().map(str::to_owned);
        if let Some(names) = doc["names"].as_object() {
            for (name, id) in names {
                if let Some(id) = id.as_u64().and_then(|i| u32::try_from(i).ok())
                    && check_name(name).is_ok()
                {
                    self.names.insert(name.clone(), id);
                }
            }
        }
        self.recent = doc["recent"].as_u64().and_then(|i| u32::try_from(i).ok());
    }

    /// Binds the book to the server it is read against: names given on another incarnation
    /// are dropped (their terminals went with it), as are those of terminals not in `live`.
    // [CLIENT.NAME.3]
    pub fn bind(&mut self, server_id: &[u8], live: &[TerminalId]) {
        let hex = hex(server_id);
        if self.server_id.as_deref() != Some(hex.as_str()) {
            if self.server_id.is_some() || !self.names.is_empty() || self.recent.is_some() {
                self.changed = true;
            }
            self.server_id = Some(hex);
            self.names.clear();
            self.recent = None;
        }
        let alive = |id: &u32| live.contains(&TerminalId::Local(*id));
        let before = self.names.len();
        self.names.retain(|_, id| alive(id));
        if self.names.len() != before {
            self.changed = true;
        }
        if self.recent.is_some_and(|id| !alive(&id)) {
            self.recent = None;
            self.changed = true;
        }
    }

    /// The terminal a name stands for.
    pub fn lookup(&self, name: &str) -> Option<TerminalId> {
        self.names.get(name).map(|id| TerminalId::Local(*id))
    }

    /// The name of a terminal, if it has one.
    pub fn name_of(&self, id: &TerminalId) -> Option<&str> {
        let TerminalId::Local(n) = id else {
            return None;
        };
        self.names
            .iter()
            .find(|(_, v)| *v == n)
            .map(|(k, _)| k.as_str())
    }

    /// Names `id`; a name already taken is refused (CLIENT.NAME.2).
    pub fn insert(&mut self, name: &str, id: &TerminalId) -> Result<(), CtlError> {
        if self.lock.is_none() {
            return Err(CtlError::Local(
                "names need a state directory: set XDG_STATE_HOME or HOME".to_owned(),
            ));
        }
        let TerminalId::Local(n) = id else {
            return Err(CtlError::Local(format!(
                "only terminals of this server can be named, not {id}"
            )));
        };
        if let Some(other) = self.lookup(name) {
            return Err(CtlError::Local(format!(
                "the name {name} is taken by {other}"
            )));
        }
        self.names.insert(name.to_owned(), *n);
        self.changed = true;
        Ok(())
    }

    /// The terminal phuxctl last created or attached to, while it lives.
    pub fn recent(&self) -> Option<TerminalId> {
        self.recent.map(TerminalId::Local)
    }

    /// Marks `id` as the most recent.
    pub fn touch(&mut self, id: &TerminalId) {
        if let TerminalId::Local(n) = id
            && self.recent != Some(*n)
        {
            self.recent = Some(*n);
            self.changed = true;
        }
    }

    /// Writes the book if it changed: a new file renamed over the old, so a reader sees one
    /// or the other whole.
    pub fn save(&mut self) -> Result<(), CtlError> {
        if !self.changed || self.lock.is_none() {
            return Ok(());
        }
        let names: Map<String, Value> = self
            .names
            .iter()
            .map(|(k, v)| (k.clone(), Value::from(*v)))
            .collect();
        let doc = json!({
            "server_id": self.server_id,
            "names": names,
            "recent": self.recent,
        });
        let tmp = self.path.with_extension("json.new");
        let mut file = open_checked(
            &tmp,
            OpenOptions::new().write(true).create(true).truncate(true),
        )?;
        file.write_all(format!("{doc}\n").as_bytes())
            .and_then(|()| file.sync_all())
            .map_err(|e| io_error("write", &tmp, e))?;
        std::fs::rename(&tmp, &self.path).map_err(|e| io_error("rename", &tmp, e))?;
        self.changed = false;
        Ok(())
    }
}

/// Turns the command line's targets into terminal ids against the connected server. The book
/// is locked only while a name is looked up, never for a verb's whole run.
#[derive(Debug)]
pub struct Resolver<'k> {
    key: &'k str,
}

impl<'k> Resolver<'k> {
    /// For the server whose book is `key`.
    pub fn new(key: &'k str) -> Self {
        Self { key }
    }

    /// The book, locked and bound to the connected server ([`Book::bind`]).
    pub fn bound(&mut self, session: &mut Session, usage: Use) -> Result<Book, CtlError> {
        // Locked before the server is asked, so no name given meanwhile is missing from
        // the live terminals it is checked against.
        let mut book = Book::open(self.key, usage)?;
        let live = list::terminal_ids(session)?;
        let server_id = session.server_id().map(<[u8]>::to_vec).unwrap_or_default();
        book.bind(&server_id, &live);
        book.save()?;
        Ok(book)
    }

    /// The terminal `target` stands for: an id as given, a name as the book has it.
    pub fn resolve(
        &mut self,
        session: &mut Session,
        target: &Target,
    ) -> Result<TerminalId, CtlError> {
        match target {
            Target::Id(id) => Ok(id.clone()),
            Target::Name(_) => lookup(&self.bound(session, Use::Read)?, target),
        }
    }
}

/// The terminal `target` stands for in a bound book.
pub fn lookup(book: &Book, target: &Target) -> Result<TerminalId, CtlError> {
    match target {
        Target::Id(id) => Ok(id.clone()),
        Target::Name(name) => book.lookup(name).ok_or_else(|| unknown_name(name)),
    }
}

/// Before connecting (for the outbox's scope): the terminal `target` stands for as the book
/// last saw it. The connected run resolves it again against the server.
pub fn peek(key: &str, target: &Target) -> Result<TerminalId, CtlError> {
    match target {
        Target::Id(id) => Ok(id.clone()),
        Target::Name(name) => Book::open(key, Use::Read)?
            .lookup(name)
            .ok_or_else(|| unknown_name(name)),
    }
}

/// The refusal for a name that is already taken.
pub fn taken(name: &str, id: &TerminalId) -> CtlError {
    CtlError::Local(format!(
        "a terminal named {name} exists ({id}); `phuxctl attach {name}` or `phuxctl new -A -s \
         {name}` attaches to it"
    ))
}

/// The error for a name no live terminal has: TERMINAL_NOT_FOUND, as for an unknown id.
pub fn unknown_name(name: &str) -> CtlError {
    CtlError::Refused {
        code: ErrorCode::TERMINAL_NOT_FOUND,
        message: format!("no terminal named {name} (`phuxctl list` shows the names)"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_words_that_are_not_ids() {
        for good in ["work", "a", "build-2", "x.y_z", "2024-notes", "W"] {
            assert_eq!(check_name(good), Ok(()), "{good}");
        }
        let long = "n".repeat(MAX_NAME_LEN + 1);
        for bad in ["", "12", "a b", "a:b", "-x", ".x", "é", long.as_str()] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_book_keeps_names_of_live_terminals_of_one_incarnation() {
        let dir = tempfile::tempdir().expect("tempdir");
        let live = [TerminalId::Local(1), TerminalId::Local(2)];
        {
            let mut book = Book::open_in(dir.path(), "k", true).expect("open");
            book.bind(b"\x01\x02", &live);
            book.insert("work", &TerminalId::Local(1)).expect("insert");
            book.insert("play", &TerminalId::Local(2)).expect("insert");
            assert!(book.insert("work", &TerminalId::Local(2)).is_err());
            book.touch(&TerminalId::Local(2));
            book.save().expect("save");
        }
        let mut book = Book::open_in(dir.path(), "k", true).expect("reopen");
        book.bind(b"\x01\x02", &live[..1]);
        assert_eq!(book.lookup("work"), Some(TerminalId::Local(1)));
        assert_eq!(book.name_of(&TerminalId::Local(1)), Some("work"));
        // Terminal 2 is gone: its name and its place as the most recent with it.
        assert_eq!(book.lookup("play"), None);
        assert_eq!(book.recent(), None);
        // Another incarnation: every name is forgotten, even for a terminal with the same id.
        book.bind(b"\x09", &live);
        assert_eq!(book.lookup("work"), None);
    }

    #[test]
    fn a_damaged_book_is_forgotten_not_fatal() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("k.json"), "{not json").expect("write");
        let mut book = Book::open_in(dir.path(), "k", true).expect("open");
        book.bind(b"\x01", &[TerminalId::Local(1)]);
        assert_eq!(book.lookup("x"), None);
        book.insert("x", &TerminalId::Local(1)).expect("insert");
        book.save().expect("save");
        drop(book);
        let book = Book::open_in(dir.path(), "k", true).expect("reopen");
        assert_eq!(book.lookup("x"), Some(TerminalId::Local(1)));
    }
}
