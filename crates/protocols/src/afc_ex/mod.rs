//! AFC_ex, the extended abort-based flag commit (On et al., IEEE TKDE,
//! §4.2-4.3): AFC (`crate::afc`) per pending record. A transaction's first
//! entry is programmed FALSE ("11"), its others TRUE ("10"), each linking
//! to the page of its previous entry; commit flips every entry of it that
//! reads FALSE (its first, and that one's copies) with a partial program;
//! recovery finds it committed iff no entry of it reads FALSE, counting
//! each (logical page, Version)'s newest copy only. The shared parts are
//! `crate::flagcommit_ex`'s; this folder holds AFC_ex's rule:
//!
//! - The first entry is done before any later entry of its transaction is
//!   programmed (no TRUE entry on flash without its FALSE).
//! - GC (Fig. 7, per entry): a live version's copy carries every aborted
//!   transaction's entry FALSE ("00"); before a dead version holding an
//!   aborted transaction's entry is reclaimed, if no entry of it left
//!   after the release reads FALSE and no copy of this victim carries one,
//!   its newest entry left gets FALSE (one partial program). A committed
//!   transaction costs GC nothing.
//!
//! The canary `afc-ex-canary` copies a live version's entries with their
//! flags as programmed: an aborted transaction's TRUE entry in a copy, its
//! FALSE entry in a dead version released, and recovery brings it back.

mod entry;

pub use entry::ENTRY;

use crate::flagcommit::format::{afc_true, AFC_FALSE, AFC_FALSE_AGAIN, AFC_TRUE, FALSE_BIT};
use crate::flagcommit_ex::format::Entry;
use crate::flagcommit_ex::gc::{DeadPlan, FlagPlan};
use crate::flagcommit_ex::recovery::ScanEntry;
use crate::flagcommit_ex::txs::{EntryInfo, Tx, TxState};
use crate::flagcommit_ex::{ExDevice, ExHooks, ExRule};
use std::collections::{BTreeMap, BTreeSet};
use txftl_ftl::{Lpn, SpareProbe};
use txftl_nand::Ppn;

/// AFC_ex's rule.
#[derive(Clone, Debug)]
pub struct AfcExRule;

pub type AfcEx = ExDevice<AfcExRule>;
pub type AfcExHooks = ExHooks<AfcExRule>;

/// Each (logical page, Version)'s newest copy among `entries`: (seq, page, flag).
fn newest_copies<'a>(entries: impl Iterator<Item = (Ppn, &'a EntryInfo)>) -> BTreeMap<(Lpn, u32), (u64, Ppn, u8)> {
    let mut nodes: BTreeMap<(Lpn, u32), (u64, Ppn, u8)> = BTreeMap::new();
    for (ppn, e) in entries {
        let n = nodes.entry((e.lpn, e.version)).or_insert((e.seq, ppn, e.flag));
        if e.seq > n.0 {
            *n = (e.seq, ppn, e.flag);
        }
    }
    nodes
}

impl ExRule for AfcExRule {
    const NAME: &'static str = "afc-ex";
    const CANARY: &'static str = "afc-ex-canary";
    const PLAN_READS_SPARES: bool = false;
    const RECORDS_TORN_COMMITS: bool = false;
    const FIRST_ENTRY_FIRST: bool = true;

    fn written_flag(first: bool) -> u8 {
        if first {
            AFC_FALSE
        } else {
            AFC_TRUE
        }
    }

    fn is_true(flag: u8) -> bool {
        afc_true(flag)
    }

    fn commit_flags(tx: &Tx, _releasing: &dyn Fn(Ppn) -> bool) -> Vec<Ppn> {
        newest_copies(tx.entries.iter().map(|(&p, e)| (p, e)))
            .into_values()
            .filter(|&(_, _, flag)| !afc_true(flag))
            .map(|(_, ppn, _)| ppn)
            .collect()
    }

    fn committed(entries: &[ScanEntry]) -> bool {
        let infos: Vec<(Ppn, EntryInfo)> = entries.iter().map(|e| (e.ppn, e.info())).collect();
        newest_copies(infos.iter().map(|(p, e)| (*p, e))).values().all(|&(_, _, flag)| afc_true(flag))
    }

    fn committed_in_copy(flag: u8, _canary: bool) -> u8 {
        flag
    }

    fn aborted_in_copy(flag: u8, canary: bool) -> u8 {
        if canary {
            flag
        } else {
            AFC_FALSE_AGAIN
        }
    }

    fn flagged_entry(_original: Ppn, e: Entry, clear: u8) -> Entry {
        Entry {
            flag: e.flag & !clear,
            ..e
        }
    }

    /// Fig. 7 per entry: an aborted transaction that would be left with no
    /// FALSE gets one on its newest entry left.
    fn plan_dead(h: &mut ExHooks<Self>, ctx: DeadPlan<'_>, probe: &mut dyn SpareProbe, plan: &mut FlagPlan) {
        let geo = h.geo;
        let aborted: BTreeSet<u32> = ctx
            .dead
            .iter()
            .flat_map(|(_, m, _)| m.entries.iter().map(|e| e.xid))
            .filter(|&x| !ctx.live_xids.contains(&x) && !h.verdicts.covers(x))
            .filter(|&x| h.txs.by_xid(x).is_some_and(|t| t.state == TxState::Aborted))
            .collect();
        for xid in aborted {
            let t = h.txs.by_xid(xid).expect("filtered above");
            let left = t
                .entries
                .iter()
                .filter(|(&p, _)| geo.block_of(p) != ctx.victim && probe.outlives_victim(p));
            let nodes = newest_copies(left.map(|(&p, e)| (p, e)));
            if nodes.is_empty() || nodes.values().any(|&(_, _, flag)| !afc_true(flag)) {
                continue;
            }
            let (_, newest, _) = *nodes.values().max().expect("not empty");
            let index = t.entries[&newest].index as usize;
            plan.add(newest, index, FALSE_BIT);
        }
    }
}
