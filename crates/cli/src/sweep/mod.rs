//! `txftl sweep GRID.toml`: a grid of protocols x parameters x seeds, each
//! cell one txftl invocation, run on every core; results appended to a
//! resumable JSONL file, summarised as a table, a CSV and an HTML page.
//! `--emit-cells` and `--run-cell` let a driver outside (Dask, Ray: see
//! `tools/`) run the same cells on other machines; `--compare` checks two
//! results files agree cell by cell.

mod grid;
mod pool;
mod report;

use crate::CliError;
use clap::Args;
use grid::{Cell, Grid};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct SweepArgs {
    /// The grid (TOML; examples/sweeps/ has some, docs/sweep.md the format).
    #[arg(required_unless_present_any = ["run_cell", "compare"])]
    pub grid: Option<PathBuf>,
    /// Cells run at once [default: every core].
    #[arg(long, conflicts_with_all = ["emit_cells", "run_cell", "compare", "report_only"], value_parser = clap::value_parser!(u32).range(1..))]
    pub jobs: Option<u32>,
    /// Directory of results.jsonl, summary.csv, report.html and each cell's
    /// output [default: sweep-NAME, NAME the grid's].
    #[arg(long, conflicts_with_all = ["emit_cells", "run_cell", "compare"])]
    pub out: Option<PathBuf>,
    /// Print the grid's cells, one JSON a line, and run nothing (for a driver).
    #[arg(long, requires = "grid")]
    pub emit_cells: bool,
    /// Run one cell given as JSON (a line of --emit-cells) in FILE, `-` for
    /// standard input, and print its result line.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["grid", "compare"])]
    pub run_cell: Option<PathBuf>,
    /// Compare two results files cell by cell (status, exit code, metrics;
    /// wall time aside); exit 1 if they differ.
    #[arg(long, num_args = 2, value_names = ["A", "B"], conflicts_with = "grid")]
    pub compare: Option<Vec<PathBuf>>,
    /// Write the table, CSV and page of the results in --out and run
    /// nothing (a driver's last step; cells not run yet are left out).
    #[arg(long, requires = "grid", conflicts_with = "emit_cells")]
    pub report_only: bool,
    /// No progress bar.
    #[arg(long, conflicts_with_all = ["emit_cells", "run_cell", "compare"])]
    pub quiet: bool,
}

pub fn run(a: SweepArgs) -> Result<ExitCode, CliError> {
    if let Some(path) = &a.run_cell {
        return run_one(path);
    }
    if let Some(files) = &a.compare {
        return compare(&files[0], &files[1]);
    }
    let path = a.grid.as_ref().expect("clap requires a grid otherwise");
    let text = std::fs::read_to_string(path).map_err(|e| CliError::Usage(format!("{}: {e}", path.display())))?;
    let stem = path.file_stem().map_or("grid".into(), |s| s.to_string_lossy().into_owned());
    let grid = Grid::parse(&text, &stem).map_err(|e| CliError::Usage(format!("{}: {e}", path.display())))?;
    if a.emit_cells {
        for c in &grid.cells {
            println!("{}", serde_json::to_string(c).map_err(CliError::failed)?);
        }
        return Ok(ExitCode::SUCCESS);
    }
    run_grid(&a, &grid)
}

fn exe() -> Result<PathBuf, CliError> {
    std::env::current_exe().map_err(|e| CliError::Failed(format!("finding the txftl executable: {e}")))
}

fn run_one(path: &Path) -> Result<ExitCode, CliError> {
    let mut text = String::new();
    let read = if path.as_os_str() == "-" {
        std::io::stdin().read_to_string(&mut text).map(|_| ())
    } else {
        std::fs::read_to_string(path).map(|t| text = t)
    };
    read.map_err(|e| CliError::Usage(format!("{}: {e}", path.display())))?;
    let cell: Cell = serde_json::from_str(text.trim()).map_err(|e| CliError::Usage(format!("not a cell (a line of --emit-cells): {e}")))?;
    let rec = pool::run_cell(&exe()?, &cell, None);
    println!("{}", serde_json::to_string(&rec).map_err(CliError::failed)?);
    Ok(ExitCode::SUCCESS)
}

