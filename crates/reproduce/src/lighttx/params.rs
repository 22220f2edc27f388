//! The parameters of a run of `reproduce lighttx`: the paper's setup
//! (Table II's device, its trace's clients), scaled down where one machine
//! cannot hold it (and saying so), and the preset at a size.

use super::{label, paper, PAPER_PROTOCOLS};
use crate::fmt::thousands;
use crate::paper::Head;
use crate::Error;
use serde::Serialize;
use txftl_host::replay::Isolation;
use txftl_nand::Preset;

/// A protocol of the run and the isolation levels the registry says it offers.
#[derive(Clone, Debug, Serialize)]
pub struct ProtocolLevels {
    pub protocol: String,
    pub levels: Vec<String>,
}

/// The fills of the sweep of Figs. 6 and 7, percent of the logical pages
/// written before the trace: the text states none.
pub const FILLS_PCT: [u32; 4] = [0, 50, 90, 100];

/// The default fill (Figs. 5 to 9), and why ([`FILL_DEFAULT_REASON`]).
pub const FILL_DEFAULT_PCT: u32 = 100;

/// The sentence of the paper the default rests on, and the rule that picks
/// it among the fills the sentence admits.
pub const FILL_DEFAULT_REASON: &str = "the text states no fill. Sec. IV-C: \"For the no-abort case, none of the four protocols have extra erase operations caused by aborted transactions. But Atomic-Write and LightTx have more writes due to mapping persistence (write-back of the FTL mapping table into the Flash device), which leads to a higher garbage collection frequency.\" and \"the free pages are consumed quickly, which incurs more garbage collection operations\": GC runs without aborts, at a frequency the pages written set, as on a device in its steady state, where the pages written are paid for by GC. A fill at which no protocol runs GC without aborts contradicts the text (the GC onset table shows which); of the fills left, the default is the one at which GC starts earliest in the trace, the nearest the trace comes to that steady state whatever its length (GC starts earlier the fuller the device): 100%. The sweep's other fills stay in the report";

/// The parameters of a run, all printed.
#[derive(Clone, Debug, Serialize)]
pub struct Params {
    // `head.device`: The device of Figs. 5, 6, 7 and 9, and the one the trace is recorded on.
    #[serde(flatten)]
    pub head: Head,
    /// Fig. 8's device (recovery time of a whole-device scan follows capacity).
    pub recovery_device: String,
    pub recovery_blocks_per_plane: u32,
    pub tpcc_warehouses: u32,
    pub tpcc_scale: u32,
    pub tpcc_transactions: u64,
    pub tpcc_clients: u32,
    /// Closed-loop clients of the replay.
    pub replay_clients: u32,
    /// Share of the logical pages written (sequentially, not transactions)
    /// before each replay of Figs. 5 to 9: the default of the fill sweep,
    /// chosen by the paper's text ([`FILL_DEFAULT_REASON`]).
    pub precondition_pct: u32,
    /// The fills Figs. 6 and 7 are run at (the text gives none): the sweep,
    /// the default among them.
    pub fills_pct: Vec<u32>,
    /// Why the default: the sentence of the paper it rests on, and the rule.
    pub fill_default_reason: String,
    pub abort_pcts: Vec<u32>,
    /// LightTx's zone (Available Zone, blocks) in Figs. 5 to 7; one of
    /// `zone_blocks`.
    pub zone_blocks_default: u32,
    /// The zone sizes of Figs. 8 and 9, blocks.
    pub zone_blocks: Vec<u32>,
    pub protocols: Vec<ProtocolLevels>,
    /// The protocols of the paper this build lacks.
    pub protocols_missing: Vec<String>,
    /// GC overhead (Fig. 7) = valid pages moved x copy + victims erased x
    /// erase, from the counters and the preset's latencies (Table II's).
    pub gc_copy_ns: u64,
    pub gc_erase_ns: u64,
    /// What is smaller than the paper's setup, and by how much.
    pub scaled_down: Vec<String>,
}

