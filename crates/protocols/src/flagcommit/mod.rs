//! Flag Commit (On, Xu, Choi, Hu, Sun; IEEE TKDE, DOI 10.1109/TKDE.2011.122):
//! a transaction commits by clearing one bit in a page's spare area with an
//! SLC partial program. No commit record, no log; an abort programs nothing.
//! What CFC (`crate::cfc`) and AFC (`crate::afc`) share lives here; each
//! protocol's folder holds its own rule ([`FlagRule`]): the flags it programs,
//! what commits, what GC moves, and what recovery decides.
//!
//! - Every data page carries XID, Version, Link and a commit flag
//!   (`format.rs`). A transaction's pages link to its previous page.
//! - Pages of an open transaction stay off the L2P until commit (GC keeps
//!   them: `GcHooks::extra_live`); commit waits until every page is done on
//!   its die, then programs its flags (CFC: TRUE on each head, `graph.rs`;
//!   AFC: "10" on its FALSE first page), then maps the pages.
//! - GC plans every victim (`GcHooks::plan_victim`): before a committed
//!   (CFC) or aborted (AFC) transaction's page is reclaimed its flag moves
//!   to the page it links to, or, with block-based flags (§3.4, the
//!   default), into the copy of a live page of its cluster.
//! - No mapping table on flash: checkpoints persist none
//!   (`txftl_ftl::Unpersisted`); recovery reads the spare area of every page
//!   in use (`RecoveryHooks::zone_blocks`: every block) and decides each
//!   transaction from its flags (§3.1.3, `recovery.rs`).
//! - The transaction table (`txs.rs`) holds the open and the aborted
//!   transactions whose pages are on flash; anything else is committed.

mod device;
pub mod format;
pub mod graph;
pub mod recovery;
pub mod txs;
pub mod verdicts;
pub mod xids;

pub use device::FlagDevice;
pub use graph::FlagMode;

use format::PageMeta;
use txftl_ftl::{
    BlockId, Capabilities, CounterSpec, EventHooks, GcHooks, Hooks, Oob, PersistHooks, RecoveredUpdate, RecoveryHooks, Result,
    ScannedPages, SpareBytes, SpareProbe, Unpersisted, VictimPage, VictimPlan, FLAG_BYTES,
};
use txftl_nand::{Geometry, Nand, Ppn};
use txs::{PageInfo, Tx, TxTable};

/// What makes CFC CFC and AFC AFC.
pub trait FlagRule: Clone + Send + Sync + 'static {
    const NAME: &'static str;
    const CANARY: &'static str;
    /// The flag of a transaction's page as programmed: `first`, its first
    /// page; `end`, its last, written with `write_end` once every earlier
    /// page is done.
    fn written_flag(first: bool, end: bool) -> u8;
    /// The flag of a page written outside transactions: committed at once.
    const COMMITTED_FLAG: u8;
    fn is_true(flag: u8) -> bool;
    /// An open transaction's FALSE pages stay live (GC copies them with
    /// their flag) even when a later page of its own replaced them.
    const KEEPS_FALSE_PAGES: bool;
    /// A transaction's later pages are programmed only once its first is
    /// done (AFC: a cut at an instant must not leave later TRUE pages
    /// without their FALSE first page).
    const FIRST_PAGE_FIRST: bool;
    /// A transaction recovery finds not committed although some of its
    /// pages read TRUE (a cut between a commit's flags on several heads) is
    /// recorded aborted in every checkpoint while its pages are on flash
    /// (CFC: once GC reclaims its FALSE heads, its TRUE ones would read
    /// committed). AFC keeps a FALSE on such a transaction instead.
    const RECORDS_TORN_COMMITS: bool;
    /// The pages whose `format::COMMIT_BIT` commit clears. `releasing`:
    /// pages in GC victims planned but not yet released (planned while the
    /// transaction was open: they vanish after its commit, unplanned for it).
    fn commit_flags(tx: &Tx, mode: FlagMode, releasing: &dyn Fn(Ppn) -> bool) -> Vec<Ppn>;
    /// Whether `plan` needs the victim's spare areas read
    /// (`GcHooks::plan_reads_spares`): CFC does (a reclaimed committed
    /// page's Link and flag are on flash only); AFC plans from its
    /// transaction table (the aborted transactions' pages).
    const PLAN_READS_SPARES: bool;
    /// Plans a GC victim (`GcHooks::plan_victim`).
    fn plan(h: &mut FlagHooks<Self>, victim: BlockId, pages: &[VictimPage], probe: &mut dyn SpareProbe, plan: &mut VictimPlan);
    /// Recovery, with summary pages: the pages (indices into `pages`) whose
    /// flag, read from a summary as programmed, must be read again as it is
    /// now before `committed` decides.
    fn stale_flags(pages: &[recovery::ScanPage], mode: FlagMode) -> Vec<usize>;
    /// Recovery: whether the transaction whose pages on flash are `pages` committed.
    fn committed(pages: &[recovery::ScanPage], mode: FlagMode) -> bool;
    /// The bytes of the copy made when a flag program finds its page spent.
    fn flagged_copy(ppn: Ppn, meta: PageMeta, clear: u8) -> PageMeta;
}

