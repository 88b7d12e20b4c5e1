/* Memory another process can take away. A shared mapping of a file faults with SIGBUS past the file's end, and the
 * owner of a region file can truncate it at any time: a command that reads or changes another user's region (root's
 * `top`, `limit set`, the exporter, the receiver) must lose that one file, never its life.
 *
 * Readers copy a file into private memory (region.c, VG_OPEN_READ) and never fault. What must work on the shared
 * mapping itself (taking the region's lock, changing a limit, reclaiming slots) runs under vg_fault_run: a SIGBUS
 * inside the guarded range jumps back out of the work, the range is replaced by zeroed private memory (so that the
 * abandoned work's pointers, a robust mutex on the thread's list included, still point at something), and the
 * caller is told -ESTALE. A fault anywhere else is not ours: the process dies of it as it would have.
 *
 * The handler is the command's (vg_fault_install at start); the library never installs it, the application owns its
 * signals, and vg_fault_run is then a plain call. */
#ifndef VG_FAULT_H
#define VG_FAULT_H

#include <stdbool.h>
#include <stddef.h>

/* Install the SIGBUS handler (once; the command does it first thing). 0 or -errno. */
int vg_fault_install(void);

/* Has this process installed it (the command)? */
bool vg_fault_installed(void);

/* fn(arg), guarded over [lo, lo + len). Returns fn's result, or -ESTALE when it faulted there; *pinned (unless
 * NULL) then says whether the thread's robust-mutex list still points into the range (a lock held when the fault
 * came): such a range must never be unmapped. */
int vg_fault_run(void *lo, size_t len, int (*fn)(void *arg), void *arg, bool *pinned);

#endif
