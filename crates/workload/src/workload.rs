//! Block-level workloads, generated on the fly from a seed (ChaCha8), so a run
//! of any length needs no memory and one seed replays it exactly.
//!
//! Every workload first fills `fill_pct`% of the logical pages sequentially
//! (the working set) and flushes; then it issues `ops` operations:
//! - `seqwrite`: writes sweeping the working set in order, wrapping around;
//! - `randwrite`: writes to uniformly random pages of the working set;
//! - `mixed`: 55% writes, 30% reads, 10% trims, 5% explicit flushes;
//! - `seqread`: reads sweeping the working set in order, wrapping around;
//! - `randread`: reads of uniformly random pages of the working set.
//! - `txwrite`: transactions of `pages_per_tx` writes each (a page may be
//!   re-updated inside its transaction, and transactions read pages too), up to
//!   `concurrency` open at once and interleaved; each ends in a commit, or an
//!   abort with probability `abort_pct`%; `nontx_pct`% of the operations are
//!   non-transactional writes mixed in, and `trim_pct`% are trims (of pages
//!   transactions write too: a trim between two commits is where X-FTL once
//!   brought back a value from before a committed transaction). When `ops` are
//!   issued, the open transactions are finished (so a run ends with none open).
//!   With `static_dynamic`, transactions are Möbius's static and dynamic
//!   ones, issued through their own calls (`static_dynamic_op`).
//! - `remap`: a write-ahead log in the working set's last quarter whose
//!   checkpoints remap its pages onto the database's (`remap.rs`; SW-WAL).
//!
//! Every workload also flushes after each `flush_every` writes.

use crate::remap::WalGen;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;
use txftl_ftl::extensions::{DynamicPos, SwriteAck};
use txftl_ftl::Op;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum WorkloadKind {
    SeqWrite,
    RandWrite,
    Mixed,
    TxWrite,
    SeqRead,
    RandRead,
    Remap,
}

pub const WORKLOAD_NAMES: &[&str] = &["seqwrite", "randwrite", "mixed", "txwrite", "seqread", "randread", "remap"];

/// Shape of the `txwrite` workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct TxShape {
    pub pages_per_tx: u32,
    /// Percent of transactions that abort.
    pub abort_pct: u32,
    /// Transactions open at once, at most.
    pub concurrency: u32,
    /// Percent of operations that are non-transactional writes.
    pub nontx_pct: u32,
    /// Percent of operations that are trims.
    pub trim_pct: u32,
    /// If not 0: run exactly this many transactions (and ignore `ops`).
    pub transactions: u64,
    /// Percent of transactional writes that go to a page another open
    /// transaction has written (several uncommitted versions of one page at
    /// once; needs `concurrency` above 1).
    pub cross_pct: u32,
    /// Writes outside transactions and trims only while no transaction is
    /// open (Möbius's dynamic transaction takes no other write while open).
    pub exclusive: bool,
    /// A committing transaction's last write is end-flagged
    /// (`Op::WriteEnd`: NoLgn's `TxEnd`), so its commit programs nothing;
    /// whether it aborts is drawn at that write instead of at its end.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub end_flag: bool,
    /// Transactions issued as Möbius's static and dynamic ones (the
    /// `StaticTx` and `DynamicTx` calls) instead of begin/write/commit:
    /// this percent of them dynamic, the rest static. A static one's pages
    /// are staged by the host and sent in one swrite, S-SWRITE or A-SWRITE
    /// half and half, and it never aborts (an abort is the host dropping
    /// its pages: no device call). A dynamic one writes distinct pages,
    /// HEAD first, its last a REAR (its commit) or, if it aborts, a BODY
    /// followed by a dabort; while it is open nothing else is issued.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub static_dynamic: Option<u32>,
}

impl Default for TxShape {
    fn default() -> Self {
        TxShape {
            pages_per_tx: 5,
            abort_pct: 10,
            concurrency: 1,
            nontx_pct: 0,
            trim_pct: 0,
            transactions: 0,
            cross_pct: 0,
            exclusive: false,
            end_flag: false,
            static_dynamic: None,
        }
    }
}

