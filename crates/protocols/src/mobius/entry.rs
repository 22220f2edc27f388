//! Möbius's registry entry: its options, counters, and how its device is
//! built on the framework.

use super::format::Inode;
use super::{Asked, Mobius, MobiusHooks, Settings};
use crate::registry::{Build, Builder, CanarySpec, ProtocolEntry, Stage, TRANSACTIONAL};
use crate::{OptionSpec, ProtocolOptions};
use txftl_ftl::extensions::Extension;
use txftl_ftl::{CounterSpec, DeviceError, Ftl, FtlConfig};
use txftl_nand::Geometry;

const CMT_PAGES: OptionSpec = OptionSpec {
    key: "cmt-pages",
    value_name: "N",
    help: "translation pages the device's DRAM caches (DFTL's CMT) [default: an eighth of the table's pages, at least 1]",
    min: 1,
    max: 1 << 24,
};

const S_MAX: OptionSpec = OptionSpec {
    key: "s-max",
    value_name: "N",
    help: "S_max: a transaction's commit flag is written within this many later inodes, so recovery verifies \
           the pages of unflagged ones among the newest S_max only. Fixed at format [default: 8]",
    min: 1,
    max: 255,
};

const ACTIVE_ALA: OptionSpec = OptionSpec {
    key: "active-ala",
    value_name: "PAGES",
    help: "inodes the active ALA holds before a merge (a checkpoint) [default: 12 MiB of inode pages (the paper's \
           Size_Active, sec. IV-C), at most what half the ALA ring holds less a block]",
    min: 1,
    max: 1 << 24,
};

const ALA_BLOCKS: OptionSpec = OptionSpec {
    key: "ala-blocks",
    value_name: "N",
    help: "blocks of the atom log area, a ring. Fixed at format [default: room for two active ALAs of 12 MiB \
           and two blocks, at most a sixteenth of the blocks, at least 4]",
    min: 4,
    max: 1 << 20,
};

const ALLOC_WINDOW: OptionSpec = OptionSpec {
    key: "alloc-window",
    value_name: "N",
    help: "free blocks pre-allocated at each checkpoint, the only ones written until the next, so that recovery \
           probes no other free block (Möbius's recovery reads the ALA, not the device); 0: none, recovery probes \
           page 0 of every block free at the checkpoint [default: 8 per parallel unit]",
    min: 0,
    max: 1_000_000,
};

const ITEMS_MAX: OptionSpec = OptionSpec {
    key: "items-max",
    value_name: "N",
    help: "mapping items an atom inode lists: a transaction of more pages has its items in several inodes, the \
           last binding the others. Fixed at format [default: the paper's 500 per 4 KiB of page (sec. III-C), at \
           most what fits a page]",
    min: 1,
    max: u16::MAX as u32,
};

const DYNAMIC_PCT: OptionSpec = OptionSpec {
    key: "dynamic-pct",
    value_name: "PCT",
    help: "percent of host transactions (begin..commit) run as the dynamic transaction (DWRITE: pages sent as they \
           come, one transaction at a time, no other write while it is open), the rest as buffered static ones \
           (one S-SWRITE at commit); drawn from each transaction's id [default: 0]",
    min: 0,
    max: 100,
};

const ASYNC_COMMIT: OptionSpec = OptionSpec {
    key: "async-commit",
    value_name: "0|1",
    help: "1: a host transaction's commit (a buffered static one) returns once its inode is on flash, as an A-SWRITE \
           does, not once every page is: a power cut before its pages are done aborts a transaction the host saw \
           commit (the paper's false positive, sec. IV-E). The crash harness does not see that window: it takes a \
           commit as returned once the call issued every page [default: 0]",
    min: 0,
    max: 1,
};

/// The paper's Size_Active (§IV-C: 12 MB, 3,072 inodes of 4 KiB).
const ACTIVE_BYTES: u64 = 12 << 20;

/// The settings the options give on `geo`.
fn settings(geo: &Geometry, opts: &ProtocolOptions) -> Result<Settings, DeviceError> {
    let ppb = geo.pages_per_block;
    let paper_pages = (ACTIVE_BYTES / geo.page_size as u64).min(u32::MAX as u64) as u32;
    let ala_blocks = match opts.u32(&ALA_BLOCKS)? {
        Some(b) => b,
        None => (2 * paper_pages.div_ceil(ppb) + 2).min((geo.block_count() / 16).max(4)),
    };
    let room = super::active_ala_room(ala_blocks, ppb);
    let active_max = match opts.u32(&ACTIVE_ALA)? {
        Some(a) if a > room => {
            return Err(DeviceError::ProtocolOption(format!(
                "active-ala={a} does not fit an ALA of {ala_blocks} blocks: at most {room} (raise ala-blocks)"
            )))
        }
        Some(a) => a,
        None => paper_pages.min(room),
    };
    let fits = Inode::items_max(geo.page_size);
    let items_max = match opts.u32(&ITEMS_MAX)? {
        Some(n) if n > fits => {
            return Err(DeviceError::ProtocolOption(format!(
                "items-max={n} does not fit an inode of {} bytes: at most {fits}",
                geo.page_size
            )))
        }
        Some(n) => n,
        None => fits,
    };
    Ok(Settings {
        s_max: opts.u32(&S_MAX)?.unwrap_or(8) as u8,
        items_max: items_max as u16,
        active_max,
        ala_blocks,
        // DFTL's cache by default: Möbius's mFTL is DFTL.
        cmt_pages: opts.u32(&CMT_PAGES)?.unwrap_or_else(|| crate::dftl::default_cmt_pages(geo)),
        dynamic_pct: opts.u32(&DYNAMIC_PCT)?.unwrap_or(0),
        async_commit: opts.u32(&ASYNC_COMMIT)?.unwrap_or(0) == 1,
    })
}

