//! The SQLite modes the host stack runs: a journal mode on a protocol, for
//! every protocol of the registry and every journal mode its entry says it
//! can carry (`ProtocolEntry::sql`).
//!
//! Names: on the default protocol (`plain`, the baseline every paper
//! compares against) the journal modes are `rbj` (rollback journal,
//! `DELETE`), `truncate`, `persist`, `wal`, `off` and `memory`; on another
//! protocol without transactions, `<protocol>-rbj`, `<protocol>-wal`, and so
//! on. On a transactional protocol P, `P` is `journal_mode=OFF` (the
//! device's transactions replace the journal, the X-FTL paper's setting),
//! `P-memory` is `MEMORY`, `P-batch` is SQLite's default `DELETE` through its
//! batch-atomic-write interface, and `P-rbj`, `P-truncate`, `P-persist` and
//! `P-wal` are those journals on top of the device's transactions. A
//! protocol whose entry carries one journal mode (SW-WAL: WAL, whose
//! checkpoints remap) names it by its bare name too.

use serde::{Serialize, Serializer};
use std::collections::BTreeMap;
use std::sync::Mutex;
use txftl_fs::FsMode;
use txftl_ftl::entry::DEFAULT_PROTOCOL;
use txftl_ftl::{ProtocolEntry, SqlJournal};

use crate::vfs::TxMapping;

/// The protocol whose journal modes have the short names `rbj` and `wal`.
const BASELINE: &str = DEFAULT_PROTOCOL;

/// A mode's CLI name and its label.
type Names = (&'static str, &'static str);

/// A mode's CLI name and label, made once per mode and kept for the run (a
/// few dozen at most: one per journal mode of each protocol).
fn names(entry: &'static ProtocolEntry, journal: SqlJournal) -> Names {
    static NAMES: Mutex<BTreeMap<(&'static str, SqlJournal), Names>> = Mutex::new(BTreeMap::new());
    let mut known = NAMES.lock().unwrap_or_else(|e| e.into_inner());
    *known.entry((entry.name, journal)).or_insert_with(|| {
        let (cli, label) = make_names(entry, journal);
        (Box::leak(cli.into_boxed_str()), Box::leak(label.into_boxed_str()))
    })
}

fn make_names(entry: &ProtocolEntry, journal: SqlJournal) -> (String, String) {
    let (p, l) = (entry.name, entry.label);
    let (suffix, suffix_label) = match journal {
        SqlJournal::Delete => ("rbj", "RBJ"),
        SqlJournal::Truncate => ("truncate", "TRUNCATE"),
        SqlJournal::Persist => ("persist", "PERSIST"),
        SqlJournal::Wal => ("wal", "WAL"),
        SqlJournal::Off => ("off", "OFF"),
        SqlJournal::Memory => ("memory", "MEMORY"),
        SqlJournal::Batch => ("batch", "BATCH"),
    };
    if (entry.transactional && journal == SqlJournal::Off) || entry.sql.len() == 1 {
        (p.to_string(), l.to_string())
    } else if p == BASELINE {
        (suffix.to_string(), suffix_label.to_string())
    } else {
        (format!("{p}-{suffix}"), format!("{l}/{suffix_label}"))
    }
}

/// A journal mode and the device it runs on. The modes there are come from
/// the registry's entries, which the caller passes
/// (`txftl_protocols::PROTOCOLS`): this crate sees the device interface and
/// the entries, never the protocols themselves.
#[derive(Clone, Copy)]
pub struct Mode {
    entry: &'static ProtocolEntry,
    journal: SqlJournal,
    cli: &'static str,
    label: &'static str,
}

impl PartialEq for Mode {
    fn eq(&self, other: &Mode) -> bool {
        self.cli == other.cli
    }
}

impl Eq for Mode {}

impl std::hash::Hash for Mode {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.cli.hash(state)
    }
}

impl Mode {
    /// `journal` on the protocol of `entry`, if the entry carries it.
    pub fn on(entry: &'static ProtocolEntry, journal: SqlJournal) -> Option<Mode> {
        if !entry.sql.contains(&journal) {
            return None;
        }
        let (cli, label) = names(entry, journal);
        Some(Mode {
            entry,
            journal,
            cli,
            label,
        })
    }

