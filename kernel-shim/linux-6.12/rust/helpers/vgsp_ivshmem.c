// SPDX-License-Identifier: GPL-2.0
/*
 * PCI glue for QEMU's ivshmem-doorbell device (1af4:1110), the device a
 * virtual GSP sits behind, for the in-kernel flavour of the vgsp shim.
 *
 * Linux 6.12 has no `kernel::pci`: Rust can neither register a PCI driver nor
 * map a BAR nor allocate an interrupt vector. So probing, BAR mapping and
 * MSI-X are done here in C, and `kernel::ivshmem` (rust/kernel/ivshmem.rs)
 * gets a tiny API over the one probed device: its register BAR, its shared
 * memory, and an interrupt counter it can sleep on.
 *
 * Why a file of rust/helpers: helpers.c is built into vmlinux whenever
 * CONFIG_RUST=y, and the overlay already patches rust/, so this needs no hook
 * in drivers/ or in a Kconfig. Its prototypes live in vgsp_ivshmem.h, which
 * rust/bindings/bindings_helper.h includes, so that bindgen checks the Rust
 * side against them. The names are not `rust_helper_*`: these are not
 * wrappers of C macros or inline functions but functions of their own.
 *
 * The device:
 * - BAR0, 256 bytes of registers: 0x00 IntrMask, 0x04 IntrStatus,
 *   0x08 IVPosition (this peer's id), 0x0c Doorbell (peer id << 16 | vector).
 * - BAR1, the MSI-X table.
 * - BAR2, the shared memory: RAM of the host, shared with the other peers.
 *
 * Only the first device is driven; another one fails to probe with -EBUSY.
 * Once Rust has the device (vgsp_ivshmem_device()) it keeps a 'static
 * reference, so the device must stay bound for the life of the kernel: the
 * driver has no sysfs bind/unbind, and removing the PCI device itself (hot
 * unplug, or sysfs "remove") after that is unsupported and warned about.
 */

#include <linux/atomic.h>
#include <linux/device.h>
#include <linux/interrupt.h>
#include <linux/io.h>
#include <linux/jiffies.h>
#include <linux/pci.h>
#include <linux/sched.h>
#include <linux/wait.h>

#include "vgsp_ivshmem.h"

#define VGSP_IVSHMEM_NAME		"vgsp-ivshmem"
#define VGSP_IVSHMEM_REGS_BAR		0
#define VGSP_IVSHMEM_SHM_BAR		2
#define VGSP_IVSHMEM_IVPOSITION		0x08

struct vgsp_ivshmem {
	struct pci_dev *pdev;
	void __iomem *regs;
	void *shm;
	size_t shm_len;
	bool msix;
	/* Set once vgsp_ivshmem_device() has handed the device out. */
	bool taken;
	/* Interrupts received on the MSI-X vector. */
	atomic64_t irqs;
	wait_queue_head_t wq;
};

/* The device Rust gets; published by probe with release, cleared by remove. */
static struct vgsp_ivshmem *vgsp_ivshmem_probed;

struct vgsp_ivshmem *vgsp_ivshmem_device(void)
{
	/* Pairs with the smp_store_release() at the end of probe. */
	struct vgsp_ivshmem *iv = smp_load_acquire(&vgsp_ivshmem_probed);

	if (iv)
		WRITE_ONCE(iv->taken, true);
	return iv;
}

void __iomem *vgsp_ivshmem_regs(const struct vgsp_ivshmem *iv)
{
	return iv->regs;
}

void *vgsp_ivshmem_shm(const struct vgsp_ivshmem *iv)
{
	return iv->shm;
}

size_t vgsp_ivshmem_shm_len(const struct vgsp_ivshmem *iv)
{
	return iv->shm_len;
}

bool vgsp_ivshmem_has_msix(const struct vgsp_ivshmem *iv)
{
	return iv->msix;
}

u64 vgsp_ivshmem_irq_count(const struct vgsp_ivshmem *iv)
{
	/*
	 * Acquire: the caller's later reads of the shared memory are ordered
	 * after this read of the count. Pairs with the release increment in
	 * vgsp_ivshmem_irq(), which follows the interrupt the peer sent after
	 * writing the shared memory.
	 */
	return atomic64_read_acquire(&iv->irqs);
}

