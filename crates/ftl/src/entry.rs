//! What a protocol tells the rest of txftl about itself: its registry entry
//! ([`ProtocolEntry`]), and how the registry builds its device on the
//! framework ([`Build`], [`Builder`]). The host stack (the file system, the
//! concurrent host, SQLite's VFS) reads entries and devices through this
//! module alone; the list of entries, one per protocol folder, is
//! `txftl_protocols::PROTOCOLS`.
//!
//! Everything outside a protocol's folder that needs to know something of it
//! asks its entry: the CLI's `--protocol` values and help, its options
//! (`--protocol-opt KEY=VALUE`) and their help, the command line that replays
//! a failure, the crash tests' and the bench's protocol lists, the SQLite
//! journal modes it can carry, the isolation levels the concurrent host may
//! run on it, the rows of its own counters in reports, the NAND it needs
//! (and so the geometry its small tests and crash runs default to).

use crate::any_device::{AnyDevice, MountFailure};
use crate::options::{OptionSpec, ProtocolOptions};
use crate::{CounterSpec, DeviceError, Extension, Ftl, FtlConfig, FtlMemory, Hooks};
use txftl_nand::{CellType, Geometry, Nand, NandConfig};

/// The options that bound how many pages one transaction may write.
#[derive(Clone, Copy, Debug)]
pub struct TxPagesBound {
    /// The option whose value is the bound.
    pub key: &'static str,
    /// Options set with it, without which the bound is not a refusal
    /// (X-FTL: `xl2p-spill=0`, or a full table spills to flash).
    pub with: &'static [(&'static str, u32)],
}

impl TxPagesBound {
    /// `opts` with the bound `pages` and the options it needs.
    pub fn apply(&self, opts: ProtocolOptions, pages: u32) -> ProtocolOptions {
        let opts = opts.with(self.key, pages);
        self.with
            .iter()
            .fold(opts, |o, &(k, v)| if o.contains(k) { o } else { o.with(k, v) })
    }
}

/// A SQLite journal mode, as the host stack runs it on a device. Every
/// `PRAGMA journal_mode` SQLite has runs on every protocol; what a mode
/// promises after a power cut depends on whether the device has
/// transactions (the SQLite crate's crash module says what, mode by mode).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum SqlJournal {
    /// `journal_mode=DELETE`: SQLite's rollback journal, a file on the device,
    /// deleted at commit. On a transactional device the database's writes are
    /// also one device transaction (committed at SQLite's commit point).
    Delete,
    /// `journal_mode=TRUNCATE`: the rollback journal, truncated at commit.
    Truncate,
    /// `journal_mode=PERSIST`: the rollback journal, its header zeroed at commit.
    Persist,
    /// `journal_mode=WAL`: the write-ahead log, a file on the device; the
    /// database is written only by checkpoints, outside device transactions.
    Wal,
    /// `journal_mode=OFF`. On a transactional device, its transactions
    /// replace the journal (the X-FTL paper's setting); on one without,
    /// SQLite writes in place with no atomicity at all (as SQLite documents).
    Off,
    /// `journal_mode=MEMORY`: the journal in memory (statement rollback and
    /// savepoints work); atomic only on a transactional device.
    Memory,
    /// `journal_mode=DELETE` through SQLite's batch-atomic-write interface
    /// mapped to the device's transactions (transactional devices only).
    Batch,
}

/// The modes a device without transactions carries: every journal mode.
pub const JOURNALED: &[SqlJournal] = &[
    SqlJournal::Delete,
    SqlJournal::Truncate,
    SqlJournal::Persist,
    SqlJournal::Wal,
    SqlJournal::Off,
    SqlJournal::Memory,
];
/// The modes a transactional device carries: its transactions in place of
/// the journal first, then under SQLite's batch atomic writes, then every
/// other journal mode on top of the device's transactions.
pub const TRANSACTIONAL: &[SqlJournal] = &[
    SqlJournal::Off,
    SqlJournal::Memory,
    SqlJournal::Batch,
    SqlJournal::Delete,
    SqlJournal::Truncate,
    SqlJournal::Persist,
    SqlJournal::Wal,
];