/// The counters both protocols report (their entries' `counters`).
pub const COUNTERS: &[CounterSpec] = &[
    CounterSpec {
        key: "fc_commit_flag_programs",
        help: "flag programs commits issued (a partial program, or a copy of a page whose partial programs were spent)",
    },
    CounterSpec {
        key: "fc_end_writes",
        help: "last pages written with write_end (CFC: programmed TRUE)",
    },
    CounterSpec {
        key: "fc_gc_flag_moves",
        help: "flag programs GC planned on pages outside its victims before releasing them (flags moved)",
    },
    CounterSpec {
        key: "fc_gc_flags_folded",
        help: "flag programs block-based flags saved: the flag went into a live page's copy instead (§3.4)",
    },
    CounterSpec {
        key: "fc_gc_open_copies",
        help: "GC copies of open transactions' pages",
    },
    CounterSpec {
        key: "fc_recovered_commits",
        help: "transactions the last recovery found committed",
    },
    CounterSpec {
        key: "fc_recovered_uncommitted",
        help: "transactions the last recovery found not committed (kept in the table while their pages are on flash)",
    },
];

/// How CFC's and AFC's devices are built on the framework (their registry
/// entries' builder): one for both, by rule.
pub struct FlagBuild<R: FlagRule>(std::marker::PhantomData<R>);

impl<R: FlagRule> crate::registry::Build for FlagBuild<R>
where
    FlagDevice<R>: crate::AnyDevice,
{
    type Hooks = FlagHooks<R>;
    type Device = FlagDevice<R>;

    /// `block-flags` and `summary-pages` count at format only: a mount takes the layout from the root.
    fn hooks(geo: &Geometry, opts: &txftl_ftl::ProtocolOptions, canary: bool, _stage: crate::registry::Stage) -> Result<FlagHooks<R>> {
        let summaries = crate::cycle::summary::summary_pages_option(opts)?;
        Ok(FlagHooks::new(geo, block_flags_option(opts)?, canary).with_summary_pages(summaries))
    }

    fn wrap(ftl: txftl_ftl::Ftl<FlagHooks<R>>) -> FlagDevice<R> {
        FlagDevice::new(ftl)
    }
}

/// Counters of the protocol's own (`stats`).
#[derive(Clone, Copy, Debug, Default)]
pub struct FlagCounters {
    pub commits: u64,
    /// Flag programs commits issued (partial programs, or copies of spent pages).
    pub commit_flag_programs: u64,
    /// Last pages written with `write_end`.
    pub end_writes: u64,
    /// Flag programs GC planned on pages outside its victims.
    pub gc_flag_moves: u64,
    /// Flag programs block-based flags saved against page-based ones
    /// (a target folded into a live page's copy, §3.4).
    pub gc_flags_folded: u64,
    /// GC copies of open transactions' pages.
    pub gc_open_copies: u64,
    /// Checkpoints durable while a transaction was open (its pages on
    /// flash, off the L2P the checkpoint's block table covers).
    pub checkpoints_with_open_tx: u64,
}

