// SPDX-License-Identifier: GPL-2.0

//! The wait policy: looks, spins and naps, and one budget per wait.

use kernel::{
    io::poll::read_poll_timeout,
    prelude::*,
    time::{
        Delta,
        Instant,
        Monotonic, //
    },
};

/// How long a command waits for ring space.
pub(crate) const SEND_TIMEOUT: Delta = Delta::from_secs(1);
/// How long a receive waits for the element after a full one, whatever the caller's
/// timeout (zero included); if none comes, the message is whole ([`Delimiter`]). The GSP
/// writes a split message's records back to back, well within it.
///
/// [`Delimiter`]: crate::gsp::fw::element::Delimiter
pub const RECORD_TIMEOUT: Delta = Delta::from_millis(100);
/// How long a wait looks back to back before it sleeps; a busy GSP answers within it.
const SPIN_BUDGET: Delta = Delta::from_micros(100);
/// The pause between looks while spinning (`ndelay` in a kernel, with a reschedule).
const SPIN_STEP: Delta = Delta::from_nanos(1);
/// The sleep between looks after `SPIN_BUDGET` (`usleep_range(50, 100)` in a kernel), so
/// an idle wait does not burn its CPU.
pub const NAP: Delta = Delta::from_micros(50);

/// A wait's timeout, whose clock starts when a look first finds the queue not ready.
///
/// One budget covers a whole wait however many messages it skips, so no stream of events
/// holds a caller beyond its timeout.
pub struct Budget {
    timeout: Delta,
    start: Option<Instant<Monotonic>>,
}

impl Budget {
    /// Creates a budget of `timeout`, its clock not yet started.
    pub fn new(timeout: Delta) -> Self {
        Self {
            timeout,
            start: None,
        }
    }

    /// Returns what is left of the timeout, starting the clock at the first call.
    pub(crate) fn left(&mut self) -> Delta {
        if self.timeout.as_nanos() <= 0 {
            return Delta::ZERO;
        }
        match self.start {
            None => {
                self.start = Some(Instant::<Monotonic>::now());
                self.timeout
            }
            Some(start) => {
                Delta::from_nanos((self.timeout.as_nanos() - start.elapsed().as_nanos()).max(0))
            }
        }
    }
}

/// Calls `op` until `cond` accepts its value or `budget` runs out: once, then back to
/// back for [`SPIN_BUDGET`], then every [`NAP`].
///
/// # Errors
///
/// As [`read_poll_timeout`].
pub(super) fn poll_queue<T>(
    mut op: impl FnMut() -> Result<T>,
    mut cond: impl FnMut(&T) -> bool,
    budget: &mut Budget,
) -> Result<T> {
    // One look before reading the clock: a busy queue is usually ready.
    let val = op()?;
    if cond(&val) {
        return Ok(val);
    }
    let timeout = budget.left();
    if timeout.is_zero() {
        return Err(ETIMEDOUT);
    }
    let spin = Delta::from_nanos(SPIN_BUDGET.as_nanos().min(timeout.as_nanos()));
    match read_poll_timeout(&mut op, &mut cond, SPIN_STEP, spin) {
        Err(e) if e == ETIMEDOUT && timeout.as_nanos() > spin.as_nanos() => {
            let left = Delta::from_nanos(timeout.as_nanos() - spin.as_nanos());
            read_poll_timeout(op, cond, NAP, left)
        }
        result => result,
    }
}
