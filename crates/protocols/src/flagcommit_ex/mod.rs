//! Flag Commit extended to record-level concurrency and no-force buffers
//! (On et al., IEEE TKDE, §4: CFC_ex and AFC_ex). A page version holds the
//! pending records of up to `max_c` open transactions, each with its own
//! XID, Link and commit flag (`format.rs`); a transaction commits by
//! clearing its own entry's flag bit with a partial program, as the basic
//! protocols do a page's. What CFC_ex (`crate::cfc_ex`) and AFC_ex
//! (`crate::afc_ex`) share lives here; each folder holds its rule
//! ([`ExRule`]).
//!
//! - A version is mapped (the L2P points to each logical page's newest) as
//!   it is written; the older versions a reader still needs stay live
//!   (`versions.rs`). `RecordTx::read_versions` returns them newest first,
//!   with each entry's status; the host merges records (the DBMS does).
//! - The page-level calls work too: `write_tx` writes a version with one
//!   entry, `read` returns the newest version whose entries are all
//!   committed (the last committed page), so the crash harness's
//!   page-level workloads run on the extended protocols as on the basic.
//! - Commit, GC and recovery work per entry as the basic protocols work
//!   per page (§4.3: "the operations are now on the granularity of a
//!   pending record"): CFC_ex flags every head of the transaction's entry
//!   graph; AFC_ex flips its first entry's FALSE; GC moves flags before a
//!   version is reclaimed; recovery decides each XID from its entries'
//!   flags. Flags are page-based (§3.1): the block-based clusters of §3.4
//!   are not carried over to entries.
//! - A mount leaves the transactions it found not committed *in doubt*
//!   until the host's first write or begin: Algorithm 3 decides a
//!   transaction committed by its commit log record too, so the host's
//!   restart commits those (`RecordTx::commit_in_doubt`) before it writes.
//! - `max_c` (the `max-c` option, chosen at format): entries a version
//!   holds at most, 1 to 4 (the format's four flag bytes).

mod device;
pub mod format;
pub mod gc;
pub mod recovery;
pub mod txs;
pub mod versions;

pub use device::ExDevice;

use crate::flagcommit::verdicts::Verdicts;
use format::{Entry, VersionMeta};
use std::collections::BTreeSet;
use txftl_ftl::{
    BlockId, Capabilities, CounterSpec, EventHooks, GcHooks, Hooks, Oob, PersistHooks, RecoveredUpdate, RecoveryHooks, Result,
    ScannedPages, SpareBytes, SpareProbe, Unpersisted, VictimPage, VictimPlan, FLAG_BYTES,
};
use txftl_nand::{Geometry, Nand, Ppn};
use txs::{EntryInfo, Tx, TxState, TxTable};
use versions::{Decided, Versions};

/// What makes CFC_ex CFC_ex and AFC_ex AFC_ex.
pub trait ExRule: Clone + Send + Sync + 'static {
    const NAME: &'static str;
    const CANARY: &'static str;
    /// The flag of a transaction's entry as programmed: `first`, its first.
    fn written_flag(first: bool) -> u8;
    fn is_true(flag: u8) -> bool;
    /// Whether GC reads every spare of a victim before planning it (CFC_ex:
    /// a committed entry's Link is on flash only), or only those of the
    /// pages holding an entry of a transaction in the table (AFC_ex: a
    /// committed transaction costs GC nothing, §3.2).
    const PLAN_READS_SPARES: bool;
    /// A transaction recovery finds not committed although an entry of it
    /// reads TRUE is recorded (CFC_ex: once GC reclaims its FALSE heads, its
    /// TRUE ones would read committed).
    const RECORDS_TORN_COMMITS: bool;
    /// A transaction's later entries are programmed only once its first is
    /// done (AFC_ex: no TRUE entry on flash without its FALSE first one).
    const FIRST_ENTRY_FIRST: bool;
    /// The pages whose entry of `tx` a commit clears `format`'s commit bit
    /// on. `releasing`: pages in GC victims planned, not yet released.
    fn commit_flags(tx: &Tx, releasing: &dyn Fn(Ppn) -> bool) -> Vec<Ppn>;
    /// Recovery: whether the transaction whose entries on flash are `entries` committed.
    fn committed(entries: &[recovery::ScanEntry]) -> bool;
    /// A committed transaction's entry in a GC copy: its flag there.
    fn committed_in_copy(flag: u8, canary: bool) -> u8;
    /// An aborted transaction's entry in a GC copy: its flag there.
    fn aborted_in_copy(flag: u8, canary: bool) -> u8;
    /// The entry a flag program found spent, in the page's copy (`clear`:
    /// the bits the program was clearing; `original`: the page copied).
    fn flagged_entry(original: Ppn, e: Entry, clear: u8) -> Entry;
    /// Plans the victim's dead versions: the flag programs outside it
    /// that keep every transaction decided as it is once they are gone.
    /// `dead`: (page, fields, sequence number); `live_xids`: transactions
    /// with an entry in a live page of the victim (its copy carries it).
    fn plan_dead(h: &mut ExHooks<Self>, ctx: gc::DeadPlan<'_>, probe: &mut dyn SpareProbe, plan: &mut gc::FlagPlan);
}

