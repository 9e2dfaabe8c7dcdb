//! How the bindings declare a result class: [`py_result!`] turns one struct, its fields and
//! their docs written once, into a frozen Python class with a getter per field, a constructor
//! taking the fields (by position or name), `__repr__`, `__eq__`, `__hash__`,
//! `__match_args__` and pickling through `__reduce__`, so results travel from Spark executors
//! to the driver. A `sequence` class also unpacks, indexes and compares like a tuple of its
//! fields (the results that were named tuples before); a `record` class compares only with
//! its own class (the results that were frozen dataclasses).
//!
//! Thread-safety: the classes are frozen (immutable once built), shareable between threads.

use pyo3::basic::CompareOp;
use pyo3::prelude::*;
use pyo3::types::PyTuple;

/// Declares a frozen result class; see the module docs. Forms:
///
/// ```text
/// py_result! { sequence | record | record_custom_repr
///     /// docs
///     #[module = "kafkalog"]
///     pub struct Name { /// docs
///                       field: Type [= default], ... }
///     [ impl { more #[pymethods] items } ]
/// }
/// ```
///
/// `record_custom_repr` leaves `__repr__` to the `impl` block. The class's Python name is the
/// struct's; `module` is where `pickle` finds it (it must be exported there).
macro_rules! py_result {
    (sequence $($rest:tt)*) => {
        $crate::python::results::py_result!(@build true [
            fn __len__(&self) -> usize {
                Self::FIELD_NAMES.len()
            }
            fn __getitem__<'py>(
                &self,
                py: pyo3::Python<'py>,
                index: &pyo3::Bound<'py, pyo3::PyAny>,
            ) -> pyo3::PyResult<pyo3::Bound<'py, pyo3::PyAny>> {
                pyo3::types::PyAnyMethods::get_item(self.values(py)?.as_any(), index)
            }
            fn __iter__<'py>(
                &self,
                py: pyo3::Python<'py>,
            ) -> pyo3::PyResult<pyo3::Bound<'py, pyo3::types::PyIterator>> {
                pyo3::types::PyAnyMethods::try_iter(self.values(py)?.as_any())
            }
            #[classattr]
            fn _fields(py: pyo3::Python<'_>) -> pyo3::PyResult<pyo3::Py<pyo3::types::PyTuple>> {
                Ok(pyo3::types::PyTuple::new(py, Self::FIELD_NAMES)?.unbind())
            }
            fn __repr__(&self, py: pyo3::Python<'_>) -> pyo3::PyResult<String> {
                self.default_repr(py)
            }
        ] $($rest)*);
    };
    (record $($rest:tt)*) => {
        $crate::python::results::py_result!(@build false [
            fn __repr__(&self, py: pyo3::Python<'_>) -> pyo3::PyResult<String> {
                self.default_repr(py)
            }
        ] $($rest)*);
    };
    (record_custom_repr $($rest:tt)*) => {
        $crate::python::results::py_result!(@build false [] $($rest)*);
    };
    (@build $sequence:literal [$($extra:tt)*]
        $(#[doc = $doc:literal])*
        #[module = $module:literal]
        pub struct $name:ident {
            $( $(#[doc = $fdoc:literal])* $field:ident : $ty:ty $(= $default:expr)? ),* $(,)?
        }
        $( impl { $($methods:tt)* } )?
    ) => {
        $(#[doc = $doc])*
        #[pyo3::pyclass(frozen, get_all, module = $module)]
        pub struct $name {
            $( $(#[doc = $fdoc])* pub $field: $ty, )*
        }

        impl $name {
            /// The fields' names, in order.
            pub const FIELD_NAMES: &'static [&'static str] = &[$(stringify!($field)),*];

            /// The fields' values, in order, as a Python tuple.
            fn values<'py>(&self, py: pyo3::Python<'py>) -> pyo3::PyResult<pyo3::Bound<'py, pyo3::types::PyTuple>> {
                pyo3::types::PyTuple::new(py, [$( pyo3::IntoPyObjectExt::into_bound_py_any(&self.$field, py)? ),*])
            }

            /// `Name(field=repr(value), ...)`, as a dataclass or a named tuple shows itself.
            #[allow(dead_code)]
            fn default_repr(&self, py: pyo3::Python<'_>) -> pyo3::PyResult<String> {
                $crate::python::results::repr_of(stringify!($name), Self::FIELD_NAMES, &self.values(py)?)
            }
        }

        #[pyo3::pymethods]
        impl $name {
            #[new]
            #[allow(clippy::too_many_arguments)] // one per field, as a dataclass's constructor
            #[pyo3(signature = ($($field $(= $default)?),*))]
            fn py_new($($field: $ty),*) -> Self {
                $name { $($field),* }
            }

            #[classattr]
            fn __match_args__(py: pyo3::Python<'_>) -> pyo3::PyResult<pyo3::Py<pyo3::types::PyTuple>> {
                Ok(pyo3::types::PyTuple::new(py, Self::FIELD_NAMES)?.unbind())
            }

            /// Pickles as the class and its fields' values.
            fn __reduce__<'py>(
                slf: &pyo3::Bound<'py, Self>,
            ) -> pyo3::PyResult<(pyo3::Bound<'py, pyo3::types::PyType>, pyo3::Bound<'py, pyo3::types::PyTuple>)> {
                Ok((pyo3::types::PyAnyMethods::get_type(slf.as_any()), slf.get().values(slf.py())?))
            }

            fn __richcmp__(
                &self,
                other: &pyo3::Bound<'_, pyo3::PyAny>,
                op: pyo3::basic::CompareOp,
            ) -> pyo3::PyResult<pyo3::Py<pyo3::PyAny>> {
                let py = other.py();
                let theirs = match other.cast::<Self>() {
                    Ok(o) => Some(o.get().values(py)?),
                    Err(_) => None,
                };
                $crate::python::results::compare(py, &self.values(py)?, theirs, other, op, $sequence)
            }

            fn __hash__(&self, py: pyo3::Python<'_>) -> pyo3::PyResult<isize> {
                pyo3::types::PyAnyMethods::hash(self.values(py)?.as_any())
            }

            $($extra)*
            $($($methods)*)?
        }
    };
}
pub(crate) use py_result;

/// `name(field=repr(value), ...)`.
pub(crate) fn repr_of(name: &str, fields: &[&str], values: &Bound<'_, PyTuple>) -> PyResult<String> {
    let mut out = format!("{name}(");
    for (i, (field, value)) in fields.iter().zip(values.iter()).enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        out.push_str(field);
        out.push('=');
        out.push_str(&value.repr()?.to_cow()?);
    }
    out.push(')');
    Ok(out)
}

/// Compares `ours` (a result's values) with `theirs` (the values of one of its class) as
/// tuples; a `sequence` result also compares with a plain tuple, in every order, as a named
/// tuple does. Anything else is `NotImplemented`, and a `record` only answers `==` and `!=`, as
/// a dataclass does.
pub(crate) fn compare(
    py: Python<'_>,
    ours: &Bound<'_, PyTuple>,
    theirs: Option<Bound<'_, PyTuple>>,
    other: &Bound<'_, PyAny>,
    op: CompareOp,
    sequence: bool,
) -> PyResult<Py<PyAny>> {
    let theirs = match theirs {
        Some(t) => t,
        None if sequence => match other.cast::<PyTuple>() {
            Ok(t) => t.clone(),
            Err(_) => return Ok(py.NotImplemented()),
        },
        None => return Ok(py.NotImplemented()),
    };
    if !sequence && !matches!(op, CompareOp::Eq | CompareOp::Ne) {
        return Ok(py.NotImplemented());
    }
    Ok(ours.rich_compare(theirs, op)?.unbind())
}
