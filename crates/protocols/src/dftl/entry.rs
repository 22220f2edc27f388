//! DFTL's registry entry: its option (the cache's size), its counters, and
//! how its device is built on the framework.

use super::{Dftl, DftlHooks};
use crate::registry::{Build, Builder, CanarySpec, ProtocolEntry, Stage};
use crate::{OptionSpec, ProtocolOptions};
use txftl_ftl::{Canary, CounterSpec, DeviceError, Eviction, Ftl, FtlConfig};
use txftl_nand::Geometry;

const CMT_PAGES: OptionSpec = OptionSpec {
    key: "cmt-pages",
    value_name: "N",
    help: "translation pages (L2P table pages) the device's DRAM caches [default: an eighth of the table's pages, \
           at least 1]",
    min: 1,
    max: 1 << 24,
};

const EVICT_CHECKPOINT: OptionSpec = OptionSpec {
    key: "evict-checkpoint",
    value_name: "0|1",
    help: "1: a changed translation page leaving the cache is written by a checkpoint (every changed page, \
           the block table, a record and a superblock) instead of alone [default: 0, DFTL's write-back]",
    min: 0,
    max: 1,
};

const SCAN_RECOVERY: OptionSpec = OptionSpec {
    key: "scan-recovery",
    value_name: "0|1",
    help: "1: recovery also reads every page of every block in use, the whole-SSD scan the Möbius paper's DFTL \
           needs (its sec. III-F); the mappings it rebuilds are the same, only its reads and time grow [default: 0, \
           the blocks written since the checkpoint]",
    min: 0,
    max: 1,
};

/// The L2P table's pages (of the raw capacity, 4 bytes an entry): what a
/// cache of translation pages caches a share of.
pub fn table_pages(geo: &Geometry) -> u32 {
    geo.page_count().div_ceil(geo.page_size / 4)
}

/// The default cache: an eighth of the L2P table pages, at least one, so
/// misses happen on every geometry with more than one table page (a cache
/// as large as the table is `plain`).
pub fn default_cmt_pages(geo: &Geometry) -> u32 {
    (table_pages(geo) / 8).max(1)
}

pub struct DftlBuild;

impl Build for DftlBuild {
    type Hooks = DftlHooks;
    type Device = Dftl;

    fn hooks(geo: &Geometry, opts: &ProtocolOptions, canary: bool, _stage: Stage) -> Result<DftlHooks, DeviceError> {
        let pages = opts.u32(&CMT_PAGES)?.unwrap_or_else(|| default_cmt_pages(geo));
        let eviction = match opts.u32(&EVICT_CHECKPOINT)? {
            Some(1) => Eviction::Checkpoint,
            _ => Eviction::WriteBack,
        };
        let hooks = DftlHooks::new(pages, eviction, canary);
        Ok(match opts.u32(&SCAN_RECOVERY)? {
            Some(1) => hooks.with_scan_recovery(geo.block_count()),
            _ => hooks,
        })
    }

    fn configure(mut cfg: FtlConfig, _geo: &Geometry, _opts: &ProtocolOptions, canary: bool) -> Result<FtlConfig, DeviceError> {
        if canary {
            cfg.canary = Some(Canary::DropChangedTablePage);
        }
        Ok(cfg)
    }

    fn wrap(ftl: Ftl<DftlHooks>) -> Dftl {
        Dftl::new(ftl)
    }
}

pub static ENTRY: ProtocolEntry = ProtocolEntry {
    options: &[CMT_PAGES, EVICT_CHECKPOINT, SCAN_RECOVERY],
    counters: &[
        CounterSpec {
            key: "cmt_misses",
            help: "host lookups whose translation page was not cached (read from flash if ever written)",
        },
        CounterSpec {
            key: "cmt_write_backs",
            help: "changed translation pages written back alone to make room in the cache",
        },
        CounterSpec {
            key: "cmt_eviction_checkpoints",
            help: "changed translation pages written by a checkpoint to make room (ring room used up, or \
                   evict-checkpoint=1)",
        },
    ],
    canary: Some(CanarySpec {
        name: "dftl-canary",
        workload: "randwrite",
        bug: "a changed translation page leaves the cache without being written",
    }),
    ..ProtocolEntry::base(
        "dftl",
        "DFTL",
        "DFTL (Gupta et al., ASPLOS 2009): the page-mapping FTL with a demand-paged mapping table, \
        translation pages cached in DRAM (Möbius's mapping layer)",
        Builder::of::<DftlBuild>(),
    )
};
