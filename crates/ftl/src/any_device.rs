//! The device interface as the host holds it: a device of any protocol,
//! boxed, that can also be cut (handed back as its NAND), closed, checked
//! and forked. The host stack takes devices as `Box<dyn AnyDevice>` and
//! never names a protocol; the registry (`txftl_protocols`) builds them.

use crate::entry::ProtocolEntry;
use crate::{Device, DeviceError, Ftl, Hooks, RecoveryReport};
use txftl_nand::Nand;

/// A device of any protocol, behind the device interface, that can also be
/// cut and handed back as its NAND.
pub trait AnyDevice: Device + Send {
    /// The registry entry of the device's protocol.
    fn entry(&self) -> &'static ProtocolEntry;
    fn check_invariants(&self) -> Result<(), String>;
    fn recovery_report(&self) -> Option<RecoveryReport>;
    /// Drops every piece of DRAM state and returns the NAND (a power cut).
    fn into_nand(self: Box<Self>) -> Nand;
    /// Clean shutdown: flush and checkpoint, then return the NAND.
    fn close(self: Box<Self>) -> Result<Nand, DeviceError>;
    fn nand(&self) -> &Nand;
    /// (min, max) erase counts over data blocks, as the FTL knows them.
    fn wear_spread(&self) -> (u32, u32);
    fn erase_counts(&self) -> Vec<u32>;
    /// Erase counts recorded in the last durable checkpoint.
    fn checkpoint_erase_counts(&self) -> Vec<u32>;
    /// The physical page the L2P maps `lpn` to (for checkers).
    fn mapping(&self, lpn: u32) -> Option<u32>;
    /// Arms a power cut on the live device's NAND.
    fn nand_mut(&mut self) -> &mut Nand;
    /// Does the device offer begin/commit/abort?
    fn transactional(&self) -> bool {
        self.entry().transactional
    }
    /// A copy of the live device, DRAM state and NAND (a RAM snapshot)
    /// alike, that goes on exactly as the original would: crash
    /// enumeration forks a run at a cut instead of replaying it from the
    /// start. `None`: the device cannot be copied.
    fn fork(&self) -> Option<Box<dyn AnyDevice>> {
        None
    }
}

/// A protocol whose device is the framework's FTL itself, with no wrapper
/// (`plain`): its hooks name its registry entry.
pub trait Registered {
    fn entry() -> &'static ProtocolEntry;
}

impl<H: Hooks + Registered + Clone + Send + 'static> AnyDevice for Ftl<H> {
    fn entry(&self) -> &'static ProtocolEntry {
        H::entry()
    }
    fn check_invariants(&self) -> Result<(), String> {
        Ftl::check_invariants(self)
    }
    fn recovery_report(&self) -> Option<RecoveryReport> {
        Ftl::recovery_report(self)
    }
    fn into_nand(self: Box<Self>) -> Nand {
        Ftl::into_nand(*self)
    }
    fn close(self: Box<Self>) -> Result<Nand, DeviceError> {
        Ftl::close(*self)
    }
    fn nand(&self) -> &Nand {
        Ftl::nand(self)
    }
    fn wear_spread(&self) -> (u32, u32) {
        Ftl::wear_spread(self)
    }
    fn erase_counts(&self) -> Vec<u32> {
        Ftl::erase_counts(self).to_vec()
    }
    fn checkpoint_erase_counts(&self) -> Vec<u32> {
        Ftl::checkpoint_erase_counts(self).to_vec()
    }
    fn mapping(&self, lpn: u32) -> Option<u32> {
        Ftl::mapping(self, lpn)
    }
    fn nand_mut(&mut self) -> &mut Nand {
        Ftl::nand_mut(self)
    }
    fn fork(&self) -> Option<Box<dyn AnyDevice>> {
        Some(Box::new(self.clone()))
    }
}

/// What a mount hands back on failure: the error and the NAND (with whatever
/// the failed attempt did to it), so a cut recovery can be recovered again.
pub type MountFailure = (DeviceError, Box<Nand>);
