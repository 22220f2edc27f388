//! Every experiment of `reproduce lighttx`: the trace recorded, then
//! replayed on every protocol of the paper this build registers
//! (`txftl_protocols::PROTOCOLS`): Fig. 5 at every isolation level each
//! offers, Figs. 6 and 7 at every abort ratio, Fig. 9 at every zone size,
//! and Fig. 8's power cut and recovery at the paper's capacity.

use super::label;
use super::params::{capacity_gib, preset, Params};
use super::replay::{device, replay_on, run_of, zone_options};
use super::results::{FailedRun, Figures, RecoveryRun, Run};
use super::trace::record_tpcc;
use crate::device::describe;
use crate::progress::Progress;
use crate::Error;
use txftl_ftl::{FtlConfig, RecoveryReport};
use txftl_host::replay::Isolation;
use txftl_host::trace::Trace;

/// Runs every experiment.
pub fn run(params: &mut Params, progress: &Progress) -> Result<Figures, Error> {
    params.device = describe(&preset(params.blocks_per_plane)?);
    params.recovery_device = describe(&preset(params.recovery_blocks_per_plane)?);
    let levels_runs: usize = params.protocols.iter().map(|p| p.levels.len()).sum();
    let abort_runs = params.protocols.len() * (params.abort_pcts.len() - 1);
    let zone_runs = params.zone_blocks.iter().filter(|&&z| z != params.zone_blocks_default).count();
    let recovery_runs = params.protocols.len() - 1 + params.zone_blocks.len();
    progress.set_steps((1 + levels_runs + abort_runs + zone_runs + recovery_runs) as u64);
    progress.say(format!(
        "recording TPC-C ({} transactions, {} clients)",
        params.tpcc_transactions, params.tpcc_clients
    ));
    progress.tick();
    let (trace, workload) = record_tpcc(params)?;
    progress.step();
    let mut replays = Replays {
        params,
        trace: &trace,
        progress,
        runs: Vec::new(),
        failed: Vec::new(),
    };
    replays.figs_5_6_7()?;
    replays.fig9()?;
    let recovery = replays.fig8()?;
    Ok(Figures {
        workload,
        runs: replays.runs,
        recovery,
        failed: replays.failed,
    })
}

/// The replays of a run, and those the device failed.
struct Replays<'a> {
    params: &'a Params,
    trace: &'a Trace,
    progress: &'a Progress,
    runs: Vec<Run>,
    failed: Vec<FailedRun>,
}

impl Replays<'_> {
    /// One replay of `figure`. A replay the device failed is kept as a
    /// failure (an error of another kind, e.g. a device too large for
    /// memory, ends the command).
    fn one(&mut self, figure: &str, p: &str, zone: Option<u32>, iso: Isolation, a: u32) -> Result<(), Error> {
        let params = self.params;
        let res = device(params, p, params.blocks_per_plane, zone)
            .and_then(|mut dev| replay_on(&mut *dev, self.trace, params, iso, a, self.progress));
        match res {
            Ok(r) => self.runs.push(run_of(params, p, zone, &r)),
            Err(Error::Failed(error)) => self.failed.push(FailedRun {
                figure: figure.into(),
                protocol: p.into(),
                isolation: iso.name().into(),
                abort_pct: a,
                zone_blocks: zone,
                error,
            }),
            Err(e) => return Err(e),
        }
        self.progress.step();
        Ok(())
    }

    /// Fig. 5: every level each protocol offers, no aborts; Figs. 6, 7:
    /// strict at every abort ratio (its 0% is Fig. 5's strict run).
    fn figs_5_6_7(&mut self) -> Result<(), Error> {
        let params = self.params;
        for pl in &params.protocols {
            let p = pl.protocol.as_str();
            let zone = (p == "lighttx").then_some(params.zone_blocks_default);
            for level in &pl.levels {
                let iso = Isolation::parse(level).ok_or_else(|| Error::Failed(format!("unknown level {level}")))?;
                self.progress.say(format!("Fig. 5: {} {level}", label(p)));
                self.one("Fig. 5", p, zone, iso, 0)?;
            }
            for &a in params.abort_pcts.iter().filter(|&&a| a > 0) {
                self.progress.say(format!("Figs. 6, 7: {} strict, {a}% aborts", label(p)));
                self.one("Figs. 6, 7", p, zone, Isolation::Strict, a)?;
            }
        }
        Ok(())
    }

    /// Fig. 9: LightTx at every zone size (the others have no zones: their
    /// strict run without aborts).
    fn fig9(&mut self) -> Result<(), Error> {
        let params = self.params;
        if params.protocols.iter().any(|p| p.protocol == "lighttx") {
            for &z in params.zone_blocks.iter().filter(|&&z| z != params.zone_blocks_default) {
                self.progress.say(format!("Fig. 9: LightTx, zone of {z} blocks"));
                self.one("Fig. 9", "lighttx", Some(z), Isolation::Strict, 0)?;
            }
        }
        Ok(())
    }

    /// Fig. 8: at the paper's capacity, a power cut after the trace (strict,
    /// no aborts) and the mount's recovery, from the NAND alone: LightTx at
    /// every zone size, the others once.
    fn fig8(&mut self) -> Result<Vec<RecoveryRun>, Error> {
        let params = self.params;
        let rbpp = params.recovery_blocks_per_plane;
        let cap = capacity_gib(&preset(rbpp)?, rbpp);
        let mut recovery = Vec::new();
        let mut todo: Vec<(String, Option<u32>)> = Vec::new();
        for pl in &params.protocols {
            if pl.protocol == "lighttx" {
                todo.extend(params.zone_blocks.iter().map(|&z| ("lighttx".to_string(), Some(z))));
            } else {
                todo.push((pl.protocol.clone(), None));
            }
        }
        for (p, zone) in todo {
            self.progress.say(format!(
                "Fig. 8: {} at {cap:.0} GiB{}: precondition, trace, power cut, recovery",
                label(&p),
                zone.map_or(String::new(), |z| format!(", zone of {z} blocks"))
            ));
            match self.recover(&p, zone) {
                Ok(report) => recovery.push(RecoveryRun {
                    protocol: p.clone(),
                    zone_blocks: zone,
                    capacity_gib: cap,
                    recovery_s: report.time_ns as f64 / 1e9,
                    report,
                }),
                Err(Error::Failed(error)) => self.failed.push(FailedRun {
                    figure: "Fig. 8".into(),
                    protocol: p.clone(),
                    isolation: "strict".into(),
                    abort_pct: 0,
                    zone_blocks: zone,
                    error,
                }),
                Err(e) => return Err(e),
            }
            self.progress.step();
        }
        Ok(recovery)
    }

    /// The trace on a fresh device of `p` at Fig. 8's capacity, the power
    /// cut at its end, and the mount's recovery report.
    fn recover(&self, p: &str, zone: Option<u32>) -> Result<RecoveryReport, Error> {
        let params = self.params;
        let mut dev = device(params, p, params.recovery_blocks_per_plane, zone)?;
        replay_on(&mut *dev, self.trace, params, Isolation::Strict, 0, self.progress)?;
        let nand = dev.into_nand();
        let dev = txftl_protocols::mount(p, nand, FtlConfig::default(), &zone_options(zone))
            .map_err(|e| Error::Failed(format!("{p}: recovery after the power cut: {e}")))?;
        dev.recovery_report()
            .ok_or_else(|| Error::Failed(format!("{p}: the mount gave no recovery report")))
    }
}
