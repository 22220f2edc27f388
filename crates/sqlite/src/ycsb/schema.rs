//! The table YCSB's JDBC binding works on, its statements (those of the
//! binding's `DefaultDBFlavor`), the key names of `CoreWorkload.buildKeyName`,
//! and a fingerprint of the table (same seed, same database).

use super::generator::fnv_hash64;
use super::InsertOrder;
use rusqlite::types::ValueRef;
use rusqlite::Connection;

/// The table (`CoreWorkload`'s default `table` property).
pub const TABLE: &str = "usertable";
/// The key column (`JdbcDBClient.PRIMARY_KEY`).
pub const KEY: &str = "YCSB_KEY";
/// Column-name prefix of the fields (the binding's upper-case spelling of
/// YCSB's `fieldnameprefix`, "field").
pub const FIELD_PREFIX: &str = "FIELD";

/// `CREATE TABLE usertable(YCSB_KEY TEXT PRIMARY KEY, FIELD0 TEXT, ...)` for
/// `fieldcount` fields, and the table this module adds to record the load.
pub fn create(fieldcount: u32) -> String {
    let fields: Vec<String> = (0..fieldcount).map(|i| format!("{FIELD_PREFIX}{i} TEXT")).collect();
    format!(
        "CREATE TABLE {TABLE}({KEY} TEXT PRIMARY KEY, {});
         CREATE TABLE ycsb_load(recordcount INTEGER NOT NULL, fieldcount INTEGER NOT NULL,
             fieldlength INTEGER NOT NULL, insertorder TEXT NOT NULL, zeropadding INTEGER NOT NULL,
             seed INTEGER NOT NULL);",
        fields.join(", ")
    )
}

/// `CoreWorkload.buildKeyName(keynum, zeropadding, orderedinserts)`: "user"
/// and the decimal record number, hashed with FNV-64 unless inserts are
/// ordered, left-padded with zeros to `zeropadding` digits.
pub fn key_name(keynum: u64, zeropadding: u32, order: InsertOrder) -> String {
    let n = match order {
        InsertOrder::Hashed => fnv_hash64(keynum as i64),
        InsertOrder::Ordered => keynum as i64,
    };
    let digits = n.to_string();
    let fill = (zeropadding as usize).saturating_sub(digits.len());
    let mut key = String::with_capacity(4 + fill + digits.len());
    key.push_str("user");
    key.extend(std::iter::repeat_n('0', fill));
    key.push_str(&digits);
    key
}

/// The statements of a table of `fieldcount` fields.
#[derive(Clone, Debug)]
pub struct Statements {
    /// `INSERT INTO usertable (YCSB_KEY,FIELD0,...) VALUES(?,?,...)`.
    pub insert: String,
    /// `SELECT * FROM usertable WHERE YCSB_KEY = ?`.
    pub read_all: String,
    /// `SELECT YCSB_KEY, FIELDi FROM usertable WHERE YCSB_KEY = ?` (one per field).
    pub read_field: Vec<String>,
    /// `UPDATE usertable SET FIELD0=?, ..., FIELDn=? WHERE YCSB_KEY = ?`.
    pub update_all: String,
    /// `UPDATE usertable SET FIELDi=? WHERE YCSB_KEY = ?` (one per field).
    pub update_field: Vec<String>,
    /// `SELECT * FROM usertable WHERE YCSB_KEY >= ? ORDER BY YCSB_KEY LIMIT ?`.
    pub scan_all: String,
    /// The scan of one field.
    pub scan_field: Vec<String>,
}

