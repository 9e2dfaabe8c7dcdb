//! Records from Arrow columns: typed views of Arrow arrays (`column.rs`, filled from Arrow's C
//! data interface by the Python layer) and Spark's Kafka sink columns read from them into
//! producer batches, and partitioned by key (`sink_columns.rs`).

pub mod column;
pub mod sink_columns;
pub mod sink_records;
