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
    ($t:ty, $entry:expr) => {
        any_device_over_ftl!($t, $entry, |_: &mut $t| Ok(()));
    };
    ($t:ty, $entry:expr, $before_close:expr) => {
        impl $crate::AnyDevice for $t {
            fn entry(&self) -> &'static $crate::ProtocolEntry {
                &$entry
            }
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
                self.ftl.checkpoint_erase_counts()
            }
            fn mapping(&self, lpn: u32) -> Option<u32> {
                self.ftl.mapping(lpn)
            }
            fn nand_mut(&mut self) -> &mut txftl_nand::Nand {
                self.ftl.nand_mut()
            }
            fn fork(&self) -> Option<Box<dyn $crate::AnyDevice>> {
                Some(Box::new(self.clone()))
            }
            fn durable_state(&self) -> Option<txftl_ftl::DurableState> {
                let committed = |lpn| $crate::DurableParts::committed_page(self, lpn, self.ftl.mapping(lpn));
                let mut state = txftl_ftl::DurableState::with_mappings(self.ftl.nand(), self.ftl.logical_pages(), committed);
                $crate::DurableParts::durable_parts(self, &mut state);
                Some(state)
            }
        }
    };
}

/// A protocol's own part of its device's durable state
/// (`AnyDevice::durable_state`), beside the L2P the macro above adds:
/// what a mount rebuilds from the NAND alone and the device keeps in DRAM
/// (BPCC's pins and committed versions). None by default.
pub(crate) trait DurableParts {
    /// The page a recovery maps `lpn` to, the L2P mapping it to `mapped`:
    /// `mapped`, unless an open transaction's page is in the L2P before its
    /// commit (NoLgn: the old version is what survives a cut).
    fn committed_page(&self, _lpn: txftl_ftl::Lpn, mapped: Option<txftl_ftl::Ppn>) -> Option<txftl_ftl::Ppn> {
        mapped
    }
    fn durable_parts(&self, _state: &mut txftl_ftl::DurableState) {}
}

pub mod cycle;
pub mod flagcommit;
pub mod flagcommit_ex;
pub mod registry;
mod sorted_map;

pub use registry::{Build, Builder, CanarySpec, CellNeed, NandNeeds, Protocol, ProtocolEntry, SqlJournal, Stage, TxPagesBound};
pub use txftl_ftl::entry::{DEFAULT_PROTOCOL, DEFAULT_TRANSACTIONAL_PROTOCOL};
pub use txftl_ftl::{AnyDevice, DurableState, MountFailure, OptionSpec, ProtocolOptions};

use txftl_ftl::{DeviceError, FtlConfig, FtlMemory};
use txftl_nand::{Nand, NandConfig};

/// Declares each protocol's folder and lists its entry in [`PROTOCOLS`].
macro_rules! registry {
    ($($folder:ident),* $(,)?) => {
        $(pub mod $folder;)*

        /// Every protocol this build offers: one entry each, exported by its folder.
        pub static PROTOCOLS: &[&ProtocolEntry] = &[$(&$folder::ENTRY),*];
    };
}

// The registry: one protocol folder a name, in the order listings show them.
registry!(
    plain,
    xftl,
    lighttx,
    atomic_write,
    scc,
    bpcc,
    dftl,
    mobius,
    nolgn,
    sw_wal,
    cfc,
    afc,
    cfc_ex,
    afc_ex
);

/// Why a protocol name was refused.
#[derive(Debug, thiserror::Error)]
#[error("unknown protocol `{0}` (known: {known})", known = protocol_names().join(", "))]
pub struct UnknownProtocol(pub String);

/// Every name `--protocol` takes: each protocol's, then its canary's.
pub fn protocol_names() -> Vec<&'static str> {
    PROTOCOLS
        .iter()
        .flat_map(|e| std::iter::once(e.name).chain(e.canary.map(|c| c.name)))
        .collect()
}

/// The registry entry of protocol (or canary) `name`.
pub fn entry(name: &str) -> Result<&'static ProtocolEntry, DeviceError> {
    Protocol::find(name).map(|p| p.entry)
}

/// Formats `nand` for protocol `name`.
pub fn format(name: &str, nand: Nand, cfg: FtlConfig, opts: &ProtocolOptions) -> Result<Box<dyn AnyDevice>, DeviceError> {
    Protocol::find(name)?.format(nand, cfg, opts)
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
    Ok(DeviceMemory {
        flash_array: Nand::memory_needed(nand),
        ftl: Protocol::find(name)?.memory(nand, cfg, opts)?,
    })
}

/// Mounts `nand` (recovery from the NAND alone) for protocol `name`.
pub fn mount(name: &str, nand: Nand, cfg: FtlConfig, opts: &ProtocolOptions) -> Result<Box<dyn AnyDevice>, DeviceError> {
    mount_or_return(name, nand, cfg, opts).map_err(|(e, _)| e)
}

/// Like [`mount`], but a failed mount hands the NAND back.
pub fn mount_or_return(name: &str, nand: Nand, cfg: FtlConfig, opts: &ProtocolOptions) -> Result<Box<dyn AnyDevice>, MountFailure> {
    match Protocol::find(name) {
        Ok(p) => p.mount(nand, cfg, opts),
        Err(e) => Err((e, Box::new(nand))),
    }
}

