//! End-to-end crash tests: real SQLite on the device, power cut at every flash
//! operation (with torn variants) of a scenario of several transactions, under
//! each `PRAGMA synchronous` setting, and cuts again inside the restart.
//!
//! The scenario, after `partsupp` is loaded (and a second database, `side.db`,
//! created) and the stack cleanly closed (that image is the starting point of
//! every run): `transactions` transactions of K updates; one of them (the
//! `rollback_at`-th) first shrinks the page cache so its updates spill to the
//! device; while it is open, a second connection commits a row to `side.db`
//! (its own device transaction on X-FTL, which must not carry the first one's
//! spilled pages); then the first rolls back. The geometry and the number of
//! transactions are chosen (by the caller) so that GC and, on X-FTL, the
//! checkpoints that reclaim committed X-L2P entries happen inside the scenario.
//! In `xftl-batch` one more transaction (the `big_at`-th) updates every tuple:
//! more pages than the X-L2P table holds, which the scenario keeps from
//! spilling to flash (its entry's `tx_pages_bound`), so the device refuses the
//! batch (`TableFull`), the VFS answers SQLite's `COMMIT_ATOMIC_WRITE` with an I/O
//! error, SQLite sends `ROLLBACK_ATOMIC_WRITE` (a device abort of the pages the
//! batch already wrote) and commits the same transaction through its rollback
//! journal: cuts inside it test that nothing of the aborted batch survives and
//! that the journaled commit that follows is atomic.
//!
//! With [`SqlWorkload::Tpcc`] the scenario is a short TPC-C run instead, with
//! its own oracle (the database after each transaction, from an in-memory
//! run) and the consistency conditions checked at every restart: the
//! [`tpcc`] module's doc. The enumeration, the cuts inside restarts and the
//! promises below are the same.
//!
//! With [`SqlWorkload::Heavy`] the scenario is SQLite's heavy statements
//! (CREATE INDEX, five of them in one transaction, an ORDER BY whose sorter
//! spills, a transaction of inserts into a table with three indexes, VACUUM,
//! DELETE of the whole table), each a transaction larger than a Möbius inode
//! lists, judged like TPC-C against digests of an in-memory run: the
//! [`heavy`] module's doc.
//!
//! After each cut the FTL is recovered from the NAND alone, the file system
//! mounted, SQLite reopened (which rolls back a hot journal or reads the WAL),
//! and both databases read: this is the *restart*. With recovery cuts on, the
//! restart itself is cut at (a sample of) its programs and erases, restarted
//! again, and checked against the same oracle; in the modes that promise
//! durability it must also reach the same contents as the uncut restart.
//!
//! # The oracle, per mode and `synchronous` setting ([`Promise`])
//!
//! What SQLite promises depends on when it syncs; what the stack promises
//! depends on where the VFS puts the device commit. The oracle is exactly that:
//!
//! - [`Promise::Durable`]: every transaction whose COMMIT returned is there,
//!   the one in flight at the cut whole or absent, nothing of a rolled-back one,
//!   `integrity_check` ok on both databases. It holds for
//!   - every journal mode but WAL on a transactional device (`xftl`,
//!     `xftl-memory`, `xftl-rbj`, `xftl-truncate`, `xftl-persist`), in every
//!     setting: the VFS commits the device transaction at
//!     `SQLITE_FCNTL_COMMIT_PHASETWO`, which SQLite sends even with
//!     `synchronous=OFF`, and the device's commit is durable when it returns
//!     (a rollback journal beside it is redundant, never harmful: the
//!     database it would restore is the one the device kept);
//!   - the rollback journals `rbj` and `truncate` with `FULL` or `NORMAL`,
//!     and `persist` with `FULL`: SQLite syncs the journal before it
//!     overwrites the database and the database before it finalizes the
//!     journal (`NORMAL` only skips the second sync of the journal header,
//!     which the journal's checksums cover when nothing older follows it).
//!     The hole SQLite leaves in `NORMAL` (an unlink or a truncate not yet
//!     durable brings the journal back; `FULL` syncs a truncated one, `EXTRA`
//!     closes the unlink's) is not there: this file system's delete and
//!     truncate are durable when they return;
//!   - `xftl-batch` with `FULL` or `NORMAL`: a batch commits at
//!     `SQLITE_FCNTL_COMMIT_ATOMIC_WRITE`, a spilled transaction goes through
//!     the journal as in `rbj`;
//!   - `wal` (on any device) with `FULL`: the WAL is synced at every commit.
//! - [`Promise::Prefix`]: the databases hold the committed transactions up to
//!   some point, and nothing after it: a prefix of the sequence (committed
//!   ones, then the one in flight), never part of a transaction, never a later
//!   one without an earlier one; `integrity_check` ok. For WAL with `NORMAL`
//!   (SQLite: "a transaction committed in WAL mode with synchronous=NORMAL
//!   might roll back following a power loss"; the WAL is synced only at
//!   checkpoints, its checksummed frames are read back up to the first bad one).
//! - [`Promise::NoneAfterPowerLoss`]: the rollback journals, WAL and
//!   `xftl-batch` (which SQLite does not run as a batch without syncs) with
//!   `OFF`, `persist` with `NORMAL`, and `off` and `memory` on a device
//!   without transactions in every setting. `persist` keeps the journal's old
//!   contents, among them the headers of an earlier transaction's later
//!   segments (a cache spill starts a segment). Before it writes nRec into
//!   the live header, SQLite zeroes the old header that follows the live
//!   records (pager.c, `syncJournal`); `FULL` syncs in between, `NORMAL`
//!   does not, and the file system may write the two in either order. A cut
//!   that keeps nRec and loses the zero makes the restart play the live
//!   segment back, then the stale ones after it: older images of their pages
//!   (`sqlcrash --modes persist --synchronous normal --preset tiny
//!   --blocks-per-plane 16 --at 583 --torn none` loses committed
//!   transactions that way). SQLite's documentation: with `synchronous=OFF` "the database
//!   might become corrupted if the operating system crashes or the computer
//!   loses power"; with the journal OFF or in MEMORY, "if the application
//!   crashes in the middle of a transaction ... the database file will very
//!   likely go corrupt". Here it really happens:
//!   the journal's size is file-system metadata, durable only at fsync, so
//!   after a cut the journal may be there but empty while half the
//!   transaction already overwrote the database; and a WAL checkpoint
//!   copies frames into the database without syncing the WAL first (with
//!   `NORMAL` it does), so a cut inside it can leave some pages of the
//!   checkpointed transactions in the database and their frames lost with
//!   the WAL's size (the TPC-C scenario, whose small `wal_autocheckpoint`
//!   checkpoints inside the run, found it: W_YTD with the payments, the
//!   districts' D_YTD without; partsupp never checkpoints inside its
//!   scenario, and held `wal` `OFF` to a prefix before). Only the restart
//!   itself must succeed (FTL recovery, mount, SQLite opening the files);
//!   what the databases hold is classified (prefix, torn, corrupt: among
//!   them a file SQLite refuses as malformed while it opens it, as the
//!   TPC-C scenario on `xftl-batch` met) and reported, not judged.
//!
//! `side.db` is held to the same promise (its row counted like a transaction).
//!
//! # What a run exercised
//!
//! A crash test that never cut inside the rollback, never found a hot journal,
//! or never let GC run proves nothing about those paths while still reporting 0
//! violations. Every report counts them ([`SqlExercised`]), and a run fails with
//! [`SqlCrashError::NotExercised`] if something the scenario is meant to
//! exercise in that mode ([`SqlExpect`]) stayed at zero.

mod enumerate;
pub mod heavy;
mod probe;
pub mod tpcc;

pub use enumerate::sql_crashtest;

