//! A bounded fault fuzz over every kind, in memory under paused time:
//! several clients contend on one store (three for RedLock) while a fault
//! task fails calls, loses replies, holds requests to run late, takes the
//! store down for a while and drops notices. Seeded, so a failing seed can
//! be kept as a test of its own.
//!
//! What it asserts, checked as it goes and at the end:
//! - exclusive holds (reentrant, lean, fair, handoff, RedLock, the write side of
//!   a read-write lock): nobody enters while another holder is inside whose
//!   guard does not report its lock lost; readers never meet a live writer;
//! - semaphores: never more than their permits taken by guards not lost,
//!   and once every task is done and every late request and lease is over,
//!   all permits are free again (none lost, none over-issued);
//! - the latch: it never opens before enough count-downs were at least
//!   sent, its count ends between what the certain and the possible
//!   count-downs leave, and it opens for every waiter once counted down;
//! - no stuck task: each finishes within [`BOUND`] of paused time.
//!
//! Run with `--nocapture` to see the counts of each kind.

use std::fmt;
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use lock_redis::{
    ExpirablePermitGuard, Guard, Lock, LockClient, PermitExpirableSemaphore, PermitGuard, RedGuard,
    RedLock, Result, Semaphore,
};
use lock_testkit::conformance::config;
use lock_testkit::InMemoryServer;
use tokio::time::{sleep, timeout, Instant};

/// The seeds every kind runs with.
const SEEDS: &[u64] = &[1, 2, 3, 4, 5, 6];
/// Contending tasks per run, and the acquisitions each tries.
const TASKS: u64 = 4;
const STEPS: u64 = 8;
/// Paused time within which every task must finish: far beyond what its
/// steps wait (each wait is bounded) plus the retry policy.
const BOUND: Duration = Duration::from_secs(900);
/// Past every late request, lease and request record: the fault task
/// delays requests by up to 35 s, beyond their 30 s deadline.
const SETTLE: Duration = Duration::from_secs(60);

/// What one kind's runs did, over every seed.
#[derive(Debug, Default)]
struct Tally {
    seeds: AtomicU64,
    steps: AtomicU64,
    failed: AtomicU64,
    lost_replies: AtomicU64,
    delayed: AtomicU64,
    outages: AtomicU64,
    dropped_notices: AtomicU64,
    acquisitions: AtomicU64,
    cancelled: AtomicU64,
    errors: AtomicU64,
    lost_guards: AtomicU64,
    overlaps_allowed: AtomicU64,
    /// What happened in the current seed's run, by paused time: printed
    /// with a violation, to tell what the engine did.
    events: Mutex<(Option<Instant>, Vec<String>)>,
}

impl Tally {
    /// Starts a new seed's record of events.
    fn start(&self) {
        *self.events.lock().unwrap_or_else(PoisonError::into_inner) =
            (Some(Instant::now()), Vec::new());
    }

    fn event(&self, what: impl fmt::Display) {
        let mut events = self.events.lock().unwrap_or_else(PoisonError::into_inner);
        let since = events.0.map(|t| t.elapsed()).unwrap_or_default();
        events
            .1
            .push(format!("{:>9.3}s {what}", since.as_secs_f64()));
    }

    /// Every event of the current seed's run, one a line.
    fn events(&self) -> String {
        let events = self.events.lock().unwrap_or_else(PoisonError::into_inner);
        events.1.join("\n")
    }
}

fn bump(counter: &AtomicU64) {
    counter.fetch_add(1, Ordering::Relaxed);
}

impl fmt::Display for Tally {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = |c: &AtomicU64| c.load(Ordering::Relaxed);
        write!(
            f,
            "seeds {} steps {} | faults: failed {} lost-replies {} delayed {} outages {} \
             dropped-notices {} | acquisitions {} cancelled {} errors {} lost guards {} \
             overlaps allowed {}",
            n(&self.seeds),
            n(&self.steps),
            n(&self.failed),
            n(&self.lost_replies),
            n(&self.delayed),
            n(&self.outages),
            n(&self.dropped_notices),
            n(&self.acquisitions),
            n(&self.cancelled),
            n(&self.errors),
            n(&self.lost_guards),
            n(&self.overlaps_allowed),
        )
    }
}

