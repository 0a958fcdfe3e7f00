// SPDX-License-Identifier: GPL-2.0
/*
 * vgsp-ktrace: a QEMU TCG plugin for system mode (qemu-system-aarch64, QEMU 11.1's
 * plugin API, version 7) that records, for one driver built into an arm64 Linux kernel, the
 * events that matter for memory ordering, for the project's ordering checker
 * (tools/model: vgsp_model::kernel, compiled::check_driver).
 *
 *   qemu-system-aarch64 ... -append "... nokaslr arm64.nomops" \
 *       -plugin ./libvgsp-ktrace.so,out=/path/trace.bin,map=/path/ktrace.map
 *
 * Build, against the project's declarations of QEMU 11.1's plugin API and of
 * the part of glib it names (qemu-11/, beside this file; glib's development
 * files are not needed: QEMU's glib provides the three functions at load time):
 *
 *   gcc -O2 -Wall -Wextra -Werror -shared -fPIC -fvisibility=hidden -pthread \
 *       -Iqemu-11 -o libvgsp-ktrace.so vgsp-ktrace.c
 *
 * The map (xtask's kernel_trace.rs writes it from System.map and the objects) has
 * one "KIND START END" line per span of guest virtual addresses, END exclusive:
 *
 *   nova    the driver's text (its object's text sections as linked);
 *   follow  code that works on the driver's behalf (the Rust `kernel` crate, the
 *           C helpers, memcpy and its kin);
 *   image   the kernel's image (_text.._end), whose accesses are never the
 *           shared memory and are not recorded.
 *
 * The "in nova" flag, per vCPU. A translation block that starts in the driver's
 * text sets it; a block of followed code keeps it as it is; any other block
 * clears it. Only the transitions cost a callback: conditional callbacks on the
 * flag's value. An interrupt or exception taken in followed code while it is
 * set (the discontinuity callback) remembers the pc it returns to and the
 * stack pointer; when a block of followed code starts there on that stack, on
 * whichever vCPU (the kernel may preempt the task on the way out of the
 * interrupt and go on with it on the other), the flag is set again. An
 * interrupt in the driver's own text needs nothing: its next block sets it.
 *
 * While the flag is set, the plugin records, in the vCPU's program order:
 *
 * LOAD (1), STORE (2): every load and store, but those addressed from the stack
 *	pointer (Rn = 31: the stack, or a literal load from the text) and those
 *	of MMIO. addr is the physical address, value what was loaded or stored
 *	(qemu_plugin_mem_get_value), size the access's size (a 16-byte access
 *	gives two records of 8 bytes, at addr and addr + 8), info the
 *	instruction's ordering bits (VGSP_ACQ, VGSP_REL, VGSP_RCPC) and whether
 *	it reads and writes (VGSP_READS, VGSP_WRITES), as vgsp-trace.c decodes
 *	them. An atomic read-modify-write gives a LOAD and then a STORE.
 *	DC ZVA, which QEMU runs without a memory callback, gives one STORE of 8
 *	bytes and value 0 per 8 bytes of its block (the plugin reads Xt; the
 *	block's size is DCZID_EL0's, which QEMU does not expose to plugins: the
 *	plugin reads it from the register of the guest's own MRS of it, which
 *	memset does before it zeroes by blocks).
 * BARRIER (3): a DMB or DSB; info is (type << 8) | CRm, type 1 DMB, 2 DSB.
 * BRANCH (5): a conditional branch ran since the vCPU's last record; emitted
 *	just before its next record, or when the flag is cleared.
 *
 * tid is the vCPU's index. All vCPUs share one buffer under one lock: the file
 * order is the order in which the callbacks ran, and each vCPU's records are in
 * its program order. A task that moves from one vCPU to another is stopped on
 * the first (its callbacks have returned) before the second runs it, so its
 * records are in its program order too.
 *
 * At exit the plugin writes OUT.summary, "KEY VALUE" lines:
 *
 *   nova_entries  times a vCPU entered the driver's text from other code
 *   nova_tbs      translations of blocks of the driver's text
 *   records       records written
 *   overlaps      entries while another vCPU had its flag set: two of the
 *                 driver's tasks at once, whose records interleave
 *   mops          MOPS instructions (CPY*, SET*) run with the flag set: QEMU
 *                 copies with the host's memmove, and no memory callback sees
 *                 those accesses (the kernel uses them for memcpy on a CPU that
 *                 has them, unless booted with arm64.nomops)
 *   zva           DC ZVA run with the flag set whose zeroing could not be
 *                 recorded (no memory callback sees it; the plugin reads Xt and
 *                 records the block's stores itself, when it knows the block's
 *                 size from DCZID_EL0 and the handle of Xt)
 *   zva_recorded  DC ZVA whose block's stores were recorded (8 bytes a record)
 *   zva_block     the block's size in bytes, 0 if unknown
 *   interrupted   interrupts and exceptions taken with the flag set
 *   restored      returns into followed code, from an interrupt or a call,
 *                 that set the flag again
 *   unresumable   interrupts in followed code, or calls from it to other
 *                 code, whose return could not be watched for (the stack
 *                 pointer unread, too many at once): the rest of that
 *                 function's accesses may be missing
 *   calls_out     calls from followed code to other code (the link register
 *                 in followed code) whose return was watched for
 *   odd_discon    discontinuities QEMU 11.1's API does not give (a vCPU index
 *                 out of range, a type neither interrupt nor exception): the
 *                 plugin and this QEMU disagree on the callback's arguments
 *   lost          records that could not be written (a full disk, a pc the
 *                 callbacks could not carry)
 */

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <qemu-plugin.h>

