//! Möbius's recovery (§III-C, §III-D, §III-F): the active ALA, read newest
//! first back to the checkpoint; which of its transactions committed; their
//! items as L2P updates in ALA order; then the last dynamic transaction of
//! the head list, if no inode decided it: committed if its chain is closed.

use super::format::{ChainPage, HeadRecord, Inode, InodeKind, TxPage};
use std::collections::BTreeSet;
use txftl_ftl::{LogSource, Ppn, RecoveredUpdate, Result};

/// One inode of the active ALA.
pub struct FoundInode {
    /// Its ALA page's sequence number and place.
    pub seq: u64,
    pub ppn: Ppn,
    pub inode: Inode,
}

/// The active ALA, oldest first.
pub struct ActiveAla {
    pub inodes: Vec<FoundInode>,
    /// The largest transaction id any of them names.
    pub max_tx: u32,
}

/// Reads every intact ALA page written after the checkpoint `ckpt_seq`
/// (the active ALA: the inodes before it are folded into the checkpoint).
pub fn read_active_ala(ckpt_seq: u64, logs: &mut dyn LogSource) -> Result<ActiveAla> {
    let mut inodes = Vec::new();
    let mut max_tx = 0;
    while let Some(page) = logs.prev_page(0)? {
        if page.seq <= ckpt_seq {
            break;
        }
        let inode = Inode::decode(&page.bytes)?;
        max_tx = inode.flags.iter().copied().chain([inode.tx]).fold(max_tx, u32::max);
        inodes.push(FoundInode {
            seq: page.seq,
            ppn: page.ppn,
            inode,
        });
    }
    inodes.reverse();
    Ok(ActiveAla { inodes, max_tx })
}

/// What recovery decided.
pub struct Decided {
    pub updates: Vec<RecoveredUpdate>,
    /// Pages read to verify transactions no inode flags.
    pub verified_pages: u64,
    /// Transactions found aborted (an inode, and its data not whole or too
    /// old to be flagged).
    pub aborted: u64,
    /// Transactions found committed by the verify, as (their inode's place
    /// in the active ALA, id): no inode flags them, so the next ones must,
    /// before S_max more inodes push them out of the verified window.
    pub verified: Vec<(u32, u32)>,
}

/// Decides each static transaction of `ala` (inodes of writes outside
/// transactions are applied as they are): committed if a later inode
/// flags it; else, among the newest `s_max` inodes, committed if every page
/// its inode lists is intact and carries its id (`verify`; the canary skips
/// the reads and takes it as committed); else aborted. Returns the committed
/// ones' items as updates at their inode's sequence number.
pub fn decide(ala: &ActiveAla, s_max: u8, verify: bool, logs: &mut dyn LogSource) -> Result<Decided> {
    let flagged: BTreeSet<u32> = ala.inodes.iter().flat_map(|i| i.inode.flags.iter().copied()).collect();
    let n = ala.inodes.len();
    let mut out = Decided {
        updates: Vec::new(),
        verified_pages: 0,
        aborted: 0,
        verified: Vec::new(),
    };
    for (k, found) in ala.inodes.iter().enumerate() {
        let inode = &found.inode;
        let recent = n - k <= s_max as usize;
        let committed = if matches!(inode.kind, InodeKind::FlagsOnly | InodeKind::DynamicAborted) {
            continue;
        } else if matches!(inode.kind, InodeKind::Normal | InodeKind::Dynamic) {
            // Writes outside transactions, made durable by this inode; a
            // dynamic transaction, whose inode follows its REAR page.
            true
        } else if flagged.contains(&inode.tx) {
            true
        } else if !recent {
            false
        } else if !verify {
            true
        } else {
            let ok = verified(inode, logs, &mut out.verified_pages)?;
            if ok {
                out.verified.push((k as u32, inode.tx));
            }
            ok
        };
        if !committed {
            out.aborted += 1;
            continue;
        }
        out.updates.extend(inode.items.iter().map(|&(lpn, ppn)| RecoveredUpdate {
            seq: found.seq,
            lpn,
            ppn,
        }));
    }
    Ok(out)
}

