//! The DBMS on the `flagcommit` preset (Flag Commit's Table 2 flash, scaled
//! to 512 MiB; the database a sixteenth of it, as 2 GB is of the paper's
//! 32 GB): prints the generator's shape beside the paper's, then a run.
//!
//! `cargo run -p txftl-dbms --example tpcc -- protocol=scc tx=2000`
//! Keys (defaults): protocol (xftl), pins (frames pinned per open
//! transaction: the registry's `resident_pages_per_tx`), tx (2000), clients (50), buffer (512),
//! fpp (1: flash pages per DB page), db (16384 DB pages), abort (5 %),
//! fill (0: percent of the device written with cold data first), warmup
//! (0 transactions run unmeasured first),
//! seed (1), written (all: plans writing LO-HI distinct pages only, as
//! `0-10` or `11-max`, Fig. 18's split), recovery (shadow: the device's transactions; aries: ARIES's
//! log on a device without them, `protocol=plain`; flag-ex: Flag Commit's
//! extended manager, `protocol=cfc-ex` or `afc-ex`), max_c (3: writers a DB
//! page takes at once under flag-ex, the device formatted with the same
//! `max-c`), json (0: 1 prints the report as JSON).

use txftl_dbms::{run_dbms, shape, DbmsConfig, Recovery};
use txftl_ftl::{FtlConfig, ProtocolOptions};
use txftl_nand::{DataMode, Nand, ViolationPolicy};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut protocol = "xftl".to_string();
    let mut json = false;
    let mut pins = None;
    let mut cfg = DbmsConfig::default();
    for arg in std::env::args().skip(1) {
        let (k, v) = arg.split_once('=').ok_or_else(|| format!("`{arg}`: KEY=VALUE expected"))?;
        let n = || v.parse::<u64>().map_err(|e| format!("{k}={v}: {e}"));
        match k {
            "protocol" => protocol = v.to_string(),
            "pins" => pins = Some(n()? as u32),
            "tx" => cfg.transactions = n()?,
            "clients" => cfg.clients = n()? as u32,
            "buffer" => cfg.buffer_pages = n()? as u32,
            "fpp" => cfg.flash_pages_per_db_page = n()? as u32,
            "db" => cfg.db_pages = n()? as u32,
            "abort" => cfg.abort_pct = n()? as u32,
            "fill" => cfg.cold_fill_pct = n()? as u32,
            "warmup" => cfg.warmup_transactions = n()?,
            "seed" => cfg.seed = n()?,
            "max_c" => cfg.max_c = n()? as u32,
            "json" => json = n()? == 1,
            "written" if v == "all" => cfg.pages_written = (0, u32::MAX),
            "written" => {
                let (lo, hi) = v.split_once('-').ok_or_else(|| format!("written={v}: LO-HI"))?;
                let num = |x: &str| {
                    if x == "max" {
                        Ok(u32::MAX)
                    } else {
                        x.parse::<u32>().map_err(|e| format!("written={v}: {e}"))
                    }
                };
                cfg.pages_written = (num(lo)?, num(hi)?);
            }
            "recovery" => {
                cfg.recovery = match v {
                    "shadow" => Recovery::Shadow,
                    "aries" => Recovery::Aries,
                    "flag-ex" => Recovery::FlagEx,
                    _ => return Err(format!("recovery={v}: shadow, aries or flag-ex").into()),
                }
            }
            _ => return Err(format!("unknown key `{k}`").into()),
        }
    }
    let entry = txftl_protocols::PROTOCOLS
        .iter()
        .find(|e| e.name == protocol)
        .ok_or_else(|| format!("no protocol `{protocol}`"))?;
    // The registry's pins are shadow paging's; pins asked for with a log are
    // passed on, and the configuration refuses them.
    let registry_pins = if cfg.recovery.logs() { 0 } else { entry.resident_pages_per_tx };
    cfg.pinned_frames_per_tx = pins.unwrap_or(registry_pins);
    println!("{}\n", shape(&cfg, 10_000)?);
    let preset = txftl_nand::preset("flagcommit").ok_or("no flagcommit preset")?;
    let nand = Nand::new(preset.config(DataMode::MetaOnly, ViolationPolicy::Panic))?;
    // The extended flag commits take max_c at format: the DBMS's own.
    let mut opts = ProtocolOptions::default();
    if entry.options.iter().any(|o| o.key == "max-c") {
        opts = ProtocolOptions::parse(&[format!("max-c={}", cfg.max_c)])?;
    }
    let mut dev = txftl_protocols::format(&protocol, nand, FtlConfig::default(), &opts)?;
    let report = run_dbms(&mut *dev, cfg)?;
    if json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        println!("{report}");
    }
    Ok(())
}