use crate::heavy::Statement;
use crate::tpcc::TxKind;
use crate::workload::{costs, integrity_check, load, run_tx, TxUpdates, TxWorkload};
use crate::{Canary, Mode, Stack, StackError, Synchronous};
use probe::{Probe, Shared};
use rusqlite::Connection;
use serde::Serialize;
use txftl_ftl::{FtlConfig, ProtocolCounters};
use txftl_ftl::{ProtocolOptions, SqlJournal};
use txftl_nand::{Nand, NandConfig, Torn};

/// The SQL workload of the scenario.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SqlWorkload {
    /// `partsupp` and `side.db` (this module's doc; `rows`, `k`, `big_at`).
    Partsupp,
    /// A short TPC-C run at this scale divisor (the [`tpcc`] module's doc).
    Tpcc { scale: u32 },
    /// SQLite's heavy statements on a table `t` of `rows` rows, inserting
    /// `insert_rows` into `u` (the [`heavy`] module's doc).
    Heavy { rows: u32, insert_rows: u32 },
}

impl SqlWorkload {
    pub fn name(self) -> &'static str {
        match self {
            SqlWorkload::Partsupp => "partsupp",
            SqlWorkload::Tpcc { .. } => "tpcc",
            SqlWorkload::Heavy { .. } => "heavy",
        }
    }
}

#[derive(Clone, Debug)]
pub struct SqlCrashSpec {
    pub workload: SqlWorkload,
    pub nand: NandConfig,
    pub ftl: FtlConfig,
    pub opts: ProtocolOptions,
    pub mode: Mode,
    pub synchronous: Synchronous,
    /// partsupp: tuples, and updates per transaction.
    pub rows: u32,
    pub k: u32,
    pub transactions: u32,
    /// Index of the transaction that spills its cache and rolls back (TPC-C:
    /// a New-Order forced to roll back).
    pub rollback_at: u32,
    /// partsupp: index of a transaction that updates every tuple (see the module doc).
    pub big_at: Option<u32>,
    pub seed: u64,
    pub torn: Vec<Torn>,
    /// Cuts inside each crash point's restart: at most this many of its
    /// programs and erases, evenly spaced (0: none; `u32::MAX`: every one).
    pub recovery_cuts: u32,
    /// Try every n-th crash point only (1: all). A supplement for quick tests;
    /// the whole enumeration is the proof.
    pub sample_every: u64,
    /// Only this crash point (replaying a failure); expectations are not checked.
    pub only: Option<(u64, Torn)>,
    /// A deliberate VFS bug, to show the checker catches it.
    pub canary: Canary,
    /// Under `synchronous=NORMAL` on a protocol that groups SQLite's
    /// transactions into device transactions (`ProtocolEntry::sql_normal_group_pages`):
    /// database page writes per group, instead of the protocol's (small
    /// groups commit inside the scenario).
    pub group_pages: Option<u32>,
    /// The command line that reproduces this run, without `--at`/`--torn`.
    pub replay_base: String,
}

impl SqlCrashSpec {
    /// `workload` in `mode` on the small preset its protocol's NAND needs
    /// pick (`tiny`, or `tiny-slc` for one that needs SLC) at its [`ScenarioSize`]
    /// (partsupp: 30 tuples, 3 updates a transaction, the first transaction
    /// rolled back; TPC-C: the default rolled-back New-Order), seed 1, every
    /// torn variant, one cut inside each restart, every `sample_every`-th
    /// crash point, no canary: the tests' scenarios.
    pub fn on_tiny(workload: SqlWorkload, mode: Mode, synchronous: Synchronous, sample_every: u64) -> SqlCrashSpec {
        let size = ScenarioSize::for_workload(workload, mode);
        let mut p = txftl_nand::preset(mode.entry().nand.tiny_preset()).expect("the tiny presets exist");
        p.geometry.blocks_per_plane = size.blocks_per_plane;
        if let Some(page_size) = size.page_size {
            p.geometry.page_size = page_size;
        }
        let (rows, k, rollback_at) = match workload {
            SqlWorkload::Partsupp => (30, 3, 1),
            SqlWorkload::Tpcc { .. } => (0, 0, tpcc::ROLLBACK_AT_DEFAULT),
            // No transaction rolls back: `rollback_at` past the last one.
            SqlWorkload::Heavy { .. } => (0, 0, size.transactions),
        };
        SqlCrashSpec {
            workload,
            nand: p.config(txftl_nand::DataMode::Full, txftl_nand::ViolationPolicy::Panic),
            ftl: FtlConfig::default(),
            opts: size.options(mode),
            mode,
            synchronous,
            rows,
            k,
            transactions: size.transactions,
            rollback_at,
            big_at: size.big_at,
            seed: 1,
            torn: Torn::ALL.to_vec(),
            recovery_cuts: 1,
            sample_every,
            only: None,
            canary: Canary::None,
            group_pages: None,
            replay_base: String::new(),
        }
    }
}

/// A scenario size per journal mode on the `tiny` preset, picked so that GC
/// runs and, on a transactional device, checkpoints are taken inside its
/// transactions' writes (X-FTL: committed X-L2P entries fill the table and
/// checkpoints reclaim them) inside the scenario. A transactional device
/// writes far fewer pages per transaction than a journal does, so its modes
/// need more transactions. The sizes were measured on X-FTL.
///
/// `xftl-batch` runs on 24 blocks per plane, not 16, because it alone keeps a
/// rollback journal on an X-FTL device, and there it does not fit: at 16
/// blocks per plane X-FTL exports 112 logical pages of 512 bytes, the file
/// system's fixed areas take 69 of them (the superblock, 32 pages of inode
/// table for 64 inodes of 256 bytes, the bitmap, and a 35-page metadata
/// journal area the layout reserves in both metadata modes), leaving 43 data
/// pages; `crash.db` takes 17 and `side.db` 2, and the spilled transaction's
/// journal needs more than the 24 left, because with a 2-page cache SQLite
/// syncs the journal at every spill and starts a new segment with its own
/// 512-byte header each time (it reached 11,784 bytes, 24 pages, when the
/// file system refused it). The `rbj` mode fits on 16: the plain FTL keeps no
/// X-L2P log ring and exports more logical pages. A protocol that bounds a
/// transaction's pages (its entry's `tx_pages_bound`: X-FTL's table, not
/// spilling) gets a bound of 12 there, so that the transaction that updates every tuple
/// (about 16 pages) is larger and its batch is aborted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct ScenarioSize {
    /// The device's page size (and SQLite's) when it is not the preset's.
    pub page_size: Option<u32>,
    pub blocks_per_plane: u32,
    pub transactions: u32,
    /// Pages one device transaction may write, for a protocol that bounds it
    /// (its entry's `tx_pages_bound`; X-FTL's table entries).
    pub tx_pages_bound: u32,
    /// The transaction that updates every tuple ([`SqlCrashSpec::big_at`]).
    pub big_at: Option<u32>,
    /// Protocol options of the scenario, each set where the protocol has
    /// it (heavy: Möbius's `items-max`, fewer than the scenario's
    /// transactions write, so they span several inodes, and `ala-blocks`,
    /// so the inodes of the largest fit between two checkpoints).
    pub protocol_opts: &'static [(&'static str, u32)],
}

impl ScenarioSize {
    pub fn default_for(mode: Mode) -> ScenarioSize {
        use SqlJournal::*;
        let (blocks_per_plane, transactions, tx_pages_bound, big_at) = match (mode.journal(), mode.transactional()) {
            // 18 blocks: DFTL's translation pages beside the spilled
            // transaction's journal (SQLite's cache of 2 pages spills at
            // nearly every page) fill 16.
            (_, false) => (18, 12, 48, None),
            (Off | Memory, true) => (16, 60, 48, None),
            (Batch, true) => (24, 60, 12, Some(4)),
            // A rollback journal on a transactional device: 24 blocks, as for
            // the batch mode's spilled journal (above).
            (Delete | Truncate | Persist, true) => (24, 60, 48, None),
            // As on a device without transactions (the database is written
            // by checkpoints, outside device transactions), on 24 blocks:
            // X-FTL exports fewer logical pages than the plain FTL.
            (Wal, true) => (24, 12, 48, None),
        };
        // Möbius's ALA ring takes at least 4 blocks (its `ala-blocks`), which
        // leave too few logical pages for the file system on 16 (measured:
        // 64 pages; on 20 every setting runs).
        ScenarioSize {
            page_size: None,
            blocks_per_plane: blocks_per_plane + if has_ala_ring(mode) { 4 } else { 0 },
            transactions,
            tx_pages_bound,
            big_at,
            protocol_opts: &[],
        }
    }