/// Every page `inode` lists is intact and carries its transaction id and
/// logical page. The pages are read together (they lie on every die).
fn verified(inode: &Inode, logs: &mut dyn LogSource, reads: &mut u64) -> Result<bool> {
    let ppns: Vec<_> = inode.items.iter().map(|&(_, ppn)| ppn).collect();
    *reads += ppns.len() as u64;
    let pages = logs.read_pages(&ppns)?;
    Ok(inode.items.iter().zip(pages).all(|(&(lpn, _), page)| {
        page.is_some_and(|p| TxPage::decode(&p.tag) == Some(TxPage { tx: inode.tx, lpn }))
    }))
}

/// How the last dynamic transaction is judged.
pub struct Walk {
    pub ckpt_seq: u64,
    /// The dynamic transaction open at the checkpoint (0: none).
    pub open_chain: u32,
    /// A chain has at most this many pages (an inode's items).
    pub pages_max: u32,
    /// A chain counts only if closed (its REAR points back to its HEAD);
    /// the canary takes its intact prefix.
    pub closed_only: bool,
}

/// What the walk found.
#[derive(Default)]
pub struct Chain {
    pub updates: Vec<RecoveredUpdate>,
    pub pages_read: u64,
    pub closed: bool,
    /// The id of the newest head record (ids are never reused).
    pub max_tx: u32,
}

impl Chain {
    /// The inode of a chain found committed (its pages' newest places).
    pub fn inode(&self, s_max: u8) -> Option<Inode> {
        if self.updates.is_empty() {
            return None;
        }
        let last: std::collections::BTreeMap<_, _> = self.updates.iter().map(|u| (u.lpn, u.ppn)).collect();
        Some(Inode {
            kind: InodeKind::Dynamic,
            tx: self.max_tx,
            host_tid: 0,
            s_max,
            flags: Vec::new(),
            items: last.into_iter().collect(),
        })
    }
}

impl Walk {
    /// The newest head record's chain, walked if no inode of the active ALA
    /// decided it (an inode of kind 2 or 5 names it) and it began after the
    /// checkpoint or was open at it: from its HEAD along each page's `next`,
    /// every page intact and of the chain, until one points back to the
    /// HEAD (closed: committed, each page at its own sequence number, which
    /// is newer than every inode of the active ALA) or the walk breaks off
    /// (aborted). A torn newest record leaves the one before as the newest:
    /// its chain is decided by its inode, or walked the same way. Nothing is
    /// written here: the chain's pages stay intact until the next
    /// checkpoint, which persists the decision, so a cut recovery decides
    /// the same; a committed chain's inode is written before the next head
    /// record (`MobiusHooks::walked`), which would hide it.
    pub fn last_chain(&self, ala: &ActiveAla, logs: &mut dyn LogSource) -> Result<Chain> {
        let mut out = Chain::default();
        let Some(page) = logs.prev_page(1)? else {
            return Ok(out);
        };
        let head = HeadRecord::decode(&page.bytes)?;
        out.max_tx = head.tx;
        let decided = ala
            .inodes
            .iter()
            .any(|i| matches!(i.inode.kind, InodeKind::Dynamic | InodeKind::DynamicAborted) && i.inode.tx == head.tx);
        if decided || (page.seq <= self.ckpt_seq && head.tx != self.open_chain) {
            return Ok(out);
        }
        let mut ppn = head.head;
        let mut pages = Vec::new();
        while pages.len() < self.pages_max as usize {
            out.pages_read += 1;
            let link = logs
                .read_page(ppn)?
                .and_then(|p| ChainPage::decode(&p.tag).map(|c| (c, p.seq)))
                .filter(|(c, _)| c.tx == head.tx);
            let Some((c, seq)) = link else {
                break;
            };
            pages.push(RecoveredUpdate { seq, lpn: c.lpn, ppn });
            if c.next == head.head {
                out.closed = true;
                break;
            }
            ppn = c.next;
        }
        if out.closed || !self.closed_only {
            out.updates = pages;
        }
        Ok(out)
    }
}
