//! Running a workload on a device: the driver that turns operations into device
//! calls (feeding the reference model). The measured run behind `txftl run`,
//! with its concurrent clients, is `txftl_host::run`.

use crate::data::{self, Content};
use crate::journal::HostJournal;
use crate::model::TxModel;
use std::collections::BTreeMap;
use txftl_ftl::extensions::DynamicPos;
use txftl_ftl::AnyDevice;
use txftl_ftl::Op;
use txftl_ftl::{DeviceError, Extension, Lpn, Tid};

/// Issues operations with versioned page contents and keeps the model in step.
#[derive(Clone)]
pub struct Driver {
    /// Transactions go through a host journal (devices without transactions).
    pub journal: Option<HostJournal>,
    next_version: u64,
    buf: Vec<u8>,
    store_data: bool,
    /// A cut at an instant of the device clock (`inflight.rs`): an operation
    /// that returns after this time had not returned when power failed, so
    /// it counts as in flight (and power is cut at once); `None`: off.
    pub ack_by_ns: Option<u64>,
    /// Static transactions' pages the host holds until their swrite
    /// (`Op::Stage`): page, version.
    staged: BTreeMap<Tid, BTreeMap<Lpn, u64>>,
    /// The dynamic transaction whose chain is open (`Op::Dwrite`).
    dynamic: Option<Tid>,
}

/// What one operation did, as the harness sees it.
#[derive(Debug)]
pub enum Outcome {
    Done,
    /// The device's transaction table was full of uncommitted entries: the
    /// host aborted the transaction that could not write (as a host would), and
    /// the stream must issue nothing more for it.
    TableFullAborted(u32),
    /// A read returned something other than the latest write.
    WrongRead {
        lpn: u32,
        expected: Option<u64>,
        got: Content,
    },
}

impl Driver {
    /// Checks what a read returned against what the model expects.
    fn check_read(&self, lpn: u32, expected: Option<u64>, model: &TxModel) -> Outcome {
        if !self.store_data {
            return Outcome::Done;
        }
        let got = data::decode(&self.buf);
        match (got, expected) {
            (Content::Unwritten, None) => Outcome::Done,
            (Content::Written { lpn: l, version }, Some(v)) if l == model.page_named(lpn, v) && version == v => Outcome::Done,
            _ => Outcome::WrongRead { lpn, expected, got },
        }
    }

    /// A transactional operation: to the device, or through the host journal.
    fn tx_call(&mut self, dev: &mut dyn AnyDevice, op: Op) -> Result<(), DeviceError> {
        if let Some(j) = &mut self.journal {
            let mut scratch = std::mem::take(&mut self.buf);
            let data = scratch.clone();
            let r = j.apply(dev, op, &data, &mut scratch).unwrap_or(Ok(()));
            self.buf = scratch;
            return r;
        }
        op.issue(dev, &mut self.buf).map(|_| ())
    }

    /// `r`, or `PowerLoss` if the operation returned after the instant of the
    /// cut: the host never saw it return.
    fn by_deadline<T>(&self, dev: &mut dyn AnyDevice, r: Result<T, DeviceError>) -> Result<T, DeviceError> {
        match (r, self.ack_by_ns) {
            (Ok(_), Some(t)) if dev.now_ns() > t => {
                dev.nand_mut().power_off();
                Err(DeviceError::PowerLoss)
            }
            (r, _) => r,
        }
    }

    fn deadline_call(&mut self, dev: &mut dyn AnyDevice, op: Op) -> Result<(), DeviceError> {
        let r = self.tx_call(dev, op);
        self.by_deadline(dev, r)
    }

    /// Can plain writes bypass [`Driver::apply`] (`Device::write_run`)? Only
    /// when it would do nothing but count their versions: no page data to
    /// write, no model to feed, no instant cut to answer by.
    pub fn writes_bypass(&self, model: &TxModel) -> bool {
        !self.store_data && self.ack_by_ns.is_none() && !model.tracked()
    }

    /// `pages` plain writes went to the device without [`Driver::apply`]
    /// (see [`Driver::writes_bypass`]): their versions are used up as if
    /// they had been applied.
    pub fn applied_without_data(&mut self, pages: u64) {
        assert!(!self.store_data, "writes with page data go through apply");
        self.next_version += pages;
    }

