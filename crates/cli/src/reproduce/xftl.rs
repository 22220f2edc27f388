//! `txftl reproduce xftl`: the X-FTL paper's evaluation (SIGMOD 2013, sec. 6)
//! rerun on txftl: Table 1 (I/O counts, K = 5, at 30, 50 and 70% GC victim
//! validity), Figure 5 (elapsed time over K), Table 5 (SQLite restart time)
//! and the TPC-C Tables 3 and 4 (four mixes, tpmC), each beside the paper's
//! numbers, then the checks.
//!
//! The experiments are `compare`'s (`txftl_sqlite::compare`): the same device
//! builder, aging, workload runners and restart measurement.

use super::checks::{ordering, Check, Unit};
use super::html;
use crate::open::check_fits;
use crate::setup::describe;
use crate::table::{sim_time, thousands};
use crate::CliError;
use comfy_table::{presets::UTF8_FULL_CONDENSED, Table};
use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;
use txftl_ftl::FtlConfig;
use txftl_nand::{DataMode, ViolationPolicy};
use txftl_protocols::SqlJournal;
use txftl_sqlite::compare::{restart, restart_points, run_mode, run_workload, CompareSpec, ModeRun, Restart, Workload, WorkloadRun};
use txftl_sqlite::tpcc::TpccSpec;
use txftl_sqlite::Mode;

/// The paper's modes: SQLite's rollback journal and WAL on the plain FTL,
/// and `journal_mode=OFF` on X-FTL (the paper's setting), with MEMORY and
/// batch atomic writes on X-FTL beside them.
fn paper_mode(name: &str) -> Mode {
    Mode::parse(name).unwrap_or_else(|| panic!("the registry offers SQLite mode `{name}`"))
}
fn rbj() -> Mode {
    paper_mode("rbj")
}
fn wal() -> Mode {
    paper_mode("wal")
}
fn xftl() -> Mode {
    paper_mode("xftl")
}

/// What the paper states, as it states it (sec. 6, Tables 1, 4 and 5, the text).
pub mod paper {
    /// Table 1 (K = 5, GC validity 50%), per mode RBJ, WAL, X-FTL.
    pub struct Table1Row {
        pub db: f64,
        pub journal: f64,
        pub fs: f64,
        pub total: f64,
        pub fsyncs: f64,
        pub flash_writes: f64,
        pub flash_reads: f64,
        pub gc: f64,
        pub erases: f64,
    }
    pub const TABLE1: [Table1Row; 3] = [
        Table1Row {
            db: 6_230.0,
            journal: 7_222.0,
            fs: 15_987.0,
            total: 29_439.0,
            fsyncs: 2_999.0,
            flash_writes: 243_639.0,
            flash_reads: 9_792.0,
            gc: 756.0,
            erases: 2_044.0,
        },
        Table1Row {
            db: 3_523.0,
            journal: 5_754.0,
            fs: 3_646.0,
            total: 12_923.0,
            fsyncs: 1_013.0,
            flash_writes: 92_979.0,
            flash_reads: 3_472.0,
            gc: 409.0,
            erases: 897.0,
        },
        Table1Row {
            db: 5_211.0,
            journal: 0.0,
            fs: 994.0,
            total: 6_205.0,
            fsyncs: 994.0,
            flash_writes: 33_239.0,
            flash_reads: 2_011.0,
            gc: 115.0,
            erases: 243.0,
        },
    ];
    /// Sec. 6.3.1: "X-FTL helped SQLite process transactions much faster than
    /// write-ahead log and rollback modes by 3.5 and 11.7 times" (Figure 5(b)).
    pub const FIG5_XFTL_OVER_WAL: f64 = 3.5;
    pub const FIG5_XFTL_OVER_RBJ: f64 = 11.7;
    /// Sec. 6.3.1: "In write-ahead log mode, SQLite wrote twice as many pages as running it with X-FTL".
    pub const WAL_OVER_XFTL_HOST_WRITES: f64 = 2.0;
    /// Table 5, ms: rollback, write-ahead log, X-FTL.
    pub const TABLE5_MS: [f64; 3] = [20.1, 153.0, 3.5];
    /// Table 3: the mixes, in txftl's order (New-Order, Payment, Order-Status,
    /// Delivery, Stock-Level); the paper's columns are Delivery, Order-Status,
    /// Payment, Stock-Level, New-Order.
    pub const MIXES: [(&str, &str, [u32; 5]); 4] = [
        ("write", "write-intensive", [45, 43, 4, 4, 4]),
        ("read", "read-intensive", [5, 0, 50, 0, 45]),
        ("selection", "selection-only", [0, 0, 100, 0, 0]),
        ("join", "join-only", [0, 0, 0, 0, 100]),
    ];
    /// Table 4, "tpmC" (transactions of every type per minute: the
    /// selection- and join-only mixes have no New-Order), WAL and X-FTL.
    pub const TABLE4_WAL: [f64; 4] = [251.0, 3_942.0, 281_856.0, 35_662.0];
    pub const TABLE4_XFTL: [f64; 4] = [582.0, 9_925.0, 277_586.0, 35_888.0];
    /// Sec. 6.3.3: "about 130 percent higher" and "about 152 percent
    /// improvement" (write- and read-intensive); the last two "comparable".
    pub const TPCC_GAIN_PCT: [f64; 2] = [130.0, 152.0];
    /// TPC-C: DBT2 with 10 warehouses, one connection (sec. 6.2).
    pub const TPCC_WAREHOUSES: u32 = 10;
}

/// The parameters of a run, all printed.
#[derive(Clone, Debug, Serialize)]
pub struct Params {
    pub quick: bool,
    pub seed: u64,
    /// The FTL writes its mapping table at every flush (the paper's
    /// firmware, sec. 6.3.4); Table 1's ablation runs with the other setting.
    pub map_at_flush: bool,
    pub device: String,
    pub blocks_per_plane: u32,
    pub xl2p_entries: u32,
    pub rows: u32,
    pub transactions: u32,
    pub table1_k: u32,
    pub ks: Vec<u32>,
    pub validities_pct: Vec<u32>,
    pub restart_validity_pct: u32,
    /// Restart measurements per mode, cut where
    /// `txftl_sqlite::compare::restart_points` says (spread over the second
    /// half of the run and through the transaction; each run's `Restart`
    /// records where its cut fell).
    pub restart_cuts: u32,
    pub tpcc_warehouses: u32,
    pub tpcc_scale: u32,
    pub tpcc_transactions: u64,
    pub tpcc_validity_pct: u32,
    pub modes: Vec<Mode>,
    /// What is smaller than the paper's setup, and by how much.
    pub scaled_down: Vec<String>,
}

impl Params {
    pub fn new(quick: bool, seed: u64) -> Params {
        let blocks_per_plane = if quick { 32 } else { 128 };
        let rows = if quick { 6_000 } else { 60_000 };
        let transactions = if quick { 200 } else { 1_000 };
        let tpcc_scale = if quick { 10 } else { 1 };
        let tpcc_transactions = if quick { 300 } else { 2_000 };
        let mut scaled_down = vec![
            "device: the jasmine preset models the OpenSSD board's chips (8 KiB pages, 128 pages a block, MLC) at 1 GiB raw (the board has 64 GiB of flash)".to_string(),
            format!(
                "TPC-C: {} warehouse(s) instead of the paper's {} (one connection, as in the paper); {} transactions per mix and mode",
                1,
                paper::TPCC_WAREHOUSES,
                thousands(tpcc_transactions)
            ),
        ];
        if quick {
            scaled_down.push(format!(
                "--quick: device {} blocks per plane (256 MiB raw), partsupp {} tuples (paper 60,000), {} transactions per run (paper 1,000), K in 1,5,10,20 (paper 1..20), 10 restart cuts per mode instead of 20, TPC-C cardinalities divided by {}",
                blocks_per_plane, rows, transactions, tpcc_scale
            ));
        }
        Params {
            quick,
            seed,
            map_at_flush: true,
            device: String::new(),
            blocks_per_plane,
            xl2p_entries: txftl_protocols::xftl::DEFAULT_ENTRIES,
            rows,
            transactions,
            table1_k: 5,
            ks: if quick { vec![1, 5, 10, 20] } else { vec![1, 5, 10, 15, 20] },
            validities_pct: vec![30, 50, 70],
            restart_validity_pct: 50,
            // More cuts than compare's five (20, 10 with --quick): RBJ leaves
            // a hot journal only in the short stretch between its journal's
            // sync and its deletion.
            restart_cuts: if quick { 10 } else { 20 },
            tpcc_warehouses: 1,
            tpcc_scale,
            tpcc_transactions,
            tpcc_validity_pct: 0,
            modes: vec![rbj(), wal(), xftl()],
            scaled_down,
        }
    }
}

