//! txftl-protocols: each paper's commit protocol on the FTL framework, and the
//! registry the CLI and the harness pick them from by name.

pub mod plain;
pub mod xftl;

use txftl_ftl::{Canary, Device, DeviceError, Ftl, FtlConfig, RecoveryReport};
use txftl_nand::Nand;

/// Protocols this build offers, by CLI name.
pub const PROTOCOL_NAMES: &[&str] = &["plain", "plain-canary", "xftl", "xftl-canary"];

/// A device of any protocol, behind the device interface, that can also be
/// cut and handed back as its NAND.
pub trait AnyDevice: Device + Send {
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
    /// Arms a power cut on the live device's NAND.
    fn nand_mut(&mut self) -> &mut Nand;
    /// Does the device offer begin/commit/abort?
    fn transactional(&self) -> bool {
        false
    }
}

impl<H: txftl_ftl::Hooks + Send + 'static> AnyDevice for Ftl<H> {
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
    fn nand_mut(&mut self) -> &mut Nand {
        Ftl::nand_mut(self)
    }
}

/// Why a protocol name was refused.
#[derive(Debug, thiserror::Error)]
#[error("unknown protocol `{0}` (known: {known})", known = PROTOCOL_NAMES.join(", "))]
pub struct UnknownProtocol(pub String);

/// Options of the protocols themselves (the FTL framework has its own).
#[derive(Clone, Copy, Debug)]
pub struct ProtocolOptions {
    /// X-FTL: entries in the X-L2P table.
    pub xl2p_entries: u32,
}

impl Default for ProtocolOptions {
    fn default() -> Self {
        ProtocolOptions {
            xl2p_entries: xftl::DEFAULT_ENTRIES,
        }
    }
}

fn unknown(name: &str) -> DeviceError {
    DeviceError::Config(UnknownProtocol(name.to_string()).to_string())
}

fn check_options(opts: &ProtocolOptions) -> Result<(), DeviceError> {
    if opts.xl2p_entries == 0 {
        return Err(DeviceError::Config("the X-L2P table needs at least one entry".into()));
    }
    Ok(())
}

/// Formats `nand` for protocol `name`.
pub fn format(name: &str, nand: Nand, cfg: FtlConfig, opts: &ProtocolOptions) -> Result<Box<dyn AnyDevice>, DeviceError> {
    check_options(opts)?;
    let mut cfg = cfg;
    if name == "plain-canary" {
        cfg.canary = Some(Canary::ReuseBeforeCheckpoint);
    }
    Ok(match name {
        "plain" => Box::new(Ftl::format(nand, cfg, plain::Plain)?),
        "plain-canary" => Box::new(Ftl::format(nand, cfg, plain::PlainCanary)?),
        "xftl" | "xftl-canary" => {
            let hooks = xftl::XHooks::new(opts.xl2p_entries, name == "xftl-canary");
            Box::new(xftl::XFtl::new(Ftl::format(nand, cfg, hooks)?))
        }
        other => return Err(unknown(other)),
    })
}

/// Mounts `nand` (recovery from the NAND alone) for protocol `name`.
pub fn mount(name: &str, nand: Nand, cfg: FtlConfig, opts: &ProtocolOptions) -> Result<Box<dyn AnyDevice>, DeviceError> {
    mount_or_return(name, nand, cfg, opts).map_err(|(e, _)| e)
}

/// Like [`mount`], but a failed mount hands the NAND back.
pub fn mount_or_return(
    name: &str,
    nand: Nand,
    cfg: FtlConfig,
    opts: &ProtocolOptions,
) -> Result<Box<dyn AnyDevice>, (DeviceError, Box<Nand>)> {
    if let Err(e) = check_options(opts) {
        return Err((e, Box::new(nand)));
    }
    let mut cfg = cfg;
    if name == "plain-canary" {
        cfg.canary = Some(Canary::ReuseBeforeCheckpoint);
    }
    fn boxed<H: txftl_ftl::Hooks + Send + 'static>(
        r: Result<Ftl<H>, (DeviceError, Box<Nand>)>,
    ) -> Result<Box<dyn AnyDevice>, (DeviceError, Box<Nand>)> {
        r.map(|f| Box::new(f) as Box<dyn AnyDevice>)
    }
    match name {
        "plain" => boxed(Ftl::mount_or_return(nand, cfg, plain::Plain)),
        "plain-canary" => boxed(Ftl::mount_or_return(nand, cfg, plain::PlainCanary)),
        "xftl" | "xftl-canary" => {
            let hooks = xftl::XHooks::new(opts.xl2p_entries, name == "xftl-canary");
            Ftl::mount_or_return(nand, cfg, hooks).map(|f| Box::new(xftl::XFtl::new(f)) as Box<dyn AnyDevice>)
        }
        other => Err((unknown(other), Box::new(nand))),
    }
}

pub fn is_known(name: &str) -> bool {
    PROTOCOL_NAMES.contains(&name)
}
