//! Atomic-Write's registry entry: its option (the write-back variant) and
//! counters, and how its device is built on the framework.

use super::{AtomicWrite, AwHooks};
use crate::registry::{Build, Builder, CanarySpec, ProtocolEntry, SqlJournal, Stage};
use crate::{OptionSpec, ProtocolOptions};
use txftl_ftl::{CounterSpec, DeviceError, Ftl, FtlConfig};
use txftl_nand::Geometry;

const MAP_LOG: OptionSpec = OptionSpec {
    key: "map-log",
    value_name: "0|1",
    help: "0 (default): each commit writes back the L2P table pages its transaction changed, whole \
           (LightTx §II-C: the mapping table written back after each commit); 1: one mapping-log page \
           per commit holding the transaction's mappings only. Fixed at format (the superblock records it)",
    min: 0,
    max: 1,
};

const ALLOC_WINDOW: OptionSpec = OptionSpec {
    key: "alloc-window",
    value_name: "N",
    help: "free blocks pre-allocated at each checkpoint, the only ones written until the next, so that \
           recovery reads no other free block (the paper's log-structured FTL knows where its log goes); \
           0: none, recovery reads page 0 of every block free at the checkpoint [default: 8 per parallel unit]",
    min: 0,
    max: 1_000_000,
};

pub struct AtomicWriteBuild;

impl Build for AtomicWriteBuild {
    type Hooks = AwHooks;
    type Device = AtomicWrite;

    fn hooks(geo: &Geometry, opts: &ProtocolOptions, canary: bool, stage: Stage) -> Result<AwHooks, DeviceError> {
        // Not asked for: the default at format, the recorded variant at a mount.
        let map_log = match (opts.u32(&MAP_LOG)?, stage) {
            (Some(v), _) => Some(v == 1),
            (None, Stage::Mount) => None,
            (None, Stage::Format | Stage::Estimate) => Some(false),
        };
        Ok(AwHooks::new(geo, canary, map_log))
    }

    /// The allocation window (`FtlConfig::alloc_window_blocks`): a log-based
    /// FTL's recovery, the paper's "only the mapping table needs to be
    /// read", reads the log's head, not every free block.
    fn configure(mut cfg: FtlConfig, geo: &Geometry, opts: &ProtocolOptions, _canary: bool) -> Result<FtlConfig, DeviceError> {
        cfg.alloc_window_blocks = opts.u32(&ALLOC_WINDOW)?.unwrap_or(8 * geo.unit_count());
        Ok(cfg)
    }

    fn wrap(ftl: Ftl<AwHooks>) -> AtomicWrite {
        AtomicWrite::new(ftl)
    }
}

pub static ENTRY: ProtocolEntry = ProtocolEntry {
    transactional: true,
    // One transaction at a time: the host must serialise them.
    isolation: &["strict"],
    options: &[MAP_LOG, ALLOC_WINDOW],
    counters: &[
        CounterSpec {
            key: "aw_table_pages",
            help: "L2P table pages written back at commits (in protocol_meta_writes too)",
        },
        CounterSpec {
            key: "aw_map_log_pages",
            help: "mapping-log pages written at commits, map-log=1 (in protocol_meta_writes too)",
        },
        CounterSpec {
            key: "aw_abort_pages",
            help: "pages closing aborted groups (not host writes)",
        },
        CounterSpec {
            key: "aw_write_back_checkpoints",
            help: "checkpoints a commit took so the write-back ring keeps the pages recovery needs",
        },
    ],
    // No rollback journal beside the device transaction, nor WAL (SQLite
    // enters WAL through a rollback-journal transaction): the journal's
    // file-system metadata commits in a device transaction of its own while
    // the database's is open, and this device runs one at a time.
    sql: &[SqlJournal::Off, SqlJournal::Memory, SqlJournal::Batch],
    canary: Some(CanarySpec {
        // The superblock holds 16 bytes of name: `atomic-write-canary` does not fit.
        name: "atomic-w-canary",
        // Its bug shows with a cut inside a group.
        workload: "txwrite",
        bug: "the flag goes on a group's first page instead of its last",
    }),
    ..ProtocolEntry::base(
        "atomic-write",
        "Atomic-Write",
        "Atomic-Write (Ouyang et al., HPCA 2011), LightTx's baseline: atomic groups ending in a flagged page, \
        the mapping table written back at each commit, one transaction at a time",
        Builder::of::<AtomicWriteBuild>(),
    )
};