#include "vgsp-arm64.h"

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "vgsp-ktrace writes host-endian records and needs a little-endian host"
#endif

/*
 * QEMU 11.1's API (version 7): callbacks take user data instead of the plugin's
 * id (the translation, discontinuity and exit callbacks here), and QEMU 11.1
 * loads no plugin built for an older one. An older header would build a plugin
 * QEMU refuses, or worse, one whose callbacks get the wrong arguments.
 */
#if QEMU_PLUGIN_VERSION < 7
#error "vgsp-ktrace is written for QEMU 11.1's plugin API (version 7): this qemu-plugin.h is older"
#endif

QEMU_PLUGIN_EXPORT int qemu_plugin_version = QEMU_PLUGIN_VERSION;

struct vgsp_record {
	uint32_t tid;	/* the vCPU's index */
	uint8_t kind;	/* enum vgsp_kind */
	uint8_t size;	/* access size in bytes for LOAD/STORE, else 0 */
	uint16_t info;	/* kind-specific, see the top of the file */
	uint64_t pc;	/* guest (virtual) pc of the instruction */
	uint64_t addr;	/* physical address of an access, else 0 */
	uint64_t value;	/* the value loaded or stored, else 0 */
};

_Static_assert(sizeof(struct vgsp_record) == 32, "records are 32 bytes");

enum vgsp_kind {
	VGSP_LOAD = 1,
	VGSP_STORE = 2,
	VGSP_BARRIER = 3,
	VGSP_BRANCH = 5,
};


/*
 * What translation decided about an instruction travels to its callbacks in
 * the userdata pointer: the pc's low 48 bits and 16 bits of info above them.
 * Kernel text lies where bits 63:48 repeat bit 47 (0xffff8000...), so the pc
 * is the low 48 bits sign-extended; an instruction whose pc is not is counted
 * lost and not instrumented.
 */
#define VGSP_PC_BITS	48
#define VGSP_PC_MASK	((UINT64_C(1) << VGSP_PC_BITS) - 1)

static void *vgsp_pack(uint64_t pc, uint16_t info)
{
	return (void *)(uintptr_t)((pc & VGSP_PC_MASK) | (uint64_t)info << VGSP_PC_BITS);
}

static uint64_t vgsp_pc(void *udata)
{
	uint64_t pc = (uintptr_t)udata & VGSP_PC_MASK;

	return pc & (UINT64_C(1) << (VGSP_PC_BITS - 1)) ? pc | ~VGSP_PC_MASK : pc;
}

static uint16_t vgsp_info(void *udata)
{
	return (uint64_t)(uintptr_t)udata >> VGSP_PC_BITS;
}

static bool vgsp_packable(uint64_t pc)
{
	return vgsp_pc(vgsp_pack(pc, 0)) == pc;
}

/* The map. */
#define VGSP_MAX_SPANS 64

struct vgsp_span {
	uint64_t start;
	uint64_t end;	/* exclusive */
};

struct vgsp_spans {
	struct vgsp_span span[VGSP_MAX_SPANS];
	unsigned int n;
};

static struct vgsp_spans vgsp_nova, vgsp_follow, vgsp_image;

static bool vgsp_in(const struct vgsp_spans *s, uint64_t addr)
{
	unsigned int i;

	for (i = 0; i < s->n; i++)
		if (addr >= s->span[i].start && addr < s->span[i].end)
			return true;
	return false;
}

/* Per vCPU, in a scoreboard: the conditional callbacks read these. */
struct vgsp_vcpu {
	uint64_t in_nova;	/* 1 while the vCPU runs the driver's code */
	uint64_t branch_pc;	/* the last conditional branch since a record, or 0 */
	uint64_t trapped;	/* 1 from an interrupt of flagged code to the next block */
};

static struct qemu_plugin_scoreboard *vgsp_vcpus;
static qemu_plugin_u64 vgsp_in_nova, vgsp_branch_pc;

/*
 * Where interrupts left flagged followed code: the pc execution comes back to
 * and the stack pointer then, which tell the interrupted context from any other
 * that runs the same code. Any vCPU may resume it (the kernel preempts on the
 * way out of an interrupt, and the task may go on on the other vCPU). Changed
 * under vgsp_lock; vgsp_npending lets the common case (none) skip the lock.
 */
#define VGSP_PENDING 64

struct vgsp_pending {
	uint64_t pc;	/* 0: a free entry */
	uint64_t sp;
};

