/* For tests/integration/python/sites.py: a C thread that never ran Python code allocates through the driver while
 * its Python caller waits (its site must have native frames only). */
#include <cuda.h>
#include <pthread.h>

static void *vg_test_cthread_body(void *arg)
{
	static CUdeviceptr p;
	return (void *)(long)cuMemAlloc_v2(&p, (size_t)(long)arg);
}

int vg_test_cthread_alloc(long bytes);
int vg_test_cthread_alloc(long bytes)
{
	pthread_t t;
	void *rc;
	if (pthread_create(&t, NULL, vg_test_cthread_body, (void *)bytes) != 0)
		return -1;
	pthread_join(t, &rc);
	return (int)(long)rc;
}
