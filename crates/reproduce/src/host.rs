//! The host model of the reproductions that run SQLite on a host (X-FTL's
//! and NoLgn-FTL's papers measured a real one): declared, shown beside the
//! device time, never replacing it (docs/reproduce/README.md, "The host
//! model").
//!
//! - One clean-page cache for every SQLite reproduction:
//!   [`READ_CACHE_BYTES`] of the host's DRAM keeps file pages read or
//!   written, as a Linux page cache does.
//! - Host time: the run's host work (`txftl_sqlite::host_cost::HostWork`:
//!   statements, SQLite VM operations, system calls, bytes copied) priced by
//!   a profile `txftl calibrate-host` measured (`host-profile.toml` in this
//!   crate, or `--host-profile FILE`), times a scale: the checks are
//!   computed at x1 and again at x0.5 and x2 ([`SWEEP`]) to show how each
//!   moves with the profile.

use crate::Error;
use serde::Serialize;
use std::path::Path;
use txftl_sqlite::host_cost::{HostProfile, HostWork};

/// The host's clean-page cache: 256 MiB, whatever the page size. No paper
/// gives its host's memory; a host of a few GiB keeps the databases' hot
/// pages in its page cache (every read of a page SQLite's own cache dropped
/// would otherwise reach the flash, which no Linux host does).
pub const READ_CACHE_BYTES: usize = 256 << 20;

/// The cache in pages of `page_size` bytes.
pub fn read_cache_pages(page_size: usize) -> usize {
    READ_CACHE_BYTES / page_size.max(1)
}

/// The profile's scales the checks are computed at besides x1.
pub const SWEEP: [f64; 2] = [0.5, 2.0];

/// The profile measured on the project's machine, as `txftl
/// calibrate-host` printed it.
pub const BUILTIN_PROFILE: &str = include_str!("../host-profile.toml");

/// The host model a run used (printed in `params`).
#[derive(Clone, Debug, Serialize)]
pub struct HostModel {
    pub profile: HostProfile,
    /// Every price multiplied by this (1; 0.5 and 2 for the sweep).
    pub scale: f64,
    pub read_cache_bytes: usize,
    /// Where the profile was read from.
    pub profile_file: String,
}

impl HostModel {
    /// The built-in profile, or the one in `path`.
    pub fn load(path: Option<&Path>) -> Result<HostModel, Error> {
        let (text, from) = match path {
            Some(p) => (
                std::fs::read_to_string(p).map_err(|e| Error::Usage(format!("--host-profile {}: {e}", p.display())))?,
                p.display().to_string(),
            ),
            None => (
                BUILTIN_PROFILE.to_string(),
                "crates/reproduce/host-profile.toml (built in)".to_string(),
            ),
        };
        let profile: HostProfile = toml::from_str(&text).map_err(|e| Error::Usage(format!("host profile {from}: {e}")))?;
        profile.check().map_err(|e| Error::Usage(format!("{from}: {e}")))?;
        Ok(HostModel {
            profile,
            scale: 1.0,
            read_cache_bytes: READ_CACHE_BYTES,
            profile_file: from,
        })
    }

    /// Host time of `w`, seconds, at this model's scale.
    pub fn seconds(&self, w: &HostWork) -> f64 {
        self.profile.ns(w, self.scale) / 1e9
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_builtin_profile_loads_and_a_bad_one_is_refused() {
        let m = HostModel::load(None).unwrap();
        assert!(m.profile.statement_ns > 0.0 && m.profile.syscall_ns > 0.0, "{m:?}");
        assert!(!m.profile.source.is_empty());
        let dir = std::env::temp_dir().join(format!("txftl-host-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let bad = dir.join("bad.toml");
        std::fs::write(&bad, BUILTIN_PROFILE.replace("syscall_ns =", "syscall_ns = -1.0 #")).unwrap();
        let e = HostModel::load(Some(&bad)).unwrap_err().to_string();
        assert!(e.contains("syscall_ns"), "{e}");
        std::fs::write(&bad, "statement_ns = 1.0\n").unwrap();
        assert!(HostModel::load(Some(&bad)).is_err());
        assert!(HostModel::load(Some(&dir.join("missing.toml"))).is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn one_cache_size_for_every_page_size() {
        assert_eq!(read_cache_pages(4096), 65_536);
        assert_eq!(read_cache_pages(8192), 32_768);
    }
}
