//! `txftl reproduce nolgn`: the NoLgn-FTL paper's evaluation (Yin, Du,
//! Fan, Noh; JSA 2025, sec. 4) rerun on txftl: real SQLite on the `femu`
//! preset, aged by random writes so that GC runs, on three systems (SQLite's
//! WAL on the plain FTL, Base-WAL; its WAL on SW-WAL, whose checkpoints
//! remap; NoLgn-FTL, the database written in place with no WAL):
//! Figs. 6 to 9 (sqlite-bench overwrite at values of 256 B to 16 KiB,
//! NORMAL and FULL: flash page writes, throughput, latency, and NoLgn-FTL's
//! writes split into host, GC and lock-induced pages), Fig. 10 (YCSB A to
//! F) and Fig. 11 (TPC-C's tpmC against free space), then the checks.
//!
//! - [`paper`]: what the paper states; [`params`]: a run's parameters;
//! - [`stack`]: the aged devices; [`bench`], [`ycsb`], [`tpcc`]: the
//!   experiments; [`results`]: what they measured;
//! - [`checks`], [`explain`]: the checks and their notes;
//! - [`print`], [`figures`]: the terminal's tables and the HTML report's.

pub mod bench;
pub mod checks;
pub mod explain;
pub mod figures;
pub mod paper;
pub mod params;
pub mod print;
pub mod results;
pub mod stack;
pub mod tpcc;
pub mod ycsb;

pub use params::Params;
pub use results::Figures;

use crate::paper::{Options, Paper};
use crate::progress::Progress;
use crate::Error;
use serde::Serialize;
use txftl_protocols::PROTOCOLS;
use txftl_sqlite::{Mode, Synchronous};

/// A run's report.
pub type Report = crate::Report<Params, Figures>;

pub const TITLE: &str = "NoLgn-FTL: An Efficient Flash Translation Layer Integrating Logging-Free Transactions (Yin, Du, Fan, Noh; J. Systems Architecture 2025)";

/// The three systems the paper compares, in its legend's order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum System {
    BaseWal,
    SwWal,
    NoLgn,
}

impl System {
    pub const ALL: [System; 3] = [System::BaseWal, System::SwWal, System::NoLgn];

    pub fn key(self) -> &'static str {
        match self {
            System::BaseWal => "base-wal",
            System::SwWal => "sw-wal",
            System::NoLgn => "nolgn",
        }
    }

    /// The paper's name.
    pub fn label(self) -> &'static str {
        match self {
            System::BaseWal => "Base-WAL",
            System::SwWal => "SW-WAL",
            System::NoLgn => "NoLgn-FTL",
        }
    }

    /// The SQLite mode it runs as (`txftl sql --mode`).
    pub fn mode_name(self) -> &'static str {
        match self {
            System::BaseWal => "wal",
            System::SwWal => "sw-wal",
            System::NoLgn => "nolgn",
        }
    }

    pub fn mode(self) -> Result<Mode, Error> {
        Mode::parse(PROTOCOLS, self.mode_name())
            .ok_or_else(|| Error::Failed(format!("the registry offers no `{}` SQLite mode", self.mode_name())))
    }
}

/// The synchronous modes of Figs. 6 to 9, in the paper's order.
pub const SYNCS: [Synchronous; 2] = [Synchronous::Normal, Synchronous::Full];

/// The NoLgn-FTL paper.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoLgn;

impl Paper for NoLgn {
    type Params = Params;
    type Figures = Figures;

    const NAME: &'static str = "nolgn";
    const TITLE: &'static str = TITLE;
    /// The paper measured a real host: its figures show device time and
    /// device + host time ([`crate::host`]).
    fn params(&self, opts: &Options) -> Result<Params, Error> {
        opts.refuse_map_at_flush("")?;
        let mut params = Params::new(opts.quick, opts.seed);
        params.head.host = Some(opts.host_model()?);
        if opts.tiny {
            params.tiny();
        }
        Ok(params)
    }
    fn run(&self, params: &mut Params, progress: &Progress) -> Result<Figures, Error> {
        let p = params.preset();
        params.head.device = crate::device::describe(&p);
        let nolgn = System::NoLgn.mode()?;
        params.nolgn_group_pages = nolgn.entry().sql_normal_group_pages.unwrap_or(0);
        params.logical_pages = logical_pages(params)?;
        // The paper's 4 million 4 KB writes are its 16 GB device's logical pages.
        params.precondition_writes = params.logical_pages as u64;
        let steps = SYNCS.len() * System::ALL.len() * params.sizes.len()
            + System::ALL.len() * ycsb::WORKLOADS.len()
            + System::ALL.len() * params.free_pct.len();
        progress.set_steps(steps as u64);
        let mut figures = Figures::default();
        for sync in SYNCS {
            let (runs, aging) = bench::run(params, sync, progress)?;
            figures.bench.extend(runs);
            figures.aging.extend(aging);
        }
        let ycsb = ycsb::run(params, progress)?;
        figures.ycsb = ycsb.measured;
        figures.ycsb_longer = ycsb.longer;
        figures.aging.extend(ycsb.aging);
        let tpcc = tpcc::run(params, progress)?;
        figures.tpcc = tpcc.measured;
        figures.tpcc_longer = tpcc.longer;
        figures.aging.extend(tpcc.aging);
        Ok(figures)
    }
    crate::paper::paper_views!();
    /// A database whose integrity check or TPC-C consistency check failed.
    fn failed(&self, f: &Figures) -> bool {
        f.bench.iter().any(|r| r.integrity != "ok")
            || f.ycsb.iter().chain(&f.ycsb_longer).any(|r| r.integrity != "ok")
            || f.tpcc
                .iter()
                .chain(&f.tpcc_longer)
                .any(|r| r.integrity != "ok" || r.consistency != "ok")
    }
}

/// The logical pages a device of the run's preset offers (the plain FTL's;
/// every system's device has the same pool).
fn logical_pages(params: &Params) -> Result<u32, Error> {
    let p = params.preset();
    let nand = crate::device::nand_config(&p, txftl_nand::DataMode::MetaOnly);
    let dev = txftl_protocols::format(
        "nolgn",
        crate::device::ram(nand)?,
        txftl_ftl::FtlConfig::default(),
        &Default::default(),
    )
    .map_err(crate::device::device_error)?;
    Ok(dev.info().logical_pages)
}
