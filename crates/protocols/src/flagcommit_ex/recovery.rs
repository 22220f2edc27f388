//! Recovery, from the NAND alone: the spare area of every page in use;
//! each XID decided by a recorded verdict or by its entries' flags (the
//! rule's `committed`); each logical page's versions, one copy each (the
//! newest copy of a Version), with those no reader needs dropped; the
//! newest mapped. A transaction the flags find not committed is left in
//! doubt (the host's restart may commit it: `RecordTx::commit_in_doubt`),
//! one a verdict found not committed is aborted. XIDs and Versions resume
//! above the largest found.

use super::format::VersionMeta;
use super::txs::{EntryInfo, TxState};
use super::versions::Ver;
use super::ExRule;
use crate::flagcommit::verdicts::Verdicts;
use std::collections::{BTreeMap, BTreeSet};
use txftl_ftl::{Lpn, Result, ScannedPages};
use txftl_nand::Ppn;

/// One entry as the scan found it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScanEntry {
    pub ppn: Ppn,
    pub lpn: Lpn,
    pub version: u32,
    pub seq: u64,
    pub index: u8,
    pub link: Option<Ppn>,
    pub flag: u8,
}

impl ScanEntry {
    pub fn info(&self) -> EntryInfo {
        EntryInfo {
            index: self.index,
            lpn: self.lpn,
            version: self.version,
            link: self.link,
            seq: self.seq,
            flag: self.flag,
        }
    }
}

/// A transaction not committed: its XID, state and entries (page, entry).
pub type Uncommitted = (u32, TxState, Vec<(Ppn, EntryInfo)>);

/// What the scan decided.
pub struct Found {
    pub max_xid: u32,
    pub max_version: u32,
    pub committed: u32,
    /// Transactions not committed: in doubt, or aborted by a verdict; with
    /// their entries.
    pub uncommitted: Vec<Uncommitted>,
    /// Of those the flags decided, CFC_ex's torn commits (an entry reads TRUE).
    pub torn: BTreeSet<u32>,
    /// Each logical page's versions, one copy each.
    pub versions: BTreeMap<Lpn, Vec<Ver>>,
    /// Every version's sequence number.
    pub seqs: BTreeMap<Ppn, u64>,
}

pub fn resolve<R: ExRule>(pages: ScannedPages<'_>, verdicts: &Verdicts) -> Result<Found> {
    let mut by_xid: BTreeMap<u32, Vec<ScanEntry>> = BTreeMap::new();
    // (lpn, Version) -> its newest copy and its sequence number.
    let mut copies: BTreeMap<(Lpn, u32), (u64, Ver)> = BTreeMap::new();
    let mut max_version = 0;
    pages.for_each(|p| {
        let Some(meta) = VersionMeta::of(&p.oob) else { return };
        debug_assert!(!p.from_summary, "the extended protocols write no summary pages");
        max_version = max_version.max(meta.version);
        for (i, e) in meta.entries.iter().enumerate() {
            by_xid.entry(e.xid).or_default().push(ScanEntry {
                ppn: p.ppn,
                lpn: p.oob.lpn,
                version: meta.version,
                seq: p.oob.seq,
                index: i as u8,
                link: e.link,
                flag: e.flag,
            });
        }
        let ver = Ver {
            ppn: p.ppn,
            version: meta.version,
            xids: meta.entries.iter().map(|e| e.xid).collect(),
            contained: meta.contained,
            whole: meta.whole,
        };
        let c = copies.entry((p.oob.lpn, meta.version)).or_insert((p.oob.seq, ver.clone()));
        if p.oob.seq >= c.0 {
            *c = (p.oob.seq, ver);
        }
    })?;
    let mut found = Found {
        max_xid: by_xid.keys().next_back().copied().unwrap_or(0),
        max_version,
        committed: 0,
        uncommitted: Vec::new(),
        torn: BTreeSet::new(),
        versions: BTreeMap::new(),
        seqs: BTreeMap::new(),
    };
    for (xid, entries) in by_xid {
        let recorded = verdicts.decide(xid);
        if recorded.unwrap_or_else(|| R::committed(&entries)) {
            found.committed += 1;
            continue;
        }
        let state = if recorded.is_some() {
            TxState::Aborted
        } else {
            if R::RECORDS_TORN_COMMITS && entries.iter().any(|e| R::is_true(e.flag)) {
                found.torn.insert(xid);
            }
            TxState::InDoubt
        };
        found
            .uncommitted
            .push((xid, state, entries.iter().map(|e| (e.ppn, e.info())).collect()));
    }
    for ((lpn, _), (seq, ver)) in copies {
        found.seqs.insert(ver.ppn, seq);
        found.versions.entry(lpn).or_default().push(ver);
    }
    Ok(found)
}
