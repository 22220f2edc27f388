//! The operation log (the kind of every operation issued) and the redo log
//! (what every operation that changes the array wrote, `redo.rs`), and
//! issuing a logged operation again.

use super::{FlashOp, Nand};
use crate::error::NandError;
use crate::redo::{Mutation, MutationRecord};
use crate::timing::OpTime;

impl Nand {
    /// Starts (or stops) recording the kind of every operation issued.
    pub fn set_op_log(&mut self, on: bool) {
        self.op_log = on.then(Vec::new);
    }
    /// Kinds of the operations issued since the log was switched on, by index.
    pub fn op_log(&self) -> &[FlashOp] {
        self.op_log.as_deref().unwrap_or(&[])
    }

    /// The op log's indices of the operations that change the array
    /// (programs, partial programs, erases): where a crash test cuts.
    pub fn mutating_ops(&self) -> Vec<u64> {
        let log = self.op_log();
        (0..log.len() as u64).filter(|&i| log[i as usize].mutates()).collect()
    }

    /// Starts (or stops) recording what every operation that changes the
    /// array writes (`redo.rs`): what [`Nand::redo`] needs to do it again.
    pub fn set_redo_log(&mut self, on: bool) {
        self.redo_log = on.then(Vec::new);
    }
    /// The operations that changed the array since the log was switched on.
    pub fn redo_log(&self) -> &[MutationRecord] {
        self.redo_log.as_deref().unwrap_or(&[])
    }

    /// Issues a logged operation again, as operation number `rec.op_index`:
    /// on an array holding what the logged one held before it, the result
    /// is the same, and a cut armed at that index tears it the same way.
    pub fn redo(&mut self, rec: &MutationRecord) -> Result<OpTime, NandError> {
        self.op_count = rec.op_index;
        match &rec.mutation {
            Mutation::Program { ppn, data, oob, like } => {
                self.program_hinted(*ppn, rec.at_ns, data, super::program::SpareIn::Bytes(oob), *like)
            }
            Mutation::PartialProgram { ppn, data, oob } => self.partial_program(*ppn, rec.at_ns, data.as_deref(), oob.as_deref()),
            Mutation::Erase { block } => self.erase(*block, rec.at_ns),
        }
    }

    /// Records an operation about to be issued, as the number it will take.
    /// One refused before it took a number (a rule violation returned as an
    /// error) is replaced by the next operation, which takes that number.
    pub(super) fn log_mutation(&mut self, at_ns: u64, mutation: impl FnOnce() -> Mutation) {
        let op_index = self.op_count;
        if let Some(log) = &mut self.redo_log {
            if log.last().is_some_and(|r| r.op_index == op_index) {
                log.pop();
            }
            log.push(MutationRecord {
                op_index,
                at_ns,
                mutation: mutation(),
            });
        }
    }
}