    fn next_page(&mut self, lpn: u32) -> u64 {
        let version = self.next_version;
        self.next_version += 1;
        if self.store_data {
            data::fill(&mut self.buf, lpn, version);
        }
        version
    }
}

impl Driver {
    pub fn new(page_size: u32, store_data: bool) -> Driver {
        Driver {
            journal: None,
            next_version: 1,
            buf: vec![0; if store_data { page_size as usize } else { 0 }],
            store_data,
            ack_by_ns: None,
            staged: BTreeMap::new(),
            dynamic: None,
        }
    }

    /// The driver of a host that goes on after a power cut and recovery:
    /// versions go on from where they were (no value is written twice),
    /// and the transactions the host held (staged pages, a dynamic chain)
    /// are gone with the device's DRAM.
    pub fn after_power_cut(&self) -> Driver {
        Driver {
            staged: BTreeMap::new(),
            dynamic: None,
            ..self.clone()
        }
    }

    pub fn apply(&mut self, dev: &mut dyn AnyDevice, op: Op, model: &mut TxModel) -> Result<Outcome, DeviceError> {
        match op {
            Op::Write(lpn) => {
                let version = self.next_page(lpn);
                let r = dev.write(lpn, &self.buf);
                let r = self.by_deadline(dev, r);
                note(model, &r, lpn, Some(version));
                r.map(|_| Outcome::Done)
            }
            Op::Trim(lpn) => {
                let r = dev.trim(lpn);
                let r = self.by_deadline(dev, r);
                note(model, &r, lpn, None);
                r.map(|_| Outcome::Done)
            }
            Op::Flush => {
                let r = dev.flush();
                let r = self.by_deadline(dev, r);
                match r {
                    Ok(_) => model.flushed(),
                    Err(DeviceError::PowerLoss) => model.flush_in_flight(),
                    Err(_) => {}
                }
                r.map(|_| Outcome::Done)
            }
            Op::Read(lpn) => {
                let r = dev.read(lpn, &mut self.buf);
                self.by_deadline(dev, r).map(|_| self.check_read(lpn, model.latest(lpn), model))
            }
            Op::Begin(tid) => self.deadline_call(dev, op).map(|_| {
                model.begun(tid);
                Outcome::Done
            }),
            // NoLgn's end-flagged last page is a transaction's write, issued
            // through the extension call (`Op::issue`); once it may be on
            // flash, recovery may commit the transaction.
            Op::TxWrite(tid, lpn) | Op::WriteEnd(tid, lpn) => {
                let version = self.next_page(lpn);
                let end = matches!(op, Op::WriteEnd(..));
                match self.deadline_call(dev, op) {
                    Ok(()) => {
                        model.tx_written(tid, lpn, version);
                        if end {
                            model.end_written(tid);
                        }
                        Ok(Outcome::Done)
                    }
                    Err(DeviceError::PowerLoss) if end => {
                        model.tx_written(tid, lpn, version);
                        model.end_written(tid);
                        Err(DeviceError::PowerLoss)
                    }
                    Err(DeviceError::TableFull { .. }) => {
                        self.apply(dev, Op::Abort(tid), model)?;
                        Ok(Outcome::TableFullAborted(tid))
                    }
                    Err(e) => Err(e),
                }
            }
            Op::TxRead(tid, lpn) => self
                .deadline_call(dev, op)
                .map(|_| self.check_read(lpn, model.tx_read(tid, lpn), model)),
            Op::Commit(tid) => {
                let r = self.deadline_call(dev, op);
                self.commit_returned(dev, tid, &r, model);
                r.map(|_| Outcome::Done)
            }
            Op::Abort(tid) => {
                let r = self.deadline_call(dev, op);
                model.aborted(tid);
                r.map(|_| Outcome::Done)
            }
            Op::WriteRemappable(lpn, target) => {
                // The page holds what it may become: `target`'s version. A
                // device without remap takes it as a write (a WAL on a plain
                // device, whose checkpoint copies).
                let version = self.next_page(target);
                let r = match dev.offers(Extension::Remap) {
                    true => op.issue(dev, &mut self.buf),
                    false => dev.write(lpn, &self.buf),
                };
                let r = self.by_deadline(dev, r);
                model.names(version, target);
                note(model, &r, lpn, Some(version));
                r.map(|_| Outcome::Done)
            }
            Op::Remap(from, to) => self.remap(dev, from, to, model),
            Op::Stage(..) | Op::Swrite(..) | Op::Sread(_) | Op::Dwrite(..) | Op::Dabort(_) => self.static_dynamic(dev, op, model),
        }
    }

