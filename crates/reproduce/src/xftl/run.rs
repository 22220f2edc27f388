//! Every experiment of `reproduce xftl`, with the runners of [`super::compare`]:
//! Table 1 and Figure 5 (every mode at every K and validity), Table 1 again
//! with the other behaviour at a flush, Table 5 (restarts after power cuts)
//! and Table 4 (TPC-C, the paper's four mixes).

use super::compare::{restart, restart_points, run_mode, run_workload, CompareSpec, ModeRun, Restart, Workload};
use super::paper;
use super::params::Params;
use super::results::{summarize, Figure5, Figures, Table5, TpccMix, WholeMapRun};
use crate::device::{check_fits, describe};
use crate::progress::Progress;
use crate::Error;
use txftl_ftl::FtlConfig;
use txftl_nand::{DataMode, Preset, ViolationPolicy};
use txftl_sqlite::tpcc::TpccSpec;

/// The jasmine preset (the OpenSSD board's chips) at the run's size.
fn preset(params: &Params) -> Result<Preset, Error> {
    preset_at(params.head.blocks_per_plane)
}

fn preset_at(blocks_per_plane: u32) -> Result<Preset, Error> {
    let mut p = txftl_nand::preset("jasmine").ok_or_else(|| Error::Failed("preset jasmine missing".into()))?;
    p.geometry.blocks_per_plane = blocks_per_plane;
    Ok(p)
}

/// The runners' spec at `validity` percent valid pages in GC victims.
fn spec(params: &Params, validity: u32) -> Result<CompareSpec, Error> {
    spec_at(params, validity, params.head.blocks_per_plane)
}

/// [`spec`] on a device of `blocks_per_plane`.
fn spec_at(params: &Params, validity: u32, blocks_per_plane: u32) -> Result<CompareSpec, Error> {
    let nand = preset_at(blocks_per_plane)?.config(DataMode::Full, ViolationPolicy::Error);
    check_fits(&nand)?;
    Ok(CompareSpec {
        nand,
        ftl: FtlConfig {
            checkpoint_at_flush: params.map_at_flush,
            ..FtlConfig::default()
        },
        opts: txftl_protocols::ProtocolOptions::new().with("xl2p-entries", params.xl2p_entries),
        rows: params.rows,
        transactions: params.transactions,
        seed: params.head.seed,
        validity_pct: validity,
        read_cache_pages: params
            .head
            .host
            .as_ref()
            .map_or(0, |h| h.read_cache_bytes / nand.geometry.page_size as usize),
    })
}

fn failed(what: &str) -> impl Fn(txftl_sqlite::StackError) -> Error + '_ {
    move |e| Error::Failed(format!("{what}: {e}"))
}

/// Runs every experiment.
pub fn run(params: &mut Params, progress: &Progress) -> Result<Figures, Error> {
    params.head.device = describe(&preset(params)?);
    let modes = params.modes.len();
    let steps = params.validities_pct.len() * params.ks.len() * modes
        + 3 * modes
        + modes * params.restart_cuts as usize
        + paper::MIXES.len() * modes
        + if params.tpcc_longer > 1 { LONGER_MIXES.len() * modes } else { 0 };
    progress.set_steps(steps as u64);
    let params = &*params;
    Ok(Figures {
        figure5: figure5(params, progress)?,
        table1_ablation: table1_ablation(params, progress)?,
        table1_whole_map: table1_whole_map(params, progress)?,
        table5: table5(params, progress)?,
        tpcc: tpcc(params, progress, 1, None)?,
        tpcc_longer: if params.tpcc_longer > 1 {
            tpcc(params, progress, params.tpcc_longer as u64, Some(&LONGER_MIXES))?
        } else {
            Vec::new()
        },
    })
}

/// Figure 5 at every validity: every mode at every K (Table 1 is its K = 5 column).
fn figure5(params: &Params, progress: &Progress) -> Result<Vec<Figure5>, Error> {
    let mut figure5 = Vec::new();
    for &v in &params.validities_pct {
        let s = spec(params, v)?;
        let mut runs = Vec::new();
        for &mode in &params.modes {
            for &k in &params.ks {
                progress.say(format!("partsupp {} K={k} validity {v}%", mode.name()));
                runs.push(run_mode(&s, mode, k).map_err(failed(mode.name()))?);
                progress.step();
            }
        }
        figure5.push(Figure5 { validity_pct: v, runs });
    }
    Ok(figure5)
}

