//! Records from Arrow columns laid out as Spark's Kafka sink takes them (`KafkaWriter.
//! validateQuery` / `KafkaRowWriter`): `value` (binary or string, nullable) required; `key`
//! (binary or string, nullable), `headers` (`list<struct<key: string, value: binary>>`),
//! `timestamp` (a timestamp of any unit; null means now), `partition` (int32) and `topic`
//! (string) optional. Other columns are ignored, as Spark's sink ignores them. Any of these
//! columns may also be of Arrow's `null` type (every row null).
//!
//! A single log checks `partition` and `topic` instead of routing by them: a row naming
//! another partition or topic is refused (a null is accepted, as a producer without one).
//!
//! Thread-safety: views over borrowed buffers, `Send + Sync`; reading never panics.

use super::column::{BinaryColumn, Column, IntColumn, Offsets, TimeUnit, Validity};
use crate::error::{Error, Result};
use crate::record::default_record::Header;
use crate::record::planned_batches::BatchPlanner;
use crate::record::producer_batches::ProducerBatches;
use crate::util::murmur2::partition_for_key;

/// The names of the columns read, in Spark's order (for messages).
const COLUMNS: &str = "key, value, headers, topic, partition, timestamp";
const BINARY_TYPES: &str = "binary, string, large_binary or large_string";

/// A row's timestamp (None for now), key and value.
pub type RowFields<'a> = (Option<i64>, Option<&'a [u8]>, Option<&'a [u8]>);

/// The log the rows go to, for the per-row checks.
#[derive(Debug, Clone, Copy)]
pub struct SinkTarget<'t> {
    pub topic: &'t str,
    pub partition: i32,
    /// `cleanup.policy` contains `compact`: every row needs a key.
    pub compacted: bool,
}

/// The `headers` column: a list of (key, value) structs per row.
#[derive(Debug)]
struct Headers<'a> {
    validity: Option<Validity<'a>>,
    offsets: Offsets<'a>,
    /// Which entries are valid (a null entry is refused).
    entries: &'a Column<'a>,
    keys: Option<BinaryColumn<'a>>,
    values: Option<BinaryColumn<'a>>,
}

/// Spark's Kafka sink columns of one Arrow record batch, their types checked.
#[derive(Debug)]
pub struct SinkColumns<'a> {
    rows: usize,
    key: Option<BinaryColumn<'a>>,
    value: Option<BinaryColumn<'a>>,
    headers: Option<Headers<'a>>,
    timestamp: Option<(IntColumn<'a>, TimeUnit)>,
    partition: Option<IntColumn<'a>>,
    topic: Option<BinaryColumn<'a>>,
}

/// A column of the wrong type.
fn wrong_type(name: &str, column: &Column<'_>, allowed: &str) -> Error {
    Error::invalid_argument(
        &format!("the type of data column '{name}'"),
        column.type_name(),
        format!("must be {allowed} (Spark's Kafka sink columns: {COLUMNS})"),
    )
}

/// A binary or string column (None for the `null` type: every row null).
fn binary<'a>(name: &str, column: &Column<'a>, allowed: &str, strings_only: bool) -> Result<Option<BinaryColumn<'a>>> {
    match column {
        Column::Null { .. } => Ok(None),
        Column::Binary { column, utf8, .. } if *utf8 || !strings_only => Ok(Some(*column)),
        other => Err(wrong_type(name, other, allowed)),
    }
}

fn headers<'a>(column: &'a Column<'a>) -> Result<Option<Headers<'a>>> {
    const ALLOWED: &str = "list<struct<key: string, value: binary>> (or large_list, large_string, string values)";
    let (validity, offsets, child) = match column {
        Column::Null { .. } => return Ok(None),
        Column::List { validity, offsets, child, .. } => (*validity, *offsets, &**child),
        other => return Err(wrong_type("headers", other, ALLOWED)),
    };
    let (Some(key), Some(value)) = (child.field("key"), child.field("value")) else {
        return Err(wrong_type("headers", column, ALLOWED));
    };
    let keys = binary("headers", key, ALLOWED, true).map_err(|_| wrong_type("headers", column, ALLOWED))?;
    let values = binary("headers", value, ALLOWED, false).map_err(|_| wrong_type("headers", column, ALLOWED))?;
    Ok(Some(Headers { validity, offsets, entries: child, keys, values }))
}

