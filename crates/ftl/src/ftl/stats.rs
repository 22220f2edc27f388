//! The device counters: the FTL's own, merged with the NAND's operation
//! counts, and reset between measurements.

use super::Ftl;
use crate::device::DeviceStats;
use crate::hooks::Hooks;

impl<H: Hooks> Ftl<H> {
    /// The device counters, for a protocol to count its own events (reads
    /// it serves from DRAM, records written with a transaction open...);
    /// commits and aborts go through `tx_commit` and `tx_abort` (`tx.rs`).
    pub fn counters_mut(&mut self) -> &mut DeviceStats {
        &mut self.counters
    }

    pub fn device_stats(&self) -> DeviceStats {
        let n = self.nand.stats();
        let b = self.nand_base;
        DeviceStats {
            flash_reads: (n.reads + n.oob_reads) - (b.reads + b.oob_reads),
            flash_programs: n.programs - b.programs,
            flash_partial_programs: n.partial_programs - b.partial_programs,
            flash_erases: n.erases - b.erases,
            corrected_bits: n.corrected_bits - b.corrected_bits,
            read_retries: n.read_retries - b.read_retries,
            program_failures: n.program_failures - b.program_failures,
            flash_busy_ns: n.busy_ns - b.busy_ns,
            sim_time_ns: self.now_ns.max(self.nand.all_idle_ns()) - self.time_base_ns,
            ..self.counters
        }
    }

    pub fn reset_device_stats(&mut self) {
        self.counters = DeviceStats::default();
        self.nand_base = self.nand.stats();
        self.now_ns = self.now_ns.max(self.nand.all_idle_ns());
        self.time_base_ns = self.now_ns;
    }
}
