//! LightTx's recovery (paper §III-D): which transactions committed, decided
//! from the page metadata of the Available and Unavailable Zones alone, and
//! the L2P updates that redo them in commit (TxVer) order.
//!
//! A transaction committed iff one of its pages carries a non-zero TxCnt (its
//! commit page) equal to the number of its pages found. The paper reads the
//! Available Zone first and the Unavailable Zone only for the transactions
//! still undecided; reading both and counting once gives the same answer
//! (every commit after the checkpoint put its commit page in the Available
//! Zone, and every earlier page of it lies in one of the two zones).
//!
//! Only commits after the checkpoint are redone: a commit page older than the
//! checkpoint belongs to a transaction the checkpoint's L2P already holds
//! (dead), whose pages may also lie in the Unavailable Zone next to a live
//! one's. Redoing it would put back values later commits replaced.

use super::format::PageTx;
use std::collections::BTreeMap;
use txftl_ftl::{DeviceError, RecoveredUpdate, Result, ScannedPage};
use txftl_nand::Ppn;

/// What recovery found of one transaction.
#[derive(Default)]
struct Found {
    /// Its pages, by the sequence number they were programmed at (a GC copy
    /// counts under its origin's): where each one is now, and its logical page.
    pages: BTreeMap<u64, (u64, Ppn, u32)>,
    /// Its commit page: (TxCnt, TxVer, sequence number as programmed).
    commit: Option<(u32, u32, u64)>,
}

/// The outcome of recovery's state checking.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Resolved {
    /// L2P updates of the transactions committed after the checkpoint, each
    /// at its commit page's sequence number.
    pub updates: Vec<RecoveredUpdate>,
    /// Transactions redone, and transactions found whose pages do not make a
    /// commit (open at the cut, aborted, or dead and partly in the zones).
    pub committed: u32,
    pub uncommitted: u32,
    /// Of the uncommitted, transactions whose commit page (after the
    /// checkpoint) counts more pages than were found: rejected commits.
    pub incomplete: u32,
    /// The largest TxID and TxVer read (so new ones are larger).
    pub max_tx_id: u32,
    pub max_tx_ver: u32,
}

