// SPDX-License-Identifier: GPL-2.0

//! The GH100's BAR0 registers that nova-core 7.3 or 7.2 reads, writes or polls on its way to
//! the GSP and back: each one's offset, what the emulated GPU answers, and why.
//!
//! Offsets and fields are facts of the hardware, as nova-core's register definitions
//! and nouveau's name them; the model that gives them behaviour is [`crate::gh100`]. Any
//! access to an offset not listed here is reported once per offset, so a newer tree that
//! needs another register names it.

use kernel::io::register::Register as _;

/// A named BAR0 register.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Register {
    /// Its offset in BAR0.
    pub offset: u32,
    /// Its name, as the hardware's manuals spell it.
    pub name: &'static str,
    /// What it is for on the way to the GSP, in a line.
    pub why: &'static str,
}

macro_rules! registers {
    ($($(#[$doc:meta])* $id:ident @ $offset:expr, $why:literal;)*) => {
        $(
            $(#[$doc])*
            pub const $id: Register = Register {
                offset: $offset,
                name: stringify!($id),
                why: $why,
            };
        )*
        /// Every register of the model.
        pub const ALL: &[Register] = &[$($id),*];
    };
}

registers! {
    /// Identity: architecture 0x18 (Hopper) in bits 28:24 and revision `a1`.
    NV_PMC_BOOT_0 @ 0x0000_0000, "identity: the architecture (pre-Fermi parts are refused)";
    /// Identity: the chipset (architecture 0x18, implementation 0: GH100) and revision.
    NV_PMC_BOOT_42 @ 0x0000_0a00, "identity: the chipset, GH100, and its revision";
    /// The display fuse: bit 0 set when the chip has no display. Nova-core 7.2 reads it when it
    /// lays out the framebuffer itself; 7.3 does not on GH100.
    NV_FUSE_STATUS_OPT_DISPLAY @ 0x0082_0c04, "display disabled (bit 0): no VGA workspace register to read (7.2's FB layout)";
    /// The FSP's boot status, 0xff once its secure boot completed.
    NV_THERM_I2CS_SCRATCH @ 0x0002_00bc, "polled until the FSP has booted (0xff)";
    /// The sysmem flush page's address, bits 31:0.
    NV_PFB_FBHUB_PCIE_FLUSH_SYSMEM_ADDR_LO @ 0x0010_0a34, "the sysmem flush page, low word";
    /// The sysmem flush page's address, bits 51:32.
    NV_PFB_FBHUB_PCIE_FLUSH_SYSMEM_ADDR_HI @ 0x0010_0a38, "the sysmem flush page, high bits";
    /// The sysmem flush page's address, bits 39:8, as nova-core 7.2 registers it on GH100.
    NV_PFB_NISO_FLUSH_SYSMEM_ADDR @ 0x0010_0c10, "the sysmem flush page, address bits 39:8 (7.2)";
    /// The sysmem flush page's address, bits 63:40 (in bits 23:0), as nova-core 7.2 registers it.
    NV_PFB_NISO_FLUSH_SYSMEM_ADDR_HI @ 0x0010_0c40, "the sysmem flush page, address bits 63:40 (7.2)";
    /// The GSP falcon's interrupt-clear register.
    NV_PGSP_FALCON_IRQSCLR @ 0x0011_0004, "the GSP's SWGEN0 interrupt cleared at probe";
    /// The GSP falcon's first mailbox.
    NV_PGSP_FALCON_MAILBOX0 @ vgsp::FALCON_MAILBOX0, "boot-parameters address low, then 0, then an error or the suspended bit";
    /// The GSP falcon's second mailbox.
    NV_PGSP_FALCON_MAILBOX1 @ vgsp::FALCON_MAILBOX1, "boot-parameters address high, then 0";
    /// The GSP falcon's OS register.
    NV_PGSP_FALCON_OS @ 0x0011_0080, "the bootloader's application version, written before the GSP runs";
    /// The GSP falcon's second hardware configuration register.
    NV_PGSP_FALCON_HWCFG2 @ 0x0011_00f4, "priv target mask (0xbadf41xx while locked) and the RISC-V branch privilege lockdown, bit 13";
    /// The GSP's message-queue doorbell, as the driver defines it.
    // CAST: a BAR0 offset, below 16 MiB.
    NV_PGSP_QUEUE_HEAD @ nova_core::gsp::regs::NV_PGSP_QUEUE_HEAD::OFFSET as u32,
        "the doorbell, written after every command";
    /// The GSP RISC-V core's control and state.
    NV_PRISCV_RISCV_CPUCTL @ 0x0011_1388, "the core's state: active (bit 7) once running, halted (bit 4) after unload";
    /// The usable frame buffer, in MiB.
    NV_USABLE_FB_SIZE_IN_MB @ 0x0011_83a4, "the frame buffer size the heap sizes derive from";
    /// The FSP falcon's EMEM control: offset, block and auto-increment.
    NV_PFSP_FALCON_EMEMC @ 0x008f_2ac0, "where the next EMEM word is read or written, auto-incrementing";
    /// The FSP falcon's EMEM data port.
    NV_PFSP_FALCON_EMEMD @ 0x008f_2ac4, "an EMEM word: the message to the FSP, its reply";
    /// The FSP command queue's head.
    NV_PFSP_QUEUE_HEAD @ 0x008f_2c00, "written last: the FSP takes the command in EMEM";
    /// The FSP command queue's tail: the last word's offset.
    NV_PFSP_QUEUE_TAIL @ 0x008f_2c04, "the command's last word in EMEM";
    /// The FSP message queue's head.
    NV_PFSP_MSGQ_HEAD @ 0x008f_2c80, "polled with the tail: a reply waits when they differ";
    /// The FSP message queue's tail: the reply's last word.
    NV_PFSP_MSGQ_TAIL @ 0x008f_2c84, "the reply's last word in EMEM";
}

/// Returns the register at `offset`, if the model has one.
pub fn named(offset: u64) -> Option<Register> {
    ALL.iter().copied().find(|r| u64::from(r.offset) == offset)
}

/// `NV_PMC_BOOT_0`'s value: architecture 0x18 in bits 28:24, revision a1.
pub const BOOT_0_GH100: u32 = 0x1800_00a1;
/// `NV_PMC_BOOT_42`'s value: architecture 0x18 (29:24), implementation 0 (23:20), revision
/// a.1 (19:12).
pub const BOOT_42_GH100: u32 = 0x180a_1000;
/// `NV_FUSE_STATUS_OPT_DISPLAY`'s value: display disabled, as on every H100.
pub const DISPLAY_DISABLED: u32 = 1;
/// The bits `NV_PFB_NISO_FLUSH_SYSMEM_ADDR_HI` keeps: address bits 63:40.
pub const NISO_FLUSH_HI_MASK: u32 = 0x00ff_ffff;
/// `NV_THERM_I2CS_SCRATCH` once the FSP's secure boot completed.
pub const FSP_BOOT_COMPLETE: u32 = 0xff;
/// What a GSP falcon register reads while the priv target mask locks it (the low byte
/// varies on hardware).
pub const PRIV_LOCKED: u32 = 0xbadf_4100;
/// `HWCFG2` once released: a RISC-V core (bit 10), no branch privilege lockdown (bit 13
/// clear).
pub const HWCFG2_RELEASED: u32 = 1 << 10;
/// `HWCFG2`'s RISC-V branch privilege lockdown bit.
pub const HWCFG2_BR_PRIV_LOCKDOWN: u32 = 1 << 13;
// Released means the lockdown bit clear, and the value unlike the locked pattern.
const _: () = assert!(
    HWCFG2_RELEASED & HWCFG2_BR_PRIV_LOCKDOWN == 0 && HWCFG2_RELEASED & 0xffff_ff00 != PRIV_LOCKED
);
/// `RISCV_CPUCTL`'s active bit.
pub const CPUCTL_ACTIVE: u32 = 1 << 7;
/// `RISCV_CPUCTL`'s halted bit.
pub const CPUCTL_HALTED: u32 = 1 << 4;
/// `MAILBOX0`'s bit the GSP sets once suspended for unload
/// (`LIBOS_INTERRUPT_PROCESSOR_SUSPENDED`).
pub const MAILBOX0_SUSPENDED: u32 = 1 << 31;
/// `EMEMC`'s auto-increment on write.
pub const EMEMC_AINCW: u32 = 1 << 24;
/// `EMEMC`'s auto-increment on read.
pub const EMEMC_AINCR: u32 = 1 << 25;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_are_unique() {
        for (i, a) in ALL.iter().enumerate() {
            for b in &ALL[i + 1..] {
                assert_ne!(a.offset, b.offset, "{} and {}", a.name, b.name);
            }
        }
    }

    #[test]
    fn boot_42_names_gh100() {
        let chipset = ((BOOT_42_GH100 >> 20) & 0x1ff, (BOOT_0_GH100 >> 24) & 0x1f);
        assert_eq!(chipset, (0x180, 0x18));
    }
}
