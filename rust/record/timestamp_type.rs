//! Kafka's `org.apache.kafka.common.record.TimestampType`: the batch attribute that says whether
//! its timestamps are the producer's or the broker's. A plain `Copy` value.

/// Kafka's `TimestampType`: which clock a batch's timestamps come from, and the topic's
/// `message.timestamp.type`. The discriminants are Kafka's ids (the batch attribute bit).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TimestampType {
    /// The producer's timestamp is kept.
    CreateTime = 0,
    /// The broker stamps each batch with its append time.
    LogAppendTime = 1,
}

impl TimestampType {
    /// Kafka's name: `CreateTime` or `LogAppendTime`.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::CreateTime => "CreateTime",
            Self::LogAppendTime => "LogAppendTime",
        }
    }

    /// The type named exactly `name` (case-sensitive, as in Kafka's config validator).
    #[must_use]
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "CreateTime" => Some(Self::CreateTime),
            "LogAppendTime" => Some(Self::LogAppendTime),
            _ => None,
        }
    }
}
