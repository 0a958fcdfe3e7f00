// SPDX-License-Identifier: GPL-2.0

//! Smoke tests of upstream's `Cmdq` on the shim's host device: the shared `GspMem` it
//! allocates, and one command sent into the CPU queue, checked byte for byte in the
//! device's memory (no GSP: nothing consumes it).
//!
//! The device's coherent memory comes from a `DmaPool` over memory the test owns, so the
//! test reads back exactly what the driver gave the device. The queue's bus address comes
//! from upstream's own `GspArgumentsCached`, the boot argument that tells the GSP where the
//! queues are.

use core::convert::Infallible;

use std::boxed::Box;

use kernel::{
    device::{
        Bound,
        Device, //
    },
    host::DmaPool,
    io::register::Register,
    prelude::*,
    time::Delta,
    transmute::{
        AsBytes,
        FromBytes, //
    },
};
use vdev::SimBar;

use crate::{
    driver::BAR0_SIZE,
    gsp::{
        cmdq::{
            Cmdq,
            CommandToGsp,
            MessageFromGsp,
            NoReply, //
        },
        fw::{
            GspArgumentsCached,
            MsgFunction, //
        },
        GSP_PAGE_SIZE,
    },
};

/// Bus address of the pool's first page: unlike any CPU address.
const BUS_BASE: u64 = 0x8000_0000;

/// Pages of the pool: `GspMem` (129 pages) and room to spare.
const POOL_PAGES: usize = 160;

/// `GspMem`: one page of PTEs, then two `Msgq`s, each a page of headers and 63 of ring.
const GSP_MEM_PAGES: usize = 1 + 2 * 64;

/// Offset of `NV_PGSP_QUEUE_HEAD`, the doorbell, in BAR0.
const QUEUE_HEAD: usize = <nova_core::gsp::regs::NV_PGSP_QUEUE_HEAD as Register>::OFFSET;

/// Size of `GspMsgElement` (48 bytes) and the RPC header in it (32 bytes).
const ELEMENT_HEADER: usize = 48;
const RPC_HEADER: usize = 32;

#[repr(C, align(4096))]
struct Pages([u8; POOL_PAGES * GSP_PAGE_SIZE]);

/// A device whose DMA memory is a fresh pool, and the pool's memory. Leaked: a pooled
/// device needs a `'static` pool, and the queue keeps a count of its device.
fn pooled_device() -> (&'static Device<Bound>, &'static DmaPool, *const u8) {
    let mem = Box::leak(Box::new(Pages([0xee; POOL_PAGES * GSP_PAGE_SIZE])));
    let base = mem.0.as_mut_ptr();
    // SAFETY: `mem` is leaked, so valid for reads and writes for the rest of the test; the
    // test reads it only through `base`, after the driver's writes, on the same thread.
    let pool = unsafe { DmaPool::new(base, POOL_PAGES * GSP_PAGE_SIZE, BUS_BASE) }.unwrap();
    let pool: &'static DmaPool = Box::leak(Box::new(pool));
    let dev = Box::leak(Box::new(Device::with_dma_pool("upstream-spike", pool)));
    (dev, pool, base.cast_const())
}

/// The bytes of the pool at bus address `bus`, `len` of them.
fn pool_bytes(base: *const u8, bus: u64, len: usize) -> &'static [u8] {
    let off = usize::try_from(bus - BUS_BASE).unwrap();
    assert!(off + len <= POOL_PAGES * GSP_PAGE_SIZE);
    // SAFETY: inside the leaked pool memory (checked above); the driver is done writing.
    unsafe { core::slice::from_raw_parts(base.add(off), len) }
}

fn u32_at(bytes: &[u8], off: usize) -> u32 {
    u32::from_le_bytes(bytes[off..off + 4].try_into().unwrap())
}

fn u64_at(bytes: &[u8], off: usize) -> u64 {
    u64::from_le_bytes(bytes[off..off + 8].try_into().unwrap())
}

/// What `GspArgumentsCached::new(cmdq)` tells the GSP: the queue memory's bus address,
/// its PTE count, and the offsets of the two rings after the PTE page.
fn queue_arguments(cmdq: &Cmdq) -> (u64, u32, u64, u64) {
    let args = KBox::init(GspArgumentsCached::new(cmdq), GFP_KERNEL).unwrap();
    let b = args.as_bytes();
    (u64_at(b, 0), u32_at(b, 8), u64_at(b, 16), u64_at(b, 24))
}

/// The queue element checksum's fold: the XOR of each byte rotated by 8 times its
/// position modulo 8, folded to 32 bits. A whole element (header with its checksum, and
/// payload) folds to zero.
fn fold(bytes: &[u8]) -> u32 {
    let sum = bytes.iter().enumerate().fold(0u64, |acc, (i, &b)| {
        acc ^ u64::from(b).rotate_left(u32::try_from((i % 8) * 8).unwrap())
    });
    ((sum >> 32) ^ (sum & 0xffff_ffff)) as u32
}