#[derive(Clone, Debug)]
pub struct FlagHooks<R: FlagRule> {
    pub(crate) rule: std::marker::PhantomData<R>,
    pub(crate) canary: bool,
    pub(crate) mode: FlagMode,
    pub(crate) geo: Geometry,
    pub(crate) txs: TxTable,
    /// The Version the last write carried (0: none yet): Versions are
    /// device-wide write stamps (`format.rs`), so DRAM keeps one number,
    /// not one a logical page (§3.1.2: physical Links spare the mapping
    /// table its version numbers).
    last_version: u32,
    /// GC victims planned and not yet released or erased.
    releasing: std::collections::BTreeSet<BlockId>,
    /// The GC copy just programmed (`on_program`), for `on_relocate`.
    just_copied: Option<(Ppn, PageMeta, u64)>,
    pub(crate) counters: FlagCounters,
    /// Data blocks end with a summary page (`summary-pages=1`): the option at
    /// format, the root's bit at a mount.
    summary_pages: bool,
    /// What the last mount decided, recorded in every checkpoint (`verdicts.rs`).
    pub(crate) verdicts: verdicts::Verdicts,
    pub recovered_commits: u32,
    pub recovered_uncommitted: u32,
}

impl<R: FlagRule> FlagHooks<R> {
    pub fn new(geo: &Geometry, block_flags: bool, canary: bool) -> FlagHooks<R> {
        FlagHooks {
            rule: std::marker::PhantomData,
            canary,
            mode: mode_of(geo, block_flags),
            geo: *geo,
            txs: TxTable::new(R::NAME),
            last_version: 0,
            releasing: Default::default(),
            just_copied: None,
            counters: FlagCounters::default(),
            summary_pages: false,
            verdicts: verdicts::Verdicts::default(),
            recovered_commits: 0,
            recovered_uncommitted: 0,
        }
    }

    /// `self` writing summary pages (`summary-pages=1`) or not.
    pub fn with_summary_pages(mut self, on: bool) -> FlagHooks<R> {
        self.summary_pages = on;
        self
    }

    pub fn mode(&self) -> FlagMode {
        self.mode
    }

    pub fn counters(&self) -> FlagCounters {
        self.counters
    }

    /// The Version the next write carries (and records it): above every
    /// Version written or found on flash. Refused (typed) once 32 bits are
    /// used up: an older page of a logical page must never outrank a newer.
    pub(crate) fn next_version(&mut self) -> Result<u32> {
        let v = self
            .last_version
            .checked_add(1)
            .ok_or_else(|| txftl_ftl::DeviceError::WornOut(format!("{} page Versions are used up", R::NAME)))?;
        self.last_version = v;
        Ok(v)
    }

    /// Whether `ppn` lies in a victim planned and not yet released.
    pub(crate) fn is_releasing(&self, ppn: Ppn) -> bool {
        self.releasing.contains(&self.geo.block_of(ppn))
    }

    fn forget_block(&mut self, block: BlockId) {
        self.releasing.remove(&block);
        let first = self.geo.ppn(block, 0);
        self.txs.forget_pages(first, first + self.geo.pages_per_block);
    }
}

pub(crate) fn mode_of(geo: &Geometry, block_flags: bool) -> FlagMode {
    if block_flags {
        FlagMode::Block {
            pages_per_block: geo.pages_per_block,
        }
    } else {
        FlagMode::Page
    }
}

/// Block-based or page-based flags, chosen at format.
pub const BLOCK_FLAGS: txftl_ftl::OptionSpec = txftl_ftl::OptionSpec {
    key: "block-flags",
    value_name: "0|1",
    help: "1: block-based flags (§3.4, the paper's measured CFC and AFC): a transaction's pages in one block \
           form a cluster read by one flag, and GC folds a reclaimed cluster's links into its live pages' copies; \
           0: page-based flags (§3.1). Taken at format, recorded on the device [default: 1]",
    min: 0,
    max: 1,
};

/// The `block-flags` option.
pub fn block_flags_option(opts: &txftl_ftl::ProtocolOptions) -> Result<bool> {
    Ok(opts.u32(&BLOCK_FLAGS)?.unwrap_or(1) == 1)
}

/// The root, one byte chosen at format: bit 0 block-based flags, bit 1
/// summary pages (recovery reads by both).
const ROOT_BLOCK_FLAGS: u8 = 1;
const ROOT_SUMMARY_PAGES: u8 = 2;

impl<R: FlagRule> Hooks for FlagHooks<R> {
    type Mapping = Unpersisted;
    const CAPABILITIES: Capabilities = Capabilities {
        extra_live: true,
        scans_pages: true,
        plans_victims: true,
        ..Capabilities::NONE
    };

    fn name(&self) -> &'static str {
        if self.canary {
            R::CANARY
        } else {
            R::NAME
        }
    }

    fn check(&self, l2p: &[u32], _nand: &Nand) -> std::result::Result<(), String> {
        self.txs.check()?;
        for t in self.txs.all().filter(|t| t.is_open()) {
            for (&lpn, ppn) in &t.latest {
                if l2p.get(lpn as usize) == Some(ppn) {
                    return Err(format!("XID {}: open page {ppn} of lpn {lpn} is mapped before commit", t.xid));
                }
            }
        }
        Ok(())
    }
}

