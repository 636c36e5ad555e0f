//! A sorted-set value: members with double scores, ordered by score, then
//! by member bytes, as Redis orders them.

use std::cmp::Ordering;
use std::collections::{BTreeSet, HashMap};

/// A score in the order: never NaN (Redis refuses NaN scores), and -0 and
/// +0 compare equal, as doubles do in Redis's skiplist.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Score(f64);

impl Eq for Score {}

impl Ord for Score {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.partial_cmp(&other.0).unwrap_or(Ordering::Equal)
    }
}

impl PartialOrd for Score {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Members and their scores, in Redis's order.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct ZSet {
    scores: HashMap<Vec<u8>, f64>,
    order: BTreeSet<(Score, Vec<u8>)>,
}

impl ZSet {
    pub(crate) fn score(&self, member: &[u8]) -> Option<f64> {
        self.scores.get(member).copied()
    }

    /// Sets `member`'s score (never NaN); returns whether it is new.
    pub(crate) fn insert(&mut self, member: &[u8], score: f64) -> bool {
        let old = self.scores.insert(member.to_vec(), score);
        if let Some(old) = old {
            self.order.remove(&(Score(old), member.to_vec()));
        }
        self.order.insert((Score(score), member.to_vec()));
        old.is_none()
    }

    /// Removes `member`; returns whether it was there.
    pub(crate) fn remove(&mut self, member: &[u8]) -> bool {
        match self.scores.remove(member) {
            Some(old) => self.order.remove(&(Score(old), member.to_vec())),
            None => false,
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.scores.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.scores.is_empty()
    }

    /// Members with their scores, lowest score first.
    pub(crate) fn iter(&self) -> impl DoubleEndedIterator<Item = (&[u8], f64)> {
        self.order.iter().map(|(s, m)| (m.as_slice(), s.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orders_by_score_then_member() {
        let mut z = ZSet::default();
        assert!(z.insert(b"b", 2.0));
        assert!(z.insert(b"c", 1.0));
        assert!(z.insert(b"a", 2.0));
        assert!(!z.insert(b"c", 3.0));
        let members: Vec<_> = z.iter().map(|(m, _)| m.to_vec()).collect();
        assert_eq!(members, vec![b"a".to_vec(), b"b".to_vec(), b"c".to_vec()]);
        assert!(z.remove(b"a"));
        assert!(!z.remove(b"a"));
        assert_eq!(z.len(), 1 + 1);
        assert_eq!(z.score(b"c"), Some(3.0));
    }
}