/// Table 1 (K = 5, 50%) with the other behaviour at a flush.
fn table1_ablation(params: &Params, progress: &Progress) -> Result<Vec<ModeRun>, Error> {
    let mut s = spec(params, 50)?;
    s.ftl.checkpoint_at_flush = !params.map_at_flush;
    let mut runs = Vec::new();
    for &mode in &params.modes {
        progress.say(format!(
            "partsupp {} K={} {}",
            mode.name(),
            params.table1_k,
            if s.ftl.checkpoint_at_flush {
                "map written at every barrier"
            } else {
                "roll-forward at barriers"
            }
        ));
        runs.push(run_mode(&s, mode, params.table1_k).map_err(failed(mode.name()))?);
        progress.step();
    }
    Ok(runs)
}

/// Table 1 (K = 5, 50%) with the whole map at every barrier (the board's
/// public firmware), at half the run's device size and at its size: a map
/// written whole costs in proportion to the capacity.
fn table1_whole_map(params: &Params, progress: &Progress) -> Result<Vec<WholeMapRun>, Error> {
    let mut out = Vec::new();
    for bpp in [params.head.blocks_per_plane / 2, params.head.blocks_per_plane] {
        let mut s = spec_at(params, 50, bpp)?;
        s.ftl.checkpoint_at_flush = true;
        s.ftl.checkpoint_whole_map = true;
        let geo = s.nand.geometry;
        let mut runs = Vec::new();
        for &mode in &params.modes {
            progress.say(format!(
                "partsupp {} K={} whole map at every barrier, {bpp} blocks a plane",
                mode.name(),
                params.table1_k
            ));
            runs.push(run_mode(&s, mode, params.table1_k).map_err(failed(mode.name()))?);
            progress.step();
        }
        out.push(WholeMapRun {
            blocks_per_plane: bpp,
            capacity_mib: (geo.page_count() as u64 * geo.page_size as u64) >> 20,
            l2p_pages: (geo.page_count() as u64).div_ceil(geo.page_size as u64 / 4),
            runs,
        });
    }
    Ok(out)
}

/// Table 5: every mode restarted after each of the cuts.
fn table5(params: &Params, progress: &Progress) -> Result<Table5, Error> {
    let s = spec(params, params.restart_validity_pct)?;
    let mut restarts: Vec<Restart> = Vec::new();
    for &mode in &params.modes {
        for (tx, f) in restart_points(params.transactions, params.restart_cuts) {
            progress.say(format!("restart {} (cut in tx {tx}, {:.0}% in)", mode.name(), f * 100.0));
            restarts.push(restart(&s, mode, params.table1_k, tx, f).map_err(failed(mode.name()))?);
            progress.step();
        }
    }
    let summary = params
        .modes
        .iter()
        .map(|&m| summarize(m, &restarts.iter().filter(|r| r.mode == m).collect::<Vec<_>>()))
        .collect();
    Ok(Table5 { runs: restarts, summary })
}

/// The mixes of Table 4 the run-length sweep runs again: those whose pages
/// reach flash (the selection- and join-only mixes write nothing and read
/// from the host's caches).
pub const LONGER_MIXES: [&str; 2] = ["write", "read"];

/// Table 4: the paper's TPC-C mixes in every mode, `times` the run's
/// transactions each; only the mixes `only` names, if given.
fn tpcc(params: &Params, progress: &Progress, times: u64, only: Option<&[&str]>) -> Result<Vec<TpccMix>, Error> {
    let s = spec(params, params.tpcc_validity_pct)?;
    let mut tpcc = Vec::new();
    for (id, name, mix) in paper::MIXES {
        if only.is_some_and(|o| !o.contains(&id)) {
            continue;
        }
        let t = TpccSpec {
            warehouses: params.tpcc_warehouses,
            scale: params.tpcc_scale,
            mix,
            transactions: params.tpcc_transactions * times,
            seed: params.head.seed,
            ..TpccSpec::default()
        };
        t.validate().map_err(|e| Error::Failed(e.to_string()))?;
        let mut runs = Vec::new();
        for &mode in &params.modes {
            progress.say(format!("TPC-C {name} {}", mode.name()));
            runs.push(run_workload(&s, mode, &Workload::Tpcc(t.clone())).map_err(failed(mode.name()))?);
            progress.step();
        }
        tpcc.push(TpccMix {
            id: id.into(),
            name: name.into(),
            mix,
            runs,
        });
    }
    Ok(tpcc)
}
