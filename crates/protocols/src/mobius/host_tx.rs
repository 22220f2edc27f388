//! The transactional calls (`begin/write_tx/read_tx/commit/abort`, every
//! host path's) on Möbius: each transaction runs as a buffered static
//! transaction (one S-SWRITE at commit) or as the dynamic one, as the
//! option `dynamic-pct` draws from its id.
//!
//! Static is the default: a transaction's pages stay in device DRAM until
//! its commit, so several may be open at once, others never see them, and
//! nothing is written for an abort. A dynamic one sends its pages as they
//! come (HEAD, BODY...; the last held back to become the REAR at commit),
//! one at a time, and no other write may come while its chain is open.

use super::device::HostDynamic;
use super::Mobius;
use std::collections::BTreeMap;
use txftl_ftl::extensions::{DynamicPos, SwriteAck};
use txftl_ftl::{DeviceError, Lpn, Result, Tid};

impl Mobius {
    /// Whether transaction `tid` runs as a dynamic one: a fixed draw from
    /// its id (so a replay draws the same), `dynamic-pct` in 100.
    fn runs_dynamic(&self, tid: Tid) -> bool {
        let pct = self.ftl.hooks().set.dynamic_pct;
        let draw = ((tid as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40) % 100;
        draw < pct as u64
    }

    fn is_dynamic(&self, tid: Tid) -> bool {
        self.dynamic.as_ref().is_some_and(|d| d.tid == tid)
    }

    /// A dynamic transaction whose chain a failed call dropped takes no
    /// more pages and no commit: only its abort.
    fn check_not_failed(&self, tid: Tid) -> Result<()> {
        match &self.dynamic {
            Some(d) if d.tid == tid && d.failed => Err(DeviceError::CallOrder(format!(
                "transaction {tid} lost its pages when a call failed: abort it"
            ))),
            _ => Ok(()),
        }
    }

    pub(super) fn host_begin(&mut self, tid: Tid) -> Result<u64> {
        if tid == 0 {
            return Err(DeviceError::InvalidTransactionId);
        }
        if self.open.contains_key(&tid) || self.is_dynamic(tid) {
            return Err(DeviceError::TransactionExists(tid));
        }
        if !self.runs_dynamic(tid) {
            self.open.insert(tid, BTreeMap::new());
            self.ftl.tx_begin(tid);
            return Ok(0);
        }
        if let Some(d) = &self.dynamic {
            return Err(DeviceError::CallOrder(format!(
                "transaction {tid} would be a second dynamic transaction ({} is open): one at a time \
                 (crashtest/run: --concurrency 1 --tx-exclusive)",
                d.tid
            )));
        }
        self.dynamic = Some(HostDynamic {
            tid,
            held: None,
            failed: false,
        });
        self.ftl.tx_begin(tid);
        Ok(0)
    }

    pub(super) fn host_write_tx(&mut self, tid: Tid, lpn: Lpn, data: &[u8]) -> Result<u64> {
        self.ftl.check_lpn(lpn)?;
        self.ftl.check_data_len(data.len())?;
        if !self.is_dynamic(tid) {
            let max = self.tx_pages_max();
            let tx = self.open_tx(tid)?;
            if !tx.contains_key(&lpn) && tx.len() as u32 >= max {
                return Err(DeviceError::TableFull { capacity: max });
            }
            tx.insert(lpn, data.to_vec());
            return Ok(0);
        }
        self.check_not_failed(tid)?;
        let held = self.dynamic.as_mut().expect("dynamic").held.take();
        let Some((held_lpn, held_data)) = held else {
            self.dynamic.as_mut().expect("dynamic").held = Some((lpn, data.to_vec()));
            return Ok(0);
        };
        if held_lpn == lpn {
            self.dynamic.as_mut().expect("dynamic").held = Some((lpn, data.to_vec()));
            return Ok(0);
        }
        // The held page goes to flash; this one is held in its place.
        let pos = if self.chain_open() { DynamicPos::Body } else { DynamicPos::Head };
        match self.dynamic_page(held_lpn, &held_data, pos) {
            Ok(t) => {
                self.dynamic.as_mut().expect("dynamic").held = Some((lpn, data.to_vec()));
                Ok(t)
            }
            Err(e) => {
                let d = self.dynamic.as_mut().expect("dynamic");
                if pos == DynamicPos::Body && self.ftl.hooks().chain.is_none() {
                    // The chain is gone (`dynamic_page` dropped it): the
                    // transaction cannot go on without the pages it had.
                    d.failed = true;
                } else {
                    // Refused before a page was written, or its HEAD:
                    // nothing of it is on flash but the held page stays.
                    d.held = Some((held_lpn, held_data));
                }
                Err(e)
            }
        }
    }

    pub(super) fn host_read_tx(&mut self, tid: Tid, lpn: Lpn, buf: &mut [u8]) -> Result<u64> {
        self.ftl.check_lpn(lpn)?;
        self.ftl.check_data_len(buf.len())?;
        if !self.is_dynamic(tid) {
            if let Some(data) = self.open_tx(tid)?.get(&lpn) {
                buf.copy_from_slice(data);
                return Ok(0);
            }
            return self.ftl.read_page(lpn, buf);
        }
        if let Some((_, data)) = self.dynamic.as_ref().and_then(|d| d.held.as_ref()).filter(|h| h.0 == lpn) {
            buf.copy_from_slice(data);
            return Ok(0);
        }
        match self.read_in_chain(lpn, buf)? {
            Some(t) => Ok(t),
            None => self.ftl.read_page(lpn, buf),
        }
    }

    pub(super) fn host_commit(&mut self, tid: Tid) -> Result<u64> {
        if !self.is_dynamic(tid) {
            if !self.open.contains_key(&tid) {
                return Err(DeviceError::UnknownTransaction(tid));
            }
            // Refused before the buffer is taken: the transaction stays open.
            self.refuse_in_chain("a static transaction's commit")?;
            let tx = self.open.remove(&tid).ok_or(DeviceError::UnknownTransaction(tid))?;
            // Its SWRITE counts the commit (an empty one writes nothing).
            self.ftl.tx_close_uncounted(tid);
            let pages: Vec<(Lpn, &[u8])> = tx.iter().map(|(&l, d)| (l, d.as_slice())).collect();
            if pages.is_empty() {
                return Ok(0);
            }
            let ack = if self.ftl.hooks().set.async_commit {
                SwriteAck::Record
            } else {
                SwriteAck::AllPages
            };
            return self.static_tx(tid, &pages, ack);
        }
        self.check_not_failed(tid)?;
        let d = self.dynamic.take().expect("dynamic");
        // Its REAR counts the commit (with no page held, nothing is written).
        self.ftl.tx_close_uncounted(tid);
        match d.held {
            // A REAR with no chain open is a one-page transaction.
            Some((lpn, data)) => self.dynamic_page(lpn, &data, DynamicPos::Rear),
            None => Ok(0),
        }
    }

    /// A static transaction's buffer is dropped (nothing of it reached the
    /// flash); a dynamic one's chain, if begun, is aborted on flash.
    pub(super) fn host_abort(&mut self, tid: Tid) -> Result<u64> {
        if !self.is_dynamic(tid) {
            self.open.remove(&tid).ok_or(DeviceError::UnknownTransaction(tid))?;
            self.ftl.tx_abort(tid);
            return Ok(0);
        }
        self.dynamic = None;
        if self.chain_open() {
            // The chain's abort counts it.
            self.ftl.tx_close_uncounted(tid);
            return self.dynamic_abort();
        }
        self.ftl.tx_abort(tid);
        Ok(0)
    }
}
