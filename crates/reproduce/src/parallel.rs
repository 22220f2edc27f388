//! Independent runs on every core: each run is its own device and seed,
//! so the results do not depend on the order they run in, and come back in
//! the order of the points.

use crate::progress::Progress;
use crate::Error;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// `run` of every point, on as many threads as the machine has; `say`
/// names a point as it starts. The first failure stops the points not yet
/// started and is returned.
pub fn map<P: Sync, T: Send>(
    points: &[P],
    progress: &Progress,
    say: impl Fn(&P) -> String + Sync,
    run: impl Fn(&P) -> Result<T, Error> + Sync,
) -> Result<Vec<T>, Error> {
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, points.len().max(1));
    let next = AtomicUsize::new(0);
    let done: Mutex<Vec<Option<Result<T, Error>>>> = Mutex::new((0..points.len()).map(|_| None).collect());
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(p) = points.get(i) else { break };
                progress.say(say(p));
                let r = run(p);
                let failed = r.is_err();
                done.lock().expect("no worker panicked")[i] = Some(r);
                progress.step();
                if failed {
                    next.store(points.len(), Ordering::Relaxed);
                }
            });
        }
    });
    done.into_inner().expect("no worker panicked").into_iter().flatten().collect()
}