/// The protocol a command runs when none is named: the baseline every
/// paper compares against.
pub const DEFAULT_PROTOCOL: &str = "plain";

/// The transactional protocol a command runs when it needs one and none is
/// named (SQLite's default mode, `journal_mode=OFF` on it).
pub const DEFAULT_TRANSACTIONAL_PROTOCOL: &str = "xftl";

/// Every isolation level of the concurrent host (`txftl-host`'s names).
pub const ALL_LEVELS: &[&str] = &["strict", "no-page-conflict", "serializable"];

/// The cells a protocol's commit needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CellNeed {
    /// Any cell type: the protocol programs each page once, in order (the
    /// rule of MLC and TLC, which SLC keeps too).
    Any,
    /// SLC: the protocol programs a page more than once (partial
    /// programming, which MLC and TLC forbid).
    Slc,
}

/// What a protocol needs of the NAND: its cells, the partial programs a page
/// takes between erases (NOP), and its spare area. A device that lacks one
/// is refused before anything is built ([`DeviceError::NandUnsuitable`]),
/// rather than failing a program halfway through a commit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NandNeeds {
    pub cell: CellNeed,
    /// Partial programs per page between erases, at least.
    pub min_nop: u8,
    /// Spare (OOB) area per page, bytes, at least.
    pub min_oob: u32,
}

impl NandNeeds {
    /// The framework's own needs: any cells, one program per page, and room
    /// for the FTL's OOB record.
    pub const FRAMEWORK: NandNeeds = NandNeeds {
        cell: CellNeed::Any,
        min_nop: 1,
        min_oob: crate::oob::OOB_RECORD_SIZE as u32,
    };

    /// A protocol that commits by SLC partial programming, `min_nop`
    /// programs a page, with the framework's spare area.
    pub const fn slc(min_nop: u8) -> NandNeeds {
        NandNeeds {
            cell: CellNeed::Slc,
            min_nop,
            min_oob: NandNeeds::FRAMEWORK.min_oob,
        }
    }

    /// Whether `geo` offers what is needed; Err: what it has instead.
    pub fn met_by(&self, geo: &Geometry) -> Result<(), NandHas> {
        let cell_ok = match self.cell {
            CellNeed::Any => true,
            CellNeed::Slc => geo.cell == CellType::Slc,
        };
        if cell_ok && geo.nop >= self.min_nop && geo.oob_size >= self.min_oob {
            Ok(())
        } else {
            Err(NandHas::of(geo))
        }
    }

    /// The preset a protocol's small tests and crash runs default to: `tiny`
    /// where one program per page will do, else its SLC twin `tiny-slc`
    /// (NOP 4). The registry's tests check the preset meets the needs.
    pub fn tiny_preset(&self) -> &'static str {
        if self.cell == CellNeed::Slc || self.min_nop > 1 {
            "tiny-slc"
        } else {
            "tiny"
        }
    }

    /// The full-size preset commands default to: `jasmine` where one program
    /// per page will do, else `flagcommit` (Flag Commit's SLC array, NOP 2).
    pub fn full_preset(&self) -> &'static str {
        if self.cell == CellNeed::Slc || self.min_nop > 1 {
            "flagcommit"
        } else {
            "jasmine"
        }
    }
}

impl std::fmt::Display for NandNeeds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let cells = match self.cell {
            CellNeed::Any => "cells of any type",
            CellNeed::Slc => "SLC cells",
        };
        write!(
            f,
            "{cells} with NOP >= {} and a spare area of at least {} bytes",
            self.min_nop, self.min_oob
        )
    }
}

/// What a geometry offers a protocol (the terms of [`NandNeeds`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NandHas {
    pub cell: CellType,
    pub nop: u8,
    pub oob_size: u32,
}

impl NandHas {
    pub fn of(geo: &Geometry) -> NandHas {
        NandHas {
            cell: geo.cell,
            nop: geo.nop,
            oob_size: geo.oob_size,
        }
    }
}

impl std::fmt::Display for NandHas {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} cells, NOP {} and a {}-byte spare area", self.cell, self.nop, self.oob_size)
    }
}

