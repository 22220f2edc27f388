//! LightTx's registry entry: its option (the Available Zone's size) and how
//! its device is built on the framework.

use super::{LHooks, LightTx};
use crate::registry::{Build, Builder, CanarySpec, ProtocolEntry, Stage, ALL_LEVELS, TRANSACTIONAL};
use crate::{OptionSpec, ProtocolOptions};
use txftl_ftl::{DeviceError, Ftl, FtlConfig};
use txftl_nand::Geometry;

const ZONE_BLOCKS: OptionSpec = OptionSpec {
    key: "zone-blocks",
    value_name: "N",
    help: "blocks in the Available Zone: the zones slide (a checkpoint) every N blocks' worth of programs \
           [default: the FTL's checkpoint interval]; refused beside a checkpoint interval set otherwise",
    min: 1,
    max: 1_000_000,
};

pub struct LightTxBuild;

impl Build for LightTxBuild {
    type Hooks = LHooks;
    type Device = LightTx;

    fn hooks(geo: &Geometry, _opts: &ProtocolOptions, canary: bool, _stage: Stage) -> Result<LHooks, DeviceError> {
        Ok(LHooks::new(geo, canary))
    }

    /// The zone size is the checkpoint interval, in blocks of programs.
    fn configure(mut cfg: FtlConfig, geo: &Geometry, opts: &ProtocolOptions, _canary: bool) -> Result<FtlConfig, DeviceError> {
        if let Some(zone) = opts.u32(&ZONE_BLOCKS)? {
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
    name: "lighttx",
    label: "LightTx",
    about: "LightTx (Lu et al., ICCD 2013): page-independent commit and zone-based tracking of live transactions",
    transactional: true,
    trims: true,
    extensions: &[],
    isolation: ALL_LEVELS,
    options: &[ZONE_BLOCKS],
    counters: &[],
    sql: TRANSACTIONAL,
    tx_pages_bound: None,
    canary: Some(CanarySpec {
        name: "lighttx-canary",
        // Its bug only shows with transactions open across a checkpoint.
        workload: "txwrite",
        bug: "the zone metadata forgets the Unavailable Zone",
    }),
    build: Builder::of::<LightTxBuild>(),
};
