// SPDX-License-Identifier: GPL-2.0
/*
 * vgsp-trace: a QEMU TCG plugin (plugin API version 1, QEMU 7.2, user mode
 * qemu-aarch64 only) that records, per guest thread, the events of an aarch64
 * Linux binary that matter for memory ordering, for the project's ordering
 * checker.
 *
 *   qemu-aarch64 -L /usr/aarch64-linux-gnu \
 *       -plugin ./libvgsp-trace.so,out=/path/trace.bin prog args
 *
 * Build (no glib needed):
 *
 *   gcc -O2 -Wall -Wextra -Werror -shared -fPIC \
 *       -I/path/to/qemu-7.2.0/include/qemu -o libvgsp-trace.so vgsp-trace.c
 *
 * The output file is a sequence of 32-byte little-endian records, no header
 * (struct vgsp_trace_record below). Records of one thread appear in that
 * thread's program order. All threads share one buffer under one lock, so the
 * file order is also a total order consistent with the order in which the
 * callbacks ran; in particular a REGION record precedes every record it made
 * the filter let through (the region is added and its record appended in one
 * critical section).
 *
 * Kinds:
 *
 * LOAD (1), STORE (2): an access whose address lies in a registered region.
 *	size is the access size, info the instruction's ordering bits
 *	(VGSP_ACQ, VGSP_REL, VGSP_RCPC). A store's value is the memory read
 *	back right after it (the callback runs after the access); a load's is
 *	0, because reading back would race with the other agent's stores: the
 *	program announces the values it depends on with VALUE marks instead.
 *	An atomic read-modify-write gives a LOAD and then a STORE. A failed
 *	compare-and-swap or store-exclusive may still give a STORE (QEMU
 *	implements them with a compare-and-swap whose write callback runs
 *	either way), whose value is then the unchanged memory.
 * BARRIER (3): a DMB or DSB executed anywhere in the process; info is
 *	(type << 8) | CRm, type 1 DMB, 2 DSB. ISB and the speculation barriers
 *	SSBB and PSSBB (which share DSB's encoding with CRm 0 and 4, but order
 *	nothing the checker cares about) are not recorded.
 * ORDERED_OTHER (4): an acquire or release access outside every region; info
 *	is its ordering bits | VGSP_WRITES | VGSP_READS (both for an atomic
 *	read-modify-write), addr its address. One is dropped when the previous
 *	record emitted for the thread is an ORDERED_OTHER with the same info,
 *	so a spin loop on a lock word costs one record. A pending BRANCH (below)
 *	does not count as emitted: it stays pending across a dropped record.
 * BRANCH (5): when a conditional branch (B.cond, CBZ/CBNZ, TBZ/TBNZ) has
 *	executed since the thread's last record, one BRANCH (pc the most recent
 *	such branch's) is emitted just before the thread's next record. It is
 *	never emitted on its own, so a loop with no other event costs nothing.
 *	It tells the checker that control flow may have depended on what came
 *	before.
 * VALUE (6), REGION (7), REGION_END (8), IMAGE (9): marks from the
 *	program, below.
 *
 * Marks. The program calls an exported, never-inlined function
 * vgsp_trace_mark(struct mark *m), struct mark { u64 kind, a, b, seal; },
 * which reads the mark and stores VGSP_SEAL to m->seal (kernel-shim's
 * trace.rs). Every instruction of that symbol gets a write callback of its
 * own; an 8-byte store that reads back as the seal is the mark, and kind, a
 * and b are read from the 24 bytes below it. Kind 1 (VALUE: the load at a
 * returned b) gives record VALUE with addr a, value b. Kind 2 (REGION) adds
 * [a, a + b) to the filter and gives REGION with addr a, value b. Kind 3
 * (REGION_END) removes the region starting at a and gives REGION_END with
 * addr a. Kind 4 (IMAGE: a is where vgsp_trace_mark itself is) gives IMAGE
 * with addr a, so that the checker can place a position-independent
 * binary's pcs against its symbols. The pc of a mark record is the seal store's. Other accesses of
 * vgsp_trace_mark (prologue spills, its reads of the mark) are never
 * recorded.
 *
 * What it cannot see, and assumptions:
 *
 * - DC ZVA writes memory but QEMU 7.2 calls no memory callback for it, so
 *   zeroing a region with it (glibc's memset may) leaves no STORE records.
 * - Guest addresses are read directly as host pointers (the mark, a store's
 *   value). That holds in user mode with guest_base 0, which is what Debian's
 *   qemu-aarch64 7.2 uses on an x86_64 host (measured, for PIE and non-PIE
 *   binaries); QEMU 7.2 gives plugins no way to check it, and -B or -R would
 *   break it.
 * - Threads are told apart by gettid() in the callback, which in user mode is
 *   the guest thread's id; vCPU indexes are recycled across threads.
 * - An access that races with the REGION_END of its region may be recorded
 *   after the REGION_END record, as the program's own race allows.
 * - A forked child keeps tracing into the same file (opened O_APPEND, so the
 *   two processes' flushes do not overwrite each other); records the parent
 *   had buffered are dropped in the child, not written twice. The buffer is
 *   flushed before execve, whose new image is not traced by this instance.
 */

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <qemu-plugin.h>

