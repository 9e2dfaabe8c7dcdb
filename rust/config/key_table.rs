//! The key-table engine the topic, broker and cleaner tables share: Kafka's `ConfigDef` reduced
//! to what kafkalog needs. A table is a static, name-sorted array of [`Key`]s, each knowing how
//! to parse a value into its config's field (checking the type and range) and how to print the
//! field back as Kafka prints it. [`KeyTable`] looks keys up, applies them, lists the names and
//! values, and re-checks a config built field by field.
//!
//! Values parse the way Kafka's `ConfigDef` parses them:
//! - Leading and trailing characters `<= ' '` are ignored (Java's `String.trim`).
//! - An int must fit int32 and a long must fit int64. Both accept an optional leading `+` or `-`.
//!   Kafka also accepts non-ASCII Unicode digits here; this module does not.
//! - A boolean is `true` or `false` in any letter case.
//! - A list is split on commas, and whitespace around each comma is dropped. An empty string is
//!   the empty list.
//! - A double parses with Rust's float syntax and prints as Java's `Double.toString`.
//!
//! Thread-safety: tables are immutable statics (the name list is built once, behind a
//! `OnceLock`); every function is pure.

use std::fmt;
use std::str::FromStr;
use std::sync::OnceLock;

use crate::error::{Error, Result};

/// One key of a config of type `C`.
pub(crate) struct Key<C: 'static> {
    /// Kafka's key name.
    pub name: &'static str,
    /// Parses `value` (given for key `name`) into the config, or fails naming the key, the value
    /// and the rule; the config is unchanged on error.
    pub set: fn(&mut C, &'static str, &str) -> Result<()>,
    /// The value as Kafka prints it; `None` for a key without a value (an unset optional key).
    pub get: fn(&C) -> Option<String>,
    /// For a broker key that sets a topic key (Kafka's `ServerTopicConfigSynonyms`): that topic
    /// key.
    pub synonym_of: Option<&'static str>,
}

/// A config's keys, sorted by name.
pub(crate) struct KeyTable<C: 'static> {
    keys: &'static [Key<C>],
    names: OnceLock<Vec<&'static str>>,
}

impl<C: 'static> KeyTable<C> {
    /// The table of `keys`, which must be sorted by name (each table's test checks it).
    pub const fn new(keys: &'static [Key<C>]) -> Self {
        KeyTable { keys, names: OnceLock::new() }
    }

    /// The key named exactly `name`.
    pub fn find(&self, name: &str) -> Option<&'static Key<C>> {
        let keys = self.keys;
        keys.binary_search_by(|key| key.name.cmp(name)).ok().map(|i| &keys[i])
    }

    /// Parses and applies `value` to the key `name`; `None` when the table has no such key.
    pub fn set(&self, config: &mut C, name: &str, value: &str) -> Option<Result<()>> {
        self.find(name).map(|key| (key.set)(config, key.name, value))
    }

    /// The value of key `name`, as Kafka prints it.
    pub fn get(&self, config: &C, name: &str) -> Option<String> {
        self.find(name).and_then(|key| (key.get)(config))
    }

    /// Every key name, sorted.
    pub fn names(&self) -> &[&'static str] {
        self.names.get_or_init(|| self.keys.iter().map(|key| key.name).collect())
    }

    /// Every key with a value, in name order, printed as Kafka prints it.
    pub fn to_props(&self, config: &C) -> Vec<(&'static str, String)> {
        self.keys.iter().filter_map(|key| (key.get)(config).map(|v| (key.name, v))).collect()
    }

    /// Re-parses every value of `config` into `scratch` (a default config), so a config whose
    /// public fields were set directly is held to the same types and ranges as one parsed from
    /// strings.
    pub fn recheck(&self, config: &C, mut scratch: C) -> Result<()> {
        for key in self.keys {
            if let Some(value) = (key.get)(config) {
                (key.set)(&mut scratch, key.name, &value)?;
            }
        }
        Ok(())
    }

    /// Whether the keys are sorted by name with no repeats (what [`KeyTable::find`] needs).
    #[cfg(test)]
    pub fn is_sorted(&self) -> bool {
        self.keys.windows(2).all(|w| w[0].name < w[1].name)
    }
}

/// `key!(name, field.path, PARSE[, SHOW])` builds a [`Key`] storing into `config.field.path`.
/// PARSE is `int RANGE`, `long RANGE`, `bool`, `opt PARSE_FN` (an `Option` field, printed when
/// set) or a `fn(key, raw) -> Result<T>`; SHOW defaults to the field's `to_string`.
macro_rules! key {
    ($name:literal, $($field:ident).+, int $range:expr) => {
        $crate::config::key_table::key!($name, $($field).+,
            |k, v| $crate::config::key_table::parse_int(k, v, $range))
    };
    ($name:literal, $($field:ident).+, long $range:expr) => {
        $crate::config::key_table::key!($name, $($field).+,
            |k, v| $crate::config::key_table::parse_long(k, v, $range))
    };
    ($name:literal, $($field:ident).+, bool) => {
        $crate::config::key_table::key!($name, $($field).+, $crate::config::key_table::parse_bool)
    };
    ($name:literal, $($field:ident).+, opt $parse:expr) => {
        $crate::config::key_table::key!($name, $($field).+, |k, v| ($parse)(k, v).map(Some),
            |c| c.$($field).+.as_ref().map(ToString::to_string))
    };
    ($name:literal, $($field:ident).+, $parse:expr) => {
        $crate::config::key_table::key!($name, $($field).+, $parse, |c| Some(c.$($field).+.to_string()))
    };
    ($name:literal, $($field:ident).+, $parse:expr, $show:expr) => {
        $crate::config::key_table::Key {
            name: $name,
            set: |c, k, v| {
                c.$($field).+ = ($parse)(k, v)?;
                Ok(())
            },
            get: $show,
            synonym_of: None,
        }
    };
}
pub(crate) use key;

