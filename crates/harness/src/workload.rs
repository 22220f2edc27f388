//! Block-level workloads, generated on the fly from a seed (ChaCha8), so a run
//! of any length needs no memory and one seed replays it exactly.
//!
//! Every workload first fills `fill_pct`% of the logical pages sequentially
//! (the working set) and flushes; then it issues `ops` operations:
//! - `seqwrite`: writes sweeping the working set in order, wrapping around;
//! - `randwrite`: writes to uniformly random pages of the working set;
//! - `mixed`: 55% writes, 30% reads, 10% trims, 5% explicit flushes.
//!
//! Every workload also flushes after each `flush_every` writes.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum WorkloadKind {
    SeqWrite,
    RandWrite,
    Mixed,
}

pub const WORKLOAD_NAMES: &[&str] = &["seqwrite", "randwrite", "mixed"];

impl WorkloadKind {
    pub fn parse(s: &str) -> Option<WorkloadKind> {
        match s {
            "seqwrite" => Some(WorkloadKind::SeqWrite),
            "randwrite" => Some(WorkloadKind::RandWrite),
            "mixed" => Some(WorkloadKind::Mixed),
            _ => None,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            WorkloadKind::SeqWrite => "seqwrite",
            WorkloadKind::RandWrite => "randwrite",
            WorkloadKind::Mixed => "mixed",
        }
    }
}

#[derive(Clone, Copy, Debug, Serialize)]
pub struct WorkloadSpec {
    pub kind: WorkloadKind,
    /// Operations after the fill.
    pub ops: u64,
    /// Working set, percent of the logical pages (1..=100).
    pub fill_pct: u32,
    pub seed: u64,
    /// A flush after this many writes (0: never, except the one closing the fill).
    pub flush_every: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Write(u32),
    Read(u32),
    Trim(u32),
    Flush,
}

/// The operation stream of a workload: the fill, then the measured operations.
pub struct OpStream {
    spec: WorkloadSpec,
    rng: ChaCha8Rng,
    working_set: u32,
    filled: u32,
    fill_flushed: bool,
    issued: u64,
    cursor: u32,
    writes_since_flush: u32,
}

impl OpStream {
    pub fn new(spec: WorkloadSpec, logical_pages: u32) -> OpStream {
        let working_set = ((logical_pages as u64 * spec.fill_pct as u64) / 100).clamp(1, logical_pages as u64) as u32;
        OpStream {
            spec,
            rng: ChaCha8Rng::seed_from_u64(spec.seed),
            working_set,
            filled: 0,
            fill_flushed: false,
            issued: 0,
            cursor: 0,
            writes_since_flush: 0,
        }
    }

    pub fn working_set(&self) -> u32 {
        self.working_set
    }
    /// Operations of the fill phase (writes plus its closing flush).
    pub fn fill_ops(&self) -> u64 {
        self.working_set as u64 + 1
    }
    pub fn total_ops(&self) -> u64 {
        self.fill_ops() + self.spec.ops
    }
    /// Is the stream still in its fill phase?
    pub fn in_fill(&self) -> bool {
        !self.fill_flushed
    }

    fn after_write(&mut self, op: Op) -> Op {
        self.writes_since_flush += 1;
        op
    }
}

impl Iterator for OpStream {
    type Item = Op;

    fn next(&mut self) -> Option<Op> {
        if self.filled < self.working_set {
            self.filled += 1;
            return Some(Op::Write(self.filled - 1));
        }
        if !self.fill_flushed {
            self.fill_flushed = true;
            return Some(Op::Flush);
        }
        if self.issued >= self.spec.ops {
            return None;
        }
        self.issued += 1;
        if self.spec.flush_every > 0 && self.writes_since_flush >= self.spec.flush_every {
            self.writes_since_flush = 0;
            return Some(Op::Flush);
        }
        let ws = self.working_set;
        let op = match self.spec.kind {
            WorkloadKind::SeqWrite => {
                let lpn = self.cursor;
                self.cursor = (self.cursor + 1) % ws;
                self.after_write(Op::Write(lpn))
            }
            WorkloadKind::RandWrite => {
                let lpn = self.rng.gen_range(0..ws);
                self.after_write(Op::Write(lpn))
            }
            WorkloadKind::Mixed => {
                let roll = self.rng.gen_range(0..100u32);
                let lpn = self.rng.gen_range(0..ws);
                match roll {
                    0..55 => self.after_write(Op::Write(lpn)),
                    55..85 => Op::Read(lpn),
                    85..95 => Op::Trim(lpn),
                    _ => {
                        self.writes_since_flush = 0;
                        Op::Flush
                    }
                }
            }
        };
        Some(op)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_stream_and_fill_first() {
        let spec = WorkloadSpec {
            kind: WorkloadKind::Mixed,
            ops: 100,
            fill_pct: 50,
            seed: 3,
            flush_every: 8,
        };
        let a: Vec<Op> = OpStream::new(spec, 20).collect();
        let b: Vec<Op> = OpStream::new(spec, 20).collect();
        assert_eq!(a, b);
        assert_eq!(
            &a[..11],
            &[(0..10).map(Op::Write).collect::<Vec<_>>(), vec![Op::Flush]].concat()[..]
        );
        assert_eq!(a.len(), 111);
        assert!(a.iter().any(|o| matches!(o, Op::Trim(_))));
        assert!(a.iter().all(|o| !matches!(o, Op::Write(l) | Op::Read(l) | Op::Trim(l) if *l >= 10)));
    }
}
