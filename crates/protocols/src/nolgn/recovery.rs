//! NoLgn's recovery (§3.5, Fig. 5), bounded by the framework's checkpoint:
//! the checkpoint's L2P, its section (the transactions open at it, with
//! each page's old version), and the transactional pages programmed since
//! decide every mapping. No DRAM state survives: the P2P table and the
//! locks start empty, since every transaction open at the cut is either
//! committed (its end flag is on flash) or rolled back here.
//!
//! A transaction is committed iff a page of it carrying the end flag is
//! intact (or the section says its end page was programmed before the
//! checkpoint). Its pages since the checkpoint go into the L2P at their
//! sequence numbers; the checkpoint's L2P already names its earlier ones.
//! Any other transaction is rolled back: each page it wrote goes back to
//! the old version its first write replaced (the section's, for pages
//! written before the checkpoint; the page's OOB otherwise), ordered at that
//! first write, so a version written after the transaction ended (it was
//! aborted: abort writes nothing, and looks like this after a cut) wins. An
//! old version an OOB names that is not an intact page programmed since the
//! checkpoint is older than it (the checkpoint's L2P names it already:
//! nothing since replaced it before the transaction wrote) or was torn by
//! the cut (its write was in flight, so the version before it stands):
//! either way no update is made.
//!
//! What the paper's full scan gets wrong (digest B8.6) cannot happen here: a
//! committed transaction whose end page was superseded and erased ended
//! before the checkpoint that let the erase happen, so the checkpoint's L2P,
//! not its pages' tags, decides it.

use super::format::{PageTag, Section, NO_PAGE};
use std::collections::{BTreeMap, BTreeSet};
use txftl_ftl::{Lpn, Ppn, RecoveredUpdate, ScannedPage, UNMAPPED};

/// What recovery decided.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Resolved {
    pub updates: Vec<RecoveredUpdate>,
    /// Transactions found committed and rolled back (open at the
    /// checkpoint or begun since), and the pages rolled back.
    pub committed: u32,
    pub rolled_back: u32,
    pub rollback_pages: u32,
    pub max_tx_id: u32,
}

/// One page of a transaction programmed since the checkpoint.
#[derive(Clone, Copy, Debug)]
struct TxPage {
    seq: u64,
    lpn: Lpn,
    ppn: Ppn,
    old: Ppn,
}

fn target(old: Ppn) -> Ppn {
    if old == NO_PAGE {
        UNMAPPED
    } else {
        old
    }
}

/// Decides the transactions of `section` (the checkpoint `ckpt_seq`'s) and
/// of the pages programmed since (`pages`: every intact data page programmed
/// since, in any order; pages older than the checkpoint are ignored).
pub fn resolve(ckpt_seq: u64, section: &Section, pages: &[ScannedPage]) -> Resolved {
    let mut since: BTreeMap<u32, (bool, Vec<TxPage>)> = BTreeMap::new();
    let mut r = Resolved::default();
    let intact: BTreeSet<Ppn> = pages.iter().filter(|p| p.oob.seq > ckpt_seq).map(|p| p.ppn).collect();
    for p in pages {
        let tag = PageTag::of(&p.oob);
        r.max_tx_id = r.max_tx_id.max(tag.tx_id);
        if !tag.is_tx() || p.oob.seq <= ckpt_seq {
            continue;
        }
        let t = since.entry(tag.tx_id).or_default();
        t.0 |= tag.end;
        t.1.push(TxPage {
            seq: p.oob.seq,
            lpn: p.oob.lpn,
            ppn: p.ppn,
            old: tag.old_ppn,
        });
    }
    // Pages are found in sequence order within a transaction? Not needed:
    // each is applied at its own sequence number. A transaction is open at
    // the checkpoint once.
    debug_assert!(
        section.open.windows(2).all(|w| w[0].tx_id != w[1].tx_id),
        "the checkpoint lists an open transaction twice"
    );
    for open in &section.open {
        let found = since.remove(&open.tx_id);
        let committed = open.ended || found.as_ref().is_some_and(|(end, _)| *end);
        if committed {
            r.committed += 1;
            for p in found.map(|f| f.1).unwrap_or_default() {
                r.updates.push(RecoveredUpdate { seq: p.seq, lpn: p.lpn, ppn: p.ppn });
            }
            continue;
        }
        // Before anything since: the section's old versions are the ones
        // the transaction's first writes replaced.
        r.rolled_back += 1;
        for &(lpn, old) in &open.entries {
            r.rollback_pages += 1;
            r.updates.push(RecoveredUpdate {
                seq: ckpt_seq,
                lpn,
                ppn: target(old),
            });
        }
        // Pages it first wrote after the checkpoint.
        let listed: BTreeSet<Lpn> = open.entries.iter().map(|e| e.0).collect();
        let pages = found.map(|f| f.1).unwrap_or_default();
        roll_back(&pages, |lpn| listed.contains(&lpn), &intact, &mut r);
    }
    for (_, (end, pages)) in since {
        if end {
            r.committed += 1;
            r.updates
                .extend(pages.iter().map(|p| RecoveredUpdate { seq: p.seq, lpn: p.lpn, ppn: p.ppn }));
        } else {
            r.rolled_back += 1;
            roll_back(&pages, |_| false, &intact, &mut r);
        }
    }
    r
}

