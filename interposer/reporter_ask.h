/* Asking for a report (reporter_ask.c): the reporter's async-signal-safe half. A signal handler, or an allocating
 * thread that may be inside a driver call (softlimit.c), sets a flag and writes one byte to a pipe: no lock, no
 * allocation, errno kept. The reporter thread (reporter.c) is woken by the byte, takes the flags and writes the
 * reports; the thread that asks never writes one. Requests of one kind made before the thread gets to them make one
 * report; one still pending at exit is written by the exit handler, before the exit report. */
#ifndef VG_REPORTER_ASK_H
#define VG_REPORTER_ASK_H

#include <stdbool.h>

enum vg_ask { VG_ASK_SIGNAL, VG_ASK_SOFT_LIMIT, VG_ASK_THRESHOLD, VG_ASK_DENIAL, VG_ASK_GROWTH, VG_ASK_COUNT };

/* The reporter thread runs in this process (reports are on, it started, this is not a forked child). */
bool vg_reporter_running(void);
/* Ask the reporter thread for a report with the reason the request names. */
void vg_reporter_ask(enum vg_ask what);
/* The report signal's handler (VRAMGUARD_SIGNAL; reporter.c installs it): asks for reason "signal". */
void vg_reporter_on_signal(int sig);

/* The reporter thread's side (reporter.c): it listens from now on (wr: its pipe's write end, non-blocking); it takes
 * a request (true once per request made since it last looked). */
void vg_reporter_listen(int wr);
bool vg_reporter_asked(enum vg_ask what);
/* Fork child: no reporter thread there; it must not wake the parent's (the shared pipe's write end is closed). */
void vg_reporter_ask_atfork_child(void);

#endif
