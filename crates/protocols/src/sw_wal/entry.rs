//! SW-WAL's registry entry: how its device is built on the framework.

use super::{SwHooks, SwWal};
use crate::registry::{Build, Builder, CanarySpec, ProtocolEntry, SqlJournal, Stage};
use crate::{OptionSpec, ProtocolOptions};
use txftl_ftl::{CounterSpec, DeviceError, Extension, Ftl};
use txftl_nand::Geometry;

/// Remaps waiting in device DRAM for the next flush, by default: more
/// than a checkpoint of SQLite's default WAL (1,000 frames) or of a WAL of
/// 50,000 rows inserted in one transaction at 8 KiB pages (hundreds).
pub const PENDING_REMAPS_DEFAULT: u32 = 65_536;
/// Bytes of one pending remap: its entries in the two maps (target ->
/// WAL page, WAL page -> target), keys, values and tree overhead.
const BYTES_PER_PENDING: u64 = 2 * 48;

const PENDING_REMAPS: OptionSpec = OptionSpec {
    key: "pending-remaps",
    value_name: "N",
    help: "remaps waiting in device DRAM for the next flush [default: 65,536]; a remap past them is refused \
           with `table full`, and the host copies the page instead",
    min: 1,
    max: 1 << 26,
};

const REMAP_RECORD: OptionSpec = OptionSpec {
    key: "remap-record",
    value_name: "0|1",
    help: "1: a flush makes its remaps and trims durable with a remap record, read back at mount (NoLgn-FTL's \
           description) [default]; 0: with a checkpoint of the mapping table (the variant)",
    min: 0,
    max: 1,
};

const RECORD_PAGE_ENTRIES: OptionSpec = OptionSpec {
    key: "record-page-entries",
    value_name: "N",
    help: "entries a remap record page holds at most [default: as many as fit, 12 bytes each]; fewer make a \
           flush's record span pages (the crash sets cut inside such groups)",
    min: 1,
    max: 1 << 20,
};

fn remap_record(opts: &ProtocolOptions) -> Result<bool, DeviceError> {
    Ok(opts.u32(&REMAP_RECORD)?.unwrap_or(1) == 1)
}

fn pending_max(opts: &ProtocolOptions) -> Result<u32, DeviceError> {
    Ok(opts.u32(&PENDING_REMAPS)?.unwrap_or(PENDING_REMAPS_DEFAULT))
}

pub struct SwWalBuild;

impl Build for SwWalBuild {
    type Hooks = SwHooks;
    type Device = SwWal;

    fn hooks(geo: &Geometry, opts: &ProtocolOptions, canary: bool, _stage: Stage) -> Result<SwHooks, DeviceError> {
        let entries = opts.u32(&RECORD_PAGE_ENTRIES)?.unwrap_or(0);
        let fit = super::record::per_page(geo.page_size as usize);
        if entries as usize > fit {
            return Err(DeviceError::ProtocolOption(format!(
                "record-page-entries={entries}: a record page of {} bytes holds at most {fit} entries",
                geo.page_size
            )));
        }
        Ok(SwHooks::new(canary, pending_max(opts)?, remap_record(opts)?).with_record_page_entries(entries))
    }

    fn extra_memory(_geo: &Geometry, logical_pages: u32, opts: &ProtocolOptions) -> u64 {
        pending_max(opts).unwrap_or(PENDING_REMAPS_DEFAULT).min(logical_pages) as u64 * BYTES_PER_PENDING
    }

    fn wrap(ftl: Ftl<SwHooks>) -> SwWal {
        SwWal::new(ftl)
    }
}

pub static ENTRY: ProtocolEntry = ProtocolEntry {
    extensions: &[Extension::Remap],
    options: &[PENDING_REMAPS, REMAP_RECORD, RECORD_PAGE_ENTRIES],
    counters: &[
        CounterSpec {
            key: "sw_wal_remappable_writes",
            help: "pages written naming the page a remap may move them onto (WAL frames)",
        },
        CounterSpec {
            key: "sw_wal_remaps",
            help: "remaps: a page moved onto another logical page, no program",
        },
        CounterSpec {
            key: "sw_wal_remaps_refused",
            help: "remaps refused (the page was not written for that target since the mount, or the pending \
                   remaps are full): the host copies",
        },
        CounterSpec {
            key: "sw_wal_gc_tagged_copies",
            help: "GC copies of pages whose spare area names a target (WAL frames, remapped or not)",
        },
        CounterSpec {
            key: "sw_wal_record_pages",
            help: "remap record pages written (a flush's remaps and trims, read back at mount)",
        },
        CounterSpec {
            key: "sw_wal_record_groups",
            help: "remap record groups written: flushes whose changes a record made durable",
        },
        CounterSpec {
            key: "sw_wal_flush_checkpoints",
            help: "flushes whose changes a checkpoint made durable (`remap-record=0`, or a group over half the ring)",
        },
    ],
    // WAL, whose checkpoints remap (the SQLite mode `sw-wal`): what the
    // device is for; the other journal modes run on `plain`.
    sql: &[SqlJournal::Wal],
    canary: Some(CanarySpec {
        name: "sw-wal-canary",
        workload: "remap",
        bug: "remaps a page its spare area does not name for the target",
    }),
    ..ProtocolEntry::base(
        "sw-wal",
        "SW-WAL",
        "SW-WAL (Wu et al., DATE 2021), NoLgn's baseline: SQLite's WAL checkpointed by remapping WAL pages onto \
        the database's in the FTL instead of copying them",
        Builder::of::<SwWalBuild>(),
    )
};
