/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The part of QEMU 11.1's TCG plugin API (version 7) that vgsp-ktrace.c uses,
 * declared by the project.
 *
 * Why not QEMU's own header: it is in QEMU's source package only, and the
 * package registries this project fetches from serve sid's binary packages of
 * QEMU 11.1 but not their source (on the machine this was written on, the
 * 11.1.x sources answer 404 and 10.2.2's is the newest served: API version 5,
 * which QEMU 11.1 refuses to load). These declarations are the API's facts:
 * the names, the argument lists and the layouts, as QEMU 11.1's documentation
 * gives them and as QEMU 11.1.3 (Debian 1:11.1.3+ds-1) calls them. Version 7
 * gave every callback a user-data pointer where version 5 gave the plugin's id,
 * and a register descriptor grew to 32 bytes.
 *
 * How a mistake here shows: QEMU refuses a plugin whose qemu_plugin_version it
 * does not support, by name, when it loads it; vgsp-ktrace.c also refuses a
 * QEMU whose supported range does not hold version 7; and the traced boot of
 * Linux 7.3.4 must find its defects at their lines (tests/run.sh), which a
 * callback given the wrong arguments would not.
 *
 * glib's types come from glib.h beside this file.
 */
#ifndef VGSP_QEMU_11_PLUGIN_H
#define VGSP_QEMU_11_PLUGIN_H

#include <glib.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>

#define QEMU_PLUGIN_EXPORT __attribute__((visibility("default")))

/* The API version these declarations are of. */
#define QEMU_PLUGIN_VERSION 7

typedef uint64_t qemu_plugin_id_t;

/* What QEMU tells the plugin when it installs it. */
typedef struct qemu_info_t {
	const char *target_name;
	struct {
		int min;
		int cur;
	} version;
	bool system_emulation;
	union {
		struct {
			int smp_vcpus;
			int max_vcpus;
		} system;
	};
} qemu_info_t;

/* Opaque handles. */
struct qemu_plugin_tb;
struct qemu_plugin_insn;
struct qemu_plugin_scoreboard;
struct qemu_plugin_hwaddr;
struct qemu_plugin_register;
typedef uint32_t qemu_plugin_meminfo_t;

/* One 64-bit member of a scoreboard's per-vCPU entry. */
typedef struct {
	struct qemu_plugin_scoreboard *score;
	size_t offset;
} qemu_plugin_u64;

enum qemu_plugin_cb_flags {
	QEMU_PLUGIN_CB_NO_REGS,
	QEMU_PLUGIN_CB_R_REGS,
	QEMU_PLUGIN_CB_RW_REGS,
	QEMU_PLUGIN_CB_RW_REGS_PC,
};

enum qemu_plugin_mem_rw {
	QEMU_PLUGIN_MEM_R = 1,
	QEMU_PLUGIN_MEM_W,
	QEMU_PLUGIN_MEM_RW,
};

enum qemu_plugin_mem_value_type {
	QEMU_PLUGIN_MEM_VALUE_U8,
	QEMU_PLUGIN_MEM_VALUE_U16,
	QEMU_PLUGIN_MEM_VALUE_U32,
	QEMU_PLUGIN_MEM_VALUE_U64,
	QEMU_PLUGIN_MEM_VALUE_U128,
};

/* The value a load read or a store wrote, in host byte order. */
typedef struct {
	enum qemu_plugin_mem_value_type type;
	union {
		uint8_t u8;
		uint16_t u16;
		uint32_t u32;
		uint64_t u64;
		struct {
			uint64_t low;
			uint64_t high;
		} u128;
	} data;
} qemu_plugin_mem_value;

enum qemu_plugin_cond {
	QEMU_PLUGIN_COND_NEVER,
	QEMU_PLUGIN_COND_ALWAYS,
	QEMU_PLUGIN_COND_EQ,
	QEMU_PLUGIN_COND_NE,
	QEMU_PLUGIN_COND_LT,
	QEMU_PLUGIN_COND_LE,
	QEMU_PLUGIN_COND_GT,
	QEMU_PLUGIN_COND_GE,
};

enum qemu_plugin_op {
	QEMU_PLUGIN_INLINE_ADD_U64,
	QEMU_PLUGIN_INLINE_STORE_U64,
};

enum qemu_plugin_discon_type {
	QEMU_PLUGIN_DISCON_INTERRUPT = 1 << 0,
	QEMU_PLUGIN_DISCON_EXCEPTION = 1 << 1,
	QEMU_PLUGIN_DISCON_HOSTCALL = 1 << 2,
	QEMU_PLUGIN_DISCON_ALL = -1,
};

/* A register of the vCPU, as qemu_plugin_get_registers() lists it (32 bytes). */
typedef struct {
	struct qemu_plugin_register *handle;
	const char *name;
	const char *feature;
	bool is_readonly;
} qemu_plugin_reg_descriptor;

/* Callbacks: version 7 hands each one the user data it was registered with. */
typedef void (*qemu_plugin_udata_cb_t)(void *userdata);
typedef void (*qemu_plugin_vcpu_udata_cb_t)(unsigned int vcpu_index,
					    void *userdata);
