//! `txftl reproduce lighttx`: the LightTx paper's evaluation (ICCD 2013,
//! sec. IV) rerun on txftl: Fig. 5 (throughput per isolation level per
//! protocol), Fig. 6 (throughput against abort ratio), Fig. 7 (GC overhead
//! against abort ratio), Fig. 8 (recovery time against zone size, at the
//! paper's 32 GB) and Fig. 9 (mapping persistence writes against zone size),
//! each beside the paper's numbers, then the checks.
//!
//! The workload is a TPC-C transactional block trace recorded in this run
//! from our TPC-C on SQLite (X-FTL mode: one device transaction per SQLite
//! transaction, 7 clients), deterministic from the seed ([`trace`]), replayed
//! with `trace replay`'s machinery (`txftl_host::replay`, [`replay`]) on every
//! protocol of the paper this build registers (`txftl_protocols::PROTOCOLS`),
//! at every isolation level the registry says it offers ([`run`]).
//!
//! - [`paper`]: what the paper states; [`params`]: a run's parameters;
//! - [`results`]: what the runs measured; [`checks`], [`explain`]: the checks and their notes;
//! - [`print`], [`tables`], [`figures`]: the terminal's tables and the HTML report's.

pub mod checks;
pub mod explain;
pub mod figures;
pub mod paper;
pub mod params;
pub mod print;
pub mod replay;
pub mod results;
pub mod run;
pub mod tables;
pub mod trace;

pub use params::Params;
pub use results::Figures;

use crate::paper::Paper;
use crate::progress::Progress;
use crate::Error;

/// A run's report.
pub type Report = crate::Report<Params, Figures>;

pub const TITLE: &str =
    "LightTx: A Lightweight Transactional Design in Flash-based SSDs to Support Flexible Transactions (Lu, Shu, Guo, Li, Mutlu; ICCD 2013)";

/// The paper's protocols, in its order, with the names it gives them.
/// Those this build registers are run.
pub const PAPER_PROTOCOLS: [(&str, &str); 4] = [
    ("lighttx", "LightTx"),
    ("atomic-write", "Atomic-Write"),
    ("scc", "SCC"),
    ("bpcc", "BPCC"),
];

/// A protocol with options of its own, reported beside the paper's four in
/// Figs. 5 (strict, no aborts), 8 and 9 and never in a check: the models the
/// paper's replaced, and options the paper's protocols had.
#[derive(Clone, Copy, Debug)]
pub struct Variant {
    /// Its key in the runs (`protocol+what`).
    pub key: &'static str,
    pub protocol: &'static str,
    pub opts: &'static [(&'static str, u32)],
    pub label: &'static str,
}

/// One line a variant.
pub const VARIANTS: &[Variant] = &[
    Variant {
        key: "lighttx+interval-zones",
        protocol: "lighttx",
        opts: &[("interval-zones", 1)],
        label: "LightTx, interval zones",
    },
    Variant {
        key: "atomic-write+map-log",
        protocol: "atomic-write",
        opts: &[("map-log", 1)],
        label: "Atomic-Write, mapping log",
    },
    Variant {
        key: "lighttx+no-summary-pages",
        protocol: "lighttx",
        opts: &[("summary-pages", 0)],
        label: "LightTx, no summary pages",
    },
    Variant {
        key: "scc+no-summary-pages",
        protocol: "scc",
        opts: &[("summary-pages", 0)],
        label: "SCC, no summary pages",
    },
    Variant {
        key: "bpcc+no-summary-pages",
        protocol: "bpcc",
        opts: &[("summary-pages", 0)],
        label: "BPCC, no summary pages",
    },
];

/// The options the paper's protocols run with here, and their variants
/// unless a variant's own say otherwise: summary pages for LightTx, SCC and
/// BPCC (sec. IV-D: "used in both SCC/BPCC and LightTx").
pub const PAPER_OPTIONS: &[(&str, &[(&str, u32)])] = &[
    ("lighttx", &[("summary-pages", 1)]),
    ("scc", &[("summary-pages", 1)]),
    ("bpcc", &[("summary-pages", 1)]),
];

/// The options `protocol` runs with here ([`PAPER_OPTIONS`]).
pub fn paper_options(protocol: &str) -> &'static [(&'static str, u32)] {
    PAPER_OPTIONS.iter().find(|p| p.0 == protocol).map_or(&[], |p| p.1)
}

/// The variants a run has: those of the protocols it runs.
pub fn variants(params: &Params) -> Vec<&'static Variant> {
    VARIANTS
        .iter()
        .filter(|v| params.protocols.iter().any(|p| p.protocol == v.protocol))
        .collect()
}

/// The variant a run key names, if it is one.
pub fn variant(key: &str) -> Option<&'static Variant> {
    VARIANTS.iter().find(|v| v.key == key)
}

/// The protocol a run key runs (a variant's, or the key itself).
pub fn protocol_of(key: &str) -> &str {
    variant(key).map_or(key, |v| v.protocol)
}

/// Runs with zones (LightTx and its variants) take a zone size.
pub fn has_zones(key: &str) -> bool {
    protocol_of(key) == "lighttx"
}

/// The paper's name of a protocol (or a variant's label).
pub fn label(protocol: &str) -> &str {
    if let Some(v) = variant(protocol) {
        return v.label;
    }
    PAPER_PROTOCOLS.iter().find(|(p, _)| *p == protocol).map_or(protocol, |(_, l)| l)
}

/// The largest abort ratio run (the paper's 50%).
pub fn top_abort(params: &Params) -> u32 {
    params.abort_pcts.iter().copied().max().unwrap_or(0)
}

/// The LightTx paper.
#[derive(Clone, Copy, Debug, Default)]
pub struct LightTx;

impl Paper for LightTx {
    type Params = Params;
    type Figures = Figures;

    const NAME: &'static str = "lighttx";
    const TITLE: &'static str = TITLE;
    crate::paper::paper_params!("; LightTx's devices use the FTL's own checkpoints");
    fn run(&self, params: &mut Params, progress: &Progress) -> Result<Figures, Error> {
        run::run(params, progress)
    }
    crate::paper::paper_views!();
    /// A TPC-C run that broke its consistency recorded a trace of a broken
    /// database; a replay the device failed leaves a figure without its point.
    fn failed(&self, f: &Figures) -> bool {
        f.workload.consistency != "ok" || !f.failed.is_empty()
    }
}