    /// Every mode of every protocol of `entries`, in their order.
    pub fn all(entries: &'static [&'static ProtocolEntry]) -> impl Iterator<Item = Mode> {
        entries
            .iter()
            .flat_map(|&entry| entry.sql.iter().filter_map(move |&journal| Mode::on(entry, journal)))
    }

    /// Every name [`Mode::parse`] takes.
    pub fn names(entries: &'static [&'static ProtocolEntry]) -> Vec<&'static str> {
        Mode::all(entries).map(Mode::cli).collect()
    }

    /// The mode of `entries` named `s` (`delete` is `rbj` too).
    pub fn parse(entries: &'static [&'static ProtocolEntry], s: &str) -> Option<Mode> {
        let s = s.to_ascii_lowercase();
        let s = if s == "delete" { "rbj" } else { s.as_str() };
        Mode::all(entries).find(|m| m.cli() == s)
    }

    /// `journal` on `protocol` of `entries`, if the protocol's entry carries it.
    pub fn of(entries: &'static [&'static ProtocolEntry], protocol: &str, journal: SqlJournal) -> Option<Mode> {
        let entry = entries.iter().find(|e| e.name == protocol)?;
        Mode::on(entry, journal)
    }

    /// The CLI name (`rbj`, `xftl-memory`).
    pub fn cli(self) -> &'static str {
        self.cli
    }

    /// The name in tables and figures (`RBJ`, `X-FTL/MEMORY`).
    pub fn name(self) -> &'static str {
        self.label
    }

    pub fn journal(self) -> SqlJournal {
        self.journal
    }

    /// The protocol's registry entry.
    pub fn entry(self) -> &'static ProtocolEntry {
        self.entry
    }

    /// The protocol's name.
    pub fn protocol(self) -> &'static str {
        self.entry.name
    }

    /// Does the device's transactions keep SQLite's transactions atomic
    /// (no journal on the device, or SQLite's batch atomic writes)?
    pub fn transactional(self) -> bool {
        self.entry.transactional
    }

    pub fn fs_mode(self) -> FsMode {
        if self.transactional() {
            FsMode::Transactional
        } else {
            FsMode::Journaled
        }
    }

    pub fn tx_mapping(self) -> TxMapping {
        match self.journal() {
            SqlJournal::Batch => TxMapping::BatchAtomic,
            _ => TxMapping::FirstWrite,
        }
    }

    /// `PRAGMA journal_mode`'s value.
    pub fn journal_mode(self) -> &'static str {
        match self.journal() {
            SqlJournal::Delete | SqlJournal::Batch => "DELETE",
            SqlJournal::Truncate => "TRUNCATE",
            SqlJournal::Persist => "PERSIST",
            SqlJournal::Wal => "WAL",
            SqlJournal::Off => "OFF",
            SqlJournal::Memory => "MEMORY",
        }
    }

    /// A rollback journal on the device (`DELETE`, `TRUNCATE`, `PERSIST`,
    /// and the batch mode, whose spilled transactions journal to a file).
    pub fn rollback_journal(self) -> bool {
        matches!(
            self.journal(),
            SqlJournal::Delete | SqlJournal::Truncate | SqlJournal::Persist | SqlJournal::Batch
        )
    }
}

impl std::fmt::Debug for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.cli())
    }
}

/// As its CLI name.
impl Serialize for Mode {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.cli())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // The modes of the registry's protocols: the dev-dependency builds them.
    use txftl_protocols::PROTOCOLS;

    #[test]
    fn every_protocol_gets_the_modes_its_entry_carries_with_unique_names() {
        let names = Mode::names(PROTOCOLS);
        for (i, n) in names.iter().enumerate() {
            assert_eq!(Mode::parse(PROTOCOLS, n).map(Mode::cli), Some(*n));
            assert!(!names[..i].contains(n), "{n} twice");
        }
        for entry in PROTOCOLS {
            for &j in entry.sql {
                let m = Mode::of(PROTOCOLS, entry.name, j).expect("a mode per journal the entry carries");
                assert_eq!(m.transactional(), entry.transactional);
            }
        }
        let x = Mode::parse(PROTOCOLS, "xftl-memory").unwrap();
        assert_eq!((x.protocol(), x.journal_mode(), x.name()), ("xftl", "MEMORY", "X-FTL/MEMORY"));
        assert_eq!(Mode::parse(PROTOCOLS, "delete"), Mode::parse(PROTOCOLS, "rbj"));
        assert_eq!(serde_json::to_string(&Mode::parse(PROTOCOLS, "wal").unwrap()).unwrap(), "\"wal\"");
        assert!(Mode::parse(PROTOCOLS, "plain-memory").is_none());
        assert_eq!(Mode::parse(PROTOCOLS, "memory").map(Mode::protocol), Some("plain"));
        let w = Mode::parse(PROTOCOLS, "xftl-wal").unwrap();
        assert_eq!((w.journal_mode(), w.name(), w.transactional()), ("WAL", "X-FTL/WAL", true));
        assert!(
            Mode::parse(PROTOCOLS, "xftl-off").is_none(),
            "OFF on a transactional protocol is its bare name"
        );
        let s = Mode::parse(PROTOCOLS, "sw-wal").unwrap();
        assert_eq!((s.journal_mode(), s.name(), s.transactional()), ("WAL", "SW-WAL", false));
    }
}
