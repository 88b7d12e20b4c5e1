/* Routing (route.c): which wrapper answers for a real driver entry point, for dlsym and cuGetProcAddress, and the
 * real dlsym itself (never our own; dlsym.S jumps through route.c's copy). */
#ifndef VG_ROUTE_H
#define VG_ROUTE_H

/* Map a real driver entry point to our wrapper (pointer identity), or NULL if it is not one we wrap. */
void *vg_route_wrapper_for(void *real_fn);
/* The real dlsym, looked up once (dlvsym RTLD_NEXT); NULL if it cannot be found. */
void *(*vg_resolve_real_dlsym(void))(void *, const char *);

#endif
