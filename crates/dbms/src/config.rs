//! The DBMS's knobs, their defaults (Flag Commit's Table 2 where it gives a
//! number) and the checks that refuse a configuration before anything runs.

use crate::error::{DbmsError, Result};
use serde::Serialize;

/// The recovery manager: who makes transactions atomic and durable.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Recovery {
    /// The device's transactions (shadow paging): page locks, force at
    /// commit, `write_tx` / `commit` / `abort` (the basic protocols, sec. 3).
    #[default]
    Shadow,
    /// ARIES (Mohan et al., the paper's [31]) on a device without
    /// transactions: record locks, steal and no-force, undo and redo log
    /// records, compensation records, the WAL rule, the log forced at
    /// commit, fuzzy checkpoints, restart by analysis, redo and undo.
    Aries,
    /// ARIES with a deliberate bug for the crash tests to catch: a stolen
    /// page is written without forcing the log first (the WAL rule
    /// broken). Never use it for anything else.
    AriesCanary,
    /// Flag Commit's extended protocols (sec. 4, CFC_ex / AFC_ex) on a
    /// device that offers pending records (`RecordTx`): record locks and at
    /// most `max_c` writers a page, steal and no-force, a redo-only log
    /// whose buffer drops an evicted page's records (Algorithm 1), a commit
    /// record forced only while some update is still buffered (Algorithm
    /// 2), abort without I/O, fuzzy checkpoints, restart by Algorithm 3.
    FlagEx,
    /// FlagEx with a deliberate bug for the crash tests to catch: a commit
    /// forces no commit record even while some of its updates are only in
    /// the buffer (Algorithm 2's test skipped). Never use it for anything else.
    FlagExCanary,
}

impl Recovery {
    pub fn name(self) -> &'static str {
        match self {
            Recovery::Shadow => "shadow",
            Recovery::Aries => "aries",
            Recovery::AriesCanary => "aries-canary",
            Recovery::FlagEx => "flag-ex",
            Recovery::FlagExCanary => "flag-ex-canary",
        }
    }

    /// ARIES or its canary.
    pub fn aries(self) -> bool {
        matches!(self, Recovery::Aries | Recovery::AriesCanary)
    }

    /// Flag Commit's extended manager or its canary.
    pub fn flag_ex(self) -> bool {
        matches!(self, Recovery::FlagEx | Recovery::FlagExCanary)
    }

    /// Record-level locking and a log (every manager but shadow paging).
    pub fn logs(self) -> bool {
        self != Recovery::Shadow
    }
}

