// SPDX-License-Identifier: GPL-2.0

//! Polling helpers, as upstream's `kernel::io::poll`.

use crate::{
    error::{
        code::ETIMEDOUT,
        Result, //
    },
    time::{
        delay::fsleep,
        Delta,
        Instant,
        Monotonic, //
    },
};

/// Calls `op` until `cond` accepts its value or `timeout_delta` passes, sleeping
/// `sleep_delta` between tries (spinning with `cpu_relax` when it is zero).
///
/// # Errors
///
/// - `ETIMEDOUT` if `cond` never accepted a value within `timeout_delta`.
/// - Any error `op` returns, at once.
pub fn read_poll_timeout<Op, Cond, T>(
    mut op: Op,
    mut cond: Cond,
    sleep_delta: Delta,
    timeout_delta: Delta,
) -> Result<T>
where
    Op: FnMut() -> Result<T>,
    Cond: FnMut(&T) -> bool,
{
    let start = Instant::<Monotonic>::now();
    loop {
        let val = op()?;
        if cond(&val) {
            return Ok(val);
        }
        if start.elapsed() > timeout_delta {
            return Err(ETIMEDOUT);
        }
        fsleep(sleep_delta);
        core::hint::spin_loop();
    }
}