pub fn is_known(name: &str) -> bool {
    Protocol::find(name).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_fits_the_superblock_and_is_unique() {
        let names = protocol_names();
        for n in &names {
            assert!(
                n.len() <= txftl_ftl::superblock::PROTOCOL_NAME_MAX,
                "`{n}` is longer than the superblock's name field"
            );
            assert_eq!(names.iter().filter(|m| m == &n).count(), 1, "`{n}` named twice");
        }
    }

    /// What an entry says of its device is what the device does: its name
    /// (the superblock's), its entry, its transactions, its counters.
    #[test]
    fn every_entry_describes_the_device_it_builds() {
        for name in protocol_names() {
            let p = Protocol::find(name).unwrap();
            let nand_cfg = txftl_nand::preset(p.entry.nand.tiny_preset())
                .unwrap()
                .config(txftl_nand::DataMode::Full, txftl_nand::ViolationPolicy::Panic);
            let mut dev = p
                .format(Nand::new(nand_cfg).unwrap(), FtlConfig::default(), &ProtocolOptions::new())
                .unwrap();
            assert_eq!(dev.info().protocol, name);
            assert!(std::ptr::eq(dev.entry(), p.entry), "{name}: the device names another entry");
            assert_eq!(dev.begin(1).is_ok(), p.entry.transactional, "{name}: begin");
            let keys: Vec<&str> = dev.stats().protocol.iter().map(|(k, _)| k).collect();
            let declared: Vec<&str> = p.entry.counters.iter().map(|c| c.key).collect();
            assert_eq!(keys, declared, "{name}: counters");
            for level in p.entry.isolation {
                assert!(registry::ALL_LEVELS.contains(level), "{name}: unknown level {level}");
            }
            for ext in txftl_ftl::Extension::ALL {
                assert_eq!(dev.offers(ext), p.entry.extensions.contains(&ext), "{name}: {ext:?}");
            }
            assert!(!p.entry.sql.is_empty(), "{name} carries no SQLite journal mode");
            assert!(p.entry.canary.is_some(), "{name} has no canary (`ProtocolEntry::base` gives none)");
            let allowed = if p.entry.transactional {
                registry::TRANSACTIONAL
            } else {
                registry::JOURNALED
            };
            assert!(
                p.entry.sql.iter().all(|j| allowed.contains(j)),
                "{name}: its SQLite modes must match whether it has transactions"
            );
        }
    }

    /// The preset an entry's NAND needs pick for its small tests and crash
    /// runs has what it needs, and a device without it is refused with the
    /// typed error by every way of building one.
    #[test]
    fn every_entry_s_needs_are_met_by_the_preset_they_pick() {
        let cfg = |name: &str| {
            txftl_nand::preset(name)
                .unwrap()
                .config(txftl_nand::DataMode::Full, txftl_nand::ViolationPolicy::Panic)
        };
        for e in PROTOCOLS {
            let tiny = e.nand.tiny_preset();
            let nand = cfg(tiny);
            assert_eq!(e.nand.met_by(&nand.geometry), Ok(()), "{}: {tiny}", e.name);
            assert!(
                e.nand.min_oob >= txftl_ftl::oob::OOB_RECORD_SIZE as u32,
                "{}: the OOB record",
                e.name
            );
            // A spare area one byte short is refused, the NAND handed back.
            let mut short = nand;
            short.geometry.oob_size = e.nand.min_oob - 1;
            let opts = ProtocolOptions::new();
            let refused = |err: &DeviceError| matches!(err, DeviceError::NandUnsuitable { protocol, .. } if *protocol == e.name);
            assert!(refused(&e.check_nand(&short.geometry).unwrap_err()), "{}", e.name);
            assert!(
                refused(&e.memory(&short, &FtlConfig::default(), &opts, false).unwrap_err()),
                "{}",
                e.name
            );
            let (err, back) = e
                .mount(Nand::new(short).unwrap(), FtlConfig::default(), &opts, false)
                .err()
                .unwrap();
            assert!(refused(&err), "{}: {err}", e.name);
            assert_eq!(back.geometry().oob_size, short.geometry.oob_size, "{}", e.name);
        }
    }

    /// A call the protocol does not offer is a typed error naming it.
    #[test]
    fn an_extension_the_protocol_does_not_offer_is_a_typed_refusal() {
        use txftl_ftl::extensions::{require, SwriteAck};
        let nand_cfg = txftl_nand::preset("tiny")
            .unwrap()
            .config(txftl_nand::DataMode::Full, txftl_nand::ViolationPolicy::Panic);
        let mut dev = format("xftl", Nand::new(nand_cfg).unwrap(), FtlConfig::default(), &ProtocolOptions::new()).unwrap();
        let err = require(dev.static_tx_calls(), "xftl", txftl_ftl::Extension::StaticTx)
            .and_then(|s| s.swrite(1, &[], SwriteAck::AllPages))
            .unwrap_err();
        assert!(
            matches!(err, DeviceError::Unsupported { protocol: "xftl", what } if what.contains("swrite")),
            "{err}"
        );
    }

    #[test]
    fn an_option_the_protocol_does_not_take_is_refused() {
        let e = entry("plain").unwrap();
        let err = e.check_options(&ProtocolOptions::new().with("zone-blocks", 4)).unwrap_err();
        assert!(err.to_string().contains("takes no option `zone-blocks`"), "{err}");
    }
}
