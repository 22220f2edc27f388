//! Fault injection: the fault model (bit errors, ECC, read retry, program
//! and erase failures, `bit_errors.rs`), and a byte flipped in a page.

use super::{Data, Nand};
use crate::bit_errors::FaultModel;
use crate::error::NandError;
use crate::geometry::Ppn;

impl Nand {
    /// Sets (or with `None` removes) the fault model: bit errors, ECC, read
    /// retry, program and erase failures. Refuses invalid parameters.
    pub fn set_fault_model(&mut self, model: Option<FaultModel>) -> Result<(), String> {
        if let Some(m) = &model {
            m.validate()?;
        }
        self.faults = model;
        Ok(())
    }

    pub fn fault_model(&self) -> Option<FaultModel> {
        self.faults
    }

    /// Fault injection: XORs `mask` into byte `offset` of a programmed page's
    /// data (`in_oob` false) or OOB, as a retention error or a flipped byte in an
    /// image would. Costs no time and counts no operation; written through to an
    /// image. Returns false (and changes nothing) for an erased page or an
    /// offset past the area.
    pub fn flip_byte(&mut self, ppn: Ppn, in_oob: bool, offset: usize, mask: u8) -> Result<bool, NandError> {
        self.check_ppn(ppn)?;
        let g = self.cfg.geometry;
        let (os, ps) = (g.oob_size as usize, g.page_size as usize);
        if self.programs.get(ppn) == 0 || offset >= if in_oob { os } else { ps } {
            return Ok(false);
        }
        if in_oob {
            let mut spare = vec![0u8; os];
            self.spare.read(ppn, &mut spare);
            spare[offset] ^= mask;
            self.spare.write(ppn, &spare);
        } else {
            match &mut self.data {
                Data::Full(d) => d.page_mut(ppn)[offset] ^= mask,
                Data::Meta(m) => {
                    let mut page = vec![0u8; ps];
                    if !m.read(ppn, &mut page) {
                        return Ok(false);
                    }
                    page[offset] ^= mask;
                    m.insert(ppn, &page, None);
                }
            }
        }
        self.write_through_page(ppn)?;
        Ok(true)
    }
}
