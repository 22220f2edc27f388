//! `txftl sql tpcc`: TPC-C on SQLite, one client or several.

use super::*;

#[derive(Args, Debug)]
pub struct TpccArgs {
    #[command(flatten)]
    pub common: SqlCommon,
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub warehouses: u32,
    /// Divide the item, customer and order counts by this (1: the
    /// specification's cardinalities; larger for quick runs).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=900))]
    pub scale: u32,
    /// Transactions to run after the load.
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub transactions: u64,
    /// Percent of New-Order, Payment, Order-Status, Delivery, Stock-Level (sum 100).
    #[arg(long, default_value = "45,43,4,4,4")]
    pub mix: String,
    /// Clients, each its own SQLite connection to the database, interleaved
    /// statement by statement on the device clock; SQLite's locks decide who
    /// waits (SQLITE_BUSY: back off, retry). See docs/host-and-sqlite.md.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub clients: u32,
    /// How the writing transactions (New-Order, Payment, Delivery) begin:
    /// deferred (BEGIN: a write refused mid-transaction restarts it) or
    /// immediate (BEGIN IMMEDIATE: the write lock first).
    #[arg(long, default_value = "deferred", value_parser = ["deferred", "immediate"])]
    pub begin: String,
}

#[derive(Serialize)]
struct TpccOut {
    mode: Mode,
    device: String,
    warehouses: u32,
    scale: u32,
    mix: [u32; 5],
    transactions: u64,
    clients: u32,
    seed: u64,
    load_wall_seconds: f64,
    run_wall_seconds: f64,
    kinds: Vec<KindCost>,
    report: tpcc::TpccReport,
    /// SQLITE_BUSY events met by the clients and how they were retried (all, then per type).
    busy: BusyCounts,
    busy_by_kind: [BusyCounts; 5],
    /// How the clients backed off.
    clients_spec: ClientsSpec,
    /// Statements run, and times the token went to another client.
    steps: u64,
    switches: u64,
    /// New-Order transactions committed per simulated minute.
    tpmc: f64,
    transactions_per_sim_s: f64,
    throughput_per_sim_s: f64,
    latency: LatencyReport,
    host: FsStats,
    measured: DeviceStats,
    write_amplification: f64,
    consistency: String,
    integrity: String,
}

fn parse_mix(s: &str) -> Result<[u32; 5], CliError> {
    let v: Vec<u32> = s
        .split(',')
        .map(|x| x.trim().parse::<u32>())
        .collect::<Result<_, _>>()
        .map_err(|_| CliError::Usage(format!("--mix `{s}` is not five percentages")))?;
    let mix: [u32; 5] = v.try_into().map_err(|_| {
        CliError::Usage(format!(
            "--mix `{s}` needs five percentages (New-Order, Payment, Order-Status, Delivery, Stock-Level)"
        ))
    })?;
    if mix.iter().sum::<u32>() != 100 {
        return Err(CliError::Usage(format!(
            "--mix `{s}` adds up to {}, not 100",
            mix.iter().sum::<u32>()
        )));
    }
    Ok(mix)
}

