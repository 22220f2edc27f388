//! Every experiment of `reproduce lighttx`: the trace recorded, then
//! replayed on every protocol of the paper this build registers
//! (`txftl_protocols::PROTOCOLS`): Fig. 5 at every isolation level each
//! offers, Figs. 6 and 7 at every abort ratio, Fig. 9 at every zone size,
//! and Fig. 8's power cut and recovery at the paper's capacity.

use super::params::{capacity_gib, preset, Params};
use super::replay::{device, key_options, replay_on, run_of};
use super::results::{FailedRun, Figures, GcOnset, RecoveryRun, Run};
use super::trace::record_tpcc;
use super::{has_zones, label, variants};
use crate::device::describe;
use crate::progress::Progress;
use crate::Error;
use txftl_ftl::{FtlConfig, RecoveryReport};
use txftl_host::replay::Isolation;
use txftl_host::trace::Trace;

/// Runs every experiment.
pub fn run(params: &mut Params, progress: &Progress) -> Result<Figures, Error> {
    params.head.device = describe(&preset(params.head.blocks_per_plane)?);
    params.recovery_device = describe(&preset(params.recovery_blocks_per_plane)?);
    let levels_runs: usize = params.protocols.iter().map(|p| p.levels.len()).sum();
    let abort_runs = params.protocols.len() * (params.abort_pcts.len() - 1);
    let zone_runs = params.zone_blocks.iter().filter(|&&z| z != params.zone_blocks_default).count();
    let recovery_runs = params.protocols.len() - 1 + params.zone_blocks.len();
    let variants = variants(params);
    let zoned = variants.iter().filter(|v| has_zones(v.key)).count();
    // Fig. 5 strict, Fig. 9's other zones, Fig. 8's recoveries.
    let variant_runs = variants.len() * 2 + zoned * (zone_runs + params.zone_blocks.len() - 1);
    let other_fills = params.fills_pct.iter().filter(|&&x| x != params.precondition_pct).count();
    let sweep_runs = other_fills * params.protocols.len() * params.abort_pcts.len();
    let onset_runs = params.fills_pct.len() * params.protocols.len() * ONSET_PREFIXES_PCT.len();
    progress.set_steps((1 + levels_runs + abort_runs + sweep_runs + onset_runs + zone_runs + recovery_runs + variant_runs) as u64);
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
        sweep: Vec::new(),
        failed: Vec::new(),
    };
    replays.figs_5_6_7()?;
    replays.variants()?;
    replays.fill_sweep()?;
    let gc_onset = replays.gc_onset()?;
    replays.fig9()?;
    let recovery = replays.fig8()?;
    let mut figures = Figures {
        workload,
        runs: replays.runs,
        sweep: replays.sweep,
        gc_onset,
        sweep_checks: Vec::new(),
        recovery,
        failed: replays.failed,
    };
    figures.sweep_checks = super::checks::sweep_checks(params, &figures);
    Ok(figures)
}

/// The prefixes of the trace (percent of its operations) whose GC shows
/// where, at a fill, GC starts without aborts; the whole trace is the
/// sweep's own run.
pub const ONSET_PREFIXES_PCT: [u32; 3] = [25, 50, 75];

/// The replays of a run, and those the device failed.
struct Replays<'a> {
    params: &'a Params,
    trace: &'a Trace,
    progress: &'a Progress,
    runs: Vec<Run>,
    sweep: Vec<Run>,
    failed: Vec<FailedRun>,
}

