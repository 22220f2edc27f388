//! Reads through ECC. With a fault model on the NAND, a page may come back
//! with more bit errors than ECC corrects; the FTL then rereads it at each
//! read-retry level the chip offers (each a read of its own, issued when the
//! previous one is done) before it counts as unreadable. What an unreadable
//! page means is the caller's business: a host read reports the page lost
//! (`DeviceError::DataLost`), GC copies it marked lost, recovery treats its
//! record as absent (and a data page with an intact spare area as lost).

use txftl_nand::{DataDigest, Nand, NandError, OpTime, Ppn, ReadFields};

/// A page that stayed uncorrectable at every retry level: whether its spare
/// area failed too (otherwise only the data did), and when the last retry completed.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Unreadable {
    pub oob: bool,
    pub done_ns: u64,
}

/// Reads `ppn` (OOB only when `data` is `None`) at `at_ns`, retrying at every
/// level on uncorrectable errors. `Ok(Ok(done))` on success; `Ok(Err(..))`
/// when every level failed (the buffers then hold what the last decode
/// handed up, which is not the page); `Err` for any other NAND error.
pub(crate) fn read_retrying(
    nand: &mut Nand,
    ppn: Ppn,
    at_ns: u64,
    data: Option<&mut [u8]>,
    oob: &mut [u8],
) -> Result<Result<u64, Unreadable>, NandError> {
    retrying(nand, ppn, at_ns, data, oob, None)
}

/// [`read_retrying`] that hands up a packed spare area as its fields
/// (`Nand::read_fields`): `fields` is `Some` after a successful read of a
/// packed spare area, `oob` then left as it was; `None` with the bytes in
/// `oob` otherwise.
pub(crate) fn read_retrying_fields(
    nand: &mut Nand,
    ppn: Ppn,
    at_ns: u64,
    mut data: Option<&mut [u8]>,
    (oob, fields): (&mut [u8], &mut Option<ReadFields>),
) -> Result<Result<u64, Unreadable>, NandError> {
    at_each_level(nand, at_ns, |nand, t, level| {
        nand.read_fields(ppn, t, level, data.as_deref_mut(), (&mut *oob, &mut *fields))
    })
}

/// [`read_retrying`] of the data and spare areas that sets `crc` to the
/// CRC-32 of the data handed up (`Nand::read_crc`) on success.
pub(crate) fn read_retrying_crc(
    nand: &mut Nand,
    ppn: Ppn,
    at_ns: u64,
    data: &mut [u8],
    oob: &mut [u8],
    crc: &mut u32,
) -> Result<Result<u64, Unreadable>, NandError> {
    retrying(nand, ppn, at_ns, Some(data), oob, Some(crc))
}

/// [`read_retrying`] that, when `crc` and `data` are both given, sets `crc`
/// to the CRC-32 of the data handed up on success ([`read_retrying_crc`]).
pub(crate) fn retrying(
    nand: &mut Nand,
    ppn: Ppn,
    at_ns: u64,
    mut data: Option<&mut [u8]>,
    oob: &mut [u8],
    mut crc: Option<&mut u32>,
) -> Result<Result<u64, Unreadable>, NandError> {
    at_each_level(nand, at_ns, |nand, t, level| match (crc.as_deref_mut(), data.as_deref_mut()) {
        (Some(c), Some(d)) => nand.read_crc(ppn, t, level, d, oob).map(|(time, v)| {
            *c = v;
            time
        }),
        _ if level == 0 => nand.read(ppn, t, data.as_deref_mut(), oob),
        _ => nand.read_retry(ppn, t, level, data.as_deref_mut(), oob),
    })
}

/// [`read_retrying`] of the data's digest (whether it reads erased and, if
/// `crc`, its CRC-32) rather than its bytes (`Nand::read_digest`): `Some`
/// on success; when every level failed, `None`, and `scratch` holds what
/// the last decode handed up, as `read_retrying`'s buffer would.
pub(crate) fn read_retrying_digest(
    nand: &mut Nand,
    ppn: Ppn,
    at_ns: u64,
    (scratch, oob): (&mut [u8], &mut [u8]),
    crc: bool,
) -> Result<(Result<u64, Unreadable>, Option<DataDigest>), NandError> {
    let mut digest = None;
    let read = at_each_level(nand, at_ns, |nand, t, level| {
        nand.read_digest(ppn, t, level, (&mut *scratch, &mut *oob), crc).map(|(time, d)| {
            digest = Some(d);
            time
        })
    })?;
    Ok((read, digest))
}

/// Issues `read` (the array, its issue time, the retry level) at level 0,
/// then at each retry level while the decode fails, each when the previous
/// one is done.
fn at_each_level(
    nand: &mut Nand,
    at_ns: u64,
    mut read: impl FnMut(&mut Nand, u64, u8) -> Result<OpTime, NandError>,
) -> Result<Result<u64, Unreadable>, NandError> {
    let mut t = at_ns;
    let mut last = None;
    for level in 0..=nand.read_retry_levels() {
        match read(nand, t, level) {
            Ok(time) => return Ok(Ok(time.done_ns)),
            Err(NandError::Uncorrectable { oob, done_ns, .. }) => {
                t = done_ns;
                last = Some(Unreadable { oob, done_ns });
            }
            Err(e) => return Err(e),
        }
    }
    Ok(Err(last.expect("at least one read was issued")))
}

/// Like [`read_retrying`], for readers that check what they read themselves
/// (records with CRCs, self-describing log pages, erased-page probes): an
/// unreadable page leaves corrupted bytes in the buffers, which fail those
/// checks, so it reads as a torn page would. Returns when the last read is done.
pub(crate) fn read_lenient(nand: &mut Nand, ppn: Ppn, at_ns: u64, data: Option<&mut [u8]>, oob: &mut [u8]) -> Result<u64, NandError> {
    Ok(match read_retrying(nand, ppn, at_ns, data, oob)? {
        Ok(done) => done,
        Err(u) => u.done_ns,
    })
}
