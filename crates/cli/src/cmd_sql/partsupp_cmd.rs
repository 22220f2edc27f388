//! `txftl sql partsupp`: the X-FTL paper's partsupp workload.

use super::*;

#[derive(Args, Debug)]
pub struct PartsuppArgs {
    #[command(flatten)]
    pub common: SqlCommon,
    /// Tuples read and updated per transaction.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub k: u32,
    /// Transactions to run after the load.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u32).range(1..))]
    pub transactions: u32,
    /// Tuples in partsupp.
    #[arg(long, default_value_t = 60_000, value_parser = clap::value_parser!(u32).range(10..))]
    pub rows: u32,
}

#[derive(Serialize)]
struct PartsuppOut {
    mode: Mode,
    device: String,
    workload: TxWorkload,
    /// Host page writes and flash programs per transaction; latency on the device clock.
    kinds: Vec<KindCost>,
    /// Transactions per simulated second.
    throughput_per_sim_s: f64,
    latency: LatencyReport,
    host: FsStats,
    measured: DeviceStats,
    write_amplification: f64,
    integrity: String,
    load_wall_seconds: f64,
    run_wall_seconds: f64,
}

pub(super) fn partsupp_cmd(args: PartsuppArgs) -> Result<ExitCode, CliError> {
    let w = TxWorkload {
        rows: args.rows,
        k: args.k,
        transactions: args.transactions,
        seed: args.common.seed,
    };
    let (stack, mode, what, on) = stack(&args.common)?;
    let page_size = stack.with_fs_mut(|fs| fs.page_size()).map_err(CliError::failed)?;
    let conn = stack.open("partsupp.db", page_size).map_err(CliError::failed)?;
    let bar = progress(
        args.common.json,
        w.transactions as u64,
        &format!("{} partsupp K={}", mode.name(), w.k),
    )?;
    let t0 = std::time::Instant::now();
    partsupp::load(&conn, w.rows, w.seed).map_err(|e| CliError::Failed(format!("loading partsupp: {e}{}", why(&stack))))?;
    let load_wall = t0.elapsed().as_secs_f64();
    start_measuring(&stack, &on)?;
    let mut att = Attribution::new(&["transaction"]);
    let t1 = std::time::Instant::now();
    for i in 0..w.transactions {
        att.begin(snap(&stack));
        partsupp::run_tx(&conn, &w.updates(i))
            .map_err(|e| CliError::Failed(format!("running partsupp, transaction {i}: {e}{}", why(&stack))))?;
        att.end(0, snap(&stack), 1);
        if i.is_multiple_of(64) {
            bar.set_position(i as u64 + 1);
        }
    }
    let run_wall = t1.elapsed().as_secs_f64();
    on.store(false, Ordering::Relaxed);
    bar.finish_and_clear();
    let end = snap(&stack);
    let integrity = partsupp::integrity_check(&conn).map_err(CliError::failed)?;
    drop(conn);
    close(stack, args.common.record.is_some())?;
    let (kinds, mut latency) = att.finish();
    latency.transaction = latency.request;
    let sim_s = end.dev.sim_time_ns as f64 / 1e9;
    let host_writes = end.fs.host_page_writes();
    let out = PartsuppOut {
        mode,
        device: what,
        workload: w,
        kinds,
        throughput_per_sim_s: per_second(w.transactions as u64, sim_s),
        latency,
        host: end.fs,
        measured: end.dev,
        write_amplification: if host_writes > 0 {
            (end.dev.flash_programs + end.dev.flash_partial_programs) as f64 / host_writes as f64
        } else {
            0.0
        },
        integrity: integrity.clone(),
        load_wall_seconds: load_wall,
        run_wall_seconds: run_wall,
    };
    if args.common.json {
        println!("{}", serde_json::to_string_pretty(&out).map_err(CliError::failed)?);
    } else {
        wrapln!("device: {}", out.device);
        let mut t = Figures::new(&format!(
            "txftl sql partsupp: {} | {} transactions of K={} on partsupp ({} tuples), seed {}",
            mode.name(),
            thousands(w.transactions as u64),
            w.k,
            thousands(w.rows as u64),
            w.seed
        ));
        add_kinds(&mut t, &out.kinds, "transaction");
        add_fs(&mut t, &out.host);
        add_counters(&mut t, &out.measured);
        t.section("derived (simulated)");
        t.row("simulated time", sim_time(out.measured.sim_time_ns));
        t.row("transactions per simulated second", format!("{:.1}", out.throughput_per_sim_s));
        t.row(
            "write amplification (flash programs per host page write)",
            format!("{:.3}", out.write_amplification),
        );
        add_latency(&mut t, &out.latency);
        t.section("checks");
        t.row("integrity_check", &out.integrity);
        if let Some(p) = &args.common.record {
            t.row("trace recorded (the run, not the load)", p.display());
        }
        add_wall(&mut t, load_wall, run_wall, w.transactions as u64);
        t.print();
    }
    if integrity != "ok" {
        return Err(CliError::Failed(format!("integrity_check: {integrity}")));
    }
    Ok(ExitCode::SUCCESS)
}