impl Params {
    /// Tests only: the smallest sizes that still run every experiment.
    pub fn tiny(&mut self) {
        self.quick = true;
        self.blocks_per_plane = 16;
        self.rows = 600;
        self.transactions = 20;
        self.ks = vec![1, 5];
        self.tpcc_scale = 100;
        self.tpcc_transactions = 30;
        self.scaled_down.push(
            "--tiny (tests only): 16 blocks per plane, 600 tuples, 20 transactions, K in 1,5, TPC-C scale 1/100, 30 transactions".into(),
        );
    }
}

/// Figure 5 at one validity: every mode at every K (Table 1 is its K = 5 column).
#[derive(Clone, Debug, Serialize)]
pub struct Figure5 {
    pub validity_pct: u32,
    pub runs: Vec<ModeRun>,
}

impl Figure5 {
    pub fn run(&self, mode: Mode, k: u32) -> Option<&ModeRun> {
        self.runs.iter().find(|r| r.mode == mode && r.k == k)
    }
}

/// Restart figures of one mode (Table 5).
#[derive(Clone, Debug, Serialize)]
pub struct RestartSummary {
    pub mode: Mode,
    pub cuts: usize,
    /// SQLite's own recovery, mean over every cut, ms (device clock).
    pub sqlite_mean_ms: f64,
    /// Cuts after which SQLite had something to recover (a hot journal to
    /// roll back, WAL frames to read), and the mean over those, ms.
    pub cuts_with_recovery: usize,
    pub sqlite_mean_with_recovery_ms: f64,
    /// X-FTL: loading the X-L2P table and applying its committed entries, mean ms.
    pub xl2p_load_mean_ms: f64,
    pub fs_mount_mean_ms: f64,
    pub ftl_recovery_mean_ms: f64,
    /// What the paper's Table 5 measures in this mode: SQLite's recovery
    /// (RBJ, WAL) over the cuts that had one, the X-L2P table's (X-FTL).
    pub paper_comparable_ms: f64,
    pub all_ok: bool,
}

#[derive(Clone, Debug, Serialize)]
pub struct Table5 {
    pub runs: Vec<Restart>,
    pub summary: Vec<RestartSummary>,
}

/// One TPC-C mix in every mode (Table 4).
#[derive(Clone, Debug, Serialize)]
pub struct TpccMix {
    pub id: String,
    pub name: String,
    /// New-Order, Payment, Order-Status, Delivery, Stock-Level, percent.
    pub mix: [u32; 5],
    pub runs: Vec<WorkloadRun>,
}

impl TpccMix {
    /// Transactions per simulated minute in `mode` (the paper's "tpmC").
    pub fn tpm(&self, mode: Mode) -> f64 {
        self.runs
            .iter()
            .find(|r| r.mode == mode)
            .map_or(0.0, |r| r.transactions_per_sim_minute())
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct Figures {
    pub figure5: Vec<Figure5>,
    /// Table 1 (K = 5, 50% validity) again with the other behaviour at a
    /// flush (`Params::map_at_flush` negated: by default without the mapping
    /// table written at every barrier, i.e. txftl's roll-forward FTL): the
    /// ablation behind the notes on flash writes.
    pub table1_ablation: Vec<ModeRun>,
    pub table5: Table5,
    pub tpcc: Vec<TpccMix>,
}

impl Figures {
    fn fig5(&self, validity: u32) -> Option<&Figure5> {
        self.figure5.iter().find(|f| f.validity_pct == validity)
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub paper: String,
    pub params: Params,
    pub figures: Figures,
    pub checks: Vec<Check>,
    /// Where ours differs from the paper and why (also in the checks' notes).
    pub deviations: Vec<String>,
}

fn spec(params: &Params, validity: u32) -> Result<CompareSpec, CliError> {
    let mut p = txftl_nand::preset("jasmine").ok_or_else(|| CliError::Failed("preset jasmine missing".into()))?;
    p.geometry.blocks_per_plane = params.blocks_per_plane;
    let nand = p.config(DataMode::Full, ViolationPolicy::Error);
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
        seed: params.seed,
        validity_pct: validity,
    })
}

fn device_name(params: &Params) -> Result<String, CliError> {
    let mut p = txftl_nand::preset("jasmine").ok_or_else(|| CliError::Failed("preset jasmine missing".into()))?;
    p.geometry.blocks_per_plane = params.blocks_per_plane;
    Ok(describe(&p))
}

fn failed(what: &str) -> impl Fn(txftl_sqlite::StackError) -> CliError + '_ {
    move |e| CliError::Failed(format!("{what}: {e}"))
}

fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

fn mean(v: impl Iterator<Item = f64>) -> f64 {
    let (s, n) = v.fold((0.0, 0usize), |(s, n), x| (s + x, n + 1));
    if n == 0 {
        0.0
    } else {
        s / n as f64
    }
}

/// Whether SQLite had something to recover after this cut: RBJ a hot
/// journal (rolled back: it writes database pages back), WAL always (after a
/// crash its first open rebuilds the WAL index from the WAL's frames), X-FTL
/// never (no journal; its recovery is the FTL's X-L2P table).
fn sqlite_recovered(r: &Restart) -> bool {
    match r.mode.journal() {
        SqlJournal::Delete | SqlJournal::Batch => r.sqlite_recovery_page_writes > 0,
        SqlJournal::Wal => true,
        SqlJournal::Off | SqlJournal::Memory => false,
    }
}

fn summarize(mode: Mode, runs: &[&Restart]) -> RestartSummary {
    let with: Vec<&&Restart> = runs.iter().filter(|r| sqlite_recovered(r)).collect();
    let sqlite_mean_with_recovery_ms = mean(with.iter().map(|r| ms(r.sqlite_recovery_ns)));
    let xl2p_load_mean_ms = mean(runs.iter().map(|r| ms(r.ftl_recovery.protocol_read_ns)));
    RestartSummary {
        mode,
        cuts: runs.len(),
        sqlite_mean_ms: mean(runs.iter().map(|r| ms(r.sqlite_recovery_ns))),
        cuts_with_recovery: with.len(),
        sqlite_mean_with_recovery_ms,
        xl2p_load_mean_ms,
        fs_mount_mean_ms: mean(runs.iter().map(|r| ms(r.fs_mount_ns))),
        ftl_recovery_mean_ms: mean(runs.iter().map(|r| ms(r.ftl_recovery.time_ns))),
        paper_comparable_ms: if mode == xftl() {
            xl2p_load_mean_ms
        } else {
            sqlite_mean_with_recovery_ms
        },
        all_ok: runs.iter().all(|r| r.integrity == "ok" && r.committed_state_ok),
    }
}