static struct vgsp_pending vgsp_pending[VGSP_PENDING];
static unsigned int vgsp_npending;
static bool vgsp_read_sp(unsigned int vcpu, uint64_t *sp);
static bool vgsp_read_reg(unsigned int vcpu, struct qemu_plugin_register *reg,
			  uint64_t *value);

/*
 * DC ZVA zeroes a block without a memory callback; the plugin reads its Xt to
 * record the block's stores. Per vCPU: the handles of X0..X30 and a buffer to
 * read them into (found by name when the vCPU starts). The block's size is
 * DCZID_EL0's, as the guest reads it (vgsp_dczid_read); 0 until then, and a
 * zeroing then goes unrecorded (the summary's zva).
 */
#define VGSP_MAX_VCPUS 64
#define VGSP_XREGS 31

static struct qemu_plugin_register *vgsp_xreg[VGSP_MAX_VCPUS][VGSP_XREGS];
static struct qemu_plugin_register *vgsp_spreg[VGSP_MAX_VCPUS];
static GByteArray *vgsp_regbuf[VGSP_MAX_VCPUS];
static uint64_t vgsp_zva_block;

/* Counters of the summary. */
static uint64_t vgsp_entries, vgsp_nova_tbs, vgsp_records, vgsp_overlaps;
static uint64_t vgsp_mops, vgsp_zva, vgsp_zva_recorded, vgsp_interrupted, vgsp_restored;
static uint64_t vgsp_lost, vgsp_unresumable, vgsp_calls_out, vgsp_odd_discon;

static void vgsp_set_flag(unsigned int vcpu, uint64_t value)
{
	struct vgsp_vcpu *me = qemu_plugin_scoreboard_find(vgsp_vcpus, vcpu);

	__atomic_store_n(&me->in_nova, value, __ATOMIC_SEQ_CST);
}

static void vgsp_count(uint64_t *counter)
{
	__atomic_fetch_add(counter, 1, __ATOMIC_RELAXED);
}

/* The output: one buffer for all vCPUs under one lock. */
#define VGSP_BUF_RECORDS 8192	/* 256 KiB */

static pthread_mutex_t vgsp_lock = PTHREAD_MUTEX_INITIALIZER;
static struct vgsp_record vgsp_buf[VGSP_BUF_RECORDS];
static size_t vgsp_nbuf;
static int vgsp_fd = -1;
static const char *vgsp_path;
static bool vgsp_write_failed;

/* Called with vgsp_lock held. */
static void vgsp_flush_locked(void)
{
	const char *p = (const char *)vgsp_buf;
	size_t len = vgsp_nbuf * sizeof(vgsp_buf[0]);

	while (len && !vgsp_write_failed) {
		ssize_t n = write(vgsp_fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			int err = n < 0 ? errno : EIO;

			fprintf(stderr,
				"vgsp-ktrace: write to %s failed: %s (errno %d); the trace is incomplete\n",
				vgsp_path, strerror(err), err);
			vgsp_write_failed = true;
			break;
		}
		p += n;
		len -= n;
	}
	if (vgsp_write_failed)
		__atomic_fetch_add(&vgsp_lost, len / sizeof(vgsp_buf[0]), __ATOMIC_RELAXED);
	else
		vgsp_records += vgsp_nbuf;
	vgsp_nbuf = 0;
}

/* Called with vgsp_lock held. */
static void vgsp_append_locked(const struct vgsp_record *r)
{
	if (vgsp_nbuf == VGSP_BUF_RECORDS)
		vgsp_flush_locked();
	vgsp_buf[vgsp_nbuf++] = *r;
}

/* Appends a record of @vcpu, preceded by its pending BRANCH if any. */
static void vgsp_emit(unsigned int vcpu, uint8_t kind, uint8_t size, uint16_t info,
		      uint64_t pc, uint64_t addr, uint64_t value)
{
	uint64_t branch = qemu_plugin_u64_get(vgsp_branch_pc, vcpu);
	struct vgsp_record r = {
		.tid = vcpu, .kind = kind, .size = size, .info = info,
		.pc = pc, .addr = addr, .value = value,
	};

	pthread_mutex_lock(&vgsp_lock);
	if (branch) {
		struct vgsp_record b = { .tid = vcpu, .kind = VGSP_BRANCH, .pc = branch };

		vgsp_append_locked(&b);
	}
	if (kind)
		vgsp_append_locked(&r);
	pthread_mutex_unlock(&vgsp_lock);
	if (branch)
		qemu_plugin_u64_set(vgsp_branch_pc, vcpu, 0);
}

/*
 * Sets @vcpu's flag, then counts an overlap if another vCPU has its flag set:
 * set first, then look, so that of two vCPUs setting theirs at once, one sees
 * the other.
 */
