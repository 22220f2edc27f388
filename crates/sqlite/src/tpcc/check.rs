//! The consistency conditions 1 to 4 of clause 3.3.2, and a fingerprint of
//! the whole database (for determinism: same seed, same database).

use super::schema::TABLES;
use crate::digest::Fnv;
use rusqlite::Connection;

/// Violations reported at most (the rest are counted).
const VIOLATIONS_SHOWN_MAX: usize = 20;

/// Checks, for every warehouse and district:
/// 1. W_YTD = sum(D_YTD);
/// 2. D_NEXT_O_ID - 1 = max(O_ID) = max(NO_O_ID);
/// 3. max(NO_O_ID) - min(NO_O_ID) + 1 = the district's rows in NEW_ORDER;
/// 4. sum(O_OL_CNT) = the district's rows in ORDER_LINE.
///
/// A district without undelivered orders (possible when deliveries outrun new
/// orders) has no max(NO_O_ID): condition 2 does not apply to its NEW_ORDER
/// rows (the clause's own exception) and compares D_NEXT_O_ID - 1 and
/// max(O_ID) only; condition 3 holds with its count of 0.
/// The error lists the violations, each naming its condition.
pub fn check(conn: &Connection) -> Result<(), String> {
    let mut violations = Vec::new();
    conditions(conn, &mut violations).map_err(|e| format!("SQLite: {e}"))?;
    if violations.is_empty() {
        return Ok(());
    }
    let n = violations.len();
    violations.truncate(VIOLATIONS_SHOWN_MAX);
    if n > VIOLATIONS_SHOWN_MAX {
        violations.push(format!("... and {} more", n - VIOLATIONS_SHOWN_MAX));
    }
    Err(format!("{n} consistency violations:\n{}", violations.join("\n")))
}

fn conditions(conn: &Connection, out: &mut Vec<String>) -> rusqlite::Result<()> {
    let mut st = conn.prepare("SELECT w_id, w_ytd, (SELECT sum(d_ytd) FROM district WHERE d_w_id = w_id) FROM warehouse ORDER BY w_id")?;
    let mut rows = st.query([])?;
    while let Some(r) = rows.next()? {
        let (w, w_ytd, d_ytd): (i64, i64, Option<i64>) = (r.get(0)?, r.get(1)?, r.get(2)?);
        if Some(w_ytd) != d_ytd {
            out.push(format!(
                "condition 1: warehouse {w}: W_YTD {w_ytd} != sum(D_YTD) {}",
                d_ytd.map_or("none".into(), |v| v.to_string())
            ));
        }
    }
    let mut st = conn.prepare(
        "SELECT d_w_id, d_id, d_next_o_id,
            (SELECT max(o_id) FROM orders WHERE o_w_id = d_w_id AND o_d_id = d_id),
            (SELECT max(no_o_id) FROM new_order WHERE no_w_id = d_w_id AND no_d_id = d_id),
            (SELECT min(no_o_id) FROM new_order WHERE no_w_id = d_w_id AND no_d_id = d_id),
            (SELECT count(*) FROM new_order WHERE no_w_id = d_w_id AND no_d_id = d_id),
            (SELECT coalesce(sum(o_ol_cnt), 0) FROM orders WHERE o_w_id = d_w_id AND o_d_id = d_id),
            (SELECT count(*) FROM order_line WHERE ol_w_id = d_w_id AND ol_d_id = d_id)
         FROM district ORDER BY d_w_id, d_id",
    )?;
    let mut rows = st.query([])?;
    while let Some(r) = rows.next()? {
        let (w, d, next): (i64, i64, i64) = (r.get(0)?, r.get(1)?, r.get(2)?);
        let (max_o, max_no, min_no): (Option<i64>, Option<i64>, Option<i64>) = (r.get(3)?, r.get(4)?, r.get(5)?);
        let (new_orders, ol_cnt, lines): (i64, i64, i64) = (r.get(6)?, r.get(7)?, r.get(8)?);
        let at = format!("warehouse {w} district {d}");
        if max_o != Some(next - 1) || max_no.is_some_and(|m| m != next - 1) {
            out.push(format!(
                "condition 2: {at}: D_NEXT_O_ID - 1 = {}, max(O_ID) = {}, max(NO_O_ID) = {}",
                next - 1,
                show(max_o),
                show(max_no)
            ));
        }
        let span = match (max_no, min_no) {
            (Some(max), Some(min)) => max - min + 1,
            _ => 0,
        };
        if span != new_orders {
            out.push(format!(
                "condition 3: {at}: max(NO_O_ID) - min(NO_O_ID) + 1 = {span}, NEW_ORDER rows = {new_orders}"
            ));
        }
        if ol_cnt != lines {
            out.push(format!("condition 4: {at}: sum(O_OL_CNT) = {ol_cnt}, ORDER_LINE rows = {lines}"));
        }
    }
    Ok(())
}

fn show(v: Option<i64>) -> String {
    v.map_or("none".into(), |v| v.to_string())
}

/// A 64-bit hash (FNV-1a) of every row of the nine tables, in primary-key
/// order: two databases with the same fingerprint hold the same rows.
pub fn fingerprint(conn: &Connection) -> rusqlite::Result<u64> {
    let mut h = Fnv::new();
    for (table, order) in TABLES {
        h.bytes(table.as_bytes());
        let mut st = conn.prepare(&format!("SELECT * FROM {table} ORDER BY {order}"))?;
        let columns = st.column_count();
        let mut rows = st.query([])?;
        while let Some(r) = rows.next()? {
            h.row(r, columns)?;
        }
    }
    Ok(h.0)
}
