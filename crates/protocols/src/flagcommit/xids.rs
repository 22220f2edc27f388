//! The transaction ids both Flag Commit cores hand out: XIDs never reused
//! (a mount resumes above the largest found), and the open transactions'
//! host ids to their XIDs.

use std::collections::BTreeMap;
use txftl_ftl::{DeviceError, Result, Tid};

#[derive(Clone, Debug)]
pub struct Xids {
    protocol: &'static str,
    next: u32,
    /// The largest XID the format holds.
    max: u32,
    by_tid: BTreeMap<Tid, u32>,
}

impl Xids {
    pub fn new(protocol: &'static str, max: u32) -> Xids {
        Xids {
            protocol,
            next: 1,
            max,
            by_tid: BTreeMap::new(),
        }
    }

    /// A fresh XID: never one found on flash or handed out before; a typed
    /// error once the format's are used up.
    pub fn fresh(&mut self) -> Result<u32> {
        let xid = self.next;
        if xid > self.max {
            return Err(DeviceError::WornOut(format!("{} transaction ids are used up", self.protocol)));
        }
        self.next = xid + 1;
        Ok(xid)
    }

    /// After a recovery: XIDs resume above `max_found`.
    pub fn resume_after(&mut self, max_found: u32) {
        self.next = self.next.max(max_found.saturating_add(1));
    }

    /// Host transaction `tid` begins: its fresh XID.
    pub fn begin(&mut self, tid: Tid) -> Result<u32> {
        if tid == 0 {
            return Err(DeviceError::InvalidTransactionId);
        }
        if self.by_tid.contains_key(&tid) {
            return Err(DeviceError::TransactionExists(tid));
        }
        let xid = self.fresh()?;
        self.by_tid.insert(tid, xid);
        Ok(xid)
    }

    /// Open transaction `tid`'s XID.
    pub fn xid(&self, tid: Tid) -> Result<u32> {
        self.by_tid.get(&tid).copied().ok_or(DeviceError::UnknownTransaction(tid))
    }

    /// `tid` ended (committed or aborted): its XID.
    pub fn end(&mut self, tid: Tid) -> Option<u32> {
        self.by_tid.remove(&tid)
    }

    pub fn open_count(&self) -> usize {
        self.by_tid.len()
    }

    /// The open transactions: host id, XID.
    pub fn open(&self) -> impl Iterator<Item = (Tid, u32)> + '_ {
        self.by_tid.iter().map(|(&t, &x)| (t, x))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// XIDs rise, resume above what a mount found, run out with a typed
    /// error, and a host id is refused twice or as 0.
    #[test]
    fn xids_rise_resume_and_run_out() {
        let mut x = Xids::new("t", 5);
        assert_eq!(x.begin(7).unwrap(), 1);
        assert!(matches!(x.begin(7), Err(DeviceError::TransactionExists(7))));
        assert!(matches!(x.begin(0), Err(DeviceError::InvalidTransactionId)));
        x.resume_after(3);
        assert_eq!(x.fresh().unwrap(), 4);
        assert_eq!((x.xid(7).unwrap(), x.open_count()), (1, 1));
        assert_eq!(x.end(7), Some(1));
        assert!(x.xid(7).is_err());
        assert_eq!(x.fresh().unwrap(), 5);
        assert!(matches!(x.fresh(), Err(DeviceError::WornOut(m)) if m.contains("used up")));
    }
}