static void vgsp_flag_and_look(unsigned int vcpu)
{
	int i, n = qemu_plugin_num_vcpus();

	vgsp_set_flag(vcpu, 1);
	for (i = 0; i < n; i++) {
		struct vgsp_vcpu *other;

		if ((unsigned int)i == vcpu)
			continue;
		other = qemu_plugin_scoreboard_find(vgsp_vcpus, i);
		if (__atomic_load_n(&other->in_nova, __ATOMIC_SEQ_CST)) {
			vgsp_count(&vgsp_overlaps);
			break;
		}
	}
}

/* A block of the driver's text starts on a vCPU whose flag is clear. */
static void vgsp_enter(unsigned int vcpu, void *udata)
{
	(void)udata;
	/* Branches run outside the driver's code are not its. */
	qemu_plugin_u64_set(vgsp_branch_pc, vcpu, 0);
	vgsp_count(&vgsp_entries);
	vgsp_flag_and_look(vcpu);
}

/* Remembers that the context at @sp goes on at @pc; false if no entry is free. */
static bool vgsp_watch_return(uint64_t pc, uint64_t sp)
{
	unsigned int i;
	bool kept = false;

	pthread_mutex_lock(&vgsp_lock);
	for (i = 0; i < VGSP_PENDING && vgsp_pending[i].pc; i++)
		;
	if (i < VGSP_PENDING) {
		vgsp_pending[i].pc = pc;
		vgsp_pending[i].sp = sp;
		__atomic_store_n(&vgsp_npending, vgsp_npending + 1, __ATOMIC_RELEASE);
		kept = true;
	}
	pthread_mutex_unlock(&vgsp_lock);
	return kept;
}

/*
 * Any other block starts on a vCPU whose flag is set: the driver's code left.
 * If it left by a call from followed code (the link register holds a return
 * address in followed code, and no interrupt was taken: the discontinuity
 * callback handles those), the code goes on there when the callee returns, on
 * the same stack: watched for as an interrupt's return is. A call from the
 * driver's own text needs nothing: its next block sets the flag again.
 */
static void vgsp_leave(unsigned int vcpu, void *udata)
{
	struct vgsp_vcpu *me = qemu_plugin_scoreboard_find(vgsp_vcpus, vcpu);
	uint64_t lr, sp;

	(void)udata;
	if (qemu_plugin_u64_get(vgsp_branch_pc, vcpu))
		vgsp_emit(vcpu, 0, 0, 0, 0, 0, 0);
	vgsp_set_flag(vcpu, 0);
	if (__atomic_exchange_n(&me->trapped, 0, __ATOMIC_RELAXED))
		return;
	if (vcpu >= VGSP_MAX_VCPUS || !vgsp_read_reg(vcpu, vgsp_xreg[vcpu][30], &lr) ||
	    !vgsp_in(&vgsp_follow, lr))
		return;
	if (!vgsp_read_sp(vcpu, &sp) || !vgsp_watch_return(lr, sp)) {
		vgsp_count(&vgsp_unresumable);
		return;
	}
	vgsp_count(&vgsp_calls_out);
}

/*
 * A block of followed code starts on a vCPU whose flag is clear: if it is where
 * an interrupt left flagged followed code, on that context's stack, the driver's
 * code goes on, and the flag is set again.
 */
static void vgsp_resume(unsigned int vcpu, void *udata)
{
	uint64_t pc = (uintptr_t)udata, sp;
	unsigned int i;
	bool found = false;

	if (!__atomic_load_n(&vgsp_npending, __ATOMIC_ACQUIRE) || !vgsp_read_sp(vcpu, &sp))
		return;
	pthread_mutex_lock(&vgsp_lock);
	for (i = 0; i < VGSP_PENDING && !found; i++) {
		if (vgsp_pending[i].pc == pc && vgsp_pending[i].sp == sp) {
			vgsp_pending[i].pc = 0;
			__atomic_store_n(&vgsp_npending, vgsp_npending - 1, __ATOMIC_RELEASE);
			found = true;
		}
	}
	pthread_mutex_unlock(&vgsp_lock);
	if (!found)
		return;
	/* The handler's branches, and whatever ran here meanwhile, are not the driver's. */
	qemu_plugin_u64_set(vgsp_branch_pc, vcpu, 0);
	vgsp_count(&vgsp_restored);
	vgsp_flag_and_look(vcpu);
}

/*
 * An interrupt or exception is taken. Only the outermost matters: a nested one
 * finds the flag cleared by its handler's first block. In the driver's own text
 * nothing is to be kept: the next block of it sets the flag.
 */
