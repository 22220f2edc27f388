//! X-FTL's registry entry: its options (the X-L2P table's size) and how its
//! device is built on the framework.

use super::{auto_entries, index_bytes_max, XFtl, XHooks, BYTES_PER_ENTRY, MAX_ENTRIES};
use crate::registry::{Build, Builder, CanarySpec, ProtocolEntry, Stage, TxPagesBound, TRANSACTIONAL};
use crate::{OptionSpec, ProtocolOptions};
use txftl_ftl::{CounterSpec, DeviceError, Ftl};
use txftl_nand::Geometry;

const XL2P_ENTRIES: OptionSpec = OptionSpec {
    key: "xl2p-entries",
    value_name: "N",
    help: "entries in the X-L2P table, fixed at format (the paper's is 500, one 8 KiB page; \
           by default one entry per 8 pages of the array, 32 to 65,536, so large transactions fit); \
           when it fills, a transaction's entries spill to flash (see `xl2p-spill`)",
    min: 1,
    max: MAX_ENTRIES,
};

const XL2P_SPILL: OptionSpec = OptionSpec {
    key: "xl2p-spill",
    value_name: "0|1",
    help: "1 (default): a full X-L2P table spills a transaction's entries to flash, so a transaction \
           is bounded by free space only; 0: a write that needs a slot in a table full of uncommitted \
           entries fails with `table full` (the paper's fixed table; tests of a host's fallback)",
    min: 0,
    max: 1,
};

pub struct XftlBuild;

impl XftlBuild {
    /// The table size asked for (None: sized to the array at format, or as
    /// formatted at a mount).
    fn entries(opts: &ProtocolOptions) -> Result<Option<u32>, DeviceError> {
        opts.u32(&XL2P_ENTRIES)
    }
}

impl Build for XftlBuild {
    type Hooks = XHooks;
    type Device = XFtl;

    fn hooks(geo: &Geometry, opts: &ProtocolOptions, canary: bool, stage: Stage) -> Result<XHooks, DeviceError> {
        let entries = match (Self::entries(opts)?, stage) {
            (Some(e), _) => e,
            // The formatted size is recorded in the superblock; recovery
            // takes it, and refuses a different size asked for.
            (None, Stage::Mount) => 0,
            (None, Stage::Format | Stage::Estimate) => auto_entries(geo),
        };
        let hooks = XHooks::new(entries, geo.page_size, canary);
        // Not asked for: on at format, the recorded policy at a mount.
        Ok(match opts.u32(&XL2P_SPILL)? {
            Some(v) => hooks.with_spill(v == 1),
            None if stage == Stage::Mount => hooks,
            None => hooks.with_spill(true),
        })
    }

    fn wrap(ftl: Ftl<XHooks>) -> XFtl {
        XFtl::new(ftl)
    }

    /// The X-L2P table (bounded by [`MAX_ENTRIES`]) and its indexes.
    fn extra_memory(geo: &Geometry, _logical_pages: u32, opts: &ProtocolOptions) -> u64 {
        let entries = Self::entries(opts).ok().flatten().unwrap_or_else(|| auto_entries(geo));
        entries as u64 * BYTES_PER_ENTRY + index_bytes_max(geo)
    }
}

pub static ENTRY: ProtocolEntry = ProtocolEntry {
    transactional: true,
    options: &[XL2P_ENTRIES, XL2P_SPILL],
    counters: &[
        CounterSpec {
            key: "xl2p_spill_pages",
            help: "X-L2P spill pages written to the data pool (a transaction's entries out of a full DRAM table; rewrites included)",
        },
        CounterSpec {
            key: "xl2p_spilled_entries",
            help: "X-L2P entries moved out of the DRAM table to spill pages",
        },
    ],
    sql: TRANSACTIONAL,
    tx_pages_bound: Some(TxPagesBound {
        key: "xl2p-entries",
        with: &[("xl2p-spill", 0)],
    }),
    canary: Some(CanarySpec {
        name: "xftl-canary",
        // Its bug only shows with transactions.
        workload: "txwrite",
        bug: "a commit is acknowledged before its X-L2P table page is durable",
    }),
    ..ProtocolEntry::base(
        "xftl",
        "X-FTL",
        "X-FTL (Kang et al., SIGMOD 2013): transactions in the FTL through an X-L2P table beside the L2P",
        Builder::of::<XftlBuild>(),
    )
};
