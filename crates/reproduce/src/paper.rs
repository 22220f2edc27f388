//! What a reproduced paper provides ([`Paper`]), the options every
//! reproduction takes ([`Options`]) and the report it makes ([`Report`]).

use crate::check::{Check, Summary};
use crate::progress::Progress;
use crate::Error;
use serde::Serialize;

/// How to run a reproduction (`txftl reproduce`'s options).
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// The same experiments, smaller, in under 60 wall seconds (release build).
    pub quick: bool,
    pub seed: u64,
    /// Tests only: every experiment at the smallest sizes that still run it.
    pub tiny: bool,
    /// X-FTL only: the FTL writes its mapping table at every flush (the
    /// paper's firmware; `None`: the paper's default, on). Refused by a
    /// paper it does not apply to.
    pub map_at_flush: Option<bool>,
    /// The host model's profile (`txftl calibrate-host`'s TOML; `None`: the
    /// built-in one). Refused by a paper that runs no SQL on a host.
    pub host_profile: Option<std::path::PathBuf>,
}

impl Options {
    /// Refuses `--host-profile` for a paper whose figures are device time
    /// only (no SQL host in its evaluation).
    pub fn refuse_host_profile(&self) -> Result<(), Error> {
        match &self.host_profile {
            Some(p) => Err(Error::Usage(format!(
                "--host-profile {}: this paper's figures are device time only (its evaluation runs no SQL on a \
                 host: see docs/reproduce/README.md, \"The host model\"): drop it",
                p.display()
            ))),
            None => Ok(()),
        }
    }

    /// The host model of a paper that runs SQL on a host.
    pub fn host_model(&self) -> Result<crate::host::HostModel, Error> {
        crate::host::HostModel::load(self.host_profile.as_deref())
    }

    /// Refuses `--map-at-flush` (X-FTL's paper's firmware) for a paper it
    /// does not apply to; `why` follows the reason in the message.
    pub fn refuse_map_at_flush(&self, why: &str) -> Result<(), Error> {
        match self.map_at_flush {
            Some(on) => Err(Error::Usage(format!(
                "--map-at-flush {} applies to `reproduce xftl` only (the X-FTL paper's firmware){why}: drop it",
                if on { "on" } else { "off" }
            ))),
            None => Ok(()),
        }
    }

    /// `--tiny` with `seed`: what the tests run.
    pub fn tiny(seed: u64) -> Options {
        Options {
            tiny: true,
            seed,
            ..Options::default()
        }
    }
}

/// What every paper's parameters begin with (flattened: `params` in the
/// JSON starts with these fields).
#[derive(Clone, Debug, Default, Serialize)]
pub struct Head {
    /// `--quick`'s sizes (or `--tiny`'s).
    pub quick: bool,
    pub seed: u64,
    /// The device preset, and the device as the run describes it (set by the run).
    pub preset: String,
    pub device: String,
    pub blocks_per_plane: u32,
    /// The host model of a paper measured on a real host (X-FTL, NoLgn-FTL):
    /// its figures show device time and device + host time.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<crate::host::HostModel>,
}

impl Head {
    /// Host time of `w`, seconds (0 without a host model).
    pub fn host_s(&self, w: &txftl_sqlite::host_cost::HostWork) -> f64 {
        self.host.as_ref().map_or(0.0, |h| h.seconds(w))
    }
}

/// One run's report: `--json` prints it as it is.
#[derive(Clone, Debug, Serialize)]
pub struct Report<Params, Figures> {
    pub paper: String,
    pub params: Params,
    pub figures: Figures,
    pub checks: Vec<Check>,
    /// Where ours departs from the paper's setup, and why.
    pub deviations: Vec<String>,
    /// The checks counted and within 25%, the structural ones apart.
    pub summary: Summary,
    /// A paper with a host model: each check whose figure moves with the
    /// host profile, at x0.5, x1 and x2 of every price.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub host_sweep: Vec<crate::check::HostSweep>,
}

/// A paper whose evaluation is reproduced: its parameters, experiments,
/// checks, notes and presentation. [`crate::flow`] runs it.
pub trait Paper {
    /// Everything a run used, all printed (`params` in the JSON).
    type Params: Serialize + Clone;
    /// What the experiments measured (`figures` in the JSON).
    type Figures: Serialize;

    /// The paper's name on the command line: `txftl reproduce <name>`.
    const NAME: &'static str;
    /// Its title, authors and venue.
    const TITLE: &'static str;

