//! Checks shared by the unit tests of the config tables ([`super::LogConfig`],
//! [`super::LogManagerConfig`]): a key's accepted values apply and print back to the same
//! config; a rejected value is refused with an error naming the key, the value and the rule,
//! and changes nothing.

use std::fmt::Debug;

use crate::error::{Error, Result};

/// A config table the shared checks drive through its `set` and `to_props`.
pub(crate) trait Table: Default + PartialEq + Debug {
    fn set_value(&mut self, key: &str, value: &str) -> Result<()>;
    fn printed(&self) -> Vec<(&'static str, String)>;
}

impl Table for super::LogConfig {
    fn set_value(&mut self, key: &str, value: &str) -> Result<()> {
        self.set(key, value)
    }
    fn printed(&self) -> Vec<(&'static str, String)> {
        self.to_props()
    }
}

impl Table for super::LogManagerConfig {
    fn set_value(&mut self, key: &str, value: &str) -> Result<()> {
        self.set(key, value)
    }
    fn printed(&self) -> Vec<(&'static str, String)> {
        self.to_props()
    }
}

/// Asserts that `err` is an `InvalidConfig` whose message names `key`, `value` and `rule`.
pub(crate) fn assert_names(err: &Error, key: &str, value: &str, rule: &str) {
    assert!(matches!(err, Error::InvalidConfig { key: k, .. } if k == key), "{err:?}");
    let msg = err.to_string();
    let named = msg.contains(key) && msg.contains(&format!("{value:?}")) && msg.contains(rule);
    assert!(named, "{msg:?} should name {key}, {value:?} and {rule:?}");
}

/// Each `(key, value)` applies to a default `C`, and the value `C` prints for the key sets an
/// equal config.
pub(crate) fn assert_accepted<'a, C: Table>(values: impl IntoIterator<Item = (&'a str, &'a str)>) {
    for (key, value) in values {
        let mut c = C::default();
        let applied = c.set_value(key, value);
        assert!(applied.is_ok(), "{key}={value:?}: {applied:?}");
        let printed = c.printed().into_iter().find(|(k, _)| *k == key).unwrap().1;
        let mut again = C::default();
        again.set_value(key, &printed).unwrap();
        assert_eq!(again, c, "{key}={value:?} printed as {printed:?}");
    }
}

/// Each `(key, value, rule)` is refused by a default `C`, naming all three, and leaves it as
/// it was.
pub(crate) fn assert_rejected<'a, C: Table>(values: impl IntoIterator<Item = (&'a str, &'a str, &'a str)>) {
    for (key, value, rule) in values {
        let mut c = C::default();
        assert_names(&c.set_value(key, value).unwrap_err(), key, value, rule);
        assert_eq!(c, C::default(), "a rejected {key} changed it");
    }
}
