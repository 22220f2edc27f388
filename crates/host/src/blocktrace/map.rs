//! From a trace's byte ranges to the device's logical pages.
//!
//! [`page_span`] is the exact page arithmetic. [`AddressMap`] applies a
//! device's limits to a stream of requests:
//!
//! - **Capacity.** A request that ends past the device's logical capacity is,
//!   by default ([`Overflow::Refuse`]), an error naming its line and the number
//!   of pages the trace needs at least. With [`Overflow::Wrap`] its byte offset
//!   is folded modulo the capacity (as MQSim does with addresses past its
//!   range), and a request that then runs past the end continues at byte 0: it
//!   is given as two spans. The capacity is a whole number of pages, so folding
//!   keeps a request's offset inside its page, and partial pages stay exact.
//!   Wrapped requests are counted ([`MapStats::wrapped`]). A request larger than
//!   the device is an error either way.
//! - **Devices.** Traces name devices (MSR's DiskNumber, blkparse's
//!   `major,minor`, MQSim's device column). By default ([`Devices::Single`]) a
//!   trace must name one device: a request for a second one is an error naming
//!   both, since replaying two disks' addresses onto one device silently would
//!   make them overwrite each other. [`Devices::Only`] keeps one device's
//!   requests and drops the others (counted); [`Devices::Merge`] puts every
//!   device's requests on the one address space, offsets as given (what MQSim
//!   does: it ignores the device column).
//!
//! Flushes have no range: they pass the device selection and are never
//! refused or wrapped.

use serde::Serialize;

use super::{BlockRequest, PageSpan, ReqKind, TraceError};

/// The logical pages `req` covers with pages of `page_size` bytes.
///
/// `partial_head` is set when the request does not start on a page boundary,
/// `partial_tail` when it does not end on one; a request inside one page can
/// have both, and both then describe that page. A request of zero bytes (a
/// flush) covers no page: `pages == 0`, neither flag, `first_lpn` the page
/// holding its offset.
///
/// # Panics
/// If `page_size` is 0.
pub fn page_span(req: &BlockRequest, page_size: u32) -> PageSpan {
    assert!(page_size > 0, "a page holds at least one byte");
    let page = u64::from(page_size);
    let first_lpn = req.offset_bytes / page;
    if req.len_bytes == 0 {
        return PageSpan {
            first_lpn,
            pages: 0,
            partial_head: false,
            partial_tail: false,
        };
    }
    // In u128: offset + len may pass 2^64 on a request not made by a parser.
    let head_bytes = u128::from(req.offset_bytes % page);
    let end = u128::from(req.offset_bytes) + u128::from(req.len_bytes);
    let pages = (head_bytes + u128::from(req.len_bytes)).div_ceil(u128::from(page));
    let span = PageSpan {
        first_lpn,
        pages: u64::try_from(pages).expect("at most len + 1 pages of 2 or more bytes, or len pages of 1 byte"),
        partial_head: head_bytes != 0,
        partial_tail: end % u128::from(page) != 0,
    };
    debug_assert!(span.pages >= 1);
    debug_assert!(u128::from(span.first_lpn) * u128::from(page) <= u128::from(req.offset_bytes));
    debug_assert!((u128::from(span.first_lpn) + pages) * u128::from(page) >= end);
    span
}

/// What to do with a request past the device's capacity.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Overflow {
    /// An error naming the line and the capacity needed.
    #[default]
    Refuse,
    /// Fold the offset modulo the capacity.
    Wrap,
}

/// Which of a trace's devices are replayed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Devices {
    /// One device: the first request's. A request for another is an error.
    #[default]
    Single,
    /// Only this device number; the others' requests are dropped (counted).
    Only(u32),
    /// Every device, on one address space, offsets as given.
    Merge,
}

/// A request placed on the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct MappedRequest {
    /// The request, its offset folded into the device when wrapped (the length
    /// is the trace's, and may continue in `rest`).
    pub req: BlockRequest,
    /// The pages it covers (up to the device's end when it wraps).
    pub span: PageSpan,
    /// When a wrapped request runs past the device's end: the pages it
    /// continues on from LPN 0.
    pub rest: Option<PageSpan>,
}

