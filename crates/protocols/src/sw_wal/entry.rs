//! SW-WAL's registry entry: how its device is built on the framework.

use super::{SwHooks, SwWal};
use crate::registry::{Build, Builder, CanarySpec, ProtocolEntry, SqlJournal, Stage};
use crate::ProtocolOptions;
use txftl_ftl::{CounterSpec, DeviceError, Extension, Ftl};
use txftl_nand::Geometry;

pub struct SwWalBuild;

impl Build for SwWalBuild {
    type Hooks = SwHooks;
    type Device = SwWal;

    fn hooks(_geo: &Geometry, _opts: &ProtocolOptions, canary: bool, _stage: Stage) -> Result<SwHooks, DeviceError> {
        Ok(SwHooks::new(canary))
    }

    fn wrap(ftl: Ftl<SwHooks>) -> SwWal {
        SwWal::new(ftl)
    }
}

pub static ENTRY: ProtocolEntry = ProtocolEntry {
    extensions: &[Extension::Remap],
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
            help: "remaps refused (the page was not written for that target since the mount): the host copies",
        },
        CounterSpec {
            key: "sw_wal_gc_tagged_copies",
            help: "GC copies of pages whose spare area names a target (WAL frames, remapped or not)",
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
