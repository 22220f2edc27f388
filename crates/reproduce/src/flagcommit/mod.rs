//! `txftl reproduce flagcommit`: the Flag Commit paper's evaluation (On,
//! Xu, Choi, Hu, Jiang; IEEE TKDE, sec. 5.1 and 5.2) rerun on txftl: the
//! small DBMS of `crates/dbms` (TPC-C's page accesses, 50 clients, strict
//! 2PL, an LRU buffer of 512 pages, force at commit) on CFC, AFC, BPCC and
//! SCC over the `flagcommit` preset: Fig. 12 (throughput, execution time),
//! Fig. 13a (GC time and its share), Fig. 13b (recovery after a power cut),
//! Fig. 14 (the abort ratio delta from 1 to 50%), Table 3 (memory at 32 GB),
//! the device's fill swept (the paper states none); then sec. 5.3 (Figs.
//! 15 to 19): the record-level engine with Flag Commit's extended manager
//! on CFC_ex and AFC_ex against ARIES on `plain` (the paper's WAL)
//! ([`ex`]); then the checks.
//!
//! - [`paper`]: what the paper states; [`params`]: a run's parameters;
//! - [`run`]: the experiments; [`results`]: what they measured;
//! - [`checks`], [`explain`]: the checks and their notes;
//! - [`print`], [`figures`]: the terminal's tables and the HTML report's.

pub mod checks;
pub mod ex;
pub mod ex_checks;
pub mod explain;
pub mod figures;
pub mod paper;
pub mod params;
pub mod print;
pub mod results;
pub mod run;

pub use params::Params;
pub use results::Figures;

use crate::paper::Paper;
use crate::progress::Progress;
use crate::Error;
use run::Point;

/// A run's report.
pub type Report = crate::Report<Params, Figures>;

pub const TITLE: &str =
    "Flag Commit: Supporting Efficient Transaction Recovery in Flash-Based DBMSs (On, Xu, Choi, Hu, Jiang; IEEE TKDE 2012)";

/// A protocol of the comparison.
#[derive(Clone, Copy, Debug)]
pub struct Protocol {
    /// The registry's name.
    pub name: &'static str,
    /// The paper's.
    pub label: &'static str,
}

impl Protocol {
    /// Buffer frames each open transaction pins: what the registry says the
    /// protocol needs resident (sec. 5.1: "SCC and BPCC protocols require
    /// the last shadow page of each in-progress transaction to be resident
    /// in the buffer pool").
    pub fn pinned_frames(&self) -> u32 {
        txftl_protocols::PROTOCOLS
            .iter()
            .find(|e| e.name == self.name)
            .map_or(0, |e| e.resident_pages_per_tx)
    }
}

/// Fig. 12's legend order.
pub const PROTOCOLS: [Protocol; 4] = [
    Protocol { name: "afc", label: "AFC" },
    Protocol { name: "cfc", label: "CFC" },
    Protocol {
        name: "bpcc",
        label: "BPCC",
    },
    Protocol { name: "scc", label: "SCC" },
];

/// The protocol named `name` (one of [`PROTOCOLS`]).
pub fn protocol(name: &str) -> &'static Protocol {
    PROTOCOLS.iter().find(|p| p.name == name).expect("one of PROTOCOLS")
}

/// The Flag Commit paper.
#[derive(Clone, Copy, Debug, Default)]
pub struct FlagCommit;

/// Every point the experiments run, in order: the default point on every
/// protocol, then again with summary pages and a power cut at its end (Fig.
/// 13b), the fill sweep, the delta sweep, then page flags on CFC and AFC.
pub fn points(params: &Params) -> Vec<(&'static Protocol, Point)> {
    let base = Point {
        fill_pct: params.fill_pct,
        abort_pct: params.abort_pct,
        page_flags: false,
        recover: false,
    };
    let mut v: Vec<(&'static Protocol, Point)> = PROTOCOLS.iter().map(|p| (p, base)).collect();
    v.extend(PROTOCOLS.iter().map(|p| (p, Point { recover: true, ..base })));
    for &fill in params.fills.iter().filter(|&&f| f != params.fill_pct) {
        v.extend(PROTOCOLS.iter().map(|p| (p, Point { fill_pct: fill, ..base })));
    }
    for &delta in params.deltas.iter().filter(|&&d| d != params.abort_pct) {
        v.extend(PROTOCOLS.iter().map(|p| (p, Point { abort_pct: delta, ..base })));
    }
    for name in ["cfc", "afc"] {
        v.push((protocol(name), Point { page_flags: true, ..base }));
    }
    v
}

impl Paper for FlagCommit {
    type Params = Params;
    type Figures = Figures;

    const NAME: &'static str = "flagcommit";
    const TITLE: &'static str = TITLE;
    crate::paper::paper_params!("");
    fn run(&self, params: &mut Params, progress: &Progress) -> Result<Figures, Error> {
        let p = params.preset();
        params.head.device = crate::device::describe(&p);
        params.table3_device = crate::device::describe(&params.table3_preset());
        let points = points(params);
        let ex_points = ex::points(params);
        progress.set_steps(points.len() as u64 + ex_points.len() as u64 + 1);
        let mut figures = Figures::default();
        let say = |&(proto, point): &(&'static Protocol, Point)| {
            format!(
                "{}: fill {}%, delta {}%{}{}",
                proto.label,
                point.fill_pct,
                point.abort_pct,
                if point.page_flags { ", page-based flags" } else { "" },
                if point.recover {
                    ", summary pages, power cut, recovery"
                } else {
                    ""
                }
            )
        };
        figures.runs = crate::parallel::map(&points, progress, say, |&(proto, point)| run::run(params, proto, point))?;
        figures.ex_runs = ex::run_all(params, &ex_points, progress)?;
        progress.say("Table 3: memory at 32 GB; one abort per protocol");
        figures.memory = run::memory(params)?;
        for proto in &PROTOCOLS {
            figures
                .abort_programs
                .push((proto.name.into(), run::abort_programs(params, proto)?));
        }
        params.logical_pages = logical_pages(params)?;
        progress.step();
        Ok(figures)
    }
    crate::paper::paper_views!();
    /// Every run either ends (the DBMS checks what it reads when pages
    /// hold data; here metadata only) or fails the reproduction with an
    /// error; a page programmed past the NAND's NOP would be a broken run.
    fn failed(&self, f: &Figures) -> bool {
        f.runs
            .iter()
            .any(|r| r.max_programs_per_page > txftl_nand::preset("flagcommit").map_or(2, |p| p.geometry.nop))
            || f.ex_runs.iter().any(|r| r.max_programs_per_page > r.nop)
    }
}

/// The logical pages of the run's device (every protocol's are the same pool).
fn logical_pages(params: &Params) -> Result<u32, Error> {
    let nand = crate::device::nand_config(&params.preset(), txftl_nand::DataMode::MetaOnly);
    let m = txftl_protocols::memory_needed("cfc", &nand, &txftl_ftl::FtlConfig::default(), &txftl_ftl::ProtocolOptions::new())
        .map_err(|e| Error::Failed(e.to_string()))?;
    Ok(m.ftl.logical_pages)
}
