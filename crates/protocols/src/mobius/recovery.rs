//! Möbius's recovery (§III-C, §III-D, §III-F): the active ALA, read newest
//! first back to the checkpoint; which of its transactions committed; their
//! items as L2P updates in ALA order; then the last dynamic transaction of
//! the head list, if no inode decided it: committed if its chain is closed.

use super::format::{ChainPage, HeadRecord, Inode, InodeKind, TxPage, VOID};
use std::collections::BTreeSet;
use txftl_ftl::{LogSource, Lpn, Ppn, RecoveredUpdate, Result};

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
        max_tx = inode.flags.iter().map(|&f| f & !VOID).chain([inode.tx]).fold(max_tx, u32::max);
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
    /// The marks the next inodes must carry, as (the transaction's inode's
    /// place in the active ALA, flag): the flags of the transactions found
    /// committed by the verify (no inode flags them: before S_max more
    /// inodes push them out of the verified window) and the void marks of
    /// the static ones found aborted (so that a later mount does not take
    /// them as earlier transactions lost, and drop the ones after them).
    pub marks: Vec<(u32, u32)>,
}

/// Decides each static transaction of `ala` (inodes of writes outside
/// transactions are applied as they are): committed if a later inode
/// flags it; aborted if one marks it void; else, among the newest `s_max`
/// inodes, committed if every page its inode lists is intact and carries
/// its id (`verify`; the canary skips the reads and takes it as committed)
/// and no earlier unflagged one was lost; else aborted. Commits come back in
/// their order: an inode flags a transaction only once every earlier one
/// in flight is done (`take_flags`), and once an unflagged one fails its
/// verify, the later unflagged ones go with it (their pages may all be
/// done, an earlier A-SWRITE's not: keeping them would show a later commit
/// without an earlier one it may depend on). Returns the committed ones'
/// items as updates at their inode's sequence number.
pub fn decide(ala: &ActiveAla, s_max: u8, verify: bool, logs: &mut dyn LogSource) -> Result<Decided> {
    let all_flags = || ala.inodes.iter().flat_map(|i| i.inode.flags.iter().copied());
    let flagged: BTreeSet<u32> = all_flags().filter(|f| f & VOID == 0).collect();
    let void: BTreeSet<u32> = all_flags().filter(|f| f & VOID != 0).map(|f| f & !VOID).collect();
    let mut lost = false;
    let n = ala.inodes.len();
    let mut out = Decided {
        updates: Vec::new(),
        verified_pages: 0,
        aborted: 0,
        marks: Vec::new(),
    };
    for (k, found) in ala.inodes.iter().enumerate() {
        let inode = &found.inode;
        let recent = n - k <= s_max as usize;
        // A transaction's parts (its items before this inode's), if all
        // are here; a part's items count only with its transaction's inode.
        let parts = match inode.kind {
            InodeKind::Static | InodeKind::Dynamic => parts_start(ala, k).map(|first| &ala.inodes[first..k]),
            _ => None,
        };
        let committed = if matches!(
            inode.kind,
            InodeKind::FlagsOnly | InodeKind::DynamicAborted | InodeKind::DynamicPart | InodeKind::StaticPart
        ) {
            continue;
        } else if inode.kind == InodeKind::Dynamic {
            // A dynamic transaction, whose inodes follow its REAR page.
            // Parts not all here (a cut between them): undecided, its
            // chain is walked (`Walk::last_chain`).
            if parts.is_none() {
                continue;
            }
            true
        } else if inode.kind == InodeKind::Normal {
            // Writes outside transactions, made durable by this inode.
            true
        } else if parts.is_none() {
            // A static transaction's parts not all here: a checkpoint fell
            // between its inodes, and `append_parts` wrote them all again
            // after it (that set decides), or the set that follows was cut
            // before its binding inode (written last, before any data): no
            // page of it is anywhere. Neither aborted nor marked: a void
            // mark would void the set written again too.
            continue;
        } else if void.contains(&inode.tx) {
            false
        } else if flagged.contains(&inode.tx) {
            true
        } else if !recent || lost {
            lost = true;
            false
        } else if !verify {
            true
        } else {
            let ok = verified(parts.unwrap_or_default(), inode, logs, &mut out.verified_pages)?;
            if ok {
                out.marks.push((k as u32, inode.tx));
            }
            lost = !ok;
            ok
        };
        if !committed {
            out.aborted += 1;
            if !void.contains(&inode.tx) {
                out.marks.push((k as u32, inode.tx | VOID));
            }
            continue;
        }
        for f in parts.unwrap_or_default().iter().chain([found]) {
            out.updates
                .extend(f.inode.items.iter().map(|&(lpn, ppn)| RecoveredUpdate { seq: f.seq, lpn, ppn }));
        }
    }
    Ok(out)
}

/// Where the parts of the transaction's inode at `k` (kind 1 or 2) begin in
/// the active ALA, if they are all there: its `parts - 1` part inodes of
/// the same transaction, indices 0, 1, ... in order, right before it
/// (nothing else is appended between them: `Mobius::append_parts`).
pub fn parts_start(ala: &ActiveAla, k: usize) -> Option<usize> {
    let last = &ala.inodes[k].inode;
    let part = last.kind.part_kind()?;
    let before = (last.parts.max(1) - 1) as usize;
    let first = k.checked_sub(before)?;
    let whole = ala.inodes[first..k]
        .iter()
        .enumerate()
        .all(|(i, p)| p.inode.kind == part && p.inode.tx == last.tx && p.inode.parts as usize == i);
    whole.then_some(first)
}

