/* The routing table of the CUDA hooks (cuda/procaddress.c), for cuGetProcAddress and our dlsym (route.c). */
#ifndef VG_CUDA_PROCADDRESS_H
#define VG_CUDA_PROCADDRESS_H

/* Map a real driver entry point to our wrapper (pointer identity), or NULL if it is not one we wrap. */
void *vg_route_wrapper_for(void *real_fn);

#endif
