// SPDX-License-Identifier: GPL-2.0

//! Events: the messages the GSP sends unasked (r570's `NV_VGPU_MSG_EVENT_*`), delivered
//! to the handler the driver registered for their function.
//!
//! A handler is registered per event function ([`Cmdq::on_event`]) and called for every
//! such event, in arrival order, by whichever wait takes it off the ring (the receiver,
//! see "Sharing" in [`crate::gsp::cmdq`]): a send waiting for its reply or for ring space,
//! a typed or untyped receive, the bring-up's waits. Taking an event off the ring and
//! handing it over happen under the receive lock, so none is lost or seen twice, and one
//! handler call ends before the next begins. An event nobody registered for goes to a wait
//! that takes any message if one runs; else, or when such a wait passes it over, it is
//! counted ([`EventCounts::unhandled`]) and logged at debug level.
//!
//! A handler runs on the receiver's thread with the receive lock held, and that thread may
//! be a caller in the middle of a send: it must not use the queue (it would wait for
//! itself).
//!
//! Handlers are `&'static`, as a kernel notifier block is: the object lives as long as
//! the driver, and keeps its own state behind interior mutability (it is `Sync`, since
//! any thread that receives may call it). This is also why a handler is not a boxed
//! closure: the shim's `KBox` cannot become a `KBox<dyn Trait>` on a stable compiler.
//!
//! [`Cmdq::on_event`]: crate::gsp::cmdq::Cmdq::on_event

use kernel::prelude::*;

use crate::gsp::{
    cmdq::GspMessage,
    fw::MsgFunction, //
};

/// What the driver does with one event function.
pub trait EventHandler: Sync {
    /// Handles `msg`, an event of the function this handler was registered for.
    fn handle(&self, msg: &GspMessage);
}

/// What the events came to.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EventCounts {
    /// Events handed to a handler.
    pub dispatched: u64,
    /// Events that arrived with no handler registered for their function and that no wait
    /// took.
    pub unhandled: u64,
}

/// A registered handler and the events it was handed.
struct Registered {
    function: u32,
    handler: &'static dyn EventHandler,
    dispatched: u64,
}

/// The registered handlers and what they were given.
#[derive(Default)]
pub struct Events {
    handlers: KVec<Registered>,
    unhandled: u64,
}

impl Events {
    /// Registers `handler` for the events of `function`.
    ///
    /// # Errors
    ///
    /// - `EINVAL` if `function` is not an event.
    /// - `EBUSY` if a handler is registered for it already.
    /// - `ENOMEM` if the table cannot grow.
    pub fn register(
        &mut self,
        function: MsgFunction,
        handler: &'static dyn EventHandler,
    ) -> Result {
        if !function.is_event() {
            return Err(EINVAL);
        }
        let function = u32::from(function);
        if self.handlers.iter().any(|r| r.function == function) {
            return Err(EBUSY);
        }
        self.handlers.push(
            Registered {
                function,
                handler,
                dispatched: 0,
            },
            GFP_KERNEL,
        )?;
        Ok(())
    }

    /// Returns the handler of events of `function`, if there is one, counting the event
    /// about to be handed to it.
    pub(crate) fn take_for(&mut self, function: u32) -> Option<&'static dyn EventHandler> {
        let registered = self.handlers.iter_mut().find(|r| r.function == function)?;
        registered.dispatched += 1;
        Some(registered.handler)
    }

    /// Counts an event that had no handler and that no wait took.
    pub(crate) fn pass_over(&mut self) {
        self.unhandled += 1;
    }

    /// Returns the counts.
    pub fn counts(&self) -> EventCounts {
        EventCounts {
            dispatched: self.handlers.iter().map(|r| r.dispatched).sum(),
            unhandled: self.unhandled,
        }
    }

    /// Returns the number of events of `function` handed to its handler.
    pub(crate) fn dispatched_of(&self, function: MsgFunction) -> u64 {
        let function = u32::from(function);
        self.handlers
            .iter()
            .find(|r| r.function == function)
            .map_or(0, |r| r.dispatched)
    }
}

/// Whether `msg` is an event.
pub(crate) fn is_event(msg: &GspMessage) -> bool {
    is_event_function(msg.function)
}

/// Whether `function`, a number of the wire, is an event's.
pub(crate) fn is_event_function(function: u32) -> bool {
    MsgFunction::try_from(function).is_ok_and(MsgFunction::is_event)
}