impl Params {
    pub fn new(quick: bool, seed: u64) -> Params {
        let p = txftl_nand::preset("lighttx").expect("the lighttx preset");
        let page_ns = p.timing.transfer_ns(p.geometry.page_size);
        let recovery_bpp = if quick { 256 } else { full_capacity_bpp(&p) };
        let tpcc_transactions = if quick { 2_000 } else { 4_000 };
        let mut protocols = Vec::new();
        let mut missing = Vec::new();
        for (name, _) in PAPER_PROTOCOLS {
            match txftl_protocols::entry(name) {
                Ok(e) => protocols.push(ProtocolLevels {
                    protocol: name.into(),
                    levels: Isolation::NAMES
                        .iter()
                        .filter(|l| e.isolation.contains(l))
                        .map(|l| l.to_string())
                        .collect(),
                }),
                Err(_) => missing.push(name.to_string()),
            }
        }
        let mut scaled_down = vec![
            format!(
                "workload: TPC-C on SQLite (X-FTL mode, one device transaction per SQLite transaction), {} warehouse(s) instead of the paper's {} (DBT-2 on PostgreSQL), {} transactions recorded instead of the paper's 1,328,700 requests; {} clients as in the paper",
                1,
                paper::WAREHOUSES,
                thousands(tpcc_transactions),
                paper::CLIENTS
            ),
            format!(
                "Figs. 5, 6, 7, 9: the lighttx preset (Table II) at {} MiB instead of 32 GB, its logical pages written {}% before each replay (sequentially, no transactions), the default of a sweep over {} that the paper's text leaves open (Figs. 6, 7 run at each)",
                p.geometry.capacity_bytes() >> 20,
                FILL_DEFAULT_PCT,
                FILLS_PCT.map(|f| format!("{f}%")).join(", ")
            ),
        ];
        if quick {
            scaled_down.push(format!(
                "--quick: Fig. 8 at {} GiB instead of 32 GB, abort ratios 0, 25, 50% (full: 0 to 50 by 10), zone sizes 16, 64, 512 blocks",
                capacity_gib(&p, recovery_bpp)
            ));
        }
        if !missing.is_empty() {
            scaled_down.push(format!(
                "not registered in this build, so not run: {}",
                missing.iter().map(|m| label(m)).collect::<Vec<_>>().join(", ")
            ));
        }
        Params {
            head: Head {
                quick,
                seed,
                preset: "lighttx".into(),
                device: String::new(),
                blocks_per_plane: p.geometry.blocks_per_plane,
                host: None,
            },
            recovery_device: String::new(),
            recovery_blocks_per_plane: recovery_bpp,
            tpcc_warehouses: 1,
            tpcc_scale: 1,
            tpcc_transactions,
            tpcc_clients: paper::CLIENTS,
            replay_clients: paper::CLIENTS,
            precondition_pct: FILL_DEFAULT_PCT,
            fills_pct: FILLS_PCT.to_vec(),
            fill_default_reason: FILL_DEFAULT_REASON.into(),
            abort_pcts: if quick { vec![0, 25, 50] } else { vec![0, 10, 20, 30, 40, 50] },
            zone_blocks_default: 64,
            zone_blocks: if quick {
                vec![16, 64, 512]
            } else {
                vec![16, 32, 64, 128, 256, 512]
            },
            protocols,
            protocols_missing: missing,
            gc_copy_ns: p.timing.read_ns + p.timing.program_ns + 2 * page_ns,
            gc_erase_ns: p.timing.erase_ns,
            scaled_down,
        }
    }

    /// Tests only: the smallest sizes that still run every experiment.
    pub fn tiny(&mut self) {
        self.head.quick = true;
        self.head.blocks_per_plane = 8;
        self.recovery_blocks_per_plane = 16;
        self.tpcc_scale = 20;
        self.tpcc_transactions = 150;
        self.abort_pcts = vec![0, 50];
        self.fills_pct = vec![0, 100];
        self.zone_blocks = vec![4, 16];
        self.zone_blocks_default = 16;
        self.scaled_down.push(
            "--tiny (tests only): 8 blocks per plane (128 MiB), Fig. 8 at 16 (256 MiB), TPC-C scale 1/20 with 150 transactions, abort ratios 0 and 50%, fills 0 and 100%, zone sizes 4 and 16 blocks".into(),
        );
    }
}

/// Blocks per plane that give the preset the paper's 32 GB.
pub fn full_capacity_bpp(p: &Preset) -> u32 {
    let g = &p.geometry;
    let per_bpp = g.capacity_bytes() / g.blocks_per_plane as u64;
    ((paper::CAPACITY_GIB << 30) / per_bpp) as u32
}

pub fn capacity_gib(p: &Preset, bpp: u32) -> f64 {
    let g = &p.geometry;
    (g.capacity_bytes() / g.blocks_per_plane as u64 * bpp as u64) as f64 / (1u64 << 30) as f64
}

pub fn preset(bpp: u32) -> Result<Preset, Error> {
    let mut p = txftl_nand::preset("lighttx").ok_or_else(|| Error::Failed("preset lighttx missing".into()))?;
    p.geometry.blocks_per_plane = bpp;
    p.geometry
        .validate()
        .map_err(|e| Error::Failed(format!("lighttx preset at {bpp} blocks per plane: {e}")))?;
    Ok(p)
}