impl<'a> SinkColumns<'a> {
    /// The sink columns of `batch` (a struct column: an Arrow record batch), their types checked.
    pub fn new(batch: &'a Column<'a>) -> Result<Self> {
        let Column::Struct { fields, len, .. } = batch else {
            return Err(Error::invalid_argument(
                "data",
                batch.type_name(),
                "must be Arrow record batches (a struct array)",
            ));
        };
        let mut seen: Vec<&str> = Vec::new();
        let mut out = SinkColumns {
            rows: *len,
            key: None,
            value: None,
            headers: None,
            timestamp: None,
            partition: None,
            topic: None,
        };
        let mut has_value = false;
        for f in fields {
            let name = f.name.as_str();
            if !["key", "value", "headers", "topic", "partition", "timestamp"].contains(&name) {
                continue;
            }
            if seen.contains(&name) {
                return Err(Error::invalid_argument(
                    "data",
                    format!("two columns named '{name}'"),
                    "must name each column once",
                ));
            }
            seen.push(name);
            let c = &f.column;
            match name {
                "key" => out.key = binary(name, c, BINARY_TYPES, false)?,
                "value" => {
                    out.value = binary(name, c, BINARY_TYPES, false)?;
                    has_value = true;
                }
                "topic" => out.topic = binary(name, c, "string or large_string", true)?,
                "headers" => out.headers = headers(c)?,
                "partition" => {
                    out.partition = match c {
                        Column::Null { .. } => None,
                        Column::Int32(p) => Some(*p),
                        other => return Err(wrong_type(name, other, "int32")),
                    }
                }
                _ => {
                    out.timestamp = match c {
                        Column::Null { .. } => None,
                        Column::Timestamp(t, unit) => Some((*t, *unit)),
                        other => return Err(wrong_type(name, other, "a timestamp (any unit; null means now)")),
                    }
                }
            }
        }
        if !has_value {
            let names: Vec<&str> = fields.iter().map(|f| f.name.as_str()).collect();
            return Err(Error::invalid_argument(
                "data",
                format!("columns [{}]", names.join(", ")),
                format!("must have a 'value' column (Spark's Kafka sink columns: {COLUMNS})"),
            ));
        }
        Ok(out)
    }

    /// How many rows the batch holds.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Checks every row and adds it to `into`; rows are named by their number in the whole
    /// append (`into.rows()` when the row is added). `scratch` holds one row's headers.
    pub fn encode(
        &self,
        target: &SinkTarget<'_>,
        into: &mut ProducerBatches,
        scratch: &mut Vec<Header<'a>>,
    ) -> Result<()> {
        self.for_each_checked_row(target, into.rows(), scratch, |ts, key, value, headers| {
            into.push(ts, key, value, headers)
        })
    }

    /// Checks every row and sizes it into `into` (nothing is encoded), as [`Self::encode`]
    /// adds it to a `ProducerBatches`.
    pub fn plan(&self, target: &SinkTarget<'_>, into: &mut BatchPlanner, scratch: &mut Vec<Header<'a>>) -> Result<()> {
        self.for_each_checked_row(target, into.rows(), scratch, |ts, key, value, headers| {
            into.push(ts, key, value, headers)
        })
    }

