//! `txftl nbd`: the device as an NBD export (`serve`), and its control
//! socket (`ctl`: power cuts, power-on, counters).

use crate::open::SyncArgs;
use crate::CliError;
use clap::{Args, Subcommand};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use txftl_ftl::{FtlConfig, ProtocolOptions};
use txftl_nand::Torn;
use txftl_nbd::{CutSchedule, Export, ExportConfig, Listen, Server};

#[derive(Subcommand, Debug)]
pub enum NbdCommand {
    /// Serve an image as an NBD export until SIGINT (or SIGTERM), then
    /// print the counters and close the image cleanly.
    Serve(ServeArgs),
    /// Send a command to a running server's control socket.
    Ctl(CtlArgs),
}

#[derive(Args, Debug)]
pub struct ServeArgs {
    /// The device image (made by `txftl format`); its protocol is the one
    /// it was formatted for. Locked while served: a second server is refused.
    #[arg(long)]
    pub image: PathBuf,
    /// Unix socket to listen on [default: IMAGE.nbd.sock]; clients connect
    /// to nbd+unix:///?socket=PATH.
    #[arg(long, conflicts_with = "tcp")]
    pub socket: Option<PathBuf>,
    /// Listen on TCP at 127.0.0.1:PORT instead (0: any free port, printed).
    #[arg(long)]
    pub tcp: Option<u16>,
    /// Control socket [default: IMAGE.ctl.sock] for `txftl nbd ctl`.
    #[arg(long)]
    pub ctl: Option<PathBuf>,
    /// The export's name (the default export, the empty name, is served too).
    #[arg(long, default_value = "txftl")]
    pub export: String,
    /// Make what arrives between two flushes (or a FUA write) one device
    /// transaction: a file system's journal commit or an application's
    /// fsync is atomic (transactional protocols only).
    #[arg(long)]
    pub flush_is_commit: bool,
    /// Scheduled power cut at this flash operation after each recovery
    /// (the operation torn as --torn says); the server recovers and serves again.
    #[arg(long)]
    pub cut_after_ops: Option<u64>,
    /// Scheduled power cut at this instant of the device clock (ns since
    /// power-on): flash operations running then are torn (a seeded draw),
    /// those issued later never happen.
    #[arg(long)]
    pub cut_at_ns: Option<u64>,
    /// How many scheduled cuts, at most [default: 1].
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub cuts: Option<u64>,
    /// How a scheduled cut tears the flash operation it lands on
    /// [default: drawn from --seed, cut by cut].
    #[arg(long, value_parser = Torn::ALL.map(|t| t.name()))]
    pub torn: Option<String>,
    /// Seed of the schedule's torn variants and torn bytes.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Also write the counters as JSON to this file at the end.
    #[arg(long)]
    pub stats_json: Option<PathBuf>,
    #[command(flatten)]
    pub sync: SyncArgs,
}

#[derive(Args, Debug)]
pub struct CtlArgs {
    /// The server's control socket.
    #[arg(long)]
    pub ctl: PathBuf,
    /// power-cut: power goes now (connections dropped, the device stays off);
    /// power-on: recovery from the NAND alone, its report printed; stats:
    /// the counters.
    #[arg(value_parser = ["power-cut", "power-on", "stats"])]
    pub command: String,
    /// stats as JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn run(cmd: NbdCommand) -> Result<ExitCode, CliError> {
    match cmd {
        NbdCommand::Serve(a) => serve(a),
        NbdCommand::Ctl(a) => ctl(a),
    }
}

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, Ordering::Relaxed);
}