/// Runs every experiment.
pub fn run(params: &mut Params, show_progress: bool) -> Result<Figures, CliError> {
    params.device = device_name(params)?;
    let steps = params.validities_pct.len() * params.ks.len() * params.modes.len()
        + params.modes.len()
        + params.modes.len() * params.restart_cuts as usize
        + paper::MIXES.len() * params.modes.len();
    let bar = if show_progress {
        ProgressBar::new(steps as u64)
    } else {
        ProgressBar::hidden()
    };
    bar.set_style(
        ProgressStyle::with_template("{spinner} {msg} [{bar:30}] {pos}/{len} runs ({elapsed})")
            .map_err(CliError::failed)?
            .progress_chars("=> "),
    );
    let mut figure5 = Vec::new();
    for &v in &params.validities_pct {
        let s = spec(params, v)?;
        let mut runs = Vec::new();
        for &mode in &params.modes {
            for &k in &params.ks {
                bar.set_message(format!("partsupp {} K={k} validity {v}%", mode.name()));
                runs.push(run_mode(&s, mode, k).map_err(failed(mode.name()))?);
                bar.inc(1);
            }
        }
        figure5.push(Figure5 { validity_pct: v, runs });
    }
    let mut s = spec(params, 50)?;
    s.ftl.checkpoint_at_flush = !params.map_at_flush;
    let mut table1_ablation = Vec::new();
    for &mode in &params.modes {
        bar.set_message(format!(
            "partsupp {} K={} {}",
            mode.name(),
            params.table1_k,
            if s.ftl.checkpoint_at_flush {
                "map written at every barrier"
            } else {
                "roll-forward at barriers"
            }
        ));
        table1_ablation.push(run_mode(&s, mode, params.table1_k).map_err(failed(mode.name()))?);
        bar.inc(1);
    }
    let s = spec(params, params.restart_validity_pct)?;
    let mut restarts = Vec::new();
    for &mode in &params.modes {
        for (tx, f) in restart_points(params.transactions, params.restart_cuts) {
            bar.set_message(format!("restart {} (cut in tx {tx}, {:.0}% in)", mode.name(), f * 100.0));
            restarts.push(restart(&s, mode, params.table1_k, tx, f).map_err(failed(mode.name()))?);
            bar.inc(1);
        }
    }
    let summary = params
        .modes
        .iter()
        .map(|&m| summarize(m, &restarts.iter().filter(|r| r.mode == m).collect::<Vec<_>>()))
        .collect();
    let s = spec(params, params.tpcc_validity_pct)?;
    let mut tpcc = Vec::new();
    for (id, name, mix) in paper::MIXES {
        let t = TpccSpec {
            warehouses: params.tpcc_warehouses,
            scale: params.tpcc_scale,
            mix,
            transactions: params.tpcc_transactions,
            seed: params.seed,
            ..TpccSpec::default()
        };
        t.validate().map_err(|e| CliError::Failed(e.to_string()))?;
        let mut runs = Vec::new();
        for &mode in &params.modes {
            bar.set_message(format!("TPC-C {name} {}", mode.name()));
            runs.push(run_workload(&s, mode, &Workload::Tpcc(t.clone())).map_err(failed(mode.name()))?);
            bar.inc(1);
        }
        tpcc.push(TpccMix {
            id: id.into(),
            name: name.into(),
            mix,
            runs,
        });
    }
    bar.finish_and_clear();
    Ok(Figures {
        figure5,
        table1_ablation,
        table5: Table5 { runs: restarts, summary },
        tpcc,
    })
}

/// Host page writes of the workload (the aging filler excluded), as Table 1 counts them.
pub fn host_writes(r: &ModeRun) -> u64 {
    r.host.host_page_writes() - r.host.other_page_writes
}

/// Flash programs (full and partial).
pub fn programs(r: &ModeRun) -> u64 {
    r.device.flash_programs + r.device.flash_partial_programs
}

fn label(m: Mode) -> &'static str {
    m.cli()
}

/// Mean over K of the ratio of elapsed times `slow / fast` at one validity.
pub fn speedup(f: &Figure5, ks: &[u32], slow: Mode, fast: Mode) -> f64 {
    mean(
        ks.iter()
            .filter_map(|&k| Some(f.run(slow, k)?.elapsed_s / f.run(fast, k)?.elapsed_s)),
    )
}

/// The checks: every number of the paper's evaluation these experiments speak to.
pub fn checks(params: &Params, f: &Figures) -> Vec<Check> {
    let mut c = Vec::new();
    let k = params.table1_k;
    let modes = [rbj(), wal(), xftl()];
    // Table 1 at the paper's 50%.
    if let Some(t1) = f.fig5(50) {
        for (i, &m) in modes.iter().enumerate() {
            let Some(r) = t1.run(m, k) else { continue };
            let p = &paper::TABLE1[i];
            let l = label(m);
            c.push(Check::value(
                &format!("table1.{l}.host_writes"),
                &format!(
                    "Table 1, {}: host page writes (database, journal/WAL, file system), 1,000 tx of K=5",
                    m.name()
                ),
                p.total,
                scale_tx(host_writes(r) as f64, params),
                Unit::Count,
            ));
            c.push(Check::value(
                &format!("table1.{l}.fsyncs"),
                &format!("Table 1, {}: fsync calls", m.name()),
                p.fsyncs,
                scale_tx(r.host.fsyncs as f64, params),
                Unit::Count,
            ));
            c.push(Check::value(
                &format!("table1.{l}.flash_writes"),
                &format!("Table 1, {}: flash pages written (FTL side, GC copies included)", m.name()),
                p.flash_writes,
                scale_tx(programs(r) as f64, params),
                Unit::Count,
            ));
            c.push(Check::value(
                &format!("table1.{l}.programs_per_host_write"),
                &format!("Table 1, {}: flash pages written per host page write", m.name()),
                p.flash_writes / p.total,
                programs(r) as f64 / host_writes(r).max(1) as f64,
                Unit::Factor,
            ));
            c.push(Check::value(
                &format!("table1.{l}.gc_runs"),
                &format!("Table 1, {}: garbage collections", m.name()),
                p.gc,
                scale_tx(r.device.gc_runs as f64, params),
                Unit::Count,
            ));
            c.push(Check::value(
                &format!("table1.{l}.erases"),
                &format!("Table 1, {}: block erases", m.name()),
                p.erases,
                scale_tx(r.device.flash_erases as f64, params),
                Unit::Count,
            ));
        }
        if let (Some(w), Some(x)) = (t1.run(wal(), k), t1.run(xftl(), k)) {
            c.push(Check::value(
                "table1.wal_over_xftl.host_writes",
                "sec. 6.3.1: WAL writes twice as many pages as X-FTL (host page writes, K=5)",
                paper::WAL_OVER_XFTL_HOST_WRITES,
                host_writes(w) as f64 / host_writes(x).max(1) as f64,
                Unit::Factor,
            ));
        }
        c.push(Check::value(
            "fig5.xftl_over_wal",
            "Figure 5(b): X-FTL faster than WAL (elapsed-time ratio, mean over K, 50% validity)",
            paper::FIG5_XFTL_OVER_WAL,
            speedup(t1, &params.ks, wal(), xftl()),
            Unit::Factor,
        ));
        c.push(Check::value(
            "fig5.xftl_over_rbj",
            "Figure 5(b): X-FTL faster than RBJ (elapsed-time ratio, mean over K, 50% validity)",
            paper::FIG5_XFTL_OVER_RBJ,
            speedup(t1, &params.ks, rbj(), xftl()),
            Unit::Factor,
        ));
    }
    // The ordering of elapsed times at every validity and K.
    for fig in &f.figure5 {
        let per_k: Vec<String> = params
            .ks
            .iter()
            .map(|&k| {
                let items: Vec<(&str, f64)> = modes.iter().filter_map(|&m| Some((m.name(), fig.run(m, k)?.elapsed_s))).collect();
                ordering(&items)
            })
            .collect();
        let same = per_k.windows(2).all(|w| w[0] == w[1]);
        let measured = if same {
            per_k.first().cloned().unwrap_or_default()
        } else {
            per_k.join("; ")
        };
        c.push(Check::order(
            &format!("fig5.order.validity{}", fig.validity_pct),
            &format!(
                "Figure 5: elapsed time RBJ > WAL > X-FTL at every K ({}% validity)",
                fig.validity_pct
            ),
            "RBJ > WAL > X-FTL",
            &measured,
        ));
    }
    // Table 5.
    let s = &f.table5.summary;
    for (i, &m) in modes.iter().enumerate() {
        if let Some(r) = s.iter().find(|r| r.mode == m) {
            let what = if m == xftl() {
                "Table 5, X-FTL: restart (X-L2P table load and apply), mean of the cuts"
            } else {
                "Table 5: SQLite's restart (hot journal rollback / WAL recovery), mean of the cuts that left one"
            };
            c.push(Check::value(
                &format!("table5.{}.restart_ms", label(m)),
                &format!("{what} ({})", m.name()),
                paper::TABLE5_MS[i],
                r.paper_comparable_ms,
                Unit::Ms,
            ));
        }
    }
    let items: Vec<(&str, f64)> = modes
        .iter()
        .filter_map(|&m| Some((m.name(), s.iter().find(|r| r.mode == m)?.paper_comparable_ms)))
        .collect();
    c.push(Check::order(
        "table5.order",
        "Table 5: restart time WAL > RBJ > X-FTL",
        "WAL > RBJ > X-FTL",
        &ordering(&items),
    ));
    // Table 4.
    for (i, mix) in f.tpcc.iter().enumerate() {
        let wal = mix.tpm(wal());
        let x = mix.tpm(xftl());
        c.push(Check::value(
            &format!("table4.{}.wal_tpm", mix.id),
            &format!("Table 4, {}: WAL transactions per minute", mix.name),
            paper::TABLE4_WAL[i],
            wal,
            Unit::Count,
        ));
        c.push(Check::value(
            &format!("table4.{}.xftl_tpm", mix.id),
            &format!("Table 4, {}: X-FTL transactions per minute", mix.name),
            paper::TABLE4_XFTL[i],
            x,
            Unit::Count,
        ));
        if i < 2 {
            c.push(Check::value(
                &format!("table4.{}.xftl_over_wal", mix.id),
                &format!("sec. 6.3.3, {}: X-FTL's throughput gain over WAL", mix.name),
                paper::TPCC_GAIN_PCT[i],
                if wal > 0.0 { 100.0 * (x / wal - 1.0) } else { 0.0 },
                Unit::Percent,
            ));
        } else {
            // "Comparable": the paper gives no percentage, only Table 4's two
            // numbers, so their ratio is what it states.
            c.push(Check::value(
                &format!("table4.{}.xftl_over_wal", mix.id),
                &format!(
                    "sec. 6.3.3, {}: X-FTL and WAL comparable (tpm ratio X-FTL / WAL, Table 4)",
                    mix.name
                ),
                paper::TABLE4_XFTL[i] / paper::TABLE4_WAL[i],
                if wal > 0.0 { x / wal } else { 0.0 },
                Unit::Ratio,
            ));
        }
    }
    c
}

