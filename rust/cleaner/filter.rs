//! The cleaner's retention rules (Kafka's `MemoryRecords.filterTo` with the `RecordFilter` built
//! in `Cleaner.cleanInto`, and `CleanedTransactionMetadata`).