/// What an [`AddressMap`] has done.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct MapStats {
    /// Requests mapped (returned).
    pub mapped: u64,
    /// Requests whose offset was folded or that were split at the device's end.
    pub wrapped: u64,
    /// Requests of other devices dropped ([`Devices::Only`]).
    pub other_device_dropped: u64,
    /// The highest end (byte) of a request seen, before folding: the capacity
    /// the trace needs so far.
    pub end_bytes_max: u64,
}

/// Places a trace's requests on a device of `capacity_pages` pages; see the module doc.
#[derive(Clone, Debug)]
pub struct AddressMap {
    page_size: u32,
    capacity_pages: u64,
    capacity_bytes: u64,
    overflow: Overflow,
    devices: Devices,
    /// With [`Devices::Single`]: the device of the first request, and its line.
    first_device: Option<(u32, u64)>,
    stats: MapStats,
}

impl AddressMap {
    /// A map onto `capacity_pages` pages of `page_size` bytes, refusing
    /// overflow and more than one device (the defaults).
    ///
    /// # Panics
    /// If `page_size` or `capacity_pages` is 0, or the capacity is 2^64 bytes or more.
    pub fn new(page_size: u32, capacity_pages: u64) -> Self {
        assert!(page_size > 0 && capacity_pages > 0, "a device has pages of at least a byte");
        let capacity_bytes = capacity_pages
            .checked_mul(u64::from(page_size))
            .expect("a capacity under 2^64 bytes");
        Self {
            page_size,
            capacity_pages,
            capacity_bytes,
            overflow: Overflow::default(),
            devices: Devices::default(),
            first_device: None,
            stats: MapStats::default(),
        }
    }

    pub fn with_overflow(mut self, overflow: Overflow) -> Self {
        self.overflow = overflow;
        self
    }

    pub fn with_devices(mut self, devices: Devices) -> Self {
        self.devices = devices;
        self
    }

    pub fn page_size(&self) -> u32 {
        self.page_size
    }

    pub fn capacity_pages(&self) -> u64 {
        self.capacity_pages
    }

    pub fn stats(&self) -> &MapStats {
        &self.stats
    }

    /// Places `req`, read from `line` of the trace. `Ok(None)` when it is
    /// dropped ([`Devices::Only`] another device); an error, naming `line`, when
    /// it names a second device under [`Devices::Single`] or does not fit.
    pub fn map(&mut self, line: u64, req: &BlockRequest) -> Result<Option<MappedRequest>, TraceError> {
        let error = |message: String| TraceError { line, message };
        match self.devices {
            Devices::Single => match self.first_device {
                None => self.first_device = Some((req.device, line)),
                Some((device, first_line)) if device != req.device => {
                    return Err(error(format!(
                        "a request for device {} after device {device} (line {first_line}): the trace has more than one device; \
                         replay one of them, or merge them onto one address space",
                        req.device
                    )));
                }
                Some(_) => {}
            },
            Devices::Only(device) if device != req.device => {
                self.stats.other_device_dropped += 1;
                return Ok(None);
            }
            Devices::Only(_) | Devices::Merge => {}
        }
        if req.kind == ReqKind::Flush {
            self.stats.mapped += 1;
            let span = PageSpan {
                first_lpn: 0,
                pages: 0,
                partial_head: false,
                partial_tail: false,
            };
            return Ok(Some(MappedRequest {
                req: *req,
                span,
                rest: None,
            }));
        }

        let end = req.offset_bytes.checked_add(req.len_bytes).ok_or_else(|| {
            error(format!(
                "the range of {} bytes at byte {} ends past 2^64 bytes",
                req.len_bytes, req.offset_bytes
            ))
        })?;
        self.stats.end_bytes_max = self.stats.end_bytes_max.max(end);
        let page = u64::from(self.page_size);
        let mapped = if end <= self.capacity_bytes {
            MappedRequest {
                req: *req,
                span: page_span(req, self.page_size),
                rest: None,
            }
        } else {
            match self.overflow {
                Overflow::Refuse => {
                    return Err(error(format!(
                        "the request at bytes {}..{end} is past the device's capacity of {} pages of {page} B ({} B): \
                         the trace needs at least {} pages; use a larger device, or wrap addresses modulo the capacity",
                        req.offset_bytes,
                        self.capacity_pages,
                        self.capacity_bytes,
                        end.div_ceil(page)
                    )));
                }
                Overflow::Wrap => self.wrap(req).map_err(error)?,
            }
        };
        debug_assert!(mapped.span.first_lpn + mapped.span.pages <= self.capacity_pages);
        debug_assert!(mapped.rest.is_none_or(|r| r.first_lpn == 0 && r.pages <= self.capacity_pages));
        self.stats.mapped += 1;
        Ok(Some(mapped))
    }