#include "vgsp-arm64.h"

/* Records are written as the host lays them out, which must be the file's. */
#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "vgsp-trace writes host-endian records and needs a little-endian host"
#endif

QEMU_PLUGIN_EXPORT int qemu_plugin_version = QEMU_PLUGIN_VERSION;

struct vgsp_trace_record {
	uint32_t tid;	/* gettid() of the guest thread */
	uint8_t kind;	/* enum vgsp_kind */
	uint8_t size;	/* access size in bytes for LOAD/STORE, else 0 */
	uint16_t info;	/* kind-specific, see the top of the file */
	uint64_t pc;	/* guest pc of the instruction */
	uint64_t addr;	/* guest address, or as for the kind */
	uint64_t value;	/* as for the kind */
};

_Static_assert(sizeof(struct vgsp_trace_record) == 32, "records are 32 bytes");

enum vgsp_kind {
	VGSP_LOAD = 1,
	VGSP_STORE = 2,
	VGSP_BARRIER = 3,
	VGSP_ORDERED_OTHER = 4,
	VGSP_BRANCH = 5,
	VGSP_VALUE = 6,
	VGSP_REGION = 7,
	VGSP_REGION_END = 8,
	VGSP_IMAGE = 9,
};


/* The value vgsp_trace_mark() stores in the mark's seal ("VGSPTRK!"). */
#define VGSP_SEAL	0x5647535054524b21ULL
#define VGSP_MARK_SYMBOL "vgsp_trace_mark"

enum vgsp_mark_kind {
	VGSP_MARK_VALUE = 1,
	VGSP_MARK_REGION = 2,
	VGSP_MARK_REGION_END = 3,
	VGSP_MARK_IMAGE = 4,
};

/*
 * What translation decided about an instruction travels to its callbacks in
 * the userdata pointer itself: the guest pc in the low 48 bits (aarch64
 * user-mode addresses have 48 bits) and 16 bits of info above it. That is the
 * per-instruction descriptor, without an allocation that would have to
 * outlive every translation of the block and could never be freed.
 */
#define VGSP_PC_BITS	48
#define VGSP_PC_MASK	((UINT64_C(1) << VGSP_PC_BITS) - 1)

/* Info bit for memory callbacks: the instruction is vgsp_trace_mark's. */
#define VGSP_IN_MARK	0x8000

static void *vgsp_pack(uint64_t pc, uint16_t info)
{
	return (void *)(uintptr_t)(pc | (uint64_t)info << VGSP_PC_BITS);
}

static uint64_t vgsp_pc(void *udata)
{
	return (uintptr_t)udata & VGSP_PC_MASK;
}

static uint16_t vgsp_info(void *udata)
{
	return (uint64_t)(uintptr_t)udata >> VGSP_PC_BITS;
}

/*
 * The output: one buffer for all threads under one lock. A thread that exits
 * leaves nothing behind to flush, and the file order is a real-time order
 * (see the top of the file). The lock also serialises changes of the region
 * table.
 */
#define VGSP_BUF_RECORDS 8192	/* 256 KiB */

static pthread_mutex_t vgsp_lock = PTHREAD_MUTEX_INITIALIZER;
static struct vgsp_trace_record vgsp_buf[VGSP_BUF_RECORDS];
static size_t vgsp_nbuf;
static int vgsp_fd = -1;
static const char *vgsp_path;
static bool vgsp_write_failed;
/* Set at exit: records of threads still running then are written at once. */
static bool vgsp_exiting;