    /// What a commit's return (or its failure) tells the model.
    fn commit_returned<T>(&self, dev: &mut dyn AnyDevice, tid: Tid, r: &Result<T, DeviceError>, model: &mut TxModel) {
        match r {
            // Returned before the instant of the cut, durable after it.
            Ok(_) if self.ack_by_ns.is_some_and(|t| dev.commit_durable_ns() > t) => model.committed_not_durable(tid),
            Ok(_) => model.committed(tid),
            Err(DeviceError::PowerLoss) => model.commit_in_flight(tid),
            Err(_) => {}
        }
    }

    /// Möbius's static and dynamic transactions, through their own calls.
    fn static_dynamic(&mut self, dev: &mut dyn AnyDevice, op: Op, model: &mut TxModel) -> Result<Outcome, DeviceError> {
        match op {
            Op::Stage(tid, lpn) => {
                let version = self.next_page(lpn);
                let pages = self.staged.entry(tid).or_default();
                if pages.is_empty() {
                    model.begun(tid);
                }
                pages.insert(lpn, version);
                model.tx_written(tid, lpn, version);
                Ok(Outcome::Done)
            }
            Op::Swrite(tid, _) => {
                // A trace may name an swrite with nothing staged: the host
                // refuses it, as it refuses a call out of order.
                let Some(staged) = self.staged.remove(&tid) else {
                    return Err(DeviceError::CallOrder(format!("transaction {tid}'s swrite with no page staged")));
                };
                let datas: Vec<(Lpn, Vec<u8>)> = staged.iter().map(|(&l, &v)| (l, self.page(l, v))).collect();
                let pages: Vec<(Lpn, &[u8])> = datas.iter().map(|(l, d)| (*l, d.as_slice())).collect();
                let r = op.issue_swrite(dev, &pages);
                let r = self.by_deadline(dev, r);
                if let Err(DeviceError::TableFull { .. }) = r {
                    model.aborted(tid);
                    return Ok(Outcome::TableFullAborted(tid));
                }
                self.commit_returned(dev, tid, &r, model);
                r.map(|_| Outcome::Done)
            }
            Op::Sread(lpn) => {
                let r = op.issue(dev, &mut self.buf);
                self.by_deadline(dev, r).map(|_| self.check_read(lpn, model.latest(lpn), model))
            }
            Op::Dwrite(tid, lpn, pos) => {
                if self.dynamic != Some(tid) {
                    // The calls name no transaction: one chain at a time.
                    if let Some(open) = self.dynamic {
                        return Err(DeviceError::CallOrder(format!(
                            "transaction {tid}'s dwrite while dynamic transaction {open} is open"
                        )));
                    }
                    self.dynamic = Some(tid);
                    model.begun(tid);
                }
                let version = self.next_page(lpn);
                let r = op.issue(dev, &mut self.buf);
                let r = self.by_deadline(dev, r);
                if matches!(r, Ok(_) | Err(DeviceError::PowerLoss)) {
                    model.tx_written(tid, lpn, version);
                }
                if pos == DynamicPos::Rear {
                    // The REAR is the commit.
                    self.dynamic = None;
                    self.commit_returned(dev, tid, &r, model);
                }
                r.map(|_| Outcome::Done)
            }
            Op::Dabort(tid) => {
                if self.dynamic != Some(tid) {
                    return Err(DeviceError::CallOrder(format!(
                        "a dabort of transaction {tid}, whose chain is not open"
                    )));
                }
                self.dynamic = None;
                let r = op.issue(dev, &mut self.buf);
                let r = self.by_deadline(dev, r);
                model.aborted(tid);
                r.map(|_| Outcome::Done)
            }
            _ => unreachable!("{op:?} is not a static or dynamic transaction's call"),
        }
    }

    /// Page `lpn`'s contents at `version` (empty when the run keeps no data).
    fn page(&self, lpn: Lpn, version: u64) -> Vec<u8> {
        let mut page = vec![0; self.buf.len()];
        if self.store_data {
            data::fill(&mut page, lpn, version);
        }
        page
    }

