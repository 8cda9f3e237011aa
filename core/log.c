#include "log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>

static int log_level = FRONTIER_LOG_INFO;
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;

void fr_log_set_level(int level)
{
    log_level = level;
}

int fr_log_level(void)
{
    return log_level;
}

void fr_log(int level, const char *fmt, ...)
{
    static const char *const prefix[] = {"error: ", "warning: ", "", "debug: "};
    if (level > log_level)
        return;
    if (level < 0)
        level = 0;
    if (level > FRONTIER_LOG_DEBUG)
        level = FRONTIER_LOG_DEBUG;
    va_list ap;
    va_start(ap, fmt);
    pthread_mutex_lock(&log_lock);
    fputs("frontier: ", stderr);
    fputs(prefix[level], stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    pthread_mutex_unlock(&log_lock);
    va_end(ap);
}
