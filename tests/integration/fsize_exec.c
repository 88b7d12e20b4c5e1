/* fsize_exec BYTES CMD [ARGS...]: run CMD with RLIMIT_FSIZE at BYTES and SIGXFSZ at its default disposition (which
 * kills). A shell's `ulimit -f` cannot undo an ignored SIGXFSZ inherited from whoever started the suite (Python
 * ignores it), and that would hide a write of vramguard's that raises it. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: fsize_exec BYTES CMD [ARGS...]\n");
		return 2;
	}
	struct rlimit rl = { (rlim_t)strtoull(argv[1], NULL, 10), (rlim_t)strtoull(argv[1], NULL, 10) };
	sigset_t s;
	sigemptyset(&s);
	sigaddset(&s, SIGXFSZ);
	if (signal(SIGXFSZ, SIG_DFL) == SIG_ERR || sigprocmask(SIG_UNBLOCK, &s, NULL) != 0 ||
	    setrlimit(RLIMIT_FSIZE, &rl) != 0) {
		perror("fsize_exec");
		return 2;
	}
	execvp(argv[2], argv + 2);
	perror(argv[2]);
	return 127;
}
