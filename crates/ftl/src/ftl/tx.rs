//! The host's transactions as the framework sees them: a protocol reports
//! each one's begin and end here, and the framework counts the commits and
//! aborts. Each end is checked against the transaction's state (begun →
//! committed or aborted): a protocol that ends a transaction it never began,
//! or begins one twice, fails at that call rather than as a wrong count.

use super::Ftl;
use crate::device::Tid;
use crate::hooks::Hooks;

impl<H: Hooks> Ftl<H> {
    /// The host's `begin(tid)`, accepted by the protocol. Panics if `tid`
    /// is open already (the protocol refuses that with `TransactionExists`).
    pub fn tx_begin(&mut self, tid: Tid) {
        assert!(self.open_txs.insert(tid), "tx {tid} begun while it is open");
    }

    /// `tid` committed, at the protocol's commit point: counted in
    /// `commits`. Panics unless it is open.
    pub fn tx_commit(&mut self, tid: Tid) {
        self.tx_close_uncounted(tid);
        self.counters.commits += 1;
    }

    /// `tid` aborted: counted in `aborts`. Panics unless it is open.
    pub fn tx_abort(&mut self, tid: Tid) {
        self.tx_close_uncounted(tid);
        self.counters.aborts += 1;
    }

    /// `tid` ends counted neither way: handed to a call that counts its own
    /// end ([`Ftl::tx_commit_whole`]: Möbius runs a transaction's commit as
    /// an SWRITE), or ended with nothing written (Möbius's commit of an
    /// empty static transaction). Panics unless it is open.
    pub fn tx_close_uncounted(&mut self, tid: Tid) {
        assert!(self.open_txs.remove(&tid), "tx {tid} ended but it is not open");
    }

    /// A transaction no `begin` opened committed whole, in one call
    /// (Möbius's SWRITE, its dynamic chain's REAR): counted in `commits`.
    pub fn tx_commit_whole(&mut self) {
        self.counters.commits += 1;
    }

    /// A transaction no `begin` opened aborted (Möbius's dynamic chain):
    /// counted in `aborts`.
    pub fn tx_abort_whole(&mut self) {
        self.counters.aborts += 1;
    }

    /// Transactions begun and not ended.
    pub fn open_tx_count(&self) -> usize {
        self.open_txs.len()
    }
}

#[cfg(test)]
mod tests {
    use crate::test_hooks::tiny_bare as ftl;

    #[test]
    fn commits_and_aborts_are_counted_at_the_end_of_an_open_transaction() {
        let mut f = ftl();
        f.tx_begin(1);
        f.tx_begin(2);
        f.tx_commit(1);
        f.tx_abort(2);
        f.tx_commit_whole();
        f.tx_begin(3);
        f.tx_close_uncounted(3);
        let s = f.device_stats();
        assert_eq!((s.commits, s.aborts, f.open_tx_count()), (2, 1, 0));
    }

    #[test]
    #[should_panic(expected = "not open")]
    fn a_commit_of_a_transaction_not_open_is_a_bug() {
        let mut f = ftl();
        f.tx_begin(1);
        f.tx_commit(1);
        f.tx_commit(1);
    }

    #[test]
    #[should_panic(expected = "while it is open")]
    fn a_second_begin_is_a_bug() {
        let mut f = ftl();
        f.tx_begin(1);
        f.tx_begin(1);
    }
}
