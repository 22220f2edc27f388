//! What a server counts while it serves: the commands it took (count,
//! bytes, errors, their latency on the device clock), its groups and atomic
//! writes, its power cuts and every recovery's report, and the device's
//! own counters summed over every boot (a cut starts a new device).

use serde::Serialize;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use txftl_ftl::{DeviceStats, ProtocolEntry, RecoveryReport};
use txftl_host::latency::{Latency, LatencySummary};

/// One kind of command.
#[derive(Clone, Debug, Default)]
pub struct CommandStats {
    pub count: u64,
    pub bytes: u64,
    pub errors: u64,
    /// Device time of each successful command, ns.
    pub latency: Latency,
}

#[derive(Clone, Debug, Serialize)]
struct CommandRow {
    count: u64,
    bytes: u64,
    errors: u64,
    latency_ns: LatencySummary,
}

/// One mount's recovery (at start, or at a power-on).
#[derive(Clone, Debug, Serialize)]
pub struct Mount {
    /// Why it ran: "start", "power-on", "after the scheduled cut".
    pub why: String,
    pub report: RecoveryReport,
}

#[derive(Clone, Debug, Default)]
pub struct ServeStats {
    pub connections: u64,
    pub commands: BTreeMap<&'static str, CommandStats>,
    /// Writes across pages made one device transaction each.
    pub atomic_writes: u64,
    /// Writes that covered a page in part (read, patched, written whole).
    pub partial_page_writes: u64,
    /// `--flush-is-commit` groups committed, and those a full transaction
    /// table split (committed early, the rest in a new group).
    pub groups_committed: u64,
    pub groups_split: u64,
    pub power_cuts: u64,
    /// Of which by the schedule.
    pub scheduled_cuts: u64,
    pub mounts: Vec<Mount>,
    /// The device's framework counters over boots ended by a cut.
    earlier_boots: BTreeMap<&'static str, u64>,
    /// What happened, in order (cuts, recoveries, failures), for the log.
    pub events: Vec<String>,
}

impl ServeStats {
    pub fn command(&mut self, kind: &'static str, bytes: u64, result: Result<u64, ()>) {
        let c = self.commands.entry(kind).or_default();
        c.count += 1;
        match result {
            Ok(ns) => {
                c.bytes += bytes;
                c.latency.record(ns);
            }
            Err(()) => c.errors += 1,
        }
    }

    pub fn record_mount(&mut self, report: RecoveryReport, why: &str) {
        self.events.push(format!(
            "recovery ({why}): {:.3} ms of device time; {} checkpoint pages read, {} pages scanned, {} rolled forward, {} torn pages found; {} reads, {} programs, {} erases",
            report.time_ns as f64 / 1e6,
            report.checkpoint_pages_read,
            report.pages_scanned,
            report.pages_rolled_forward,
            report.torn_pages_found,
            report.flash_reads,
            report.flash_programs,
            report.flash_erases
        ));
        self.mounts.push(Mount {
            why: why.to_string(),
            report,
        });
    }

    pub fn log(&mut self, event: String) {
        self.events.push(event);
    }

    /// Adds a boot's device counters (the device is about to be dropped).
    pub fn add_boot(&mut self, s: &DeviceStats) {
        for (spec, v) in s.iter() {
            *self.earlier_boots.entry(spec.key).or_default() += v;
        }
    }

    /// The device's framework counters over every boot, `now` the live one.
    fn device_totals(&self, now: Option<&DeviceStats>) -> BTreeMap<&'static str, u64> {
        let mut t = self.earlier_boots.clone();
        if let Some(s) = now {
            for (spec, v) in s.iter() {
                *t.entry(spec.key).or_default() += v;
            }
        }
        t
    }

    /// Everything, as JSON (`ctl stats --json`, and what SIGINT prints).
    pub fn json(&self, entry: &ProtocolEntry, now: Option<&DeviceStats>, now_ns: u64, powered: bool) -> Value {
        let totals = self.device_totals(now);
        let get = |k: &str| totals.get(k).copied().unwrap_or(0);
        let programs = get("flash_programs") + get("flash_partial_programs");
        let wa = if get("host_writes") == 0 {
            0.0
        } else {
            programs as f64 / get("host_writes") as f64
        };
        let commands: BTreeMap<&str, CommandRow> = self
            .commands
            .iter()
            .map(|(k, c)| {
                let row = CommandRow {
                    count: c.count,
                    bytes: c.bytes,
                    errors: c.errors,
                    latency_ns: c.latency.summary(),
                };
                (*k, row)
            })
            .collect();
        json!({
            "protocol": entry.name,
            "powered": powered,
            "device_clock_ns": now_ns,
            "connections": self.connections,
            "commands": commands,
            "atomic_writes": self.atomic_writes,
            "partial_page_writes": self.partial_page_writes,
            "groups_committed": self.groups_committed,
            "groups_split": self.groups_split,
            "power_cuts": self.power_cuts,
            "scheduled_cuts": self.scheduled_cuts,
            "device": totals,
            "protocol_counters": now.map(|s| s.protocol.iter().collect::<BTreeMap<_, _>>()),
            "write_amplification": wa,
            "mounts": self.mounts,
            "events": self.events,
        })
    }
}

/// The JSON of [`ServeStats::json`] as a table for the terminal.
pub fn table(v: &Value) -> String {
    let mut out = String::new();
    let n = |v: &Value| v.as_u64().unwrap_or(0);
    let line = |out: &mut String, k: &str, val: String| out.push_str(&format!("  {k:<44} {val}\n"));
    out.push_str(&format!(
        "txftl nbd: protocol {}, power {}, device clock {:.3} ms\n",
        v["protocol"].as_str().unwrap_or("?"),
        if v["powered"].as_bool() == Some(true) { "on" } else { "off" },
        n(&v["device_clock_ns"]) as f64 / 1e6
    ));
    out.push_str("commands (latency on the device clock)\n");
    if let Some(cmds) = v["commands"].as_object() {
        for (k, c) in cmds {
            let l = &c["latency_ns"];
            line(
                &mut out,
                k,
                format!(
                    "{} ({} errors), {} bytes; p50 {:.1} us, p99 {:.1} us, max {:.1} us",
                    n(&c["count"]),
                    n(&c["errors"]),
                    n(&c["bytes"]),
                    n(&l["p50_ns"]) as f64 / 1e3,
                    n(&l["p99_ns"]) as f64 / 1e3,
                    n(&l["max_ns"]) as f64 / 1e3
                ),
            );
        }
    }
    out.push_str("device (every boot)\n");
    let d = &v["device"];
    for k in [
        "host_writes",
        "host_reads",
        "host_trims",
        "host_flushes",
        "flash_programs",
        "flash_reads",
        "flash_erases",
        "gc_runs",
        "gc_copies",
    ] {
        line(&mut out, k, n(&d[k]).to_string());
    }
    line(
        &mut out,
        "write amplification",
        format!("{:.3}", v["write_amplification"].as_f64().unwrap_or(0.0)),
    );
    out.push_str("server\n");
    for k in [
        "connections",
        "atomic_writes",
        "partial_page_writes",
        "groups_committed",
        "groups_split",
        "power_cuts",
        "scheduled_cuts",
    ] {
        line(&mut out, k, n(&v[k]).to_string());
    }
    out
}