u64 vgsp_ivshmem_wait_irq(struct vgsp_ivshmem *iv, u64 seen, u64 timeout_ns)
{
	u64 timeout = 0;

	/* In jiffies, rounded up by one: the first one may be almost over. */
	if (timeout_ns)
		timeout = min_t(u64, nsecs_to_jiffies64(timeout_ns) + 1,
				MAX_SCHEDULE_TIMEOUT - 1);
	/*
	 * Killable: a task being killed stops waiting for the device (the
	 * caller sees an unchanged count, as on a timeout); kernel threads and
	 * KUnit cases are never interrupted.
	 */
	wait_event_killable_timeout(iv->wq,
				    atomic64_read_acquire(&iv->irqs) != seen,
				    (long)timeout);
	return vgsp_ivshmem_irq_count(iv);
}

#ifdef CONFIG_PCI

/* Set while a device is bound: only one is supported. */
static atomic_t vgsp_ivshmem_busy = ATOMIC_INIT(0);

static irqreturn_t vgsp_ivshmem_irq(int irq, void *data)
{
	struct vgsp_ivshmem *iv = data;

	/* Pairs with the acquire reads in vgsp_ivshmem_irq_count(). */
	atomic64_inc_return_release(&iv->irqs);
	wake_up(&iv->wq);
	return IRQ_HANDLED;
}

/* Takes one MSI-X vector and its irq; false if there is none. */
static bool vgsp_ivshmem_setup_msix(struct vgsp_ivshmem *iv)
{
	struct pci_dev *pdev = iv->pdev;
	int nvec, ret;

	nvec = pci_alloc_irq_vectors(pdev, 1, 1, PCI_IRQ_MSIX);
	if (nvec < 0) {
		dev_warn(&pdev->dev, "no MSI-X vector (%d)\n", nvec);
		return false;
	}
	ret = devm_request_irq(&pdev->dev, pci_irq_vector(pdev, 0),
			       vgsp_ivshmem_irq, 0, VGSP_IVSHMEM_NAME, iv);
	if (ret) {
		dev_warn(&pdev->dev, "cannot request the MSI-X irq (%d)\n", ret);
		pci_free_irq_vectors(pdev);
		return false;
	}
	return true;
}

static int vgsp_ivshmem_map(struct vgsp_ivshmem *iv)
{
	struct pci_dev *pdev = iv->pdev;
	struct device *dev = &pdev->dev;
	resource_size_t start = pci_resource_start(pdev, VGSP_IVSHMEM_SHM_BAR);
	resource_size_t len = pci_resource_len(pdev, VGSP_IVSHMEM_SHM_BAR);
	int ret;

	if (pci_resource_len(pdev, VGSP_IVSHMEM_REGS_BAR) < VGSP_IVSHMEM_REGS_LEN ||
	    !(pci_resource_flags(pdev, VGSP_IVSHMEM_REGS_BAR) & IORESOURCE_MEM)) {
		dev_err(dev, "BAR0 is not %d bytes of memory space\n",
			VGSP_IVSHMEM_REGS_LEN);
		return -ENODEV;
	}
	iv->regs = pcim_iomap_region(pdev, VGSP_IVSHMEM_REGS_BAR,
				     VGSP_IVSHMEM_NAME);
	if (IS_ERR(iv->regs))
		return PTR_ERR(iv->regs);

	if (!len || !(pci_resource_flags(pdev, VGSP_IVSHMEM_SHM_BAR) & IORESOURCE_MEM)) {
		dev_err(dev, "BAR2 (the shared memory) is missing\n");
		return -ENODEV;
	}
	ret = pcim_request_region(pdev, VGSP_IVSHMEM_SHM_BAR, VGSP_IVSHMEM_NAME);
	if (ret)
		return ret;
	/*
	 * BAR2 is RAM of the host, which the other peers access through their
	 * own cacheable mappings, and which carries the queues, their atomics
	 * and barriers. So map it as memory, write-back, not as device memory:
	 * - arm64: ioremap() would give Device-nGnRE, on which unaligned
	 *   accesses fault and exclusives are not guaranteed, and which under
	 *   KVM would not be coherent with the host's cacheable view (mismatched
	 *   attributes); MEMREMAP_WB gives Normal write-back memory, coherent
	 *   with the other peers as ordinary shared RAM is.
	 * - x86: ioremap() would give uncached accesses, correct but slow;
	 *   write-back is coherent on x86 in any case.
	 * The range is not System RAM, so memremap() takes ioremap_cache().
	 */
	iv->shm = devm_memremap(dev, start, len, MEMREMAP_WB);
	if (IS_ERR(iv->shm))
		return PTR_ERR(iv->shm);
	iv->shm_len = len;
	return 0;
}

