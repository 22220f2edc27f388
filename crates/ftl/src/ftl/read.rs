//! The host read path: a logical page read through the L2P or from a given
//! physical page, its OOB and data checked.

use super::Ftl;
use crate::device::Lpn;
use crate::error::{DeviceError, Result};
use crate::hooks::Hooks;
use crate::oob::{Oob, OobState};
use txftl_nand::Ppn;

impl<H: Hooks> Ftl<H> {
    /// Reads physical page `ppn`, which must hold logical page `lpn` (a
    /// protocol reading a transaction's own uncommitted copy).
    pub fn read_physical(&mut self, lpn: Lpn, ppn: Ppn, buf: &mut [u8]) -> Result<u64> {
        self.check_alive()?;
        self.check_lpn(lpn)?;
        self.check_data_len(buf.len())?;
        let start = self.now_ns;
        self.counters.host_reads += 1;
        self.read_mapped(lpn, ppn, buf)?;
        Ok(self.now_ns - start)
    }

    /// Reads the page `ppn` expecting logical page `lpn`; checks OOB and data
    /// CRCs. A page ECC cannot correct after every read retry, or one GC had
    /// to copy without its data, is `DataLost` (the device stays usable).
    pub(crate) fn read_mapped(&mut self, lpn: Lpn, ppn: Ppn, buf: &mut [u8]) -> Result<()> {
        // An empty buffer (metadata-only mode) still reads the data area: same
        // time and bit errors as a full read, nothing handed up.
        // A page this mount has checked is intact needs no data CRC; any
        // other has the array's CRC of what it hands up checked against its
        // record's (`Nand::read_crc`).
        let known = self.intact.get(ppn);
        let mut crc = None;
        let read = match known || buf.is_empty() {
            true => crate::ecc::read_retrying(&mut self.nand, ppn, self.now_ns, Some(&mut buf[..]), &mut self.oob_buf),
            false => crate::ecc::read_retrying_crc(&mut self.nand, ppn, self.now_ns, buf, &mut self.oob_buf, crc.insert(0)),
        };
        match read {
            Ok(Ok(done)) => self.now_ns = self.now_ns.max(done),
            Ok(Err(unreadable)) => {
                self.now_ns = self.now_ns.max(unreadable.done_ns);
                self.counters.uncorrectable_reads += 1;
                self.counters.lost_page_reads += 1;
                return Err(DeviceError::DataLost { lpn, ppn });
            }
            Err(e) => return Err(self.fail(e)),
        }
        // The read succeeded: the spare area is as the cells hold it.
        match Oob::decode_stored(&self.oob_buf, &self.nand, ppn) {
            OobState::Valid(o) if self.holds(&o, lpn) && o.lost => {
                self.counters.lost_page_reads += 1;
                Err(DeviceError::DataLost { lpn, ppn })
            }
            OobState::Valid(o) if self.holds(&o, lpn) && (crc.is_none() || o.data_crc.is_none_or(|c| Some(c) == crc)) => {
                self.intact.set(ppn, true);
                Ok(())
            }
            OobState::Valid(o) if self.holds(&o, lpn) => Err(DeviceError::Corrupted(format!(
                "logical page {lpn} at physical page {ppn}: the data does not match its checksum"
            ))),
            other => Err(DeviceError::Corrupted(format!(
                "logical page {lpn} at physical page {ppn}: expected its data page, found {other}"
            ))),
        }
    }

    pub fn read_page(&mut self, lpn: Lpn, buf: &mut [u8]) -> Result<u64> {
        self.check_alive()?;
        self.check_lpn(lpn)?;
        self.check_data_len(buf.len())?;
        let start = self.now_ns;
        self.counters.host_reads += 1;
        self.fetch_mapping(lpn)?;
        match self.mapping(lpn) {
            None => buf.fill(0),
            Some(ppn) => self.read_mapped(lpn, ppn, buf)?,
        }
        Ok(self.now_ns - start)
    }
}