/* Per-thread state; each callback runs on the host thread of its guest thread. */
struct vgsp_thread {
	uint32_t tid;		/* 0 until the thread's first record */
	bool branch_pending;	/* a conditional branch since the last record */
	bool have_last;
	uint8_t last_kind;	/* the last record emitted for the thread */
	uint16_t last_info;
	uint64_t branch_pc;	/* the most recent pending branch's pc */
};

static __thread struct vgsp_thread vgsp_self;

/*
 * Registered regions. Many threads check every access against them, and they
 * change rarely, so readers take no lock: writers (under vgsp_lock) bump a
 * sequence count around each change, and a reader retries if the count was
 * odd or moved while it looked. Removal moves the last region into the hole,
 * so readers scan only vgsp_nregions entries.
 */
#define VGSP_MAX_REGIONS 256

struct vgsp_region {
	uint64_t start;
	uint64_t end;	/* exclusive */
};

static struct vgsp_region vgsp_regions[VGSP_MAX_REGIONS];
static unsigned int vgsp_nregions;
static unsigned int vgsp_region_seq;

static void vgsp_write_all(const void *data, size_t len)
{
	const char *p = data;

	while (len && !vgsp_write_failed) {
		ssize_t n = write(vgsp_fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			int err = n < 0 ? errno : EIO;

			/* Once: a full disk would otherwise print per flush. */
			fprintf(stderr,
				"vgsp-trace: write to %s failed: %s (errno %d); the trace is incomplete\n",
				vgsp_path, strerror(err), err);
			vgsp_write_failed = true;
			return;
		}
		p += n;
		len -= n;
	}
}

/* Called with vgsp_lock held. */
static void vgsp_flush_locked(void)
{
	vgsp_write_all(vgsp_buf, vgsp_nbuf * sizeof(vgsp_buf[0]));
	vgsp_nbuf = 0;
}

/* Called with vgsp_lock held. */
static void vgsp_append_locked(const struct vgsp_trace_record *r)
{
	if (vgsp_nbuf == VGSP_BUF_RECORDS)
		vgsp_flush_locked();
	vgsp_buf[vgsp_nbuf++] = *r;
}

static struct vgsp_thread *vgsp_thread(void)
{
	struct vgsp_thread *t = &vgsp_self;

	if (!t->tid)
		t->tid = gettid();
	return t;
}

/*
 * Appends a record for the calling thread, preceded by its pending BRANCH if
 * any. Called with vgsp_lock held when @locked, else takes it.
 */
static void vgsp_emit_as(bool locked, uint8_t kind, uint8_t size, uint16_t info,
			 uint64_t pc, uint64_t addr, uint64_t value)
{
	struct vgsp_thread *t = vgsp_thread();
	struct vgsp_trace_record r = {
		.tid = t->tid, .kind = kind, .size = size, .info = info,
		.pc = pc, .addr = addr, .value = value,
	};

	if (!locked)
		pthread_mutex_lock(&vgsp_lock);
	if (t->branch_pending) {
		struct vgsp_trace_record b = {
			.tid = t->tid, .kind = VGSP_BRANCH, .pc = t->branch_pc,
		};

		vgsp_append_locked(&b);
		t->branch_pending = false;
	}
	vgsp_append_locked(&r);
	if (vgsp_exiting)
		vgsp_flush_locked();
	if (!locked)
		pthread_mutex_unlock(&vgsp_lock);
	t->have_last = true;
	t->last_kind = kind;
	t->last_info = info;
}

static void vgsp_emit(uint8_t kind, uint8_t size, uint16_t info, uint64_t pc,
		      uint64_t addr, uint64_t value)
{
	vgsp_emit_as(false, kind, size, info, pc, addr, value);
}

static bool vgsp_in_region(uint64_t addr)
{
	unsigned int seq, n, i;
	bool hit = false;

	/* The common case: nothing registered, or a program with no regions. */
	if (!__atomic_load_n(&vgsp_nregions, __ATOMIC_RELAXED))
		return false;
	for (;;) {
		seq = __atomic_load_n(&vgsp_region_seq, __ATOMIC_ACQUIRE);
		if (seq & 1)
			continue;	/* a change is under way */
		hit = false;
		n = __atomic_load_n(&vgsp_nregions, __ATOMIC_RELAXED);
		for (i = 0; i < n && i < VGSP_MAX_REGIONS; i++) {
			uint64_t start = __atomic_load_n(&vgsp_regions[i].start,
							 __ATOMIC_RELAXED);
			uint64_t end = __atomic_load_n(&vgsp_regions[i].end,
						       __ATOMIC_RELAXED);

			if (addr >= start && addr < end) {
				hit = true;
				break;
			}
		}
		/* Orders the loads above before the second look at the count. */
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&vgsp_region_seq, __ATOMIC_RELAXED) == seq)
			return hit;
	}
}

