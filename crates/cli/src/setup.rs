//! Building devices from command-line options.

use crate::table::Figures;
use crate::{CliError, DeviceArgs};
use clap::builder::PossibleValuesParser;
use std::process::ExitCode;
use txftl_ftl::{FtlConfig, GcPolicy};
use txftl_nand::{preset, DataMode, NandConfig, Preset, ViolationPolicy, PRESET_NAMES};

pub fn preset_parser() -> PossibleValuesParser {
    PossibleValuesParser::new(PRESET_NAMES)
}

pub fn protocol_parser() -> PossibleValuesParser {
    PossibleValuesParser::new(txftl_protocols::PROTOCOL_NAMES)
}

/// The preset named (or `default`), with the capacity and endurance overrides applied.
pub fn resolve_preset(args: &DeviceArgs, default: &str) -> Result<Preset, CliError> {
    let name = args.preset.as_deref().unwrap_or(default);
    let mut p = preset(name).ok_or_else(|| CliError::Usage(format!("unknown preset `{name}`")))?;
    if let Some(bpp) = args.blocks_per_plane {
        p.geometry.blocks_per_plane = bpp;
    }
    if let Some(e) = args.endurance {
        p.endurance = e;
    }
    p.geometry
        .validate()
        .map_err(|e| CliError::Usage(format!("invalid geometry: {e}")))?;
    Ok(p)
}

pub fn nand_config(p: &Preset, data: DataMode) -> NandConfig {
    // A rule violation is an FTL bug; on the command line it is a typed error, not a panic.
    p.config(data, ViolationPolicy::Error)
}

pub fn ftl_config(args: &DeviceArgs) -> Result<FtlConfig, CliError> {
    let gc_policy = GcPolicy::parse(&args.gc).ok_or_else(|| CliError::Usage(format!("unknown GC policy `{}`", args.gc)))?;
    Ok(FtlConfig {
        overprovision_pct: args.overprovision,
        gc_policy,
        checkpoint_every_pages: args.checkpoint_every,
        wear_spread_max: args.wear_spread_max,
        ..FtlConfig::default()
    })
}

pub fn protocol_options(args: &DeviceArgs) -> txftl_protocols::ProtocolOptions {
    txftl_protocols::ProtocolOptions {
        // 0: sized to the array at format, or as formatted at a mount.
        xl2p_entries: args.xl2p_entries.unwrap_or(0),
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
        t.row("models", p.models);
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
        t.row("source", p.source);
        t.print();
    }
    Ok(ExitCode::SUCCESS)
}
