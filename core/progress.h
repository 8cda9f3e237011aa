/*
 * Progress of long work on stderr: on a terminal a one-line bar (done/total,
 * rate in GB/s of weights, ETA) redrawn at most ten times a second; when
 * stderr is not a terminal, a plain line every few seconds. Quiet: nothing.
 */
#ifndef FR_PROGRESS_H
#define FR_PROGRESS_H

#include <stdint.h>

typedef struct fr_progress fr_progress;

/* what: the unit counted ("tensors"). Returns NULL (= silent) when quiet or
 * out of memory; every function accepts NULL. */
fr_progress *fr_progress_start(const char *what, uint64_t total_items, uint64_t total_bytes,
                               int quiet);
/* Absolute counts so far. Cheap: draws only when the rate limit allows. */
void fr_progress_update(fr_progress *p, uint64_t items_done, uint64_t bytes_done);
/* Clears the bar before another message goes to stderr (it is redrawn on the
 * next update). */
void fr_progress_clear(fr_progress *p);
/* Draws the final state, ends the line, frees p. */
void fr_progress_finish(fr_progress *p);

/* Formats seconds as "1:02:03", "2:03" or "4s". */
void fr_format_duration(double seconds, char *buf, unsigned len);

#endif
