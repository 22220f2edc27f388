//! Atomic-Write's registry entry and how its device is built on the framework.

use super::{AtomicWrite, AwHooks};
use crate::registry::{Build, Builder, CanarySpec, ProtocolEntry, SqlJournal, Stage};
use crate::ProtocolOptions;
use txftl_ftl::{DeviceError, Ftl};
use txftl_nand::Geometry;

pub struct AtomicWriteBuild;

impl Build for AtomicWriteBuild {
    type Hooks = AwHooks;
    type Device = AtomicWrite;

    fn hooks(geo: &Geometry, _opts: &ProtocolOptions, canary: bool, _stage: Stage) -> Result<AwHooks, DeviceError> {
        Ok(AwHooks::new(geo, canary))
    }

    fn wrap(ftl: Ftl<AwHooks>) -> AtomicWrite {
        AtomicWrite::new(ftl)
    }
}

pub static ENTRY: ProtocolEntry = ProtocolEntry {
    name: "atomic-write",
    label: "Atomic-Write",
    about: "Atomic-Write (Ouyang et al., HPCA 2011), LightTx's baseline: atomic groups ending in a flagged page, \
            one transaction at a time",
    transactional: true,
    trims: true,
    extensions: &[],
    // One transaction at a time: the host must serialise them.
    isolation: &["strict"],
    options: &[],
    counters: &[],
    // No rollback journal beside the device transaction, nor WAL (SQLite
    // enters WAL through a rollback-journal transaction): the journal's
    // file-system metadata commits in a device transaction of its own while
    // the database's is open, and this device runs one at a time.
    sql: &[SqlJournal::Off, SqlJournal::Memory, SqlJournal::Batch],
    tx_pages_bound: None,
    canary: Some(CanarySpec {
        // The superblock holds 16 bytes of name: `atomic-write-canary` does not fit.
        name: "atomic-w-canary",
        // Its bug shows with a cut inside a group.
        workload: "txwrite",
        bug: "the flag goes on a group's first page instead of its last",
    }),
    build: Builder::of::<AtomicWriteBuild>(),
};
