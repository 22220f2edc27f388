//! CFC, Flag Commit's commit-based flag commit (On et al., IEEE TKDE, §3.1):
//! a transaction is committed iff one of its pages holds TRUE (Def. 3.1).
//! Its pages are programmed FALSE, each linking to the transaction's
//! previous page; commit clears one bit on the last page, or programs the
//! last page TRUE at once when `write_end` carries it (§3.3's buffered last
//! page). The shared parts (format, device, table, recovery) are
//! `crate::flagcommit`'s; this folder holds CFC's rule:
//!
//! - Heads: pages (clusters, with block-based flags) no other links to
//!   (`flagcommit::graph`). GC copying an open transaction's page makes the
//!   copy a head; commit programs TRUE on every head without one (§3.1.3's
//!   subchain heads), the newest page of each.
//! - Recovery: committed iff every head holds TRUE (a head FALSE beside a
//!   TRUE one is a cut between a commit's flags: §3.1.3 step 2).
//! - GC (Fig. 5): before a committed transaction's page is reclaimed, the
//!   page it links to gets TRUE (Case 1, the page was the TRUE head; Case 2,
//!   a page mid-chain, whose reclaim splits the chain): one partial program
//!   each, issued before the victim is released. A live page's copy is
//!   programmed TRUE and keeps its link. With block-based flags (§3.4, Fig.
//!   9) the links leaving a victim's cluster go into the copies of its live
//!   pages instead, and no flag is programmed for them.
//! - Aborted and open transactions' pages need nothing: their heads are
//!   FALSE, and an aborted XID is never used again.
//!
//! A flag program that finds its page's partial programs spent copies the
//! page with TRUE, the copy linking to the original: the copy is the head.
//!
//! The canary `cfc-canary` moves the flag of a reclaimed TRUE head only
//! (Fig. 5a), not of a page mid-chain (Fig. 5b): once such a page's block is
//! released, the rest of its committed chain is a FALSE head and recovery
//! drops the transaction.

mod entry;

pub use entry::ENTRY;

use crate::flagcommit::format::{cfc_true, clear, PageMeta, CFC_FALSE, CFC_TRUE, COMMIT_BIT};
use crate::flagcommit::graph::{sources, sources_with_members, FlagMode, TxPage};
use crate::flagcommit::recovery::ScanPage;
use crate::flagcommit::txs::Tx;
use crate::flagcommit::{FlagDevice, FlagHooks, FlagRule};
use std::collections::{BTreeMap, BTreeSet};
use txftl_ftl::{BlockId, SpareProbe, VictimPage, VictimPlan};
use txftl_nand::Ppn;

/// CFC's rule.
#[derive(Clone, Debug)]
pub struct CfcRule;

/// The CFC device.
pub type Cfc = FlagDevice<CfcRule>;
pub type CfcHooks = FlagHooks<CfcRule>;

/// A committed transaction's pages in one victim, as planning reads them.
struct InVictim {
    /// Its live pages (copied): page, fields.
    live: Vec<(Ppn, PageMeta)>,
    /// Links leaving the victim: target -> (the newest linking page's
    /// sequence number, whether a dead page links there, whether a dead
    /// TRUE page does).
    links: BTreeMap<Ppn, (u64, bool, bool)>,
}

impl FlagRule for CfcRule {
    const NAME: &'static str = "cfc";
    const CANARY: &'static str = "cfc-canary";
    const COMMITTED_FLAG: u8 = CFC_TRUE;
    const KEEPS_FALSE_PAGES: bool = false;
    const RECORDS_TORN_COMMITS: bool = true;
    const FIRST_PAGE_FIRST: bool = false;

    fn written_flag(_first: bool, end: bool) -> u8 {
        if end {
            CFC_TRUE
        } else {
            CFC_FALSE
        }
    }

    fn is_true(flag: u8) -> bool {
        cfc_true(flag)
    }

    /// A TRUE on every head without one, of the pages on flash now and of
    /// those left once the victims GC planned while the transaction was open
    /// are released (a dead page there may be all that links to a page
    /// beyond: its head then).
    fn commit_flags(tx: &Tx, mode: FlagMode, releasing: &dyn Fn(Ppn) -> bool) -> Vec<Ppn> {
        let pages: Vec<TxPage> = tx
            .pages
            .iter()
            .map(|(&ppn, p)| TxPage {
                ppn,
                seq: p.seq,
                link: p.link,
                is_true: cfc_true(p.flag),
            })
            .collect();
        let mut flags: BTreeSet<Ppn> = sources(&pages, mode).into_iter().filter(|s| !s.is_true).map(|s| s.newest).collect();
        // The pages that stay, with the flags just chosen counted TRUE.
        let staying: Vec<TxPage> = pages
            .iter()
            .filter(|p| !releasing(p.ppn))
            .map(|p| TxPage {
                is_true: p.is_true || flags.contains(&p.ppn),
                ..*p
            })
            .collect();
        flags.extend(sources(&staying, mode).into_iter().filter(|s| !s.is_true).map(|s| s.newest));
        flags.into_iter().collect()
    }

    fn committed(pages: &[ScanPage], mode: FlagMode) -> bool {
        let heads = sources(&graph_of(pages), mode);
        !heads.is_empty() && heads.iter().all(|s| s.is_true)
    }