/// Who is inside one critical section, and any entry that broke its rule:
/// an exclusive entry meets nobody live, a shared one meets no live
/// exclusive holder and keeps the shared weight within `capacity`. A holder
/// whose guard reports its hold lost has been told, so it no longer counts
/// (the entry it lets in is counted as an allowed overlap).
struct Occupancy {
    capacity: u64,
    state: Mutex<Inside>,
}

#[derive(Default)]
struct Inside {
    next: u64,
    holders: Vec<Holder>,
    violations: Vec<String>,
}

struct Holder {
    ticket: u64,
    who: String,
    weight: u64,
    exclusive: bool,
    lost: Box<dyn Fn() -> bool + Send + Sync>,
}

impl Occupancy {
    fn new(capacity: u64) -> Arc<Self> {
        Arc::new(Self {
            capacity,
            state: Mutex::default(),
        })
    }

    fn enter(
        &self,
        tally: &Tally,
        who: String,
        weight: u64,
        exclusive: bool,
        lost: impl Fn() -> bool + Send + Sync + 'static,
    ) -> u64 {
        let mut inside = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let live: Vec<&Holder> = inside.holders.iter().filter(|h| !(h.lost)()).collect();
        let weight_live: u64 = live.iter().map(|h| h.weight).sum();
        let broken = if exclusive {
            !live.is_empty()
        } else {
            live.iter().any(|h| h.exclusive) || weight_live + weight > self.capacity
        };
        if broken {
            let names: Vec<&str> = live.iter().map(|h| h.who.as_str()).collect();
            let msg = format!("{who} (weight {weight}) entered while live {names:?} inside");
            inside.violations.push(msg);
        } else if live.len() < inside.holders.len() {
            bump(&tally.overlaps_allowed);
        }
        bump(&tally.acquisitions);
        inside.next += 1;
        let ticket = inside.next;
        inside.holders.push(Holder {
            ticket,
            who,
            weight,
            exclusive,
            lost: Box::new(lost),
        });
        ticket
    }

    fn leave(&self, ticket: u64) {
        let mut inside = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        inside.holders.retain(|h| h.ticket != ticket);
    }

    fn violations(&self) -> Vec<String> {
        let inside = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        inside.violations.clone()
    }
}

/// Injects a random fault into one of `stores` every little while until
/// `stop`, then clears every fault.
async fn inject(stores: Vec<InMemoryServer>, seed: u64, stop: Arc<AtomicBool>, tally: Arc<Tally>) {
    let mut rng = fastrand::Rng::with_seed(seed ^ 0xfa17);
    while !stop.load(Ordering::Relaxed) {
        sleep(Duration::from_millis(rng.u64(50..600))).await;
        let at = rng.usize(..stores.len());
        let store = &stores[at];
        match rng.u8(..5) {
            0 => {
                let n = rng.u32(1..4);
                store.fail_next(n);
                tally.event(format_args!("fault: store {at} fails the next {n} calls"));
                bump(&tally.failed);
            }
            1 => {
                let n = rng.u32(1..4);
                store.lose_next_replies(n);
                tally.event(format_args!("fault: store {at} loses the next {n} replies"));
                bump(&tally.lost_replies);
            }
            2 => {
                // Mostly late within the request's deadline (answered by
                // its record or running first), sometimes past it (refused).
                let delay = if rng.u8(..5) == 0 {
                    Duration::from_secs(35)
                } else {
                    Duration::from_millis(rng.u64(20..3000))
                };
                let n = rng.u32(1..3);
                store.delay_next(n, delay);
                tally.event(format_args!(
                    "fault: store {at} delays the next {n} calls by {delay:?}"
                ));
                bump(&tally.delayed);
            }
            3 => {
                store.set_down(true);
                tally.event(format_args!("fault: store {at} down"));
                sleep(Duration::from_millis(rng.u64(50..1500))).await;
                store.set_down(false);
                tally.event(format_args!("fault: store {at} up"));
                bump(&tally.outages);
            }
            _ => {
                store.set_drop_notices(true);
                tally.event(format_args!("fault: store {at} drops notices"));
                sleep(Duration::from_millis(rng.u64(50..3000))).await;
                store.set_drop_notices(false);
                tally.event(format_args!("fault: store {at} delivers notices"));
                bump(&tally.dropped_notices);
            }
        }
    }
    for store in &stores {
        store.fail_next(0);
        store.lose_next_replies(0);
        store.delay_next(0, Duration::ZERO);
        store.set_down(false);
        store.set_drop_notices(false);
    }
}