/// A protocol's canary: the protocol with a deliberate, plausible bug that
/// the crash harness must catch.
#[derive(Clone, Copy, Debug)]
pub struct CanarySpec {
    /// CLI name, as the superblock records it (at most 16 bytes).
    pub name: &'static str,
    /// The workload whose crash points show its bug: other workloads are
    /// refused for it, since they would report a clean run that tested nothing.
    pub workload: &'static str,
    /// The bug, in a line.
    pub bug: &'static str,
}

/// One protocol, as the registry lists it.
pub struct ProtocolEntry {
    /// CLI name, as the superblock records it.
    pub name: &'static str,
    /// Name in reports and figures ("X-FTL").
    pub label: &'static str,
    /// One line: what it is and where it comes from.
    pub about: &'static str,
    /// Offers begin / write(tid) / read(tid) / commit / abort.
    pub transactional: bool,
    /// Takes trims (a protocol whose checkpoints persist no mapping table
    /// has nowhere to make one durable).
    pub trims: bool,
    /// Device calls beyond the base and transactional ones that it offers
    /// (`txftl_ftl::extensions`): the host discovers them on the device, and
    /// the registry's tests check the device offers exactly these.
    pub extensions: &'static [Extension],
    /// The isolation levels (the concurrent host's, by name) its
    /// transactions can run under: a level that needs what the protocol
    /// cannot do (several transactions open at once, several uncommitted
    /// versions of a page) is refused with a typed error before anything runs.
    pub isolation: &'static [&'static str],
    /// The options it takes (`--protocol-opt KEY=VALUE`).
    pub options: &'static [OptionSpec],
    /// Its own counters (reported in `DeviceStats::protocol`).
    pub counters: &'static [CounterSpec],
    /// The SQLite journal modes the host stack can run on it.
    pub sql: &'static [SqlJournal],
    /// Under `synchronous=NORMAL` with the device's transactions in place of
    /// the journal (`journal_mode=OFF`), SQLite's transactions go to the
    /// device grouped, one device transaction every this many database page
    /// writes (NoLgn's evaluation, §4.1); None: one device transaction per
    /// SQLite transaction in every synchronous mode.
    pub sql_normal_group_pages: Option<u32>,
    /// How a test makes the device refuse a transaction of more pages than a
    /// bound (X-FTL: its table, with spilling off), if it can: a test that
    /// needs an oversized transaction refused sets it small.
    pub tx_pages_bound: Option<TxPagesBound>,
    /// What it needs of the NAND (cells, partial programs per page, spare
    /// area): format, mount, the memory estimate and the configuration
    /// refuse a device without it, and its small tests and crash runs
    /// default to the preset [`NandNeeds::tiny_preset`] names.
    pub nand: NandNeeds,
    /// Pages of each open transaction a host must keep in its buffer until
    /// the transaction ends: TxFlash's cyclic commit (SCC, BPCC) needs the
    /// last page written resident, since the next one's link names it
    /// (Flag Commit sec. 5.1); 0 for every other protocol. A DBMS pins that
    /// many frames per open transaction (`crates/dbms`).
    pub resident_pages_per_tx: u32,
    pub canary: Option<CanarySpec>,
    pub build: Builder,
}

impl ProtocolEntry {
    /// An entry with every field but its names and builder at its default:
    /// a protocol states only where it differs (`..ProtocolEntry::base(..)`),
    /// so a new field takes one edit here. The defaults are the framework's
    /// alone (`plain`): no transactions, trims, no extension, every
    /// isolation level, no option, no counter, SQLite's journaled modes, no
    /// grouping, no transaction bound, the framework's NAND needs
    /// ([`NandNeeds::FRAMEWORK`]), no canary (the registry's tests require one).
    pub const fn base(name: &'static str, label: &'static str, about: &'static str, build: Builder) -> ProtocolEntry {
        ProtocolEntry {
            name,
            label,
            about,
            transactional: false,
            trims: true,
            extensions: &[],
            isolation: ALL_LEVELS,
            options: &[],
            counters: &[],
            sql: JOURNALED,
            sql_normal_group_pages: None,
            tx_pages_bound: None,
            nand: NandNeeds::FRAMEWORK,
            resident_pages_per_tx: 0,
            canary: None,
            build,
        }
    }