fn compare(a: &Path, b: &Path) -> Result<ExitCode, CliError> {
    let (ra, rb) = (pool::load(a).map_err(CliError::Usage)?, pool::load(b).map_err(CliError::Usage)?);
    let mut diffs = Vec::new();
    for (cell, x) in &ra {
        match rb.get(cell) {
            None => diffs.push(format!("cell {cell} only in {}", a.display())),
            Some(y) if x.measured() != y.measured() => diffs.push(format!(
                "cell {cell} ({} {}): {} {:?} {:?} / {} {:?} {:?}",
                x.run.command.join(" "),
                x.run.args.join(" "),
                x.status,
                x.exit,
                x.metrics,
                y.status,
                y.exit,
                y.metrics
            )),
            Some(_) => {}
        }
    }
    diffs.extend(
        rb.keys()
            .filter(|c| !ra.contains_key(*c))
            .map(|c| format!("cell {c} only in {}", b.display())),
    );
    if diffs.is_empty() {
        println!("{} cells, identical in status, exit code and metrics", ra.len());
        return Ok(ExitCode::SUCCESS);
    }
    for d in &diffs {
        println!("{d}");
    }
    Err(CliError::Failed(format!(
        "{} of {} cells differ",
        diffs.len(),
        ra.len().max(rb.len())
    )))
}

fn run_grid(a: &SweepArgs, grid: &Grid) -> Result<ExitCode, CliError> {
    let out = a.out.clone().unwrap_or_else(|| PathBuf::from(format!("sweep-{}", grid.name)));
    let cell_dir = out.join("cells");
    std::fs::create_dir_all(&cell_dir).map_err(|e| CliError::Failed(format!("{}: {e}", cell_dir.display())))?;
    let results = out.join("results.jsonl");
    let done = pool::load(&results).map_err(CliError::Failed)?;
    let todo: Vec<Cell> = grid
        .cells
        .iter()
        .filter(|c| !done.get(&c.run.cell).is_some_and(|r| r.ok()))
        .cloned()
        .collect();
    let jobs = a.jobs.map_or_else(crate::every_core, |j| j as usize);
    let ok_before = grid.cells.iter().filter(|c| done.get(&c.run.cell).is_some_and(|r| r.ok())).count();
    eprintln!(
        "sweep {}: {} cells, {ok_before} done before, {} to run on {jobs} workers; results in {}",
        grid.name,
        grid.cells.len(),
        todo.len(),
        results.display()
    );
    let bar = pool::progress_bar(a.quiet);
    let start = std::time::Instant::now();
    let ran = todo.len();
    pool::run_all(&exe()?, todo, jobs, &results, &cell_dir, &bar).map_err(CliError::Failed)?;
    bar.finish_and_clear();
    let wall = start.elapsed().as_secs_f64();
    let all = pool::load(&results).map_err(CliError::Failed)?;
    let records = report::of_grid(grid, &all);
    let failed = records.iter().filter(|r| !r.ok()).count();
    println!("{}", report::terminal(grid, &records));
    let write = |name: &str, text: String| {
        let p = out.join(name);
        std::fs::write(&p, text).map_err(|e| CliError::Failed(format!("{}: {e}", p.display())))
    };
    write("summary.csv", report::csv(grid, &records))?;
    write("report.html", report::html(grid, &records))?;
    println!(
        "{} cells ({failed} failed); {ran} run now in {wall:.1} s of wall time on {jobs} workers; {} and {}",
        records.len(),
        out.join("summary.csv").display(),
        out.join("report.html").display()
    );
    if failed > 0 {
        return Err(CliError::Failed(format!(
            "{failed} cells failed (their errors are in {}; rerun to retry them)",
            results.display()
        )));
    }
    Ok(ExitCode::SUCCESS)
}