/// A count of our run scaled to the paper's 1,000 transactions (quick mode runs fewer).
fn scale_tx(v: f64, params: &Params) -> f64 {
    v * 1000.0 / params.transactions as f64
}

fn table(header: Vec<String>, rows: Vec<Vec<String>>) -> Table {
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED);
    t.set_header(header);
    for r in rows {
        t.add_row(r);
    }
    t
}

fn c0(v: f64) -> String {
    thousands(v.round().max(0.0) as u64)
}

/// Table 1 rows at one validity: ours per mode beside the paper's (at 50%).
pub fn table1_rows(params: &Params, fig: &Figure5) -> Vec<Vec<String>> {
    let k = params.table1_k;
    let modes = [rbj(), wal(), xftl()];
    let paper_here = fig.validity_pct == 50;
    type Get = fn(&ModeRun) -> f64;
    type GetP = fn(&paper::Table1Row) -> f64;
    let rows: [(&str, Get, GetP); 12] = [
        ("host: database page writes", |r| r.host.database_page_writes as f64, |p| p.db),
        (
            "host: journal / WAL page writes",
            |r| (r.host.journal_page_writes + r.host.wal_page_writes) as f64,
            |p| p.journal,
        ),
        (
            "host: file-system metadata writes",
            |r| (r.host.metadata_page_writes + r.host.metadata_journal_writes) as f64,
            |p| p.fs,
        ),
        ("host: total page writes", |r| host_writes(r) as f64, |p| p.total),
        (
            "host: of which rewrites of a page before its fsync",
            |r| r.host.rewrites_before_fsync as f64,
            |_| f64::NAN,
        ),
        (
            "host: rewrites of a dirty page the host page cache absorbed (not sent)",
            |r| r.host.cache_absorbed_writes as f64,
            |_| f64::NAN,
        ),
        ("host: fsync calls", |r| r.host.fsyncs as f64, |p| p.fsyncs),
        ("flash: pages written", |r| programs(r) as f64, |p| p.flash_writes),
        (
            "flash: of which map and superblock pages",
            |r| (r.device.map_writes + r.device.superblock_writes) as f64,
            |_| f64::NAN,
        ),
        ("flash: pages read", |r| r.device.flash_reads as f64, |p| p.flash_reads),
        ("flash: GC runs", |r| r.device.gc_runs as f64, |p| p.gc),
        ("flash: erases", |r| r.device.flash_erases as f64, |p| p.erases),
    ];
    let mut out = Vec::new();
    for (name, get, getp) in rows {
        let mut row = vec![name.to_string()];
        for (i, &m) in modes.iter().enumerate() {
            row.push(fig.run(m, k).map_or("-".into(), |r| c0(scale_tx(get(r), params))));
            let pv = getp(&paper::TABLE1[i]);
            row.push(if paper_here && !pv.is_nan() { c0(pv) } else { "-".into() });
        }
        out.push(row);
    }
    let mut row = vec!["flash pages written per host page write".to_string()];
    for (i, &m) in modes.iter().enumerate() {
        row.push(
            fig.run(m, k)
                .map_or("-".into(), |r| format!("{:.2}", programs(r) as f64 / host_writes(r).max(1) as f64)),
        );
        let p = &paper::TABLE1[i];
        row.push(if paper_here {
            format!("{:.2}", p.flash_writes / p.total)
        } else {
            "-".into()
        });
    }
    out.push(row);
    let mut row = vec!["valid pages per GC victim (measured)".to_string()];
    for &m in &modes {
        row.push(
            fig.run(m, k)
                .and_then(|r| r.gc_victim_validity_pct)
                .map_or("-".into(), |v| format!("{v:.1}%")),
        );
        row.push("-".into());
    }
    out.push(row);
    let mut row = vec!["elapsed (simulated)".to_string()];
    for &m in &modes {
        row.push(fig.run(m, k).map_or("-".into(), |r| format!("{:.2} s", r.elapsed_s)));
        row.push("-".into());
    }
    out.push(row);
    out
}

fn ablation_header(p: &Params) -> Vec<String> {
    let mut h = vec![format!(
        "Table 1 (K={}, 50%) {}",
        p.table1_k,
        if p.map_at_flush {
            "without the map written at every write barrier (txftl's roll-forward FTL; --map-at-flush off)"
        } else {
            "with the map written at every write barrier (the paper's firmware, sec. 6.3.4)"
        }
    )];
    h.extend(["RBJ", "WAL", "X-FTL"].map(String::from));
    h
}

fn ablation_rows(r: &Report) -> Vec<Vec<String>> {
    let p = &r.params;
    let modes = [rbj(), wal(), xftl()];
    let a = |m: Mode| r.figures.table1_ablation.iter().find(|x| x.mode == m);
    let row = |name: &str, g: &dyn Fn(&ModeRun) -> String| {
        let mut v = vec![name.to_string()];
        v.extend(modes.iter().map(|&m| a(m).map_or("-".into(), g)));
        v
    };
    vec![
        row("flash pages written (per 1,000 tx)", &|x| c0(scale_tx(programs(x) as f64, p))),
        row("  of which map and superblock pages", &|x| {
            c0(scale_tx((x.device.map_writes + x.device.superblock_writes) as f64, p))
        }),
        row("flash pages written per host page write", &|x| format!("{:.2}", factor(x))),
        row("GC runs / erases (per 1,000 tx)", &|x| {
            format!(
                "{} / {}",
                c0(scale_tx(x.device.gc_runs as f64, p)),
                c0(scale_tx(x.device.flash_erases as f64, p))
            )
        }),
        row("elapsed (simulated)", &|x| format!("{:.2} s", x.elapsed_s)),
    ]
}

fn mode_pair_header(first: &str) -> Vec<String> {
    let mut h = vec![first.to_string()];
    for m in ["RBJ", "WAL", "X-FTL"] {
        h.push(format!("{m} ours"));
        h.push(format!("{m} paper"));
    }
    h
}