    /// The option `key`, if the protocol takes one.
    pub fn option(&self, key: &str) -> Option<&'static OptionSpec> {
        self.options.iter().find(|o| o.key == key)
    }

    /// Refuses an option the protocol does not take, or a value out of its range.
    pub fn check_options(&self, opts: &ProtocolOptions) -> Result<(), DeviceError> {
        for key in opts.keys() {
            let Some(spec) = self.option(key) else {
                let known: Vec<&str> = self.options.iter().map(|o| o.key).collect();
                return Err(DeviceError::ProtocolOption(format!(
                    "protocol `{}` takes no option `{key}` (its options: {})",
                    self.name,
                    if known.is_empty() { "none".to_string() } else { known.join(", ") }
                )));
            };
            opts.u32(spec)?;
        }
        Ok(())
    }

    /// Refuses a geometry without what the protocol needs of the NAND.
    pub fn check_nand(&self, geo: &Geometry) -> Result<(), DeviceError> {
        self.nand.met_by(geo).map_err(|has| DeviceError::NandUnsuitable {
            protocol: self.name,
            needs: self.nand,
            has,
        })
    }

    /// Options, then the NAND: what every way of building the device checks first.
    fn check(&self, geo: &Geometry, opts: &ProtocolOptions) -> Result<(), DeviceError> {
        self.check_options(opts)?;
        self.check_nand(geo)
    }
}

impl ProtocolEntry {
    /// Formats `nand` for the protocol (`canary`: its canary), options and
    /// the NAND's needs checked first.
    pub fn format(&self, nand: Nand, cfg: FtlConfig, opts: &ProtocolOptions, canary: bool) -> Result<Box<dyn AnyDevice>, DeviceError> {
        self.check(nand.geometry(), opts)?;
        (self.build.format)(nand, cfg, opts, canary)
    }

    /// Mounts `nand` (recovery from the NAND alone); a failure hands the NAND back.
    pub fn mount(&self, nand: Nand, cfg: FtlConfig, opts: &ProtocolOptions, canary: bool) -> Result<Box<dyn AnyDevice>, MountFailure> {
        if let Err(e) = self.check(nand.geometry(), opts) {
            return Err((e, Box::new(nand)));
        }
        (self.build.mount)(nand, cfg, opts, canary)
    }

    /// The FTL's memory on `nand` (an estimate, before anything is allocated).
    pub fn memory(&self, nand: &NandConfig, cfg: &FtlConfig, opts: &ProtocolOptions, canary: bool) -> Result<FtlMemory, DeviceError> {
        self.check(&nand.geometry, opts)?;
        (self.build.memory)(nand, cfg, opts, canary)
    }

    /// The FTL configuration the device would run with: what the options
    /// set, or why they conflict with `cfg` or the device lacks what the
    /// protocol needs of the NAND (checked before anything is built).
    pub fn configure(&self, cfg: FtlConfig, geo: &Geometry, opts: &ProtocolOptions, canary: bool) -> Result<FtlConfig, DeviceError> {
        self.check(geo, opts)?;
        (self.build.configure)(cfg, geo, opts, canary)
    }
}

/// Why the builder is asked for hooks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// Formatting a fresh device: options fixed at format take effect.
    Format,
    /// Mounting through recovery: what the format fixed is read from the flash.
    Mount,
    /// Estimating memory before anything is allocated.
    Estimate,
}

/// How a protocol builds its device on the framework: its hooks, the FTL
/// configuration its options set, its device wrapper, and the DRAM it keeps
/// beside the framework's tables. The registry's format, mount and memory
/// estimate are the framework's with these ([`Builder::of`]).
pub trait Build: 'static {
    type Hooks: Hooks + Send + 'static;
    type Device: AnyDevice + 'static;

    fn hooks(geo: &Geometry, opts: &ProtocolOptions, canary: bool, stage: Stage) -> Result<Self::Hooks, DeviceError>;

    /// The FTL configuration with what the options (or the canary) set.
    fn configure(cfg: FtlConfig, _geo: &Geometry, _opts: &ProtocolOptions, _canary: bool) -> Result<FtlConfig, DeviceError> {
        Ok(cfg)
    }

    fn wrap(ftl: Ftl<Self::Hooks>) -> Self::Device;

    /// DRAM the protocol keeps beyond the framework's tables, bytes, for a
    /// device of `logical_pages` (an estimate, before anything is allocated).
    fn extra_memory(_geo: &Geometry, _logical_pages: u32, _opts: &ProtocolOptions) -> u64 {
        0
    }
}

