//! A personality's parameters: Filebench's own defaults (its
//! `workloads/fileserver.f` and `webserver.f`), each overridable.

use serde::Serialize;

/// Filebench's two personalities that Möbius's paper ran (its Fig. 9).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Personality {
    /// Per loop: createfile, writewholefile, closefile, openfile,
    /// appendfilerand, closefile, openfile, readwholefile, closefile,
    /// deletefile, statfile (11 flowops).
    Fileserver,
    /// Per loop: ten times openfile, readwholefile, closefile over the file
    /// set, then appendfilerand to the log file (31 flowops).
    Webserver,
}

impl Personality {
    pub const ALL: [Personality; 2] = [Personality::Fileserver, Personality::Webserver];

    pub fn name(self) -> &'static str {
        match self {
            Personality::Fileserver => "fileserver",
            Personality::Webserver => "webserver",
        }
    }

    pub fn parse(s: &str) -> Option<Personality> {
        Personality::ALL.into_iter().find(|p| p.name() == s)
    }
}

/// A run's parameters, named as in Filebench's personality files.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Spec {
    pub personality: Personality,
    /// `$nfiles`: entries of the file set.
    pub nfiles: u32,
    /// `$meandirwidth`: entries per directory.
    pub meandirwidth: u32,
    /// `$filesize`: a gamma distribution of this mean, bytes ...
    pub filesize_mean: u64,
    /// ... and this shape (Filebench's `cvar-gamma` `gamma` parameter).
    pub filesize_gamma: f64,
    /// `prealloc`: percent of the entries created, with their data, before the run.
    pub prealloc_pct: u32,
    /// `$iosize`: bytes per read or write call of the whole-file flowops.
    pub iosize: u64,
    /// `$meanappendsize`: appendfilerand appends 1 to this many bytes, uniformly.
    pub meanappendsize: u64,
    /// Iterations of the personality's flowop list (Filebench runs for
    /// `$runtime` seconds; a count keeps the run deterministic).
    pub loops: u64,
    /// Seed of the run's draws (ChaCha8).
    pub seed: u64,
}

impl Spec {
    /// Filebench's `fileserver.f`: 10,000 files of 128 KiB mean in
    /// directories of 20, 80% preallocated, 1 MiB I/O, 16 KiB appends.
    pub fn fileserver() -> Spec {
        Spec {
            personality: Personality::Fileserver,
            nfiles: 10_000,
            meandirwidth: 20,
            filesize_mean: 128 << 10,
            filesize_gamma: 1.5,
            prealloc_pct: 80,
            iosize: 1 << 20,
            meanappendsize: 16 << 10,
            loops: 2_000,
            seed: 1,
        }
    }

    /// Filebench's `webserver.f`: 1,000 files of 16 KiB mean in directories
    /// of 20, all preallocated, one log file, 1 MiB I/O, 16 KiB appends.
    pub fn webserver() -> Spec {
        Spec {
            personality: Personality::Webserver,
            nfiles: 1_000,
            meandirwidth: 20,
            filesize_mean: 16 << 10,
            filesize_gamma: 1.5,
            prealloc_pct: 100,
            iosize: 1 << 20,
            meanappendsize: 16 << 10,
            loops: 2_000,
            seed: 1,
        }
    }

    pub fn of(p: Personality) -> Spec {
        match p {
            Personality::Fileserver => Spec::fileserver(),
            Personality::Webserver => Spec::webserver(),
        }
    }

    /// Refuses parameters the run cannot use.
    pub fn validate(&self) -> Result<(), String> {
        let bad = |what: &str| Err(format!("filebench {}: {what}", self.personality.name()));
        if self.nfiles == 0 {
            return bad("nfiles must be at least 1");
        }
        if self.meandirwidth < 2 {
            return bad("meandirwidth must be at least 2");
        }
        if self.filesize_mean == 0 || !(self.filesize_gamma > 0.0 && self.filesize_gamma.is_finite()) {
            return bad("the file size needs a mean of at least 1 byte and a positive gamma");
        }
        if self.prealloc_pct > 100 {
            return bad("prealloc is a percent (0 to 100)");
        }
        if self.personality == Personality::Webserver && self.prealloc_pct == 0 {
            return bad("the webserver reads its file set: prealloc must be above 0");
        }
        if self.iosize == 0 || self.meanappendsize == 0 {
            return bad("iosize and meanappendsize must be at least 1 byte");
        }
        Ok(())
    }
}
