//! txftl-protocols: each paper's commit protocol on the FTL framework, and the
//! registry the CLI and the harness pick them from by name.

/// The `Device` methods every protocol's device forwards to its FTL as they
/// are (`self.ftl`): the geometry, a plain read of the L2P's page, and the
/// simulated clock. Invoked inside `impl Device for ...`.
macro_rules! device_basics_over_ftl {
    () => {
        fn info(&self) -> txftl_ftl::DeviceInfo {
            self.ftl.info()
        }
        fn read(&mut self, lpn: txftl_ftl::Lpn, buf: &mut [u8]) -> txftl_ftl::Result<u64> {
            self.ftl.read_page(lpn, buf)
        }
        fn now_ns(&self) -> u64 {
            self.ftl.now()
        }
        fn set_clock(&mut self, at_ns: u64) {
            self.ftl.set_clock(at_ns)
        }
    };
}

/// `AnyDevice` for a transactional protocol's device whose field `ftl` is
/// the framework's FTL: every method is the FTL's. `before_close` (optional)
/// writes what the protocol keeps back until then (X-FTL: a table page
/// written lazily) before the FTL's own clean close.
macro_rules! any_device_over_ftl {
    ($t:ty) => {
        any_device_over_ftl!($t, |_: &mut $t| Ok(()));
    };
    ($t:ty, $before_close:expr) => {
        impl $crate::AnyDevice for $t {
            fn check_invariants(&self) -> std::result::Result<(), String> {
                self.ftl.check_invariants()
            }
            fn recovery_report(&self) -> Option<txftl_ftl::RecoveryReport> {
                self.ftl.recovery_report()
            }
            fn into_nand(self: Box<Self>) -> txftl_nand::Nand {
                self.ftl.into_nand()
            }
            fn close(mut self: Box<Self>) -> std::result::Result<txftl_nand::Nand, txftl_ftl::DeviceError> {
                let before_close: fn(&mut $t) -> txftl_ftl::Result<()> = $before_close;
                before_close(&mut self)?;
                self.ftl.close()
            }
            fn nand(&self) -> &txftl_nand::Nand {
                self.ftl.nand()
            }
            fn wear_spread(&self) -> (u32, u32) {
                self.ftl.wear_spread()
            }
            fn erase_counts(&self) -> Vec<u32> {
                self.ftl.erase_counts().to_vec()
            }
            fn checkpoint_erase_counts(&self) -> Vec<u32> {
                self.ftl.checkpoint_erase_counts().to_vec()
            }
            fn mapping(&self, lpn: u32) -> Option<u32> {
                self.ftl.mapping(lpn)
            }
            fn nand_mut(&mut self) -> &mut txftl_nand::Nand {
                self.ftl.nand_mut()
            }
            fn transactional(&self) -> bool {
                true
            }
        }
    };
}

pub mod atomic_write;
pub mod bpcc;
pub mod cycle;
pub mod lighttx;
pub mod plain;
pub mod scc;
mod sorted_map;
pub mod xftl;