pub fn print(r: &Report) {
    let p = &r.params;
    println!(
        "txftl reproduce xftl{}: {} (seed {})",
        if p.quick { " --quick" } else { "" },
        r.paper,
        p.seed
    );
    println!("device: {}; X-L2P table {} entries", p.device, p.xl2p_entries);
    println!("{}", crate::cmd_compare::map_at_flush_line(p.map_at_flush));
    println!("scaled down:");
    for s in &p.scaled_down {
        println!("  - {s}");
    }
    println!(
        "counts are per 1,000 transactions (ours scaled from {}); times are simulated (device clock)",
        p.transactions
    );
    for fig in &r.figures.figure5 {
        let t = table(
            mode_pair_header(&format!("Table 1 (K={}, GC validity {}%)", p.table1_k, fig.validity_pct)),
            table1_rows(p, fig),
        );
        println!("{t}");
    }
    println!("{}", table(ablation_header(p), ablation_rows(r)));
    for fig in &r.figures.figure5 {
        let mut header = vec![format!("Figure 5 ({}% validity): elapsed, simulated s", fig.validity_pct)];
        header.extend(p.ks.iter().map(|k| format!("K={k}")));
        let mut rows = Vec::new();
        for m in [rbj(), wal(), xftl()] {
            let mut row = vec![m.name().to_string()];
            row.extend(
                p.ks.iter()
                    .map(|&k| fig.run(m, k).map_or("-".into(), |x| format!("{:.2}", x.elapsed_s))),
            );
            rows.push(row);
        }
        let mut row = vec!["X-FTL faster than WAL / RBJ (x)".to_string()];
        row.extend(
            p.ks.iter()
                .map(|&k| match (fig.run(wal(), k), fig.run(rbj(), k), fig.run(xftl(), k)) {
                    (Some(w), Some(b), Some(x)) => format!("{:.1} / {:.1}", w.elapsed_s / x.elapsed_s, b.elapsed_s / x.elapsed_s),
                    _ => "-".into(),
                }),
        );
        rows.push(row);
        println!("{}", table(header, rows));
    }
    println!(
        "paper, Figure 5(b): X-FTL {:.1}x faster than WAL and {:.1}x faster than RBJ",
        paper::FIG5_XFTL_OVER_WAL,
        paper::FIG5_XFTL_OVER_RBJ
    );
    let s = &r.figures.table5.summary;
    let mut header = vec!["Table 5: restart (device clock, ms)".to_string()];
    header.extend(s.iter().map(|x| x.mode.name().to_string()));
    let row = |name: &str, g: &dyn Fn(&RestartSummary) -> String| {
        let mut v = vec![name.to_string()];
        v.extend(s.iter().map(g));
        v
    };
    let modes = [rbj(), wal(), xftl()];
    let rows = vec![
        row("paper (SQLite's restart; X-FTL: X-L2P table)", &|x| {
            modes
                .iter()
                .position(|m| *m == x.mode)
                .map_or("-".into(), |i| format!("{:.1}", paper::TABLE5_MS[i]))
        }),
        row("ours, the same quantity", &|x| format!("{:.2}", x.paper_comparable_ms)),
        row("SQLite's recovery, mean of every cut", &|x| format!("{:.2}", x.sqlite_mean_ms)),
        row("cuts that left SQLite something to recover", &|x| {
            format!("{} of {}", x.cuts_with_recovery, x.cuts)
        }),
        row("X-L2P table load (FTL recovery part)", &|x| format!("{:.2}", x.xl2p_load_mean_ms)),
        row("file-system mount", &|x| format!("{:.2}", x.fs_mount_mean_ms)),
        row("FTL recovery, whole", &|x| format!("{:.2}", x.ftl_recovery_mean_ms)),
        row("integrity and committed state ok", &|x| {
            if x.all_ok { "yes" } else { "NO" }.to_string()
        }),
    ];
    println!("{}", table(header, rows));
    let mut header = vec![
        "Table 4: TPC-C, transactions per simulated minute".to_string(),
        "mix (NO,P,OS,D,SL %)".into(),
    ];
    for m in ["RBJ", "WAL", "X-FTL"] {
        header.push(format!("{m} ours"));
    }
    header.extend(["WAL paper".into(), "X-FTL paper".into(), "X-FTL vs WAL ours".into(), "paper".into()]);
    let mut rows = Vec::new();
    for (i, mix) in r.figures.tpcc.iter().enumerate() {
        let mut row = vec![mix.name.clone(), format!("{:?}", mix.mix)];
        for m in modes {
            row.push(c0(mix.tpm(m)));
        }
        row.push(c0(paper::TABLE4_WAL[i]));
        row.push(c0(paper::TABLE4_XFTL[i]));
        let (w, x) = (mix.tpm(wal()), mix.tpm(xftl()));
        row.push(if w > 0.0 {
            format!("{:+.1}%", 100.0 * (x / w - 1.0))
        } else {
            "-".into()
        });
        row.push(format!("{:+.1}%", 100.0 * (paper::TABLE4_XFTL[i] / paper::TABLE4_WAL[i] - 1.0)));
        rows.push(row);
    }
    println!("{}", table(header, rows));
    let mut header = vec!["TPC-C per mode (ours)".to_string()];
    for mix in &r.figures.tpcc {
        header.push(mix.name.clone());
    }
    let mut rows = Vec::new();
    for m in modes {
        let mut row = vec![format!(
            "{}: New-Orders per sim. minute / host pages per tx / flash programs per tx / consistency",
            m.name()
        )];
        for mix in &r.figures.tpcc {
            row.push(mix.runs.iter().find(|x| x.mode == m).map_or("-".into(), |x| {
                let n = x.units.max(1) as f64;
                format!(
                    "{} / {:.1} / {:.1} / {}",
                    c0(x.new_orders_per_sim_minute().unwrap_or(0.0)),
                    x.host.host_page_writes() as f64 / n,
                    (x.device.flash_programs + x.device.flash_partial_programs) as f64 / n,
                    x.consistency.as_deref().unwrap_or("-")
                )
            }));
        }
        rows.push(row);
    }
    println!("{}", table(header, rows));
    let _ = sim_time;
    super::checks::print_with_deviations(&r.checks, &r.deviations);
}

