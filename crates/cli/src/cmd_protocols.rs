//! `txftl protocols`: what each protocol of the registry offers, from its
//! entry: its device calls, isolation levels, options, counters, the SQLite
//! modes it carries, what it needs of the NAND, and its canary.

use crate::table::fitted;
use crate::CliError;
use serde::Serialize;
use std::process::ExitCode;
use txftl_protocols::{CellNeed, ProtocolEntry, PROTOCOLS};
use txftl_sqlite::Mode;

#[derive(Serialize)]
struct OptionOut {
    key: &'static str,
    value: &'static str,
    min: u32,
    max: u32,
    help: &'static str,
}

#[derive(Serialize)]
struct CounterOut {
    key: &'static str,
    help: &'static str,
}

#[derive(Serialize)]
struct CanaryOut {
    name: &'static str,
    workload: &'static str,
    bug: &'static str,
}

/// What the protocol needs of the NAND, and the small preset that has it.
#[derive(Serialize)]
struct NandOut {
    /// `any` or `slc`.
    cell: &'static str,
    min_nop: u8,
    min_oob: u32,
    tiny_preset: &'static str,
    #[serde(skip)]
    text: String,
}

#[derive(Serialize)]
struct ProtocolOut {
    name: &'static str,
    label: &'static str,
    about: &'static str,
    transactional: bool,
    trims: bool,
    extensions: Vec<&'static str>,
    isolation: &'static [&'static str],
    options: Vec<OptionOut>,
    counters: Vec<CounterOut>,
    sql_modes: Vec<&'static str>,
    nand: NandOut,
    /// Over NBD (`txftl nbd serve`): the largest write that lands whole
    /// after a power cut, in flash pages (NVMe's AWUN/AWUPF); None: the
    /// whole write, whatever its size.
    nbd_atomic_unit_pages: Option<u32>,
    nbd_atomic_unit: &'static str,
    canary: Option<CanaryOut>,
}

fn describe(e: &'static ProtocolEntry) -> ProtocolOut {
    ProtocolOut {
        name: e.name,
        label: e.label,
        about: e.about,
        transactional: e.transactional,
        trims: e.trims,
        extensions: e.extensions.iter().map(|x| x.calls()).collect(),
        isolation: e.isolation,
        options: e
            .options
            .iter()
            .map(|o| OptionOut {
                key: o.key,
                value: o.value_name,
                min: o.min,
                max: o.max,
                help: o.help,
            })
            .collect(),
        counters: e.counters.iter().map(|c| CounterOut { key: c.key, help: c.help }).collect(),
        sql_modes: Mode::all(PROTOCOLS).filter(|m| m.protocol() == e.name).map(Mode::cli).collect(),
        nand: NandOut {
            cell: match e.nand.cell {
                CellNeed::Any => "any",
                CellNeed::Slc => "slc",
            },
            min_nop: e.nand.min_nop,
            min_oob: e.nand.min_oob,
            tiny_preset: e.nand.tiny_preset(),
            text: e.nand.to_string(),
        },
        nbd_atomic_unit_pages: txftl_nbd::atomic_unit(e),
        nbd_atomic_unit: txftl_nbd::atomic_unit_text(e),
        canary: e.canary.map(|c| CanaryOut {
            name: c.name,
            workload: c.workload,
            bug: c.bug,
        }),
    }
}

fn print(p: &ProtocolOut) {
    let mut t = fitted();
    t.set_header(vec![format!("{} ({})", p.name, p.label), String::new()]);
    let mut row = |a: &str, b: &str| {
        t.add_row(vec![a.to_string(), b.to_string()]);
    };
    row("what", p.about);
    let calls = if p.transactional {
        "read, write, flush, begin, write(tid), read(tid), commit, abort"
    } else {
        "read, write, flush"
    };
    let trim = if p.trims { ", trim" } else { " (no trim)" };
    let ext: String = p.extensions.iter().map(|x| format!(", {x}")).collect();
    row("device calls", &format!("{calls}{trim}{ext}"));
    row("isolation levels", &p.isolation.join(", "));
    row("SQLite modes (--mode)", &p.sql_modes.join(", "));
    row(
        "NAND",
        &format!("{} (small tests and crash runs: --preset {})", p.nand.text, p.nand.tiny_preset),
    );
    row("atomic unit over NBD (AWUN/AWUPF)", p.nbd_atomic_unit);
    for o in &p.options {
        row(
            &format!("--protocol-opt {}={}", o.key, o.value),
            &format!("{} ({} to {})", o.help, o.min, o.max),
        );
    }
    for c in &p.counters {
        row(&format!("counter {}", c.key), c.help);
    }
    if let Some(c) = &p.canary {
        row(
            &format!("canary {}", c.name),
            &format!("{}; crashtest --workload {} must report violations", c.bug, c.workload),
        );
    }
    println!("{t}");
}

pub fn run(json: bool) -> Result<ExitCode, CliError> {
    let all: Vec<ProtocolOut> = PROTOCOLS.iter().map(|&e| describe(e)).collect();
    if json {
        println!("{}", serde_json::to_string_pretty(&all).map_err(CliError::failed)?);
    } else {
        all.iter().for_each(print);
    }
    Ok(ExitCode::SUCCESS)
}
