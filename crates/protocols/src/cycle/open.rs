//! The open transactions of a cyclic commit (SCC, BPCC), as the device keeps
//! them in DRAM: each with the one page it holds back until its next command
//! names the page that page links to, the pages it has programmed (off the
//! L2P until commit), and the counters that hand out TxIDs and versions.

use std::collections::{BTreeMap, BTreeSet};
use txftl_ftl::{DeviceError, Lpn, Ppn, Result, Tid};

/// A version of a logical page: (logical page, version).
pub type Version = (Lpn, u64);

/// A page waiting in device DRAM for its transaction's next command, which
/// tells whom it links to (TxFlash keeps one page per transaction buffered
/// for that reason).
#[derive(Clone, Debug)]
pub struct Cached<X> {
    pub lpn: Lpn,
    pub version: u64,
    /// What the protocol writes beside the link (BPCC: the back pointer; SCC: nothing).
    pub extra: X,
    pub data: Vec<u8>,
}

/// An open transaction.
#[derive(Clone, Debug)]
pub struct OpenTx<X> {
    pub tx_id: u32,
    /// Its first page (logical page, version): the last page links back to it.
    pub first: Option<Version>,
    pub cached: Option<Cached<X>>,
    /// Logical page -> its newest programmed page and that page's version.
    pub entries: BTreeMap<Lpn, (Ppn, u64)>,
    /// Every logical page it wrote, the cached one included.
    pub lpns: BTreeSet<Lpn>,
    /// Every version it wrote, in order (the cached one last): each page
    /// links to the next. BPCC's abort rebuilds the broken cycle from it.
    pub order: Vec<Version>,
    /// Every page it programmed, GC copies included (of pages no longer its
    /// newest too: BPCC's GC moves those when they are pinned): its block's
    /// erase count then and its version. A page whose block has been erased
    /// since is no longer on flash (the check at abort).
    pub programmed: BTreeMap<Ppn, (u32, Version)>,
    /// When its last programmed page is done on its die.
    pub done_ns: u64,
}

impl<X> OpenTx<X> {
    fn new(tx_id: u32) -> OpenTx<X> {
        OpenTx {
            tx_id,
            first: None,
            cached: None,
            entries: BTreeMap::new(),
            lpns: BTreeSet::new(),
            order: Vec::new(),
            programmed: BTreeMap::new(),
            done_ns: 0,
        }
    }
}

/// The open transactions, their pages GC must keep, and the TxID and
/// version counters (shared with writes outside transactions).
#[derive(Clone, Debug)]
pub struct OpenTxs<X> {
    /// The protocol as error messages name it ("scc", "bpcc").
    protocol: &'static str,
    open: BTreeMap<Tid, OpenTx<X>>,
    by_tx_id: BTreeMap<u32, Tid>,
    /// Open transactions' newest pages: GC moves them like valid pages.
    live: BTreeSet<Ppn>,
    next_tx_id: u32,
    next_version: u64,
    /// Checkpoints made durable while a transaction had pages on flash,
    /// uncommitted, across the checkpoint, since `reset_stats`: reported as
    /// `protocol_records_with_open_tx`.
    pub checkpoints_with_open_tx: u64,
}

impl<X> OpenTxs<X> {
    pub fn new(protocol: &'static str) -> OpenTxs<X> {
        OpenTxs {
            protocol,
            open: BTreeMap::new(),
            by_tx_id: BTreeMap::new(),
            live: BTreeSet::new(),
            next_tx_id: 1,
            next_version: 1,
            checkpoints_with_open_tx: 0,
        }
    }

