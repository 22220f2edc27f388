//! The TOML device file (`--config FILE`): everything a preset holds, plus
//! the FTL's options. `presets --toml NAME` prints a preset in this form,
//! which loads back to the identical device. The README ("Devices from a
//! file") lists every key with its unit and default.
//!
//! ```toml
//! endurance = 3000            # erase cycles a block survives
//! [geometry]                  # every key required but nop
//! channels = 4
//! dies_per_channel = 2
//! planes_per_die = 1
//! blocks_per_plane = 128
//! pages_per_block = 128
//! page_size = 8192            # bytes, a multiple of 512
//! oob_size = 448              # bytes, at least 64 (the FTL's OOB record)
//! cell = "mlc"                # slc | mlc | tlc
//! nop = 1                     # partial programs per page: SLC 1 to 8, else 1 [default 1]
//! [timing]                    # nanoseconds
//! read_ns = 60000
//! program_ns = 800000
//! partial_program_ns = 800000 # [default: program_ns]
//! erase_ns = 1500000
//! transfer_ns_per_kib = 12500 # channel time per KiB moved
//! [ftl]                       # optional, every key optional
//! ```
//!
//! Unknown keys are refused (`deny_unknown_fields`): a misspelt key would
//! otherwise leave a default in place without a word.

use super::{
    check_geometry, check_range, label_and_stem, read, DeviceFile, DeviceFileError, FtlOptions, LATENCY_NS_MAX, WEAR_SPREAD_MAX_MAX,
};
use serde::Deserialize;
use std::borrow::Cow;
use std::fmt::Write as _;
use std::path::Path;
use txftl_ftl::{FtlConfig, GcPolicy};
use txftl_nand::{CellType, Geometry, Preset, Timing};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DeviceToml {
    /// Default: the file's stem.
    name: Option<String>,
    models: Option<String>,
    source: Option<String>,
    endurance: u32,
    geometry: GeometryToml,
    timing: TimingToml,
    #[serde(default)]
    ftl: FtlToml,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GeometryToml {
    channels: u32,
    dies_per_channel: u32,
    planes_per_die: u32,
    blocks_per_plane: u32,
    pages_per_block: u32,
    page_size: u32,
    oob_size: u32,
    #[serde(deserialize_with = "cell_type")]
    cell: CellType,
    #[serde(default = "nop_default")]
    nop: u8,
}

/// `slc`, `mlc` or `tlc`, in any case (datasheets write them in capitals).
fn cell_type<'de, D: serde::Deserializer<'de>>(d: D) -> Result<CellType, D::Error> {
    let s = String::deserialize(d)?;
    match s.to_ascii_lowercase().as_str() {
        "slc" => Ok(CellType::Slc),
        "mlc" => Ok(CellType::Mlc),
        "tlc" => Ok(CellType::Tlc),
        _ => Err(serde::de::Error::custom(format!("`{s}` is not a cell type: slc, mlc or tlc"))),
    }
}

fn nop_default() -> u8 {
    1
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TimingToml {
    read_ns: u64,
    program_ns: u64,
    partial_program_ns: Option<u64>,
    erase_ns: u64,
    transfer_ns_per_kib: u64,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct FtlToml {
    overprovision_pct: Option<u32>,
    gc_policy: Option<GcPolicy>,
    gc_low_blocks: Option<u32>,
    gc_high_blocks: Option<u32>,
    checkpoint_every_pages: Option<u64>,
    wear_spread_max: Option<u32>,
}

/// Reads the device file at `path`.
pub fn load(path: &Path) -> Result<DeviceFile, DeviceFileError> {
    let (label, stem) = label_and_stem("config", path);
    let text = read(&label, path)?;
    let mut file = parse(&text, &label, &stem)?;
    file.option = format!("--config {}", path.display());
    Ok(file)
}

/// A parser's message on one line.
fn one_line(message: &str) -> String {
    message
        .trim_end()
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("; ")
}

/// 1-based line of byte offset `at` in `text`.
fn line_of(text: &str, at: usize) -> usize {
    text.as_bytes()[..at.min(text.len())].iter().filter(|&&b| b == b'\n').count() + 1
}

/// The device `text` describes; `label` names the file in errors, `stem` is
/// the device's name unless the file gives one.
pub(super) fn parse(text: &str, label: &str, stem: &str) -> Result<DeviceFile, DeviceFileError> {
    let at = |span: Option<std::ops::Range<usize>>| span.map(|s| format!(" (line {})", line_of(text, s.start))).unwrap_or_default();
    // Syntax first, so that "not TOML" reads as such and not as a missing field.
    if let Err(e) = text.parse::<toml::Table>() {
        return Err(DeviceFileError::Syntax {
            label: label.to_string(),
            message: format!("not valid TOML: {}{}", one_line(e.message()), at(e.span())),
        });
    }
    let d: DeviceToml = serde_path_to_error::deserialize(toml::Deserializer::new(text)).map_err(|e| {
        let field = e.path().to_string();
        let inner = e.into_inner();
        let problem = format!("{}{}", one_line(inner.message()), at(inner.span()));
        if field.is_empty() || field == "." {
            DeviceFileError::Syntax {
                label: label.to_string(),
                message: problem,
            }
        } else {
            DeviceFileError::Field {
                label: label.to_string(),
                field,
                problem,
            }
        }
    })?;
    let g = &d.geometry;
    let geometry = Geometry {
        channels: g.channels,
        dies_per_channel: g.dies_per_channel,
        planes_per_die: g.planes_per_die,
        blocks_per_plane: g.blocks_per_plane,
        pages_per_block: g.pages_per_block,
        page_size: g.page_size,
        oob_size: g.oob_size,
        cell: g.cell,
        nop: g.nop,
    };
    check_geometry(label, &geometry, |f| format!("geometry.{f}"))?;
    let t = &d.timing;
    let timing = Timing {
        read_ns: t.read_ns,
        program_ns: t.program_ns,
        partial_program_ns: t.partial_program_ns.unwrap_or(t.program_ns),
        erase_ns: t.erase_ns,
        transfer_ns_per_kib: t.transfer_ns_per_kib,
    };
    for (field, value, min) in timing.fields() {
        check_range(label, &format!("timing.{field}"), value, min, LATENCY_NS_MAX)?;
    }
    check_range(label, "endurance", d.endurance, 1, u32::MAX)?;
    let f = &d.ftl;
    if let Some(op) = f.overprovision_pct {
        check_range(label, "ftl.overprovision_pct", op, 0, 99)?;
    }
    if let Some(w) = f.wear_spread_max {
        check_range(label, "ftl.wear_spread_max", w, 1, WEAR_SPREAD_MAX_MAX)?;
    }
    if let (Some(low), Some(high)) = (f.gc_low_blocks, f.gc_high_blocks) {
        if low > 0 && high > 0 && high < low {
            return Err(DeviceFileError::Field {
                label: label.to_string(),
                field: "ftl.gc_high_blocks".into(),
                problem: format!("{high} is below ftl.gc_low_blocks ({low}): GC would stop before it starts"),
            });
        }
    }
    if let Some(name) = &d.name {
        if name.trim().is_empty() {
            return Err(DeviceFileError::Field {
                label: label.to_string(),
                field: "name".into(),
                problem: "must not be empty (leave it out to name the device after the file)".into(),
            });
        }
    }
    let preset = Preset {
        name: Cow::Owned(d.name.clone().unwrap_or_else(|| stem.to_string())),
        models: Cow::Owned(d.models.clone().unwrap_or_else(|| format!("a device from {label}"))),
        source: Cow::Owned(d.source.clone().unwrap_or_else(|| format!("the numbers of {label}"))),
        geometry,
        timing,
        endurance: d.endurance,
    };
    Ok(DeviceFile {
        preset,
        ftl: FtlOptions {
            overprovision_pct: f.overprovision_pct,
            gc_policy: f.gc_policy,
            gc_low_blocks: f.gc_low_blocks,
            gc_low_share: None,
            gc_high_blocks: f.gc_high_blocks,
            checkpoint_every_pages: f.checkpoint_every_pages,
            wear_spread_max: f.wear_spread_max,
        },
        label: label.to_string(),
        option: String::new(),
        warnings: Vec::new(),
    })
}

/// A TOML string literal.
fn quoted(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

/// `p` as a device file that loads back to the identical device (and the
/// FTL's defaults, as on the command line), commented for editing.
pub fn to_toml(p: &Preset) -> String {
    let g = &p.geometry;
    let t = &p.timing;
    let ftl = FtlConfig::default();
    let mut s = String::new();
    let _ = write!(
        s,
        r#"# txftl device file: the `{name}` preset, as `txftl presets --toml {name}` prints it.
# Use it with `--config FILE` on any command that builds a device; edit it to
# describe another device. Every key is described in docs/device-files.md
# ("TOML device files"); unknown keys are refused.

# name = "{name}"   # the device's name [default: the file's stem]
models = {models}
source = {source}
# Erase cycles a block survives; the next erase fails and the block goes bad.
endurance = {endurance}

[geometry]
channels = {channels}
dies_per_channel = {dies}
planes_per_die = {planes}
blocks_per_plane = {blocks}
pages_per_block = {pages}
# Data area of a page, bytes (a multiple of 512).
page_size = {page_size}
# Spare (out-of-band) area of a page, bytes (at least 64: the FTL's OOB record).
oob_size = {oob_size}
# "slc" (partial programs allowed), "mlc" or "tlc" (each page once, in order).
cell = "{cell}"
# Partial programs per page between erases: SLC 1 to 8, MLC and TLC 1 [default: 1].
nop = {nop}

[timing]
# Nanoseconds, 1 to 1,000,000,000 (transfer may be 0).
read_ns = {read}
program_ns = {program}
# SLC partial program [default: program_ns].
partial_program_ns = {partial}
erase_ns = {erase}
# Channel time per KiB moved between controller and die.
transfer_ns_per_kib = {transfer}

[ftl]
# Every key optional; a command-line flag (--overprovision, --gc,
# --wear-spread-max, --checkpoint-every) overrides the file.
# Percent of the data blocks hidden from the host, 0 to 99 [default: 10, raised
# to the minimum GC needs on this geometry; a value given below it is refused].
# overprovision_pct = 10
# GC victim selection: "greedy" or "cost-benefit".
gc_policy = "{gc}"
# GC starts when free blocks fall to this many [0: 5% of the pool, at least 3]
# and stops when they reach the high mark [0: low + 2% of the pool, at least +2].
gc_low_blocks = {gc_low}
gc_high_blocks = {gc_high}
# A mapping checkpoint after this many page programs [0: 8 blocks per die].
checkpoint_every_pages = {ckpt}
# Static wear leveling moves the coldest block's data when the erase-count
# spread exceeds this (1 to 1,000,000).
wear_spread_max = {spread}
"#,
        name = p.name,
        models = quoted(&p.models),
        source = quoted(&p.source),
        endurance = p.endurance,
        channels = g.channels,
        dies = g.dies_per_channel,
        planes = g.planes_per_die,
        blocks = g.blocks_per_plane,
        pages = g.pages_per_block,
        page_size = g.page_size,
        oob_size = g.oob_size,
        cell = match g.cell {
            CellType::Slc => "slc",
            CellType::Mlc => "mlc",
            CellType::Tlc => "tlc",
        },
        nop = g.nop,
        read = t.read_ns,
        program = t.program_ns,
        partial = t.partial_program_ns,
        erase = t.erase_ns,
        transfer = t.transfer_ns_per_kib,
        gc = ftl.gc_policy.name(),
        gc_low = ftl.gc_low_blocks,
        gc_high = ftl.gc_high_blocks,
        ckpt = ftl.checkpoint_every_pages,
        spread = ftl.wear_spread_max,
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use txftl_nand::{preset, PRESET_NAMES};

    #[test]
    fn every_preset_prints_and_loads_back_identical() {
        for name in PRESET_NAMES {
            let p = preset(name).unwrap();
            let f = parse(&to_toml(&p), "config x.toml", "x").unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(f.preset.geometry, p.geometry, "{name}");
            assert_eq!(f.preset.timing, p.timing, "{name}");
            assert_eq!(f.preset.endurance, p.endurance, "{name}");
            assert_eq!((&*f.preset.models, &*f.preset.source), (&*p.models, &*p.source));
            assert_eq!(f.preset.name, "x", "named after the file");
            let d = FtlConfig::default();
            assert_eq!(f.ftl.overprovision_pct, None, "the default, raised to the geometry's minimum");
            assert_eq!(f.ftl.gc_policy, Some(d.gc_policy));
            assert_eq!(f.ftl.wear_spread_max, Some(d.wear_spread_max));
        }
    }

    fn error(text: &str) -> String {
        parse(text, "config dev.toml", "dev").unwrap_err().to_string()
    }

    fn jasmine_with(from: &str, to: &str) -> String {
        let text = to_toml(&preset("jasmine").unwrap());
        assert!(text.contains(from), "{from}");
        text.replacen(from, to, 1)
    }

    #[test]
    fn errors_name_the_file_and_the_field() {
        let e = error(&jasmine_with("pages_per_block = 128", "pages_per_block = 0"));
        assert_eq!(e, "config dev.toml: geometry.pages_per_block: must be at least 1");
        let e = error(&jasmine_with("channels = 4", "chanels = 4"));
        assert!(
            e.starts_with("config dev.toml: geometry.chanels: unknown field `chanels`, expected one of"),
            "{e}"
        );
        assert!(e.contains("(line "), "{e}");
        let e = error(&jasmine_with("cell = \"mlc\"", "cell = \"qlc\""));
        assert!(
            e.starts_with("config dev.toml: geometry.cell: `qlc` is not a cell type: slc, mlc or tlc"),
            "{e}"
        );
        let e = error("endurance = 3\n[geometry\n");
        assert!(
            e.starts_with("config dev.toml: not valid TOML: invalid table header; expected"),
            "{e}"
        );
        assert!(e.ends_with("(line 2)") && !e.contains('\n'), "{e}");
        let e = error(&jasmine_with("endurance = 3000", ""));
        assert!(e.contains("missing field `endurance`"), "{e}");
        let e = error(&jasmine_with("page_size = 8192", "page_size = 1000"));
        assert_eq!(e, "config dev.toml: geometry.page_size: 1000 bytes is not a multiple of 512");
        let e = error(&jasmine_with("oob_size = 448", "oob_size = 32"));
        assert!(e.starts_with("config dev.toml: geometry.oob_size: 32 bytes cannot hold"), "{e}");
        let e = error(&jasmine_with("erase_ns = 1500000", "erase_ns = 0"));
        assert_eq!(e, "config dev.toml: timing.erase_ns: 0 is below the minimum 1");
        let e = error(&jasmine_with("nop = 1", "nop = 2"));
        assert!(e.starts_with("config dev.toml: geometry.nop: 2 is not valid for MLC"), "{e}");
        let e = error(&jasmine_with("# overprovision_pct = 10", "overprovision_pct = 100"));
        assert_eq!(e, "config dev.toml: ftl.overprovision_pct: 100 is above the maximum 99");
        let e = error(&jasmine_with("blocks_per_plane = 128", "blocks_per_plane = -1"));
        assert!(e.starts_with("config dev.toml: geometry.blocks_per_plane: invalid value"), "{e}");
        let e = error(&jasmine_with("gc_high_blocks = 0", "gc_high_blocks = 2").replacen("gc_low_blocks = 0", "gc_low_blocks = 9", 1));
        assert!(e.starts_with("config dev.toml: ftl.gc_high_blocks: 2 is below"), "{e}");
        let e = error(&jasmine_with("gc_policy = \"greedy\"", "gc_policy = \"fifo\""));
        assert!(e.starts_with("config dev.toml: ftl.gc_policy: unknown variant `fifo`"), "{e}");
    }

    #[test]
    fn optional_keys_take_their_defaults() {
        let text = "endurance = 10\n[geometry]\nchannels = 1\ndies_per_channel = 1\nplanes_per_die = 1\n\
                    blocks_per_plane = 64\npages_per_block = 16\npage_size = 4096\noob_size = 64\ncell = \"SLC\"\n\
                    [timing]\nread_ns = 1\nprogram_ns = 7\nerase_ns = 3\ntransfer_ns_per_kib = 0\n";
        let f = parse(text, "config small.toml", "small").unwrap();
        assert_eq!((f.preset.geometry.nop, f.preset.timing.partial_program_ns), (1, 7));
        assert_eq!(f.preset.geometry.cell, CellType::Slc, "in any case");
        assert_eq!(f.ftl, FtlOptions::default());
        assert_eq!(f.preset.name, "small");
    }
}
