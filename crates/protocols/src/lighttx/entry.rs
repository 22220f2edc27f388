//! LightTx's registry entry: its option (the Available Zone's size) and how
//! its device is built on the framework.

use super::{LHooks, LightTx};
use crate::cycle::summary::{summary_pages_option, SUMMARY_PAGES};
use crate::registry::{Build, Builder, CanarySpec, ProtocolEntry, Stage, TRANSACTIONAL};
use crate::{OptionSpec, ProtocolOptions};
use txftl_ftl::{CounterSpec, DeviceError, Ftl, FtlConfig};
use txftl_nand::Geometry;

const ZONE_BLOCKS: OptionSpec = OptionSpec {
    key: "zone-blocks",
    value_name: "N",
    help: "the Available Zone's size: free blocks pre-allocated at each zone slide, the only ones written \
           until the next [default: 8 per parallel unit]; with interval-zones=1, the checkpoint interval \
           in blocks' worth of programs [default: the FTL's], refused beside a checkpoint interval set otherwise",
    min: 1,
    max: 1_000_000,
};

const INTERVAL_ZONES: OptionSpec = OptionSpec {
    key: "interval-zones",
    value_name: "0|1",
    help: "1: the zone model the paper's replaced (the Available Zone is every block programmed since the \
           checkpoint, allocation anywhere, recovery reads every block free or open at the checkpoint) \
           [default: 0, the paper's zones, sec. III-C]",
    min: 0,
    max: 1,
};

pub struct LightTxBuild;

fn paper_zones(opts: &ProtocolOptions) -> Result<bool, DeviceError> {
    Ok(opts.u32(&INTERVAL_ZONES)?.unwrap_or(0) == 0)
}

impl Build for LightTxBuild {
    type Hooks = LHooks;
    type Device = LightTx;

    fn hooks(geo: &Geometry, opts: &ProtocolOptions, canary: bool, _stage: Stage) -> Result<LHooks, DeviceError> {
        // `summary-pages` counts at format only: a mount takes the layout from the root.
        Ok(LHooks::new(geo, canary, paper_zones(opts)?).with_summary_pages(summary_pages_option(opts)?))
    }

    /// The paper's zones: the zone size is the allocation window (a slide
    /// when it is used up). The interval variant: the checkpoint interval.
    fn configure(mut cfg: FtlConfig, geo: &Geometry, opts: &ProtocolOptions, _canary: bool) -> Result<FtlConfig, DeviceError> {
        let zone = opts.u32(&ZONE_BLOCKS)?;
        if paper_zones(opts)? {
            let zone = zone.unwrap_or(8 * geo.unit_count());
            cfg.alloc_window_blocks = zone;
            // The zones slide when the pre-allocated blocks are used up; the
            // periodic checkpoint, unless set otherwise, comes no sooner (the
            // FTL's default interval would make a zone larger than it moot).
            if cfg.checkpoint_every_pages == 0 {
                cfg.checkpoint_every_pages = zone as u64 * geo.pages_per_block as u64;
            }
            return Ok(cfg);
        }
        if let Some(zone) = zone {
            if cfg.checkpoint_every_pages > 0 {
                return Err(DeviceError::ProtocolOption(format!(
                    "zone-blocks={zone} sets LightTx's checkpoint interval, which is already set to {} pages \
                     (--checkpoint-every or the device file): give one",
                    cfg.checkpoint_every_pages
                )));
            }
            cfg.checkpoint_every_pages = zone as u64 * geo.pages_per_block as u64;
        }
        Ok(cfg)
    }

    fn wrap(ftl: Ftl<LHooks>) -> LightTx {
        LightTx::new(ftl)
    }

    /// The zone bitmaps, one byte per block each.
    fn extra_memory(geo: &Geometry, _logical_pages: u32, _opts: &ProtocolOptions) -> u64 {
        2 * geo.block_count() as u64
    }
}

pub static ENTRY: ProtocolEntry = ProtocolEntry {
    transactional: true,
    options: &[ZONE_BLOCKS, INTERVAL_ZONES, SUMMARY_PAGES],
    counters: &[
        CounterSpec {
            key: "open_blocks_kept",
            help: "Available blocks still open at a zone slide, kept in the Available Zone",
        },
        CounterSpec {
            key: "unavailable_for_dead",
            help: "blocks put in the Unavailable Zone at a slide for a dead transaction with a page in an open Available block",
        },
        CounterSpec {
            key: "gc_moves_with_open_tx",
            help: "pages GC moved out of the Checkpointed Zone while a transaction had pages in the zones",
        },
    ],
    sql: TRANSACTIONAL,
    canary: Some(CanarySpec {
        name: "lighttx-canary",
        // Its bug only shows with transactions open across a checkpoint.
        workload: "txwrite",
        bug: "the zone metadata forgets the Unavailable Zone",
    }),
    ..ProtocolEntry::base(
        "lighttx",
        "LightTx",
        "LightTx (Lu et al., ICCD 2013): page-independent commit and zone-based tracking of live transactions",
        Builder::of::<LightTxBuild>(),
    )
};