static void vgsp_discon(unsigned int vcpu, enum qemu_plugin_discon_type type,
			uint64_t from_pc, uint64_t to_pc, void *udata)
{
	struct vgsp_vcpu *me;
	uint64_t sp;

	(void)to_pc; (void)udata;
	/* What else comes here is not what QEMU 11.1's API gives: refuse the trace. */
	if (vcpu >= (unsigned int)qemu_plugin_num_vcpus() ||
	    (type != QEMU_PLUGIN_DISCON_INTERRUPT && type != QEMU_PLUGIN_DISCON_EXCEPTION)) {
		vgsp_count(&vgsp_odd_discon);
		return;
	}
	if (!qemu_plugin_u64_get(vgsp_in_nova, vcpu))
		return;
	vgsp_count(&vgsp_interrupted);
	me = qemu_plugin_scoreboard_find(vgsp_vcpus, vcpu);
	__atomic_store_n(&me->trapped, 1, __ATOMIC_RELAXED);
	if (!vgsp_in(&vgsp_follow, from_pc))
		return;
	/* SP_EL1 is the interrupted context's still: an EL1 exception keeps it. */
	if (!vgsp_read_sp(vcpu, &sp)) {
		vgsp_count(&vgsp_unresumable);
		return;
	}
	if (!vgsp_watch_return(from_pc, sp))
		vgsp_count(&vgsp_unresumable);
}

static void vgsp_record_access(unsigned int vcpu, qemu_plugin_meminfo_t meminfo,
			       uint64_t vaddr, void *udata)
{
	struct qemu_plugin_hwaddr *hw;
	qemu_plugin_mem_value v;
	uint64_t pa, pc = vgsp_pc(udata);
	uint16_t info = vgsp_info(udata);
	unsigned int shift;
	uint8_t kind;

	if (vgsp_in(&vgsp_image, vaddr))
		return;
	hw = qemu_plugin_get_hwaddr(meminfo, vaddr);
	if (!hw || qemu_plugin_hwaddr_is_io(hw))
		return;
	pa = qemu_plugin_hwaddr_phys_addr(hw);
	v = qemu_plugin_mem_get_value(meminfo);
	shift = qemu_plugin_mem_size_shift(meminfo);
	kind = qemu_plugin_mem_is_store(meminfo) ? VGSP_STORE : VGSP_LOAD;
	switch (v.type) {
	case QEMU_PLUGIN_MEM_VALUE_U8:
		vgsp_emit(vcpu, kind, 1, info, pc, pa, v.data.u8);
		break;
	case QEMU_PLUGIN_MEM_VALUE_U16:
		vgsp_emit(vcpu, kind, 2, info, pc, pa, v.data.u16);
		break;
	case QEMU_PLUGIN_MEM_VALUE_U32:
		vgsp_emit(vcpu, kind, 4, info, pc, pa, v.data.u32);
		break;
	case QEMU_PLUGIN_MEM_VALUE_U64:
		vgsp_emit(vcpu, kind, 8, info, pc, pa, v.data.u64);
		break;
	case QEMU_PLUGIN_MEM_VALUE_U128:
		vgsp_emit(vcpu, kind, 8, info, pc, pa, v.data.u128.low);
		vgsp_emit(vcpu, kind, 8, info, pc, pa + 8, v.data.u128.high);
		break;
	default:
		vgsp_emit(vcpu, kind, 1u << (shift > 3 ? 3 : shift), info, pc, pa, 0);
		break;
	}
}

/* An access of an instruction of the driver's text. */
static void vgsp_mem_nova(unsigned int vcpu, qemu_plugin_meminfo_t meminfo,
			  uint64_t vaddr, void *udata)
{
	vgsp_record_access(vcpu, meminfo, vaddr, udata);
}

/* An access of an instruction of followed code: the driver's only when flagged. */
static void vgsp_mem_follow(unsigned int vcpu, qemu_plugin_meminfo_t meminfo,
			    uint64_t vaddr, void *udata)
{
	if (qemu_plugin_u64_get(vgsp_in_nova, vcpu))
		vgsp_record_access(vcpu, meminfo, vaddr, udata);
}

static void vgsp_barrier_exec(unsigned int vcpu, void *udata)
{
	vgsp_emit(vcpu, VGSP_BARRIER, 0, vgsp_info(udata), vgsp_pc(udata), 0, 0);
}

static void vgsp_mops_exec(unsigned int vcpu, void *udata)
{
	(void)vcpu; (void)udata;
	vgsp_count(&vgsp_mops);
}

static bool vgsp_read_x(unsigned int vcpu, unsigned int rt, uint64_t *value);

/* DC ZVA, Xt: the block's stores, 8 bytes each, before it zeroes them. */
static void vgsp_zva_exec(unsigned int vcpu, void *udata)
{
	uint64_t va, pa, i, block = __atomic_load_n(&vgsp_zva_block, __ATOMIC_RELAXED);

	if (!block || !vgsp_read_x(vcpu, vgsp_info(udata), &va)) {
		vgsp_count(&vgsp_zva);
		return;
	}
	va &= ~(block - 1);
	if (!qemu_plugin_translate_vaddr(va, &pa)) {
		vgsp_count(&vgsp_zva);
		return;
	}
	for (i = 0; i < block; i += 8)
		vgsp_emit(vcpu, VGSP_STORE, 8, 0, vgsp_pc(udata), pa + i, 0);
	vgsp_count(&vgsp_zva_recorded);
}

