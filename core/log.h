/* Logging to stderr. Messages are lowercase, without a trailing full stop. */
#ifndef FR_LOG_H
#define FR_LOG_H

#include "frontier/plugin.h"

/* Messages above this level (enum frontier_log_level) are dropped.
 * Default FRONTIER_LOG_INFO; --quiet sets WARN, -v sets DEBUG. */
void fr_log_set_level(int level);
int fr_log_level(void);

void fr_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#define fr_error_log(...) fr_log(FRONTIER_LOG_ERROR, __VA_ARGS__)
#define fr_warn(...) fr_log(FRONTIER_LOG_WARN, __VA_ARGS__)
#define fr_info(...) fr_log(FRONTIER_LOG_INFO, __VA_ARGS__)
#define fr_debug(...) fr_log(FRONTIER_LOG_DEBUG, __VA_ARGS__)

#endif
