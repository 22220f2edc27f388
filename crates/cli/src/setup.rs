//! Building devices from command-line options.

use crate::device_file::{self, FtlOptions};
use crate::table::Figures;
use crate::{CliError, DeviceArgs};
use clap::builder::{PossibleValue, PossibleValuesParser};
use std::process::ExitCode;
use txftl_ftl::{FtlConfig, GcPolicy};
use txftl_nand::{preset, Geometry, Preset, PRESET_NAMES};
use txftl_protocols::PROTOCOLS;
use txftl_protocols::{ProtocolEntry, ProtocolOptions};

pub fn preset_parser() -> PossibleValuesParser {
    PossibleValuesParser::new(PRESET_NAMES)
}

/// `--protocol`'s values, each with its entry's one line (a canary with its bug).
pub fn protocol_parser() -> PossibleValuesParser {
    PossibleValuesParser::new(txftl_protocols::PROTOCOLS.iter().flat_map(|e| {
        let canary = e
            .canary
            .map(|c| PossibleValue::new(c.name).help(format!("canary of {}: {}", e.name, c.bug)));
        std::iter::once(PossibleValue::new(e.name).help(e.about)).chain(canary)
    }))
}

/// The device the options describe: the flash array and the FTL's tunables.
#[derive(Clone, Debug)]
pub struct DeviceChoice {
    pub preset: Preset,
    pub ftl: FtlConfig,
    /// `--config FILE` or `--mqsim-config FILE` as given, for command lines
    /// that replay a run; `None` on a preset.
    pub file_option: Option<String>,
}

impl DeviceChoice {
    /// The options that build this array again: `--preset NAME` or the device file's.
    pub fn replay_option(&self) -> String {
        self.file_option.clone().unwrap_or_else(|| format!("--preset {}", self.preset.name))
    }
}

/// The full-size preset for a run of `protocols` (the default when none is
/// named): `jasmine`, or `flagcommit` where one needs SLC cells
/// (`NandNeeds::full_preset`).
pub fn full_preset_for(protocols: &[&str]) -> &'static str {
    protocols
        .iter()
        .filter_map(|p| txftl_protocols::entry(p).ok())
        .map(|e| e.nand.full_preset())
        .find(|&p| p != "jasmine")
        .unwrap_or("jasmine")
}

/// Resolves the device options in one place, for every command that builds a
/// device: the preset named (or `default`), or the device file of `--config`
/// or `--mqsim-config` (its warnings printed on standard error), then the
/// flags on top: `--blocks-per-plane` and `--endurance` override the array's,
/// `--overprovision`, `--gc`, `--wear-spread-max` and `--checkpoint-every` the
/// file's FTL options.
pub fn resolve_device(args: &DeviceArgs, default: &str) -> Result<DeviceChoice, CliError> {
    let file = match (&args.config, &args.mqsim_config) {
        (Some(_), Some(_)) => {
            return Err(CliError::Usage(
                "--config and --mqsim-config each describe the whole device: give one".into(),
            ))
        }
        (Some(path), None) => Some(device_file::load_toml(path).map_err(|e| CliError::Usage(e.to_string()))?),
        (None, Some(path)) => Some(device_file::load_mqsim(path).map_err(|e| CliError::Usage(e.to_string()))?),
        (None, None) => None,
    };
    let (mut p, file_ftl, label, file_option) = match file {
        Some(f) => {
            for w in &f.warnings {
                eprintln!("warning: {w}");
            }
            (f.preset, f.ftl, Some(f.label), Some(f.option))
        }
        None => {
            let name = args.preset.as_deref().unwrap_or(default);
            let p = preset(name).ok_or_else(|| CliError::Usage(format!("unknown preset `{name}`")))?;
            (p, FtlOptions::default(), None, None)
        }
    };
    if let Some(bpp) = args.blocks_per_plane {
        p.geometry.blocks_per_plane = bpp;
    }
    if let Some(e) = args.endurance {
        p.endurance = e;
    }
    p.geometry
        .validate()
        .map_err(|e| CliError::Usage(format!("invalid geometry: {e}")))?;
    let ftl = ftl_config_with(args, &file_ftl, &p.geometry, label.as_deref())?;
    Ok(DeviceChoice {
        preset: p,
        ftl,
        file_option,
    })
}

