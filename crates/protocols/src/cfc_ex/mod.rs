//! CFC_ex, the extended commit-based flag commit (On et al., IEEE TKDE,
//! §4.2-4.3, Fig. 11): CFC (`crate::cfc`) per pending record. A
//! transaction's entries are programmed FALSE, each linking to the page of
//! its previous entry; commit clears one bit of the entry at every head of
//! the transaction's entry graph (`flagcommit::graph`, page-based: a page
//! holds one entry of a transaction); recovery finds it committed iff every
//! head reads TRUE. The shared parts are `crate::flagcommit_ex`'s; this
//! folder holds CFC_ex's rule:
//!
//! - GC (Fig. 5, per entry): before a dead version is reclaimed, every
//!   committed transaction's entry in it passes its TRUE to the entry it
//!   links to (a partial program on that page, several entries of one page
//!   in one program). A live version's copy carries every committed
//!   transaction's entry TRUE (the copy is a head: nothing links to it)
//!   and every aborted one's FALSE.
//! - A flag program that finds its page spent copies the page, the flagged
//!   entry TRUE and linking to the original (the copy is the head).
//!
//! The canary `cfc-ex-canary` copies a live version's entries with their
//! flags as programmed: a committed transaction's entry mid-chain is FALSE
//! in its copy, a FALSE head once the original's block is released, and
//! recovery drops the transaction.

mod entry;

pub use entry::ENTRY;

use crate::flagcommit::format::{cfc_true, CFC_FALSE, CFC_TRUE, COMMIT_BIT};
use crate::flagcommit::graph::{sources, FlagMode, TxPage};
use crate::flagcommit_ex::format::{Entry, VersionMeta};
use crate::flagcommit_ex::gc::{DeadPlan, FlagPlan};
use crate::flagcommit_ex::recovery::ScanEntry;
use crate::flagcommit_ex::txs::Tx;
use crate::flagcommit_ex::versions::Decided;
use crate::flagcommit_ex::{tx_graph, ExDevice, ExHooks, ExRule};
use std::collections::BTreeSet;
use txftl_ftl::SpareProbe;
use txftl_nand::Ppn;

/// CFC_ex's rule.
#[derive(Clone, Debug)]
pub struct CfcExRule;

pub type CfcEx = ExDevice<CfcExRule>;
pub type CfcExHooks = ExHooks<CfcExRule>;

impl ExRule for CfcExRule {
    const NAME: &'static str = "cfc-ex";
    const CANARY: &'static str = "cfc-ex-canary";
    const PLAN_READS_SPARES: bool = true;
    const RECORDS_TORN_COMMITS: bool = true;
    const FIRST_ENTRY_FIRST: bool = false;

    fn written_flag(_first: bool) -> u8 {
        CFC_FALSE
    }

    fn is_true(flag: u8) -> bool {
        cfc_true(flag)
    }

    /// A TRUE on every head without one, of the entries on flash now and of
    /// those left once the victims GC planned while the transaction was
    /// open are released.
    fn commit_flags(tx: &Tx, releasing: &dyn Fn(Ppn) -> bool) -> Vec<Ppn> {
        let pages = tx_graph(tx, cfc_true);
        let mut flags: BTreeSet<Ppn> = sources(&pages, FlagMode::Page)
            .into_iter()
            .filter(|s| !s.is_true)
            .map(|s| s.newest)
            .collect();
        let staying: Vec<TxPage> = pages
            .iter()
            .filter(|p| !releasing(p.ppn))
            .map(|p| TxPage {
                is_true: p.is_true || flags.contains(&p.ppn),
                ..*p
            })
            .collect();
        flags.extend(sources(&staying, FlagMode::Page).into_iter().filter(|s| !s.is_true).map(|s| s.newest));
        flags.into_iter().collect()
    }

    fn committed(entries: &[ScanEntry]) -> bool {
        let pages: Vec<TxPage> = entries
            .iter()
            .map(|e| TxPage {
                ppn: e.ppn,
                seq: e.seq,
                link: e.link,
                is_true: cfc_true(e.flag),
            })
            .collect();
        let heads = sources(&pages, FlagMode::Page);
        !heads.is_empty() && heads.iter().all(|s| s.is_true)
    }

    fn committed_in_copy(flag: u8, canary: bool) -> u8 {
        if canary {
            flag
        } else {
            CFC_TRUE
        }
    }

    fn aborted_in_copy(_flag: u8, _canary: bool) -> u8 {
        CFC_FALSE
    }

    fn flagged_entry(original: Ppn, e: Entry, clear: u8) -> Entry {
        Entry {
            link: Some(original),
            flag: e.flag & !clear,
            ..e
        }
    }

    /// Each committed transaction's entry in a dead version: the entry it
    /// links to, outside the victim and outliving it, of the same XID and
    /// older, gets TRUE unless it reads TRUE already.
    fn plan_dead(h: &mut ExHooks<Self>, ctx: DeadPlan<'_>, probe: &mut dyn SpareProbe, plan: &mut FlagPlan) {
        let geo = h.geo;
        for (_, meta, seq) in ctx.dead {
            for e in &meta.entries {
                if h.decided(e.xid) != Decided::Committed || h.verdicts.covers(e.xid) {
                    continue;
                }
                let Some(t) = e.link.filter(|&t| geo.block_of(t) != ctx.victim) else {
                    continue;
                };
                if !probe.outlives_victim(t) {
                    continue;
                }
                let Some(oob) = probe.read(t) else { continue };
                let Some(target) = VersionMeta::of(&oob) else { continue };
                let Some(i) = target.index_of(e.xid) else { continue };
                if oob.seq < *seq && !cfc_true(target.entries[i].flag) {
                    plan.add(t, i, COMMIT_BIT);
                }
            }
        }
    }
}