impl WorkloadKind {
    pub fn parse(s: &str) -> Option<WorkloadKind> {
        match s {
            "seqwrite" => Some(WorkloadKind::SeqWrite),
            "randwrite" => Some(WorkloadKind::RandWrite),
            "mixed" => Some(WorkloadKind::Mixed),
            "txwrite" => Some(WorkloadKind::TxWrite),
            "seqread" => Some(WorkloadKind::SeqRead),
            "randread" => Some(WorkloadKind::RandRead),
            "remap" => Some(WorkloadKind::Remap),
            _ => None,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            WorkloadKind::SeqWrite => "seqwrite",
            WorkloadKind::RandWrite => "randwrite",
            WorkloadKind::Mixed => "mixed",
            WorkloadKind::TxWrite => "txwrite",
            WorkloadKind::SeqRead => "seqread",
            WorkloadKind::RandRead => "randread",
            WorkloadKind::Remap => "remap",
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
    pub tx: TxShape,
}

/// A transaction the generator has open.
#[derive(Clone)]
struct OpenTx {
    tid: u32,
    writes: u32,
    pages: Vec<u32>,
    /// With `end_flag`: the abort drawn at its last write.
    aborts: Option<bool>,
    /// With `static_dynamic`: a dynamic transaction (else a static one).
    dynamic: bool,
}

/// The operation stream of a workload: the fill, then the measured operations.
#[derive(Clone)]
pub struct OpStream {
    spec: WorkloadSpec,
    rng: ChaCha8Rng,
    working_set: u32,
    filled: u32,
    fill_flushed: bool,
    issued: u64,
    cursor: u32,
    writes_since_flush: u32,
    next_tid: u32,
    open: Vec<OpenTx>,
    begun: u64,
    /// Transactional writes so far to a page another open transaction had
    /// written (`TxShape::cross_pct`).
    pub cross_tx_updates: u64,
    wal: WalGen,
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
            next_tid: 1,
            open: Vec::new(),
            begun: 0,
            cross_tx_updates: 0,
            wal: WalGen::default(),
        }
    }

    /// The stream a host issues after a power cut and recovery: no fill
    /// (the working set is on the device already), transaction ids from
    /// `first_tid` on (a host that outlives the cut does not reuse the ids
    /// it handed out before it). `spec.ops` operations, whatever
    /// `spec.tx.transactions` says.
    pub fn continuation(spec: WorkloadSpec, logical_pages: u32, first_tid: u32) -> OpStream {
        let spec = WorkloadSpec {
            tx: TxShape {
                transactions: 0,
                ..spec.tx
            },
            ..spec
        };
        let mut s = OpStream::new(spec, logical_pages);
        s.filled = s.working_set;
        s.fill_flushed = true;
        s.next_tid = first_tid;
        s
    }

    /// The id the next transaction begun gets.
    pub fn next_tid(&self) -> u32 {
        self.next_tid
    }

    pub fn working_set(&self) -> u32 {
        self.working_set
    }
    /// Operations of the fill phase (writes plus its closing flush).
    pub fn fill_ops(&self) -> u64 {
        self.working_set as u64 + 1
    }
    /// Operations of the whole stream (an estimate when counting transactions).
    pub fn total_ops(&self) -> u64 {
        let tx = self.spec.tx;
        if self.counts_transactions() {
            return self.fill_ops() + tx.transactions * (tx.pages_per_tx as u64 * 118 / 100 + 2);
        }
        self.fill_ops() + self.spec.ops
    }

    fn counts_transactions(&self) -> bool {
        self.spec.kind == WorkloadKind::TxWrite && self.spec.tx.transactions > 0
    }
    /// The host gave up on transaction `tid` (it aborted it): issue nothing more for it.
    pub fn forget(&mut self, tid: u32) {
        self.open.retain(|t| t.tid != tid);
    }

    /// Is the stream still in its fill phase?
    pub fn in_fill(&self) -> bool {
        !self.fill_flushed
    }