pub(super) fn tpcc_cmd(args: TpccArgs) -> Result<ExitCode, CliError> {
    let mix = parse_mix(&args.mix)?;
    let spec = TpccSpec {
        warehouses: args.warehouses,
        scale: args.scale,
        mix,
        transactions: args.transactions,
        seed: args.common.seed,
        ..TpccSpec::default()
    };
    spec.validate().map_err(|e| CliError::Usage(e.to_string()))?;
    let (stack, mode, what, on) = stack(&args.common)?;
    let page_size = stack.with_fs_mut(|fs| fs.page_size()).map_err(CliError::failed)?;
    let conn = stack.open("tpcc.db", page_size).map_err(CliError::failed)?;
    let bar = if args.common.json {
        ProgressBar::hidden()
    } else {
        ProgressBar::new_spinner()
    };
    bar.set_message(format!(
        "{}: loading TPC-C ({} warehouse(s), scale 1/{})",
        mode.name(),
        spec.warehouses,
        spec.scale
    ));
    bar.enable_steady_tick(std::time::Duration::from_millis(200));
    let t0 = std::time::Instant::now();
    tpcc::load(&conn, &spec).map_err(|e| CliError::Failed(format!("loading TPC-C: {e}{}", why(&stack))))?;
    let load_wall = t0.elapsed().as_secs_f64();
    bar.disable_steady_tick();
    bar.set_style(
        ProgressStyle::with_template("{spinner} {msg} [{bar:40}] {pos}/{len} transactions ({per_sec}, eta {eta})")
            .map_err(CliError::failed)?
            .progress_chars("=> "),
    );
    bar.set_length(spec.transactions);
    bar.set_message(format!("{} TPC-C", mode.name()));
    start_measuring(&stack, &on)?;
    let names: Vec<&str> = TxKind::ALL.iter().map(|k| k.name()).collect();
    let mut att = Attribution::new(&names);
    let t1 = std::time::Instant::now();
    // The clients: one connection each (the first one the load's),
    // interleaved statement by statement on the device clock.
    let mut conns = vec![conn];
    for _ in 1..args.clients {
        conns.push(stack.open("tpcc.db", page_size).map_err(CliError::failed)?);
    }
    let how = ClientsSpec {
        begin: Begin::parse(&args.begin).ok_or_else(|| CliError::Usage(format!("unknown --begin `{}`", args.begin)))?,
        ..ClientsSpec::default()
    };
    let mut done_count = 0u64;
    let (clients, mut conns) = tpcc::clients::run_clients(&stack, conns, &spec, &how, |t| {
        att.add(t.kind.index(), t.host_page_writes, t.flash_programs, t.latency_ns());
        done_count += 1;
        if done_count.is_multiple_of(64) {
            bar.set_position(done_count);
        }
    })
    .map_err(|e| CliError::Failed(format!("running TPC-C: {e}{}", why(&stack))))?;
    let report = clients.report.clone();
    let conn = conns.swap_remove(0);
    drop(conns);
    let run_wall = t1.elapsed().as_secs_f64();
    on.store(false, Ordering::Relaxed);
    bar.finish_and_clear();
    let end = snap(&stack);
    let consistency = match tpcc::check(&conn) {
        Ok(()) => "ok".to_string(),
        Err(e) => e,
    };
    let integrity = txftl_sqlite::workload::integrity_check(&conn).map_err(CliError::failed)?;
    let (mut costs, mut latency) = att.finish();
    latency.transaction = latency.request;
    let counts = [
        report.new_order,
        report.payment,
        report.order_status,
        report.delivery,
        report.stock_level,
    ];
    for (c, k) in costs.iter_mut().zip(counts) {
        c.committed = k.committed;
        c.rolled_back = k.rolled_back;
    }
    drop(conn);
    close(stack, args.common.record.is_some())?;
    let measured = end.dev;
    let sim_s = measured.sim_time_ns as f64 / 1e9;
    let per_s = |n: u64| per_second(n, sim_s);
    let committed: u64 = costs.iter().map(|c| c.committed).sum();
    let out = TpccOut {
        mode,
        device: what,
        warehouses: spec.warehouses,
        scale: spec.scale,
        mix,
        transactions: spec.transactions,
        clients: args.clients,
        busy: clients.busy,
        busy_by_kind: clients.busy_by_kind,
        clients_spec: how,
        steps: clients.steps,
        switches: clients.switches,
        seed: spec.seed,
        load_wall_seconds: load_wall,
        run_wall_seconds: run_wall,
        tpmc: per_s(report.new_orders) * 60.0,
        transactions_per_sim_s: per_s(committed),
        throughput_per_sim_s: per_s(spec.transactions),
        latency,
        kinds: costs,
        report,
        host: end.fs,
        measured,
        write_amplification: if end.fs.host_page_writes() > 0 {
            (measured.flash_programs + measured.flash_partial_programs) as f64 / end.fs.host_page_writes() as f64
        } else {
            0.0
        },
        consistency: consistency.clone(),
        integrity: integrity.clone(),
    };
    if args.common.json {
        println!("{}", serde_json::to_string_pretty(&out).map_err(CliError::failed)?);
    } else {
        print_tpcc(&out, args.common.record.as_deref());
    }
    if consistency != "ok" || integrity != "ok" {
        return Err(CliError::Failed(format!(
            "TPC-C consistency: {consistency}; integrity_check: {integrity}"
        )));
    }
    Ok(ExitCode::SUCCESS)
}