/// Runs `tasks` (each bounded by [`BOUND`]) while faults are injected into
/// `stores`; then lets every late request, lease and background release
/// finish.
async fn contend<F>(
    kind: &str,
    seed: u64,
    stores: &[InMemoryServer],
    clients: &[LockClient],
    tally: &Arc<Tally>,
    tasks: Vec<F>,
) where
    F: Future<Output = ()> + Send + 'static,
{
    tally.start();
    let stop = Arc::new(AtomicBool::new(false));
    let faults = tokio::spawn(inject(
        stores.to_vec(),
        seed,
        Arc::clone(&stop),
        Arc::clone(tally),
    ));
    let running: Vec<_> = tasks
        .into_iter()
        .map(|task| tokio::spawn(timeout(BOUND, task)))
        .collect();
    for (i, task) in running.into_iter().enumerate() {
        let finished = task.await.expect("a task panicked");
        assert!(
            finished.is_ok(),
            "{kind} seed {seed}: task {i} stuck past {BOUND:?}"
        );
    }
    stop.store(true, Ordering::Relaxed);
    faults.await.unwrap();
    sleep(SETTLE).await;
    for client in clients {
        timeout(BOUND, client.settle())
            .await
            .unwrap_or_else(|_| panic!("{kind} seed {seed}: a client never settled"));
    }
}

/// `n` clients of `store` with the suite's short watchdog; with a command
/// timeout on odd seeds (delayed calls then time out rather than fail at
/// once).
fn clients(store: &InMemoryServer, seed: u64, n: usize) -> Vec<LockClient> {
    if seed % 2 == 1 {
        store.set_command_timeout(Some(Duration::from_millis(250)));
    }
    (0..n)
        .map(|_| store.client_with(config()).unwrap())
        .collect()
}

/// A handle one task acquires through: one lock of a kind, a RedLock, or
/// a semaphore of either kind.
#[derive(Clone)]
enum Handle {
    One(Lock),
    Red(RedLock),
    Sem(Semaphore),
    Exp(PermitExpirableSemaphore),
}

/// What a [`Handle`] gave.
enum Held {
    One(Guard),
    Red(RedGuard),
    Sem(PermitGuard),
    Exp(ExpirablePermitGuard),
}

impl Held {
    /// Whether the holder was told its hold may be gone (a semaphore's
    /// plain permits have no lease: never).
    fn is_lost(&self) -> bool {
        match self {
            Held::One(g) => g.is_lost(),
            Held::Red(g) => g.is_lost(),
            Held::Sem(_) => false,
            Held::Exp(p) => p.is_lost(),
        }
    }

    /// What the holder knows of its hold, for the record of events.
    fn describe(&self) -> String {
        let left = |deadline: Instant| deadline.saturating_duration_since(Instant::now());
        match self {
            Held::One(g) => format!(
                "owner {}, lease ends in {:?}",
                g.owner().owner_id(),
                left(g.lease_deadline())
            ),
            Held::Red(g) => format!(
                "{} of its stores, lease ends in {:?}",
                g.held(),
                left(g.lease_deadline())
            ),
            Held::Sem(p) => format!("{} permits", p.permits()),
            Held::Exp(p) => format!(
                "permit {:?}, lease ends in {:?}",
                p.id(),
                left(p.lease_deadline())
            ),
        }
    }

    /// How many permits (or holds) this is.
    fn weight(&self) -> u64 {
        match self {
            Held::Sem(p) => p.permits(),
            _ => 1,
        }
    }

    async fn unlock(self) -> Result<()> {
        match self {
            Held::One(g) => g.unlock().await,
            Held::Red(g) => g.unlock().await,
            Held::Sem(p) => p.release().await,
            Held::Exp(p) => p.release().await,
        }
    }
}