    /// The fill's writes not yet taken (`Op::Write` of each of these logical
    /// pages, in order), taken now: the next operation is the fill's
    /// closing flush, or what follows it.
    pub fn take_fill_writes(&mut self) -> std::ops::Range<u32> {
        let rest = self.filled..self.working_set.max(self.filled);
        self.filled = rest.end;
        rest
    }

    fn after_write(&mut self, op: Op) -> Op {
        self.writes_since_flush += 1;
        op
    }

    /// Commit, or abort with the configured probability.
    fn finish(&mut self, i: usize) -> Op {
        let tx = self.open.swap_remove(i);
        if self.spec.tx.static_dynamic.is_some() {
            return self.finish_static_dynamic(tx);
        }
        let aborts = match tx.aborts {
            Some(drawn) => drawn,
            None => self.rng.gen_range(0..100) < self.spec.tx.abort_pct,
        };
        if aborts {
            Op::Abort(tx.tid)
        } else {
            Op::Commit(tx.tid)
        }
    }

    fn next_tx_op(&mut self) -> Op {
        let shape = self.spec.tx;
        if let Some(dynamic_pct) = shape.static_dynamic {
            return self.static_dynamic_op(dynamic_pct);
        }
        let ws = self.working_set;
        let roll = self.rng.gen_range(0..100);
        let quiet = !shape.exclusive || self.open.is_empty();
        if quiet && roll < shape.nontx_pct {
            let lpn = self.rng.gen_range(0..ws);
            return self.after_write(Op::Write(lpn));
        }
        if quiet && roll < shape.nontx_pct + shape.trim_pct {
            return Op::Trim(self.rng.gen_range(0..ws));
        }
        let budget_left = shape.transactions == 0 || self.begun < shape.transactions;
        let may_begin = budget_left && (self.open.len() as u32) < shape.concurrency.max(1);
        if may_begin && (self.open.is_empty() || self.rng.gen_range(0..100) < 30) {
            let tid = self.next_tid;
            self.next_tid += 1;
            self.begun += 1;
            self.open.push(OpenTx {
                tid,
                writes: 0,
                pages: Vec::new(),
                aborts: None,
                dynamic: false,
            });
            return Op::Begin(tid);
        }
        let i = self.rng.gen_range(0..self.open.len());
        if self.open[i].writes >= shape.pages_per_tx {
            return self.finish(i);
        }
        let roll = self.rng.gen_range(0..100);
        let tid = self.open[i].tid;
        if roll < 15 {
            let lpn = self.rng.gen_range(0..ws);
            return Op::TxRead(tid, lpn);
        }
        let own = self.open[i].pages.len();
        let lpn = if roll < 35 && own > 0 {
            self.open[i].pages[self.rng.gen_range(0..own)] // a re-update inside the transaction
        } else {
            // With `cross_pct`, a page another open transaction wrote, if any.
            let cross = shape.cross_pct > 0 && self.rng.gen_range(0..100) < shape.cross_pct;
            let others: Vec<u32> = if cross {
                self.open
                    .iter()
                    .filter(|o| o.tid != tid)
                    .flat_map(|o| o.pages.iter().copied())
                    .collect()
            } else {
                Vec::new()
            };
            let lpn = if others.is_empty() {
                self.rng.gen_range(0..ws)
            } else {
                self.cross_tx_updates += 1;
                others[self.rng.gen_range(0..others.len())]
            };
            self.open[i].pages.push(lpn);
            lpn
        };
        self.open[i].writes += 1;
        if shape.end_flag && self.open[i].writes == shape.pages_per_tx {
            // Its last write: end-flagged if it commits.
            let aborts = self.rng.gen_range(0..100) < shape.abort_pct;
            self.open[i].aborts = Some(aborts);
            if !aborts {
                return self.after_write(Op::WriteEnd(tid, lpn));
            }
        }
        self.after_write(Op::TxWrite(tid, lpn))
    }
}