    /// The protocol options of the scenario: the transaction bound, for a
    /// protocol that has one, and [`ScenarioSize::protocol_opts`].
    pub fn options(&self, mode: Mode) -> ProtocolOptions {
        self.options_beside(&ProtocolOptions::new(), mode)
    }

    /// [`ScenarioSize::options`] added to `given` (the caller's options for
    /// `mode`'s protocol), where `given` does not name them.
    pub fn options_beside(&self, given: &ProtocolOptions, mode: Mode) -> ProtocolOptions {
        let mut opts = given.clone();
        if let Some(bound) = mode.entry().tx_pages_bound {
            if !opts.contains(bound.key) {
                opts = bound.apply(opts, self.tx_pages_bound);
            }
        }
        for &(key, value) in self.protocol_opts {
            if mode.entry().options.iter().any(|o| o.key == key) && !opts.contains(key) {
                opts = opts.with(key, value);
            }
        }
        opts
    }

    /// The size for a workload: [`ScenarioSize::default_for`] for partsupp;
    /// for TPC-C, 4 KiB pages (SQLite's default page size: at 512 bytes every
    /// customer row overflows and the database takes hundreds of pages) on
    /// `tiny`'s 2 dies of 8-page blocks, few enough blocks that GC runs
    /// inside the scenario. WAL writes about 4x what X-FTL writes per
    /// transaction (every frame, 24 bytes longer than a page, straddles two
    /// device pages), so X-FTL needs more transactions for GC and for
    /// committed X-L2P entries to fill its table (a bound of 64 pages: the
    /// load's transactions of 1,000 rows must fit) and be reclaimed.
    pub fn for_workload(workload: SqlWorkload, mode: Mode) -> ScenarioSize {
        match workload {
            SqlWorkload::Partsupp => return ScenarioSize::default_for(mode),
            SqlWorkload::Heavy { .. } => return ScenarioSize::heavy(mode),
            SqlWorkload::Tpcc { .. } => {}
        }
        use SqlJournal::*;
        let (blocks_per_plane, transactions) = match (mode.journal(), mode.transactional()) {
            // Two rounds of the ten types: with the host page cache taking
            // WAL's and the journal's rewrites, one round's sampled cuts do
            // not reach GC.
            (_, false) | (Wal, true) => (20, 20),
            (Off | Memory, true) => (14, 20),
            // The rolled-back New-Order's spilled journal does not fit on 14.
            (Batch | Delete | Truncate | Persist, true) => (16, 20),
        };
        ScenarioSize {
            page_size: Some(4096),
            blocks_per_plane,
            transactions,
            tx_pages_bound: 64,
            big_at: None,
            protocol_opts: &[],
        }
    }

    /// The heavy scenario's size: `tiny`'s 512-byte pages (SQLite's
    /// smallest, so its sorter spills over the fewest rows: the [`heavy`]
    /// module's doc) and enough blocks for the database, VACUUM's copy of it
    /// and, in WAL modes, a WAL of VACUUM's every page, few enough that GC
    /// runs inside the scenario (measured on `mobius`, `atomic-write`,
    /// `sw-wal`, `mobius-rbj` and `mobius-wal`); Möbius's inode lists
    /// [`heavy::MOBIUS_ITEMS_MAX`] items.
    pub fn heavy(mode: Mode) -> ScenarioSize {
        use SqlJournal::*;
        let blocks_per_plane = match (mode.journal(), mode.transactional()) {
            (Wal, _) => 110,
            (Off | Memory | Batch, true) => 90,
            // VACUUM's journal of every page beside its every page, in one
            // device transaction.
            (Delete | Truncate | Persist, true) => 134,
            (_, false) => 110,
        };
        // Möbius's ALA ring takes `heavy::MOBIUS_ALA_BLOCKS` blocks (12 a
        // plane), and it needs 4 more a plane (measured: at 12 more, 102,
        // the VACUUM finds `mobius` full; at 18 more, 108, no GC runs).
        let blocks_per_plane = blocks_per_plane + if has_ala_ring(mode) { 16 } else { 0 };
        ScenarioSize {
            page_size: None,
            blocks_per_plane,
            transactions: heavy::STEPS.len() as u32,
            // VACUUM writes every page in one transaction.
            tx_pages_bound: 2048,
            big_at: None,
            protocol_opts: &[("items-max", heavy::MOBIUS_ITEMS_MAX), ("ala-blocks", heavy::MOBIUS_ALA_BLOCKS)],
        }
    }
}

/// Whether the mode's protocol keeps an atom-log ring beside the data (it
/// takes `ala-blocks`: Möbius), which a scenario's device must make room for.
fn has_ala_ring(mode: Mode) -> bool {
    mode.entry().option("ala-blocks").is_some()
}

/// What a COMMIT that returned promises after a power cut (see the module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Promise {
    Durable,
    Prefix,
    NoneAfterPowerLoss,
}

impl Promise {
    pub fn of(mode: Mode, sync: Synchronous) -> Promise {
        use SqlJournal::*;
        match (mode.journal(), mode.transactional(), sync) {
            (Wal, _, Synchronous::Full) => Promise::Durable,
            (Wal, _, Synchronous::Normal) => Promise::Prefix,
            (Wal | Batch, _, Synchronous::Off) => Promise::NoneAfterPowerLoss,
            // SQLite's transactions grouped into device transactions
            // (`vfs/group.rs`): a power cut loses the open group whole.
            (Off, true, Synchronous::Normal) if mode.entry().sql_normal_group_pages.is_some() => Promise::Prefix,
            // The device transaction, committed at SQLite's commit point,
            // keeps the database atomic whatever SQLite syncs.
            (Off | Memory | Delete | Truncate | Persist | Batch, true, _) => Promise::Durable,
            (Delete | Truncate, false, Synchronous::Full | Synchronous::Normal) | (Persist, false, Synchronous::Full) => Promise::Durable,
            // PERSIST leaves old journal headers past the live one; `NORMAL`
            // zeroes the next one and writes nRec under one sync (see the
            // module doc).
            (Persist, false, Synchronous::Normal) => Promise::NoneAfterPowerLoss,
            (Delete | Truncate | Persist, false, Synchronous::Off) | (Off | Memory, false, _) => Promise::NoneAfterPowerLoss,
            (Batch, false, _) => unreachable!("a batch mode needs a transactional device"),
        }
    }
}

/// The phase of the scenario a crash point falls in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Phase {
    /// Opening the connections (their PRAGMAs).
    Open,
    /// The ordinary transactions.
    Commit,
    /// The transaction that spills and rolls back, with the `side.db` commit inside it.
    Rollback,
    /// The transaction that updates every tuple (in `xftl-batch`: the aborted
    /// batch, then the journaled commit).
    Big,
    /// After the last operation (nothing torn).
    End,
}