/* Reads the 8-byte register @reg of @vcpu into @value; false if it cannot. */
static bool vgsp_read_reg(unsigned int vcpu, struct qemu_plugin_register *reg,
			  uint64_t *value)
{
	GByteArray *buf = vcpu < VGSP_MAX_VCPUS ? vgsp_regbuf[vcpu] : NULL;

	if (!reg || !buf)
		return false;
	g_byte_array_set_size(buf, 0);
	if (!qemu_plugin_read_register(reg, buf) || buf->len < sizeof(*value))
		return false;
	memcpy(value, buf->data, sizeof(*value));	/* little-endian target, host */
	return true;
}

/* Reads X@rt of @vcpu into @value; false if it cannot. */
static bool vgsp_read_x(unsigned int vcpu, unsigned int rt, uint64_t *value)
{
	if (vcpu >= VGSP_MAX_VCPUS || rt >= VGSP_XREGS)
		return false;
	return vgsp_read_reg(vcpu, vgsp_xreg[vcpu][rt], value);
}

/* Reads the stack pointer of @vcpu into @sp; false if it cannot. */
static bool vgsp_read_sp(unsigned int vcpu, uint64_t *sp)
{
	return vcpu < VGSP_MAX_VCPUS && vgsp_read_reg(vcpu, vgsp_spreg[vcpu], sp);
}

/*
 * The instruction after an MRS Xt, DCZID_EL0 (memset reads it before it uses
 * DC ZVA): the block's size, BS being log2 of its words, unless DZP prohibits
 * DC ZVA. QEMU does not expose DCZID_EL0 to plugins; the guest's own read does.
 */
static void vgsp_dczid_read(unsigned int vcpu, void *udata)
{
	uint64_t dczid;

	if (vgsp_read_x(vcpu, vgsp_info(udata), &dczid) && !(dczid & 0x10))
		__atomic_store_n(&vgsp_zva_block, UINT64_C(4) << (dczid & 0xf),
				 __ATOMIC_RELAXED);
}

/* A vCPU starts: the handles of its X registers, found by name. */
static void vgsp_vcpu_init(unsigned int vcpu, void *udata)
{
	GArray *regs;
	guint i;

	(void)udata;
	if (vcpu >= VGSP_MAX_VCPUS)
		return;
	vgsp_regbuf[vcpu] = g_byte_array_new();
	regs = qemu_plugin_get_registers();
	if (!regs)
		return;
	for (i = 0; i < regs->len; i++) {
		qemu_plugin_reg_descriptor *d = &((qemu_plugin_reg_descriptor *)regs->data)[i];
		unsigned int n;
		char end;

		if (d->name && sscanf(d->name, "x%u%c", &n, &end) == 1 && n < VGSP_XREGS)
			vgsp_xreg[vcpu][n] = d->handle;
		else if (d->name && !strcmp(d->name, "sp"))
			vgsp_spreg[vcpu] = d->handle;
	}
	g_array_free(regs, true);
}

/* MRS Xt, DCZID_EL0. */
static bool vgsp_decode_mrs_dczid(uint32_t w)
{
	return (w & 0xffffffe0) == 0xd53b00e0;
}

/* CPYP/CPYM/CPYE, CPYF*, SETP/SETM/SETE, SETG*: FEAT_MOPS. */
static bool vgsp_decode_mops(uint32_t w)
{
	return (w & 0x3b200c00) == 0x19000400;
}

/* DC ZVA, Xt. */
static bool vgsp_decode_zva(uint32_t w)
{
	return (w & 0xffffffe0) == 0xd50b7420;
}

/*
 * A load or store whose base register is SP (Rn, bits 9:5, is 31): its access
 * is the stack's (or, for a literal load, whose bits 9:5 are part of the
 * offset, the text's), never the shared memory.
 */
static bool vgsp_stack_access(uint32_t w)
{
	return (w & 0x0a000000) == 0x08000000 && ((w >> 5) & 0x1f) == 31;
}

/*
 * Registers an execution callback on @insn: always in the driver's text, only
 * while the flag is set in followed code.
 */
static void vgsp_on_exec(struct qemu_plugin_insn *insn, bool nova,
			 qemu_plugin_vcpu_udata_cb_t cb, void *udata)
{
	if (nova)
		qemu_plugin_register_vcpu_insn_exec_cb(insn, cb, QEMU_PLUGIN_CB_NO_REGS,
						       udata);
	else
		qemu_plugin_register_vcpu_insn_exec_cond_cb(insn, cb, QEMU_PLUGIN_CB_NO_REGS,
							    QEMU_PLUGIN_COND_NE,
							    vgsp_in_nova, 0, udata);
}

/* As vgsp_on_exec, for a callback that reads the vCPU's registers. */
static void vgsp_on_exec_regs(struct qemu_plugin_insn *insn, bool nova,
			      qemu_plugin_vcpu_udata_cb_t cb, void *udata)
{
	if (nova)
		qemu_plugin_register_vcpu_insn_exec_cb(insn, cb, QEMU_PLUGIN_CB_R_REGS,
						       udata);
	else
		qemu_plugin_register_vcpu_insn_exec_cond_cb(insn, cb, QEMU_PLUGIN_CB_R_REGS,
							    QEMU_PLUGIN_COND_NE,
							    vgsp_in_nova, 0, udata);
}

