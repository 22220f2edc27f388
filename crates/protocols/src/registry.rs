//! The registry's lookup by name: a protocol, or its canary, as the user
//! names it. The entries themselves ([`ProtocolEntry`]) and how they build
//! devices are the framework's (`txftl_ftl::entry`); the list of them is
//! [`crate::PROTOCOLS`]. Adding a protocol is its folder (with its entry),
//! its tests, its docs page and one line in [`crate::PROTOCOLS`].

pub use txftl_ftl::entry::{
    Build, Builder, CanarySpec, CellNeed, NandNeeds, ProtocolEntry, SqlJournal, Stage, TxPagesBound, ALL_LEVELS, JOURNALED, TRANSACTIONAL,
};
use txftl_ftl::{AnyDevice, DeviceError, FtlConfig, FtlMemory, MountFailure, ProtocolOptions};
use txftl_nand::{Geometry, Nand, NandConfig};

/// A protocol as the user named it: its entry, or its entry's canary.
#[derive(Clone, Copy)]
pub struct Protocol {
    pub entry: &'static ProtocolEntry,
    pub canary: bool,
}

impl std::fmt::Debug for Protocol {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl Protocol {
    /// The protocol (or canary) named `name`.
    pub fn find(name: &str) -> Result<Protocol, DeviceError> {
        for entry in crate::PROTOCOLS {
            if entry.name == name {
                return Ok(Protocol { entry, canary: false });
            }
            if entry.canary.is_some_and(|c| c.name == name) {
                return Ok(Protocol { entry, canary: true });
            }
        }
        Err(DeviceError::Config(crate::UnknownProtocol(name.to_string()).to_string()))
    }

    pub fn name(&self) -> &'static str {
        match (self.canary, self.entry.canary) {
            (true, Some(c)) => c.name,
            _ => self.entry.name,
        }
    }

    /// The workload a canary's bug shows with (None for a protocol).
    pub fn canary_workload(&self) -> Option<&'static str> {
        self.canary.then(|| self.entry.canary.map(|c| c.workload)).flatten()
    }

    pub fn format(&self, nand: Nand, cfg: FtlConfig, opts: &ProtocolOptions) -> Result<Box<dyn AnyDevice>, DeviceError> {
        self.entry.format(nand, cfg, opts, self.canary)
    }

    pub fn mount(&self, nand: Nand, cfg: FtlConfig, opts: &ProtocolOptions) -> Result<Box<dyn AnyDevice>, MountFailure> {
        self.entry.mount(nand, cfg, opts, self.canary)
    }

    pub fn memory(&self, nand: &NandConfig, cfg: &FtlConfig, opts: &ProtocolOptions) -> Result<FtlMemory, DeviceError> {
        self.entry.memory(nand, cfg, opts, self.canary)
    }

    /// The FTL configuration the device would run with: what the options
    /// set, or why they conflict with `cfg` (checked before anything is built).
    pub fn configure(&self, cfg: FtlConfig, geo: &Geometry, opts: &ProtocolOptions) -> Result<FtlConfig, DeviceError> {
        self.entry.configure(cfg, geo, opts, self.canary)
    }
}