use txftl_ftl::{Canary, Device, DeviceError, Ftl, FtlConfig, FtlMemory, Hooks, RecoveryReport};
use txftl_nand::{Geometry, Nand, NandConfig};

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
    /// The physical page the L2P maps `lpn` to (for checkers).
    fn mapping(&self, lpn: u32) -> Option<u32>;
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
    fn mapping(&self, lpn: u32) -> Option<u32> {
        Ftl::mapping(self, lpn)
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
#[derive(Clone, Copy, Debug, Default)]
pub struct ProtocolOptions {
    /// X-FTL: entries in the X-L2P table, fixed when the device is formatted
    /// (a mount takes the formatted size). 0: sized to the array (see
    /// [`xftl::auto_entries`]); [`xftl::DEFAULT_ENTRIES`] (500) is the paper's.
    pub xl2p_entries: u32,
    /// LightTx: blocks in the Available Zone, i.e. a checkpoint (zone slide)
    /// every this many blocks' worth of programs. 0: the framework's interval.
    pub zone_blocks: u32,
}

fn unknown(name: &str) -> DeviceError {
    DeviceError::Config(UnknownProtocol(name.to_string()).to_string())
}

fn check_options(opts: &ProtocolOptions) -> Result<(), DeviceError> {
    if opts.xl2p_entries > xftl::MAX_ENTRIES {
        return Err(DeviceError::Config(format!(
            "an X-L2P table of {} entries is larger than the {} this build supports",
            opts.xl2p_entries,
            xftl::MAX_ENTRIES
        )));
    }
    Ok(())
}

/// What a mount hands back on failure: the error and the NAND (with whatever
/// the failed attempt did to it), so a cut recovery can be recovered again.
pub type MountFailure = (DeviceError, Box<Nand>);

/// Builds a protocol's device: formats, or mounts through recovery.
type FormatFn = fn(Nand, FtlConfig, &ProtocolOptions) -> Result<Box<dyn AnyDevice>, DeviceError>;
type MountFn = fn(Nand, FtlConfig, &ProtocolOptions) -> Result<Box<dyn AnyDevice>, MountFailure>;
type MemoryFn = fn(&NandConfig, &FtlConfig, &ProtocolOptions) -> Result<FtlMemory, DeviceError>;

/// One protocol of the registry. Adding a protocol is its folder plus one
/// entry in [`PROTOCOLS`].
pub struct ProtocolEntry {
    /// CLI name, as the superblock records it.
    pub name: &'static str,
    /// Offers begin / commit / abort.
    pub transactional: bool,
    /// A canary (a deliberately broken variant the crash harness must catch):
    /// the workload whose crash points show its bug. Other workloads are refused
    /// for it, since they would report a clean run that tested nothing.
    pub canary_workload: Option<&'static str>,
    /// The isolation levels (the concurrent host's, by name) its transactions
    /// can run under: a level that needs what the protocol cannot do (several
    /// transactions open at once, several uncommitted versions of a page) is
    /// refused with a typed error before anything runs.
    pub isolation: &'static [&'static str],
    format: FormatFn,
    mount: MountFn,
    memory: MemoryFn,
}

fn boxed<D: AnyDevice + 'static>(r: Result<D, MountFailure>) -> Result<Box<dyn AnyDevice>, MountFailure> {
    r.map(|d| Box::new(d) as Box<dyn AnyDevice>)
}

// Every protocol's device is its hooks over the framework's FTL, in the
// protocol's wrapper (the FTL itself for `plain`): format, mount and memory
// are the framework's with those hooks. A registry entry names the hooks and
// the wrapper; these three do the rest.

fn format_over<H: Hooks, D: AnyDevice + 'static>(
    n: Nand,
    cfg: FtlConfig,
    hooks: H,
    wrap: fn(Ftl<H>) -> D,
) -> Result<Box<dyn AnyDevice>, DeviceError> {
    Ok(Box::new(wrap(Ftl::format(n, cfg, hooks)?)))
}

fn mount_over<H: Hooks, D: AnyDevice + 'static>(
    n: Nand,
    cfg: FtlConfig,
    hooks: H,
    wrap: fn(Ftl<H>) -> D,
) -> Result<Box<dyn AnyDevice>, MountFailure> {
    boxed(Ftl::mount_or_return(n, cfg, hooks).map(wrap))
}

fn memory_of<H: Hooks>(n: &NandConfig, cfg: &FtlConfig, hooks: &H) -> Result<FtlMemory, DeviceError> {
    Ftl::memory_needed(&n.geometry, cfg, n.data_mode, hooks)
}

fn canary_cfg(mut cfg: FtlConfig) -> FtlConfig {
    cfg.canary = Some(Canary::ReuseBeforeCheckpoint);
    cfg
}

/// X-FTL's table size: the one asked for, or sized to the array.
fn xl2p_entries(geo: &Geometry, opts: &ProtocolOptions) -> u32 {
    match opts.xl2p_entries {
        0 => xftl::auto_entries(geo),
        e => e,
    }
}

/// X-FTL's memory: the framework's, and its X-L2P table (bounded by
/// `xftl::MAX_ENTRIES`) with its indexes.
fn xftl_memory(n: &NandConfig, cfg: &FtlConfig, opts: &ProtocolOptions) -> Result<FtlMemory, DeviceError> {
    let entries = xl2p_entries(&n.geometry, opts);
    let mut m = memory_of(n, cfg, &xftl::XHooks::new(entries, n.geometry.page_size, false))?;
    m.tables += entries as u64 * xftl::BYTES_PER_ENTRY + xftl::index_bytes_max(&n.geometry);
    Ok(m)
}