static void vgsp_tb_trans(struct qemu_plugin_tb *tb, void *udata)
{
	uint64_t start = qemu_plugin_tb_vaddr(tb);
	bool nova = vgsp_in(&vgsp_nova, start);
	size_t i, n;

	(void)udata;
	if (!nova && !vgsp_in(&vgsp_follow, start)) {
		qemu_plugin_register_vcpu_tb_exec_cond_cb(tb, vgsp_leave, QEMU_PLUGIN_CB_R_REGS,
							  QEMU_PLUGIN_COND_NE, vgsp_in_nova,
							  0, NULL);
		return;
	}
	if (nova) {
		vgsp_count(&vgsp_nova_tbs);
		qemu_plugin_register_vcpu_tb_exec_cond_cb(tb, vgsp_enter, QEMU_PLUGIN_CB_NO_REGS,
							  QEMU_PLUGIN_COND_EQ, vgsp_in_nova,
							  0, NULL);
	} else {
		qemu_plugin_register_vcpu_tb_exec_cond_cb(tb, vgsp_resume, QEMU_PLUGIN_CB_R_REGS,
							  QEMU_PLUGIN_COND_EQ, vgsp_in_nova,
							  0, (void *)(uintptr_t)start);
	}

	n = qemu_plugin_tb_n_insns(tb);
	for (i = 0; i < n; i++) {
		struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
		uint64_t pc = qemu_plugin_insn_vaddr(insn);
		uint16_t barrier;
		uint32_t w;

		if (qemu_plugin_insn_size(insn) != 4 ||
		    qemu_plugin_insn_data(insn, &w, sizeof(w)) != sizeof(w))
			continue;
		if (!vgsp_packable(pc)) {
			vgsp_count(&vgsp_lost);
			continue;
		}
		barrier = vgsp_decode_barrier(w);
		if (barrier)
			vgsp_on_exec(insn, nova, vgsp_barrier_exec, vgsp_pack(pc, barrier));
		else if (vgsp_decode_cond_branch(w))
			qemu_plugin_register_vcpu_insn_exec_inline_per_vcpu(
				insn, QEMU_PLUGIN_INLINE_STORE_U64, vgsp_branch_pc, pc);
		else if (vgsp_decode_mops(w))
			vgsp_on_exec(insn, nova, vgsp_mops_exec, NULL);
		else if (vgsp_decode_zva(w))
			vgsp_on_exec_regs(insn, nova, vgsp_zva_exec, vgsp_pack(pc, w & 0x1f));
		else if (vgsp_decode_mrs_dczid(w) && i + 1 < n)
			qemu_plugin_register_vcpu_insn_exec_cb(qemu_plugin_tb_get_insn(tb, i + 1),
							       vgsp_dczid_read,
							       QEMU_PLUGIN_CB_R_REGS,
							       vgsp_pack(pc, w & 0x1f));
		if (vgsp_stack_access(w))
			continue;
		/*
		 * Every other instruction: a memory callback costs only when an
		 * access happens, and nothing the decoder does not know slips by.
		 */
		qemu_plugin_register_vcpu_mem_cb(insn, nova ? vgsp_mem_nova : vgsp_mem_follow,
						 QEMU_PLUGIN_CB_NO_REGS, QEMU_PLUGIN_MEM_RW,
						 vgsp_pack(pc, vgsp_decode_order(w)));
	}
}

static void vgsp_write_summary(void)
{
	char path[4096];
	FILE *f;

	if (snprintf(path, sizeof(path), "%s.summary", vgsp_path) >= (int)sizeof(path))
		return;
	f = fopen(path, "w");
	if (!f) {
		fprintf(stderr, "vgsp-ktrace: cannot write %s: %s\n", path, strerror(errno));
		return;
	}
	fprintf(f, "# vgsp-ktrace summary\n");
	fprintf(f, "nova_entries %" PRIu64 "\n", vgsp_entries);
	fprintf(f, "nova_tbs %" PRIu64 "\n", vgsp_nova_tbs);
	fprintf(f, "records %" PRIu64 "\n", vgsp_records);
	fprintf(f, "overlaps %" PRIu64 "\n", vgsp_overlaps);
	fprintf(f, "mops %" PRIu64 "\n", vgsp_mops);
	fprintf(f, "zva %" PRIu64 "\n", vgsp_zva);
	fprintf(f, "zva_recorded %" PRIu64 "\n", vgsp_zva_recorded);
	fprintf(f, "zva_block %" PRIu64 "\n", vgsp_zva_block);
	fprintf(f, "interrupted %" PRIu64 "\n", vgsp_interrupted);
	fprintf(f, "restored %" PRIu64 "\n", vgsp_restored);
	fprintf(f, "unresumable %" PRIu64 "\n", vgsp_unresumable);
	fprintf(f, "lost %" PRIu64 "\n", vgsp_lost);
	fprintf(f, "calls_out %" PRIu64 "\n", vgsp_calls_out);
	fprintf(f, "odd_discon %" PRIu64 "\n", vgsp_odd_discon);
	if (fclose(f))
		fprintf(stderr, "vgsp-ktrace: cannot write %s: %s\n", path, strerror(errno));
}

