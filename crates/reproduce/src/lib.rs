//! txftl-reproduce: the seed papers' evaluations rerun on txftl, each beside
//! the paper's numbers (REPRODUCE.md): per figure or table of the paper a
//! table of what we measured, the checks (every headline number of the paper
//! the experiments speak to, with its kind: value, bound, order, structural),
//! the notes (the measured reason where ours differs, computed from the same
//! run) and the deviations; printed for the terminal, as JSON, or as a
//! self-contained HTML report with SVG figures.
//!
//! One folder per paper ([`xftl`], [`lighttx`], [`mobius`]), each implementing [`Paper`];
//! the run → checks → notes → print / JSON / HTML flow is written once,
//! generic over it ([`flow`]). `txftl reproduce <paper>` is a thin command
//! over [`flow::reproduce_named`].
//!
//! ```no_run
//! use txftl_reproduce::{flow, Options};
//! let report = flow::build(&txftl_reproduce::lighttx::LightTx, &Options::tiny(1), false).unwrap();
//! println!("{}", report.summary.line);
//! ```

pub mod check;
pub mod device;
pub mod flagcommit;
pub mod flow;
pub mod fmt;
pub mod host;
pub mod html;
pub mod lighttx;
pub mod mobius;
pub mod nolgn;
pub mod paper;
pub mod parallel;
pub mod progress;
pub mod terminal;
pub mod tpcc_trace;
pub mod xftl;

pub use check::{Check, Class, Kind, Summary, Unit};
pub use paper::{Options, Paper, Report};
pub use progress::Progress;

/// Why a reproduction did not run: the caller's options (a bad argument:
/// an option the paper does not take, a device too large for the machine,
/// an HTML path that cannot be written) or the run itself.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{0}")]
    Usage(String),
    #[error("{0}")]
    Failed(String),
}

impl Error {
    pub fn failed(e: impl std::fmt::Display) -> Error {
        Error::Failed(e.to_string())
    }
}