impl Handle {
    /// One acquisition picked by `rng`: waiting (and maybe given up on
    /// mid-way), trying once, trying for a while, or with a fixed lease.
    /// `None`: not acquired (busy, given up, or an error).
    async fn acquire(&self, rng: &mut fastrand::Rng, tally: &Tally, who: &str) -> Option<Held> {
        let wait = Duration::from_millis(rng.u64(100..4000));
        let lease = Duration::from_millis(rng.u64(500..3000));
        let n = rng.u64(1..3);
        let permit_lease = rng.bool().then_some(lease);
        let one = |g: Guard| Some(Held::One(g));
        let red = |g: RedGuard| Some(Held::Red(g));
        let sem = |p: PermitGuard| Some(Held::Sem(p));
        let exp = |p: ExpirablePermitGuard| Some(Held::Exp(p));
        let pick = rng.u8(..4);
        let op = match pick {
            0 => format!("waits (given up after {wait:?})"),
            1 => "tries once".to_owned(),
            2 => format!("tries for {wait:?}"),
            _ => format!("waits with lease {lease:?} (given up after {wait:?})"),
        };
        tally.event(format_args!("{who}: {op}"));
        let outcome = match (pick, self) {
            (0, Handle::One(l)) => timeout(wait, l.lock()).await.map(|r| r.map(one)),
            (0, Handle::Red(l)) => timeout(wait, l.lock()).await.map(|r| r.map(red)),
            (1, Handle::One(l)) => Ok(l.try_lock().await.map(|g| g.and_then(one))),
            (1, Handle::Red(l)) => Ok(l.try_lock().await.map(|g| g.and_then(red))),
            (2, Handle::One(l)) => Ok(l.try_lock_for(wait).await.map(|g| g.and_then(one))),
            (2, Handle::Red(l)) => Ok(l.try_lock_for(wait).await.map(|g| g.and_then(red))),
            (_, Handle::One(l)) => timeout(wait, l.lock_with_lease(lease))
                .await
                .map(|r| r.map(one)),
            (_, Handle::Red(l)) => timeout(wait, l.lock_with_lease(lease))
                .await
                .map(|r| r.map(red)),
            (0 | 3, Handle::Sem(s)) => timeout(wait, s.acquire_many(n)).await.map(|r| r.map(sem)),
            (1, Handle::Sem(s)) => Ok(s.try_acquire_many(n).await.map(|p| p.and_then(sem))),
            (_, Handle::Sem(s)) => Ok(s
                .try_acquire_many_for(n, wait)
                .await
                .map(|p| p.and_then(sem))),
            (0 | 3, Handle::Exp(s)) => timeout(wait, async {
                match permit_lease {
                    Some(lease) => s.acquire_with_lease(lease).await,
                    None => s.acquire().await,
                }
            })
            .await
            .map(|r| r.map(exp)),
            (1, Handle::Exp(s)) => Ok(match permit_lease {
                Some(lease) => s.try_acquire_with_lease(lease).await,
                None => s.try_acquire().await,
            }
            .map(|p| p.and_then(exp))),
            (_, Handle::Exp(s)) => Ok(match permit_lease {
                Some(lease) => s.try_acquire_for_with_lease(wait, lease).await,
                None => s.try_acquire_for(wait).await,
            }
            .map(|p| p.and_then(exp))),
        };
        match outcome {
            Err(_) => {
                tally.event(format_args!("{who}: given up"));
                bump(&tally.cancelled);
                None
            }
            Ok(Err(e)) => {
                tally.event(format_args!("{who}: error {e}"));
                bump(&tally.errors);
                None
            }
            Ok(Ok(None)) => {
                tally.event(format_args!("{who}: busy"));
                None
            }
            Ok(Ok(held)) => held,
        }
    }
}

