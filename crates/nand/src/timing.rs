//! Simulated timing: latencies per operation and the busy-until clocks of dies
//! and channels, so operations on different parallel units overlap.
//!
//! All times are simulated nanoseconds on the device clock; nothing here ever
//! looks at wall time.

use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Timing {
    pub read_ns: u64,
    pub program_ns: u64,
    pub partial_program_ns: u64,
    pub erase_ns: u64,
    /// Channel transfer time per KiB moved between controller and die.
    pub transfer_ns_per_kib: u64,
}

/// Largest latency an operation (and a KiB of transfer) may take: one
/// second, far above any NAND part, and small enough that the device clock
/// cannot overflow.
pub const LATENCY_NS_MAX: u64 = 1_000_000_000;

impl Timing {
    pub fn transfer_ns(&self, bytes: u32) -> u64 {
        (bytes as u64 * self.transfer_ns_per_kib).div_ceil(1024)
    }

    /// Every field with its name (as device files spell it) and the least
    /// value it may take (every field at most [`LATENCY_NS_MAX`]): an
    /// operation takes at least a nanosecond; a transfer may be free.
    pub fn fields(&self) -> [(&'static str, u64, u64); 5] {
        [
            ("read_ns", self.read_ns, 1),
            ("program_ns", self.program_ns, 1),
            ("partial_program_ns", self.partial_program_ns, 1),
            ("erase_ns", self.erase_ns, 1),
            ("transfer_ns_per_kib", self.transfer_ns_per_kib, 0),
        ]
    }

    /// The first field out of its range, as `name = value` and the range.
    pub fn out_of_range(&self) -> Option<String> {
        self.fields()
            .into_iter()
            .find(|&(_, v, min)| v < min || v > LATENCY_NS_MAX)
            .map(|(name, v, min)| format!("{name} = {v} is outside {min} to {LATENCY_NS_MAX}"))
    }
}

/// When a NAND operation's phases end, on the device clock.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OpTime {
    /// The data has crossed the channel (into the die's register for a program,
    /// into the controller for a read).
    pub transferred_ns: u64,
    /// The die has finished the operation.
    pub done_ns: u64,
}

/// Busy-until clocks for every die and channel.
#[derive(Clone, Debug)]
pub struct Clocks {
    pub die_busy_until_ns: Vec<u64>,
    pub channel_busy_until_ns: Vec<u64>,
}

impl Clocks {
    pub fn new(units: u32, channels: u32) -> Self {
        Clocks {
            die_busy_until_ns: vec![0; units as usize],
            channel_busy_until_ns: vec![0; channels as usize],
        }
    }

    /// Read: the die senses the page, then the channel carries it out.
    pub fn read(&mut self, unit: u32, channel: u32, at_ns: u64, sense_ns: u64, xfer_ns: u64) -> OpTime {
        let die = &mut self.die_busy_until_ns[unit as usize];
        let sensed = (*die).max(at_ns) + sense_ns;
        let chan = &mut self.channel_busy_until_ns[channel as usize];
        let transferred = (*chan).max(sensed) + xfer_ns;
        *chan = transferred;
        // The die holds the data in its register until the transfer is over.
        *die = transferred;
        OpTime {
            transferred_ns: transferred,
            done_ns: transferred,
        }
    }

    /// Program: the channel carries the data in, then the die programs it.
    #[inline]
    pub fn program(&mut self, unit: u32, channel: u32, at_ns: u64, xfer_ns: u64, program_ns: u64) -> OpTime {
        let die = &mut self.die_busy_until_ns[unit as usize];
        let chan = &mut self.channel_busy_until_ns[channel as usize];
        // The transfer needs the die's register free, and the channel free.
        let start = at_ns.max(*chan).max(*die);
        let transferred = start + xfer_ns;
        *chan = transferred;
        let done = transferred + program_ns;
        *die = done;
        OpTime {
            transferred_ns: transferred,
            done_ns: done,
        }
    }

    /// Erase: the die alone; the channel only carries the command.
    pub fn erase(&mut self, unit: u32, at_ns: u64, erase_ns: u64) -> OpTime {
        let die = &mut self.die_busy_until_ns[unit as usize];
        let done = (*die).max(at_ns) + erase_ns;
        *die = done;
        OpTime {
            transferred_ns: at_ns,
            done_ns: done,
        }
    }

    /// The time at which every die and channel is idle.
    pub fn all_idle_ns(&self) -> u64 {
        let d = self.die_busy_until_ns.iter().copied().max().unwrap_or(0);
        let c = self.channel_busy_until_ns.iter().copied().max().unwrap_or(0);
        d.max(c)
    }

    pub fn reset(&mut self) {
        self.die_busy_until_ns.iter_mut().for_each(|t| *t = 0);
        self.channel_busy_until_ns.iter_mut().for_each(|t| *t = 0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn programs_on_two_dies_overlap_but_share_the_channel() {
        let mut c = Clocks::new(2, 1);
        let a = c.program(0, 0, 0, 10, 200);
        let b = c.program(1, 0, 0, 10, 200);
        assert_eq!((a.transferred_ns, a.done_ns), (10, 210));
        // Second transfer waits for the channel, not for die 0.
        assert_eq!((b.transferred_ns, b.done_ns), (20, 220));
        // Same die: waits for the first program.
        let c2 = c.program(0, 0, 0, 10, 200);
        assert_eq!(c2.done_ns, 420);
        assert_eq!(c.all_idle_ns(), 420);
    }

    #[test]
    fn read_waits_for_busy_die() {
        let mut c = Clocks::new(1, 1);
        c.erase(0, 0, 1000);
        let r = c.read(0, 0, 5, 25, 10);
        assert_eq!(r.done_ns, 1035);
    }
}
