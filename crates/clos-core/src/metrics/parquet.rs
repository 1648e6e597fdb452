//! A minimal Parquet writer for the run's flat tables, so that `clos run` saves its results without
//! loading a dataframe library into the interpreter (docs/performance.md, "`clos run` end to
//! end": importing polars and numpy cost more CPU than B1's whole simulation's Python side may).
//!
//! What it writes is the subset of the format (Apache Parquet, `parquet.thrift`) that the tables
//! need: every column `REQUIRED` (no nulls), `PLAIN` encoding, no compression, one data page (v1)
//! per column per row group, row groups of at most `ROW_GROUP_ROWS` rows, the metadata in
//! Thrift's compact protocol. Unsigned integers carry both the converted type (`UINT_8/32/64`)
//! and the logical type (`INTEGER(bits, unsigned)`), text `UTF8`/`STRING`, so that polars and
//! pyarrow read back the dtypes the in-memory tables have (`tests/test_cli_run.py` checks every
//! table, read back by polars, equals the one `clos.run` returns).

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;

/// Rows per row group: keeps each page well under Parquet's 2 GiB page limit (an i32 size).
pub const ROW_GROUP_ROWS: usize = 1 << 20;

/// One column of a table, borrowed.
#[derive(Clone, Copy)]
pub enum Column<'a> {
    U8(&'a [u8]),
    U32(&'a [u32]),
    U64(&'a [u64]),
    F64(&'a [f64]),
    Bool(&'a [bool]),
    Text(&'a [String]),
}

macro_rules! columns_from {
    ($($t:ty => $variant:ident),*) => {$(
        impl<'a> From<&'a [$t]> for Column<'a> {
            fn from(values: &'a [$t]) -> Self {
                Column::$variant(values)
            }
        }
    )*};
}
columns_from!(u8 => U8, u32 => U32, u64 => U64, f64 => F64, bool => Bool, String => Text);

impl Column<'_> {
    fn len(&self) -> usize {
        match self {
            Column::U8(v) => v.len(),
            Column::U32(v) => v.len(),
            Column::U64(v) => v.len(),
            Column::F64(v) => v.len(),
            Column::Bool(v) => v.len(),
            Column::Text(v) => v.len(),
        }
    }

    /// Parquet's physical type: BOOLEAN 0, INT32 1, INT64 2, DOUBLE 5, BYTE_ARRAY 6.
    fn physical(&self) -> i32 {
        match self {
            Column::U8(_) | Column::U32(_) => 1,
            Column::U64(_) => 2,
            Column::F64(_) => 5,
            Column::Bool(_) => 0,
            Column::Text(_) => 6,
        }
    }

    /// The converted type (UTF8 0, UINT_8 11, UINT_32 13, UINT_64 14), where there is one.
    fn converted(&self) -> Option<i32> {
        match self {
            Column::U8(_) => Some(11),
            Column::U32(_) => Some(13),
            Column::U64(_) => Some(14),
            Column::Text(_) => Some(0),
            Column::F64(_) | Column::Bool(_) => None,
        }
    }

    /// Rows `from..to` in PLAIN encoding.
    fn plain(&self, from: usize, to: usize, out: &mut Vec<u8>) {
        match self {
            Column::U8(v) => v[from..to].iter().for_each(|&x| out.extend_from_slice(&i32::from(x).to_le_bytes())),
            Column::U32(v) => v[from..to].iter().for_each(|&x| out.extend_from_slice(&x.to_le_bytes())),
            Column::U64(v) => v[from..to].iter().for_each(|&x| out.extend_from_slice(&x.to_le_bytes())),
            Column::F64(v) => v[from..to].iter().for_each(|&x| out.extend_from_slice(&x.to_le_bytes())),
            Column::Bool(v) => {
                // Bit-packed, least significant bit first, the last byte padded with zeros.
                for chunk in v[from..to].chunks(8) {
                    out.push(chunk.iter().enumerate().fold(0u8, |byte, (i, &b)| byte | (u8::from(b) << i)));
                }
            }
            Column::Text(v) => {
                for s in &v[from..to] {
                    let len = u32::try_from(s.len()).expect("a text value under 4 GiB");
                    out.extend_from_slice(&len.to_le_bytes());
                    out.extend_from_slice(s.as_bytes());
                }
            }
        }
    }
}

/// Write `columns` (name, values; all of one length) to `path` as a Parquet file.
pub fn write(path: &Path, columns: &[(&str, Column<'_>)]) -> io::Result<()> {
    let mut file = BufWriter::new(File::create(path)?);
    file.write_all(&encode(columns))?;
    file.flush()
}

/// The whole file's bytes.
pub fn encode(columns: &[(&str, Column<'_>)]) -> Vec<u8> {
    let rows = columns.first().map_or(0, |(_, c)| c.len());
    assert!(columns.iter().all(|(_, c)| c.len() == rows), "a table's columns are of one length");
    let mut out = b"PAR1".to_vec();
    // Per row group, per column: (data page offset, bytes with the page header).
    let mut groups: Vec<(usize, Vec<(usize, usize)>)> = Vec::new();
    let mut page = Vec::new();
    let mut from = 0;
    while from < rows {
        let to = (from + ROW_GROUP_ROWS).min(rows);
        let mut chunks = Vec::with_capacity(columns.len());
        for (_, column) in columns {
            page.clear();
            column.plain(from, to, &mut page);
            let size = i32::try_from(page.len()).expect("a page under 2 GiB");
            let mut header = Thrift::default();
            header.i32(1, 0); // DATA_PAGE
            header.i32(2, size);
            header.i32(3, size);
            header.begin(5); // DataPageHeader
            header.i32(1, (to - from) as i32);
            header.i32(2, 0); // PLAIN
            header.i32(3, 3); // RLE (no levels: every column is REQUIRED)
            header.i32(4, 3);
            header.end();
            header.stop();
            let offset = out.len();
            out.extend_from_slice(&header.out);
            out.extend_from_slice(&page);
            chunks.push((offset, header.out.len() + page.len()));
        }
        groups.push((to - from, chunks));
        from = to;
    }
    let meta = metadata(columns, rows, &groups);
    out.extend_from_slice(&meta);
    out.extend_from_slice(&u32::try_from(meta.len()).expect("metadata under 4 GiB").to_le_bytes());
    out.extend_from_slice(b"PAR1");
    out
}

/// `FileMetaData`: version, schema, rows, row groups, writer.
fn metadata(columns: &[(&str, Column<'_>)], rows: usize, groups: &[(usize, Vec<(usize, usize)>)]) -> Vec<u8> {
    let mut t = Thrift::default();
    t.i32(1, 1);
    t.list(2, STRUCT, columns.len() + 1);
    t.element();
    t.binary(4, b"schema");
    t.i32(5, columns.len() as i32);
    t.end();
    for (name, column) in columns {
        t.element();
        t.i32(1, column.physical());
        t.i32(3, 0); // REQUIRED
        t.binary(4, name.as_bytes());
        if let Some(converted) = column.converted() {
            t.i32(6, converted);
        }
        match column {
            Column::Text(_) => {
                t.begin(10);
                t.begin(1); // StringType
                t.end();
                t.end();
            }
            Column::U8(_) | Column::U32(_) | Column::U64(_) => {
                let bits: u8 = match column {
                    Column::U8(_) => 8,
                    Column::U32(_) => 32,
                    _ => 64,
                };
                t.begin(10);
                t.begin(10); // IntType
                t.byte(1, bits);
                t.bool(2, false);
                t.end();
                t.end();
            }
            Column::F64(_) | Column::Bool(_) => {}
        }
        t.end();
    }
    t.i64(3, rows as i64);
    t.list(4, STRUCT, groups.len());
    for (group_rows, chunks) in groups {
        t.element();
        t.list(1, STRUCT, chunks.len());
        for ((name, column), &(offset, bytes)) in columns.iter().zip(chunks) {
            t.element();
            t.i64(2, offset as i64);
            t.begin(3); // ColumnMetaData
            t.i32(1, column.physical());
            t.list(2, I32, 1);
            t.varint_i32(0); // PLAIN
            t.list(3, BINARY, 1);
            t.raw_binary(name.as_bytes());
            t.i32(4, 0); // UNCOMPRESSED
            t.i64(5, *group_rows as i64);
            t.i64(6, bytes as i64);
            t.i64(7, bytes as i64);
            t.i64(9, offset as i64);
            t.end();
            t.end();
        }
        let total: usize = chunks.iter().map(|&(_, b)| b).sum();
        t.i64(2, total as i64);
        t.i64(3, *group_rows as i64);
        t.end();
    }
    t.binary(6, b"clos");
    t.stop();
    t.out
}

// Thrift compact protocol's type codes.
const I32: u8 = 5;
const BINARY: u8 = 8;
const STRUCT: u8 = 12;

/// Thrift's compact protocol, the parts Parquet's metadata uses.
#[derive(Default)]
struct Thrift {
    out: Vec<u8>,
    /// The last field id written in the struct being written, and those of the structs around it.
    last: i16,
    outer: Vec<i16>,
}

impl Thrift {
    fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.out.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.out.push(v as u8);
    }

    fn varint_i32(&mut self, v: i32) {
        self.varint(u64::from(((v << 1) ^ (v >> 31)) as u32));
    }

    fn field(&mut self, id: i16, kind: u8) {
        let delta = id - self.last;
        if (1..=15).contains(&delta) {
            self.out.push(((delta as u8) << 4) | kind);
        } else {
            self.out.push(kind);
            self.varint(u64::from(((id << 1) ^ (id >> 15)) as u16));
        }
        self.last = id;
    }

    fn i32(&mut self, id: i16, v: i32) {
        self.field(id, I32);
        self.varint_i32(v);
    }

    fn i64(&mut self, id: i16, v: i64) {
        self.field(id, 6);
        self.varint(((v << 1) ^ (v >> 63)) as u64);
    }

    fn byte(&mut self, id: i16, v: u8) {
        self.field(id, 3);
        self.out.push(v);
    }

    fn bool(&mut self, id: i16, v: bool) {
        self.field(id, if v { 1 } else { 2 });
    }

    fn raw_binary(&mut self, bytes: &[u8]) {
        self.varint(bytes.len() as u64);
        self.out.extend_from_slice(bytes);
    }

    fn binary(&mut self, id: i16, bytes: &[u8]) {
        self.field(id, BINARY);
        self.raw_binary(bytes);
    }

    fn list(&mut self, id: i16, kind: u8, len: usize) {
        self.field(id, 9);
        if len < 15 {
            self.out.push(((len as u8) << 4) | kind);
        } else {
            self.out.push(0xF0 | kind);
            self.varint(len as u64);
        }
    }

    /// A struct field `id`; its fields follow, then `end`.
    fn begin(&mut self, id: i16) {
        self.field(id, STRUCT);
        self.element();
    }

    /// A struct as a list's element (no field header); its fields follow, then `end`.
    fn element(&mut self) {
        self.outer.push(self.last);
        self.last = 0;
    }

    fn end(&mut self) {
        self.stop();
        self.last = self.outer.pop().expect("end of a struct begun");
    }

    fn stop(&mut self) {
        self.out.push(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_framed_by_its_magic_and_footer_length() {
        let ids = [1u32, 2, 3];
        let names = vec!["a".to_string(), "bc".to_string(), String::new()];
        let bytes = encode(&[("id", Column::U32(&ids)), ("name", Column::Text(&names))]);
        assert_eq!(&bytes[..4], b"PAR1");
        assert_eq!(&bytes[bytes.len() - 4..], b"PAR1");
        let footer = u32::from_le_bytes(bytes[bytes.len() - 8..bytes.len() - 4].try_into().unwrap()) as usize;
        // The first page: its header, then the three ids in PLAIN encoding.
        let first_page = &bytes[4..bytes.len() - 8 - footer];
        let ids_plain: Vec<u8> = ids.iter().flat_map(|i| i.to_le_bytes()).collect();
        assert!(first_page.windows(12).any(|w| w == ids_plain.as_slice()));
    }

    #[test]
    fn booleans_are_bit_packed_least_significant_first() {
        let mut out = Vec::new();
        Column::Bool(&[true, false, true, true, false, false, false, false, true]).plain(0, 9, &mut out);
        assert_eq!(out, vec![0b0000_1101, 0b0000_0001]);
    }

    #[test]
    fn compact_field_ids_use_deltas_and_zigzag() {
        let mut t = Thrift::default();
        t.i32(1, -1);
        t.i32(20, 2);
        assert_eq!(t.out, vec![0x15, 0x01, 0x05, 40, 0x04]);
    }
}