/// An integer key's valid range.
#[derive(Clone, Copy)]
pub(crate) enum Range {
    Any,
    AtLeast(i64),
    Between(i64, i64),
    /// `compression.gzip.level`: `[1, 9]` or -1.
    GzipLevel,
}

impl Range {
    fn contains(self, v: i64) -> bool {
        match self {
            Range::Any => true,
            Range::AtLeast(min) => v >= min,
            Range::Between(min, max) => (min..=max).contains(&v),
            Range::GzipLevel => v == -1 || (1..=9).contains(&v),
        }
    }

    fn rule(self) -> String {
        match self {
            Range::Any => "any value".to_string(),
            Range::AtLeast(min) => format!("must be >= {min}"),
            Range::Between(min, max) => format!("must be in [{min}, {max}]"),
            Range::GzipLevel => "must be in [1, 9] or -1".to_string(),
        }
    }
}

/// The error for a rejected value: Kafka's `ConfigException`, naming the key, the value and the
/// rule it breaks.
pub(crate) fn invalid(key: &str, value: impl fmt::Display, rule: impl Into<String>) -> Error {
    Error::invalid_config(key, value, rule)
}

/// Java's `String.trim`: strips every char `<= ' '` from both ends.
pub(crate) fn java_trim(s: &str) -> &str {
    s.trim_matches(|c: char| c <= ' ')
}

/// Java regex `\s`, which Kafka's list splitter drops around each comma.
fn is_java_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\x0B' | '\x0C' | '\r')
}

/// Kafka's LIST parsing: trim, empty → empty list, else split on `\s*,\s*` keeping empty items.
pub(crate) fn parse_list(raw: &str) -> Vec<String> {
    let trimmed = java_trim(raw);
    if trimmed.is_empty() {
        return Vec::new();
    }
    trimmed.split(',').map(|item| item.trim_matches(is_java_space).to_string()).collect()
}

/// Parses like Java's `Integer.parseInt` / `Long.parseLong` (after trimming), then checks `range`.
fn parse_number<T>(key: &str, raw: &str, range: Range, type_rule: &str) -> Result<T>
where
    T: FromStr + Into<i64> + Copy,
{
    let not_a_number = |_| invalid(key, raw, type_rule);
    let v: T = java_trim(raw).parse().map_err(not_a_number)?;
    if range.contains(v.into()) {
        Ok(v)
    } else {
        Err(invalid(key, raw, range.rule()))
    }
}

pub(crate) fn parse_int(key: &str, raw: &str, range: Range) -> Result<i32> {
    parse_number(key, raw, range, "must be an integer (int32)")
}

pub(crate) fn parse_long(key: &str, raw: &str, range: Range) -> Result<i64> {
    parse_number(key, raw, range, "must be a long")
}

pub(crate) fn parse_bool(key: &str, raw: &str) -> Result<bool> {
    let t = java_trim(raw);
    if t.eq_ignore_ascii_case("true") {
        Ok(true)
    } else if t.eq_ignore_ascii_case("false") {
        Ok(false)
    } else {
        Err(invalid(key, raw, "must be true or false"))
    }
}

/// Parses a double (after trimming) with Rust's float syntax, which differs from Java's
/// `Double.valueOf` only at the edges (no `d`/`f` suffixes or hex floats), then checks it with
/// `valid`, whose rule `rule` names.
pub(crate) fn parse_double(key: &str, raw: &str, valid: impl Fn(f64) -> bool, rule: &str) -> Result<f64> {
    let not_double = |_| invalid(key, raw, "must be a double");
    let v: f64 = java_trim(raw).parse().map_err(not_double)?;
    if valid(v) {
        Ok(v)
    } else {
        Err(invalid(key, raw, rule))
    }
}

/// Java's `Double.toString` for finite values: plain decimal in `[1e-3, 1e7)`, else
/// `d.dddE±n`, and always with a fractional digit.
pub(crate) fn java_double(v: f64) -> String {
    let magnitude = v.abs();
    if v == 0.0 || (1e-3..1e7).contains(&magnitude) {
        // Rust's Debug form is the shortest round-trip decimal and keeps a ".0".
        format!("{v:?}")
    } else {
        let s = format!("{v:e}");
        let (mantissa, exp) = s.split_once('e').unwrap_or((&s, "0"));
        if mantissa.contains('.') {
            format!("{mantissa}E{exp}")
        } else {
            format!("{mantissa}.0E{exp}")
        }
    }
}