impl Replays<'_> {
    /// One replay of `figure`. A replay the device failed is kept as a
    /// failure (an error of another kind, e.g. a device too large for
    /// memory, ends the command).
    fn one(&mut self, figure: &str, p: &str, zone: Option<u32>, iso: Isolation, a: u32) -> Result<(), Error> {
        let fill = self.params.precondition_pct;
        if let Some(run) = self.at_fill(figure, p, zone, iso, a, fill)? {
            if figure == "Figs. 6, 7" || (figure == "Fig. 5" && iso == Isolation::Strict) {
                self.sweep.push(run.clone());
            }
            self.runs.push(run);
        }
        Ok(())
    }

    /// One replay at `fill`: its run, or None when the device failed it
    /// (kept in `failed`).
    fn at_fill(&mut self, figure: &str, p: &str, zone: Option<u32>, iso: Isolation, a: u32, fill: u32) -> Result<Option<Run>, Error> {
        let params = self.params;
        let res = device(p, params.head.blocks_per_plane, zone, fill)
            .and_then(|mut dev| replay_on(&mut *dev, self.trace, params, iso, a, self.progress));
        let run = match res {
            Ok(r) => Some(run_of(params, p, zone, fill, &r)),
            Err(Error::Failed(error)) => {
                self.failed.push(FailedRun {
                    figure: figure.into(),
                    protocol: p.into(),
                    isolation: iso.name().into(),
                    abort_pct: a,
                    zone_blocks: zone,
                    fill_pct: fill,
                    error,
                });
                None
            }
            Err(e) => return Err(e),
        };
        self.progress.step();
        Ok(run)
    }

    /// Figs. 6, 7 at every other fill of the sweep (the default's are
    /// [`Replays::figs_5_6_7`]'s).
    fn fill_sweep(&mut self) -> Result<(), Error> {
        let params = self.params;
        for &fill in params.fills_pct.iter().filter(|&&x| x != params.precondition_pct) {
            for pl in &params.protocols {
                let p = pl.protocol.as_str();
                let zone = (p == "lighttx").then_some(params.zone_blocks_default);
                for &a in &params.abort_pcts {
                    self.progress
                        .say(format!("Figs. 6, 7 at fill {fill}%: {} strict, {a}% aborts", label(p)));
                    if let Some(run) = self.at_fill("Figs. 6, 7", p, zone, Isolation::Strict, a, fill)? {
                        self.sweep.push(run);
                    }
                }
            }
        }
        Ok(())
    }

    /// Where GC starts without aborts at each fill: every protocol, strict,
    /// 0% aborts, on [`ONSET_PREFIXES_PCT`] of the trace (a fresh device
    /// each), then the whole trace (the sweep's run).
    fn gc_onset(&mut self) -> Result<Vec<GcOnset>, Error> {
        let params = self.params;
        let mut out = Vec::new();
        for &fill in &params.fills_pct {
            for pl in &params.protocols {
                let p = pl.protocol.as_str();
                let zone = (p == "lighttx").then_some(params.zone_blocks_default);
                let mut prefixes = Vec::new();
                for q in ONSET_PREFIXES_PCT {
                    self.progress
                        .say(format!("GC onset at fill {fill}%: {} on {q}% of the trace", label(p)));
                    let mut part = self.trace.clone();
                    let n = self.trace.ops.len() * q as usize / 100;
                    part.ops.truncate(n);
                    part.lines.truncate(n);
                    let res = device(p, params.head.blocks_per_plane, zone, fill)
                        .and_then(|mut dev| replay_on(&mut *dev, &part, params, Isolation::Strict, 0, self.progress));
                    match res {
                        Ok(r) => prefixes.push((q, r.measured.gc_runs, r.measured.host_writes)),
                        // The whole trace's run says why (in `failed`).
                        Err(Error::Failed(_)) => {}
                        Err(e) => return Err(e),
                    }
                    self.progress.step();
                }
                if let Some(w) = self
                    .sweep
                    .iter()
                    .find(|r| r.protocol == p && r.abort_pct == 0 && r.fill_pct == fill)
                {
                    prefixes.push((100, w.measured.gc_runs, w.measured.host_writes));
                }
                out.push(GcOnset {
                    fill_pct: fill,
                    protocol: p.into(),
                    prefixes,
                });
            }
        }
        Ok(out)
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

    /// The variants beside the paper's protocols: strict without aborts
    /// (Fig. 5's column), and with zones at every other zone size (Fig. 9).
    fn variants(&mut self) -> Result<(), Error> {
        let params = self.params;
        for v in variants(params) {
            let zoned = has_zones(v.key);
            self.progress.say(format!("variants: {}", v.label));
            self.one("variants", v.key, zoned.then_some(params.zone_blocks_default), Isolation::Strict, 0)?;
            if zoned {
                for &z in params.zone_blocks.iter().filter(|&&z| z != params.zone_blocks_default) {
                    self.progress.say(format!("variants: {}, zone of {z} blocks", v.label));
                    self.one("variants", v.key, Some(z), Isolation::Strict, 0)?;
                }
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
        let keys = params.protocols.iter().map(|p| p.protocol.as_str());
        for key in keys.chain(variants(params).iter().map(|v| v.key)) {
            if has_zones(key) {
                todo.extend(params.zone_blocks.iter().map(|&z| (key.to_string(), Some(z))));
            } else {
                todo.push((key.to_string(), None));
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
                    fill_pct: params.precondition_pct,
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
        let mut dev = device(p, params.recovery_blocks_per_plane, zone, params.precondition_pct)?;
        replay_on(&mut *dev, self.trace, params, Isolation::Strict, 0, self.progress)?;
        let nand = dev.into_nand();
        let dev = txftl_protocols::mount(super::protocol_of(p), nand, FtlConfig::default(), &key_options(p, zone))
            .map_err(|e| Error::Failed(format!("{p}: recovery after the power cut: {e}")))?;
        dev.recovery_report()
            .ok_or_else(|| Error::Failed(format!("{p}: the mount gave no recovery report")))
    }
}
