//! AFC, Flag Commit's abort-based flag commit (On et al., IEEE TKDE, §3.2):
//! a transaction is committed iff none of its pages holds FALSE (Def. 3.3).
//! Its first page is programmed FALSE ("11"), the others TRUE ("10"), each
//! linking to the transaction's previous page; commit flips the first page
//! to "10", always with a partial program (§3.3: the flip comes after every
//! page is on flash). The shared parts (format, device, table, recovery)
//! are `crate::flagcommit`'s; this folder holds AFC's rule:
//!
//! - Decided per XID (digest A8.3; XIDs are never reused): committed iff
//!   no page of the transaction on flash reads FALSE, counting for each
//!   (logical page, Version) its newest copy only (a copy GC made of an open
//!   transaction's page, or of a page whose partial programs were spent,
//!   supersedes its original). Every flag is read: AFC's recovery reads more
//!   than CFC's (Fig. 13b).
//! - The first page is done before any later page of its transaction is
//!   programmed: a cut at an instant cannot leave TRUE pages whose FALSE
//!   first page was lost.
//! - An open transaction's FALSE pages stay live until commit (GC copies
//!   them with their flag, even a page a later write of the transaction
//!   replaced): GC never loses an open transaction's last FALSE.
//! - GC (Fig. 7): before an aborted transaction's pages are reclaimed, if
//!   none of its pages left on flash after the victim's release would read
//!   FALSE, its newest such page gets FALSE ("10" -> "00", one partial
//!   program). A committed transaction costs GC nothing. Per-XID decisions
//!   need no FALSE per subchain (Fig. 7b's added FALSE), only one per
//!   transaction.
//!
//! The canary `afc-canary` does not move the FALSE (Fig. 7a skipped): once
//! the victim holding an aborted transaction's FALSE page is released, its
//! pages left on flash read all TRUE and recovery brings them back.

mod entry;

pub use entry::ENTRY;

use crate::flagcommit::format::{afc_true, clear, PageMeta, AFC_FALSE, AFC_TRUE, FALSE_BIT};
use crate::flagcommit::graph::FlagMode;
use crate::flagcommit::txs::{PageInfo, Tx, TxState};
use crate::flagcommit::{FlagDevice, FlagHooks, FlagRule};
use std::collections::{BTreeMap, BTreeSet};
use txftl_ftl::{BlockId, Lpn, SpareProbe, VictimPage, VictimPlan};
use txftl_nand::Ppn;

/// AFC's rule.
#[derive(Clone, Debug)]
pub struct AfcRule;

/// The AFC device.
pub type Afc = FlagDevice<AfcRule>;
pub type AfcHooks = FlagHooks<AfcRule>;

/// Each (logical page, Version)'s newest copy among `pages`: (seq, page, flag).
fn newest_copies<'a>(pages: impl Iterator<Item = (Ppn, &'a PageInfo)>) -> BTreeMap<(Lpn, u32), (u64, Ppn, u8)> {
    let mut nodes: BTreeMap<(Lpn, u32), (u64, Ppn, u8)> = BTreeMap::new();
    for (ppn, p) in pages {
        let e = nodes.entry((p.lpn, p.version)).or_insert((p.seq, ppn, p.flag));
        if p.seq > e.0 {
            *e = (p.seq, ppn, p.flag);
        }
    }
    nodes
}

impl FlagRule for AfcRule {
    const NAME: &'static str = "afc";
    const CANARY: &'static str = "afc-canary";
    const COMMITTED_FLAG: u8 = AFC_TRUE;
    const KEEPS_FALSE_PAGES: bool = true;
    const RECORDS_TORN_COMMITS: bool = false;
    const FIRST_PAGE_FIRST: bool = true;

    fn written_flag(first: bool, _end: bool) -> u8 {
        if first {
            AFC_FALSE
        } else {
            AFC_TRUE
        }
    }

    fn is_true(flag: u8) -> bool {
        afc_true(flag)
    }

    /// The newest copy of each page reading FALSE ("11": its first page, and
    /// that page's GC copies).
    fn commit_flags(tx: &Tx, _mode: FlagMode, _releasing: &dyn Fn(Ppn) -> bool) -> Vec<Ppn> {
        newest_copies(tx.pages.iter().map(|(&p, i)| (p, i)))
            .into_values()
            .filter(|&(_, _, flag)| !afc_true(flag))
            .map(|(_, ppn, _)| ppn)
            .collect()
    }

    fn committed(pages: &[crate::flagcommit::recovery::ScanPage], _mode: FlagMode) -> bool {
        let infos: Vec<(Ppn, PageInfo)> = pages.iter().map(|p| (p.ppn, p.info())).collect();
        newest_copies(infos.iter().map(|(p, i)| (*p, i))).values().all(|&(_, _, flag)| afc_true(flag))
    }

    /// The newest copy of every page, if read from a summary: its flag may
    /// have been flipped ("11" to "10") or moved ("10" to "00") since. AFC
    /// reads every flag (Fig. 13b).
    fn stale_flags(pages: &[crate::flagcommit::recovery::ScanPage], _mode: FlagMode) -> Vec<usize> {
        let mut newest: BTreeMap<(Lpn, u32), usize> = BTreeMap::new();
        for (i, p) in pages.iter().enumerate() {
            let e = newest.entry((p.lpn, p.version)).or_insert(i);
            if p.seq > pages[*e].seq {
                *e = i;
            }
        }
        newest.into_values().filter(|&i| pages[i].from_summary).collect()
    }

    fn flagged_copy(_ppn: Ppn, meta: PageMeta, clear: u8) -> PageMeta {
        PageMeta {
            flag: meta.flag & !clear,
            ..meta
        }
    }

    /// Fig. 7: committed transactions cost GC nothing, so the victim's
    /// spares are not read: the aborted transactions with a page in it come
    /// from the transaction table, which holds every page of theirs on
    /// flash (a mount adds them from its scan).
    const PLAN_READS_SPARES: bool = false;

    fn plan(h: &mut FlagHooks<Self>, victim: BlockId, pages: &[VictimPage], probe: &mut dyn SpareProbe, plan: &mut VictimPlan) {
        let geo = h.geo;
        debug_assert!(pages.iter().all(|p| p.oob.is_none()), "AFC plans without reading the victim");
        let first = geo.ppn(victim, 0);
        let aborted: BTreeSet<u32> = h
            .txs
            .pages_in(first, first + geo.pages_per_block)
            .filter(|(_, t)| t.state == TxState::Aborted && !h.verdicts.covers(t.xid))
            .map(|(_, t)| t.xid)
            .collect();
        for xid in aborted {
            let t = h.txs.by_xid(xid).expect("filtered above");
            let left = t.pages.iter().filter(|(&p, _)| geo.block_of(p) != victim && probe.outlives_victim(p));
            let nodes = newest_copies(left.map(|(&p, i)| (p, i)));
            if nodes.is_empty() || nodes.values().any(|&(_, _, flag)| !afc_true(flag)) {
                continue; // nothing left after the release, or a FALSE left
            }
            if h.canary {
                continue; // Fig. 7a skipped
            }
            let (_, newest, _) = *nodes.values().max().expect("not empty");
            plan.flag_programs.push((newest, clear(FALSE_BIT)));
        }
    }
}
