//! Turning the fair scripts' own reply shapes into lock-core types. Shapes
//! shared with the reentrant lock (acquire, release, force unlock, and the
//! lock half of inspect) are parsed by [`lock_script::replies`].

use std::time::Duration;

use lock_core::{LockError, Result};

use crate::handle::{FairLockInfo, QueuedWaiter};
use lock_script::redis::Value;

fn bad(script: &str, reply: &Value) -> LockError {
    LockError::protocol(format!(
        "unexpected reply to the fair {script} script: {reply:?}"
    ))
}

/// `1`.
pub(crate) fn leave_queue(reply: &Value) -> Result<()> {
    match reply {
        Value::Int(1) => Ok(()),
        other => Err(bad("leave_queue", other)),
    }
}

/// `{fields, pttl, queue, deadlines, now}`: the reentrant inspect reply
/// followed by the queue's owner fields, one deadline (integer, or nil when
/// the waiter has none) per field, and the server's clock; each waiter's
/// time left is its deadline less the server's clock.
pub(crate) fn inspect(reply: &Value) -> Result<FairLockInfo> {
    let err = || bad("inspect", reply);
    let Value::Array(items) = reply else {
        return Err(err());
    };
    let [fields, pttl, queue, deadlines, Value::Int(now)] = items.as_slice() else {
        return Err(err());
    };
    let lock = lock_script::replies::inspect(&Value::Array(vec![fields.clone(), pttl.clone()]))?;
    let (Value::Array(queue), Value::Array(deadlines)) = (queue, deadlines) else {
        return Err(err());
    };
    if queue.len() != deadlines.len() {
        return Err(err());
    }
    let queue = queue
        .iter()
        .zip(deadlines)
        .map(|(field, deadline)| {
            let field = match field {
                Value::BulkString(bytes) => String::from_utf8(bytes.clone()).ok(),
                Value::SimpleString(s) => Some(s.clone()),
                _ => None,
            };
            let timeout = match deadline {
                Value::Int(ms) => Some(time_left(*ms, *now)),
                // No deadline stored (a partly written foreign entry): the
                // next writing script evicts it, as if already due.
                Value::Nil => Some(Duration::ZERO),
                _ => None,
            };
            Some(QueuedWaiter::new(field?, timeout?))
        })
        .collect::<Option<_>>()
        .ok_or_else(err)?;
    Ok(FairLockInfo::new(lock, queue))
}

/// From `now` until `deadline` (both epoch milliseconds); zero once due.
fn time_left(deadline: i64, now: i64) -> Duration {
    Duration::from_millis(u64::try_from(deadline.saturating_sub(now)).unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use lock_core::Holder;

    use super::*;

    /// The server's clock in the replies.
    const NOW: i64 = 1_700_000_000_000;

    fn bulk(s: &str) -> Value {
        Value::BulkString(s.as_bytes().to_vec())
    }

    fn arr(items: Vec<Value>) -> Value {
        Value::Array(items)
    }

    #[test]
    fn leave_queue_replies() {
        assert!(leave_queue(&Value::Int(1)).is_ok());
        assert!(leave_queue(&Value::Int(0)).is_err());
        assert!(leave_queue(&Value::Nil).is_err());
    }

    #[test]
    fn inspect_free_and_empty() {
        let reply = arr(vec![
            arr(vec![]),
            Value::Int(-2),
            arr(vec![]),
            arr(vec![]),
            Value::Int(NOW),
        ]);
        assert_eq!(inspect(&reply).unwrap(), FairLockInfo::default());
    }

    #[test]
    fn inspect_held_with_a_queue_in_order() {
        let reply = arr(vec![
            arr(vec![bulk("u:1"), bulk("2")]),
            Value::Int(900),
            arr(vec![bulk("u:2"), bulk("u:3"), bulk("u:4")]),
            arr(vec![
                Value::Int(NOW + 4_000),
                Value::Nil,
                Value::Int(NOW - 1),
            ]),
            Value::Int(NOW),
        ]);
        let info = inspect(&reply).unwrap();
        assert_eq!(info.lock.holders, vec![Holder::new("u:1", 2)]);
        assert_eq!(info.lock.ttl, Some(Duration::from_millis(900)));
        assert_eq!(
            info.queue,
            vec![
                QueuedWaiter::new("u:2", Duration::from_secs(4)),
                QueuedWaiter::new("u:3", Duration::ZERO),
                // Overdue, not evicted by a read: no time left.
                QueuedWaiter::new("u:4", Duration::ZERO),
            ]
        );
    }

    #[test]
    fn inspect_rejects_other_shapes() {
        let two = arr(vec![arr(vec![]), Value::Int(-2)]);
        assert!(inspect(&two).is_err());
        let no_clock = arr(vec![arr(vec![]), Value::Int(-2), arr(vec![]), arr(vec![])]);
        assert!(inspect(&no_clock).is_err());
        let mismatched = arr(vec![
            arr(vec![]),
            Value::Int(-2),
            arr(vec![bulk("u:2")]),
            arr(vec![]),
            Value::Int(NOW),
        ]);
        assert!(inspect(&mismatched).is_err());
        let bad_deadline = arr(vec![
            arr(vec![]),
            Value::Int(-2),
            arr(vec![bulk("u:2")]),
            arr(vec![bulk("soon")]),
            Value::Int(NOW),
        ]);
        assert!(inspect(&bad_deadline).is_err());
    }
}