/// Whether an inode of the active ALA decides dynamic transaction `tx`: a
/// kind-5 one (aborted), or a kind-2 one with all its parts (committed).
fn dynamic_decided(ala: &ActiveAla, tx: u32) -> bool {
    ala.inodes.iter().enumerate().any(|(k, i)| {
        i.inode.tx == tx
            && match i.inode.kind {
                InodeKind::DynamicAborted => true,
                InodeKind::Dynamic => parts_start(ala, k).is_some(),
                _ => false,
            }
    })
}

/// Every page `inode` and its `parts` list is intact and carries its
/// transaction id and logical page. The pages are read together (they lie
/// on every die).
fn verified(parts: &[FoundInode], inode: &Inode, logs: &mut dyn LogSource, reads: &mut u64) -> Result<bool> {
    let items: Vec<(Lpn, Ppn)> = parts
        .iter()
        .map(|p| &p.inode)
        .chain([inode])
        .flat_map(|i| i.items.iter().copied())
        .collect();
    let ppns: Vec<_> = items.iter().map(|&(_, ppn)| ppn).collect();
    *reads += ppns.len() as u64;
    let pages = logs.read_pages(&ppns)?;
    Ok(items
        .iter()
        .zip(pages)
        .all(|(&(lpn, _), page)| page.is_some_and(|p| TxPage::decode(&p.tag) == Some(TxPage { tx: inode.tx, lpn }))))
}

/// How the last dynamic transaction is judged.
pub struct Walk {
    pub ckpt_seq: u64,
    /// The dynamic transaction open at the checkpoint (0: none).
    pub open_chain: u32,
    /// A chain has at most this many pages (the device's: a walk of a
    /// chain whose links went wrong stops there).
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
    /// The inodes of a chain found committed (its pages' newest places),
    /// `items_max` items each; none if it was not.
    pub fn inodes(&self, s_max: u8, items_max: u32) -> Vec<Inode> {
        if self.updates.is_empty() {
            return Vec::new();
        }
        let last: std::collections::BTreeMap<_, _> = self.updates.iter().map(|u| (u.lpn, u.ppn)).collect();
        Inode::split(InodeKind::Dynamic, self.max_tx, 0, last.into_iter().collect(), items_max, s_max)
    }
}

impl Walk {
    /// The newest head record's chain, walked if no inode of the active ALA
    /// decided it (a kind-5 inode names it, or a kind-2 one with all its
    /// parts: `dynamic_decided`) and it began after the
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
        let decided = dynamic_decided(ala, head.tx);
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;
    use txftl_ftl::LogPage;

    /// Data pages: intact (carrying their transaction's tag) unless listed
    /// as lost.
    struct Pages {
        lost: BTreeSet<Ppn>,
        tags: Vec<(Ppn, TxPage)>,
    }

    impl LogSource for Pages {
        fn prev_page(&mut self, _ring: usize) -> Result<Option<LogPage>> {
            Ok(None)
        }
        fn read_page(&mut self, ppn: Ppn) -> Result<Option<LogPage>> {
            let tag = self.tags.iter().find(|(p, _)| *p == ppn).map(|(_, t)| t.encode());
            Ok(tag.filter(|_| !self.lost.contains(&ppn)).map(|tag| LogPage {
                seq: 0,
                ppn,
                bytes: Vec::new(),
                tag,
            }))
        }
    }

    fn static_inode(tx: u32, ppn: Ppn, flags: Vec<u32>) -> FoundInode {
        FoundInode {
            seq: tx as u64,
            ppn: 1000 + tx,
            inode: Inode {
                kind: InodeKind::Static,
                tx,
                host_tid: tx,
                parts: 0,
                s_max: 8,
                flags,
                items: vec![(tx, ppn)],
            },
        }
    }

    /// Transactions 1 to 3, none flagged: 1 whole, 2 with its page lost (an
    /// A-SWRITE cut before its page was done), 3 whole. 3 goes with 2 (a
    /// later commit must not outlive an earlier one); a void mark for 2
    /// (its program failed) takes it out of the order.
    #[test]
    fn a_lost_transaction_takes_the_later_unflagged_ones_with_it_unless_void() {
        let tags = (1..=3).map(|tx| (tx, TxPage { tx, lpn: tx })).collect();
        let mut pages = Pages {
            lost: BTreeSet::from([2]),
            tags,
        };
        let ala = ActiveAla {
            inodes: (1..=3).map(|tx| static_inode(tx, tx, Vec::new())).collect(),
            max_tx: 3,
        };
        let d = decide(&ala, 8, true, &mut pages).unwrap();
        let lpns: Vec<u32> = d.updates.iter().map(|u| u.lpn).collect();
        assert_eq!(lpns, vec![1]);
        assert_eq!(d.aborted, 2);
        assert_eq!(d.marks, vec![(0, 1), (1, 2 | VOID), (2, 3 | VOID)]);
        let mut ala = ala;
        ala.inodes[2].inode.flags = vec![2 | VOID];
        let d = decide(&ala, 8, true, &mut pages).unwrap();
        let lpns: Vec<u32> = d.updates.iter().map(|u| u.lpn).collect();
        assert_eq!(lpns, vec![1, 3]);
        assert_eq!(d.aborted, 1);
    }
}