/// The counters both protocols report (their entries' `counters`).
pub const COUNTERS: &[CounterSpec] = &[
    CounterSpec {
        key: "fcx_commit_flag_programs",
        help: "flag programs commits issued (a partial program, or a copy of a page whose partial programs were spent)",
    },
    CounterSpec {
        key: "fcx_record_writes",
        help: "versions written with pending records (write_records, write_tx)",
    },
    CounterSpec {
        key: "fcx_shared_writes",
        help: "versions written holding the pending records of two or more transactions",
    },
    CounterSpec {
        key: "fcx_versions_read",
        help: "versions read by read_versions (a page read each)",
    },
    CounterSpec {
        key: "fcx_gc_flag_moves",
        help: "flag programs GC planned on pages outside its victims before releasing them",
    },
    CounterSpec {
        key: "fcx_gc_versions_kept",
        help: "GC copies of versions older than their page's newest (a reader still needs them)",
    },
    CounterSpec {
        key: "fcx_recovered_commits",
        help: "transactions the last recovery found committed",
    },
    CounterSpec {
        key: "fcx_recovered_in_doubt",
        help: "transactions the last recovery found not committed and left in doubt",
    },
    CounterSpec {
        key: "fcx_in_doubt_committed",
        help: "transactions in doubt the host committed after a mount (commit_in_doubt)",
    },
];

/// Counters of the protocol's own (`stats`).
#[derive(Clone, Copy, Debug, Default)]
pub struct ExCounters {
    pub commits: u64,
    pub commit_flag_programs: u64,
    pub record_writes: u64,
    pub shared_writes: u64,
    pub versions_read: u64,
    pub gc_flag_moves: u64,
    pub gc_versions_kept: u64,
    pub in_doubt_committed: u64,
    pub checkpoints_with_open_tx: u64,
}

/// What a mount found, kept until the host settles it.
#[derive(Clone, Debug)]
struct Unsettled {
    max_xid: u32,
    torn: BTreeSet<u32>,
}

#[derive(Clone, Debug)]
pub struct ExHooks<R: ExRule> {
    rule: std::marker::PhantomData<R>,
    pub(crate) canary: bool,
    pub(crate) geo: Geometry,
    pub(crate) max_c: u8,
    pub(crate) txs: TxTable,
    pub(crate) versions: Versions,
    last_version: u32,
    /// GC victims planned and not yet released or erased.
    releasing: BTreeSet<BlockId>,
    /// The GC copy just programmed (`on_program`), for `on_relocate`.
    just_copied: Option<(Ppn, VersionMeta, u64)>,
    pub(crate) counters: ExCounters,
    /// What the mounts decided, recorded in every checkpoint.
    pub(crate) verdicts: Verdicts,
    unsettled: Option<Unsettled>,
    pub recovered_commits: u32,
    pub recovered_in_doubt: u32,
}

impl<R: ExRule> ExHooks<R> {
    pub fn new(geo: &Geometry, max_c: u8, canary: bool) -> ExHooks<R> {
        assert!((1..=format::MAX_ENTRIES as u8).contains(&max_c), "max_c {max_c}");
        ExHooks {
            rule: std::marker::PhantomData,
            canary,
            geo: *geo,
            max_c,
            txs: TxTable::new(R::NAME),
            versions: Versions::new(geo.pages_per_block, geo.block_count()),
            last_version: 0,
            releasing: BTreeSet::new(),
            just_copied: None,
            counters: ExCounters::default(),
            verdicts: Verdicts::default(),
            unsettled: None,
            recovered_commits: 0,
            recovered_in_doubt: 0,
        }
    }