fn with_suffix(p: &Path, suffix: &str) -> PathBuf {
    let mut s = p.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

fn schedule(a: &ServeArgs) -> Result<CutSchedule, CliError> {
    let s = CutSchedule {
        after_ops: a.cut_after_ops,
        at_ns: a.cut_at_ns,
        cuts: a.cuts.unwrap_or(1),
        torn: a.torn.as_deref().and_then(Torn::parse),
        seed: a.seed,
    };
    if s.is_empty() && (a.cuts.is_some() || a.torn.is_some()) {
        return Err(CliError::Usage(
            "--cuts and --torn shape a schedule: give --cut-after-ops or --cut-at-ns".into(),
        ));
    }
    if a.torn.is_some() && a.cut_at_ns.is_some() {
        return Err(CliError::Usage(
            "--torn applies to --cut-after-ops: a cut at an instant ends each operation in flight as a seeded draw says".into(),
        ));
    }
    if a.cut_after_ops.is_some() && a.cut_at_ns.is_some() {
        return Err(CliError::Usage("give one of --cut-after-ops and --cut-at-ns".into()));
    }
    Ok(s)
}

fn serve(a: ServeArgs) -> Result<ExitCode, CliError> {
    let schedule = schedule(&a)?;
    let listen = match (a.tcp, &a.socket) {
        (Some(port), _) => Listen::Tcp(port),
        (None, Some(p)) => Listen::Unix(p.clone()),
        (None, None) => Listen::Unix(with_suffix(&a.image, ".nbd.sock")),
    };
    let ctl = a.ctl.clone().unwrap_or_else(|| with_suffix(&a.image, ".ctl.sock"));
    for p in [Some(&ctl), if let Listen::Unix(p) = &listen { Some(p) } else { None }]
        .into_iter()
        .flatten()
    {
        if p.exists() {
            return Err(CliError::Usage(format!(
                "{} exists: another server may use it; remove it if none does",
                p.display()
            )));
        }
    }
    let dev = crate::cmd_image::mount(&a.image, None, FtlConfig::default(), a.sync.mode())?;
    let protocol = dev.entry().name;
    let config = ExportConfig {
        name: a.export.clone(),
        flush_is_commit: a.flush_is_commit,
        schedule,
    };
    let export = Export::new(dev, protocol, FtlConfig::default(), ProtocolOptions::default(), config).map_err(CliError::Usage)?;
    let size = export.size();
    let unit = txftl_nbd::atomic_unit_text(export.entry());
    let log: Box<dyn Fn(&str) + Send + Sync> = Box::new(|m| eprintln!("txftl nbd: {m}"));
    let server = Server::bind(&listen, Some(ctl.clone()), export, log).map_err(|e| CliError::Failed(format!("listening: {e}")))?;
    let uri = match (&listen, server.port()) {
        (Listen::Tcp(_), Some(port)) => format!("nbd://127.0.0.1:{port}/{}", a.export),
        (Listen::Unix(p), _) => format!("nbd+unix:///{}?socket={}", a.export, p.display()),
        (Listen::Tcp(port), None) => format!("nbd://127.0.0.1:{port}/{}", a.export),
    };
    // SAFETY: installing a handler that only stores to an atomic.
    unsafe {
        libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
    }
    eprintln!(
        "txftl nbd: serving {} ({protocol}, {size} bytes) at {uri}; control socket {}; atomic unit: {unit}{}",
        a.image.display(),
        ctl.display(),
        if a.flush_is_commit { "; flushes commit" } else { "" }
    );
    let mut export = server.run(&STOP);
    let stats = export.stats_json();
    println!("{}", txftl_nbd::stats::table(&stats));
    if let Some(p) = &a.stats_json {
        std::fs::write(p, format!("{stats:#}\n")).map_err(|e| CliError::Failed(format!("{}: {e}", p.display())))?;
    }
    export.close().map_err(|e| CliError::Failed(format!("closing the image: {e}")))?;
    Ok(ExitCode::SUCCESS)
}

fn ctl(a: CtlArgs) -> Result<ExitCode, CliError> {
    let cmd = match (a.command.as_str(), a.json) {
        ("stats", true) => "stats-json",
        (_, true) => return Err(CliError::Usage("--json applies to stats only".into())),
        (c, false) => c,
    };
    match txftl_nbd::control::send(&a.ctl, cmd) {
        Err(e) => Err(CliError::Failed(format!("{}: {e}", a.ctl.display()))),
        Ok(Err(msg)) => Err(CliError::Failed(msg)),
        Ok(Ok(text)) => {
            print!("{text}");
            Ok(ExitCode::SUCCESS)
        }
    }
}