type FormatFn = fn(Nand, FtlConfig, &ProtocolOptions, bool) -> Result<Box<dyn AnyDevice>, DeviceError>;
type MountFn = fn(Nand, FtlConfig, &ProtocolOptions, bool) -> Result<Box<dyn AnyDevice>, MountFailure>;
type MemoryFn = fn(&NandConfig, &FtlConfig, &ProtocolOptions, bool) -> Result<FtlMemory, DeviceError>;
type ConfigureFn = fn(FtlConfig, &Geometry, &ProtocolOptions, bool) -> Result<FtlConfig, DeviceError>;

/// A protocol's format, mount, memory estimate and configuration (the last
/// argument: the canary).
#[derive(Clone, Copy)]
pub struct Builder {
    format: FormatFn,
    mount: MountFn,
    memory: MemoryFn,
    configure: ConfigureFn,
}

impl Builder {
    pub const fn of<B: Build>() -> Builder {
        Builder {
            format: format_with::<B>,
            mount: mount_with::<B>,
            memory: memory_with::<B>,
            configure: B::configure,
        }
    }
}

fn format_with<B: Build>(nand: Nand, cfg: FtlConfig, opts: &ProtocolOptions, canary: bool) -> Result<Box<dyn AnyDevice>, DeviceError> {
    let geo = *nand.geometry();
    let cfg = B::configure(cfg, &geo, opts, canary)?;
    let hooks = B::hooks(&geo, opts, canary, Stage::Format)?;
    Ok(Box::new(B::wrap(Ftl::format(nand, cfg, hooks)?)))
}

fn mount_with<B: Build>(nand: Nand, cfg: FtlConfig, opts: &ProtocolOptions, canary: bool) -> Result<Box<dyn AnyDevice>, MountFailure> {
    let geo = *nand.geometry();
    let prepared = B::configure(cfg, &geo, opts, canary).and_then(|cfg| Ok((cfg, B::hooks(&geo, opts, canary, Stage::Mount)?)));
    match prepared {
        Ok((cfg, hooks)) => Ftl::mount_or_return(nand, cfg, hooks).map(|f| Box::new(B::wrap(f)) as Box<dyn AnyDevice>),
        Err(e) => Err((e, Box::new(nand))),
    }
}

