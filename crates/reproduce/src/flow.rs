//! The run → checks → notes → print / JSON / HTML flow, once for every
//! [`Paper`].

use crate::check::{HostSweep, Summary};
use crate::paper::{Options, Paper, Report};
use crate::progress::Progress;
use crate::wrapln;
use crate::{flagcommit, html, lighttx, mobius, nolgn, terminal, xftl, Error};
use std::path::{Path, PathBuf};

/// A reproduced paper, as `txftl reproduce` lists it: the one place a new
/// paper registers (the command's argument, [`reproduce_named`] and the
/// report smoke test derive from [`PAPERS`]).
pub struct PaperEntry {
    /// [`Paper::NAME`].
    pub name: &'static str,
    /// [`Paper::TITLE`].
    pub title: &'static str,
    /// [`reproduce`] of the paper.
    pub reproduce: fn(&Options, &Output) -> Result<Outcome, Error>,
}

impl PaperEntry {
    const fn of<P: Paper + Default>() -> PaperEntry {
        PaperEntry {
            name: P::NAME,
            title: P::TITLE,
            reproduce: |opts, out| reproduce(&P::default(), opts, out),
        }
    }
}

/// Every paper `txftl reproduce` reruns, in the order the help lists them.
pub static PAPERS: &[PaperEntry] = &[
    PaperEntry::of::<xftl::Xftl>(),
    PaperEntry::of::<lighttx::LightTx>(),
    PaperEntry::of::<mobius::Mobius>(),
    PaperEntry::of::<flagcommit::FlagCommit>(),
    PaperEntry::of::<nolgn::NoLgn>(),
];

/// The names of [`PAPERS`], as the command line takes them.
pub fn paper_names() -> Vec<&'static str> {
    PAPERS.iter().map(|p| p.name).collect()
}

/// Where a reproduction's report goes.
#[derive(Clone, Debug, Default)]
pub struct Output {
    /// Print the report as JSON instead of the terminal's tables.
    pub json: bool,
    /// Also write the HTML report there.
    pub html: Option<PathBuf>,
    /// Draw a progress bar on standard error while the experiments run.
    pub show_progress: bool,
}

/// What a reproduction that ran came to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Outcome {
    /// The run failed (see [`Paper::failed`]); its report was still printed.
    pub failed: bool,
}

/// Runs the paper's experiments, then its checks and their notes: the report.
pub fn build<P: Paper>(paper: &P, opts: &Options, show_progress: bool) -> Result<Report<P::Params, P::Figures>, Error> {
    let params = paper.params(opts)?;
    build_with(paper, params, show_progress)
}

fn build_with<P: Paper>(paper: &P, mut params: P::Params, show_progress: bool) -> Result<Report<P::Params, P::Figures>, Error> {
    let progress = Progress::new(show_progress, 0)?;
    let figures = paper.run(&mut params, &progress)?;
    progress.finish();
    let mut checks = paper.checks(&params, &figures);
    let deviations = paper.explain(&params, &figures, &mut checks);
    let summary = Summary::of(&checks);
    let host_sweep = host_sweep(paper, &params, &figures, &checks);
    Ok(Report {
        paper: paper.title().into(),
        params,
        figures,
        checks,
        deviations,
        summary,
        host_sweep,
    })
}

/// A paper with a host model: its checks computed again with every host
/// price at each scale of [`crate::host::SWEEP`], the figures that move.
fn host_sweep<P: Paper>(paper: &P, params: &P::Params, figures: &P::Figures, checks: &[crate::Check]) -> Vec<HostSweep> {
    if P::head(params).host.is_none() {
        return Vec::new();
    }
    let at: Vec<(f64, Vec<crate::Check>)> = crate::host::SWEEP
        .iter()
        .map(|&scale| {
            let mut p = params.clone();
            if let Some(h) = P::head_mut(&mut p).host.as_mut() {
                h.scale = scale;
            }
            (scale, paper.checks(&p, figures))
        })
        .collect();
    HostSweep::of(checks, &at)
}

/// `txftl reproduce <paper>`: checks the options (and that the HTML report
/// can be written) before the run, runs, and prints the report to standard
/// output as `out` asks.
pub fn reproduce<P: Paper>(paper: &P, opts: &Options, out: &Output) -> Result<Outcome, Error> {
    let wall = std::time::Instant::now();
    let params = paper.params(opts)?;
    if let Some(path) = &out.html {
        check_writable(path)?;
    }
    let report = build_with(paper, params, out.show_progress)?;
    if out.json {
        println!("{}", serde_json::to_string_pretty(&report).map_err(Error::failed)?);
    } else {
        print(paper, &report);
        wrapln!("wall time: {:.1} s", wall.elapsed().as_secs_f64());
    }
    if let Some(path) = &out.html {
        std::fs::write(path, html_page(paper, &report)?).map_err(|e| Error::Failed(format!("{}: {e}", path.display())))?;
        if !out.json {
            wrapln!("HTML report: {}", path.display());
        }
    }
    Ok(Outcome {
        failed: paper.failed(&report.figures),
    })
}

/// [`reproduce`] of the paper named `name` (one of [`PAPERS`]).
pub fn reproduce_named(name: &str, opts: &Options, out: &Output) -> Result<Outcome, Error> {
    match PAPERS.iter().find(|p| p.name == name) {
        Some(p) => (p.reproduce)(opts, out),
        None => Err(Error::Usage(format!(
            "reproduce {name}: no such paper (the papers: {})",
            paper_names().join(", ")
        ))),
    }
}

/// The terminal report: the header, the paper's tables, then the checks,
/// their notes and the deviations.
pub fn print<P: Paper>(paper: &P, report: &Report<P::Params, P::Figures>) {
    wrapln!(
        "txftl reproduce {}{}: {} (seed {})",
        paper.name(),
        if paper.quick(&report.params) { " --quick" } else { "" },
        report.paper,
        paper.seed(&report.params)
    );
    paper.print(report);
    print!(
        "{}",
        terminal::checks_section(&report.checks, &report.deviations, terminal::width())
    );
    print!(
        "{}",
        terminal::host_sweep_section(&report.host_sweep, &report.checks, terminal::width())
    );
}

/// The self-contained HTML report.
pub fn html_page<P: Paper>(paper: &P, report: &Report<P::Params, P::Figures>) -> Result<String, Error> {
    let params_json = serde_json::to_string_pretty(&report.params).map_err(Error::failed)?;
    Ok(html::page(
        &format!(
            "txftl reproduce {}{}",
            paper.name(),
            if paper.quick(&report.params) { " --quick" } else { "" }
        ),
        &paper.html_intro(report),
        &paper.html_figures(report),
        &format!("<h2>Tables</h2>{}", paper.html_tables(report)),
        (&report.checks, &report.host_sweep),
        &params_json,
        &report.deviations,
    ))
}

/// Checks that a report can be written at `path` before the (long) run, not
/// after it: an existing file is opened for writing (not truncated yet), a
/// new one is created and removed again. A path that cannot be written is a
/// bad argument.
pub fn check_writable(path: &Path) -> Result<(), Error> {
    let bad = |e: std::io::Error| Error::Usage(format!("--html {}: cannot write there: {e}", path.display()));
    if path.exists() {
        std::fs::OpenOptions::new().append(true).open(path).map_err(bad)?;
    } else {
        std::fs::File::create(path).map_err(bad)?;
        let _ = std::fs::remove_file(path);
    }
    Ok(())
}
