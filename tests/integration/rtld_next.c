/* Calls getppid(), which tests/integration/libnext wraps through dlsym(RTLD_NEXT, ...). */
#include <stdio.h>
#include <unistd.h>

int main(void)
{
	pid_t p = getppid();
	printf("%s - getppid through a second preload library (%d)\n", p > 0 ? "ok" : "not ok", (int)p);
	return p > 0 ? 0 : 1;
}
