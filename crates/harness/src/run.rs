//! Running a workload on a device: the driver that turns operations into device
//! calls (feeding the reference model), and the measured run behind `txftl run`.

use crate::data::{self, Content};
use crate::journal::HostJournal;
use crate::model::TxModel;
use crate::workload::{Op, OpStream, WorkloadKind, WorkloadSpec};
use serde::Serialize;
use std::time::Instant;
use txftl_ftl::{DeviceError, DeviceStats};
use txftl_nand::{PowerCut, Torn};
use txftl_protocols::AnyDevice;

/// Issues operations with versioned page contents and keeps the model in step.
pub struct Driver {
    /// Transactions go through a host journal (devices without transactions).
    pub journal: Option<HostJournal>,
    next_version: u64,
    buf: Vec<u8>,
    store_data: bool,
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
    fn check_read(&self, lpn: u32, expected: Option<u64>) -> Outcome {
        if !self.store_data {
            return Outcome::Done;
        }
        let got = data::decode(&self.buf);
        match (got, expected) {
            (Content::Unwritten, None) => Outcome::Done,
            (Content::Written { lpn: l, version }, Some(v)) if l == lpn && version == v => Outcome::Done,
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
        match op {
            Op::Begin(tid) => dev.begin(tid).map(|_| ()),
            Op::TxWrite(tid, lpn) => dev.write_tx(tid, lpn, &self.buf).map(|_| ()),
            Op::TxRead(tid, lpn) => dev.read_tx(tid, lpn, &mut self.buf).map(|_| ()),
            Op::Commit(tid) => dev.commit(tid).map(|_| ()),
            Op::Abort(tid) => dev.abort(tid).map(|_| ()),
            _ => Ok(()),
        }
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
        }
    }

