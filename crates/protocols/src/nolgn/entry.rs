//! NoLgn-FTL's registry entry: its options (the P2P table's size, the
//! full-scan recovery) and how its device is built on the framework.

use super::{NHooks, NoLgn};
use crate::registry::{Build, Builder, CanarySpec, ProtocolEntry, Stage, TRANSACTIONAL};
use crate::{OptionSpec, ProtocolOptions};
use txftl_ftl::{CounterSpec, DeviceError, Extension, Ftl};
use txftl_nand::Geometry;

/// The paper's P2P table (§3.6: 10,000 entries, about 120 KB).
pub const P2P_ENTRIES_DEFAULT: u32 = 10_000;
/// Bytes of one P2P entry (transaction id, new page, old page: §3.6), and
/// of the indexes beside it (the LPN's owner, the pinned page, the new page).
const BYTES_PER_ENTRY: u64 = 12 + 3 * 48;

const P2P_ENTRIES: OptionSpec = OptionSpec {
    key: "p2p-entries",
    value_name: "N",
    help: "entries in the P2P table in device DRAM (one per page an open transaction wrote) \
           [default: 10,000, the paper's]; a write that needs an entry of a full table fails with `table full`",
    min: 1,
    max: 1 << 26,
};

const FULL_SCAN: OptionSpec = OptionSpec {
    key: "full-scan",
    value_name: "0|1",
    help: "1: recovery also reads every page of every block in use, as the paper's full-scan recovery \
           (§3.5 (b)) does, for its cost; its decisions stay the checkpoint-bounded ones [default: 0]",
    min: 0,
    max: 1,
};

pub struct NoLgnBuild;

fn entries(opts: &ProtocolOptions) -> Result<u32, DeviceError> {
    Ok(opts.u32(&P2P_ENTRIES)?.unwrap_or(P2P_ENTRIES_DEFAULT))
}

impl Build for NoLgnBuild {
    type Hooks = NHooks;
    type Device = NoLgn;

    fn hooks(geo: &Geometry, opts: &ProtocolOptions, canary: bool, _stage: Stage) -> Result<NHooks, DeviceError> {
        let full_scan = opts.u32(&FULL_SCAN)?.unwrap_or(0) == 1;
        Ok(NHooks::new(geo, entries(opts)?, full_scan, canary))
    }

    fn wrap(ftl: Ftl<NHooks>) -> NoLgn {
        NoLgn::new(ftl)
    }

    /// The P2P table at its bound, and the lock counts (4 bytes a block).
    fn extra_memory(geo: &Geometry, logical_pages: u32, opts: &ProtocolOptions) -> u64 {
        let n = entries(opts).unwrap_or(P2P_ENTRIES_DEFAULT).min(logical_pages);
        n as u64 * BYTES_PER_ENTRY + 4 * geo.block_count() as u64
    }
}

pub static ENTRY: ProtocolEntry = ProtocolEntry {
    transactional: true,
    extensions: &[Extension::TxEnd],
    // No two open transactions write one page: the old version is the L2P's.
    isolation: &["strict", "no-page-conflict"],
    options: &[P2P_ENTRIES, FULL_SCAN],
    counters: &[
        CounterSpec {
            key: "nolgn_commit_programs",
            help: "pages commits programmed (a last page written with write_tx, held back; 0 with write_end)",
        },
        CounterSpec {
            key: "nolgn_end_writes",
            help: "last pages written with write_end (end flag programmed at once)",
        },
        CounterSpec {
            key: "nolgn_p2p_peak",
            help: "most P2P entries live at once",
        },
        CounterSpec {
            key: "nolgn_locked_blocks_peak",
            help: "most blocks locked at once (an open transaction's old page in them)",
        },
        CounterSpec {
            key: "nolgn_rollback_pages",
            help: "pages rolled back to their old versions (aborts; recovery's at a mount)",
        },
        CounterSpec {
            key: "nolgn_gc_open_copies",
            help: "GC copies of open transactions' pages (their tag kept)",
        },
        CounterSpec {
            key: "nolgn_old_pages_moved",
            help: "old versions GC moved (off a retired block)",
        },
        CounterSpec {
            key: "nolgn_recovered_commits",
            help: "transactions recovery found committed (end flag)",
        },
        CounterSpec {
            key: "nolgn_recovered_rollbacks",
            help: "transactions recovery rolled back (no end flag)",
        },
        CounterSpec {
            key: "nolgn_scan_unended",
            help: "full scan: ended transactions (committed or aborted) with no end flag found, which the paper's rule rolls back",
        },
    ],
    sql: TRANSACTIONAL,
    // §4.1: NoLgn "has no explicit WAL synchronization", so in NORMAL mode
    // the authors commit once every 1,000 data pages.
    sql_normal_group_pages: Some(1000),
    tx_pages_bound: Some(crate::TxPagesBound {
        key: "p2p-entries",
        with: &[],
    }),
    canary: Some(CanarySpec {
        name: "nolgn-canary",
        // Its bug needs transactions whose old pages share blocks, and GC.
        workload: "txwrite",
        bug: "one lock bit per block, as the paper has it: a commit unlocks a block another open transaction still pins",
    }),
    ..ProtocolEntry::base(
        "nolgn",
        "NoLgn-FTL",
        "NoLgn-FTL (Yin et al., JSA 2025): no log; old pages stay valid in locked blocks until commit, \
        a P2P table in DRAM and an end flag in the OOB",
        Builder::of::<NoLgnBuild>(),
    )
};
