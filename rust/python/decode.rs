//! Decoding raw batches into owned per-record tuples, off the GIL; the convenience path behind
//! `decode_batches` and `UnifiedLog.read` (bulk reads use the Arrow columns instead).

use super::arrow::timestamp_type_id;
use crate::error::{Error, Result};
use crate::log::unified_log::CommittedFilter;
use crate::record::default_record::Record;
use crate::record::records::BatchIter;

/// (offset, timestamp, timestamp_type, key, value, headers, is_control) of one record.
pub type OwnedRecord = (i64, i64, i32, Option<Vec<u8>>, Option<Vec<u8>>, Vec<(String, Option<Vec<u8>>)>, bool);

/// `r` copied out of its batch (whose timestamp type id and control flag are given).
pub fn owned_record(r: &Record<'_>, ts_type: i32, control: bool) -> OwnedRecord {
    let headers = r.headers().map(|(k, v)| (String::from_utf8_lossy(k).into_owned(), v.map(<[u8]>::to_vec)));
    (r.offset, r.timestamp, ts_type, r.key.map(<[u8]>::to_vec), r.value.map(<[u8]>::to_vec), headers.collect(), control)
}

/// What `decode` found.
pub struct Decoded {
    /// The records, in order.
    pub records: Vec<OwnedRecord>,
    /// The offset after the last batch, or `None` when `data` held no batch.
    pub next_offset: Option<i64>,
}

/// Decodes every complete batch in `data`, checking CRCs; keeps control records only when
/// `keep_control`, and records at or above `min_offset`. Bytes after the last complete batch
/// are an error unless `allow_partial_tail`. With a `committed` filter (a `read_committed`
/// read), the batches it does not show are left out too.
pub fn decode(
    data: &[u8],
    keep_control: bool,
    min_offset: i64,
    allow_partial_tail: bool,
    mut committed: Option<&mut CommittedFilter>,
) -> Result<Decoded> {
    let mut records = Vec::new();
    let mut next_offset = None;
    let mut scratch = Vec::new();
    let mut iter = BatchIter::new(data);
    for item in iter.by_ref() {
        let (pos, batch) = item?;
        batch.ensure_valid().map_err(|e| e.with_position_offset(pos as u64))?;
        let ts_type = timestamp_type_id(&batch);
        let control = batch.is_control();
        next_offset = Some(batch.next_offset());
        if let Some(filter) = committed.as_deref_mut() {
            if !filter.is_visible(&batch).map_err(|e| e.with_position_offset(pos as u64))? {
                continue;
            }
        }
        if control && !keep_control {
            continue;
        }
        batch
            .for_each_record(&mut scratch, |r| {
                if r.offset >= min_offset {
                    records.push(owned_record(&r, ts_type, control));
                }
                Ok(())
            })
            .map_err(|e| e.with_position_offset(pos as u64))?;
    }
    if !allow_partial_tail && iter.position() != data.len() {
        return Err(Error::corrupt(
            iter.position() as u64,
            format!("{} bytes after the last complete batch do not form a record batch", data.len() - iter.position()),
        ));
    }
    Ok(Decoded { records, next_offset })
}
