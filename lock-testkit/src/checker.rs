//! [`ExclusionChecker`]: catches two holders inside one critical section.

use std::fmt::Display;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

#[derive(Debug, Default)]
struct State {
    inside: Vec<String>,
    entries: u64,
    last_token: Option<u64>,
    violations: Vec<String>,
}

/// Records critical sections entered by lock holders and reports any
/// overlap, and any fencing token that did not increase. Clone it into
/// every task; tests and benchmarks share one per lock.
///
/// ```
/// let checker = lock_testkit::ExclusionChecker::new();
/// {
///     let _section = checker.enter("task-1", Some(1));
/// }
/// let _section = checker.enter("task-2", Some(2));
/// assert!(checker.violations().is_empty());
/// ```
#[derive(Debug, Clone, Default)]
pub struct ExclusionChecker {
    state: Arc<Mutex<State>>,
}

impl ExclusionChecker {
    /// A checker with nothing recorded.
    pub fn new() -> Self {
        Self::default()
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// `who` enters the critical section (holding fencing `token`, if
    /// any). The section ends when the returned value is dropped.
    pub fn enter(&self, who: impl Display, token: Option<u64>) -> Section {
        let who = who.to_string();
        let mut state = self.state();
        state.entries += 1;
        if !state.inside.is_empty() {
            let msg = format!("{who} entered while {:?} inside", state.inside);
            state.violations.push(msg);
        }
        if let Some(token) = token {
            if let Some(last) = state.last_token.filter(|last| token <= *last) {
                let msg = format!("{who} entered with token {token} after token {last}");
                state.violations.push(msg);
            }
            state.last_token = Some(token);
        }
        state.inside.push(who.clone());
        Section {
            checker: self.clone(),
            who,
        }
    }

    /// How many sections were entered.
    pub fn entries(&self) -> u64 {
        self.state().entries
    }

    /// Every overlap or token regression seen, in words.
    pub fn violations(&self) -> Vec<String> {
        self.state().violations.clone()
    }
}

/// An entered critical section; leaving is dropping it.
#[derive(Debug)]
#[must_use = "the section ends when this is dropped"]
pub struct Section {
    checker: ExclusionChecker,
    who: String,
}

impl Drop for Section {
    fn drop(&mut self) {
        let mut state = self.checker.state();
        if let Some(i) = state.inside.iter().position(|w| *w == self.who) {
            state.inside.swap_remove(i);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlap_is_reported() {
        let c = ExclusionChecker::new();
        let a = c.enter("a", None);
        let _b = c.enter("b", None);
        drop(a);
        assert_eq!(c.violations().len(), 1);
        assert_eq!(c.entries(), 2);
    }

    #[test]
    fn token_regression_is_reported() {
        let c = ExclusionChecker::new();
        drop(c.enter("a", Some(5)));
        drop(c.enter("b", Some(5)));
        assert_eq!(c.violations().len(), 1);
    }

    #[test]
    fn sequential_sections_pass() {
        let c = ExclusionChecker::new();
        for i in 1..10 {
            drop(c.enter(i, Some(i)));
        }
        assert!(c.violations().is_empty());
    }
}