/// Möbius's static and dynamic transactions (`TxShape::static_dynamic`).
impl OpStream {
    fn static_dynamic_op(&mut self, dynamic_pct: u32) -> Op {
        let shape = self.spec.tx;
        let ws = self.working_set;
        // An open dynamic transaction takes every call until it ends.
        if let Some(i) = self.open.iter().position(|t| t.dynamic) {
            return self.static_dynamic_write(i);
        }
        let roll = self.rng.gen_range(0..100);
        if roll < shape.nontx_pct {
            let lpn = self.rng.gen_range(0..ws);
            return self.after_write(Op::Write(lpn));
        }
        if roll < shape.nontx_pct + shape.trim_pct {
            return Op::Trim(self.rng.gen_range(0..ws));
        }
        let budget_left = shape.transactions == 0 || self.begun < shape.transactions;
        let may_begin = budget_left && (self.open.len() as u32) < shape.concurrency.max(1);
        let i = if may_begin && (self.open.is_empty() || self.rng.gen_range(0..100) < 30) {
            let tid = self.next_tid;
            self.next_tid += 1;
            self.begun += 1;
            let dynamic = self.rng.gen_range(0..100) < dynamic_pct;
            self.open.push(OpenTx {
                tid,
                writes: 0,
                pages: Vec::new(),
                aborts: None,
                dynamic,
            });
            // No begin call: a transaction starts with its first page.
            self.open.len() - 1
        } else {
            self.rng.gen_range(0..self.open.len())
        };
        if self.open[i].writes >= shape.pages_per_tx {
            return self.finish(i);
        }
        if !self.open[i].dynamic && self.open[i].writes > 0 && self.rng.gen_range(0..100) < 15 {
            return Op::Sread(self.rng.gen_range(0..ws));
        }
        self.static_dynamic_write(i)
    }

    /// Transaction `i`'s next page: staged (static), or sent at its place
    /// in the chain (dynamic; a REAR ends it).
    fn static_dynamic_write(&mut self, i: usize) -> Op {
        let shape = self.spec.tx;
        let ws = self.working_set;
        let tx = &self.open[i];
        if tx.writes >= shape.pages_per_tx {
            return self.finish(i);
        }
        let (tid, own) = (tx.tid, tx.pages.len());
        if !tx.dynamic {
            let lpn = if own > 0 && self.rng.gen_range(0..100) < 25 {
                self.open[i].pages[self.rng.gen_range(0..own)] // a re-update, held once
            } else {
                self.rng.gen_range(0..ws)
            };
            self.open[i].pages.push(lpn);
            self.open[i].writes += 1;
            return self.after_write(Op::Stage(tid, lpn));
        }
        // A chain names each page once: a few draws for one not in it yet.
        let mut lpn = self.rng.gen_range(0..ws);
        for _ in 0..8 {
            if !self.open[i].pages.contains(&lpn) {
                break;
            }
            lpn = self.rng.gen_range(0..ws);
        }
        let tx = &mut self.open[i];
        tx.pages.push(lpn);
        tx.writes += 1;
        let first = tx.writes == 1;
        let pos = if tx.writes < shape.pages_per_tx {
            if first {
                DynamicPos::Head
            } else {
                DynamicPos::Body
            }
        } else {
            // Its last page: a REAR commits it; if it aborts, the page goes
            // as any other and a dabort follows.
            let aborts = self.rng.gen_range(0..100) < shape.abort_pct;
            self.open[i].aborts = Some(aborts);
            match (aborts, first) {
                (false, _) => {
                    self.open.swap_remove(i);
                    DynamicPos::Rear
                }
                (true, true) => DynamicPos::Head,
                (true, false) => DynamicPos::Body,
            }
        };
        self.after_write(Op::Dwrite(tid, lpn, pos))
    }

