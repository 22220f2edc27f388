//! A sweep's grid (a TOML file) and the cells it expands to: one txftl
//! invocation each, named by a stable hash of what it runs.
//!
//! ```toml
//! name = "crash-sets"           # names the output directory
//! command = "crashtest"         # run, crashtest, filebench, reproduce, sql tpcc, trace replay, ...
//! seeds = [1, 2]                # every cell once per seed (--seed); none: the command's default
//! [args]                        # flags every cell takes: --threads 1
//! threads = 1
//! [axes]                        # the grid: every combination of these flags
//! protocol = ["plain", "xftl"]
//! [[cells]]                     # cells beside the grid, each with its own flags
//! protocol = "xftl"
//! protocol-opt = "xl2p-entries=16"
//! expect-exit = 1               # a canary: violations found is the expected outcome
//! [metrics]                     # what each cell reports: name = JSON pointer into its --json output
//! crash_points = "/crash_points"
//! ```
//!
//! A flag's value: a string or number is `--key value`, `true` is `--key`
//! (`false` leaves it out), an array repeats the flag. The key `arg` gives
//! positional arguments (`arg = ["xftl", "lighttx"]` on `reproduce`).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use toml::Value;

/// The commands a cell may run: those that print their results with `--json`.
const COMMANDS: &[&str] = &["run", "crashtest", "filebench", "reproduce", "sql", "trace", "compare", "sqlcrash"];
/// Flags the sweep gives every cell itself.
const RESERVED: &[&str] = &["json", "seed"];
/// The key whose values are positional arguments (`reproduce xftl`), not flags.
const POSITIONAL: &str = "arg";
/// The key of a `[[cells]]` entry that is no flag: the exit code expected.
const EXPECT_EXIT: &str = "expect-exit";

/// What a cell runs and where it sits in its grid: a cell and its result
/// both carry it (flattened: its fields are theirs in JSON).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Invocation {
    /// FNV-1a (64 bits) of the command, its arguments and the exit code expected.
    pub cell: String,
    pub grid: String,
    /// The command's words (`["sql", "tpcc"]`).
    pub command: Vec<String>,
    /// Its arguments, `--json` and `--seed` included.
    pub args: Vec<String>,
    /// The flags that vary across the grid, by name (axes; a `[[cells]]`
    /// entry's own flags), for grouping in the report.
    pub params: BTreeMap<String, String>,
    pub seed: Option<u64>,
}

/// One invocation of txftl, as `--emit-cells` prints it and `--run-cell` takes it.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Cell {
    #[serde(flatten)]
    pub run: Invocation,
    pub expect_exit: i32,
    /// Metric name -> JSON pointer into the command's output.
    pub metrics: BTreeMap<String, String>,
}

/// The grid as read: its cells, in a fixed order.
pub struct Grid {
    pub name: String,
    pub cells: Vec<Cell>,
    /// The axes' names, in the file's order (the first groups the figures).
    pub axes: Vec<String>,
    pub metrics: Vec<String>,
}

fn flag_args(key: &str, v: &Value) -> Result<Vec<String>, String> {
    if key == POSITIONAL {
        return Ok(match v {
            Value::Array(a) => a.iter().map(label).collect(),
            v => vec![label(v)],
        });
    }
    Ok(match v {
        Value::Boolean(true) => vec![format!("--{key}")],
        Value::Boolean(false) => vec![],
        Value::String(s) => vec![format!("--{key}"), s.clone()],
        Value::Integer(i) => vec![format!("--{key}"), i.to_string()],
        Value::Float(f) => vec![format!("--{key}"), f.to_string()],
        Value::Array(a) => {
            let mut out = Vec::new();
            for x in a {
                out.extend(flag_args(key, x)?);
            }
            out
        }
        other => return Err(format!("flag `{key}`: a {} is not a flag value", other.type_str())),
    })
}

/// The value as a label (`16`, `xl2p-entries=16`, `a+b` for an array).
fn label(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(a) => a.iter().map(label).collect::<Vec<_>>().join("+"),
        other => other.to_string(),
    }
}

fn check_key(key: &str) -> Result<(), String> {
    if RESERVED.contains(&key) {
        return Err(format!("`{key}` is given by the sweep itself (--json, and --seed from `seeds`)"));
    }
    Ok(())
}