/// Counts of what a run exercised.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct SqlExercised {
    /// Crash points per phase.
    pub cuts_in_open: u64,
    pub cuts_in_commits: u64,
    pub cuts_in_rollback: u64,
    pub cuts_in_big: u64,
    pub cuts_at_end: u64,
    /// TPC-C: crash points inside New-Order, Payment and Delivery transactions.
    pub cuts_in_new_order: u64,
    pub cuts_in_payment: u64,
    pub cuts_in_delivery: u64,
    /// Heavy: crash points inside each statement.
    pub cuts_in_statements: heavy::StatementCuts,
    /// Crash points inside a device call during which GC ran, or a checkpoint
    /// was taken inside a transactional write (on X-FTL: its table reclaim).
    pub cuts_in_gc: u64,
    pub cuts_in_table_reclaim: u64,
    /// Restarts where the transaction in flight was found whole / absent.
    pub in_flight_applied: u64,
    pub in_flight_absent: u64,
    /// Restarts that found a hot journal (one starting with a journal
    /// header) and SQLite rolled it back (the header was gone after the
    /// reopen: the journal deleted, truncated or zeroed, by journal mode).
    pub hot_journal_rollbacks: u64,
    /// WAL frames found at restarts, and restarts that found any.
    pub wal_frames_recovered: u64,
    pub restarts_with_wal_frames: u64,
    /// Restarts that lost committed transactions (allowed by [`Promise::Prefix`]).
    pub committed_lost: u64,
    /// Outcomes [`Promise::NoneAfterPowerLoss`] does not judge: part of a
    /// transaction visible, or `integrity_check` failing.
    pub torn_outcomes: u64,
    pub corrupt_outcomes: u64,
    /// Cuts inside restarts, and the restarts' programs and erases they were drawn from.
    pub recovery_cuts: u64,
    pub recovery_mutating_ops: u64,
}

/// The uncut dry run's device counters (the scenario only, not the load).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct DryRun {
    /// Temporary files SQLite opened (kept in host memory by the VFS), and
    /// of those statement journals; heavy: those the ORDER BY's sorter opened.
    pub temp_files_opened: u64,
    pub subjournals_opened: u64,
    pub sort_temp_files: u64,
    /// The protocol's own counters (Möbius's `mobius_part_inodes`: inodes
    /// holding part of a transaction larger than one).
    pub protocol: ProtocolCounters,
    pub gc_runs: u64,
    pub gc_copies: u64,
    pub checkpoints: u64,
    /// Checkpoints taken inside a transactional write (X-FTL: reclaiming
    /// committed X-L2P entries of a full table; other protocols: their
    /// checkpoint interval falling inside a transaction).
    pub table_reclaim_checkpoints: u64,
    /// Checkpoints taken inside a device commit (Möbius: its merges and
    /// GC's, between a static transaction's inodes and pages).
    pub commit_checkpoints: u64,
    pub commits: u64,
    pub aborts: u64,
    /// Database pages checkpoints wrote by remapping a WAL page (SW-WAL).
    pub pages_remapped: u64,
}

/// Something the scenario is meant to exercise in a mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SqlExpect {
    CutsInCommits,
    CutsInRollback,
    CutsInBig,
    CutsInNewOrder,
    CutsInPayment,
    CutsInDelivery,
    /// Heavy: crash points inside each statement that writes.
    CutsInEveryStatement,
    /// Heavy: the ORDER BY's sorter spilled to a temporary file.
    SortSpills,
    /// The protocol counter of this name (in the dry run).
    Protocol(&'static str),
    BatchAborts,
    InFlightApplied,
    InFlightAbsent,
    HotJournalRollbacks,
    WalFramesRecovered,
    Gc,
    TableReclaimCheckpoints,
    CommitCheckpoints,
    CutsInGc,
    RecoveryCuts,
    Remaps,
}