    /// A static transaction's swrite; a dynamic one's dabort (one that
    /// commits ends at its REAR).
    fn finish_static_dynamic(&mut self, tx: OpenTx) -> Op {
        debug_assert!(tx.writes > 0, "a transaction starts with its first page");
        if tx.dynamic {
            return Op::Dabort(tx.tid);
        }
        let ack = if self.rng.gen_range(0..2) == 0 {
            SwriteAck::AllPages
        } else {
            SwriteAck::Record
        };
        Op::Swrite(tx.tid, ack)
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
        if self.counts_transactions() {
            if self.begun >= self.spec.tx.transactions && self.open.is_empty() {
                return None;
            }
        } else if self.issued >= self.spec.ops {
            // Finish the transactions still open, so a run ends with none.
            if self.open.is_empty() {
                return None;
            }
            // An open dynamic transaction first: nothing else goes while it is.
            let i = self.open.iter().position(|t| t.dynamic).unwrap_or(self.open.len() - 1);
            return Some(self.finish(i));
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
            WorkloadKind::TxWrite => self.next_tx_op(),
            WorkloadKind::SeqRead => {
                let lpn = self.cursor;
                self.cursor = (self.cursor + 1) % ws;
                Op::Read(lpn)
            }
            WorkloadKind::RandRead => Op::Read(self.rng.gen_range(0..ws)),
            WorkloadKind::Remap => match self.wal.next(&mut self.rng, ws) {
                op @ (Op::Write(_) | Op::WriteRemappable(..)) => self.after_write(op),
                Op::Flush => {
                    self.writes_since_flush = 0;
                    Op::Flush
                }
                op => op,
            },
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
            tx: TxShape::default(),
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

#[cfg(test)]
mod tx_tests {
    use super::*;

    #[test]
    fn txwrite_shape() {
        let tx = TxShape {
            pages_per_tx: 4,
            abort_pct: 30,
            concurrency: 3,
            nontx_pct: 10,
            trim_pct: 5,
            transactions: 0,
            cross_pct: 0,
            exclusive: false,
            end_flag: false,
            static_dynamic: None,
        };
        let spec = WorkloadSpec {
            kind: WorkloadKind::TxWrite,
            ops: 2000,
            fill_pct: 50,
            seed: 9,
            flush_every: 16,
            tx,
        };
        let ops: Vec<Op> = OpStream::new(spec, 100).collect();
        let mut open = std::collections::BTreeMap::new();
        let mut max_open = 0;
        let (mut commits, mut aborts, mut reupdates, mut nontx, mut trims) = (0, 0, 0, 0, 0);
        for op in &ops {
            match *op {
                Op::Begin(t) => {
                    open.insert(t, Vec::new());
                    max_open = max_open.max(open.len());
                }
                Op::TxWrite(t, l) => {
                    let pages = open.get_mut(&t).expect("write inside an open transaction");
                    if pages.contains(&l) {
                        reupdates += 1;
                    }
                    pages.push(l);
                    assert!(pages.len() <= 4);
                }
                Op::TxRead(t, _) => assert!(open.contains_key(&t)),
                Op::Commit(t) => {
                    commits += 1;
                    open.remove(&t).unwrap();
                }
                Op::Abort(t) => {
                    aborts += 1;
                    open.remove(&t).unwrap();
                }
                Op::Write(_) => nontx += 1,
                Op::Trim(_) => trims += 1,
                _ => {}
            }
        }
        assert!(open.is_empty(), "the stream closes every transaction");
        let counted = WorkloadSpec {
            tx: TxShape { transactions: 37, ..tx },
            ..spec
        };
        let n = OpStream::new(counted, 100)
            .filter(|o| matches!(o, Op::Commit(_) | Op::Abort(_)))
            .count();
        assert_eq!(n, 37, "--txs runs exactly that many transactions");
        assert_eq!(max_open, 3);
        assert!(
            commits > 0 && aborts > 0 && reupdates > 0 && nontx > 50 && trims > 20,
            "{commits} {aborts} {reupdates} {nontx} {trims}"
        );
    }

    /// With `end_flag`, a committing transaction's last write (its
    /// `pages_per_tx`-th) is end-flagged and followed by its commit only;
    /// an aborting one has none.
    #[test]
    fn end_flagged_transactions_end_in_write_end_then_commit() {
        let tx = TxShape {
            pages_per_tx: 3,
            abort_pct: 30,
            concurrency: 2,
            end_flag: true,
            ..TxShape::default()
        };
        let spec = WorkloadSpec {
            kind: WorkloadKind::TxWrite,
            ops: 2000,
            fill_pct: 50,
            seed: 4,
            flush_every: 16,
            tx,
        };
        let mut ended = std::collections::BTreeSet::new();
        let mut writes: std::collections::BTreeMap<u32, u32> = Default::default();
        let (mut ends, mut commits) = (0, 0);
        for op in OpStream::new(spec, 100) {
            match op {
                Op::TxWrite(t, _) => {
                    assert!(!ended.contains(&t), "a write after the end-flagged one");
                    *writes.entry(t).or_default() += 1;
                }
                Op::TxRead(t, _) => assert!(!ended.contains(&t), "a read after the end-flagged write"),
                Op::WriteEnd(t, _) => {
                    *writes.entry(t).or_default() += 1;
                    assert_eq!(writes[&t], 3, "the end flag is on the last write");
                    ended.insert(t);
                    ends += 1;
                }
                Op::Commit(t) => {
                    commits += 1;
                    // Full transactions end flagged; those the end of the
                    // stream closes early commit plainly.
                    assert_eq!(ended.remove(&t), writes.get(&t) == Some(&3), "tx {t}");
                }
                Op::Abort(t) => assert!(!ended.contains(&t), "an end-flagged transaction aborted"),
                _ => {}
            }
        }
        assert!(ends > 50 && commits >= ends, "{ends} end-flagged of {commits} commits");
    }

    /// With `static_dynamic`: a static transaction is staged pages then one
    /// swrite (both acks drawn); a dynamic one is a chain, HEAD first, the
    /// pages distinct, ending in a REAR or a dabort, with nothing else
    /// issued while it is open; no begin, commit or abort.
    #[test]
    fn static_and_dynamic_transactions_use_their_own_calls() {
        use std::collections::{BTreeMap, BTreeSet};
        let tx = TxShape {
            pages_per_tx: 3,
            abort_pct: 30,
            concurrency: 2,
            nontx_pct: 10,
            trim_pct: 5,
            static_dynamic: Some(40),
            ..TxShape::default()
        };
        let spec = WorkloadSpec {
            kind: WorkloadKind::TxWrite,
            ops: 3000,
            fill_pct: 50,
            seed: 5,
            flush_every: 16,
            tx,
        };
        let mut staged: BTreeMap<u32, u32> = BTreeMap::new();
        let mut chain: Option<(u32, BTreeSet<u32>)> = None;
        let (mut acks, mut rears, mut dabort, mut sreads) = (BTreeSet::new(), 0, 0, 0);
        for op in OpStream::new(spec, 100) {
            if let Some((t, _)) = &chain {
                let in_chain = matches!(op, Op::Dwrite(u, ..) | Op::Dabort(u) if u == *t);
                assert!(in_chain || op == Op::Flush, "{op:?} while dynamic {t} is open");
            }
            match op {
                Op::Begin(_) | Op::Commit(_) | Op::Abort(_) | Op::TxWrite(..) | Op::TxRead(..) => panic!("{op:?}"),
                Op::Stage(t, _) => *staged.entry(t).or_default() += 1,
                Op::Swrite(t, ack) => {
                    // Those the end of the stream finishes early have fewer.
                    assert!(matches!(staged.remove(&t), Some(1..=3)), "tx {t} sends the pages it staged");
                    acks.insert(format!("{ack:?}"));
                }
                Op::Sread(_) => sreads += 1,
                Op::Dwrite(t, lpn, pos) => {
                    let (_, pages) = chain.get_or_insert((t, BTreeSet::new()));
                    assert_eq!(pos == DynamicPos::Head, pages.is_empty(), "{op:?}");
                    assert!(pages.insert(lpn), "tx {t} names page {lpn} twice");
                    if pos == DynamicPos::Rear {
                        assert_eq!(pages.len(), 3);
                        chain = None;
                        rears += 1;
                    }
                }
                Op::Dabort(t) => {
                    assert_eq!(chain.take().map(|c| c.0), Some(t));
                    dabort += 1;
                }
                _ => {}
            }
        }
        assert!(staged.is_empty() && chain.is_none(), "the stream ends with every transaction ended");
        assert_eq!(acks.len(), 2, "both swrite acks drawn");
        assert!(
            rears > 20 && dabort > 5 && sreads > 20,
            "{rears} rears, {dabort} dabort, {sreads} sreads"
        );
    }
}