/* Called with vgsp_lock held. */
static void vgsp_region_begin_change(void)
{
	__atomic_store_n(&vgsp_region_seq, vgsp_region_seq + 1, __ATOMIC_RELAXED);
	/* Readers that see any of the change must see the odd count. */
	__atomic_thread_fence(__ATOMIC_RELEASE);
}

/* Called with vgsp_lock held. */
static void vgsp_region_end_change(void)
{
	__atomic_store_n(&vgsp_region_seq, vgsp_region_seq + 1, __ATOMIC_RELEASE);
}

/* Called with vgsp_lock held. */
static void vgsp_region_add_locked(uint64_t start, uint64_t len)
{
	static bool warned_full;
	/* A region reaching past the top of the address space ends there. */
	uint64_t end = start + len < start ? UINT64_MAX : start + len;

	if (!len)
		return;
	if (vgsp_nregions == VGSP_MAX_REGIONS) {
		if (!warned_full)
			fprintf(stderr,
				"vgsp-trace: more than %d regions at once; the excess are not traced\n",
				VGSP_MAX_REGIONS);
		warned_full = true;
		return;
	}
	vgsp_region_begin_change();
	__atomic_store_n(&vgsp_regions[vgsp_nregions].start, start, __ATOMIC_RELAXED);
	__atomic_store_n(&vgsp_regions[vgsp_nregions].end, end, __ATOMIC_RELAXED);
	__atomic_store_n(&vgsp_nregions, vgsp_nregions + 1, __ATOMIC_RELAXED);
	vgsp_region_end_change();
}

/* Called with vgsp_lock held. */
static void vgsp_region_remove_locked(uint64_t start)
{
	static bool warned_unknown;
	unsigned int i, last;

	for (i = 0; i < vgsp_nregions; i++)
		if (vgsp_regions[i].start == start)
			break;
	if (i == vgsp_nregions) {
		if (!warned_unknown)
			fprintf(stderr,
				"vgsp-trace: REGION_END of 0x%llx, not a region (reported once)\n",
				(unsigned long long)start);
		warned_unknown = true;
		return;
	}
	last = vgsp_nregions - 1;
	vgsp_region_begin_change();
	__atomic_store_n(&vgsp_regions[i].start, vgsp_regions[last].start,
			 __ATOMIC_RELAXED);
	__atomic_store_n(&vgsp_regions[i].end, vgsp_regions[last].end,
			 __ATOMIC_RELAXED);
	__atomic_store_n(&vgsp_nregions, last, __ATOMIC_RELAXED);
	vgsp_region_end_change();
}

/* Reads guest memory, which in user mode with guest_base 0 is host memory. */
static uint64_t vgsp_peek(uint64_t vaddr, unsigned int size)
{
	uint64_t v = 0;

	memcpy(&v, (const void *)(uintptr_t)vaddr, size < 8 ? size : 8);
	return v;
}

