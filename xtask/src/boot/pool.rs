// SPDX-License-Identifier: GPL-2.0

//! Boots side by side: a job per item on a bounded number of threads, started longest
//! first (by the last run's times: [`longest_first`]), the results handed over in the
//! items' order, each as soon as it and every one before it are in.

use std::{
    env,
    num::NonZeroUsize,
    sync::{
        atomic::{
            AtomicBool,
            AtomicUsize,
            Ordering, //
        },
        mpsc,
    },
    thread, //
};

/// The most boots side by side `VGSP_BOOT_JOBS` may ask for.
const MAX_WIDTH: usize = 16;

/// Returns how many boots run side by side: `VGSP_BOOT_JOBS`, else twice the number of
/// CPUs. A boot keeps about one CPU busy while the guest runs, but against a hostile GSP
/// most of its time is the driver's 5 s waits, the guest idle: on 2 shared vCPUs
/// (2026-12-06) the 19 fault boots took 52 s two at a time, 37 s four at a time, with the
/// same rows.
///
/// # Errors
///
/// - `VGSP_BOOT_JOBS` is not a number from 1 to 16.
pub(crate) fn width() -> Result<usize, String> {
    match env::var("VGSP_BOOT_JOBS") {
        Ok(v) => v
            .parse()
            .ok()
            .filter(|n| (1..=MAX_WIDTH).contains(n))
            .ok_or_else(|| format!("VGSP_BOOT_JOBS={v}: a number of boots from 1 to {MAX_WIDTH}")),
        Err(_) => Ok(thread::available_parallelism()
            .map_or(1, NonZeroUsize::get)
            .saturating_mul(2)
            .min(MAX_WIDTH)),
    }
}

/// Returns the order to start jobs in, given each item's last time (`None`: never run):
/// the ones never run first, then the longest first, so that the last to end is not a
/// long one started late. Ties keep the items' order.
pub(crate) fn longest_first(last: &[Option<f64>]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..last.len()).collect();
    order.sort_by(|&a, &b| {
        let key = |i: usize| last[i].unwrap_or(f64::INFINITY);
        key(b).total_cmp(&key(a))
    });
    order
}

