// SPDX-License-Identifier: GPL-2.0

//! Events: the messages the GSP sends unasked (r570's `NV_VGPU_MSG_EVENT_*`), delivered
//! to the handler the driver registered for their function.
//!
//! A handler is registered per event function ([`Cmdq::on_event`]) and called for every
//! such event, in arrival order, from whichever receive takes it off the ring: a send
//! waiting for its reply, a typed or untyped receive, the bring-up's waits. Taking an
//! event off the ring and handing it over happen in the same receive, so none is lost
//! or seen twice. An event nobody registered for is counted ([`Events::unhandled`]) and
//! logged with `pr_debug!` by the waits that pass over it (log events are printed by the
//! bring-up's instead, as before).
//!
//! Handlers are `&'static`, as a kernel notifier block is: the object lives as long as
//! the driver, and keeps its own state behind interior mutability (it is `Sync`, since
//! any thread that receives may call it). This is also why a handler is not a boxed
//! closure: the shim's `KBox` cannot become a `KBox<dyn Trait>` on a stable compiler.
//!
//! [`Cmdq::on_event`]: crate::gsp::cmdq::Cmdq::on_event

use kernel::prelude::*;
// The derives: see `fw`.
use zerocopy_derive::{
    FromBytes,
    Immutable,
    IntoBytes,
    KnownLayout, //
};

use crate::gsp::{
    cmdq::GspMessage,
    fw::{
        assert_layout,
        MsgFunction, //
    },
};

/// What the driver does with one event function.
pub trait EventHandler: Sync {
    /// Handles `msg`, an event of the function this handler was registered for.
    fn handle(&self, msg: &GspMessage);
}

/// The registered handlers and what they were given.
#[derive(Default)]
pub struct Events {
    handlers: KVec<(u32, &'static dyn EventHandler)>,
    /// Events handed to a handler.
    pub dispatched: u64,
    /// Events that arrived with no handler registered for their function.
    pub unhandled: u64,
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
        if self.handlers.iter().any(|(f, _)| *f == function) {
            return Err(EBUSY);
        }
        self.handlers.push((function, handler), GFP_KERNEL)?;
        Ok(())
    }

    /// Hands `msg` to the handler of its function, if there is one; returns whether
    /// there was.
    pub(crate) fn dispatch(&mut self, msg: &GspMessage) -> bool {
        match self.handlers.iter().find(|(f, _)| *f == msg.function) {
            Some((_, handler)) => {
                handler.handle(msg);
                self.dispatched += 1;
                true
            }
            None => false,
        }
    }

    /// Counts and logs an event of `function` that a wait passed over with no handler
    /// for it.
    pub(crate) fn pass_over(&mut self, function: u32) {
        self.unhandled += 1;
        pr_debug!(
            "gsp: event {} ({}) has no handler\n",
            MsgFunction::try_from(function).map_or("UNKNOWN", MsgFunction::name),
            function
        );
    }
}

/// Whether `msg` is an event.
pub(crate) fn is_event(msg: &GspMessage) -> bool {
    msg.function().is_ok_and(MsgFunction::is_event)
}

/// The payload of the virtual GSP's `MMU_FAULT_QUEUED`: the bus address a DMA of its
/// copy engine could not translate. Not r570's fault buffer entry, which describes a
/// GPU MMU fault the virtual GPU cannot have.
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct MmuFault {
    /// The address.
    pub bus: u64,
}

/// The payload of the virtual GSP's `RC_TRIGGERED` (robust-channel recovery) and
/// `POST_EVENT` (a notification): the RPC sequence number of the copy-engine request
/// they are about. Not r570's structures, which name channels the virtual GPU does not
/// have.
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable,
)]
pub struct CopyEvent {
    /// The request's `rpc.sequence`.
    pub sequence: u32,
    /// Reserved, 0.
    pub pad: u32,
}

assert_layout!(MmuFault, size 0x8, { bus: 0x0 });
assert_layout!(CopyEvent, size 0x8, { sequence: 0x0, pad: 0x4 });
