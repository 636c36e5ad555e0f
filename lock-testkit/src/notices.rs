//! [`NoticeRecorder`]: a [`NoticeSink`] that keeps what it is given, for
//! tests of a backend's notices.

use std::sync::Arc;
use std::time::Duration;

use lock_core::backend::{Notice, NoticeSink};
use tokio::sync::mpsc;

/// Records every notice delivered to its sink.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// use std::time::Duration;
/// use lock_core::backend::Notice;
/// let (sink, mut notices) = lock_testkit::NoticeRecorder::new();
/// sink.deliver(Notice::Reset);
/// assert_eq!(notices.next(Duration::from_millis(10)).await, Some(Notice::Reset));
/// # }
/// ```
#[derive(Debug)]
pub struct NoticeRecorder {
    rx: mpsc::UnboundedReceiver<Notice>,
}

struct Sink(mpsc::UnboundedSender<Notice>);

impl NoticeSink for Sink {
    fn deliver(&self, notice: Notice) {
        let _ = self.0.send(notice);
    }
}

impl NoticeRecorder {
    /// A sink to install on a backend, and the recorder of what it gets.
    pub fn new() -> (Arc<dyn NoticeSink>, Self) {
        let (tx, rx) = mpsc::unbounded_channel();
        (Arc::new(Sink(tx)), Self { rx })
    }

    /// The next notice, if one comes within `within`.
    pub async fn next(&mut self, within: Duration) -> Option<Notice> {
        tokio::time::timeout(within, self.rx.recv())
            .await
            .ok()
            .flatten()
    }

    /// Skips notices until one equal to `want` arrives.
    ///
    /// # Panics
    /// When none did within `within`, naming the ones that came instead.
    pub async fn expect(&mut self, want: &Notice, within: Duration) {
        let deadline = tokio::time::Instant::now() + within;
        let mut seen = Vec::new();
        loop {
            match tokio::time::timeout_at(deadline, self.rx.recv()).await {
                Ok(Some(notice)) if &notice == want => return,
                Ok(Some(other)) => seen.push(other),
                _ => panic!("no {want:?} within {within:?}; saw {seen:?}"),
            }
        }
    }

    /// Asserts that nothing arrives for `quiet`.
    ///
    /// # Panics
    /// When a notice arrives.
    pub async fn expect_none(&mut self, quiet: Duration) {
        if let Some(n) = self.next(quiet).await {
            panic!("unexpected notice {n:?}");
        }
    }
}
