//! The redo log: the arguments of every operation that changes the array,
//! so that another array holding the same contents can be brought to the
//! same state one operation at a time ([`Nand::redo`](crate::Nand::redo)),
//! or torn at any of them by arming a cut at its index first.
//!
//! Crash enumeration uses it to reach the flash a cut leaves inside a run it
//! has already made once (recovery), instead of running it again up to the
//! cut: reads change nothing on the array, so the array before operation `i`
//! is the starting array with the logged operations before `i` redone.

use crate::geometry::{BlockId, Ppn};

/// One operation that changes the array, with what it wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mutation {
    Program {
        ppn: Ppn,
        data: Vec<u8>,
        oob: Vec<u8>,
        like: Option<Ppn>,
    },
    PartialProgram {
        ppn: Ppn,
        data: Option<Vec<u8>>,
        oob: Option<Vec<u8>>,
    },
    Erase {
        block: BlockId,
    },
}

/// A logged operation: its index (the operation counter when it was
/// issued, as a [`PowerCut`](crate::PowerCut) counts), its submission time,
/// and what it did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MutationRecord {
    pub op_index: u64,
    pub at_ns: u64,
    pub mutation: Mutation,
}
