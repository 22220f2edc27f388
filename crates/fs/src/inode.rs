//! An inode in memory and its 256-byte encoding (the byte layout is in
//! [`crate::layout`]).

use crate::layout::{EXTENTS_MAX, NAME_MAX};
use crate::{FsError, Result};
use txftl_ftl::Lpn;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Inode {
    pub used: bool,
    pub class: u8,
    pub name: String,
    pub size: u64,
    /// (first device page, page count), in file order.
    pub extents: Vec<(u32, u32)>,
}

impl Inode {
    pub fn encode(&self, out: &mut [u8]) {
        out.fill(0);
        if !self.used {
            return;
        }
        out[0] = 1;
        out[1] = self.class;
        out[2..4].copy_from_slice(&(self.name.len() as u16).to_le_bytes());
        out[4..4 + self.name.len()].copy_from_slice(self.name.as_bytes());
        out[64..72].copy_from_slice(&self.size.to_le_bytes());
        out[72..76].copy_from_slice(&(self.extents.len() as u32).to_le_bytes());
        for (i, (start, len)) in self.extents.iter().enumerate() {
            out[80 + 8 * i..84 + 8 * i].copy_from_slice(&start.to_le_bytes());
            out[84 + 8 * i..88 + 8 * i].copy_from_slice(&len.to_le_bytes());
        }
    }

    pub fn decode(b: &[u8]) -> Result<Inode> {
        if b[0] == 0 {
            return Ok(Inode::default());
        }
        let u = |at: usize| u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"));
        let name_len = u16::from_le_bytes([b[2], b[3]]) as usize;
        let n = u(72) as usize;
        if name_len > NAME_MAX || n > EXTENTS_MAX {
            return Err(FsError::Format("corrupted inode".into()));
        }
        Ok(Inode {
            used: true,
            class: b[1],
            name: String::from_utf8_lossy(&b[4..4 + name_len]).into_owned(),
            size: u64::from_le_bytes(b[64..72].try_into().expect("8 bytes")),
            extents: (0..n).map(|i| (u(80 + 8 * i), u(84 + 8 * i))).collect(),
        })
    }

    pub fn pages(&self) -> u32 {
        self.extents.iter().map(|e| e.1).sum()
    }

    /// Device page of file page `index`.
    pub fn page(&self, mut index: u32) -> Option<Lpn> {
        for &(start, len) in &self.extents {
            if index < len {
                return Some(start + index);
            }
            index -= len;
        }
        None
    }
}