/* A store of an instruction of vgsp_trace_mark: the seal store is a mark. */
static void vgsp_mark_mem(unsigned int vcpu_index, qemu_plugin_meminfo_t meminfo,
			  uint64_t vaddr, void *udata)
{
	static bool warned_kind;
	uint64_t kind, a, b;

	(void)vcpu_index;
	if (!qemu_plugin_mem_is_store(meminfo) ||
	    qemu_plugin_mem_size_shift(meminfo) != 3 || vaddr < 24 ||
	    vgsp_peek(vaddr, 8) != VGSP_SEAL)
		return;
	/* The caller wrote the mark before the call; its stack is its own. */
	kind = vgsp_peek(vaddr - 24, 8);
	a = vgsp_peek(vaddr - 16, 8);
	b = vgsp_peek(vaddr - 8, 8);

	switch (kind) {
	case VGSP_MARK_VALUE:
		vgsp_emit(VGSP_VALUE, 0, 0, vgsp_pc(udata), a, b);
		break;
	case VGSP_MARK_REGION:
		/* One critical section: see the top of the file. */
		pthread_mutex_lock(&vgsp_lock);
		vgsp_region_add_locked(a, b);
		vgsp_emit_as(true, VGSP_REGION, 0, 0, vgsp_pc(udata), a, b);
		pthread_mutex_unlock(&vgsp_lock);
		break;
	case VGSP_MARK_IMAGE:
		vgsp_emit(VGSP_IMAGE, 0, 0, vgsp_pc(udata), a, 0);
		break;
	case VGSP_MARK_REGION_END:
		pthread_mutex_lock(&vgsp_lock);
		vgsp_region_remove_locked(a);
		vgsp_emit_as(true, VGSP_REGION_END, 0, 0, vgsp_pc(udata), a, 0);
		pthread_mutex_unlock(&vgsp_lock);
		break;
	default:
		if (!warned_kind)
			fprintf(stderr,
				"vgsp-trace: mark of unknown kind %llu at pc 0x%llx ignored\n",
				(unsigned long long)kind, (unsigned long long)vgsp_pc(udata));
		warned_kind = true;
		break;
	}
}

/* Every access of every other instruction. */
static void vgsp_mem(unsigned int vcpu_index, qemu_plugin_meminfo_t meminfo,
		     uint64_t vaddr, void *udata)
{
	uint16_t info = vgsp_info(udata);
	uint16_t order = info & VGSP_ORDER;
	unsigned int size;
	struct vgsp_thread *t;

	(void)vcpu_index;
	if (vgsp_in_region(vaddr)) {
		size = 1u << qemu_plugin_mem_size_shift(meminfo);
		if (qemu_plugin_mem_is_store(meminfo))
			vgsp_emit(VGSP_STORE, size, order, vgsp_pc(udata), vaddr,
				  vgsp_peek(vaddr, size));
		else
			vgsp_emit(VGSP_LOAD, size, order, vgsp_pc(udata), vaddr, 0);
		return;
	}
	if (!order)
		return;
	/*
	 * Both accesses of a read-modify-write carry the same info, so the
	 * second is dropped here and the instruction gives one record.
	 */
	t = &vgsp_self;
	if (t->have_last && t->last_kind == VGSP_ORDERED_OTHER && t->last_info == info)
		return;
	vgsp_emit(VGSP_ORDERED_OTHER, 0, info, vgsp_pc(udata), vaddr, 0);
}

static void vgsp_barrier_exec(unsigned int vcpu_index, void *udata)
{
	(void)vcpu_index;
	vgsp_emit(VGSP_BARRIER, 0, vgsp_info(udata), vgsp_pc(udata), 0, 0);
}

static void vgsp_branch_exec(unsigned int vcpu_index, void *udata)
{
	struct vgsp_thread *t = &vgsp_self;

	(void)vcpu_index;
	t->branch_pending = true;
	t->branch_pc = vgsp_pc(udata);
}

static void vgsp_tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	size_t i, n = qemu_plugin_tb_n_insns(tb);

	(void)id;
	for (i = 0; i < n; i++) {
		struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
		uint64_t pc = qemu_plugin_insn_vaddr(insn);
		const char *sym = qemu_plugin_insn_symbol(insn);
		uint16_t barrier;
		uint32_t w;

		if (qemu_plugin_insn_size(insn) != 4 || pc & ~VGSP_PC_MASK)
			continue;	/* not an aarch64 user-mode instruction */
		memcpy(&w, qemu_plugin_insn_data(insn), 4);

		if (sym && !strcmp(sym, VGSP_MARK_SYMBOL)) {
			qemu_plugin_register_vcpu_mem_cb(insn, vgsp_mark_mem,
							 QEMU_PLUGIN_CB_NO_REGS,
							 QEMU_PLUGIN_MEM_W,
							 vgsp_pack(pc, VGSP_IN_MARK));
		} else {
			/*
			 * Every instruction, not only the load/store encodings:
			 * a callback costs only when an access happens, and this
			 * way SVE, MTE and whatever else QEMU's "max" CPU runs
			 * cannot slip past the region filter.
			 */
			qemu_plugin_register_vcpu_mem_cb(insn, vgsp_mem,
							 QEMU_PLUGIN_CB_NO_REGS,
							 QEMU_PLUGIN_MEM_RW,
							 vgsp_pack(pc, vgsp_decode_order(w)));
		}

		barrier = vgsp_decode_barrier(w);
		if (barrier)
			qemu_plugin_register_vcpu_insn_exec_cb(insn, vgsp_barrier_exec,
							       QEMU_PLUGIN_CB_NO_REGS,
							       vgsp_pack(pc, barrier));
		else if (vgsp_decode_cond_branch(w))
			qemu_plugin_register_vcpu_insn_exec_cb(insn, vgsp_branch_exec,
							       QEMU_PLUGIN_CB_NO_REGS,
							       vgsp_pack(pc, 0));
	}
}