impl Statements {
    pub fn new(fieldcount: u32) -> Statements {
        let names: Vec<String> = (0..fieldcount).map(|i| format!("{FIELD_PREFIX}{i}")).collect();
        let insert = format!(
            "INSERT INTO {TABLE} ({KEY},{}) VALUES(?{})",
            names.join(","),
            ",?".repeat(names.len())
        );
        let sets: Vec<String> = names.iter().map(|n| format!("{n}=?")).collect();
        Statements {
            insert,
            read_all: format!("SELECT * FROM {TABLE} WHERE {KEY} = ?"),
            read_field: names
                .iter()
                .map(|n| format!("SELECT {KEY}, {n} FROM {TABLE} WHERE {KEY} = ?"))
                .collect(),
            update_all: format!("UPDATE {TABLE} SET {} WHERE {KEY} = ?", sets.join(", ")),
            update_field: sets.iter().map(|s| format!("UPDATE {TABLE} SET {s} WHERE {KEY} = ?")).collect(),
            scan_all: format!("SELECT * FROM {TABLE} WHERE {KEY} >= ? ORDER BY {KEY} LIMIT ?"),
            scan_field: names
                .iter()
                .map(|n| format!("SELECT {KEY}, {n} FROM {TABLE} WHERE {KEY} >= ? ORDER BY {KEY} LIMIT ?"))
                .collect(),
        }
    }
}

/// FNV-1a over every row of `usertable` in key order (type-tagged values):
/// two databases with the same fingerprint hold the same records.
pub fn fingerprint(conn: &Connection) -> rusqlite::Result<u64> {
    let mut hash: u64 = 0xCBF2_9CE4_8422_2325;
    let mut eat = |bytes: &[u8]| {
        for &b in bytes {
            hash ^= b as u64;
            hash = hash.wrapping_mul(0x0100_0000_01B3);
        }
    };
    let mut st = conn.prepare(&format!("SELECT * FROM {TABLE} ORDER BY {KEY}"))?;
    let columns = st.column_count();
    let mut rows = st.query([])?;
    while let Some(r) = rows.next()? {
        for c in 0..columns {
            match r.get_ref(c)? {
                ValueRef::Null => eat(&[0]),
                ValueRef::Integer(i) => {
                    eat(&[1]);
                    eat(&i.to_le_bytes());
                }
                ValueRef::Real(f) => {
                    eat(&[2]);
                    eat(&f.to_le_bytes());
                }
                ValueRef::Text(t) => {
                    eat(&[3]);
                    eat(&(t.len() as u64).to_le_bytes());
                    eat(t);
                }
                ValueRef::Blob(b) => {
                    eat(&[4]);
                    eat(&(b.len() as u64).to_le_bytes());
                    eat(b);
                }
            }
        }
    }
    Ok(hash)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_names_follow_build_key_name() {
        assert_eq!(key_name(5, 1, InsertOrder::Ordered), "user5");
        assert_eq!(key_name(5, 8, InsertOrder::Ordered), "user00000005");
        assert_eq!(key_name(0, 1, InsertOrder::Hashed), "user6284781860667377211");
        assert_eq!(key_name(1, 1, InsertOrder::Hashed), "user8517097267634966620");
        assert_eq!(key_name(5, 1, InsertOrder::Hashed), format!("user{}", fnv_hash64(5)));
        assert_eq!(key_name(2, 20, InsertOrder::Hashed), "user01820151046732198393");
    }

    #[test]
    fn statements_have_the_binding_shapes() {
        let s = Statements::new(3);
        assert_eq!(s.insert, "INSERT INTO usertable (YCSB_KEY,FIELD0,FIELD1,FIELD2) VALUES(?,?,?,?)");
        assert_eq!(s.update_field[1], "UPDATE usertable SET FIELD1=? WHERE YCSB_KEY = ?");
        assert_eq!(s.update_all, "UPDATE usertable SET FIELD0=?, FIELD1=?, FIELD2=? WHERE YCSB_KEY = ?");
        assert_eq!(s.scan_all, "SELECT * FROM usertable WHERE YCSB_KEY >= ? ORDER BY YCSB_KEY LIMIT ?");
        assert!(create(2).contains("usertable(YCSB_KEY TEXT PRIMARY KEY, FIELD0 TEXT, FIELD1 TEXT)"));
    }
}