    pub fn counters(&self) -> ExCounters {
        self.counters
    }

    /// The Version the next write carries; refused (typed) once 32 bits are used up.
    pub(crate) fn next_version(&mut self) -> Result<u32> {
        let v = self
            .last_version
            .checked_add(1)
            .ok_or_else(|| txftl_ftl::DeviceError::WornOut(format!("{} page Versions are used up", R::NAME)))?;
        self.last_version = v;
        Ok(v)
    }

    /// What transaction `xid` is: not in the table, committed.
    pub(crate) fn decided(&self, xid: u32) -> Decided {
        self.txs.decided(xid)
    }

    /// Drops the versions of `lpns` no reader needs any more.
    pub(crate) fn prune(&mut self, lpns: impl IntoIterator<Item = txftl_ftl::Lpn>) {
        let txs = &self.txs;
        let decided = |x: u32| txs.decided(x);
        for lpn in lpns {
            self.versions.prune(lpn, &decided);
        }
    }

    /// Whether `ppn` lies in a victim planned and not yet released.
    pub(crate) fn is_releasing(&self, ppn: Ppn) -> bool {
        self.releasing.contains(&self.geo.block_of(ppn))
    }

    /// The mount's transactions in doubt are aborted (the host's first
    /// write or begin after it); the verdicts the next checkpoint records
    /// cover them from now on.
    pub(crate) fn settle(&mut self) {
        let Some(u) = self.unsettled.take() else { return };
        let aborted = self.txs.settle();
        let lpns: BTreeSet<txftl_ftl::Lpn> = aborted
            .iter()
            .filter_map(|x| self.txs.by_xid(*x))
            .flat_map(|t| t.entries.values().map(|e| e.lpn))
            .collect();
        let mut listed: Vec<u32> = self.verdicts.uncommitted.iter().copied().chain(aborted).collect();
        listed.sort_unstable();
        listed.dedup();
        self.verdicts = Verdicts::after_mount(u.max_xid, &listed, &u.torn);
        self.prune(lpns);
    }

    /// Whether the mount's decisions are still open.
    pub fn unsettled(&self) -> bool {
        self.unsettled.is_some()
    }

    fn forget_block(&mut self, block: BlockId) {
        self.releasing.remove(&block);
        let first = self.geo.ppn(block, 0);
        self.txs.forget_pages(first, first + self.geo.pages_per_block);
    }

    /// The entry values of a transaction's entry in a page copied by GC.
    fn copy_flag(&self, e: &Entry) -> u8 {
        if self.verdicts.covers(e.xid) {
            return e.flag;
        }
        match self.decided(e.xid) {
            Decided::Committed => R::committed_in_copy(e.flag, self.canary),
            Decided::Aborted => R::aborted_in_copy(e.flag, self.canary),
            Decided::Undecided => e.flag,
        }
    }
}

/// The `max-c` option.
pub const MAX_C: txftl_ftl::OptionSpec = txftl_ftl::OptionSpec {
    key: "max-c",
    value_name: "1..4",
    help: "pending records of different transactions a page version holds at most (§4.3's max_c): 1 to 4, the \
           format's four flag bytes. Taken at format, recorded on the device [default: 3, the paper's]",
    min: 1,
    max: format::MAX_ENTRIES as u32,
};

pub fn max_c_option(opts: &txftl_ftl::ProtocolOptions) -> Result<u8> {
    Ok(opts.u32(&MAX_C)?.unwrap_or(3) as u8)
}

/// How CFC_ex's and AFC_ex's devices are built on the framework.
pub struct ExBuild<R: ExRule>(std::marker::PhantomData<R>);

impl<R: ExRule> crate::registry::Build for ExBuild<R>
where
    ExDevice<R>: crate::AnyDevice,
{
    type Hooks = ExHooks<R>;
    type Device = ExDevice<R>;

    /// `max-c` counts at format only: a mount takes it from the root.
    fn hooks(geo: &Geometry, opts: &txftl_ftl::ProtocolOptions, canary: bool, _stage: crate::registry::Stage) -> Result<ExHooks<R>> {
        Ok(ExHooks::new(geo, max_c_option(opts)?, canary))
    }

    fn wrap(ftl: txftl_ftl::Ftl<ExHooks<R>>) -> ExDevice<R> {
        ExDevice::new(ftl)
    }
}