static int vgsp_ivshmem_probe(struct pci_dev *pdev,
			      const struct pci_device_id *id)
{
	struct device *dev = &pdev->dev;
	struct vgsp_ivshmem *iv;
	int ret;

	if (atomic_cmpxchg(&vgsp_ivshmem_busy, 0, 1)) {
		dev_err(dev, "another ivshmem device is bound; only one is supported\n");
		return -EBUSY;
	}

	ret = pcim_enable_device(pdev);
	if (ret)
		goto unbusy;
	/* MSI-X messages are memory writes by the device. */
	pci_set_master(pdev);

	iv = devm_kzalloc(dev, sizeof(*iv), GFP_KERNEL);
	if (!iv) {
		ret = -ENOMEM;
		goto unbusy;
	}
	iv->pdev = pdev;
	atomic64_set(&iv->irqs, 0);
	init_waitqueue_head(&iv->wq);

	ret = vgsp_ivshmem_map(iv);
	if (ret)
		goto unbusy;
	/* Last: the handler may run as soon as the irq is requested. */
	iv->msix = vgsp_ivshmem_setup_msix(iv);

	dev_info(dev, "ivshmem-doorbell: BAR2 %zu KiB at %pa (write-back), IVPosition %u, MSI-X %s\n",
		 iv->shm_len / SZ_1K, &pdev->resource[VGSP_IVSHMEM_SHM_BAR].start,
		 readl(iv->regs + VGSP_IVSHMEM_IVPOSITION),
		 iv->msix ? "yes" : "no (the driver polls)");

	pci_set_drvdata(pdev, iv);
	/* Pairs with the smp_load_acquire() in vgsp_ivshmem_device(). */
	smp_store_release(&vgsp_ivshmem_probed, iv);
	return 0;

unbusy:
	atomic_set(&vgsp_ivshmem_busy, 0);
	return ret;
}

static void vgsp_ivshmem_remove(struct pci_dev *pdev)
{
	struct vgsp_ivshmem *iv = pci_get_drvdata(pdev);

	WRITE_ONCE(vgsp_ivshmem_probed, NULL);
	/* Rust holds a 'static reference to a device that is going away. */
	dev_WARN_ONCE(&pdev->dev, READ_ONCE(iv->taken),
		      "removed while the Rust side holds it: unsupported\n");
	/* The irq, MSI-X vector, mappings and regions are device-managed. */
	atomic_set(&vgsp_ivshmem_busy, 0);
}

static const struct pci_device_id vgsp_ivshmem_ids[] = {
	{ PCI_DEVICE(PCI_VENDOR_ID_REDHAT_QUMRANET, 0x1110) },
	{ }
};

static struct pci_driver vgsp_ivshmem_driver = {
	.name = VGSP_IVSHMEM_NAME,
	.id_table = vgsp_ivshmem_ids,
	.probe = vgsp_ivshmem_probe,
	.remove = vgsp_ivshmem_remove,
	/* Rust keeps the device for the life of the kernel: no unbinding. */
	.driver.suppress_bind_attrs = true,
};

static int __init vgsp_ivshmem_init(void)
{
	return pci_register_driver(&vgsp_ivshmem_driver);
}
device_initcall(vgsp_ivshmem_init);

#endif /* CONFIG_PCI */