    pub fn apply(&mut self, dev: &mut dyn AnyDevice, op: Op, model: &mut TxModel) -> Result<Outcome, DeviceError> {
        match op {
            Op::Write(lpn) => {
                let version = self.next_page(lpn);
                let r = dev.write(lpn, &self.buf);
                note(model, &r, lpn, Some(version));
                r.map(|_| Outcome::Done)
            }
            Op::Trim(lpn) => {
                let r = dev.trim(lpn);
                note(model, &r, lpn, None);
                r.map(|_| Outcome::Done)
            }
            Op::Flush => {
                let r = dev.flush();
                if r.is_ok() {
                    model.flushed();
                }
                r.map(|_| Outcome::Done)
            }
            Op::Read(lpn) => dev.read(lpn, &mut self.buf).map(|_| self.check_read(lpn, model.latest(lpn))),
            Op::Begin(tid) => self.tx_call(dev, op).map(|_| {
                model.begun(tid);
                Outcome::Done
            }),
            Op::TxWrite(tid, lpn) => {
                let version = self.next_page(lpn);
                match self.tx_call(dev, op) {
                    Ok(()) => {
                        model.tx_written(tid, lpn, version);
                        Ok(Outcome::Done)
                    }
                    Err(DeviceError::TableFull { .. }) => {
                        self.apply(dev, Op::Abort(tid), model)?;
                        Ok(Outcome::TableFullAborted(tid))
                    }
                    Err(e) => Err(e),
                }
            }
            Op::TxRead(tid, lpn) => self.tx_call(dev, op).map(|_| self.check_read(lpn, model.tx_read(tid, lpn))),
            Op::Commit(tid) => {
                let r = self.tx_call(dev, op);
                match &r {
                    Ok(_) => model.committed(tid),
                    Err(DeviceError::PowerLoss) => model.commit_in_flight(tid),
                    Err(_) => {}
                }
                r.map(|_| Outcome::Done)
            }
            Op::Abort(tid) => {
                let r = self.tx_call(dev, op);
                model.aborted(tid);
                r.map(|_| Outcome::Done)
            }
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

/// Reads every logical page back and decodes it.
pub fn logical_state(dev: &mut dyn AnyDevice) -> Result<Vec<Content>, DeviceError> {
    let info = dev.info();
    let mut buf = vec![0u8; info.page_size as usize];
    (0..info.logical_pages)
        .map(|lpn| match dev.read(lpn, &mut buf) {
            Ok(_) => Ok(data::decode(&buf)),
            Err(DeviceError::DataLost { ppn, .. }) => Ok(Content::Lost { ppn }),
            Err(e) => Err(e),
        })
        .collect()
}

#[derive(Clone, Debug, Serialize)]
pub struct RunReport {
    pub protocol: String,
    pub workload: WorkloadSpec,
    pub logical_pages: u32,
    pub working_set_pages: u32,
    /// Counters of the fill phase.
    pub fill: DeviceStats,
    /// Counters of the measured phase (after the fill).
    pub measured: DeviceStats,
    pub write_amplification: f64,
    /// Erase counts over data blocks at the end, as the FTL knows them.
    pub erase_count_min: u32,
    pub erase_count_max: u32,
    /// Wall-clock figures: how fast the emulator ran (not simulated time).
    pub wall_seconds: f64,
    pub flash_ops_per_wall_second: f64,
    /// Reads that did not return the latest write (must be 0).
    pub wrong_reads: u64,
    /// Reads the device refused as lost to bit errors (fault model on).
    pub lost_reads: u64,
    /// Pages the host journal wrote (transactions on a device without them).
    pub host_journal_writes: u64,
    /// Transactions the host aborted because the device's table was full.
    pub table_full_aborts: u64,
}

/// Why a run stopped early.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("operation {index} ({op:?}) failed: {source}")]
    Device { index: u64, op: Op, source: DeviceError },
    /// The power cut asked for happened after `host_ops` operations.
    #[error("power cut after {host_ops} host operations")]
    PowerCut { host_ops: u64, measured: Box<DeviceStats> },
    /// The cut asked for lies past the measured phase's last flash operation:
    /// the run tested nothing, so it is not reported as if it had.
    #[error("no power cut happened: --cut-at {at} is past the measured phase's last flash operation ({ops} operations)")]
    CutNotReached { at: u64, ops: u64 },
}

/// Runs the fill, resets the counters, then runs the measured operations.
/// `progress` is called with the number of operations done so far.
/// `cut`: cut power at this NAND operation of the measured phase (counted from
/// its start), tearing it as given; the run then ends with [`RunError::PowerCut`].
pub fn run_workload(
    dev: &mut dyn AnyDevice,
    spec: WorkloadSpec,
    cut: Option<(u64, Torn)>,
    progress: &mut dyn FnMut(u64),
) -> Result<RunReport, RunError> {
    let info = dev.info();
    let store_data = dev.nand().config().data_mode == txftl_nand::DataMode::Full;
    let mut driver = Driver::new(info.page_size, store_data);
    // A device without transactions runs transactional workloads through a host
    // journal kept in its last logical pages, outside the workload's pages.
    let mut workload_pages = info.logical_pages;
    if spec.kind == WorkloadKind::TxWrite && !dev.transactional() {
        let j = HostJournal::new(info.logical_pages, spec.tx.pages_per_tx, info.page_size).map_err(|source| RunError::Device {
            index: 0,
            op: Op::Flush,
            source,
        })?;
        workload_pages = j.journal_start;
        driver.journal = Some(j);
    }
    let mut stream = OpStream::new(spec, workload_pages);
    let working_set = stream.working_set();
    // Metadata-only data cannot be checked on reads: no reference model then.
    let mut model = if store_data {
        TxModel::new(info.logical_pages)
    } else {
        TxModel::untracked()
    };
    let mut fill = None;
    let mut wrong_reads = 0;
    let mut table_full_aborts = 0;
    let mut lost_reads = 0;
    let mut index = 0u64;
    dev.reset_stats();
    let mut started = Instant::now();
    loop {
        if fill.is_none() && !stream.in_fill() {
            fill = Some(dev.stats());
            dev.reset_stats();
            if let Some((at, torn)) = cut {
                let base = dev.nand().op_count();
                dev.nand_mut().arm_power_cut(PowerCut {
                    at_op: base + at,
                    torn,
                    seed: spec.seed,
                });
            }
            started = Instant::now();
        }
        let Some(op) = stream.next() else { break };
        match driver.apply(dev, op, &mut model) {
            Ok(Outcome::Done) => {}
            Ok(Outcome::WrongRead { .. }) => wrong_reads += 1,
            Ok(Outcome::TableFullAborted(tid)) => {
                stream.forget(tid);
                table_full_aborts += 1;
            }
            Err(DeviceError::PowerLoss) if cut.is_some() => {
                return Err(RunError::PowerCut {
                    host_ops: index,
                    measured: Box::new(dev.stats()),
                });
            }
            // A page lost to bit errors (fault model): the device reported it;
            // the host counts it and goes on, as a database would report it.
            Err(DeviceError::DataLost { .. }) if matches!(op, Op::Read(_) | Op::TxRead(..)) => lost_reads += 1,
            Err(source) => return Err(RunError::Device { index, op, source }),
        }
        index += 1;
        if index.is_multiple_of(4096) {
            progress(index);
        }
    }
    match dev.flush() {
        Ok(_) => {}
        Err(DeviceError::PowerLoss) if cut.is_some() => {
            return Err(RunError::PowerCut {
                host_ops: index,
                measured: Box::new(dev.stats()),
            })
        }
        Err(source) => {
            return Err(RunError::Device {
                index,
                op: Op::Flush,
                source,
            })
        }
    }
    if let Some((at, _)) = cut {
        let ops = dev.stats().flash_ops();
        return Err(RunError::CutNotReached { at, ops });
    }
    progress(index);
    let wall = started.elapsed().as_secs_f64();
    let measured = dev.stats();
    let (lo, hi) = dev.wear_spread();
    Ok(RunReport {
        protocol: info.protocol.to_string(),
        workload: spec,
        logical_pages: info.logical_pages,
        working_set_pages: working_set,
        fill: fill.unwrap_or_default(),
        measured,
        write_amplification: measured.write_amplification(),
        erase_count_min: lo,
        erase_count_max: hi,
        wall_seconds: wall,
        flash_ops_per_wall_second: if wall > 0.0 { measured.flash_ops() as f64 / wall } else { 0.0 },
        wrong_reads,
        lost_reads,
        host_journal_writes: driver.journal.as_ref().map_or(0, |j| j.journal_writes),
        table_full_aborts,
    })
}