impl<R: ExRule> Hooks for ExHooks<R> {
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
        for (lpn, list) in self.versions.all() {
            let newest = list.last().expect("a listed page has a version");
            if l2p.get(lpn as usize) != Some(&newest.ppn) {
                return Err(format!("lpn {lpn}: newest version at {} is not the L2P's", newest.ppn));
            }
            for v in list {
                for &x in &v.xids {
                    let held = self.txs.by_xid(x).is_none_or(|t| t.entries.contains_key(&v.ppn));
                    if !held {
                        return Err(format!(
                            "lpn {lpn}: version {} at {} names XID {x}, whose table lacks it",
                            v.version, v.ppn
                        ));
                    }
                }
            }
        }
        Ok(())
    }
}

impl<R: ExRule> GcHooks for ExHooks<R> {
    fn extra_live(&self, ppn: Ppn) -> bool {
        self.versions.extra(ppn)
    }

    fn keeps_extra_pages(&self) -> bool {
        !self.versions.is_empty()
    }

    fn extra_live_count(&self, first: Ppn, end: Ppn) -> u32 {
        self.versions.extra_in(first, end) as u32
    }

    fn on_relocate(&mut self, old: Ppn, new: Ppn, oob: &Oob, _new_erase_count: u32) {
        let Some((copied, meta, seq)) = self.just_copied.take() else {
            return;
        };
        debug_assert_eq!(copied, new, "GC copy {new} reported, {copied} programmed");
        if self.versions.extra(old) {
            self.counters.gc_versions_kept += 1;
        }
        self.versions.relocated(old, new);
        self.txs.relocated(old, new, &meta.entries, oob.lpn, meta.version, seq);
    }

    fn plan_victim(&mut self, victim: BlockId, pages: &[VictimPage], probe: &mut dyn SpareProbe, plan: &mut VictimPlan) {
        let counters = self.counters;
        gc::plan(self, victim, pages, probe, plan);
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

    /// The copy a flag program makes of a page whose partial programs are
    /// spent: the flagged entry as the rule makes it, the others as a GC
    /// copy carries them.
    fn flagged_copy_bytes(&self, ppn: Ppn, oob: &Oob, clear: [u8; FLAG_BYTES]) -> SpareBytes {
        let Some(mut meta) = VersionMeta::of(oob) else {
            return SpareBytes::of(oob);
        };
        for (i, e) in meta.entries.iter_mut().enumerate() {
            *e = match clear[i] {
                0 => Entry {
                    flag: self.copy_flag(e),
                    ..*e
                },
                bits => R::flagged_entry(ppn, *e, bits),
            };
        }
        meta.bytes()
    }
}

/// The root, one byte chosen at format: `max_c`.
impl<R: ExRule> PersistHooks for ExHooks<R> {
    fn root_len_max(&self) -> usize {
        1
    }

    fn root(&self) -> Vec<u8> {
        vec![self.max_c]
    }

    fn checkpoint_section_max(&self) -> usize {
        Verdicts::len_max()
    }

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

    fn packed_protocol_bytes(&self) -> usize {
        format::USED_BYTES
    }

    fn flag_bytes(&self) -> usize {
        format::MAX_ENTRIES
    }
}

impl<R: ExRule> RecoveryHooks for ExHooks<R> {
    fn recover(
        &mut self,
        _ckpt_seq: u64,
        root: &[u8],
        section: &[u8],
        _fell_back: bool,
        _logs: &mut dyn txftl_ftl::LogSource,
    ) -> Result<Vec<RecoveredUpdate>> {
        self.max_c = match root {
            [m] if (1..=format::MAX_ENTRIES as u8).contains(m) => *m,
            other => {
                return Err(txftl_ftl::DeviceError::Corrupted(format!(
                    "{}: the superblock's root is {other:?}, not a max_c of 1 to {}",
                    R::NAME,
                    format::MAX_ENTRIES
                )))
            }
        };
        self.verdicts = Verdicts::decode(R::NAME, section)?;
        Ok(Vec::new())
    }

