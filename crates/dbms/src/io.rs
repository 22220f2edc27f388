//! The DBMS's calls on the device, on the device clock: each submitted at
//! its instant ([`txftl_ftl::Device::set_clock`], as the concurrent host
//! submits), completing when the device clock says. A DB page is
//! `flash_pages_per_db_page` consecutive logical pages, submitted together.
//!
//! Every flash page of a DB page holds the crash harness's page format
//! (`txftl_workload::data`) with the page's version: the id of the
//! transaction that wrote it (0: the loaded database). A read checks the
//! version it gets against the one the DBMS expects.

use crate::error::{DbmsError, Result};
use std::ops::Range;
use txftl_ftl::{AnyDevice, Call, DeviceError, Lpn, RecordVersion, Tid};
use txftl_workload::data::{self, Content};

/// The smallest flash page a version fits in (the data format's header and CRC).
pub const PAGE_BYTES_MIN: u32 = 24;

pub struct Io<'d> {
    dev: &'d mut dyn AnyDevice,
    per_db_page: u32,
    buf: Vec<u8>,
    /// The device stores page data: reads are checked.
    full_data: bool,
    last_submit_ns: u64,
}

impl<'d> Io<'d> {
    pub fn new(dev: &'d mut dyn AnyDevice, per_db_page: u32) -> Result<Io<'d>> {
        let page_size = dev.info().page_size;
        if page_size < PAGE_BYTES_MIN {
            return Err(DbmsError::PageTooSmall {
                page_size,
                min: PAGE_BYTES_MIN,
            });
        }
        let full_data = dev.nand().config().data_mode == txftl_nand::DataMode::Full;
        Ok(Io {
            dev,
            per_db_page,
            buf: vec![0; page_size as usize],
            full_data,
            last_submit_ns: 0,
        })
    }

    pub fn device(&mut self) -> &mut dyn AnyDevice {
        &mut *self.dev
    }

    pub fn now_ns(&self) -> u64 {
        self.dev.now_ns()
    }

    /// The logical pages of DB page `page`.
    pub fn lpns(&self, page: u32) -> Range<Lpn> {
        page * self.per_db_page..(page + 1) * self.per_db_page
    }

    /// Runs `f` on the device submitted at `at_ns`; its completion time.
    fn call(&mut self, call: &'static str, at_ns: u64, f: impl FnOnce(&mut dyn AnyDevice) -> Result<u64, DeviceError>) -> Result<u64> {
        // The device takes submissions in time order (`set_clock`).
        assert!(
            at_ns >= self.last_submit_ns,
            "{call} submitted at {at_ns} ns after one at {} ns",
            self.last_submit_ns
        );
        self.last_submit_ns = at_ns;
        self.dev.set_clock(at_ns);
        f(&mut *self.dev).map_err(|source| DbmsError::Device { call, at_ns, source })?;
        Ok(self.dev.now_ns().max(at_ns))
    }

    pub fn begin(&mut self, at_ns: u64, tid: Tid) -> Result<u64> {
        self.call("begin", at_ns, |d| d.begin(tid))
    }

    pub fn commit(&mut self, at_ns: u64, tid: Tid) -> Result<u64> {
        self.call("commit", at_ns, |d| d.commit(tid))
    }

    pub fn abort(&mut self, at_ns: u64, tid: Tid) -> Result<u64> {
        self.call("abort", at_ns, |d| d.abort(tid))
    }

    /// Writes DB page `page` at `version`: under transaction `tid`, or
    /// outside transactions (the load). Its flash pages are submitted
    /// together; the completion is the last one's.
    pub fn write(&mut self, at_ns: u64, tid: Option<Tid>, page: u32, version: u64) -> Result<u64> {
        let mut done = at_ns;
        for lpn in self.lpns(page) {
            done = done.max(self.write_lpn(at_ns, tid, lpn, version)?);
        }
        Ok(done)
    }

    /// Writes logical page `lpn` outside the database, outside
    /// transactions (cold data: version 0, never read).
    pub fn write_cold(&mut self, at_ns: u64, lpn: Lpn) -> Result<u64> {
        self.write_lpn(at_ns, None, lpn, 0)
    }

    /// One flash page holding `version`, under `tid` or outside transactions.
    fn write_lpn(&mut self, at_ns: u64, tid: Option<Tid>, lpn: Lpn, version: u64) -> Result<u64> {
        let mut buf = std::mem::take(&mut self.buf);
        data::fill(&mut buf, lpn, version);
        let r = match tid {
            Some(t) => self.call("write_tx", at_ns, |d| d.write_tx(t, lpn, &buf)),
            None => self.call("write", at_ns, |d| d.write(lpn, &buf)),
        };
        self.buf = buf;
        r
    }

    /// Reads DB page `page` (within `tid` if its transaction has begun on
    /// the device, so it sees its own stolen pages) and checks that every
    /// flash page of it holds `expected`.
    pub fn read(&mut self, at_ns: u64, tid: Option<Tid>, page: u32, expected: u64) -> Result<u64> {
        let mut done = at_ns;
        for lpn in self.lpns(page) {
            let mut buf = std::mem::take(&mut self.buf);
            let r = match tid {
                Some(t) => self.call("read_tx", at_ns, |d| d.read_tx(t, lpn, &mut buf)),
                None => self.call("read", at_ns, |d| d.read(lpn, &mut buf)),
            };
            let found = data::decode(&buf);
            self.buf = buf;
            done = done.max(r?);
            let right = Content::Written { lpn, version: expected };
            if self.full_data && found != right {
                return Err(DbmsError::WrongRead {
                    page,
                    lpn,
                    tid: tid.unwrap_or(0),
                    expected,
                    found: format!("{found:?}"),
                });
            }
        }
        Ok(done)
    }

    pub fn page_size(&self) -> u32 {
        self.buf.len() as u32
    }

    /// Does the device keep page data (reads return what was written)?
    pub fn full_data(&self) -> bool {
        self.full_data
    }

    /// Runs `f` with the page-sized scratch buffer the other calls use (its
    /// contents undefined), given back after: page I/O on the hot path
    /// allocates nothing. `f` must not call `write`, `read` or
    /// `write_cold`, which use the same buffer.
    pub fn with_scratch<T>(&mut self, f: impl FnOnce(&mut Io<'d>, &mut [u8]) -> Result<T>) -> Result<T> {
        let mut buf = std::mem::take(&mut self.buf);
        assert!(!buf.is_empty(), "the scratch buffer lent twice");
        let r = f(self, &mut buf);
        self.buf = buf;
        r
    }

    /// Writes `data` to logical page `lpn` outside transactions (the log,
    /// the master record, DB page images of the record-level engine).
    pub fn write_raw(&mut self, at_ns: u64, lpn: Lpn, data: &[u8]) -> Result<u64> {
        self.call("write", at_ns, |d| d.write(lpn, data))
    }

    /// Reads logical page `lpn` into `buf`, outside transactions.
    pub fn read_raw(&mut self, at_ns: u64, lpn: Lpn, buf: &mut [u8]) -> Result<u64> {
        self.call("read", at_ns, |d| d.read(lpn, buf))
    }

    /// Writes a self-contained version of logical page `lpn` holding the
    /// pending records of `pending` (Flag Commit's extended protocols,
    /// `RecordTx::write_contained`: its image holds each pending record's
    /// committed version beneath).
    pub fn write_contained(&mut self, at_ns: u64, lpn: Lpn, data: &[u8], pending: &[Tid]) -> Result<u64> {
        self.call("write_contained", at_ns, |d| d.call(Call::WriteContained { lpn, data, pending }))
    }

    /// The versions of logical page `lpn` a reader needs, newest first.
    pub fn read_versions(&mut self, at_ns: u64, lpn: Lpn, out: &mut Vec<RecordVersion>) -> Result<u64> {
        self.call("read_versions", at_ns, |d| d.call(Call::ReadVersions { lpn, out }))
    }

    /// The device's XID of open transaction `tid`.
    pub fn xid_of(&mut self, tid: Tid) -> Result<u32> {
        let mut xid = 0;
        let at = self.last_submit_ns;
        self.call("xid_of", at, |d| d.call(Call::XidOf { tid, out: &mut xid }))?;
        Ok(xid)
    }

    /// The transactions the last mount left in doubt.
    pub fn in_doubt(&mut self) -> Result<Vec<u32>> {
        let mut out = Vec::new();
        let at = self.last_submit_ns.max(self.dev.now_ns());
        self.call("in_doubt", at, |d| d.call(Call::InDoubt { out: &mut out }))?;
        Ok(out)
    }

    /// Commits in-doubt transaction `xid` (its commit record is in the log).
    pub fn commit_in_doubt(&mut self, at_ns: u64, xid: u32) -> Result<u64> {
        self.call("commit_in_doubt", at_ns, |d| d.call(Call::CommitInDoubt { xid }))
    }

    pub fn flush(&mut self, at_ns: u64) -> Result<u64> {
        self.call("flush", at_ns, |d| d.flush())
    }
}