/// Holds `held` in `occupancy` for a random while, then leaves and
/// releases or drops it.
async fn hold(
    occupancy: &Occupancy,
    tally: &Tally,
    rng: &mut fastrand::Rng,
    who: String,
    exclusive: bool,
    held: Held,
) {
    let weight = held.weight();
    tally.event(format_args!("{who}: enters ({})", held.describe()));
    let held = Arc::new(held);
    let ticket = occupancy.enter(tally, who.clone(), weight, exclusive, {
        let held = Arc::clone(&held);
        move || held.is_lost()
    });
    sleep(Duration::from_millis(rng.u64(0..3000))).await;
    let lost = held.is_lost();
    if lost {
        bump(&tally.lost_guards);
    }
    occupancy.leave(ticket);
    let held = Arc::into_inner(held).expect("the checker let go of the guard");
    if rng.bool() {
        tally.event(format_args!("{who}: leaves (lost: {lost}), releases"));
        let released = held.unlock().await;
        tally.event(format_args!("{who}: released: {released:?}"));
        if released.is_err() {
            bump(&tally.errors);
        }
    } else {
        tally.event(format_args!(
            "{who}: leaves (lost: {lost}), drops its guard"
        ));
        drop(held);
    }
}

/// [`TASKS`] tasks of [`STEPS`] steps each: a step acquires through
/// `handle(task, rng)` (its holds exclusive when it says so), holds for a
/// while, then releases or drops.
fn tasks(
    seed: u64,
    occupancy: &Arc<Occupancy>,
    tally: &Arc<Tally>,
    handle: impl Fn(u64, &mut fastrand::Rng) -> (Handle, bool),
) -> Vec<impl Future<Output = ()> + Send + 'static> {
    (0..TASKS)
        .map(|task| {
            let mut rng = fastrand::Rng::with_seed(seed * 100 + task);
            let handles: Vec<(Handle, bool)> = (0..STEPS).map(|_| handle(task, &mut rng)).collect();
            let (occupancy, tally) = (Arc::clone(occupancy), Arc::clone(tally));
            async move {
                for (step, (handle, exclusive)) in handles.into_iter().enumerate() {
                    bump(&tally.steps);
                    sleep(Duration::from_millis(rng.u64(0..500))).await;
                    let who = format!("task {task} step {step}");
                    if let Some(held) = handle.acquire(&mut rng, &tally, &who).await {
                        hold(&occupancy, &tally, &mut rng, who, exclusive, held).await;
                    }
                }
            }
        })
        .collect()
}

/// One exclusive kind (`make` gives a client's handle on the lock) over
/// every seed.
async fn fuzz_exclusive(kind: &str, make: fn(&LockClient) -> Lock) {
    let tally = Arc::new(Tally::default());
    for &seed in SEEDS {
        let store = InMemoryServer::new();
        let clients = clients(&store, seed, 3);
        let occupancy = Occupancy::new(1);
        let tasks = tasks(seed, &occupancy, &tally, |task, _| {
            let client = &clients[task as usize % clients.len()];
            (Handle::One(make(client)), true)
        });
        contend(kind, seed, &[store], &clients, &tally, tasks).await;
        let violations = occupancy.violations();
        assert!(
            violations.is_empty(),
            "{kind} seed {seed}: {violations:#?}\n{}",
            tally.events()
        );
        bump(&tally.seeds);
    }
    finish(kind, &tally);
}

/// Reports a kind's counts: the run's output, read with `--nocapture`.
#[allow(clippy::print_stdout)]
fn finish(kind: &str, tally: &Tally) {
    println!("fault fuzz, {kind}: {tally}");
}

#[tokio::test(start_paused = true)]
async fn reentrant_lock() {
    fuzz_exclusive("reentrant", |c| c.lock("fuzz").unwrap()).await;
}

#[tokio::test(start_paused = true)]
async fn lean_lock() {
    fuzz_exclusive("lean", |c| c.lean_lock("fuzz").unwrap()).await;
}

#[tokio::test(start_paused = true)]
async fn fair_lock() {
    fuzz_exclusive("fair", |c| c.fair_lock("fuzz").unwrap().as_lock().clone()).await;
}

#[tokio::test(start_paused = true)]
async fn handoff_lock() {
    fuzz_exclusive("handoff", |c| {
        c.handoff_lock("fuzz").unwrap().as_lock().clone()
    })
    .await;
}