    fn roll_forward(&self, _oob: &Oob) -> bool {
        false
    }

    /// Every block: no mapping table on flash.
    fn zone_blocks(&self) -> Vec<BlockId> {
        (0..self.geo.block_count()).collect()
    }

    fn recover_scanned(&mut self, _ckpt_seq: u64, pages: ScannedPages<'_>) -> Result<Vec<RecoveredUpdate>> {
        let found = recovery::resolve::<R>(pages, &self.verdicts)?;
        let resume_after = found.max_xid.max(self.verdicts.decided_to);
        let mut fresh = ExHooks::<R>::new(&self.geo, self.max_c, self.canary);
        fresh.txs.resume_after(resume_after);
        fresh.last_version = found.max_version;
        fresh.recovered_commits = found.committed;
        let in_doubt: Vec<u32> = found.uncommitted.iter().filter(|u| u.1 == TxState::InDoubt).map(|u| u.0).collect();
        fresh.recovered_in_doubt = in_doubt.len() as u32;
        // Until settled, the verdicts cover nothing from the first
        // transaction in doubt on: the host may still commit it.
        fresh.verdicts = match in_doubt.first() {
            Some(&first) => {
                let below: Vec<u32> = self.verdicts.uncommitted.range(..first).copied().collect();
                Verdicts::after_mount(first - 1, &below, &BTreeSet::new())
            }
            None => {
                let listed: Vec<u32> = found.uncommitted.iter().map(|u| u.0).collect();
                Verdicts::after_mount(found.max_xid, &listed, &found.torn)
            }
        };
        if !in_doubt.is_empty() {
            fresh.unsettled = Some(Unsettled {
                max_xid: found.max_xid,
                torn: found.torn.clone(),
            });
        }
        for (xid, state, entries) in found.uncommitted {
            fresh.txs.add_uncommitted(xid, state, entries);
        }
        for (lpn, vers) in found.versions {
            fresh.versions.restore(lpn, vers);
        }
        let lpns: Vec<txftl_ftl::Lpn> = fresh.versions.all().map(|(l, _)| l).collect();
        fresh.prune(lpns);
        *self = fresh;
        let mappings = self
            .versions
            .all()
            .map(|(lpn, list)| {
                let v = list.last().expect("listed");
                RecoveredUpdate {
                    seq: found.seqs[&v.ppn],
                    lpn,
                    ppn: v.ppn,
                }
            })
            .collect();
        Ok(mappings)
    }
}

impl<R: ExRule> EventHooks for ExHooks<R> {
    fn on_flags_cleared(&mut self, ppn: Ppn, clear: [u8; FLAG_BYTES]) {
        self.txs.flags_cleared(ppn, clear);
    }

    fn on_erase(&mut self, block: BlockId) {
        self.forget_block(block);
    }

    fn on_program(&mut self, ppn: Ppn, oob: &Oob, done_ns: u64) {
        let Some(meta) = VersionMeta::of(oob) else { return };
        if oob.relocated {
            self.just_copied = Some((ppn, meta, oob.seq));
            return;
        }
        for (i, e) in meta.entries.iter().enumerate() {
            let info = EntryInfo {
                index: i as u8,
                lpn: oob.lpn,
                version: meta.version,
                link: e.link,
                seq: oob.seq,
                flag: e.flag,
            };
            self.txs.programmed(e.xid, ppn, info, done_ns);
        }
        let xids = meta.entries.iter().map(|e| e.xid).collect();
        self.versions.push(
            oob.lpn,
            versions::Ver {
                ppn,
                version: meta.version,
                xids,
                contained: meta.contained,
                whole: meta.whole,
            },
        );
    }
}

/// A transaction's entry graph as CFC's heads read it (`flagcommit::graph`:
/// a page holds one entry of a transaction, so its page names the node).
pub(crate) fn tx_graph(tx: &Tx, is_true: fn(u8) -> bool) -> Vec<crate::flagcommit::graph::TxPage> {
    tx.entries
        .iter()
        .map(|(&ppn, e)| crate::flagcommit::graph::TxPage {
            ppn,
            seq: e.seq,
            link: e.link,
            is_true: is_true(e.flag),
        })
        .collect()
}