    /// Checks each row (named `first_row + i`) and passes its timestamp (None for now), key,
    /// value and headers to `f`.
    #[inline]
    fn for_each_checked_row(
        &self,
        target: &SinkTarget<'_>,
        first_row: usize,
        scratch: &mut Vec<Header<'a>>,
        mut f: impl FnMut(Option<i64>, Option<&'a [u8]>, Option<&'a [u8]>, &[Header<'a>]) -> Result<()>,
    ) -> Result<()> {
        for i in 0..self.rows {
            let row = first_row + i;
            let key = self.key.as_ref().and_then(|k| k.value(i));
            if key.is_none() && target.compacted {
                return Err(row_error(
                    row,
                    "key",
                    "is null; a compacted topic (cleanup.policy=compact) needs a key in every record",
                ));
            }
            let timestamp = self.timestamp(i, row)?;
            self.check_routing(i, row, target)?;
            self.headers_of(i, row, scratch)?;
            f(timestamp, key, self.value.as_ref().and_then(|v| v.value(i)), scratch)?;
        }
        Ok(())
    }

    /// Row `i` (already checked by [`Self::plan`]): its timestamp (None for now), key and
    /// value; its headers into `headers`.
    #[inline]
    pub fn read_row(&self, i: usize, headers: &mut Vec<Header<'a>>) -> Result<RowFields<'a>> {
        let timestamp = self.timestamp(i, i)?;
        self.headers_of(i, i, headers)?;
        Ok((timestamp, self.key.as_ref().and_then(|k| k.value(i)), self.value.as_ref().and_then(|v| v.value(i))))
    }

    /// Row `i`'s timestamp in milliseconds, None for a null (the append's now).
    #[inline]
    fn timestamp(&self, i: usize, row: usize) -> Result<Option<i64>> {
        let Some((column, unit)) = &self.timestamp else { return Ok(None) };
        let Some(t) = column.value(i) else { return Ok(None) };
        let ms = match unit {
            TimeUnit::Second => t.checked_mul(1000),
            TimeUnit::Millisecond => Some(t),
            TimeUnit::Microsecond => Some(t.div_euclid(1000)),
            TimeUnit::Nanosecond => Some(t.div_euclid(1_000_000)),
        };
        match ms {
            Some(ms) if ms >= 0 => Ok(Some(ms)),
            _ => Err(row_error(
                row,
                "timestamp",
                &format!(
                    "is {t} ({unit:?}s), before 1970 or too far out; Kafka timestamps are in [0, {}] ms",
                    i64::MAX
                ),
            )),
        }
    }

    #[inline]
    fn check_routing(&self, i: usize, row: usize, target: &SinkTarget<'_>) -> Result<()> {
        if let Some(p) = self.partition.as_ref().and_then(|p| p.value(i)) {
            if p != i64::from(target.partition) {
                let why = format!(
                    "is {p}, but this log is {}-{} (a single log refuses another partition's rows)",
                    target.topic, target.partition
                );
                return Err(row_error(row, "partition", &why));
            }
        }
        if let Some(t) = self.topic.as_ref().and_then(|t| t.value(i)) {
            if t != target.topic.as_bytes() {
                let why = format!(
                    "is {:?}, but this log is {}-{} (a single log refuses another topic's rows)",
                    String::from_utf8_lossy(t),
                    target.topic,
                    target.partition
                );
                return Err(row_error(row, "topic", &why));
            }
        }
        Ok(())
    }

    /// Fills `out` with row `i`'s headers.
    #[inline]
    fn headers_of(&self, i: usize, row: usize, out: &mut Vec<Header<'a>>) -> Result<()> {
        out.clear();
        let Some(h) = &self.headers else { return Ok(()) };
        if !h.validity.is_none_or(|v| v.is_valid(i)) {
            return Ok(()); // a null list: no headers, as Spark's sink writes it
        }
        for j in h.offsets.get(i)..h.offsets.get(i + 1) {
            if !h.entries.is_valid(j) {
                return Err(row_error(
                    row,
                    "headers",
                    &format!("has a null header at position {}", j - h.offsets.get(i)),
                ));
            }
            let Some(key) = h.keys.as_ref().and_then(|k| k.value(j)) else {
                let why = format!("has a null key in header {} (Kafka header keys are strings)", j - h.offsets.get(i));
                return Err(row_error(row, "headers", &why));
            };
            out.push((key, h.values.as_ref().and_then(|v| v.value(j))));
        }
        Ok(())
    }
}

/// A row's value the log refuses, naming the row (in the whole append) and the column.
fn row_error(row: usize, column: &str, why: &str) -> Error {
    Error::invalid_record(format!("row {row} of data, column '{column}', {why}"))
}

/// Kafka's default partitioner over a key column (Spark's `key` types, or `null`): for each
/// row, `toPositive(murmur2(key)) % num_partitions`; null keys take partitions round-robin,
/// the `j`-th null key of the column `(round_robin_start + j) % num_partitions`, as the Spark
/// writer's router does. Returns where the round-robin of a next chunk starts.
pub fn partitions_for_keys(
    keys: &Column<'_>,
    num_partitions: i32,
    round_robin_start: u64,
    out: &mut Vec<i32>,
) -> Result<u64> {
    if num_partitions <= 0 {
        return Err(Error::invalid_argument("num_partitions", num_partitions, format!("must be in [1, {}]", i32::MAX)));
    }
    let column = binary("key", keys, BINARY_TYPES, false)?;
    let n = num_partitions as u64;
    let mut turn = round_robin_start % n;
    out.reserve(keys.len());
    for i in 0..keys.len() {
        if let Some(key) = column.as_ref().and_then(|c| c.value(i)) {
            out.push(partition_for_key(key, num_partitions));
        } else {
            out.push(turn as i32);
            turn = if turn + 1 == n { 0 } else { turn + 1 };
        }
    }
    Ok(turn)
}

#[cfg(test)]
#[path = "sink_columns_tests.rs"]
mod tests;
