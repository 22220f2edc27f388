//! Building devices from command-line options.

use crate::device_file::{self, FtlOptions};
use crate::table::Figures;
use crate::{CliError, DeviceArgs};
use clap::builder::PossibleValuesParser;
use std::process::ExitCode;
use txftl_ftl::{FtlConfig, GcPolicy};
use txftl_nand::{preset, DataMode, Geometry, NandConfig, Preset, ViolationPolicy, PRESET_NAMES};

pub fn preset_parser() -> PossibleValuesParser {
    PossibleValuesParser::new(PRESET_NAMES)
}

pub fn protocol_parser() -> PossibleValuesParser {
    PossibleValuesParser::new(txftl_protocols::PROTOCOL_NAMES)
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
    if args.zone_blocks.is_some() && !args.protocol().starts_with("lighttx") {
        return Err(CliError::Usage(format!(
            "--zone-blocks sizes LightTx's zones; protocol `{}` has none",
            args.protocol()
        )));
    }
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
    if let Some(z) = args.zone_blocks {
        s += &format!(" --zone-blocks {z}");
    }
    if let Some(m) = &args.map_at_flush {
        s += &format!(" --map-at-flush {m}");
    }
    s
}

pub fn nand_config(p: &Preset, data: DataMode) -> NandConfig {
    // A rule violation is an FTL bug; on the command line it is a typed error, not a panic.
    p.config(data, ViolationPolicy::Error)
}

pub fn protocol_options(args: &DeviceArgs) -> txftl_protocols::ProtocolOptions {
    txftl_protocols::ProtocolOptions {
        // 0: sized to the array at format, or as formatted at a mount.
        xl2p_entries: args.xl2p_entries.unwrap_or(0),
        zone_blocks: args.zone_blocks.unwrap_or(0),
    }
}

pub fn describe(p: &Preset) -> String {
    let g = &p.geometry;
    let raw = g.capacity_bytes();
    let raw = if raw >= 1 << 20 {
        format!("{} MiB", raw >> 20)
    } else {
        format!("{} KiB", raw >> 10)
    };
    format!(
        "{} ({}, {raw} raw, {} ch x {} dies x {} planes x {} blocks x {} pages of {} B)",
        p.name, g.cell, g.channels, g.dies_per_channel, g.planes_per_die, g.blocks_per_plane, g.pages_per_block, g.page_size
    )
}

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
