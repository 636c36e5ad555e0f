//! One sequence of the direct handoff ([`Kind::Handoff`]) that surely goes
//! through what its random sequences reach only now and then: a release
//! grants the lock to a queued wait, whose next attempt claims the grant;
//! a fenced wait at the head is told, not granted; a wait that gives up
//! gives back a lock granted to it. Compared with Redis beside the
//! property test (lock-redis's `tests/model.rs`).

use super::{Kind, Op, Step};

/// A wait on the handoff's one lock (`model-1`) by `owner` of `client`,
/// lease and waiter timeout 950 ms.
fn wait(client: usize, owner: u64, fenced: bool) -> Step<Op> {
    Step::Op(Op::Acquire {
        client,
        owner,
        lock: 1,
        lease: 2,
        fenced,
        queue: Some(2),
        private: false,
    })
}

/// The `n`-th wait that took the lock releases it.
fn unlock(n: usize) -> Step<Op> {
    Step::Op(Op::Unlock { wait: n })
}

/// The `n`-th wait still waiting tries again.
fn again(n: usize) -> Step<Op> {
    Step::Op(Op::Again { wait: n })
}

/// A snapshot of the keyspace here, with no time passing.
const LOOK: Step<Op> = Step::Advance { steps: 0 };

/// The sequence (see the module docs), for [`Kind::Handoff`]; each step
/// says what it shows in memory (the model's tests check it does).
pub fn handoff_steps() -> (Kind, Vec<Step<Op>>) {
    let steps = vec![
        wait(0, 0, false), // Acquired: the lock was free (ticket 1).
        wait(1, 0, false), // Held: queued with ticket 2.
        wait(1, 1, true),  // Held: queued, fenced, no ticket.
        LOOK,
        unlock(0), // Released: granted to ticket 2.
        LOOK,
        again(0),          // Claimed: the grant, taken by the wait's next look.
        unlock(0),         // Released: the fenced head is told, not granted.
        again(0),          // Acquired, with its token.
        wait(0, 0, false), // Held: queued with ticket 3.
        unlock(0),         // Released: granted to ticket 3.
        LOOK,
        Step::Op(Op::Leave { wait: 0 }), // Left: the grant given back.
        Step::Op(Op::Inspect { lock: 1 }), // Free, nobody queued.
        Step::Op(Op::Repeat),            // The last release, recorded.
    ];
    (Kind::Handoff, steps)
}