fn xftl_format(n: Nand, cfg: FtlConfig, opts: &ProtocolOptions, canary: bool) -> Result<Box<dyn AnyDevice>, DeviceError> {
    let hooks = xftl::XHooks::new(xl2p_entries(n.geometry(), opts), n.geometry().page_size, canary);
    format_over(n, cfg, hooks, xftl::XFtl::new)
}

fn xftl_mount(n: Nand, cfg: FtlConfig, opts: &ProtocolOptions, canary: bool) -> Result<Box<dyn AnyDevice>, MountFailure> {
    // The formatted size is recorded in the superblock; recovery takes it, and
    // refuses a different size asked for here.
    let hooks = xftl::XHooks::new(opts.xl2p_entries, n.geometry().page_size, canary);
    mount_over(n, cfg, hooks, xftl::XFtl::new)
}

/// LightTx's zone size is the checkpoint interval, in blocks of programs.
fn lighttx_cfg(n: &Nand, mut cfg: FtlConfig, opts: &ProtocolOptions) -> FtlConfig {
    if opts.zone_blocks > 0 {
        cfg.checkpoint_every_pages = opts.zone_blocks as u64 * n.geometry().pages_per_block as u64;
    }
    cfg
}

fn lighttx_format(n: Nand, cfg: FtlConfig, opts: &ProtocolOptions, canary: bool) -> Result<Box<dyn AnyDevice>, DeviceError> {
    let (cfg, hooks) = (lighttx_cfg(&n, cfg, opts), lighttx::LHooks::new(n.geometry(), canary));
    format_over(n, cfg, hooks, lighttx::LightTx::new)
}

fn lighttx_mount(n: Nand, cfg: FtlConfig, opts: &ProtocolOptions, canary: bool) -> Result<Box<dyn AnyDevice>, MountFailure> {
    let (cfg, hooks) = (lighttx_cfg(&n, cfg, opts), lighttx::LHooks::new(n.geometry(), canary));
    mount_over(n, cfg, hooks, lighttx::LightTx::new)
}

/// LightTx's memory: the framework's, and the zone bitmaps (one byte per
/// block each).
fn lighttx_memory(n: &NandConfig, cfg: &FtlConfig, _opts: &ProtocolOptions) -> Result<FtlMemory, DeviceError> {
    let mut m = memory_of(n, cfg, &lighttx::LHooks::new(&n.geometry, false))?;
    m.tables += 2 * n.geometry.block_count() as u64;
    Ok(m)
}

/// BPCC's memory: the framework's, and the version of each logical page's
/// last committed version (8 bytes a page: the next write's back pointer).
/// Its sets of open, dead and pinned pages grow with the aborts still on
/// flash and are not counted.
fn bpcc_memory(n: &NandConfig, cfg: &FtlConfig, _opts: &ProtocolOptions) -> Result<FtlMemory, DeviceError> {
    let mut m = memory_of(n, cfg, &bpcc::BpccHooks::new(&n.geometry, false))?;
    m.tables += 8 * m.logical_pages as u64;
    Ok(m)
}

/// Every isolation level: the protocol keeps each transaction's versions
/// apart (or the host journal does, on a protocol without transactions).
const ALL_LEVELS: &[&str] = &["strict", "no-page-conflict", "serializable"];

