//! `txftl reproduce mobius`: the Möbius paper's evaluation (ICDCS 2017,
//! sec. V) rerun on txftl. Built so far: Figs. 7 and 8 (the latency and
//! bandwidth of compound writes through DFTL, one page at a time and all at
//! once, and through Möbius's DWRITE, S-SWRITE and A-SWRITE), Fig. 9's
//! throughput of TPC-C and of Filebench's fileserver and webserver
//! normalised to Atomic-Write, Fig. 10
//! (write amplification of a TPC-C trace on 8 KiB flash) and Fig. 11
//! (recovery time against the data written since the last persistence
//! point, Möbius against LightTx and DFTL), each beside the paper's claims,
//! then the checks.
//!
//! - [`paper`]: what the paper states; [`params`]: a run's parameters;
//! - [`compound`]: the compound writes; [`tpcc`]: Figs. 9 and 10's replays;
//!   [`filebench`]: Fig. 9's Filebench bars;
//!   [`recovery`]: Fig. 11's power cuts;
//!   [`results`]: what they measured;
//! - [`checks`], [`explain`]: the checks and their notes;
//! - [`print`], [`figures`]: the terminal's tables and the HTML report's.

pub mod checks;
pub mod compound;
pub mod explain;
pub mod figures;
pub mod filebench;
pub mod paper;
pub mod params;
pub mod print;
pub mod recovery;
pub mod results;
pub mod tpcc;

pub use params::Params;
pub use results::Figures;

use crate::paper::Paper;
use crate::progress::Progress;
use crate::Error;
use serde::Serialize;

/// A run's report.
pub type Report = crate::Report<Params, Figures>;

/// The options a protocol runs with in every figure here: LightTx as its
/// own paper describes it, with summary pages (LightTx sec. IV-D: "used in
/// both SCC/BPCC and LightTx"), which Möbius's comparison does not change.
pub fn protocol_options(protocol: &str) -> txftl_protocols::ProtocolOptions {
    let opts = txftl_protocols::ProtocolOptions::new();
    match protocol {
        "lighttx" => opts.with("summary-pages", 1),
        _ => opts,
    }
}

pub const TITLE: &str = "Möbius: A High Performance Transactional SSD with Rich Primitives (Hu, Jiang, Tian, Zhao, Wang; ICDCS 2017)";

/// The write interfaces of Figs. 7 and 8, in the paper's order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Interface {
    DftlSingle,
    DftlAio,
    Dwrite,
    SSwrite,
    ASwrite,
}

impl Interface {
    pub const ALL: [Interface; 5] = [
        Interface::DftlSingle,
        Interface::DftlAio,
        Interface::Dwrite,
        Interface::SSwrite,
        Interface::ASwrite,
    ];

    pub fn key(self) -> &'static str {
        match self {
            Interface::DftlSingle => "dftl-single",
            Interface::DftlAio => "dftl-aio",
            Interface::Dwrite => "dwrite",
            Interface::SSwrite => "s-swrite",
            Interface::ASwrite => "a-swrite",
        }
    }

    /// The paper's name.
    pub fn label(self) -> &'static str {
        match self {
            Interface::DftlSingle => "DFTL",
            Interface::DftlAio => "DFTL-AIO",
            Interface::Dwrite => "DWRITE",
            Interface::SSwrite => "S-SWRITE",
            Interface::ASwrite => "A-SWRITE",
        }
    }

    /// The protocol it runs on.
    pub fn protocol(self) -> &'static str {
        match self {
            Interface::DftlSingle | Interface::DftlAio => "dftl",
            _ => "mobius",
        }
    }
}

/// Where a compound write's pages lie.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Pattern {
    Random,
    Sequential,
}

impl Pattern {
    pub const ALL: [Pattern; 2] = [Pattern::Random, Pattern::Sequential];

    pub fn key(self) -> &'static str {
        match self {
            Pattern::Random => "random",
            Pattern::Sequential => "sequential",
        }
    }
}

/// The Möbius paper.
#[derive(Clone, Copy, Debug, Default)]
pub struct Mobius;

impl Paper for Mobius {
    type Params = Params;
    type Figures = Figures;

    const NAME: &'static str = "mobius";
    const TITLE: &'static str = TITLE;
    crate::paper::paper_params!("");
    fn run(&self, params: &mut Params, progress: &Progress) -> Result<Figures, Error> {
        let p = params.preset();
        params.head.device = crate::device::describe(&p);
        params.cmt_pages = txftl_protocols::dftl::default_cmt_pages(&p.geometry);
        params.recovery_device = crate::device::describe(&params.recovery_preset());
        params.wa_device = crate::device::describe(&params.wa_preset());
        let fig11 = recovery::PROTOCOLS.len() * params.zones_mib.len();
        let fig9 = 1 + tpcc::FIG9.len() + filebench::steps(params);
        let fig10 = 1 + tpcc::PROTOCOLS.len();
        progress.set_steps((Interface::ALL.len() * Pattern::ALL.len() + 1 + fig9 + fig10 + fig11) as u64);
        let mut figures = Figures::default();
        for pattern in Pattern::ALL {
            for interface in Interface::ALL {
                progress.say(format!(
                    "Figs. 7, 8: {} compound writes through {}",
                    pattern.key(),
                    interface.label()
                ));
                figures.compound.extend(compound::run(params, interface, pattern)?);
                progress.step();
            }
        }
        progress.say("Fig. 7: random DFTL and DWRITE over DFTL's cache size".to_string());
        figures.cmt_sweep = compound::cmt_sweep(params, &figures.compound)?;
        progress.step();
        let (workload, tps) = tpcc::fig9(params, progress)?;
        figures.tps_workload = Some(workload);
        figures.tps = tps;
        figures.filebench = filebench::fig9(params, progress)?;
        let (workload, wa) = tpcc::fig10(params, progress)?;
        figures.wa_workload = Some(workload);
        figures.wa = wa;
        for &(protocol, name) in &recovery::PROTOCOLS {
            for &z in &params.zones_mib {
                progress.say(format!("Fig. 11: {name}, {z} MiB written, power cut, recovery"));
                figures.recovery.push(recovery::run(params, protocol, (z as u64) << 20)?);
                progress.step();
            }
        }
        Ok(figures)
    }
    crate::paper::paper_views!();
    /// A TPC-C run that broke its consistency recorded a trace of a broken
    /// database (the run stops with an error then); every other experiment
    /// either ran or failed the run.
    fn failed(&self, f: &Figures) -> bool {
        [&f.tps_workload, &f.wa_workload]
            .iter()
            .any(|w| w.as_ref().is_some_and(|w| w.consistency != "ok"))
    }
}
