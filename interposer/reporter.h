/* Reports from inside the process (reporter.c): the reporter thread that writes the reports asked of it
 * (reporter_ask.h), the exit report, and publishing a report's file. What a report says is snapshot.c's. */
#ifndef VG_REPORTER_H
#define VG_REPORTER_H

/* Start the reporter thread and its signal handler (at first CUDA use); reports are asked of it through
 * reporter_ask.h. */
void vg_reporter_start(void);
/* Register the exit report's handler (after cuInit, and once more at the first allocation: see reporter.c). */
void vg_reporter_arm_exit(void);
/* Build and write one report now, in this thread. */
void vg_report_now(const char *reason);
void vg_reporter_atfork_child(void);

#endif