#[test]
fn cmdq_allocates_gsp_mem_of_129_pages() {
    let (dev, pool, base) = pooled_device();
    let cmdq = KBox::pin_init(Cmdq::new(dev), GFP_KERNEL).unwrap();

    assert_eq!(pool.used(), GSP_MEM_PAGES * GSP_PAGE_SIZE);
    assert_eq!(Cmdq::NUM_PTES, GSP_MEM_PAGES);

    let (addr, ptes, cmdq_off, statq_off) = queue_arguments(&cmdq);
    assert_eq!(addr, BUS_BASE);
    assert_eq!(usize::try_from(ptes).unwrap(), GSP_MEM_PAGES);
    // After the PTE page: the CPU queue's header page, then its ring.
    assert_eq!(cmdq_off, 0x1000);
    // Then the GSP queue: its header page after the CPU queue's 64 pages, then its ring.
    assert_eq!(statq_off, 0x1000 + 64 * 0x1000);

    // The PTE page maps the memory's own pages, in order.
    let pte_page = pool_bytes(base, addr, GSP_PAGE_SIZE);
    for i in 0..GSP_PAGE_SIZE / 8 {
        assert_eq!(u64_at(pte_page, i * 8), addr + (i * GSP_PAGE_SIZE) as u64);
    }

    // The CPU queue's TX header, as `MsgqTxHeader::new` fills it.
    let tx = pool_bytes(base, addr + 0x1000, 32);
    assert_eq!(u32_at(tx, 0), 0, "version");
    assert_eq!(u32_at(tx, 4), 64 * 0x1000, "size of the Msgq");
    assert_eq!(u32_at(tx, 8), 0x1000, "msgSize");
    assert_eq!(u32_at(tx, 12), 63, "msgCount");
    assert_eq!(u32_at(tx, 16), 0, "writePtr");
    assert_eq!(u32_at(tx, 20), 1, "flags");
    assert_eq!(u32_at(tx, 24), 32, "rxHdrOff");
    assert_eq!(u32_at(tx, 28), 0x1000, "entryOff");
}

/// A command of 12 bytes of pattern and a 5-byte variable payload.
struct Probe;

#[repr(C)]
struct ProbeCommand([u8; 12]);

// SAFETY: an array of bytes: no padding, every bit pattern valid.
unsafe impl AsBytes for ProbeCommand {}
// SAFETY: as above.
unsafe impl FromBytes for ProbeCommand {}

impl CommandToGsp for Probe {
    const FUNCTION: MsgFunction = MsgFunction::Nop;
    type Command = ProbeCommand;
    type Reply = NoReply;
    type InitError = Infallible;

    fn init(&self) -> impl Init<ProbeCommand, Infallible> {
        let mut v = [0u8; 12];
        for (i, b) in v.iter_mut().enumerate() {
            *b = 0xa0 + i as u8;
        }
        ProbeCommand(v)
    }

    fn variable_payload_len(&self) -> usize {
        5
    }

    fn init_variable_payload(
        &self,
        dst: &mut crate::sbuffer::SBufferIter<core::array::IntoIter<&mut [u8], 2>>,
    ) -> Result {
        dst.write_all(b"hello")
    }
}

#[test]
fn send_command_writes_one_element_and_rings() {
    let (dev, _pool, base) = pooled_device();
    let cmdq = KBox::pin_init(Cmdq::new(dev), GFP_KERNEL).unwrap();
    let (addr, _, cmdq_off, _) = queue_arguments(&cmdq);
    let bar = SimBar::<BAR0_SIZE>::new(&[QUEUE_HEAD]).unwrap();

    cmdq.send_command_no_wait(bar.io(), Probe).unwrap();

    // The doorbell rang once.
    assert_eq!(bar.doorbell_count(), 1);

    // The write pointer moved past one element.
    let tx = pool_bytes(base, addr + 0x1000, 32);
    assert_eq!(u32_at(tx, 16), 1, "writePtr");

    // The element at the start of the ring.
    let len = ELEMENT_HEADER + RPC_HEADER + 12 + 5;
    let elem = pool_bytes(base, addr + 0x1000 + cmdq_off, len);
    assert_eq!(&elem[..32], &[0u8; 32], "authTag and aad buffers");
    assert_eq!(u32_at(elem, 36), 0, "seqNum");
    assert_eq!(u32_at(elem, 40), 1, "elemCount");
    let rpc = &elem[ELEMENT_HEADER..];
    assert_eq!(u32_at(rpc, 0), 0x0300_0000, "header_version 3.0");
    assert_eq!(u32_at(rpc, 4), 0x4350_5256, "signature `VRPC`");
    assert_eq!(u32_at(rpc, 8), (RPC_HEADER + 12 + 5) as u32, "length");
    assert_eq!(u32_at(rpc, 12), 0, "function NOP");
    assert_eq!(u32_at(rpc, 16), 0xffff_ffff, "rpc_result");
    assert_eq!(u32_at(rpc, 20), 0xffff_ffff, "rpc_result_private");
    let payload = &rpc[RPC_HEADER..];
    assert_eq!(
        &payload[..12],
        &core::array::from_fn::<u8, 12, _>(|i| 0xa0 + i as u8)
    );
    assert_eq!(&payload[12..], b"hello");
    // The checksum makes the whole element fold to zero, as the GSP checks it.
    assert_ne!(u32_at(elem, 32), 0, "checkSum");
    assert_eq!(fold(elem), 0);
}