impl SqlExpect {
    pub fn name(self) -> &'static str {
        match self {
            SqlExpect::CutsInCommits => "crash points inside the committing transactions",
            SqlExpect::CutsInRollback => "crash points inside the spilled, rolled-back transaction",
            SqlExpect::CutsInBig => "crash points inside the transaction that updates every tuple",
            SqlExpect::CutsInNewOrder => "crash points inside New-Order transactions",
            SqlExpect::CutsInPayment => "crash points inside Payment transactions",
            SqlExpect::CutsInDelivery => "crash points inside Delivery transactions",
            SqlExpect::CutsInEveryStatement => "crash points inside each heavy statement that writes",
            SqlExpect::SortSpills => "temporary files the ORDER BY's sorter spilled to",
            SqlExpect::Protocol(key) => key,
            SqlExpect::BatchAborts => "batches aborted by the device (ROLLBACK_ATOMIC_WRITE)",
            SqlExpect::InFlightApplied => "in-flight transactions found whole",
            SqlExpect::InFlightAbsent => "in-flight transactions found absent",
            SqlExpect::HotJournalRollbacks => "hot-journal rollbacks at restart",
            SqlExpect::WalFramesRecovered => "WAL frames read back at restart",
            SqlExpect::Gc => "GC runs",
            SqlExpect::TableReclaimCheckpoints => "checkpoints inside a transactional write (X-FTL: table reclaims)",
            SqlExpect::CommitCheckpoints => "checkpoints inside a device commit",
            SqlExpect::CutsInGc => "crash points inside GC",
            SqlExpect::RecoveryCuts => "cuts inside restarts",
            SqlExpect::Remaps => "database pages checkpoints wrote by remapping a WAL page",
        }
    }

    fn count(self, e: &SqlExercised, d: &DryRun) -> u64 {
        match self {
            SqlExpect::CutsInCommits => e.cuts_in_commits,
            SqlExpect::CutsInRollback => e.cuts_in_rollback,
            SqlExpect::CutsInBig => e.cuts_in_big,
            SqlExpect::CutsInNewOrder => e.cuts_in_new_order,
            SqlExpect::CutsInPayment => e.cuts_in_payment,
            SqlExpect::CutsInDelivery => e.cuts_in_delivery,
            SqlExpect::CutsInEveryStatement => e.cuts_in_statements.fewest_in_writes(),
            SqlExpect::SortSpills => d.sort_temp_files,
            SqlExpect::Protocol(key) => d.protocol.get(key),
            // In a batch mode the only device transactions are batches.
            SqlExpect::BatchAborts => d.aborts,
            SqlExpect::InFlightApplied => e.in_flight_applied,
            SqlExpect::InFlightAbsent => e.in_flight_absent,
            SqlExpect::HotJournalRollbacks => e.hot_journal_rollbacks,
            SqlExpect::WalFramesRecovered => e.wal_frames_recovered,
            SqlExpect::Gc => d.gc_runs,
            SqlExpect::TableReclaimCheckpoints => d.table_reclaim_checkpoints,
            SqlExpect::CommitCheckpoints => d.commit_checkpoints,
            SqlExpect::CutsInGc => e.cuts_in_gc,
            SqlExpect::RecoveryCuts => e.recovery_cuts,
            SqlExpect::Remaps => d.pages_remapped,
        }
    }

    /// What the scenario is meant to exercise in `spec`'s mode and setting.
    pub fn for_spec(spec: &SqlCrashSpec) -> Vec<SqlExpect> {
        let promise = Promise::of(spec.mode, spec.synchronous);
        let journal = spec.mode.journal();
        let mut v = vec![SqlExpect::CutsInCommits];
        let heavy = matches!(spec.workload, SqlWorkload::Heavy { .. });
        let mobius = spec.mode.protocol() == "mobius";
        // Grouped (`group.rs`), the rolled-back transaction writes nothing
        // (cache_spill is off) and syncs nothing, and the pages it reads may
        // all be dirty in the host's page cache, held there by its group's
        // earlier transactions: it may do no flash operation at all.
        let group_pages = spec.group_pages.or(spec.mode.entry().sql_normal_group_pages).unwrap_or(0);
        let grouped = spec.synchronous == Synchronous::Normal && journal == SqlJournal::Off && group_pages > 0;
        // The heavy scenario rolls nothing back.
        if !grouped && !heavy {
            v.push(SqlExpect::CutsInRollback);
        }
        // An absent in-flight transaction counts when every committed one is
        // there. In `wal` with `OFF` nothing is ever synced: the committed
        // transactions' frames reach the device only when the host page cache
        // writes them back, so a cut nearly always finds some lost.
        if !(journal == SqlJournal::Wal && promise == Promise::NoneAfterPowerLoss) {
            v.push(SqlExpect::InFlightAbsent);
        }
        // A whole in-flight transaction needs flash operations after the commit
        // point inside COMMIT: the journal delete's metadata writes (rbj), the
        // file system's metadata after a growing WAL's synced frames (wal
        // FULL on partsupp, whose WAL is never checkpointed inside the
        // scenario; TPC-C's is, and a WAL rewriting its pages in place ends
        // its commit with the sync of its frames: SQLite pads no sector, the
        // VFS reporting POWERSAFE_OVERWRITE). A device transaction's commit
        // is its last operation.
        // (A prefix promise makes no such point: what is not synced is lost.)
        // PERSIST has none: its commit point, the zeroed journal header, is
        // its last flash program (a torn one is discarded by the FTL's page
        // checksum, so the header SQLite reads is the old, valid one).
        let journal_file = matches!(journal, SqlJournal::Delete | SqlJournal::Truncate);
        let growing_wal = journal == SqlJournal::Wal && spec.workload == SqlWorkload::Partsupp;
        if (journal_file || growing_wal) && !spec.mode.transactional() && promise == Promise::Durable {
            v.push(SqlExpect::InFlightApplied);
        }
        // Without syncs the journal's size is not durable: an empty journal is not hot.
        if spec.mode.rollback_journal() && promise == Promise::Durable && spec.synchronous != Synchronous::Off {
            v.push(SqlExpect::HotJournalRollbacks);
        }
        // Under OFF nothing is synced, and a device may keep no write that
        // no flush made durable (its contract allows it: Möbius logs writes
        // outside transactions at flushes), so no frame need be there at a
        // restart; with a sync, some must.
        if journal == SqlJournal::Wal && promise != Promise::NoneAfterPowerLoss {
            v.push(SqlExpect::WalFramesRecovered);
        }
        // Device transactions carry the database's pages in every
        // transactional mode but WAL (where they carry only file-system
        // metadata, the database being written by checkpoints outside them).
        let tx_data = spec.mode.transactional() && journal != SqlJournal::Wal;
        let tpcc = matches!(spec.workload, SqlWorkload::Tpcc { .. });
        if tpcc {
            v.extend([SqlExpect::CutsInNewOrder, SqlExpect::CutsInPayment, SqlExpect::CutsInDelivery]);
        }
        // TPC-C's devices are sized so GC runs in every mode; partsupp's
        // so that it runs, and checkpoints fall inside transactional
        // writes, where device transactions carry the data.
        if tpcc || heavy || tx_data {
            v.extend([SqlExpect::Gc, SqlExpect::CutsInGc]);
        }
        if heavy {
            v.extend([SqlExpect::CutsInEveryStatement, SqlExpect::SortSpills]);
        }
        // The heavy statements' transactions list more pages than a Möbius
        // inode does (`heavy::MOBIUS_ITEMS_MAX`), where device transactions
        // carry the database's pages.
        if heavy && tx_data && mobius {
            v.push(SqlExpect::Protocol("mobius_part_inodes"));
        }
        // TPC-C's and heavy's small `wal_autocheckpoint` checkpoints inside
        // the run (partsupp's scenario never does): on a remapping device, by remaps
        // (sent at the database's fsync, or with `OFF` when the WAL is rewritten).
        let remaps = spec.mode.entry().extensions.contains(&txftl_ftl::Extension::Remap);
        if (tpcc || heavy) && journal == SqlJournal::Wal && remaps {
            v.push(SqlExpect::Remaps);
        }
        // Without syncs SQLite runs no batch: a batch mode writes no device
        // transaction. Möbius keeps a static transaction's pages in DRAM
        // until its commit, which writes them with its inodes: no flash
        // operation falls inside its transactional writes, its checkpoints
        // (merges, GC's) fall inside commits.
        if tx_data && !(journal == SqlJournal::Batch && spec.synchronous == Synchronous::Off) {
            v.push(if mobius {
                SqlExpect::CommitCheckpoints
            } else {
                SqlExpect::TableReclaimCheckpoints
            });
        }
        if spec.big_at.is_some_and(|b| b < spec.transactions) {
            v.push(SqlExpect::CutsInBig);
            // A device that bounds a transaction's pages refuses the batch
            // that updates every tuple; SQLite then commits through its journal.
            let bounded = spec.mode.entry().tx_pages_bound.is_some();
            if journal == SqlJournal::Batch && bounded && spec.synchronous != Synchronous::Off {
                v.push(SqlExpect::BatchAborts);
            }
        }
        if spec.recovery_cuts > 0 {
            v.push(SqlExpect::RecoveryCuts);
        }
        v
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct SqlViolation {
    pub at_op: u64,
    pub torn: Torn,
    /// Set when the violation appeared after the restart itself was cut.
    pub recovery_cut: Option<(u64, Torn)>,
    pub message: String,
    /// The command that replays this crash point.
    pub replay: String,
}

#[derive(Clone, Debug, Serialize)]
pub struct SqlCrashReport {
    pub workload: SqlWorkload,
    pub mode: Mode,
    pub synchronous: Synchronous,
    pub promise: Promise,
    pub canary: Canary,
    /// The transaction that updated every tuple, if the scenario had one.
    pub big_at: Option<u32>,
    /// NAND operations of the scenario (after the load), and how many change the array.
    pub flash_ops: u64,
    pub mutating_ops: u64,
    /// Crash points enumerated, and tried (fewer when sampled).
    pub crash_points_total: u64,
    pub crash_points: u64,
    pub dry_run: DryRun,
    pub exercised: SqlExercised,
    pub expected: Vec<SqlExpect>,
    pub violation_count: u64,
    /// The first violations (at most 50), in crash-point order.
    pub violations: Vec<SqlViolation>,
}

impl SqlCrashReport {
    /// One line: the run, its crash points and violations, what it exercised.
    pub fn summary(&self) -> String {
        format!(
            "{:?} synchronous={}: {} of {} crash points, {} violations; GC {}, table-reclaim checkpoints {}; {:?}",
            self.mode,
            self.synchronous.name(),
            self.crash_points,
            self.crash_points_total,
            self.violation_count,
            self.dry_run.gc_runs,
            self.dry_run.table_reclaim_checkpoints,
            self.exercised
        )
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SqlCrashError {
    #[error(transparent)]
    Stack(#[from] StackError),
    #[error("the uncut dry run failed: {0}")]
    DryRun(String),
    #[error("crash point {at} does not exist: the scenario issues {ops} flash operations (points 0 to {ops}, the last one after every operation)")]
    NoSuchPoint { at: u64, ops: u64 },
    #[error("the scenario was meant to exercise {} but did not: it proves nothing there (exercised: {exercised:?}, dry run: {dry_run:?})", missing.join(", "))]
    NotExercised {
        missing: Vec<&'static str>,
        exercised: Box<SqlExercised>,
        dry_run: Box<DryRun>,
    },
}

fn page_size(nand: &NandConfig) -> usize {
    nand.geometry.page_size as usize
}

fn other(e: impl std::fmt::Display) -> StackError {
    StackError::Other(e.to_string())
}

/// What a restart's databases are judged against.
enum Oracle {
    /// partsupp's costs as loaded (the committed updates are applied to them).
    Partsupp(Vec<f64>),
    Tpcc(Box<tpcc::Oracle>),
    Heavy(Box<heavy::Oracle>),
}

/// The loaded database, cleanly closed: the image every run starts from
/// (`oracle`: TPC-C's or heavy's, whose load follows its spec; None: partsupp).
fn loaded_image(spec: &SqlCrashSpec, oracle: Option<&Oracle>) -> Result<Nand, StackError> {
    reseed_sqlite_prng(spec.seed, Boot::Load);
    let nand = Nand::new(spec.nand).map_err(other)?;
    let dev = spec.mode.entry().format(nand, spec.ftl.clone(), &spec.opts, false).map_err(other)?;
    let stack = Stack::format(dev, spec.mode)?;
    if let Some(Oracle::Tpcc(o)) = oracle {
        tpcc::load(&stack, page_size(&spec.nand), o)?;
    } else if let Some(Oracle::Heavy(o)) = oracle {
        heavy::load(&stack, page_size(&spec.nand), o)?;
    } else {
        let conn = stack.open("crash.db", page_size(&spec.nand))?;
        load(&conn, spec.rows, spec.seed)?;
        drop(conn);
        let side = stack.open(SIDE_DB, page_size(&spec.nand))?;
        side.execute_batch("CREATE TABLE side(k INTEGER PRIMARY KEY)")?;
        drop(side);
    }
    let fs = stack.into_fs()?;
    // A clean unmount: the load is on the device before the first cut.
    let dev = fs.unmount().map_err(other)?;
    dev.close().map_err(other)
}

/// Recovers the FTL, mounts the file system and registers the VFS, with the
/// device under a [`Probe`] (so the NAND comes back whatever fails).
fn mount(spec: &SqlCrashSpec, nand: Nand, shared: &Shared, boot: Boot) -> Result<Stack, String> {
    reseed_sqlite_prng(spec.seed, boot);
    let dev = match spec.mode.entry().mount(nand, spec.ftl.clone(), &spec.opts, false) {
        Ok(d) => d,
        Err((e, nand)) => {
            if let Ok(mut s) = shared.lock() {
                s.nand = Some(*nand);
            }
            return Err(format!("FTL recovery: {e}"));
        }
    };
    let mut stack =
        Stack::mount_with_canary(Probe::wrap(dev, shared.clone()), spec.mode, spec.canary).map_err(|e| format!("mount: {e}"))?;
    let cache = txftl_fs::CachePolicy::WriteBack {
        max_dirty_pages: CRASH_HOST_CACHE_PAGES,
    };
    stack
        .with_fs_mut(|fs| fs.set_cache_policy(cache))
        .map_err(|e| e.to_string())?
        .map_err(|e| format!("mount: {e}"))?;
    stack.synchronous = spec.synchronous;
    if let (Some(n), SqlJournal::Off) = (spec.group_pages, spec.mode.journal()) {
        stack.vfs.set_normal_group_pages(n);
    }
    Ok(stack)
}

/// Which boot of a crash run a mount is: SQLite's PRNG (journal nonces, WAL
/// salts) is reseeded from the run's seed and this at every mount, so a boot
/// draws the same bytes however many ran before it in the process (and
/// `--at` replays one exactly), while two boots of one timeline never draw
/// the same nonce (a repeated nonce would let a stale journal record pass
/// its checksum, which no real restart allows).
#[derive(Clone, Copy, Debug)]
pub(super) enum Boot {
    /// Loading the image and reading the oracle off it.
    Load,
    /// The scenario: the dry run and every cut run (one timeline's prefix).
    Scenario,
    /// A restart after the cut at (op, torn); `Second` after a cut inside it.
    Restart(u64, Torn),
    Second(u64, Torn, u64, Torn),
}

impl Boot {
    /// SQLite's PRNG seed for this boot of the run seeded `seed`: never 0
    /// (0 tells SQLite to read the OS's randomness).
    fn prng_seed(self, seed: u64) -> std::os::raw::c_int {
        let (a, b) = match self {
            Boot::Load => (1, 0),
            Boot::Scenario => (2, 0),
            Boot::Restart(at, t) => (3 ^ at << 8, t as u64),
            Boot::Second(at, t, j, rt) => (4 ^ at << 8 ^ (t as u64) << 4, j << 8 ^ rt as u64),
        };
        let mut x = seed ^ a.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ b.wrapping_mul(0xC2B2_AE3D_27D4_EB4F);
        // SplitMix64's finaliser: every input bit moves the 32 bits kept.
        x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        x ^= x >> 31;
        (x as u32 | 1) as std::os::raw::c_int
    }
}

/// Reseeds SQLite's process-wide PRNG for `boot` (see [`Boot`]).
fn reseed_sqlite_prng(seed: u64, boot: Boot) {
    // SAFETY: PRNG_SEED takes (int, sqlite3*); a null handle is allowed.
    unsafe {
        rusqlite::ffi::sqlite3_test_control(
            rusqlite::ffi::SQLITE_TESTCTRL_PRNG_SEED,
            boot.prng_seed(seed),
            std::ptr::null_mut::<rusqlite::ffi::sqlite3>(),
        );
    }
}

/// The NAND the last dropped stack (or failed mount) left behind.
fn take_nand(shared: &Shared) -> Result<Nand, StackError> {
    shared
        .lock()
        .map_err(|_| other("probe lock poisoned"))?
        .nand
        .take()
        .ok_or_else(|| other("the device did not hand its NAND back"))
}

fn op_count(stack: &Stack) -> Result<u64, StackError> {
    stack.with_fs_mut(|fs| fs.device().nand().op_count())
}

/// The second database, committed to while the rolled-back transaction is open.
const SIDE_DB: &str = "side.db";

/// What a run left committed (the model the restarted database is checked against).
#[derive(Default)]
struct ScenarioOutcome {
    /// Transactions whose commit returned, in order.
    committed: Vec<TxUpdates>,
    /// The updates of the transaction in flight at the cut.
    in_flight: Option<TxUpdates>,
    /// Rows of `side.db` whose commit returned.
    side_rows: i64,
    /// A `side.db` commit was in flight at the cut (its row may or may not be there).
    side_in_flight: bool,
    /// Where each phase began (NAND operation counts; dry run).
    marks: Vec<(Phase, u64)>,
    /// TPC-C: where each transaction began, with its type (None: the run's end).
    kind_marks: Vec<(u64, Option<TxKind>)>,
    /// TPC-C: the transactions that returned, and whether one was in flight.
    tpcc: tpcc::Progress,
    /// Heavy: where each statement began (None: the run's end), and what
    /// the run got through.
    step_marks: Vec<(u64, Option<Statement>)>,
    heavy: heavy::Progress,
}

/// The bound of the host page cache (dirty pages) in the crash runs. The
/// file system's default bound (`txftl_fs::DEFAULT_MAX_DIRTY_PAGES`) would
/// hold these tiny devices whole, and writes that are never fsynced
/// (`synchronous=OFF`, a spilled transaction, WAL frames before their sync)
/// would then never reach the device while the scenario runs: no cut could
/// land inside them. A small cache is a host under memory pressure: such
/// writes reach the device in the middle of transactions, written back
/// oldest-dirtied first (not in the order SQLite wrote them), and the
/// youngest dirty pages vanish at a cut; the oracle allows both.
pub const CRASH_HOST_CACHE_PAGES: usize = 2;

/// Runs the scenario until it ends or the power cut stops it.
fn scenario(spec: &SqlCrashSpec, oracle: &Oracle, stack: &Stack) -> Result<ScenarioOutcome, StackError> {
    let mut out = ScenarioOutcome::default();
    match oracle {
        Oracle::Tpcc(o) => {
            tpcc::run(stack, page_size(&spec.nand), o, spec.rollback_at, &mut out)?;
            return Ok(out);
        }
        Oracle::Heavy(o) => {
            heavy::run(stack, page_size(&spec.nand), o, &mut out)?;
            return Ok(out);
        }
        Oracle::Partsupp(_) => {}
    }
    let mark = |out: &mut ScenarioOutcome, p: Phase| -> Result<(), StackError> {
        out.marks.push((p, op_count(stack)?));
        Ok(())
    };
    mark(&mut out, Phase::Open)?;
    // A cut can land while a connection opens (its PRAGMAs write).
    let Ok(conn) = stack.open("crash.db", page_size(&spec.nand)) else {
        return Ok(out);
    };
    let Ok(side) = stack.open(SIDE_DB, page_size(&spec.nand)) else {
        return Ok(out);
    };
    let w = TxWorkload {
        rows: spec.rows,
        k: spec.k,
        transactions: spec.transactions,
        seed: spec.seed,
    };
    for i in 0..spec.transactions {
        if i == spec.rollback_at {
            mark(&mut out, Phase::Rollback)?;
            // A transaction whose cache spills to the device; while it is open
            // another connection commits to another database; then it rolls back.
            let spill = (|| -> rusqlite::Result<()> {
                conn.pragma_update(None, "cache_size", 2)?;
                conn.execute_batch("BEGIN; UPDATE partsupp SET ps_supplycost = -1;")
            })();
            if spill.is_err() {
                return Ok(out);
            }
            if side.execute("INSERT INTO side VALUES (?1)", [i]).is_err() {
                out.side_in_flight = true;
                return Ok(out);
            }
            out.side_rows += 1;
            let r = (|| -> rusqlite::Result<()> {
                conn.execute_batch("ROLLBACK")?;
                conn.pragma_update(None, "cache_size", -2000)
            })();
            if r.is_err() {
                return Ok(out);
            }
            continue;
        }
        let big = spec.big_at == Some(i);
        if big {
            mark(&mut out, Phase::Big)?;
        } else if i == 0 || i == spec.rollback_at + 1 || spec.big_at.is_some_and(|b| i == b + 1) {
            mark(&mut out, Phase::Commit)?;
        }
        let u = if big { every_tuple(spec.rows, i) } else { w.updates(i) };
        match run_tx(&conn, &u) {
            Ok(()) => out.committed.push(u),
            Err(_) => {
                out.in_flight = Some(u);
                return Ok(out);
            }
        }
    }
    Ok(out)
}

/// The updates of the transaction that touches every tuple (costs no other
/// transaction writes: `updates` gives i * 1000 + j + 0.25).
fn every_tuple(rows: u32, i: u32) -> TxUpdates {
    (0..rows).map(|id| (id, i as f64 * 1000.0 + 500.0 + id as f64 / 64.0)).collect()
}

fn file_size(stack: &Stack, name: &str) -> Result<Option<u64>, String> {
    stack
        .with_fs_mut(|fs| fs.lookup(name).map(|ino| fs.size(None, ino)))
        .map_err(|e| e.to_string())?
        .transpose()
        .map_err(|e| e.to_string())
}

/// The first 8 bytes of every rollback journal SQLite may roll back with
/// (`aJournalMagic`, pager.c). DELETE removes the journal at commit, TRUNCATE
/// cuts it to 0 bytes, PERSIST zeroes its header: in every journal mode, a
/// journal is hot only while it starts with this.
const JOURNAL_MAGIC: [u8; 8] = [0xd9, 0xd5, 0x05, 0xf9, 0x20, 0xa1, 0x63, 0xd7];

/// Does the file named `name` exist and start with a journal header?
fn journal_has_header(stack: &Stack, name: &str) -> Result<bool, String> {
    stack
        .with_fs_mut(|fs| match fs.lookup(name) {
            None => Ok(false),
            Some(ino) => {
                let mut head = [0u8; 8];
                let n = fs.read(None, ino, 0, &mut head)?;
                Ok(n == head.len() && head == JOURNAL_MAGIC)
            }
        })
        .map_err(|e| e.to_string())?
        .map_err(|e: txftl_fs::FsError| e.to_string())
}

/// What a restart found in the databases.
#[derive(Clone, Debug, PartialEq)]
enum Contents {
    Partsupp {
        costs: Vec<f64>,
        side_rows: i64,
    },
    /// [`crate::tpcc::fingerprint`] of `tpcc.db`.
    Tpcc {
        digest: u64,
    },
    /// [`heavy::fingerprint`] of `heavy.db`.
    Heavy {
        digest: u64,
    },
}

/// What a restart found.
#[derive(Clone, Debug, PartialEq)]
struct Observed {
    contents: Contents,
    hot_journals: u64,
    wal_frames: u64,
}

/// Why a restart failed: the stack could not come back, or SQLite reports the
/// database corrupt (which only [`Promise::NoneAfterPowerLoss`] allows).
enum RestartError {
    Failed(String),
    Corrupt(String),
}

/// The restart: FTL recovery, mount, SQLite reopens both databases (rolling
/// back hot journals, reading WALs) and reads them. The stack is dropped at the
/// end: its NAND goes back to `shared`.
fn restart(spec: &SqlCrashSpec, nand: Nand, shared: &Shared, boot: Boot) -> Result<Observed, RestartError> {
    use RestartError::*;
    let stack = mount(spec, nand, shared, boot).map_err(|e| Failed(format!("restart failed: {e}")))?;
    let ps = page_size(&spec.nand);
    let mut hot_journals = 0;
    let mut wal_frames = 0;
    let mut check = |db: &str| -> Result<(Connection, Option<u64>), RestartError> {
        let journal = format!("{db}-journal");
        let hot = journal_has_header(&stack, &journal).map_err(Failed)?;
        if let Some(s) = file_size(&stack, &format!("{db}-wal")).map_err(Failed)? {
            wal_frames += s.saturating_sub(32) / (ps as u64 + 24);
        }
        // SQLite reads the schema as it opens: a file it finds malformed is a
        // corrupt database (the stack below worked), not a failed restart.
        let conn = stack.open(db, ps).map_err(|e| match &e {
            StackError::Sql(rusqlite::Error::SqliteFailure(f, _))
                if matches!(f.code, rusqlite::ErrorCode::DatabaseCorrupt | rusqlite::ErrorCode::NotADatabase) =>
            {
                Corrupt(format!("reopening {db}: {e}"))
            }
            _ => Failed(format!("reopening {db} failed: {e}")),
        })?;
        let ic = integrity_check(&conn).map_err(|e| Corrupt(format!("{db}: integrity_check failed: {e}")))?;
        if ic != "ok" {
            return Err(Corrupt(format!("{db}: integrity_check: {ic}")));
        }
        // Rolled back: SQLite cleared the header as it opened the database.
        let cleared = hot && !journal_has_header(&stack, &journal).map_err(Failed)?;
        Ok((conn, cleared.then_some(0)))
    };
    if let SqlWorkload::Tpcc { .. } = spec.workload {
        let (conn, hot) = check(tpcc::TPCC_DB)?;
        hot_journals += hot.is_some() as u64;
        let digest = tpcc::observe(&conn).map_err(Corrupt)?;
        return Ok(Observed {
            contents: Contents::Tpcc { digest },
            hot_journals,
            wal_frames,
        });
    }
    if let SqlWorkload::Heavy { .. } = spec.workload {
        let (conn, hot) = check(heavy::HEAVY_DB)?;
        hot_journals += hot.is_some() as u64;
        let digest = heavy::observe(&conn).map_err(Corrupt)?;
        return Ok(Observed {
            contents: Contents::Heavy { digest },
            hot_journals,
            wal_frames,
        });
    }
    let (conn, hot) = check("crash.db")?;
    hot_journals += hot.is_some() as u64;
    let (side, hot) = check(SIDE_DB)?;
    hot_journals += hot.is_some() as u64;
    let costs = costs(&conn).map_err(|e| Corrupt(format!("reading the table failed: {e}")))?;
    let side_rows: i64 = side
        .query_row("SELECT count(*) FROM side", [], |r| r.get(0))
        .map_err(|e| Corrupt(format!("reading {SIDE_DB} failed: {e}")))?;
    Ok(Observed {
        contents: Contents::Partsupp { costs, side_rows },
        hot_journals,
        wal_frames,
    })
}

/// How a restart's contents compare with the run's committed state.
#[derive(Debug, PartialEq)]
enum Verdict {
    /// Every committed transaction; the in-flight one applied or not (None: none in flight).
    Exact { in_flight_applied: Option<bool> },
    /// A proper prefix of the committed transactions (some lost).
    Prefix,
    /// Anything else: part of a transaction, or a later one without an earlier one.
    Torn(String),
}

fn apply(state: &mut [f64], u: &TxUpdates) {
    for &(id, c) in u {
        state[id as usize] = c;
    }
}

fn judge(oracle: &Oracle, out: &ScenarioOutcome, got: &Observed) -> Verdict {
    match (oracle, &got.contents) {
        (Oracle::Partsupp(initial), Contents::Partsupp { costs, side_rows }) => judge_partsupp(initial, out, costs, *side_rows),
        (Oracle::Tpcc(o), Contents::Tpcc { digest }) => tpcc::judge(o, &out.tpcc, *digest),
        (Oracle::Heavy(o), Contents::Heavy { digest }) => heavy::judge(o, &out.heavy, *digest),
        _ => Verdict::Torn("the restart read another workload's databases".into()),
    }
}

fn judge_partsupp(initial: &[f64], out: &ScenarioOutcome, got_costs: &[f64], got_side_rows: i64) -> Verdict {
    let mut state = initial.to_vec();
    let mut prefixes = vec![state.clone()];
    for u in &out.committed {
        apply(&mut state, u);
        prefixes.push(state.clone());
    }
    let side_max = out.side_rows + out.side_in_flight as i64;
    let side_ok = got_side_rows == out.side_rows || got_side_rows == side_max;
    if got_costs == state && side_ok {
        return Verdict::Exact {
            in_flight_applied: out.in_flight.as_ref().map(|_| false),
        };
    }
    if let Some(u) = &out.in_flight {
        let mut with = state.clone();
        apply(&mut with, u);
        if got_costs == with && side_ok {
            return Verdict::Exact {
                in_flight_applied: Some(true),
            };
        }
    }
    // Lost commits of `side.db` are its own prefix (an independent database).
    let side_prefix = (0..=side_max).contains(&got_side_rows);
    if side_prefix && prefixes.iter().any(|p| p == got_costs) {
        return Verdict::Prefix;
    }
    if !side_prefix {
        return Verdict::Torn(format!(
            "{SIDE_DB} holds {} rows where {} committed{}",
            got_side_rows,
            out.side_rows,
            if out.side_in_flight { " (and one was in flight)" } else { "" }
        ));
    }
    let diff = got_costs.iter().zip(&state).position(|(a, b)| a != b).unwrap_or(0);
    Verdict::Torn(format!(
        "no prefix of the committed transactions gives this table: tuple {diff} holds cost {} where the committed state says {}",
        got_costs.get(diff).copied().unwrap_or(f64::NAN),
        state.get(diff).copied().unwrap_or(f64::NAN)
    ))
}

/// Which prefix of a run's transactions a database whose digest is `digest`
/// holds, `digests[i]` being the database after the first `i` (TPC-C's and
/// heavy's oracle): `done` transactions returned, and one was `in_flight`
/// (`name(i)` names transaction `i` in messages).
fn judge_digests(db: &str, digests: &[u64], done: usize, in_flight: bool, digest: u64, name: impl Fn(usize) -> String) -> Verdict {
    let in_flight = in_flight && done + 1 < digests.len();
    // A read-only or rolled-back transaction in flight leaves the same
    // database whether or not it ran: it counts as neither.
    let changes = in_flight && digests[done] != digests[done + 1];
    if digest == digests[done] {
        return Verdict::Exact {
            in_flight_applied: changes.then_some(false),
        };
    }
    if in_flight && digest == digests[done + 1] {
        return Verdict::Exact {
            in_flight_applied: changes.then_some(true),
        };
    }
    if digests[..done].contains(&digest) {
        return Verdict::Prefix;
    }
    Verdict::Torn(format!(
        "{db} matches the database after no prefix of the transactions: {done} had returned{}, digest {digest:016x} (after {done}: {:016x})",
        if in_flight {
            format!(" and transaction {done} ({}) was in flight", name(done))
        } else {
            String::new()
        },
        digests[done]
    ))
}

/// Applies the promise to a restart's outcome: `Err` is a violation; `Ok(None)`
/// a corrupt database [`Promise::NoneAfterPowerLoss`] allows.
fn check(
    promise: Promise,
    oracle: &Oracle,
    out: &ScenarioOutcome,
    got: Result<Observed, RestartError>,
    ex: &mut SqlExercised,
) -> Result<Option<Observed>, String> {
    let got = match got {
        Ok(o) => o,
        Err(RestartError::Failed(m)) => return Err(m),
        Err(RestartError::Corrupt(_)) if promise == Promise::NoneAfterPowerLoss => {
            ex.corrupt_outcomes += 1;
            return Ok(None);
        }
        Err(RestartError::Corrupt(m)) => return Err(m),
    };
    ex.hot_journal_rollbacks += got.hot_journals;
    ex.wal_frames_recovered += got.wal_frames;
    ex.restarts_with_wal_frames += (got.wal_frames > 0) as u64;
    match judge(oracle, out, &got) {
        Verdict::Exact { in_flight_applied } => {
            match in_flight_applied {
                Some(true) => ex.in_flight_applied += 1,
                Some(false) => ex.in_flight_absent += 1,
                None => {}
            }
            Ok(Some(got))
        }
        Verdict::Prefix if promise != Promise::Durable => {
            ex.committed_lost += 1;
            Ok(Some(got))
        }
        Verdict::Prefix => Err(format!(
            "committed transactions are missing (a prefix of them is there{})",
            prefix_found(oracle, out, &got.contents)
        )),
        Verdict::Torn(_) if promise == Promise::NoneAfterPowerLoss => {
            ex.torn_outcomes += 1;
            Ok(Some(got))
        }
        Verdict::Torn(m) => Err(m),
    }
}

/// Which prefix a restart found, where the oracle can say (TPC-C, heavy).
fn prefix_found(oracle: &Oracle, out: &ScenarioOutcome, got: &Contents) -> String {
    match (oracle, got) {
        (Oracle::Tpcc(t), Contents::Tpcc { digest }) => {
            format!(": {}, where {} returned", tpcc::position(t, *digest), out.tpcc.outcomes.len())
        }
        (Oracle::Heavy(h), Contents::Heavy { digest }) => format!(
            ": {}, where {} statements returned{}",
            heavy::position(h, *digest),
            out.heavy.done,
            if out.heavy.in_flight { " and one was in flight" } else { "" }
        ),
        _ => String::new(),
    }
}

/// How a cut restart's contents differ from the uncut restart's.
fn differs(oracle: &Oracle, got: &Contents, uncut: Option<&Contents>) -> String {
    match (oracle, got, uncut) {
        (Oracle::Partsupp(_), Contents::Partsupp { costs: o, .. }, Some(Contents::Partsupp { costs: f, .. })) => {
            let t = o.iter().zip(f).position(|(a, b)| a != b).unwrap_or(0);
            format!(
                "tuple {t} is {} where the uncut restart found {}",
                o.get(t).copied().unwrap_or(f64::NAN),
                f.get(t).copied().unwrap_or(f64::NAN)
            )
        }
        (Oracle::Tpcc(t), Contents::Tpcc { digest: o }, Some(Contents::Tpcc { digest: f })) => format!(
            "{} holds {} where the uncut restart found {}",
            tpcc::TPCC_DB,
            tpcc::position(t, *o),
            tpcc::position(t, *f)
        ),
        (Oracle::Heavy(h), Contents::Heavy { digest: o }, Some(Contents::Heavy { digest: f })) => format!(
            "{} holds {} where the uncut restart found {}",
            heavy::HEAVY_DB,
            heavy::position(h, *o),
            heavy::position(h, *f)
        ),
        _ => "the databases differ from the uncut restart's".into(),
    }
}