static void vgsp_atexit(void *udata)
{
	(void)udata;
	pthread_mutex_lock(&vgsp_lock);
	vgsp_flush_locked();
	vgsp_write_summary();
	pthread_mutex_unlock(&vgsp_lock);
}

/* Reads the map; returns false, having said why, when it cannot. */
static bool vgsp_read_map(const char *path)
{
	char line[256];
	unsigned int lineno = 0;
	FILE *f = fopen(path, "r");

	if (!f) {
		fprintf(stderr, "vgsp-ktrace: cannot open the map %s: %s\n", path, strerror(errno));
		return false;
	}
	while (fgets(line, sizeof(line), f)) {
		char kind[16];
		uint64_t start, end;
		struct vgsp_spans *spans;

		lineno++;
		if (line[0] == '#' || line[0] == '\n')
			continue;
		if (sscanf(line, "%15s %" SCNx64 " %" SCNx64, kind, &start, &end) != 3 ||
		    start >= end) {
			fprintf(stderr, "vgsp-ktrace: %s:%u: not KIND START END\n", path, lineno);
			fclose(f);
			return false;
		}
		if (!strcmp(kind, "nova"))
			spans = &vgsp_nova;
		else if (!strcmp(kind, "follow"))
			spans = &vgsp_follow;
		else if (!strcmp(kind, "image"))
			spans = &vgsp_image;
		else {
			fprintf(stderr, "vgsp-ktrace: %s:%u: unknown kind %s\n", path, lineno, kind);
			fclose(f);
			return false;
		}
		if (spans->n == VGSP_MAX_SPANS) {
			fprintf(stderr, "vgsp-ktrace: %s: more than %d %s spans\n", path,
				VGSP_MAX_SPANS, kind);
			fclose(f);
			return false;
		}
		spans->span[spans->n].start = start;
		spans->span[spans->n].end = end;
		spans->n++;
	}
	fclose(f);
	if (!vgsp_nova.n) {
		fprintf(stderr, "vgsp-ktrace: %s names no nova span: nothing to trace\n", path);
		return false;
	}
	return true;
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id,
					   const qemu_info_t *info,
					   int argc, char **argv)
{
	const char *map = NULL;
	int i;

	if (!info->system_emulation || strcmp(info->target_name, "aarch64")) {
		fprintf(stderr, "vgsp-ktrace: only for qemu-system-aarch64, not %s%s\n",
			info->target_name, info->system_emulation ? "" : " user mode");
		return -1;
	}
	if (info->version.min > QEMU_PLUGIN_VERSION ||
	    info->version.cur < QEMU_PLUGIN_VERSION) {
		fprintf(stderr,
			"vgsp-ktrace: written for plugin API version %d; this QEMU supports %d to %d\n",
			QEMU_PLUGIN_VERSION, info->version.min, info->version.cur);
		return -1;
	}
	for (i = 0; i < argc; i++) {
		if (!strncmp(argv[i], "out=", 4) && argv[i][4]) {
			vgsp_path = argv[i] + 4;
		} else if (!strncmp(argv[i], "map=", 4) && argv[i][4]) {
			map = argv[i] + 4;
		} else {
			fprintf(stderr,
				"vgsp-ktrace: unknown argument '%s' (they are out=FILE and map=FILE)\n",
				argv[i]);
			return -1;
		}
	}
	if (!vgsp_path || !map) {
		fprintf(stderr, "vgsp-ktrace: needs out=FILE (the trace) and map=FILE (what to trace)\n");
		return -1;
	}
	if (!vgsp_read_map(map))
		return -1;
	vgsp_fd = open(vgsp_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (vgsp_fd < 0) {
		fprintf(stderr, "vgsp-ktrace: cannot open %s: %s\n", vgsp_path, strerror(errno));
		return -1;
	}

	vgsp_vcpus = qemu_plugin_scoreboard_new(sizeof(struct vgsp_vcpu));
	vgsp_in_nova = qemu_plugin_scoreboard_u64_in_struct(vgsp_vcpus, struct vgsp_vcpu,
							     in_nova);
	vgsp_branch_pc = qemu_plugin_scoreboard_u64_in_struct(vgsp_vcpus, struct vgsp_vcpu,
							       branch_pc);

	qemu_plugin_register_vcpu_init_cb(id, vgsp_vcpu_init, NULL);
	qemu_plugin_register_vcpu_tb_trans_cb(id, vgsp_tb_trans, NULL);
	qemu_plugin_register_vcpu_discon_cb(id, QEMU_PLUGIN_DISCON_INTERRUPT |
					    QEMU_PLUGIN_DISCON_EXCEPTION, vgsp_discon, NULL);
	qemu_plugin_register_atexit_cb(id, vgsp_atexit, NULL);
	return 0;
}