/// Rolls back each LPN of `pages` (one transaction's) not `skip`ped to the old
/// version its earliest page names, at that page's sequence number, if that
/// version is unmapped or `intact` (see the module doc).
fn roll_back(pages: &[TxPage], skip: impl Fn(Lpn) -> bool, intact: &BTreeSet<Ppn>, r: &mut Resolved) {
    let mut first: BTreeMap<Lpn, TxPage> = BTreeMap::new();
    for p in pages {
        let e = first.entry(p.lpn).or_insert(*p);
        if p.seq < e.seq {
            *e = *p;
        }
    }
    for (lpn, p) in first {
        if skip(lpn) {
            continue;
        }
        r.rollback_pages += 1;
        debug_assert!(p.old != p.ppn, "lpn {lpn}: page {} names itself as its old version", p.ppn);
        if p.old != NO_PAGE && !intact.contains(&p.old) {
            continue;
        }
        r.updates.push(RecoveredUpdate {
            seq: p.seq,
            lpn,
            ppn: target(p.old),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::super::format::OpenAtCheckpoint;
    use super::*;
    use txftl_ftl::{Oob, PageKind};

    fn page(ppn: Ppn, lpn: Lpn, seq: u64, tx_id: u32, end: bool, old: Ppn) -> ScannedPage {
        let tag = PageTag {
            tx_id,
            end,
            old_copy: false,
            old_ppn: old,
        };
        let mut oob = Oob::new(PageKind::Data, lpn, seq, 0, &[]);
        oob.protocol = tag.encode();
        ScannedPage {
            ppn,
            oob,
            from_summary: false,
        }
    }

    fn upd(seq: u64, lpn: Lpn, ppn: Ppn) -> RecoveredUpdate {
        RecoveredUpdate { seq, lpn, ppn }
    }

    #[test]
    fn an_end_flag_commits_and_its_absence_rolls_back_to_the_first_old_version() {
        let pages = [
            // A plain page since the checkpoint (the framework rolls it forward).
            page(6, 5, 11, 0, false, 0),
            // Transaction 3: lpn 1 twice, then lpn 2 with the end flag.
            page(10, 1, 12, 3, false, 4),
            page(11, 1, 13, 3, false, 4),
            page(12, 2, 14, 3, true, NO_PAGE),
            // Transaction 4, no end flag: lpn 5 twice over the plain page;
            // lpn 7 over page 99, not an intact page since the checkpoint
            // (older: the checkpoint's L2P names it; or torn): no update.
            page(20, 5, 15, 4, false, 6),
            page(21, 5, 16, 4, false, 6),
            page(22, 7, 17, 4, false, 99),
            // Older than the checkpoint: ignored.
            page(30, 9, 9, 2, false, 1),
        ];
        let r = resolve(10, &Section::default(), &pages);
        assert_eq!((r.committed, r.rolled_back, r.rollback_pages), (1, 1, 2));
        let mut u = r.updates.clone();
        u.sort_by_key(|u| (u.seq, u.lpn));
        assert_eq!(u, vec![upd(12, 1, 10), upd(13, 1, 11), upd(14, 2, 12), upd(15, 5, 6)]);
        assert_eq!(r.max_tx_id, 4);
    }

    #[test]
    fn a_transaction_open_at_the_checkpoint_rolls_back_to_the_sections_old_versions() {
        let section = Section {
            next_tx_id: 8,
            open: vec![
                OpenAtCheckpoint {
                    tx_id: 5,
                    ended: false,
                    entries: vec![(1, 40), (2, NO_PAGE)],
                },
                OpenAtCheckpoint {
                    tx_id: 6,
                    ended: false,
                    entries: vec![(7, 41)],
                },
                OpenAtCheckpoint {
                    tx_id: 7,
                    ended: true,
                    entries: vec![(8, 42)],
                },
            ],
        };
        // 5 rewrote lpn 1 and wrote lpn 3 since, with no end flag; 6 ended since.
        let pages = [
            page(43, 3, 21, 0, false, 0),
            page(50, 1, 22, 5, false, 40),
            page(51, 3, 23, 5, false, 43),
            page(52, 9, 24, 6, true, 44),
        ];
        let r = resolve(20, &section, &pages);
        assert_eq!((r.committed, r.rolled_back, r.rollback_pages), (2, 1, 3));
        let mut u = r.updates.clone();
        u.sort_by_key(|u| (u.seq, u.lpn));
        assert_eq!(u, vec![upd(20, 1, 40), upd(20, 2, UNMAPPED), upd(23, 3, 43), upd(24, 9, 52)]);
    }
}