#[test]
fn command_sequence_numbers_count_up() {
    let (dev, _pool, base) = pooled_device();
    let cmdq = KBox::pin_init(Cmdq::new(dev), GFP_KERNEL).unwrap();
    let (addr, _, cmdq_off, _) = queue_arguments(&cmdq);
    let bar = SimBar::<BAR0_SIZE>::new(&[QUEUE_HEAD]).unwrap();

    cmdq.send_command_no_wait(bar.io(), Probe).unwrap();
    cmdq.send_command_no_wait(bar.io(), Probe).unwrap();

    assert_eq!(bar.doorbell_count(), 2);
    let second = pool_bytes(base, addr + 0x1000 + cmdq_off + 0x1000, 64);
    assert_eq!(u32_at(second, 36), 1, "seqNum of the second element");
    assert_eq!(
        u32_at(pool_bytes(base, addr + 0x1000, 32), 16),
        2,
        "writePtr"
    );
}

/// A message from the GSP: the probe's 12 bytes, then whatever follows.
#[derive(Debug, PartialEq)]
struct Pong {
    head: [u8; 12],
    tail: KVec<u8>,
}

impl MessageFromGsp for Pong {
    const FUNCTION: MsgFunction = MsgFunction::Nop;
    type InitError = Error;
    type Message = ProbeCommand;

    fn read(
        msg: &ProbeCommand,
        sbuffer: &mut crate::sbuffer::SBufferIter<core::array::IntoIter<&[u8], 2>>,
    ) -> Result<Self> {
        Ok(Self {
            head: msg.0,
            tail: sbuffer.flush_into_kvec(GFP_KERNEL)?,
        })
    }
}

/// Plays the GSP: writes one element with `payload` at the start of the GSP queue's
/// ring, with a valid checksum, and moves the GSP queue's write pointer past it.
fn gsp_sends(base: *const u8, addr: u64, statq_off: u64, seq: u32, payload: &[u8]) {
    let mut elem = std::vec![0u8; ELEMENT_HEADER + RPC_HEADER + payload.len()];
    elem[36..40].copy_from_slice(&seq.to_le_bytes());
    elem[40..44].copy_from_slice(&1u32.to_le_bytes());
    let rpc = ELEMENT_HEADER;
    elem[rpc..rpc + 4].copy_from_slice(&0x0300_0000u32.to_le_bytes());
    elem[rpc + 4..rpc + 8].copy_from_slice(&0x4350_5256u32.to_le_bytes());
    let len = u32::try_from(RPC_HEADER + payload.len()).unwrap();
    elem[rpc + 8..rpc + 12].copy_from_slice(&len.to_le_bytes());
    elem[rpc + RPC_HEADER..].copy_from_slice(payload);
    let sum = fold(&elem);
    elem[32..36].copy_from_slice(&sum.to_le_bytes());
    assert_eq!(fold(&elem), 0);

    let ring = usize::try_from(addr + 0x1000 + statq_off - BUS_BASE).unwrap();
    let gspq_tx = usize::try_from(addr + 0x1000 + 64 * 0x1000 - BUS_BASE).unwrap();
    // SAFETY: inside the leaked pool memory, in the GSP queue the driver only reads, and
    // read by the driver only after the write pointer below is moved, on this thread.
    unsafe {
        let base = base.cast_mut();
        core::ptr::copy_nonoverlapping(elem.as_ptr(), base.add(ring), elem.len());
        core::ptr::write_volatile(base.add(gspq_tx + 16).cast::<u32>(), 1);
    }
}

#[test]
fn receive_msg_reads_an_element_from_the_gsp_queue() {
    let (dev, _pool, base) = pooled_device();
    let cmdq = KBox::pin_init(Cmdq::new(dev), GFP_KERNEL).unwrap();
    let (addr, _, _, statq_off) = queue_arguments(&cmdq);

    // Nothing sent yet: the wait times out.
    assert_eq!(
        cmdq.receive_msg::<Pong>(Delta::from_millis(2)).err(),
        Some(ETIMEDOUT)
    );

    let mut payload = [0u8; 15];
    payload[..12].copy_from_slice(b"pong-pong-pp");
    payload[12..].copy_from_slice(b"!!!");
    gsp_sends(base, addr, statq_off, 7, &payload);

    let pong = cmdq.receive_msg::<Pong>(Delta::from_millis(100)).unwrap();
    assert_eq!(&pong.head, b"pong-pong-pp");
    assert_eq!(pong.tail.as_slice(), b"!!!");
    // The driver's read pointer (the CPU queue's RX header) moved past the element.
    let cpuq_rx = pool_bytes(base, addr + 0x1000 + 32, 4);
    assert_eq!(u32_at(cpuq_rx, 0), 1, "readPtr");
}