typedef void (*qemu_plugin_vcpu_tb_trans_cb_t)(struct qemu_plugin_tb *tb,
					       void *userdata);
typedef void (*qemu_plugin_vcpu_mem_cb_t)(unsigned int vcpu_index,
					  qemu_plugin_meminfo_t info,
					  uint64_t vaddr, void *userdata);
typedef void (*qemu_plugin_vcpu_discon_cb_t)(unsigned int vcpu_index,
					     enum qemu_plugin_discon_type type,
					     uint64_t from_pc, uint64_t to_pc,
					     void *userdata);

/* The plugin's entry point and the version it was built for. */
QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id,
					   const qemu_info_t *info, int argc,
					   char **argv);

/* Registering callbacks. */
void qemu_plugin_register_vcpu_init_cb(qemu_plugin_id_t id,
				       qemu_plugin_vcpu_udata_cb_t cb,
				       void *userdata);
void qemu_plugin_register_vcpu_discon_cb(qemu_plugin_id_t id,
					 enum qemu_plugin_discon_type type,
					 qemu_plugin_vcpu_discon_cb_t cb,
					 void *userdata);
void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id,
					   qemu_plugin_vcpu_tb_trans_cb_t cb,
					   void *userdata);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id,
				    qemu_plugin_udata_cb_t cb, void *userdata);
void qemu_plugin_register_vcpu_tb_exec_cond_cb(struct qemu_plugin_tb *tb,
					       qemu_plugin_vcpu_udata_cb_t cb,
					       enum qemu_plugin_cb_flags flags,
					       enum qemu_plugin_cond cond,
					       qemu_plugin_u64 entry,
					       uint64_t imm, void *userdata);
void qemu_plugin_register_vcpu_insn_exec_cb(struct qemu_plugin_insn *insn,
					    qemu_plugin_vcpu_udata_cb_t cb,
					    enum qemu_plugin_cb_flags flags,
					    void *userdata);
void qemu_plugin_register_vcpu_insn_exec_cond_cb(struct qemu_plugin_insn *insn,
						 qemu_plugin_vcpu_udata_cb_t cb,
						 enum qemu_plugin_cb_flags flags,
						 enum qemu_plugin_cond cond,
						 qemu_plugin_u64 entry,
						 uint64_t imm, void *userdata);
void qemu_plugin_register_vcpu_insn_exec_inline_per_vcpu(
	struct qemu_plugin_insn *insn, enum qemu_plugin_op op,
	qemu_plugin_u64 entry, uint64_t imm);
void qemu_plugin_register_vcpu_mem_cb(struct qemu_plugin_insn *insn,
				      qemu_plugin_vcpu_mem_cb_t cb,
				      enum qemu_plugin_cb_flags flags,
				      enum qemu_plugin_mem_rw rw,
				      void *userdata);

/* Translation blocks and instructions. */
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
uint64_t qemu_plugin_tb_vaddr(const struct qemu_plugin_tb *tb);
struct qemu_plugin_insn *qemu_plugin_tb_get_insn(const struct qemu_plugin_tb *tb,
						 size_t idx);
size_t qemu_plugin_insn_data(const struct qemu_plugin_insn *insn, void *dest,
			     size_t len);
size_t qemu_plugin_insn_size(const struct qemu_plugin_insn *insn);
uint64_t qemu_plugin_insn_vaddr(const struct qemu_plugin_insn *insn);

/* Memory accesses. */
unsigned int qemu_plugin_mem_size_shift(qemu_plugin_meminfo_t info);
bool qemu_plugin_mem_is_store(qemu_plugin_meminfo_t info);
qemu_plugin_mem_value qemu_plugin_mem_get_value(qemu_plugin_meminfo_t info);
struct qemu_plugin_hwaddr *qemu_plugin_get_hwaddr(qemu_plugin_meminfo_t info,
						  uint64_t vaddr);
bool qemu_plugin_hwaddr_is_io(const struct qemu_plugin_hwaddr *haddr);
uint64_t qemu_plugin_hwaddr_phys_addr(const struct qemu_plugin_hwaddr *haddr);
bool qemu_plugin_translate_vaddr(uint64_t vaddr, uint64_t *hwaddr);

/* vCPUs and their registers. */
int qemu_plugin_num_vcpus(void);
GArray *qemu_plugin_get_registers(void);
bool qemu_plugin_read_register(struct qemu_plugin_register *handle,
			       GByteArray *buf);

/* Scoreboards: per-vCPU entries. */
struct qemu_plugin_scoreboard *qemu_plugin_scoreboard_new(size_t element_size);
void *qemu_plugin_scoreboard_find(struct qemu_plugin_scoreboard *score,
				  unsigned int vcpu_index);
uint64_t qemu_plugin_u64_get(qemu_plugin_u64 entry, unsigned int vcpu_index);
void qemu_plugin_u64_set(qemu_plugin_u64 entry, unsigned int vcpu_index,
			 uint64_t val);
#define qemu_plugin_scoreboard_u64_in_struct(score, type, member) \
	((qemu_plugin_u64){ (score), offsetof(type, member) })

#endif /* VGSP_QEMU_11_PLUGIN_H */