fn print_tpcc(o: &TpccOut, record: Option<&std::path::Path>) {
    wrapln!("device: {}", o.device);
    let mut t = Figures::new(&format!(
        "txftl sql tpcc: {} | {} warehouse(s), scale 1/{}, mix {:?}, {} transactions, {} client(s), seed {}",
        o.mode.name(),
        o.warehouses,
        o.scale,
        o.mix,
        thousands(o.transactions),
        o.clients,
        o.seed
    ));
    t.section("per transaction type (simulated): count (rolled back) | host pages / flash programs per tx | latency mean / p99 us");
    for c in &o.kinds {
        t.row(
            &format!("  {}", c.kind),
            format!(
                "{} ({}) | {:.1} / {:.1} | {:.0} / {:.0}",
                thousands(c.count),
                thousands(c.rolled_back),
                c.host_page_writes_per_tx,
                c.flash_programs_per_tx,
                c.latency.mean_ns / 1000.0,
                us(c.latency.p99_ns)
            ),
        );
    }
    add_fs(&mut t, &o.host);
    add_counters(&mut t, &o.measured);
    t.section("derived (simulated)");
    t.row("simulated time", sim_time(o.measured.sim_time_ns));
    t.row("tpmC (New-Order committed per simulated minute)", format!("{:.0}", o.tpmc));
    t.row(
        "transactions committed per simulated second",
        format!("{:.1}", o.transactions_per_sim_s),
    );
    t.row(
        "write amplification (flash programs per host page write)",
        format!("{:.3}", o.write_amplification),
    );
    add_latency(&mut t, &o.latency);
    t.section(&format!(
        "clients (SQLite's locks across connections; writers begin {:?}; backoff {:.0}-{:.0} us simulated)",
        o.clients_spec.begin,
        o.clients_spec.backoff_ns_min as f64 / 1000.0,
        o.clients_spec.backoff_ns_max as f64 / 1000.0
    ));
    t.row(
        "SQLITE_BUSY met: restarts from BEGIN / COMMITs retried",
        format!(
            "{}: {} / {}",
            thousands(o.busy.busy),
            thousands(o.busy.restarts),
            thousands(o.busy.commit_retries)
        ),
    );
    for (k, b) in TxKind::ALL.iter().zip(&o.busy_by_kind) {
        if b.busy > 0 {
            t.row(&format!("  {}", k.name()), format!("{} busy", thousands(b.busy)));
        }
    }
    t.row(
        "statements run / token handed to another client",
        format!("{} / {}", thousands(o.steps), thousands(o.switches)),
    );
    t.section("checks");
    t.row("consistency conditions 1-4", &o.consistency);
    t.row("integrity_check", &o.integrity);
    if let Some(p) = record {
        t.row("trace recorded (the run, not the load)", p.display());
    }
    t.section("emulator (wall clock)");
    t.row(
        "load / run wall time",
        format!("{:.1} s / {:.1} s", o.load_wall_seconds, o.run_wall_seconds),
    );
    t.row(
        "transactions per wall second",
        format!("{:.0}", o.transactions as f64 / o.run_wall_seconds.max(1e-9)),
    );
    t.print();
}
