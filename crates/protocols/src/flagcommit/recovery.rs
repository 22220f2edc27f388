//! Recovery (§3.1.3), from the NAND alone: the spare area of every page in
//! use, grouped by XID; the protocol's rule decides each transaction
//! (`FlagRule::committed`); each logical page maps to its committed page of
//! the highest Version (a GC copy keeps its Version: the newest copy wins a
//! tie). XIDs and Versions resume above the largest found, committed or not.

use super::format::PageMeta;
use super::graph::FlagMode;
use super::txs::PageInfo;
use super::verdicts::Verdicts;
use super::FlagRule;
use std::collections::{BTreeMap, BTreeSet};
use txftl_ftl::{Lpn, RecoveredUpdate, Result, ScannedPages};
use txftl_nand::Ppn;

/// One page as the scan found it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScanPage {
    pub ppn: Ppn,
    pub lpn: Lpn,
    pub version: u32,
    pub link: Option<Ppn>,
    pub seq: u64,
    /// The flag as read: from a summary page (`from_summary`), as programmed.
    pub flag: u8,
    pub from_summary: bool,
}

impl ScanPage {
    pub fn info(&self) -> PageInfo {
        PageInfo {
            lpn: self.lpn,
            version: self.version,
            link: self.link,
            seq: self.seq,
            flag: self.flag,
        }
    }
}

/// What the scan decided.
pub struct Found {
    pub max_xid: u32,
    /// The highest Version on flash.
    pub max_version: u32,
    pub committed: u32,
    /// Transactions not committed, with their pages (kept in the table, aborted).
    pub uncommitted: Vec<(u32, Vec<(Ppn, PageInfo)>)>,
    /// Of those decided by their flags, the torn commits
    /// (`FlagRule::RECORDS_TORN_COMMITS`): some page reads TRUE.
    pub torn: BTreeSet<u32>,
    pub mappings: Vec<RecoveredUpdate>,
}

/// `verdicts`: what the last mount decided, as the checkpoint records it;
/// a transaction it covers is decided by it, not by its flags.
pub fn resolve<R: FlagRule>(pages: ScannedPages<'_>, mode: FlagMode, verdicts: &Verdicts) -> Result<Found> {
    let mut by_xid: BTreeMap<u32, Vec<ScanPage>> = BTreeMap::new();
    let mut live = pages.for_each(|p| {
        let Some(meta) = PageMeta::of(&p.oob) else { return };
        by_xid.entry(meta.xid).or_default().push(ScanPage {
            ppn: p.ppn,
            lpn: p.oob.lpn,
            version: meta.version,
            link: meta.link,
            seq: p.oob.seq,
            flag: meta.flag,
            from_summary: p.from_summary,
        });
    })?;
    let mut best: BTreeMap<Lpn, (u32, u64, Ppn)> = BTreeMap::new();
    let mut found = Found {
        max_xid: by_xid.keys().next_back().copied().unwrap_or(0),
        max_version: 0,
        committed: 0,
        uncommitted: Vec::new(),
        torn: BTreeSet::new(),
        mappings: Vec::new(),
    };
    for (xid, mut tx_pages) in by_xid {
        found.max_version = tx_pages.iter().map(|p| p.version).fold(found.max_version, u32::max);
        let recorded = verdicts.decide(xid);
        if recorded.is_none() {
            // A summary holds the flags as programmed: the pages whose flag
            // decides, read again as they are now.
            for i in R::stale_flags(&tx_pages, mode) {
                debug_assert!(tx_pages[i].from_summary, "a flag read live is read again");
                if let Some(m) = live.live_oob(tx_pages[i].ppn)?.as_ref().and_then(PageMeta::of) {
                    tx_pages[i].flag = m.flag;
                    tx_pages[i].from_summary = false;
                }
            }
        }
        if !recorded.unwrap_or_else(|| R::committed(&tx_pages, mode)) {
            if recorded.is_none() && R::RECORDS_TORN_COMMITS && tx_pages.iter().any(|p| R::is_true(p.flag)) {
                found.torn.insert(xid);
            }
            found.uncommitted.push((xid, tx_pages.iter().map(|p| (p.ppn, p.info())).collect()));
            continue;
        }
        found.committed += 1;
        for p in tx_pages {
            let key = (p.version, p.seq, p.ppn);
            let e = best.entry(p.lpn).or_insert(key);
            if key > *e {
                *e = key;
            }
        }
    }
    found.mappings = best
        .into_iter()
        .map(|(lpn, (_, seq, ppn))| RecoveredUpdate { seq, lpn, ppn })
        .collect();
    Ok(found)
}