/// The FTL options of the flags alone (over the FTL's defaults), for a device
/// whose array an existing image fixes.
pub fn ftl_config(args: &DeviceArgs) -> Result<FtlConfig, CliError> {
    let mut cfg = FtlConfig::default();
    apply_flags(args, &mut cfg)?;
    Ok(cfg)
}

fn apply_flags(args: &DeviceArgs, cfg: &mut FtlConfig) -> Result<(), CliError> {
    if let Some(gc) = &args.gc {
        cfg.gc_policy = GcPolicy::parse(gc).ok_or_else(|| CliError::Usage(format!("unknown GC policy `{gc}`")))?;
    }
    if let Some(op) = args.overprovision {
        cfg.overprovision_pct = Some(op);
    }
    if let Some(n) = args.checkpoint_every {
        cfg.checkpoint_every_pages = n;
    }
    if let Some(w) = args.wear_spread_max {
        cfg.wear_spread_max = w;
    }
    if let Some(d) = args.checkpoint_stripe {
        cfg.checkpoint_stripe = d;
    }
    if let Some(on) = args.map_at_flush() {
        cfg.checkpoint_at_flush = on;
    }
    Ok(())
}

/// The FTL options: the FTL's defaults, the file's (`label` names it), the flags.
/// Watermarks are checked against the final geometry (`--blocks-per-plane`
/// may have shrunk it).
fn ftl_config_with(args: &DeviceArgs, file: &FtlOptions, geometry: &Geometry, label: Option<&str>) -> Result<FtlConfig, CliError> {
    let mut cfg = FtlConfig::default();
    let blocks = geometry.block_count();
    if let Some(op) = file.overprovision_pct {
        cfg.overprovision_pct = Some(op);
    }
    if let Some(gc) = file.gc_policy {
        cfg.gc_policy = gc;
    }
    if let Some(low) = file.gc_low_blocks {
        cfg.gc_low_blocks = low;
    }
    if let Some(share) = file.gc_low_share {
        cfg.gc_low_blocks = ((share * blocks as f64).ceil() as u32).max(1);
    }
    if let Some(high) = file.gc_high_blocks {
        cfg.gc_high_blocks = high;
    }
    if let Some(n) = file.checkpoint_every_pages {
        cfg.checkpoint_every_pages = n;
    }
    if let Some(w) = file.wear_spread_max {
        cfg.wear_spread_max = w;
    }
    for (field, value) in [("ftl.gc_low_blocks", cfg.gc_low_blocks), ("ftl.gc_high_blocks", cfg.gc_high_blocks)] {
        if value >= blocks {
            return Err(CliError::Usage(format!(
                "{}: {field}: {value} is not below the device's {blocks} blocks",
                label.unwrap_or("device")
            )));
        }
    }
    apply_flags(args, &mut cfg)?;
    Ok(cfg)
}

/// The FTL and endurance flags given, as a command line fragment that
/// replays them (the device itself comes from [`DeviceChoice::replay_option`]).
pub fn replay_ftl_flags(args: &DeviceArgs) -> String {
    let mut s = String::new();
    if let Some(gc) = &args.gc {
        s += &format!(" --gc {gc}");
    }
    if let Some(op) = args.overprovision {
        s += &format!(" --overprovision {op}");
    }
    if let Some(e) = args.endurance {
        s += &format!(" --endurance {e}");
    }
    if let Some(w) = args.wear_spread_max {
        s += &format!(" --wear-spread-max {w}");
    }
    if let Some(n) = args.checkpoint_every {
        s += &format!(" --checkpoint-every {n}");
    }
    if let Some(d) = args.checkpoint_stripe {
        s += &format!(" --checkpoint-stripe {d}");
    }
    if let Some(m) = &args.map_at_flush {
        s += &format!(" --map-at-flush {m}");
    }
    for o in &args.protocol_opt {
        s += &format!(" --protocol-opt {o}");
    }
    s
}

/// The preset's array with `data` (a rule violation is a typed error, not a panic).
pub use txftl_reproduce::device::nand_config;

/// `--protocol-opt`s as given, checked against the protocol's entry.
pub fn protocol_options(args: &DeviceArgs) -> Result<ProtocolOptions, CliError> {
    protocol_options_for(args, &[args.protocol()])
}

