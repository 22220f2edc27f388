//! The device commands both cyclic commits run alike, over the framework's
//! FTL; each protocol's `Device` impl calls them and adds its own rule.

use super::{OpenTx, OpenTxs, PageLink, Version};
use txftl_ftl::{Ftl, Hooks, Lpn, Result, Tid, PROTOCOL_BYTES};

/// A cyclic commit's hooks: the open transactions, and what the protocol
/// writes and does beside the cycle.
pub(crate) trait CycleHooks: Hooks + Sized {
    /// What a page carries beside its link (BPCC: the back pointer; SCC: `()`).
    type Extra: Clone + std::fmt::Debug;

    fn txs(&self) -> &OpenTxs<Self::Extra>;
    fn txs_mut(&mut self) -> &mut OpenTxs<Self::Extra>;

    /// The protocol bytes of a page: its link, then `extra`.
    fn encode(link: PageLink, extra: &Self::Extra) -> [u8; PROTOCOL_BYTES];

    /// What a page of `lpn` written now carries beside its link.
    fn extra_for(&self, lpn: Lpn) -> Self::Extra;

    /// Runs before a new version of `lpn` is handed out (SCC: its forced erase).
    fn before_new_version(_ftl: &mut Ftl<Self>, _lpn: Lpn) -> Result<()> {
        Ok(())
    }

    /// `t` committed: its pages are about to go into the L2P.
    fn committing(&mut self, _t: &OpenTx<Self::Extra>) {}
}

pub(crate) fn begin<H: CycleHooks>(ftl: &mut Ftl<H>, tid: Tid) -> Result<u64> {
    ftl.hooks_mut().txs_mut().begin(tid)?;
    ftl.tx_begin(tid);
    Ok(0)
}

/// Programs the page `tid` has cached, linking to `next`; `last`: the
/// commit page (its housekeeping waits until t's pages are mapped).
fn program_cached<H: CycleHooks>(ftl: &mut Ftl<H>, tid: Tid, next: Version, last: bool) -> Result<()> {
    let Some(t) = ftl.hooks_mut().txs_mut().get_mut(tid) else {
        return Ok(());
    };
    let tx_id = t.tx_id;
    let Some(c) = t.cached.take() else {
        return Ok(());
    };
    // A rewrite (a logical page this transaction has programmed already)
    // waits until every earlier page of the transaction is done. Recovery
    // takes a link to a version that a newer one on flash supersedes as
    // explained (TxFlash's rule for a committed page GC erased); a newer
    // version of the transaction's own would otherwise explain the gap of
    // an earlier one a power cut tore or lost, and the pages that version
    // linked to would never be checked: with the commit page on flash, the
    // cycle would look complete with a page missing. Pages of distinct
    // logical pages keep TxFlash's order-free writes: each missing one is a
    // gap nothing explains.
    let rewrite = t.entries.contains_key(&c.lpn);
    let earlier_done = t.done_ns;
    let link = PageLink {
        tx_id,
        version: c.version,
        next_lpn: next.0,
        next_version: next.1,
    };
    let bytes = H::encode(link, &c.extra);
    if rewrite {
        ftl.wait_until(earlier_done);
    }
    if last {
        ftl.program_unmapped_deferred(c.lpn, &c.data, &bytes)?;
    } else {
        ftl.program_unmapped(c.lpn, &c.data, &bytes)?;
    }
    Ok(())
}

/// The page waits in DRAM until `tid`'s next command, which tells whom it
/// links to; the page cached before it is programmed now, linking to it.
/// Nothing touches the L2P before commit.
pub(crate) fn write_tx<H: CycleHooks>(ftl: &mut Ftl<H>, tid: Tid, lpn: Lpn, data: &[u8]) -> Result<u64> {
    ftl.hooks().txs().get(tid)?;
    ftl.check_page(lpn, data)?;
    ftl.hooks().txs().check_conflict(Some(tid), lpn)?;
    let start = ftl.now();
    H::before_new_version(ftl, lpn)?;
    let version = ftl.hooks_mut().txs_mut().new_version();
    program_cached(ftl, tid, (lpn, version), false)?;
    let hooks = ftl.hooks_mut();
    // No other transaction writes `lpn` while this one is open: what the
    // page carries (BPCC: its last committed version) stays the same until
    // it is programmed.
    let extra = hooks.extra_for(lpn);
    let t = hooks.txs_mut().get_mut(tid).expect("checked above");
    debug_assert!(
        t.cached.is_none(),
        "transaction {}: the page cached before was not programmed",
        t.tx_id
    );
    debug_assert!(
        t.order.last().is_none_or(|&(_, v)| v < version),
        "transaction {}: versions handed out out of order",
        t.tx_id
    );
    t.cached = Some(super::open::Cached {
        lpn,
        version,
        extra,
        data: data.to_vec(),
    });
    t.lpns.insert(lpn);
    t.order.push((lpn, version));
    t.first.get_or_insert((lpn, version));
    Ok(ftl.now() - start)
}

/// A transaction sees its own writes (the cached page first), others the
/// last committed copy.
pub(crate) fn read_tx<H: CycleHooks>(ftl: &mut Ftl<H>, tid: Tid, lpn: Lpn, buf: &mut [u8]) -> Result<u64> {
    let t = ftl.hooks().txs().get(tid)?;
    if let Some(c) = &t.cached {
        if c.lpn == lpn && buf.len() == c.data.len() {
            buf.copy_from_slice(&c.data);
            ftl.counters_mut().host_reads += 1;
            return Ok(0);
        }
    }
    match t.entries.get(&lpn).copied() {
        Some((ppn, _)) => ftl.read_physical(lpn, ppn, buf),
        None => ftl.read_page(lpn, buf),
    }
}

/// The cached page is programmed linking back to the first, closing the
/// cycle; when every page is done on its die, they go into the L2P.
pub(crate) fn commit<H: CycleHooks>(ftl: &mut Ftl<H>, tid: Tid) -> Result<u64> {
    let first = ftl.hooks().txs().get(tid)?.first;
    let start = ftl.now();
    if let Some(first) = first {
        program_cached(ftl, tid, first, true)?;
        let hooks = ftl.hooks_mut();
        let t = hooks.txs_mut().close(tid).expect("checked above");
        // The state machine: the commit page, cached last, is programmed
        // now, and every logical page written has its newest page on flash.
        assert!(
            t.cached.is_none(),
            "commit of transaction {}: its last page is still cached",
            t.tx_id
        );
        assert_eq!(
            t.entries.len(),
            t.lpns.len(),
            "commit of transaction {}: a page it wrote is mapped before it is programmed",
            t.tx_id
        );
        debug_assert!(
            t.entries.iter().all(|(&lpn, &(_, v))| t.order.contains(&(lpn, v))),
            "commit of transaction {}: a programmed version it never wrote",
            t.tx_id
        );
        hooks.committing(&t);
        ftl.wait_until(t.done_ns);
        for (lpn, (ppn, _)) in t.entries {
            ftl.map_page(lpn, ppn)?;
        }
        ftl.housekeeping()?;
        // With an image synced at flushes, a commit that returns is on the
        // host's disk, as on the other transactional protocols.
        ftl.nand().flush_image()?;
    } else {
        ftl.hooks_mut().txs_mut().close(tid);
    }
    ftl.tx_commit(tid);
    Ok(ftl.now() - start)
}