/// FNV-1a, 64 bits, of `parts` joined by NUL: stable across runs and machines.
pub fn hash(parts: &[String]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for (i, p) in parts.iter().enumerate() {
        if i > 0 {
            // A NUL between parts (x ^ 0 = x).
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
        for b in p.bytes() {
            h = (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    format!("{h:016x}")
}

fn table<'a>(t: &'a toml::Table, key: &str) -> Result<Option<&'a toml::Table>, String> {
    match t.get(key) {
        None => Ok(None),
        Some(Value::Table(x)) => Ok(Some(x)),
        Some(_) => Err(format!("`{key}` must be a table ([{key}])")),
    }
}

impl Grid {
    pub fn parse(text: &str, default_name: &str) -> Result<Grid, String> {
        let t: toml::Table = text.parse().map_err(|e| format!("{e}"))?;
        for k in t.keys() {
            if !["name", "command", "seeds", "args", "axes", "cells", "metrics"].contains(&k.as_str()) {
                return Err(format!(
                    "unknown key `{k}` (keys: name, command, seeds, args, axes, cells, metrics)"
                ));
            }
        }
        let name = match t.get("name") {
            Some(Value::String(s)) => s.clone(),
            None => default_name.to_string(),
            Some(_) => return Err("`name` must be a string".into()),
        };
        let command: Vec<String> = match t.get("command") {
            Some(Value::String(s)) => s.split_whitespace().map(String::from).collect(),
            _ => return Err("`command` (a string, such as \"crashtest\" or \"sql tpcc\") is required".into()),
        };
        if !command.first().is_some_and(|c| COMMANDS.contains(&c.as_str())) {
            return Err(format!(
                "command `{}` is not one a sweep runs (it takes: {})",
                command.join(" "),
                COMMANDS.join(", ")
            ));
        }
        let seeds: Vec<Option<u64>> = match t.get("seeds") {
            None => vec![None],
            Some(Value::Array(a)) if !a.is_empty() => a
                .iter()
                .map(|v| v.as_integer().filter(|&i| i >= 0).map(|i| Some(i as u64)))
                .collect::<Option<_>>()
                .ok_or("`seeds` must be non-negative integers")?,
            Some(_) => return Err("`seeds` must be a non-empty array of integers".into()),
        };
        let mut fixed = Vec::new();
        for (k, v) in table(&t, "args")?.into_iter().flatten() {
            check_key(k)?;
            fixed.extend(flag_args(k, v)?);
        }
        let axes: Vec<(String, Vec<Value>)> = match table(&t, "axes")? {
            None => vec![],
            Some(a) => a
                .iter()
                .map(|(k, v)| match v {
                    Value::Array(vals) if !vals.is_empty() => check_key(k).map(|_| (k.clone(), vals.clone())),
                    _ => Err(format!("axis `{k}` must be a non-empty array of values")),
                })
                .collect::<Result<_, _>>()?,
        };
        let metrics: BTreeMap<String, String> = match table(&t, "metrics")? {
            None => return Err("`[metrics]` (name = JSON pointer into the command's output) is required".into()),
            Some(m) => m
                .iter()
                .map(|(k, v)| match v {
                    Value::String(p) if p.starts_with('/') => Ok((k.clone(), p.clone())),
                    _ => Err(format!("metric `{k}` must be a JSON pointer such as \"/crash_points\"")),
                })
                .collect::<Result<_, _>>()?,
        };
        let mut points: Vec<Point> = Vec::new();
        for combo in product(&axes) {
            let mut params = BTreeMap::new();
            let mut args = Vec::new();
            for (k, v) in &combo {
                params.insert(k.clone(), label(v));
                args.extend(flag_args(k, v)?);
            }
            if !axes.is_empty() || t.get("cells").is_none() {
                points.push((params, args, 0));
            }
        }
        points.extend(extra_cells(&t)?);
        let mut cells = Vec::new();
        for (params, args, expect_exit) in points {
            for &seed in &seeds {
                cells.push(make_cell(
                    &name,
                    &command,
                    &fixed,
                    params.clone(),
                    &args,
                    seed,
                    expect_exit,
                    &metrics,
                ));
            }
        }
        let mut seen = std::collections::BTreeSet::new();
        if let Some(dup) = cells.iter().find(|c| !seen.insert(c.run.cell.clone())) {
            return Err(format!(
                "two cells run the same thing: {} {}",
                dup.run.command.join(" "),
                dup.run.args.join(" ")
            ));
        }
        Ok(Grid {
            name,
            cells,
            axes: axes.into_iter().map(|(k, _)| k).collect(),
            metrics: metrics.into_keys().collect(),
        })
    }
}

/// Every combination of the axes' values, in the file's order.
fn product(axes: &[(String, Vec<Value>)]) -> Vec<Vec<(String, Value)>> {
    axes.iter().fold(vec![vec![]], |acc, (k, vals)| {
        acc.into_iter()
            .flat_map(|c| {
                vals.iter().map(move |v| {
                    let mut c = c.clone();
                    c.push((k.clone(), v.clone()));
                    c
                })
            })
            .collect()
    })
}

/// A point of the grid before its seeds: (params, flags, exit code expected).
type Point = (BTreeMap<String, String>, Vec<String>, i32);

/// The `[[cells]]` entries.
fn extra_cells(t: &toml::Table) -> Result<Vec<Point>, String> {
    let Some(v) = t.get("cells") else { return Ok(vec![]) };
    let Value::Array(list) = v else {
        return Err("`cells` must be an array of tables ([[cells]])".into());
    };
    let mut out = Vec::new();
    for entry in list {
        let Value::Table(e) = entry else {
            return Err("each [[cells]] entry must be a table".into());
        };
        let (mut params, mut args, mut expect) = (BTreeMap::new(), Vec::new(), 0);
        for (k, v) in e {
            if k == EXPECT_EXIT {
                expect = v.as_integer().ok_or("`expect-exit` must be an integer")? as i32;
                continue;
            }
            check_key(k)?;
            params.insert(k.clone(), label(v));
            args.extend(flag_args(k, v)?);
        }
        out.push((params, args, expect));
    }
    Ok(out)
}

#[allow(clippy::too_many_arguments)]
fn make_cell(
    grid: &str,
    command: &[String],
    fixed: &[String],
    params: BTreeMap<String, String>,
    args: &[String],
    seed: Option<u64>,
    expect_exit: i32,
    metrics: &BTreeMap<String, String>,
) -> Cell {
    let mut all: Vec<String> = fixed.iter().chain(args).cloned().collect();
    if let Some(s) = seed {
        all.extend(["--seed".to_string(), s.to_string()]);
    }
    all.push("--json".to_string());
    let mut key: Vec<String> = command.to_vec();
    key.extend(all.iter().cloned());
    key.push(format!("expect-exit={expect_exit}"));
    Cell {
        run: Invocation {
            cell: hash(&key),
            grid: grid.to_string(),
            command: command.to_vec(),
            args: all,
            params,
            seed,
        },
        expect_exit,
        metrics: metrics.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GRID: &str = r#"
command = "crashtest"
seeds = [1, 2]
[args]
threads = 1
[axes]
protocol = ["plain", "xftl"]
ops = [60, 120]
[[cells]]
protocol = "xftl-canary"
expect-exit = 1
[metrics]
points = "/crash_points"
"#;

    #[test]
    fn a_grid_expands_to_every_combination_times_every_seed_plus_its_cells() {
        let g = Grid::parse(GRID, "g").unwrap();
        assert_eq!(g.cells.len(), (2 * 2 + 1) * 2);
        let c = &g.cells[0].run;
        assert_eq!(
            c.args,
            ["--threads", "1", "--protocol", "plain", "--ops", "60", "--seed", "1", "--json"]
        );
        assert_eq!(g.cells.last().unwrap().expect_exit, 1);
        assert_eq!(g.axes, ["protocol", "ops"]);
    }

    #[test]
    fn a_cells_hash_is_stable_and_names_what_it_runs() {
        let a = Grid::parse(GRID, "g").unwrap();
        let b = Grid::parse(GRID, "other-name").unwrap();
        assert_eq!(a.cells[3].run.cell, b.cells[3].run.cell, "the grid's name is not part of a cell");
        assert_eq!(hash(&["a".into(), "b".into()]), hash(&["a".into(), "b".into()]));
        assert_ne!(hash(&["ab".into()]), hash(&["a".into(), "b".into()]));
    }

    #[test]
    fn bad_grids_are_refused_with_what_is_wrong() {
        for (text, want) in [
            ("command = \"rm\"\n[metrics]\nx = \"/a\"", "not one a sweep runs"),
            ("command = \"run\"", "[metrics]"),
            ("command = \"run\"\n[args]\nseed = 3\n[metrics]\nx = \"/a\"", "given by the sweep"),
            ("command = \"run\"\n[axes]\nops = 3\n[metrics]\nx = \"/a\"", "non-empty array"),
            ("command = \"run\"\nfoo = 1\n[metrics]\nx = \"/a\"", "unknown key"),
            ("command = \"run\"\n[metrics]\nx = \"a\"", "JSON pointer"),
        ] {
            let e = Grid::parse(text, "g").err().expect(text);
            assert!(e.contains(want), "{text}: {e}");
        }
    }
}