/// Writers exclude everyone; readers share with readers only.
#[tokio::test(start_paused = true)]
async fn read_write_lock() {
    let kind = "read-write";
    let tally = Arc::new(Tally::default());
    for &seed in SEEDS {
        let store = InMemoryServer::new();
        let clients = clients(&store, seed, 3);
        let occupancy = Occupancy::new(u64::MAX);
        let tasks = tasks(seed, &occupancy, &tally, |task, rng| {
            let client = &clients[task as usize % clients.len()];
            let rw = client.read_write_lock("fuzz").unwrap();
            let write = rng.bool();
            let side = if write { rw.write() } else { rw.read() };
            (Handle::One(side.clone()), write)
        });
        contend(kind, seed, &[store], &clients, &tally, tasks).await;
        let violations = occupancy.violations();
        assert!(
            violations.is_empty(),
            "{kind} seed {seed}: {violations:#?}\n{}",
            tally.events()
        );
        bump(&tally.seeds);
    }
    finish(kind, &tally);
}

/// RedLock over three stores, faults injected into any of them.
#[tokio::test(start_paused = true)]
async fn red_lock() {
    let kind = "redlock";
    let tally = Arc::new(Tally::default());
    for &seed in SEEDS {
        let stores: Vec<InMemoryServer> = (0..3).map(|_| InMemoryServer::new()).collect();
        // One client per store for each of three processes.
        let per_store: Vec<Vec<LockClient>> = stores.iter().map(|s| clients(s, seed, 3)).collect();
        let all: Vec<LockClient> = per_store.iter().flatten().cloned().collect();
        let occupancy = Occupancy::new(1);
        let tasks = tasks(seed, &occupancy, &tally, |task, _| {
            let process = task as usize % 3;
            let locks = per_store.iter().map(|c| c[process].lock("fuzz").unwrap());
            (Handle::Red(RedLock::new(locks).unwrap()), true)
        });
        contend(kind, seed, &stores, &all, &tally, tasks).await;
        let violations = occupancy.violations();
        assert!(
            violations.is_empty(),
            "{kind} seed {seed}: {violations:#?}\n{}",
            tally.events()
        );
        bump(&tally.seeds);
    }
    finish(kind, &tally);
}

/// The semaphores' permits.
const PERMITS: u64 = 3;

/// A semaphore of either kind (`make` gives a client's handle) over every
/// seed: never more than [`PERMITS`] taken by guards not lost, and all of
/// them free once everything is over.
async fn fuzz_semaphore(kind: &str, make: fn(&LockClient) -> Handle) {
    let tally = Arc::new(Tally::default());
    for &seed in SEEDS {
        let store = InMemoryServer::new();
        let clients = clients(&store, seed, 3);
        let available = match make(&clients[0]) {
            Handle::Sem(s) => {
                assert!(s.try_set_permits(PERMITS).await.unwrap());
                Handle::Sem(s)
            }
            Handle::Exp(s) => {
                assert!(s.try_set_permits(PERMITS).await.unwrap());
                Handle::Exp(s)
            }
            _ => unreachable!("a semaphore"),
        };
        let occupancy = Occupancy::new(PERMITS);
        let tasks = tasks(seed, &occupancy, &tally, |task, _| {
            (make(&clients[task as usize % clients.len()]), false)
        });
        contend(kind, seed, &[store], &clients, &tally, tasks).await;
        let violations = occupancy.violations();
        assert!(
            violations.is_empty(),
            "{kind} seed {seed}: {violations:#?}\n{}",
            tally.events()
        );
        let free = match available {
            Handle::Sem(s) => s.available_permits().await.unwrap(),
            Handle::Exp(s) => s.available_permits().await.unwrap(),
            _ => unreachable!("a semaphore"),
        };
        assert_eq!(
            free, PERMITS as i64,
            "{kind} seed {seed}: permits at the end"
        );
        bump(&tally.seeds);
    }
    finish(kind, &tally);
}

#[tokio::test(start_paused = true)]
async fn semaphore() {
    fuzz_semaphore("semaphore", |c| Handle::Sem(c.semaphore("fuzz").unwrap())).await;
}

#[tokio::test(start_paused = true)]
async fn permit_expirable_semaphore() {
    fuzz_semaphore("expirable semaphore", |c| {
        Handle::Exp(c.permit_expirable_semaphore("fuzz").unwrap())
    })
    .await;
}

/// The count the latch starts at.
const COUNT: u64 = 6;