impl<R: FlagRule> FlagHooks<R> {
    /// Whether page `ppn` of transaction `t` (in the table) is kept live.
    fn keeps(t: &Tx, ppn: Ppn) -> bool {
        let Some(info) = t.pages.get(&ppn) else { return false };
        t.is_open() && (t.latest.get(&info.lpn) == Some(&ppn) || (R::KEEPS_FALSE_PAGES && !R::is_true(info.flag)))
    }
}

impl<R: FlagRule> GcHooks for FlagHooks<R> {
    fn extra_live(&self, ppn: Ppn) -> bool {
        // Only open transactions keep pages: most pages GC asks about are
        // answered by the small set of theirs.
        self.txs.is_open_page(ppn) && self.txs.of_page(ppn).is_some_and(|(t, _)| Self::keeps(t, ppn))
    }

    /// Only open transactions keep pages.
    fn keeps_extra_pages(&self) -> bool {
        self.txs.open_count() > 0
    }

    /// The open transactions' pages in the range, not every page (GC asks
    /// it of every candidate victim; only open transactions keep pages).
    fn extra_live_count(&self, first: Ppn, end: Ppn) -> u32 {
        self.txs.open_pages_in(first, end).filter(|&(p, t)| Self::keeps(t, p)).count() as u32
    }

    fn on_relocate(&mut self, old: Ppn, new: Ppn, _oob: &Oob, _new_erase_count: u32) {
        let Some((copied, meta, seq)) = self.just_copied.take() else {
            return;
        };
        debug_assert_eq!(copied, new, "GC copy {new} reported, {copied} programmed");
        if self.txs.is_open_page(old) {
            self.counters.gc_open_copies += 1;
        }
        self.txs.relocated(old, new, &meta, seq);
    }

    fn plan_victim(&mut self, victim: BlockId, pages: &[VictimPage], probe: &mut dyn SpareProbe, plan: &mut VictimPlan) {
        let counters = self.counters;
        R::plan(self, victim, pages, probe, plan);
        if plan.dry_run {
            self.counters = counters;
            return;
        }
        self.releasing.insert(victim);
        self.counters.gc_flag_moves += plan.flag_programs.len() as u64;
    }

    fn plan_reads_spares(&self) -> bool {
        R::PLAN_READS_SPARES
    }

    fn flagged_copy_bytes(&self, ppn: Ppn, oob: &Oob, clear: [u8; FLAG_BYTES]) -> SpareBytes {
        match PageMeta::of(oob) {
            Some(meta) => R::flagged_copy(ppn, meta, clear[0]).bytes(),
            None => SpareBytes::of(oob),
        }
    }
}

impl<R: FlagRule> PersistHooks for FlagHooks<R> {
    fn root_len_max(&self) -> usize {
        1
    }

    fn root(&self) -> Vec<u8> {
        let block = matches!(self.mode, FlagMode::Block { .. });
        vec![(block as u8 * ROOT_BLOCK_FLAGS) | (self.summary_pages as u8 * ROOT_SUMMARY_PAGES)]
    }

    fn summary_pages(&self) -> bool {
        self.summary_pages
    }

    fn checkpoint_section_max(&self) -> usize {
        verdicts::Verdicts::len_max()
    }

    /// The last mount's verdicts, its list cut to the transactions whose
    /// pages are still on flash (`verdicts.rs`).
    fn checkpoint_section(&self) -> Vec<u8> {
        self.verdicts.encode()
    }

    fn checkpoint_durable(&mut self) {
        if self.txs.open_count() > 0 {
            self.counters.checkpoints_with_open_tx += 1;
        }
        let txs = &self.txs;
        self.verdicts.uncommitted.retain(|&x| txs.by_xid(x).is_some());
    }

    fn blocks_released(&mut self, blocks: &[BlockId]) {
        for &b in blocks {
            self.forget_block(b);
        }
    }

    /// XID, Version and Link (`format.rs`): every page.
    fn packed_protocol_bytes(&self) -> usize {
        format::USED_BYTES
    }

    /// The commit flag.
    fn flag_bytes(&self) -> usize {
        1
    }
}