    /// A remap; where the device refuses it (it forgot the page's target
    /// at a mount), the host copies the page, as SQLite's checkpoint does
    /// on a device without remap.
    fn remap(&mut self, dev: &mut dyn AnyDevice, from: u32, to: u32, model: &mut TxModel) -> Result<Outcome, DeviceError> {
        let r = Op::Remap(from, to).issue(dev, &mut self.buf);
        match self.by_deadline(dev, r) {
            Ok(_) => {
                model.remapped(from, to);
                Ok(Outcome::Done)
            }
            Err(DeviceError::Unsupported { .. }) => {
                let r = dev.read(from, &mut self.buf);
                self.by_deadline(dev, r)?;
                let r = dev.write(to, &self.buf);
                let r = self.by_deadline(dev, r);
                let value = model.latest(from);
                note(model, &r, to, value);
                r.map(|_| Outcome::Done)
            }
            Err(e) => Err(e),
        }
    }
}

fn note(model: &mut TxModel, r: &Result<u64, DeviceError>, lpn: u32, value: Option<u64>) {
    match r {
        Ok(_) => model.acknowledged(lpn, value),
        // In flight at the cut: it may or may not have reached the flash.
        Err(DeviceError::PowerLoss) => model.candidate(lpn, value),
        Err(_) => {}
    }
}

/// Reads logical page `lpn` into `buf`: `None` when it handed up data,
/// `Some(Content::Lost)` when the device reported the page lost to bit
/// errors (a loss the checks then judge, not a failed read).
fn read_back(dev: &mut dyn AnyDevice, lpn: u32, buf: &mut [u8]) -> Result<Option<Content>, DeviceError> {
    match dev.read(lpn, buf) {
        Ok(_) => Ok(None),
        Err(DeviceError::DataLost { ppn, .. }) => Ok(Some(Content::Lost { ppn })),
        Err(e) => Err(e),
    }
}

/// Reads every logical page back and decodes it.
pub fn logical_state(dev: &mut dyn AnyDevice) -> Result<Vec<Content>, DeviceError> {
    logical_state_kept(dev, None)
}

/// [`logical_state`], and into `bytes` (when given) the bytes each page
/// read back, one page after the other (a lost page's as its buffer was
/// left): what [`same_logical_state`] compares a later recovery with.
pub fn logical_state_kept(dev: &mut dyn AnyDevice, mut bytes: Option<&mut Vec<u8>>) -> Result<Vec<Content>, DeviceError> {
    let info = dev.info();
    let mut buf = vec![0u8; info.page_size as usize];
    if let Some(b) = bytes.as_deref_mut() {
        b.clear();
        b.reserve(info.logical_pages as usize * buf.len());
    }
    (0..info.logical_pages)
        .map(|lpn| {
            let content = match read_back(dev, lpn, &mut buf)? {
                Some(lost) => lost,
                None => data::decode(&buf),
            };
            if let Some(b) = bytes.as_deref_mut() {
                b.extend_from_slice(&buf);
            }
            Ok(content)
        })
        .collect()
}

/// Reads every logical page back, as [`logical_state`] does, and returns
/// the first page whose content is not `state`'s, with its content (`None`:
/// all the same). `bytes` are what [`logical_state_kept`] read for `state`:
/// a page read back with the same bytes has the same content, so only the
/// others are decoded (decoding checks a CRC over the page, the costliest
/// step of the comparison a crash set makes after every recovery cut).
/// Every page is read, as `logical_state` reads them: a read that fails
/// after a differing page is the error returned.
pub fn same_logical_state(dev: &mut dyn AnyDevice, state: &[Content], bytes: &[u8]) -> Result<Option<(u32, Content)>, DeviceError> {
    let info = dev.info();
    let ps = info.page_size as usize;
    assert_eq!(state.len(), info.logical_pages as usize, "a state of every logical page");
    assert_eq!(bytes.len(), state.len() * ps, "a page of bytes for every logical page");
    let mut buf = vec![0u8; ps];
    let mut first = None;
    for lpn in 0..info.logical_pages {
        let at = lpn as usize;
        let content = match read_back(dev, lpn, &mut buf)? {
            Some(lost) => lost,
            None if !matches!(state[at], Content::Lost { .. }) && buf[..] == bytes[at * ps..(at + 1) * ps] => continue,
            None => data::decode(&buf),
        };
        if first.is_none() && content != state[at] {
            first = Some((lpn, content));
        }
    }
    Ok(first)
}
