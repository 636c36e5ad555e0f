//! A hash value: fields in insertion order, as Redis keeps a small hash
//! (listpack encoding), so `HGETALL`, `HKEYS` and `HVALS` answer in the
//! order Redis does for the hashes the lock scripts make (a few short
//! fields). Lookups are linear, which is what a listpack does too.

/// The fields and values of one hash, both byte strings.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Hash {
    fields: Vec<(Vec<u8>, Vec<u8>)>,
}

impl Hash {
    pub(crate) fn get(&self, field: &[u8]) -> Option<&[u8]> {
        self.fields
            .iter()
            .find(|(f, _)| f == field)
            .map(|(_, v)| v.as_slice())
    }

    /// Sets `field`; returns whether it is new. An existing field keeps its
    /// place.
    pub(crate) fn insert(&mut self, field: &[u8], value: Vec<u8>) -> bool {
        match self.fields.iter_mut().find(|(f, _)| f == field) {
            Some((_, v)) => {
                *v = value;
                false
            }
            None => {
                self.fields.push((field.to_vec(), value));
                true
            }
        }
    }

    /// Removes `field`; returns whether it was there.
    pub(crate) fn remove(&mut self, field: &[u8]) -> bool {
        let before = self.fields.len();
        self.fields.retain(|(f, _)| f != field);
        self.fields.len() != before
    }

    pub(crate) fn len(&self) -> usize {
        self.fields.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
        self.fields
            .iter()
            .map(|(f, v)| (f.as_slice(), v.as_slice()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_insertion_order_and_places() {
        let mut h = Hash::default();
        assert!(h.insert(b"b", b"1".to_vec()));
        assert!(h.insert(b"a", b"2".to_vec()));
        assert!(!h.insert(b"b", b"3".to_vec()));
        let fields: Vec<_> = h.iter().collect();
        assert_eq!(fields, vec![(&b"b"[..], &b"3"[..]), (&b"a"[..], &b"2"[..])]);
        assert!(h.remove(b"b"));
        assert!(!h.remove(b"b"));
        assert_eq!(h.len(), 1);
        assert_eq!(h.get(b"a"), Some(&b"2"[..]));
    }
}