pub fn resolve(ckpt_seq: u64, pages: &[ScannedPage]) -> Result<Resolved> {
    let mut txs: BTreeMap<u32, Found> = BTreeMap::new();
    let mut out = Resolved::default();
    for p in pages {
        let tx = PageTx::of(&p.oob);
        out.max_tx_ver = out.max_tx_ver.max(tx.tx_ver);
        if tx.tx_id == 0 {
            continue; // not transactional: the framework rolls it forward
        }
        out.max_tx_id = out.max_tx_id.max(tx.tx_id);
        let origin = if p.oob.relocated && tx.origin != 0 { tx.origin } else { p.oob.seq };
        let f = txs.entry(tx.tx_id).or_default();
        let slot = f.pages.entry(origin).or_insert((p.oob.seq, p.ppn, p.oob.lpn));
        if p.oob.seq > slot.0 {
            *slot = (p.oob.seq, p.ppn, p.oob.lpn); // the newer copy of the same page
        }
        if tx.tx_cnt != 0 {
            f.commit = Some((tx.tx_cnt, tx.tx_ver, origin));
        }
    }
    let mut committed: Vec<(u32, u64, &Found)> = Vec::new();
    for f in txs.values() {
        match f.commit {
            Some((cnt, ver, seq)) if cnt as usize == f.pages.len() => {
                if seq > ckpt_seq {
                    committed.push((ver, seq, f));
                }
            }
            Some((_, _, seq)) => {
                out.uncommitted += 1;
                out.incomplete += (seq > ckpt_seq) as u32;
            }
            None => out.uncommitted += 1,
        }
    }
    // Redo in TxVer order. Versions are handed out as commit pages are
    // programmed, so they follow the sequence numbers; the framework applies
    // updates by sequence number, so check the two agree.
    committed.sort_by_key(|&(ver, seq, _)| (ver, seq));
    for w in committed.windows(2) {
        if w[1].1 < w[0].1 {
            return Err(DeviceError::Corrupted(format!(
                "LightTx commit versions {} and {} are out of program order",
                w[0].0, w[1].0
            )));
        }
    }
    for (_, commit_seq, f) in committed {
        out.committed += 1;
        // A transaction that wrote a page twice: its later version wins.
        let mut latest: BTreeMap<u32, Ppn> = BTreeMap::new();
        for &(_, ppn, lpn) in f.pages.values() {
            latest.insert(lpn, ppn);
        }
        out.updates
            .extend(latest.into_iter().map(|(lpn, ppn)| RecoveredUpdate { seq: commit_seq, lpn, ppn }));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use txftl_ftl::{Oob, PageKind};

    fn page(ppn: Ppn, lpn: u32, seq: u64, tx: PageTx) -> ScannedPage {
        let mut oob = Oob::new(PageKind::Data, lpn, seq, 0, &[]);
        oob.protocol = tx.encode();
        ScannedPage {
            ppn,
            oob,
            from_summary: false,
        }
    }
    fn tx(id: u32, cnt: u32, ver: u32) -> PageTx {
        PageTx {
            tx_id: id,
            tx_cnt: cnt,
            tx_ver: ver,
            origin: 0,
        }
    }

    #[test]
    fn a_transaction_commits_only_with_all_its_pages_and_its_count() {
        let pages = [
            page(10, 1, 101, tx(5, 0, 0)),
            page(11, 2, 102, tx(5, 0, 0)),
            page(12, 1, 103, tx(5, 3, 1)), // page 1 written twice: 3 pages
            page(20, 7, 104, tx(6, 0, 0)), // tx 6 counts 3 pages: one is missing
            page(21, 8, 105, tx(6, 3, 2)),
            page(30, 9, 106, tx(7, 0, 0)), // tx 7: open at the cut (no commit page)
        ];
        let r = resolve(100, &pages).unwrap();
        assert_eq!((r.committed, r.uncommitted, r.incomplete), (1, 2, 1));
        let u: Vec<(u32, Ppn, u64)> = r.updates.iter().map(|u| (u.lpn, u.ppn, u.seq)).collect();
        assert_eq!(u, vec![(1, 12, 103), (2, 11, 103)], "the later version of page 1, at the commit");
        assert_eq!((r.max_tx_id, r.max_tx_ver), (7, 2));
    }

    #[test]
    fn a_commit_older_than_the_checkpoint_is_not_redone() {
        let pages = [page(10, 1, 50, tx(3, 0, 0)), page(11, 2, 51, tx(3, 2, 4))];
        let r = resolve(100, &pages).unwrap();
        assert!(r.updates.is_empty());
        assert_eq!(r.committed, 0);
    }

    #[test]
    fn a_gc_copy_counts_once_under_its_origin_and_is_where_the_page_is() {
        let mut copy = page(
            40,
            1,
            120,
            PageTx {
                origin: 101,
                ..tx(5, 0, 0)
            },
        );
        copy.oob.relocated = true;
        let pages = [page(10, 1, 101, tx(5, 0, 0)), copy, page(12, 2, 110, tx(5, 2, 1))];
        let r = resolve(100, &pages).unwrap();
        assert_eq!(r.committed, 1);
        let u: Vec<(u32, Ppn)> = r.updates.iter().map(|u| (u.lpn, u.ppn)).collect();
        assert_eq!(u, vec![(1, 40), (2, 12)]);
    }

    #[test]
    fn versions_out_of_program_order_are_refused() {
        let pages = [page(10, 1, 101, tx(5, 1, 2)), page(11, 2, 102, tx(6, 1, 1))];
        assert!(resolve(100, &pages).is_err());
    }
}