impl<R: FlagRule> RecoveryHooks for FlagHooks<R> {
    /// The flag layout the device was formatted with, before the scan.
    fn recover(
        &mut self,
        _ckpt_seq: u64,
        root: &[u8],
        section: &[u8],
        _fell_back: bool,
        _logs: &mut dyn txftl_ftl::LogSource,
    ) -> Result<Vec<RecoveredUpdate>> {
        let byte = match root {
            [b] if b & !(ROOT_BLOCK_FLAGS | ROOT_SUMMARY_PAGES) == 0 => *b,
            other => {
                return Err(txftl_ftl::DeviceError::Corrupted(format!(
                    "{}: the superblock's root is {other:?}, not a layout byte (bit 0 block flags, bit 1 summary pages)",
                    R::NAME
                )))
            }
        };
        self.mode = mode_of(&self.geo, byte & ROOT_BLOCK_FLAGS != 0);
        self.summary_pages = byte & ROOT_SUMMARY_PAGES != 0;
        self.verdicts = verdicts::Verdicts::decode(R::NAME, section)?;
        Ok(Vec::new())
    }

    /// Nothing is applied as it is: every mapping comes from `recover_scanned`.
    fn roll_forward(&self, _oob: &Oob) -> bool {
        false
    }

    /// Every block: no mapping table on flash, recovery reads every page in use.
    fn zone_blocks(&self) -> Vec<BlockId> {
        (0..self.geo.block_count()).collect()
    }

    fn recover_scanned(&mut self, _ckpt_seq: u64, pages: ScannedPages<'_>) -> Result<Vec<RecoveredUpdate>> {
        let found = recovery::resolve::<R>(pages, self.mode, &self.verdicts)?;
        // XIDs a recorded verdict covered are never handed out again, even
        // if no page of theirs is left (a fallback to an older checkpoint
        // reads its verdicts).
        let resume_after = found.max_xid.max(self.verdicts.decided_to);
        let fresh =
            FlagHooks::<R>::new(&self.geo, matches!(self.mode, FlagMode::Block { .. }), self.canary).with_summary_pages(self.summary_pages);
        *self = fresh;
        let uncommitted: Vec<u32> = found.uncommitted.iter().map(|(x, _)| *x).collect();
        self.verdicts = verdicts::Verdicts::after_mount(found.max_xid, &uncommitted, &found.torn);
        self.txs.resume_after(resume_after);
        self.last_version = found.max_version;
        self.recovered_commits = found.committed;
        self.recovered_uncommitted = found.uncommitted.len() as u32;
        for (xid, pages) in found.uncommitted {
            self.txs.add_aborted(xid, pages);
        }
        Ok(found.mappings)
    }
}

impl<R: FlagRule> EventHooks for FlagHooks<R> {
    fn on_flags_cleared(&mut self, ppn: Ppn, clear: [u8; FLAG_BYTES]) {
        self.txs.flag_cleared(ppn, clear[0]);
    }

    fn on_erase(&mut self, block: BlockId) {
        self.forget_block(block);
    }

    fn on_program(&mut self, ppn: Ppn, oob: &Oob, done_ns: u64) {
        let Some(meta) = PageMeta::of(oob) else { return };
        if oob.relocated {
            self.just_copied = Some((ppn, meta, oob.seq));
            return;
        }
        let info = PageInfo {
            lpn: oob.lpn,
            version: meta.version,
            link: meta.link,
            seq: oob.seq,
            flag: meta.flag,
        };
        if self.txs.by_xid(meta.xid).is_some_and(Tx::is_open) {
            self.txs.programmed(meta.xid, ppn, info, done_ns);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Versions are device-wide stamps: each write's is above the last, and
    /// the last one 32 bits hold is refused with a typed error, never wrapped
    /// (a wrapped Version would let an older page outrank a newer one).
    #[test]
    fn versions_rise_across_pages_and_run_out_with_an_error() {
        let geo = txftl_nand::preset("tiny-slc").unwrap().geometry;
        let mut h = FlagHooks::<crate::cfc::CfcRule>::new(&geo, true, false);
        assert_eq!((h.next_version().unwrap(), h.next_version().unwrap()), (1, 2));
        h.last_version = u32::MAX - 1;
        assert_eq!(h.next_version().unwrap(), u32::MAX);
        assert!(matches!(h.next_version(), Err(txftl_ftl::DeviceError::WornOut(m)) if m.contains("Versions")));
    }
}