/// Every protocol this build offers.
pub const PROTOCOLS: &[ProtocolEntry] = &[
    ProtocolEntry {
        name: "plain",
        transactional: false,
        canary_workload: None,
        isolation: ALL_LEVELS,
        format: |n, cfg, _| format_over(n, cfg, plain::Plain, |f| f),
        mount: |n, cfg, _| mount_over(n, cfg, plain::Plain, |f| f),
        memory: |n, cfg, _| memory_of(n, cfg, &plain::Plain),
    },
    ProtocolEntry {
        name: "plain-canary",
        transactional: false,
        canary_workload: Some("randwrite"),
        isolation: ALL_LEVELS,
        format: |n, cfg, _| format_over(n, canary_cfg(cfg), plain::PlainCanary, |f| f),
        mount: |n, cfg, _| mount_over(n, canary_cfg(cfg), plain::PlainCanary, |f| f),
        memory: |n, cfg, _| memory_of(n, cfg, &plain::PlainCanary),
    },
    ProtocolEntry {
        name: "xftl",
        transactional: true,
        canary_workload: None,
        isolation: ALL_LEVELS,
        format: |n, cfg, o| xftl_format(n, cfg, o, false),
        mount: |n, cfg, o| xftl_mount(n, cfg, o, false),
        memory: xftl_memory,
    },
    ProtocolEntry {
        name: "xftl-canary",
        transactional: true,
        // Its bug (a commit acknowledged before its table is durable) only shows with transactions.
        canary_workload: Some("txwrite"),
        isolation: ALL_LEVELS,
        format: |n, cfg, o| xftl_format(n, cfg, o, true),
        mount: |n, cfg, o| xftl_mount(n, cfg, o, true),
        memory: xftl_memory,
    },
    ProtocolEntry {
        name: "lighttx",
        transactional: true,
        canary_workload: None,
        isolation: ALL_LEVELS,
        format: |n, cfg, o| lighttx_format(n, cfg, o, false),
        mount: |n, cfg, o| lighttx_mount(n, cfg, o, false),
        memory: lighttx_memory,
    },
    ProtocolEntry {
        name: "lighttx-canary",
        transactional: true,
        // Its bug (the zone metadata forgets the Unavailable Zone) only shows
        // with transactions open across a checkpoint.
        canary_workload: Some("txwrite"),
        isolation: ALL_LEVELS,
        format: |n, cfg, o| lighttx_format(n, cfg, o, true),
        mount: |n, cfg, o| lighttx_mount(n, cfg, o, true),
        memory: lighttx_memory,
    },
    ProtocolEntry {
        name: "atomic-write",
        transactional: true,
        canary_workload: None,
        isolation: &["strict"],
        format: |n, cfg, _| {
            let hooks = atomic_write::AwHooks::new(n.geometry(), false);
            format_over(n, cfg, hooks, atomic_write::AtomicWrite::new)
        },
        mount: |n, cfg, _| {
            let hooks = atomic_write::AwHooks::new(n.geometry(), false);
            mount_over(n, cfg, hooks, atomic_write::AtomicWrite::new)
        },
        memory: |n, cfg, _| memory_of(n, cfg, &atomic_write::AwHooks::new(&n.geometry, false)),
    },
    ProtocolEntry {
        // The superblock holds 16 bytes of name: `atomic-write-canary` does not fit.
        name: "atomic-w-canary",
        transactional: true,
        // Its bug (the flag on a group's first page) shows with a cut inside a group.
        canary_workload: Some("txwrite"),
        isolation: &["strict"],
        format: |n, cfg, _| {
            let hooks = atomic_write::AwHooks::new(n.geometry(), true);
            format_over(n, cfg, hooks, atomic_write::AtomicWrite::new)
        },
        mount: |n, cfg, _| {
            let hooks = atomic_write::AwHooks::new(n.geometry(), true);
            mount_over(n, cfg, hooks, atomic_write::AtomicWrite::new)
        },
        memory: |n, cfg, _| memory_of(n, cfg, &atomic_write::AwHooks::new(&n.geometry, false)),
    },
    ProtocolEntry {
        name: "scc",
        transactional: true,
        canary_workload: None,
        // A page's older versions must be settled before a new one is written.
        isolation: &["strict", "no-page-conflict"],
        format: |n, cfg, _| {
            let hooks = scc::SccHooks::new(n.geometry(), false);
            format_over(n, cfg, hooks, scc::Scc::new)
        },
        mount: |n, cfg, _| {
            let hooks = scc::SccHooks::new(n.geometry(), false);
            mount_over(n, cfg, hooks, scc::Scc::new)
        },
        memory: |n, cfg, _| memory_of(n, cfg, &scc::SccHooks::new(&n.geometry, false)),
    },
    ProtocolEntry {
        name: "scc-canary",
        transactional: true,
        canary_workload: Some("txwrite"),
        isolation: &["strict", "no-page-conflict"],
        format: |n, cfg, _| {
            let hooks = scc::SccHooks::new(n.geometry(), true);
            format_over(n, cfg, hooks, scc::Scc::new)
        },
        mount: |n, cfg, _| {
            let hooks = scc::SccHooks::new(n.geometry(), true);
            mount_over(n, cfg, hooks, scc::Scc::new)
        },
        memory: |n, cfg, _| memory_of(n, cfg, &scc::SccHooks::new(&n.geometry, false)),
    },
    ProtocolEntry {
        name: "bpcc",
        transactional: true,
        canary_workload: None,
        // Back pointers name the one last committed version of a page.
        isolation: &["strict", "no-page-conflict"],
        format: |n, cfg, _| {
            let hooks = bpcc::BpccHooks::new(n.geometry(), false);
            format_over(n, cfg, hooks, bpcc::Bpcc::new)
        },
        mount: |n, cfg, _| {
            let hooks = bpcc::BpccHooks::new(n.geometry(), false);
            mount_over(n, cfg, hooks, bpcc::Bpcc::new)
        },
        memory: bpcc_memory,
    },
    ProtocolEntry {
        name: "bpcc-canary",
        transactional: true,
        // Its bug (GC erases a pinned page) shows once aborted pages are rewritten under GC.
        canary_workload: Some("txwrite"),
        isolation: &["strict", "no-page-conflict"],
        format: |n, cfg, _| {
            let hooks = bpcc::BpccHooks::new(n.geometry(), true);
            format_over(n, cfg, hooks, bpcc::Bpcc::new)
        },
        mount: |n, cfg, _| {
            let hooks = bpcc::BpccHooks::new(n.geometry(), true);
            mount_over(n, cfg, hooks, bpcc::Bpcc::new)
        },
        memory: bpcc_memory,
    },
];