/* execve replaces the process: what is buffered would be lost. */
static void vgsp_syscall(qemu_plugin_id_t id, unsigned int vcpu_index, int64_t num,
			 uint64_t a1, uint64_t a2, uint64_t a3, uint64_t a4,
			 uint64_t a5, uint64_t a6, uint64_t a7, uint64_t a8)
{
	(void)id; (void)vcpu_index;
	(void)a1; (void)a2; (void)a3; (void)a4;
	(void)a5; (void)a6; (void)a7; (void)a8;
	if (num == 221 || num == 281) {	/* aarch64 execve, execveat */
		pthread_mutex_lock(&vgsp_lock);
		vgsp_flush_locked();
		pthread_mutex_unlock(&vgsp_lock);
	}
}

static void vgsp_atexit(qemu_plugin_id_t id, void *udata)
{
	(void)id; (void)udata;
	pthread_mutex_lock(&vgsp_lock);
	vgsp_flush_locked();
	/*
	 * Other threads may still run a few instructions before the process
	 * goes: write their records as they come rather than buffer them.
	 */
	vgsp_exiting = true;
	pthread_mutex_unlock(&vgsp_lock);
}

/*
 * Around fork (which is how qemu-aarch64 runs the guest's fork and vfork):
 * the child must not inherit a held lock, nor write the parent's buffered
 * records a second time, nor take the parent thread's id as its own.
 */
static void vgsp_fork_prepare(void)
{
	pthread_mutex_lock(&vgsp_lock);
}

static void vgsp_fork_parent(void)
{
	pthread_mutex_unlock(&vgsp_lock);
}

static void vgsp_fork_child(void)
{
	vgsp_nbuf = 0;
	/* The child is a new thread: its own id, no pending branch, no last record. */
	memset(&vgsp_self, 0, sizeof(vgsp_self));
	pthread_mutex_unlock(&vgsp_lock);
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id,
					   const qemu_info_t *info,
					   int argc, char **argv)
{
	int i;

	if (info->system_emulation || strcmp(info->target_name, "aarch64")) {
		fprintf(stderr, "vgsp-trace: only for qemu-aarch64 (user mode), not %s%s\n",
			info->target_name, info->system_emulation ? " system emulation" : "");
		return -1;
	}
	for (i = 0; i < argc; i++) {
		if (!strncmp(argv[i], "out=", 4) && argv[i][4]) {
			vgsp_path = argv[i] + 4;
		} else {
			fprintf(stderr,
				"vgsp-trace: unknown argument '%s' (the only one is out=FILE)\n",
				argv[i]);
			return -1;
		}
	}
	if (!vgsp_path) {
		fprintf(stderr, "vgsp-trace: missing argument out=FILE (where to write the trace)\n");
		return -1;
	}
	/* O_CLOEXEC: a program the guest execs must not write into the trace. */
	vgsp_fd = open(vgsp_path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC,
		       0644);
	if (vgsp_fd < 0) {
		int err = errno;

		fprintf(stderr, "vgsp-trace: cannot open %s: %s (errno %d)\n",
			vgsp_path, strerror(err), err);
		return -1;
	}
	if (pthread_atfork(vgsp_fork_prepare, vgsp_fork_parent, vgsp_fork_child)) {
		fprintf(stderr, "vgsp-trace: pthread_atfork failed\n");
		return -1;
	}

	qemu_plugin_register_vcpu_tb_trans_cb(id, vgsp_tb_trans);
	qemu_plugin_register_vcpu_syscall_cb(id, vgsp_syscall);
	qemu_plugin_register_atexit_cb(id, vgsp_atexit, NULL);
	return 0;
}