/// How a run is set up. `Default` is the paper's setting, with a database
/// budget that the caller sizes to its device ([`DbmsConfig::db_pages`]).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DbmsConfig {
    /// Concurrent clients, each running one transaction at a time (Table 2: 50).
    pub clients: u32,
    /// Buffer pool frames, DB pages (Table 2: 512).
    pub buffer_pages: u32,
    /// Frames each open transaction pins: its most recently dirtied pages,
    /// which the buffer may not evict. A property of the commit protocol
    /// (its registry entry's `resident_pages_per_tx`): 1 for SCC and BPCC,
    /// whose last shadow page of an in-progress transaction must stay
    /// resident (sec. 5.1); 0 for X-FTL and the flag commits.
    pub pinned_frames_per_tx: u32,
    /// Flash (logical) pages per DB page: 1 by default; 4 is the paper's
    /// 8 KB DB page on 2 KB flash pages.
    pub flash_pages_per_db_page: u32,
    /// The database's size budget, DB pages: the TPC-C layout is scaled to fit.
    pub db_pages: u32,
    /// Percent of the device's logical pages written before the database
    /// is loaded, with data no transaction touches (cold data, after the
    /// database's pages): how full the device is (the paper states no fill).
    pub cold_fill_pct: u32,
    /// TPC-C warehouses (the paper: 20).
    pub warehouses: u32,
    /// Injected rollbacks, percent of transactions (the paper's delta: 5).
    pub abort_pct: u32,
    /// Distinct pages a transaction may touch: the paper's transactions
    /// touch fewer than 50 (longer Stock-Levels are cut, see tpcc.rs).
    pub max_pages_per_tx: u32,
    /// Only plans writing this many distinct pages are run, the others
    /// drawn and skipped (Fig. 18 splits the trace at lambda = 10:
    /// 0..=10 short, 11..=u32::MAX long). The full mix by default.
    pub pages_written: (u32, u32),
    /// Transactions the clients run to their end (committed or rolled back).
    pub transactions: u64,
    /// Transactions run first and not measured, so the measured ones find
    /// the buffer and the device's GC in their steady state (the paper warms
    /// up with 30 minutes of trace before its 4 hours).
    pub warmup_transactions: u64,
    /// A deadlock victim restarts after a back-off drawn uniformly from
    /// [0, backoff_ns_max] (the paper: "a random backoff time").
    pub backoff_ns_max: u64,
    pub seed: u64,
    pub recovery: Recovery,
    /// Log pages (flash pages) of the log region a logging recovery manager
    /// writes circularly.
    pub log_pages: u32,
    /// A fuzzy checkpoint each time this many log pages filled (sec. 4.3).
    pub checkpoint_log_pages: u32,
    /// Keep every commit's pages ([`crate::CommitLog`]): the crash tests'
    /// reference. Off for long runs.
    pub record_commits: bool,
    /// Flag Commit's extended manager: transactions updating one DB page at
    /// once, at most (sec. 4.3's max_c; the paper's 3). At most the
    /// device's own `max-c`, which refuses a version with more.
    pub max_c: u32,
}

impl Default for DbmsConfig {
    fn default() -> Self {
        DbmsConfig {
            clients: 50,
            buffer_pages: 512,
            pinned_frames_per_tx: 0,
            flash_pages_per_db_page: 1,
            db_pages: 16_384,
            cold_fill_pct: 0,
            warehouses: 20,
            abort_pct: 5,
            max_pages_per_tx: 49,
            pages_written: (0, u32::MAX),
            transactions: 2_000,
            warmup_transactions: 0,
            backoff_ns_max: 2_000_000,
            seed: 1,
            recovery: Recovery::Shadow,
            log_pages: 1_024,
            checkpoint_log_pages: 64,
            record_commits: false,
            max_c: 3,
        }
    }
}

/// The frames a run may need beyond the open transactions' pins: one a
/// client loading a page, and one to spare for the evictor's choice.
fn frames_needed(cfg: &DbmsConfig) -> u64 {
    cfg.clients as u64 * (cfg.pinned_frames_per_tx as u64 + 1) + 1
}