    /// `req` (which ends past the capacity) folded modulo the capacity.
    fn wrap(&mut self, req: &BlockRequest) -> Result<MappedRequest, String> {
        if req.len_bytes > self.capacity_bytes {
            return Err(format!(
                "the request of {} bytes is larger than the device ({} B): it cannot be folded onto it",
                req.len_bytes, self.capacity_bytes
            ));
        }
        let offset_bytes = req.offset_bytes % self.capacity_bytes;
        let folded = BlockRequest { offset_bytes, ..*req };
        let room = self.capacity_bytes - offset_bytes;
        self.stats.wrapped += 1;
        if req.len_bytes <= room {
            return Ok(MappedRequest {
                req: folded,
                span: page_span(&folded, self.page_size),
                rest: None,
            });
        }
        // Split at the device's end, a page boundary.
        let head = BlockRequest { len_bytes: room, ..folded };
        let tail = BlockRequest {
            offset_bytes: 0,
            len_bytes: req.len_bytes - room,
            ..folded
        };
        Ok(MappedRequest {
            req: folded,
            span: page_span(&head, self.page_size),
            rest: Some(page_span(&tail, self.page_size)),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(kind: ReqKind, offset_bytes: u64, len_bytes: u64) -> BlockRequest {
        BlockRequest {
            arrival_ns: 0,
            device: 0,
            kind,
            offset_bytes,
            len_bytes,
        }
    }

    fn span(first_lpn: u64, pages: u64, partial_head: bool, partial_tail: bool) -> PageSpan {
        PageSpan {
            first_lpn,
            pages,
            partial_head,
            partial_tail,
        }
    }

    #[test]
    fn page_span_boundaries() {
        let w = |o, l| page_span(&req(ReqKind::Write, o, l), 4096);
        assert_eq!(w(0, 4096), span(0, 1, false, false), "one whole page");
        assert_eq!(w(4096, 8192), span(1, 2, false, false), "two whole pages");
        assert_eq!(w(0, 512), span(0, 1, false, true), "head of a page");
        assert_eq!(w(3584, 512), span(0, 1, true, false), "tail of a page");
        assert_eq!(w(512, 1024), span(0, 1, true, true), "inside a page");
        assert_eq!(w(3584, 1024), span(0, 2, true, true), "across a boundary");
        assert_eq!(w(3584, 4096 + 512), span(0, 2, true, false), "partial head, ends on a boundary");
        assert_eq!(w(4096, 4096 + 512), span(1, 2, false, true), "starts on a boundary, partial tail");
        assert_eq!(
            w(512, 3 * 4096),
            span(0, 4, true, true),
            "partial both ends, two whole pages between"
        );
        assert_eq!(w(8192 + 100, 0), span(2, 0, false, false), "zero length");
        assert_eq!(page_span(&req(ReqKind::Flush, 0, 0), 4096), span(0, 0, false, false));
        assert_eq!(page_span(&req(ReqKind::Read, 7, 1), 1), span(7, 1, false, false), "1-byte pages");
        let top = page_span(&req(ReqKind::Read, u64::MAX - 4095, 4096), 4096);
        assert_eq!(top, span(u64::MAX / 4096, 1, false, false), "the last page of the 64-bit space");
        let huge = page_span(&req(ReqKind::Read, 1, u64::MAX), 1);
        assert_eq!(huge.pages, u64::MAX, "no overflow past 2^64");
    }

    #[test]
    fn capacity_is_refused_by_default() {
        let mut map = AddressMap::new(4096, 100);
        let inside = map.map(1, &req(ReqKind::Write, 99 * 4096, 4096)).unwrap().unwrap();
        assert_eq!(inside.span, span(99, 1, false, false));
        let err = map.map(7, &req(ReqKind::Write, 99 * 4096 + 512, 4096)).unwrap_err();
        assert_eq!(err.line, 7);
        assert!(err.message.contains("capacity of 100 pages of 4096 B"), "{err}");
        assert!(err.message.contains("needs at least 101 pages"), "{err}");
        assert_eq!(map.stats().end_bytes_max, 100 * 4096 + 512);
        assert_eq!(map.stats().mapped, 1);
    }

    #[test]
    fn wrap_folds_modulo_the_capacity() {
        let mut map = AddressMap::new(4096, 100).with_overflow(Overflow::Wrap);
        let cap = 100 * 4096;
        // Past the end: folded, in-page offset kept.
        let m = map.map(1, &req(ReqKind::Write, cap + 5 * 4096 + 512, 1024)).unwrap().unwrap();
        assert_eq!(m.req.offset_bytes, 5 * 4096 + 512);
        assert_eq!(m.span, span(5, 1, true, true));
        assert_eq!(m.rest, None);
        // Runs past the end: split at the end, rest from LPN 0.
        let m = map.map(2, &req(ReqKind::Write, 99 * 4096 + 512, 2 * 4096)).unwrap().unwrap();
        assert_eq!(m.req.offset_bytes, 99 * 4096 + 512);
        assert_eq!(m.span, span(99, 1, true, false));
        assert_eq!(m.rest, Some(span(0, 2, false, true)));
        // Inside: untouched, not counted.
        let m = map.map(3, &req(ReqKind::Read, 0, 4096)).unwrap().unwrap();
        assert_eq!((m.span, m.rest), (span(0, 1, false, false), None));
        assert_eq!(map.stats().wrapped, 2);
        assert_eq!(map.stats().mapped, 3);
        // Larger than the device: refused even so.
        let err = map.map(4, &req(ReqKind::Write, 0, cap + 1)).unwrap_err();
        assert_eq!(err.line, 4);
        assert!(err.message.contains("larger than the device"), "{err}");
    }

    #[test]
    fn devices() {
        let on = |device, kind| BlockRequest {
            arrival_ns: 0,
            device,
            kind,
            offset_bytes: 0,
            len_bytes: 512,
        };
        let mut single = AddressMap::new(4096, 10);
        assert!(single.map(1, &on(3, ReqKind::Read)).unwrap().is_some());
        let err = single.map(2, &on(4, ReqKind::Read)).unwrap_err();
        assert_eq!(err.line, 2);
        assert!(err.message.contains("device 4 after device 3 (line 1)"), "{err}");

        let mut only = AddressMap::new(4096, 10).with_devices(Devices::Only(4));
        assert_eq!(only.map(1, &on(3, ReqKind::Read)), Ok(None));
        assert_eq!(only.map(2, &on(3, ReqKind::Flush)), Ok(None));
        assert!(only.map(3, &on(4, ReqKind::Write)).unwrap().is_some());
        assert_eq!(only.stats().other_device_dropped, 2);

        let mut merge = AddressMap::new(4096, 10).with_devices(Devices::Merge);
        for (line, device) in [(1, 3), (2, 4), (3, 3)] {
            let m = merge.map(line, &on(device, ReqKind::Write)).unwrap().unwrap();
            assert_eq!(m.span.first_lpn, 0, "same address space");
        }
    }

    #[test]
    fn flushes_pass_without_a_range() {
        let mut map = AddressMap::new(4096, 1);
        let flush = BlockRequest {
            arrival_ns: 5,
            device: 0,
            kind: ReqKind::Flush,
            offset_bytes: 0,
            len_bytes: 0,
        };
        let m = map.map(1, &flush).unwrap().unwrap();
        assert_eq!(m.span.pages, 0);
        assert_eq!(m.req, flush);
    }
}
