//! Transactions as producer state tracks them: an open one ([`TxnMetadata`], Kafka's
//! `TxnMetadata`), a finished one ([`CompletedTxn`], Kafka's `CompletedTxn`), and where a
//! transaction starts in the log ([`LogOffsetMetadata`], Kafka's `LogOffsetMetadata`).

/// An offset, and where it is in the log when known (Kafka's `LogOffsetMetadata`): the base
/// offset of its segment and its byte position there. Leader appends know both for the first
/// batch of a transaction, so the first unstable offset can bound a fetch without an index
/// lookup; recovery knows only the offset. A plain value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LogOffsetMetadata {
    /// The offset.
    pub message_offset: i64,
    /// Base offset of the segment holding it, or [`Self::UNKNOWN_OFFSET`].
    pub segment_base_offset: i64,
    /// Byte position of its batch in that segment, or [`Self::UNKNOWN_FILE_POSITION`].
    pub relative_position_in_segment: i32,
}

impl LogOffsetMetadata {
    /// Kafka's `UNKNOWN_OFFSET`.
    pub const UNKNOWN_OFFSET: i64 = -1;
    /// Kafka's `UNKNOWN_FILE_POSITION`.
    pub const UNKNOWN_FILE_POSITION: i32 = -1;

    /// An offset whose place in the log is not known (`new LogOffsetMetadata(offset)`).
    pub fn offset_only(message_offset: i64) -> Self {
        LogOffsetMetadata {
            message_offset,
            segment_base_offset: Self::UNKNOWN_OFFSET,
            relative_position_in_segment: Self::UNKNOWN_FILE_POSITION,
        }
    }

    /// An offset in the segment at `segment_base_offset`, at byte `position`.
    pub fn new(message_offset: i64, segment_base_offset: i64, position: i32) -> Self {
        LogOffsetMetadata { message_offset, segment_base_offset, relative_position_in_segment: position }
    }

    /// Whether only the offset is known (`messageOffsetOnly`).
    pub fn message_offset_only(&self) -> bool {
        self.segment_base_offset == Self::UNKNOWN_OFFSET
            && self.relative_position_in_segment == Self::UNKNOWN_FILE_POSITION
    }
}

/// A transaction producer state knows of (Kafka's `TxnMetadata`): its producer, where it
/// starts, and, once its marker is written, the marker's offset. A plain value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TxnMetadata {
    /// The transactional producer.
    pub producer_id: i64,
    /// The first offset of the transaction.
    pub first_offset: LogOffsetMetadata,
    /// The offset of its COMMIT / ABORT marker, once written.
    pub last_offset: Option<i64>,
}

impl TxnMetadata {
    /// An open transaction of `producer_id` starting at `first_offset`.
    pub fn new(producer_id: i64, first_offset: LogOffsetMetadata) -> Self {
        TxnMetadata { producer_id, first_offset, last_offset: None }
    }
}

/// A transaction that a COMMIT or ABORT marker closed (Kafka's `CompletedTxn`): the log appends
/// an aborted one to the transaction index, then tells producer state it is complete. A plain
/// value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CompletedTxn {
    /// The transactional producer.
    pub producer_id: i64,
    /// The transaction's first offset (inclusive).
    pub first_offset: i64,
    /// The offset of its COMMIT / ABORT marker (inclusive).
    pub last_offset: i64,
    /// Whether the marker was ABORT.
    pub is_aborted: bool,
}
