//! The reference model of the crash contract (DESIGN.md), for block and
//! transactional operations alike.
//!
//! After a power cut and recovery, each logical page must hold a value the
//! model allows:
//! - the value it had when the last flush or commit covering it returned, or
//! - a value a later write, trim or commit made visible (or may have, if it was
//!   in flight at the cut);
//!
//! never a torn page, never an older value, never a value of a transaction that
//! aborted or had not committed. A commit in flight at the cut is all or
//! nothing: checked separately with [`TxModel::atomic_violation`]. While the
//! device is up, a read returns the latest visible value, and a transactional
//! read returns the transaction's own write if it made one.

use std::collections::BTreeMap;

/// A page's value in the model: the version of the write that produced it, or
/// `None` for never written / trimmed.
pub type Value = Option<u64>;

#[derive(Clone, Debug)]
pub struct TxModel {
    durable: Vec<Value>,
    latest: Vec<Value>,
    /// Values made visible (or maybe, if in flight) since the page's durable value.
    since_durable: BTreeMap<u32, Vec<Value>>,
    /// Open transactions: their latest write of each page.
    open: BTreeMap<u32, BTreeMap<u32, u64>>,
    /// The transaction whose commit was in flight at the cut.
    in_flight_commit: Option<BTreeMap<u32, u64>>,
    /// False: the model keeps nothing (a run that stores no page data has no
    /// contents to check, and the per-page vectors would cost 32 bytes per
    /// logical page: 2 GB at 512 GiB).
    tracking: bool,
}

impl TxModel {
    pub fn new(logical_pages: u32) -> TxModel {
        TxModel {
            durable: vec![None; logical_pages as usize],
            latest: vec![None; logical_pages as usize],
            since_durable: BTreeMap::new(),
            open: BTreeMap::new(),
            in_flight_commit: None,
            tracking: true,
        }
    }

    /// A model that tracks nothing: every query answers "never written".
    pub fn untracked() -> TxModel {
        TxModel {
            durable: Vec::new(),
            latest: Vec::new(),
            since_durable: BTreeMap::new(),
            open: BTreeMap::new(),
            in_flight_commit: None,
            tracking: false,
        }
    }

    /// A write or trim that may have reached the device (acknowledged or in flight).
    pub fn candidate(&mut self, lpn: u32, value: Value) {
        if !self.tracking {
            return;
        }
        self.since_durable.entry(lpn).or_default().push(value);
    }

    /// A write or trim that returned.
    pub fn acknowledged(&mut self, lpn: u32, value: Value) {
        if !self.tracking {
            return;
        }
        self.candidate(lpn, value);
        self.latest[lpn as usize] = value;
    }

    /// A flush returned: everything visible before it is durable.
    pub fn flushed(&mut self) {
        for (lpn, _) in std::mem::take(&mut self.since_durable) {
            self.durable[lpn as usize] = self.latest[lpn as usize];
        }
    }

    pub fn begun(&mut self, tid: u32) {
        if !self.tracking {
            return;
        }
        self.open.insert(tid, BTreeMap::new());
    }

    pub fn tx_written(&mut self, tid: u32, lpn: u32, version: u64) {
        if !self.tracking {
            return;
        }
        self.open.entry(tid).or_default().insert(lpn, version);
    }

    /// A commit returned: the transaction's writes are visible and durable.
    pub fn committed(&mut self, tid: u32) {
        for (lpn, v) in self.open.remove(&tid).unwrap_or_default() {
            self.latest[lpn as usize] = Some(v);
            self.durable[lpn as usize] = Some(v);
            self.since_durable.remove(&lpn);
        }
    }

    /// A commit in flight at the cut: its writes may be visible, all or none.
    pub fn commit_in_flight(&mut self, tid: u32) {
        let writes = self.open.remove(&tid).unwrap_or_default();
        for (&lpn, &v) in &writes {
            self.candidate(lpn, Some(v));
        }
        self.in_flight_commit = Some(writes);
    }

    /// An abort (returned or not): nothing of the transaction is ever visible.
    pub fn aborted(&mut self, tid: u32) {
        self.open.remove(&tid);
    }

    pub fn latest(&self, lpn: u32) -> Value {
        if !self.tracking {
            return None;
        }
        self.latest[lpn as usize]
    }

    /// What a transactional read must return.
    pub fn tx_read(&self, tid: u32, lpn: u32) -> Value {
        self.open.get(&tid).and_then(|w| w.get(&lpn)).copied().or(self.latest(lpn))
    }

    /// Values a page may hold after a cut.
    pub fn allowed(&self, lpn: u32) -> Vec<Value> {
        let mut v = vec![self.durable[lpn as usize]];
        if let Some(more) = self.since_durable.get(&lpn) {
            v.extend(more.iter().copied());
        }
        v
    }

    /// For the commit in flight at the cut: `Some(message)` if some but not all of
    /// its pages show its writes. `value_of(lpn)` is the page's recovered value.
    pub fn atomic_violation(&self, value_of: impl Fn(u32) -> Value) -> Option<String> {
        let writes = self.in_flight_commit.as_ref()?;
        let shown: Vec<u32> = writes
            .iter()
            .filter(|&(&lpn, &v)| value_of(lpn) == Some(v))
            .map(|(&l, _)| l)
            .collect();
        if shown.is_empty() || shown.len() == writes.len() {
            None
        } else {
            Some(format!(
                "the commit in flight is partly visible: pages {shown:?} of {:?}",
                writes.keys().collect::<Vec<_>>()
            ))
        }
    }
}