/// The HTML report's figures.
pub fn html_figures(r: &Report) -> Vec<html::Figure> {
    let p = &r.params;
    let modes = [rbj(), wal(), xftl()];
    let names: Vec<String> = modes.iter().map(|m| m.name().to_string()).collect();
    let mut figs = Vec::new();
    if let Some(t1) = r.figures.fig5(50) {
        let seg_names = vec![
            "database".to_string(),
            "journal / WAL".to_string(),
            "file-system metadata".to_string(),
        ];
        let ours: Vec<Vec<f64>> = modes
            .iter()
            .map(|&m| {
                t1.run(m, p.table1_k).map_or(vec![0.0; 3], |r| {
                    vec![
                        scale_tx(r.host.database_page_writes as f64, p),
                        scale_tx((r.host.journal_page_writes + r.host.wal_page_writes) as f64, p),
                        scale_tx((r.host.metadata_page_writes + r.host.metadata_journal_writes) as f64, p),
                    ]
                })
            })
            .collect();
        figs.push(html::Figure::Bars(html::Bars {
            title: "Table 1: host page writes by kind (K=5, 50% validity, per 1,000 tx)".into(),
            y_desc: "page writes".into(),
            groups: names.clone(),
            segments: seg_names,
            ours,
            paper: paper::TABLE1.iter().map(|x| Some(x.total)).collect(),
            decimals: 0,
        }));
        let one = |title: &str, y: &str, get: &dyn Fn(&ModeRun) -> f64, getp: &dyn Fn(&paper::Table1Row) -> f64, decimals: usize| {
            html::Figure::Bars(html::Bars {
                title: title.into(),
                y_desc: y.into(),
                groups: names.clone(),
                segments: vec!["ours".into()],
                ours: modes.iter().map(|&m| vec![t1.run(m, p.table1_k).map_or(0.0, get)]).collect(),
                paper: paper::TABLE1.iter().map(|x| Some(getp(x))).collect(),
                decimals,
            })
        };
        figs.push(one(
            "Table 1 / Figure 6(a): flash pages written (per 1,000 tx)",
            "pages",
            &|r| scale_tx(programs(r) as f64, p),
            &|x| x.flash_writes,
            0,
        ));
        figs.push(one(
            "Table 1 / Figure 6(b): garbage collections (per 1,000 tx)",
            "GC runs",
            &|r| scale_tx(r.device.gc_runs as f64, p),
            &|x| x.gc,
            0,
        ));
        figs.push(one(
            "Table 1: flash pages written per host page write",
            "factor (x)",
            &|r| programs(r) as f64 / host_writes(r).max(1) as f64,
            &|x| x.flash_writes / x.total,
            2,
        ));
        figs.push(one(
            "Table 1: fsync calls (per 1,000 tx)",
            "fsync calls",
            &|r| scale_tx(r.host.fsyncs as f64, p),
            &|x| x.fsyncs,
            0,
        ));
    }
    for fig in &r.figures.figure5 {
        figs.push(html::Figure::Lines(html::Lines {
            title: format!(
                "Figure 5: elapsed time over K ({}% validity, {} tx)",
                fig.validity_pct, p.transactions
            ),
            x_desc: "K (tuples updated per transaction)".into(),
            y_desc: "elapsed, simulated s".into(),
            series: modes
                .iter()
                .map(|&m| {
                    (
                        m.name().to_string(),
                        p.ks.iter().filter_map(|&k| Some((k as f64, fig.run(m, k)?.elapsed_s))).collect(),
                    )
                })
                .collect(),
        }));
    }
    if let Some(t1) = r.figures.fig5(50) {
        figs.push(html::Figure::Bars(html::Bars {
            title: "Figure 5(b): X-FTL's speed-up (elapsed-time ratio, mean over K)".into(),
            y_desc: "factor (x)".into(),
            groups: vec!["over WAL".into(), "over RBJ".into()],
            segments: vec!["ours".into()],
            ours: vec![vec![speedup(t1, &p.ks, wal(), xftl())], vec![speedup(t1, &p.ks, rbj(), xftl())]],
            paper: vec![Some(paper::FIG5_XFTL_OVER_WAL), Some(paper::FIG5_XFTL_OVER_RBJ)],
            decimals: 1,
        }));
    }
    let s = &r.figures.table5.summary;
    figs.push(html::Figure::Bars(html::Bars {
        title: "Table 5: restart time (SQLite's recovery; X-FTL: X-L2P table)".into(),
        y_desc: "ms (device clock)".into(),
        groups: s.iter().map(|x| x.mode.name().to_string()).collect(),
        segments: vec!["ours".into()],
        ours: s.iter().map(|x| vec![x.paper_comparable_ms]).collect(),
        paper: s
            .iter()
            .map(|x| modes.iter().position(|m| *m == x.mode).map(|i| paper::TABLE5_MS[i]))
            .collect(),
        decimals: 1,
    }));
    for (i, mix) in r.figures.tpcc.iter().enumerate() {
        figs.push(html::Figure::Bars(html::Bars {
            title: format!("Table 4: TPC-C {} ({:?})", mix.name, mix.mix),
            y_desc: "transactions per simulated minute".into(),
            groups: names.clone(),
            segments: vec!["ours".into()],
            ours: modes.iter().map(|&m| vec![mix.tpm(m)]).collect(),
            paper: vec![None, Some(paper::TABLE4_WAL[i]), Some(paper::TABLE4_XFTL[i])],
            decimals: 0,
        }));
    }
    figs
}

/// Where the flash programs of a run went, per host page write: the host's
/// pages themselves, GC copies, mapping checkpoints and superblocks, the
/// protocol's own pages (X-L2P tables). Measured, from the device counters.
pub fn programs_breakdown(r: &ModeRun) -> String {
    let h = host_writes(r).max(1) as f64;
    let d = &r.device;
    // The device's host writes include the aging filler's (none during the
    // measured phase) and the file system's: the same pages as `host_writes`.
    format!(
        "per host page write: {:.2} host programs + {:.2} GC copies + {:.2} map/superblock + {:.2} X-L2P (victims {:.0}% valid)",
        d.host_writes as f64 / h,
        d.gc_copies as f64 / h,
        (d.map_writes + d.superblock_writes) as f64 / h,
        d.protocol_meta_writes as f64 / h,
        r.gc_victim_validity_pct.unwrap_or(0.0)
    )
}

/// Flash programs per host page write of a run.
fn factor(r: &ModeRun) -> f64 {
    programs(r) as f64 / host_writes(r).max(1) as f64
}

/// Map and superblock pages a run wrote.
fn map_pages(r: &ModeRun) -> u64 {
    r.device.map_writes + r.device.superblock_writes
}

/// What the paper's Table 1 implies about its firmware's metadata writes, per
/// fsync, from its own counts: the flash writes left after its host writes
/// and its GC copies (GC runs x 64: half a 128-page block at its 50% victim
/// validity), and the pages of the blocks it erased beyond its GC victims
/// (the paper: "the block erase count includes ... the metadata blocks erased
/// by FTL"), 128 a block. Two derivations of the same quantity; they agree
/// within 20% in every mode.
pub fn paper_metadata_per_fsync(p: &paper::Table1Row) -> (f64, f64) {
    let excess = (p.flash_writes - p.total - p.gc * 64.0) / p.fsyncs;
    let erased = (p.erases - p.gc) * 128.0 / p.fsyncs;
    (excess, erased)
}

/// The measured reason our flash programs per host page write stay below the
/// paper's (the note of `table1.*.flash_writes` and `.programs_per_host_write`).
fn flash_note(params: &Params, m: Mode, r: &ModeRun, other: Option<&ModeRun>) -> String {
    let i = [rbj(), wal(), xftl()].iter().position(|x| *x == m).unwrap_or(0);
    let p = &paper::TABLE1[i];
    let (excess, erased) = paper_metadata_per_fsync(p);
    let (with_map, without) = if params.map_at_flush { (Some(r), other) } else { (other, Some(r)) };
    let barrier = match (m == xftl(), with_map) {
        (true, _) => format!(
            "X-FTL sends no flush: its commit writes the X-L2P table ({:.1} pages per tx) and takes the barrier's place, as the paper's sec. 6.3.4 says, so writing the map at every barrier changes nothing here",
            r.device.protocol_meta_writes as f64 / r.transactions.max(1) as f64
        ),
        (_, Some(w)) => format!(
            "With the mapping table written at every barrier (the paper's firmware, its sec. 6.3.4) the FTL wrote {:.1} table (L2P and block-table) and superblock pages per device flush, for {:.1} host pages sent per flush ({:.1} flushes per fsync): {:.2} per host page write, since a barrier rewrites only the table pages that changed, plus the superblock",
            map_pages(w) as f64 / w.device.host_flushes.max(1) as f64,
            host_writes(w) as f64 / w.device.host_flushes.max(1) as f64,
            w.device.host_flushes as f64 / w.host.fsyncs.max(1) as f64,
            map_pages(w) as f64 / host_writes(w).max(1) as f64
        ),
        (_, None) => String::new(),
    };
    let ours_meta = (map_pages(r) + r.device.protocol_meta_writes) as f64 / r.host.fsyncs.max(1) as f64;
    format!(
        "{}. {}{}. The paper's Table 1 leaves {:.0} flash writes per fsync beyond its host writes and GC copies (flash writes - host writes - GC runs x 64), and the blocks it erased beyond its GC victims (metadata blocks, it says) hold {:.0} pages per fsync: its firmware wrote about that much metadata per fsync, ours {:.1} (map, superblock and X-L2P pages). The paper does not say what those pages were, so that is not modelled; GC copies differ too: our victims were {:.0}% valid against its 50%",
        programs_breakdown(r),
        barrier,
        match without {
            Some(a) if !params.map_at_flush || m != xftl() => format!(
                "; {}: {:.2}x ({} pages per 1,000 tx)",
                if params.map_at_flush {
                    "with roll-forward at a flush instead (--map-at-flush off)"
                } else {
                    "this run used roll-forward at a flush (--map-at-flush off)"
                },
                factor(a),
                c0(scale_tx(programs(a) as f64, params))
            ),
            _ => String::new(),
        },
        excess,
        erased,
        ours_meta,
        r.gc_victim_validity_pct.unwrap_or(0.0)
    )
}

