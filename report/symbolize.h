/* Turns return addresses captured in this process into module / symbol / offsets for a report. Allocates and reads
 * files (open/mmap, no stdio): call it on a normal thread, never from a signal handler. */
#ifndef VG_SYMBOLIZE_H
#define VG_SYMBOLIZE_H

#include <stddef.h>
#include <stdint.h>

#include "report/report.h"

/* A per-report cache: each module is opened and its symbol tables parsed at most once. */
struct vg_symbolizer;

/* NULL when out of memory. */
struct vg_symbolizer *vg_symbolizer_new(void);

/* Fill every field of out for the return address addr, its strings kept in r's (vg_report_string; "" where memory
 * is short). The symbol is looked up at addr - 1 (a return address points past its call) in the module file's
 * .symtab, then its .dynsym, then dladdr. Unknown parts are "" and 0 (module_offset = addr when no module holds
 * addr). s may be NULL: then nothing is cached (slow, still correct). */
void vg_symbolize(struct vg_symbolizer *s, struct vg_report *r, uint64_t addr, struct vg_report_frame *out);

void vg_symbolizer_free(struct vg_symbolizer *s);

/* The GNU build ID of the loaded object whose load base is base and which maps pc, read from its PT_NOTE segments in
 * memory (nothing is opened), as lowercase hex into hex (NUL-terminated; "" when it has none or is not loaded).
 * Returns the ID's length in bytes, 0 if none. */
size_t vg_symbolize_build_id(uint64_t base, uint64_t pc, char *hex, size_t cap);

/* The ELF parser on its own, for tests: find the function symbol containing vaddr in an image of an ELF file held in
 * memory (.symtab first, .dynsym when .symtab has no functions). Returns 0 and fills name (NUL-terminated, truncated
 * to cap) and *start, -ENOENT when no symbol covers vaddr, -ENOEXEC for a malformed or non-ELFCLASS64 image, or
 * -ENOMEM. Reads nothing outside [image, image + size). */
int vg_symbolize_image(const void *image, size_t size, uint64_t vaddr, char *name, size_t cap, uint64_t *start);

#endif
