//! `txftl sql ycsb`: YCSB's core workloads on SQLite.

use super::*;

#[derive(Args, Debug)]
pub struct YcsbArgs {
    #[command(flatten)]
    pub common: SqlCommon,
    /// Workload: a (50% read, 50% update), b (95/5), c (read only), d (read
    /// latest, 5% insert), e (short scans, 5% insert), f (read-modify-write).
    #[arg(long, default_value = "a", value_parser = ["a", "b", "c", "d", "e", "f"])]
    pub workload: String,
    /// Records loaded (recordcount).
    #[arg(long, default_value_t = 100_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub records: u64,
    /// Operations run (operationcount).
    #[arg(long, default_value_t = 100_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub operations: u64,
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub fieldcount: u32,
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..))]
    pub fieldlength: u32,
    /// Request distribution [default: the workload's].
    #[arg(long, value_parser = ["zipfian", "uniform", "latest"])]
    pub distribution: Option<String>,
    /// Longest scan (workload e).
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..))]
    pub maxscanlength: u32,
    /// Operations per SQLite transaction (1: autocommit, as YCSB's JDBC binding).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub batch: u32,
}

#[derive(Serialize)]
struct YcsbOut {
    mode: Mode,
    device: String,
    spec: YcsbSpec,
    report: ycsb::YcsbReport,
    kinds: Vec<KindCost>,
    /// Operations per simulated second.
    throughput_per_sim_s: f64,
    latency: LatencyReport,
    host: FsStats,
    measured: DeviceStats,
    integrity: String,
    load_wall_seconds: f64,
    run_wall_seconds: f64,
}

pub(super) fn ycsb_cmd(args: YcsbArgs) -> Result<ExitCode, CliError> {
    let workload = Workload::parse(&args.workload).ok_or_else(|| CliError::Usage(format!("unknown workload `{}`", args.workload)))?;
    let mut spec = YcsbSpec::preset(workload);
    spec.recordcount = args.records;
    spec.operationcount = args.operations;
    spec.fieldcount = args.fieldcount;
    spec.fieldlength = args.fieldlength;
    spec.maxscanlength = args.maxscanlength;
    spec.batch = args.batch;
    spec.seed = args.common.seed;
    if let Some(d) = &args.distribution {
        spec.distribution = Some(Distribution::parse(d).ok_or_else(|| CliError::Usage(format!("unknown distribution `{d}`")))?);
    }
    spec.validate().map_err(|e| CliError::Usage(e.to_string()))?;
    let (stack, mode, what, on) = stack(&args.common)?;
    let page_size = stack.with_fs_mut(|fs| fs.page_size()).map_err(CliError::failed)?;
    let conn = stack.open("ycsb.db", page_size).map_err(CliError::failed)?;
    let bar = progress(
        args.common.json,
        spec.operationcount,
        &format!("{} YCSB {}", mode.name(), workload.name()),
    )?;
    let t0 = std::time::Instant::now();
    ycsb::load(&conn, &spec).map_err(|e| CliError::Failed(format!("loading YCSB: {e}{}", why(&stack))))?;
    let load_wall = t0.elapsed().as_secs_f64();
    start_measuring(&stack, &on)?;
    let mut names: Vec<&str> = OpKind::ALL.iter().map(|k| k.name()).collect();
    names.push("COMMIT");
    let mut att = Attribution::new(&names);
    let t1 = std::time::Instant::now();
    let report = ycsb::run_with(&conn, &spec, |ev| match *ev {
        OpEvent::Begin { .. } | OpEvent::CommitBegin { .. } => att.begin(snap(&stack)),
        OpEvent::End { index, kind, .. } => {
            att.end(kind.index(), snap(&stack), 1);
            if index.is_multiple_of(256) {
                bar.set_position(index + 1);
            }
        }
        OpEvent::CommitEnd { .. } => att.end(OpKind::ALL.len(), snap(&stack), 1),
    })
    .map_err(|e| CliError::Failed(format!("running YCSB: {e}{}", why(&stack))))?;
    let run_wall = t1.elapsed().as_secs_f64();
    on.store(false, Ordering::Relaxed);
    bar.finish_and_clear();
    let end = snap(&stack);
    let integrity = txftl_sqlite::workload::integrity_check(&conn).map_err(CliError::failed)?;
    drop(conn);
    close(stack, args.common.record.is_some())?;
    let (kinds, latency) = att.finish();
    // Only the kinds the workload has (and COMMIT when batched).
    let kinds: Vec<KindCost> = kinds.into_iter().filter(|c| c.count > 0).collect();
    let sim_s = end.dev.sim_time_ns as f64 / 1e9;
    let ops = report.operations();
    let out = YcsbOut {
        mode,
        device: what,
        spec,
        report,
        kinds,
        throughput_per_sim_s: per_second(ops, sim_s),
        latency,
        host: end.fs,
        measured: end.dev,
        integrity: integrity.clone(),
        load_wall_seconds: load_wall,
        run_wall_seconds: run_wall,
    };
    if args.common.json {
        println!("{}", serde_json::to_string_pretty(&out).map_err(CliError::failed)?);
    } else {
        wrapln!("device: {}", out.device);
        let mut t = Figures::new(&format!(
            "txftl sql ycsb: {} | workload {}, {} records, {} operations, seed {}",
            mode.name(),
            workload.name(),
            thousands(out.spec.recordcount),
            thousands(ops),
            out.spec.seed
        ));
        add_kinds(&mut t, &out.kinds, "operation");
        add_fs(&mut t, &out.host);
        add_counters(&mut t, &out.measured);
        t.section("derived (simulated)");
        t.row("simulated time", sim_time(out.measured.sim_time_ns));
        t.row("operations per simulated second", format!("{:.0}", out.throughput_per_sim_s));
        add_latency(&mut t, &out.latency);
        t.section("checks");
        t.row("integrity_check", &out.integrity);
        add_wall(&mut t, load_wall, run_wall, ops);
        t.print();
    }
    if integrity != "ok" {
        return Err(CliError::Failed(format!("integrity_check: {integrity}")));
    }
    Ok(ExitCode::SUCCESS)
}
