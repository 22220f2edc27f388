//! `txftl reproduce xftl`: the X-FTL paper's evaluation (SIGMOD 2013, sec. 6)
//! rerun on txftl: Table 1 (I/O counts, K = 5, at 30, 50 and 70% GC victim
//! validity), Figure 5 (elapsed time over K), Table 5 (SQLite restart time)
//! and the TPC-C Tables 3 and 4 (four mixes, tpmC), each beside the paper's
//! numbers, then the checks.
//!
//! The experiments are [`compare`]'s (also `txftl compare`'s): the same
//! device builder, aging, workload runners and restart measurement.
//!
//! - [`paper`]: what the paper states; [`params`]: a run's parameters;
//! - [`compare`]: the experiment runners; [`run`]: every experiment of a run;
//! - [`results`]: what they measured; [`checks`], [`explain`]: the checks and their notes;
//! - [`print`], [`tables`], [`figures`]: the terminal's tables and the HTML report's.

pub mod checks;
pub mod compare;
pub mod explain;
pub mod figures;
pub mod paper;
pub mod params;
pub mod print;
pub mod results;
pub mod run;
pub mod tables;

pub use params::Params;
pub use results::Figures;

use crate::paper::{Options, Paper};
use crate::progress::Progress;
use crate::Error;
use txftl_protocols::PROTOCOLS;
use txftl_sqlite::Mode;

/// A run's report.
pub type Report = crate::Report<Params, Figures>;

pub const TITLE: &str = "X-FTL: Transactional FTL for SQLite Databases (Kang, Lee, Moon, Oh, Min; SIGMOD 2013)";

/// The paper's modes: SQLite's rollback journal and WAL on the plain FTL,
/// and `journal_mode=OFF` on X-FTL (the paper's setting).
fn paper_mode(name: &str) -> Mode {
    Mode::parse(PROTOCOLS, name).unwrap_or_else(|| panic!("the registry offers SQLite mode `{name}`"))
}
pub fn rbj() -> Mode {
    paper_mode("rbj")
}
pub fn wal() -> Mode {
    paper_mode("wal")
}
pub fn xftl() -> Mode {
    paper_mode("xftl")
}
/// RBJ, WAL, X-FTL: the paper's order.
pub fn modes() -> [Mode; 3] {
    [rbj(), wal(), xftl()]
}

/// The protocol options given, with the paper's one-page X-L2P table (500
/// entries) unless another size is asked for.
pub fn paper_options(given: txftl_protocols::ProtocolOptions) -> txftl_protocols::ProtocolOptions {
    let key = "xl2p-entries";
    if given.contains(key) {
        given
    } else {
        given.with(key, txftl_protocols::xftl::DEFAULT_ENTRIES)
    }
}

/// A mode's name in check ids.
fn label(m: Mode) -> &'static str {
    m.cli()
}

/// The X-FTL paper.
#[derive(Clone, Copy, Debug, Default)]
pub struct Xftl;

impl Paper for Xftl {
    type Params = Params;
    type Figures = Figures;

    const NAME: &'static str = "xftl";
    const TITLE: &'static str = TITLE;
    fn params(&self, opts: &Options) -> Result<Params, Error> {
        let mut params = Params::new(opts.quick, opts.seed);
        params.map_at_flush = opts.map_at_flush.unwrap_or(true);
        params.head.host = Some(opts.host_model()?);
        if opts.tiny {
            params.tiny();
        }
        Ok(params)
    }
    fn run(&self, params: &mut Params, progress: &Progress) -> Result<Figures, Error> {
        run::run(params, progress)
    }
    crate::paper::paper_views!();
    /// A run that broke SQLite's integrity or TPC-C's consistency is a failure, not a figure.
    fn failed(&self, f: &Figures) -> bool {
        f.figure5.iter().flat_map(|x| &x.runs).any(|r| r.integrity != "ok")
            || f.table5.summary.iter().any(|s| !s.all_ok)
            || f.tpcc
                .iter()
                .chain(&f.tpcc_longer)
                .flat_map(|m| &m.runs)
                .any(|r| r.integrity != "ok" || r.consistency.as_deref() != Some("ok"))
    }
}
