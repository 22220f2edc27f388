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
    /// False: the model records nothing (`untracked`).
    tracked: bool,
    durable: Vec<Value>,
    latest: Vec<Value>,
    /// Values made visible (or maybe, if in flight) since the page's durable value.
    since_durable: BTreeMap<u32, Vec<Value>>,
    /// Open transactions: their latest write of each page.
    open: BTreeMap<u32, BTreeMap<u32, u64>>,
    /// The transaction whose commit was in flight at the cut.
    in_flight_commit: Option<BTreeMap<u32, u64>>,
}

impl TxModel {
    pub fn new(logical_pages: u32) -> TxModel {
        TxModel {
            tracked: true,
            durable: vec![None; logical_pages as usize],
            latest: vec![None; logical_pages as usize],
            since_durable: BTreeMap::new(),
            open: BTreeMap::new(),
            in_flight_commit: None,
        }
    }

    /// The model of a device that recovered to `values` (one per logical
    /// page): each is durable, no transaction is open. A run that goes on
    /// after a cut and recovery starts from what the recovery returned.
    pub fn recovered(values: &[Value]) -> TxModel {
        TxModel {
            durable: values.to_vec(),
            latest: values.to_vec(),
            ..TxModel::new(0)
        }
    }

    /// A model that records nothing, for runs whose reads cannot be checked
    /// (metadata-only data): it costs no memory per logical page (32 bytes
    /// each otherwise), and every query answers "never written".
    pub fn untracked() -> TxModel {
        TxModel {
            tracked: false,
            ..TxModel::new(0)
        }
    }

    /// A write or trim that may have reached the device (acknowledged or in flight).
    pub fn candidate(&mut self, lpn: u32, value: Value) {
        if self.tracked {
            self.since_durable.entry(lpn).or_default().push(value);
        }
    }

    /// A write or trim that returned.
    pub fn acknowledged(&mut self, lpn: u32, value: Value) {
        if !self.tracked {
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
        if self.tracked {
            self.open.insert(tid, BTreeMap::new());
        }
    }

    pub fn tx_written(&mut self, tid: u32, lpn: u32, version: u64) {
        if self.tracked {
            self.open.entry(tid).or_default().insert(lpn, version);
        }
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
        self.latest.get(lpn as usize).copied().flatten()
    }

    /// What a transactional read must return.
    pub fn tx_read(&self, tid: u32, lpn: u32) -> Value {
        self.open.get(&tid).and_then(|w| w.get(&lpn)).copied().or(self.latest(lpn))
    }

    /// Values a page may hold after a cut.
    pub fn allowed(&self, lpn: u32) -> Vec<Value> {
        let mut v = vec![self.durable.get(lpn as usize).copied().flatten()];
        if let Some(more) = self.since_durable.get(&lpn) {
            v.extend(more.iter().copied());
        }
        v
    }

    /// The version the commit in flight at the cut wrote to `lpn`, if it did.
    pub fn in_flight_version(&self, lpn: u32) -> Value {
        self.in_flight_commit.as_ref()?.get(&lpn).copied()
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_untracked_model_records_nothing() {
        let mut m = TxModel::untracked();
        m.acknowledged(5, Some(1));
        m.begun(1);
        m.tx_written(1, 7, 2);
        m.committed(1);
        m.flushed();
        assert_eq!((m.latest(5), m.tx_read(1, 7)), (None, None));
        assert_eq!(m.allowed(5), vec![None]);
        let mut t = TxModel::new(10);
        t.acknowledged(5, Some(1));
        assert_eq!(t.latest(5), Some(1));
    }
}