pub struct MobiusBuild;

impl Build for MobiusBuild {
    type Hooks = MobiusHooks;
    type Device = Mobius;

    fn hooks(geo: &Geometry, opts: &ProtocolOptions, canary: bool, stage: Stage) -> Result<MobiusHooks, DeviceError> {
        let set = settings(geo, opts)?;
        // At a mount the recorded settings win; one asked for must match.
        let asked = match stage {
            Stage::Mount => Asked {
                s_max: opts.u32(&S_MAX)?.map(|v| v as u8),
                ala_blocks: opts.u32(&ALA_BLOCKS)?,
                items_max: opts.u32(&ITEMS_MAX)?.map(|v| v as u16),
            },
            Stage::Format | Stage::Estimate => Asked::default(),
        };
        Ok(MobiusHooks::new(geo, set, asked, canary))
    }

    /// The allocation window (`FtlConfig::alloc_window_blocks`): recovery
    /// probes the blocks the window names, not every free block.
    fn configure(mut cfg: FtlConfig, geo: &Geometry, opts: &ProtocolOptions, _canary: bool) -> Result<FtlConfig, DeviceError> {
        cfg.alloc_window_blocks = opts.u32(&ALLOC_WINDOW)?.unwrap_or(8 * geo.unit_count());
        Ok(cfg)
    }

    fn wrap(ftl: Ftl<MobiusHooks>) -> Mobius {
        Mobius::new(ftl)
    }
}

pub static ENTRY: ProtocolEntry = ProtocolEntry {
    transactional: true,
    extensions: &[Extension::StaticTx, Extension::DynamicTx],
    options: &[
        CMT_PAGES,
        S_MAX,
        ACTIVE_ALA,
        ALA_BLOCKS,
        ITEMS_MAX,
        ALLOC_WINDOW,
        DYNAMIC_PCT,
        ASYNC_COMMIT,
    ],
    counters: &[
        CounterSpec {
            key: "mobius_inodes",
            help: "atom inodes written (one per transaction, and flags-only ones; in protocol_meta_writes too)",
        },
        CounterSpec {
            key: "mobius_flag_only_inodes",
            help: "inodes written to carry commit flags when no transaction followed (at a flush)",
        },
        CounterSpec {
            key: "mobius_normal_inodes",
            help: "inodes logging writes outside transactions (at a flush, or when an inode's items fill)",
        },
        CounterSpec {
            key: "mobius_flags",
            help: "commit flags written in inodes",
        },
        CounterSpec {
            key: "mobius_merges",
            help: "merges: checkpoints taken because the active ALA reached active-ala inodes",
        },
        CounterSpec {
            key: "mobius_ring_merges",
            help: "checkpoints taken because the ALA ring would erase an inode recovery may read",
        },
        CounterSpec {
            key: "mobius_rewrites",
            help: "transactions written again: under a new id after a program failed, or their inodes after a checkpoint fell between them",
        },
        CounterSpec {
            key: "mobius_verified_pages",
            help: "recovery: data pages read to verify transactions no inode flags",
        },
        CounterSpec {
            key: "mobius_aborted_found",
            help: "recovery: transactions of the active ALA found aborted",
        },
        CounterSpec {
            key: "mobius_dynamic_inodes",
            help: "inodes of dynamic transactions: after each REAR as many as its items need, one for each abort (in mobius_inodes too)",
        },
        CounterSpec {
            key: "mobius_part_inodes",
            help: "inodes holding a part of a transaction larger than one inode (its last inode binds them; in \
                   mobius_inodes too)",
        },
        CounterSpec {
            key: "mobius_head_records",
            help: "head records written to the head list, one per dynamic transaction (and per rewrite)",
        },
        CounterSpec {
            key: "mobius_chain_pages_read",
            help: "recovery: pages read walking the last dynamic transaction's chain",
        },
        CounterSpec {
            key: "mobius_chains_closed_found",
            help: "recovery: the last dynamic transaction had no inode and its chain was closed (committed)",
        },
        CounterSpec {
            key: "mobius_smax_stalls",
            help: "inodes that waited for an earlier static transaction's pages: the last allowed to carry its flag (S_max)",
        },
        CounterSpec {
            key: "mobius_in_flight_peak",
            help: "most static transactions in flight at once (inode on flash, pages not all done)",
        },
        CounterSpec {
            key: "cmt_misses",
            help: "host lookups whose translation page was not cached (read from flash if ever written)",
        },
        CounterSpec {
            key: "cmt_resident_evictions",
            help: "changed translation pages that left the cache unwritten, their changed entries resident",
        },
    ],
    sql: TRANSACTIONAL,
    canary: Some(CanarySpec {
        name: "mobius-canary",
        workload: "txwrite",
        bug: "recovery takes an inode no later one flags as committed without reading its pages, and the last \
              dynamic transaction's chain as committed without checking that it is closed",
    }),
    ..ProtocolEntry::base(
        "mobius",
        "Möbius",
        "Möbius (Hu et al., ICDCS 2017): static transactions whose atom inode, written before the data, lists \
        where every page lies; commit flags in later inodes; a dynamic transaction chained through its pages' \
        spare areas, closed at its rear; DFTL's cached mapping table",
        Builder::of::<MobiusBuild>(),
    )
};