    fn name(&self) -> &'static str {
        Self::NAME
    }
    fn title(&self) -> &'static str {
        Self::TITLE
    }
    /// The parameters `opts` ask for; an option the paper does not take is
    /// refused ([`Error::Usage`]).
    fn params(&self, opts: &Options) -> Result<Self::Params, Error>;
    /// The parameters' common head.
    fn head(params: &Self::Params) -> &Head;
    fn head_mut(params: &mut Self::Params) -> &mut Head;
    /// Whether the parameters are `--quick`'s (or `--tiny`'s), and the seed.
    fn quick(&self, params: &Self::Params) -> bool {
        Self::head(params).quick
    }
    fn seed(&self, params: &Self::Params) -> u64 {
        Self::head(params).seed
    }
    /// Runs every experiment (filling in what the parameters learn on the
    /// way, e.g. the device's description), reporting on `progress`.
    fn run(&self, params: &mut Self::Params, progress: &Progress) -> Result<Self::Figures, Error>;
    /// Every number of the paper the experiments speak to, beside ours.
    fn checks(&self, params: &Self::Params, figures: &Self::Figures) -> Vec<Check>;
    /// Writes the note of every check that [differs](Check::differs), from
    /// this run's measurements, and returns the deviations.
    fn explain(&self, params: &Self::Params, figures: &Self::Figures, checks: &mut [Check]) -> Vec<String>;
    /// The terminal's tables of the figures (the checks follow, printed by the flow).
    fn print(&self, report: &Report<Self::Params, Self::Figures>);
    /// The HTML report's introduction (HTML, escaped), its tables (HTML)
    /// and its figures.
    fn html_intro(&self, report: &Report<Self::Params, Self::Figures>) -> String;
    fn html_tables(&self, report: &Report<Self::Params, Self::Figures>) -> String;
    fn html_figures(&self, report: &Report<Self::Params, Self::Figures>) -> Vec<crate::html::Figure>;
    /// Whether the run failed (a broken database, a replay the device
    /// failed): the command then exits non-zero after its report.
    fn failed(&self, figures: &Self::Figures) -> bool;
}

/// The parameters of a paper that takes no option of its own: `Params::new`
/// from `--quick` and the seed, `tiny()` for the tests, `--map-at-flush`
/// refused (X-FTL's; `$why` follows the reason). Expanded inside the
/// paper's `impl Paper`, where `Params` resolves.
macro_rules! paper_params {
    ($why:expr) => {
        /// `--map-at-flush` is X-FTL's (its paper's firmware): refused here.
        fn params(&self, opts: &$crate::paper::Options) -> Result<Self::Params, $crate::Error> {
            opts.refuse_map_at_flush($why)?;
            opts.refuse_host_profile()?;
            let mut params = Params::new(opts.quick, opts.seed);
            if opts.tiny {
                params.tiny();
            }
            Ok(params)
        }
    };
}
pub(crate) use paper_params;

/// The report's head and the six views every paper draws with its own
/// modules of the same names (`checks`, `explain`, `print`, `figures`):
/// written once here, expanded inside each paper's `impl Paper` (the paths
/// resolve in the paper's module).
macro_rules! paper_views {
    () => {
        fn head(params: &Self::Params) -> &$crate::paper::Head {
            &params.head
        }
        fn head_mut(params: &mut Self::Params) -> &mut $crate::paper::Head {
            &mut params.head
        }
        fn checks(&self, params: &Self::Params, figures: &Self::Figures) -> Vec<$crate::Check> {
            checks::checks(params, figures)
        }
        fn explain(&self, params: &Self::Params, figures: &Self::Figures, checks: &mut [$crate::Check]) -> Vec<String> {
            explain::explain(params, figures, checks)
        }
        fn print(&self, report: &$crate::Report<Self::Params, Self::Figures>) {
            print::print(report)
        }
        fn html_intro(&self, report: &$crate::Report<Self::Params, Self::Figures>) -> String {
            figures::intro(report)
        }
        fn html_tables(&self, report: &$crate::Report<Self::Params, Self::Figures>) -> String {
            figures::tables(report)
        }
        fn html_figures(&self, report: &$crate::Report<Self::Params, Self::Figures>) -> Vec<$crate::html::Figure> {
            figures::figures(report)
        }
    };
}
pub(crate) use paper_views;
