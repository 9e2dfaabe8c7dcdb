//! Kafka's configuration tables, with Kafka 4.x's key names, types, defaults and ranges:
//! - [`log_config`]: the topic table (`LogConfig`, `TopicConfig`);
//! - [`log_manager_config`]: the broker table a `LogManager` reads (`KafkaConfig`'s log keys,
//!   `ServerTopicConfigSynonyms`);
//! - [`cleaner_config`]: the cleaner threads' `log.cleaner.*` keys (`CleanerConfig`);
//! - [`key_table`]: the engine the three share (`ConfigDef`'s parsing, ranges, printing and
//!   errors, written once).

pub mod cleaner_config;
pub(crate) mod key_table;
pub mod log_config;
pub mod log_manager_config;
#[cfg(test)]
mod table_checks;

pub use cleaner_config::CleanerConfig;
pub use log_config::{CleanupPolicy, LogConfig, TopicCompression, REMOVED_KEYS};
pub use log_manager_config::LogManagerConfig;