    /// The protocol as error messages name it.
    pub fn protocol(&self) -> &'static str {
        self.protocol
    }

    /// After a recovery: TxIDs and versions go on after the largest found.
    pub fn resume_after(&mut self, max_tx_id: u32, max_version: u64) {
        self.next_tx_id = max_tx_id.saturating_add(1).max(1);
        self.next_version = max_version + 1;
    }

    pub fn new_version(&mut self) -> u64 {
        let v = self.next_version;
        self.next_version = v.checked_add(1).expect("versions are used up");
        v
    }

    pub fn new_tx_id(&mut self) -> Result<u32> {
        let tx_id = self.next_tx_id;
        self.next_tx_id = tx_id
            .checked_add(1)
            .ok_or_else(|| DeviceError::WornOut(format!("{} transaction ids are used up", self.protocol.to_uppercase())))?;
        Ok(tx_id)
    }

    pub fn get(&self, tid: Tid) -> Result<&OpenTx<X>> {
        self.open.get(&tid).ok_or(DeviceError::UnknownTransaction(tid))
    }

    pub fn get_mut(&mut self, tid: Tid) -> Option<&mut OpenTx<X>> {
        self.open.get_mut(&tid)
    }

    /// Opens `tid` under a new TxID.
    pub fn begin(&mut self, tid: Tid) -> Result<()> {
        if tid == 0 {
            return Err(DeviceError::InvalidTransactionId);
        }
        if self.open.contains_key(&tid) {
            return Err(DeviceError::TransactionExists(tid));
        }
        let tx_id = self.new_tx_id()?;
        let reused = self.by_tx_id.insert(tx_id, tid);
        assert!(reused.is_none(), "TxID {tx_id} handed out twice");
        self.open.insert(tid, OpenTx::new(tx_id));
        debug_assert_eq!(self.open.len(), self.by_tx_id.len(), "open transactions and their TxIDs");
        Ok(())
    }

    /// Closes `tid` (committed or aborted): its pages are no longer kept for it.
    pub fn close(&mut self, tid: Tid) -> Option<OpenTx<X>> {
        let t = self.open.remove(&tid)?;
        let named = self.by_tx_id.remove(&t.tx_id);
        assert_eq!(named, Some(tid), "transaction {tid}'s TxID {} names another", t.tx_id);
        for (p, _) in t.entries.values() {
            let was = self.live.remove(p);
            debug_assert!(was, "transaction {tid}: its newest page {p} was not kept live");
        }
        Some(t)
    }

    /// Refuses a write of `lpn` that another open transaction (any, for a
    /// write outside transactions: `tid` None) has written: the versions of
    /// one page must be written in the order they commit.
    pub fn check_conflict(&self, tid: Option<Tid>, lpn: Lpn) -> Result<()> {
        if self.open.iter().any(|(&t, o)| Some(t) != tid && o.lpns.contains(&lpn)) {
            return Err(DeviceError::IsolationUnsupported {
                protocol: self.protocol,
                level: "serializable (a page written by two open transactions)",
            });
        }
        Ok(())
    }

    /// Page `ppn` (not a GC copy) of version `version` of `lpn`, TxID
    /// `tx_id`, was programmed in a block of erase count `erase_count`; done
    /// on its die at `done_ns`. Nothing for a transaction no longer open.
    pub fn programmed(&mut self, ppn: Ppn, lpn: Lpn, tx_id: u32, version: u64, erase_count: u32, done_ns: u64) {
        let Some(tid) = self.by_tx_id.get(&tx_id).copied() else {
            return;
        };
        let Some(t) = self.open.get_mut(&tid) else { return };
        assert!(
            version < self.next_version,
            "{}: page {ppn} carries version {version}, not handed out yet",
            self.protocol
        );
        if let Some((older, v)) = t.entries.insert(lpn, (ppn, version)) {
            debug_assert!(v < version, "transaction {tid}: lpn {lpn}'s version {version} programmed after {v}");
            self.live.remove(&older);
        }
        self.live.insert(ppn);
        t.programmed.insert(ppn, (erase_count, (lpn, version)));
        t.done_ns = t.done_ns.max(done_ns);
    }

    /// GC copied `old` to `new`, in a block of erase count `erase_count`. A
    /// copy of an open transaction's page is one of its pages on flash,
    /// whether or not `old` was its newest (BPCC moves older ones it pins):
    /// at an abort the copy must be found, or a version would look gone
    /// while a copy of it is still on flash. Its newest page follows its copy.
    pub fn relocated(&mut self, old: Ppn, new: Ppn, lpn: Lpn, tx_id: u32, version: u64, erase_count: u32) {
        let was_live = self.live.remove(&old);
        if was_live {
            self.live.insert(new);
        }
        if let Some(t) = self.by_tx_id.get(&tx_id).and_then(|tid| self.open.get_mut(tid)) {
            if was_live {
                for (p, _) in t.entries.values_mut().filter(|(p, _)| *p == old) {
                    *p = new;
                }
            }
            t.programmed.insert(new, (erase_count, (lpn, version)));
        }
    }

    /// Whether `ppn` is an open transaction's newest page of its logical page.
    pub fn is_live(&self, ppn: Ppn) -> bool {
        self.live.contains(&ppn)
    }

    /// How many open transactions' pages lie in `first..end`.
    pub fn live_count(&self, first: Ppn, end: Ppn) -> usize {
        self.live.range(first..end).count()
    }

    /// A checkpoint was made durable (`PersistHooks::checkpoint_durable`).
    pub fn checkpoint_durable(&mut self) {
        if self.open.values().any(|t| !t.programmed.is_empty()) {
            self.checkpoints_with_open_tx += 1;
        }
    }

    /// No open transaction's page is in the L2P before its commit.
    pub fn check_l2p(&self, l2p: &[u32]) -> std::result::Result<(), String> {
        for t in self.open.values() {
            for (&lpn, &(ppn, _)) in &t.entries {
                if l2p.get(lpn as usize) == Some(&ppn) {
                    return Err(format!("open transaction {}: its page of lpn {lpn} is already in the L2P", t.tx_id));
                }
            }
        }
        Ok(())
    }
}
