/* Writing JSON into a vg_strbuf: strings escaped so the document always parses, and object members written as
 * SEP "key": VALUE, the separator given by the caller (", " within a line, ",\n  " between lines, "" first). The
 * report's JSON form goes through these (report/json_write.c), and so can any other JSON vramguard writes
 * (`top --json`, `limit show --json`). A key is written as given: pass a literal that needs no escaping. */
#ifndef VG_JSON_OUT_H
#define VG_JSON_OUT_H

#include <stddef.h>
#include <stdint.h>

#include "report/strbuf.h"

/* A JSON string of at most max bytes of s, quoted and escaped; bytes that are not well-formed UTF-8 become
 * U+FFFD. */
void vg_json_str(struct vg_strbuf *b, const char *s, size_t max);

void vg_json_key(struct vg_strbuf *b, const char *sep, const char *key);       /* SEP "key": (the value follows) */
void vg_json_kstr(struct vg_strbuf *b, const char *sep, const char *key, const char *s, size_t max);
void vg_json_ku64(struct vg_strbuf *b, const char *sep, const char *key, uint64_t v);
void vg_json_kint(struct vg_strbuf *b, const char *sep, const char *key, int v);
void vg_json_kbool(struct vg_strbuf *b, const char *sep, const char *key, int v);
void vg_json_knull(struct vg_strbuf *b, const char *sep, const char *key);
/* An address as a string, "0x7f3a00000000": a 64-bit value does not survive a JavaScript number (or older jq). */
void vg_json_kaddr(struct vg_strbuf *b, const char *sep, const char *key, uint64_t v);

#endif
