//! Number parsing shared by the trace formats.
//!
//! Every helper returns the message of a line error (without the line number,
//! which the reader adds) instead of panicking or wrapping: trace files are
//! input from outside, and a hostile or corrupt one must give a readable error,
//! never an overflow.

/// Bytes in a sector, the unit of MQSim's, DiskSim's and blkparse's addresses.
pub const SECTOR_BYTES: u64 = 512;

/// A decimal integer with digits only (no sign, no spaces, no `0x`).
pub(crate) fn parse_u64(field: &str, what: &str) -> Result<u64, String> {
    if field.is_empty() || !field.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("{what} `{field}` is not a non-negative decimal integer"));
    }
    field
        .parse::<u64>()
        .map_err(|_| format!("{what} `{field}` does not fit in 64 bits"))
}

/// As [`parse_u64`], for a value that must fit in 32 bits.
pub(crate) fn parse_u32(field: &str, what: &str) -> Result<u32, String> {
    let value = parse_u64(field, what)?;
    u32::try_from(value).map_err(|_| format!("{what} `{field}` does not fit in 32 bits"))
}

/// A hexadecimal integer, with or without a `0x` prefix (C's `%x`).
pub(crate) fn parse_hex_u64(field: &str, what: &str) -> Result<u64, String> {
    let digits = field.strip_prefix("0x").or_else(|| field.strip_prefix("0X")).unwrap_or(field);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(format!("{what} `{field}` is not a hexadecimal integer"));
    }
    u64::from_str_radix(digits, 16).map_err(|_| format!("{what} `{field}` does not fit in 64 bits"))
}

/// A non-negative decimal number `I.F` (either part may be empty, not both)
/// in a unit of 10^`scale` ns (9 for seconds, 6 for milliseconds), converted
/// exactly to whole nanoseconds: no floating point, so `0.000001` ms is 1 ns
/// and not 0.999… Digits below a nanosecond are truncated.
pub(crate) fn parse_decimal_ns(field: &str, scale: u32, what: &str) -> Result<u64, String> {
    debug_assert!(scale <= 18);
    if field.starts_with('-') {
        return Err(format!("{what} `{field}` is negative"));
    }
    let (int_part, frac_part) = match field.split_once('.') {
        Some((i, f)) => (i, f),
        None => (field, ""),
    };
    let digits_only = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if (int_part.is_empty() && frac_part.is_empty()) || !digits_only(int_part) || !digits_only(frac_part) {
        return Err(format!("{what} `{field}` is not a plain decimal number"));
    }
    let too_big = || format!("{what} `{field}` is too large (more than 2^64 ns)");
    let unit = 10u64.pow(scale);
    let whole = if int_part.is_empty() {
        0
    } else {
        int_part.parse::<u64>().map_err(|_| too_big())?
    };
    let mut frac_ns = 0u64;
    let mut place = unit;
    for b in frac_part.bytes() {
        place /= 10;
        if place == 0 {
            break; // below a nanosecond: truncated
        }
        frac_ns += u64::from(b - b'0') * place;
    }
    whole.checked_mul(unit).and_then(|ns| ns.checked_add(frac_ns)).ok_or_else(too_big)
}

/// `sectors` 512-byte sectors in bytes.
pub(crate) fn sectors_to_bytes(sectors: u64, what: &str) -> Result<u64, String> {
    sectors
        .checked_mul(SECTOR_BYTES)
        .ok_or_else(|| format!("{what} {sectors} sectors is past 2^64 bytes"))
}

/// Checks that a range of `len` bytes at `offset` ends before 2^64.
pub(crate) fn check_range(offset: u64, len: u64) -> Result<(), String> {
    match offset.checked_add(len) {
        Some(_) => Ok(()),
        None => Err(format!("the range of {len} bytes at byte {offset} ends past 2^64 bytes")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers() {
        assert_eq!(parse_u64("0", "x"), Ok(0));
        assert_eq!(parse_u64("18446744073709551615", "x"), Ok(u64::MAX));
        assert!(parse_u64("18446744073709551616", "x").unwrap_err().contains("64 bits"));
        assert!(parse_u64("-1", "x").is_err());
        assert!(parse_u64("+1", "x").is_err());
        assert!(parse_u64("", "x").is_err());
        assert!(parse_u64("1e3", "x").is_err());
        assert_eq!(parse_u32("4294967295", "x"), Ok(u32::MAX));
        assert!(parse_u32("4294967296", "x").unwrap_err().contains("32 bits"));
    }

    #[test]
    fn hex() {
        assert_eq!(parse_hex_u64("1", "f"), Ok(1));
        assert_eq!(parse_hex_u64("0x101", "f"), Ok(0x101));
        assert_eq!(parse_hex_u64("ff", "f"), Ok(0xff));
        assert!(parse_hex_u64("0x", "f").is_err());
        assert!(parse_hex_u64("g", "f").is_err());
        assert!(parse_hex_u64("11112222333344445", "f").is_err());
    }

    #[test]
    fn decimals_are_exact() {
        assert_eq!(parse_decimal_ns("0.000000001", 9, "t"), Ok(1));
        assert_eq!(parse_decimal_ns("1.5", 9, "t"), Ok(1_500_000_000));
        assert_eq!(parse_decimal_ns("12", 6, "t"), Ok(12_000_000));
        assert_eq!(parse_decimal_ns("0.000001", 6, "t"), Ok(1));
        assert_eq!(parse_decimal_ns("0.0000019", 6, "t"), Ok(1), "below a ns truncates");
        assert_eq!(parse_decimal_ns(".5", 6, "t"), Ok(500_000));
        assert_eq!(parse_decimal_ns("5.", 6, "t"), Ok(5_000_000));
        assert!(parse_decimal_ns(".", 6, "t").is_err());
        assert!(parse_decimal_ns("-1.0", 6, "t").unwrap_err().contains("negative"));
        assert!(parse_decimal_ns("1e3", 6, "t").is_err());
        assert!(parse_decimal_ns("1.2.3", 6, "t").is_err());
        assert!(parse_decimal_ns("18446744073709.6", 6, "t").unwrap_err().contains("too large"));
    }

    #[test]
    fn byte_arithmetic_is_checked() {
        assert_eq!(sectors_to_bytes(8, "s"), Ok(4096));
        assert!(sectors_to_bytes(u64::MAX / 256, "s").is_err());
        assert!(check_range(u64::MAX - 1, 1).is_ok());
        assert!(check_range(u64::MAX, 1).is_err());
    }
}
