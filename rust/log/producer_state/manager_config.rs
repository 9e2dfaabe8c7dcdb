//! The broker settings producer state reads (Kafka's `ProducerStateManagerConfig`).

/// `producer.id.expiration.ms` and `transaction.partition.verification.enable`, as Kafka's
/// `ProducerStateManagerConfig` holds them. Both are dynamic in Kafka; here the owner of the
/// `ProducerStateManager` changes them through `ProducerStateManager::config_mut` under the log
/// lock. A plain value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProducerStateManagerConfig {
    /// `producer.id.expiration.ms`: a producer with no open transaction and no write for this
    /// long is forgotten. Kafka's default is one day.
    pub producer_id_expiration_ms: i32,
    /// `transaction.partition.verification.enable` (Kafka's default: true).
    pub transaction_verification_enabled: bool,
}

impl ProducerStateManagerConfig {
    /// Kafka's default `producer.id.expiration.ms` (`PRODUCER_ID_EXPIRATION_MS_DEFAULT`).
    pub const PRODUCER_ID_EXPIRATION_MS_DEFAULT: i32 = 86_400_000;

    /// A config with these values.
    pub fn new(producer_id_expiration_ms: i32, transaction_verification_enabled: bool) -> Self {
        ProducerStateManagerConfig { producer_id_expiration_ms, transaction_verification_enabled }
    }
}

impl Default for ProducerStateManagerConfig {
    fn default() -> Self {
        Self::new(Self::PRODUCER_ID_EXPIRATION_MS_DEFAULT, true)
    }
}
