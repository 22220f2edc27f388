//! `txftl sql sqlite-bench`: sqlite-bench's benchmarks (NoLgn-FTL's Figs. 6 to 9).

use super::*;

#[derive(Args, Debug)]
pub struct BenchArgs {
    #[command(flatten)]
    pub common: SqlCommon,
    /// Benchmarks, comma-separated, run in order (fillseq, fillseqsync,
    /// fillseqbatch, fillrandom, fillrandsync, fillrandbatch, overwrite,
    /// overwritebatch, readrandom, readseq, fillrand100K, fillseq100K, readrand100K).
    #[arg(long, default_value = "fillseq,fillrandom,overwrite,readseq,readrandom")]
    pub benchmarks: String,
    /// Entries.
    #[arg(long, default_value_t = 100_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub num: u64,
    /// Bytes of a value (NoLgn: 256 to 16384).
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=1 << 20))]
    pub value_size: u32,
    /// Entries per transaction of the *batch benchmarks.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u32).range(1..))]
    pub batch: u32,
}

/// One benchmark's figures.
#[derive(Serialize)]
struct BenchOut {
    benchmark: String,
    result: sqlitebench::BenchResult,
    host_page_writes: u64,
    flash_programs: u64,
    sim_seconds: f64,
    operations_per_sim_s: f64,
    /// Per transaction, on the device clock.
    latency: LatencySummary,
}

#[derive(Serialize)]
struct BenchRunOut {
    mode: Mode,
    device: String,
    journal_mode: String,
    locking_mode: String,
    page_size: u32,
    num: u64,
    value_size: u32,
    benchmarks: Vec<BenchOut>,
    host: FsStats,
    measured: DeviceStats,
    throughput_per_sim_s: f64,
    latency: LatencyReport,
    integrity: String,
    run_wall_seconds: f64,
}

pub(super) fn bench_cmd(args: BenchArgs) -> Result<ExitCode, CliError> {
    let benchmarks = Benchmark::parse_list(&args.benchmarks).map_err(CliError::Usage)?;
    let spec = BenchSpec {
        benchmarks,
        num: args.num,
        value_size: args.value_size,
        batch: args.batch,
        seed: args.common.seed,
        synchronous: args.common.synchronous(),
        ..BenchSpec::default()
    };
    let (stack, mode, what, on) = stack(&args.common)?;
    let page_size = stack.with_fs_mut(|fs| fs.page_size()).map_err(CliError::failed)?;
    let conn = stack.open("dbbench.db", page_size).map_err(CliError::failed)?;
    start_measuring(&stack, &on)?;
    let bar = progress(
        args.common.json,
        spec.benchmarks.len() as u64,
        &format!("{} sqlite-bench", mode.name()),
    )?;
    let names: Vec<&str> = spec.benchmarks.iter().map(|b| b.name()).collect();
    let mut att = Attribution::new(&names);
    let mut at_start: Vec<Option<Snap>> = vec![None; names.len()];
    let mut at_finish: Vec<Option<Snap>> = vec![None; names.len()];
    let mut current = 0usize;
    let t1 = std::time::Instant::now();
    let report = sqlitebench::run_with(&conn, &spec, |ev| match *ev {
        BenchEvent::Start { bench } => {
            current = spec.benchmarks.iter().position(|b| *b == bench).unwrap_or(0);
            at_start[current] = Some(snap(&stack));
        }
        BenchEvent::Begin { .. } => att.begin(snap(&stack)),
        BenchEvent::End { ops, .. } => att.end(current, snap(&stack), ops),
        BenchEvent::Finish { .. } => {
            at_finish[current] = Some(snap(&stack));
            bar.inc(1);
        }
    })
    .map_err(|e| CliError::Failed(format!("running sqlite-bench: {e}{}", why(&stack))))?;
    let run_wall = t1.elapsed().as_secs_f64();
    on.store(false, Ordering::Relaxed);
    bar.finish_and_clear();
    let end = snap(&stack);
    let integrity = txftl_sqlite::workload::integrity_check(&conn).map_err(CliError::failed)?;
    drop(conn);
    close(stack, args.common.record.is_some())?;
    let lat: Vec<LatencySummary> = att.lat.iter().map(|l| l.summary()).collect();
    let latency = LatencyReport {
        request: att.all.summary(),
        transaction: att.all.summary(),
        by_op: names.iter().zip(&lat).map(|(n, l)| (n.to_string(), *l)).collect(),
    };
    let mut outs = Vec::new();
    for (i, r) in report.results.iter().enumerate() {
        let (Some(a), Some(b)) = (at_start[i], at_finish[i]) else {
            continue;
        };
        let sim_s = (b.now_ns.saturating_sub(a.now_ns)) as f64 / 1e9;
        outs.push(BenchOut {
            benchmark: r.benchmark.name().to_string(),
            result: r.clone(),
            host_page_writes: b.fs.host_page_writes() - a.fs.host_page_writes(),
            flash_programs: b.dev.flash_programs - a.dev.flash_programs,
            sim_seconds: sim_s,
            operations_per_sim_s: per_second(r.operations, sim_s),
            latency: lat[i],
        });
    }
    let total_ops: u64 = report.results.iter().map(|r| r.operations).sum();
    let sim_s = end.dev.sim_time_ns as f64 / 1e9;
    let out = BenchRunOut {
        mode,
        device: what,
        journal_mode: report.journal_mode.clone(),
        locking_mode: report.locking_mode.clone(),
        page_size: report.page_size,
        num: spec.num,
        value_size: spec.value_size,
        benchmarks: outs,
        host: end.fs,
        measured: end.dev,
        throughput_per_sim_s: per_second(total_ops, sim_s),
        latency,
        integrity: integrity.clone(),
        run_wall_seconds: run_wall,
    };
    if args.common.json {
        println!("{}", serde_json::to_string_pretty(&out).map_err(CliError::failed)?);
    } else {
        wrapln!("device: {}", out.device);
        let mut t = Figures::new(&format!(
            "txftl sql sqlite-bench: {} | {} entries of {} B values, journal {}, locking {}, page {} B",
            mode.name(),
            thousands(out.num),
            out.value_size,
            out.journal_mode,
            out.locking_mode,
            out.page_size
        ));
        t.section("per benchmark (simulated): operations | per simulated s | host pages / flash programs | tx latency mean / p99 us");
        for b in &out.benchmarks {
            t.row(
                &format!("  {}", b.benchmark),
                format!(
                    "{} | {:.0} | {} / {} | {:.0} / {:.0}",
                    thousands(b.result.operations),
                    b.operations_per_sim_s,
                    thousands(b.host_page_writes),
                    thousands(b.flash_programs),
                    b.latency.mean_ns / 1000.0,
                    us(b.latency.p99_ns)
                ),
            );
        }
        add_fs(&mut t, &out.host);
        add_counters(&mut t, &out.measured);
        t.section("checks");
        t.row("integrity_check", &out.integrity);
        add_wall(&mut t, 0.0, run_wall, total_ops);
        t.print();
    }
    if integrity != "ok" {
        return Err(CliError::Failed(format!("integrity_check: {integrity}")));
    }
    Ok(ExitCode::SUCCESS)
}
