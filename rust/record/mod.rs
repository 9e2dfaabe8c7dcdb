//! Kafka's record formats: zigzag varints, v2 records and batches (with CRC-32C), the five
//! codecs, control records, legacy magic 0/1 entries, and framing of batch runs; records grouped
//! into batches as a producer groups them, from Python tuples or Arrow columns.

pub mod arrow;
pub mod batch;
pub mod builder;
pub mod compression;
pub mod control;
pub mod default_record;
pub mod legacy;
pub mod planned_batches;
pub mod producer_batches;
pub mod records;
pub mod timestamp_type;
pub mod uncompressed;
pub mod varint;

pub use batch::RecordBatch;
pub use builder::{BatchBuilder, BatchHeader};
pub use compression::CompressionType;
pub use default_record::{Header, Record};
pub use records::{AnyBatch, BatchIter};
pub use timestamp_type::TimestampType;