/// `--protocol-opt`s for a command that runs each of `protocols` (the
/// protocols of its SQLite modes): each key must be taken by one of them.
pub fn protocol_options_for(args: &DeviceArgs, protocols: &[&str]) -> Result<ProtocolOptions, CliError> {
    let usage = |e: txftl_ftl::DeviceError| CliError::Usage(e.to_string());
    let opts = ProtocolOptions::parse(&args.protocol_opt).map_err(usage)?;
    let mut entries: Vec<&ProtocolEntry> = Vec::new();
    for name in protocols {
        let e = txftl_protocols::entry(name).map_err(usage)?;
        if !entries.iter().any(|x| std::ptr::eq(*x, e)) {
            entries.push(e);
        }
    }
    opts.check_taken(&entries).map_err(usage)?;
    Ok(opts)
}

/// The device (as [`resolve_device`]) and the `--protocol-opt`s of the
/// command's one protocol, checked against its entry and against the FTL
/// options (a conflict is a bad argument, exit 2, before anything is built).
pub fn resolve_with_protocol(args: &DeviceArgs, default: &str) -> Result<(DeviceChoice, ProtocolOptions), CliError> {
    let d = resolve_device(args, default)?;
    let opts = protocol_options(args)?;
    check_protocol_config(args.protocol(), &d.ftl, &d.preset.geometry, &opts)?;
    Ok((d, opts))
}

/// `--mode`'s values: every SQLite mode of the registry's protocols.
pub fn mode_parser() -> PossibleValuesParser {
    PossibleValuesParser::new(txftl_sqlite::Mode::all(PROTOCOLS).map(|m| PossibleValue::new(m.cli()).help(m.name())))
}

/// The SQLite mode named `name` (a journal mode on a protocol).
pub fn parse_mode(name: &str) -> Result<txftl_sqlite::Mode, CliError> {
    txftl_sqlite::Mode::parse(PROTOCOLS, name).ok_or_else(|| {
        CliError::Usage(format!(
            "unknown mode `{name}` ({})",
            txftl_sqlite::Mode::names(PROTOCOLS).join(", ")
        ))
    })
}

/// Comma-separated SQLite modes (at least one).
pub fn parse_modes(list: &str) -> Result<Vec<txftl_sqlite::Mode>, CliError> {
    let modes = list
        .split(',')
        .map(str::trim)
        .filter(|x| !x.is_empty())
        .map(parse_mode)
        .collect::<Result<Vec<_>, _>>()?;
    if modes.is_empty() {
        return Err(CliError::Usage("--modes names no mode".into()));
    }
    Ok(modes)
}

/// What the protocol's options make of the FTL configuration.
pub fn check_protocol_config(protocol: &str, cfg: &FtlConfig, geometry: &Geometry, opts: &ProtocolOptions) -> Result<(), CliError> {
    let p = txftl_protocols::Protocol::find(protocol).map_err(|e| CliError::Usage(e.to_string()))?;
    p.configure(cfg.clone(), geometry, opts)
        .map(|_| ())
        .map_err(|e| CliError::Usage(e.to_string()))
}

/// A preset in one line (the reproductions' device lines use it too).
pub use txftl_reproduce::device::describe;

pub fn print_presets(json: bool) -> Result<ExitCode, CliError> {
    let presets: Vec<Preset> = PRESET_NAMES.iter().filter_map(|n| preset(n)).collect();
    if json {
        println!("{}", serde_json::to_string_pretty(&presets).map_err(CliError::failed)?);
        return Ok(ExitCode::SUCCESS);
    }
    for p in &presets {
        let mut t = Figures::new(&describe(p));
        t.row("models", &p.models);
        t.row(
            "read / program / partial / erase",
            format!(
                "{} / {} / {} / {} us",
                p.timing.read_ns / 1000,
                p.timing.program_ns / 1000,
                p.timing.partial_program_ns / 1000,
                p.timing.erase_ns / 1000
            ),
        );
        t.row(
            "NOP / OOB / endurance",
            format!("{} / {} B / {} cycles", p.geometry.nop, p.geometry.oob_size, p.endurance),
        );
        t.row("source", &p.source);
        t.print();
    }
    Ok(ExitCode::SUCCESS)
}

/// `presets --toml NAME`: the preset as a device file for `--config`.
pub fn print_preset_toml(name: &str) -> Result<ExitCode, CliError> {
    let p = preset(name).ok_or_else(|| CliError::Usage(format!("unknown preset `{name}`")))?;
    print!("{}", device_file::to_toml(&p));
    Ok(ExitCode::SUCCESS)
}
