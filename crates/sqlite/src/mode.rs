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
use std::sync::OnceLock;
use txftl_fs::FsMode;
use txftl_protocols::{ProtocolEntry, SqlJournal, PROTOCOLS};

use crate::vfs::TxMapping;

/// The protocol whose journal modes have the short names `rbj` and `wal`.
const BASELINE: &str = txftl_protocols::DEFAULT_PROTOCOL;

struct ModeInfo {
    journal: SqlJournal,
    entry: &'static ProtocolEntry,
    cli: String,
    label: String,
}

fn modes() -> &'static [ModeInfo] {
    static MODES: OnceLock<Vec<ModeInfo>> = OnceLock::new();
    MODES.get_or_init(|| {
        PROTOCOLS
            .iter()
            .flat_map(|&entry| entry.sql.iter().map(move |&journal| info(entry, journal)))
            .collect()
    })
}

fn info(entry: &'static ProtocolEntry, journal: SqlJournal) -> ModeInfo {
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
    let (cli, label) = if (entry.transactional && journal == SqlJournal::Off) || entry.sql.len() == 1 {
        (p.to_string(), l.to_string())
    } else if p == BASELINE {
        (suffix.to_string(), suffix_label.to_string())
    } else {
        (format!("{p}-{suffix}"), format!("{l}/{suffix_label}"))
    };
    ModeInfo {
        journal,
        entry,
        cli,
        label,
    }
}

/// A journal mode and the device it runs on.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Mode(u16);

impl Mode {
    fn info(self) -> &'static ModeInfo {
        &modes()[self.0 as usize]
    }

    /// Every mode of every protocol, in registry order.
    pub fn all() -> impl Iterator<Item = Mode> {
        (0..modes().len() as u16).map(Mode)
    }

    /// Every name [`Mode::parse`] takes.
    pub fn names() -> Vec<&'static str> {
        Mode::all().map(Mode::cli).collect()
    }

    /// The mode named `s` (`delete` is `rbj` too).
    pub fn parse(s: &str) -> Option<Mode> {
        let s = s.to_ascii_lowercase();
        let s = if s == "delete" { "rbj" } else { s.as_str() };
        Mode::all().find(|m| m.cli() == s)
    }

    /// `journal` on `protocol`, if the protocol's entry carries it.
    pub fn of(protocol: &str, journal: SqlJournal) -> Option<Mode> {
        Mode::all().find(|m| m.protocol() == protocol && m.journal() == journal)
    }

    /// The CLI name (`rbj`, `xftl-memory`).
    pub fn cli(self) -> &'static str {
        &self.info().cli
    }

    /// The name in tables and figures (`RBJ`, `X-FTL/MEMORY`).
    pub fn name(self) -> &'static str {
        &self.info().label
    }

    pub fn journal(self) -> SqlJournal {
        self.info().journal
    }

    /// The protocol's registry entry.
    pub fn entry(self) -> &'static ProtocolEntry {
        self.info().entry
    }

    /// The protocol's name.
    pub fn protocol(self) -> &'static str {
        self.info().entry.name
    }

    /// Does the device's transactions keep SQLite's transactions atomic
    /// (no journal on the device, or SQLite's batch atomic writes)?
    pub fn transactional(self) -> bool {
        self.info().entry.transactional
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

    #[test]
    fn every_protocol_gets_the_modes_its_entry_carries_with_unique_names() {
        let names = Mode::names();
        for (i, n) in names.iter().enumerate() {
            assert_eq!(Mode::parse(n).map(Mode::cli), Some(*n));
            assert!(!names[..i].contains(n), "{n} twice");
        }
        for entry in PROTOCOLS {
            for &j in entry.sql {
                let m = Mode::of(entry.name, j).expect("a mode per journal the entry carries");
                assert_eq!(m.transactional(), entry.transactional);
            }
        }
        let x = Mode::parse("xftl-memory").unwrap();
        assert_eq!((x.protocol(), x.journal_mode(), x.name()), ("xftl", "MEMORY", "X-FTL/MEMORY"));
        assert_eq!(Mode::parse("delete"), Mode::parse("rbj"));
        assert_eq!(serde_json::to_string(&Mode::parse("wal").unwrap()).unwrap(), "\"wal\"");
        assert!(Mode::parse("plain-memory").is_none());
        assert_eq!(Mode::parse("memory").map(Mode::protocol), Some("plain"));
        let w = Mode::parse("xftl-wal").unwrap();
        assert_eq!((w.journal_mode(), w.name(), w.transactional()), ("WAL", "X-FTL/WAL", true));
        assert!(
            Mode::parse("xftl-off").is_none(),
            "OFF on a transactional protocol is its bare name"
        );
        let s = Mode::parse("sw-wal").unwrap();
        assert_eq!((s.journal_mode(), s.name(), s.transactional()), ("WAL", "SW-WAL", false));
    }
}