/// Count-down latch: waiters (some giving up mid-way) against tasks that
/// count down, under faults. A count-down that failed may or may not have
/// applied (or may still apply, late): the latch may open only once at
/// least [`COUNT`] count-downs were sent; its count at the end lies
/// between what the certain and the possible ones leave; once counted down
/// without faults, it opens for every waiter.
#[tokio::test(start_paused = true)]
async fn count_down_latch() {
    let kind = "latch";
    let tally = Arc::new(Tally::default());
    for &seed in SEEDS {
        let store = InMemoryServer::new();
        let clients = clients(&store, seed, 3);
        let latch = clients[0].count_down_latch("fuzz").unwrap();
        assert!(latch.try_set_count(COUNT).await.unwrap());
        let sent = Arc::new(AtomicU64::new(0));
        let applied = Arc::new(AtomicU64::new(0));
        let failed = Arc::new(AtomicU64::new(0));
        let early = Arc::new(Mutex::new(Vec::<String>::new()));
        let mut tasks: Vec<std::pin::Pin<Box<dyn Future<Output = ()> + Send>>> = Vec::new();
        for task in 0..TASKS {
            let mut rng = fastrand::Rng::with_seed(seed * 100 + task);
            let l = clients[task as usize % clients.len()]
                .count_down_latch("fuzz")
                .unwrap();
            let (sent, early, tally) = (Arc::clone(&sent), Arc::clone(&early), Arc::clone(&tally));
            // Waiters.
            tasks.push(Box::pin(async move {
                for step in 0..STEPS {
                    bump(&tally.steps);
                    let wait = Duration::from_millis(rng.u64(100..4000));
                    let opened = if rng.bool() {
                        timeout(wait, l.wait()).await.map(|r| r.map(|()| true))
                    } else {
                        Ok(l.wait_for(wait).await)
                    };
                    let at_least = sent.load(Ordering::SeqCst);
                    match opened {
                        Ok(Ok(true)) => {
                            bump(&tally.acquisitions);
                            if at_least < COUNT {
                                early.lock().unwrap().push(format!(
                                    "task {task} step {step}: opened after {at_least} count-downs sent"
                                ));
                            }
                        }
                        Ok(Ok(false)) => {}
                        Ok(Err(_)) => bump(&tally.errors),
                        Err(_) => bump(&tally.cancelled),
                    }
                }
            }));
        }
        for task in 0..2 {
            let mut rng = fastrand::Rng::with_seed(seed * 1000 + task);
            let l = clients[task as usize].count_down_latch("fuzz").unwrap();
            let (sent, applied, failed, tally) = (
                Arc::clone(&sent),
                Arc::clone(&applied),
                Arc::clone(&failed),
                Arc::clone(&tally),
            );
            // Counters: together they send more than the count, slowly.
            tasks.push(Box::pin(async move {
                for _ in 0..COUNT / 2 + 1 {
                    sleep(Duration::from_millis(rng.u64(500..5000))).await;
                    sent.fetch_add(1, Ordering::SeqCst);
                    match l.count_down().await {
                        Ok(_) => bump(&applied),
                        Err(_) => {
                            bump(&failed);
                            bump(&tally.errors);
                        }
                    }
                }
            }));
        }
        contend(kind, seed, &[store], &clients, &tally, tasks).await;
        let early = early.lock().unwrap().clone();
        assert!(
            early.is_empty(),
            "{kind} seed {seed}: {early:#?}\n{}",
            tally.events()
        );
        let (applied, failed) = (
            applied.load(Ordering::SeqCst),
            failed.load(Ordering::SeqCst),
        );
        let count = latch.count().await.unwrap();
        let least = COUNT.saturating_sub(applied + failed);
        let most = COUNT.saturating_sub(applied);
        assert!(
            (least..=most).contains(&count),
            "{kind} seed {seed}: count {count}, {applied} count-downs applied, {failed} failed"
        );
        for _ in 0..count {
            latch.count_down().await.unwrap();
        }
        for client in &clients {
            let l = client.count_down_latch("fuzz").unwrap();
            timeout(BOUND, l.wait())
                .await
                .unwrap_or_else(|_| panic!("{kind} seed {seed}: a waiter stuck at zero"))
                .unwrap();
        }
        bump(&tally.seeds);
    }
    finish(kind, &tally);
}
