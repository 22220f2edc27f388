//! Möbius's recovery (§III-C, §III-F): the active ALA, read newest first
//! back to the checkpoint; which of its transactions committed; their
//! items as L2P updates in ALA order.

use super::format::{Inode, InodeKind, TxPage};
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
    };
    for (k, found) in ala.inodes.iter().enumerate() {
        let inode = &found.inode;
        let recent = n - k <= s_max as usize;
        let committed = if inode.kind == InodeKind::FlagsOnly {
            continue;
        } else if inode.kind == InodeKind::Normal {
            // Writes outside transactions, made durable by this inode.
            true
        } else if flagged.contains(&inode.tx) {
            true
        } else if !recent {
            false
        } else if !verify {
            true
        } else {
            verified(inode, logs, &mut out.verified_pages)?
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