/// Notes on the checks that miss, and the report's deviations, all from
/// this run's measurements: the counters of the runs themselves (host page
/// rewrites before an fsync, where the flash programs went, reads per
/// transaction, which restart cuts left a hot journal) and the ablation run
/// with the other behaviour at a barrier (map written or roll-forward).
pub fn explain(params: &Params, f: &Figures, mut checks: Vec<Check>) -> (Vec<Check>, Vec<String>) {
    let mut dev = Vec::new();
    let k = params.table1_k;
    let modes = [rbj(), wal(), xftl()];
    let t1 = f.fig5(50);
    let run = |m: Mode| t1.and_then(|t| t.run(m, k));
    let ablation = |m: Mode| f.table1_ablation.iter().find(|r| r.mode == m);
    let other = if params.map_at_flush {
        "with roll-forward at barriers instead"
    } else {
        "with the map at every barrier"
    };
    let other_cap = if params.map_at_flush {
        "With roll-forward at barriers instead"
    } else {
        "With the map at every barrier"
    };
    let per_tx = |v: u64, r: &ModeRun| v as f64 / r.transactions.max(1) as f64;
    let mode_of = |id: &str| modes.into_iter().find(|&m| id.contains(&format!(".{}.", label(m))));
    let tpcc = |id: &str| f.tpcc.iter().find(|m| id.starts_with(&format!("table4.{}.", m.id)));
    for c in checks.iter_mut() {
        if c.within_25pct {
            continue;
        }
        let id = c.id.clone();
        let note = if let (Some(m), true) = (mode_of(&id), id.starts_with("table1.")) {
            let Some(r) = run(m) else { continue };
            if id.ends_with(".host_writes") {
                format!(
                    "per tx: {:.1} database + {:.1} journal + {:.1} WAL + {:.1} file-system metadata pages, {:.1} of them a page already sent since the last fsync; the host page cache absorbed {:.1} more writes of a dirty page (journal records of 8,200 bytes and WAL frames of 8,216 straddle 8 KiB pages)",
                    per_tx(r.host.database_page_writes, r),
                    per_tx(r.host.journal_page_writes, r),
                    per_tx(r.host.wal_page_writes, r),
                    per_tx(r.host.metadata_page_writes + r.host.metadata_journal_writes, r),
                    per_tx(r.host.rewrites_before_fsync, r),
                    per_tx(r.host.cache_absorbed_writes, r),
                )
            } else if id.ends_with(".flash_writes") || id.ends_with(".programs_per_host_write") {
                flash_note(params, m, r, ablation(m))
            } else if id.ends_with(".gc_runs") || id.ends_with(".erases") {
                format!(
                    "follows flash pages written ({} per 1,000 tx, paper {}), victims {:.0}% valid; erases per GC run: ours {:.2}, the paper's {:.2} (its erases include metadata blocks); {other}: {} GC runs, {} erases",
                    c0(scale_tx(programs(r) as f64, params)),
                    c0(paper::TABLE1[modes.iter().position(|x| *x == m).unwrap_or(0)].flash_writes),
                    r.gc_victim_validity_pct.unwrap_or(0.0),
                    r.device.flash_erases as f64 / r.device.gc_runs.max(1) as f64,
                    {
                        let p = &paper::TABLE1[modes.iter().position(|x| *x == m).unwrap_or(0)];
                        p.erases / p.gc
                    },
                    ablation(m).map_or("-".into(), |a| c0(scale_tx(a.device.gc_runs as f64, params))),
                    ablation(m).map_or("-".into(), |a| c0(scale_tx(a.device.flash_erases as f64, params)))
                )
            } else {
                String::new()
            }
        } else if id == "table1.wal_over_xftl.host_writes" {
            match (run(wal()), run(xftl())) {
                (Some(w), Some(x)) => format!(
                    "per tx: WAL {:.1} pages ({:.1} WAL, {:.1} database, {:.1} metadata), X-FTL {:.1} ({:.1} database, {:.1} metadata)",
                    per_tx(host_writes(w), w),
                    per_tx(w.host.wal_page_writes, w),
                    per_tx(w.host.database_page_writes, w),
                    per_tx(w.host.metadata_page_writes + w.host.metadata_journal_writes, w),
                    per_tx(host_writes(x), x),
                    per_tx(x.host.database_page_writes, x),
                    per_tx(x.host.metadata_page_writes + x.host.metadata_journal_writes, x),
                ),
                _ => String::new(),
            }
        } else if id.starts_with("fig5.xftl_over_") {
            let slow = if id.ends_with("wal") { wal() } else { rbj() };
            let i = if slow == wal() { 1 } else { 0 };
            match (run(slow), run(xftl())) {
                (Some(a), Some(x)) => format!(
                    "elapsed time follows flash programs in both: ours {} / X-FTL programs = {:.2}x at K=5, the paper's {:.2}x (its Table 1); the programs differ for the reasons in the table1 notes (the paper's metadata writes per fsync). {other_cap}: elapsed ratio {:.2}x at K=5",
                    slow.name(),
                    programs(a) as f64 / programs(x).max(1) as f64,
                    paper::TABLE1[i].flash_writes / paper::TABLE1[2].flash_writes,
                    match (ablation(slow), ablation(xftl())) {
                        (Some(a), Some(x)) => a.elapsed_s / x.elapsed_s,
                        _ => 0.0,
                    }
                ),
                _ => String::new(),
            }
        } else if id == "table5.order" {
            let rbj: Vec<&Restart> = f.table5.runs.iter().filter(|r| r.mode == rbj() && sqlite_recovered(r)).collect();
            let wal: Vec<&Restart> = f.table5.runs.iter().filter(|r| r.mode == wal()).collect();
            let ms_of = |r: &&Restart| ms(r.sqlite_recovery_ns);
            format!(
                "RBJ's rollbacks took {:.0} to {:.0} ms, {} of {} of them running GC in the foreground ({:.1} GC runs, {:.0} flash programs each on average, for {:.1} pages written back); WAL's restarts took {:.0} to {:.0} ms with the frames the WAL held at the cut (mean {:.0} ms). The cuts are spread over the second half of the run, so WAL's mean is over its checkpoint cycle{}",
                rbj.iter().map(ms_of).fold(f64::INFINITY, f64::min),
                rbj.iter().map(ms_of).fold(0.0, f64::max),
                rbj.iter().filter(|r| r.sqlite_recovery_gc_runs > 0).count(),
                rbj.len(),
                mean(rbj.iter().map(|r| r.sqlite_recovery_gc_runs as f64)),
                mean(rbj.iter().map(|r| r.sqlite_recovery_flash_programs as f64)),
                mean(rbj.iter().map(|r| r.sqlite_recovery_page_writes as f64)),
                wal.iter().map(ms_of).fold(f64::INFINITY, f64::min),
                wal.iter().map(ms_of).fold(0.0, f64::max),
                mean(wal.iter().map(ms_of)),
                match (mean(rbj.iter().map(ms_of)) > mean(wal.iter().map(ms_of)), params.quick) {
                    (true, true) => "; RBJ's mean is above it because of the GC its writes set off after the restart (see table5.rbj.restart_ms): --quick's device is a quarter of the full run's, and there a rollback's writes find GC's low watermark more often (README, \"Reproducing the papers\")",
                    (true, false) => "; RBJ's mean is above it because of the GC its writes set off after the restart (see table5.rbj.restart_ms)",
                    _ => "",
                },
            )
        } else if id.starts_with("table5.") {
            let m = mode_of(&id);
            let s = f.table5.summary.iter().find(|s| Some(s.mode) == m);
            let runs: Vec<&Restart> = f.table5.runs.iter().filter(|r| Some(r.mode) == m).collect();
            match (m.map(Mode::cli), s) {
                (Some("xftl"), Some(s)) => format!(
                    "ours reads X-FTL's log ring ({:.1} table pages per restart) in {:.2} ms of flash reads and applies the entries at no cost: the controller's CPU (the paper's 87.5 MHz ARM) is not modelled. Our model, not the paper",
                    mean(runs.iter().map(|r| r.ftl_recovery.protocol_pages_read as f64)),
                    s.xl2p_load_mean_ms
                ),
                (Some("wal"), Some(s)) => format!(
                    "SQLite's first open after the cut rebuilds its WAL index from the WAL: {:.0} page reads per restart ({} to {} over the {} cuts, as many frames as the WAL held since its last checkpoint), {:.2} ms; the paper's WAL held about 1,000 pages and its restart copied them to the database",
                    mean(runs.iter().map(|r| r.sqlite_recovery_page_reads as f64)),
                    runs.iter().map(|r| r.sqlite_recovery_page_reads).min().unwrap_or(0),
                    runs.iter().map(|r| r.sqlite_recovery_page_reads).max().unwrap_or(0),
                    s.cuts,
                    s.sqlite_mean_ms,
                ),
                (Some(_), Some(s)) => format!(
                    "{} of {} cuts left a hot journal (the others fell before the journal was durable, or after it was deleted: nothing to roll back); the mean over every cut is {:.2} ms, over those {:.2} ms; {} of them ran GC in the foreground (GC starts when a write finds the free blocks down to the low watermark and runs until the high one); per hot journal {:.1} pages written back (the paper: about ten), causing {:.1} flash programs, {:.1} GC runs and {:.1} mapping checkpoints on the device",
                    s.cuts_with_recovery,
                    s.cuts,
                    s.sqlite_mean_ms,
                    s.sqlite_mean_with_recovery_ms,
                    runs.iter().filter(|r| sqlite_recovered(r) && r.sqlite_recovery_gc_runs > 0).count(),
                    mean(runs.iter().filter(|r| sqlite_recovered(r)).map(|r| r.sqlite_recovery_page_writes as f64)),
                    mean(runs.iter().filter(|r| sqlite_recovered(r)).map(|r| r.sqlite_recovery_flash_programs as f64)),
                    mean(runs.iter().filter(|r| sqlite_recovered(r)).map(|r| r.sqlite_recovery_gc_runs as f64)),
                    mean(runs.iter().filter(|r| sqlite_recovered(r)).map(|r| r.sqlite_recovery_checkpoints as f64))
                ),
                _ => String::new(),
            }
        } else if let Some(mix) = tpcc(&id) {
            let line = |m: Mode| {
                mix.runs.iter().find(|r| r.mode == m).map_or(String::new(), |r| {
                    let n = r.units.max(1) as f64;
                    format!(
                        "{}: {:.1} flash reads, {:.1} host page writes ({:.1} more absorbed by the host page cache) per tx",
                        m.name(),
                        r.device.flash_reads as f64 / n,
                        r.host.host_page_writes() as f64 / n,
                        r.host.cache_absorbed_writes as f64 / n
                    )
                })
            };
            if id.ends_with("_tpm") {
                format!(
                    "our clock is the device's: SQLite's CPU time is not modelled, and SQLite's cache misses go to flash (the host page cache keeps only dirty pages); {}; {}; paper: 10 warehouses on a 2.8 GHz host. Our model, not the paper",
                    line(wal()),
                    line(xftl())
                )
            } else if id == "table4.read.xftl_over_wal" {
                format!(
                    "the paper attributes WAL's loss to looking up the WAL for every page read (host CPU, not modelled here); ours is device I/O only: {}; {}",
                    line(wal()),
                    line(xftl())
                )
            } else {
                format!("{}; {}", line(wal()), line(xftl()))
            }
        } else {
            String::new()
        };
        if !note.is_empty() {
            c.note = note;
        }
    }
    if let (Some(r), Some(w)) = (run(rbj()), run(wal())) {
        dev.push(format!(
            "Host page writes (Table 1): the file system keeps written pages in a write-back host page cache until fsync, as ext4's page cache does; it absorbed {:.1} writes of an already dirty page per transaction in RBJ and {:.1} in WAL (SQLite's journal records and WAL frames straddle 8 KiB pages), which a write-through file system would send to the device. The cache keeps only dirty pages: reads it does not hold go to the device.",
            per_tx(r.host.cache_absorbed_writes, r),
            per_tx(w.host.cache_absorbed_writes, w),
        ));
    }
    let fs: Vec<String> = modes
        .iter()
        .filter_map(|&m| {
            Some(format!(
                "{} {:.2}x ({} {:.2}x)",
                m.name(),
                factor(run(m)?),
                other,
                factor(ablation(m)?)
            ))
        })
        .collect();
    let paper_meta: Vec<String> = paper::TABLE1
        .iter()
        .map(|p| format!("{:.0}", paper_metadata_per_fsync(p).0))
        .collect();
    dev.push(format!(
        "Flash pages written per host page write (Table 1): ours {}; the paper's 8.28x, 7.19x, 5.36x. Ours are the host's pages, GC copies at the measured victim validity, checkpoints and X-L2P pages. {} The paper's own counts leave {} flash writes per fsync (RBJ, WAL, X-FTL) beyond its host writes and GC copies, matching the metadata blocks it erased; ours writes {} table and superblock pages per fsync (RBJ, WAL) with the map at every barrier, and X-FTL, which sends no barrier, still has an excess in the paper: what else the OpenSSD firmware wrote per fsync is not in the paper, so the gap stays.",
        fs.join(", "),
        if params.map_at_flush {
            "The FTL writes its mapping table at every flush, as the paper says its firmware does at a write barrier (its sec. 6.3.4); --map-at-flush off gives txftl's roll-forward FTL."
        } else {
            "This run made flushes durable by roll-forward (--map-at-flush off); the paper's firmware writes its mapping table at every write barrier (its sec. 6.3.4)."
        },
        paper_meta.join(", "),
        [rbj(), wal()]
            .iter()
            .map(|&m| {
                let with_map = if params.map_at_flush { run(m) } else { ablation(m) };
                with_map.map_or("-".into(), |r| format!("{:.1}", map_pages(r) as f64 / r.host.fsyncs.max(1) as f64))
            })
            .collect::<Vec<_>>()
            .join(", ")
    ));
    for s in &f.table5.summary {
        if s.mode != xftl() && s.cuts_with_recovery < s.cuts {
            dev.push(format!(
                "Table 5, {}: {} of {} cuts left a hot journal; the mean over every cut is {:.2} ms, over those {:.2} ms: the paper's runs each had one (\"approximately ten\" pages copied), so the check compares the latter.",
                s.mode.name(),
                s.cuts_with_recovery,
                s.cuts,
                s.sqlite_mean_ms,
                s.sqlite_mean_with_recovery_ms
            ));
        }
    }
    dev.push("Times are the device's simulated clock: the host's CPU (SQLite, the file system, WAL-index lookups) and the controller's CPU are not modelled. Absolute transaction rates (Table 4) and X-FTL's table-apply time (Table 5) differ for that reason; ratios between modes are what the model speaks to. No CPU model is added on purpose: the paper gives no per-command or per-entry cost for its 87.5 MHz controller, and the host's would be SQLite's on a machine we do not have, so a constant would be fitted to the paper's results.".into());
    dev.push("Table 3's columns are Delivery, Order-Status, Payment, Stock-Level, New-Order; txftl's mix order is New-Order, Payment, Order-Status, Delivery, Stock-Level. The paper's \"tpmC\" counts every transaction type (its selection- and join-only mixes have no New-Order); ours likewise, with the specification's tpmC (New-Orders per minute) shown beside it.".into());
    (checks, dev)
}

/// The HTML report.
pub fn html_page(r: &Report) -> Result<String, CliError> {
    let p = &r.params;
    let mut tables = String::from("<h2>Tables</h2>");
    for fig in &r.figures.figure5 {
        let h = mode_pair_header(&format!("Table 1 (K={}, {}% validity, per 1,000 tx)", p.table1_k, fig.validity_pct));
        tables += &html::table(&h, &table1_rows(p, fig));
    }
    tables += &html::table(&ablation_header(p), &ablation_rows(r));
    let params_json = serde_json::to_string_pretty(&r.params).map_err(CliError::failed)?;
    let mut intro = format!(
        "{}. Device: {}. All times simulated (device clock). ",
        html::escape(&r.paper),
        html::escape(&p.device)
    );
    intro += &html::escape(crate::cmd_compare::map_at_flush_line(p.map_at_flush));
    intro += ". Scaled down: ";
    intro += &html::escape(&p.scaled_down.join("; "));
    Ok(html::page(
        &format!("txftl reproduce xftl{}", if p.quick { " --quick" } else { "" }),
        &intro,
        &html_figures(r),
        &tables,
        &r.checks,
        &params_json,
        &r.deviations,
    ))
}