impl DbmsConfig {
    /// Refuses a configuration that cannot run: every check is here, so the
    /// run itself never meets an impossible state (an all-pinned buffer).
    pub fn validate(&self) -> Result<()> {
        let bad = |m: String| Err(DbmsError::Config(m));
        if self.clients == 0 {
            return bad("at least one client is needed".into());
        }
        if (self.buffer_pages as u64) < frames_needed(self) {
            return bad(format!(
                "a buffer of {} frames is too small for {} clients with {} pinned frames each (at least {})",
                self.buffer_pages,
                self.clients,
                self.pinned_frames_per_tx,
                frames_needed(self)
            ));
        }
        if self.flash_pages_per_db_page == 0 {
            return bad("a DB page needs at least one flash page".into());
        }
        if self.cold_fill_pct > 100 {
            return bad(format!("cold_fill_pct {} is above 100", self.cold_fill_pct));
        }
        if self.abort_pct > 100 {
            return bad(format!("abort_pct {} is above 100", self.abort_pct));
        }
        if self.max_pages_per_tx == 0 {
            return bad("max_pages_per_tx must be at least 1".into());
        }
        let (lo, hi) = self.pages_written;
        if lo > hi || lo > self.max_pages_per_tx {
            return bad(format!(
                "pages_written {lo}..={hi} selects no plan (a plan writes at most max_pages_per_tx = {} pages)",
                self.max_pages_per_tx
            ));
        }
        if self.warehouses == 0 {
            return bad("at least one warehouse is needed".into());
        }
        if self.recovery.logs() {
            if self.pinned_frames_per_tx > 0 {
                return bad(format!(
                    "pinned_frames_per_tx applies to shadow paging only (the {} manager pins nothing)",
                    self.recovery.name()
                ));
            }
            if self.recovery.flag_ex() && !(1..=4).contains(&self.max_c) {
                return bad(format!(
                    "max_c {} is outside 1..=4 (a page version holds at most four pending-record entries)",
                    self.max_c
                ));
            }
            if self.checkpoint_log_pages == 0 || self.log_pages < 3 * self.checkpoint_log_pages {
                return bad(format!(
                    "a log of {} pages cannot keep two checkpoints {} pages apart and the pages between (at least 3 x checkpoint_log_pages)",
                    self.log_pages, self.checkpoint_log_pages
                ));
            }
        }
        if self.db_pages < crate::tpcc::Table::ALL.len() as u32 {
            return bad(format!(
                "a database of {} pages cannot hold the nine tables (at least {} pages)",
                self.db_pages,
                crate::tpcc::Table::ALL.len()
            ));
        }
        Ok(())
    }

    /// Logical pages the database occupies on the device.
    pub fn logical_pages(&self) -> u64 {
        self.db_pages as u64 * self.flash_pages_per_db_page as u64
    }

    /// Logical pages of cold data a device of `logical_pages` gets.
    pub fn cold_pages(&self, logical_pages: u32) -> u64 {
        logical_pages as u64 * self.cold_fill_pct as u64 / 100
    }

    /// Logical pages the log region takes (none without a log).
    pub fn log_region_pages(&self) -> u32 {
        if self.recovery.logs() {
            crate::wal::LogManager::region_pages(self.log_pages)
        } else {
            0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_are_the_papers_and_valid() {
        let c = DbmsConfig::default();
        assert_eq!((c.clients, c.buffer_pages, c.abort_pct, c.warehouses), (50, 512, 5, 20));
        c.validate().unwrap();
    }

    #[test]
    fn a_buffer_the_pins_would_fill_is_refused() {
        let c = DbmsConfig {
            clients: 10,
            buffer_pages: 20,
            pinned_frames_per_tx: 1,
            ..DbmsConfig::default()
        };
        assert!(matches!(c.validate(), Err(DbmsError::Config(m)) if m.contains("too small")));
        let ok = DbmsConfig { buffer_pages: 21, ..c };
        ok.validate().unwrap();
    }

    #[test]
    fn impossible_knobs_are_refused() {
        for c in [
            DbmsConfig {
                clients: 0,
                ..Default::default()
            },
            DbmsConfig {
                abort_pct: 101,
                ..Default::default()
            },
            DbmsConfig {
                flash_pages_per_db_page: 0,
                ..Default::default()
            },
            DbmsConfig {
                db_pages: 8,
                ..Default::default()
            },
            DbmsConfig {
                max_pages_per_tx: 0,
                ..Default::default()
            },
            DbmsConfig {
                pages_written: (11, 10),
                ..Default::default()
            },
            DbmsConfig {
                pages_written: (50, u32::MAX),
                ..Default::default()
            },
            // Pins are shadow paging's; a log must hold three checkpoint spans.
            DbmsConfig {
                recovery: Recovery::Aries,
                pinned_frames_per_tx: 1,
                ..Default::default()
            },
            DbmsConfig {
                recovery: Recovery::Aries,
                log_pages: 100,
                checkpoint_log_pages: 40,
                ..Default::default()
            },
        ] {
            assert!(c.validate().is_err(), "{c:?}");
        }
    }
}
