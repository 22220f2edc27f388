//! A host-side redo journal, for running transactional workloads on a device
//! without transactions (`plain`): what a host (a file system, a database) has to
//! do there to make a group of page writes atomic.
//!
//! Transactions are buffered in host memory (the page cache). At commit their
//! pages are written to a journal area (the last logical pages of the device),
//! followed by a commit record page; a flush makes the journal durable; then the
//! pages are written in place and flushed again, after which the journal can be
//! reused. An abort drops the buffer. Every committed page is written twice,
//! plus one record page and two flushes per transaction: the cost X-FTL removes.
//!
//! This adapter is for measuring that cost (`txftl run`); journal replay after a
//! crash is not implemented here.

use std::collections::BTreeMap;
use txftl_ftl::AnyDevice;
use txftl_ftl::Op;
use txftl_ftl::{DeviceError, Lpn, Tid};

#[derive(Clone)]
pub struct HostJournal {
    /// First logical page of the journal area.
    pub journal_start: Lpn,
    pub journal_pages: u32,
    open: BTreeMap<Tid, BTreeMap<Lpn, Vec<u8>>>,
    record: Vec<u8>,
    /// Pages written to the journal (data and commit records).
    pub journal_writes: u64,
}

impl HostJournal {
    /// Reserves the last `pages_per_tx + 1` logical pages of a device with
    /// `logical_pages` pages.
    pub fn new(logical_pages: u32, pages_per_tx: u32, page_size: u32) -> Result<HostJournal, DeviceError> {
        let journal_pages = pages_per_tx + 1;
        if journal_pages >= logical_pages {
            return Err(DeviceError::Config(format!(
                "a journal of {journal_pages} pages does not fit {logical_pages} logical pages"
            )));
        }
        Ok(HostJournal {
            journal_start: logical_pages - journal_pages,
            journal_pages,
            open: BTreeMap::new(),
            record: vec![0; page_size as usize],
            journal_writes: 0,
        })
    }

    /// Runs one transactional operation through the journal. Returns `None` for
    /// operations that are not transactional (the caller sends them to the device).
    pub fn apply(&mut self, dev: &mut dyn AnyDevice, op: Op, data: &[u8], read_buf: &mut [u8]) -> Option<Result<(), DeviceError>> {
        Some(match op {
            Op::Begin(tid) => {
                self.open.insert(tid, BTreeMap::new());
                Ok(())
            }
            Op::TxWrite(tid, lpn) | Op::WriteEnd(tid, lpn) => {
                self.open.entry(tid).or_default().insert(lpn, data.to_vec());
                Ok(())
            }
            Op::TxRead(tid, lpn) => match self.open.get(&tid).and_then(|w| w.get(&lpn)) {
                Some(page) => {
                    read_buf.copy_from_slice(page);
                    Ok(())
                }
                None => dev.read(lpn, read_buf).map(|_| ()),
            },
            Op::Abort(tid) => {
                self.open.remove(&tid);
                Ok(())
            }
            Op::Commit(tid) => {
                let writes = self.open.remove(&tid).unwrap_or_default();
                self.commit(dev, tid, &writes)
            }
            _ => return None,
        })
    }

    fn commit(&mut self, dev: &mut dyn AnyDevice, tid: Tid, writes: &BTreeMap<Lpn, Vec<u8>>) -> Result<(), DeviceError> {
        if writes.is_empty() {
            return Ok(());
        }
        if writes.len() as u32 + 1 > self.journal_pages {
            return Err(DeviceError::Config(format!(
                "transaction {tid} wrote {} pages, more than the journal holds",
                writes.len()
            )));
        }
        for (i, page) in writes.values().enumerate() {
            dev.write(self.journal_start + i as u32, page)?;
        }
        // The commit record: transaction id and the home of each journaled page.
        if !self.record.is_empty() {
            self.record.fill(0);
            self.record[0..4].copy_from_slice(&tid.to_le_bytes());
            for (i, lpn) in writes.keys().enumerate().take((self.record.len() - 4) / 4) {
                self.record[4 + 4 * i..8 + 4 * i].copy_from_slice(&lpn.to_le_bytes());
            }
        }
        dev.write(self.journal_start + writes.len() as u32, &self.record)?;
        self.journal_writes += writes.len() as u64 + 1;
        dev.flush()?;
        for (&lpn, page) in writes {
            dev.write(lpn, page)?;
        }
        dev.flush()?;
        Ok(())
    }
}
