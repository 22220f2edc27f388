//! Running cells: each one a txftl process (this executable) whose JSON
//! output gives the cell's metrics; on every core, workers taking the next
//! cell from one shared queue as they free up; every result appended to
//! the results file as it comes, so a stopped sweep resumes where it was.

use super::grid::{Cell, Invocation};
use indicatif::{ProgressBar, ProgressStyle};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::{BTreeMap, VecDeque};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Mutex};
use std::time::Instant;

/// How long a cell took: wall time, kept apart from what the cell measured
/// (which is deterministic from its seed; this is not).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Wall {
    pub seconds: f64,
}

/// One line of the results file.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Record {
    #[serde(flatten)]
    pub run: Invocation,
    /// `ok`: the exit code expected and every metric found; else `failed`.
    pub status: String,
    pub exit: Option<i32>,
    pub metrics: BTreeMap<String, Value>,
    pub error: Option<String>,
    pub wall: Wall,
}

impl Record {
    pub fn ok(&self) -> bool {
        self.status == "ok"
    }
    /// The record without its wall time: what two runs of a cell must agree on.
    pub fn measured(&self) -> Record {
        Record {
            wall: Wall { seconds: 0.0 },
            ..self.clone()
        }
    }
}

/// What a process's standard error says went wrong, for the record: from
/// its last `error:` on (else its end), at most 600 characters.
fn tail(s: &[u8]) -> String {
    let s = String::from_utf8_lossy(s);
    let from = s.rfind("error:").unwrap_or_else(|| s.len().saturating_sub(600));
    let from = (from..s.len()).find(|&i| s.is_char_boundary(i)).unwrap_or(s.len());
    s[from..].trim().chars().take(600).collect()
}

/// Runs one cell as a txftl process; its standard output (the JSON) is
/// kept at `out` when given.
pub fn run_cell(exe: &Path, cell: &Cell, out: Option<&Path>) -> Record {
    let start = Instant::now();
    let result = std::process::Command::new(exe)
        .args(&cell.run.command)
        .args(&cell.run.args)
        .stdin(std::process::Stdio::null())
        .output();
    let seconds = start.elapsed().as_secs_f64();
    let mut rec = Record {
        run: cell.run.clone(),
        status: "failed".into(),
        exit: None,
        metrics: BTreeMap::new(),
        error: None,
        wall: Wall { seconds },
    };
    let output = match result {
        Ok(o) => o,
        Err(e) => {
            rec.error = Some(format!("could not start {}: {e}", exe.display()));
            return rec;
        }
    };
    rec.exit = output.status.code();
    if let Some(p) = out {
        // The raw output is a convenience: failing to keep it fails nothing.
        let _ = std::fs::write(p, &output.stdout);
    }
    if rec.exit != Some(cell.expect_exit) {
        rec.error = Some(format!(
            "exit {:?}, expected {}: {}",
            rec.exit,
            cell.expect_exit,
            tail(&output.stderr)
        ));
        return rec;
    }
    let json: Value = match serde_json::from_slice(&output.stdout) {
        Ok(v) => v,
        // A cell expected to fail that failed before printing its JSON (a
        // canary caught by the uncut dry run): what it said is its result.
        Err(_) if cell.expect_exit != 0 => {
            rec.status = "ok".into();
            rec.error = Some(format!("failed as expected, before any output: {}", tail(&output.stderr)));
            return rec;
        }
        Err(e) => {
            rec.error = Some(format!("output is not JSON ({e}): {}", tail(&output.stderr)));
            return rec;
        }
    };
    let mut missing = Vec::new();
    for (name, ptr) in &cell.metrics {
        match json.pointer(ptr) {
            Some(v) => {
                rec.metrics.insert(name.clone(), v.clone());
            }
            None => missing.push(format!("{name} ({ptr})")),
        }
    }
    if missing.is_empty() {
        rec.status = "ok".into();
    } else {
        rec.error = Some(format!("not in the output: {}", missing.join(", ")));
    }
    rec
}

/// The records of a results file, the last one of each cell (a cell run
/// again after a failure replaces its earlier line); a line that does not
/// parse is an error naming it.
pub fn load(path: &Path) -> Result<BTreeMap<String, Record>, String> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(BTreeMap::new()),
        Err(e) => return Err(format!("{}: {e}", path.display())),
    };
    let mut out = BTreeMap::new();
    for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let r: Record = serde_json::from_str(line).map_err(|e| format!("{}:{}: {e}", path.display(), i + 1))?;
        out.insert(r.run.cell.clone(), r);
    }
    Ok(out)
}

/// Runs `cells` on `jobs` workers, appending each record to `results` as
/// it comes; returns how many failed.
pub fn run_all(exe: &Path, cells: Vec<Cell>, jobs: usize, results: &Path, cell_dir: &Path, bar: &ProgressBar) -> Result<usize, String> {
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(results)
        .map_err(|e| format!("{}: {e}", results.display()))?;
    let total = cells.len();
    let queue = Mutex::new(cells.into_iter().collect::<VecDeque<Cell>>());
    let running = AtomicUsize::new(0);
    let (tx, rx) = mpsc::channel::<Record>();
    let mut failed = 0;
    bar.set_length(total as u64);
    std::thread::scope(|s| -> Result<(), String> {
        for _ in 0..jobs.min(total) {
            let (tx, queue, running) = (tx.clone(), &queue, &running);
            s.spawn(move || loop {
                let Some(cell) = queue.lock().unwrap_or_else(|p| p.into_inner()).pop_front() else {
                    return;
                };
                running.fetch_add(1, Ordering::Relaxed);
                let out: PathBuf = cell_dir.join(format!("{}.json", cell.run.cell));
                let rec = run_cell(exe, &cell, Some(&out));
                running.fetch_sub(1, Ordering::Relaxed);
                if tx.send(rec).is_err() {
                    return;
                }
            });
        }
        drop(tx);
        for rec in rx {
            let line = serde_json::to_string(&rec).map_err(|e| e.to_string())?;
            writeln!(file, "{line}").map_err(|e| format!("{}: {e}", results.display()))?;
            file.flush().map_err(|e| format!("{}: {e}", results.display()))?;
            if !rec.ok() {
                failed += 1;
                bar.println(format!(
                    "cell {} failed: {} {}: {}",
                    rec.run.cell,
                    rec.run.command.join(" "),
                    rec.run.args.join(" "),
                    rec.error.as_deref().unwrap_or("")
                ));
            }
            bar.inc(1);
            bar.set_message(format!("{} running, {failed} failed", running.load(Ordering::Relaxed)));
        }
        Ok(())
    })?;
    Ok(failed)
}

pub fn progress_bar(hidden: bool) -> ProgressBar {
    if hidden {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(0);
    bar.set_style(
        ProgressStyle::with_template("{spinner} [{bar:30}] {pos}/{len} cells done, {msg} ({elapsed})")
            .expect("a valid template")
            .progress_chars("=> "),
    );
    bar
}
