//! Devices from a file: a TOML device file (`--config`, schema in
//! [`schema`]) or MQSim's `ssdconfig.xml` (`--mqsim-config`, importer in
//! [`mqsim`]). Loading gives the flash array as a [`Preset`] and the FTL
//! options the file sets; the command line's flags apply on top of both
//! (`setup::resolve_device`).
//!
//! Every problem is a [`DeviceFileError`] naming the file and the field.

mod mqsim;
mod schema;

pub use mqsim::load as load_mqsim;
pub use schema::{load as load_toml, to_toml};

use std::path::Path;
use txftl_ftl::GcPolicy;
use txftl_nand::{Geometry, GeometryError, Preset};

/// A device read from a file.
#[derive(Clone, Debug)]
pub struct DeviceFile {
    pub preset: Preset,
    pub ftl: FtlOptions,
    /// How messages name the file: `config dev.toml`, `mqsim ssdconfig.xml`.
    pub label: String,
    /// The option that loads it again, for replay command lines: `--config dev.toml`.
    pub option: String,
    /// What the user should know about the import, one line each, printed on
    /// standard error (MQSim fields with no counterpart, approximations).
    pub warnings: Vec<String>,
}

/// The FTL options a device file sets; `None` leaves the command line's
/// flag, or the FTL's default, in charge.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FtlOptions {
    pub overprovision_pct: Option<u32>,
    pub gc_policy: Option<GcPolicy>,
    /// GC's low watermark in blocks (0: the FTL derives it).
    pub gc_low_blocks: Option<u32>,
    /// GC's low watermark as a share of the device's blocks (MQSim's
    /// `GC_Exec_Threshold`): turned into blocks once the geometry is final,
    /// so `--blocks-per-plane` scales it.
    pub gc_low_share: Option<f64>,
    pub gc_high_blocks: Option<u32>,
    pub checkpoint_every_pages: Option<u64>,
    pub wear_spread_max: Option<u32>,
}

/// A device file that cannot describe a device. Exit code 2 on the command line.
#[derive(Debug, thiserror::Error)]
pub enum DeviceFileError {
    /// The file cannot be read.
    #[error("{label}: cannot read it: {source}")]
    Read { label: String, source: std::io::Error },
    /// Not TOML, not XML, or not the kind of file the option takes.
    #[error("{label}: {message}")]
    Syntax { label: String, message: String },
    /// A field that is missing, unknown, of the wrong type or out of range.
    #[error("{label}: {field}: {problem}")]
    Field { label: String, field: String, problem: String },
}

/// Largest latency a file may give an operation (and a KiB of transfer).
pub use txftl_nand::LATENCY_NS_MAX;
/// Largest static wear-leveling threshold (erase-count spread): far above any
/// endurance, small enough for the FTL's arithmetic on erase counts.
pub const WEAR_SPREAD_MAX_MAX: u32 = 1_000_000;

/// The file's label and its stem (the device's default name).
fn label_and_stem(kind: &str, path: &Path) -> (String, String) {
    let label = format!("{kind} {}", path.display());
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "device".to_string());
    (label, stem)
}

fn read(label: &str, path: &Path) -> Result<String, DeviceFileError> {
    std::fs::read_to_string(path).map_err(|source| DeviceFileError::Read {
        label: label.to_string(),
        source,
    })
}

/// Which field of a [`Geometry`] a validation error is about (by our names),
/// and what is wrong with it.
fn geometry_problem(e: &GeometryError) -> (&'static str, String) {
    match e {
        GeometryError::Zero(field) => (field, "must be at least 1".into()),
        GeometryError::PageSize(v) => ("page_size", format!("{v} bytes is not a multiple of 512")),
        GeometryError::OobSize(v) => ("oob_size", format!("{v} bytes is below the 16-byte minimum")),
        GeometryError::Nop { nop, cell } => (
            "nop",
            format!("{nop} is not valid for {cell} cells (SLC allows 1 to 8, MLC and TLC exactly 1)"),
        ),
        GeometryError::TooLarge(pages) => (
            "blocks_per_plane",
            format!("the device would have {pages} pages, more than the 2^31 a 32-bit page number addresses"),
        ),
    }
}

/// Checks a geometry read from a file: [`Geometry::validate`], and an OOB
/// large enough for the FTL's record. `field` names our field as the file
/// spells it (`geometry.pages_per_block`, `Page_No_Per_Block`).
fn check_geometry(label: &str, g: &Geometry, field: impl Fn(&str) -> String) -> Result<(), DeviceFileError> {
    let bad = |name: &str, problem: String| DeviceFileError::Field {
        label: label.to_string(),
        field: field(name),
        problem,
    };
    if let Err(e) = g.validate() {
        let (name, problem) = geometry_problem(&e);
        return Err(bad(name, problem));
    }
    let record = txftl_ftl::oob::OOB_RECORD_SIZE as u32;
    if g.oob_size < record {
        return Err(bad(
            "oob_size",
            format!("{} bytes cannot hold the FTL's {record}-byte OOB record", g.oob_size),
        ));
    }
    Ok(())
}

/// `value` must lie in `min..=max`.
fn check_range<T: PartialOrd + std::fmt::Display>(label: &str, field: &str, value: T, min: T, max: T) -> Result<(), DeviceFileError> {
    if value < min || value > max {
        let problem = if value < min {
            format!("{value} is below the minimum {min}")
        } else {
            format!("{value} is above the maximum {max}")
        };
        return Err(DeviceFileError::Field {
            label: label.to_string(),
            field: field.to_string(),
            problem,
        });
    }
    Ok(())
}