/// Runs `job` on each of `items`, at most `width` at once, starting them in `start`'s
/// order (indices into `items`; the items' own order where it has none), and gives each
/// result to `each` in the items' order. After `each` fails, no job starts; the ones
/// running end.
///
/// # Errors
///
/// - `start` is neither empty nor an order of every item once.
/// - The first error `each` returns.
pub(crate) fn in_order<T: Sync, R: Send>(
    items: &[T],
    start: &[usize],
    width: usize,
    job: impl Fn(&T) -> R + Sync,
    mut each: impl FnMut(&T, R) -> Result<(), String>,
) -> Result<(), String> {
    let mut sorted = start.to_vec();
    sorted.sort_unstable();
    if !start.is_empty() && !sorted.iter().copied().eq(0..items.len()) {
        return Err(format!(
            "{start:?} is no order of {} boots: each once",
            items.len()
        ));
    }
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    thread::scope(|scope| {
        let (tx, rx) = mpsc::channel();
        for _ in 0..width.clamp(1, items.len().max(1)) {
            let (tx, next, stop, job) = (tx.clone(), &next, &stop, &job);
            scope.spawn(move || loop {
                // ORDERING: the counter hands out indices, the flag only stops early;
                // the results travel through the channel.
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                let n = next.fetch_add(1, Ordering::Relaxed);
                let i = match start.len() {
                    0 => n,
                    _ => match start.get(n) {
                        Some(&i) => i,
                        None => break,
                    },
                };
                let Some(item) = items.get(i) else { break };
                if tx.send((i, job(item))).is_err() {
                    break;
                }
            });
        }
        drop(tx);
        let mut done: Vec<Option<R>> = items.iter().map(|_| None).collect();
        let mut shown = 0;
        for (i, result) in rx {
            done[i] = Some(result);
            while let Some(result) = done.get_mut(shown).and_then(Option::take) {
                if let Err(e) = each(&items[shown], result) {
                    stop.store(true, Ordering::Relaxed);
                    return Err(e);
                }
                shown += 1;
            }
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use std::{
        sync::Mutex,
        time::Duration, //
    };

    use super::*;

    #[test]
    fn results_come_in_the_items_order_whatever_order_the_jobs_end_in() {
        let items = [40u64, 0, 25, 5, 0, 10];
        let mut seen = Vec::new();
        in_order(
            &items,
            &[],
            3,
            |ms| {
                thread::sleep(Duration::from_millis(*ms));
                ms * 2
            },
            |ms, r| {
                seen.push((*ms, r));
                Ok(())
            },
        )
        .unwrap();
        let want: Vec<_> = items.iter().map(|ms| (*ms, ms * 2)).collect();
        assert_eq!(seen, want);
    }

    #[test]
    fn no_more_jobs_run_at_once_than_the_width() {
        let (running, most) = (Mutex::new(0usize), Mutex::new(0usize));
        in_order(
            &[(); 12],
            &[],
            2,
            |_| {
                {
                    let mut r = running.lock().unwrap();
                    *r += 1;
                    let mut m = most.lock().unwrap();
                    *m = (*m).max(*r);
                }
                // Long enough for the other worker to start, even under qemu-aarch64.
                thread::sleep(Duration::from_millis(25));
                *running.lock().unwrap() -= 1;
            },
            |_, ()| Ok(()),
        )
        .unwrap();
        assert_eq!(*most.lock().unwrap(), 2);
    }

    #[test]
    fn an_error_stops_the_table_and_is_returned() {
        let started = AtomicUsize::new(0);
        let err = in_order(
            &[0u32, 1, 2, 3, 4, 5, 6, 7],
            &[],
            1,
            |i| {
                started.fetch_add(1, Ordering::Relaxed);
                thread::sleep(Duration::from_millis(50));
                *i
            },
            |_, i| match i {
                1 => Err("row 1".to_string()),
                _ => Ok(()),
            },
        )
        .unwrap_err();
        assert_eq!(err, "row 1");
        assert!(started.load(Ordering::Relaxed) < 8);
    }

    #[test]
    fn jobs_start_in_the_order_given_and_results_still_come_in_the_items_order() {
        let started = Mutex::new(Vec::new());
        let mut seen = Vec::new();
        in_order(
            &['a', 'b', 'c', 'd'],
            &[2, 0, 3, 1],
            1,
            |c| started.lock().unwrap().push(*c),
            |c, ()| {
                seen.push(*c);
                Ok(())
            },
        )
        .unwrap();
        assert_eq!(*started.lock().unwrap(), ['c', 'a', 'd', 'b']);
        assert_eq!(seen, ['a', 'b', 'c', 'd']);
    }

    #[test]
    fn an_order_that_leaves_an_item_out_is_refused() {
        let ran = AtomicUsize::new(0);
        let run = |start: &[usize]| {
            in_order(
                &[1, 2, 3],
                start,
                2,
                |_| {
                    ran.fetch_add(1, Ordering::Relaxed);
                },
                |_, ()| Ok(()),
            )
        };
        assert!(run(&[0, 2]).is_err());
        assert!(run(&[0, 2, 2]).is_err());
        assert!(run(&[0, 1, 3]).is_err());
        assert_eq!(ran.load(Ordering::Relaxed), 0);
        assert!(run(&[2, 1, 0]).is_ok());
    }

    #[test]
    fn the_never_run_start_first_then_the_longest() {
        let last = [Some(3.0), None, Some(11.0), Some(7.5), None, Some(3.0)];
        assert_eq!(longest_first(&last), [1, 4, 2, 3, 0, 5]);
    }

    #[test]
    fn no_item_is_no_job() {
        let mut calls = 0;
        in_order(
            &[] as &[u8],
            &[],
            4,
            |_| (),
            |_, ()| {
                calls += 1;
                Ok(())
            },
        )
        .unwrap();
        assert_eq!(calls, 0);
    }
}