fn memory_with<B: Build>(nand: &NandConfig, cfg: &FtlConfig, opts: &ProtocolOptions, canary: bool) -> Result<FtlMemory, DeviceError> {
    let cfg = B::configure(cfg.clone(), &nand.geometry, opts, canary)?;
    let hooks = B::hooks(&nand.geometry, opts, canary, Stage::Estimate)?;
    let mut m = Ftl::memory_needed(&nand.geometry, &cfg, nand.data_mode, &hooks)?;
    m.tables += B::extra_memory(&nand.geometry, m.logical_pages, opts);
    Ok(m)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_hooks::Bare;
    use crate::Registered;
    use txftl_nand::{DataMode, ViolationPolicy, PRESET_NAMES};

    /// The framework with no hooks (`test_hooks::Bare`), registered as a
    /// protocol that commits by SLC partial programming would be: it needs
    /// SLC cells with NOP 2.
    impl Registered for Bare {
        fn entry() -> &'static ProtocolEntry {
            &SLC_BARE
        }
    }

    struct SlcBareBuild;

    impl Build for SlcBareBuild {
        type Hooks = Bare;
        type Device = Ftl<Bare>;
        fn hooks(_geo: &Geometry, _opts: &ProtocolOptions, _canary: bool, _stage: Stage) -> Result<Bare, DeviceError> {
            Ok(Bare)
        }
        fn wrap(ftl: Ftl<Bare>) -> Ftl<Bare> {
            ftl
        }
    }

    static SLC_BARE: ProtocolEntry = ProtocolEntry {
        nand: NandNeeds::slc(2),
        ..ProtocolEntry::base("slc-bare", "SLC bare", "the framework alone, on SLC", Builder::of::<SlcBareBuild>())
    };

    fn nand_config(preset: &str) -> NandConfig {
        txftl_nand::preset(preset).unwrap().config(DataMode::Full, ViolationPolicy::Panic)
    }

    fn nand(preset: &str) -> Nand {
        Nand::new(nand_config(preset)).unwrap()
    }

    const REFUSAL: &str = "protocol `slc-bare` needs SLC cells with NOP >= 2 and a spare area of at least 64 bytes; \
                           the device has MLC cells, NOP 1 and a 64-byte spare area";

    fn assert_refused(e: &DeviceError) {
        assert!(
            matches!(e, DeviceError::NandUnsuitable { protocol: "slc-bare", needs, has }
                if *needs == NandNeeds::slc(2) && has.cell == CellType::Mlc),
            "{e:?}"
        );
        assert_eq!(e.to_string(), REFUSAL);
    }

    /// An MLC device is refused by every way of building one, with the
    /// typed error; a mount hands the NAND back untouched.
    #[test]
    fn a_device_without_what_the_protocol_needs_is_refused() {
        let opts = ProtocolOptions::new();
        let err = SLC_BARE.format(nand("tiny"), FtlConfig::default(), &opts, false).err().unwrap();
        assert_refused(&err);
        let (err, back) = SLC_BARE.mount(nand("tiny"), FtlConfig::default(), &opts, false).err().unwrap();
        assert_refused(&err);
        assert_eq!(*back.geometry(), nand_config("tiny").geometry, "mount hands the NAND back");
        assert!(back.is_factory_fresh(), "nothing was written");
        let tiny = nand_config("tiny");
        assert_refused(&SLC_BARE.memory(&tiny, &FtlConfig::default(), &opts, false).unwrap_err());
        assert_refused(&SLC_BARE.configure(FtlConfig::default(), &tiny.geometry, &opts, false).unwrap_err());
    }

    /// On the preset its needs pick (`tiny-slc`), the device formats, takes
    /// a write and mounts again.
    #[test]
    fn the_preset_the_needs_pick_serves_the_protocol() {
        let opts = ProtocolOptions::new();
        let preset = SLC_BARE.nand.tiny_preset();
        assert_eq!(preset, "tiny-slc");
        let mut dev = SLC_BARE.format(nand(preset), FtlConfig::default(), &opts, false).unwrap();
        let page = vec![7u8; dev.info().page_size as usize];
        dev.write(3, &page).unwrap();
        dev.flush().unwrap();
        let nand = dev.close().unwrap();
        let mut dev = SLC_BARE
            .mount(nand, FtlConfig::default(), &opts, false)
            .map_err(|(e, _)| e)
            .unwrap();
        let mut buf = vec![0u8; page.len()];
        dev.read(3, &mut buf).unwrap();
        assert_eq!(buf, page);
    }

    #[test]
    fn the_framework_needs_what_every_preset_has() {
        for name in PRESET_NAMES {
            let geo = txftl_nand::preset(name).unwrap().geometry;
            assert_eq!(NandNeeds::FRAMEWORK.met_by(&geo), Ok(()), "{name}");
        }
        assert_eq!(NandNeeds::FRAMEWORK.tiny_preset(), "tiny");
        let small_spare = Geometry {
            oob_size: 32,
            ..nand_config("tiny").geometry
        };
        let has = NandNeeds::FRAMEWORK.met_by(&small_spare).unwrap_err();
        assert_eq!(has.to_string(), "MLC cells, NOP 1 and a 32-byte spare area");
        let nop_too_low = NandNeeds::slc(8).met_by(&nand_config("tiny-slc").geometry).unwrap_err();
        assert_eq!((nop_too_low.cell, nop_too_low.nop), (CellType::Slc, 4));
    }
}
