//! `plain`: the page-mapping FTL with no transaction support, the baseline
//! every paper compares against. A host that needs atomicity on it must keep a
//! journal. It is the framework with no hooks.

use crate::registry::{Build, Builder, CanarySpec, ProtocolEntry, Stage};
use crate::ProtocolOptions;
use txftl_ftl::{Canary, DeviceError, Ftl, FtlConfig, Hooks};
use txftl_ftl::{Capabilities, Dense, EventHooks, GcHooks, PersistHooks, RecoveryHooks};
use txftl_nand::Geometry;

/// `plain`'s hooks: none but its name. `canary`: `plain-canary`, `plain` run
/// with a deliberately broken framework option
/// ([`txftl_ftl::Canary::ReuseBeforeCheckpoint`]), for proving the crash
/// harness catches a real durability bug. Never use it for anything else.
#[derive(Clone, Copy, Debug, Default)]
pub struct Plain {
    pub canary: bool,
}

impl Hooks for Plain {
    type Mapping = Dense;
    const CAPABILITIES: Capabilities = Capabilities::NONE;

    fn name(&self) -> &'static str {
        if self.canary {
            "plain-canary"
        } else {
            "plain"
        }
    }
}

impl GcHooks for Plain {}

impl PersistHooks for Plain {}

impl RecoveryHooks for Plain {}

impl EventHooks for Plain {
    const SEES_PROGRAMS: bool = false;
}

impl txftl_ftl::Registered for Plain {
    fn entry() -> &'static ProtocolEntry {
        &ENTRY
    }
}

/// `plain`'s device is the framework's FTL itself.
pub struct PlainBuild;

impl Build for PlainBuild {
    type Hooks = Plain;
    type Device = Ftl<Plain>;

    fn hooks(_geo: &Geometry, _opts: &ProtocolOptions, canary: bool, _stage: Stage) -> Result<Plain, DeviceError> {
        Ok(Plain { canary })
    }

    fn configure(mut cfg: FtlConfig, _geo: &Geometry, _opts: &ProtocolOptions, canary: bool) -> Result<FtlConfig, DeviceError> {
        if canary {
            cfg.canary = Some(Canary::ReuseBeforeCheckpoint);
        }
        Ok(cfg)
    }

    fn wrap(ftl: Ftl<Plain>) -> Ftl<Plain> {
        ftl
    }
}

pub static ENTRY: ProtocolEntry = ProtocolEntry {
    canary: Some(CanarySpec {
        name: "plain-canary",
        workload: "randwrite",
        bug: "GC victims are reused before a checkpoint covers them",
    }),
    ..ProtocolEntry::base(
        "plain",
        "plain",
        "the page-mapping FTL without transactions, every paper's baseline (a host keeps a journal on it)",
        Builder::of::<PlainBuild>(),
    )
};