    /// The pages from a summary of every head the summary shows without a
    /// TRUE (a TRUE only ever appears later: bits are only cleared).
    fn stale_flags(pages: &[ScanPage], mode: FlagMode) -> Vec<usize> {
        // Only pages read from a summary can be stale: without one, no graph.
        if !pages.iter().any(|p| p.from_summary) {
            return Vec::new();
        }
        let heads = sources_with_members(&graph_of(pages), mode);
        let mut stale = Vec::new();
        for members in heads.into_iter().filter(|(s, _)| !s.is_true).map(|(_, m)| m) {
            stale.extend(members.into_iter().filter(|&i| pages[i].from_summary));
        }
        stale
    }

    fn flagged_copy(ppn: Ppn, meta: PageMeta, clear: u8) -> PageMeta {
        PageMeta {
            link: Some(ppn),
            flag: meta.flag & !clear,
            ..meta
        }
    }

    /// A reclaimed committed page's Link and flag are on flash only.
    const PLAN_READS_SPARES: bool = true;

    fn plan(h: &mut FlagHooks<Self>, victim: BlockId, pages: &[VictimPage], probe: &mut dyn SpareProbe, plan: &mut VictimPlan) {
        let block_flags = matches!(h.mode, FlagMode::Block { .. });
        for (xid, v) in committed_in_victim(h, victim, pages) {
            // Page-based: each copy is TRUE and keeps its link; a target only
            // dead pages link to gets TRUE.
            let page_needed: Vec<Ppn> = v.links.iter().filter(|(_, l)| l.1).map(|(&t, _)| t).collect();
            let page_needed: Vec<Ppn> = page_needed
                .into_iter()
                .filter(|t| !v.live.iter().any(|(_, m)| m.link == Some(*t)))
                .collect();
            let needed = if block_flags && !v.live.is_empty() {
                let rest = fold_into_copies(&v, plan);
                h.counters.gc_flags_folded += page_needed.len().saturating_sub(rest.len()) as u64;
                rest
            } else {
                for &(ppn, m) in &v.live {
                    plan.copies.insert(ppn, PageMeta { flag: CFC_TRUE, ..m }.bytes());
                }
                page_needed
            };
            for t in needed {
                let (src_seq, _, from_true) = v.links[&t];
                // The canary moves a TRUE head's flag only (Fig. 5a).
                if h.canary && !from_true {
                    continue;
                }
                if !probe.outlives_victim(t) {
                    continue; // released by the same checkpoint
                }
                let target = probe.read(t).and_then(|o| PageMeta::of(&o).map(|m| (m, o.seq)));
                if let Some((m, seq)) = target {
                    if m.xid == xid && seq < src_seq && !cfc_true(m.flag) {
                        plan.flag_programs.push((t, clear(COMMIT_BIT)));
                    }
                }
            }
        }
    }
}

/// A transaction's scanned pages as CFC's graph reads them.
fn graph_of(pages: &[ScanPage]) -> Vec<TxPage> {
    let page = |p: &ScanPage| TxPage {
        ppn: p.ppn,
        seq: p.seq,
        link: p.link,
        is_true: cfc_true(p.flag),
    };
    pages.iter().map(page).collect()
}

/// Committed transactions' pages in `victim`, by XID (a transaction not in
/// the table is committed).
fn committed_in_victim(h: &FlagHooks<CfcRule>, victim: BlockId, pages: &[VictimPage]) -> BTreeMap<u32, InVictim> {
    let geo = h.geo;
    let mut by_xid: BTreeMap<u32, InVictim> = BTreeMap::new();
    for p in pages {
        let Some((oob, m)) = p.oob.and_then(|o| PageMeta::of(&o).map(|m| (o, m))) else {
            continue;
        };
        // Open and aborted transactions need nothing; one `write_end`
        // committed on flash is committed. A recorded verdict decides a
        // transaction whatever its flags say (`flagcommit::verdicts`).
        if h.txs.by_xid(m.xid).is_some_and(|t| !t.ended) || h.verdicts.covers(m.xid) {
            continue;
        }
        let v = by_xid.entry(m.xid).or_insert_with(|| InVictim {
            live: Vec::new(),
            links: BTreeMap::new(),
        });
        if p.live {
            v.live.push((p.ppn, m));
        }
        if let Some(t) = m.link.filter(|&t| geo.block_of(t) != victim) {
            let e = v.links.entry(t).or_insert((0, false, false));
            e.0 = e.0.max(oob.seq);
            e.1 |= !p.live;
            e.2 |= !p.live && cfc_true(m.flag);
        }
    }
    by_xid
}

/// §3.4: the links leaving a victim's cluster go into its live pages'
/// copies (each TRUE; a copy keeps its own link if it leaves the victim,
/// else takes one not yet carried). Returns the targets no copy carries.
fn fold_into_copies(v: &InVictim, plan: &mut VictimPlan) -> Vec<Ppn> {
    let mut carried: BTreeSet<Ppn> = v.live.iter().filter_map(|(_, m)| m.link).filter(|t| v.links.contains_key(t)).collect();
    let mut spare = v.links.keys().filter(|t| !carried.contains(t)).copied().collect::<Vec<_>>().into_iter();
    for &(ppn, m) in &v.live {
        let own = m.link.filter(|t| v.links.contains_key(t));
        let link = own.or_else(|| {
            let t = spare.next();
            if let Some(t) = t {
                carried.insert(t);
            }
            t
        });
        plan.copies.insert(ppn, PageMeta { link, flag: CFC_TRUE, ..m }.bytes());
    }
    v.links.keys().filter(|t| !carried.contains(t)).copied().collect()
}
