/* Who else is running on a GPU right now: one small file per GPU (VRAMGUARD_SHM_DIR/vramguard-gpu.UUID), in which
 * each vramguard process with a compute limit holds a slot and says whether it has work on that GPU (and, in a
 * shared region with a compute share, which region it is in and whether it wants the GPU: the members divide that
 * share). The compute share (interposer/compute.h) charges a process 1/n of the time during which n such processes
 * have work at once, as the GPU's time slicer gives each context an even share: without it, two capped processes
 * would each be charged for time the other one used, and both would fall below their shares.
 *
 * The file is anyone's to write (it is how processes of different users and containers meet, where they share
 * VRAMGUARD_SHM_DIR), so it is read and written with pread/pwrite only (a truncation cannot fault us), only its
 * first VG_GPU_SHARE_SIZE bytes are used, a slot is claimed with an open-file-description lock on its byte (the
 * kernel releases it when the process dies, in any PID namespace) and a slot counts only while its lock is held.
 * Garbage in the file can make a process count others that are not there (charging it less, up to 1/64): the share
 * is cooperative between vramguard processes, as docs/compute.md says; nothing here can crash or block a process. */
#ifndef VG_GPU_SHARE_H
#define VG_GPU_SHARE_H

#include <stdbool.h>
#include <stdint.h>

#define VG_GPU_SHARE_SLOTS 64
#define VG_GPU_SHARE_SIZE (64 + VG_GPU_SHARE_SLOTS * 8)
#define VG_GPU_SHARE_PREFIX "vramguard-gpu."   /* not "vramguard.": no region file (VG_REGION_PREFIX), which `top` and the exporter read */

struct vg_gpu_share {
	int fd;                 /* -1: not joined (no file, or no slot) */
	int slot;
	bool active;            /* what our slot says */
	uint32_t word;          /* ... and its second word (vg_gpu_share_set_tag) */
	uint64_t live;          /* bit i: slot i's lock was held at the last vg_gpu_share_check, or when its
				 * "active" was first seen since */
	uint64_t dead;          /* bit i: slot i said "active" with no lock held when last looked at */
};

/* Join the file of GPU uuid in dir (made if missing, mode 0666): 0, or -errno (why: one line in why). */
int vg_gpu_share_join(struct vg_gpu_share *g, const char *dir, const char *uuid, char *why, size_t whylen);

/* Say whether we have work on the GPU now (a pwrite when it changes). */
void vg_gpu_share_set(struct vg_gpu_share *g, bool active);

/* How many processes have work on the GPU now, us included when we do (at least 1): slots that say so and whose
 * lock was held at the last check. A slot that says so for the first time since then has its lock looked at now
 * (one system call, once a check at most), so that a process that starts is counted by the others at once. */
unsigned vg_gpu_share_count(struct vg_gpu_share *g);

/* Which slots' locks are held now (F_OFD_GETLK on each): for vg_gpu_share_count. A system call per slot: once a
 * second is enough (a process that dies stops counting after that long at most). */
void vg_gpu_share_check(struct vg_gpu_share *g);

/* A slot's second word names the shared region of its process (region.h's vg_region_tag, its top bit cleared; 0:
 * none) and, in its top bit (VG_GPU_SHARE_WANTS), whether the process wants the GPU now: it has work there or a
 * launch of its waits for its share. The members of one region divide the region's compute share among those that
 * want the GPU (a pwrite when the word changes). */
#define VG_GPU_SHARE_WANTS 0x80000000u
void vg_gpu_share_set_tag(struct vg_gpu_share *g, uint32_t tag, bool wants);

/* How many members of region tag want the GPU now, counting us as one whether or not we do: slots whose second word
 * says so and whose lock is held (as vg_gpu_share_count looks), plus 1. At most VG_GPU_SHARE_SLOTS; 1 without a file or with
 * tag 0. Garbage in the file can only raise the count (a smaller share for us), never lower it below 1. */
unsigned vg_gpu_share_count_tag(struct vg_gpu_share *g, uint32_t tag);

void vg_gpu_share_leave(struct vg_gpu_share *g);

#endif