/// Protocols this build offers, by CLI name.
pub const PROTOCOL_NAMES: [&str; PROTOCOLS.len()] = {
    let mut names = [""; PROTOCOLS.len()];
    let mut i = 0;
    while i < PROTOCOLS.len() {
        names[i] = PROTOCOLS[i].name;
        i += 1;
    }
    names
};

/// The registry entry of protocol `name`.
pub fn entry(name: &str) -> Result<&'static ProtocolEntry, DeviceError> {
    PROTOCOLS.iter().find(|p| p.name == name).ok_or_else(|| unknown(name))
}

/// Formats `nand` for protocol `name`.
pub fn format(name: &str, nand: Nand, cfg: FtlConfig, opts: &ProtocolOptions) -> Result<Box<dyn AnyDevice>, DeviceError> {
    check_options(opts)?;
    (entry(name)?.format)(nand, cfg, opts)
}

/// What a device needs in memory, by part: its flash array, and the FTL
/// (tables and the metadata pages a metadata-only array keeps for it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceMemory {
    pub flash_array: u64,
    pub ftl: FtlMemory,
}

impl DeviceMemory {
    pub fn total(&self) -> u64 {
        self.flash_array + self.ftl.total()
    }
}

impl std::fmt::Display for DeviceMemory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        use txftl_nand::gib;
        write!(
            f,
            "flash array {}, FTL tables {}, metadata pages kept in memory {}",
            gib(self.flash_array),
            gib(self.ftl.tables),
            gib(self.ftl.metadata)
        )
    }
}

/// Memory a device of protocol `name` on an array of `nand` needs (an
/// estimate from the geometry, before anything is allocated).
pub fn memory_needed(name: &str, nand: &NandConfig, cfg: &FtlConfig, opts: &ProtocolOptions) -> Result<DeviceMemory, DeviceError> {
    check_options(opts)?;
    Ok(DeviceMemory {
        flash_array: Nand::memory_needed(nand),
        ftl: (entry(name)?.memory)(nand, cfg, opts)?,
    })
}

/// Mounts `nand` (recovery from the NAND alone) for protocol `name`.
pub fn mount(name: &str, nand: Nand, cfg: FtlConfig, opts: &ProtocolOptions) -> Result<Box<dyn AnyDevice>, DeviceError> {
    mount_or_return(name, nand, cfg, opts).map_err(|(e, _)| e)
}

/// Like [`mount`], but a failed mount hands the NAND back.
pub fn mount_or_return(name: &str, nand: Nand, cfg: FtlConfig, opts: &ProtocolOptions) -> Result<Box<dyn AnyDevice>, MountFailure> {
    let e = match check_options(opts).and_then(|()| entry(name)) {
        Ok(e) => e,
        Err(err) => return Err((err, Box::new(nand))),
    };
    (e.mount)(nand, cfg, opts)
}

pub fn is_known(name: &str) -> bool {
    entry(name).is_ok()
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_name_fits_the_superblock() {
        for p in super::PROTOCOLS {
            assert!(
                p.name.len() <= txftl_ftl::superblock::PROTOCOL_NAME_MAX,
                "`{}` is longer than the superblock's name field",
                p.name
            );
        }
    }
}
