//! Validated lock names.

use std::fmt;

use arcstr::ArcStr;

use crate::error::{LockError, Result};

/// The longest lock name accepted, in bytes. Redis allows far longer keys,
/// but a name this long is a bug in the caller, and every helper key and
/// channel repeats the name.
pub const MAX_NAME_LEN: usize = 4096;

/// A lock name that passed validation: non-empty, at most
/// [`MAX_NAME_LEN`] bytes. Cheap to clone (a reference count), and one
/// pointer in size.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LockName(ArcStr);

impl LockName {
    /// Validates `name`.
    ///
    /// ```
    /// # use lock_core::LockName;
    /// assert!(LockName::new("orders:42").is_ok());
    /// assert!(LockName::new("").unwrap_err().is_invalid_argument());
    /// ```
    ///
    /// # Errors
    /// [`LockError::InvalidArgument`] for an empty or over-long name.
    pub fn new(name: impl AsRef<str>) -> Result<Self> {
        let name = name.as_ref();
        if name.is_empty() {
            return Err(LockError::invalid("lock name must not be empty"));
        }
        if name.len() > MAX_NAME_LEN {
            return Err(LockError::invalid(format!(
                "lock name is {} bytes long; the limit is {MAX_NAME_LEN}",
                name.len()
            )));
        }
        Ok(Self(ArcStr::from(name)))
    }

    /// The name as a string slice.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for LockName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl fmt::Display for LockName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for LockName {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_empty_and_overlong() {
        assert!(LockName::new("").is_err());
        assert!(LockName::new("x".repeat(MAX_NAME_LEN + 1)).is_err());
        assert!(LockName::new("x".repeat(MAX_NAME_LEN)).is_ok());
    }

    #[test]
    fn accepts_any_non_empty_text() {
        for n in ["a", "{tag}", "with space", "ünïcode", "a:b:c"] {
            assert_eq!(LockName::new(n).unwrap().as_str(), n);
        }
    }
}
